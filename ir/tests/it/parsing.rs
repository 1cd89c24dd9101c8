//! Parsing and printing under hostile input (issue 16): the natural-number
//! grammar (LANGUAGE.md §3) with ternaries and conditions in parentheses,
//! nesting that must parse in linear time, normal forms that stay small,
//! number literals that print back as themselves.

use heddle_ir::parser::parse_nat;
use heddle_ir::printer::print_nat;
use std::sync::mpsc;
use std::time::Duration;

/// Parses on another thread and fails if that takes more than `secs`.
fn parse_within(src: String, secs: u64) -> Result<heddle_ir::Nat, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let _ = tx.send(parse_nat(&src).map_err(|d| d.message));
        })
        .unwrap();
    rx.recv_timeout(Duration::from_secs(secs)).unwrap_or_else(|_| panic!("parsing took more than {secs} s"))
}

#[test]
fn nested_parentheses_parse_in_linear_time() {
    // Each level of parentheses used to be tried as a condition first and
    // re-read as a natural after: ×3 per level, 20 levels took minutes.
    for depth in [20, 60, 200] {
        let open = "(".repeat(depth);
        let close = ")".repeat(depth);
        let n = parse_within(format!("{open}n + 1{close} * 2"), 10).unwrap();
        assert_eq!(print_nat(&n), "(n + 1) * 2");
        let c = parse_within(format!("{open}n < 1{close} ? 3 : 4"), 10).unwrap();
        assert_eq!(print_nat(&c), "n < 1 ? 3 : 4");
        let bang = parse_within(format!("{} n < 1 ? 3 : 4", "!".repeat(depth)), 10).unwrap();
        let _ = bang;
    }
    // Deeper than the parser's nesting limit: a located error, not a hang.
    let deep = "(".repeat(5000) + "n" + &")".repeat(5000);
    let e = parse_within(deep, 10).unwrap_err();
    assert!(e.contains("levels deep"), "{e}");
}

#[test]
fn ternaries_and_conditions_read_as_before() {
    for (src, printed) in [
        ("(a < b) ? 1 : 2", "a < b ? 1 : 2"),
        ("a < b && c >= d ? x : y", "a < b && c >= d ? x : y"),
        ("a < b || c == d && e != f ? x : y", "a < b || c == d && e != f ? x : y"),
        ("!(a < b) ? x : y", "!(a < b) ? x : y"),
        ("((a < b)) ? x : y", "a < b ? x : y"),
        ("(a + b) * 2 < c ? 1 : 0", "(a + b) * 2 < c ? 1 : 0"),
        ("c < 1 ? x : c < 2 ? y : z", "c < 1 ? x : c < 2 ? y : z"),
        ("(n < 2 ? 1 : 2) + 1", "(n < 2 ? 1 : 2) + 1"),
        ("((a < b) && (c < d)) ? 1 : 2", "a < b && c < d ? 1 : 2"),
        ("n - (m + 1)", "n - (m + 1)"),
    ] {
        let n = parse_within(src.to_string(), 10).unwrap_or_else(|e| panic!("{src}: {e}"));
        let text = print_nat(&n);
        assert_eq!(text, printed, "{src}");
        assert_eq!(parse_nat(&text).unwrap(), n, "{src} reprinted as {text}");
    }
}

#[test]
fn a_condition_where_a_natural_belongs_is_a_located_error() {
    for (src, says) in [
        ("a < b", "found a condition"),
        ("(a < b) + 1", "found a condition"),
        ("1 + (a < b)", "found a condition"),
        ("a && b < c ? 1 : 2", "found a natural"),
        ("a < b || c ? 1 : 2", "found a natural"),
        ("!a ? 1 : 2", "found a natural"),
        ("a < (b < c) ? 1 : 2", "found a condition"),
    ] {
        let e = parse_nat(src).unwrap_err();
        assert!(e.message.contains(says), "{src}: {}", e.message);
    }
}

/// Normalises on another thread within `secs` seconds.
fn normalize_within(n: heddle_ir::Nat, secs: u64) -> heddle_ir::Nat {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(n.normalize());
    });
    rx.recv_timeout(Duration::from_secs(secs)).unwrap_or_else(|_| panic!("normalising took more than {secs} s"))
}

#[test]
fn normal_forms_stay_small() {
    // A product of 20 binomials expands to 2^20 terms (34 s or 3.8 GB before):
    // past the term limit the product stays a product.
    let binomials: Vec<String> = (0..20).map(|k| format!("(a{k} + b{k})")).collect();
    let product = parse_nat(&binomials.join(" * ")).unwrap();
    let normal = normalize_within(product.clone(), 10);
    assert!(normal.to_string().len() < 200_000, "{} bytes", normal.to_string().len());
    assert!(normal.equiv(&product));
    // Small products still expand, so they are equal in any order (a capped
    // product is only equal to itself: sound, not complete).
    let small = parse_nat("(a + b) * (c + d)").unwrap();
    assert_eq!(print_nat(&small.normalize()), "a * c + a * d + b * c + b * d");
    assert!(parse_nat("(d + c) * (b + a)").unwrap().equiv(&small));
    // Nested constant Σs of 16 terms each unroll together at most a few
    // thousand terms (six levels were 16^6 before).
    let nested = "sum(a = 0 .. 15, sum(b = 0 .. 15, sum(c = 0 .. 15, sum(d = 0 .. 15, sum(e = 0 .. 15, sum(f = 0 .. 15, a + f))))))";
    let n = normalize_within(parse_nat(nested).unwrap(), 10);
    let _ = n;
    // Still exact where it unrolls: 0 + 1 + … + 15.
    assert_eq!(print_nat(&parse_nat("sum(i = 0 .. 15, i)").unwrap().normalize()), "120");
}

#[test]
fn number_literals_print_back_as_themselves() {
    use heddle_ir::parser::parse_program;
    use heddle_ir::printer::print_program;
    // `0 .3` is a projection of 0, not the float 0.3; and a float literal
    // beyond f64 (it printed as `0.0`) is an error, as a too-large integer is.
    let p = parse_program("fun(x: float => (x, 0 .3))").unwrap();
    let text = print_program(&p);
    assert_eq!(parse_program(&text).unwrap(), p, "{text}");
    let e = parse_program("fun(x: float => x + 3.0e382)").unwrap_err();
    assert!(e[0].message.contains("too large"), "{:?}", e[0]);
    assert!(parse_program("fun(x: float => x + 1.7e308)").is_ok());
}

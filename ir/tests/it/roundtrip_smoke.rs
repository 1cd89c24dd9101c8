use heddle_ir::parser::parse_program;
use heddle_ir::printer::print_program;

#[test]
fn examples_round_trip() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "hdl") {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let p = parse_program(&src).unwrap_or_else(|e| panic!("{}: {:?}", path.display(), e));
        let text = print_program(&p);
        let p2 = parse_program(&text)
            .unwrap_or_else(|e| panic!("{}: reprint does not parse: {:?}\n{text}", path.display(), e));
        assert_eq!(p, p2, "{}", path.display());
        assert_eq!(print_program(&p2), text);
        println!("{text}");
    }
}

/// Listing 7 writes reduce's operator as `x => x.1 + x.2`: a bare one-parameter
/// lambda is `fun(x => …)`, its body as far as an expression goes.
#[test]
fn bare_lambda_is_fun() {
    use heddle_ir::parser::parse_expr;
    let bare = parse_expr("xs :>> reduce(x => x.1 + x.2 :>> f, 0)").unwrap();
    let full = parse_expr("xs :>> reduce(fun(x => x.1 + x.2 :>> f), 0)").unwrap();
    assert_eq!(bare, full);
    let nested = parse_expr("map(a => b => a + b)").unwrap();
    assert_eq!(nested, parse_expr("map(fun(a => fun(b => a + b)))").unwrap());
    assert!(parse_expr("f(x =>)").is_err(), "a lambda needs a body");
}

/// A lambda written without `fun(…)` prints as written (the canonical form of
/// Listing 7 keeps `reduce(x => x.1 + x.2)`); one written with it keeps it.
#[test]
fn bare_lambda_prints_as_written() {
    use heddle_ir::printer::format_source;
    let bare = "nFun(n =>\nfun(xs: [float]_n =>\n  xs :>> reduce(x => x.1 + x.2)))\n";
    assert_eq!(format_source(bare).unwrap(), bare);
    let full = "nFun(n =>\nfun(xs: [float]_n =>\n  xs :>> reduce(fun(x => x.1 + x.2))))\n";
    assert_eq!(format_source(full).unwrap(), full);
    // In a tuple, and with a pipeline for a body: the `,` or `)` ends it.
    let items = parse_program("nFun(n => fun(xs: [float]_n => (xs :>> reduce(x => x.1 :>> f), 1)))").unwrap();
    let text = print_program(&items);
    assert!(text.contains("reduce(x => x.1 :>> f)"), "{text}");
    assert_eq!(parse_program(&text).unwrap(), items);
}

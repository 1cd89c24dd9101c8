//! The numbers of Matrix Market entry lines: coordinates through the
//! readers' eight-digits-at-a-time path (`sparse::fastnum`), of 1 to 20
//! digits, leading zeros included, with the overflow, size and syntax errors
//! keeping their messages and lines; and values bit-exact with Rust's
//! `str::parse` (`f64`, and `f32` rounded once, straight from the text) in
//! both readers, on hundreds of thousands of random strings and on the hard
//! cases (exact halfway points between neighbouring floats and strings just
//! below and above them, 17–20 digit mantissas, exponents around ±10, ±22,
//! ±27, subnormals, overflow, the `inf` / `nan` spellings): the cases a fast
//! path for values must get right (one was tried, see `fastnum`'s notes).

use heddle_ir::ScalarType;
use heddle_runtime::scalars::Num;
use heddle_runtime::sparse::coo::CooColumns;
use heddle_runtime::sparse::mtx::{parse_mtx_for, read_mtx_columns};
use std::fmt::Write;

fn put(name: &str, text: &str) -> crate::ScratchFile {
    crate::ScratchFile::new("mtx-numbers", &format!("{name}.mtx"), text)
}

/// A small deterministic generator (xorshift64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The exact decimal of `odd * 2^-k` (`k <= 27`), as `digits` and the
/// count of fraction digits (`odd * 5^k / 10^k`).
fn exact_decimal(odd: u128, k: u32) -> String {
    let n = odd * 5u128.pow(k);
    let s = n.to_string();
    if k == 0 {
        return s;
    }
    let s = format!("{s:0>width$}", width = k as usize + 1);
    let (int, frac) = s.split_at(s.len() - k as usize);
    format!("{int}.{frac}")
}

/// The strings the values are tested on: hard cases first, then random ones.
fn value_strings(random: usize) -> Vec<String> {
    let mut v: Vec<String> = [
        "0",
        "-0",
        "+0.0",
        "0e0",
        "-0.000E+12",
        "1",
        "-1",
        "+1",
        "1.5",
        "1e5",
        "1E+05",
        "1e-5",
        "2.5e-3",
        "123456789",
        "9007199254740992",
        "9007199254740993",
        "9007199254740995",
        "18014398509481985",
        "1e22",
        "1e23",
        "1e-22",
        "1e-23",
        "1e27",
        "1e28",
        "1e-27",
        "1e-28",
        "9999999999999999999",
        "9999999999999999999e27",
        "9999999999999999999e-27",
        "1844674407370955161",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999",
        "0.1",
        "0.2",
        "0.3",
        "2.2250738585072011e-308",
        "2.2250738585072014e-308",
        "4.9e-324",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.7976931348623159e308",
        "1e309",
        "-1e400",
        "3.4028235e38",
        "3.4028236e38",
        "3.40282357e38",
        "1.17549435e-38",
        "1.4e-45",
        "7.038531e-26",
        "1.00000005960464477539062",
        "1.0000000596046448",
        "1.000000059604644775390625",
        "16777217",
        "16777219",
        "33554435",
        "1e10",
        "1e11",
        "3e10",
        "3e11",
        "6.621699258970448E-2",
        "0.06621699258970448",
        "000000000000000000001.5",
        "1.",
        ".5",
        "-.5",
        "1.e5",
        "0x10",
        "inf",
        "-inf",
        "+inf",
        "Infinity",
        "-INFINITY",
        "nan",
        "NaN",
        "-nan",
        "+NaN",
        // Around the edges of Clinger's exact path (tried again in the
        // readpack round and dropped): 2^53 and one past it as 16 digits,
        // exponents ±22 and ±23 in all, 16 and 17 digits, 7 and 8 integer
        // digits, 3 and 4 exponent digits, an exponent without a sign.
        "9.007199254740992E+15",
        "9.007199254740993E+15",
        "9007199.254740992E-22",
        "9007199.254740993E-22",
        "1.234567890123456E-7",
        "1.234567890123456E-8",
        "1234567.123456789E+15",
        "1234567.123456789E+16",
        "-1.0000000000000002E+22",
        "1.2345678901234567E-2",
        "1234567.5",
        "12345678.5",
        "1.5E-022",
        "1.5E-0022",
        "1.5E22",
        "-0.0000000000000000E+0",
        "6.621699258970448E-2",
        "-.5E-1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    // Exact halfway points between neighbouring f64s in [2^26, 2^53) (up to
    // 27 fraction digits: the general reader's), and strings 17 to 19
    // significant digits long just below and above them (the fast path's).
    for _ in 0..2000 {
        let e = 26 + r.below(27) as u32; // the value in [2^e, 2^(e+1))
        let m = (1u128 << 52) | u128::from(r.next() >> 12);
        let k = 53 - e; // midpoint = (2m + 1) * 2^(e - 53)
        let mid = exact_decimal(2 * m + 1, k);
        v.push(mid.clone());
        for digits in [17, 18, 19] {
            let (below, above) = cut(&mid, digits);
            v.extend([below, above]);
        }
    }
    // Exact halfway points between neighbouring f64s that are integers
    // below 10^19 (in the fast path), plain and with an exponent.
    for _ in 0..2000 {
        let j = r.below(11) as u32;
        let m = (1u128 << 52) | u128::from(r.next() >> 12);
        let mid = (2 * m + 1) << j;
        if mid < 10u128.pow(19) {
            let s = mid.to_string();
            v.push(format!("{}.{}E{}", &s[..1], &s[1..], s.len() - 1));
            v.push(s);
        }
    }
    // Exact halfway points between neighbouring f32s (both in and out of the
    // f32 fast path), and f32s' shortest forms.
    for _ in 0..2000 {
        let e = r.below(40) as u32; // the value in [2^e, 2^(e+1))
        let m = (1u128 << 23) | u128::from(r.next() >> 41);
        let mid = if e >= 24 { ((2 * m + 1) << (e - 24)).to_string() } else { exact_decimal(2 * m + 1, 24 - e) };
        v.push(mid.clone());
        let x = f32::from_bits((r.next() as u32) & 0x7f7f_ffff);
        v.push(format!("{x:e}"));
        v.push(format!("{x:?}"));
        for digits in [9, 10] {
            let (below, above) = cut(&mid, digits);
            v.extend([below, above]);
        }
    }
    // Random f64s' shortest forms (as scipy writes them, `E` notation too)
    // and 17-digit forms.
    for _ in 0..random / 4 {
        let x = f64::from_bits(r.next() & 0x7fef_ffff_ffff_ffff);
        v.push(format!("{x:e}"));
        v.push(format!("{:.16E}", -x));
        let y = r.next() as f64 / 2f64.powi(64);
        v.push(format!("{y:?}"));
        v.push(format!("{:.16E}", y * 1e-3));
    }
    // Random digit strings: 1 to 21 digits, a point anywhere, exponents
    // around the fast paths' edges (±10, ±22, ±27).
    for _ in 0..random {
        let n = 1 + r.below(21) as usize;
        let point = r.below(n as u64 + 1) as usize;
        let mut s = String::new();
        match r.below(4) {
            0 => s.push('-'),
            1 => s.push('+'),
            _ => {}
        }
        for d in 0..n {
            if d == point && d > 0 {
                s.push('.');
            }
            s.push(char::from(b'0' + r.below(10) as u8));
        }
        if r.below(3) > 0 {
            s.push(if r.below(2) == 0 { 'e' } else { 'E' });
            let e = r.below(80) as i64 - 40;
            if e >= 0 && r.below(2) == 0 {
                s.push('+');
            }
            write!(s, "{e}").unwrap();
        }
        v.push(s);
    }
    v
}

/// The decimal `s` cut to `digits` significant digits, and that plus one
/// unit in its last digit: just below and just above `s` (written with an
/// exponent).
fn cut(s: &str, digits: usize) -> (String, String) {
    let all: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    let lead = all.len() - all.trim_start_matches('0').len();
    let sig = &all[lead..];
    let int_digits = s.find('.').unwrap_or(s.len()) as i64 - lead as i64;
    let head: u128 = sig[..digits.min(sig.len())].parse().unwrap();
    let e = int_digits - digits.min(sig.len()) as i64;
    (format!("{head}e{e}"), format!("{}e{e}", head + 1))
}

/// Writes `vals` as one column of a `coordinate real general` file.
fn file_of(name: &str, vals: &[String]) -> crate::ScratchFile {
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{} 1 {}\n", vals.len(), vals.len());
    for (k, x) in vals.iter().enumerate() {
        writeln!(s, "{} 1 {x}", k + 1).unwrap();
    }
    put(name, &s)
}

fn floats(cols: &CooColumns) -> Vec<f64> {
    (0..cols.len())
        .map(|k| match cols.values.num(k) {
            Num::Float(x) => x,
            other => panic!("not a float: {other:?}"),
        })
        .collect()
}

/// What the Rust standard library makes of `s`, with heddle's spellings of
/// the infinities and NaN (`+nan`, `-nan` read as NaN).
fn std_parse<F: std::str::FromStr>(s: &str) -> Option<F> {
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    if t.eq_ignore_ascii_case("nan") {
        return "nan".parse().ok();
    }
    s.parse().ok()
}

#[test]
fn values_are_bit_exact_with_std_parse() {
    let all = value_strings(200_000);
    let ok: Vec<String> = all.iter().filter(|s| std_parse::<f64>(s).is_some()).cloned().collect();
    let rejected = all.len() - ok.len();
    assert!(rejected > 0 && rejected < 10, "the strings std rejects are only the odd spellings ({rejected})");
    let path = file_of("values", &ok);
    let f64s = floats(&read_mtx_columns(&path, ScalarType::F64).unwrap().expect("streamed").0);
    let f32s = floats(&read_mtx_columns(&path, ScalarType::F32).unwrap().expect("streamed").0);
    let whole = parse_mtx_for(&std::fs::read(&path).unwrap(), &path, ScalarType::F64).unwrap().0;
    assert_eq!(whole.values.len(), ok.len());
    for (k, s) in ok.iter().enumerate() {
        let want: f64 = std_parse(s).unwrap();
        let want32: f32 = std_parse(s).unwrap();
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        assert!(same(f64s[k], want), "`{s}`: read {:e}, std {want:e}", f64s[k]);
        assert!(same(f32s[k], f64::from(want32)), "`{s}` as f32: read {:e}, std {want32:e}", f32s[k]);
        assert!(same(whole.values.num(k).to_f64(), want), "`{s}`: the whole-file reader");
    }
    std::fs::remove_file(path).unwrap();
}

#[test]
fn malformed_values_keep_their_messages() {
    for (bad, shown) in [
        ("1.5x", "1.5x"),
        ("1e", "1e"),
        ("--1", "--1"),
        ("1.2.3", "1.2.3"),
        ("1e+", "1e+"),
        ("0x10", "0x10"),
        ("1.5E-", "1.5E-"),
        ("1.5E-2x", "1.5E-2x"),
    ] {
        let path =
            put("bad_value", &format!("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 2 {bad}\n"));
        let e = heddle_runtime::sparse::file::read_as_written(&path).expect_err("an error").to_string();
        assert!(e.contains(":4: value `") && e.contains(&format!("`{shown}` is not a number")), "{bad}: {e}");
    }
}

#[test]
fn coordinates_of_1_to_20_digits() {
    // Through the streaming reader (sizes up to 2^32): 1 to 10 digits,
    // leading zeros included.
    let mut r = Rng(7);
    let n = 4_294_967_296u64;
    let mut entries = Vec::new();
    for _ in 0..20_000 {
        let digits = 1 + r.below(10) as u32;
        let x = 1 + r.below(n.min(10u64.pow(digits)) - 1);
        let zeros = r.below(3) as usize * r.below(6) as usize;
        let y = 1 + r.below(1000);
        entries.push((x, y, format!("{}{x} {y:0>w$}", "0".repeat(zeros), w = 1 + r.below(9) as usize)));
    }
    let mut s = format!("%%MatrixMarket matrix coordinate pattern general\n{n} 1000 {}\n", entries.len());
    for (_, _, line) in &entries {
        writeln!(s, "{line}").unwrap();
    }
    let path = put("coords", &s);
    let (cols, _, pattern) = read_mtx_columns(&path, ScalarType::F64).unwrap().expect("streamed");
    assert!(pattern);
    for (k, &(x, y, _)) in entries.iter().enumerate() {
        assert_eq!(cols.entry(k), vec![x - 1, y - 1], "line {}", k + 3);
    }
    // Through the whole-file reader (larger sizes): 11 to 20 digits, up to 2^64 - 1.
    let max = u64::MAX;
    let mut s = format!("%%MatrixMarket matrix coordinate pattern general\n{max} {max} 30\n");
    let mut want = Vec::new();
    for d in 11..=20u32 {
        for _ in 0..3 {
            let lo = 10u64.pow(d - 1);
            let x = if d == 20 { lo + r.below(max - lo) } else { lo + r.below(9 * lo) };
            writeln!(s, "{x} 0{x}").unwrap();
            want.push(x - 1);
        }
    }
    let path2 = put("coords_wide", &s);
    let coo = parse_mtx_for(&std::fs::read(&path2).unwrap(), &path2, ScalarType::F64).unwrap().0;
    for (k, &x) in want.iter().enumerate() {
        assert_eq!(coo.entry(k), vec![x, x], "entry {k}");
    }
    for p in [path, path2] {
        std::fs::remove_file(p).unwrap();
    }
}

#[test]
fn coordinate_errors_keep_their_messages() {
    let read = |name: &str, size: &str, line: &str| {
        let path = put(name, &format!("%%MatrixMarket matrix coordinate real general\n{size} 2\n1 1 1\n{line}\n"));
        let e = heddle_runtime::sparse::file::read_as_written(&path).expect_err("an error").to_string();
        std::fs::remove_file(path).unwrap();
        e
    };
    let e = read("over64", "18446744073709551615 5", "18446744073709551616 1 2");
    assert!(e.contains(":4: row index `18446744073709551616` is beyond 2^64 - 1"), "{e}");
    let e = read("over64b", "18446744073709551615 5", "1 000000000000000000000018446744073709551617 2");
    assert!(e.contains(":4: column index `000000000000000000000018446744073709551617` is beyond 2^64 - 1"), "{e}");
    let e = read("over32", "4294967296 5", "4294967297 1 2");
    assert!(e.contains(":4: row index 4294967297 is beyond the size 4294967296"), "{e}");
    let e = read("oversize", "1000 5", "1001 1 2");
    assert!(e.contains(":4: row index 1001 is beyond the size 1000"), "{e}");
    let e = read("zero", "1000 5", "00000000 1 2");
    assert!(e.contains(":4: row index 0 is invalid: indices start at 1"), "{e}");
    let e = read("letters", "1000 5", "12a4 1 2");
    assert!(e.contains(":4: row index `12a4` is not a non-negative integer"), "{e}");
    let e = read("sign", "1000 5", "1 -3 2");
    assert!(e.contains(":4: column index `-3` is not a non-negative integer"), "{e}");
}

//! The exit-code and JSON-error table: every kind of mistake a user makes on
//! the command line, its exit status (2 for usage, found before any work; 1
//! for bad input), and the `--json` error object (`heddle.error/1`: `kind`,
//! `message`, and `file`/`line`/`column`, `parameter` or `flag`), validated
//! against `docs/schemas/heddle.error.json`.

use crate::common;

use common::{assert_schema, heddle, heddle_json, write};

/// What the first error must say.
struct Expect {
    code: i32,
    kind: &'static str,
    /// A field of the error and its value (`flag`, `parameter`, `file`…).
    field: Option<(&'static str, &'static str)>,
    /// Words the message (or a note) contains.
    says: &'static str,
}

fn expect(code: i32, kind: &'static str, field: Option<(&'static str, &'static str)>, says: &'static str) -> Expect {
    Expect { code, kind, field, says }
}

fn check_row(args: &[&str], e: &Expect) {
    let label = format!("heddle {}", args.join(" "));
    let (code, v) = heddle_json(args);
    assert_eq!(code, e.code, "{label}: exit status\n{v:#}");
    assert_schema(&v, &label);
    assert_eq!(v["exit_code"], e.code, "{label}");
    let first = &v["errors"][0];
    assert_eq!(first["kind"], e.kind, "{label}: kind\n{v:#}");
    if let Some((key, value)) = e.field {
        assert_eq!(first[key], value, "{label}: {key}\n{v:#}");
    }
    let text = format!("{} {}", first["message"], first["notes"]);
    assert!(text.contains(e.says), "{label}: the error should say `{}`:\n{v:#}", e.says);
    // Without --json the same status, and the message on stderr.
    let (plain, out, err) = heddle(args);
    assert_eq!(plain, e.code, "{label} without --json");
    assert!(out.is_empty(), "{label}: nothing on stdout when it fails, found {out}");
    assert!(!err.is_empty(), "{label}: a message on stderr");
}

#[test]
fn usage_errors_exit_2_before_any_work() {
    let dense = "examples/dense_mv.hdl";
    // `--output-dims` without a .mtx output would otherwise only fail after
    // the kernel ran: checked first.
    let rows: Vec<(Vec<&str>, Expect)> = vec![
        (vec!["frobnicate"], expect(2, "usage", None, "frobnicate")),
        (vec!["check"], expect(2, "usage", None, "required")),
        (vec!["run", dense, "--param", "n=abc"], expect(2, "usage", Some(("flag", "--param")), "not a natural number")),
        (vec!["run", dense, "--param", "n=-3"], expect(2, "usage", Some(("flag", "--param")), "negative")),
        (vec!["run", dense, "--param", "n"], expect(2, "usage", Some(("flag", "--param")), "NAME=VALUE")),
        (
            vec!["run", dense, "--output", "out.csv"],
            expect(2, "usage", Some(("flag", "--output")), ".npy, .json, .mtx"),
        ),
        (vec!["run", dense, "--input", "xs"], expect(2, "usage", Some(("flag", "--input")), "NAME=PATH")),
        (vec!["run", dense, "--input", "xs=values.csv"], expect(2, "usage", Some(("flag", "--input")), ".npy, .json")),
        (vec!["run", dense, "--matrix", "A=m.txt"], expect(2, "usage", Some(("flag", "--matrix")), ".mtx")),
        (vec!["run", dense, "--backend", "gpu"], expect(2, "usage", Some(("flag", "--backend")), "gpu")),
        (vec!["run", dense, "--threads", "0"], expect(2, "usage", Some(("flag", "--threads")), "0")),
        (vec!["run", dense, "--output-dims", "3x3"], expect(2, "usage", Some(("flag", "--output-dims")), ".mtx")),
        (
            vec!["run", dense, "--output-dims", "3by3", "-o", "c.mtx"],
            expect(2, "usage", Some(("flag", "--output-dims")), "ROWSxCOLS"),
        ),
        (
            vec!["run", dense, "--inptu", "xs=a.npy"],
            expect(2, "usage", Some(("flag", "--inptu")), "unexpected argument"),
        ),
        (
            vec!["run", dense, "--encoding", "matrix=cssr"],
            expect(2, "usage", Some(("file", "--encoding")), "not an encoding"),
        ),
        (
            vec!["run", dense, "--encoding", "matrix=csr"],
            expect(2, "usage", Some(("file", "--encoding")), "write `CSR`"),
        ),
        (
            vec!["sparsify", dense, "--encoding", "matrix=BSR(0, 2)"],
            expect(2, "usage", Some(("file", "--encoding")), "at least 1"),
        ),
        // auto chooses from a matrix file: without one, a usage error saying what to give.
        (
            vec!["sparsify", dense, "--encoding", "matrix=auto"],
            expect(2, "usage", Some(("flag", "--encoding")), "--matrix matrix=FILE"),
        ),
        (
            vec!["sparsify", dense, "--encoding", "matrix=CSR", "--matrix", "matrix=m.mtx"],
            expect(2, "usage", Some(("flag", "--matrix")), "--encoding matrix=auto"),
        ),
        (
            vec!["sparsify", dense, "--encoding", "xs=auto", "--matrix", "xs=examples/data/spmv8/matrix.mtx"],
            expect(2, "usage", Some(("flag", "--encoding")), "`xs` is not a matrix"),
        ),
        (
            vec!["convert", "m.mtx", "--to", "CSR", "-o", "out.csv"],
            expect(2, "usage", Some(("flag", "--output")), ".json, .mtx, .tns"),
        ),
        (
            vec!["compile", dense, "--param", "n=x"],
            expect(2, "usage", Some(("flag", "--param")), "not a natural number"),
        ),
        (
            vec!["tune", dense, "--param-range", "W=0..4"],
            expect(2, "usage", Some(("flag", "--param-range")), "1 <= a <= b"),
        ),
        // A count of repetitions past usize overflowed (a panic) before the range was checked.
        (
            vec!["tune", dense, "--reps", "18446744073709551615"],
            expect(2, "usage", Some(("flag", "--reps")), "too large"),
        ),
        (vec!["tune", dense, "--reps", "1000001"], expect(2, "usage", Some(("flag", "--reps")), "1..=1000000")),
        (vec!["tune", dense, "--reps", "0"], expect(2, "usage", Some(("flag", "--reps")), "1..=1000000")),
    ];
    for (args, e) in &rows {
        check_row(args, e);
    }
}

#[test]
fn input_errors_exit_1_and_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let xs = write(dir.path(), "xs.json", "[1.0, 2.0]");
    let i = write(dir.path(), "i.json", "5");
    let matrix = write(dir.path(), "matrix.json", "[[1.0, 2.0], [3.0, 4.0]]");
    let short = write(dir.path(), "short.json", "[1.0]");
    let oob = write(dir.path(), "oob.hdl", "nFun(n => fun(xs: [float]_n => fun(i: int => xs@i)))\n");
    let (xs, i, matrix, short, oob) = (
        xs.to_str().unwrap(),
        i.to_str().unwrap(),
        matrix.to_str().unwrap(),
        short.to_str().unwrap(),
        oob.to_str().unwrap(),
    );
    let dense = "examples/dense_mv.hdl";
    let m = format!("matrix={matrix}");
    let rows: Vec<(Vec<String>, Expect)> = vec![
        (vec!["check".into(), "no/such/file.hdl".into()], expect(1, "io", None, "no/such/file.hdl")),
        (
            vec!["check".into(), "tests/errors/unbound_variable.hdl".into()],
            expect(1, "type", Some(("file", "tests/errors/unbound_variable.hdl")), "unbound variable"),
        ),
        (
            vec!["check".into(), "tests/errors/unclosed_paren.hdl".into()],
            expect(1, "syntax", Some(("file", "tests/errors/unclosed_paren.hdl")), "expected"),
        ),
        (
            vec!["simplify".into(), "--nat".into(), "n +".into()],
            expect(1, "syntax", Some(("file", "--nat")), "expected"),
        ),
        // `heddle type`'s argument is its input: a bad one is exit 1.
        (vec!["type".into(), "CSF".into()], expect(1, "type", Some(("file", "<encoding>")), "rank")),
        (
            vec!["type".into(), "#sparse_tensor.encoding<{ map = (i) -> (i : bogus) }>".into()],
            expect(1, "type", Some(("file", "<encoding>")), "bogus"),
        ),
        (
            vec!["run".into(), dense.into(), "--input".into(), m.clone(), "--input".into(), format!("ys={xs}")],
            expect(1, "data", Some(("parameter", "ys")), "no input"),
        ),
        (
            vec!["run".into(), dense.into(), "--input".into(), m.clone(), "--input".into(), format!("xs={short}")],
            expect(1, "data", Some(("parameter", "xs")), "length"),
        ),
        (
            vec!["run".into(), dense.into(), "--input".into(), m.clone(), "--input".into(), "xs=no/such.json".into()],
            expect(1, "io", Some(("parameter", "xs")), "no/such.json"),
        ),
        (
            vec!["run".into(), oob.into(), "--input".into(), format!("xs={xs}"), "--input".into(), format!("i={i}")],
            expect(1, "runtime", Some(("line", "")), "out of bounds"),
        ),
    ];
    for (args, e) in &rows {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let e = match e.field {
            // A run-time error is located in the kernel: line 1.
            Some(("line", _)) => {
                let (_, v) = heddle_json(&args);
                assert_eq!(v["errors"][0]["line"], 1, "{v:#}");
                assert_eq!(v["errors"][0]["file"], oob, "{v:#}");
                Expect { field: None, ..expect(e.code, e.kind, None, e.says) }
            }
            _ => expect(e.code, e.kind, e.field, e.says),
        };
        check_row(&args, &e);
    }
}

#[test]
fn a_file_in_error_has_its_location() {
    let (code, v) = heddle_json(&["check", "tests/errors/zip_length_mismatch.hdl"]);
    assert_eq!(code, 1);
    assert_schema(&v, "check zip_length_mismatch");
    let e = &v["errors"][0];
    assert_eq!((e["line"].as_u64(), e["column"].as_u64()), (Some(4), Some(10)), "{v:#}");
}

#[test]
fn did_you_mean() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "k.hdl",
        "nFun(n => fun(xs: [float]_n => xs :>> mapp(fun(x => x * 2.0)) :>> redcue(+, 0)))\n",
    );
    let (code, v) = heddle_json(&["check", f.to_str().unwrap()]);
    assert_eq!(code, 1);
    let notes = v["errors"].to_string();
    assert!(notes.contains("did you mean the pattern `map`?"), "{v:#}");
    assert!(notes.contains("did you mean the pattern `reduce`?"), "{v:#}");
    let g = write(dir.path(), "g.hdl", "nFun(n => fun(offset: [int]_n => ofset))\n");
    let (_, v) = heddle_json(&["check", g.to_str().unwrap()]);
    assert!(v["errors"].to_string().contains("did you mean `offset`?"), "{v:#}");
    // A backend that does not exist, but is meant: clap's suggestion.
    let (_, v) = heddle_json(&["run", "examples/dense_mv.hdl", "--backend", "gpu"]);
    assert_eq!(v["errors"][0]["suggestion"], "opencl", "{v:#}");
}

#[test]
fn flags_without_effect_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "k.hdl", "nFun(n => fun(xs: [float]_n => xs :>> reduce(+, 0)))\n");
    let xs = write(dir.path(), "xs.json", "[1.0, 2.5]");
    let args = ["run", f.to_str().unwrap(), "--input", &format!("xs={}", xs.to_str().unwrap()), "--threads", "4"];
    let (code, _, err) = heddle(&args);
    assert_eq!(code, 0);
    assert!(err.contains("--threads applies to --backend cpu"), "{err}");
    let (code, v) = heddle_json(&args);
    assert_eq!(code, 0);
    assert_schema(&v, "run with --threads");
    assert!(v["warnings"][0].as_str().unwrap().contains("--threads"), "{v:#}");
    assert_eq!(v["result"], 3.5);
}

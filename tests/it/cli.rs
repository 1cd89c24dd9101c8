//! The command line: exit codes, `--json`, and bad data of every kind giving
//! a clear error that names the parameter (exit status 1).

use crate::common;

use common::{assert_input_error, heddle};
use heddle_ir::{Nat, ScalarType, Type};
use heddle_runtime::io::write::write_npy;
use heddle_runtime::value::Value;
use std::path::{Path, PathBuf};

fn npy(dir: &Path, name: &str, values: Vec<Value>, s: ScalarType) -> String {
    let path: PathBuf = dir.join(format!("{name}.npy"));
    let ty = Type::array(Type::Scalar(s), Nat::Lit(values.len() as i64));
    write_npy(&path, &Value::array(values), &ty).unwrap();
    path.to_str().unwrap().to_string()
}
fn ints(v: &[i64]) -> Vec<Value> {
    v.iter().map(|x| Value::Int(*x)).collect()
}
fn floats(v: &[f64]) -> Vec<Value> {
    v.iter().map(|x| Value::Float(*x)).collect()
}

/// A valid unpacked CSR input set for `examples/csr_unpacked_spmv.hdl` (3×3).
struct Csr {
    dir: tempfile::TempDir,
}
impl Csr {
    fn new() -> Csr {
        let dir = tempfile::tempdir().unwrap();
        npy(dir.path(), "offset", ints(&[0, 2, 2, 3]), ScalarType::I32);
        npy(dir.path(), "col", ints(&[0, 2, 1]), ScalarType::I32);
        npy(dir.path(), "val", floats(&[1.5, 2.0, -1.0]), ScalarType::F32);
        npy(dir.path(), "xs", floats(&[1.0, 2.0, 3.0]), ScalarType::F32);
        Csr { dir }
    }
    fn path(&self, name: &str) -> String {
        self.dir.path().join(format!("{name}.npy")).to_str().unwrap().to_string()
    }
    fn run(&self, replace: &[(&str, String)], extra: &[&str]) -> (i32, String, String) {
        let mut inputs = [
            ("offset", self.path("offset")),
            ("col_indices", self.path("col")),
            ("values", self.path("val")),
            ("xs", self.path("xs")),
        ];
        for (k, v) in replace {
            if let Some(slot) = inputs.iter_mut().find(|(n, _)| n == k) {
                slot.1 = v.clone();
            }
        }
        let mut args: Vec<String> = vec!["run".into(), "examples/csr_unpacked_spmv.hdl".into()];
        for (k, v) in inputs.iter().filter(|(_, v)| !v.is_empty()) {
            args.push("--input".into());
            args.push(format!("{k}={v}"));
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        heddle(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }
}

#[test]
fn csr_runs_from_npy() {
    let csr = Csr::new();
    let (code, out, err) = csr.run(&[], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "[7.5,0.0,-2.0]");
}

#[test]
fn output_to_npy_round_trips() {
    let csr = Csr::new();
    let out = csr.dir.path().join("y.npy");
    let (code, _, err) = csr.run(&[], &["--output", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    match heddle_runtime::io::read_input(&out).unwrap().into_values() {
        heddle_runtime::io::Loaded::Flat { items, dtype, .. } => {
            assert_eq!(dtype, "float32");
            assert_eq!(items, floats(&[7.5, 0.0, -2.0]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn decreasing_offsets_are_rejected() {
    let csr = Csr::new();
    let bad = npy(csr.dir.path(), "bad_offset", ints(&[0, 2, 1, 3]), ScalarType::I32);
    assert_input_error(csr.run(&[("offset", bad)], &[]), "offset", "negative");
}

#[test]
fn column_index_out_of_range_is_rejected() {
    let csr = Csr::new();
    let bad = npy(csr.dir.path(), "bad_col", ints(&[0, 3, 1]), ScalarType::I32);
    assert_input_error(csr.run(&[("col_indices", bad)], &[]), "xs", "out of bounds");
}

#[test]
fn short_values_buffer_is_rejected() {
    let csr = Csr::new();
    let bad = npy(csr.dir.path(), "short", floats(&[1.5, 2.0]), ScalarType::F32);
    assert_input_error(csr.run(&[("values", bad)], &[]), "values", "needs 3 elements");
}

#[test]
fn float_buffer_for_int_parameter_is_rejected() {
    let csr = Csr::new();
    let bad = npy(csr.dir.path(), "float_offsets", floats(&[0.0, 2.0, 2.0, 3.0]), ScalarType::F32);
    assert_input_error(csr.run(&[("offset", bad)], &[]), "offset", "expected integer data");
}

#[test]
fn missing_input_is_rejected() {
    let csr = Csr::new();
    assert_input_error(csr.run(&[("xs", String::new())], &[]), "xs", "no input given");
}

#[test]
fn a_file_that_is_not_npy_is_rejected() {
    let csr = Csr::new();
    let fake = csr.dir.path().join("fake.npy");
    std::fs::write(&fake, "offset,0,2,2,3\n").unwrap();
    assert_input_error(csr.run(&[("offset", fake.to_str().unwrap().into())], &[]), "offset", "not a valid .npy file");
}

#[test]
fn contradicting_param_is_rejected() {
    let csr = Csr::new();
    assert_input_error(csr.run(&[], &["--param", "n=5"]), "offset", "needs 6 elements");
    assert_input_error(csr.run(&[], &["--param", "q=5"]), "q", "no natural parameter");
}

#[test]
fn exit_codes() {
    assert_eq!(heddle(&["check", "examples/csr_packed_spmv.hdl"]).0, 0);
    assert_eq!(heddle(&["check", "tests/errors/unbound_variable.hdl"]).0, 1);
    assert_eq!(heddle(&["check", "no/such/file.hdl"]).0, 1);
    assert_eq!(heddle(&["check"]).0, 2, "a missing argument is a usage error");
    assert_eq!(heddle(&["frobnicate"]).0, 2);
    assert_eq!(heddle(&["run", "examples/dense_mv.hdl", "--backend", "nosuch"]).0, 2);
}

#[test]
fn check_json() {
    let (code, out, _) = heddle(&["check", "--json", "examples/csr_row_sums.hdl"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["result"], "[float]_n");
    assert_eq!(v["params"][0]["kind"], "nat");
    assert_eq!(v["params"][1]["name"], "offset");

    let (code, out, _) = heddle(&["check", "--json", "tests/errors/zip_length_mismatch.hdl"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["errors"][0]["line"], 4);
    assert_eq!(v["errors"][0]["column"], 10);
}

#[test]
fn fmt_is_idempotent_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    for path in common::hdl_files("examples") {
        let (code, once, err) = heddle(&["fmt", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        let copy = dir.path().join("copy.hdl");
        std::fs::write(&copy, &once).unwrap();
        let (_, twice, _) = heddle(&["fmt", copy.to_str().unwrap()]);
        assert_eq!(once, twice, "{}", path.display());
        assert_eq!(heddle(&["fmt", "--check", copy.to_str().unwrap()]).0, 0);
    }
}

#[test]
fn run_json_reports_type_and_result() {
    let (code, out, err) = heddle(&[
        "run",
        "--json",
        "examples/dense_mv.hdl",
        "--input",
        "matrix=examples/data/dense_mv/matrix.json",
        "--input",
        "xs=examples/data/dense_mv/xs.json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["type"], "[float]_n");
    assert_eq!(v["result"], serde_json::json!([7.0, 6.0]));
}

#[test]
fn hostile_programs_do_not_crash() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!("fun(a: int => {}a{})", "(".repeat(20000), ")".repeat(20000));
    let cases = [
        deep.as_str(),
        "",
        "\u{0}\u{1}",
        "fun(xs: [float]_{sum(i = 0 .. 99999999999, i)} => xs)",
        "fun(a: int => a / 0)",
        "nFun(n => fun(xs: [float]_{n / 0} => xs))",
        "def f = f; f",
        "fun(p: (int, int) => p.99999999999)",
        "fun(x: [int]_4 => x :>> split(0))",
        "fun(x: [int]_4 => x :>> slide(5, 0))",
        "#X = #sparse_tensor.encoding<{ map = (i) -> (i : dense) }>\nfun(a: int => a)",
    ];
    for (k, src) in cases.iter().enumerate() {
        let path = dir.path().join(format!("case{k}.hdl"));
        std::fs::write(&path, src).unwrap();
        let (code, _, err) = heddle(&["check", path.to_str().unwrap()]);
        assert!(code == 0 || code == 1, "case {k}: exit {code}\n{err}");
        assert!(!err.contains("panicked"), "case {k}: {err}");
    }
}

#[test]
fn an_empty_json_array_has_no_rows_at_every_depth() {
    let dir = tempfile::tempdir().unwrap();
    let empty = common::write(dir.path(), "empty.json", "[]");
    let two = common::write(dir.path(), "two.json", "[1.0, 2.0]");
    let (e, t) = (format!("matrix={}", empty.display()), format!("xs={}", two.display()));
    // n = 0 rows from `[]`, m from xs (or 0 from an empty xs): no rows, an empty result.
    for xs in [format!("xs={}", empty.display()), t] {
        let (code, out, err) = common::heddle(&["run", "examples/dense_mv.hdl", "--input", &e, "--input", &xs]);
        assert_eq!((code, out.trim()), (0, "[]"), "{xs}: {err}");
    }
    // A row length nothing gives is still asked for, by name.
    let (code, _, err) = common::heddle(&[
        "run",
        "examples/sparse/insert_dense_csr.hdl",
        "--input",
        &format!("dense={}", empty.display()),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--param m="), "{err}");
}

/// Rows without entries show no depth in JSON (`[[]]`), yet they are rows:
/// packed CSR's values (tuples) bind as n = 1, 2 empty rows wherever the
/// offsets agree, and a row count the offsets contradict is still an error.
#[test]
fn json_rows_without_entries_bind_as_rows() {
    let dir = tempfile::tempdir().unwrap();
    let arg =
        |name: &str, file: &str, text: &str| format!("{name}={}", common::write(dir.path(), file, text).display());
    let xs = arg("xs", "xs.json", "[1.0, 2.0]");
    let run = |offsets: &str, values: &str| {
        let (o, v) = (arg("offset", "offset.json", offsets), arg("values", "values.json", values));
        common::heddle(&["run", "examples/csr_packed_spmv.hdl", "--input", &o, "--input", &v, "--input", &xs])
    };
    for (offsets, values, want) in [
        ("[0, 0]", "[[]]", "[0.0]"),
        ("[0, 0, 0]", "[[], []]", "[0.0,0.0]"),
        ("[0, 0, 1]", "[[], [[1, 3.0]]]", "[0.0,6.0]"),
    ] {
        let (code, out, err) = run(offsets, values);
        assert_eq!((code, out.trim()), (0, want), "{offsets} {values}: {err}");
    }
    // One row given, two in the offsets (and the reverse): the lengths disagree.
    for (offsets, values, words) in [
        ("[0, 0, 0]", "[[]]", "expected 2 elements"),
        ("[0, 0]", "[[], []]", "expected 1 elements"),
        ("[0, 1]", "[[]]", "expected 1 elements"),
    ] {
        let (code, _, err) = run(offsets, values);
        assert_eq!(code, 1, "{offsets} {values}: {err}");
        assert!(err.contains("parameter `values`") && err.contains(words), "{offsets} {values}: {err}");
    }
    // A flat list of tuples still reads as the flat buffer.
    let (code, out, err) = run("[0, 0, 1]", "[[1, 3.0]]");
    assert_eq!((code, out.trim()), (0, "[0.0,6.0]"), "{err}");
}

//! Every command's `--json` output, from real runs, validated against its
//! schema in `docs/schemas/` (named by the output's own `schema` field); and
//! every command has a schema.

use crate::common;

use common::{assert_schema, heddle, heddle_json, root};

fn ok(args: &[&str]) -> serde_json::Value {
    let (code, v) = heddle_json(args);
    assert_eq!(code, 0, "heddle {} failed:\n{v:#}", args.join(" "));
    assert_eq!(v["ok"], true);
    assert_schema(&v, &format!("heddle {}", args.join(" ")));
    v
}

const SPMV8: [&str; 8] = [
    "--input",
    "offset=examples/data/spmv8/offset.json",
    "--input",
    "col_indices=examples/data/spmv8/col_indices.json",
    "--input",
    "values=examples/data/spmv8/values.json",
    "--input",
    "xs=examples/data/spmv8/xs.json",
];

#[test]
fn every_command_has_a_schema() {
    let (code, help, _) = heddle(&["--help"]);
    assert_eq!(code, 0);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 10, "{help}");
    for c in commands {
        let path = root().join(format!("docs/schemas/heddle.{c}.json"));
        assert!(path.exists(), "`heddle {c} --json` has no schema at {}", path.display());
    }
}

#[test]
fn front_end_commands() {
    let v = ok(&["check", "examples/csr_row_sums.hdl"]);
    assert_eq!(v["schema"], "heddle.check/1");
    ok(&["check", "examples/sparse/spmv_csr.hdl"]);
    ok(&["fmt", "examples/csr_spmv_parallel.hdl"]);
    ok(&["fmt", "--check", "examples/lil_spmv.hdl"]);
    ok(&["simplify", "examples/lil_spmv.hdl"]);
    ok(&["simplify", "--nat", "sum(i = 0 .. n - 1, 2 * i)"]);
    ok(&["rewrite", "examples/csr_row_sums.hdl", "--iter-limit", "2"]);
    ok(&["type", "CSR"]);
    ok(&["type", "BSR(2, 2)", "--dims", "4x6"]);
    ok(&["sparsify", "examples/dense_mv.hdl", "--encoding", "matrix=CSR"]);
    let v = ok(&[
        "sparsify",
        "examples/dense_mv.hdl",
        "--encoding",
        "matrix=auto",
        "--matrix",
        "matrix=examples/data/spmv8/matrix.mtx",
    ]);
    assert!(v["auto"]["matrix"]["encoding"].is_string(), "{v}");
    let v = ok(&["prims"]);
    assert_eq!(v["prims"].as_array().unwrap().len(), heddle_ir::prims::signatures().len());
    ok(&["prims", "union"]);
    let v = ok(&["completions", "bash"]);
    assert!(v["script"].as_str().unwrap().contains("search-formats"));
    let v = ok(&["man", "run"]);
    assert!(v["page"].as_str().unwrap().contains("heddle\\-run"));
}

#[test]
fn run_and_compile() {
    let mut args = vec!["run", "examples/csr_unpacked_spmv.hdl"];
    args.extend(SPMV8);
    let v = ok(&args);
    assert_eq!(v["backend"], "interp");
    args.extend(["--backend", "cpu", "--threads", "2"]);
    ok(&args);
    args.extend(["--reps", "3"]);
    let v = ok(&args);
    assert!(v["kernel_seconds"]["p90"].is_number(), "{v}");
    ok(&[
        "run",
        "examples/sparse/spmv_csr.hdl",
        "--matrix",
        "A=examples/data/spmv8/matrix.mtx",
        "--input",
        "xs=examples/data/spmv8/xs.json",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.json");
    let mut to_file = vec!["run", "examples/csr_unpacked_spmv.hdl", "-o", out.to_str().unwrap()];
    to_file.extend(SPMV8);
    let v = ok(&to_file);
    assert!(v["result"].is_null() && out.exists());
    for target in ["loops", "cpu"] {
        ok(&["compile", "examples/csr_row_sums.hdl", "--target", target]);
    }
    ok(&["compile", "examples/csr_row_sums.hdl", "--target", "asm", "--large-inputs"]);
}

#[test]
fn sparse_storage_commands() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let v = ok(&["convert", "examples/data/spmv8/matrix.mtx", "--to", "ds:1,0", "-o", out.to_str().unwrap()]);
    assert_eq!(v["dim_sizes"], serde_json::json!([8, 6]));
    for to in ["DIA", "BSR(2, 2)", "COO"] {
        let v = ok(&["convert", "examples/data/spmv8/matrix.mtx", "--to", to, "-o", out.to_str().unwrap(), "--stats"]);
        assert!(v["stats"]["levels"].is_array(), "{to}: {v}");
    }
    ok(&[
        "search-formats",
        "examples/dense_mv.hdl",
        "--operand",
        "matrix",
        "--matrix",
        "matrix=examples/data/spmv8/matrix.mtx",
        "--input",
        "xs=examples/data/spmv8/xs.json",
        "--reps",
        "1",
        "--filter",
        "(i : dense, j : compressed) }",
    ]);
}

#[test]
fn opencl_commands() {
    if common::opencl_platform().is_none() {
        return;
    }
    ok(&["compile", "examples/csr_row_sums.hdl", "--target", "opencl"]);
    let mut args = vec!["run", "examples/csr_unpacked_spmv.hdl", "--backend", "opencl"];
    args.extend(SPMV8);
    ok(&args);
    let mut tune = vec![
        "tune",
        "examples/csr_spmv_parallel.hdl",
        "--param-range",
        "R=1..2",
        "--param-range",
        "W=1..2",
        "--reps",
        "1",
    ];
    tune.extend(SPMV8);
    ok(&tune);
}

#[test]
fn rewrite_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("g.json");
    let v = ok(&[
        "rewrite",
        "examples/csr_packed_spmv.hdl",
        "--explain",
        "--stats",
        "--dump-egraph",
        dump.to_str().unwrap(),
        "--dump-limit",
        "50",
    ]);
    assert!(v["explanation"]["steps"].as_array().is_some_and(|s| !s.is_empty()), "{v:#}");
    assert!(v["egraph_dump"]["truncated"].is_object());
    let g: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    assert_schema(&g, "the --dump-egraph file");
    let v = ok(&["rewrite", "examples/dense_mv.hdl", "--sketch", "mapWorkgroup(mapLocal(?))", "--param", "n=8"]);
    assert!(v["program"].as_str().unwrap().contains("mapLocal"));
    let v = ok(&["rewrite", "--list-rules"]);
    assert_eq!(v["schema"], "heddle.rewrite-rules/1");
    let v = ok(&[
        "rewrite",
        "examples/csr_packed_spmv.hdl",
        "--search",
        "3",
        "--backend",
        "interp",
        "--csr-packed",
        "offset,values=examples/data/spmv8/matrix.mtx",
        "--input",
        "xs=examples/data/spmv8/xs.json",
        "--reps",
        "1",
    ]);
    assert_eq!(v["schema"], "heddle.rewrite-search/1");
}

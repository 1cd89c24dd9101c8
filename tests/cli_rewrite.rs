//! `heddle rewrite`: output that `heddle check` accepts, `--json`, limits,
//! rule files and their errors, exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn heddle(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_heddle")).args(args).current_dir(root()).output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hdl"))
        .map(|p| format!("examples/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    v.sort();
    v
}

#[test]
fn every_example_rewrites_to_a_program_that_checks() {
    let dir = tempfile::tempdir().unwrap();
    for ex in examples() {
        for cost in ["size", "depth", "parallel"] {
            let out = heddle(&["rewrite", &ex, "--cost", cost]);
            assert!(out.status.success(), "{ex}: {}", String::from_utf8_lossy(&out.stderr));
            let path = dir.path().join("out.hdl");
            std::fs::write(&path, &out.stdout).unwrap();
            let check = heddle(&["check", path.to_str().unwrap()]);
            assert!(check.status.success(), "{ex} --cost {cost}:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&check.stderr));
        }
    }
}

#[test]
fn json_has_program_type_stats_and_rules() {
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--json"]);
    assert!(out.status.success());
    let j = json(&out);
    assert!(j["program"].as_str().unwrap().contains("mapGlobal"));
    assert_eq!(j["type"], "(n: nat) -> (m: nat) -> [[float]_m]_n -> [float]_m -> [float]_n");
    for k in ["iterations", "nodes", "classes", "seconds"] {
        assert!(j["stats"][k].is_number(), "{k}");
    }
    assert_eq!(j["stats"]["stop_reason"], "saturated");
    assert!(j["rules_applied"]["lower-map-global"].as_u64().unwrap() > 0);
    assert!(j["fallback"].is_null());
}

#[test]
fn limits_are_reported_by_name() {
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--json", "--iter-limit", "1"]);
    assert_eq!(json(&out)["stats"]["stop_reason"], "iteration-limit");
    let dir = tempfile::tempdir().unwrap();
    let terms: Vec<String> = (1..=14).map(|k| format!("x * {k}")).collect();
    let kernel = dir.path().join("sum.hdl");
    std::fs::write(&kernel, format!("nFun(n => fun(xs: [int]_n => xs :>> map(fun(x => {}))))", terms.join(" + "))).unwrap();
    let k = kernel.to_str().unwrap();
    let ac = "rewrite/tests/rules/ac.rules";
    let out = heddle(&["rewrite", k, "--no-builtin", "--rules", ac, "--node-limit", "2000", "--iter-limit", "1000", "--time-limit", "60", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j = json(&out);
    assert_eq!(j["stats"]["stop_reason"], "node-limit");
    assert_eq!(j["stats"]["limit"], 2000);
    // The environment sets defaults; flags win over it.
    let out = Command::new(env!("CARGO_BIN_EXE_heddle"))
        .args(["rewrite", k, "--no-builtin", "--rules", ac, "--json", "--node-limit", "1000000", "--time-limit", "60"])
        .env("HEDDLE_REWRITE_ITER_LIMIT", "2")
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(json(&out)["stats"]["stop_reason"], "iteration-limit");
}

#[test]
fn rule_file_errors_are_located_and_exit_1() {
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--rules", "rewrite/tests/rules/bad.rules"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rewrite/tests/rules/bad.rules:4:25"), "{err}");
    assert!(err.contains("`?g` does not occur on the left-hand side"), "{err}");
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--rules", "no/such.rules"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn usage_errors_exit_2() {
    for args in [&["rewrite", "examples/dense_mv.hdl", "--cost", "bogus"][..], &["rewrite", "examples/dense_mv.hdl", "--time-limit", "-1"], &["rewrite"]] {
        assert_eq!(heddle(args).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_user_rule_file_adds_rules() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("mine.rules");
    std::fs::write(&rules, "# fuse only\nfuse: ?x :>> map(?f) :>> map(?g) => ?x :>> map(fun(v => ?g(?f(v))))\n").unwrap();
    let out = heddle(&["rewrite", "rewrite/tests/kernels/fuse.hdl", "--no-builtin", "--rules", rules.to_str().unwrap(), "--cost", "parallel", "--json"]);
    let j = json(&out);
    assert_eq!(j["rules_applied"]["fuse"], 1);
    assert_eq!(j["stats"]["stop_reason"], "saturated");
    let p = j["program"].as_str().unwrap();
    assert_eq!(p.matches("map(").count(), 1, "{p}");
    assert!(Path::new(&rules).exists());
}

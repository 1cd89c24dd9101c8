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
            assert!(
                check.status.success(),
                "{ex} --cost {cost}:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&check.stderr)
            );
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
    std::fs::write(&kernel, format!("nFun(n => fun(xs: [int]_n => xs :>> map(fun(x => {}))))", terms.join(" + ")))
        .unwrap();
    let k = kernel.to_str().unwrap();
    let ac = "rewrite/tests/rules/ac.rules";
    let out = heddle(&[
        "rewrite",
        k,
        "--no-builtin",
        "--rules",
        ac,
        "--node-limit",
        "2000",
        "--iter-limit",
        "1000",
        "--time-limit",
        "60",
        "--json",
    ]);
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
    for args in [
        &["rewrite", "examples/dense_mv.hdl", "--cost", "bogus"][..],
        &["rewrite", "examples/dense_mv.hdl", "--time-limit", "-1"],
        &["rewrite"],
    ] {
        assert_eq!(heddle(args).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_user_rule_file_adds_rules() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("mine.rules");
    std::fs::write(&rules, "# fuse only\nfuse: ?x :>> map(?f) :>> map(?g) => ?x :>> map(fun(v => ?g(?f(v))))\n")
        .unwrap();
    let out = heddle(&[
        "rewrite",
        "rewrite/tests/kernels/fuse.hdl",
        "--no-builtin",
        "--rules",
        rules.to_str().unwrap(),
        "--cost",
        "parallel",
        "--json",
    ]);
    let j = json(&out);
    assert_eq!(j["rules_applied"]["fuse"], 1);
    assert_eq!(j["stats"]["stop_reason"], "saturated");
    let p = j["program"].as_str().unwrap();
    assert_eq!(p.matches("map(").count(), 1, "{p}");
    assert!(Path::new(&rules).exists());
}

#[test]
fn json_has_schema_per_rule_and_per_iteration_stats() {
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--json"]);
    let j = json(&out);
    assert_eq!(j["schema"], "heddle.rewrite/1");
    let rules = j["stats"]["rules"].as_array().unwrap();
    assert_eq!(rules.len() as u64, j["rules"].as_u64().unwrap());
    let fusion = rules.iter().find(|r| r["name"] == "lower-map-global").unwrap();
    assert!(fusion["matches"].as_u64().unwrap() >= fusion["applied"].as_u64().unwrap());
    assert!(fusion["applied"].as_u64().unwrap() > 0 && fusion["nodes_added"].as_u64().unwrap() > 0);
    // Applications in the table and in rules_applied agree.
    for r in rules {
        assert_eq!(r["applied"], j["rules_applied"][r["name"].as_str().unwrap()], "{r}");
    }
    let its = j["stats"]["per_iteration"].as_array().unwrap();
    assert_eq!(its.len() as u64, j["stats"]["iterations"].as_u64().unwrap());
    assert_eq!(its.last().unwrap()["nodes"], j["stats"]["nodes"]);
    assert!(j["stats"]["grew_most"].is_null(), "saturated: no limit stopped it");
    assert!(j["explanation"].is_null() && j["egraph_dump"].is_null());
}

#[test]
fn a_limit_names_the_rule_that_grew_the_egraph_most() {
    let dir = tempfile::tempdir().unwrap();
    let terms: Vec<String> = (1..=10).map(|k| format!("x * {k}")).collect();
    let kernel = dir.path().join("sum.hdl");
    std::fs::write(&kernel, format!("nFun(n => fun(xs: [int]_n => xs :>> map(fun(x => {}))))", terms.join(" + ")))
        .unwrap();
    let out = heddle(&[
        "rewrite",
        kernel.to_str().unwrap(),
        "--rules",
        "rewrite/tests/rules/ac.rules",
        "--node-limit",
        "1500",
        "--json",
    ]);
    let j = json(&out);
    assert_eq!(j["stats"]["stop_reason"], "node-limit");
    let grew = j["stats"]["grew_most"].as_str().unwrap();
    let rules = j["stats"]["rules"].as_array().unwrap();
    let most = rules.iter().map(|r| r["nodes_added"].as_u64().unwrap()).max().unwrap();
    assert_eq!(rules.iter().find(|r| r["name"] == grew).unwrap()["nodes_added"].as_u64().unwrap(), most);
    // The text form says it too, and prints the tables with --stats.
    let out = heddle(&[
        "rewrite",
        kernel.to_str().unwrap(),
        "--rules",
        "rewrite/tests/rules/ac.rules",
        "--node-limit",
        "1500",
        "--stats",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("grew the e-graph most: {grew}")), "{text}");
    assert!(text.contains("// rule ") && text.contains("matches") && text.contains("// iteration"), "{text}");
}

#[test]
fn explain_lists_the_steps_in_text_and_json() {
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--explain", "--json"]);
    let j = json(&out);
    let steps = j["explanation"]["steps"].as_array().unwrap();
    assert!(steps.len() >= 2, "{j}");
    for s in steps {
        assert!(j["rules_applied"][s["rule"].as_str().unwrap()].as_u64().unwrap() > 0, "{s}");
        assert!(s["path"].is_array() && s["before"] != s["after"], "{s}");
    }
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--explain"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("// explanation: ") && text.contains("before: ") && text.contains("after: "), "{text}");
    // The output is still a heddle file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.hdl");
    std::fs::write(&path, &out.stdout).unwrap();
    assert!(heddle(&["check", path.to_str().unwrap()]).status.success());
}

#[test]
fn dump_egraph_writes_json_and_dot_and_notes_a_cut() {
    let dir = tempfile::tempdir().unwrap();
    let js = dir.path().join("g.json");
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--dump-egraph", js.to_str().unwrap(), "--json"]);
    let j = json(&out);
    assert_eq!(j["egraph_dump"]["format"], "json");
    assert!(j["egraph_dump"]["truncated"].is_null());
    let g: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&js).unwrap()).unwrap();
    assert_eq!(g["schema"], "heddle.egraph/1");
    assert_eq!(g["nodes"].as_object().unwrap().len() as u64, j["stats"]["nodes"].as_u64().unwrap());
    let dot = dir.path().join("g.dot");
    let out =
        heddle(&["rewrite", "examples/dense_mv.hdl", "--dump-egraph", dot.to_str().unwrap(), "--dump-limit", "10"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("// TRUNCATED"));
    assert!(std::fs::read_to_string(&dot).unwrap().starts_with("digraph egraph {"));
    let bad =
        heddle(&["rewrite", "examples/dense_mv.hdl", "--dump-egraph", dir.path().join("g.txt").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
}

#[test]
fn list_rules_names_every_rule_and_where() {
    let out = heddle(&["rewrite", "--list-rules", "--json"]);
    assert!(out.status.success());
    let j = json(&out);
    assert_eq!(j["schema"], "heddle.rewrite-rules/1");
    let rules = j["rules"].as_array().unwrap();
    assert!(
        rules.iter().any(|r| r["name"] == "map-fusion" && r["origin"].as_str().unwrap().starts_with("builtin.rules:"))
    );
    let out = heddle(&["rewrite", "--list-rules", "--no-builtin", "--rules", "rewrite/tests/rules/fusion.rules"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("builtin.rules") && text.contains("rewrite/tests/rules/fusion.rules:"), "{text}");
}

#[test]
fn a_cost_file_prices_primitives() {
    let dir = tempfile::tempdir().unwrap();
    // Make mapSeq the cheapest way to run a map: the result runs sequentially.
    let costs = dir.path().join("seq.costs");
    std::fs::write(&costs, "# sequential\nmap 10\nmapGlobal 50\nmapWorkgroup 50\nmapLocal 50\nmapSeq 1\n").unwrap();
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--cost-file", costs.to_str().unwrap(), "--json"]);
    let j = json(&out);
    let p = j["program"].as_str().unwrap();
    assert!(p.contains("mapSeq") && !p.contains("mapGlobal"), "{p}");
    assert_eq!(j["cost"]["model"], costs.to_str().unwrap());
    // The built-in parallel model on the same kernel picks mapGlobal.
    assert!(
        json(&heddle(&["rewrite", "examples/dense_mv.hdl", "--json"]))["program"]
            .as_str()
            .unwrap()
            .contains("mapGlobal")
    );
    // Errors in a cost file are located, exit 1.
    std::fs::write(&costs, "map 10\nmapp 3\nmapSeq zero\n").unwrap();
    let out = heddle(&["rewrite", "examples/dense_mv.hdl", "--cost-file", costs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("seq.costs:2:1") && err.contains("`mapp` is not a primitive") && err.contains("seq.costs:3:1"),
        "{err}"
    );
}

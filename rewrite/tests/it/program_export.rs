//! E-graph export: snapshots of a small e-graph as JSON (egraph-serialize's
//! form) and Graphviz, whole and truncated; every child a node refers to is
//! in the file, and a cut says so.

use crate::program_common;

use heddle_rewrite::program::export::{to_dot, to_json};
use heddle_rewrite::program::{CostKind, CostModel, Limits, Options, Outcome, explore};
use program_common::*;

fn small() -> Outcome {
    let p = parse_file(&root().join("rewrite/tests/kernels/fuse.hdl"));
    let opts =
        Options { limits: Limits::default(), cost: CostKind::Size.into(), keep_egraph: true, ..Options::default() };
    explore(&p, &rules_file("fusion.rules"), &opts, &check).unwrap()
}

fn well_formed(j: &serde_json::Value) {
    let nodes = j["nodes"].as_object().unwrap();
    for (id, n) in nodes {
        let class = n["eclass"].as_str().unwrap();
        assert!(id.starts_with(&format!("{class}.")), "{id} in {class}");
        assert!(j["class_data"][class].is_object(), "{class}");
        for c in n["children"].as_array().unwrap() {
            assert!(nodes.contains_key(c.as_str().unwrap()), "{id} refers to {c}, not written");
        }
    }
    for r in j["root_eclasses"].as_array().unwrap() {
        assert!(nodes.contains_key(&format!("{}.0", r.as_str().unwrap())));
    }
}

#[test]
fn json_and_dot_of_a_small_egraph() {
    let o = small();
    let (g, root) = o.egraph.as_ref().unwrap();
    let (j, cut) = to_json(g, *root, &CostModel::size(), 10_000);
    assert!(cut.is_none());
    assert!(j["truncated"].is_null());
    well_formed(&j);
    assert_eq!(j["nodes"].as_object().unwrap().len(), o.stats.nodes);
    insta::assert_snapshot!("fuse_egraph_json", serde_json::to_string_pretty(&j).unwrap());
    let (dot, cut) = to_dot(g, *root, 10_000);
    assert!(cut.is_none() && !dot.contains("TRUNCATED"));
    insta::assert_snapshot!("fuse_egraph_dot", dot);
}

#[test]
fn a_cut_egraph_says_so_and_stays_well_formed() {
    let o = small();
    let (g, root) = o.egraph.as_ref().unwrap();
    let (j, cut) = to_json(g, *root, &CostModel::size(), 8);
    let cut = cut.expect("8 e-nodes cannot hold the whole e-graph");
    assert!(cut.nodes_kept <= 8 && cut.classes_kept < cut.classes, "{cut:?}");
    assert_eq!(j["truncated"]["limit"], 8);
    well_formed(&j);
    let omitted = j["class_data"].as_object().unwrap().values().filter(|c| c["omitted"] == true).count();
    assert!(omitted > 0);
    insta::assert_snapshot!("fuse_egraph_cut_json", serde_json::to_string_pretty(&j).unwrap());
    let (dot, _) = to_dot(g, *root, 8);
    assert!(dot.contains("TRUNCATED") && dot.contains("(left out)"), "{dot}");
    insta::assert_snapshot!("fuse_egraph_cut_dot", dot);
}

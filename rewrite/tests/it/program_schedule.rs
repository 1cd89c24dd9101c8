//! Every rule of the sparse and GPU schedule set (`schedule.rules`) keeps
//! types and meaning: on random kernels of the shapes the rules are for
//! (CSR rows packed and unpacked, dense rows, index spaces, rows already
//! dealt to work-items) and random data, each rule is applied at every
//! position where it matches (on the term alone, as explanations are
//! replayed), the result is type-checked like an extracted program (same
//! type, any new run-time obligation must hold for the data), and the
//! interpreter gives the same result as for the kernel it came from. Values
//! are small multiples of 1/4, so reassociated float sums and products are
//! exact and results are compared exactly.

use crate::program_common;

use heddle_ir::Program;
use heddle_rewrite::program::analysis::ProgAnalysis;
use heddle_rewrite::program::convert::{expr_to_rec, rec_to_expr};
use heddle_rewrite::program::explain::apply_at;
use heddle_rewrite::program::{Rule, rulefile, term, verify};
use program_common::*;
use proptest::prelude::*;
use serde_json::{Value as J, json};
use std::collections::BTreeMap;

/// A random sparse matrix: rows of (column, value), sorted by column.
#[derive(Clone, Debug)]
struct Sparse {
    rows: Vec<Vec<(usize, f64)>>,
    cols: usize,
}

fn sparse() -> impl Strategy<Value = Sparse> {
    // Row counts that group-rows can divide (4, 8) and ones it cannot.
    (prop_oneof![Just(0usize), 1usize..4, Just(4usize), Just(8usize)], 1usize..7).prop_flat_map(|(n, m)| {
        let entry = (0..m, (-8i32..9).prop_map(|k| k as f64 / 4.0));
        prop::collection::vec(prop::collection::vec(entry, 0..6), n).prop_map(move |rows| {
            let rows = rows
                .into_iter()
                .map(|r| {
                    let mut by: BTreeMap<usize, f64> = BTreeMap::new();
                    for (c, v) in r {
                        by.insert(c, v);
                    }
                    by.into_iter().collect()
                })
                .collect();
            Sparse { rows, cols: m }
        })
    })
}

/// An element function of a (column, value) entry, with `xs` in scope.
const ENTRY_FNS: [&str; 4] = ["x.2 * xs@x.1", "x.2 + xs@x.1", "x.2 * x.2", "xs@x.1 - x.2"];
/// Reduction operators with their identities (and one without: `max`, which the rules must leave alone).
const REDUCTIONS: [&str; 3] = ["+, 0", "*, 1", "max, -100"];

const PACKED: &str = "nFun(n => nFun(m => fun(offset: [int]_{n+1} => fun(values: [i -> [(int, float)]_{toNat(offset@(i+1) - offset@i)}]_n => fun(xs: [float]_m => BODY)))))";
const UNPACKED: &str = "nFun(n => nFun(m => fun(offset: [int]_{n+1} => fun(col_indices: [i -> [int]_{toNat(offset@(i+1) - offset@i)}]_n => fun(values: [i -> [float]_{toNat(offset@(i+1) - offset@i)}]_n => fun(xs: [float]_m => BODY))))))";
const DENSE: &str = "nFun(n => nFun(m => fun(matrix: [[float]_m]_n => fun(xs: [float]_m => BODY))))";

/// The kernels for one choice of element function and reduction.
fn kernels(f: &str, r: &str) -> Vec<(&'static str, String)> {
    let packed = |body: String| PACKED.replace("BODY", &body);
    let row = format!("row :>> map(fun(x => {f})) :>> reduce({r})");
    // Unpacked rows zip (column, value) the same way: the entry functions read alike.
    let unpacked_f = f;
    vec![
        ("listing5", packed(format!("values :>> map(fun(row => {row}))"))),
        ("index-space", packed(format!("generate(n, fun(i => i)) :>> map(fun(i => values@i :>> map(fun(x => {f})) :>> reduce({r})))"))),
        ("reduce-only", packed(format!("values :>> map(fun(row => row :>> map(fun(x => {f})) :>> mapSeq(fun(y => y)) :>> reduce({r})))"))),
        (
            "dealt",
            packed(format!(
                "values :>> mapWorkgroup(fun(row => row :>> interleave(2) :>> mapLocal(fun(part => part :>> mapSeq(fun(x => {f})) :>> reduceSeq({r}))) :>> reduce({r})))"
            )),
        ),
        (
            "dealt-dim",
            packed(format!(
                "values :>> mapWorkgroup(fun(row => row :>> interleave(4) :>> mapLocal(0, fun(part => part :>> mapSeq(fun(x => {f})) :>> reduceSeq({r}))) :>> reduce({r})))"
            )),
        ),
        (
            "unpacked-index",
            UNPACKED.replace(
                "BODY",
                &format!("generate(n, fun(i => i)) :>> map(fun(i => let row = zip(col_indices, values)@i in zip(row.1, row.2) :>> map(fun(x => {unpacked_f})) :>> reduce({r})))"),
            ),
        ),
        ("unpacked", UNPACKED.replace("BODY", &format!("zip(col_indices, values) :>> map(fun(row => zip(row.1, row.2) :>> map(fun(x => {unpacked_f})) :>> reduce({r})))"))),
        ("dense", DENSE.replace("BODY", &format!("matrix :>> map(fun(row => zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduce({r})))"))),
    ]
}

fn inputs(kind: &str, a: &Sparse) -> Vec<(&'static str, J)> {
    let mut offsets = vec![0];
    for r in &a.rows {
        offsets.push(offsets.last().unwrap() + r.len());
    }
    let xs: Vec<f64> = (0..a.cols).map(|k| (k as f64 - 2.0) / 2.0).collect();
    match kind {
        "unpacked" | "unpacked-index" => {
            let cols: Vec<usize> = a.rows.iter().flatten().map(|e| e.0).collect();
            let vals: Vec<f64> = a.rows.iter().flatten().map(|e| e.1).collect();
            vec![("offset", json!(offsets)), ("col_indices", json!(cols)), ("values", json!(vals)), ("xs", json!(xs))]
        }
        "dense" => {
            let dense: Vec<Vec<f64>> = a
                .rows
                .iter()
                .map(|r| (0..a.cols).map(|c| r.iter().find(|e| e.0 == c).map_or(0.0, |e| e.1)).collect())
                .collect();
            vec![("matrix", json!(dense)), ("xs", json!(xs))]
        }
        _ => {
            let packed: Vec<J> = a.rows.iter().flatten().map(|(c, v)| json!([c, v])).collect();
            vec![("offset", json!(offsets)), ("values", json!(packed)), ("xs", json!(xs))]
        }
    }
}

/// Every path from the root to a node of the term.
fn paths(t: &egg::RecExpr<heddle_rewrite::program::lang::Prog>) -> Vec<Vec<usize>> {
    use egg::Language;
    fn go(
        t: &egg::RecExpr<heddle_rewrite::program::lang::Prog>,
        id: egg::Id,
        here: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        out.push(here.clone());
        for (k, c) in t[id].children().iter().enumerate() {
            here.push(k);
            go(t, *c, here, out);
            here.pop();
        }
    }
    let mut out = Vec::new();
    go(t, term::root(t), &mut Vec::new(), &mut out);
    out
}

/// Applies `rule` everywhere it matches in `p`; checks each result. The
/// number of applications.
fn check_rule(rule: &Rule, kind: &str, p: &Program, a: &Sparse) -> usize {
    let n = a.rows.len() as i64;
    let m = a.cols as i64;
    let facts = vec![(heddle_ir::Name::from("n"), n), (heddle_ir::Name::from("m"), m)];
    let mut analysis = ProgAnalysis::for_kernel(&p.kernel);
    analysis.facts = facts.clone();
    let original = check(p).unwrap_or_else(|e| panic!("{kind}: {e}\n{}", heddle_ir::printer::print_program(p)));
    let ins = inputs(kind, a);
    let nats = [("n", n), ("m", m)];
    let before = run(p, &nats, &ins);
    let t = expr_to_rec(&p.kernel);
    let mut applied = 0;
    for path in paths(&t) {
        let Ok(new) = apply_at(rule, &t, &path, &analysis) else { continue };
        let e = heddle_rewrite::program::beta::tidy(&rec_to_expr(&new).unwrap());
        let (q, text, _) = verify(p, e, &original, &facts, &check).unwrap_or_else(|why| {
            panic!("{} at {path:?} of {kind}: {why}\n{}", rule.name, heddle_ir::printer::print_program(p))
        });
        let after = run(&q, &nats, &ins);
        assert_eq!(before, after, "{} at {path:?} of {kind} on {a:?}\n{text}", rule.name);
        applied += 1;
    }
    applied
}

fn all_rules_keep_meaning(a: &Sparse, f: usize, r: usize, counts: &mut BTreeMap<String, usize>) {
    let rules = rulefile::schedule();
    for (kind, src) in kernels(ENTRY_FNS[f], REDUCTIONS[r]) {
        let p = heddle_ir::parser::parse_program(&src).unwrap_or_else(|d| panic!("{kind}: {d:?}\n{src}"));
        for rule in &rules {
            *counts.entry(rule.name.clone()).or_default() += check_rule(rule, kind, &p, a);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn each_schedule_rule_keeps_types_and_results(a in sparse(), f in 0..ENTRY_FNS.len(), r in 0..REDUCTIONS.len()) {
        all_rules_keep_meaning(&a, f, r, &mut BTreeMap::new());
    }
}

#[test]
fn every_schedule_rule_is_exercised_and_conditions_block_max() {
    // A fixed matrix of 64 rows (every group-rows size divides it), each reduction.
    let a = Sparse {
        rows: (0..64).map(|i| (0..(i % 4)).map(|c| (c, (c as f64 + 1.0) / 4.0)).collect()).collect(),
        cols: 4,
    };
    let mut counts = BTreeMap::new();
    for r in 0..REDUCTIONS.len() {
        all_rules_keep_meaning(&a, r % ENTRY_FNS.len(), r, &mut counts);
    }
    for rule in rulefile::schedule() {
        assert!(counts[&rule.name] > 0, "{} never applied: {counts:?}", rule.name);
    }
    // `max` has no identity literal: dealing a max-reduction is never allowed.
    let rules = rulefile::schedule();
    let deal = rules.iter().find(|r| r.name == "deal[k=2]").unwrap();
    let (_, src) = kernels(ENTRY_FNS[0], "max, -100").into_iter().next().unwrap();
    let p = heddle_ir::parser::parse_program(&src).unwrap();
    assert_eq!(check_rule(deal, "listing5", &p, &a), 0);
}

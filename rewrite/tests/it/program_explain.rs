//! Explanations replay: for every example and test kernel, under several
//! rule sets and cost models, the rules the explanation lists, applied in
//! order to the input at the positions it gives (matched, conditions
//! decided and instantiated on the term alone), give the extracted
//! program; tidying that gives the printed result. A tampered explanation
//! (another rule, another position, a step left out) does not replay.

use crate::program_common;

use heddle_rewrite::program::analysis::ProgAnalysis;
use heddle_rewrite::program::explain::{Explanation, replay};
use heddle_rewrite::program::{CostKind, Limits, Options, Outcome, Rule, explore, rulefile};
use program_common::*;

fn explained(p: &heddle_ir::Program, rules: &[Rule], cost: CostKind) -> Outcome {
    let opts = Options { limits: Limits::default(), cost: cost.into(), explain: true, ..Options::default() };
    explore(p, rules, &opts, &check).unwrap()
}

fn rule_sets() -> Vec<(&'static str, Vec<Rule>)> {
    let mut v: Vec<(&'static str, Vec<Rule>)> = ["fusion", "split", "structure", "memory"]
        .into_iter()
        .map(|n| (n, rules_file(&format!("{n}.rules"))))
        .collect();
    v.push(("builtin", rulefile::builtin()));
    v
}

fn programs() -> Vec<(String, heddle_ir::Program)> {
    let mut out = Vec::new();
    for dir in ["examples", "rewrite/tests/kernels"] {
        for f in hdl_files(root().join(dir)) {
            out.push((stem(&f), parse_file(&f)));
        }
    }
    out
}

#[test]
fn every_explanation_replays_to_the_extracted_program() {
    let mut steps = 0;
    let mut backward = 0;
    for (name, p) in programs() {
        let analysis = ProgAnalysis::for_kernel(&p.kernel);
        for (set, rules) in rule_sets() {
            for cost in [CostKind::Size, CostKind::Parallel] {
                let o = explained(&p, &rules, cost);
                let e =
                    o.explanation.as_ref().unwrap_or_else(|| panic!("{name}/{set}: no explanation ({:?})", o.fallback));
                replay(&o.input, &o.extracted, e, &rules, &analysis)
                    .unwrap_or_else(|err| panic!("{name}/{set}/{cost:?}: {err}\n{e:#?}"));
                // The printed program is the extracted term, tidied.
                let tidied = heddle_rewrite::program::beta::tidy(
                    &heddle_rewrite::program::convert::rec_to_expr(&o.extracted).unwrap(),
                );
                assert_eq!(
                    heddle_ir::printer::print_program(&heddle_ir::Program { kernel: tidied, ..p.clone() }),
                    o.text,
                    "{name}/{set}"
                );
                steps += e.steps.len();
                backward += e.steps.iter().filter(|s| s.backward).count();
            }
        }
    }
    // The explanations are not all empty: rules did fire.
    assert!(steps > 30, "only {steps} steps in all");
    eprintln!("{steps} steps replayed, {backward} of them right to left");
}

/// An explanation with at least two steps, and what it explains.
fn sample() -> (Outcome, Vec<Rule>, ProgAnalysis) {
    let p = parse_file(&root().join("examples/dense_mv.hdl"));
    let rules = rulefile::builtin();
    let o = explained(&p, &rules, CostKind::Parallel);
    assert!(o.explanation.as_ref().unwrap().steps.len() >= 2, "{:#?}", o.explanation);
    (o, rules, ProgAnalysis::for_kernel(&p.kernel))
}

fn replays(o: &Outcome, e: &Explanation, rules: &[Rule], a: &ProgAnalysis) -> bool {
    replay(&o.input, &o.extracted, e, rules, a).is_ok()
}

#[test]
fn tampered_explanations_do_not_replay() {
    let (o, rules, a) = sample();
    let e = o.explanation.clone().unwrap();
    assert!(replays(&o, &e, &rules, &a));
    // Another rule at the same place.
    let mut other = e.clone();
    other.steps[0].rule = if e.steps[0].rule == "map-fusion" { "map-fission".into() } else { "map-fusion".into() };
    assert!(!replays(&o, &other, &rules, &a));
    // An unknown rule.
    let mut unknown = e.clone();
    unknown.steps[0].rule = "no-such-rule".into();
    assert!(!replays(&o, &unknown, &rules, &a));
    // The same rule one level up (the whole kernel).
    let mut moved = e.clone();
    moved.steps[0].path.clear();
    assert!(!replays(&o, &moved, &rules, &a));
    // A step left out.
    let mut short = e.clone();
    short.steps.remove(0);
    short.terms.remove(1);
    assert!(!replays(&o, &short, &rules, &a));
    // The direction flipped.
    let mut flipped = e.clone();
    flipped.steps[0].backward = !flipped.steps[0].backward;
    assert!(!replays(&o, &flipped, &rules, &a));
}

#[test]
fn steps_name_rules_places_and_terms() {
    let (o, rules, _) = sample();
    let e = o.explanation.unwrap();
    for s in &e.steps {
        assert!(rules.iter().any(|r| r.name == s.rule), "{s:?}");
        assert!(!s.before.is_empty() && !s.after.is_empty() && s.before != s.after, "{s:?}");
        assert!(s.location.starts_with("nFun n > nFun m > fun matrix > fun xs"), "{s:?}");
    }
}

#[test]
fn a_chain_read_backwards_replays_with_every_rule_right_to_left() {
    // egg may use a rule right to left (equalities are symmetric); the
    // reversed chain from the extracted program back to the input
    // exercises that direction of `replay`.
    let (o, rules, a) = sample();
    let e = o.explanation.clone().unwrap();
    let mut rev = e.clone();
    rev.terms.reverse();
    rev.steps.reverse();
    for s in &mut rev.steps {
        s.backward = !s.backward;
        std::mem::swap(&mut s.before, &mut s.after);
    }
    replay(&o.extracted, &o.input, &rev, &rules, &a).unwrap();
    // Read backwards but marked forward, it does not replay.
    let mut wrong = rev.clone();
    wrong.steps[0].backward = false;
    assert!(replay(&o.extracted, &o.input, &wrong, &rules, &a).is_err());
}

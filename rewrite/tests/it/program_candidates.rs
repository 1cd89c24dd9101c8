//! Candidates of a measured search and sketch-guided extraction: distinct,
//! well-typed programs of each sketch's shape, cheapest first per sketch;
//! with the input's sizes as facts, rows grouped into work-groups appear
//! (and say what they check at run time); a shape the e-graph does not hold
//! is reported.

use crate::program_common;

use heddle_rewrite::program::candidates::candidates;
use heddle_rewrite::program::extract::Hypergraph;
use heddle_rewrite::program::kbest::KBest;
use heddle_rewrite::program::sketch::{Sketch, SketchGoals, parse};
use heddle_rewrite::program::{CostKind, Limits, Options, explore_with, rulefile};
use program_common::*;

fn listing5() -> heddle_ir::Program {
    parse_file(&root().join("examples/csr_packed_spmv.hdl"))
}

fn opts(facts: &[(&str, i64)]) -> Options {
    Options {
        limits: Limits::default(),
        cost: CostKind::Parallel.into(),
        facts: facts.iter().map(|(k, v)| (heddle_ir::Name::from(*k), *v)).collect(),
        ..Options::default()
    }
}

#[test]
fn sketches_parse_and_print() {
    for s in ["?", "mapGlobal", "mapWorkgroup(mapLocal(?))", "join(mapWorkgroup(mapLocal(interleave(4))))"] {
        assert_eq!(parse(s).unwrap().to_string(), s);
    }
    for (bad, at) in [("", 0), ("mapp", 0), ("map(", 4), ("map(?,", 6), ("map(?) x", 7), ("4", 0), ("map(?))", 6)] {
        let e = parse(bad).unwrap_err();
        assert_eq!(e.0, at, "{bad}: {e:?}");
    }
    // Deep nesting is refused, not a stack overflow.
    let deep = "map(".repeat(200) + &")".repeat(200);
    assert!(parse(&deep).is_err());
}

#[test]
fn extraction_follows_the_sketch() {
    let p = listing5();
    for (sketch, must) in [
        ("mapWorkgroup(mapLocal(?))", vec!["mapWorkgroup", "mapLocal"]),
        ("mapWorkgroup(interleave)", vec!["mapWorkgroup", "interleave"]),
        ("mapGlobal", vec!["mapGlobal"]),
    ] {
        let s = parse(sketch).unwrap();
        let o = explore_with(&p, &rulefile::builtin(), &opts(&[]), &SketchGoals::new(&s), &check).unwrap();
        assert_eq!(o.fallback, None, "{sketch}");
        let mut at = 0;
        for m in must {
            let k = o.text[at..].find(m).unwrap_or_else(|| panic!("{sketch}: no {m} after {at}:\n{}", o.text));
            at += k;
        }
    }
    // A shape the e-graph does not hold keeps the input, with the reason.
    let s = parse("scatterAdd").unwrap();
    let o = explore_with(&p, &rulefile::builtin(), &opts(&[]), &SketchGoals::new(&s), &check).unwrap();
    assert!(o.fallback.unwrap().contains("sketch"));
}

#[test]
fn k_best_terms_come_cheapest_first() {
    let p = listing5();
    let sat = heddle_rewrite::program::saturate(&p, &rulefile::builtin(), &opts(&[]), &check).unwrap();
    let model = CostKind::Parallel.into();
    let s: Sketch = parse("?").unwrap();
    let goals = SketchGoals::new(&s);
    let h = Hypergraph::new(&sat.runner.egraph, sat.root, &model, &goals);
    let terms: Vec<(egg::RecExpr<_>, u64)> = KBest::new(&h, 100_000).take(40).collect();
    assert_eq!(terms.len(), 40);
    assert_eq!(terms[0].1, h.cost().unwrap());
    for w in terms.windows(2) {
        assert!(w[0].1 <= w[1].1, "{} then {}", w[0].1, w[1].1);
    }
    let mut texts: Vec<String> = terms.iter().map(|t| t.0.to_string()).collect();
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), 40, "derivations repeat a term");
}

#[test]
fn candidates_are_distinct_well_typed_and_of_their_sketch() {
    let p = listing5();
    let sketches: Vec<Sketch> =
        ["?", "mapWorkgroup(mapLocal(interleave))", "join(mapWorkgroup(mapLocal(mapLocal)))", "scatterAdd"]
            .iter()
            .map(|s| parse(s).unwrap())
            .collect();
    // 64 rows: grouping rows into work-groups of up to 64 is allowed.
    let found = candidates(&p, &rulefile::builtin(), &opts(&[("n", 64), ("m", 16)]), &sketches, 12, &check).unwrap();
    assert_eq!(found.list.len(), 12, "{:?}", found.empty_sketches);
    assert_eq!(found.empty_sketches, vec!["scatterAdd".to_string()]);
    let mut texts: Vec<&str> = found.list.iter().map(|c| c.text.as_str()).collect();
    texts.sort_unstable();
    texts.dedup();
    assert_eq!(texts.len(), 12);
    for c in &found.list {
        check(&c.program).unwrap();
        match c.sketch.as_str() {
            "?" => {}
            "mapWorkgroup(mapLocal(interleave))" => {
                assert!(c.text.contains("mapWorkgroup") && c.text.contains("interleave"), "{}", c.text)
            }
            _ => {
                assert!(c.text.contains("split(") && c.text.contains("join"), "{}", c.text);
                // Grouped rows need the length to be a multiple: said, and true for n = 64.
                assert!(c.assumptions.iter().any(|a| a.starts_with("n % ")), "{:?}", c.assumptions);
            }
        }
    }
    // Per sketch, costs do not decrease.
    for s in &sketches {
        let costs: Vec<u64> = found.list.iter().filter(|c| c.sketch == s.to_string()).map(|c| c.cost).collect();
        assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{s}: {costs:?}");
    }
    // Without the sizes, rows cannot be grouped: that sketch has no candidate.
    let found = candidates(&p, &rulefile::builtin(), &opts(&[]), &sketches[2..3], 4, &check).unwrap();
    assert!(found.list.is_empty());
}

/// A candidate the check refuses (as `heddle rewrite --search` refuses one
/// its backend cannot compile) is dropped, counted, and the next term taken;
/// the first reason is kept. The refusal here is a stand-in: every term that
/// uses `interleave`, which the sketch asks for, so the enumeration must go past
/// refused terms to fill the list, or end with none of that shape.
#[test]
fn refused_candidates_are_skipped_counted_and_the_first_reason_kept() {
    let p = listing5();
    let sketches: Vec<Sketch> = ["?", "mapWorkgroup(mapLocal(interleave))"].iter().map(|s| parse(s).unwrap()).collect();
    let refuse_interleave = |q: &heddle_ir::Program| {
        if heddle_ir::printer::print_program(q).contains("interleave") {
            return Err("the opencl backend refuses it: a stand-in refusal of `interleave`".to_string());
        }
        check(q)
    };
    let facts = [("n", 64), ("m", 16)];
    let plain = candidates(&p, &rulefile::builtin(), &opts(&facts), &sketches, 8, &check).unwrap();
    assert!(plain.list.iter().any(|c| c.text.contains("interleave")), "the sketch finds interleave terms");
    let found = candidates(&p, &rulefile::builtin(), &opts(&facts), &sketches, 8, &refuse_interleave).unwrap();
    assert!(found.list.iter().all(|c| !c.text.contains("interleave")), "a refused term was listed");
    assert!(found.rejected > 0, "no term was refused");
    let why = found.first_rejection.as_deref().unwrap_or_default();
    assert!(why.contains("a stand-in refusal of `interleave`"), "{why}");
    // Terms the check accepts are still found: the unconstrained sketch gives some.
    assert!(
        found.list.iter().any(|c| c.sketch == "?"),
        "{:?}",
        found.list.iter().map(|c| &c.sketch).collect::<Vec<_>>()
    );
}

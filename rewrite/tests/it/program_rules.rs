//! Rule files: the built-in set parses, errors are located, rules behave.

use crate::program_common;

use heddle_rewrite::program::{CostKind, StopReason, parse_rules, rulefile};
use program_common::*;

#[test]
fn builtin_rules_parse() {
    let rules = rulefile::builtin();
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    for n in [
        "map-fusion",
        "split-join[k=4]",
        "reduce-split[k=8]",
        "transpose-pair",
        "zip-proj-1",
        "lower-map-global",
        "to-local",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
}

#[test]
fn rule_file_errors_are_located() {
    let text = std::fs::read_to_string(root().join("rewrite/tests/rules/bad.rules")).unwrap();
    let errors = parse_rules("bad.rules", &text).unwrap_err();
    let shown: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    insta::assert_snapshot!(shown.join("\n"));
}

#[test]
fn garbage_never_panics() {
    for text in [
        "",
        ":",
        "a:",
        "a: =>",
        "a: => b",
        "a: b =>",
        "a: ?",
        "a: ?x => ?x if",
        "a: f(?x) => ?x for ?k in",
        "é: x => y",
        "a: (((( => x",
        "a: x => y if len(",
        "a: x => y if 99999999999999999999 > 1",
        "a: fun(x => x) => fun(y => y)",
        "a: f(?x) <=> g(?y)",
        "a: let x = ?y in x => ?y",
        "a: f(?x) => ?x for ?k in 0",
    ] {
        let _ = parse_rules("t.rules", text);
    }
}

#[test]
fn non_ascii_text_outside_brackets_is_an_error_not_a_panic() {
    // A character of several bytes where the parser looks for `=>`, `if`
    // or `for` (the fuzzer's 131 crashes were all this).
    for text in ["1:§", "a: x § => y", "a: x => y § if ?x", "a: x => y for ?k in §", "a: é => ü", "a: x => y if ?x ≤ 2"]
    {
        let errors = parse_rules("t.rules", text).err().unwrap_or_default();
        for e in &errors {
            assert!(e.column <= text.chars().count() + 1, "{text:?}: {e}");
        }
    }
    let errors = parse_rules("t.rules", "1:§").unwrap_err();
    assert_eq!(errors[0].line, 1, "{errors:?}");
}

#[test]
fn a_rule_file_beyond_the_source_limit_is_refused_unread() {
    let line = "a: map(?f) => map(?f)\n";
    let text = line.repeat(heddle_ir::parser::MAX_SOURCE_BYTES / line.len() + 1);
    let errors = parse_rules("big.rules", &text).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].message.contains("at most"), "{errors:?}");
}

#[test]
fn capture_is_avoided_when_fusing() {
    // `g` uses the outer `y`; the fused lambda is also written with `y`.
    let p = heddle_ir::parser::parse_program(
        "nFun(n => fun(a: [[float]_n]_n => a :>> map(fun(y => y :>> map(fun(x => x + y@0)) :>> map(fun(x => x * y@0))))))",
    )
    .unwrap();
    let o = rewrite(&p, &rules_file("fusion.rules"), CostKind::Size);
    assert_eq!(o.fallback, None);
    assert!(o.rules_applied["map-fusion"] > 0);
    let text = o.text;
    assert!(!text.contains("fun(y => fun(x => x * y@0)"), "captured: {text}");
}

#[test]
fn conditions_block_unsound_rewrites() {
    // n is not known to be a multiple of 4: split-join must not fire.
    let p = heddle_ir::parser::parse_program("nFun(n => fun(xs: [float]_n => xs :>> map(fun(x => x * 2.0))))").unwrap();
    let o = rewrite(&p, &rules_file("split.rules"), CostKind::Size);
    assert_eq!(o.rules_applied.values().sum::<usize>(), 0);
    // `max` has no identity literal: no two-stage reduction.
    let p = heddle_ir::parser::parse_program("nFun(n => fun(xs: [float]_{4*n} => xs :>> reduce(max, 0.0)))").unwrap();
    let o = rewrite(&p, &rules_file("split.rules"), CostKind::Size);
    assert_eq!(o.rules_applied.iter().filter(|(k, _)| k.starts_with("reduce-split")).map(|(_, n)| n).sum::<usize>(), 0);
    // A multiple of 4 lets it fire.
    let p = heddle_ir::parser::parse_program("nFun(n => fun(xs: [float]_{4*n} => xs :>> reduce(+, 0.0)))").unwrap();
    let o = rewrite(&p, &rules_file("split.rules"), CostKind::Size);
    assert!(o.rules_applied["reduce-split[k=4]"] > 0);
}

#[test]
fn an_ill_typed_user_rule_never_reaches_the_output() {
    // Wrong on purpose: replaces a map's result by its input (changes the element type).
    let rules = parse_rules("wrong.rules", "wrong: ?x :>> map(?f) => ?x").unwrap();
    let p = heddle_ir::parser::parse_program("nFun(n => fun(xs: [int]_n => xs :>> map(fun(x => x > 0))))").unwrap();
    let o = rewrite(&p, &rules, CostKind::Size);
    assert!(o.fallback.is_some());
    assert_eq!(o.program, p);
}

#[test]
fn saturation_is_reported() {
    let p = parse_file(&root().join("examples/dense_mv.hdl"));
    let o = rewrite(&p, &rules_file("lowering.rules"), CostKind::Parallel);
    assert_eq!(o.stats.stop_reason, StopReason::Saturated);
}

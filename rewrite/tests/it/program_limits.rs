//! Blow-up cases stop at a limit and say which one.

use crate::program_common;

use heddle_rewrite::program::{CostKind, Limits, Options, StopReason, explore};
use program_common::*;
use std::time::Duration;

fn many_additions() -> heddle_ir::Program {
    let sum: Vec<String> = (1..=14).map(|k| format!("x * {k}")).collect();
    let src = format!("nFun(n => fun(xs: [int]_n => xs :>> map(fun(x => {}))))", sum.join(" + "));
    heddle_ir::parser::parse_program(&src).unwrap()
}

fn run_with(limits: Limits) -> heddle_rewrite::program::Outcome {
    explore(
        &many_additions(),
        &rules_file("ac.rules"),
        &Options { limits, cost: CostKind::Size.into(), ..Options::default() },
        &check,
    )
    .unwrap()
}

#[test]
fn node_limit_is_named() {
    let o = run_with(Limits { iter_limit: 1000, node_limit: 3000, time_limit: Duration::from_secs(60) });
    assert_eq!(o.stats.stop_reason, StopReason::NodeLimit(3000));
    assert!(o.stats.nodes > 3000);
    assert_eq!(o.fallback, None);
}

#[test]
fn iteration_limit_is_named() {
    let o = run_with(Limits { iter_limit: 3, node_limit: 1_000_000, time_limit: Duration::from_secs(60) });
    assert_eq!(o.stats.stop_reason, StopReason::IterationLimit(3));
    assert_eq!(o.stats.iterations, 3);
}

#[test]
fn time_limit_is_named() {
    let o = run_with(Limits { iter_limit: 1000, node_limit: 100_000_000, time_limit: Duration::from_millis(200) });
    assert_eq!(o.stats.stop_reason, StopReason::TimeLimit(0.2));
}

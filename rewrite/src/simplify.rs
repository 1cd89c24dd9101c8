//! The entry point: [`simplify`] a natural under [`Facts`] within [`Limits`].

use crate::analysis::{NatAnalysis, NatEGraph};
use crate::extract::{extract, nat_cost, residual_sums};
use crate::facts::Facts;
use crate::nat_lang::{AtomTable, nat_size, nat_to_rec, rec_to_nat};
use crate::refine::{Ctx, canonical_binders, friendly_binders};
use crate::rules::{NatRewrite, default_rules};
use egg::{BackoffScheduler, Runner};
use heddle_ir::Nat;
use std::time::{Duration, Instant};

/// Inputs larger than this (in nodes) are only normalised, never put into an
/// e-graph.
pub const MAX_INPUT_SIZE: usize = 4_000;

/// Bounds on one e-graph run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Stop when the e-graph has more e-nodes than this.
    pub node_limit: usize,
    /// Stop after this many iterations.
    pub iter_limit: usize,
    /// Stop after this much time.
    pub time_limit: Duration,
}

impl Default for Limits {
    /// 10 000 nodes, 30 iterations, 2 s: the formulas of the examples
    /// saturate in a few iterations and a few hundred nodes.
    fn default() -> Limits {
        Limits { node_limit: 10_000, iter_limit: 30, time_limit: Duration::from_secs(2) }
    }
}

impl Limits {
    /// The defaults, overridden by `HEDDLE_EGG_NODE_LIMIT`,
    /// `HEDDLE_EGG_ITER_LIMIT` and `HEDDLE_EGG_TIME_LIMIT_MS` where set (values
    /// that do not parse as numbers are ignored).
    pub fn from_env() -> Limits {
        let get = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse::<u64>().ok());
        let mut l = Limits::default();
        if let Some(n) = get("HEDDLE_EGG_NODE_LIMIT") {
            l.node_limit = n as usize;
        }
        if let Some(n) = get("HEDDLE_EGG_ITER_LIMIT") {
            l.iter_limit = n as usize;
        }
        if let Some(n) = get("HEDDLE_EGG_TIME_LIMIT_MS") {
            l.time_limit = Duration::from_millis(n);
        }
        l
    }
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "kind", content = "limit")]
pub enum StopReason {
    /// No rule could add anything: the result is the best the rules allow.
    Saturated,
    /// The iteration limit was reached while rules still applied.
    IterationLimit(usize),
    /// The e-graph grew past the node limit.
    NodeLimit(usize),
    /// The time limit ran out.
    TimeLimit(f64),
    /// The e-graph was not needed (no Σ and no `toNat`), or the input was
    /// too large for it.
    NotRun(String),
    /// Something else stopped the run.
    Other(String),
}

/// Statistics of one run (where inner Σs' bodies were simplified first, of
/// the last, outermost run; the time is the whole call's).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunStats {
    /// Iterations run.
    pub iterations: usize,
    /// E-nodes at the end.
    pub egraph_nodes: usize,
    /// E-classes at the end.
    pub egraph_classes: usize,
    /// Wall time of the whole call (conversion, run, extraction).
    pub time: Duration,
    /// The true stop reason.
    pub stop_reason: StopReason,
}

/// The result of [`simplify`].
#[derive(Clone, Debug, PartialEq)]
pub struct Simplified {
    /// The simplified natural, equal to the input for every value of its
    /// variables (free variables taken ≥ 0 when the facts say so).
    pub nat: Nat,
    /// The Σ terms that remain in `nat`: these need host precomputation.
    pub residual_sums: Vec<Nat>,
    /// How the run went.
    pub stats: RunStats,
}

/// The e-graph work done on one thread: how many runs, and their e-nodes
/// and iterations summed (see [`egraph_work`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EgraphWork {
    /// E-graph runs (a Σ whose body holds Σs takes one per nested Σ).
    pub runs: u64,
    /// E-nodes of every run's final e-graph, summed.
    pub nodes: u64,
    /// Iterations of every run, summed.
    pub iterations: u64,
}

thread_local! {
    static WORK: std::cell::Cell<EgraphWork> = const { std::cell::Cell::new(EgraphWork { runs: 0, nodes: 0, iterations: 0 }) };
}

/// The e-graph work this thread has done so far: the difference across a
/// call (lowering a kernel) is that call's work, a measure that, unlike
/// time, does not depend on the machine (the tests bound it).
pub fn egraph_work() -> EgraphWork {
    WORK.with(|w| w.get())
}

/// Simplifies with the default rules ([`default_rules`]).
pub fn simplify(n: &Nat, facts: &Facts, limits: &Limits) -> Simplified {
    simplify_with(n, facts, limits, &default_rules())
}

fn needs_egraph(n: &Nat) -> bool {
    match n {
        Nat::Sum { .. } | Nat::ToNat(_) => true,
        _ => {
            let mut hit = false;
            n.for_each_child(&mut |c| hit |= needs_egraph(c));
            hit
        }
    }
}

/// Simplifies with the given rules.
///
/// A natural without Σ and `toNat` takes the cheap path: the normal form
/// under the facts, no e-graph. Otherwise the bodies of Σs that hold Σs are
/// simplified first, innermost first, each by a run of its own
/// (`inner_sums_first`), then the e-graph runs within `limits`
/// (with egg's backoff scheduler), the cheapest term is extracted (a Σ costs
/// more than any Σ-free term), and the result is the cheaper of that term and
/// its normal form.
pub fn simplify_with(n: &Nat, facts: &Facts, limits: &Limits, rules: &[NatRewrite]) -> Simplified {
    let start = Instant::now();
    let ctx = Ctx::new(facts);
    let size = nat_size(n);
    if size > MAX_INPUT_SIZE || !needs_egraph(n) {
        let why = if size > MAX_INPUT_SIZE {
            format!("input has {size} nodes (limit {MAX_INPUT_SIZE})")
        } else {
            "no Σ or toNat".into()
        };
        let out = if size > MAX_INPUT_SIZE { n.clone() } else { friendly_binders(&ctx.refine(n)) };
        return finish(
            n,
            out,
            RunStats {
                iterations: 0,
                egraph_nodes: 0,
                egraph_classes: 0,
                time: start.elapsed(),
                stop_reason: StopReason::NotRun(why),
            },
        );
    }

    let mut analysis = NatAnalysis::new(facts.clone());
    let input = inner_sums_first(&canonical_binders(n), facts, limits, rules);
    let rec = nat_to_rec(&input, &mut analysis.table);
    let mut egraph = NatEGraph::new(analysis);
    let root = egraph.add_expr(&rec);
    egraph.rebuild();
    let runner = Runner::default()
        .with_egraph(egraph)
        .with_node_limit(limits.node_limit)
        .with_iter_limit(limits.iter_limit)
        .with_time_limit(limits.time_limit)
        .with_scheduler(BackoffScheduler::default())
        .run(rules);
    let stop_reason = true_stop_reason(&runner, limits);
    let root = runner.egraph.find(root);
    let (_, best) = extract(&runner.egraph, root);
    let table: &AtomTable = &runner.egraph.analysis.table;
    // Extraction only fails to convert back on an ill-sorted term, which
    // the rules never build; fall back to the input rather than panic.
    let extracted = rec_to_nat(&best, table).unwrap_or_else(|_| input.clone());
    let normal = ctx.refine(&extracted);
    let out = if nat_cost(&normal) <= nat_cost(&extracted) { normal } else { extracted };
    let stats = RunStats {
        iterations: runner.iterations.len(),
        egraph_nodes: runner.egraph.total_number_of_nodes(),
        egraph_classes: runner.egraph.number_of_classes(),
        time: start.elapsed(),
        stop_reason,
    };
    WORK.with(|w| {
        let mut t = w.get();
        t.runs += 1;
        t.nodes += stats.egraph_nodes as u64;
        t.iterations += stats.iterations as u64;
        w.set(t);
    });
    finish(n, friendly_binders(&out), stats)
}

/// `n` with the body of every Σ that holds another Σ simplified first, innermost first, each
/// in an e-graph of its own. The flat position of a value several compressed levels down is
/// Σs nested as deep as the levels; each inner one closes on its own (its telescoping guard is
/// decided by the facts), after which the one around it sees a Σ-free body. One e-graph for the
/// whole formula found the same closed form, but its size grew with every level (rank 6: 852
/// e-nodes, 1.1 s in a release build; more than the 2 s time limit in a debug one).
///
/// Sound: an enclosing Σ's index is a `%` binder after [`canonical_binders`], which the
/// intervals take as unknown (never as a natural), so the body is simplified for every value
/// of it.
fn inner_sums_first(n: &Nat, facts: &Facts, limits: &Limits, rules: &[NatRewrite]) -> Nat {
    n.map_bottom_up(&mut |m| match m {
        Nat::Sum { var, lo, hi, body } if body.has_sum() => {
            let inner = simplify_with(&body, facts, limits, rules).nat;
            // The result's own Σ binders were renamed for reading; the outer run wants `%` ones.
            let body = if nat_cost(&inner) < nat_cost(&body) { canonical_binders(&inner) } else { *body };
            Nat::Sum { var, lo, hi, body: Box::new(body) }
        }
        other => other,
    })
}

fn finish(_input: &Nat, out: Nat, stats: RunStats) -> Simplified {
    Simplified { residual_sums: residual_sums(&out), nat: out, stats }
}

/// The stop reason, recomputed from the runner's own reason and its
/// iteration data rather than trusted: egg reports a limit even when the
/// last iteration changed nothing (the run had in fact saturated), and the
/// node limit is checked only between phases, so the e-graph may have
/// passed it without that being the reported reason.
pub fn true_stop_reason(runner: &Runner<crate::nat_lang::NatLang, NatAnalysis>, limits: &Limits) -> StopReason {
    use egg::StopReason as E;
    let last = runner.iterations.last();
    let last_changed = last.is_some_and(|it| it.applied.values().any(|&n| n > 0) || it.n_rebuilds > 0);
    let nodes = runner.egraph.total_number_of_nodes();
    match &runner.stop_reason {
        Some(E::Saturated) => StopReason::Saturated,
        Some(E::IterationLimit(_)) if !last_changed && nodes <= limits.node_limit => StopReason::Saturated,
        _ if nodes > limits.node_limit => StopReason::NodeLimit(limits.node_limit),
        Some(E::IterationLimit(n)) => StopReason::IterationLimit(*n),
        Some(E::NodeLimit(n)) => StopReason::NodeLimit(*n),
        Some(E::TimeLimit(t)) => StopReason::TimeLimit(*t),
        Some(E::Other(s)) => StopReason::Other(s.clone()),
        None => StopReason::Other("the runner did not report a stop reason".into()),
    }
}

//! Running the rules under limits, the true stop reason, extraction and the
//! final type check.

use super::analysis::{ProgAnalysis, shape_of};
use super::convert::{expr_to_rec, rec_to_expr};
use super::extract::{CostKind, extract};
use super::lang::Prog;
use super::rulefile::Rule;
use egg::{BackoffScheduler, Runner, Symbol};
use heddle_ir::expr::{Expr, ExprKind};
use heddle_ir::{Name, Program};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// Bounds on one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Stop after this many iterations.
    pub iter_limit: usize,
    /// Stop when the e-graph has more e-nodes than this.
    pub node_limit: usize,
    /// Stop after this much time.
    pub time_limit: Duration,
}

impl Default for Limits {
    /// 30 iterations, 20 000 e-nodes, 5 s: every example saturates or stops
    /// well within a second with the built-in rules.
    fn default() -> Limits {
        Limits { iter_limit: 30, node_limit: 20_000, time_limit: Duration::from_secs(5) }
    }
}

impl Limits {
    /// The defaults, overridden by `HEDDLE_REWRITE_ITER_LIMIT`,
    /// `HEDDLE_REWRITE_NODE_LIMIT` and `HEDDLE_REWRITE_TIME_LIMIT` (seconds)
    /// where set to a valid number.
    pub fn from_env() -> Limits {
        let get = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0);
        let mut l = Limits::default();
        if let Some(n) = get("HEDDLE_REWRITE_ITER_LIMIT") {
            l.iter_limit = n as usize;
        }
        if let Some(n) = get("HEDDLE_REWRITE_NODE_LIMIT") {
            l.node_limit = n as usize;
        }
        if let Some(s) = get("HEDDLE_REWRITE_TIME_LIMIT") {
            l.time_limit = Duration::from_secs_f64(s.min(1e9));
        }
        l
    }
}

/// Why a run stopped, derived from the run itself rather than taken from
/// egg's report (which can name a limit when nothing was left to do, egg
/// issue #58).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// An iteration changed nothing: no rule can add anything more.
    Saturated,
    /// The iteration limit was reached while rules still applied.
    IterationLimit(usize),
    /// The e-graph grew past the node limit.
    NodeLimit(usize),
    /// The time limit ran out.
    TimeLimit(f64),
    /// Something else.
    Other(String),
}

impl StopReason {
    /// A short name: `saturated`, `iteration-limit`, `node-limit`, `time-limit`, `other`.
    pub fn name(&self) -> &'static str {
        match self {
            StopReason::Saturated => "saturated",
            StopReason::IterationLimit(_) => "iteration-limit",
            StopReason::NodeLimit(_) => "node-limit",
            StopReason::TimeLimit(_) => "time-limit",
            StopReason::Other(_) => "other",
        }
    }
}

/// Statistics of a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Stats {
    /// Iterations run.
    pub iterations: usize,
    /// E-nodes at the end.
    pub nodes: usize,
    /// E-classes at the end.
    pub classes: usize,
    /// Seconds for the whole call (run, extraction, checking).
    pub seconds: f64,
    /// Why the run stopped.
    pub stop_reason: StopReason,
}

/// What to run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// The limits.
    pub limits: Limits,
    /// The cost model for extraction.
    pub cost: CostKind,
}

impl Default for Options {
    fn default() -> Options {
        Options { limits: Limits::from_env(), cost: CostKind::Parallel }
    }
}

/// A type-checked program, as the caller's checker reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    /// The kernel's type, printed.
    pub ty: String,
    /// Its run-time obligations, printed.
    pub obligations: Vec<String>,
}

/// The result of [`explore`].
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The extracted program (the original where [`Outcome::fallback`] is set).
    pub program: Program,
    /// It, printed (`heddle check` accepts it).
    pub text: String,
    /// Its type.
    pub ty: String,
    /// Cost of the original and of the result under the chosen model.
    pub cost_before: u64,
    /// See `cost_before`.
    pub cost_after: u64,
    /// Statistics.
    pub stats: Stats,
    /// How often each rule changed the e-graph.
    pub rules_applied: BTreeMap<String, usize>,
    /// Why the extracted program was rejected, if it was.
    pub fallback: Option<String>,
}

/// Why [`explore`] could not start.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ExploreError {
    /// The input program does not type-check.
    #[error("the program does not type-check: {0}")]
    IllTyped(String),
}

/// Lengths of the kernel's annotated parameters that no lambda rebinds.
fn param_shapes(kernel: &Expr) -> HashMap<Symbol, Vec<heddle_ir::Nat>> {
    let mut params = Vec::new();
    let mut e = kernel;
    loop {
        match &e.kind {
            ExprKind::NFun { body, .. } => e = body,
            ExprKind::Fun { params: ps, body } if ps.iter().all(|p| p.ty.is_some()) => {
                params.extend(ps.iter().map(|p| (p.name.clone(), p.ty.clone())));
                e = body;
            }
            _ => break,
        }
    }
    let mut binders: HashMap<Name, usize> = HashMap::new();
    count_binders(kernel, &mut binders);
    params
        .into_iter()
        .filter(|(n, _)| binders.get(n) == Some(&1))
        .filter_map(|(n, t)| Some((Symbol::from(n.as_str()), shape_of(&t?))))
        .collect()
}

fn count_binders(e: &Expr, out: &mut HashMap<Name, usize>) {
    match &e.kind {
        ExprKind::Fun { params, .. } => params.iter().for_each(|p| *out.entry(p.name.clone()).or_default() += 1),
        ExprKind::NFun { var, .. } | ExprKind::Let { name: var, .. } => *out.entry(var.clone()).or_default() += 1,
        _ => {}
    }
    e.for_each_child(&mut |c| count_binders(c, out));
}

fn true_stop_reason(runner: &Runner<Prog, ProgAnalysis>, limits: &Limits, elapsed: Duration) -> StopReason {
    let last_changed = runner.iterations.last().is_some_and(|it| it.applied.values().any(|&n| n > 0) || it.n_rebuilds > 0);
    // egg's node limit counts its hash-cons table, which can exceed the
    // e-nodes proper; either one over the limit is the node limit.
    let size = runner.egraph.total_size().max(runner.egraph.total_number_of_nodes());
    match &runner.stop_reason {
        // egg stops as saturated only when its scheduler has no banned rule left.
        Some(egg::StopReason::Saturated) if !last_changed => StopReason::Saturated,
        _ if size > limits.node_limit => StopReason::NodeLimit(limits.node_limit),
        _ if elapsed >= limits.time_limit => StopReason::TimeLimit(limits.time_limit.as_secs_f64()),
        _ if runner.iterations.len() >= limits.iter_limit => StopReason::IterationLimit(limits.iter_limit),
        Some(egg::StopReason::Other(s)) => StopReason::Other(s.clone()),
        other => StopReason::Other(format!("egg reported {other:?}")),
    }
}

/// Explores `program` with `rules` and extracts the best program; `check`
/// type-checks a program (the CLI passes heddle-typeck).
pub fn explore(
    program: &Program,
    rules: &[Rule],
    opts: &Options,
    check: &dyn Fn(&Program) -> Result<Checked, String>,
) -> Result<Outcome, ExploreError> {
    let start = Instant::now();
    let original = check(program).map_err(ExploreError::IllTyped)?;
    let rec = expr_to_rec(&program.kernel);
    let analysis = ProgAnalysis { params: param_shapes(&program.kernel) };
    let limits = opts.limits;
    let runner = Runner::<Prog, ProgAnalysis>::new(analysis)
        .with_expr(&rec)
        .with_iter_limit(limits.iter_limit)
        .with_node_limit(limits.node_limit)
        .with_time_limit(limits.time_limit)
        .with_scheduler(BackoffScheduler::default())
        .run(rules.iter().map(|r| &r.rewrite));
    let run_time = start.elapsed();
    let stop_reason = true_stop_reason(&runner, &limits, run_time);
    let mut rules_applied: BTreeMap<String, usize> = rules.iter().map(|r| (r.name.clone(), 0)).collect();
    for it in &runner.iterations {
        for (name, n) in &it.applied {
            *rules_applied.entry(name.to_string()).or_default() += n;
        }
    }
    let root = runner.roots[0];
    let cost_before = {
        let g = egg::EGraph::new(ProgAnalysis::default()).with_explanations_disabled();
        let mut g = g;
        let id = g.add_expr(&rec);
        g.rebuild();
        extract(&g, id, opts.cost).map_or(u64::MAX, |(_, c)| c)
    };
    let (candidate, cost_after) = match extract(&runner.egraph, root, opts.cost) {
        Some((best, cost)) => match rec_to_expr(&best) {
            Ok(e) => (Ok(super::beta::tidy(&e)), cost),
            Err(m) => (Err(m.to_string()), cost_before),
        },
        None => (Err("no program could be extracted".into()), cost_before),
    };
    let verified = candidate.and_then(|kernel| {
        let p = Program { kernel, ..program.clone() };
        let text = heddle_ir::printer::print_program(&p);
        // Check what users will see: the printed text, parsed back.
        let reparsed = heddle_ir::parser::parse_program(&text)
            .map_err(|d| format!("the extracted program does not parse: {}", d.first().map_or("", |d| d.message.as_str())))?;
        let c = check(&reparsed).map_err(|e| format!("the extracted program does not type-check: {e}"))?;
        if c.ty != original.ty {
            return Err(format!("the extracted program has type {} instead of {}", c.ty, original.ty));
        }
        if let Some(o) = c.obligations.iter().find(|o| !original.obligations.contains(o)) {
            return Err(format!("the extracted program needs `{o}` at run time, which the original does not"));
        }
        Ok((reparsed, text))
    });
    let (program, text, fallback, cost_after) = match verified {
        Ok((p, t)) => (p, t, None, cost_after),
        Err(why) => (program.clone(), heddle_ir::printer::print_program(program), Some(why), cost_before),
    };
    let stats = Stats {
        iterations: runner.iterations.len(),
        nodes: runner.egraph.total_number_of_nodes(),
        classes: runner.egraph.number_of_classes(),
        seconds: start.elapsed().as_secs_f64(),
        stop_reason,
    };
    Ok(Outcome { program, text, ty: original.ty, cost_before, cost_after, stats, rules_applied, fallback })
}

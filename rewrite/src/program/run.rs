//! Running the rules under limits, the true stop reason, extraction and the
//! final type check.

use super::analysis::{ProgAnalysis, ProgGraph};
use super::convert::{expr_to_rec, rec_to_expr};
use super::costs::CostModel;
use super::explain::{self, Explanation};
use super::extract::{Free, Goals, extract};
use super::lang::Prog;
use super::rulefile::Rule;
use super::stats::{self, Instrumented, IterationStats, RuleStats, Sizes};
use egg::{RecExpr, Runner, Symbol};
use heddle_ir::Program;
use heddle_ir::expr::Expr;
use std::collections::BTreeMap;
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
        let get = |k: &str| {
            std::env::var(k).ok().and_then(|v| v.trim().parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0)
        };
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
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// An iteration changed nothing: no rule can add anything more.
    #[default]
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

    /// The limit that stopped the run, as JSON (`null` for the others).
    pub fn limit(&self) -> serde_json::Value {
        match self {
            StopReason::IterationLimit(n) | StopReason::NodeLimit(n) => serde_json::json!(n),
            StopReason::TimeLimit(t) => serde_json::json!(t),
            _ => serde_json::Value::Null,
        }
    }

    /// What else stopped it.
    pub fn detail(&self) -> Option<&str> {
        match self {
            StopReason::Other(s) => Some(s),
            _ => None,
        }
    }
}

/// Statistics of a run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
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
    /// Seconds of the e-graph run alone.
    pub run_seconds: f64,
    /// Seconds extracting.
    pub extract_seconds: f64,
    /// Each rule's activity, in the order of the rule list.
    pub rules: Vec<RuleStats>,
    /// Each iteration.
    pub per_iteration: Vec<IterationStats>,
    /// When a limit stopped the run: the rule that added the most e-nodes.
    pub grew_most: Option<String>,
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The limits.
    pub limits: Limits,
    /// The cost model for extraction.
    pub cost: CostModel,
    /// Record why classes were merged and explain the extracted program
    /// ([`Outcome::explanation`]); slower and larger.
    pub explain: bool,
    /// Keep the e-graph in [`Outcome::egraph`] (for export).
    pub keep_egraph: bool,
    /// Known values of the kernel's naturals (`n = 1000`): conditions are
    /// decided with them, and the result may need a run-time obligation the
    /// input did not have, provided it holds for these values
    /// ([`Outcome::assumptions`]).
    pub facts: Vec<(heddle_ir::Name, i64)>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            limits: Limits::from_env(),
            cost: CostModel::parallel(),
            explain: false,
            keep_egraph: false,
            facts: Vec::new(),
        }
    }
}

/// A type-checked program, as the caller's checker reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    /// The kernel's type, printed.
    pub ty: String,
    /// Its run-time obligations.
    pub obligations: Vec<heddle_ir::nat::NatCond>,
    /// The type itself, when the checker gives it: with known values of the
    /// naturals, `[float]_{4 * (n / 4)}` is then the same as `[float]_n`.
    pub kernel_ty: Option<heddle_ir::Type>,
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
    /// With [`Options::explain`] (and no fallback): the rule applications
    /// from the input to the extracted term (before `tidy`'s β-reduction).
    pub explanation: Option<Explanation>,
    /// The extracted term itself (the input where there is a fallback).
    pub extracted: RecExpr<Prog>,
    /// The input as a term.
    pub input: RecExpr<Prog>,
    /// With [`Options::keep_egraph`]: the e-graph and its root.
    pub egraph: Option<(Box<ProgGraph>, egg::Id)>,
    /// Run-time obligations of the result that the input did not have and
    /// that hold for [`Options::facts`] (`n % 8 == 0`): the result is
    /// specialised to such inputs.
    pub assumptions: Vec<String>,
}

/// Why [`explore`] could not start.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ExploreError {
    /// The input program does not type-check.
    #[error("the program does not type-check: {0}")]
    IllTyped(String),
}

fn true_stop_reason(runner: &Runner<Prog, ProgAnalysis, Sizes>, limits: &Limits, elapsed: Duration) -> StopReason {
    let last_changed =
        runner.iterations.last().is_some_and(|it| it.applied.values().any(|&n| n > 0) || it.n_rebuilds > 0);
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
    explore_with(program, rules, opts, &Free, check)
}

/// A saturated e-graph and what the run did.
pub struct Saturated {
    /// The runner, holding the e-graph.
    pub runner: Runner<Prog, ProgAnalysis, Sizes>,
    /// The input's class.
    pub root: egg::Id,
    /// The input as a term.
    pub input: RecExpr<Prog>,
    /// The input's type and obligations.
    pub original: Checked,
    /// The statistics so far (extraction not yet counted).
    pub stats: Stats,
    /// How often each rule changed the e-graph.
    pub rules_applied: BTreeMap<String, usize>,
    /// The input's cost under the model.
    pub cost_before: u64,
    /// When the run started.
    pub start: Instant,
}

/// Type-checks `program`, puts it in an e-graph and applies `rules` under
/// the limits, recording what each rule and iteration did.
pub fn saturate(
    program: &Program,
    rules: &[Rule],
    opts: &Options,
    check: &dyn Fn(&Program) -> Result<Checked, String>,
) -> Result<Saturated, ExploreError> {
    let start = Instant::now();
    let original = check(program).map_err(ExploreError::IllTyped)?;
    let rec = expr_to_rec(&program.kernel);
    let mut analysis = ProgAnalysis::for_kernel(&program.kernel);
    analysis.facts = opts.facts.clone();
    let limits = opts.limits;
    let record = stats::Record::default();
    let mut runner = Runner::<Prog, ProgAnalysis, Sizes>::new(analysis.clone());
    if opts.explain {
        runner = runner.with_explanations_enabled();
    }
    let runner = runner
        .with_expr(&rec)
        .with_iter_limit(limits.iter_limit)
        .with_node_limit(limits.node_limit)
        .with_time_limit(limits.time_limit)
        .with_scheduler(Instrumented::new(record.clone()))
        .run(rules.iter().map(|r| &r.rewrite));
    let run_time = start.elapsed();
    let stop_reason = true_stop_reason(&runner, &limits, run_time);
    let rule_stats: Vec<RuleStats> = {
        let record = record.borrow();
        rules
            .iter()
            .map(|r| {
                record
                    .get(&Symbol::from(r.name.as_str()))
                    .cloned()
                    .unwrap_or_else(|| RuleStats { name: r.name.clone(), ..RuleStats::default() })
            })
            .collect()
    };
    let rules_applied: BTreeMap<String, usize> = rule_stats.iter().map(|r| (r.name.clone(), r.applied)).collect();
    let root = runner.roots[0];
    let cost_before = {
        let mut g = ProgGraph::new(analysis).with_explanations_disabled();
        let id = g.add_expr(&rec);
        g.rebuild();
        extract(&g, id, &opts.cost, &Free).map_or(u64::MAX, |(_, c)| c)
    };
    let grew_most = match stop_reason {
        StopReason::Saturated => None,
        _ => stats::grew_most(&rule_stats),
    };
    let stats = Stats {
        iterations: runner.iterations.len(),
        nodes: runner.egraph.total_number_of_nodes(),
        classes: runner.egraph.number_of_classes(),
        seconds: 0.0,
        stop_reason,
        run_seconds: run_time.as_secs_f64(),
        extract_seconds: 0.0,
        rules: rule_stats,
        per_iteration: stats::iterations(&runner),
        grew_most,
    };
    Ok(Saturated { runner, root, input: rec, original, stats, rules_applied, cost_before, start })
}

/// [`explore`], with extraction restricted to terms meeting `goals` (a
/// sketch); the original is kept, with the reason, when none does.
pub fn explore_with(
    program: &Program,
    rules: &[Rule],
    opts: &Options,
    goals: &dyn Goals,
    check: &dyn Fn(&Program) -> Result<Checked, String>,
) -> Result<Outcome, ExploreError> {
    let Saturated { mut runner, root, input: rec, original, mut stats, rules_applied, cost_before, start } =
        saturate(program, rules, opts, check)?;
    let extract_start = Instant::now();
    let extracted = extract(&runner.egraph, root, &opts.cost, goals);
    stats.extract_seconds = extract_start.elapsed().as_secs_f64();
    let (candidate, cost_after) = match &extracted {
        Some((best, cost)) => match rec_to_expr(best) {
            Ok(e) => (Ok(super::beta::tidy(&e)), *cost),
            Err(m) => (Err(m.to_string()), cost_before),
        },
        None => (Err("no program of the sketch's shape is in the e-graph".into()), cost_before),
    };
    let verified = candidate.and_then(|kernel| verify(program, kernel, &original, &opts.facts, check));
    let (program, text, fallback, cost_after, term, assumptions) = match verified {
        Ok((p, t, a)) => (p, t, None, cost_after, extracted.map(|e| e.0).unwrap_or_else(|| rec.clone()), a),
        Err(why) => (
            program.clone(),
            heddle_ir::printer::print_program(program),
            Some(why),
            cost_before,
            rec.clone(),
            Vec::new(),
        ),
    };
    let explanation = (opts.explain && fallback.is_none()).then(|| {
        let mut e = runner.explain_equivalence(&rec, &term);
        explain::from_flat(e.make_flat_explanation())
    });
    stats.seconds = start.elapsed().as_secs_f64();
    let egraph = opts.keep_egraph.then(|| (Box::new(std::mem::take(&mut runner.egraph)), root));
    Ok(Outcome {
        program,
        text,
        ty: original.ty,
        cost_before,
        cost_after,
        stats,
        rules_applied,
        fallback,
        explanation,
        extracted: term,
        input: rec,
        egraph,
        assumptions,
    })
}

/// Checks what users will see: the extracted kernel printed, parsed back
/// and type-checked, with the original's type and no new obligation (or
/// only ones that hold for `facts`, returned as assumptions).
pub fn verify(
    program: &Program,
    kernel: Expr,
    original: &Checked,
    facts: &[(heddle_ir::Name, i64)],
    check: &dyn Fn(&Program) -> Result<Checked, String>,
) -> Result<(Program, String, Vec<String>), String> {
    let p = Program { kernel, ..program.clone() };
    let text = heddle_ir::printer::print_program(&p);
    let reparsed = heddle_ir::parser::parse_program(&text).map_err(|d| {
        format!("the extracted program does not parse: {}", d.first().map_or("", |d| d.message.as_str()))
    })?;
    let c = check(&reparsed).map_err(|e| format!("the extracted program does not type-check: {e}"))?;
    if c.ty != original.ty && !same_for(facts, &c, original) {
        return Err(format!("the extracted program has type {} instead of {}", c.ty, original.ty));
    }
    let env: std::collections::HashMap<heddle_ir::Name, i64> = facts.iter().cloned().collect();
    let mut assumptions = Vec::new();
    for o in c.obligations.iter().filter(|o| !original.obligations.contains(o)) {
        if facts.is_empty() || o.eval_with(&env, &mut Vec::new()) != Ok(true) {
            return Err(format!("the extracted program needs `{o}` at run time, which the original does not"));
        }
        assumptions.push(o.to_string());
    }
    Ok((reparsed, text, assumptions))
}

/// Are two kernel types the same once the known naturals are put in?
fn same_for(facts: &[(heddle_ir::Name, i64)], a: &Checked, b: &Checked) -> bool {
    let (Some(x), Some(y)) = (&a.kernel_ty, &b.kernel_ty) else { return false };
    if facts.is_empty() {
        return false;
    }
    fix(x, facts).map_nats(&mut |n| n.normalize()).to_string()
        == fix(y, facts).map_nats(&mut |n| n.normalize()).to_string()
}

/// A kernel type with its `(n: nat) ->` parameters replaced by their known values.
fn fix(t: &heddle_ir::Type, facts: &[(heddle_ir::Name, i64)]) -> heddle_ir::Type {
    use heddle_ir::Type;
    match t {
        Type::NatFun { var, body } => match facts.iter().find(|(n, _)| n == var) {
            Some((_, v)) => fix(&body.subst_nat(var, &heddle_ir::Nat::Lit(*v)), facts),
            None => Type::NatFun { var: var.clone(), body: Box::new(fix(body, facts)) },
        },
        Type::Fun { param, from, to } => {
            Type::Fun { param: param.clone(), from: from.clone(), to: Box::new(fix(to, facts)) }
        }
        other => other.clone(),
    }
}

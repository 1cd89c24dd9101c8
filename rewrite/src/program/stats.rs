//! What a run did, rule by rule and iteration by iteration.
//!
//! egg's [`Runner`](egg::Runner) records per iteration only the number of
//! *new* applications of each rule and the e-graph's size at the start. To
//! say which rule matched how often, how long its search and application
//! took, and which rule grew the e-graph most, the run uses
//! [`Instrumented`]: the same backoff policy as egg's `BackoffScheduler`
//! (a rule whose matches exceed its limit is banned for a while, the limit
//! and ban doubling each time), recording as it goes.

use super::analysis::ProgAnalysis;
use super::lang::Prog;
use egg::{EGraph, Rewrite, RewriteScheduler, SearchMatches, Symbol};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

/// One rule's activity over a run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct RuleStats {
    /// The rule's name.
    pub name: String,
    /// Matches its left-hand side found (before conditions; a search that
    /// found more than the rule's match limit counts the limit + 1 and
    /// bans the rule).
    pub matches: usize,
    /// Applications that changed the e-graph (egg's count: a union of two
    /// classes that were not already one).
    pub applied: usize,
    /// E-nodes added while applying it (before rebuilding, which can merge
    /// some of them away).
    pub nodes_added: usize,
    /// Seconds spent searching for its matches.
    pub search_seconds: f64,
    /// Seconds spent applying them.
    pub apply_seconds: f64,
    /// How often the backoff scheduler banned it for matching too often.
    pub bans: usize,
}

/// One iteration of a run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct IterationStats {
    /// E-nodes at its end.
    pub nodes: usize,
    /// E-classes at its end.
    pub classes: usize,
    /// Applications that changed the e-graph.
    pub applied: usize,
    /// Seconds searching.
    pub search_seconds: f64,
    /// Seconds applying.
    pub apply_seconds: f64,
    /// Seconds rebuilding (restoring congruence).
    pub rebuild_seconds: f64,
    /// Seconds in all.
    pub seconds: f64,
}

/// The size of the e-graph at the end of an iteration (egg's
/// [`IterationData`](egg::IterationData)).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sizes {
    /// E-nodes.
    pub nodes: usize,
    /// E-classes.
    pub classes: usize,
}

impl egg::IterationData<Prog, ProgAnalysis> for Sizes {
    fn make(runner: &egg::Runner<Prog, ProgAnalysis, Sizes>) -> Sizes {
        Sizes { nodes: runner.egraph.total_number_of_nodes(), classes: runner.egraph.number_of_classes() }
    }
}

/// Per-rule backoff state (egg's `BackoffScheduler` policy).
#[derive(Clone, Debug)]
struct Backoff {
    banned_until: usize,
    times_banned: usize,
}

/// The shared record [`Instrumented`] writes and the caller reads after
/// the run (the runner owns the scheduler).
pub type Record = Rc<RefCell<HashMap<Symbol, RuleStats>>>;

/// A backoff scheduler that records what each rule does.
pub struct Instrumented {
    match_limit: usize,
    ban_length: usize,
    backoff: HashMap<Symbol, Backoff>,
    record: Record,
}

impl Instrumented {
    /// egg's defaults: 1000 matches, bans of 5 iterations.
    pub fn new(record: Record) -> Instrumented {
        Instrumented { match_limit: 1_000, ban_length: 5, backoff: HashMap::new(), record }
    }

    fn entry(&self, name: Symbol) -> std::cell::RefMut<'_, RuleStats> {
        std::cell::RefMut::map(self.record.borrow_mut(), |m| {
            m.entry(name).or_insert_with(|| RuleStats { name: name.to_string(), ..RuleStats::default() })
        })
    }
}

impl RewriteScheduler<Prog, ProgAnalysis> for Instrumented {
    fn can_stop(&mut self, iteration: usize) -> bool {
        // As egg's: with rules still banned, skip ahead to the first unban
        // instead of stopping; the run is saturated only with none banned.
        let first = self.backoff.values().filter(|b| b.banned_until > iteration).map(|b| b.banned_until).min();
        let Some(first) = first else { return true };
        let delta = first - iteration;
        for b in self.backoff.values_mut().filter(|b| b.banned_until > iteration) {
            b.banned_until -= delta;
        }
        false
    }

    fn search_rewrite<'a>(
        &mut self,
        iteration: usize,
        egraph: &EGraph<Prog, ProgAnalysis>,
        rewrite: &'a Rewrite<Prog, ProgAnalysis>,
    ) -> Vec<SearchMatches<'a, Prog>> {
        let b = self.backoff.entry(rewrite.name).or_insert(Backoff { banned_until: 0, times_banned: 0 }).clone();
        if iteration < b.banned_until {
            return vec![];
        }
        let threshold = self.match_limit.checked_shl(b.times_banned as u32).unwrap_or(usize::MAX);
        let start = Instant::now();
        let matches = rewrite.search_with_limit(egraph, threshold.saturating_add(1));
        let found: usize = matches.iter().map(|m| m.substs.len()).sum();
        let mut s = self.entry(rewrite.name);
        s.search_seconds += start.elapsed().as_secs_f64();
        s.matches += found;
        if found > threshold {
            s.bans += 1;
            drop(s);
            let ban = self.ban_length.checked_shl(b.times_banned as u32).unwrap_or(usize::MAX / 2);
            let b = self.backoff.entry(rewrite.name).or_insert(Backoff { banned_until: 0, times_banned: 0 });
            b.times_banned += 1;
            b.banned_until = iteration.saturating_add(ban);
            return vec![];
        }
        matches
    }

    fn apply_rewrite(
        &mut self,
        _iteration: usize,
        egraph: &mut EGraph<Prog, ProgAnalysis>,
        rewrite: &Rewrite<Prog, ProgAnalysis>,
        matches: Vec<SearchMatches<Prog>>,
    ) -> usize {
        let before = egraph.total_number_of_nodes();
        let start = Instant::now();
        let applied = rewrite.apply(egraph, &matches).len();
        let mut s = self.entry(rewrite.name);
        s.apply_seconds += start.elapsed().as_secs_f64();
        s.nodes_added += egraph.total_number_of_nodes().saturating_sub(before);
        s.applied += applied;
        applied
    }
}

/// Per-iteration statistics from the runner's record.
pub fn iterations(runner: &egg::Runner<Prog, ProgAnalysis, Sizes>) -> Vec<IterationStats> {
    runner
        .iterations
        .iter()
        .map(|it| IterationStats {
            nodes: it.data.nodes,
            classes: it.data.classes,
            applied: it.applied.values().sum(),
            search_seconds: it.search_time,
            apply_seconds: it.apply_time,
            rebuild_seconds: it.rebuild_time,
            seconds: it.total_time,
        })
        .collect()
}

/// The rule that added the most e-nodes, if any added one.
pub fn grew_most(rules: &[RuleStats]) -> Option<String> {
    rules.iter().filter(|r| r.nodes_added > 0).max_by_key(|r| r.nodes_added).map(|r| r.name.clone())
}

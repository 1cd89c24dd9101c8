//! Several good programs rather than one: the candidates of a measured
//! search (`heddle rewrite --search N`).
//!
//! One e-graph run; then, for each sketch, the terms of its shape in order
//! of cost ([`super::kbest`]), taken in turn from each sketch so that every
//! shape is represented. A candidate must tidy, print, parse and type-check
//! like the result of [`super::explore`] ([`super::verify`]), and differ
//! from the ones before it by more than the names of bound variables. The
//! static cost model cannot tell a tile size of 4 from one of 8, so
//! equal-cost variants come out next to each other: measuring decides.

use super::convert::{expr_to_rec, rec_to_expr};
use super::extract::{Free, Goals, Hypergraph};
use super::kbest::KBest;
use super::lang::Prog;
use super::rulefile::Rule;
use super::run::{Checked, ExploreError, Options, Saturated, Stats, saturate, verify};
use super::sketch::{Sketch, SketchGoals};
use super::term;
use egg::RecExpr;
use heddle_ir::Program;
use std::time::Instant;

/// A candidate program.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The program (type-checked).
    pub program: Program,
    /// It, printed.
    pub text: String,
    /// Its cost under the model.
    pub cost: u64,
    /// The sketch it was extracted for (`?` for none).
    pub sketch: String,
    /// Run-time obligations it needs that the input did not, holding for
    /// the facts given (the inputs' sizes).
    pub assumptions: Vec<String>,
}

/// The candidates and how they were found.
#[derive(Clone, Debug)]
pub struct Candidates {
    /// The candidates, in the order found (cheapest of each sketch first).
    pub list: Vec<Candidate>,
    /// The e-graph run's statistics (`extract_seconds`: the whole enumeration).
    pub stats: Stats,
    /// The input's cost.
    pub cost_before: u64,
    /// Terms enumerated in all.
    pub terms: usize,
    /// Terms dropped because they were not well-typed programs (or needed
    /// obligations the facts do not satisfy), with the first reason.
    pub rejected: usize,
    /// The first reason a term was rejected.
    pub first_rejection: Option<String>,
    /// Sketches of which no term was found.
    pub empty_sketches: Vec<String>,
}

/// Terms tried per sketch and per candidate wanted before giving up on
/// the sketch, and states the enumeration may expand for each sketch.
const TRIES_PER_CANDIDATE: usize = 400;
const STATES_PER_SKETCH: usize = 200_000;

/// Runs the rules once and extracts up to `n` distinct candidates, taking
/// turns among `sketches` (none: the unconstrained best terms).
pub fn candidates(
    program: &Program,
    rules: &[Rule],
    opts: &Options,
    sketches: &[Sketch],
    n: usize,
    check: &dyn Fn(&Program) -> Result<Checked, String>,
) -> Result<Candidates, ExploreError> {
    let Saturated { runner, root, original, mut stats, cost_before, start, .. } =
        saturate(program, rules, opts, check)?;
    let extract_start = Instant::now();
    let g = &runner.egraph;
    let goals: Vec<(String, Box<dyn Goals>)> = if sketches.is_empty() {
        vec![("?".to_string(), Box::new(Free) as Box<dyn Goals>)]
    } else {
        sketches.iter().map(|s| (s.to_string(), Box::new(SketchGoals::new(s)) as Box<dyn Goals>)).collect()
    };
    let graphs: Vec<Hypergraph> =
        goals.iter().map(|(_, goal)| Hypergraph::new(g, root, &opts.cost, goal.as_ref())).collect();
    let mut streams: Vec<Option<KBest>> = graphs.iter().map(|h| Some(KBest::new(h, STATES_PER_SKETCH))).collect();
    let mut found_any = vec![false; goals.len()];
    let mut accepted: Vec<RecExpr<Prog>> = Vec::new();
    let mut out = Candidates {
        list: Vec::new(),
        stats: Stats::default(),
        cost_before,
        terms: 0,
        rejected: 0,
        first_rejection: None,
        empty_sketches: Vec::new(),
    };
    while out.list.len() < n && streams.iter().any(Option::is_some) {
        for (k, slot) in streams.iter_mut().enumerate() {
            if out.list.len() >= n {
                break;
            }
            let Some(stream) = slot.as_mut() else { continue };
            let mut tries = 0;
            let found = loop {
                if tries >= TRIES_PER_CANDIDATE {
                    break None;
                }
                tries += 1;
                let Some((rec, cost)) = stream.next() else { break None };
                out.terms += 1;
                found_any[k] = true;
                let Ok(e) = rec_to_expr(&rec) else { continue };
                let tidied = super::beta::tidy(&e);
                let key = expr_to_rec(&tidied);
                let root_of = |t: &RecExpr<Prog>| term::root(t);
                if accepted.iter().any(|a| term::alpha_eq(a, root_of(a), &key, root_of(&key), &mut Vec::new())) {
                    continue;
                }
                match verify(program, tidied, &original, &opts.facts, check) {
                    Ok((p, text, assumptions)) => {
                        accepted.push(key);
                        break Some(Candidate { program: p, text, cost, sketch: goals[k].0.clone(), assumptions });
                    }
                    Err(why) => {
                        accepted.push(key);
                        out.rejected += 1;
                        out.first_rejection.get_or_insert(why);
                    }
                }
            };
            match found {
                Some(c) => out.list.push(c),
                None => *slot = None,
            }
        }
    }
    out.empty_sketches = goals.iter().zip(&found_any).filter(|(_, f)| !**f).map(|(g, _)| g.0.clone()).collect();
    stats.extract_seconds = extract_start.elapsed().as_secs_f64();
    stats.seconds = start.elapsed().as_secs_f64();
    out.stats = stats;
    Ok(out)
}

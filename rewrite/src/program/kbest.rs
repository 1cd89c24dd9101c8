//! The k cheapest terms of an e-class, cheapest first.
//!
//! A best-first search over partial derivations in the extraction
//! hypergraph ([`super::extract::Hypergraph`]): a state is the prefix of a
//! derivation in pre-order (the edges chosen so far) and the vertices still
//! to build; its priority is the cost of the chosen edges plus the best cost
//! of each open vertex, which is exact, so complete derivations come out in
//! order of cost. Ties go to the state with fewer open vertices, so the
//! search dives to complete terms instead of widening. Cycles in the
//! e-graph are harmless: every node costs at least 1. Only sum-of-nodes
//! models have additive costs; for others the search yields the best term
//! alone.

use super::costs::Combine;
use super::extract::Hypergraph;
use super::lang::Prog;
use egg::{Language, RecExpr};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A partial derivation.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct State {
    /// Cost of the chosen edges plus the best costs of the open vertices.
    bound: u64,
    /// Open vertices (fewer first among equal bounds).
    open_count: usize,
    /// Creation order, for determinism.
    seq: u64,
    /// Chosen (vertex, edge), in pre-order.
    chosen: Vec<(u32, u32)>,
    /// Vertices still to build, next last.
    open: Vec<u32>,
    /// Cost of the chosen edges.
    fixed: u64,
}

/// Enumerates terms of the hypergraph's root, cheapest first.
pub struct KBest<'h, 'g> {
    h: &'h Hypergraph<'g>,
    heap: BinaryHeap<Reverse<State>>,
    seq: u64,
    /// States expanded so far.
    pub expanded: usize,
    /// The most states to expand before giving up.
    pub budget: usize,
    single: Option<bool>,
}

impl<'h, 'g> KBest<'h, 'g> {
    /// Starts the enumeration; at most `budget` states are expanded in all.
    pub fn new(h: &'h Hypergraph<'g>, budget: usize) -> KBest<'h, 'g> {
        let mut heap = BinaryHeap::new();
        let additive = h.model.combine == Combine::Sum;
        if let Some(c) = h.cost()
            && additive
        {
            heap.push(Reverse(State { bound: c, open_count: 1, seq: 0, chosen: Vec::new(), open: vec![0], fixed: 0 }));
        }
        KBest { h, heap, seq: 1, expanded: 0, budget, single: (!additive).then_some(false) }
    }

    fn build(&self, chosen: &[(u32, u32)]) -> RecExpr<Prog> {
        fn go(h: &Hypergraph, chosen: &[(u32, u32)], at: &mut usize, out: &mut RecExpr<Prog>) -> egg::Id {
            let (v, e) = chosen[*at];
            *at += 1;
            let edge = &h.edges[v as usize][e as usize];
            let mut node = h.g[h.vertices[v as usize].0].nodes[edge.node].clone();
            for slot in node.children_mut() {
                *slot = go(h, chosen, at, out);
            }
            out.add(node)
        }
        let mut out = RecExpr::default();
        go(self.h, chosen, &mut 0, &mut out);
        out
    }
}

impl Iterator for KBest<'_, '_> {
    /// A term and its cost.
    type Item = (RecExpr<Prog>, u64);

    fn next(&mut self) -> Option<(RecExpr<Prog>, u64)> {
        if let Some(done) = self.single.as_mut() {
            if *done {
                return None;
            }
            *done = true;
            return Some((self.h.term()?, self.h.cost()?));
        }
        while let Some(Reverse(mut s)) = self.heap.pop() {
            let Some(v) = s.open.pop() else {
                return Some((self.build(&s.chosen), s.fixed));
            };
            if self.expanded >= self.budget {
                self.heap.clear();
                return None;
            }
            self.expanded += 1;
            let rest: u64 = s.bound - self.h.best[v as usize].map_or(0, |b| b.0);
            for (k, e) in self.h.edges[v as usize].iter().enumerate() {
                // Only edges whose children all have a term lead anywhere.
                let Some(kids_best) = e.kids.iter().map(|c| self.h.best[*c].map(|b| b.0)).sum::<Option<u64>>() else {
                    continue;
                };
                let mut chosen = s.chosen.clone();
                chosen.push((v, k as u32));
                let mut open = s.open.clone();
                // Pre-order: the first child is built next.
                open.extend(e.kids.iter().rev().map(|c| *c as u32));
                let bound = rest.saturating_add(e.own).saturating_add(kids_best);
                self.heap.push(Reverse(State {
                    bound,
                    open_count: open.len(),
                    seq: self.seq,
                    chosen,
                    open,
                    fixed: s.fixed.saturating_add(e.own),
                }));
                self.seq += 1;
            }
            s.chosen.clear();
        }
        None
    }
}

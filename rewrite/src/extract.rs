//! Extraction that prefers Σ-free terms.

use crate::analysis::NatEGraph;
use crate::nat_lang::NatLang;
use egg::{CostFunction, Extractor, Id, Language, RecExpr};
use heddle_ir::Nat;

/// What one Σ costs: more than any Σ-free term the limits allow, so that a
/// term with fewer Σ always wins.
pub const SUM_COST: u64 = 1 << 32;

/// Term size, with a Σ costing [`SUM_COST`] and a ternary a little more than
/// arithmetic (it becomes a branch or a select).
#[derive(Clone, Copy, Debug, Default)]
pub struct SigmaCost;

impl CostFunction<NatLang> for SigmaCost {
    type Cost = u64;
    fn cost<C>(&mut self, enode: &NatLang, mut costs: C) -> u64
    where
        C: FnMut(Id) -> u64,
    {
        let own = match enode {
            NatLang::Sum(_) => SUM_COST,
            NatLang::If(_) => 2,
            _ => 1,
        };
        enode.fold(own, |acc, id| acc.saturating_add(costs(id)))
    }
}

/// The best term of `root` under [`SigmaCost`].
pub fn extract(egraph: &NatEGraph, root: Id) -> (u64, RecExpr<NatLang>) {
    Extractor::new(egraph, SigmaCost).find_best(root)
}

/// The cost of a natural under [`SigmaCost`] (without converting it).
pub fn nat_cost(n: &Nat) -> u64 {
    let own = match n {
        Nat::Sum { .. } => SUM_COST,
        Nat::Cond(..) => 2,
        _ => 1,
    };
    let mut total = own;
    n.for_each_child(&mut |c| total = total.saturating_add(nat_cost(c)));
    total
}

/// The outermost Σ terms of a natural: what lowering must precompute on the
/// host (§5.2 of the paper), in order of appearance, without duplicates.
pub fn residual_sums(n: &Nat) -> Vec<Nat> {
    let mut out = Vec::new();
    collect(n, &mut out);
    out
}

fn collect(n: &Nat, out: &mut Vec<Nat>) {
    if let Nat::Sum { .. } = n {
        if !out.contains(n) {
            out.push(n.clone());
        }
        return;
    }
    n.for_each_child(&mut |c| collect(c, out));
}

//! BSR(r, c) with r > 1 in vector lanes: a block row's r sums carried
//! together across its blocks.
//!
//! The structural step ([`super::view`]) builds a block row of BSR(r, c) as
//! `generate(r, fun(lane => row lane's body))`: after the laws, each lane is
//! the sum over the block row's blocks of its own term,
//!
//! ```text
//! generate(r, fun(lane => brow :>> map(fun(b => term)) :>> reduce(+, 0)))
//! ```
//!
//! which walks the block row r times, once per lane, each time loading one
//! of every block's r values (on `rowband_5k` at BSR(8, 1), 6x slower than
//! the form below). [`carry_lanes`] interchanges the lanes and the blocks:
//!
//! ```text
//! brow :>> map(fun(b => generate(r, fun(lane => term))))
//!      :>> reduce(fun(acc, t => zip(acc, t) :>> map(fun(q => q.1 + q.2))),
//!                 generate(r, fun(z => 0)))
//! ```
//!
//! per block, the r lanes' terms as a row; the rows summed lane by lane from
//! a row of zeros: one walk of the block row, r sums in one vector, the
//! block's r values loaded together (for BSR(r, 1): `b.2@lane@0 * xs@b.1`,
//! one broadcast of `x` per block). This is the shape the CPU backend runs
//! in vector lanes, as SELL-C's slices ([`super::sell`]). Each lane's terms
//! are still added in the blocks' order, starting from 0; only the
//! grouping of the lanes' sums changes, which LANGUAGE.md §5 allows for
//! `reduce`. Only `reduce(+, 0)` is interchanged; a lane summed any other
//! way keeps the per-lane form, which is correct, only slower.

use super::exprs::{call, fun, generate_of, is_zero, lambda1, mentions, pipe, project_tuples, stage};
use super::view::{map_children, names};
use heddle_ir::expr::{ExprKind, SectionOp};
use heddle_ir::{Expr, Name};
use std::collections::BTreeSet;

/// Interchanges every lane `generate` of `lanes` (the structural step's
/// lane binders, [`super::Plan::lanes`]) whose body is a `reduce(+, 0)` over
/// maps of an array that does not depend on the lane; see the module
/// documentation. Everything else is returned as it is.
pub(super) fn carry_lanes(kernel: &Expr, lanes: &[Name]) -> Expr {
    let mut used = BTreeSet::new();
    names(kernel, &mut used);
    interchange(kernel, lanes, &mut used)
}

fn interchange(e: &Expr, lanes: &[Name], used: &mut BTreeSet<String>) -> Expr {
    // The children first: `map_children` only fails when its function does.
    let out = map_children(e, &mut |x| Ok(interchange(x, lanes, used))).unwrap_or_else(|_| e.clone());
    lane_form(&out, lanes, used).unwrap_or(out)
}

/// `generate(r, fun(lane => xs :>> map(f1) … :>> map(fn) :>> reduce(+, 0)))`
/// with `xs` free of `lane`, as the lane form; `None` when `e` is not that.
fn lane_form(e: &Expr, lanes: &[Name], used: &mut BTreeSet<String>) -> Option<Expr> {
    let (count, f) = generate_of(e)?;
    let (lane, body) = lambda1(f)?;
    if !lanes.contains(lane) {
        return None;
    }
    let (mut summed, [op, init]) = stage(body, "reduce", 2)? else { return None };
    if !matches!(op.kind, ExprKind::Section(SectionOp::Add)) || !is_zero(init) {
        return None;
    }
    // The maps between the blocks and the sum, outermost first, down to
    // the first array that does not depend on the lane (the block row).
    let mut maps = Vec::new();
    while mentions(summed, lane) {
        let (inner, [f]) = stage(summed, "map", 1)? else { return None };
        maps.push(lambda1(f)?);
        summed = inner;
    }
    // One term per block: the maps composed, innermost first.
    let (block, first) = maps.pop()?;
    let mut term = first.clone();
    while let Some((x, outer)) = maps.pop() {
        term = project_tuples(&outer.subst(x, &term));
    }
    let fresh = |base: &str, used: &mut BTreeSet<String>| {
        let mut n = base.to_string();
        let mut k = 1;
        while used.contains(&n) {
            n = format!("{base}_{k}");
            k += 1;
        }
        used.insert(n.clone());
        Name::from(n)
    };
    let (acc, t, q, z) = (fresh("acc", used), fresh("t", used), fresh("q", used), fresh("z", used));
    let add = Expr::synth(ExprKind::Binary {
        op: heddle_ir::expr::BinOp::Add,
        lhs: Box::new(Expr::synth(ExprKind::Proj { tuple: Box::new(Expr::var(q.clone())), field: 1 })),
        rhs: Box::new(Expr::synth(ExprKind::Proj { tuple: Box::new(Expr::var(q.clone())), field: 2 })),
    });
    let rowsum = fun(
        &[&acc, &t],
        pipe(call("zip", vec![Expr::var(acc.clone()), Expr::var(t.clone())]), call("map", vec![fun(&[&q], add)])),
    );
    let zeros = call("generate", vec![count.clone(), fun(&[&z], init.clone())]);
    let lanes_row = call("generate", vec![count.clone(), fun(&[lane], term)]);
    Some(pipe(pipe(summed.clone(), call("map", vec![fun(&[block], lanes_row)])), call("reduce", vec![rowsum, zeros])))
}

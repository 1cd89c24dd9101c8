//! Nested sums in lanes: a sequential loop each of whose iterations adds a
//! short inner sum that runs as straight vector steps (BSR 1×8's loop over
//! a row's blocks, each block's dot product of 8 values with 8 values of x:
//!
//! ```text
//! for k in … {
//!     let b = crd[k + start]; …
//!     var s = 0.0 (reassociable)
//!     for k1 in 0 .. 8 { s = s + vals[k1 + 8·k + o] · xs[8·b + k1] }
//!     acc = acc + s
//! }
//! ```
//!
//! [`simd`](super::simd)'s straight steps give `s` vector partials from
//! zero, fold them across lanes after the 8 products and add the sum into
//! `acc`: per block a vector add joining the chains, a shuffle, two scalar
//! adds and the add into `acc`, which is the one chain that runs from block
//! to block. Here the partials outlive the inner loop: one vector per step
//! of the inner loop (4 of `f64x2` or 2 of `f32x4` for 8 lanes), zero
//! before the outer loop, each updated by one vector add per iteration, the
//! lanes folded into `acc` once after the outer loop. Every step then adds
//! straight into the partial that carries its lanes from block to block, as
//! SELL-8's step adds into its row of sums; nothing crosses lanes per block.
//!
//! The shape (see [`Translator::nested_sum_loop`]): the outer body is `let`s
//! and checks, and `var s = 0; for … { … }; acc = acc + s` with both `s` and
//! `acc` reassociable sums (`reduce`, not `reduceSeq`: LANGUAGE.md §5),
//! neither read anywhere else in the body, `s`'s loop of a constant trip
//! count of whole straight steps. The inner loop decides when it is
//! translated whether it takes the lanes (a straight step's plan); only
//! then is `acc = acc + s` left out, so any other translation of it keeps
//! the sequential meaning. Adding a block's products into partials that
//! also hold earlier blocks' regroups the row's sum, which a `reduce`
//! allows (integer sums are exact in any order); dropping `s`'s `0 +` too.

use super::simd::{STRAIGHT_STEPS, VECTOR_BYTES, VECTOR_CHAINS, vector_op, vector_type};
use super::{Bound, Translator};
use crate::error::CodegenError;
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::Variable;
use heddle_ir::loops::{BinOp, Expr, Schedule, Stmt};
use heddle_ir::{Name, ScalarType};

/// An enclosing loop's nested sum whose partials are carried across it.
pub(super) struct NestedSum {
    /// The outer accumulator (`acc`).
    outer: Name,
    /// The inner loop's accumulator (`s`).
    inner: Name,
    /// One vector per straight step of the inner loop, in step order.
    parts: Vec<Variable>,
    /// Their lanes' type and count.
    ty: ScalarType,
    width: usize,
    /// Some translation of the inner loop added into `parts`.
    taken: bool,
    /// The inner loop just translated added into `parts`, so the update
    /// `acc = acc + s` that follows it is left out.
    pending: bool,
    /// The loop depth of the loop that carries `parts` (`Translator::depth`
    /// outside its body), which `for_loop` tests at the top.
    depth: usize,
}

/// The nested sum of an outer loop body, as [`Translator::nested_sum_shape`] finds it.
struct Shape {
    outer: Name,
    inner: Name,
    ty: ScalarType,
    /// Lanes of the inner loop: its constant trip count.
    trip: i64,
}

/// Whether `e` is `a + b` or `b + a`.
fn sum_of(e: &Expr, a: &Name, b: &Name) -> bool {
    match e {
        Expr::Bin(BinOp::Add, x, y) => match (&**x, &**y) {
            (Expr::Var(x), Expr::Var(y)) => (x == a && y == b) || (x == b && y == a),
            _ => false,
        },
        _ => false,
    }
}

/// Whether a statement of the inner loop's body or the outer body reads or writes `name`.
fn touches(s: &Stmt, name: &Name) -> bool {
    use super::lazy::mentions;
    match s {
        Stmt::Let { var, value, .. } => var == name || mentions(value, name),
        Stmt::Assign { var, value } => var == name || mentions(value, name),
        Stmt::Check { cond, .. } => mentions(cond, name),
        Stmt::Var { var, init, .. } => var == name || mentions(init, name),
        Stmt::For { var, lo, hi, body, .. } => {
            var == name || mentions(lo, name) || mentions(hi, name) || body.iter().any(|s| touches(s, name))
        }
        // Not in the shapes accepted (see `nested_sum_shape`).
        _ => true,
    }
}

impl Translator<'_, '_> {
    /// The nested sum of `body` (see the module's documentation), if it has
    /// that shape.
    fn nested_sum_shape(&self, body: &[Stmt]) -> Option<Shape> {
        let at = body.iter().position(|s| matches!(s, Stmt::For { .. }))?;
        let (Some(Stmt::Var { var: inner, ty, init }), Some(Stmt::Assign { var: outer, value })) =
            (at.checked_sub(1).map(|i| &body[i]), body.get(at + 1))
        else {
            return None;
        };
        let Stmt::For { lo: Expr::Int(lo, _), hi: Expr::Int(hi, _), schedule: Schedule::Seq, body: inner_body, .. } =
            &body[at]
        else {
            return None;
        };
        let zero = match init {
            Expr::Float(v, _) => *v == 0.0,
            Expr::Int(v, _) => *v == 0,
            _ => false,
        };
        let flat = |s: &Stmt| matches!(s, Stmt::Let { .. } | Stmt::Check { .. } | Stmt::Assign { .. });
        let rest = body[..at - 1].iter().chain(&body[at + 2..]);
        let ok = zero
            && outer != inner
            && sum_of(value, outer, inner)
            && self.prog.reassociable.contains(outer)
            && self.prog.reassociable.contains(inner)
            && inner_body.iter().all(flat)
            && !inner_body.iter().any(|s| touches(s, outer))
            && rest.clone().all(|s| matches!(s, Stmt::Let { .. } | Stmt::Check { .. }))
            && !rest.clone().any(|s| touches(s, outer) || touches(s, inner));
        if !ok || !vector_op(BinOp::Add, *ty) {
            return None;
        }
        // `acc` is a variable of the same type.
        let pos = self.position(outer).ok()?;
        if !matches!(self.scope[pos].1, Bound::Var(_, t) if t == *ty) {
            return None;
        }
        // Whole straight steps (`simd`'s `straight_steps`).
        let width = VECTOR_BYTES.checked_div(ty.size_bytes())? as i64;
        let trip = hi.checked_sub(*lo)?;
        let step = width * VECTOR_CHAINS;
        vector_type(*ty, width as usize)?;
        (width >= 2 && trip > 0 && trip % step == 0 && trip / step <= STRAIGHT_STEPS).then(|| Shape {
            outer: outer.clone(),
            inner: inner.clone(),
            ty: *ty,
            trip,
        })
    }

    /// Translates `for var in lo .. hi { body }` with its nested sum's
    /// partials carried across it (see the module's documentation), if
    /// `body` has that shape; `false` (nothing emitted) otherwise.
    pub(super) fn nested_sum_loop(
        &mut self,
        var: &Name,
        lo: &Expr,
        hi: &Expr,
        schedule: Schedule,
        body: &[Stmt],
    ) -> Result<bool, CodegenError> {
        // One accumulator asks for no reassociation at all (as in `reduce.rs`).
        if schedule != Schedule::Seq
            || !self.options.vectorize
            || !self.options.nested_sums
            || self.options.accumulators < 2
        {
            return Ok(false);
        }
        let Some(shape) = self.nested_sum_shape(body) else { return Ok(false) };
        let width = VECTOR_BYTES / shape.ty.size_bytes();
        let vt = vector_type(shape.ty, width).ok_or_else(|| mismatch("a vector type"))?;
        let id = self.identity(BinOp::Add, shape.ty);
        let zero = self.b.ins().splat(vt, id);
        let parts = (0..shape.trip / width as i64)
            .map(|_| {
                let v = self.b.declare_var(vt);
                self.b.def_var(v, zero);
                v
            })
            .collect();
        self.nested_sums.push(NestedSum {
            outer: shape.outer,
            inner: shape.inner,
            parts,
            ty: shape.ty,
            width,
            taken: false,
            pending: false,
            depth: self.depth,
        });
        self.for_loop(var, lo, hi, schedule, body)?;
        let done = self.nested_sums.pop().ok_or_else(|| mismatch("a nested sum"))?;
        if done.taken {
            self.fold_nested(&done)?;
        }
        Ok(true)
    }

    /// The partials a straight lane loop over `accs` adds into, `count`
    /// vectors of `width` lanes: the innermost enclosing nested sum's, if
    /// `accs` is its inner accumulator alone (then marked taken, and its
    /// update pending).
    pub(super) fn nested_partials(
        &mut self,
        accs: &[super::reduce::Accumulator],
        count: usize,
        width: usize,
    ) -> Option<Vec<Variable>> {
        let [a] = accs else { return None };
        let n = self.nested_sums.last_mut()?;
        if n.inner != a.name || a.op != BinOp::Add || n.parts.len() != count || (n.ty, n.width) != (a.ty, width) {
            return None;
        }
        n.taken = true;
        n.pending = true;
        Some(n.parts.clone())
    }

    /// The partials carried across the loop about to be translated at the
    /// current depth, if it is a nested sum's loop: `for_loop` tests it at
    /// the top (as a loop carrying an array in registers, `stmt.rs`,
    /// `carries_registers`), so each partial's update has one use, the jump
    /// back, and the lanes' loads fold into their multiplies.
    pub(super) fn carried_partials(&self) -> Option<Vec<Variable>> {
        self.nested_sums.last().filter(|n| n.depth == self.depth).map(|n| n.parts.clone())
    }

    /// Whether `var = value` is the update of a nested sum whose inner loop
    /// added into the carried partials (then it is left out).
    pub(super) fn nested_update_done(&mut self, var: &Name, value: &Expr) -> bool {
        match self.nested_sums.last_mut() {
            Some(n) if n.pending && n.outer == *var && sum_of(value, &n.outer, &n.inner) => {
                n.pending = false;
                true
            }
            _ => false,
        }
    }

    /// `acc = acc + (the lanes of the partials)`: the vectors summed in a
    /// tree, then the lanes.
    fn fold_nested(&mut self, n: &NestedSum) -> Result<(), CodegenError> {
        let (ty, width) = (n.ty, n.width);
        let mut parts: Vec<Value> = n.parts.iter().map(|v| self.b.use_var(*v)).collect();
        while parts.len() > 1 {
            let mut next = Vec::with_capacity(parts.len().div_ceil(2));
            for pair in parts.chunks(2) {
                next.push(match pair {
                    [a, b] => self.vector_binary(BinOp::Add, ty, *a, *b)?,
                    _ => pair[0],
                });
            }
            parts = next;
        }
        let mut lanes: Vec<Value> = (0..width).map(|l| self.b.ins().extractlane(parts[0], l as u8)).collect();
        while lanes.len() > 1 {
            let mut next = Vec::with_capacity(lanes.len().div_ceil(2));
            for pair in lanes.chunks(2) {
                next.push(match pair {
                    [a, b] => self.combine(BinOp::Add, ty, *a, *b)?,
                    _ => pair[0],
                });
            }
            lanes = next;
        }
        let pos = self.position(&n.outer)?;
        let Bound::Var(acc, _) = self.scope[pos].1 else { return Err(mismatch("the outer accumulator")) };
        let old = self.b.use_var(acc);
        let total = self.combine(BinOp::Add, ty, old, lanes[0])?;
        self.b.def_var(acc, total);
        Ok(())
    }
}

fn mismatch(what: &str) -> CodegenError {
    CodegenError::Unsupported(format!("nested sum: {what} not as planned"))
}

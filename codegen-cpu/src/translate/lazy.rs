//! Two things that keep an inner loop's instructions few.
//!
//! **Lazy `let`s.** Lowering binds loads to `let`s before the checks that
//! guard the loads after them (`let e = crd[p]; let v = values[p]; check e
//! < n; acc += v * xs[e]`). A check is a branch, and a load cannot be
//! folded into an instruction in another block, so `v` would take a
//! register and an instruction of its own. A `let` whose value reads
//! read-only buffers (inputs, host buffers) is therefore evaluated where it
//! is first used. That is always sound: every check that dominated the
//! `let` still dominates the use, and nothing writes those buffers during a
//! call. Pending `let`s are evaluated before anything that opens blocks
//! whose values would not dominate later uses (a loop, an `if`, a branchy
//! `select`), before a name they read is assigned or shadowed, and never if
//! unused.
//!
//! **Narrow loop indices.** A `generate` index is an `int` (`(int) k`), and
//! index arithmetic converts it back (`(i64) A_p`): a sign extension per
//! element, and an index that Cranelift cannot see is `k` again. When a
//! loop's body converts its variable to a narrower integer, the loop checks
//! once, before it starts, that its whole range fits that type (else the
//! kernel stops with [`Fault::IndexOverflow`](crate::Fault): an index the
//! narrow type cannot hold would wrap, and the reference interpreter does
//! not wrap it); the converted value is then known to widen back to `k`.

use super::{Bound, Translator};
use crate::error::CodegenError;
use crate::status;
use cranelift_codegen::ir::{InstBuilder, InstructionData, Opcode, Type, Value, condcodes::IntCC, types as ct};
use heddle_ir::loops::{BinOp, Expr};
use heddle_ir::{Name, ScalarType};

/// Does `e` read the variable `name`?
pub(super) fn mentions(e: &Expr, name: &Name) -> bool {
    match e {
        Expr::Var(v) => v == name,
        Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) => false,
        Expr::Load { index, .. } => mentions(index, name),
        Expr::Bin(_, a, b) => mentions(a, name) || mentions(b, name),
        Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => mentions(a, name),
        Expr::Select(c, a, b) => mentions(c, name) || mentions(a, name) || mentions(b, name),
    }
}

impl Translator<'_, '_> {
    /// Whether `let var = e` is evaluated lazily: `e` loads from read-only
    /// buffers only (at least once) and cannot fault otherwise.
    pub(super) fn lazy_candidate(&self, e: &Expr) -> bool {
        fn walk(t: &Translator<'_, '_>, e: &Expr, loads: &mut bool) -> bool {
            match e {
                Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => true,
                Expr::Load { buf, index, .. } => {
                    *loads = true;
                    t.buffer(buf).is_ok_and(|b| b.readonly) && walk(t, index, loads)
                }
                Expr::Bin(BinOp::Div | BinOp::Rem, ..) => false,
                Expr::Bin(_, a, b) => walk(t, a, loads) && walk(t, b, loads),
                Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => walk(t, a, loads),
                Expr::Select(c, a, b) => walk(t, c, loads) && walk(t, a, loads) && walk(t, b, loads),
            }
        }
        let mut loads = false;
        walk(self, e, &mut loads) && loads
    }

    /// Binds `var` to the lazily evaluated `value`.
    pub(super) fn bind_lazy(&mut self, var: &Name, ty: ScalarType, value: &Expr) {
        self.lazies.push((value.clone(), ty));
        self.scope.push((var.clone(), Bound::Lazy(self.lazies.len() - 1)));
    }

    /// The value of the name at scope position `pos`, evaluating it now if
    /// it is a lazy `let`.
    pub(super) fn value_at(&mut self, pos: usize) -> Result<(Value, ScalarType), CodegenError> {
        match self.scope[pos].1 {
            Bound::Val(v, t) => Ok((v, t)),
            Bound::Var(x, t) => Ok((self.b.use_var(x), t)),
            Bound::Lane(g, l) => Ok(self.lane_scalar(g, l)),
            Bound::Lazy(k) => {
                let (e, t) = self.lazies[k].clone();
                // While it is being evaluated, forcing every pending `let` (a
                // branchy `select` in its value does) must not start it again.
                self.forcing.push(k);
                let v = self.expr(&e);
                self.forcing.pop();
                let (v, _) = v?;
                self.scope[pos].1 = Bound::Val(v, t);
                Ok((v, t))
            }
        }
    }

    /// Evaluates every pending lazy `let` (in declaration order) whose
    /// value mentions `name` — or every one, for `None`.
    pub(super) fn force_lazies(&mut self, name: Option<&Name>) -> Result<(), CodegenError> {
        for pos in 0..self.scope.len() {
            if let Bound::Lazy(k) = self.scope[pos].1
                && !self.forcing.contains(&k)
                && name.is_none_or(|n| mentions(&self.lazies[k].0, n))
            {
                self.value_at(pos)?;
            }
        }
        Ok(())
    }

    /// Before a loop over `var` from `lo_v` to `hi_v` (already known to run:
    /// `lo_v < hi_v`) whose body converts `var` to the narrow integer
    /// types `narrow`: stops with the index-overflow fault unless the whole
    /// range fits each of them.
    ///
    /// A check of the same bounds (the same values, or equal constants) made
    /// earlier in an enclosing or the same block is not repeated: every path
    /// here passed that loop's entry, where `lo < hi` (true here too) led to
    /// the check, which passed. So the j loops of MTTKRP's fibres and
    /// nonzeros (`for j in 0 .. J`) are checked once, at the slice's first.
    pub(super) fn check_narrow_range(
        &mut self,
        lo_v: Value,
        hi_v: Value,
        narrow: &[ScalarType],
    ) -> Result<(), CodegenError> {
        let (min, max) = heddle_ir::loops::fitting_range(narrow);
        let done = self
            .narrow_checked
            .iter()
            .any(|&(lo, hi, mn, mx)| mn <= min && max <= mx && self.same_value(lo, lo_v) && self.same_value(hi, hi_v));
        if done {
            return Ok(());
        }
        self.narrow_checked.push((lo_v, hi_v, min, max));
        let lo_ok = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, lo_v, min);
        // `hi - 1 <= max`, i.e. `hi <= max + 1` (no overflow: max < i64::MAX).
        let hi_ok = self.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, hi_v, max + 1);
        let ok = self.b.ins().band(lo_ok, hi_ok);
        self.guard(ok, status::INDEX_OVERFLOW)
    }

    /// Whether `a` and `b` are the same value: one SSA value, or equal
    /// integer constants.
    fn same_value(&self, a: Value, b: Value) -> bool {
        let (a, b) = (self.canonical(a), self.canonical(b));
        a == b || matches!((self.int_const(a), self.int_const(b)), (Some(x), Some(y)) if x == y)
    }

    /// The constant `v` is defined as, if an `iconst`.
    fn int_const(&self, v: Value) -> Option<(Type, i64)> {
        let dfg = &self.b.func.dfg;
        let inst = dfg.value_def(v).inst()?;
        match dfg.insts[inst] {
            InstructionData::UnaryImm { opcode: Opcode::Iconst, imm } => Some((dfg.value_type(v), imm.bits())),
            _ => None,
        }
    }

    /// `(t) v` of a loop variable (value `v`) whose range was checked to fit
    /// `t`: the narrow value, remembered as widening back to `v`.
    pub(super) fn narrow_index(&mut self, v: Value, t: ScalarType) -> Value {
        let tt = crate::types::clif_type(t);
        let narrow = if tt == ct::I64 { v } else { self.b.ins().ireduce(tt, v) };
        self.widened.insert((narrow, t), v);
        narrow
    }

    /// The `i64` index the narrow value `narrow` of type `t` was converted
    /// from, if it is one: then widening it (by `t`'s signedness) gives that.
    pub(super) fn widened_from(&self, narrow: Value, t: ScalarType) -> Option<Value> {
        self.widened.get(&(narrow, t)).copied()
    }
}

impl Translator<'_, '_> {
    /// Whether `cond` holds whenever the inputs lie in the program's ranges
    /// ([`heddle_ir::loops::implied_by_ranges`], through the `let`s in scope).
    pub(super) fn implied_by_ranges(&self, cond: &Expr) -> bool {
        self.implied_by_ranges_after(cond, &[])
    }

    /// [`Self::implied_by_ranges`] with the `let`s of a loop body that runs
    /// in lanes before `cond` (`body_lets`, innermost last), which are not
    /// in scope as scalar names (a vector lane loop's `cols[k]`).
    pub(super) fn implied_by_ranges_after(&self, cond: &Expr, body_lets: &[(Name, Expr)]) -> bool {
        let lets = &self.let_values;
        heddle_ir::loops::implied_by_ranges(cond, &self.prog.ranges, &|n| {
            body_lets
                .iter()
                .rev()
                .find(|(m, _)| m == n)
                .or_else(|| lets.iter().rev().find(|(m, _)| m == n))
                .map(|(_, v)| v)
        })
    }
}

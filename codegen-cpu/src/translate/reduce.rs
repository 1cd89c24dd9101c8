//! Reassociated reductions: a `reduce` loop over several accumulators.
//!
//! A `reduce` (not `reduceSeq`) may be reassociated (LANGUAGE.md §5), and
//! lowering lists its accumulators in `LoopProgram::reassociable`. One
//! accumulator makes every iteration wait for the previous one's add (four
//! cycles for a float add); with `U` of them, `U` chains run side by side.
//! An innermost sequential loop whose body assigns each of its reassociable
//! accumulators once, as `acc = acc op e` with `e` not reading any of them,
//! becomes
//!
//! ```text
//! if lo < hi {
//!     mid = lo + (hi - lo) mod U
//!     for k in lo .. mid { body(k) into acc }
//!     if mid < hi {
//!         acc₁ .. acc_{U-1} = identity of op
//!         for k in mid .. hi step U {
//!             body(k) into acc₀ (= acc); body(k + 1) into acc₁; …; body(k + U - 1) into acc_{U-1}
//!         }
//!         acc = (acc₀ op acc₁) op (acc₂ op acc₃) …
//!     }
//! }
//! ```
//!
//! Both loops count `q = k + o` rather than `k` (`o` the invariant term of
//! a load `buf[k + o]` in the body, see `single_reduction_over`), so that a
//! CSR row's loads need no base address rebased per row.
//!
//! Each copy of the body runs in order, so every other effect of the body
//! (a failing check above all) happens exactly as in the sequential loop;
//! only the grouping of the `op`s changes, which for floats changes the
//! rounding (integer `+`, `*`, `min`, `max` are exact in any order).

use super::{Bound, Translator};
use crate::error::CodegenError;
use cranelift_codegen::ir::{Block, BlockArg, InstBuilder, Value, condcodes::IntCC, types as ct};
use cranelift_frontend::Variable;
use heddle_ir::loops::{BinOp, Expr, Schedule, Stmt};
use heddle_ir::{Name, ScalarType};

/// Whether `v` is the constant 0.
fn is_zero(dfg: &cranelift_codegen::ir::DataFlowGraph, v: Value) -> bool {
    use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
    matches!(dfg.value_def(v), ValueDef::Result(i, 0) if matches!(dfg.insts[i], InstructionData::UnaryImm { opcode: Opcode::Iconst, imm } if imm.bits() == 0))
}

/// The largest [`Options::short_loop`](crate::Options::short_loop) whose short
/// loops run as copies of the body entered by a jump table
/// ([`Translator::unrolled_short`]); above it, a loop of pairs.
const MAX_UNROLLED_SHORT: i64 = 32;

/// One accumulator of a reduction loop.
pub(super) struct Accumulator {
    pub(super) name: Name,
    pub(super) op: BinOp,
    pub(super) ty: ScalarType,
    pub(super) var: Variable,
}

/// Is `op` associative and commutative on `ty` (as heddle defines it:
/// integers wrap, float `min`/`max` ignore NaN)?
fn reassociable_op(op: BinOp, ty: ScalarType) -> bool {
    match op {
        BinOp::Add | BinOp::Mul | BinOp::Min | BinOp::Max => ty.is_int() || ty.is_float(),
        BinOp::And | BinOp::Or => ty == ScalarType::Bool,
        _ => false,
    }
}

impl Translator<'_, '_> {
    /// The accumulators of `body` if it is a loop body this module unrolls.
    fn reduction_shape(&self, body: &[Stmt]) -> Option<Vec<Accumulator>> {
        let mut accs: Vec<(Name, BinOp, &Expr)> = Vec::new();
        for s in body {
            match s {
                Stmt::Let { .. } | Stmt::Check { .. } => {}
                Stmt::Assign { var, value: Expr::Bin(op, a, b) } if self.prog.reassociable.contains(var) => {
                    let e = match (&**a, &**b) {
                        (Expr::Var(x), e) if x == var => e,
                        (e, Expr::Var(x)) if x == var => e,
                        _ => return None,
                    };
                    if accs.iter().any(|(n, ..)| n == var) {
                        return None;
                    }
                    accs.push((var.clone(), *op, e));
                }
                _ => return None,
            }
        }
        if accs.is_empty() {
            return None;
        }
        // Nothing but its own update reads an accumulator.
        let reads_acc = |e: &Expr| accs.iter().any(|(n, ..)| super::lazy::mentions(e, n));
        for s in body {
            let clean = match s {
                Stmt::Let { value, .. } => !reads_acc(value),
                Stmt::Check { cond, .. } => !reads_acc(cond),
                _ => true,
            };
            if !clean {
                return None;
            }
        }
        let mut out = Vec::new();
        for (name, op, e) in &accs {
            if reads_acc(e) {
                return None;
            }
            let pos = self.position(name).ok()?;
            let Bound::Var(var, ty) = self.scope[pos].1 else { return None };
            if !reassociable_op(*op, ty) {
                return None;
            }
            out.push(Accumulator { name: name.clone(), op: *op, ty, var });
        }
        Some(out)
    }

    /// Translates `for var in lo .. hi { body }` as a reduction over
    /// [`options.accumulators`](crate::Options::accumulators) partial
    /// accumulators, if it is one; `false` (nothing emitted) otherwise.
    pub(super) fn reduction_loop(
        &mut self,
        var: &Name,
        lo: &Expr,
        hi: &Expr,
        schedule: Schedule,
        body: &[Stmt],
    ) -> Result<bool, CodegenError> {
        let u = self.options.accumulators.max(1) as i64;
        if schedule != Schedule::Seq {
            return Ok(false);
        }
        let folded = fold_accumulator_copies(body, &self.prog.reassociable);
        let body: &[Stmt] = folded.as_deref().unwrap_or(body);
        let Some(accs) = self.reduction_shape(body) else { return Ok(false) };
        // One accumulator: no reassociation at all (vector lanes neither),
        // the tightest loop for short rows.
        if u < 2 {
            self.single_reduction_loop(var, lo, hi, body, &accs)?;
            return Ok(true);
        }
        if let Some(plan) = self.lane_plan(var, body, &accs, None) {
            self.lane_loop(var, lo, hi, body, &accs, plan)?;
            return Ok(true);
        }
        let (lo_v, hi_v) = self.loop_bounds(lo, hi, schedule)?;
        let short = i64::from(self.options.short_loop);
        if short < 2 {
            self.partial_reduction_loop(var, lo_v, hi_v, body, &accs, u)?;
            return Ok(true);
        }
        // A short loop (an SpMV row of a few entries) pays more for setting
        // up and combining partials than their parallel chains gain: it runs
        // the one-accumulator loop. The test is one compare per loop, and
        // predicted when the lengths are alike. It compares unsigned: a
        // negative count (an empty loop) goes to the partials' loop, which
        // tests `lo < hi` first, so the short loop knows `0 <= n < short`
        // (its odd first iteration then needs no test for an empty loop).
        let [short_loop, long_loop, join] = std::array::from_fn(|_| self.b.create_block());
        let n = self.b.ins().isub(hi_v, lo_v);
        // Fewer than `short` iterations from a small constant fit the
        // body's narrow conversions of `var`: no range check per row.
        let (min, max) = heddle_ir::loops::fitting_range(&heddle_ir::loops::narrow_casts(var, body));
        let fits = matches!(lo, Expr::Int(v, _) if *v >= min && v.checked_add(short - 1).is_some_and(|h| max.checked_add(1).is_some_and(|m| h <= m)));
        // Below `copies_below`, straight copies; from it to `short`, the
        // loop of pairs, entered from a test before the jump table (none:
        // every short loop runs the loop of pairs).
        let copies = short.min(i64::from(self.options.copies_below));
        if short <= MAX_UNROLLED_SHORT && copies > 0 && !self.single_needs_guard(var, lo, body, fits) {
            let pairs = (copies < short).then(|| self.b.create_block());
            self.unrolled_short(
                var,
                lo_v,
                hi_v,
                n,
                body,
                fits,
                copies as usize,
                pairs.is_some(),
                short_loop,
                pairs.unwrap_or(long_loop),
            )?;
            self.b.ins().jump(join, &[]);
            // What follows the loop comes right after the copies, so that
            // the last one falls through to it (the partials' loop after).
            if let Some(last) = self.b.current_block() {
                self.b.insert_block_after(join, last);
            }
            if let Some(pairs) = pairs {
                let mid_loop = self.b.create_block();
                self.b.switch_to_block(pairs);
                let is_short = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, n, short);
                self.b.ins().brif(is_short, mid_loop, &[], long_loop, &[]);
                self.b.switch_to_block(mid_loop);
                self.single_reduction_over(var, lo, lo_v, hi_v, body, &accs, fits, true)?;
                self.b.ins().jump(join, &[]);
            }
        } else {
            let is_short = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, n, short);
            self.b.ins().brif(is_short, short_loop, &[], long_loop, &[]);
            self.b.switch_to_block(short_loop);
            self.single_reduction_over(var, lo, lo_v, hi_v, body, &accs, fits, true)?;
            self.b.ins().jump(join, &[]);
        }
        self.b.switch_to_block(long_loop);
        self.partial_reduction_loop(var, lo_v, hi_v, body, &accs, u)?;
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(true)
    }

    /// `for var in lo_v .. hi_v { body }` over `u` partial accumulators
    /// (the module's loop); ends in a block that follows the loop.
    fn partial_reduction_loop(
        &mut self,
        var: &Name,
        lo_v: Value,
        hi_v: Value,
        body: &[Stmt],
        accs: &[Accumulator],
        u: i64,
    ) -> Result<(), CodegenError> {
        let [pre, rest, rest_head, after_rest, main, main_head, combine, exit] =
            std::array::from_fn(|_| self.b.create_block());
        let runs = self.b.ins().icmp(IntCC::SignedLessThan, lo_v, hi_v);
        self.b.ins().brif(runs, pre, &[], exit, &[]);

        // Pre-header of both loops: the first `n mod U` iterations run one at
        // a time, up to `mid`, and the unrolled loop takes the rest.
        self.b.switch_to_block(pre);
        let marks = self.enter_loop(var, lo_v, hi_v, body)?;
        let n = self.b.ins().isub(hi_v, lo_v);
        let left_over = if (u as u64).is_power_of_two() {
            self.b.ins().band_imm_s(n, u - 1)
        } else {
            self.b.ins().urem_imm_s(n, u)
        };
        // `mid = hi - (n - n mod U)`, not `lo + n mod U`: Cranelift
        // recomputes an and with a constant at each use (in the loop), not
        // a difference of two values.
        let whole = self.b.ins().isub(n, left_over);
        // Both loops count `q = k + o` (see `single_reduction_over`).
        let o = self.rebased_offset(var, body)?;
        let (q0, end) = match o {
            Some(o) => (self.b.ins().iadd(lo_v, o), self.plus(hi_v, o)),
            None => (lo_v, hi_v),
        };
        let index = |t: &mut Self, q: Value| match o {
            Some(o) => t.b.ins().isub(q, o),
            None => q,
        };
        let mid = self.b.ins().isub(end, whole);
        let mut entry: Vec<BlockArg> = accs.iter().map(|a| self.b.use_var(a.var).into()).collect();
        entry.push(q0.into());
        self.b.ins().jump(rest_head, &entry);

        // Both loops test at their head, and their values are explicit
        // parameters of the head, accumulators first and the index last:
        // - a new accumulator value then has one use, the jump back (with
        //   the test at the bottom it also flowed to the exit), so the loads
        //   feeding it fold into the multiply or fused multiply-add;
        // - the jump's arguments are computed in their order, so the new
        //   index comes after the last load at the old one, which no longer
        //   needs a register of its own (and a move on the back edge).
        // (Each body is inserted before its head in the layout, but
        // Cranelift lowers blocks in its own order: the jump back stays.)
        // Each head branches to its exit first: Cranelift's elaboration
        // visits a block's dominator-tree children in reverse post-order,
        // which puts a branch's first target last, and a loop body visited
        // after the exit has left the loop is not recognised as inside it,
        // so nothing computed there (a row's base addresses) is hoisted.
        let (rest_accs, q) = self.loop_head(rest_head, accs, 1);
        self.b.insert_block_after(rest, pre);
        self.b.switch_to_block(rest);
        for (a, v) in accs.iter().zip(&rest_accs) {
            self.b.def_var(a.var, *v);
        }
        let k = index(self, q);
        self.scope.push((var.clone(), Bound::Val(k, ScalarType::I64)));
        self.depth += 1;
        self.block(body)?;
        self.depth -= 1;
        self.scope.pop();
        let mut back: Vec<BlockArg> = accs.iter().map(|a| self.b.use_var(a.var).into()).collect();
        let next = self.b.ins().iadd_imm_s(q, 1);
        back.push(next.into());
        self.b.ins().jump(rest_head, &back);
        self.b.switch_to_block(rest_head);
        let done = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, q, mid);
        self.b.ins().brif(done, after_rest, &[], rest, &[]);

        // A row shorter than `U` ends here, without the partials' set-up
        // (their identities are arguments of the jump into the loop) or
        // their combination.
        self.b.switch_to_block(after_rest);
        for (a, v) in accs.iter().zip(&rest_accs) {
            self.b.def_var(a.var, *v);
        }
        let mut entry: Vec<BlockArg> = Vec::new();
        for (a, v) in accs.iter().zip(&rest_accs) {
            entry.push((*v).into());
            for _ in 1..u {
                entry.push(self.identity(a.op, a.ty).into());
            }
        }
        entry.push(mid.into());
        let any = self.b.ins().icmp(IntCC::SignedLessThan, mid, end);
        self.b.ins().brif(any, main_head, &entry, exit, &[]);

        // The unrolled loop: copy c of the body works on `k + c` into partial c.
        let (partial_vals, q) = self.loop_head(main_head, accs, u as usize);
        let partials: Vec<Vec<Variable>> =
            accs.iter().map(|a| (0..u).map(|_| self.b.declare_var(crate::types::clif_type(a.ty))).collect()).collect();
        self.b.insert_block_after(main, after_rest);
        self.b.switch_to_block(main);
        for (vars, vals) in partials.iter().zip(partial_vals.chunks(u as usize)) {
            for (p, v) in vars.iter().zip(vals) {
                self.b.def_var(*p, *v);
            }
        }
        let k = index(self, q);
        for c in 0..u {
            let kc = if c == 0 { k } else { self.b.ins().iadd_imm_s(k, c) };
            let mark = self.scope.len();
            self.scope.push((var.clone(), Bound::Val(kc, ScalarType::I64)));
            for (a, p) in accs.iter().zip(&partials) {
                self.scope.push((a.name.clone(), Bound::Var(p[c as usize], a.ty)));
            }
            self.depth += 1;
            self.block(body)?;
            self.depth -= 1;
            self.scope.truncate(mark);
        }
        let mut back: Vec<BlockArg> = partials.iter().flatten().map(|p| self.b.use_var(*p).into()).collect();
        let next = self.b.ins().iadd_imm_s(q, u);
        back.push(next.into());
        self.b.ins().jump(main_head, &back);
        self.b.switch_to_block(main_head);
        let done = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, q, end);
        self.b.ins().brif(done, combine, &[], main, &[]);

        // Combine the partial accumulators pairwise into the accumulator.
        self.b.switch_to_block(combine);
        for (a, vals) in accs.iter().zip(partial_vals.chunks(u as usize)) {
            let mut vals: Vec<Value> = vals.to_vec();
            while vals.len() > 1 {
                let mut next = Vec::with_capacity(vals.len().div_ceil(2));
                for pair in vals.chunks(2) {
                    next.push(if pair.len() == 2 { self.combine(a.op, a.ty, pair[0], pair[1])? } else { pair[0] });
                }
                vals = next;
            }
            self.b.def_var(a.var, vals[0]);
        }
        self.b.ins().jump(exit, &[]);

        self.b.switch_to_block(exit);
        self.leave_loop(marks);
        Ok(())
    }

    /// A reduction over one accumulator, in the order of the sequential
    /// loop (bit for bit its result): the short-row loop of
    /// `accumulators = 1`, two iterations per step into the same
    /// accumulator, after one on its own when the count is odd:
    ///
    /// ```text
    /// q = lo + o, end = hi + o
    /// if (hi - lo) & 1 { if q >= end { done } body(q - o) into acc; q += 1 }   (no `q >= end` when counted)
    /// head(acc, q): if q >= end { done } else { body(q - o), body(q - o + 1) into acc; head(acc', q + 2) }
    /// ```
    ///
    /// The loop runs over `q = k + o`, where `o` is the invariant term of a
    /// load `buf[k + o]` of the body ([`rebased_offset`](Self::rebased_offset);
    /// `0` when there is none): that load's address is then `buf + q · size`
    /// (`address` cancels `(q - o) + o`), and a row of a CSR matrix needs no
    /// base address of its own (two `lea`s per row), nor a counter from 0.
    ///
    /// Two iterations per step measured 11–14% faster than one (and than
    /// four partial accumulators) on rows of 4–5 entries; one per step was
    /// 13–17% slower than four partials (docs/performance.md).
    ///
    /// There is no `lo < hi` test in front (an empty loop goes through the
    /// two tests) when the pre-header's work is harmless on an empty
    /// loop: no invariant load to hoist (its address may be out of range
    /// when the loop does not run), and no range check of a narrowed index,
    /// or one that an empty loop passes anyway (`lo` a constant in the
    /// narrow range: `hi <= lo` then fits too), or none at all (`fits`: the
    /// caller knows the range fits). Otherwise the test comes first, as in
    /// every other loop. The head tests first and branches to its exit
    /// first, as in [`reduction_loop`](Self::reduction_loop) (with the test
    /// at the bottom, the loads no longer fold into the multiply).
    fn single_reduction_loop(
        &mut self,
        var: &Name,
        lo: &Expr,
        hi: &Expr,
        body: &[Stmt],
        accs: &[Accumulator],
    ) -> Result<(), CodegenError> {
        let (lo_v, hi_v) = self.loop_bounds(lo, hi, Schedule::Seq)?;
        self.single_reduction_over(var, lo, lo_v, hi_v, body, accs, false, false)
    }

    /// [`single_reduction_loop`](Self::single_reduction_loop) over bounds
    /// already computed (`lo` is the lower bound's expression); `fits`: the
    /// range is known to fit the body's narrow conversions of `var`;
    /// `counted`: the caller has tested `hi - lo` non-negative (an odd count
    /// is then at least one iteration, which runs without a test).
    #[allow(clippy::too_many_arguments)]
    fn single_reduction_over(
        &mut self,
        var: &Name,
        lo: &Expr,
        lo_v: Value,
        hi_v: Value,
        body: &[Stmt],
        accs: &[Accumulator],
        fits: bool,
        counted: bool,
    ) -> Result<(), CodegenError> {
        let guarded = self.single_needs_guard(var, lo, body, fits);
        let [first, first_step, head, step, after, exit] = std::array::from_fn(|_| self.b.create_block());
        if guarded {
            let pre = self.b.create_block();
            let runs = self.b.ins().icmp(IntCC::SignedLessThan, lo_v, hi_v);
            self.b.ins().brif(runs, pre, &[], exit, &[]);
            self.b.switch_to_block(pre);
        }
        let marks = self.enter_loop_fitting(var, lo_v, hi_v, body, fits)?;
        let o = self.rebased_offset(var, body)?;
        let (q0, end) = match o {
            Some(o) => (self.b.ins().iadd(lo_v, o), self.plus(hi_v, o)),
            None => (lo_v, hi_v),
        };
        // An odd count runs one iteration first, then pairs up to `end`
        // (tested as `q < end`: a `q < end - 1` would recompute `end - 1`
        // in the loop, as Cranelift does with an add of a constant).
        let n = self.b.ins().isub(hi_v, lo_v);
        let odd = self.b.ins().band_imm_s(n, 1);
        let mut entry: Vec<BlockArg> = accs.iter().map(|a| self.b.use_var(a.var).into()).collect();
        entry.push(q0.into());
        self.b.ins().brif(odd, first, &[], head, &entry);
        let (vals, q) = self.loop_head(head, accs, 1);
        let index = |t: &mut Self, q: Value| match o {
            Some(o) => t.b.ins().isub(q, o),
            None => q,
        };
        // The odd iteration, unless the count is negative (an empty loop).
        self.b.switch_to_block(first);
        if counted {
            self.b.ins().jump(first_step, &[]);
        } else {
            let empty = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, q0, end);
            self.b.ins().brif(empty, after, &[], first_step, &[]);
        }
        self.b.switch_to_block(first_step);
        let k0 = index(self, q0);
        self.scope.push((var.clone(), Bound::Val(k0, ScalarType::I64)));
        self.depth += 1;
        self.block(body)?;
        self.depth -= 1;
        self.scope.pop();
        let mut entry: Vec<BlockArg> = accs.iter().map(|a| self.b.use_var(a.var).into()).collect();
        let q1 = self.b.ins().iadd_imm_s(q0, 1);
        entry.push(q1.into());
        self.b.ins().jump(head, &entry);

        self.b.switch_to_block(step);
        for (a, v) in accs.iter().zip(&vals) {
            self.b.def_var(a.var, *v);
        }
        let k = index(self, q);
        for c in 0..2 {
            let kc = if c == 0 { k } else { self.b.ins().iadd_imm_s(k, 1) };
            self.scope.push((var.clone(), Bound::Val(kc, ScalarType::I64)));
            self.depth += 1;
            self.block(body)?;
            self.depth -= 1;
            self.scope.pop();
        }
        let mut back: Vec<BlockArg> = accs.iter().map(|a| self.b.use_var(a.var).into()).collect();
        let q2 = self.b.ins().iadd_imm_s(q, 2);
        back.push(q2.into());
        self.b.ins().jump(head, &back);
        self.b.switch_to_block(head);
        for (a, v) in accs.iter().zip(&vals) {
            self.b.def_var(a.var, *v);
        }
        let done = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, q, end);
        self.b.ins().brif(done, after, &[], step, &[]);
        self.b.switch_to_block(after);
        self.b.ins().jump(exit, &[]);
        self.b.switch_to_block(exit);
        self.leave_loop(marks);
        Ok(())
    }

    /// Whether the pre-header of a loop over `var` from `lo` with this
    /// body does work that an empty loop must not do: an invariant load to
    /// hoist (its address may be out of range when the loop does not run),
    /// or a range check of a narrowed index that an empty loop could fail
    /// (not when `lo` is a constant in the narrow range, nor when `fits`).
    fn single_needs_guard(&self, var: &Name, lo: &Expr, body: &[Stmt], fits: bool) -> bool {
        let narrow = heddle_ir::loops::narrow_casts(var, body);
        let (min, max) = heddle_ir::loops::fitting_range(&narrow);
        let fitting_lo = matches!(lo, Expr::Int(v, _) if *v >= min && max.checked_add(1).is_some_and(|m| *v <= m));
        !(narrow.is_empty() || fitting_lo || fits) || !self.invariant_loads(var, body).is_empty()
    }

    /// The short path of a reduction loop of `n = hi - lo` iterations,
    /// `0 <= n < short` (the caller has tested it), in order into the one
    /// accumulator (bit for bit the sequential loop), without a loop:
    /// `short - 1` copies of the body in a row, copy `m` (from `short - 1`
    /// down to 1) running iteration `k = hi - m`, entered by a jump table at
    /// the copy of the `n`-th last iteration (Duff's device):
    ///
    /// ```text
    /// end = hi + o
    /// br_table n: 0 → done, m → copy m
    /// copy m: body(k = (end - m) - o); fall through to copy m - 1
    /// ```
    ///
    /// A row of `n` entries pays one indirect jump and no loop test, count
    /// or jump back (a loop of pairs paid about 4 per pair and 5 to start).
    /// As in [`single_reduction_over`](Self::single_reduction_over), the
    /// index is counted as `q = k + o` ([`rebased_offset`](Self::rebased_offset)),
    /// so `buf[k + o]` is `buf + (end - m) · size`: one addressing mode with
    /// the constant `-m · size` folded. Only for a body whose pre-header
    /// work is harmless when it does not run
    /// ([`single_needs_guard`](Self::single_needs_guard) false). Ends in
    /// the block after the copies.
    #[allow(clippy::too_many_arguments)]
    fn unrolled_short(
        &mut self,
        var: &Name,
        lo_v: Value,
        hi_v: Value,
        n: Value,
        body: &[Stmt],
        fits: bool,
        short: usize,
        test_first: bool,
        short_loop: Block,
        default: Block,
    ) -> Result<(), CodegenError> {
        use cranelift_codegen::ir::JumpTableData;
        let marks = self.enter_loop_fitting(var, lo_v, hi_v, body, fits)?;
        let o = self.rebased_offset(var, body)?;
        let end = match o {
            Some(o) => self.plus(hi_v, o),
            None => hi_v,
        };
        // `0 <= n < short`: a negative count is a huge unsigned one. The
        // jump table's bounds check (of the count as 32 bits) does it alone
        // when the count is a difference of two 32-bit positions: it is
        // then below 2^32, and negative only for decreasing positions,
        // which no loop here reads correctly (binding rejects them).
        // With `test_first` the test is made anyway: Cranelift's table
        // (clamp, load, add, indirect jump: 8 instructions) costs a loop
        // that is not short more than a compare and branch.
        if test_first || !self.u32_difference(n) {
            let is_short = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, n, short as i64);
            self.b.ins().brif(is_short, short_loop, &[], default, &[]);
            self.b.switch_to_block(short_loop);
        }
        let copies: Vec<Block> = (0..short).map(|_| self.b.create_block()).collect();
        let calls: Vec<_> = copies.iter().map(|c| self.b.func.dfg.block_call(*c, &[])).collect();
        let default_call = self.b.func.dfg.block_call(default, &[]);
        let table = self.b.create_jump_table(JumpTableData::new(default_call, &calls));
        let index = self.b.ins().ireduce(ct::I32, n);
        self.b.ins().br_table(index, table);
        for m in (1..short).rev() {
            self.b.switch_to_block(copies[m]);
            let q = self.b.ins().iadd_imm_s(end, -(m as i64));
            let k = match o {
                Some(o) => self.b.ins().isub(q, o),
                None => q,
            };
            self.scope.push((var.clone(), Bound::Val(k, ScalarType::I64)));
            self.depth += 1;
            self.block(body)?;
            self.depth -= 1;
            self.scope.pop();
            self.b.ins().jump(copies[m - 1], &[]);
        }
        self.b.switch_to_block(copies[0]);
        self.leave_loop(marks);
        Ok(())
    }

    /// `(a, b)` when Cranelift's instruction defining `v` is `isub a, b`.
    pub(super) fn difference(&self, v: Value) -> Option<(Value, Value)> {
        use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
        let dfg = &self.b.func.dfg;
        let ValueDef::Result(i, 0) = dfg.value_def(v) else { return None };
        match dfg.insts[i] {
            InstructionData::Binary { opcode: Opcode::Isub, args: [a, b] } => Some((a, b)),
            _ => None,
        }
    }

    /// Whether `v` is `a - b` with `a` and `b` 32-bit unsigned integers
    /// loaded or extended to 64 bits: `|v| < 2^32`.
    fn u32_difference(&self, v: Value) -> bool {
        use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
        let dfg = &self.b.func.dfg;
        let u32_wide = |x: Value| match dfg.value_def(x) {
            ValueDef::Result(i, 0) => match dfg.insts[i] {
                InstructionData::Load { opcode: Opcode::Uload32, .. } => true,
                InstructionData::Unary { opcode: Opcode::Uextend, arg } => dfg.value_type(arg) == ct::I32,
                _ => false,
            },
            // A carried `u32` load (see `carry`).
            _ => self.carried.iter().any(|c| c.current == Some(x) && c.unsigned32),
        };
        match self.difference(v) {
            Some((a, b)) if is_zero(dfg, b) => self.u32_difference(a),
            Some((a, b)) => u32_wide(a) && u32_wide(b),
            None => false,
        }
    }

    /// `a + b`, as `p` when `a` is `p - b` (a row's length plus its start).
    fn plus(&mut self, a: Value, b: Value) -> Value {
        match self.difference(a) {
            Some((p, c)) if c == b => p,
            _ => self.b.ins().iadd(a, b),
        }
    }

    /// The invariant part `o` of a load's index `k + o` in a loop over `k`
    /// (`var`) with this body: a name bound outside the loop to an `i64`
    /// value, added to a term of `k` (`k` through the body's `let`s and
    /// integer conversions), as a CSR row's `crd[k + start]`. Evaluated in
    /// the pre-header (names outside are already evaluated before a loop).
    /// Only a choice of how to count: any `o` gives the same indices.
    fn rebased_offset(&mut self, var: &Name, body: &[Stmt]) -> Result<Option<Value>, CodegenError> {
        let mut inner = vec![var.clone()];
        super::hoist::declared(body, &mut inner);
        super::hoist::assigned(body, &mut inner);
        let mut aliases = vec![var.clone()];
        let mut found: Option<Name> = None;
        fn of_var(e: &Expr, aliases: &[Name]) -> bool {
            match e {
                Expr::Var(n) => aliases.contains(n),
                Expr::Cast(t, a) => t.is_int() && of_var(a, aliases),
                _ => false,
            }
        }
        fn loads<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
            match e {
                Expr::Load { index, .. } => {
                    out.push(index);
                    loads(index, out);
                }
                Expr::Bin(_, a, b) => {
                    loads(a, out);
                    loads(b, out);
                }
                Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => loads(a, out),
                Expr::Select(c, a, b) => {
                    loads(c, out);
                    loads(a, out);
                    loads(b, out);
                }
                Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => {}
            }
        }
        'stmts: for s in body {
            let value = match s {
                Stmt::Let { var: name, value, .. } => {
                    if of_var(value, &aliases) {
                        aliases.push(name.clone());
                    }
                    value
                }
                Stmt::Assign { value, .. } => value,
                _ => continue,
            };
            let mut indices = Vec::new();
            loads(value, &mut indices);
            for index in indices {
                let mut terms = Vec::new();
                let mut constant = 0;
                super::expr::flatten_sum(index, true, &mut terms, &mut constant);
                if !terms.iter().any(|(plus, t)| *plus && of_var(t, &aliases)) {
                    continue;
                }
                for (plus, t) in &terms {
                    if let (true, Expr::Var(n)) = (plus, t)
                        && !inner.contains(n)
                        && self.position(n).is_ok_and(|p| matches!(self.scope[p].1, Bound::Val(_, ScalarType::I64)))
                    {
                        found = Some(n.clone());
                        break 'stmts;
                    }
                }
            }
        }
        let Some(n) = found else { return Ok(None) };
        let o = self.expr(&Expr::Var(n))?.0;
        // `o = c - z` (a CSR row's `pos[i] - pos[0]`): count `q = k + c`;
        // `address` reads `buf[k + o]` as `(buf - z · size) + q · size`,
        // whose first term does not change from row to row (Cranelift
        // computes it once, before the row loop): no rebasing per row.
        Ok(Some(self.difference(o).map_or(o, |(c, _)| c)))
    }

    /// Gives `head` explicit parameters, `copies` values per accumulator and
    /// then the `i64` index, and returns them (accumulator values in order).
    fn loop_head(&mut self, head: Block, accs: &[Accumulator], copies: usize) -> (Vec<Value>, Value) {
        let mut vals = Vec::with_capacity(accs.len() * copies);
        for a in accs {
            for _ in 0..copies {
                vals.push(self.b.append_block_param(head, crate::types::clif_type(a.ty)));
            }
        }
        let k = self.b.append_block_param(head, ct::I64);
        (vals, k)
    }

    /// `acc = acc + a * b` (or `(a * b) + acc`) of a reassociable `f32` or
    /// `f64` accumulator as `acc = fma(a, b, acc)`, the product not rounded
    /// on its own, when the host has a fused multiply-add
    /// ([`Options::fused_multiply_add`](crate::Options::fused_multiply_add)):
    /// one instruction where there were two, and the `b` load folds into it.
    /// Only a `reduce`'s accumulator is reassociable (never a
    /// `reduceSeq`'s), and a `reduce`'s float result is only defined up to
    /// rounding (LANGUAGE.md §5). `None` (nothing emitted) when the update
    /// is not such an add; an add whose other operand turns out not to be a
    /// product is emitted as the add.
    pub(super) fn fused_update(&mut self, var: &Name, value: &Expr) -> Result<Option<Value>, CodegenError> {
        if !self.fma || !self.prog.reassociable.contains(var) {
            return Ok(None);
        }
        let Expr::Bin(BinOp::Add, a, b) = value else { return Ok(None) };
        let (other, acc_first) = match (&**a, &**b) {
            (Expr::Var(x), e) if x == var => (e, true),
            (e, Expr::Var(x)) if x == var => (e, false),
            _ => return Ok(None),
        };
        let Bound::Var(_, ty) = self.scope[self.position(var)?].1 else { return Ok(None) };
        if !matches!(ty, ScalarType::F32 | ScalarType::F64) {
            return Ok(None);
        }
        let (acc, _) = self.expr(&Expr::Var(var.clone()))?;
        let (term, term_ty) = self.expr(other)?;
        if term_ty == ty
            && let Some((x, y)) = self.product_operands(term)
        {
            return Ok(Some(self.b.ins().fma(x, y, acc)));
        }
        let (l, r) = if acc_first { (acc, term) } else { (term, acc) };
        Ok(Some(self.float_op(BinOp::Add, l, r, ty)?))
    }

    /// The operands of `v` if Cranelift's instruction defining it is an `fmul`.
    pub(super) fn product_operands(&self, v: Value) -> Option<(Value, Value)> {
        use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
        let dfg = &self.b.func.dfg;
        let ValueDef::Result(inst, 0) = dfg.value_def(v) else { return None };
        match dfg.insts[inst] {
            InstructionData::Binary { opcode: Opcode::Fmul, args: [x, y] } => Some((x, y)),
            _ => None,
        }
    }

    /// The identity of `op` on `ty`: `x op identity == x` for every `x`
    /// (`-0.0` for a float sum, so that a sum of `-0.0`s stays `-0.0`).
    pub(super) fn identity(&mut self, op: BinOp, ty: ScalarType) -> Value {
        let t = crate::types::clif_type(ty);
        let bits = 8 * ty.size_bytes() as u32;
        let (int_min, int_max) = match (ty.is_signed(), bits) {
            (_, 64) if ty.is_signed() => (i64::MIN, i64::MAX),
            (_, 64) => (0, -1),
            (true, b) => (-(1i64 << (b - 1)), (1i64 << (b - 1)) - 1),
            (false, b) => (0, (1i64 << b) - 1),
        };
        let float =
            |b: &mut Self, v: f64| if t == ct::F32 { b.b.ins().f32const(v as f32) } else { b.b.ins().f64const(v) };
        match (op, ty.is_float()) {
            (BinOp::Add, true) => float(self, -0.0),
            (BinOp::Mul, true) => float(self, 1.0),
            (BinOp::Min, true) => float(self, f64::INFINITY),
            (BinOp::Max, true) => float(self, f64::NEG_INFINITY),
            (BinOp::Mul, false) => self.b.ins().iconst(t, 1),
            (BinOp::Min, false) => self.b.ins().iconst(t, super::expr::imm(int_max, ty)),
            (BinOp::Max, false) => self.b.ins().iconst(t, super::expr::imm(int_min, ty)),
            (BinOp::And, _) => self.b.ins().iconst(ct::I8, 1),
            // `+` on integers, `||`.
            _ => self.b.ins().iconst(t, 0),
        }
    }

    /// `a op b` with the semantics of the loop IR.
    pub(super) fn combine(&mut self, op: BinOp, ty: ScalarType, a: Value, b: Value) -> Result<Value, CodegenError> {
        Ok(match op {
            BinOp::And => self.b.ins().band(a, b),
            BinOp::Or => self.b.ins().bor(a, b),
            _ if ty.is_float() => self.float_op(op, a, b, ty)?,
            _ => self.int_op(op, a, b, ty.is_signed())?,
        })
    }
}

/// `body` with each copy of a reassociable accumulator read just for its own
/// update folded away: `let x = acc; …; acc = x op e` (how lowering applies
/// an integer `+`, binding its operands) becomes `…; acc = acc op e`, the
/// form [`Translator::reduction_shape`] recognises, with `x` read as `acc`
/// in between (where `acc` still holds the copied value: it is assigned only
/// by that update). `None` when there is nothing to fold. Only flat bodies
/// (no nested loop or `if`) in which `x` is not read after the update.
pub(super) fn fold_accumulator_copies(body: &[Stmt], reassociable: &[Name]) -> Option<Vec<Stmt>> {
    let flat = |s: &Stmt| matches!(s, Stmt::Let { .. } | Stmt::Check { .. } | Stmt::Assign { .. } | Stmt::Store { .. });
    if !body.iter().all(flat) {
        return None;
    }
    let mut out = body.to_vec();
    let mut changed = false;
    let mut i = 0;
    while i < out.len() {
        let Stmt::Let { var: copy, value: Expr::Var(acc), .. } = &out[i] else {
            i += 1;
            continue;
        };
        let (copy, acc) = (copy.clone(), acc.clone());
        let update =
            out[i + 1..].iter().position(|s| matches!(s, Stmt::Assign { var, .. } if *var == acc)).map(|p| p + i + 1);
        let foldable = reassociable.contains(&acc)
            && update.is_some_and(|u| {
                // Neither name is bound again, and the copy is dead after the update.
                out[i + 1..].iter().all(|s| !matches!(s, Stmt::Let { var, .. } if *var == copy || *var == acc))
                    && out[u + 1..].iter().all(|s| !stmt_mentions(s, &copy))
            });
        if !foldable {
            i += 1;
            continue;
        }
        let update = update.unwrap_or(i);
        for s in &mut out[i + 1..=update] {
            *s = rename_in_stmt(s, &copy, &acc);
        }
        out.remove(i);
        changed = true;
    }
    changed.then_some(out)
}

/// Whether a flat statement reads `name`.
fn stmt_mentions(s: &Stmt, name: &Name) -> bool {
    use super::lazy::mentions;
    match s {
        Stmt::Let { value, .. } | Stmt::Assign { value, .. } => mentions(value, name),
        Stmt::Check { cond, .. } => mentions(cond, name),
        Stmt::Store { index, value, .. } => mentions(index, name) || mentions(value, name),
        _ => true,
    }
}

/// A flat statement with every read of `from` reading `to` instead.
fn rename_in_stmt(s: &Stmt, from: &Name, to: &Name) -> Stmt {
    let mut s = s.clone();
    match &mut s {
        Stmt::Let { value, .. } | Stmt::Assign { value, .. } => *value = rename(value, from, to),
        Stmt::Check { cond, .. } => *cond = rename(cond, from, to),
        Stmt::Store { index, value, .. } => {
            *index = rename(index, from, to);
            *value = rename(value, from, to);
        }
        _ => {}
    }
    s
}

fn rename(e: &Expr, from: &Name, to: &Name) -> Expr {
    let r = |x: &Expr| Box::new(rename(x, from, to));
    match e {
        Expr::Var(v) if v == from => Expr::Var(to.clone()),
        Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => e.clone(),
        Expr::Load { buf, index, field } => Expr::Load { buf: buf.clone(), index: r(index), field: *field },
        Expr::Bin(op, a, b) => Expr::Bin(*op, r(a), r(b)),
        Expr::Neg(a) => Expr::Neg(r(a)),
        Expr::Not(a) => Expr::Not(r(a)),
        Expr::Cast(t, a) => Expr::Cast(*t, r(a)),
        Expr::Select(c, a, b) => Expr::Select(r(c), r(a), r(b)),
    }
}

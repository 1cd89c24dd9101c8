//! Statements.

use super::{Bound, Buf, HeapAlloc, STACK_LIMIT, Translator};
use crate::error::CodegenError;
use crate::{helpers, status, types};
use cranelift_codegen::ir::{InstBuilder, StackSlotData, StackSlotKind, Value, condcodes::IntCC, types as ct};
use heddle_ir::loops::{Expr, Schedule, Space, Stmt, record_layout};
use heddle_ir::{Name, ScalarType};

/// What [`Translator::leave_loop`] restores.
pub(super) struct LoopMarks {
    hoisted: usize,
    narrow: usize,
    var: Option<(Name, usize)>,
    outer: bool,
}

/// Whether a block holds a loop (at any depth).
pub(super) fn has_loop(b: &[Stmt]) -> bool {
    b.iter().any(|s| match s {
        Stmt::For { .. } => true,
        Stmt::If { then, els, .. } => has_loop(then) || has_loop(els),
        _ => false,
    })
}

/// The checks in `b`, nested `if`s included (all trusted, when
/// [`Translator::trusted_away`] holds of `b`).
fn trusted_count(b: &[Stmt]) -> usize {
    b.iter()
        .map(|s| match s {
            Stmt::If { then, els, .. } => trusted_count(then) + trusted_count(els),
            _ => 1,
        })
        .sum()
}

impl Translator<'_, '_> {
    /// Whether translating `b` emits nothing: it holds only checks the
    /// inputs' ranges imply (under `--trust-ranges`) and such `if`s.
    fn trusted_away(&self, b: &[Stmt]) -> bool {
        b.iter().all(|s| match s {
            Stmt::Check { cond, .. } => self.options.trust_ranges && self.implied_by_ranges(cond),
            Stmt::If { cond, then, els } => {
                !super::expr::may_fault(cond) && self.trusted_away(then) && self.trusted_away(els)
            }
            _ => false,
        })
    }

    pub(super) fn stmt(&mut self, s: &Stmt) -> Result<(), CodegenError> {
        // A pending lazy `let` must not see a name it reads shadowed or
        // changed, nor be first evaluated inside blocks that open here.
        match s {
            Stmt::Let { var, .. } | Stmt::Var { var, .. } | Stmt::Assign { var, .. } => self.force_lazies(Some(var))?,
            Stmt::For { .. } | Stmt::If { .. } | Stmt::Alloc { .. } | Stmt::Sort { .. } => self.force_lazies(None)?,
            _ => {}
        }
        if let Stmt::Let { var, value, .. } = s {
            self.let_values.push((var.clone(), value.clone()));
        }
        match s {
            // A `let` whose value reads the name it shadows is evaluated now: later,
            // that name would mean the `let` itself.
            Stmt::Let { var, ty, value } if self.lazy_candidate(value) && !super::lazy::mentions(value, var) => {
                self.bind_lazy(var, *ty, value)
            }
            Stmt::Let { var, ty, value } => {
                let (v, _) = self.expr(value)?;
                self.scope.push((var.clone(), Bound::Val(v, *ty)));
            }
            Stmt::Var { var, ty, init } => {
                let (v, _) = self.expr(init)?;
                let x = self.b.declare_var(types::clif_type(*ty));
                self.b.def_var(x, v);
                self.scope.push((var.clone(), Bound::Var(x, *ty)));
            }
            // A nested sum's update whose inner loop added into the
            // partials carried across the enclosing loop (`nested`).
            Stmt::Assign { var, value } if self.nested_update_done(var, value) => {}
            Stmt::Assign { var, value } => {
                let v = match self.fused_update(var, value)? {
                    Some(v) => v,
                    None => self.expr(value)?.0,
                };
                match self.scope[self.position(var)?].1 {
                    Bound::Var(x, _) => self.b.def_var(x, v),
                    _ => return Err(CodegenError::Unsupported(format!("assignment to the immutable `{var}`"))),
                }
            }
            Stmt::Store { buf, index, field, value } => {
                let (v, _) = self.expr(value)?;
                if self.register_store(buf, index, *field, v)? {
                    return Ok(());
                }
                let (addr, offset, ty, flags) = self.address(buf, index, *field)?;
                let v = if ty.is_half() { self.half_to_bits(v, ty)? } else { v };
                self.b.ins().store(flags, v, addr, offset);
            }
            Stmt::AddAtomic { buf, index, field, value } => self.add_atomic(buf, index, *field, value)?,
            Stmt::For { var, lo, hi, schedule: Schedule::Parallel, body }
                if self.depth == 0 && self.interchanged(var, lo, hi, body)? => {}
            Stmt::For { var, lo, hi, schedule, body } => {
                if self.nested_sum_loop(var, lo, hi, *schedule, body)?
                    || self.lane_sum_loop(var, lo, hi, *schedule, body)?
                    || self.reduction_loop(var, lo, hi, *schedule, body)?
                {
                } else if let Some(plan) = (*schedule == Schedule::Seq)
                    .then(|| self.lane_plan(var, body, &[], constant_trip(lo, hi)))
                    .flatten()
                {
                    self.lane_loop(var, lo, hi, body, &[], plan)?
                } else {
                    self.for_loop(var, lo, hi, *schedule, body)?
                }
            }
            // An `if` with nothing to do (its checks all trusted) whose
            // condition cannot fault: no test, no branch (MTTKRP's
            // `if 0 < J { check bl1 < B_dim2 }`, once per nonzero).
            Stmt::If { cond, then, els }
                if !super::expr::may_fault(cond) && self.trusted_away(then) && self.trusted_away(els) =>
            {
                self.trusted_checks += trusted_count(then) + trusted_count(els);
            }
            Stmt::If { cond, then, els } => {
                let (c, _) = self.expr(cond)?;
                let (tb, eb, join) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
                self.b.ins().brif(c, tb, &[], eb, &[]);
                if let Some((_, ifs)) = &mut self.loop_var {
                    *ifs += 1;
                }
                self.b.switch_to_block(tb);
                self.block(then)?;
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(eb);
                self.block(els)?;
                self.b.ins().jump(join, &[]);
                if let Some((_, ifs)) = &mut self.loop_var {
                    *ifs -= 1;
                }
                self.b.switch_to_block(join);
            }
            Stmt::Alloc { buf, fields, len, space } => self.alloc(buf, fields, len, *space == Space::Workspace)?,
            Stmt::Sort { buf, lo, len } => {
                let (addr, _, _, _) = self.address(buf, lo, 0)?;
                let (n, _) = self.expr(len)?;
                let sort = self.helper(helpers::SORT)?;
                self.b.ins().call(sort, &[addr, n]);
            }
            // Work-group phases already run in order on one thread.
            Stmt::Barrier => {}
            Stmt::Check { cond, .. } if self.options.trust_ranges && self.implied_by_ranges(cond) => {
                self.trusted_checks += 1
            }
            Stmt::Check { cond, id } => {
                let (c, _) = self.expr(cond)?;
                let code =
                    status::check_failed(*id).ok_or_else(|| CodegenError::Unsupported(format!("check id {id}")))?;
                self.guard(c, code)?;
            }
        }
        Ok(())
    }

    /// `for var in lo .. hi`, rotated so that each iteration takes one
    /// branch: `if lo < hi { var = lo; do { body; var += 1 } while var < hi }`.
    /// The pre-header, reached only when the body runs at least once, is where
    /// loop-invariant loads are hoisted to (and where a body that converts
    /// `var` to a narrow integer checks that the range fits it). A sequential
    /// loop whose body reads `var` only in sums `a·var + …` counts `q =
    /// a·var + b` instead, from `a·lo + b` by `a` while `q != a·hi + b`
    /// (`induction`).
    pub(super) fn for_loop(
        &mut self,
        var: &Name,
        lo: &Expr,
        hi: &Expr,
        schedule: Schedule,
        body: &[Stmt],
    ) -> Result<(), CodegenError> {
        let induction = (schedule == Schedule::Seq).then(|| self.induction(var, lo, hi, body)).flatten();
        let (var, body) = match &induction {
            Some(ind) => (&ind.var, &ind.body[..]),
            None => (var, body),
        };
        let (lo_v, hi_v) = self.loop_bounds(lo, hi, schedule)?;
        let iv = self.b.declare_var(ct::I64);
        let (pre, head, exit) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        let runs = self.b.ins().icmp(IntCC::SignedLessThan, lo_v, hi_v);
        self.b.ins().brif(runs, pre, &[], exit, &[]);

        self.b.switch_to_block(pre);
        // The counter's first value, the value it stops at (tested for
        // equality when scaled: exact under wrapping, see `induction`), and
        // its step.
        let (first, end, step, test) = match &induction {
            Some(ind) => {
                let first = self.b.ins().imul_imm_s(lo_v, ind.scale);
                let end = self.b.ins().imul_imm_s(hi_v, ind.scale);
                let offset: Vec<(bool, &Expr)> = ind.offset.iter().map(|(plus, e)| (*plus, e)).collect();
                let (first, end) = match self.sum_terms(&offset)? {
                    Some(b) => (self.b.ins().iadd(first, b), self.b.ins().iadd(end, b)),
                    None => (first, end),
                };
                (first, end, ind.scale, IntCC::NotEqual)
            }
            None => (lo_v, hi_v, 1, IntCC::SignedLessThan),
        };
        self.b.def_var(iv, first);
        let rebased = if self.rebases(body) { Some(self.rebase(body)?) } else { None };
        let marks = self.enter_loop(var, lo_v, hi_v, body)?;
        // A row's start, carried from the previous row's end (see `carry`).
        // (Not for a scaled counter: the next row's start is not at `q + 1`.)
        let carry = if induction.is_none() { self.start_carry(var, lo_v, body)? } else { None };
        self.b.ins().jump(head, &[]);

        self.b.switch_to_block(head);
        // A loop that carries an array in registers, or a nested sum's
        // partials (`nested.rs`), tests at the top (see `carries_registers`).
        let partials = if self.options.fold_lane_loads { self.carried_partials() } else { None };
        let top_tested = self.options.fold_lane_loads && (partials.is_some() || self.carries_registers(body));
        if top_tested {
            // The arrays' registers become the head's first parameters, the
            // counter its last: Cranelift computes a jump's arguments in
            // their order, so the next counter then comes after the step's
            // last load at the current one, in the same register (one
            // `add`, not a `lea` early in the step and a `mov` at its end).
            if self.options.strength_reduction {
                self.touch_registers(body);
                for v in partials.unwrap_or_default() {
                    self.b.use_var(v);
                }
            }
            let i = self.b.use_var(iv);
            let go = self.b.ins().icmp(test, i, end);
            let first = self.b.create_block();
            self.b.ins().brif(go, first, &[], exit, &[]);
            self.b.switch_to_block(first);
        }
        self.scope.push((var.clone(), Bound::Var(iv, ScalarType::I64)));
        self.depth += 1;
        self.enter_carry(carry)?;
        self.block(body)?;
        self.end_carry(var);
        self.depth -= 1;
        self.scope.pop();
        self.leave_loop(marks);
        if let Some(r) = rebased {
            self.end_rebase(r);
        }
        let i = self.b.use_var(iv);
        let next = self.b.ins().iadd_imm_s(i, step);
        self.b.def_var(iv, next);
        if top_tested {
            self.b.ins().jump(head, &[]);
        } else {
            let more = self.b.ins().icmp(test, next, end);
            self.b.ins().brif(more, head, &[], exit, &[]);
        }
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// Whether `body` updates an array held in registers (SELL-8's row of
    /// sums, updated once per step). Such a loop is tested at the top, `head:
    /// if var < hi { body; var += 1; jump head }`, one jump more per
    /// iteration than the rotated form: a rotated loop's last block passes
    /// the updated vectors both back to the head and out to the exit, two
    /// uses, which Cranelift's lowering counts for everything they are
    /// computed from, so no load feeding them folds into its use (an x lane
    /// into `insertps`, the values into `mulps`). Tested at the top, the
    /// update's one use is the jump back, and the loads fold.
    fn carries_registers(&self, body: &[Stmt]) -> bool {
        body.iter().any(|s| match s {
            Stmt::Store { buf, .. } => self.buffer(buf).is_ok_and(|b| b.regs.is_some()),
            Stmt::For { body, .. } => self.carries_registers(body),
            Stmt::If { then, els, .. } => self.carries_registers(then) || self.carries_registers(els),
            _ => false,
        })
    }

    /// Reads the registers of every array in registers that `body` stores
    /// to (in the current block: a loop's head), so that they are that
    /// block's parameters before any variable read after them.
    fn touch_registers(&mut self, body: &[Stmt]) {
        for s in body {
            match s {
                Stmt::Store { buf, .. } => {
                    let chunks = self.buffer(buf).ok().and_then(|b| b.regs.as_ref().map(|r| r.variables().to_vec()));
                    for x in chunks.unwrap_or_default() {
                        self.b.use_var(x);
                    }
                }
                Stmt::For { body, .. } => self.touch_registers(body),
                Stmt::If { then, els, .. } => {
                    self.touch_registers(then);
                    self.touch_registers(els);
                }
                _ => {}
            }
        }
    }

    /// A loop's bounds; the top-level parallel loop's are clipped to the
    /// call's range.
    pub(super) fn loop_bounds(
        &mut self,
        lo: &Expr,
        hi: &Expr,
        schedule: Schedule,
    ) -> Result<(Value, Value), CodegenError> {
        let (mut lo_v, _) = self.expr(lo)?;
        let (mut hi_v, _) = self.expr(hi)?;
        if schedule == Schedule::Parallel && self.depth == 0 {
            lo_v = self.b.ins().smax(lo_v, self.range.0);
            hi_v = self.b.ins().smin(hi_v, self.range.1);
        }
        Ok((lo_v, hi_v))
    }

    /// In a loop's pre-header (the loop runs: `lo_v < hi_v`): the narrow
    /// range check, the invariant loads, and the loop's names for the
    /// invariance of addresses. Returns what [`leave_loop`](Self::leave_loop) restores.
    pub(super) fn enter_loop(
        &mut self,
        var: &Name,
        lo_v: Value,
        hi_v: Value,
        body: &[Stmt],
    ) -> Result<LoopMarks, CodegenError> {
        self.enter_loop_fitting(var, lo_v, hi_v, body, false)
    }

    /// [`enter_loop`](Self::enter_loop), without the narrow range check
    /// when `fits`: the caller knows that the range fits (a loop of fewer
    /// than `short_loop` iterations from a small constant).
    pub(super) fn enter_loop_fitting(
        &mut self,
        var: &Name,
        lo_v: Value,
        hi_v: Value,
        body: &[Stmt],
        fits: bool,
    ) -> Result<LoopMarks, CodegenError> {
        let narrow = heddle_ir::loops::narrow_casts(var, body);
        if !narrow.is_empty() && !fits {
            self.check_narrow_range(lo_v, hi_v, &narrow)?;
        }
        let marks = LoopMarks {
            hoisted: self.hoisted.len(),
            narrow: self.narrow_safe.len(),
            var: self.loop_var.replace((var.clone(), 0)),
            outer: std::mem::replace(&mut self.outer_loop, has_loop(body)),
        };
        if !narrow.is_empty() {
            self.narrow_safe.push(var.clone());
        }
        self.hoist_invariant_loads(var, body)?;
        let mut names = vec![var.clone()];
        super::hoist::declared(body, &mut names);
        super::hoist::assigned(body, &mut names);
        self.loop_names.push(names);
        Ok(marks)
    }

    /// Undoes [`enter_loop`](Self::enter_loop) after the body.
    pub(super) fn leave_loop(&mut self, marks: LoopMarks) {
        self.hoisted.truncate(marks.hoisted);
        self.narrow_safe.truncate(marks.narrow);
        self.loop_names.pop();
        self.loop_var = marks.var;
        self.outer_loop = marks.outer;
    }

    /// A temporary: a stack slot when its length is a constant and small,
    /// otherwise zeroed heap memory freed when its block ends. A workspace
    /// (allocated before the parallel loop, so once per call, i.e. per
    /// thread's chunk) must start zeroed: always the heap.
    fn alloc(&mut self, buf: &Name, fields: &[ScalarType], len: &Expr, zeroed: bool) -> Result<(), CodegenError> {
        let layout = record_layout(fields);
        if let Some((t, n)) = super::regs::candidate(fields, len)
            && self.options.register_arrays
            && !self.in_memory.contains(buf)
        {
            let regs = Some(self.new_registers(t, n));
            let base = self.register_sentinel(buf);
            self.bufs.push((buf.clone(), Buf { base, fields: fields.to_vec(), layout, readonly: false, regs }));
            return Ok(());
        }
        let size = layout.size.max(1) as u64;
        let align = layout.align.max(1);
        let constant = match len {
            Expr::Int(n, _) => u64::try_from(*n).ok().and_then(|n| n.checked_mul(size)),
            _ => None,
        };
        let base = match constant {
            Some(bytes) if !zeroed && self.stack_bytes + bytes <= STACK_LIMIT => {
                self.stack_bytes += bytes;
                let shift = align.trailing_zeros() as u8;
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    bytes as u32,
                    shift,
                ));
                self.b.ins().stack_addr(self.ptr_ty, slot, 0)
            }
            _ => {
                let (n, _) = self.expr(len)?;
                let alloc = self.helper(helpers::ALLOC)?;
                let size_v = self.b.ins().iconst(ct::I64, size as i64);
                let align_v = self.b.ins().iconst(ct::I64, align as i64);
                let call = self.b.ins().call(alloc, &[n, size_v, align_v]);
                let ptr = self.b.inst_results(call)[0];
                let ok = self.b.ins().icmp_imm_s(IntCC::NotEqual, ptr, 0);
                self.guard(ok, status::OUT_OF_MEMORY)?;
                self.heap.push(HeapAlloc { ptr, len: n, size: size as i64, align: align as i64 });
                ptr
            }
        };
        self.bufs.push((buf.clone(), Buf { base, fields: fields.to_vec(), layout, readonly: false, regs: None }));
        Ok(())
    }
}

/// The trip count of a loop from `lo` to `hi` when both are constants.
fn constant_trip(lo: &Expr, hi: &Expr) -> Option<i64> {
    match (lo, hi) {
        (Expr::Int(lo, _), Expr::Int(hi, _)) => hi.checked_sub(*lo),
        _ => None,
    }
}

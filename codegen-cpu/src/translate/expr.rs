//! Expressions and buffer addresses.

use super::Translator;
use crate::error::CodegenError;
use crate::types;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value, condcodes::IntCC, types as ct};
use heddle_ir::loops::{BinOp, Expr};
use heddle_ir::{Name, ScalarType};

/// Whether evaluating `e` could fault (an out-of-bounds load, a division by
/// zero) when C would not evaluate it: such operands of `&&`, `||` and
/// `select` get their own branch instead of being computed eagerly.
pub(super) fn may_fault(e: &Expr) -> bool {
    match e {
        Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => false,
        Expr::Load { .. } | Expr::Bin(BinOp::Div | BinOp::Rem, ..) => true,
        Expr::Bin(_, a, b) => may_fault(a) || may_fault(b),
        Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => may_fault(a),
        Expr::Select(c, a, b) => may_fault(c) || may_fault(a) || may_fault(b),
    }
}

/// `v` as an immediate of the integer type `t` (Cranelift wants narrow
/// immediates zero-extended).
pub(super) fn imm(v: i64, t: ScalarType) -> i64 {
    match t.size_bytes() {
        1 => i64::from(v as u8),
        2 => i64::from(v as u16),
        4 => i64::from(v as u32),
        _ => v,
    }
}

impl Translator<'_, '_> {
    /// The value of `e` and its type.
    pub(super) fn expr(&mut self, e: &Expr) -> Result<(Value, ScalarType), CodegenError> {
        Ok(match e {
            Expr::Int(v, t) => (self.b.ins().iconst(types::clif_type(*t), imm(*v, *t)), *t),
            Expr::Float(v, ScalarType::F32) => (self.b.ins().f32const(*v as f32), ScalarType::F32),
            // Rounded once to the half type; exact in the f32 that holds it.
            Expr::Float(v, ScalarType::F16) => {
                (self.b.ins().f32const(heddle_ir::rounding::f16_of_f64(*v).to_f32()), ScalarType::F16)
            }
            Expr::Float(v, ScalarType::BF16) => {
                (self.b.ins().f32const(heddle_ir::rounding::bf16_of_f64(*v).to_f32()), ScalarType::BF16)
            }
            Expr::Float(v, _) => (self.b.ins().f64const(*v), ScalarType::F64),
            Expr::Bool(v) => (self.b.ins().iconst(ct::I8, i64::from(*v)), ScalarType::Bool),
            Expr::Var(n) => {
                let pos = self.position(n)?;
                self.value_at(pos)?
            }
            Expr::Load { buf, index, field } => {
                if let Some((_, v, t)) = self.hoisted.iter().find(|(h, ..)| h == e) {
                    return Ok((*v, *t));
                }
                if !self.carried.is_empty()
                    && let Some(r) = self.carried_value(buf, index, *field)
                {
                    return Ok(r);
                }
                if let Some(r) = self.register_load(buf, index, *field)? {
                    return Ok(r);
                }
                let (addr, offset, ty, mut flags) = self.address(buf, index, *field)?;
                if flags.readonly() && self.movable(index) {
                    flags = flags.with_can_move();
                }
                if ty.is_int() && ty != ScalarType::Bool && ty.size_bytes() < 8 {
                    // Loaded straight to 64 bits by the type's signedness (one
                    // `movl`/`movslq`/`movzx` on x64), remembered as the
                    // narrow value's widening: a coordinate converted to an
                    // index costs no separate extension.
                    let wide = match (ty.size_bytes(), ty.is_signed()) {
                        (1, false) => self.b.ins().uload8(ct::I64, flags, addr, offset),
                        (1, true) => self.b.ins().sload8(ct::I64, flags, addr, offset),
                        (2, false) => self.b.ins().uload16(ct::I64, flags, addr, offset),
                        (2, true) => self.b.ins().sload16(ct::I64, flags, addr, offset),
                        (_, false) => self.b.ins().uload32(flags, addr, offset),
                        (_, true) => self.b.ins().sload32(flags, addr, offset),
                    };
                    let narrow = self.b.ins().ireduce(types::clif_type(ty), wide);
                    self.widened.insert((narrow, ty), wide);
                    return Ok((narrow, ty));
                }
                let v = self.b.ins().load(types::memory_type(ty), flags, addr, offset);
                if ty.is_half() {
                    (self.half_from_bits(v, ty)?, ty)
                } else if ty == ScalarType::Bool {
                    // Any non-zero byte in a buffer is true; the code relies on 0 / 1.
                    (self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0), ty)
                } else {
                    (v, ty)
                }
            }
            Expr::Bin(op, a, b) => self.binary(*op, a, b)?,
            Expr::Neg(a) => {
                let (v, t) = self.expr(a)?;
                let r = match t {
                    ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::F64 => self.b.ins().fneg(v),
                    // `-b` of a boolean is true exactly when `b` is (C's truth of -1).
                    ScalarType::Bool => v,
                    _ => self.b.ins().ineg(v),
                };
                (r, t)
            }
            Expr::Not(a) => {
                let (v, t) = self.expr(a)?;
                (self.is_zero(v, t), ScalarType::Bool)
            }
            Expr::Select(c, a, b) => self.select(c, a, b)?,
            Expr::Cast(to, a) => {
                let (v, from) = self.expr(a)?;
                if let Expr::Var(n) = &**a
                    && from == ScalarType::I64
                    && self.narrow_safe.contains(n)
                    && to.is_int()
                    && to.size_bytes() < 8
                {
                    return Ok((self.narrow_index(v, *to), *to));
                }
                if from.is_int()
                    && from.size_bytes() < 8
                    && *to == ScalarType::I64
                    && let Some(wide) = self.widened_from(v, from)
                {
                    return Ok((wide, *to));
                }
                (self.cast(v, from, *to)?, *to)
            }
        })
    }

    /// `c ? a : b`: a branch-free `select` unless an arm could fault.
    fn select(&mut self, c: &Expr, a: &Expr, b: &Expr) -> Result<(Value, ScalarType), CodegenError> {
        let (cv, _) = self.expr(c)?;
        if !may_fault(a) && !may_fault(b) {
            let (av, t) = self.expr(a)?;
            let (bv, _) = self.expr(b)?;
            if let Some(bits) = match t {
                ScalarType::F32 => Some(ct::I32),
                ScalarType::F64 => Some(ct::I64),
                _ => None,
            } {
                // x64 lowers a float `select` to a conditional jump over a move:
                // a branch on data (a merge's "which list"), mispredicted about
                // every other time. The bits are chosen with a `cmov` instead.
                let flags = MemFlagsData::new();
                let (ai, bi) = (self.b.ins().bitcast(bits, flags, av), self.b.ins().bitcast(bits, flags, bv));
                let r = self.b.ins().select(cv, ai, bi);
                return Ok((self.b.ins().bitcast(types::clif_type(t), flags, r), t));
            }
            return Ok((self.b.ins().select(cv, av, bv), t));
        }
        // Values first computed inside an arm would not dominate later uses.
        self.force_lazies(None)?;
        let (ta, fa, join) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().brif(cv, ta, &[], fa, &[]);
        self.b.switch_to_block(ta);
        let (av, t) = self.expr(a)?;
        let r = self.b.append_block_param(join, types::clif_type(t));
        self.b.ins().jump(join, &[av.into()]);
        self.b.switch_to_block(fa);
        let (bv, _) = self.expr(b)?;
        self.b.ins().jump(join, &[bv.into()]);
        self.b.switch_to_block(join);
        Ok((r, t))
    }

    /// `a && b` / `a || b`, evaluating `b` only when needed if it could fault.
    pub(super) fn logical(&mut self, and: bool, a: &Expr, b: &Expr) -> Result<(Value, ScalarType), CodegenError> {
        if and && let Some((x, bound)) = self.range_check(a, b) {
            // `0 <= x && x < n` with `n` a natural (never negative) is one
            // unsigned comparison: a negative `x` is a huge unsigned number.
            let (xv, _) = self.expr(x)?;
            let (nv, _) = self.expr(bound)?;
            return Ok((self.b.ins().icmp(IntCC::UnsignedLessThan, xv, nv), ScalarType::Bool));
        }
        let (av, _) = self.expr(a)?;
        if !may_fault(b) {
            let (bv, _) = self.expr(b)?;
            let r = if and { self.b.ins().band(av, bv) } else { self.b.ins().bor(av, bv) };
            return Ok((r, ScalarType::Bool));
        }
        // Values first computed on the right would not dominate later uses.
        self.force_lazies(None)?;
        let (rhs, join) = (self.b.create_block(), self.b.create_block());
        let r = self.b.append_block_param(join, ct::I8);
        if and {
            self.b.ins().brif(av, rhs, &[], join, &[av.into()]);
        } else {
            self.b.ins().brif(av, join, &[av.into()], rhs, &[]);
        }
        self.b.switch_to_block(rhs);
        let (bv, _) = self.expr(b)?;
        self.b.ins().jump(join, &[bv.into()]);
        self.b.switch_to_block(join);
        Ok((r, ScalarType::Bool))
    }

    /// `(x, n)` when `a && b` is the bounds check `x >= 0 && x < n` of an
    /// `i64` index against a natural argument `n`.
    fn range_check<'e>(&self, a: &'e Expr, b: &'e Expr) -> Option<(&'e Expr, &'e Expr)> {
        let (Expr::Bin(BinOp::Ge, x, zero), Expr::Bin(BinOp::Lt, x2, n)) = (a, b) else { return None };
        let is_nat = |e: &Expr| match e {
            Expr::Var(v) => self.prog.arg(v).is_some_and(|a| matches!(a.kind, heddle_ir::loops::ArgKind::Nat)),
            _ => false,
        };
        let simple = matches!(**x, Expr::Var(_)) && !may_fault(x);
        (x == x2 && **zero == Expr::Int(0, ScalarType::I64) && simple && is_nat(n)).then_some((&**x, &**n))
    }

    /// The address of `buf[index].field` as `(address, offset)`, the
    /// field's type and the buffer's memory flags.
    ///
    /// Inside a loop the index is split into the terms that change in the
    /// innermost loop, the terms that do not, and a constant: the address is
    /// `(base + invariant * size) + variant * size` with the constant in the
    /// offset. Cranelift hoists the invariant part out of the loop (it is
    /// pure), and `x + k * size + c` is one x86 addressing mode, so an access
    /// `values[k + start]` costs no arithmetic per iteration.
    pub(super) fn address(
        &mut self,
        buf: &Name,
        index: &Expr,
        field: u32,
    ) -> Result<(Value, i32, ScalarType, MemFlagsData), CodegenError> {
        let b = self.buffer(buf)?;
        let ty = *b
            .fields
            .get(field as usize)
            .ok_or_else(|| CodegenError::Unsupported(format!("field {field} of `{buf}`")))?;
        let field_offset = b.layout.offsets[field as usize] as i64;
        let (base, size, flags) = (b.base, b.layout.size as i64, types::buffer(b.readonly));
        let mut terms = Vec::new();
        let mut constant = 0i64;
        flatten_sum(index, true, &mut terms, &mut constant);
        let inner = self.loop_names.last().cloned().unwrap_or_default();
        let (variant, invariant): (Vec<_>, Vec<_>) =
            terms.into_iter().partition(|(_, e)| !self.invariant_in(e, &inner));
        let offset =
            constant.checked_mul(size).and_then(|c| c.checked_add(field_offset)).and_then(|o| i32::try_from(o).ok());
        let Some(offset) = offset.filter(|_| self.depth > 0) else {
            // Outside loops (or with a huge constant) there is nothing to gain.
            let (i, _) = self.expr(index)?;
            let scaled = self.scaled(i, size);
            let addr = self.b.ins().iadd(base, scaled);
            return Ok((addr, field_offset as i32, ty, flags));
        };
        let mut addr = base;
        let mut inv = self.sum_terms(&invariant)?;
        let mut var = self.sum_terms(&variant)?;
        // `(q - o) + o` is `q`: a reduction loop that runs over positions
        // `q` (`k = q - o`, see `reduce::rebased_offset`) reads
        // `values[k + o]` at `q`, without a base rebased per row.
        if let (Some(o), Some(v)) = (inv, var) {
            let (rest, c) = self.constant_addend(v);
            if let Some(q) = self.minus(rest, o) {
                inv = None;
                var = Some(if c == 0 { q } else { self.b.ins().iadd_imm_s(q, c) });
            } else if let (Some((q, c1)), Some((c2, z))) = (self.difference(rest), self.difference(o))
                && c1 == c2
            {
                // `(q - c) + (c - z)` is `q - z`: a loop that counts `q = k + c`
                // for a CSR row's `o = pos[i] - pos[0]` (`c = pos[i]`) reads
                // `buf[k + o]` at `(buf - z · size) + q · size`; the first
                // sum does not change from row to row, and Cranelift computes
                // it once, before the row loop.
                addr = self.minus_scaled(addr, z, size);
                inv = None;
                var = Some(if c == 0 { q } else { self.b.ins().iadd_imm_s(q, c) });
            }
        }
        if let Some(inv) = inv {
            let scaled = self.scaled(inv, size);
            addr = self.b.ins().iadd(addr, scaled);
        }
        let mut offset = offset;
        if let Some(var) = var {
            // `(k + c) * size` as `k * size` and `c * size` in the offset: an
            // unrolled copy's `k + c` (a value, not an expression here)
            // then needs no add of its own, and the copies share `k * size`.
            let (rest, c) = self.constant_addend(var);
            let folded =
                c.checked_mul(size).and_then(|cs| i32::try_from(cs).ok()).and_then(|cs| offset.checked_add(cs));
            let var = match folded {
                Some(o) => {
                    offset = o;
                    rest
                }
                None => var,
            };
            let scaled = self.scaled(var, size);
            addr = self.b.ins().iadd(addr, scaled);
        }
        Ok((addr, offset, ty, flags))
    }

    /// `base - z · size`, computed from `base` and `z` alone when `size` is
    /// a power of two (`z` doubled: no constant operand), else with a
    /// multiply by `-size`.
    ///
    /// Why no constant: Cranelift's elaborator (0.135) places an
    /// instruction in the outermost loop pre-header its operands allow, but
    /// a constant (no operands) only one loop out from its first use, and
    /// its users then cannot leave that loop. A CSR row's rebased base
    /// `buf - pos[0] · size` first used in the long rows' partials loop
    /// was thus computed once per row, in that loop's pre-header, and two
    /// more live values spilled the result's base around the row loop.
    fn minus_scaled(&mut self, base: Value, z: Value, size: i64) -> Value {
        if size > 0 && size.count_ones() == 1 && size <= 64 {
            let mut zs = z;
            for _ in 0..size.trailing_zeros() {
                zs = self.b.ins().iadd(zs, zs);
            }
            self.b.ins().isub(base, zs)
        } else {
            let zs = self.b.ins().imul_imm_s(z, size.wrapping_neg());
            self.b.ins().iadd(base, zs)
        }
    }

    /// Whether a load from a read-only buffer at `index` is valid wherever
    /// its operands are available (Cranelift's `can_move`), so that it can be
    /// placed next to its use and folded into it: inside a loop and under no
    /// `if` of that loop, with an index whose terms that change in the loop
    /// are arithmetic of the loop variable alone (`values[k + start]`; not
    /// `xs[e]`, whose validity rests on a check of `e`). Such an index is
    /// in bounds for every iteration the loop runs, and the load depends on
    /// the loop variable, so it can neither leave the loop nor move before
    /// the loop starts. Not in a loop whose body holds another: Cranelift
    /// places a `can_move` load next to its use, which may be the inner loop
    /// (a row's start, read once per row, read again at every entry).
    fn movable(&self, index: &Expr) -> bool {
        let Some((var, 0)) = &self.loop_var else { return false };
        if self.outer_loop {
            return false;
        }
        let inner = self.loop_names.last().cloned().unwrap_or_default();
        let mut terms = Vec::new();
        let mut constant = 0;
        flatten_sum(index, true, &mut terms, &mut constant);
        terms.iter().all(|(_, t)| self.invariant_in(t, &inner) || self.of_loop_var(t, var, 0))
    }

    /// Whether `e` is arithmetic (`+ - *`, conversions) of `var` and
    /// constants, looking through `let`s.
    fn of_loop_var(&self, e: &Expr, var: &Name, depth: usize) -> bool {
        if depth > 16 {
            return false;
        }
        match e {
            Expr::Int(..) => true,
            Expr::Var(n) if n == var => true,
            Expr::Var(n) => self
                .let_values
                .iter()
                .rev()
                .find(|(m, _)| m == n)
                .is_some_and(|(_, v)| self.of_loop_var(v, var, depth + 1)),
            Expr::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
                self.of_loop_var(a, var, depth + 1) && self.of_loop_var(b, var, depth + 1)
            }
            Expr::Cast(t, a) => t.is_int() && self.of_loop_var(a, var, depth + 1),
            _ => false,
        }
    }

    /// `q` when Cranelift's instruction defining `v` is `isub q, o`.
    pub(super) fn minus(&self, v: Value, o: Value) -> Option<Value> {
        use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
        let dfg = &self.b.func.dfg;
        let ValueDef::Result(i, 0) = dfg.value_def(v) else { return None };
        match dfg.insts[i] {
            InstructionData::Binary { opcode: Opcode::Isub, args: [q, x] } if x == o => Some(q),
            _ => None,
        }
    }

    /// `v` as `x + c` with a constant `c` when Cranelift's instructions say
    /// so (`iadd x, iconst c`), else `(v, 0)`.
    pub(super) fn constant_addend(&self, v: Value) -> (Value, i64) {
        use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
        let dfg = &self.b.func.dfg;
        let constant = |x: Value| match dfg.value_def(x) {
            ValueDef::Result(i, 0) => match dfg.insts[i] {
                InstructionData::UnaryImm { opcode: Opcode::Iconst, imm } => Some(imm.bits()),
                _ => None,
            },
            _ => None,
        };
        if dfg.value_type(v) != cranelift_codegen::ir::types::I64 {
            return (v, 0);
        }
        if let ValueDef::Result(i, 0) = dfg.value_def(v)
            && let InstructionData::Binary { opcode: Opcode::Iadd, args: [x, y] } = dfg.insts[i]
        {
            if let Some(c) = constant(y) {
                return (x, c);
            }
            if let Some(c) = constant(x) {
                return (y, c);
            }
        }
        (v, 0)
    }

    /// `v * size` (an `i64` index scaled to bytes). Size 2 is written as the
    /// shift `v << 1`: Cranelift's mid-end turns `v * 2` into `v + v`, which
    /// x64 lowering does not fold into an address's scale as it folds the
    /// shift (a 16-bit element, SELL's `u16` columns: `(base, q, 2)` rather
    /// than a `lea` per step). `v * 4` and `v * 8` the mid-end turns into
    /// shifts itself.
    pub(super) fn scaled(&mut self, v: Value, size: i64) -> Value {
        match size {
            1 => v,
            2 => self.b.ins().ishl_imm_u(v, 1),
            _ => self.b.ins().imul_imm_s(v, size),
        }
    }

    /// The sum of signed `i64` terms, `None` when there are none.
    pub(super) fn sum_terms(&mut self, terms: &[(bool, &Expr)]) -> Result<Option<Value>, CodegenError> {
        let mut acc: Option<Value> = None;
        for (plus, e) in terms {
            let (v, _) = self.expr(e)?;
            acc = Some(match (acc, plus) {
                (None, true) => v,
                (None, false) => self.b.ins().ineg(v),
                (Some(a), true) => self.b.ins().iadd(a, v),
                (Some(a), false) => self.b.ins().isub(a, v),
            });
        }
        Ok(acc)
    }

    /// Whether `e` has the same value in every iteration of the innermost
    /// loop, whose body declares or assigns `inner`: it reads none of those
    /// names and loads only from read-only buffers.
    pub(super) fn invariant_in(&self, e: &Expr, inner: &[Name]) -> bool {
        match e {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) => true,
            Expr::Var(n) => !inner.contains(n),
            Expr::Load { buf, index, .. } => {
                !inner.contains(buf) && self.buffer(buf).is_ok_and(|b| b.readonly) && self.invariant_in(index, inner)
            }
            Expr::Bin(BinOp::Div | BinOp::Rem, ..) => false,
            Expr::Bin(_, a, b) => self.invariant_in(a, inner) && self.invariant_in(b, inner),
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => self.invariant_in(a, inner),
            Expr::Select(c, a, b) => {
                self.invariant_in(c, inner) && self.invariant_in(a, inner) && self.invariant_in(b, inner)
            }
        }
    }
}

/// Splits an `i64` index into signed terms and a constant: `a + b - (c - 2)`
/// is `+a`, `+b`, `-c` and `2`. Wrapping arithmetic makes any regrouping exact.
pub(super) fn flatten_sum<'e>(e: &'e Expr, plus: bool, terms: &mut Vec<(bool, &'e Expr)>, constant: &mut i64) {
    match e {
        Expr::Bin(BinOp::Add, a, b) => {
            flatten_sum(a, plus, terms, constant);
            flatten_sum(b, plus, terms, constant);
        }
        Expr::Bin(BinOp::Sub, a, b) => {
            flatten_sum(a, plus, terms, constant);
            flatten_sum(b, !plus, terms, constant);
        }
        Expr::Int(v, ScalarType::I64) => {
            *constant = if plus { constant.wrapping_add(*v) } else { constant.wrapping_sub(*v) }
        }
        other => terms.push((plus, other)),
    }
}

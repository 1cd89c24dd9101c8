//! Operators and conversions with the interpreter's semantics (see the crate docs).

use super::Translator;
use crate::error::CodegenError;
use crate::{helpers, status, types};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value, types as ct};
use heddle_ir::ScalarType;
use heddle_ir::loops::{BinOp, Expr};

pub(super) fn int_cc(op: BinOp, signed: bool) -> IntCC {
    match (op, signed) {
        (BinOp::Eq, _) => IntCC::Equal,
        (BinOp::Ne, _) => IntCC::NotEqual,
        (BinOp::Lt, true) => IntCC::SignedLessThan,
        (BinOp::Le, true) => IntCC::SignedLessThanOrEqual,
        (BinOp::Gt, true) => IntCC::SignedGreaterThan,
        (BinOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
        (BinOp::Lt, false) => IntCC::UnsignedLessThan,
        (BinOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
        (BinOp::Gt, false) => IntCC::UnsignedGreaterThan,
        _ => IntCC::UnsignedGreaterThanOrEqual,
    }
}

pub(super) fn float_cc(op: BinOp) -> FloatCC {
    match op {
        BinOp::Eq => FloatCC::Equal,
        BinOp::Ne => FloatCC::NotEqual,
        BinOp::Lt => FloatCC::LessThan,
        BinOp::Le => FloatCC::LessThanOrEqual,
        BinOp::Gt => FloatCC::GreaterThan,
        _ => FloatCC::GreaterThanOrEqual,
    }
}

impl Translator<'_, '_> {
    /// `a op b`.
    pub(super) fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> Result<(Value, ScalarType), CodegenError> {
        if matches!(op, BinOp::And | BinOp::Or) {
            return self.logical(op == BinOp::And, a, b);
        }
        let (x, t) = self.expr(a)?;
        let (y, _) = self.expr(b)?;
        if op.is_comparison() {
            let r = if t.is_float() {
                self.b.ins().fcmp(float_cc(op), x, y)
            } else {
                self.b.ins().icmp(int_cc(op, t.is_signed()), x, y)
            };
            return Ok((r, ScalarType::Bool));
        }
        let r = if t.is_float() {
            self.float_op(op, x, y, t)?
        } else if t.is_int() {
            self.int_op(op, x, y, t.is_signed())?
        } else {
            return Err(CodegenError::Unsupported(format!("`{}` on booleans", op.symbol())));
        };
        Ok((r, t))
    }

    pub(super) fn int_op(&mut self, op: BinOp, x: Value, y: Value, signed: bool) -> Result<Value, CodegenError> {
        Ok(match op {
            BinOp::Add => self.b.ins().iadd(x, y),
            BinOp::Sub => self.b.ins().isub(x, y),
            BinOp::Mul => self.b.ins().imul(x, y),
            BinOp::Min if signed => self.b.ins().smin(x, y),
            BinOp::Min => self.b.ins().umin(x, y),
            BinOp::Max if signed => self.b.ins().smax(x, y),
            BinOp::Max => self.b.ins().umax(x, y),
            BinOp::Div | BinOp::Rem => {
                let nonzero = self.b.ins().icmp_imm_s(IntCC::NotEqual, y, 0);
                self.guard(nonzero, status::DIVISION_BY_ZERO)?;
                if !signed {
                    return Ok(if op == BinOp::Div { self.b.ins().udiv(x, y) } else { self.b.ins().urem(x, y) });
                }
                // `MIN / -1` overflows and traps in hardware; C leaves it
                // undefined, the interpreter wraps: x / -1 = -x, x % -1 = 0.
                let ty = self.b.func.dfg.value_type(y);
                let minus_one = self.b.ins().icmp_imm_s(IntCC::Equal, y, -1);
                let one = self.b.ins().iconst(ty, 1);
                let safe = self.b.ins().select(minus_one, one, y);
                if op == BinOp::Div {
                    let q = self.b.ins().sdiv(x, safe);
                    let neg = self.b.ins().ineg(x);
                    self.b.ins().select(minus_one, neg, q)
                } else {
                    let r = self.b.ins().srem(x, safe);
                    let zero = self.b.ins().iconst(ty, 0);
                    self.b.ins().select(minus_one, zero, r)
                }
            }
            _ => return Err(CodegenError::Unsupported(format!("`{}` on integers", op.symbol()))),
        })
    }

    pub(super) fn float_op(&mut self, op: BinOp, x: Value, y: Value, t: ScalarType) -> Result<Value, CodegenError> {
        Ok(match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div if t.is_half() => {
                let r = self.float_op(op, x, y, ScalarType::F32)?;
                self.round_half(r, t)?
            }
            BinOp::Add => self.b.ins().fadd(x, y),
            BinOp::Sub => self.b.ins().fsub(x, y),
            BinOp::Mul => self.b.ins().fmul(x, y),
            BinOp::Div => self.b.ins().fdiv(x, y),
            BinOp::Rem => {
                let fmod = self.helper(helpers::FMOD)?;
                // The remainder is exact, so an f32 (or half) one computed in f64 is the same.
                let single = types::clif_type(t) == ct::F32;
                let (x64, y64) = if single {
                    (self.b.ins().fpromote(ct::F64, x), self.b.ins().fpromote(ct::F64, y))
                } else {
                    (x, y)
                };
                let call = self.b.ins().call(fmod, &[x64, y64]);
                let r = self.b.inst_results(call)[0];
                if single { self.b.ins().fdemote(ct::F32, r) } else { r }
            }
            BinOp::Min | BinOp::Max => {
                // Rust's `min`/`max`: a NaN operand yields the other one.
                let m = if op == BinOp::Min { self.b.ins().fmin(x, y) } else { self.b.ins().fmax(x, y) };
                let x_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                let y_nan = self.b.ins().fcmp(FloatCC::Unordered, y, y);
                let m = self.b.ins().select(y_nan, x, m);
                self.b.ins().select(x_nan, y, m)
            }
            _ => return Err(CodegenError::Unsupported(format!("`{}` on floats", op.symbol()))),
        })
    }

    /// `v == 0` as a truth value.
    pub(super) fn is_zero(&mut self, v: Value, t: ScalarType) -> Value {
        match t {
            ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 => {
                let z = self.b.ins().f32const(0.0);
                self.b.ins().fcmp(FloatCC::Equal, v, z)
            }
            ScalarType::F64 => {
                let z = self.b.ins().f64const(0.0);
                self.b.ins().fcmp(FloatCC::Equal, v, z)
            }
            _ => self.b.ins().icmp_imm_s(IntCC::Equal, v, 0),
        }
    }

    /// `(to) v`: integers extend by the source's signedness and truncate;
    /// anything to `bool` is `!= 0`; floats to integers saturate (NaN is 0).
    pub(super) fn cast(&mut self, v: Value, from: ScalarType, to: ScalarType) -> Result<Value, CodegenError> {
        let (ft, tt) = (types::clif_type(from), types::clif_type(to));
        if from == to {
            return Ok(v);
        }
        if to == ScalarType::Bool {
            let z = self.is_zero(v, from);
            return Ok(self.b.ins().bxor_imm_s(z, 1));
        }
        if to.is_half() {
            return self.half_of(v, from, to);
        }
        if from.is_half() {
            // Held in an f32, exactly.
            return self.cast(v, ScalarType::F32, to);
        }
        Ok(match (from.is_float(), to.is_float()) {
            (true, true) if tt.bits() > ft.bits() => self.b.ins().fpromote(tt, v),
            (true, true) => self.b.ins().fdemote(tt, v),
            (false, true) => {
                // Widen first (narrow conversions are not on every ISA); a
                // zero-extended value is non-negative, so only `u64` needs
                // the unsigned conversion. `bool` is 0 / 1.
                let wide = match (ft.bits() < 64, from.is_signed()) {
                    (true, true) => self.b.ins().sextend(ct::I64, v),
                    (true, false) => self.b.ins().uextend(ct::I64, v),
                    (false, _) => v,
                };
                if from == ScalarType::U64 {
                    self.b.ins().fcvt_from_uint(tt, wide)
                } else {
                    self.b.ins().fcvt_from_sint(tt, wide)
                }
            }
            (true, false) => self.float_to_int(v, to),
            (false, false) => {
                if tt.bits() < ft.bits() {
                    self.b.ins().ireduce(tt, v)
                } else if tt.bits() == ft.bits() {
                    v
                } else if from.is_signed() {
                    self.b.ins().sextend(tt, v)
                } else {
                    self.b.ins().uextend(tt, v)
                }
            }
        })
    }

    /// Rust's saturating `f as int`: convert to 64 bits, clamp to the target's
    /// range, truncate.
    fn float_to_int(&mut self, v: Value, to: ScalarType) -> Value {
        let tt = types::clif_type(to);
        if to == ScalarType::U64 {
            return self.b.ins().fcvt_to_uint_sat(ct::I64, v);
        }
        if to == ScalarType::I64 {
            return self.b.ins().fcvt_to_sint_sat(ct::I64, v);
        }
        let bits = tt.bits();
        // The signed conversion for every narrower type: its range covers
        // u32's, and the clamp below is signed (an unsigned saturation to
        // u64::MAX would read as -1 and clamp to 0).
        let wide = self.b.ins().fcvt_to_sint_sat(ct::I64, v);
        let (lo, hi) =
            if to.is_signed() { (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1) } else { (0, (1i64 << bits) - 1) };
        let lo = self.b.ins().iconst(ct::I64, lo);
        let hi = self.b.ins().iconst(ct::I64, hi);
        let clamped = self.b.ins().smax(wide, lo);
        let clamped = self.b.ins().smin(clamped, hi);
        self.b.ins().ireduce(tt, clamped)
    }
}

//! Expressions and buffer addresses.

use super::{Bound, Translator};
use crate::error::CodegenError;
use crate::types;
use cranelift_codegen::ir::{condcodes::IntCC, types as ct, InstBuilder, MemFlagsData, Value};
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
            Expr::Float(v, _) => (self.b.ins().f64const(*v), ScalarType::F64),
            Expr::Bool(v) => (self.b.ins().iconst(ct::I8, i64::from(*v)), ScalarType::Bool),
            Expr::Var(n) => match self.lookup(n)? {
                Bound::Val(v, t) => (v, t),
                Bound::Var(x, t) => (self.b.use_var(x), t),
            },
            Expr::Load { buf, index, field } => {
                if let Some((_, v, t)) = self.hoisted.iter().find(|(h, ..)| h == e) {
                    return Ok((*v, *t));
                }
                let (addr, offset, ty, flags) = self.address(buf, index, *field)?;
                let v = self.b.ins().load(types::clif_type(ty), flags, addr, offset);
                if ty == ScalarType::Bool {
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
                    ScalarType::F32 | ScalarType::F64 => self.b.ins().fneg(v),
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
                (self.cast(v, from, *to), *to)
            }
        })
    }

    /// `c ? a : b`: a branch-free `select` unless an arm could fault.
    fn select(&mut self, c: &Expr, a: &Expr, b: &Expr) -> Result<(Value, ScalarType), CodegenError> {
        let (cv, _) = self.expr(c)?;
        if !may_fault(a) && !may_fault(b) {
            let (av, t) = self.expr(a)?;
            let (bv, _) = self.expr(b)?;
            return Ok((self.b.ins().select(cv, av, bv), t));
        }
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

    /// The address of `buf[index].field` as `(base + index * size, offset)`,
    /// the field's type and the buffer's memory flags.
    pub(super) fn address(&mut self, buf: &Name, index: &Expr, field: u32) -> Result<(Value, i32, ScalarType, MemFlagsData), CodegenError> {
        let (i, _) = self.expr(index)?;
        let b = self.buffer(buf)?;
        let ty = *b
            .fields
            .get(field as usize)
            .ok_or_else(|| CodegenError::Unsupported(format!("field {field} of `{buf}`")))?;
        let offset = b.layout.offsets[field as usize] as i32;
        let (base, size, flags) = (b.base, b.layout.size as i64, types::buffer(b.readonly));
        let scaled = if size == 1 { i } else { self.b.ins().imul_imm_s(i, size) };
        let addr = self.b.ins().iadd(base, scaled);
        Ok((addr, offset, ty, flags))
    }
}

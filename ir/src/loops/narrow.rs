//! Loop variables converted to narrow integers.
//!
//! A `generate` index is an `int` (`(int) k`), while loop variables are
//! `i64`: beyond 2^31 iterations the conversion would wrap, where the
//! reference interpreter does not. Each backend therefore checks, once before
//! a loop whose body converts its variable to a narrower integer, that the
//! loop's whole range fits ([`narrow_casts`], [`fitting_range`]); a run that
//! fails it stops with [`INDEX_OVERFLOW_CHECK`].

use super::{Expr, Stmt};
use crate::{Name, ScalarType};

/// The check id a backend reports when a loop's range does not fit the
/// narrow integer its variable is converted to (not an index into
/// `LoopProgram::checks`; reported 1-based, it still fits an OpenCL `int`).
pub const INDEX_OVERFLOW_CHECK: u32 = 0x7fff_fff0;

/// What a failed [`INDEX_OVERFLOW_CHECK`] means.
pub const INDEX_OVERFLOW_MESSAGE: &str = "a loop index does not fit the integer type it is converted to";

/// The narrow integer types (under 64 bits) `var` is converted to in `body`.
pub fn narrow_casts(var: &Name, body: &[Stmt]) -> Vec<ScalarType> {
    fn expr(e: &Expr, var: &Name, out: &mut Vec<ScalarType>) {
        match e {
            Expr::Cast(t, a) => {
                if matches!(&**a, Expr::Var(v) if v == var) && t.is_int() && t.size_bytes() < 8 && !out.contains(t) {
                    out.push(*t);
                }
                expr(a, var, out);
            }
            Expr::Load { index, .. } => expr(index, var, out),
            Expr::Bin(_, a, b) => {
                expr(a, var, out);
                expr(b, var, out);
            }
            Expr::Neg(a) | Expr::Not(a) => expr(a, var, out),
            Expr::Select(c, a, b) => {
                expr(c, var, out);
                expr(a, var, out);
                expr(b, var, out);
            }
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => {}
        }
    }
    fn block(b: &[Stmt], var: &Name, out: &mut Vec<ScalarType>) {
        for s in b {
            match s {
                Stmt::Let { value, .. } | Stmt::Var { init: value, .. } | Stmt::Assign { value, .. } => {
                    expr(value, var, out)
                }
                Stmt::Store { index, value, .. } | Stmt::AddAtomic { index, value, .. } => {
                    expr(index, var, out);
                    expr(value, var, out);
                }
                Stmt::For { lo, hi, body, var: inner, .. } => {
                    expr(lo, var, out);
                    expr(hi, var, out);
                    if inner != var {
                        block(body, var, out);
                    }
                }
                Stmt::If { cond, then, els } => {
                    expr(cond, var, out);
                    block(then, var, out);
                    block(els, var, out);
                }
                Stmt::Alloc { len, .. } => expr(len, var, out),
                Stmt::Sort { lo, len, .. } => {
                    expr(lo, var, out);
                    expr(len, var, out);
                }
                Stmt::Check { cond, .. } => expr(cond, var, out),
                Stmt::Barrier => {}
            }
        }
    }
    let mut out = Vec::new();
    block(body, var, &mut out);
    out
}

/// The range of an integer type, as `i64`s (`u32`'s top fits).
pub fn int_range(t: ScalarType) -> (i64, i64) {
    let bits = 8 * t.size_bytes() as u32;
    if t.is_signed() { (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1) } else { (0, (1i64 << bits) - 1) }
}

/// The range of values that fit every type of `narrow` (their intersection).
pub fn fitting_range(narrow: &[ScalarType]) -> (i64, i64) {
    narrow.iter().fold((i64::MIN, i64::MAX), |(lo, hi), t| {
        let (a, b) = int_range(*t);
        (lo.max(a), hi.min(b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cast_of_the_loop_variable_is_found_inside_nested_blocks_but_not_under_a_shadowing_loop() {
        let k = Name::from("k");
        let cast = |t| Expr::Cast(t, Box::new(Expr::Var(k.clone())));
        let body = vec![
            Stmt::Let { var: Name::from("a"), ty: ScalarType::I32, value: cast(ScalarType::I32) },
            Stmt::If {
                cond: Expr::Bool(true),
                then: vec![Stmt::Let { var: Name::from("b"), ty: ScalarType::U16, value: cast(ScalarType::U16) }],
                els: vec![],
            },
            Stmt::Let { var: Name::from("c"), ty: ScalarType::I64, value: cast(ScalarType::I64) },
        ];
        assert_eq!(narrow_casts(&k, &body), [ScalarType::I32, ScalarType::U16]);
        assert_eq!(fitting_range(&[ScalarType::I32, ScalarType::U16]), (0, 65535));
        assert_eq!(fitting_range(&[ScalarType::I32]), (i64::from(i32::MIN), i64::from(i32::MAX)));
        assert_eq!(int_range(ScalarType::U32), (0, i64::from(u32::MAX)));
    }
}

//! Scalars' machine types: coordinates are numbers.
//!
//! A lowered scalar ([`Val::Scalar`](super::Val)) carries the type of the
//! loop-IR expression that computes it, its *machine type*, and that may
//! differ from the type the checker gave the source expression. The case
//! that matters is a tensor coordinate: the program sees it as an `int`
//! (LANGUAGE.md §6: a compressed level is `[p -> (int, T)]`), but lowering
//! loads it at its storage width (`u8` … `u64`, `i64` for the native width)
//! and never narrows it, so a coordinate beyond `int`'s range still indexes
//! and compares correctly. Loop indices (`i64`) and naturals used as values
//! meet coordinates the same way.
//!
//! The loop IR wants both operands of an operator at one type, so wherever
//! lowered scalars meet, they are converted here, with the interpreter's
//! semantics (which computes on the full values and wraps an arithmetic
//! result at the checker's type):
//!
//! - operands of an operator or the branches of a `select` meet at
//!   [`meet`]: their machine type when it is the checker's, else `i64` for
//!   integers (every width's values fit; a `u64` above 2^63 is beyond any
//!   tensor dimension);
//! - comparisons and `min`/`max` work on the met values; the integer result
//!   of `+ - * / %` and negation is converted to the checker's type (it
//!   wraps there, exactly as the interpreter's does);
//! - a store, an accumulator's update or a kernel result converts to the
//!   type of its destination ([`convert`]).
//!
//! For a backend whose signed 64-bit arithmetic may not overflow (OpenCL
//! C's `long`; `LowerOptions::wrapping_i64`), the program's own `i64`
//! arithmetic (`+ - *` and negation of values the checker typed `i64`) is
//! computed at `u64` and converted back ([`wrapping`], [`wrapping_neg`]): it
//! wraps, as the interpreter's does, while the loop program's signed 64-bit
//! arithmetic is index arithmetic alone (see `heddle_ir::loops`). Its
//! divisions never divide `i64::MIN` by -1, on every backend.

use heddle_ir::ScalarType;
use heddle_ir::loops::{BinOp, Expr as L};

/// The machine type at which scalars of machine types `a` and `b` are
/// combined, for an operation the checker typed at `declared`: their type
/// when both have the declared one (or agree and no type is declared), else,
/// for integers, `i64`, where every width's values are whole (a `u64` above
/// 2^63 is beyond any tensor dimension).
pub(super) fn meet(a: ScalarType, b: ScalarType, declared: Option<ScalarType>) -> ScalarType {
    let whole = a == b && declared.is_none_or(|d| d == a);
    if whole || !(a.is_int() && b.is_int()) { a } else { ScalarType::I64 }
}

/// `e`, of machine type `from`, as a value of type `to`: itself when the
/// types agree, an integer literal retyped (wrapped at `to`), else a cast.
pub(super) fn convert(e: L, from: ScalarType, to: ScalarType) -> L {
    if from == to {
        return e;
    }
    match e {
        L::Int(v, _) if to.is_int() => L::Int(wrap(v, to), to),
        L::Int(v, _) if to.is_float() => L::Float(v as f64, to),
        e => L::Cast(to, Box::new(e)),
    }
}

/// `a op b` (`+ - *`) on `i64` values, wrapping: computed at `u64`, where
/// every backend wraps (the same bits as two's complement), then back.
pub(super) fn wrapping(op: BinOp, a: L, b: L) -> L {
    let (a, b) = (convert(a, ScalarType::I64, ScalarType::U64), convert(b, ScalarType::I64, ScalarType::U64));
    L::Cast(ScalarType::I64, Box::new(L::bin(op, a, b)))
}

/// `-a` on an `i64` value, wrapping (`-i64::MIN` is `i64::MIN`): `0 - a` at `u64`.
pub(super) fn wrapping_neg(a: L) -> L {
    wrapping(BinOp::Sub, L::Int(0, ScalarType::I64), a)
}

/// `v` wrapped to the range of the integer type `t` (two's complement).
fn wrap(v: i64, t: ScalarType) -> i64 {
    match t {
        ScalarType::I8 => v as i8 as i64,
        ScalarType::U8 => v as u8 as i64,
        ScalarType::I16 => v as i16 as i64,
        ScalarType::U16 => v as u16 as i64,
        ScalarType::I32 => v as i32 as i64,
        ScalarType::U32 => v as u32 as i64,
        _ => v,
    }
}

/// The type an integer operation's result has in the program: the
/// checker's `declared` type, where the operation ran at another machine
/// type (`None`: keep the machine type).
pub(super) fn wrapped_at(machine: ScalarType, declared: Option<ScalarType>) -> Option<ScalarType> {
    declared.filter(|d| machine.is_int() && d.is_int() && *d != machine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_of_different_types_meet_at_i64() {
        let int = Some(ScalarType::I32);
        assert_eq!(meet(ScalarType::U16, ScalarType::I32, int), ScalarType::I64);
        assert_eq!(meet(ScalarType::U64, ScalarType::I64, None), ScalarType::I64);
        assert_eq!(meet(ScalarType::I32, ScalarType::I32, int), ScalarType::I32);
        assert_eq!(meet(ScalarType::F32, ScalarType::F32, Some(ScalarType::F32)), ScalarType::F32);
    }

    #[test]
    fn values_of_another_type_than_declared_are_whole_at_i64() {
        // Two u8 coordinates subtracted as ints: not modulo 256.
        assert_eq!(meet(ScalarType::U8, ScalarType::U8, Some(ScalarType::I32)), ScalarType::I64);
        assert_eq!(meet(ScalarType::U8, ScalarType::U8, None), ScalarType::U8);
    }

    #[test]
    fn literals_are_retyped_not_cast() {
        assert_eq!(convert(L::Int(300, ScalarType::I32), ScalarType::I32, ScalarType::U8), L::Int(44, ScalarType::U8));
        assert_eq!(convert(L::Int(-1, ScalarType::I32), ScalarType::I32, ScalarType::I64), L::Int(-1, ScalarType::I64));
        let x = L::var("x");
        assert_eq!(convert(x.clone(), ScalarType::I64, ScalarType::I32), L::Cast(ScalarType::I32, Box::new(x.clone())));
        assert_eq!(convert(x.clone(), ScalarType::I32, ScalarType::I32), x);
    }

    #[test]
    fn the_programs_i64_arithmetic_wraps_at_u64() {
        let x = L::var("x");
        let u = |e: L| L::Cast(ScalarType::U64, Box::new(e));
        assert_eq!(
            wrapping(BinOp::Add, x.clone(), L::Int(-1, ScalarType::I64)),
            L::Cast(ScalarType::I64, Box::new(L::bin(BinOp::Add, u(x.clone()), L::Int(-1, ScalarType::U64))))
        );
        assert_eq!(
            wrapping_neg(x.clone()),
            L::Cast(ScalarType::I64, Box::new(L::bin(BinOp::Sub, L::Int(0, ScalarType::U64), u(x))))
        );
    }
}

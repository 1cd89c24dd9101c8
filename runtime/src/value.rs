//! Run-time values of the reference interpreter.
//!
//! Integers are kept as `i64` and floats as `f64`; arithmetic is done at the
//! static type's width (integers wrap like the generated code's, `f32`
//! results are rounded to `f32`), so the interpreter agrees bit for bit with
//! the backends it is the oracle of.

use heddle_ir::{ScalarType, Type};
use std::fmt;
use std::rc::Rc;

/// A value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An integer of any width.
    Int(i64),
    /// A float of either width (rounded to `f32` when its type is `f32`).
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A complex number, each part rounded to `f32` when its type is
    /// `complex<f32>`. Behind a pointer so that every other value stays 16
    /// bytes (the interpreter's memory limits count `size_of::<Value>()`).
    Complex(Rc<crate::scalars::Complex<f64>>),
    /// A tuple.
    Tuple(Rc<Vec<Value>>),
    /// An array (also a vector `<T>w`).
    Array(Rc<Vec<Value>>),
    /// A stored tensor: the value of `(e : tensor<…, #ENC>)`.
    Tensor(Rc<crate::sparse::SparseTensor>),
}

impl Value {
    /// An array value.
    pub fn array(items: Vec<Value>) -> Value {
        Value::Array(Rc::new(items))
    }
    /// A tuple value.
    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(items))
    }
    /// The complex number `re + im·i`.
    pub fn complex(re: f64, im: f64) -> Value {
        Value::Complex(Rc::new(crate::scalars::Complex { re, im }))
    }
    /// The parts of a complex number (real, imaginary).
    pub fn as_complex(&self) -> Option<(f64, f64)> {
        match self {
            Value::Complex(z) => Some((z.re, z.im)),
            _ => None,
        }
    }
    /// The integer inside.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }
    /// The float inside.
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Value::Float(v) => Some(*v),
            _ => None,
        }
    }
    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(v) => Some(v),
            _ => None,
        }
    }
    /// The scalars of this value in flat-buffer order (arrays of structs stay
    /// whole: a tuple is one item of the buffer).
    pub fn flatten_into(&self, out: &mut Vec<Value>) {
        match self {
            Value::Array(items) => items.iter().for_each(|v| v.flatten_into(out)),
            other => out.push(other.clone()),
        }
    }
}

/// Wraps an integer to the width and signedness of `s`.
pub fn wrap_int(v: i64, s: ScalarType) -> i64 {
    match s {
        ScalarType::I8 => v as i8 as i64,
        ScalarType::I16 => v as i16 as i64,
        ScalarType::I32 => v as i32 as i64,
        ScalarType::U8 => v as u8 as i64,
        ScalarType::U16 => v as u16 as i64,
        ScalarType::U32 => v as u32 as i64,
        // u64 values are kept in the bit pattern of an i64.
        _ => v,
    }
}

/// Rounds a float to the precision of `s`, once, to nearest even.
pub fn round_float(v: f64, s: ScalarType) -> f64 {
    match s {
        ScalarType::F32 => v as f32 as f64,
        ScalarType::F16 => heddle_ir::rounding::f16_of_f64(v).to_f64(),
        ScalarType::BF16 => heddle_ir::rounding::bf16_of_f64(v).to_f64(),
        _ => v,
    }
}

/// The integer `x` as a float of type `s`, rounded once to nearest even
/// (never through `f64` first, which could round twice).
pub fn int_to_float(x: i128, s: ScalarType) -> f64 {
    match s {
        ScalarType::F32 => x as f32 as f64,
        ScalarType::F16 | ScalarType::BF16 => round_float(heddle_ir::rounding::f64_to_odd(x), s),
        _ => x as f64,
    }
}

/// A float as the integer type `s`, as Rust's `as` does: toward zero,
/// saturating at `s`'s range, NaN giving 0 (the compiled backends do the same:
/// Cranelift's saturating conversions, OpenCL's `convert_T_sat_rtz`).
pub fn float_to_int(v: f64, s: ScalarType) -> i64 {
    match s {
        ScalarType::I8 => v as i8 as i64,
        ScalarType::I16 => v as i16 as i64,
        ScalarType::I32 => v as i32 as i64,
        ScalarType::U8 => v as u8 as i64,
        ScalarType::U16 => v as u16 as i64,
        ScalarType::U32 => v as u32 as i64,
        // u64 values are kept in the bit pattern of an i64.
        ScalarType::U64 => v as u64 as i64,
        _ => v as i64,
    }
}

/// The conversion `to(v)` of a scalar `v` of type `from` (LANGUAGE's numeric
/// conversions, `prims.sig`): integers wrap at `to`'s width, floats round to
/// nearest, float to integer as [`float_to_int`], to `bool` is `v != 0`, a bool
/// is 0 or 1. Anything but a scalar is returned unchanged.
pub fn convert(v: Value, from: ScalarType, to: ScalarType) -> Value {
    match v {
        Value::Int(x) if to == ScalarType::Bool => Value::Bool(x != 0),
        Value::Int(x) if to.is_float() => {
            let wide = if from == ScalarType::U64 { i128::from(x as u64) } else { i128::from(x) };
            Value::Float(int_to_float(wide, to))
        }
        Value::Int(x) => Value::Int(wrap_int(x, to)),
        Value::Float(x) if to == ScalarType::Bool => Value::Bool(x != 0.0),
        Value::Float(x) if to.is_float() => Value::Float(round_float(x, to)),
        Value::Float(x) => Value::Int(float_to_int(x, to)),
        Value::Bool(b) if to == ScalarType::Bool => Value::Bool(b),
        Value::Bool(b) if to.is_float() => Value::Float(b as i64 as f64),
        Value::Bool(b) => Value::Int(b as i64),
        other => other,
    }
}

/// The scalar type of a value's type, for arithmetic.
pub fn scalar_of(t: &Type) -> Option<ScalarType> {
    match t {
        Type::Scalar(s) => Some(*s),
        Type::Vector { elem, .. } => scalar_of(elem),
        _ => None,
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Complex(z) => write!(f, "complex({}, {})", z.re, z.im),
            Value::Tuple(items) | Value::Array(items) => {
                let open = if matches!(self, Value::Tuple(_)) { "(" } else { "[" };
                let close = if matches!(self, Value::Tuple(_)) { ")" } else { "]" };
                write!(f, "{open}")?;
                for (k, v) in items.iter().enumerate() {
                    if k > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{v}")?;
                }
                write!(f, "{close}")
            }
            Value::Tensor(t) => write!(f, "{}", crate::sparse::json::storage_to_json(t)),
        }
    }
}

#[cfg(test)]
mod conversion_tests {
    use super::{Value, convert};
    use heddle_ir::ScalarType as S;

    fn f(x: f64, to: S) -> Value {
        convert(Value::Float(x), S::F64, to)
    }

    #[test]
    fn values_stay_two_words() {
        // The interpreter's memory limits count this size; a complex number is boxed to keep it.
        assert_eq!(std::mem::size_of::<Value>(), 16);
    }

    #[test]
    fn floats_to_integers_truncate_and_saturate() {
        assert_eq!(f(3.7, S::I32), Value::Int(3));
        assert_eq!(f(-3.7, S::I32), Value::Int(-3));
        assert_eq!(f(-3.7, S::U8), Value::Int(0));
        assert_eq!(f(300.5, S::U8), Value::Int(255));
        assert_eq!(f(300.5, S::I8), Value::Int(127));
        assert_eq!(f(-1e20, S::I32), Value::Int(i32::MIN as i64));
        assert_eq!(f(1e20, S::U64), Value::Int(u64::MAX as i64));
        assert_eq!(f(f64::NAN, S::I64), Value::Int(0));
        assert_eq!(f(f64::INFINITY, S::U16), Value::Int(65535));
        assert_eq!(f(f64::NAN, S::Bool), Value::Bool(true));
        assert_eq!(f(0.0, S::Bool), Value::Bool(false));
    }

    #[test]
    fn integers_wrap_and_round() {
        assert_eq!(convert(Value::Int(300), S::I32, S::U8), Value::Int(44));
        assert_eq!(convert(Value::Int(-1), S::I32, S::U16), Value::Int(65535));
        assert_eq!(convert(Value::Int(16_777_217), S::I32, S::F32), Value::Float(16_777_216.0));
        assert_eq!(convert(Value::Int(-1), S::U64, S::F64), Value::Float(u64::MAX as f64));
        assert_eq!(convert(Value::Bool(true), S::Bool, S::F32), Value::Float(1.0));
        assert_eq!(convert(Value::Int(0), S::I8, S::Bool), Value::Bool(false));
        assert_eq!(convert(Value::Float(0.1), S::F64, S::F32), Value::Float(0.1f32 as f64));
    }
}

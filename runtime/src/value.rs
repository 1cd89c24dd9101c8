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
    /// A tuple.
    Tuple(Rc<Vec<Value>>),
    /// An array (also a vector `<T>w`).
    Array(Rc<Vec<Value>>),
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

/// Rounds a float to the precision of `s`.
pub fn round_float(v: f64, s: ScalarType) -> f64 {
    if s == ScalarType::F32 { v as f32 as f64 } else { v }
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
        }
    }
}

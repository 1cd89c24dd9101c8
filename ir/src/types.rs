//! Data types: scalars, tuples, arrays (position-dependent or not), vectors,
//! sparse tensors, and the function types of kernels.

use crate::name::Name;
use crate::nat::Nat;
use crate::tensor::TensorType;
use std::fmt;

/// A scalar type. `int` is `i32`, `float` is `f32`, `double` is `f64`, `index` is `i64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[allow(missing_docs)]
pub enum ScalarType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    /// IEEE 754 binary16 (`f16`, `half`): stored in 2 bytes, computed in
    /// `f32` and rounded back to `f16` after every operation.
    F16,
    /// bfloat16 (`bf16`): `f32`'s exponent with an 8-bit significand, stored
    /// in 2 bytes, computed in `f32` and rounded back after every operation.
    BF16,
    F32,
    F64,
    /// `complex<f32>`: a complex number, a pair of `f32` (real, imaginary),
    /// stored as two consecutive `f32`s as numpy's `complex64` and MLIR do.
    C32,
    /// `complex<f64>`: a pair of `f64`, numpy's `complex128`.
    C64,
}

impl ScalarType {
    /// Every scalar type, for tables and tests.
    pub const ALL: [ScalarType; 15] = [
        ScalarType::Bool,
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::F16,
        ScalarType::BF16,
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::C32,
        ScalarType::C64,
    ];

    /// The scalar type a keyword names, aliases included.
    pub fn from_keyword(s: &str) -> Option<ScalarType> {
        Some(match s {
            "bool" => ScalarType::Bool,
            "int" | "i32" => ScalarType::I32,
            "float" | "f32" => ScalarType::F32,
            "double" | "f64" => ScalarType::F64,
            "index" | "i64" => ScalarType::I64,
            "i8" => ScalarType::I8,
            "i16" => ScalarType::I16,
            "u8" => ScalarType::U8,
            "u16" => ScalarType::U16,
            "u32" => ScalarType::U32,
            "u64" => ScalarType::U64,
            "half" | "f16" => ScalarType::F16,
            "bf16" => ScalarType::BF16,
            "complex<f32>" | "complex<float>" => ScalarType::C32,
            "complex<f64>" | "complex<double>" => ScalarType::C64,
            _ => return None,
        })
    }

    /// The canonical spelling (the paper's names where it has one).
    pub fn keyword(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::I8 => "i8",
            ScalarType::I16 => "i16",
            ScalarType::I32 => "int",
            ScalarType::I64 => "i64",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::F16 => "f16",
            ScalarType::BF16 => "bf16",
            ScalarType::F32 => "float",
            ScalarType::F64 => "double",
            ScalarType::C32 => "complex<f32>",
            ScalarType::C64 => "complex<f64>",
        }
    }

    /// Floating-point?
    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::F64)
    }
    /// A float type narrower than `f32` (`f16`, `bf16`): stored at its width,
    /// computed in `f32`.
    pub fn is_half(self) -> bool {
        matches!(self, ScalarType::F16 | ScalarType::BF16)
    }
    /// Complex (`complex<f32>`, `complex<f64>`)?
    pub fn is_complex(self) -> bool {
        matches!(self, ScalarType::C32 | ScalarType::C64)
    }
    /// The type of a complex type's real and imaginary parts (`f32`, `f64`);
    /// any other type is its own.
    pub fn part(self) -> ScalarType {
        match self {
            ScalarType::C32 => ScalarType::F32,
            ScalarType::C64 => ScalarType::F64,
            s => s,
        }
    }
    /// The complex type whose parts have type `self` (`f32`, `f64`), if any.
    pub fn complex_of(self) -> Option<ScalarType> {
        match self {
            ScalarType::F32 => Some(ScalarType::C32),
            ScalarType::F64 => Some(ScalarType::C64),
            _ => None,
        }
    }
    /// Integer (signed or not)?
    pub fn is_int(self) -> bool {
        !self.is_float() && !self.is_complex() && self != ScalarType::Bool
    }
    /// Signed integer?
    pub fn is_signed(self) -> bool {
        matches!(self, ScalarType::I8 | ScalarType::I16 | ScalarType::I32 | ScalarType::I64)
    }
    /// Size in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarType::Bool | ScalarType::I8 | ScalarType::U8 => 1,
            ScalarType::I16 | ScalarType::U16 | ScalarType::F16 | ScalarType::BF16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::U64 | ScalarType::F64 | ScalarType::C32 => 8,
            ScalarType::C64 => 16,
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// A data or function type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Type {
    /// A scalar.
    Scalar(ScalarType),
    /// A tuple of two or more components.
    Tuple(Vec<Type>),
    /// `[T]_N`, or with a binder `[i ↦ T]_N` where `T` may mention `i` (0 ≤ i < N).
    Array {
        /// The position variable, when the element type depends on it.
        binder: Option<Name>,
        /// The element type.
        elem: Box<Type>,
        /// The length.
        len: Nat,
    },
    /// A vector `<T>w` of a scalar (from `asVector`); `w` is 2, 3, 4, 8 or 16.
    Vector {
        /// The element type (a scalar, or an unknown in signatures).
        elem: Box<Type>,
        /// The width.
        width: Nat,
    },
    /// `tensor<?x8xf32, #ENC>`: a sparse (or dense) tensor stored per its encoding.
    Tensor(Box<TensorType>),
    /// A function `(x: A) -> B`; `param` names the argument when `B` depends on it.
    Fun {
        /// The parameter's name, kept when later types mention it (`toNat(offset@i)`).
        param: Option<Name>,
        /// Argument type.
        from: Box<Type>,
        /// Result type.
        to: Box<Type>,
    },
    /// A dependent function over a natural: `(n: nat) -> T`.
    NatFun {
        /// The natural's name.
        var: Name,
        /// The body's type.
        body: Box<Type>,
    },
    /// An unknown solved by type inference; never produced by the parser.
    Meta(u32),
}

impl Type {
    /// `[elem]_len`, not position-dependent.
    pub fn array(elem: Type, len: Nat) -> Type {
        Type::Array { binder: None, elem: Box::new(elem), len }
    }
    /// Shorthand for a scalar type.
    pub fn scalar(s: ScalarType) -> Type {
        Type::Scalar(s)
    }
    /// The scalar inside, if this is one.
    pub fn as_scalar(&self) -> Option<ScalarType> {
        match self {
            Type::Scalar(s) => Some(*s),
            _ => None,
        }
    }
    /// Is this a function type (of either kind)?
    pub fn is_function(&self) -> bool {
        matches!(self, Type::Fun { .. } | Type::NatFun { .. })
    }

    /// Calls `f` on every natural in this type, outermost first.
    pub fn for_each_nat(&self, f: &mut dyn FnMut(&Nat)) {
        match self {
            Type::Scalar(_) | Type::Vector { .. } | Type::Meta(_) | Type::Tensor(_) => {}
            Type::Tuple(ts) => ts.iter().for_each(|t| t.for_each_nat(f)),
            Type::Array { elem, len, .. } => {
                f(len);
                elem.for_each_nat(f);
            }
            Type::Fun { from, to, .. } => {
                from.for_each_nat(f);
                to.for_each_nat(f);
            }
            Type::NatFun { body, .. } => body.for_each_nat(f),
        }
    }

    /// Rebuilds this type with every natural mapped through `f`. Binders are
    /// passed along so `f` can avoid capturing them.
    pub fn map_nats(&self, f: &mut dyn FnMut(&Nat) -> Nat) -> Type {
        match self {
            Type::Scalar(_) | Type::Vector { .. } | Type::Meta(_) | Type::Tensor(_) => self.clone(),
            Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| t.map_nats(f)).collect()),
            Type::Array { binder, elem, len } => {
                Type::Array { binder: binder.clone(), elem: Box::new(elem.map_nats(f)), len: f(len) }
            }
            Type::Fun { param, from, to } => {
                Type::Fun { param: param.clone(), from: Box::new(from.map_nats(f)), to: Box::new(to.map_nats(f)) }
            }
            Type::NatFun { var, body } => Type::NatFun { var: var.clone(), body: Box::new(body.map_nats(f)) },
        }
    }

    /// Does the natural variable or value name `x` occur free in this type?
    pub fn mentions(&self, x: &Name) -> bool {
        match self {
            Type::Scalar(_) | Type::Vector { .. } | Type::Meta(_) | Type::Tensor(_) => false,
            Type::Tuple(ts) => ts.iter().any(|t| t.mentions(x)),
            Type::Array { binder, elem, len } => len.mentions(x) || (binder.as_ref() != Some(x) && elem.mentions(x)),
            Type::Fun { param, from, to } => from.mentions(x) || (param.as_ref() != Some(x) && to.mentions(x)),
            Type::NatFun { var, body } => var != x && body.mentions(x),
        }
    }

    /// Substitutes the natural `value` for the variable `x` (capture-avoiding
    /// for array binders and `nFun`s, which shadow).
    pub fn subst_nat(&self, x: &Name, value: &Nat) -> Type {
        match self {
            Type::Scalar(_) | Type::Vector { .. } | Type::Meta(_) | Type::Tensor(_) => self.clone(),
            Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| t.subst_nat(x, value)).collect()),
            Type::Array { binder, elem, len } => {
                let len = len.subst(x, value);
                if binder.as_ref() == Some(x) {
                    return Type::Array { binder: binder.clone(), elem: elem.clone(), len };
                }
                match binder {
                    Some(b) if value.mentions(b) => {
                        let fresh = crate::nat::fresh_name(b, |n| value.mentions(n) || elem.mentions(n));
                        let elem = elem.subst_nat(b, &Nat::Var(fresh.clone()));
                        Type::Array { binder: Some(fresh), elem: Box::new(elem.subst_nat(x, value)), len }
                    }
                    _ => Type::Array { binder: binder.clone(), elem: Box::new(elem.subst_nat(x, value)), len },
                }
            }
            Type::Fun { param, from, to } => Type::Fun {
                param: param.clone(),
                from: Box::new(from.subst_nat(x, value)),
                to: Box::new(if param.as_ref() == Some(x) { (**to).clone() } else { to.subst_nat(x, value) }),
            },
            Type::NatFun { var, body } => {
                if var == x {
                    self.clone()
                } else {
                    Type::NatFun { var: var.clone(), body: Box::new(body.subst_nat(x, value)) }
                }
            }
        }
    }
}

//! Scalars at their own type: [`ScalarVec`], a vector of one scalar type
//! (the values of a stored tensor, a coordinate list, a dense tensor, a flat
//! input buffer), and [`Num`], one scalar at full precision.
//!
//! Values are never widened to a common type on the way through heddle: an
//! `i64` beyond 2^53 stays exact, an `f32` is never rounded twice. Code that
//! moves values without caring for their type (sorting, scattering, summing
//! duplicates) is written once, generically over [`Scalar`], and dispatched on
//! the vector's type with [`with_values!`](crate::with_values).

use heddle_ir::ScalarType;
use std::fmt;

/// One scalar at full precision: every integer type fits an `i128`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    /// An integer of any width, signed or not.
    Int(i128),
    /// A float of either width.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A complex number (real, imaginary) of either width.
    Complex(f64, f64),
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Int(i) => write!(f, "{i}"),
            Num::Float(x) => write!(f, "{}", crate::io::number::float(*x, ScalarType::F64)),
            Num::Bool(b) => write!(f, "{b}"),
            Num::Complex(re, im) => write!(
                f,
                "complex({}, {})",
                crate::io::number::float(*re, ScalarType::F64),
                crate::io::number::float(*im, ScalarType::F64)
            ),
        }
    }
}

impl Num {
    /// The value as an `f64` (rounded for integers beyond 2^53; a complex
    /// number's real part): for densifying and comparing, never for storing.
    pub fn to_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(x) | Num::Complex(x, _) => x,
            Num::Bool(b) => f64::from(u8::from(b)),
        }
    }
}

impl Num {
    /// A scalar value of the interpreter, read as a value of type `elem`:
    /// an `Int` of a `u64` holds the integer's bits. `None` for a value that
    /// is not a scalar.
    pub fn of_value(v: &crate::value::Value, elem: ScalarType) -> Option<Num> {
        use crate::value::Value;
        match v {
            Value::Int(x) if elem == ScalarType::U64 => Some(Num::Int(i128::from(*x as u64))),
            Value::Int(x) => Some(Num::Int(i128::from(*x))),
            Value::Float(x) => Some(Num::Float(*x)),
            Value::Bool(b) => Some(Num::Bool(*b)),
            Value::Complex(z) => Some(Num::Complex(z.re, z.im)),
            _ => None,
        }
    }
    /// The interpreter's value of this scalar (a `u64` beyond `i64` as its
    /// bits in an `Int`, as the interpreter holds them).
    pub fn to_value(self) -> crate::value::Value {
        use crate::value::Value;
        match self {
            Num::Int(i) => Value::Int(i64::try_from(i).unwrap_or(i as u64 as i64)),
            Num::Float(x) => Value::Float(x),
            Num::Bool(b) => Value::Bool(b),
            Num::Complex(re, im) => Value::complex(re, im),
        }
    }
}

impl Num {
    /// The number an encoding's `explicitVal` / `implicitVal` literal
    /// writes (`2`, `1.0`, `true`), `None` if it is not one.
    pub fn of_literal(lit: &heddle_ir::encoding::Literal) -> Option<Num> {
        match lit.text.as_str() {
            "true" => Some(Num::Bool(true)),
            "false" => Some(Num::Bool(false)),
            t => t
                .parse::<i128>()
                .map(Num::Int)
                .ok()
                .or_else(|| crate::io::number::parse_float(t.as_bytes()).map(Num::Float)),
        }
    }
}

/// A Rust type that holds one of heddle's scalar types.
pub trait Scalar: Copy + PartialEq + fmt::Debug + Default + Send + Sync + 'static {
    /// The scalar type it holds.
    const TYPE: ScalarType;
    /// Addition as heddle's kernels do it: integers wrap at their width,
    /// floats round, booleans are or-ed (a pattern entry stored twice is one).
    fn add(self, other: Self) -> Self;
    /// Negation as kernels do it (integers wrap; booleans are their own negation).
    fn neg(self) -> Self;
    /// The value at full precision.
    fn num(self) -> Num;
    /// `n` converted to this type: integers and booleans exactly (`None`
    /// when `n` is outside the type, or a float with a fraction), floats
    /// rounded to nearest (an `f64` to an `f32`, a large integer to a float).
    fn from_num(n: Num) -> Option<Self>;
    /// Is this the zero that stands for "not stored" (`+0.0`, `0`, `false`)?
    /// A `-0.0` is a value the user wrote, kept.
    fn is_padding(self) -> bool;
    /// The little-endian bytes of the value, `size_bytes` of them, in `out`.
    fn write_le(self, out: &mut [u8]);
    /// The value read from `size_bytes` little-endian bytes.
    fn read_le(bytes: &[u8]) -> Self;
}

fn int_of(n: Num) -> Option<i128> {
    match n {
        Num::Int(i) => Some(i),
        Num::Bool(b) => Some(i128::from(b)),
        Num::Float(x) if x.fract() == 0.0 && x.abs() < 1e30 => Some(x as i128),
        Num::Float(_) | Num::Complex(..) => None,
    }
}

macro_rules! int_scalar {
    ($($t:ty => $s:ident),*) => {$(
        impl Scalar for $t {
            const TYPE: ScalarType = ScalarType::$s;
            #[inline]
            fn add(self, other: Self) -> Self { self.wrapping_add(other) }
            #[inline]
            fn neg(self) -> Self { self.wrapping_neg() }
            #[inline]
            fn num(self) -> Num { Num::Int(self as i128) }
            #[inline]
            fn from_num(n: Num) -> Option<Self> { int_of(n).and_then(|i| <$t>::try_from(i).ok()) }
            #[inline]
            fn is_padding(self) -> bool { self == 0 }
            #[inline]
            fn write_le(self, out: &mut [u8]) { out.copy_from_slice(&self.to_le_bytes()) }
            #[inline]
            fn read_le(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(bytes);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
int_scalar!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);

macro_rules! float_scalar {
    ($($t:ty => $s:ident),*) => {$(
        impl Scalar for $t {
            const TYPE: ScalarType = ScalarType::$s;
            #[inline]
            fn add(self, other: Self) -> Self { self + other }
            #[inline]
            fn neg(self) -> Self { -self }
            #[inline]
            fn num(self) -> Num { Num::Float(f64::from(self)) }
            #[inline]
            fn from_num(n: Num) -> Option<Self> {
                Some(match n {
                    // One rounding, straight to the width (an `i128` is
                    // correctly rounded to either float).
                    Num::Float(x) => x as $t,
                    Num::Int(i) => i as $t,
                    Num::Bool(b) => <$t>::from(u8::from(b)),
                    // A complex number is not a real one, whatever its imaginary part.
                    Num::Complex(..) => return None,
                })
            }
            #[inline]
            fn is_padding(self) -> bool { self.to_bits() == 0 }
            #[inline]
            fn write_le(self, out: &mut [u8]) { out.copy_from_slice(&self.to_le_bytes()) }
            #[inline]
            fn read_le(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(bytes);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
float_scalar!(f32 => F32, f64 => F64);

/// `f16` and `bf16` (the `half` crate's types): stored in 2 bytes, every
/// operation rounded once back to their precision, as compiled code does.
macro_rules! half_scalar {
    ($($t:ty => $s:ident, $round:path),*) => {$(
        impl Scalar for $t {
            const TYPE: ScalarType = ScalarType::$s;
            #[inline]
            fn add(self, other: Self) -> Self { $round(self.to_f64() + other.to_f64()) }
            #[inline]
            fn neg(self) -> Self { -self }
            #[inline]
            fn num(self) -> Num { Num::Float(self.to_f64()) }
            #[inline]
            fn from_num(n: Num) -> Option<Self> {
                Some(match n {
                    Num::Float(x) => $round(x),
                    Num::Int(i) => $round(heddle_ir::rounding::f64_to_odd(i)),
                    Num::Bool(b) => $round(f64::from(u8::from(b))),
                    Num::Complex(..) => return None,
                })
            }
            #[inline]
            fn is_padding(self) -> bool { self.to_bits() == 0 }
            #[inline]
            fn write_le(self, out: &mut [u8]) { out.copy_from_slice(&self.to_le_bytes()) }
            #[inline]
            fn read_le(bytes: &[u8]) -> Self { <$t>::from_le_bytes([bytes[0], bytes[1]]) }
        }
    )*};
}
half_scalar!(half::f16 => F16, heddle_ir::rounding::f16_of_f64, half::bf16 => BF16, heddle_ir::rounding::bf16_of_f64);

/// A complex number as numpy (`complex64`, `complex128`) and MLIR store
/// one: the real part, then the imaginary part, each a `T`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Complex<T> {
    /// The real part.
    pub re: T,
    /// The imaginary part.
    pub im: T,
}

macro_rules! complex_scalar {
    ($($t:ty => $s:ident),*) => {$(
        impl Scalar for Complex<$t> {
            const TYPE: ScalarType = ScalarType::$s;
            #[inline]
            fn add(self, other: Self) -> Self { Complex { re: self.re + other.re, im: self.im + other.im } }
            #[inline]
            fn neg(self) -> Self { Complex { re: -self.re, im: -self.im } }
            #[inline]
            fn num(self) -> Num { Num::Complex(f64::from(self.re), f64::from(self.im)) }
            #[inline]
            fn from_num(n: Num) -> Option<Self> {
                // Each part rounded once to the width; a real number has imaginary part 0.
                let (re, im) = match n {
                    Num::Complex(re, im) => (re as $t, im as $t),
                    Num::Float(x) => (x as $t, 0.0),
                    Num::Int(i) => (i as $t, 0.0),
                    Num::Bool(b) => (<$t>::from(u8::from(b)), 0.0),
                };
                Some(Complex { re, im })
            }
            #[inline]
            fn is_padding(self) -> bool { self.re.to_bits() == 0 && self.im.to_bits() == 0 }
            #[inline]
            fn write_le(self, out: &mut [u8]) {
                let half = out.len() / 2;
                out[..half].copy_from_slice(&self.re.to_le_bytes());
                out[half..].copy_from_slice(&self.im.to_le_bytes());
            }
            #[inline]
            fn read_le(bytes: &[u8]) -> Self {
                let half = bytes.len() / 2;
                Complex { re: <$t as Scalar>::read_le(&bytes[..half]), im: <$t as Scalar>::read_le(&bytes[half..]) }
            }
        }
    )*};
}
complex_scalar!(f32 => C32, f64 => C64);

impl Scalar for bool {
    const TYPE: ScalarType = ScalarType::Bool;
    #[inline]
    fn add(self, other: Self) -> Self {
        self || other
    }
    #[inline]
    fn neg(self) -> Self {
        self
    }
    #[inline]
    fn num(self) -> Num {
        Num::Bool(self)
    }
    #[inline]
    fn from_num(n: Num) -> Option<Self> {
        match n {
            Num::Bool(b) => Some(b),
            n => match int_of(n) {
                Some(0) => Some(false),
                Some(1) => Some(true),
                _ => None,
            },
        }
    }
    #[inline]
    fn is_padding(self) -> bool {
        !self
    }
    #[inline]
    fn write_le(self, out: &mut [u8]) {
        out[0] = u8::from(self)
    }
    #[inline]
    fn read_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// A vector of scalars of one type.
#[derive(Clone, PartialEq)]
pub enum ScalarVec {
    /// Booleans.
    Bool(Vec<bool>),
    /// `i8`.
    I8(Vec<i8>),
    /// `i16`.
    I16(Vec<i16>),
    /// `i32`.
    I32(Vec<i32>),
    /// `i64`.
    I64(Vec<i64>),
    /// `u8`.
    U8(Vec<u8>),
    /// `u16`.
    U16(Vec<u16>),
    /// `u32`.
    U32(Vec<u32>),
    /// `u64`.
    U64(Vec<u64>),
    /// `f16` (IEEE binary16).
    F16(Vec<half::f16>),
    /// `bf16` (bfloat16).
    BF16(Vec<half::bf16>),
    /// `f32`.
    F32(Vec<f32>),
    /// `f64`.
    F64(Vec<f64>),
    /// `complex<f32>`.
    C32(Vec<Complex<f32>>),
    /// `complex<f64>`.
    C64(Vec<Complex<f64>>),
}

/// Runs `$body` with `$x` bound to the vector inside a [`ScalarVec`] (by
/// value, reference or mutable reference, as `$v` is given), whatever its
/// element type: generic code over [`Scalar`] written once.
#[macro_export]
macro_rules! with_values {
    ($v:expr, $x:ident => $body:expr) => {
        match $v {
            $crate::scalars::ScalarVec::Bool($x) => $body,
            $crate::scalars::ScalarVec::I8($x) => $body,
            $crate::scalars::ScalarVec::I16($x) => $body,
            $crate::scalars::ScalarVec::I32($x) => $body,
            $crate::scalars::ScalarVec::I64($x) => $body,
            $crate::scalars::ScalarVec::U8($x) => $body,
            $crate::scalars::ScalarVec::U16($x) => $body,
            $crate::scalars::ScalarVec::U32($x) => $body,
            $crate::scalars::ScalarVec::U64($x) => $body,
            $crate::scalars::ScalarVec::F16($x) => $body,
            $crate::scalars::ScalarVec::BF16($x) => $body,
            $crate::scalars::ScalarVec::F32($x) => $body,
            $crate::scalars::ScalarVec::F64($x) => $body,
            $crate::scalars::ScalarVec::C32($x) => $body,
            $crate::scalars::ScalarVec::C64($x) => $body,
        }
    };
}

/// Runs `$body` with the type alias `$t` naming the Rust type of a scalar type.
#[macro_export]
macro_rules! with_scalar_type {
    ($s:expr, $t:ident => $body:expr) => {
        match $s {
            heddle_ir::ScalarType::Bool => {
                type $t = bool;
                $body
            }
            heddle_ir::ScalarType::I8 => {
                type $t = i8;
                $body
            }
            heddle_ir::ScalarType::I16 => {
                type $t = i16;
                $body
            }
            heddle_ir::ScalarType::I32 => {
                type $t = i32;
                $body
            }
            heddle_ir::ScalarType::I64 => {
                type $t = i64;
                $body
            }
            heddle_ir::ScalarType::U8 => {
                type $t = u8;
                $body
            }
            heddle_ir::ScalarType::U16 => {
                type $t = u16;
                $body
            }
            heddle_ir::ScalarType::U32 => {
                type $t = u32;
                $body
            }
            heddle_ir::ScalarType::U64 => {
                type $t = u64;
                $body
            }
            heddle_ir::ScalarType::F16 => {
                type $t = half::f16;
                $body
            }
            heddle_ir::ScalarType::BF16 => {
                type $t = half::bf16;
                $body
            }
            heddle_ir::ScalarType::F32 => {
                type $t = f32;
                $body
            }
            heddle_ir::ScalarType::F64 => {
                type $t = f64;
                $body
            }
            heddle_ir::ScalarType::C32 => {
                type $t = $crate::scalars::Complex<f32>;
                $body
            }
            heddle_ir::ScalarType::C64 => {
                type $t = $crate::scalars::Complex<f64>;
                $body
            }
        }
    };
}

macro_rules! from_vec {
    ($($t:ty => $v:ident),*) => {$(
        impl From<Vec<$t>> for ScalarVec {
            fn from(v: Vec<$t>) -> ScalarVec { ScalarVec::$v(v) }
        }
    )*};
}
from_vec!(bool => Bool, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64, half::f16 => F16, half::bf16 => BF16, f32 => F32, f64 => F64, Complex<f32> => C32, Complex<f64> => C64);

impl fmt::Debug for ScalarVec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        with_values!(self, v => write!(f, "{:?}{v:?}", self.elem()))
    }
}

impl Default for ScalarVec {
    fn default() -> ScalarVec {
        ScalarVec::F64(Vec::new())
    }
}

/// Where a conversion failed: the position, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertError {
    /// The position in the vector.
    pub position: usize,
    /// The value and the type it does not fit.
    pub message: String,
}

impl ScalarVec {
    /// An empty vector of `elem`s.
    pub fn new(elem: ScalarType) -> ScalarVec {
        ScalarVec::with_capacity(elem, 0)
    }
    /// An empty vector of `elem`s with room for `n`.
    pub fn with_capacity(elem: ScalarType, n: usize) -> ScalarVec {
        with_scalar_type!(elem, T => ScalarVec::from(Vec::<T>::with_capacity(n)))
    }
    /// `n` zeros (`false`, `0`, `+0.0`) of type `elem`.
    pub fn zeros(elem: ScalarType, n: usize) -> ScalarVec {
        with_scalar_type!(elem, T => ScalarVec::from(vec![T::default(); n]))
    }
    /// The element type.
    pub fn elem(&self) -> ScalarType {
        match self {
            ScalarVec::Bool(_) => ScalarType::Bool,
            ScalarVec::I8(_) => ScalarType::I8,
            ScalarVec::I16(_) => ScalarType::I16,
            ScalarVec::I32(_) => ScalarType::I32,
            ScalarVec::I64(_) => ScalarType::I64,
            ScalarVec::U8(_) => ScalarType::U8,
            ScalarVec::U16(_) => ScalarType::U16,
            ScalarVec::U32(_) => ScalarType::U32,
            ScalarVec::U64(_) => ScalarType::U64,
            ScalarVec::F16(_) => ScalarType::F16,
            ScalarVec::BF16(_) => ScalarType::BF16,
            ScalarVec::F32(_) => ScalarType::F32,
            ScalarVec::F64(_) => ScalarType::F64,
            ScalarVec::C32(_) => ScalarType::C32,
            ScalarVec::C64(_) => ScalarType::C64,
        }
    }
    /// Number of values.
    pub fn len(&self) -> usize {
        with_values!(self, v => v.len())
    }
    /// No values?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Value `i` at full precision. Panics when `i` is out of bounds.
    pub fn num(&self, i: usize) -> Num {
        with_values!(self, v => v[i].num())
    }
    /// Value `i` as an `f64` (see [`Num::to_f64`]).
    pub fn f64(&self, i: usize) -> f64 {
        self.num(i).to_f64()
    }
    /// Every value as an `f64` (see [`Num::to_f64`]): for comparisons in tests and densifying.
    pub fn to_f64s(&self) -> Vec<f64> {
        match self {
            ScalarVec::F64(v) => v.clone(),
            s => (0..s.len()).map(|i| s.f64(i)).collect(),
        }
    }
    /// Is value `i` a padding zero (see [`Scalar::is_padding`])?
    pub fn is_padding(&self, i: usize) -> bool {
        with_values!(self, v => v[i].is_padding())
    }
    /// Appends `n` converted to the vector's type; `false` if it does not fit.
    #[must_use]
    pub fn push_num(&mut self, n: Num) -> bool {
        with_values!(self, v => match Scalar::from_num(n) {
            Some(x) => {
                v.push(x);
                true
            }
            None => false,
        })
    }
    /// Appends value `i` of `other`, which has the same type. Panics otherwise.
    pub fn push_from(&mut self, other: &ScalarVec, i: usize) {
        macro_rules! same {
            ($($v:ident),*) => {
                match (self, other) {
                    $((ScalarVec::$v(a), ScalarVec::$v(b)) => a.push(b[i]),)*
                    (a, b) => panic!("push_from: {} values into {}", b.elem(), a.elem()),
                }
            };
        }
        same!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64, C32, C64)
    }
    /// The values at `perm`'s positions, in `perm`'s order.
    pub fn gather(&self, perm: &[usize]) -> ScalarVec {
        with_values!(self, v => ScalarVec::from(perm.iter().map(|&k| v[k]).collect::<Vec<_>>()))
    }
    /// Value `i` alone, as a vector of one.
    pub fn clone_at(&self, i: usize) -> ScalarVec {
        with_values!(self, v => ScalarVec::from(vec![v[i]]))
    }
    /// Negates the last value (as kernels negate: see [`Scalar::neg`]).
    pub fn negate_last(&mut self) {
        with_values!(self, v => if let Some(x) = v.last_mut() {
            *x = Scalar::neg(*x);
        })
    }
    /// Conjugates the last value, if complex (a Hermitian matrix's mirrored
    /// entry); a real value is its own conjugate.
    pub fn conjugate_last(&mut self) {
        match self {
            ScalarVec::C32(v) => v.last_mut().into_iter().for_each(|x| x.im = -x.im),
            ScalarVec::C64(v) => v.last_mut().into_iter().for_each(|x| x.im = -x.im),
            _ => {}
        }
    }
    /// The values at positions `range`.
    pub fn slice(&self, range: std::ops::Range<usize>) -> ScalarVec {
        with_values!(self, v => ScalarVec::from(v[range].to_vec()))
    }
    /// Keeps the first `n` values.
    pub fn truncate(&mut self, n: usize) {
        with_values!(self, v => v.truncate(n))
    }
    /// The values converted to `elem` ([`Scalar::from_num`]: integers exact,
    /// floats rounded once); the first value that does not fit is an error.
    /// The same type is returned as it is.
    pub fn convert(self, elem: ScalarType) -> Result<ScalarVec, ConvertError> {
        if self.elem() == elem {
            return Ok(self);
        }
        with_scalar_type!(elem, T => {
            let out: Result<Vec<T>, ConvertError> = with_values!(&self, v => v
                .iter()
                .enumerate()
                .map(|(k, x)| T::from_num(x.num()).ok_or_else(|| ConvertError {
                    position: k,
                    message: format!("{} does not fit in {elem}", x.num()),
                }))
                .collect());
            out.map(ScalarVec::from)
        })
    }
    /// The first position whose value is neither `a` nor `b` (each converted
    /// to the vector's type; a number the type cannot hold matches nothing).
    pub fn position_not_in(&self, a: Num, b: Num) -> Option<usize> {
        with_values!(self, v => {
            let (a, b) = (Scalar::from_num(a), Scalar::from_num(b));
            v.iter().position(|x| Some(*x) != a && Some(*x) != b)
        })
    }
    /// The little-endian bytes of every value, back to back.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.len() * self.elem().size_bytes()];
        self.write_le_into(&mut out);
        out
    }

    /// Writes the scalars' little-endian bytes to the start of `out` (which
    /// holds at least `len × size` bytes): one copy of memory on a
    /// little-endian machine.
    pub fn write_le_into(&self, out: &mut [u8]) {
        #[cfg(target_endian = "little")]
        with_values!(self, v => {
            let n = std::mem::size_of_val(v.as_slice());
            // SAFETY: bool, the integers, the floats and `Complex` (`repr(C)`,
            // two floats of one type) have no padding and
            // every byte initialised (a bool is 0 or 1); on a little-endian
            // machine their bytes in memory are their little-endian encoding.
            let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), n) };
            out[..n].copy_from_slice(bytes);
        });
        #[cfg(not(target_endian = "little"))]
        {
            let size = self.elem().size_bytes();
            with_values!(self, v => v.iter().zip(out.chunks_exact_mut(size)).for_each(|(x, o)| x.write_le(o)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_are_exact_or_refused() {
        let big = ScalarVec::from(vec![(1i64 << 53) + 1, -3]);
        assert_eq!(big.num(0), Num::Int((1 << 53) + 1));
        assert_eq!(big.clone().convert(ScalarType::U64).unwrap_err().position, 1);
        assert_eq!(big.clone().convert(ScalarType::I32).unwrap_err().position, 0);
        // To a float: rounded once, from the integer itself.
        assert_eq!(big.convert(ScalarType::F64).unwrap(), ScalarVec::from(vec![9007199254740992.0, -3.0]));
        let floats = ScalarVec::from(vec![2.0f64, -0.0, 1.5]);
        assert_eq!(
            floats.clone().convert(ScalarType::I8).unwrap_err(),
            ConvertError { position: 2, message: "1.5 does not fit in i8".into() }
        );
        assert!(!floats.clone().convert(ScalarType::F32).unwrap().is_padding(0));
        assert!(!floats.is_padding(1), "-0 is a value");
        assert_eq!(
            ScalarVec::from(vec![1u8, 0]).convert(ScalarType::Bool).unwrap(),
            ScalarVec::from(vec![true, false])
        );
        assert!(ScalarVec::from(vec![2u8]).convert(ScalarType::Bool).is_err());
        let mut v = ScalarVec::new(ScalarType::U8);
        assert!(v.push_num(Num::Int(255)));
        assert!(!v.push_num(Num::Int(256)));
        assert_eq!(v.to_le_bytes(), vec![255]);
    }

    #[test]
    fn addition_wraps_rounds_or_ors() {
        assert_eq!(Scalar::add(i8::MAX, 1i8), i8::MIN);
        assert!(Scalar::add(true, false));
        assert_eq!(Scalar::add(0.1f32, 0.2f32), 0.1f32 + 0.2f32);
    }
}

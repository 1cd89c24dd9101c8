//! Data between Python and the runtime: numpy buffers and scipy sparse
//! arrays in, the runtime's values out; `heddle.convert`.
//!
//! Inputs are copied once out of Python at their own dtype, into the packed
//! buffers the compiled backends bind as the kernel's (the interpreter makes
//! values of them); a sparse array whose layout is the parameter's (a
//! canonical csr array for a CSR parameter, csc for CSC) is taken as it is
//! stored (checked, not re-sorted), any other is converted through its
//! entries.

use crate::errors::input_error;
use heddle_ir::encoding::Encoding;
use heddle_ir::{ScalarType, Type};
use heddle_runtime::io::Loaded;
use heddle_runtime::scalars::ScalarVec;
use heddle_runtime::sparse::assemble::{Buffers, assemble};
use heddle_runtime::sparse::{Coo, SparseTensor};
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyDict, PyList, PyModule, PyTuple};

/// An array input from Python: name, a C-contiguous buffer (float64,
/// int64 or uint8 for kind "f", "i", "b"; for "c", complex numbers' parts as
/// float32 or float64), the kind, numpy's dtype name (for messages) and the
/// shape.
#[derive(FromPyObject)]
pub struct ArrayArg(String, PyObject, String, String, Vec<u64>);

/// A sparse input from Python: name, storage ("csr", "csc": shape, indptr,
/// indices, data; "coo": shape, coordinates flattened entry by entry, an
/// unused buffer, data).
#[derive(FromPyObject)]
pub struct TensorArg(String, String, Vec<u64>, PyObject, PyObject, PyObject);

/// Why binding failed, before it becomes a Python exception (on the
/// Python thread: the work runs on a thread of its own).
pub enum Fail {
    /// Located in the kernel's source.
    Source(Vec<heddle_ir::Diagnostic>),
    /// About an input (the parameter, if one).
    Input(Option<String>, String),
}

impl Fail {
    /// The Python exception, diagnostics located in `file`.
    pub fn into_py(self, file: &heddle::source::SourceFile) -> PyErr {
        match self {
            Fail::Source(d) => crate::errors::source_error(file, &d),
            Fail::Input(p, m) => input_error(p.as_deref(), m),
        }
    }
}

fn fail(name: &str, message: impl Into<String>) -> Fail {
    Fail::Input(Some(name.to_string()), message.into())
}

impl From<heddle_runtime::io::bind::InputError> for Fail {
    fn from(e: heddle_runtime::io::bind::InputError) -> Fail {
        Fail::Input(e.parameter, e.message)
    }
}

/// A sparse array's values at their own type: a float64, float32, int64 or
/// uint64 buffer (the Python side makes every other dtype one of these
/// without loss). A parameter's element type is reached from them by
/// an exact conversion, never through float64.
fn typed_values(py: Python<'_>, obj: &PyObject, what: &str) -> PyResult<ScalarVec> {
    let any = obj.bind(py);
    // Complex values come as ("complex", their parts as a float buffer).
    if let Ok((tag, parts)) = any.extract::<(String, PyObject)>()
        && tag == "complex"
    {
        return complex_pairs(py, &parts).unwrap_or_else(|| {
            Err(input_error(None, format!("{what}: expected the parts of complex64 or complex128 values")))
        });
    }
    if let Ok(b) = PyBuffer::<f64>::get(any) {
        return Ok(b.to_vec(py)?.into());
    }
    if let Ok(b) = PyBuffer::<f32>::get(any) {
        return Ok(b.to_vec(py)?.into());
    }
    if let Ok(b) = PyBuffer::<i64>::get(any) {
        return Ok(b.to_vec(py)?.into());
    }
    if let Ok(b) = PyBuffer::<u64>::get(any) {
        return Ok(b.to_vec(py)?.into());
    }
    Err(input_error(None, format!("{what}: expected a buffer of float64, float32, int64 or uint64")))
}

/// An int64 or int32 buffer (scipy's indices as they are), as `i64`s in one copy.
fn ints(py: Python<'_>, obj: &PyObject, what: &str) -> PyResult<Vec<i64>> {
    let any = obj.bind(py);
    if let Ok(b) = PyBuffer::<i32>::get(any) {
        let cells =
            b.as_slice(py).ok_or_else(|| input_error(None, format!("{what}: expected a contiguous int32 buffer")))?;
        return Ok(cells.iter().map(|c| i64::from(c.get())).collect());
    }
    let buf =
        PyBuffer::<i64>::get(any).map_err(|e| input_error(None, format!("{what}: expected an int64 buffer: {e}")))?;
    buf.to_vec(py)
}

fn indices(v: Vec<i64>, name: &str, what: &str) -> Result<Vec<u64>, Fail> {
    if let Some(bad) = v.iter().find(|&&x| x < 0) {
        return Err(fail(name, format!("{what} holds a negative index ({bad})")));
    }
    Ok(v.into_iter().map(|x| x as u64).collect())
}

/// An array input: copied out of its Python buffer at its own type, or a
/// float array read in place.
pub struct RawArray {
    name: String,
    elements: Elements,
    dtype: String,
    shape: Vec<u64>,
}

enum Elements {
    Copied(ScalarVec),
    /// Borrowed from a Python buffer that a [`Keep`] holds.
    InPlace(heddle_runtime::launch::Buffer),
}

/// A Python buffer that an input reads in place: it must outlive the call
/// (every runtime buffer made of it). Dropped with the GIL held.
pub enum Keep {
    F32(PyBuffer<f32>),
    F64(PyBuffer<f64>),
}

impl ArrayArg {
    /// Copies the buffer (the GIL held); with `in_place`, a C-contiguous
    /// float32 or float64 buffer is read in place instead, and comes back
    /// as the [`Keep`] that must outlive every use of the input.
    pub fn extract(self, py: Python<'_>, in_place: bool) -> PyResult<(RawArray, Option<Keep>)> {
        let ArrayArg(name, data, kind, dtype, shape) = self;
        if in_place && kind == "f" {
            let any = data.bind(py);
            let keep = match PyBuffer::<f32>::get(any) {
                Ok(b) => Some(Keep::F32(b)),
                Err(_) => PyBuffer::<f64>::get(any).ok().map(Keep::F64),
            };
            if let Some(keep) = keep {
                let (ptr, len, contiguous, elem) = match &keep {
                    Keep::F32(b) => (b.buf_ptr(), b.item_count(), b.is_c_contiguous(), ScalarType::F32),
                    Keep::F64(b) => (b.buf_ptr(), b.item_count(), b.is_c_contiguous(), ScalarType::F64),
                };
                if contiguous {
                    let what = format!("the input `{name}`");
                    // SAFETY: a C-contiguous buffer of `len` elements of `elem` at
                    // `ptr`, exported (so neither freed nor resized) until `keep`
                    // is released; the caller keeps `keep` until every runtime
                    // buffer made of it is dropped.
                    let buffer = unsafe {
                        heddle_runtime::launch::Buffer::borrowed(elem, ptr.cast::<u8>().cast_const(), len, &what)
                    };
                    if let Some(buffer) = buffer.map_err(|m| input_error(Some(&name), m))? {
                        return Ok((RawArray { name, elements: Elements::InPlace(buffer), dtype, shape }, Some(keep)));
                    }
                }
            }
        }
        let elements = match kind.as_str() {
            "f" | "i" => numbers(py, &data).ok_or_else(|| {
                input_error(Some(&name), format!("arrays of {dtype} are not supported (integers, floats or booleans)"))
            })??,
            "b" => {
                ScalarVec::Bool(PyBuffer::<u8>::get(data.bind(py))?.to_vec(py)?.into_iter().map(|b| b != 0).collect())
            }
            "c" => complex_pairs(py, &data).ok_or_else(|| {
                input_error(Some(&name), format!("arrays of {dtype} are not supported (complex64 or complex128)"))
            })??,
            other => return Err(input_error(Some(&name), format!("unsupported element kind {other:?}"))),
        };
        Ok((RawArray { name, elements: Elements::Copied(elements), dtype, shape }, None))
    }
}

/// A numeric buffer at its own type (`None` for a type the runtime has no scalar for).
fn numbers(py: Python<'_>, obj: &PyObject) -> Option<PyResult<ScalarVec>> {
    let any = obj.bind(py);
    macro_rules! try_as {
        ($($t:ty),*) => {$(
            if let Ok(b) = PyBuffer::<$t>::get(any) {
                return Some(b.to_vec(py).map(ScalarVec::from));
            }
        )*};
    }
    try_as!(f64, f32, i64, i32, i16, i8, u64, u32, u16, u8);
    None
}

/// Complex numbers from a float buffer of their parts (real, imaginary, …:
/// numpy's complex64 / complex128 viewed as float32 / float64).
fn complex_pairs(py: Python<'_>, obj: &PyObject) -> Option<PyResult<ScalarVec>> {
    use heddle_runtime::scalars::Complex;
    let any = obj.bind(py);
    if let Ok(b) = PyBuffer::<f64>::get(any) {
        return Some(
            b.to_vec(py).map(|v| ScalarVec::C64(v.chunks_exact(2).map(|p| Complex { re: p[0], im: p[1] }).collect())),
        );
    }
    if let Ok(b) = PyBuffer::<f32>::get(any) {
        return Some(
            b.to_vec(py).map(|v| ScalarVec::C32(v.chunks_exact(2).map(|p| Complex { re: p[0], im: p[1] }).collect())),
        );
    }
    None
}

impl RawArray {
    /// The input as the runtime's loaded data: packed, so that the compiled
    /// backends bind it as the kernel's buffer.
    pub fn into_input(self) -> (String, Loaded) {
        let loaded = match self.elements {
            Elements::Copied(data) => Loaded::Packed { data, dtype: self.dtype, shape: self.shape },
            Elements::InPlace(buffer) => Loaded::Buffer { buffer, dtype: self.dtype, shape: self.shape },
        };
        (self.name, loaded)
    }
}

/// A sparse input, copied out of its Python buffers (its values may be read
/// in place instead, `in_place`).
pub struct RawTensor {
    name: String,
    format: String,
    shape: Vec<u64>,
    a: Vec<i64>,
    b: Vec<i64>,
    values: ScalarVec,
    /// The values, read in place (then `values` is empty).
    in_place: Option<heddle_runtime::launch::Buffer>,
}

impl TensorArg {
    /// The parameter's name.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// Copies the buffers (the GIL held). The indices are always copied
    /// (validated, they must not change while a kernel runs); with
    /// `in_place` (the parameter's element type), values of that float type
    /// in a C-contiguous buffer of a compressed array are read in place, and
    /// their buffer comes back as the [`Keep`] that must outlive every use.
    pub fn extract(self, py: Python<'_>, in_place: Option<ScalarType>) -> PyResult<(RawTensor, Option<Keep>)> {
        let TensorArg(name, format, shape, a, b, values) = self;
        let (a, b) = (ints(py, &a, "indices")?, ints(py, &b, "indices")?);
        if let (Some(elem @ (ScalarType::F32 | ScalarType::F64)), true) =
            (in_place, matches!(format.as_str(), "csr" | "csc"))
        {
            let any = values.bind(py);
            let keep = match elem {
                ScalarType::F32 => PyBuffer::<f32>::get(any).ok().map(Keep::F32),
                _ => PyBuffer::<f64>::get(any).ok().map(Keep::F64),
            };
            let view = keep.as_ref().and_then(|k| match k {
                Keep::F32(b) => b.is_c_contiguous().then(|| (b.buf_ptr(), b.item_count())),
                Keep::F64(b) => b.is_c_contiguous().then(|| (b.buf_ptr(), b.item_count())),
            });
            if let Some((ptr, len)) = view {
                // SAFETY: as in `ArrayArg::extract`: the buffer stays exported
                // until `keep` is released, which the caller holds until every
                // runtime buffer made of it is dropped.
                let buffer = unsafe {
                    heddle_runtime::launch::Buffer::borrowed(elem, ptr.cast::<u8>().cast_const(), len, "the values")
                };
                if let Some(buffer) = buffer.map_err(|m| input_error(Some(&name), m))? {
                    return Ok((
                        RawTensor { a, b, values: ScalarVec::new(elem), in_place: Some(buffer), name, format, shape },
                        keep,
                    ));
                }
            }
        }
        Ok((RawTensor { a, b, values: typed_values(py, &values, "data")?, in_place: None, name, format, shape }, None))
    }
}

impl RawTensor {
    /// The tensor parameter's dimension sizes and storage buffers.
    pub fn into_inputs(mut self, kernel: &Kernel) -> Result<heddle_runtime::io::bind::NamedInputs, Fail> {
        let name = self.name.clone();
        let (enc, elem) = heddle_runtime::io::bind::tensor_param(kernel, &name)?;
        if let Some(buffer) = self.in_place.take() {
            let RawTensor { name, format, shape, a, b, .. } = self;
            // Taken as they are where they are valid (checked once), else the
            // values are copied out for the general path below.
            match heddle_runtime::io::bind::compressed_buffer_inputs(
                kernel,
                &name,
                &shape,
                format == "csr",
                (a, b, buffer),
            ) {
                Ok(bound) => return Ok(bound),
                Err((a, b, buffer)) => {
                    let mut values = ScalarVec::with_capacity(buffer.fields[0], buffer.len());
                    for k in 0..buffer.len() {
                        let num = heddle_runtime::scalars::Num::of_value(&buffer.read(k, 0), buffer.fields[0]);
                        if !num.is_some_and(|n| values.push_num(n)) {
                            return Err(fail(&name, format!("value {k} is not a {}", buffer.fields[0])));
                        }
                    }
                    self = RawTensor { name, format, shape, a, b, values, in_place: None };
                }
            }
        }
        // A csr (csc) array for a CSR (CSC) parameter: its buffers as they are, checked once.
        let this = if matches!(self.format.as_str(), "csr" | "csc") {
            let RawTensor { name, format, shape, a, b, values, .. } = self;
            match heddle_runtime::io::bind::compressed_inputs(kernel, &name, &shape, format == "csr", (a, b, values)) {
                Ok(bound) => return Ok(bound),
                Err((a, b, values)) => RawTensor { name, format, shape, a, b, values, in_place: None },
            }
        } else {
            self
        };
        let t = this.into_tensor(enc, elem)?;
        Ok(heddle_runtime::io::bind::stored_tensor_inputs(kernel, &name, t)?)
    }

    /// The tensor stored in `enc`.
    pub fn into_tensor(self, enc: &Encoding, elem: ScalarType) -> Result<SparseTensor, Fail> {
        let RawTensor { name, format, shape, a, b, values, .. } = self;
        if shape.len() != enc.dims.len() {
            return Err(fail(
                &name,
                format!("a {}-dimensional array for a parameter of {} dimensions", shape.len(), enc.dims.len()),
            ));
        }
        let coo = match format.as_str() {
            "csr" | "csc" => {
                let (indptr, idx) = (indices(a, &name, "indptr")?, indices(b, &name, "indices")?);
                let want = if format == "csr" { (0, 1) } else { (1, 0) };
                if heddle_runtime::sparse::csr::csr_like(enc) == Some(want) {
                    // The parameter stores it this way: take the buffers as they are
                    // (assemble checks them; an unsorted one is converted below).
                    let buffers = Buffers {
                        positions: vec![None, Some(indptr.clone())],
                        coordinates: vec![None, Some(idx.clone())],
                        values: values.clone(),
                    };
                    if let Ok(t) = assemble(enc, elem, shape.clone(), buffers) {
                        return Ok(t);
                    }
                }
                compressed_to_coo(&name, &shape, &indptr, &idx, values, format == "csr")?
            }
            "coo" => {
                let coords = indices(a, &name, "coordinates")?;
                if coords.len() != values.len() * shape.len() {
                    return Err(fail(&name, "coordinates and values differ in length"));
                }
                Coo { dims: shape, coords, values }
            }
            other => return Err(fail(&name, format!("unknown storage {other:?}"))),
        };
        check_coords(&name, &coo)?;
        heddle_runtime::sparse::build::pack(&coo, enc, elem).map_err(|e| fail(&name, e.to_string()))
    }
}

fn check_coords(name: &str, coo: &Coo) -> Result<(), Fail> {
    let r = coo.rank();
    for k in 0..coo.len() {
        for (d, (&c, &size)) in coo.entry(k).iter().zip(&coo.dims).enumerate() {
            if c >= size {
                return Err(fail(
                    name,
                    format!("entry {k}: coordinate {c} of dimension {d} is outside its size {size} (rank {r})"),
                ));
            }
        }
    }
    Ok(())
}

fn compressed_to_coo(
    name: &str,
    shape: &[u64],
    indptr: &[u64],
    idx: &[u64],
    values: ScalarVec,
    rows: bool,
) -> Result<Coo, Fail> {
    let outer = if rows { shape[0] } else { shape[1] } as usize;
    if indptr.len() != outer + 1
        || idx.len() != values.len()
        || indptr.first() != Some(&0)
        || indptr.last().copied() != Some(idx.len() as u64)
        || indptr.windows(2).any(|w| w[0] > w[1])
    {
        return Err(fail(
            name,
            "malformed compressed array: indptr must have one more entry than the compressed dimension, start at 0, never decrease, and end at the number of entries",
        ));
    }
    let mut coords = Vec::with_capacity(2 * idx.len());
    for o in 0..outer {
        for &i in &idx[indptr[o] as usize..indptr[o + 1] as usize] {
            coords.extend_from_slice(&if rows { [o as u64, i] } else { [i, o as u64] });
        }
    }
    Ok(Coo { dims: shape.to_vec(), coords, values })
}

/// The innermost scalar type of an array type.
fn elem_scalar(ty: &Type) -> Option<ScalarType> {
    match ty {
        Type::Scalar(s) => Some(*s),
        Type::Array { elem, .. } | Type::Vector { elem, .. } => elem_scalar(elem),
        _ => None,
    }
}

fn dtype_name(s: ScalarType) -> &'static str {
    match s {
        ScalarType::Bool => "bool",
        ScalarType::I8 => "int8",
        ScalarType::I16 => "int16",
        ScalarType::I32 => "int32",
        ScalarType::I64 => "int64",
        ScalarType::U8 => "uint8",
        ScalarType::U16 => "uint16",
        ScalarType::U32 => "uint32",
        ScalarType::U64 => "uint64",
        ScalarType::F16 => "float16",
        // numpy has no bfloat16: float32 holds every value exactly.
        ScalarType::BF16 => "float32",
        ScalarType::F32 => "float32",
        ScalarType::F64 => "float64",
        ScalarType::C32 => "complex64",
        ScalarType::C64 => "complex128",
    }
}

/// The shape of a rectangular array of scalars, and its scalars in order.
fn rectangular(v: &Value) -> Option<(Vec<usize>, Vec<&Value>)> {
    let mut shape = Vec::new();
    let mut cur = v;
    while let Value::Array(items) = cur {
        shape.push(items.len());
        match items.first() {
            Some(x) => cur = x,
            None => break,
        }
    }
    let mut flat = Vec::with_capacity(shape.iter().product());
    fn walk<'v>(v: &'v Value, depth: usize, shape: &[usize], out: &mut Vec<&'v Value>) -> bool {
        match v {
            Value::Array(items) if depth < shape.len() => {
                items.len() == shape[depth] && items.iter().all(|x| walk(x, depth + 1, shape, out))
            }
            Value::Int(_) | Value::Float(_) | Value::Complex(_) | Value::Bool(_) if depth == shape.len() => {
                out.push(v);
                true
            }
            _ => depth == shape.len() && shape.contains(&0),
        }
    }
    walk(v, 0, &shape, &mut flat).then_some((shape, flat))
}

/// A result, out of the runtime's values (which stay on the thread that
/// ran the kernel), ready to become Python objects.
pub enum Out {
    Int(i64),
    UInt(u64),
    Float(f64),
    /// A complex number (real, imaginary).
    Complex(f64, f64),
    Bool(bool),
    Tuple(Vec<Out>),
    List(Vec<Out>),
    /// A rectangular array of scalars: little-endian bytes of numpy's dtype
    /// `raw` (`<f8`, `<i8` or `u1` from values, any from [`flat_out`]), its
    /// shape, and the numpy dtype to cast to (none: `raw` is it).
    NdArray {
        bytes: Vec<u8>,
        raw: &'static str,
        shape: Vec<usize>,
        dtype: Option<&'static str>,
    },
    Tensor(Box<SparseTensor>),
}

/// A value as an [`Out`]: scalars, rectangular arrays of scalars as numpy
/// arrays of the element type, tuples, other arrays as lists, stored tensors.
pub fn to_out(v: &Value, ty: &Type) -> Out {
    match v {
        Value::Int(i) => match ty {
            Type::Scalar(ScalarType::U8 | ScalarType::U16 | ScalarType::U32 | ScalarType::U64) => Out::UInt(*i as u64),
            _ => Out::Int(*i),
        },
        Value::Float(f) => Out::Float(*f),
        Value::Complex(z) => Out::Complex(z.re, z.im),
        Value::Bool(b) => Out::Bool(*b),
        Value::Tuple(items) => {
            let tys: Vec<Type> = match ty {
                Type::Tuple(ts) if ts.len() == items.len() => ts.clone(),
                _ => vec![Type::Meta(0); items.len()],
            };
            Out::Tuple(items.iter().zip(&tys).map(|(x, t)| to_out(x, t)).collect())
        }
        Value::Tensor(t) => Out::Tensor(Box::new((**t).clone())),
        Value::Array(items) => {
            if let (Some((shape, flat)), Some(s)) = (rectangular(v), elem_scalar(ty)) {
                return nd_array(shape, &flat, s);
            }
            let elem = match ty {
                Type::Array { elem, .. } | Type::Vector { elem, .. } => (**elem).clone(),
                _ => Type::Meta(0),
            };
            Out::List(items.iter().map(|x| to_out(x, &elem)).collect())
        }
    }
}

/// The result of a cpu kernel whose output holds it flat (no result layout,
/// or a flat one) and which is a one-dimensional array of a scalar with a numpy
/// dtype: its bytes copied straight out of that output, `None` otherwise.
pub fn flat_out(
    prog: &heddle_ir::loops::LoopProgram,
    launch: &heddle_runtime::launch::Launch,
    env: &heddle_runtime::interp::Env,
    ty: &Type,
) -> Option<Out> {
    let out = match &prog.result {
        None => launch.output(prog)?,
        Some(heddle_ir::loops::ResultLayout::Flat { buf, ty: flat }) if flat == ty => {
            launch.buffer(prog.args.iter().position(|a| &a.name == buf)?)?
        }
        Some(_) => return None,
    };
    let Type::Array { elem, len, .. } = ty else { return None };
    let Type::Scalar(s) = **elem else { return None };
    // A complex number is the pair of its parts in compiled code: the same bytes.
    let parts = s.is_complex() && out.fields.as_slice() == [s.part(), s.part()];
    if (out.fields.as_slice() != [s] && !parts) || cfg!(target_endian = "big") {
        return None;
    }
    let n = usize::try_from(len.eval(env).ok()?).ok()?;
    if n != out.len() {
        return None;
    }
    let raw = match s {
        ScalarType::Bool | ScalarType::U8 => "u1",
        ScalarType::I8 => "i1",
        ScalarType::I16 => "<i2",
        ScalarType::I32 => "<i4",
        ScalarType::I64 => "<i8",
        ScalarType::U16 => "<u2",
        ScalarType::U32 => "<u4",
        ScalarType::U64 => "<u8",
        ScalarType::F16 => "<f2",
        ScalarType::F32 => "<f4",
        ScalarType::F64 => "<f8",
        ScalarType::C32 => "<c8",
        ScalarType::C64 => "<c16",
        ScalarType::BF16 => return None,
    };
    let cast = (s == ScalarType::Bool).then_some("bool");
    Some(Out::NdArray { bytes: out.bytes().to_vec(), raw, shape: vec![n], dtype: cast })
}

fn nd_array(shape: Vec<usize>, flat: &[&Value], s: ScalarType) -> Out {
    let (bytes, raw): (Vec<u8>, &str) = if s.is_float() {
        (flat.iter().flat_map(|x| x.as_float().unwrap_or(f64::NAN).to_le_bytes()).collect(), "<f8")
    } else if s.is_complex() {
        let parts = |x: &&Value| match x {
            Value::Complex(z) => [z.re, z.im],
            _ => [f64::NAN; 2],
        };
        (flat.iter().flat_map(parts).flat_map(f64::to_le_bytes).collect(), "<c16")
    } else if s == ScalarType::Bool {
        (flat.iter().map(|x| matches!(x, Value::Bool(true)) as u8).collect(), "u1")
    } else {
        (flat.iter().flat_map(|x| x.as_int().unwrap_or(0).to_le_bytes()).collect(), "<i8")
    };
    Out::NdArray { bytes, raw, shape, dtype: Some(dtype_name(s)) }
}

impl Out {
    /// The Python object (the GIL held).
    pub fn to_python(&self, py: Python<'_>) -> PyResult<PyObject> {
        Ok(match self {
            Out::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
            Out::UInt(i) => i.into_pyobject(py)?.into_any().unbind(),
            Out::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
            Out::Complex(re, im) => pyo3::types::PyComplex::from_doubles(py, *re, *im).into_any().unbind(),
            Out::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any().unbind(),
            Out::Tuple(items) => {
                PyTuple::new(py, items.iter().map(|x| x.to_python(py)).collect::<PyResult<Vec<_>>>()?)?
                    .into_any()
                    .unbind()
            }
            Out::List(items) => PyList::new(py, items.iter().map(|x| x.to_python(py)).collect::<PyResult<Vec<_>>>()?)?
                .into_any()
                .unbind(),
            Out::NdArray { bytes, raw, shape, dtype } => {
                let np = numpy(py)?;
                // A writable array over a bytearray of its own.
                let mut array =
                    np.call_method1(pyo3::intern!(py, "frombuffer"), (PyByteArray::new(py, bytes), *raw))?;
                if shape.len() != 1 {
                    array = array.call_method1(pyo3::intern!(py, "reshape"), (PyTuple::new(py, shape)?,))?;
                }
                match dtype {
                    Some(dtype) => array.call_method1(pyo3::intern!(py, "astype"), (*dtype,))?.unbind(),
                    None => array.unbind(),
                }
            }
            Out::Tensor(t) => tensor_dict(py, t)?,
        })
    }
}

/// The numpy module, imported once.
pub(crate) fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static NUMPY: pyo3::sync::GILOnceCell<Py<PyModule>> = pyo3::sync::GILOnceCell::new();
    Ok(NUMPY.get_or_try_init(py, || py.import("numpy").map(Bound::unbind))?.bind(py))
}

/// A stored tensor as a dict: `encoding`, `storage` ("csr", "csc" or
/// "other"), `dim_sizes`, `lvl_sizes`, `positions` and `coordinates` (per
/// level, None where the level has none), `values`, and its entries
/// (`coords`: one row per entry; `entry_values`).
/// Values as a numpy array of their own dtype (int64 beyond 2^53 and uint64
/// stay exact).
fn numpy_values(py: Python<'_>, v: &ScalarVec) -> PyResult<PyObject> {
    let np = py.import("numpy")?;
    // numpy has no bfloat16: float32 holds its values exactly.
    let widened;
    let v = if v.elem() == ScalarType::BF16 {
        widened = v.clone().convert(ScalarType::F32).map_err(|e| input_error(None, e.message))?;
        &widened
    } else {
        v
    };
    let bytes = pyo3::types::PyBytes::new(py, &v.to_le_bytes());
    let dtype = np.getattr("dtype")?.call1((dtype_name(v.elem()),))?.call_method1("newbyteorder", ("<",))?;
    Ok(np.call_method1("frombuffer", (bytes, dtype))?.call_method0("copy")?.unbind())
}

pub fn tensor_dict(py: Python<'_>, t: &SparseTensor) -> PyResult<PyObject> {
    let d = PyDict::new(py);
    let np = py.import("numpy")?;
    let i64s = |v: Vec<u64>| -> PyResult<PyObject> { Ok(np.call_method1("array", (v, "int64"))?.unbind()) };
    d.set_item("__tensor__", true)?;
    d.set_item("encoding", heddle_ir::encoding::print_encoding(&t.encoding))?;
    d.set_item(
        "storage",
        match heddle_runtime::sparse::csr::csr_like(&t.encoding) {
            Some((0, 1)) => "csr",
            Some((1, 0)) => "csc",
            _ => "other",
        },
    )?;
    d.set_item("dim_sizes", t.dim_sizes.clone())?;
    d.set_item("lvl_sizes", t.lvl_sizes.clone())?;
    let positions =
        t.positions.iter().map(|p| p.as_ref().map(|b| i64s(b.to_u64())).transpose()).collect::<PyResult<Vec<_>>>()?;
    let coordinates =
        t.coordinates.iter().map(|c| c.as_ref().map(|b| i64s(b.to_u64())).transpose()).collect::<PyResult<Vec<_>>>()?;
    d.set_item("positions", positions)?;
    d.set_item("coordinates", coordinates)?;
    d.set_item("values", numpy_values(py, &t.values)?)?;
    let coo = t.to_coo();
    let coords = i64s(coo.coords.clone())?;
    let coords = coords.bind(py).call_method1("reshape", ((coo.len(), coo.rank()),))?;
    d.set_item("coords", coords)?;
    d.set_item("entry_values", numpy_values(py, &coo.values)?)?;
    Ok(d.into_any().unbind())
}

/// `heddle.convert`'s low-level half: a matrix (a [`TensorArg`] without a
/// name) stored in `encoding` (as `heddle convert --to` spells it).
#[pyfunction]
#[pyo3(signature = (storage, shape, a, b, values, encoding, elem=None))]
pub fn convert(
    py: Python<'_>,
    storage: String,
    shape: Vec<u64>,
    a: PyObject,
    b: PyObject,
    values: PyObject,
    encoding: &str,
    elem: Option<&str>,
) -> PyResult<PyObject> {
    let enc = heddle::cli::resolve_encoding("encoding", encoding, None, Some(shape.len())).map_err(crate::failure)?;
    let file = heddle::source::SourceFile::new("encoding", encoding);
    let (raw, _) = TensorArg("matrix".into(), storage, shape, a, b, values).extract(py, None)?;
    // Stored at the values' own type, as `heddle convert` keeps a file's,
    // or at `elem` (`--elem`), each value converted once.
    let elem = match elem {
        None => raw.values.elem(),
        Some(e) => ScalarType::from_keyword(e)
            .or_else(|| heddle_ir::parser::mlir_scalar(e))
            .ok_or_else(|| input_error(None, format!("`{e}` is not a scalar type")))?,
    };
    let t = raw.into_tensor(&enc, elem).map_err(|f| f.into_py(&file))?;
    tensor_dict(py, &t)
}

/// `heddle.convert`'s way back: a tensor from its buffers in `encoding`,
/// checked; its entries as a dict (as [`tensor_dict`]).
#[pyfunction]
#[pyo3(signature = (encoding, dim_sizes, positions, coordinates, values))]
pub fn assemble_tensor(
    py: Python<'_>,
    encoding: &str,
    dim_sizes: Vec<u64>,
    positions: Vec<Option<Vec<u64>>>,
    coordinates: Vec<Option<Vec<u64>>>,
    values: PyObject,
) -> PyResult<PyObject> {
    let enc =
        heddle::cli::resolve_encoding("encoding", encoding, None, Some(dim_sizes.len())).map_err(crate::failure)?;
    let values = typed_values(py, &values, "values")?;
    let elem = values.elem();
    let t = assemble(&enc, elem, dim_sizes, Buffers { positions, coordinates, values })
        .map_err(|e| input_error(None, e.to_string()))?;
    tensor_dict(py, &t)
}

//! The fast path of a cpu kernel's call: canonical scipy csr/csc arrays and
//! contiguous float numpy arrays, read where they are, bound by a plan made
//! once per kernel and index width instead of by the general binding.
//!
//! A call of a compiled SpMV from Python spent most of its time around the
//! kernel (docs/performance.md, "Python call overhead"): copying and
//! widening scipy's `int32` indices, the general binding (naturals solved
//! from lengths, environments, names, the layout of the launch), the cache
//! lookup of the compiled code. Here, per kernel and index width:
//!
//! - the kernel is compiled once more with its tensors' coordinates at the
//!   width scipy gives them (`crdWidth = 32` for `int32` indices, native for
//!   `int64`), so the coordinates are read in place, never copied;
//! - a [`Plan`] says where each argument of the loop program comes from
//!   (a shape entry, an array's buffer), so a call fills the launch's slots
//!   directly; lengths are still evaluated from the program's types and
//!   compared, every call.
//!
//! Safety against what Python can do: the offsets (`indptr`, a few bytes
//! per row) are copied, then validated, so the kernel's unchecked position
//! arithmetic reads a snapshot no other thread can change; the coordinates
//! are read in place by the *checked* code, which tests every coordinate
//! before it addresses memory by it, so another Python thread writing them
//! during the call can make a check fail or a sum wrong, never an access
//! out of bounds (`launch::Buffer::borrowed_coordinates`). They are
//! validated in place (in range, strictly increasing in each row: the
//! canonical form the general path takes as it is) unless the kernel reads
//! the tensor only as a sum of its entries' products ([`crate::entries`]),
//! whose result does not depend on that form; a coordinate out of range
//! then fails the kernel's check, and the call goes to the general path,
//! which reports it. Anything else (another
//! dtype, a non-canonical or malformed array, a natural given by hand, a
//! result that is not a flat array) returns `None`, and the caller takes
//! the general path, which converts or reports it.

use crate::data::Fail;
use heddle_codegen_cpu::{CpuKernel, Options};
use heddle_ir::encoding::{Encoding, Width};
use heddle_ir::expr::ExprKind;
use heddle_ir::loops::{ArgKind, LoopProgram, ResultLayout};
use heddle_ir::tensor::{EncodingRef, EncodingText};
use heddle_ir::{ErrorKind, Name, Nat, ScalarType, Type};
use heddle_runtime::cpu::Parallelism;
use heddle_runtime::interp::Env;
use heddle_runtime::launch::{Buffer, Launch, Slot};
use heddle_typeck::{Kernel, KernelParam};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, OnceLock};

/// The width of scipy's indices, which picks the compiled variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexWidth {
    /// `int32` (scipy's usual).
    I32,
    /// `int64`.
    I64,
}

/// A kernel's fast paths, made on first use: its signature, and a plan per
/// index width; `None` where the kernel has none.
#[derive(Default)]
pub struct FastPaths {
    signature: OnceLock<Option<Signature>>,
    by_width: [OnceLock<Option<Plan>>; 2],
}

/// The parameters the fast path binds by name: the same for every width.
pub struct Signature {
    tensors: Vec<TensorParam>,
    arrays: Vec<ArrayParam>,
}

/// A tensor parameter the fast path binds from a scipy array.
struct TensorParam {
    name: String,
    /// `name` as a Python string, made on first use.
    key: Key,
    /// The names its sizes and offsets have in the program (`A_dim0`,
    /// `A_dim1`, `A_pos1`), made once.
    dim_names: [Name; 2],
    pos_name: Name,
    /// "csr" or "csc": the scipy format stored the way the encoding stores it.
    format: &'static str,
    elem: ScalarType,
    /// The declared sizes (`None` for `?`).
    dims: Vec<Option<u64>>,
    /// Whether the kernel reads it only as a sum of its entries' products
    /// ([`crate::entries`]): its coordinates then need no sortedness sweep.
    sum_of_entries: bool,
}

/// An array parameter the fast path binds from a one-dimensional numpy array.
struct ArrayParam {
    name: String,
    /// `name` as a Python string, made on first use.
    key: Key,
    elem: ScalarType,
    /// The length its type gives.
    len: Nat,
}

/// A parameter's name as an interned Python string, made once: looking an
/// input up by a `&str` makes a Python string (and hashes it) every call.
#[derive(Default)]
struct Key(pyo3::sync::GILOnceCell<Py<pyo3::types::PyString>>);

impl Key {
    /// The input `name` of `inputs`, if given.
    fn get<'py>(&self, inputs: &Bound<'py, PyDict>, name: &str) -> Option<Bound<'py, PyAny>> {
        let py = inputs.py();
        let key = self.0.get_or_init(py, || pyo3::types::PyString::intern(py, name).unbind());
        inputs.get_item(key.bind(py)).ok().flatten()
    }
}

/// Where a loop-program argument comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Size `d` of tensor `t` (its shape).
    Dim(usize, usize),
    /// Tensor `t`'s offsets, copied and validated.
    Positions(usize),
    /// Tensor `t`'s coordinates, read in place.
    Coordinates(usize),
    /// Tensor `t`'s values, read in place.
    Values(usize),
    /// Array parameter `k`, read in place.
    Array(usize),
    /// The result, a fresh zeroed buffer.
    Output,
}

/// How to call one compiled variant of a kernel without the general binding.
pub struct Plan {
    program: LoopProgram,
    /// Its checked code (the checks of the program's ranges kept).
    code: Arc<CpuKernel>,
    /// Per argument of the program, in order.
    sources: Vec<Source>,
    /// Per argument of the program, how a call finds the length its type
    /// gives (inputs and the output; unused for the sizes).
    lengths: Vec<Length>,
    /// Per array parameter, how a call finds the length its declared type gives.
    array_lengths: Vec<Length>,
    /// The numpy dtype of the result's elements.
    out_dtype: &'static str,
}

/// How a call finds a length that a type gives: most are a tensor's size
/// (`A_dim1`, `A_dim0 + 1`), read off the shape instead of evaluated in an
/// environment; the rest are evaluated, each distinct expression once.
#[derive(Clone, Copy, Debug)]
enum Length {
    /// Size `d` of tensor `t`, plus a constant.
    Dim(usize, usize, i64),
    /// The same expression as program argument `k`'s, found before it.
    Same(usize),
    /// Evaluated in the call's environment (the sizes and the offsets).
    Eval,
}

/// At most this many program arguments have their lengths remembered
/// within a call (on the stack) for [`Length::Same`].
const REMEMBERED: usize = 16;

/// The [`Length`] of `len`, the type of argument `k` (`None` for an array
/// parameter's), given the earlier arguments' types `before`.
fn length_of(len: &Nat, k: Option<usize>, before: &[Option<&Nat>], tensors: &[TensorParam]) -> Length {
    let dim = |n: &Nat| match n {
        Nat::Var(x) => {
            tensors.iter().enumerate().find_map(|(t, p)| p.dim_names.iter().position(|d| d == x).map(|d| (t, d)))
        }
        _ => None,
    };
    if let Some((t, d)) = dim(len) {
        return Length::Dim(t, d, 0);
    }
    if let Nat::Bin(heddle_ir::nat::NatOp::Add, a, b) = len
        && let (Some((t, d)), Nat::Lit(c)) = (dim(a), &**b)
    {
        return Length::Dim(t, d, *c);
    }
    match k {
        Some(k) if k < REMEMBERED => before.iter().position(|b| *b == Some(len)).map_or(Length::Eval, Length::Same),
        _ => Length::Eval,
    }
}

impl Signature {
    /// The parameters of `kernel`, or `None` where it has one the fast path
    /// does not bind: a natural other than a tensor's size, an array of other
    /// than floats, a tensor stored otherwise than scipy's csr or csc.
    pub fn of(kernel: &Kernel) -> Option<Signature> {
        let mut tensors = Vec::new();
        let mut arrays = Vec::new();
        let mut storage: Vec<String> = Vec::new();
        let mut dims: Vec<String> = Vec::new();
        for p in &kernel.params {
            if let KernelParam::Tensor { name, ty: Type::Tensor(tt), encoding, .. } = p {
                let format = match heddle_runtime::sparse::csr::csr_like(encoding) {
                    Some((0, 1)) => "csr",
                    Some((1, 0)) => "csc",
                    _ => return None,
                };
                if !encoding.strictly_increasing(1)
                    || encoding.explicit_val.is_some()
                    || encoding.implicit_val.is_some()
                    || !matches!(tt.elem, ScalarType::F32 | ScalarType::F64)
                {
                    return None;
                }
                let sizes = tt.static_dims().ok()?;
                storage.extend([format!("{name}_pos1"), format!("{name}_crd1"), format!("{name}_values")]);
                dims.extend((0..2).map(|d| format!("{name}_dim{d}")));
                let dim_names = [Name::from(format!("{name}_dim0")), Name::from(format!("{name}_dim1"))];
                let sum_of_entries = crate::entries::sum_of_entries(kernel, name.as_str());
                tensors.push(TensorParam {
                    name: name.to_string(),
                    key: Key::default(),
                    dim_names,
                    pos_name: Name::from(format!("{name}_pos1")),
                    format,
                    elem: tt.elem,
                    dims: sizes,
                    sum_of_entries,
                });
            }
        }
        for p in &kernel.params {
            match p {
                // A tensor's sizes come from its shape; any other natural is
                // given by hand or solved from lengths: the general path.
                KernelParam::Nat(n) if dims.iter().any(|d| d == n.as_str()) => {}
                KernelParam::Value { name, .. } if storage.iter().any(|s| s == name.as_str()) => {}
                KernelParam::Value { name, ty: Type::Array { binder: None, elem, len }, .. } => match **elem {
                    Type::Scalar(s @ (ScalarType::F32 | ScalarType::F64)) => arrays.push(ArrayParam {
                        name: name.to_string(),
                        key: Key::default(),
                        elem: s,
                        len: len.clone(),
                    }),
                    _ => return None,
                },
                KernelParam::Tensor { .. } => {}
                _ => return None,
            }
        }
        (!tensors.is_empty()).then_some(Signature { tensors, arrays })
    }

    /// How many inputs a call gives (one per parameter).
    fn inputs(&self) -> usize {
        self.tensors.len() + self.arrays.len()
    }
}

impl Plan {
    /// The plan of `kernel` (of signature `sig`) with its tensors'
    /// coordinates at `width`, or `None` where its program is not one the
    /// fast path runs (counting phases, host buffers, scalars, a result that
    /// is not a flat array, requirements to check). `file` is its source
    /// (checked again with the coordinates' width changed).
    pub fn make(
        file: &heddle::source::SourceFile,
        kernel: &Kernel,
        sig: &Signature,
        width: IndexWidth,
    ) -> Option<Plan> {
        let (kernel, program) = variant(file, kernel, width)?;
        if !kernel.obligations.is_empty() || !program.counts.is_empty() || !program.host.is_empty() {
            return None;
        }
        // The result flat in the output (checked with the output below).
        let flat_in = match &program.result {
            None => None,
            Some(ResultLayout::Flat { buf, ty }) if *ty == kernel.body.ty => Some(buf.clone()),
            Some(_) => return None,
        };
        let (tensors, arrays) = (&sig.tensors, &sig.arrays);
        let mut sources = Vec::with_capacity(program.args.len());
        let mut out_dtype = None;
        let tensor_buffer = |name: &str, suffix: &str| {
            tensors.iter().position(|t| name.strip_prefix(t.name.as_str()).is_some_and(|rest| rest == suffix))
        };
        for arg in &program.args {
            let name = arg.name.as_str();
            let source = match &arg.kind {
                ArgKind::Nat => {
                    let (t, d) = (0..2).find_map(|d| tensor_buffer(name, &format!("_dim{d}")).map(|t| (t, d)))?;
                    Source::Dim(t, d)
                }
                ArgKind::Input { fields, .. } => {
                    if let Some(t) = tensor_buffer(name, "_pos1") {
                        (fields.as_slice() == [ScalarType::I64]).then_some(Source::Positions(t))?
                    } else if let Some(t) = tensor_buffer(name, "_crd1") {
                        let want = match width {
                            IndexWidth::I32 => ScalarType::U32,
                            IndexWidth::I64 => ScalarType::I64,
                        };
                        (fields.as_slice() == [want]).then_some(Source::Coordinates(t))?
                    } else if let Some(t) = tensor_buffer(name, "_values") {
                        (fields.as_slice() == [tensors[t].elem]).then_some(Source::Values(t))?
                    } else {
                        let k = arrays.iter().position(|a| a.name == name)?;
                        (fields.as_slice() == [arrays[k].elem]).then_some(Source::Array(k))?
                    }
                }
                ArgKind::Output { fields, .. } => {
                    let ([s], Type::Array { elem, .. }) = (fields.as_slice(), &kernel.body.ty) else { return None };
                    if **elem != Type::Scalar(*s)
                        || out_dtype.is_some()
                        || flat_in.as_ref().is_some_and(|b| *b != arg.name)
                    {
                        return None;
                    }
                    out_dtype = Some(match s {
                        ScalarType::F32 => "float32",
                        ScalarType::F64 => "float64",
                        _ => return None,
                    });
                    Source::Output
                }
                ArgKind::Scalar(_) | ArgKind::Host => return None,
            };
            sources.push(source);
        }
        // Every input is read by the program (else the general path checks it).
        for (t, _) in tensors.iter().enumerate() {
            let reads = |f: &dyn Fn(&Source) -> bool| sources.iter().any(f);
            if !reads(&|s| matches!(s, Source::Positions(j) if *j == t))
                || !reads(&|s| matches!(s, Source::Coordinates(j) if *j == t))
                || !reads(&|s| matches!(s, Source::Values(j) if *j == t))
            {
                return None;
            }
        }
        if (0..arrays.len()).any(|k| !sources.iter().any(|s| matches!(s, Source::Array(j) if *j == k))) {
            return None;
        }
        // Each buffer fills one argument (a call moves it into the launch).
        if sources.iter().enumerate().any(|(k, s)| !matches!(s, Source::Dim(..)) && sources[..k].contains(s)) {
            return None;
        }
        // The checked code: the checks of the program's ranges kept.
        let code = heddle_runtime::cpu::compile_cached_with(&program, &Options::default()).ok()?;
        fn arg_len(a: &heddle_ir::loops::Arg) -> Option<&Nat> {
            match &a.kind {
                ArgKind::Input { len, .. } | ArgKind::Output { len, .. } => Some(len),
                _ => None,
            }
        }
        let lens: Vec<Option<&Nat>> = program.args.iter().map(arg_len).collect();
        let lengths = lens
            .iter()
            .enumerate()
            .map(|(k, len)| len.map_or(Length::Eval, |len| length_of(len, Some(k), &lens[..k], tensors)))
            .collect();
        let array_lengths = arrays.iter().map(|a| length_of(&a.len, None, &[], tensors)).collect();
        Some(Plan { program, code, sources, lengths, array_lengths, out_dtype: out_dtype? })
    }
}

/// `kernel` checked again with every tensor parameter's positions at the
/// native width and coordinates at `width`, and its loop program; the
/// kernel itself where that changes nothing; `None` where the variant does
/// not check, or its tensors' views or its result type differ.
fn variant(file: &heddle::source::SourceFile, kernel: &Kernel, width: IndexWidth) -> Option<(Kernel, LoopProgram)> {
    let crd_width = match width {
        IndexWidth::I32 => Width::W32,
        IndexWidth::I64 => Width::Native,
    };
    let widened = |enc: &Encoding| Encoding { pos_width: Width::Native, crd_width, ..enc.clone() };
    let changed: Vec<(Name, Encoding)> = kernel
        .params
        .iter()
        .filter_map(|p| match p {
            KernelParam::Tensor { name, encoding, .. } if widened(encoding) != *encoding => {
                Some((name.clone(), widened(encoding)))
            }
            _ => None,
        })
        .collect();
    let name = heddle::cli::kernel_name(file);
    if changed.is_empty() {
        return Some((kernel.clone(), heddle::cpu::lower(kernel, &name).ok()?));
    }
    let (mut program, _) = heddle::check_source(file).ok()?;
    // The kernel's parameters: the `fun`s and `nFun`s around its body.
    let mut cur = &mut program.kernel;
    loop {
        match &mut cur.kind {
            ExprKind::NFun { body, .. } => cur = body,
            ExprKind::Fun { params, body } => {
                for p in params.iter_mut() {
                    let Some(Type::Tensor(tt)) = &mut p.ty else { continue };
                    if let Some((_, enc)) = changed.iter().find(|(n, _)| *n == p.name) {
                        let text = heddle_ir::encoding::print_encoding(enc);
                        // The name's place: the text is printed, not the user's.
                        tt.encoding = Some(EncodingRef::Inline(EncodingText { text, span: p.span }));
                    }
                }
                cur = body;
            }
            _ => break,
        }
    }
    let variant = heddle_typeck::check_program(&program).ok()?;
    // Only the storage differs: the body sees the same tensors (coordinates
    // as `int`, widened where they are read) and gives the same result.
    let views = |k: &Kernel| -> Vec<Type> {
        k.params
            .iter()
            .filter_map(|p| match p {
                KernelParam::Tensor { view, .. } => Some(view.clone()),
                _ => None,
            })
            .collect()
    };
    if variant.body.ty != kernel.body.ty || views(&variant) != views(kernel) {
        return None;
    }
    let program = heddle::cpu::lower(&variant, &name).ok()?;
    Some((variant, program))
}

/// A Python buffer read in place during a call; dropped with the GIL held.
enum Held {
    I32(PyBuffer<i32>),
    I64(PyBuffer<i64>),
    F32(PyBuffer<f32>),
    F64(PyBuffer<f64>),
}

impl Held {
    /// The first element and the count of a one-dimensional C-contiguous buffer.
    fn view(&self) -> Option<(*const u8, usize)> {
        fn of<T: pyo3::buffer::Element>(b: &PyBuffer<T>) -> Option<(*const u8, usize)> {
            // PyO3 takes any byte order for `T`: only the machine's own is read as it is.
            let native = cfg!(target_endian = "little") && !matches!(b.format().to_bytes().first(), Some(b'>' | b'!'));
            (native && b.dimensions() == 1 && b.is_c_contiguous())
                .then(|| (b.buf_ptr().cast::<u8>().cast_const(), b.item_count()))
        }
        match self {
            Held::I32(b) => of(b),
            Held::I64(b) => of(b),
            Held::F32(b) => of(b),
            Held::F64(b) => of(b),
        }
    }
}

/// One tensor's buffers out of Python.
struct TensorIn {
    shape: (u64, u64),
    indptr: Held,
    indices: Held,
    values: Held,
}

/// The width of a scipy array's indices and its buffers, or `None`.
fn tensor_in(obj: &Bound<'_, PyAny>, param: &TensorParam) -> Option<(IndexWidth, TensorIn)> {
    let py = obj.py();
    let format = obj.getattr(pyo3::intern!(py, "format")).ok()?;
    if format.extract::<&str>().ok()? != param.format {
        return None;
    }
    let shape: (u64, u64) = obj.getattr(pyo3::intern!(py, "shape")).ok()?.extract().ok()?;
    let ints = |attr: &Bound<'_, pyo3::types::PyString>| -> Option<Held> {
        let a = obj.getattr(attr).ok()?;
        match PyBuffer::<i32>::get(&a) {
            Ok(b) => Some(Held::I32(b)),
            Err(_) => PyBuffer::<i64>::get(&a).ok().map(Held::I64),
        }
    };
    let indptr = ints(pyo3::intern!(py, "indptr"))?;
    let indices = ints(pyo3::intern!(py, "indices"))?;
    let width = match (&indptr, &indices) {
        (Held::I32(_), Held::I32(_)) => IndexWidth::I32,
        (Held::I64(_), Held::I64(_)) => IndexWidth::I64,
        _ => return None,
    };
    let data = obj.getattr(pyo3::intern!(py, "data")).ok()?;
    let values = floats(&data, param.elem)?;
    Some((width, TensorIn { shape, indptr, indices, values }))
}

/// A buffer of floats of type `elem`.
fn floats(obj: &Bound<'_, PyAny>, elem: ScalarType) -> Option<Held> {
    match elem {
        ScalarType::F32 => PyBuffer::<f32>::get(obj).ok().map(Held::F32),
        ScalarType::F64 => PyBuffer::<f64>::get(obj).ok().map(Held::F64),
        _ => None,
    }
}

/// Calls the kernel through its fast path, once and then `reps` more times
/// (timed, the kernel alone): the result as a numpy array and the
/// repetitions' seconds, or `None` where the inputs are not what the fast
/// path binds (the caller then takes the general path). `signature` and
/// `plan` make the kernel's signature and the plan of a width, on first use
/// (without the GIL).
pub fn call(
    py: Python<'_>,
    paths: &FastPaths,
    inputs: &Bound<'_, PyDict>,
    threads: Parallelism,
    reps: usize,
    signature: impl FnOnce() -> Option<Signature> + Send,
    plan: impl FnOnce(&Signature, IndexWidth) -> Option<Plan> + Send,
) -> Result<Option<(PyObject, Vec<f64>)>, Fail> {
    let sig = match paths.signature.get() {
        Some(sig) => sig.as_ref(),
        None => py.allow_threads(|| paths.signature.get_or_init(signature).as_ref()),
    };
    let Some(sig) = sig else { return Ok(None) };
    if inputs.len() != sig.inputs() {
        return Ok(None);
    }
    let mut width = None;
    let mut tensors = Vec::with_capacity(sig.tensors.len());
    for param in &sig.tensors {
        let Some(obj) = param.key.get(inputs, &param.name) else { return Ok(None) };
        let Some((w, t)) = tensor_in(&obj, param) else { return Ok(None) };
        if width.is_some_and(|x| x != w) {
            return Ok(None);
        }
        width = Some(w);
        tensors.push(t);
    }
    let mut arrays = Vec::with_capacity(sig.arrays.len());
    for param in &sig.arrays {
        let Some(obj) = param.key.get(inputs, &param.name) else { return Ok(None) };
        let Some(held) = floats(&obj, param.elem) else { return Ok(None) };
        arrays.push(held);
    }
    let width = width.unwrap_or(IndexWidth::I64);
    let outcome = py.allow_threads(|| {
        let plan = paths.by_width[width as usize].get_or_init(|| plan(sig, width)).as_ref()?;
        Some(
            run(plan, sig, &tensors, &arrays, threads, reps)
                .map(|out| out.map(|(o, times)| (o, times, plan.out_dtype))),
        )
    });
    // The Python buffers stay held until here: every runtime buffer made of them is gone.
    let result = match outcome {
        None | Some(Ok(None)) => Ok(None),
        Some(Ok(Some((Output { buffer, array }, times, dtype)))) => match array {
            // The kernel wrote the numpy array itself.
            Some(array) if buffer.writes_in_place_at(array.data) => {
                drop(buffer);
                Ok(array.object)
            }
            _ => {
                let _p = heddle_runtime::profile::phase(|| "fast path: the result to numpy".into());
                to_numpy(py, &buffer, dtype)
            }
        }
        .map(|array| Some((array, times)))
        .map_err(|e| Fail::Input(None, e.to_string())),
        Some(Err(fail)) => Err(fail),
    };
    drop((tensors, arrays));
    result
}

/// A fresh zeroed numpy array and the address of its data.
struct NumpyOut {
    object: PyObject,
    data: *const u8,
}

// SAFETY: the address is only compared, never dereferenced, away from the
// GIL; the array itself (`PyObject`) is `Send`.
unsafe impl Send for NumpyOut {}

/// The kernel's output: its buffer, and the numpy array it was lent (the
/// buffer then writes the array's memory in place, unless a shared write
/// copied it: `Buffer::writes_in_place_at` tells).
struct Output {
    buffer: Buffer,
    array: Option<NumpyOut>,
}

/// Results smaller than this many bytes are copied into their numpy array
/// after the kernel: taking the GIL again for `numpy.zeros` costs a few
/// microseconds, more than copying them (and their pages are recycled).
const LEND_FROM_BYTES: usize = 1 << 16;

/// The kernel's output buffer of `n` records of `elem`: a numpy array's
/// memory, lent (`numpy.zeros`, so the kernel's writes are its first touch
/// of the pages and nothing is copied afterwards), or a buffer of its own
/// for a small result or where numpy's array does not fit.
fn output_buffer(elem: ScalarType, n: usize) -> Result<Output, Fail> {
    let own = |array| {
        Buffer::try_zeroed(vec![elem], n, "the result")
            .map(|buffer| Output { buffer, array })
            .map_err(|m| Fail::Input(None, m))
    };
    let dtype = match elem {
        _ if n.saturating_mul(elem.size_bytes()) < LEND_FROM_BYTES => return own(None),
        ScalarType::F32 => "float32",
        ScalarType::F64 => "float64",
        _ => return own(None),
    };
    let lent = Python::with_gil(|py| -> PyResult<Option<(PyObject, *mut u8)>> {
        let array = zeros(py, n, dtype)?;
        let ptr = match elem {
            ScalarType::F32 => writable_ptr::<f32>(&array, n)?,
            _ => writable_ptr::<f64>(&array, n)?,
        };
        Ok(ptr.map(|p| (array.unbind(), p)))
    })
    .map_err(|e| Fail::Input(None, e.to_string()))?;
    let Some((object, ptr)) = lent else { return own(None) };
    // SAFETY: a fresh array from `numpy.zeros` (zeroed), C-contiguous and
    // writable, of exactly `n` elements (`writable_ptr` checked); no one
    // else holds it until `call` hands it to Python, after the buffer is
    // gone, and it is kept alive (`object`) until then.
    match unsafe { Buffer::lent_output(elem, ptr, n, "the result") } {
        Ok(Some(buffer)) => Ok(Output { buffer, array: Some(NumpyOut { object, data: ptr.cast_const() }) }),
        Ok(None) => own(None),
        Err(m) => Err(Fail::Input(None, m)),
    }
}

/// `numpy.zeros(n, dtype)`, with numpy's function and the dtypes looked up once.
fn zeros<'py>(py: Python<'py>, n: usize, dtype: &str) -> PyResult<Bound<'py, PyAny>> {
    static ZEROS: pyo3::sync::GILOnceCell<(PyObject, PyObject, PyObject)> = pyo3::sync::GILOnceCell::new();
    let (zeros, f32s, f64s) = ZEROS.get_or_try_init(py, || -> PyResult<_> {
        let np = crate::data::numpy(py)?;
        let dtype = |name: &str| np.getattr("dtype").and_then(|d| d.call1((name,))).map(Bound::unbind);
        Ok((np.getattr("zeros")?.unbind(), dtype("float32")?, dtype("float64")?))
    })?;
    zeros.bind(py).call1((n, if dtype == "float32" { f32s } else { f64s }.bind(py)))
}

/// The data of `array`, a fresh numpy array of `n` `T`s, if it is writable
/// and C-contiguous (the buffer view is released on return; the array keeps
/// its memory, which no one else can resize: no one else holds the array).
fn writable_ptr<T: pyo3::buffer::Element>(array: &Bound<'_, PyAny>, n: usize) -> PyResult<Option<*mut u8>> {
    let view = PyBuffer::<T>::get(array)?;
    let fits = !view.readonly() && view.is_c_contiguous() && view.item_count() == n;
    Ok(fits.then(|| view.buf_ptr().cast::<u8>()))
}

/// Binds and runs (without the GIL), once and then `reps` more times: the
/// output and the repetitions' seconds, `Ok(None)` where the inputs are not
/// for the fast path.
fn run(
    plan: &Plan,
    sig: &Signature,
    tensors: &[TensorIn],
    arrays: &[Held],
    threads: Parallelism,
    reps: usize,
) -> Result<Option<(Output, Vec<f64>)>, Fail> {
    use heddle_runtime::profile::phase;
    let validating = phase(|| "fast path: copy the offsets, validate".into());
    // Offsets: copied, then validated with the coordinates they delimit.
    let mut positions = Vec::with_capacity(tensors.len());
    let mut coordinates = Vec::with_capacity(tensors.len());
    let mut values = Vec::with_capacity(tensors.len());
    for (t, param) in tensors.iter().zip(&sig.tensors) {
        let (rows, cols) = t.shape;
        if param.dims.iter().zip([rows, cols]).any(|(want, got)| want.is_some_and(|w| w != got)) {
            return Ok(None);
        }
        let (outer, inner) = if param.format == "csr" { (rows, cols) } else { (cols, rows) };
        let (Some((pp, np)), Some((cp, nc)), Some((vp, nv))) = (t.indptr.view(), t.indices.view(), t.values.view())
        else {
            return Ok(None);
        };
        if nv != nc {
            return Ok(None);
        }
        // SAFETY (both arms): a C-contiguous buffer of `np` (`nc`) elements of
        // the held type, exported (neither freed nor resized) while `t` lives,
        // which outlives this call. Another thread may write it meanwhile:
        // the offsets are copied first, and the coordinates only validated
        // here (the kernel checks them again at every use).
        let (pos, ok, elem) = unsafe {
            match (&t.indptr, &t.indices) {
                (Held::I32(_), Held::I32(_)) if pp.cast::<i32>().is_aligned() && cp.cast::<i32>().is_aligned() => {
                    let (pos, ok) = checked_offsets(std::slice::from_raw_parts(pp.cast::<i32>(), np), outer, nc);
                    let ok = ok
                        && (param.sum_of_entries
                            || heddle_runtime::io::bind::canonical_compressed(
                                &pos,
                                std::slice::from_raw_parts(cp.cast::<i32>(), nc),
                                outer,
                                inner,
                            ));
                    (pos, ok, ScalarType::U32)
                }
                (Held::I64(_), Held::I64(_)) if pp.cast::<i64>().is_aligned() && cp.cast::<i64>().is_aligned() => {
                    let (pos, ok) = checked_offsets(std::slice::from_raw_parts(pp.cast::<i64>(), np), outer, nc);
                    let ok = ok
                        && (param.sum_of_entries
                            || heddle_runtime::io::bind::canonical_compressed(
                                &pos,
                                std::slice::from_raw_parts(cp.cast::<i64>(), nc),
                                outer,
                                inner,
                            ));
                    (pos, ok, ScalarType::I64)
                }
                _ => return Ok(None),
            }
        };
        if !ok {
            return Ok(None);
        }
        // SAFETY: as above; the plan's code is the checked code, which
        // tests every coordinate before addressing memory by it.
        let crd = unsafe { Buffer::borrowed_coordinates(elem, cp, nc, "the coordinates") };
        // SAFETY: as above (floats: a change gives wrong sums only).
        let vals = unsafe { Buffer::borrowed(param.elem, vp, nv, "the values") };
        let (Ok(Some(crd)), Ok(Some(vals)), Ok(pos)) =
            (crd, vals, Buffer::from_scalar_vec(heddle_runtime::scalars::ScalarVec::I64(pos), "the offsets"))
        else {
            return Ok(None);
        };
        positions.push(pos);
        coordinates.push(crd);
        values.push(vals);
    }
    drop(validating);
    let binding = phase(|| "fast path: bind, lengths, the launch".into());
    let mut inputs = Vec::with_capacity(arrays.len());
    for (a, param) in arrays.iter().zip(&sig.arrays) {
        let Some((ptr, n)) = a.view() else { return Ok(None) };
        // SAFETY: as for the values above.
        let Ok(Some(b)) = (unsafe { Buffer::borrowed(param.elem, ptr, n, "an array") }) else { return Ok(None) };
        inputs.push(b);
    }
    // The environment the other lengths are evaluated in: the sizes, and
    // the offsets (`toNat(A_pos1@…)`); made only where a length needs it.
    let needs_env =
        plan.lengths.iter().zip(&plan.sources).any(|(l, s)| matches!(l, Length::Eval) && !matches!(s, Source::Dim(..)))
            || plan.array_lengths.iter().any(|l| matches!(l, Length::Eval));
    let mut env = Env::default();
    if needs_env {
        for (t, param) in tensors.iter().zip(&sig.tensors) {
            env = env
                .with_nat(param.dim_names[0].clone(), t.shape.0 as i64)
                .with_nat(param.dim_names[1].clone(), t.shape.1 as i64);
        }
        for (k, param) in sig.tensors.iter().enumerate() {
            env = env.with_buffer(param.pos_name.clone(), positions[k].clone());
        }
    }
    let mut remembered = [0usize; REMEMBERED];
    let length = |how: Length, len: &Nat, remembered: &[usize]| -> Option<usize> {
        let n = match how {
            Length::Dim(t, d, plus) => {
                i64::try_from(if d == 0 { tensors[t].shape.0 } else { tensors[t].shape.1 }).ok()?.checked_add(plus)?
            }
            Length::Same(k) => return remembered.get(k).copied(),
            Length::Eval => len.eval(&env).ok()?,
        };
        usize::try_from(n).ok()
    };
    for ((b, param), how) in inputs.iter().zip(&sig.arrays).zip(&plan.array_lengths) {
        if length(*how, &param.len, &remembered) != Some(b.len()) {
            return Ok(None);
        }
    }
    // Every input exactly as long as the program's type of it says, and the
    // result's length.
    let mut out_len = None;
    for (k, ((source, arg), how)) in plan.sources.iter().zip(&plan.program.args).zip(&plan.lengths).enumerate() {
        let (len, have) = match (*source, &arg.kind) {
            (Source::Dim(..), _) => continue,
            (Source::Output, ArgKind::Output { len, .. }) => (len, None),
            (Source::Positions(t), ArgKind::Input { len, .. }) => (len, Some(positions[t].len())),
            (Source::Coordinates(t), ArgKind::Input { len, .. }) => (len, Some(coordinates[t].len())),
            (Source::Values(t), ArgKind::Input { len, .. }) => (len, Some(values[t].len())),
            (Source::Array(k), ArgKind::Input { len, .. }) => (len, Some(inputs[k].len())),
            _ => return Ok(None),
        };
        let Some(n) = length(*how, len, &remembered) else { return Ok(None) };
        if let Some(slot) = remembered.get_mut(k) {
            *slot = n;
        }
        match have {
            Some(have) if have != n => return Ok(None),
            Some(_) => {}
            None => out_len = Some(n),
        }
    }
    drop(env);
    // The buffers move into the launch (a `Buffer` clone allocates): the
    // plan uses each at most once.
    let take = |bufs: &mut Vec<Option<Buffer>>, k: usize| bufs.get_mut(k).and_then(Option::take);
    let (mut positions, mut coordinates, mut values, mut inputs) = (
        positions.into_iter().map(Some).collect(),
        coordinates.into_iter().map(Some).collect(),
        values.into_iter().map(Some).collect(),
        inputs.into_iter().map(Some).collect(),
    );
    let mut slots = Vec::with_capacity(plan.sources.len());
    let mut lent = None;
    for (source, arg) in plan.sources.iter().zip(&plan.program.args) {
        let buffer = match *source {
            Source::Dim(t, d) => {
                slots.push(Slot::Nat(if d == 0 { tensors[t].shape.0 } else { tensors[t].shape.1 } as i64));
                continue;
            }
            Source::Positions(t) => take(&mut positions, t),
            Source::Coordinates(t) => take(&mut coordinates, t),
            Source::Values(t) => take(&mut values, t),
            Source::Array(k) => take(&mut inputs, k),
            Source::Output => {
                let (ArgKind::Output { fields, .. }, Some(n)) = (&arg.kind, out_len) else { return Ok(None) };
                let [elem] = fields.as_slice() else { return Ok(None) };
                let out = output_buffer(*elem, n)?;
                lent = out.array;
                Some(out.buffer)
            }
        };
        let Some(buffer) = buffer else { return Ok(None) };
        slots.push(Slot::Buffer(buffer));
    }
    let mut launch = Launch { slots };
    drop(binding);
    let _kernel = phase(|| "fast path: the kernel".into());
    let plan_split =
        heddle_runtime::cpu::plan_with(&plan.program, &plan.code, &mut launch, threads.threads, threads.threshold);
    match heddle_runtime::cpu::execute(&plan.program, &plan.code, &mut launch, &plan_split) {
        Ok(()) => {
            drop(_kernel);
            let times = if reps == 0 { Vec::new() } else { repeat(plan, &mut launch, threads, reps)? };
            // The output out of the launch, not cloned (the launch is done).
            let at = plan.sources.iter().position(|s| matches!(s, Source::Output));
            match at.map(|k| launch.slots.swap_remove(k)) {
                Some(Slot::Buffer(buffer)) => Ok(Some((Output { buffer, array: lent }, times))),
                _ => Ok(None),
            }
        }
        // Coordinates not swept: a check failed on one out of range. The
        // general path validates them and names the parameter.
        Err(_) if sig.tensors.iter().any(|t| t.sum_of_entries) => Ok(None),
        // Validated coordinates: only another thread writing one during the
        // call can make a check fail; reported as the general path reports
        // a check that fails.
        Err(d) => Err(Fail::Source(vec![d.or_kind(ErrorKind::Runtime)])),
    }
}

/// Runs `launch` `reps` more times, as `heddle run --reps` does (arguments
/// packed and the split planned once, then the kernel alone timed): the
/// seconds of each. The inputs are the same as the run before, which passed.
fn repeat(plan: &Plan, launch: &mut Launch, threads: Parallelism, reps: usize) -> Result<Vec<f64>, Fail> {
    let _p = heddle_runtime::profile::phase(|| format!("fast path: the kernel ({reps} timed runs)"));
    let failed = |d: heddle_ir::Diagnostic| Fail::Source(vec![d.or_kind(ErrorKind::Runtime)]);
    let mut ready = heddle_runtime::cpu::Ready::new(&plan.program, launch, threads).map_err(failed)?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = std::time::Instant::now();
        ready.run().map_err(failed)?;
        times.push(start.elapsed().as_secs_f64());
    }
    Ok(times)
}

/// The offsets `indptr` of a compressed array of `outer` rows (columns) and
/// `nnz` entries, copied at 64 bits, and whether they are well formed: from
/// 0 to `nnz`, never decreasing.
fn checked_offsets<T: Copy + Into<i64> + PartialOrd>(indptr: &[T], outer: u64, nnz: usize) -> (Vec<i64>, bool) {
    let pos: Vec<i64> = indptr.iter().map(|&x| x.into()).collect();
    // The descents counted over two shifted slices of the source, in 32-bit
    // lanes per block: it vectorises (a fold over `windows` did not, and
    // took a quarter of a 20 000-nonzero call's binding).
    let (next, prev) = (indptr.get(1..).unwrap_or(&[]), indptr.get(..indptr.len().saturating_sub(1)).unwrap_or(&[]));
    let mut descents = 0u64;
    for (next, prev) in next.chunks(1 << 30).zip(prev.chunks(1 << 30)) {
        let mut block = 0u32;
        for (&b, &a) in next.iter().zip(prev) {
            block += u32::from(b < a);
        }
        descents += u64::from(block);
    }
    let ends =
        pos.len() as u64 == outer.saturating_add(1) && pos.first() == Some(&0) && pos.last() == Some(&(nnz as i64));
    (pos, descents == 0 && ends)
}

/// A numpy array of `dtype` holding the output's records.
fn to_numpy(py: Python<'_>, out: &Buffer, dtype: &'static str) -> PyResult<PyObject> {
    // `numpy.empty` and the dtypes, looked up once (a dtype named by a
    // string is parsed at every call).
    static EMPTY: pyo3::sync::GILOnceCell<(PyObject, PyObject, PyObject)> = pyo3::sync::GILOnceCell::new();
    let (empty, f32s, f64s) = EMPTY.get_or_try_init(py, || -> PyResult<_> {
        let np = crate::data::numpy(py)?;
        let dtype = |name: &str| np.getattr("dtype").and_then(|d| d.call1((name,))).map(Bound::unbind);
        Ok((np.getattr("empty")?.unbind(), dtype("float32")?, dtype("float64")?))
    })?;
    let dtype_object = if dtype == "float32" { f32s } else { f64s };
    let array = empty.bind(py).call1((out.len(), dtype_object.bind(py)))?;
    match dtype {
        "float32" => fill::<f32>(&array, out.bytes())?,
        _ => fill::<f64>(&array, out.bytes())?,
    }
    Ok(array.unbind())
}

/// Copies `bytes` into the fresh numpy array `array` of `T`s.
fn fill<T: pyo3::buffer::Element>(array: &Bound<'_, PyAny>, bytes: &[u8]) -> PyResult<()> {
    let target = PyBuffer::<T>::get(array)?;
    if target.readonly() || !target.is_c_contiguous() || target.len_bytes() != bytes.len() {
        return Err(crate::errors::Error::new_err("numpy.empty gave an array the result does not fit"));
    }
    // SAFETY: a writable, C-contiguous buffer of exactly `bytes.len()` bytes,
    // fresh (no one else holds it), exported while `target` lives.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), target.buf_ptr().cast::<u8>(), bytes.len()) };
    Ok(())
}

//! `heddle.compile`: a checked kernel, compiled for a backend, that runs on
//! bound inputs.

use crate::data::{self, ArrayArg, Fail, Out, TensorArg};
use crate::errors::{DeviceError, source_error};
use heddle::source::SourceFile;
use heddle_ir::loops::LoopProgram;
use heddle_ir::{Diagnostic, ErrorKind};
use heddle_runtime::cpu::Parallelism;
use heddle_runtime::interp::Env;
use heddle_runtime::value::Value;
use heddle_typeck::{Kernel, KernelParam};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

enum Backend {
    Interp,
    Cpu { program: LoopProgram, threads: Parallelism },
    Opencl { cl: heddle_runtime::opencl::OpenCl, compiled: heddle::opencl::Compiled },
}

/// A compiled kernel (made by `heddle.compile`). It is checked and compiled
/// on a thread of its own, with the big stack the front end needs. A cpu
/// kernel then comes back to be shared ([`Runner::Shared`]): its kernel and
/// machine code are thread-safe, and a call runs on the calling thread with
/// the GIL released (the runtime's values, reference-counted without
/// atomics, are made and dropped there). The interpreter's and OpenCL's
/// stay on that thread ([`Runner::Worker`]): calls are sent to it, one at
/// a time, and wait for its answer without the GIL. Any Python thread may call.
#[pyclass(module = "heddle._heddle")]
pub struct Compiled {
    runner: Runner,
    file: SourceFile,
    ty: String,
    result_type: String,
    backend: &'static str,
    params: Vec<(String, &'static str, String, Option<&'static str>)>,
    /// A cpu kernel's fast path (see [`crate::fast`]), made on first use.
    fast: crate::fast::FastPaths,
}

/// Where a call runs.
enum Runner {
    /// On the kernel's thread, sent over the channel.
    Worker(Mutex<mpsc::Sender<Request>>),
    /// On the calling thread (or, for a kernel too deeply nested for an
    /// ordinary thread's stack, on a big-stack thread of its own).
    Shared(Arc<Inner>),
}

/// One call: the inputs copied out of Python, and where the answer goes.
struct Request {
    nats: Vec<(String, i64)>,
    arrays: Vec<data::RawArray>,
    tensors: Vec<data::RawTensor>,
    reps: usize,
    reply: mpsc::Sender<Result<(Out, Vec<f64>), Fail>>,
}

/// The kernel and its compiled code.
struct Inner {
    kernel: Kernel,
    backend: Backend,
    /// Whether a call may run on an ordinary thread's stack (see [`shallow`]).
    shallow: bool,
}

// A cpu kernel is shared between Python threads ([`Runner::Shared`]).
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Kernel>();
    shared::<LoopProgram>();
    shared::<Parallelism>();
};

/// What the worker reports once the kernel is compiled.
struct Ready {
    ty: String,
    result_type: String,
    backend: &'static str,
    params: Vec<(String, &'static str, String, Option<&'static str>)>,
    /// A cpu kernel, to be shared.
    shared: Option<Arc<Inner>>,
}

#[pyfunction]
#[pyo3(signature = (source, backend, filename, threads=None, device=None))]
/// Parses, checks and compiles a kernel (the low-level half of `heddle.compile`).
pub fn compile(
    py: Python<'_>,
    source: &str,
    backend: &str,
    filename: &str,
    threads: Option<usize>,
    device: Option<usize>,
) -> PyResult<Compiled> {
    if !matches!(backend, "interp" | "cpu" | "opencl") {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "backend must be \"cpu\", \"opencl\" or \"interp\", not {backend:?}"
        )));
    }
    if threads == Some(0) {
        return Err(crate::errors::input_error(None, "threads must be at least 1"));
    }
    let file = SourceFile::new(filename, source);
    let (built_tx, built_rx) = mpsc::channel::<Result<Ready, Build>>();
    let (tx, rx) = mpsc::channel::<Request>();
    let (worker_file, backend) = (file.clone(), backend.to_string());
    let spawned =
        std::thread::Builder::new().name("heddle-kernel".into()).stack_size(crate::BIG_STACK).spawn(move || {
            let inner = match build(&worker_file, &backend, threads, device) {
                Ok(inner) => inner,
                Err(e) => {
                    let _ = built_tx.send(Err(e));
                    return;
                }
            };
            let mut ready = inner.describe();
            if let Backend::Cpu { .. } = inner.backend {
                // Thread-safe: it leaves this thread, which ends.
                ready.shared = Some(Arc::new(inner));
                let _ = built_tx.send(Ok(ready));
                return;
            }
            let _ = built_tx.send(Ok(ready));
            // Until the Compiled is dropped (its sender with it).
            for request in rx {
                let answer = inner.bind_and_run(request.nats, request.arrays, request.tensors, request.reps);
                let _ = request.reply.send(answer);
            }
        });
    if let Err(e) = spawned {
        return Err(crate::errors::Error::new_err(format!("cannot start the kernel's thread: {e}")));
    }
    let built = py.allow_threads(move || built_rx.recv());
    match built {
        Ok(Ok(r)) => Ok(Compiled {
            runner: match r.shared {
                Some(inner) => Runner::Shared(inner),
                None => Runner::Worker(Mutex::new(tx)),
            },
            file,
            ty: r.ty,
            result_type: r.result_type,
            backend: r.backend,
            params: r.params,
            fast: Default::default(),
        }),
        Ok(Err(Build::Source(d))) => Err(source_error(&file, &d)),
        Ok(Err(Build::Input(m))) => Err(crate::errors::input_error(None, m)),
        Ok(Err(Build::Device(m))) => Err(DeviceError::new_err(m)),
        Err(_) => Err(crate::errors::Error::new_err("the kernel's thread ended while compiling (a panic)")),
    }
}

enum Build {
    Source(Vec<Diagnostic>),
    Input(String),
    Device(String),
}

/// Checks and compiles (on the big stack).
fn build(file: &SourceFile, backend: &str, threads: Option<usize>, device: Option<usize>) -> Result<Inner, Build> {
    let (_, kernel) = match heddle::check_source(file) {
        Ok(k) => k,
        Err(d) => return Err(Build::Source(d)),
    };
    let name = heddle::cli::kernel_name(file);
    let backend = match backend {
        "cpu" => {
            let threads = match threads {
                Some(n) => n,
                None => heddle_runtime::cpu::threads_from_env()
                    .map_err(Build::Input)?
                    .unwrap_or_else(heddle_runtime::cpu::default_threads),
            };
            let lowered = heddle::cpu::lower(&kernel, &name).and_then(|p| heddle::cpu::compile(&p).map(|()| p));
            match lowered {
                Ok(program) => Backend::Cpu { program, threads: Parallelism::from(threads) },
                Err(d) => return Err(Build::Source(vec![d])),
            }
        }
        "opencl" => {
            let cl = heddle_runtime::opencl::OpenCl::new(device).map_err(|d| Build::Device(d.message))?;
            let compiled = heddle::opencl::compile(&kernel, &name).and_then(|c| {
                for k in c.counts.iter().chain([&c.kernel]) {
                    cl.build(k)?;
                }
                Ok(c)
            });
            match compiled {
                Ok(compiled) => Backend::Opencl { cl, compiled },
                Err(d) => return Err(Build::Source(vec![d])),
            }
        }
        _ => Backend::Interp,
    };
    let shallow = matches!(backend, Backend::Cpu { ref program, .. } if shallow(&kernel, program));
    Ok(Inner { kernel, backend, shallow })
}

/// Whether binding, running and reading back a call of `kernel` stays
/// well within an ordinary thread's stack, so that it may run on the
/// calling thread: they recurse along the nesting of the kernel's types and
/// requirements (binding, the result) and of its loop program (finding it in
/// the cache compares programs), which their printed forms bound.
fn shallow(kernel: &Kernel, program: &LoopProgram) -> bool {
    fn nesting(text: &str) -> usize {
        let (mut depth, mut most) = (0usize, 0usize);
        for c in text.bytes() {
            match c {
                b'(' | b'[' | b'{' | b'<' => {
                    depth += 1;
                    most = most.max(depth);
                }
                b')' | b']' | b'}' | b'>' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        most
    }
    let mut types = format!("{} {}", kernel.ty, kernel.body.ty);
    for o in &kernel.obligations {
        types.push_str(&format!(" {}", o.cond));
    }
    // A long chain without brackets (`a + b + …`) nests too: the length bounds it.
    types.len() <= 4096 && nesting(&types) <= 32 && nesting(&format!("{program:?}")) <= 256
}

#[pymethods]
impl Compiled {
    /// The kernel's type, e.g. `(n: nat) -> [float]_n -> float`.
    #[getter]
    fn r#type(&self) -> String {
        self.ty.clone()
    }

    /// The type of the kernel's result.
    #[getter]
    fn result_type(&self) -> String {
        self.result_type.clone()
    }

    /// The backend's name.
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend
    }

    /// The parameters, in order: `(name, kind, type, storage)`; kind is
    /// "nat", "value" or "tensor"; storage (tensors only) is "csr" or "csc"
    /// where the encoding stores a matrix the way scipy's csr/csc arrays do,
    /// else "other".
    fn params(&self) -> Vec<(String, &'static str, String, Option<&'static str>)> {
        self.params.clone()
    }

    /// Runs a cpu kernel on `inputs` (by parameter name) through its fast
    /// path: the result, or None where the inputs are not for it (then
    /// `run` takes them). See `crate::fast`.
    fn call_fast(&self, py: Python<'_>, inputs: &Bound<'_, pyo3::types::PyDict>) -> PyResult<Option<PyObject>> {
        Ok(self.fast(py, inputs, 0)?.map(|(out, _)| out))
    }

    /// Times a cpu kernel on `inputs` through its fast path, as `run` with
    /// `reps` does: the repetitions' kernel seconds, or None where the
    /// inputs are not for it.
    fn time_fast(
        &self,
        py: Python<'_>,
        inputs: &Bound<'_, pyo3::types::PyDict>,
        reps: usize,
    ) -> PyResult<Option<Vec<f64>>> {
        Ok(self.fast(py, inputs, reps)?.map(|(_, times)| times))
    }

    /// Binds the inputs, runs the kernel once and then `reps` more times
    /// (timed), with the GIL released; the result and the repetitions'
    /// kernel seconds.
    #[pyo3(signature = (nats, arrays, tensors, reps=0))]
    fn run(
        &self,
        py: Python<'_>,
        nats: Vec<(String, i64)>,
        arrays: Vec<ArrayArg>,
        tensors: Vec<TensorArg>,
        reps: usize,
    ) -> PyResult<(PyObject, Vec<f64>)> {
        let worker = match &self.runner {
            Runner::Worker(worker) => worker,
            Runner::Shared(inner) => {
                let elem = |t: &TensorArg| {
                    heddle_runtime::io::bind::tensor_param(&inner.kernel, t.name()).ok().map(|(_, elem)| elem)
                };
                let (tensors, kept): (Vec<_>, Vec<_>) = tensors
                    .into_iter()
                    .map(|t| {
                        let e = elem(&t);
                        t.extract(py, e)
                    })
                    .collect::<PyResult<Vec<_>>>()?
                    .into_iter()
                    .unzip();
                // Float arrays are read in place: their Python buffers are
                // held (`keep`) until the call is over and every runtime
                // buffer made of them is dropped (with `bind_and_run`'s frame).
                let (arrays, keep): (Vec<_>, Vec<_>) =
                    arrays.into_iter().map(|a| a.extract(py, true)).collect::<PyResult<Vec<_>>>()?.into_iter().unzip();
                let inner = &**inner;
                let run = move || inner.bind_and_run(nats, arrays, tensors, reps);
                let outcome = py.allow_threads(move || if inner.shallow { run() } else { crate::on_big_stack(run) });
                drop((keep, kept));
                let (out, times) = outcome.map_err(|f| f.into_py(&self.file))?;
                return Ok((out.to_python(py)?, times));
            }
        };
        let arrays = arrays.into_iter().map(|a| a.extract(py, false).map(|(a, _)| a)).collect::<PyResult<Vec<_>>>()?;
        let tensors = tensors.into_iter().map(|t| t.extract(py, None).map(|(t, _)| t)).collect::<PyResult<Vec<_>>>()?;
        let (reply, answer) = mpsc::channel();
        let request = Request { nats, arrays, tensors, reps, reply };
        let outcome = py.allow_threads(move || {
            let worker = worker.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            worker.send(request).ok()?;
            drop(worker);
            answer.recv().ok()
        });
        let Some(outcome) = outcome else {
            return Err(crate::errors::Error::new_err("the kernel's thread has ended (a panic while running)"));
        };
        let (out, times) = outcome.map_err(|f| f.into_py(&self.file))?;
        Ok((out.to_python(py)?, times))
    }
}

impl Compiled {
    /// A cpu kernel's call through its fast path (see [`crate::fast::call`]):
    /// the result and `reps` timed repetitions' seconds, or `None`.
    fn fast(
        &self,
        py: Python<'_>,
        inputs: &Bound<'_, pyo3::types::PyDict>,
        reps: usize,
    ) -> PyResult<Option<(PyObject, Vec<f64>)>> {
        let Runner::Shared(inner) = &self.runner else { return Ok(None) };
        let Backend::Cpu { threads, .. } = inner.backend else { return Ok(None) };
        if !inner.shallow {
            return Ok(None);
        }
        let (kernel, file) = (&inner.kernel, &self.file);
        let signature = || crate::fast::Signature::of(kernel);
        // Checked and lowered again on the big stack, as when compiled.
        let plan = |sig: &crate::fast::Signature, width| {
            crate::on_big_stack(|| crate::fast::Plan::make(file, kernel, sig, width))
        };
        crate::fast::call(py, &self.fast, inputs, threads, reps, signature, plan).map_err(|f| f.into_py(&self.file))
    }
}

impl Inner {
    fn describe(&self) -> Ready {
        let params = self
            .kernel
            .params
            .iter()
            .map(|p| match p {
                KernelParam::Nat(n) => (n.to_string(), "nat", "nat".to_string(), None),
                KernelParam::Value { name, ty, .. } => (name.to_string(), "value", ty.to_string(), None),
                KernelParam::Tensor { name, ty, encoding, .. } => {
                    let storage = match heddle_runtime::sparse::csr::csr_like(encoding) {
                        Some((0, 1)) => "csr",
                        Some((1, 0)) => "csc",
                        _ => "other",
                    };
                    (name.to_string(), "tensor", ty.to_string(), Some(storage))
                }
            })
            .collect();
        let backend = match self.backend {
            Backend::Interp => "interp",
            Backend::Cpu { .. } => "cpu",
            Backend::Opencl { .. } => "opencl",
        };
        Ready {
            ty: self.kernel.ty.to_string(),
            result_type: self.kernel.body.ty.to_string(),
            backend,
            params,
            shared: None,
        }
    }

    /// Binds the inputs and runs (on the kernel's thread); the
    /// result, out of the runtime's values, and the repetitions' seconds.
    fn bind_and_run(
        &self,
        mut nats: Vec<(String, i64)>,
        arrays: Vec<data::RawArray>,
        tensors: Vec<data::RawTensor>,
        reps: usize,
    ) -> Result<(Out, Vec<f64>), Fail> {
        use heddle_runtime::profile::phase;
        let mut inputs: Vec<_> = arrays.into_iter().map(data::RawArray::into_input).collect();
        for t in tensors {
            let _p = phase(|| "store the sparse inputs".into());
            let (dims, buffers) = t.into_inputs(&self.kernel)?;
            nats.extend(dims);
            inputs.extend(buffers);
        }
        let binding = phase(|| "bind inputs".into());
        let env = match self.backend {
            Backend::Interp => heddle_runtime::io::bind_inputs(&self.kernel, &nats, inputs)?,
            // Packed arrays become the kernel's buffers, not per-element values.
            Backend::Cpu { .. } | Backend::Opencl { .. } => {
                heddle_runtime::io::bind_inputs_flat(&self.kernel, &nats, inputs)?
            }
        };
        drop(binding);
        let (value, times) = self.execute(&env, reps).map_err(|d| Fail::Source(vec![d]))?;
        let _p = phase(|| "the result as numpy data".into());
        match value {
            Ok(out) => Ok((out, times)),
            Err(value) => Ok((data::to_out(&value, &self.kernel.body.ty), times)),
        }
    }

    /// The result: read straight from the output buffer where it is a flat
    /// array of scalars (cpu), else as a value.
    fn execute(&self, env: &Env, reps: usize) -> Result<(Result<Out, Value>, Vec<f64>), Diagnostic> {
        if let Backend::Cpu { program, threads } = &self.backend {
            let ty = &self.kernel.body.ty;
            return heddle::cpu::run_timed_read(&self.kernel, program, env, *threads, reps, |p, l, env| {
                data::flat_out(p, l, env, ty)
            });
        }
        let (value, times) = self.execute_value(env, reps)?;
        Ok((Err(value), times))
    }

    fn execute_value(&self, env: &Env, reps: usize) -> Result<(Value, Vec<f64>), Diagnostic> {
        match &self.backend {
            Backend::Interp => {
                let runtime = |d: Diagnostic| d.or_kind(ErrorKind::Runtime);
                let value = heddle_runtime::interp::run_kernel(&self.kernel, env).map_err(runtime)?;
                let mut times = Vec::with_capacity(reps);
                for _ in 0..reps {
                    let t = Instant::now();
                    heddle_runtime::interp::run_kernel(&self.kernel, env).map_err(runtime)?;
                    times.push(t.elapsed().as_secs_f64());
                }
                Ok((value, times))
            }
            Backend::Cpu { program, threads } => heddle::cpu::run_timed(&self.kernel, program, env, *threads, reps),
            Backend::Opencl { cl, compiled } => {
                let (value, timing) = heddle::opencl::run(cl, &self.kernel, compiled, env, reps + 1)?;
                Ok((value, timing.kernel_seconds.into_iter().skip(1).collect()))
            }
        }
    }
}

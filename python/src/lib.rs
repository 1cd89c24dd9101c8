//! `heddle._heddle`: the extension module under the `heddle` Python
//! package (python/heddle/). The package's Python half binds numpy and
//! scipy objects; this half checks, compiles and runs kernels through the
//! `heddle` crate, the code the command-line tool runs.

mod data;
mod entries;
mod errors;
mod fast;
mod kernel;

use heddle::source::SourceFile;
use pyo3::prelude::*;

/// The stack of the threads that run the front end and kernels, as the CLI's.
pub(crate) const BIG_STACK: usize = 256 << 20;

/// Runs `f` on a thread with the stack the CLI gives the front end (deeply
/// nested programs recurse deeply), and waits for it.
pub(crate) fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new().stack_size(BIG_STACK).spawn_scoped(s, f);
        match worker {
            Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => panic!("cannot start a thread for heddle"),
        }
    })
}

/// The CLI's failure as a Python exception.
pub(crate) fn failure(f: heddle::cli::Failure) -> PyErr {
    use heddle::cli::Failure;
    match f {
        Failure::Source(file, diags) => errors::source_error(&file, &diags),
        Failure::Data(e) => errors::input_error(e.parameter.as_deref(), e.message),
        Failure::Device(m) => errors::DeviceError::new_err(m),
        other => errors::input_error(None, other.message()),
    }
}

/// The type of the kernel in `source`, e.g. `(n: nat) -> [float]_n -> float`.
#[pyfunction]
#[pyo3(signature = (source, filename="<string>"))]
fn check(py: Python<'_>, source: &str, filename: &str) -> PyResult<String> {
    let file = SourceFile::new(filename, source);
    let checked =
        py.allow_threads(|| on_big_stack(|| heddle::check_source(&file).map(|(_, kernel)| kernel.ty.to_string())));
    checked.map_err(|d| errors::source_error(&file, &d))
}

/// The canonical form of `source` (what `heddle fmt` prints).
#[pyfunction]
#[pyo3(signature = (source, filename="<string>"))]
fn fmt(py: Python<'_>, source: &str, filename: &str) -> PyResult<String> {
    let file = SourceFile::new(filename, source);
    let formatted = py.allow_threads(|| on_big_stack(|| heddle_ir::printer::format_source(&file.text)));
    formatted.map_err(|d| errors::source_error(&file, &d))
}

/// Runs one command of the CLI in-process, as with `--json`: its exit
/// status and the JSON text it would print (`heddle.COMMAND/1` or
/// `heddle.error/1`). The GIL is released meanwhile.
#[pyfunction]
fn cli_json(py: Python<'_>, argv: Vec<String>) -> (i32, String) {
    let (code, json) = py.allow_threads(|| on_big_stack(|| heddle::cli::invoke(&argv)));
    (code, serde_json::to_string(&json).unwrap_or_default())
}

#[pymodule]
fn _heddle(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<errors::Error>())?;
    m.add("SourceError", py.get_type::<errors::SourceError>())?;
    m.add("InputError", py.get_type::<errors::InputError>())?;
    m.add("DeviceError", py.get_type::<errors::DeviceError>())?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(fmt, m)?)?;
    m.add_function(wrap_pyfunction!(cli_json, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::compile, m)?)?;
    m.add_function(wrap_pyfunction!(data::convert, m)?)?;
    m.add_function(wrap_pyfunction!(data::assemble_tensor, m)?)?;
    m.add_class::<kernel::Compiled>()?;
    Ok(())
}

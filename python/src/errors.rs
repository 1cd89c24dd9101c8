//! The package's exceptions, and diagnostics turned into them.

use heddle::source::SourceFile;
use heddle_ir::{Diagnostic, ErrorKind};
use pyo3::create_exception;
use pyo3::prelude::*;

create_exception!(_heddle, Error, pyo3::exceptions::PyException, "Any error heddle reports.");
create_exception!(
    _heddle,
    SourceError,
    Error,
    "A problem located in the source: syntax, types, a construct a backend refuses, a check that failed while the kernel ran. Carries `file`, `line`, `column`, `kind`."
);
create_exception!(
    _heddle,
    InputError,
    Error,
    "A problem with the inputs given to a kernel or a conversion. Carries `parameter` (or None)."
);
create_exception!(_heddle, DeviceError, Error, "No OpenCL device, or the device refused the kernel.");

/// Sets attributes on a fresh exception.
fn with_attrs(py: Python<'_>, err: PyErr, attrs: &[(&str, PyObject)]) -> PyErr {
    let value = err.value(py);
    for (k, v) in attrs {
        let _ = value.setattr(*k, v);
    }
    err
}

/// A [`SourceError`] for the first of `diags` (the others are in its
/// `diagnostics` attribute as dicts), located in `file`.
pub fn source_error(file: &SourceFile, diags: &[Diagnostic]) -> PyErr {
    Python::with_gil(|py| {
        let located: Vec<_> = diags.iter().map(|d| (file.locate(d), kind_name(d))).collect();
        let Some((first, kind)) = located.first() else {
            return Error::new_err("failed (no diagnostic)");
        };
        let text = format!("{}:{}:{}: {}", first.file, first.line, first.column, first.message);
        let all: Vec<PyObject> = located
            .iter()
            .map(|(l, k)| {
                let d = pyo3::types::PyDict::new(py);
                let _ = d.set_item("file", &l.file);
                let _ = d.set_item("line", l.line);
                let _ = d.set_item("column", l.column);
                let _ = d.set_item("message", &l.message);
                let _ = d.set_item("kind", k);
                let _ = d.set_item("notes", l.notes.clone());
                d.into_any().unbind()
            })
            .collect();
        let attrs: Vec<(&str, PyObject)> = vec![
            ("file", first.file.clone().into_pyobject(py).unwrap().into_any().unbind()),
            ("line", first.line.into_pyobject(py).unwrap().into_any().unbind()),
            ("column", first.column.into_pyobject(py).unwrap().into_any().unbind()),
            ("kind", kind.into_pyobject(py).unwrap().into_any().unbind()),
            ("message", first.message.clone().into_pyobject(py).unwrap().into_any().unbind()),
            ("rendered", file.render(diags).into_pyobject(py).unwrap().into_any().unbind()),
            ("diagnostics", all.into_pyobject(py).unwrap().into_any().unbind()),
        ];
        with_attrs(py, SourceError::new_err(text), &attrs)
    })
}

fn kind_name(d: &Diagnostic) -> &'static str {
    d.kind.unwrap_or(if d.message.starts_with("internal error") { ErrorKind::Internal } else { ErrorKind::Data }).name()
}

/// An [`InputError`] about `parameter` (or none).
pub fn input_error(parameter: Option<&str>, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::with_gil(|py| {
        let text = match parameter {
            Some(p) => format!("parameter `{p}`: {message}"),
            None => message.clone(),
        };
        let attrs: Vec<(&str, PyObject)> = vec![
            ("parameter", parameter.into_pyobject(py).unwrap().into_any().unbind()),
            ("message", message.into_pyobject(py).unwrap().into_any().unbind()),
        ];
        with_attrs(py, InputError::new_err(text), &attrs)
    })
}

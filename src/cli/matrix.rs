//! Matrix Market inputs for kernels that take raw sparse buffers
//! (`heddle run --csr …`, `--lil …`, `--csr-packed …`, `--dense …`).
//!
//! The convention: the flag names the storage, its value lists the kernel
//! parameters that receive the buffers, in the storage's order, then `=`
//! and the `.mtx` file:
//!
//! | flag | parameters | what they get |
//! |---|---|---|
//! | `--csr O,C,V=A.mtx` | offsets, column indices, values | `rows + 1` row starts; each entry's column; each entry's value |
//! | `--lil L,C,V=A.mtx` | row lengths, column indices, values | each row's number of entries; columns; values (row by row) |
//! | `--csr-packed O,E=A.mtx` | offsets, entries | row starts; `(column, value)` records |
//! | `--dense M=A.mtx` | matrix | all `rows × cols` values, row-major, zeros included |
//!
//! Indices are 0-based (the file's 1-based ones minus one) and `int`
//! (32-bit: a matrix whose offsets do not fit is an error); within a row,
//! entries are sorted by column and duplicates summed; symmetric and
//! skew-symmetric files are expanded; pattern files give the value 1. The
//! reading itself (buffered, with located errors) is `runtime::sparse`'s.
//! Values are passed as read (`f64`); the parameter's type decides the
//! width when the inputs are bound and validated like any other input.

use super::Failure;
use heddle_runtime::io::read::{Loaded, ScalarKind};
use heddle_runtime::sparse::csr::coo_to_csr_i32;
use heddle_runtime::value::Value;
use std::path::Path;

/// A sparse storage a Matrix Market file can be given in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// Offsets, column indices, values.
    Csr,
    /// Row lengths, column indices, values.
    Lil,
    /// Offsets and (column, value) records.
    CsrPacked,
    /// Row-major dense values.
    Dense,
}

impl Storage {
    fn flag(self) -> &'static str {
        match self {
            Storage::Csr => "csr",
            Storage::Lil => "lil",
            Storage::CsrPacked => "csr-packed",
            Storage::Dense => "dense",
        }
    }
    fn arity(self) -> usize {
        match self {
            Storage::Csr | Storage::Lil => 3,
            Storage::CsrPacked => 2,
            Storage::Dense => 1,
        }
    }
}

fn ints(xs: impl Iterator<Item = i64>) -> Loaded {
    let items: Vec<Value> = xs.map(Value::Int).collect();
    Loaded::Flat { shape: vec![items.len() as u64], items, dtype: "int32".into(), kinds: vec![ScalarKind::Int] }
}

fn floats(xs: Vec<f64>) -> Loaded {
    Loaded::Flat {
        shape: vec![xs.len() as u64],
        items: xs.into_iter().map(Value::Float).collect(),
        dtype: "float64".into(),
        kinds: vec![ScalarKind::Float],
    }
}

/// The inputs `--FLAG NAMES=FILE` gives, as (parameter, data) pairs.
pub fn inputs(storage: Storage, spec: &str) -> Result<Vec<(String, Loaded)>, Failure> {
    let flag = storage.flag();
    let usage = || {
        let names = ["offsets,col_indices,values", "row_length,col_indices,values", "offsets,entries", "matrix"];
        let k = [Storage::Csr, Storage::Lil, Storage::CsrPacked, Storage::Dense]
            .iter()
            .position(|s| *s == storage)
            .unwrap_or(0);
        Failure::Input(format!("--{flag} {spec}: expected {}=FILE (.mtx, .npz, .tns or .json)", names[k]))
    };
    let (names, path) = spec.split_once('=').ok_or_else(usage)?;
    let names: Vec<String> = names.split(',').map(|s| s.trim().to_string()).collect();
    if names.len() != storage.arity() || names.iter().any(String::is_empty) || path.is_empty() {
        return Err(usage());
    }
    let (coo, _) = heddle_runtime::sparse::file::read_coo(Path::new(path))
        .map_err(|e| Failure::Input(format!("--{flag}: {e}")))?;
    if storage == Storage::Dense {
        let values = coo
            .to_dense_values()
            .ok_or_else(|| Failure::Input(format!("--{flag}: {path} is too large to store densely")))?;
        return Ok(vec![(names[0].clone(), floats(values.to_f64s()))]);
    }
    let csr = coo_to_csr_i32(&coo).map_err(|e| Failure::Input(format!("--{flag}: {path}: {e}")))?;
    let offsets = || csr.offsets.iter().map(|o| i64::from(*o));
    let cols = || ints(csr.col_indices.iter().map(|c| i64::from(*c)));
    Ok(match storage {
        Storage::Csr => vec![
            (names[0].clone(), ints(offsets())),
            (names[1].clone(), cols()),
            (names[2].clone(), floats(csr.values.to_f64s())),
        ],
        Storage::Lil => vec![
            (names[0].clone(), ints(csr.offsets.windows(2).map(|w| i64::from(w[1]) - i64::from(w[0])))),
            (names[1].clone(), cols()),
            (names[2].clone(), floats(csr.values.to_f64s())),
        ],
        Storage::CsrPacked => {
            let items = csr
                .col_indices
                .iter()
                .zip(csr.values.to_f64s())
                .map(|(c, v)| Value::tuple(vec![Value::Int(i64::from(*c)), Value::Float(v)]));
            let items: Vec<Value> = items.collect();
            let entries = Loaded::Flat {
                shape: vec![items.len() as u64],
                items,
                dtype: "(int32, float64)".into(),
                kinds: vec![ScalarKind::Int, ScalarKind::Float],
            };
            vec![(names[0].clone(), ints(offsets())), (names[1].clone(), entries)]
        }
        Storage::Dense => unreachable!("handled above"),
    })
}

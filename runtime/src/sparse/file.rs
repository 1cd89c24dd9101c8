//! Reading and writing tensors by file extension, for `heddle convert` and
//! `heddle run --matrix`: `.mtx`, `.tns`, and `.json` (nested lists for a
//! dense tensor, or the storage object of a stored one).

use super::build::pack;
use super::coo::Coo;
use super::error::{Result, SparseError};
use super::json;
use super::tensor::SparseTensor;
use super::{mtx, tns};
use heddle_ir::ScalarType;
use heddle_ir::encoding::Encoding;
use std::path::Path;

fn ext(path: &Path) -> String {
    path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase()
}

/// Reads a tensor's entries (0-based coordinates) and element type from `.mtx`, `.tns` or `.json`.
pub fn read_coo(path: &Path) -> Result<(Coo, ScalarType)> {
    match ext(path).as_str() {
        "mtx" => mtx::read_mtx(path),
        "tns" => Ok((tns::read_tns(path)?, ScalarType::F64)),
        "json" => {
            let bytes = super::text::read_file(path)?;
            let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| SparseError::File {
                path: path.to_path_buf(),
                line: e.line(),
                message: format!("not valid JSON: {e}"),
            })?;
            let in_file = |e: SparseError| SparseError::Json(format!("{}: {e}", path.display()));
            if v.is_object() {
                let t = json::storage_from_json(&v).map_err(in_file)?;
                Ok((t.to_coo(), t.elem))
            } else {
                Ok((json::dense_from_json(&v).map_err(in_file)?.to_coo(), ScalarType::F64))
            }
        }
        e => Err(SparseError::Shape(format!(
            "{}: unknown tensor file type `.{e}` (expected .mtx, .tns or .json)",
            path.display()
        ))),
    }
}

/// Reads a tensor file and stores it in `enc`.
pub fn read_into(path: &Path, enc: &Encoding) -> Result<SparseTensor> {
    let (coo, elem) = read_coo(path)?;
    pack(&coo, enc, elem)
}

/// Writes a stored tensor: `.json` is its storage, `.mtx` / `.tns` its entries.
pub fn write(t: &SparseTensor, path: &Path) -> Result<()> {
    let io = |source| SparseError::Io { path: path.to_path_buf(), source };
    match ext(path).as_str() {
        "mtx" => mtx::write_mtx(&t.to_coo(), t.elem, path),
        "tns" => tns::write_tns(&t.to_coo(), t.elem, path),
        "json" => {
            let text = serde_json::to_string(&json::storage_to_json(t)).unwrap_or_default();
            std::fs::write(path, text + "\n").map_err(io)
        }
        e => Err(SparseError::Shape(format!(
            "{}: unknown tensor file type `.{e}` (expected .mtx, .tns or .json)",
            path.display()
        ))),
    }
}

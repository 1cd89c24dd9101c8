//! Reading and writing tensors by file extension, for `heddle convert` and
//! `heddle run --matrix`: `.mtx`, `.tns`, and `.json` (nested lists for a
//! dense tensor, or the storage object of a stored one, which `read_into`
//! keeps as stored when it is already in the target encoding).

use super::build::pack;
use super::coo::Coo;
use super::error::{Result, SparseError};
use super::json;
use super::tensor::SparseTensor;
use super::{mtx, tns};
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat};
use std::path::Path;

fn ext(path: &Path) -> String {
    path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase()
}

/// What a tensor file holds: entries, or (a `.json` storage object) a stored tensor.
enum Read {
    Entries(Coo, ScalarType),
    Stored(Box<SparseTensor>),
}

/// Reads a tensor file whose values are for `dest` (text is rounded
/// straight to `f32` for an `f32` destination; JSON goes through `f64`).
fn read(path: &Path, dest: ScalarType) -> Result<Read> {
    match ext(path).as_str() {
        "mtx" => mtx::read_mtx_for(path, dest).map(|(c, e)| Read::Entries(c, e)),
        "tns" => Ok(Read::Entries(tns::read_tns_for(path, dest)?, ScalarType::F64)),
        "json" => {
            let bytes = super::text::read_file(path)?;
            let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| SparseError::File {
                path: path.to_path_buf(),
                line: e.line(),
                message: format!("not valid JSON: {e}"),
            })?;
            let in_file = |e: SparseError| SparseError::Json(format!("{}: {e}", path.display()));
            if v.is_object() {
                Ok(Read::Stored(Box::new(json::storage_from_json(&v).map_err(in_file)?)))
            } else {
                Ok(Read::Entries(json::dense_from_json(&v).map_err(in_file)?.to_coo(), ScalarType::F64))
            }
        }
        e => Err(SparseError::Shape(format!(
            "{}: unknown tensor file type `.{e}` (expected .mtx, .tns or .json)",
            path.display()
        ))),
    }
}

/// Reads a tensor's entries (0-based coordinates) and element type from `.mtx`, `.tns` or `.json`.
pub fn read_coo(path: &Path) -> Result<(Coo, ScalarType)> {
    match read(path, ScalarType::F64)? {
        Read::Entries(coo, elem) => Ok((coo, elem)),
        Read::Stored(t) => Ok((t.to_coo(), t.elem)),
    }
}

/// Reads a tensor file and stores it in `enc`. A `.json` storage object
/// already in `enc`'s storage scheme (same levels, properties and widths) is
/// kept as given, after validation (see [`assemble`](super::assemble::assemble)):
/// its layout is the caller's, e.g. a loose_compressed level's gaps between
/// parents; anything else is repacked from its entries.
pub fn read_into(path: &Path, enc: &Encoding) -> Result<SparseTensor> {
    read_into_for(path, enc, ScalarType::F64)
}

/// [`read_into`] for a tensor whose values are `dest` (a kernel parameter's
/// element type): `.mtx` / `.tns` values are rounded once, straight to `f32`
/// for an `f32` destination.
pub fn read_into_for(path: &Path, enc: &Encoding, dest: ScalarType) -> Result<SparseTensor> {
    match read(path, dest)? {
        Read::Stored(t) if same_storage(&t.encoding, enc) => Ok(SparseTensor { encoding: enc.clone(), ..*t }),
        Read::Stored(t) => pack(&t.to_coo(), enc, t.elem),
        Read::Entries(coo, elem) => pack(&coo, enc, elem),
    }
}

/// Do two encodings store a tensor in the same buffers? (Level names,
/// spellings, `explicitVal`/`implicitVal` do not matter.) Never for sliced
/// encodings, which describe a window into another tensor's storage.
fn same_storage(a: &Encoding, b: &Encoding) -> bool {
    a.dim_rank() == b.dim_rank()
        && a.dims.iter().chain(&b.dims).all(|d| d.slice.is_none())
        && a.pos_width.storage_bits() == b.pos_width.storage_bits()
        && a.crd_width.storage_bits() == b.crd_width.storage_bits()
        && a.levels.len() == b.levels.len()
        && a.levels.iter().zip(&b.levels).all(|(x, y)| {
            let format = |f: LevelFormat| match f {
                LevelFormat::NOutOfM { n, m, .. } => LevelFormat::NOutOfM { n, m, block_spelling: false },
                f => f,
            };
            x.expr == y.expr && format(x.format) == format(y.format) && x.props == y.props
        })
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

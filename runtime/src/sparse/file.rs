//! Reading tensors by file extension, for `heddle convert` and `heddle run
//! --matrix`: `.mtx`, `.tns`, `.npz` (scipy's sparse archives), and `.json`
//! (nested lists for a dense tensor, or the storage object of a stored one).
//! A stored tensor (a `.json` storage object; a csr, csc or bsr `.npz`) is
//! kept as stored when the target encoding stores it the same way, up to
//! the widths of its positions and coordinates. Writing is [`super::write`].

use super::build::pack;
use super::coo::{Coo, CooColumns};
use super::error::{Result, SparseError};
use super::json;
use super::tensor::SparseTensor;
use super::{mtx, tns};
use crate::scalars::{Num, ScalarVec};
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat};
use std::path::Path;

fn ext(path: &Path) -> String {
    path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase()
}

/// What a tensor file holds: entries, or a stored tensor (a `.json`
/// storage object; a csr, csc or bsr `.npz`).
#[derive(Clone, Debug)]
pub enum Contents {
    /// Entries (0-based coordinates) and the element type.
    Entries(Coo, ScalarType),
    /// Entries kept as one coordinate column per dimension (a coo `.npz`,
    /// see [`CooColumns`]) and the element type.
    Columns(CooColumns, ScalarType),
    /// A tensor in the storage it was saved in, with its encoding's fill
    /// values (a `.json` storage object).
    Stored(Box<SparseTensor>),
    /// A scipy archive's csr, csc or bsr arrays, kept as stored. scipy has
    /// no fill value of its own: like an entry list's, the stored entries
    /// are the entries (padding zeros in blocks are not), and the absent
    /// ones take the target encoding's `implicitVal`.
    Scipy(Box<SparseTensor>),
    /// A `.json` storage object of a sliced encoding (the second): the
    /// window it selects, stored in the encoding without its slices, as
    /// `heddle convert --to SLICED -o W.json` writes it. It is that window
    /// for a parameter of the same sliced encoding, and the window's own
    /// tensor for an unsliced one.
    Window(Box<SparseTensor>, Box<Encoding>),
    /// The entries of a pattern file: coordinates only, each value 1 (or
    /// the target encoding's `explicitVal`), of the element type.
    Pattern(Coo, ScalarType),
}

impl Contents {
    /// Number of entries (stored values for a stored tensor).
    pub fn len(&self) -> usize {
        match self {
            Contents::Entries(c, _) | Contents::Pattern(c, _) => c.len(),
            Contents::Columns(c, _) => c.len(),
            Contents::Stored(t) | Contents::Scipy(t) | Contents::Window(t, _) => t.nse(),
        }
    }
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        match self {
            Contents::Entries(c, _) | Contents::Pattern(c, _) => c.rank(),
            Contents::Columns(c, _) => c.rank(),
            Contents::Stored(t) | Contents::Scipy(t) | Contents::Window(t, _) => t.dim_sizes.len(),
        }
    }
    /// No entries?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The tensor stored in `enc`: kept as stored when `enc` stores it the same
    /// way (see [`read_into`]), else packed from its entries.
    pub fn into_encoding(self, enc: &Encoding) -> Result<SparseTensor> {
        if let Contents::Stored(t) = &self {
            // Stored values must be the target's explicit value; kept as
            // stored, what is absent must mean the same in the target
            // (`convert` checks that itself, and materialises where it can);
            // all-dense storage has no absent entries.
            super::assemble::check_explicit_values(enc, &t.values)?;
            if same_scheme(&t.encoding, enc) && !super::convert::stores_every_coordinate(enc) {
                super::assemble::check_same_implicit(&t.encoding, enc)?;
            }
        }
        match self {
            Contents::Stored(t) if same_storage(&t.encoding, enc) => Ok(SparseTensor { encoding: enc.clone(), ..*t }),
            Contents::Stored(t) if same_scheme(&t.encoding, enc) => rewidth(*t, enc),
            // Direct paths where there are (CSR ↔ CSC, CSR / CSC → DIA or
            // BSR), else through the entries (`convert::convert`).
            Contents::Stored(t) => super::convert::convert(&t, enc),
            Contents::Scipy(mut t) => {
                // Storage without padding (csr, csc) holds exactly its
                // entries: it is the same storage under the target's
                // implicit value. A bsr's blocks pad with zeros, which are
                // not entries (as `.npz` reads them), so its entries are
                // stored afresh, as a coo archive's would be.
                if super::assemble::check_same_implicit(&t.encoding, enc).is_ok() || !t.has_padding() {
                    t.encoding.implicit_val = enc.implicit_val.clone();
                    Contents::Stored(t).into_encoding(enc)
                } else {
                    let elem = t.elem;
                    Contents::Entries(t.to_coo(), elem).into_encoding(enc)
                }
            }
            Contents::Window(t, sliced) => {
                if enc.dims.iter().all(|d| d.slice.is_none()) {
                    return Contents::Stored(t).into_encoding(enc);
                }
                // The same window: stored in the encoding without its slices,
                // as a window of a whole tensor is (`build::pack`).
                if let Some((d, (have, want))) =
                    sliced.dims.iter().zip(&enc.dims).enumerate().find(|(_, (a, b))| a.slice != b.slice)
                {
                    return Err(SparseError::Shape(format!(
                        "the file holds the window {} of a bigger tensor (written for a sliced encoding), but the encoding's dimension {d} is {}: a window is taken from the whole tensor; give its file, or storage written for this encoding",
                        describe_slice(have.slice),
                        describe_slice(want.slice)
                    )));
                }
                let mut base = enc.clone();
                for d in &mut base.dims {
                    d.slice = None;
                }
                Contents::Stored(t).into_encoding(&base)
            }
            Contents::Entries(coo, elem) => pack(&coo, enc, elem),
            Contents::Columns(cols, elem) => super::build::pack_columns(cols, enc, elem),
            Contents::Pattern(coo, elem) => match enc.explicit_val.as_ref().and_then(Num::of_literal) {
                // Every entry takes the explicit value.
                Some(v) => {
                    let mut values = ScalarVec::with_capacity(elem, coo.len());
                    for _ in 0..coo.len() {
                        if !values.push_num(v) {
                            return Err(SparseError::Shape(format!("the encoding's explicitVal {v} is not a {elem}")));
                        }
                    }
                    pack(&Coo { values, ..coo }, enc, elem)
                }
                None => pack(&coo, enc, elem),
            },
        }
    }
}

type Read = Contents;

/// Reads a tensor file whose values are for `dest`: integers converted
/// exactly (an error naming a value `dest` cannot hold), floats rounded once
/// from the text.
pub fn read_tensor(path: &Path, dest: ScalarType) -> Result<Contents> {
    read(path, Some(dest), None)
}

/// Reads a tensor file with values of the type the file says (see
/// [`read_coo`]): what `heddle convert` reads.
pub fn read_as_written(path: &Path) -> Result<Contents> {
    read(path, None, None)
}

/// [`read_as_written`] for a tensor to be stored in `target` (what `heddle
/// convert --to` gives): the same contents, read at the widths `target`
/// stores where the reader can (a `.mtx`'s column coordinates at 64 bits
/// for a CSR with 64-bit coordinates).
pub fn read_as_written_for(path: &Path, target: &Encoding) -> Result<Contents> {
    read(path, None, Some(target))
}

/// Reads a tensor file with values of type `dest` (each read straight from
/// its text), or without one, of the type the file says; for storing in
/// `target` when it is known.
fn read(path: &Path, dest: Option<ScalarType>, target: Option<&Encoding>) -> Result<Read> {
    let contents = read_contents(path, dest, target)?;
    let Some(dest) = dest else { return Ok(contents) };
    // Exactly at `dest` (integers) or rounded once (floats; text was read
    // straight to `f32` above, so this is exact too).
    let convert = |v: ScalarVec| {
        v.convert(dest)
            .map_err(|e| SparseError::Json(format!("{}: value {}: {}", path.display(), e.position, e.message)))
    };
    Ok(match contents {
        Read::Entries(coo, _) => Read::Entries(Coo { values: convert(coo.values)?, ..coo }, dest),
        Read::Columns(mut cols, _) => {
            cols.values = convert(std::mem::take(&mut cols.values))?;
            Read::Columns(cols, dest)
        }
        Read::Stored(t) => Read::Stored(Box::new(SparseTensor { values: convert(t.values)?, elem: dest, ..*t })),
        Read::Scipy(t) => Read::Scipy(Box::new(SparseTensor { values: convert(t.values)?, elem: dest, ..*t })),
        Read::Window(t, sliced) => {
            Read::Window(Box::new(SparseTensor { values: convert(t.values)?, elem: dest, ..*t }), sliced)
        }
        Read::Pattern(coo, _) => Read::Pattern(Coo { values: convert(coo.values)?, ..coo }, dest),
    })
}

/// What the file holds, at the type it is written in (text rounded straight
/// to `dest` where it is a float type).
fn read_contents(path: &Path, dest: Option<ScalarType>, target: Option<&Encoding>) -> Result<Read> {
    match ext(path).as_str() {
        "npz" => Ok(match super::npz::read_npz(path)? {
            super::npz::NpzTensor::Stored(t) => Read::Scipy(t),
            super::npz::NpzTensor::Entries(c, e) => Read::Entries(c, e),
            super::npz::NpzTensor::Columns(c, e) => Read::Columns(c, e),
        }),
        "mtx" => {
            // Coordinate files with real, integer, complex or pattern values stream
            // into 32-bit columns; anything else, and any file with a
            // problem (reported with its line), is read whole.
            // Column coordinates at 64 bits where the target is a CSR
            // storing them so (kept as its coordinates, not widened).
            let wide = target.is_some_and(|enc| {
                super::csr::csr_like(enc) == Some((0, 1))
                    && enc.crd_width.storage_bits() == 64
                    && enc.dims.iter().all(|d| d.slice.is_none())
            });
            if let Some((cols, elem, pattern)) = mtx::read_mtx_columns_at(path, dest.unwrap_or(ScalarType::F64), wide)?
            {
                // A pattern file's entries take the encoding's explicitVal (see `Contents::Pattern`).
                return Ok(if pattern { Read::Pattern(cols.into_coo(), elem) } else { Read::Columns(cols, elem) });
            }
            let bytes = mtx::read_text(path)?;
            let (coo, elem) = mtx::parse_mtx_for(&bytes, path, dest.unwrap_or(ScalarType::F64))?;
            Ok(if mtx::is_pattern(&bytes) { Read::Pattern(coo, elem) } else { Read::Entries(coo, elem) })
        }
        "tns" => {
            let coo = tns::read_tns_as(path, dest)?;
            let elem = coo.elem();
            Ok(Read::Entries(coo, elem))
        }
        "json" => {
            let invalid = |e: serde_json::Error| SparseError::File {
                path: path.to_path_buf(),
                line: e.line(),
                message: format!("not valid JSON: {e}"),
            };
            if super::text::is_stream(path) {
                // A stream (a FIFO, a device) is parsed as it is read, so it
                // fails at its first bad byte; a regular file is read whole.
                let file =
                    std::fs::File::open(path).map_err(|source| SparseError::Io { path: path.to_path_buf(), source })?;
                let v: serde_json::Value = serde_json::from_reader(std::io::BufReader::new(file)).map_err(invalid)?;
                return from_json_value(v, path, dest);
            }
            let bytes =
                super::text::read_text(path, &|head| super::text::json_head(head).map_or(Ok(()), |e| Err(invalid(e))))?;
            // A storage object (most of a large file is its values) is read without a JSON tree.
            if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
                && let Some(t) = json::storage_from_slice(&bytes, dest)
            {
                return Ok(stored(t.map_err(|e| SparseError::Json(format!("{}: {e}", path.display())))?));
            }
            let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(invalid)?;
            from_json_value(v, path, dest)
        }
        e => Err(SparseError::Shape(format!(
            "{}: unknown tensor file type `.{e}` (expected .mtx, .tns, .npz or .json)",
            path.display()
        ))),
    }
}

/// A storage object read: a window where its encoding was sliced.
fn stored((t, sliced): (SparseTensor, Option<Encoding>)) -> Read {
    match sliced {
        Some(enc) => Read::Window(Box::new(t), Box::new(enc)),
        None => Read::Stored(Box::new(t)),
    }
}

/// `slice(offset, size, stride)` as MLIR writes it, or `not sliced`.
fn describe_slice(s: Option<heddle_ir::encoding::DimSlice>) -> String {
    let part = |x: Option<u64>| x.map_or("?".to_string(), |x| x.to_string());
    match s {
        Some(s) => format!("slice({}, {}, {})", part(s.offset), part(s.size), part(s.stride)),
        None => "not sliced".to_string(),
    }
}

/// A `.json` file's document: a storage object or nested lists.
fn from_json_value(v: serde_json::Value, path: &Path, dest: Option<ScalarType>) -> Result<Read> {
    let in_file = |e: SparseError| SparseError::Json(format!("{}: {e}", path.display()));
    if v.is_object() {
        Ok(stored(json::window_storage_from_json(&v, dest).map_err(in_file)?))
    } else {
        let coo = json::dense_from_json(&v, dest).map_err(in_file)?.to_coo();
        let elem = coo.elem();
        Ok(Read::Entries(coo, elem))
    }
}

/// Reads a tensor's entries (0-based coordinates) and element type from `.mtx`, `.tns`, `.npz` or `.json`.
pub fn read_coo(path: &Path) -> Result<(Coo, ScalarType)> {
    match read(path, None, None)? {
        Read::Entries(coo, elem) => Ok((coo, elem)),
        Read::Columns(cols, elem) => Ok((cols.into_coo(), elem)),
        Read::Stored(t) | Read::Scipy(t) | Read::Window(t, _) => Ok((t.to_coo(), t.elem)),
        Read::Pattern(coo, elem) => Ok((coo, elem)),
    }
}

/// Reads a tensor file and stores it in `enc`. A `.json` storage object
/// already in `enc`'s storage scheme (same levels, properties and widths) is
/// kept as given, after validation (see [`assemble`](super::assemble::assemble)):
/// its layout is the caller's, e.g. a loose_compressed level's gaps between
/// parents; anything else is repacked from its entries.
pub fn read_into(path: &Path, enc: &Encoding) -> Result<SparseTensor> {
    read(path, None, Some(enc))?.into_encoding(enc)
}

/// [`read_into`] for a tensor whose values are `dest` (a kernel parameter's
/// element type): `.mtx` / `.tns` values are rounded once, straight to `f32`
/// for an `f32` destination.
pub fn read_into_for(path: &Path, enc: &Encoding, dest: ScalarType) -> Result<SparseTensor> {
    let parsing = crate::profile::phase(|| format!("parse {}", path.display()));
    let contents = read(path, Some(dest), Some(enc))?;
    drop(parsing);
    let _storing = crate::profile::phase(|| "store in the encoding".into());
    contents.into_encoding(enc)
}

/// Do two encodings store a tensor in the same buffers? (Level names,
/// spellings, `explicitVal`/`implicitVal` do not matter.) Never for sliced
/// encodings, which describe a window into another tensor's storage.
fn same_storage(a: &Encoding, b: &Encoding) -> bool {
    same_scheme(a, b)
        && a.pos_width.storage_bits() == b.pos_width.storage_bits()
        && a.crd_width.storage_bits() == b.crd_width.storage_bits()
}

/// [`same_storage`] but for the widths of positions and coordinates.
fn same_scheme(a: &Encoding, b: &Encoding) -> bool {
    a.dim_rank() == b.dim_rank()
        && a.dims.iter().chain(&b.dims).all(|d| d.slice.is_none())
        && a.levels.len() == b.levels.len()
        && a.levels.iter().zip(&b.levels).all(|(x, y)| {
            let format = |f: LevelFormat| match f {
                LevelFormat::NOutOfM { n, m, .. } => LevelFormat::NOutOfM { n, m, block_spelling: false },
                f => f,
            };
            x.expr == y.expr && format(x.format) == format(y.format) && x.props == y.props
        })
}

/// `t` with its positions and coordinates at `enc`'s widths (an error naming
/// the buffer and position of the first value that does not fit).
fn rewidth(t: SparseTensor, enc: &Encoding) -> Result<SparseTensor> {
    let narrow = |bufs: Vec<Option<super::buffer::IndexBuf>>, width, what: &str| {
        bufs.into_iter()
            .enumerate()
            .map(|(l, b)| {
                b.map(|b| {
                    let name = format!("{what}[{l}]");
                    if what == "coordinates" && enc.signed_level(l) {
                        super::buffer::IndexBuf::from_i64(b.to_i64(), width, &name)
                    } else {
                        super::buffer::IndexBuf::from_u64(b.to_u64(), width, &name)
                    }
                })
                .transpose()
            })
            .collect::<Result<Vec<_>>>()
    };
    Ok(SparseTensor {
        positions: narrow(t.positions, enc.pos_width, "positions")?,
        coordinates: narrow(t.coordinates, enc.crd_width, "coordinates")?,
        encoding: enc.clone(),
        ..t
    })
}

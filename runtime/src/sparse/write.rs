//! Writing stored tensors: the one place that knows every storage output
//! format, used by `heddle convert -o` and `heddle run -o` alike (and by
//! anything else that writes a [`SparseTensor`]).
//!
//! | extension | [`Format`] | what is written |
//! |---|---|---|
//! | `.json` | [`Format::Json`] | the storage object (LANGUAGE.md §7), every buffer as stored |
//! | `.mtx` | [`Format::Mtx`] | the entries, Matrix Market `coordinate general` |
//! | `.tns` | [`Format::Tns`] | the entries, MLIR's extended FROSTT form |
//! | `.npz` | [`Format::Npz`] | scipy's `save_npz` layout (csr, csc, bsr, or coo) |
//!
//! The JSON object is streamed value by value into a buffered writer (no
//! `serde_json::Value` of millions of numbers is built), with numbers spelled
//! as [`crate::io::number`] spells them everywhere.

use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use super::{buffer::IndexBuf, mtx, npz, tns};
use crate::io::number;
use crate::scalars::Num;
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, print_encoding};
use std::io::Write;
use std::path::Path;

/// A storage output format, chosen by a file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.json`: the storage object.
    Json,
    /// `.mtx`: Matrix Market (matrices only).
    Mtx,
    /// `.tns`: FROSTT, extended form.
    Tns,
    /// `.npz`: scipy's sparse archive.
    Npz,
}

impl Format {
    /// The format of an output path, or an error naming the extensions known.
    pub fn from_path(path: &Path) -> Result<Format> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        match ext.as_str() {
            "json" => Ok(Format::Json),
            "mtx" => Ok(Format::Mtx),
            "tns" => Ok(Format::Tns),
            "npz" => Ok(Format::Npz),
            e => Err(SparseError::Shape(format!(
                "{}: unknown tensor file type `.{e}` (expected .json, .mtx, .tns or .npz)",
                path.display()
            ))),
        }
    }
}

/// Writes a stored tensor in the format of `path`'s extension (see [`Format`]).
pub fn write(t: &SparseTensor, path: &Path) -> Result<()> {
    write_as(t, Format::from_path(path)?, path)
}

/// Writes a stored tensor to `path` in `format`.
pub fn write_as(t: &SparseTensor, format: Format, path: &Path) -> Result<()> {
    write_labelled(t, &t.encoding, format, path)
}

/// Writes `t`, the window a sliced encoding `sliced` selects (stored, as
/// every window is, in `sliced` without its slices: see
/// [`super::build::pack`]), to `path` in `format`. `.json` storage says
/// `sliced`, so the file reads back as that window for a parameter of the
/// same encoding (and as the window's own tensor for an unsliced one);
/// the other formats cannot say a slice and hold the window as a tensor.
pub fn write_window(t: &SparseTensor, sliced: &Encoding, format: Format, path: &Path) -> Result<()> {
    write_labelled(t, sliced, format, path)
}

/// [`write_as`], the `.json` storage object naming `label` as its encoding.
fn write_labelled(t: &SparseTensor, label: &Encoding, format: Format, path: &Path) -> Result<()> {
    let io = |source| SparseError::Io { path: path.to_path_buf(), source };
    // Matrix Market, FROSTT and scipy's arrays leave out zeros: a tensor
    // whose absent entries are something else would change there.
    let implicit = super::assemble::implicit_value(&t.encoding);
    if format != Format::Json && implicit.to_f64() != 0.0 {
        return Err(SparseError::Shape(format!(
            "{}: the tensor's absent entries are {implicit} (its encoding's implicitVal), but this format's absent entries are 0; write .json storage, which keeps the encoding",
            path.display()
        )));
    }
    match format {
        Format::Mtx => mtx::write_mtx(&t.to_coo(), t.elem, path),
        Format::Tns => tns::write_tns(&t.to_coo(), t.elem, path),
        Format::Npz => npz::write_npz(t, path),
        Format::Json => {
            let f = std::fs::File::create(path).map_err(io)?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
            write_json_labelled(t, label, &mut w).map_err(io)?;
            w.write_all(b"\n").map_err(io)?;
            w.flush().map_err(io)
        }
    }
}

/// Streams the storage object of `t` (`{"encoding", "dim_sizes", "lvl_sizes",
/// "nse", "positions", "coordinates", "values"}`, a level without a buffer
/// `null`) to `w`, without a trailing newline. It parses to exactly
/// [`super::json::storage_to_json`]'s value.
pub fn write_json(t: &SparseTensor, w: &mut impl Write) -> std::io::Result<()> {
    write_json_labelled(t, &t.encoding, w)
}

/// [`write_json`] naming `label` as the encoding (`t`'s, or the sliced one
/// whose window `t` is).
fn write_json_labelled(t: &SparseTensor, label: &Encoding, w: &mut impl Write) -> std::io::Result<()> {
    // Batched buffers nest one list per batch (see `super::batch`): the tree's form.
    if super::batch::batch_rank(&t.encoding) > 0 {
        let mut v = super::json::storage_to_json(t);
        v["encoding"] = serde_json::Value::String(print_encoding(label));
        w.write_all(b"{")?;
        for (k, key) in
            ["encoding", "dim_sizes", "lvl_sizes", "nse", "positions", "coordinates", "values"].into_iter().enumerate()
        {
            let field = serde_json::to_string(&v[key]).map_err(std::io::Error::other)?;
            write!(w, "{}\"{key}\":{field}", if k > 0 { "," } else { "" })?;
        }
        return w.write_all(b"}");
    }
    let text = serde_json::to_string(&print_encoding(label)).map_err(std::io::Error::other)?;
    write!(w, "{{\"encoding\":{text},\"dim_sizes\":")?;
    list(w, t.dim_sizes.iter().copied())?;
    w.write_all(b",\"lvl_sizes\":")?;
    list(w, t.lvl_sizes.iter().copied())?;
    write!(w, ",\"nse\":{},\"positions\":", t.nse())?;
    per_level(w, &t.positions, &|_| false)?;
    w.write_all(b",\"coordinates\":")?;
    per_level(w, &t.coordinates, &|l| t.encoding.signed_level(l))?;
    w.write_all(b",\"values\":[")?;
    for k in 0..t.values.len() {
        if k > 0 {
            w.write_all(b",")?;
        }
        json_value(w, t.values.num(k), t.elem)?;
    }
    w.write_all(b"]}")
}

fn list(w: &mut impl Write, xs: impl Iterator<Item = u64>) -> std::io::Result<()> {
    w.write_all(b"[")?;
    for (k, x) in xs.enumerate() {
        if k > 0 {
            w.write_all(b",")?;
        }
        write!(w, "{x}")?;
    }
    w.write_all(b"]")
}

/// `signed(l)`: level `l` keeps signed coordinates (DIA's offsets).
fn per_level(w: &mut impl Write, bufs: &[Option<IndexBuf>], signed: &dyn Fn(usize) -> bool) -> std::io::Result<()> {
    w.write_all(b"[")?;
    for (l, b) in bufs.iter().enumerate() {
        if l > 0 {
            w.write_all(b",")?;
        }
        match b {
            None => w.write_all(b"null")?,
            Some(b) if signed(l) => {
                w.write_all(b"[")?;
                for i in 0..b.len() {
                    if i > 0 {
                        w.write_all(b",")?;
                    }
                    write!(w, "{}", b.get_signed(i))?;
                }
                w.write_all(b"]")?;
            }
            Some(b) => list(w, (0..b.len()).map(|i| b.get(i)))?,
        }
    }
    w.write_all(b"]")
}

/// A stored value in JSON: an integer for integer element types (exactly,
/// at any width; booleans as 1 and 0), else the
/// shortest float text at the element's width, `"inf"`, `"-inf"` or `"nan"`.
pub(crate) fn json_value(w: &mut impl Write, v: Num, elem: ScalarType) -> std::io::Result<()> {
    match v {
        Num::Int(i) => write!(w, "{i}"),
        Num::Bool(b) => write!(w, "{}", u8::from(b)),
        // A complex number is the pair [re, im].
        Num::Complex(re, im) => {
            w.write_all(b"[")?;
            json_value(w, Num::Float(re), elem.part())?;
            w.write_all(b",")?;
            json_value(w, Num::Float(im), elem.part())?;
            w.write_all(b"]")
        }
        Num::Float(x) => match number::non_finite_name(x) {
            Some(name) => write!(w, "\"{name}\""),
            None => write!(w, "{}", number::float(x, elem)),
        },
    }
}

//! FROSTT (`.tns`): one entry per line, `i1 i2 ... iN value`, 1-based, `#`
//! comments. MLIR's extended form starts with two header lines, `rank nnz`
//! and the `rank` dimension sizes; without it the sizes are the largest
//! coordinates seen.

use super::coo::Coo;
use super::error::{Result, SparseError};
use super::text::{self, EntryFormat, ValueKind};
use crate::scalars::Num;
use heddle_ir::ScalarType;
use std::io::Write;
use std::path::Path;

/// Reads a FROSTT file, with values of the type the text says: `i64` when
/// every value is an integer (kept exactly), else `f64`.
pub fn read_tns(path: &Path) -> Result<Coo> {
    parse_tns(&read_text(path)?, path)
}

/// Parses FROSTT text; `path` is only used in messages.
pub fn parse_tns(bytes: &[u8], path: &Path) -> Result<Coo> {
    parse_tns_as(bytes, path, None)
}

/// Reads a FROSTT file for a tensor whose values are `dest`, or of the type
/// the text says without one (see [`read_tns`], [`read_tns_for`]).
pub fn read_tns_as(path: &Path, dest: Option<ScalarType>) -> Result<Coo> {
    parse_tns_as(&read_text(path)?, path, dest)
}

/// Reads a FROSTT file for a tensor whose values are `dest`: values are
/// rounded once, straight to `f32` when `dest` is `F32`.
pub fn read_tns_for(path: &Path, dest: ScalarType) -> Result<Coo> {
    parse_tns_for(&read_text(path)?, path, dest)
}

/// [`parse_tns`] for a tensor whose values are `dest` (see [`read_tns_for`]).
pub fn parse_tns_for(bytes: &[u8], path: &Path, dest: ScalarType) -> Result<Coo> {
    parse_tns_as(bytes, path, Some(dest))
}

fn parse_tns_as(bytes: &[u8], path: &Path, dest: Option<ScalarType>) -> Result<Coo> {
    let single = dest == Some(ScalarType::F32);
    // The first three content lines decide between plain and extended.
    let content: Vec<(usize, &[u8])> = text::lines(bytes, 1).filter(|(_, l)| !text::skip(l, b'#')).take(3).collect();
    let Some(&(first_no, first)) = content.first() else {
        return Err(SparseError::file(
            path,
            1,
            "empty file: a FROSTT tensor needs at least one entry or an extended header",
        ));
    };
    let count = |l: &[u8]| text::tokens(l).count();
    let ints = |l: &[u8]| text::tokens(l).map(text::parse_u64).collect::<Option<Vec<u64>>>();
    let header = match (ints(first), content.get(1)) {
        (Some(h), Some(&(_, second))) if h.len() == 2 && h[0] >= 1 && count(second) as u64 == h[0] => {
            let third_ok = content.get(2).is_none_or(|&(_, t)| count(t) as u64 == h[0] + 1);
            third_ok.then_some((h[0] as usize, h[1] as usize, content[1]))
        }
        (Some(h), None) if h.len() == 2 && h[1] == 0 => None,
        _ => None,
    };
    let (rank, nnz, dims, body_from) = match header {
        Some((rank, nnz, (dims_no, dims_line))) => {
            let dims = ints(dims_line)
                .ok_or_else(|| SparseError::file(path, dims_no, "the dimension sizes must be non-negative integers"))?;
            (rank, Some(nnz), Some(dims), dims_no + 1)
        }
        None => {
            let n = count(first);
            if n < 2 {
                return Err(SparseError::file(
                    path,
                    first_no,
                    "an entry line needs at least one coordinate and a value",
                ));
            }
            (n - 1, None, None, first_no)
        }
    };
    let body_start = nth_line_start(bytes, body_from);
    let body = &bytes[body_start..];
    let names: Vec<String> = (1..=rank).map(|d| format!("dimension {d}")).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    // Integers are read exactly unless the destination is a float; a
    // fraction, an exponent or a non-finite value anywhere makes them floats.
    let value = if dest.is_some_and(|d| d.is_float()) || !text::integers_only(body, b'#') {
        ValueKind::Real
    } else {
        ValueKind::Integer
    };
    let fmt = EntryFormat { rank, dims: dims.as_deref(), value, names: &name_refs, comment: b'#', single };
    let e = text::parse_entries(body, body_from, &fmt, path)?;
    if let Some(nnz) = nnz {
        if e.values.len() > nnz {
            let line = text::entry_line(body, body_from, nnz, b'#');
            return Err(SparseError::file(path, line, format!("more entries than the {nnz} the header declares")));
        }
        if e.values.len() < nnz {
            let line =
                body_from + body.split(|&b| b == b'\n').count().saturating_sub(usize::from(body.ends_with(b"\n")));
            return Err(SparseError::file(
                path,
                line,
                format!("the file ends after {} of the {nnz} entries the header declares (truncated?)", e.values.len()),
            ));
        }
    }
    let dims = dims.unwrap_or_else(|| {
        let mut d = vec![0u64; rank];
        for k in 0..e.values.len() {
            for (x, c) in d.iter_mut().zip(&e.coords[k * rank..(k + 1) * rank]) {
                *x = (*x).max(c + 1);
            }
        }
        d
    });
    Ok(Coo { dims, coords: e.coords, values: e.values })
}

fn nth_line_start(bytes: &[u8], line: usize) -> usize {
    let mut at = 0;
    for _ in 1..line {
        match bytes[at..].iter().position(|&b| b == b'\n') {
            Some(p) => at += p + 1,
            None => return bytes.len(),
        }
    }
    at
}

/// Writes MLIR's extended FROSTT form (header with rank, count and sizes).
pub fn write_tns(coo: &Coo, elem: ScalarType, path: &Path) -> Result<()> {
    if elem.is_complex() {
        // FROSTT has one number per value: a complex one would not read back.
        return Err(SparseError::Shape(format!(
            "FROSTT .tns files hold real values; write this {elem} tensor as .mtx (matrices), .npz or .json"
        )));
    }
    let mut c = coo.clone();
    c.sort_and_sum();
    let io = |source| SparseError::Io { path: path.to_path_buf(), source };
    let f = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    writeln!(w, "# extended FROSTT format").map_err(io)?;
    writeln!(w, "{} {}", c.rank(), c.len()).map_err(io)?;
    let dims: Vec<String> = c.dims.iter().map(u64::to_string).collect();
    writeln!(w, "{}", dims.join(" ")).map_err(io)?;
    for k in 0..c.len() {
        for x in c.entry(k) {
            write!(w, "{} ", x + 1).map_err(io)?;
        }
        write_num(&mut w, c.values.num(k), elem).map_err(io)?;
        writeln!(w).map_err(io)?;
    }
    w.flush().map_err(io)
}

/// Writes `i [j] value\n` (1-based indices already applied).
pub(crate) fn write_value(w: &mut impl Write, i: u64, j: Option<u64>, v: Num, elem: ScalarType) -> std::io::Result<()> {
    match j {
        Some(j) => write!(w, "{i} {j} ")?,
        None => write!(w, "{i} ")?,
    }
    write_num(w, v, elem)?;
    writeln!(w)
}

/// A value as text: integers exactly (booleans as 1 and 0), floats in the
/// shortest form that reads back to the same number at the element type's
/// width (`inf`, `-inf`, `nan` for the others; see [`crate::io::number`]).
pub(crate) fn write_num(w: &mut impl Write, v: Num, elem: ScalarType) -> std::io::Result<()> {
    match v {
        Num::Int(i) => write!(w, "{i}"),
        Num::Bool(b) => write!(w, "{}", u8::from(b)),
        Num::Float(x) => write!(w, "{}", crate::io::number::float(x, elem)),
        // Matrix Market's `complex` field: the real part, a space, the imaginary part.
        Num::Complex(re, im) => {
            write!(w, "{} {}", crate::io::number::float(re, elem.part()), crate::io::number::float(im, elem.part()))
        }
    }
}

/// Reads a FROSTT file's text whole, looking at its first bytes before
/// reading on (see [`text::read_text`]): a first line that runs on past
/// 64 KiB is refused at line 1.
fn read_text(path: &Path) -> Result<Vec<u8>> {
    text::read_text(path, &|bytes| {
        text::first_line_ends(path, bytes, "a FROSTT tensor")?;
        // The first line is an entry (coordinates, then a number) or an
        // extended header's two integers.
        text::content_line(path, bytes, b'#', 0, &|toks| {
            let (last, coords) = toks.split_last()?;
            // Only the first byte of the value: the parser decides the rest.
            let number = b"0123456789+-.iInN".contains(&last[0]);
            let bad = coords.iter().find(|t| text::parse_u64(t).is_none()).or((!number).then_some(last))?;
            Some(format!("`{}` is not a number: this is not a FROSTT tensor", text::show(bad)))
        })
    })
}

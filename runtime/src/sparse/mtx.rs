//! Matrix Market (`.mtx`): coordinate and array formats; real, integer,
//! complex and pattern fields; general, symmetric, skew-symmetric and
//! Hermitian matrices. Indices in the file are 1-based; the [`Coo`] is
//! 0-based. Symmetric matrices are expanded (both triangles are returned; a
//! Hermitian matrix's mirror holds the conjugates).

use super::coo::{Coo, CooColumns};
use super::error::{Result, SparseError};
use super::text::{self, EntryFormat, ValueKind};
use crate::scalars::{Num, ScalarVec};
use heddle_ir::ScalarType;
use std::io::Write;
use std::path::Path;

/// The header's symmetry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symmetry {
    /// Every entry is stored.
    General,
    /// `a(i, j) = a(j, i)`; the lower triangle is stored.
    Symmetric,
    /// `a(i, j) = -a(j, i)`; the strictly lower triangle is stored.
    SkewSymmetric,
    /// `a(i, j) = conj(a(j, i))` (complex matrices); the lower triangle is
    /// stored, its diagonal real.
    Hermitian,
}

/// Is this Matrix Market text a `pattern` matrix (coordinates without values)?
pub fn is_pattern(bytes: &[u8]) -> bool {
    let head = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    text::tokens(head).nth(3).is_some_and(|w| w.eq_ignore_ascii_case(b"pattern"))
}

/// Reads a Matrix Market file. The element type is `i64` for `integer`
/// files, `complex<f64>` for `complex` ones and `f64` otherwise.
pub fn read_mtx(path: &Path) -> Result<(Coo, ScalarType)> {
    parse_mtx(&text::read_file(path)?, path)
}

/// Parses Matrix Market text; `path` is only used in messages.
pub fn parse_mtx(bytes: &[u8], path: &Path) -> Result<(Coo, ScalarType)> {
    parse_mtx_for(bytes, path, ScalarType::F64)
}

/// Reads a Matrix Market file for a tensor whose values are `dest`: real
/// values are rounded once, straight to `f32` when `dest` is `F32`.
pub fn read_mtx_for(path: &Path, dest: ScalarType) -> Result<(Coo, ScalarType)> {
    parse_mtx_for(&text::read_file(path)?, path, dest)
}

/// [`parse_mtx`] for a tensor whose values are `dest` (see [`read_mtx_for`]).
pub fn parse_mtx_for(bytes: &[u8], path: &Path, dest: ScalarType) -> Result<(Coo, ScalarType)> {
    let single = dest == ScalarType::F32;
    let mut lines = text::lines(bytes, 1);
    let (_, head) =
        lines.next().ok_or_else(|| SparseError::file(path, 1, "empty file: expected a `%%MatrixMarket` header"))?;
    let words: Vec<String> = text::tokens(head).map(|t| text::show(t).to_ascii_lowercase()).collect();
    let usage =
        "expected `%%MatrixMarket matrix coordinate|array real|integer|complex|pattern general|symmetric|skew-symmetric|hermitian`";
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(SparseError::file(path, 1, format!("bad header: {usage}")));
    }
    let coordinate = match words[2].as_str() {
        "coordinate" => true,
        "array" => false,
        w => return Err(SparseError::file(path, 1, format!("unknown format `{w}`: {usage}"))),
    };
    let value = match words[3].as_str() {
        "real" | "double" => ValueKind::Real,
        "integer" => ValueKind::Integer,
        "pattern" if coordinate => ValueKind::Pattern,
        "pattern" => return Err(SparseError::file(path, 1, "the pattern field needs the coordinate format")),
        "complex" => ValueKind::Complex,
        w => return Err(SparseError::file(path, 1, format!("unknown field `{w}`: {usage}"))),
    };
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" if value == ValueKind::Complex => Symmetry::Hermitian,
        "hermitian" => {
            return Err(SparseError::file(path, 1, format!("a hermitian matrix has complex values, but this one's field is `{}`", words[3])));
        }
        w => return Err(SparseError::file(path, 1, format!("unknown symmetry `{w}`: {usage}"))),
    };
    // The size line: the first line that is neither blank nor a comment.
    let mut size = None;
    let mut last_line = 1;
    for (no, line) in lines.by_ref() {
        last_line = no;
        if text::skip(line, b'%') {
            continue;
        }
        size = Some((no, line));
        break;
    }
    let (size_no, size_line) =
        size.ok_or_else(|| SparseError::file(path, last_line + 1, "the file ends before the size line"))?;
    let want = if coordinate { 3 } else { 2 };
    let nums: Vec<u64> = text::tokens(size_line)
        .map(|t| {
            text::parse_u64(t).ok_or_else(|| {
                SparseError::file(path, size_no, format!("size `{}` is not a non-negative integer", text::show(t)))
            })
        })
        .collect::<Result<_>>()?;
    if nums.len() != want {
        let what = if coordinate { "rows, columns and entries" } else { "rows and columns" };
        return Err(SparseError::file(
            path,
            size_no,
            format!("the size line must give {what} ({want} numbers), found {}", nums.len()),
        ));
    }
    let (rows, cols) = (nums[0], nums[1]);
    if symmetry != Symmetry::General && rows != cols {
        return Err(SparseError::file(
            path,
            size_no,
            format!("a {} matrix must be square, this one is {rows}x{cols}", words[4]),
        ));
    }
    // Byte offset of the body: just after the size line.
    let body_start = (size_line.as_ptr() as usize - bytes.as_ptr() as usize) + size_line.len();
    let body = bytes.get(body_start..).unwrap_or_default();
    let body = body.strip_prefix(b"\r").unwrap_or(body);
    let body = body.strip_prefix(b"\n").unwrap_or(body);
    let first = size_no + 1;
    let elem = match value {
        ValueKind::Integer => ScalarType::I64,
        ValueKind::Complex => ScalarType::C64,
        _ => ScalarType::F64,
    };
    let dims = [rows, cols];
    let mut coo = Coo::of_type(dims.to_vec(), elem);
    if coordinate {
        let fmt = EntryFormat { rank: 2, dims: Some(&dims), value, names: &["row", "column"], comment: b'%', single };
        let e = text::parse_entries(body, first, &fmt, path)?;
        let nnz = nums[2] as usize;
        check_count(e.values.len(), nnz, body, first, path)?;
        coo.coords = e.coords;
        coo.values = e.values;
    } else {
        let fmt = EntryFormat { rank: 0, dims: None, value, names: &[], comment: b'%', single };
        let e = text::parse_entries(body, first, &fmt, path)?;
        // In u128, where no product of two u64 sizes wraps: a size line can
        // promise more values than any file holds (2^64 - 1 rows), and the
        // count is compared with the values found before anything is built.
        let (r, c) = (u128::from(rows), u128::from(cols));
        let expected = match symmetry {
            Symmetry::General => r * c,
            Symmetry::Symmetric | Symmetry::Hermitian => r * (r + 1) / 2,
            Symmetry::SkewSymmetric => r * r.saturating_sub(1) / 2,
        };
        let Ok(expected) = usize::try_from(expected) else {
            return Err(SparseError::file(
                path,
                size_no,
                format!("a {rows}x{cols} array would hold {expected} values, more than any file can"),
            ));
        };
        check_count(e.values.len(), expected, body, first, path)?;
        coo = Coo::of_type(dims.to_vec(), e.values.elem());
        // Column-major; symmetric arrays list each column from the diagonal down.
        // No values (0 rows, or a 1x1 skew-symmetric matrix): nothing to walk,
        // however many columns the size line gives.
        let cols = if expected == 0 { 0 } else { cols };
        let mut k = 0;
        for j in 0..cols {
            let from = match symmetry {
                Symmetry::General => 0,
                Symmetry::Symmetric | Symmetry::Hermitian => j,
                Symmetry::SkewSymmetric => j + 1,
            };
            for i in from..rows {
                if !e.values.is_padding(k) {
                    coo.push_from(&[i, j], &e.values, k);
                }
                k += 1;
            }
        }
    }
    if symmetry != Symmetry::General {
        let n = coo.len();
        for k in 0..n {
            let (i, j) = (coo.coords[2 * k], coo.coords[2 * k + 1]);
            if i == j && symmetry == Symmetry::SkewSymmetric {
                let line = if coordinate { text::entry_line(body, first, k, b'%') } else { first };
                return Err(SparseError::file(path, line, "a skew-symmetric matrix cannot store a diagonal entry"));
            }
            if i == j && symmetry == Symmetry::Hermitian && matches!(coo.values.num(k), Num::Complex(_, im) if im != 0.0) {
                let line = if coordinate { text::entry_line(body, first, k, b'%') } else { first };
                return Err(SparseError::file(
                    path,
                    line,
                    format!("a hermitian matrix's diagonal is real, but entry ({}, {}) is {}", i + 1, j + 1, coo.values.num(k)),
                ));
            }
            if i != j {
                let mirrored = coo.values.clone_at(k);
                coo.push_from(&[j, i], &mirrored, 0);
                match symmetry {
                    Symmetry::SkewSymmetric => coo.values.negate_last(),
                    Symmetry::Hermitian => coo.values.conjugate_last(),
                    _ => {}
                }
            }
        }
    }
    let elem = coo.elem();
    Ok((coo, elem))
}

fn check_count(found: usize, want: usize, body: &[u8], first: usize, path: &Path) -> Result<()> {
    if found > want {
        let line = text::entry_line(body, first, want, b'%');
        return Err(SparseError::file(path, line, format!("more entries than the {want} the size line declares")));
    }
    if found < want {
        let line = first + body.split(|&b| b == b'\n').count().saturating_sub(usize::from(body.ends_with(b"\n")));
        return Err(SparseError::file(
            path,
            line,
            format!("the file ends after {found} of the {want} entries the size line declares (truncated?)"),
        ));
    }
    Ok(())
}

/// Writes a matrix as `coordinate general`, entries in row-major order
/// (duplicates summed); `integer` when `elem` is an integer type, `complex`
/// (two numbers per entry) when it is complex.
pub fn write_mtx(coo: &Coo, elem: ScalarType, path: &Path) -> Result<()> {
    if coo.rank() != 2 {
        return Err(SparseError::Shape(format!(
            "Matrix Market holds matrices; this tensor has {} dimensions (write .tns)",
            coo.rank()
        )));
    }
    let mut c = coo.clone();
    c.sort_and_sum();
    let io = |source| SparseError::Io { path: path.to_path_buf(), source };
    let f = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let field = if elem.is_complex() {
        "complex"
    } else if elem.is_float() {
        "real"
    } else {
        "integer"
    };
    writeln!(w, "%%MatrixMarket matrix coordinate {field} general").map_err(io)?;
    writeln!(w, "{} {} {}", c.dims[0], c.dims[1], c.len()).map_err(io)?;
    for k in 0..c.len() {
        let e = c.entry(k);
        super::tns::write_value(&mut w, e[0] + 1, Some(e[1] + 1), c.values.num(k), elem).map_err(io)?;
    }
    w.flush().map_err(io)
}

/// A value type of the streaming reader ([`read_mtx_columns`]): what a
/// symmetric file's mirrored entries take.
trait MirrorValue: text::EntryValue + crate::scalars::Scalar + Sync {
    /// The conjugate (a Hermitian matrix's mirror); a real value is its own.
    fn conj(self) -> Self {
        self
    }
    /// Is the value real (a Hermitian matrix's diagonal must be)?
    fn is_real(&self) -> bool {
        true
    }
}

impl MirrorValue for f64 {}
impl MirrorValue for i64 {}
impl MirrorValue for crate::scalars::Complex<f64> {
    fn conj(self) -> Self {
        crate::scalars::Complex { re: self.re, im: -self.im }
    }
    fn is_real(&self) -> bool {
        self.im == 0.0
    }
}

/// One chunk's entries as 32-bit coordinate columns.
struct Columns32<T> {
    rows: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<T>,
}

impl<T> text::Sink<T> for Columns32<T> {
    #[inline(always)]
    fn coord(&mut self, _: usize, d: usize, v: u64) {
        // The sizes are at most 2^32, so every coordinate in range fits.
        if d == 0 { self.rows.push(v as u32) } else { self.cols.push(v as u32) }
    }
    #[inline(always)]
    fn value(&mut self, _: usize, v: T) {
        self.vals.push(v);
    }
}

/// Bytes read and parsed per round of the streaming reader: the chunks of a
/// round are parsed in parallel while the next round is read.
const ROUND: usize = 8 << 20;
/// Bytes per chunk within a round (cut after a newline).
const PIECE: usize = 1 << 20;

/// The header of a `coordinate` file the streaming reader takes.
struct Head {
    value: ValueKind,
    symmetry: Symmetry,
    rows: u64,
    cols: u64,
    nnz: u64,
    /// Byte offset of the first entry line.
    body: usize,
}

/// The header, comments and size line at the start of `bytes`, when they
/// are all there (the size line ends with a newline) and well-formed, for
/// a `coordinate` file whose sizes are at most 2^32. `None` otherwise.
fn coordinate_head(bytes: &[u8]) -> Option<Head> {
    let mut at = 0;
    let mut next_line = || {
        let len = bytes[at..].iter().position(|&b| b == b'\n')?;
        let line = &bytes[at..at + len];
        at += len + 1;
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    };
    let head = next_line()?;
    let words: Vec<String> = text::tokens(head).map(|t| text::show(t).to_ascii_lowercase()).collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" || words[2] != "coordinate" {
        return None;
    }
    let value = match words[3].as_str() {
        "real" | "double" => ValueKind::Real,
        "integer" => ValueKind::Integer,
        "complex" => ValueKind::Complex,
        "pattern" => ValueKind::Pattern,
        _ => return None,
    };
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" if value == ValueKind::Complex => Symmetry::Hermitian,
        _ => return None,
    };
    let size = loop {
        let line = next_line()?;
        if !text::skip(line, b'%') {
            break line;
        }
    };
    let nums: Vec<u64> = text::tokens(size).map(text::parse_u64).collect::<Option<_>>()?;
    let &[rows, cols, nnz] = nums.as_slice() else { return None };
    if rows > 1 << 32 || cols > 1 << 32 || (symmetry != Symmetry::General && rows != cols) {
        return None;
    }
    Some(Head { value, symmetry, rows, cols, nnz, body: at })
}

/// Reads a `coordinate` Matrix Market file (real, integer, complex or
/// pattern, whose values are all 1) as
/// 32-bit coordinate columns and values, streaming: the file is read in
/// rounds of a few megabytes, each parsed in parallel while the next is
/// read, so the whole text is never in memory (only the entries, at 4 + 4
/// bytes of coordinates each, as scipy keeps them). The entries, their
/// order and their values are those of [`parse_mtx_for`] (a symmetric
/// file's mirrored entries after the stored ones).
///
/// Returns the columns, the values' type and whether it is a pattern file.
/// `Ok(None)` where it does not apply (another format or field, sizes
/// beyond 2^32, a header longer than a round) and wherever the file is not
/// well-formed: the caller then reads it with [`parse_mtx_for`], which
/// finds the same entries or reports the first problem with its line.
pub fn read_mtx_columns(path: &Path, dest: ScalarType) -> Result<Option<(CooColumns, ScalarType, bool)>> {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else { return Ok(None) };
    // A regular file only: the whole-file reader must be able to read it again.
    let Some(size) = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()) else { return Ok(None) };
    let mut cur = Vec::with_capacity(ROUND + PIECE);
    let Ok(n) = (&mut file).take(ROUND as u64).read_to_end(&mut cur) else { return Ok(None) };
    let eof = n < ROUND;
    let Some(head) = coordinate_head(&cur) else { return Ok(None) };
    cur.drain(..head.body);
    let single = dest == ScalarType::F32;
    let dims = [head.rows, head.cols];
    let fmt = EntryFormat { rank: 2, dims: Some(&dims), value: head.value, names: &["row", "column"], comment: b'%', single };
    // An entry line takes at least 4 bytes (`1 1\n`, less a last newline):
    // a size line cannot make this reserve more than the file could hold.
    let bound = head.nnz.min(size / 4 + 1) as usize;
    let reserve = if head.symmetry == Symmetry::General { bound } else { 2 * bound };
    let stream = Stream { file, cur, eof, fmt: &fmt, path };
    let out = match head.value {
        ValueKind::Integer => stream.read::<i64>(head.nnz, reserve, head.symmetry).map(|(r, k, v)| (r, k, ScalarVec::from(v))),
        ValueKind::Complex => stream
            .read::<crate::scalars::Complex<f64>>(head.nnz, reserve, head.symmetry)
            .map(|(r, k, v)| (r, k, ScalarVec::from(v))),
        _ => stream.read::<f64>(head.nnz, reserve, head.symmetry).map(|(r, k, v)| (r, k, ScalarVec::from(v))),
    };
    Ok(out.map(|(rows, cols, values)| {
        let elem = values.elem();
        (CooColumns::from_u32(dims.to_vec(), vec![rows, cols], values), elem, head.value == ValueKind::Pattern)
    }))
}

/// The streaming reader's state: the file, the round being parsed.
struct Stream<'a> {
    file: std::fs::File,
    cur: Vec<u8>,
    eof: bool,
    fmt: &'a EntryFormat<'a>,
    path: &'a Path,
}

type Read32<T> = Option<(Vec<u32>, Vec<u32>, Vec<T>)>;

impl Stream<'_> {
    fn read<T: MirrorValue>(mut self, nnz: u64, reserve: usize, symmetry: Symmetry) -> Read32<T> {
        use std::io::Read;
        let (mut rows, mut cols, mut vals) = (Vec::with_capacity(reserve), Vec::with_capacity(reserve), Vec::with_capacity(reserve));
        let mut next: Vec<u8> = Vec::with_capacity(ROUND + PIECE);
        let mut pool: Vec<Columns32<T>> = Vec::new();
        super::counting::advise_capacity(&mut rows);
        super::counting::advise_capacity(&mut cols);
        super::counting::advise_capacity(&mut vals);
        loop {
            // The round ends after its last newline; the rest is carried over.
            let end = if self.eof {
                self.cur.len()
            } else {
                match self.cur.iter().rposition(|&b| b == b'\n') {
                    Some(p) => p + 1,
                    None => {
                        // A line longer than a round: read more of it.
                        let n = (&mut self.file).take(ROUND as u64).read_to_end(&mut self.cur).ok()?;
                        self.eof = n < ROUND;
                        continue;
                    }
                }
            };
            next.clear();
            next.extend_from_slice(&self.cur[end..]);
            let (body, file, eof) = (&self.cur[..end], &mut self.file, self.eof);
            let (parsed, read) = rayon::join(
                || parse_round::<T>(body, self.fmt, self.path, &mut pool),
                || if eof { Some(true) } else { file.take(ROUND as u64).read_to_end(&mut next).ok().map(|n| n < ROUND) },
            );
            let parsed = parsed?;
            if (rows.len() + parsed.iter().map(|p| p.rows.len()).sum::<usize>()) as u64 > nnz {
                return None;
            }
            append(&mut rows, parsed.iter().map(|p| &p.rows[..]));
            append(&mut cols, parsed.iter().map(|p| &p.cols[..]));
            append(&mut vals, parsed.iter().map(|p| &p.vals[..]));
            if eof {
                break;
            }
            self.eof = read?;
            std::mem::swap(&mut self.cur, &mut next);
        }
        if rows.len() as u64 != nnz {
            return None;
        }
        if symmetry != Symmetry::General {
            // As `parse_mtx_for`: each stored entry off the diagonal, in order, mirrored after them all.
            for k in 0..rows.len() {
                let (i, j, v) = (rows[k], cols[k], vals[k]);
                if i == j {
                    if symmetry == Symmetry::SkewSymmetric || (symmetry == Symmetry::Hermitian && !v.is_real()) {
                        return None;
                    }
                    continue;
                }
                rows.push(j);
                cols.push(i);
                vals.push(match symmetry {
                    Symmetry::SkewSymmetric => crate::scalars::Scalar::neg(v),
                    Symmetry::Hermitian => v.conj(),
                    _ => v,
                });
            }
        }
        Some((rows, cols, vals))
    }
}

/// Appends `parts` to `dst` in order, copying them in parallel.
fn append<'a, T: Copy + Send + Sync + 'a>(dst: &mut Vec<T>, parts: impl Iterator<Item = &'a [T]>) {
    use rayon::prelude::*;
    let parts: Vec<&[T]> = parts.collect();
    let add: usize = parts.iter().map(|p| p.len()).sum();
    dst.reserve(add);
    let mut rest = &mut dst.spare_capacity_mut()[..add];
    let mut windows = Vec::with_capacity(parts.len());
    for p in parts {
        let (w, r) = rest.split_at_mut(p.len());
        windows.push((w, p));
        rest = r;
    }
    windows.into_par_iter().for_each(|(w, p)| {
        for (d, &x) in w.iter_mut().zip(p) {
            d.write(x);
        }
    });
    // SAFETY: the `add` slots after the length, every one written just above
    // (the windows cover them exactly, each as long as its part).
    unsafe { dst.set_len(dst.len() + add) };
}

/// A round's entries, chunk by chunk in order; `None` if any chunk is not
/// well-formed.
fn parse_round<'p, T: MirrorValue>(body: &[u8], fmt: &EntryFormat, path: &Path, pool: &'p mut Vec<Columns32<T>>) -> Option<&'p [Columns32<T>]> {
    use rayon::prelude::*;
    let mut cuts = vec![0usize];
    let mut at = PIECE;
    while at < body.len() {
        match body[at..].iter().position(|&b| b == b'\n') {
            Some(p) => {
                cuts.push(at + p + 1);
                at += p + 1 + PIECE;
            }
            None => break,
        }
    }
    cuts.push(body.len());
    // The chunks' buffers are kept from round to round: fresh ones would
    // fault their pages in again every round.
    if pool.len() < cuts.len() - 1 {
        pool.resize_with(cuts.len() - 1, || Columns32 { rows: Vec::new(), cols: Vec::new(), vals: Vec::new() });
    }
    let pool = &mut pool[..cuts.len() - 1];
    let ok = pool.par_iter_mut().zip(cuts.par_windows(2)).all(|(c, w)| {
        let piece = &body[w[0]..w[1]];
        c.rows.clear();
        c.cols.clear();
        c.vals.clear();
        // About 30 bytes a line in a typical file; the vectors grow past that.
        let guess = piece.len() / 24 + 16;
        c.rows.reserve(guess);
        c.cols.reserve(guess);
        c.vals.reserve(guess);
        text::parse_into::<T, _>(piece, 1, fmt, path, c).is_ok()
    });
    ok.then_some(pool)
}

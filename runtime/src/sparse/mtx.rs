//! Matrix Market (`.mtx`): coordinate and array formats; real, integer,
//! complex and pattern fields; general, symmetric, skew-symmetric and
//! Hermitian matrices. Indices in the file are 1-based; the [`Coo`] is
//! 0-based. Symmetric matrices are expanded (both triangles are returned; a
//! Hermitian matrix's mirror holds the conjugates).

use super::coo::{Coo, CooColumns};
use super::counting::Idx;
use super::error::{Result, SparseError};
use super::text::{self, EntryFormat, ValueKind};
use crate::scalars::{Num, ScalarVec};
use heddle_ir::ScalarType;
use std::io::Write;
use std::mem::MaybeUninit;
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
    parse_mtx(&read_text(path)?, path)
}

/// The banner every Matrix Market file starts with (in any case).
const BANNER: &[u8] = b"%%MatrixMarket";

/// Reads a Matrix Market file's text whole, looking at its first bytes
/// before reading on (see [`text::read_text`]): a file that does not start
/// with the banner, or whose first line runs on, is refused at line 1.
pub(crate) fn read_text(path: &Path) -> Result<Vec<u8>> {
    text::read_text(path, &|bytes| {
        // White space before the banner is accepted, as the parser does.
        let start = bytes.iter().position(|&b| !matches!(b, b' ' | b'\t' | b'\r')).unwrap_or(bytes.len());
        let head = &bytes[start..];
        let n = head.len().min(BANNER.len());
        if !head[..n].eq_ignore_ascii_case(&BANNER[..n]) {
            return Err(SparseError::file(
                path,
                1,
                "bad header: expected `%%MatrixMarket matrix coordinate|array real|integer|complex|pattern general|symmetric|skew-symmetric|hermitian`",
            ));
        }
        text::first_line_ends(path, bytes, "a Matrix Market header")?;
        // The size line (after the banner) holds non-negative integers.
        text::content_line(path, bytes, b'%', 0, &|toks| {
            let bad = toks.iter().find(|t| text::parse_u64(t).is_none())?;
            Some(format!("size `{}` is not a non-negative integer", text::show(bad)))
        })
    })
}

/// Parses Matrix Market text; `path` is only used in messages.
pub fn parse_mtx(bytes: &[u8], path: &Path) -> Result<(Coo, ScalarType)> {
    parse_mtx_for(bytes, path, ScalarType::F64)
}

/// Reads a Matrix Market file for a tensor whose values are `dest`: real
/// values are rounded once, straight to `f32` when `dest` is `F32`.
pub fn read_mtx_for(path: &Path, dest: ScalarType) -> Result<(Coo, ScalarType)> {
    parse_mtx_for(&read_text(path)?, path, dest)
}

/// [`parse_mtx`] for a tensor whose values are `dest` (see [`read_mtx_for`]).
pub fn parse_mtx_for(bytes: &[u8], path: &Path, dest: ScalarType) -> Result<(Coo, ScalarType)> {
    let single = dest == ScalarType::F32;
    let mut lines = text::lines(bytes, 1);
    let (_, head) =
        lines.next().ok_or_else(|| SparseError::file(path, 1, "empty file: expected a `%%MatrixMarket` header"))?;
    let words: Vec<String> = text::tokens(head).map(|t| text::show(t).to_ascii_lowercase()).collect();
    let usage = "expected `%%MatrixMarket matrix coordinate|array real|integer|complex|pattern general|symmetric|skew-symmetric|hermitian`";
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
            return Err(SparseError::file(
                path,
                1,
                format!("a hermitian matrix has complex values, but this one's field is `{}`", words[3]),
            ));
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
            if i == j
                && symmetry == Symmetry::Hermitian
                && matches!(coo.values.num(k), Num::Complex(_, im) if im != 0.0)
            {
                let line = if coordinate { text::entry_line(body, first, k, b'%') } else { first };
                return Err(SparseError::file(
                    path,
                    line,
                    format!(
                        "a hermitian matrix's diagonal is real, but entry ({}, {}) is {}",
                        i + 1,
                        j + 1,
                        coo.values.num(k)
                    ),
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

/// One chunk's window of the final columns: one slot per line of the
/// chunk (at least one per entry), entry `count` of the chunk in slot `count`.
struct Window<'a, T, C> {
    rows: &'a mut [MaybeUninit<u32>],
    cols: &'a mut [MaybeUninit<C>],
    vals: &'a mut [MaybeUninit<T>],
}

impl<T, C: Idx> text::Sink<T> for Window<'_, T, C> {
    #[inline(always)]
    fn coord(&mut self, count: usize, d: usize, v: u64) {
        // The sizes are at most 2^32, so every coordinate in range fits.
        if d == 0 {
            self.rows[count].write(v as u32);
        } else {
            self.cols[count].write(C::of(v as usize));
        }
    }
    #[inline(always)]
    fn value(&mut self, count: usize, v: T) {
        self.vals[count].write(v);
    }
}

/// Bytes parsed per round of the streaming reader: the chunks of a round are
/// parsed in parallel (while the next round is read, where the file is not
/// mapped).
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
    // Not a banner: nothing to look for (a large file without a newline is not scanned).
    if !bytes.get(..BANNER.len()).is_some_and(|b| b.eq_ignore_ascii_case(BANNER)) {
        return None;
    }
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
/// 32-bit coordinate columns and values, streaming: the file is mapped
/// (read in rounds where it cannot be) and parsed a few megabytes at a time,
/// each round's chunks in parallel straight into the final columns (a
/// count of each chunk's lines gives its window), so the whole text is never
/// in memory at once (a mapped round's pages are handed back once parsed;
/// only the entries stay, at 4 + 4 bytes of coordinates each, as scipy
/// keeps them). The entries, their
/// order and their values are those of [`parse_mtx_for`] (a symmetric
/// file's mirrored entries after the stored ones).
///
/// Returns the columns, the values' type and whether it is a pattern file.
/// `Ok(None)` where it does not apply (another format or field, sizes
/// beyond 2^32, a header longer than a round when the file is read) and wherever the file is not
/// well-formed: the caller then reads it with [`parse_mtx_for`], which
/// finds the same entries or reports the first problem with its line.
pub fn read_mtx_columns(path: &Path, dest: ScalarType) -> Result<Option<(CooColumns, ScalarType, bool)>> {
    read_columns(path, dest, true, false)
}

/// [`read_mtx_columns`] with the column coordinates at 64 bits when
/// `wide_columns` (the target stores 64-bit coordinates: no widening pass
/// after the read, see `csr::pack_columns_csr_like`); the rows stay 32-bit.
pub fn read_mtx_columns_at(
    path: &Path,
    dest: ScalarType,
    wide_columns: bool,
) -> Result<Option<(CooColumns, ScalarType, bool)>> {
    read_columns(path, dest, true, wide_columns)
}

/// [`read_mtx_columns_at`], mapping the file only when `map` (else read in
/// rounds, as where mapping fails).
fn read_columns(
    path: &Path,
    dest: ScalarType,
    map: bool,
    wide: bool,
) -> Result<Option<(CooColumns, ScalarType, bool)>> {
    use std::io::Read;
    // A regular file only: the whole-file reader must be able to read it
    // again. Looked at before it is opened: opening a FIFO and closing it
    // unread would leave its writer without a reader (`yes > fifo` dies of
    // SIGPIPE), and the whole-file reader's own open would then wait for a
    // writer for ever.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    let Ok(mut file) = std::fs::File::open(path) else { return Ok(None) };
    let Some(size) = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()) else { return Ok(None) };
    let single = dest == ScalarType::F32;
    let mapped = if map { Mapped::new(&file, size) } else { None };
    let (head, source) = match &mapped {
        Some(map) => {
            let Some(head) = coordinate_head(map.bytes()) else { return Ok(None) };
            let at = head.body;
            (head, Source::Mapped(map, at))
        }
        None => {
            let mut cur = Vec::with_capacity(ROUND + PIECE);
            let Ok(n) = (&mut file).take(ROUND as u64).read_to_end(&mut cur) else { return Ok(None) };
            let eof = n < ROUND;
            let Some(head) = coordinate_head(&cur) else { return Ok(None) };
            cur.drain(..head.body);
            (head, Source::Read { file, cur, eof })
        }
    };
    let dims = [head.rows, head.cols];
    let fmt =
        EntryFormat { rank: 2, dims: Some(&dims), value: head.value, names: &["row", "column"], comment: b'%', single };
    // An entry line takes at least 4 bytes (`1 1\n`, less a last newline):
    // a size line cannot make this reserve more than the file could hold.
    let bound = head.nnz.min(size / 4 + 1) as usize;
    let reserve = if head.symmetry == Symmetry::General { bound } else { 2 * bound };
    let stream = Stream { source, fmt: &fmt, path, nnz: head.nnz, reserve, symmetry: head.symmetry };
    type Cplx = crate::scalars::Complex<f64>;
    let out = match (head.value, wide) {
        (ValueKind::Integer, false) => stream.read::<i64, u32>().map(Read32::into_bufs),
        (ValueKind::Complex, false) => stream.read::<Cplx, u32>().map(Read32::into_bufs),
        (_, false) => stream.read::<f64, u32>().map(Read32::into_bufs),
        (ValueKind::Integer, true) => stream.read::<i64, u64>().map(Read32::into_bufs),
        (ValueKind::Complex, true) => stream.read::<Cplx, u64>().map(Read32::into_bufs),
        (_, true) => stream.read::<f64, u64>().map(Read32::into_bufs),
    };
    Ok(out.map(|(columns, values)| {
        let elem = values.elem();
        (CooColumns::from_bufs(dims.to_vec(), columns, values), elem, head.value == ValueKind::Pattern)
    }))
}

/// A whole file mapped read-only (Unix), which the streaming reader parses
/// in place: no copy of the text into the process, and each parsed round's
/// pages are handed back ([`Mapped::release`]), so the text's resident
/// memory stays about one round.
struct Mapped(memmap2::Mmap);

impl Mapped {
    /// The file's bytes mapped, `None` where that fails (an empty file, a
    /// file system that cannot map): the caller then reads the file.
    fn new(file: &std::fs::File, len: u64) -> Option<Mapped> {
        let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
        // SAFETY: a private read-only mapping of the open file. Like any
        // reader of a mapped file, it assumes the file is not truncated or
        // rewritten while it is read (if it is, the bytes may change under
        // the parse, or a read past the new end faults).
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file) }.ok()?;
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential); // advice: its failure is ignored
        Some(Mapped(map))
    }

    /// The file's bytes.
    fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// Hands back the whole pages in `from..to` (their contents do not
    /// change: touched again, they are read again from the file).
    fn release(&self, from: usize, to: usize) {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: sysconf has no preconditions.
            let Ok(page) = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }) else { return };
            if page == 0 {
                return;
            }
            let (a, b) = (from.next_multiple_of(page), to.min(self.0.len()) / page * page);
            if a < b {
                // SAFETY: DONTNEED on whole pages of a private read-only file
                // mapping only drops the process's copy of pages it never
                // wrote; read again, they come from the file unchanged.
                // Advice: its failure is ignored.
                let _ = unsafe { self.0.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, a, b - a) };
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (from, to);
    }
}

/// Where the streaming reader's text comes from.
enum Source<'m> {
    /// A mapped file and the offset of its first entry line.
    Mapped(&'m Mapped, usize),
    /// A file read round by round: the round read (from the first entry
    /// line), and whether the file ended within it.
    Read { file: std::fs::File, cur: Vec<u8>, eof: bool },
}

/// The streaming reader's state.
struct Stream<'a> {
    source: Source<'a>,
    fmt: &'a EntryFormat<'a>,
    path: &'a Path,
    /// The entries the size line declares.
    nnz: u64,
    /// The columns' first capacity.
    reserve: usize,
    symmetry: Symmetry,
}

/// What the streaming reader gives: 32-bit rows, columns of `C` and the values.
struct Read32<T, C>(Vec<u32>, Vec<C>, Vec<T>);

impl<T, C: Idx> Read32<T, C>
where
    ScalarVec: From<Vec<T>>,
{
    /// The columns as buffers, and the values.
    fn into_bufs(self) -> (Vec<super::buffer::IndexBuf>, ScalarVec) {
        (vec![super::buffer::IndexBuf::U32(self.0), C::buf(self.1)], ScalarVec::from(self.2))
    }
}

impl Stream<'_> {
    fn read<T: MirrorValue, C: Idx>(self) -> Option<Read32<T, C>> {
        use std::io::Read;
        let (fmt, path, nnz) = (self.fmt, self.path, self.nnz);
        let (mut rows, mut cols, mut vals): (Vec<u32>, Vec<C>, Vec<T>) =
            (Vec::with_capacity(self.reserve), Vec::with_capacity(self.reserve), Vec::with_capacity(self.reserve));
        super::counting::advise_capacity(&mut rows);
        super::counting::advise_capacity(&mut cols);
        super::counting::advise_capacity(&mut vals);
        let mut out = Out { rows, cols, vals };
        match self.source {
            Source::Mapped(map, start) => {
                let bytes = map.bytes();
                let (mut at, mut released) = (start, 0);
                while at < bytes.len() {
                    // A round ends after the first newline past ROUND bytes (or at the end).
                    let end = match bytes.get(at + ROUND..) {
                        Some(rest) => rest.iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| at + ROUND + p + 1),
                        None => bytes.len(),
                    };
                    parse_round(&bytes[at..end], fmt, path, &mut out, nnz)?;
                    map.release(released, end);
                    (at, released) = (end, end);
                }
            }
            Source::Read { mut file, mut cur, mut eof } => {
                let mut next: Vec<u8> = Vec::with_capacity(ROUND + PIECE);
                loop {
                    // The round ends after its last newline; the rest is carried over.
                    let end = if eof {
                        cur.len()
                    } else {
                        match cur.iter().rposition(|&b| b == b'\n') {
                            Some(p) => p + 1,
                            None => {
                                // A line longer than a round: read more of it.
                                let n = (&mut file).take(ROUND as u64).read_to_end(&mut cur).ok()?;
                                eof = n < ROUND;
                                continue;
                            }
                        }
                    };
                    next.clear();
                    next.extend_from_slice(&cur[end..]);
                    let (body, f, last) = (&cur[..end], &mut file, eof);
                    let (parsed, read) = rayon::join(
                        || parse_round(body, fmt, path, &mut out, nnz),
                        || {
                            if last {
                                Some(true)
                            } else {
                                f.take(ROUND as u64).read_to_end(&mut next).ok().map(|n| n < ROUND)
                            }
                        },
                    );
                    parsed?;
                    if last {
                        break;
                    }
                    eof = read?;
                    std::mem::swap(&mut cur, &mut next);
                }
            }
        }
        let Out { mut rows, mut cols, mut vals } = out;
        if rows.len() as u64 != nnz {
            return None;
        }
        let symmetry = self.symmetry;
        if symmetry != Symmetry::General {
            // As `parse_mtx_for`: each stored entry off the diagonal, in order, mirrored after them all.
            for k in 0..rows.len() {
                let (i, j, v) = (rows[k], cols[k].at() as u32, vals[k]);
                if i == j {
                    if symmetry == Symmetry::SkewSymmetric || (symmetry == Symmetry::Hermitian && !v.is_real()) {
                        return None;
                    }
                    continue;
                }
                rows.push(j);
                cols.push(C::of(i as usize));
                vals.push(match symmetry {
                    Symmetry::SkewSymmetric => crate::scalars::Scalar::neg(v),
                    Symmetry::Hermitian => v.conj(),
                    _ => v,
                });
            }
        }
        Some(Read32(rows, cols, vals))
    }
}

/// The streaming reader's final columns.
struct Out<T, C> {
    rows: Vec<u32>,
    cols: Vec<C>,
    vals: Vec<T>,
}

/// Parses a round (whole lines) onto the end of `out`: the round is cut
/// into chunks after a newline near every PIECE bytes, each chunk's lines
/// are counted (in parallel), and the chunks are parsed in parallel
/// straight into windows of the columns' spare capacity, one slot per line;
/// lines without an entry (blank, comments) leave gaps, closed afterwards.
/// `None` if a chunk is not well-formed or the entries pass `nnz`.
fn parse_round<T: MirrorValue, C: Idx>(
    body: &[u8],
    fmt: &EntryFormat,
    path: &Path,
    out: &mut Out<T, C>,
    nnz: u64,
) -> Option<()> {
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
    let lines: Vec<usize> = cuts.par_windows(2).map(|w| text::line_count(&body[w[0]..w[1]])).collect();
    let total: usize = lines.iter().sum();
    // Exact: a file with more lines than the size line's entries (comments,
    // blank lines) grows the columns only by its lines, never by doubling.
    out.rows.reserve_exact(total);
    out.cols.reserve_exact(total);
    out.vals.reserve_exact(total);
    let (mut r, mut c, mut v) = (
        &mut out.rows.spare_capacity_mut()[..total],
        &mut out.cols.spare_capacity_mut()[..total],
        &mut out.vals.spare_capacity_mut()[..total],
    );
    let mut jobs = Vec::with_capacity(lines.len());
    for (w, &n) in cuts.windows(2).zip(&lines) {
        let (r0, r1) = std::mem::take(&mut r).split_at_mut(n);
        let (c0, c1) = std::mem::take(&mut c).split_at_mut(n);
        let (v0, v1) = std::mem::take(&mut v).split_at_mut(n);
        jobs.push((&body[w[0]..w[1]], Window { rows: r0, cols: c0, vals: v0 }));
        (r, c, v) = (r1, c1, v1);
    }
    let counts: Vec<usize> = jobs
        .into_par_iter()
        .map(|(piece, mut window)| text::parse_into::<T, _>(piece, 1, fmt, path, &mut window).ok())
        .collect::<Option<_>>()?;
    // Each window's entries from its first slot: moved down over the gaps before them.
    let (mut from, mut to) = (0usize, 0usize);
    for (&k, &n) in counts.iter().zip(&lines) {
        if from != to {
            out.rows.spare_capacity_mut().copy_within(from..from + k, to);
            out.cols.spare_capacity_mut().copy_within(from..from + k, to);
            out.vals.spare_capacity_mut().copy_within(from..from + k, to);
        }
        (from, to) = (from + n, to + k);
    }
    let len = out.rows.len() + to;
    // SAFETY: the `to` slots after each column's length were written: each
    // window's first `k` slots by its chunk's parse (`parse_into` writes
    // both coordinates and the value of each entry it counts), moved to be
    // contiguous just above.
    unsafe {
        out.rows.set_len(len);
        out.cols.set_len(len);
        out.vals.set_len(len);
    }
    (len as u64 <= nnz).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mapped and the read streams give the same entries (the read one
    /// is what a file that cannot be mapped takes), over several rounds with
    /// lines cut at round ends, comment and blank lines, CRLF, no last newline.
    #[test]
    fn mapped_and_read_streams_agree() {
        let mut s = String::from("%%MatrixMarket matrix coordinate real symmetric\r\n% c\r\n3000 3000 0000000\r\n");
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let mut n = 0;
        while s.len() < 19 << 20 {
            match next(6) {
                0 => s.push_str("% x\r\n"),
                1 => s.push_str("\r\n"),
                _ => {
                    let i = next(3000) + 1;
                    s.push_str(&format!("{i} {} {}e{}\r\n", next(i) + 1, next(1 << 40), next(40) as i64 - 20));
                    n += 1;
                }
            }
        }
        s.push_str("1 1 2.5");
        n += 1;
        let s = s.replacen("0000000", &format!("{n:07}"), 1);
        // A directory of its own, removed when the test ends (never named by
        // the process id: ids come back).
        let dir = tempfile::Builder::new().prefix("heddle-mtx-unit-").tempdir().unwrap();
        let path = dir.path().join("unit.mtx");
        std::fs::write(&path, &s).unwrap();
        let (mapped, _, _) = read_columns(&path, ScalarType::F64, true, false).unwrap().expect("mapped");
        let (read, _, _) = read_columns(&path, ScalarType::F64, false, false).unwrap().expect("read");
        let (wide, _, _) = read_columns(&path, ScalarType::F64, true, true).unwrap().expect("wide");
        assert!(matches!(wide.column(1), super::super::buffer::IndexBuf::U64(_)), "64-bit columns");
        let whole = parse_mtx(s.as_bytes(), &path).unwrap().0;
        std::fs::remove_file(&path).unwrap();
        assert!(mapped.len() > n, "mirrored entries");
        assert_eq!(mapped.clone().into_coo(), whole);
        assert_eq!(read.into_coo(), whole);
        assert_eq!(wide.into_coo(), whole);
    }
}

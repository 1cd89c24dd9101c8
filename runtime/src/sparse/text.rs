//! Shared machinery of the text formats: splitting a file into lines with
//! their numbers, and parsing the entry lines (`i j ... value`) in parallel.
//!
//! The body is cut into chunks at line boundaries; rayon parses the chunks
//! independently (each knows its first line number, from a parallel count of
//! newlines), and the results are concatenated in order. Small inputs take a
//! single chunk, so the thread pool costs nothing there.

use super::error::{Result, SparseError};
use super::fastnum;
use crate::scalars::ScalarVec;
use rayon::prelude::*;
use std::path::Path;

/// How values are written on entry lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueKind {
    /// A floating-point number.
    Real,
    /// An integer.
    Integer,
    /// No value: every entry is 1.
    Pattern,
    /// Two floating-point numbers: a complex value's real and imaginary parts.
    Complex,
}

impl ValueKind {
    /// How many numbers an entry's value takes.
    fn numbers(self) -> usize {
        match self {
            ValueKind::Pattern => 0,
            ValueKind::Real | ValueKind::Integer => 1,
            ValueKind::Complex => 2,
        }
    }
}

/// What an entry line holds.
pub(crate) struct EntryFormat<'a> {
    /// Coordinates per line.
    pub rank: usize,
    /// Sizes to check 1-based coordinates against (`None`: unchecked, ≥ 1 only).
    pub dims: Option<&'a [u64]>,
    /// The value's kind.
    pub value: ValueKind,
    /// Names of the coordinates, for messages ("row", "column", "index 3").
    pub names: &'a [&'a str],
    /// Lines starting with this byte are comments.
    pub comment: u8,
    /// Round real values straight to `f32` (for an `f32` destination: going
    /// through `f64` first would round twice, which can differ).
    pub single: bool,
}

/// Parsed entries: 0-based coordinates (`rank` per entry) and values, as
/// `i64` for integer files (every value kept exactly), `complex<f64>` for
/// complex ones and `f64` otherwise.
pub(crate) struct Entries {
    pub coords: Vec<u64>,
    pub values: ScalarVec,
}

/// A value type entry lines are parsed into.
pub(crate) trait EntryValue: Copy + Default + Send {
    /// The value of an entry of a pattern file.
    const ONE: Self;
    /// The value in `tok`, `None` if it is not one of `kind`.
    fn parse(tok: &[u8], kind: ValueKind, single: bool) -> Option<Self>;
    /// The complex value whose parts are `re` and `im`, `None` if they are
    /// not numbers or `Self` is not complex.
    fn parse_complex(_re: &[u8], _im: &[u8], _single: bool) -> Option<Self> {
        None
    }
    /// The value of `kind` at the start of `text` and the bytes it takes,
    /// where this type reads one in place (`None`: read the token with
    /// [`EntryValue::parse`]). The caller checks that the token ends there.
    #[inline(always)]
    fn parse_prefix(_text: &[u8], _kind: ValueKind, _single: bool) -> Option<(Self, usize)> {
        None
    }
}

impl EntryValue for crate::scalars::Complex<f64> {
    const ONE: Self = crate::scalars::Complex { re: 1.0, im: 0.0 };
    #[inline]
    fn parse(_: &[u8], _: ValueKind, _: bool) -> Option<Self> {
        None
    }
    #[inline]
    fn parse_complex(re: &[u8], im: &[u8], single: bool) -> Option<Self> {
        Some(crate::scalars::Complex {
            re: f64::parse(re, ValueKind::Real, single)?,
            im: f64::parse(im, ValueKind::Real, single)?,
        })
    }
}

impl EntryValue for f64 {
    const ONE: f64 = 1.0;
    #[inline(always)]
    fn parse_prefix(text: &[u8], kind: ValueKind, single: bool) -> Option<(f64, usize)> {
        // As `crate::io::number::parse_float` / `parse_f32` on the token.
        match (kind, single) {
            (ValueKind::Real, false) => fast_float2::parse_partial::<f64, _>(text).ok(),
            (ValueKind::Real, true) => fast_float2::parse_partial::<f32, _>(text).ok().map(|(v, n)| (f64::from(v), n)),
            _ => None,
        }
    }
    #[inline]
    fn parse(tok: &[u8], kind: ValueKind, single: bool) -> Option<f64> {
        if kind == ValueKind::Integer {
            // An integer file read into floats (not used by the readers, which
            // keep integers as `i64`; kept total for the trait).
            std::str::from_utf8(tok).ok()?.parse::<i64>().ok().map(|v| v as f64)
        } else if single {
            crate::io::number::parse_f32(tok).map(f64::from)
        } else {
            crate::io::number::parse_float(tok)
        }
    }
}

macro_rules! int_entry_value {
    ($($t:ty),*) => {$(
        impl EntryValue for $t {
            const ONE: $t = 1;
            #[inline]
            fn parse(tok: &[u8], _: ValueKind, _: bool) -> Option<$t> {
                std::str::from_utf8(tok).ok()?.parse::<$t>().ok()
            }
        }
    )*};
}
int_entry_value!(i64, u64);

/// Iterates `(line number, line)` from `first_line`, without the newline (and `\r`).
pub(crate) fn lines(body: &[u8], first_line: usize) -> impl Iterator<Item = (usize, &[u8])> {
    body.split(|&b| b == b'\n').enumerate().map(move |(k, l)| (first_line + k, l.strip_suffix(b"\r").unwrap_or(l)))
}

/// Is the line blank or a comment?
pub(crate) fn skip(line: &[u8], comment: u8) -> bool {
    match line.iter().position(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(p) => line[p] == comment,
    }
}

/// The whitespace-separated tokens of a line.
pub(crate) fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|b| b.is_ascii_whitespace()).filter(|t| !t.is_empty())
}

/// A token as text for messages.
pub(crate) fn show(tok: &[u8]) -> String {
    String::from_utf8_lossy(tok).into_owned()
}

/// An unsigned decimal integer.
#[inline]
pub(crate) fn parse_u64(tok: &[u8]) -> Option<u64> {
    if tok.is_empty() || tok.len() > 19 {
        return std::str::from_utf8(tok).ok()?.parse().ok();
    }
    let mut v: u64 = 0;
    for &b in tok {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u64::from(d);
    }
    Some(v)
}

/// Does every line of `body` that is not a comment hold only integers
/// (digits, signs, whitespace)? Then its values are integers.
pub(crate) fn integers_only(body: &[u8], comment: u8) -> bool {
    lines(body, 0).all(|(_, l)| {
        skip(l, comment) || l.iter().all(|&b| b.is_ascii_digit() || b.is_ascii_whitespace() || b == b'-' || b == b'+')
    })
}

/// The token starting at `i` (up to the next whitespace), for messages.
fn token_at(body: &[u8], i: usize) -> String {
    let end = body[i..].iter().position(|b| b.is_ascii_whitespace()).map_or(body.len(), |p| i + p);
    show(&body[i..end])
}

#[inline]
fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\r'
}

/// Parses one chunk with a byte scanner: no per-line allocation, no UTF-8
/// validation, numbers read in place (floats correctly rounded, with the
/// `inf` / `nan` spellings of [`crate::io::number`]).
///
/// Entries go to `coords` / `values`, which have room for one entry per line
/// of `body`; returns how many entries were written.
fn parse_chunk<T: EntryValue>(
    body: &[u8],
    first_line: usize,
    f: &EntryFormat,
    path: &Path,
    coords: &mut [u64],
    values: &mut [T],
) -> Result<usize> {
    parse_into(body, first_line, f, path, &mut Slots { coords, rank: f.rank, values })
}

/// Where [`parse_into`] puts the entries it reads, entry `count` being the
/// `count`-th of its chunk: coordinates are 0-based and within `dims`
/// (when the format gives them).
pub(crate) trait Sink<T> {
    /// Entry `count`'s coordinate in dimension `d`.
    fn coord(&mut self, count: usize, d: usize, v: u64);
    /// Entry `count`'s value (after its coordinates).
    fn value(&mut self, count: usize, v: T);
}

/// Windows of the final interleaved buffers, one slot per line.
struct Slots<'a, T> {
    coords: &'a mut [u64],
    rank: usize,
    values: &'a mut [T],
}

impl<T> Sink<T> for Slots<'_, T> {
    #[inline(always)]
    fn coord(&mut self, count: usize, d: usize, v: u64) {
        self.coords[count * self.rank + d] = v;
    }
    #[inline(always)]
    fn value(&mut self, count: usize, v: T) {
        self.values[count] = v;
    }
}

/// Parses one chunk into `sink` (see [`parse_chunk`]); returns how many
/// entries it read.
#[inline(always)]
pub(crate) fn parse_into<T: EntryValue, S: Sink<T>>(
    body: &[u8],
    first_line: usize,
    f: &EntryFormat,
    path: &Path,
    sink: &mut S,
) -> Result<usize> {
    let mut count = 0usize;
    let want = f.rank + f.value.numbers();
    let n = body.len();
    let mut i = 0;
    let mut no = first_line;
    while i < n {
        while i < n && is_blank(body[i]) {
            i += 1;
        }
        if i == n {
            break;
        }
        if body[i] == b'\n' {
            no += 1;
            i += 1;
            continue;
        }
        if body[i] == f.comment {
            i = body[i..].iter().position(|&b| b == b'\n').map_or(n, |p| i + p);
            continue;
        }
        for d in 0..f.rank {
            while i < n && is_blank(body[i]) {
                i += 1;
            }
            let name = f.names.get(d).copied().unwrap_or("index");
            if i == n || body[i] == b'\n' {
                return Err(SparseError::file(
                    path,
                    no,
                    format!("expected {want} numbers on an entry line, found {d}"),
                ));
            }
            let start = i;
            let mut v: u64 = 0;
            let mut overflow = false;
            match fastnum::load8(body, i) {
                // 1 to 7 digits and what follows them in one word: read at once.
                Some(x) if (1..8).contains(&fastnum::digit_run(x)) => {
                    let k = fastnum::digit_run(x);
                    v = fastnum::digits_value(x, k);
                    i += k;
                }
                _ => {
                    // Up to 19 digits cannot overflow; a longer number is read again, checked.
                    while i < n && i - start < 19 && body[i].is_ascii_digit() {
                        v = v * 10 + u64::from(body[i] - b'0');
                        i += 1;
                    }
                    if i < n && body[i].is_ascii_digit() {
                        (i, v) = (start, 0);
                    }
                    while i < n && body[i].is_ascii_digit() {
                        match v.checked_mul(10).and_then(|x| x.checked_add(u64::from(body[i] - b'0'))) {
                            Some(x) => v = x,
                            None => overflow = true,
                        }
                        i += 1;
                    }
                }
            }
            if overflow {
                return Err(SparseError::file(
                    path,
                    no,
                    format!("{name} index `{}` is beyond 2^64 - 1", token_at(body, start)),
                ));
            }
            if i == start || (i < n && !body[i].is_ascii_whitespace()) {
                return Err(SparseError::file(
                    path,
                    no,
                    format!("{name} index `{}` is not a non-negative integer", token_at(body, start)),
                ));
            }
            if v == 0 {
                return Err(SparseError::file(path, no, format!("{name} index 0 is invalid: indices start at 1")));
            }
            if let Some(dims) = f.dims
                && v > dims[d]
            {
                return Err(SparseError::file(path, no, format!("{name} index {v} is beyond the size {}", dims[d])));
            }
            sink.coord(count, d, v - 1);
        }
        while i < n && is_blank(body[i]) {
            i += 1;
        }
        let value = match f.value {
            ValueKind::Pattern => T::ONE,
            kind => {
                if i == n || body[i] == b'\n' {
                    return Err(SparseError::file(
                        path,
                        no,
                        format!("expected {want} numbers on an entry line, found {}", f.rank),
                    ));
                }
                // A number that ends where its token does, read in one pass.
                if let Some((v, used)) = T::parse_prefix(&body[i..], kind, f.single)
                    && used > 0
                    && body.get(i + used).is_none_or(|b| b.is_ascii_whitespace())
                {
                    i += used;
                    v
                } else {
                    let start = i;
                    let end = body[i..].iter().position(|b| b.is_ascii_whitespace()).map_or(n, |p| i + p);
                    let tok = &body[start..end];
                    i = end;
                    if kind == ValueKind::Complex {
                        while i < n && is_blank(body[i]) {
                            i += 1;
                        }
                        if i == n || body[i] == b'\n' {
                            return Err(SparseError::file(
                                path,
                                no,
                                format!(
                                    "expected {want} numbers on an entry line (a complex value is two), found {}",
                                    f.rank + 1
                                ),
                            ));
                        }
                        let im_end = body[i..].iter().position(|b| b.is_ascii_whitespace()).map_or(n, |p| i + p);
                        let im = &body[i..im_end];
                        i = im_end;
                        T::parse_complex(tok, im, f.single).ok_or_else(|| {
                            let bad = if f64::parse(tok, ValueKind::Real, false).is_none() { tok } else { im };
                            SparseError::file(
                                path,
                                no,
                                format!("value `{}` is not a number (nor `inf`, `-inf` or `nan`)", show(bad)),
                            )
                        })?
                    } else {
                        T::parse(tok, kind, f.single)
                            .ok_or_else(|| SparseError::file(path, no, bad_value(tok, kind)))?
                    }
                }
            }
        };
        sink.value(count, value);
        count += 1;
        while i < n && is_blank(body[i]) {
            i += 1;
        }
        if i < n && body[i] != b'\n' {
            return Err(SparseError::file(
                path,
                no,
                format!(
                    "unexpected `{}` after {want} numbers{}",
                    token_at(body, i),
                    if f.value == ValueKind::Real { " (a complex matrix says `complex` in its header)" } else { "" }
                ),
            ));
        }
    }
    Ok(count)
}

/// Why `tok` is not a value of `kind` (a real or an integer).
fn bad_value(tok: &[u8], kind: ValueKind) -> String {
    if kind == ValueKind::Real {
        format!("value `{}` is not a number (nor `inf`, `-inf` or `nan`)", show(tok))
    } else if std::str::from_utf8(tok).is_ok_and(|t| t.parse::<i128>().is_ok()) {
        format!("integer value `{}` is beyond the 64-bit integers", show(tok))
    } else {
        format!("value `{}` is not an integer", show(tok))
    }
}

/// Lines in `body`: newlines, plus one for a last line without one (an
/// upper bound on the entries [`parse_into`] reads from it: at most one a line).
pub(crate) fn line_count(body: &[u8]) -> usize {
    newlines(body) + usize::from(!body.is_empty() && !body.ends_with(b"\n"))
}

/// The newlines in `s`, 32 bytes at a time into byte counters (which the
/// compiler keeps in vector registers), summed every 255 blocks, before
/// one can wrap.
fn newlines(s: &[u8]) -> usize {
    const W: usize = 32;
    let mut blocks = s.chunks_exact(W);
    let mut total = 0;
    loop {
        let mut acc = [0u8; W];
        let mut taken = 0;
        for b in blocks.by_ref().take(255) {
            let b: &[u8; W] = b.try_into().expect("a whole block");
            for j in 0..W {
                acc[j] += u8::from(b[j] == b'\n');
            }
            taken += 1;
        }
        total += acc.iter().map(|&a| usize::from(a)).sum::<usize>();
        if taken < 255 {
            break;
        }
    }
    total + blocks.remainder().iter().filter(|&&b| b == b'\n').count()
}

/// Parses every entry line of `body` (which starts at line `first_line`),
/// in parallel for large inputs.
pub(crate) fn parse_entries(body: &[u8], first_line: usize, f: &EntryFormat, path: &Path) -> Result<Entries> {
    if f.value == ValueKind::Integer {
        // As `i64`; values beyond it but none negative, as `u64`.
        match parse_entries_as::<i64>(body, first_line, f, path) {
            Ok((coords, values)) => Ok(Entries { coords, values: ScalarVec::from(values) }),
            Err(e) => match parse_entries_as::<u64>(body, first_line, f, path) {
                Ok((coords, values)) => Ok(Entries { coords, values: ScalarVec::from(values) }),
                Err(_) => Err(e),
            },
        }
    } else if f.value == ValueKind::Complex {
        let (coords, values) = parse_entries_as::<crate::scalars::Complex<f64>>(body, first_line, f, path)?;
        Ok(Entries { coords, values: ScalarVec::from(values) })
    } else {
        let (coords, values) = parse_entries_as::<f64>(body, first_line, f, path)?;
        Ok(Entries { coords, values: ScalarVec::from(values) })
    }
}

fn parse_entries_as<T: EntryValue>(
    body: &[u8],
    first_line: usize,
    f: &EntryFormat,
    path: &Path,
) -> Result<(Vec<u64>, Vec<T>)> {
    const CHUNK: usize = 1 << 20;
    // Cut after a newline near every CHUNK bytes.
    let mut cuts = vec![0usize];
    let mut at = CHUNK;
    while at < body.len() {
        match body[at..].iter().position(|&b| b == b'\n') {
            Some(p) => {
                cuts.push(at + p + 1);
                at += p + 1 + CHUNK;
            }
            None => break,
        }
    }
    cuts.push(body.len());
    let pieces: Vec<&[u8]> = cuts.windows(2).map(|w| &body[w[0]..w[1]]).collect();
    let lines: Vec<usize> = pieces.par_iter().map(|p| line_count(p)).collect();
    // Every line holds at most one entry, so the outputs are allocated once,
    // at that bound, and split into one disjoint window per chunk: the chunks
    // write their entries in place, and nothing is copied afterwards unless
    // blank or comment lines left gaps.
    let total: usize = lines.iter().sum();
    let mut coords = vec![0u64; total * f.rank];
    let mut values = vec![T::default(); total];
    let mut jobs = Vec::with_capacity(pieces.len());
    let (mut rest_c, mut rest_v) = (coords.as_mut_slice(), values.as_mut_slice());
    let mut line = first_line;
    for (piece, &n) in pieces.iter().zip(&lines) {
        let (c, rc) = rest_c.split_at_mut(n * f.rank);
        let (v, rv) = rest_v.split_at_mut(n);
        jobs.push((*piece, line, c, v));
        (rest_c, rest_v) = (rc, rv);
        line += n;
    }
    let counts: Vec<usize> = jobs
        .into_par_iter()
        .map(|(p, start, c, v)| parse_chunk(p, start, f, path, c, v))
        .collect::<Result<Vec<usize>>>()?;
    if counts != lines {
        // Close the gaps left by lines without entries.
        let (mut from, mut to) = (0usize, 0usize);
        for (&n, &cap) in counts.iter().zip(&lines) {
            coords.copy_within(from * f.rank..(from + n) * f.rank, to * f.rank);
            values.copy_within(from..from + n, to);
            to += n;
            from += cap;
        }
        coords.truncate(to * f.rank);
        values.truncate(to);
    }
    Ok((coords, values))
}

/// The line number of the `k`-th (0-based) entry line, and the line after the
/// last one (for "the file ends early" messages).
pub(crate) fn entry_line(body: &[u8], first_line: usize, k: usize, comment: u8) -> usize {
    let mut seen = 0;
    let mut last = first_line;
    for (no, line) in lines(body, first_line) {
        last = no;
        if skip(line, comment) {
            continue;
        }
        if seen == k {
            return no;
        }
        seen += 1;
    }
    last
}

/// Bytes read first, before `head` looks at them (see [`read_text`]).
pub(crate) const HEAD: usize = 64 << 10;
/// Bytes read per piece after the head.
const TEXT_PIECE: usize = 4 << 20;

/// Reads a whole text file piece by piece, looking at each piece before
/// reading on: the first [`HEAD`] bytes (or the whole file, if shorter) go
/// to `head`, which refuses what cannot be the start of the format (a
/// Matrix Market banner, a JSON value); and a NUL byte anywhere is an error
/// at its line, since no text format heddle reads holds one. So `/dev/zero`,
/// a FIFO of garbage or a disk image given as a `.mtx` fails at once, where
/// reading it whole first would fill memory. A regular file's buffer is
/// sized once from its length (as `std::fs::read` does); a stream's grows
/// as its bytes arrive.
pub(crate) fn read_text(path: &Path, head: &dyn Fn(&[u8]) -> Result<()>) -> Result<Vec<u8>> {
    use std::io::Read;
    let io = |source| SparseError::Io { path: path.to_path_buf(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().ok().filter(|m| m.is_file()).and_then(|m| usize::try_from(m.len()).ok());
    let mut bytes = Vec::new();
    // One more byte than the size: the read that finds the end needs no growth.
    bytes.try_reserve_exact(size.map_or(HEAD, |s| s.saturating_add(1))).map_err(|e| {
        SparseError::file(path, 1, format!("cannot hold the file's {} bytes in memory: {e}", size.unwrap_or(HEAD)))
    })?;
    let mut first = true;
    loop {
        let want = if first { HEAD } else { TEXT_PIECE };
        let from = bytes.len();
        let n = (&mut file).take(want as u64).read_to_end(&mut bytes).map_err(io)?;
        if let Some(p) = bytes[from..].iter().position(|&b| b == 0) {
            let at = from + p;
            let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
            return Err(SparseError::file(path, line, format!("byte {at} is NUL: this is not a text file")));
        }
        if first {
            head(&bytes)?;
            first = false;
        }
        if n < want {
            return Ok(bytes);
        }
    }
}

/// A [`read_text`] head check: the first line ends within [`HEAD`] bytes
/// (or the file ends first). `what` names the line for the message.
pub(crate) fn first_line_ends(path: &Path, bytes: &[u8], what: &str) -> Result<()> {
    if bytes.len() >= HEAD && !bytes[..HEAD].contains(&b'\n') {
        return Err(SparseError::file(
            path,
            1,
            format!("the first line runs past {} KiB without ending: this is not {what}", HEAD >> 10),
        ));
    }
    Ok(())
}

/// Is `path` something other than a regular file (a FIFO, a device, a
/// socket), which cannot be sized or read twice? (A path that cannot be
/// looked at is not: opening it reports why.)
pub(crate) fn is_stream(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// A [`read_text`] head check for JSON: `None` when the first bytes that are
/// not white space can start a JSON value (or there are none yet), else the
/// error serde_json gives at the first byte that cannot (its line and column).
pub(crate) fn json_head(bytes: &[u8]) -> Option<serde_json::Error> {
    let Some(p) = bytes.iter().position(|b| !b.is_ascii_whitespace()) else {
        // Only white space: a file that ends here is an error of its own
        // (serde's "EOF while parsing"); 64 KiB of it is not JSON either.
        return (bytes.len() >= HEAD)
            .then(|| serde_json::from_slice::<serde_json::Value>(&bytes[..HEAD]).err())
            .flatten();
    };
    if b"[{\"-0123456789tfn".contains(&bytes[p]) {
        return None;
    }
    serde_json::from_slice::<serde_json::Value>(&bytes[..=p]).err()
}

/// A [`read_text`] head check: the `nth` (0-based) line of `bytes` that is
/// neither blank nor a comment, when it is there whole (ends with a newline
/// within the head), must consist of numbers; `numbers` takes its tokens and
/// says what is wrong (a message for its line), else `None`. A head of
/// comments only, or a line cut off by the head's end, passes.
pub(crate) fn content_line(
    path: &Path,
    bytes: &[u8],
    comment: u8,
    nth: usize,
    numbers: &dyn Fn(&[&[u8]]) -> Option<String>,
) -> Result<()> {
    let complete = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(p) => &bytes[..p],
        None => return Ok(()),
    };
    let Some((no, line)) = lines(complete, 1).filter(|(_, l)| !skip(l, comment)).nth(nth) else { return Ok(()) };
    match numbers(&tokens(line).collect::<Vec<_>>()) {
        Some(message) => Err(SparseError::file(path, no, message)),
        None => Ok(()),
    }
}

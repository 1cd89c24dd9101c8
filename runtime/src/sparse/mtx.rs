//! Matrix Market (`.mtx`): coordinate and array formats; real, integer,
//! complex and pattern fields; general, symmetric, skew-symmetric and
//! Hermitian matrices. Indices in the file are 1-based; the [`Coo`] is
//! 0-based. Symmetric matrices are expanded (both triangles are returned; a
//! Hermitian matrix's mirror holds the conjugates).

use super::coo::Coo;
use super::error::{Result, SparseError};
use super::text::{self, EntryFormat, ValueKind};
use crate::scalars::Num;
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

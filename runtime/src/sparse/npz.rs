//! scipy's sparse `.npz` files (`scipy.sparse.save_npz` / `load_npz`): a zip
//! archive of `.npy` arrays — `format` (`csr`, `csc`, `bsr`, `dia` or `coo`,
//! a 0-d byte string), `shape`, `data`, and per format `indices` + `indptr`
//! (csr, csc, bsr), `row` + `col` (2-D coo) or `coords` (n-D coo), `offsets`
//! (dia). Members may be stored or deflated (`save_npz(compressed=True)`, the
//! default); heddle writes them stored, as `np.savez` does, so they read fast.
//!
//! Reading checks everything scipy's constructors check and what they leave
//! to luck: every array present, of an integer (or numeric, for `data`)
//! dtype, of the length the others imply; `indptr` starting at 0, never
//! decreasing, ending within `indices`; every index inside the shape. Each
//! error names the file, the array and the position. Memory is bounded by
//! the data really present: a member's buffer grows as its bytes arrive, a
//! member is read only up to the size its header promises (so a deflated
//! member that inflates without end is cut off there), and no array may hold
//! more than [`MAX_STORED`] elements, heddle's cap on what one buffer may hold.
//!
//! A csr / csc / bsr matrix whose rows are sorted without duplicates is kept
//! as stored (its `indptr` and `indices` are the positions and coordinates of
//! the corresponding encoding, at 32 bits where every position and every
//! coordinate the shape allows fits, as scipy's int32 indices do, else at
//! 64); a coo file's entries stay one coordinate column per dimension
//! ([`CooColumns`], 32-bit where they fit), so COO → CSR / CSC reads them at
//! that width; anything else becomes a coordinate list.
//! Values keep their numeric type; padding zeros inside bsr blocks and dia
//! diagonals are not entries.
//!
//! Writing picks scipy's format from the encoding: csr, csc, bsr, and dia
//! for a difference level `j - i` over a dense level (`(j - i : compressed,
//! j : dense)` is scipy's layout; `i : dense` is moved to it); else coo.

use super::build::{MAX_STORED, finish};
use super::coo::{Coo, CooColumns};
use super::csr::csr_like;
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use crate::io::npy::{self, Array};
use crate::scalars::{Scalar, ScalarVec};
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat, LvlExpr, parse_encoding};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// What a `.npz` file holds.
pub enum NpzTensor {
    /// A matrix kept in the storage it was saved in (csr, csc, bsr).
    Stored(Box<SparseTensor>),
    /// Entries (dia, and csr / csc / bsr with unsorted or repeated indices).
    Entries(Coo, ScalarType),
    /// A coo file's entries, one coordinate column per dimension, at 32 bits
    /// where every dimension allows (see [`CooColumns`]).
    Columns(CooColumns, ScalarType),
}

/// Deflate expands at most about 1032 : 1, so a deflated member cannot hold
/// more than this many times its compressed size.
const DEFLATE_RATIO: u64 = 1032;

/// For a zip member of `packed` bytes stored with `method`: the most bytes
/// it can hold once inflated, and how many to reserve for its data at once
/// (the rest grows as bytes arrive), so that a small member whose header
/// promises much reserves little.
pub(crate) fn member_sizes(method: zip::CompressionMethod, packed: u64) -> (u64, u64) {
    match method {
        zip::CompressionMethod::Stored => (packed, packed),
        _ => (packed.saturating_mul(DEFLATE_RATIO).saturating_add(1 << 10), packed.saturating_mul(4)),
    }
}

struct Archive<'p, R: Read + Seek> {
    zip: zip::ZipArchive<R>,
    path: &'p Path,
}

/// Where errors point: the file.
#[derive(Clone, Copy)]
struct Loc<'p>(&'p Path);

impl Loc<'_> {
    fn err(&self, member: &str, message: impl Into<String>) -> SparseError {
        SparseError::Archive { path: self.0.to_path_buf(), member: member.to_string(), message: message.into() }
    }
}

impl<R: Read + Seek> Archive<'_, R> {
    fn err(&self, member: &str, message: impl Into<String>) -> SparseError {
        Loc(self.path).err(member, message)
    }

    fn has(&self, name: &str) -> bool {
        self.zip.index_for_name(&format!("{name}.npy")).is_some()
    }

    /// The array `name` (`name.npy` in the archive).
    fn array(&mut self, name: &str, why: &str) -> Result<Array> {
        let Some(index) = self.zip.index_for_name(&format!("{name}.npy")) else {
            return Err(self.err(name, format!("missing: {why}")));
        };
        let read = {
            let loc = Loc(self.path);
            let file = match self.zip.by_index(index) {
                Ok(f) => f,
                Err(e) => return Err(loc.err(name, format!("cannot open the member: {e}"))),
            };
            let (bound, hint) = member_sizes(file.compression(), file.compressed_size());
            // Per array: at most MAX_STORED elements of at most 8 bytes (bsr
            // blocks count their elements), and no more than the member can hold.
            let cap = (MAX_STORED * 8).min(bound);
            npy::read_array(file, cap, hint.min(cap))
        };
        read.map_err(|m| self.err(name, m))
    }

    /// The integer array `name`, every entry ≥ 0.
    fn nonnegative(&mut self, name: &str, why: &str) -> Result<Vec<u64>> {
        let arr = self.array(name, why)?;
        nonnegative(Loc(self.path), name, &arr)
    }
}

/// Reads a `.npz` file written by `scipy.sparse.save_npz`.
pub fn read_npz(path: &Path) -> Result<NpzTensor> {
    let file = std::fs::File::open(path).map_err(|source| SparseError::Io { path: path.to_path_buf(), source })?;
    let zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| SparseError::Archive {
        path: path.to_path_buf(),
        member: String::new(),
        message: format!("not a .npz (zip) archive: {e}"),
    })?;
    let mut a = Archive { zip, path };
    let why = "scipy.sparse.save_npz writes `format`, `shape` and `data`, and the arrays of the format";
    if !a.has("format") {
        return Err(a.err(
            "format",
            "missing: this is not a scipy sparse matrix (np.savez of dense arrays? give those with --input as .npy)",
        ));
    }
    let format = {
        let arr = a.array("format", why)?;
        string(Loc(path), "format", &arr)?
    };
    let shape_arr = a.array("shape", why)?;
    let shape = nonnegative(Loc(path), "shape", &shape_arr)?;
    let data = a.array("data", why)?;
    let (values, elem) = values(Loc(path), &data)?;
    let expect_2d = |a: Loc| -> Result<(u64, u64)> {
        match shape.as_slice() {
            &[m, n] => Ok((m, n)),
            s => Err(a.err("shape", format!("a {format} matrix has 2 dimensions, the shape has {}", s.len()))),
        }
    };
    match format.as_str() {
        "csr" | "csc" => {
            let (m, n) = expect_2d(Loc(path))?;
            let (major, minor) = if format == "csr" { (m, n) } else { (n, m) };
            let why = "a csr / csc matrix stores `indices` and `indptr`";
            let indptr = a.nonnegative("indptr", why)?;
            let indices = a.nonnegative("indices", why)?;
            let block = Block { rows: 1, cols: 1, major, minor };
            let nse = check_compressed(Loc(path), &indptr, &indices, values.len(), &block)?;
            compressed(&format, vec![m, n], indptr, indices, values, nse, elem, 1, 1)
        }
        "bsr" => {
            let (m, n) = expect_2d(Loc(path))?;
            let (r, c) = match data.header.shape.as_slice() {
                &[_, r, c] if r > 0 && c > 0 => (r, c),
                s => return Err(a.err("data", format!("a bsr matrix's data has the shape (blocks, R, C), not {s:?}"))),
            };
            if m % r != 0 || n % c != 0 {
                return Err(a.err("shape", format!("({m}, {n}) is not a whole number of {r}x{c} blocks")));
            }
            let why = "a bsr matrix stores `indices` and `indptr`";
            let indptr = a.nonnegative("indptr", why)?;
            let indices = a.nonnegative("indices", why)?;
            let block = Block { rows: r, cols: c, major: m / r, minor: n / c };
            let nse = check_compressed(Loc(path), &indptr, &indices, values.len(), &block)?;
            compressed("bsr", vec![m, n], indptr, indices, values, nse, elem, r, c)
        }
        "coo" => {
            let rank = shape.len();
            let nnz = values.len();
            let coords: Vec<Vec<u64>> = if a.has("coords") {
                let c = a.array("coords", "")?;
                if c.header.shape != [rank as u64, nnz as u64] {
                    return Err(a.err(
                        "coords",
                        format!(
                            "has the shape {:?}; {rank} dimensions of {nnz} entries need ({rank}, {nnz})",
                            c.header.shape
                        ),
                    ));
                }
                let flat = nonnegative(Loc(path), "coords", &c)?;
                (0..rank).map(|d| flat[d * nnz..(d + 1) * nnz].to_vec()).collect()
            } else {
                if rank != 2 {
                    return Err(a.err("coords", format!("missing: a {rank}-dimensional coo array stores `coords`")));
                }
                let why = "a 2-D coo matrix stores `row` and `col` (or `coords`)";
                let row = a.nonnegative("row", why)?;
                let col = a.nonnegative("col", why)?;
                vec![row, col]
            };
            for (d, c) in coords.iter().enumerate() {
                let name = if a.has("coords") { "coords" } else { ["row", "col"][d] };
                if c.len() != nnz {
                    return Err(a.err(name, format!("has {} entries, `data` has {nnz}", c.len())));
                }
                if let Some(k) = c.iter().position(|&x| x >= shape[d]) {
                    return Err(a.err(name, format!("[{k}] = {} is outside dimension {d}'s size {}", c[k], shape[d])));
                }
            }
            Ok(NpzTensor::Columns(CooColumns::new(shape, coords, values), elem))
        }
        "dia" => {
            let (m, n) = expect_2d(Loc(path))?;
            let offsets = {
                let arr = a.array("offsets", "a dia matrix stores `offsets`")?;
                signed(Loc(path), "offsets", &arr)?
            };
            let (diags, len) = match data.header.shape.as_slice() {
                &[d, l] => (d as usize, l as usize),
                s => {
                    return Err(
                        a.err("data", format!("a dia matrix's data has the shape (diagonals, length), not {s:?}"))
                    );
                }
            };
            if diags != offsets.len() {
                return Err(a.err("offsets", format!("has {} entries, `data` has {diags} diagonals", offsets.len())));
            }
            // data[k, j] is entry (j - offsets[k], j), where that is inside the matrix.
            let mut coo = Coo::of_type(vec![m, n], elem);
            for (k, &o) in offsets.iter().enumerate() {
                for j in 0..len.min(n as usize) {
                    let i = j as i128 - i128::from(o);
                    let at = k * len + j;
                    if i >= 0 && (i as u128) < u128::from(m) && !values.is_padding(at) {
                        coo.push_from(&[i as u64, j as u64], &values, at);
                    }
                }
            }
            Ok(NpzTensor::Entries(coo, elem))
        }
        f => Err(a.err("format", format!("`{f}` is not a format scipy saves (csr, csc, bsr, dia, coo)"))),
    }
}

/// Block sizes and the block grid of a compressed matrix (1x1 blocks for csr / csc).
struct Block {
    rows: u64,
    cols: u64,
    major: u64,
    minor: u64,
}

/// Checks `indptr` / `indices` against each other and the shape; returns the
/// number of stored blocks (`indptr`'s last entry).
fn check_compressed(a: Loc, indptr: &[u64], indices: &[u64], data: usize, b: &Block) -> Result<usize> {
    if indptr.len() as u64 != b.major.saturating_add(1) {
        return Err(a.err(
            "indptr",
            format!(
                "has {} entries; {} rows (or columns) of blocks need {}",
                indptr.len(),
                b.major,
                u128::from(b.major) + 1
            ),
        ));
    }
    if indptr[0] != 0 {
        return Err(a.err("indptr", format!("[0] = {}, not 0", indptr[0])));
    }
    if let Some(k) = (1..indptr.len()).find(|&k| indptr[k] < indptr[k - 1]) {
        return Err(a.err(
            "indptr",
            format!("[{k}] = {} is less than [{}] = {} (indptr must not decrease)", indptr[k], k - 1, indptr[k - 1]),
        ));
    }
    let nse = indptr[indptr.len() - 1];
    if nse > indices.len() as u64 {
        return Err(a.err("indptr", format!("ends at {nse}, past the {} entries of `indices`", indices.len())));
    }
    let per_block = (b.rows * b.cols) as usize;
    if indices.len().checked_mul(per_block) != Some(data) {
        let what = if per_block == 1 { String::new() } else { format!(" blocks of {}x{}", b.rows, b.cols) };
        return Err(a.err("data", format!("has {data} values; `indices` has {}{what}", indices.len())));
    }
    if let Some(k) = indices[..nse as usize].iter().position(|&c| c >= b.minor) {
        return Err(
            a.err("indices", format!("[{k}] = {} is outside the {} columns (or rows) of blocks", indices[k], b.minor))
        );
    }
    Ok(nse as usize)
}

/// A csr / csc / bsr matrix (with `r`x`c` blocks), kept as stored when every
/// row's indices increase, else as entries.
#[allow(clippy::too_many_arguments)]
fn compressed(
    format: &str,
    dims: Vec<u64>,
    indptr: Vec<u64>,
    mut indices: Vec<u64>,
    mut values: ScalarVec,
    nse: usize,
    elem: ScalarType,
    r: u64,
    c: u64,
) -> Result<NpzTensor> {
    indices.truncate(nse);
    values.truncate(nse * (r * c) as usize);
    let sorted = indptr.windows(2).all(|w| indices[w[0] as usize..w[1] as usize].windows(2).all(|p| p[0] < p[1]));
    if sorted {
        // At 32 bits where every position and every coordinate the shape
        // allows fits (scipy's int32 indices), so conversions read 4-byte indices.
        let minor = if format == "csc" { dims[0] } else { dims[1] } / c;
        let pos_bits = if nse as u64 <= u64::from(u32::MAX) { 32 } else { 64 };
        let crd_bits = if minor <= 1 << 32 { 32 } else { 64 };
        let enc = natural_encoding(format, r, c, pos_bits, crd_bits);
        let lvl_sizes = heddle_ir::encoding::map::lvl_sizes(&enc, &dims).map_err(SparseError::Shape)?;
        let (pos, crd) = match enc.levels.len() {
            2 => (vec![None, Some(indptr)], vec![None, Some(indices)]),
            _ => (vec![None, Some(indptr), None, None], vec![None, Some(indices), None, None]),
        };
        return finish(&enc, elem, dims, lvl_sizes, pos, crd, values).map(|t| NpzTensor::Stored(Box::new(t)));
    }
    // Unsorted or repeated indices: entries, which packing sorts and sums.
    let mut coo = Coo::of_type(dims, elem);
    let transposed = format == "csc";
    for (q, w) in indptr.windows(2).enumerate() {
        for p in w[0] as usize..w[1] as usize {
            for (bi, bj) in (0..r).flat_map(|i| (0..c).map(move |j| (i, j))) {
                let v = p * (r * c) as usize + (bi * c + bj) as usize;
                if r * c > 1 && values.is_padding(v) {
                    continue;
                }
                let (i, j) = (q as u64 * r + bi, indices[p] * c + bj);
                let at = if transposed { [j, i] } else { [i, j] };
                coo.push_from(&at, &values, v);
            }
        }
    }
    Ok(NpzTensor::Entries(coo, elem))
}

/// The encoding whose storage is scipy's `format` (CSR, CSC, or BSR with
/// `r`x`c` blocks), its positions and coordinates of `pos_bits` and `crd_bits`.
fn natural_encoding(format: &str, r: u64, c: u64, pos_bits: u32, crd_bits: u32) -> Encoding {
    let map = match format {
        "csr" => "(i, j) -> (i : dense, j : compressed)".to_string(),
        "csc" => "(i, j) -> (j : dense, i : compressed)".to_string(),
        _ => format!(
            "(i, j) -> (i floordiv {r} : dense, j floordiv {c} : compressed, i mod {r} : dense, j mod {c} : dense)"
        ),
    };
    parse_encoding(
        &format!("#sparse_tensor.encoding<{{ map = {map}, posWidth = {pos_bits}, crdWidth = {crd_bits} }}>"),
        0,
    )
    .expect("a well-formed encoding")
}

/// The 0-d string array `format` (bytes `|S3` or unicode `<U3`).
fn string(a: Loc, name: &str, arr: &Array) -> Result<String> {
    let npyz::DType::Plain(ts) = &arr.header.dtype else {
        return Err(a.err(name, "must be a string"));
    };
    let text: Option<String> = match ts.type_char() {
        npyz::TypeChar::ByteStr => Some(arr.data.iter().take_while(|&&b| b != 0).map(|&b| b as char).collect()),
        npyz::TypeChar::UnicodeStr => {
            let big = ts.endianness() == npyz::Endianness::Big;
            arr.data
                .chunks_exact(4)
                .map(|u| {
                    let u: [u8; 4] = u.try_into().unwrap_or_default();
                    char::from_u32(if big { u32::from_be_bytes(u) } else { u32::from_le_bytes(u) })
                })
                .take_while(|c| *c != Some('\0'))
                .collect()
        }
        _ => None,
    };
    text.filter(|_| arr.header.count() == Some(1))
        .ok_or_else(|| a.err(name, format!("must be one string, found `{}` of shape {:?}", ts, arr.header.shape)))
}

/// Reads element `k` of a plain numeric array as raw little-endian bits.
fn raw(arr: &Array, size: usize, big: bool, k: usize) -> u64 {
    let mut b = [0u8; 8];
    let bytes = &arr.data[k * size..(k + 1) * size];
    if big {
        bytes.iter().rev().enumerate().for_each(|(i, x)| b[i] = *x);
    } else {
        b[..size].copy_from_slice(bytes);
    }
    u64::from_le_bytes(b)
}

fn int_type(a: Loc, name: &str, arr: &Array) -> Result<(ScalarType, bool)> {
    match npy::scalar_type(&arr.header.dtype) {
        Some((s, big)) if s.is_int() => Ok((s, big)),
        _ => Err(a.err(name, format!("must hold integers, not `{}`", npy::dtype_text(&arr.header.dtype)))),
    }
}

/// An integer array as `i64`s (any width, either byte order; `u64` beyond `i64` is refused).
fn signed(a: Loc, name: &str, arr: &Array) -> Result<Vec<i64>> {
    let (s, big) = int_type(a, name, arr)?;
    let size = s.size_bytes();
    let n = arr.data.len() / size;
    (0..n)
        .map(|k| {
            let u = raw(arr, size, big, k);
            let shift = 64 - 8 * size as u32;
            match s.is_signed() {
                true => Ok(((u << shift) as i64) >> shift),
                false => i64::try_from(u).map_err(|_| a.err(name, format!("[{k}] = {u} is too large"))),
            }
        })
        .collect()
}

/// An integer array whose entries must be ≥ 0, as `u64`s.
fn nonnegative(a: Loc, name: &str, arr: &Array) -> Result<Vec<u64>> {
    let (s, big) = int_type(a, name, arr)?;
    if s.is_signed() {
        let v = signed(a, name, arr)?;
        if let Some(k) = v.iter().position(|&x| x < 0) {
            return Err(a.err(name, format!("[{k}] = {} is negative", v[k])));
        }
        return Ok(v.into_iter().map(|x| x as u64).collect());
    }
    let size = s.size_bytes();
    Ok((0..arr.data.len() / size).map(|k| raw(arr, size, big, k)).collect())
}

/// The `data` array's values, bit for bit, and their element type.
fn values(a: Loc, arr: &Array) -> Result<(ScalarVec, ScalarType)> {
    let Some((s, big)) = npy::scalar_type(&arr.header.dtype) else {
        return Err(a.err(
            "data",
            format!("`{}` is not a value type heddle reads (integers, float16, float32, float64, complex64, complex128, bool)", npy::dtype_text(&arr.header.dtype)),
        ));
    };
    // A complex value is two floats (the real part first), each in the file's byte order.
    let (size, parts) = if s.is_complex() { (s.part().size_bytes(), 2) } else { (s.size_bytes(), 1) };
    let n = arr.data.len() / (size * parts);
    let out = crate::with_scalar_type!(s, T => ScalarVec::from(
        (0..n)
            .map(|k| {
                let mut le = [0u8; 16];
                for p in 0..parts {
                    le[p * size..(p + 1) * size].copy_from_slice(&raw(arr, size, big, k * parts + p).to_le_bytes()[..size]);
                }
                <T as Scalar>::read_le(&le[..size * parts])
            })
            .collect::<Vec<T>>(),
    ));
    Ok((out, s))
}

/// How a tensor is saved: the scipy format its encoding stores, or `coo`.
enum Layout {
    /// `csr` (`transposed = false`) or `csc`.
    Compressed { transposed: bool },
    /// `bsr` with `r`x`c` blocks.
    Blocked { r: u64, c: u64 },
    /// `dia`: a difference level `j - i` over a dense level of `j`
    /// (scipy's own layout, `by_row = false`) or of `i` (`by_row = true`:
    /// the diagonals' values are moved to scipy's column indexing).
    Diagonal { by_row: bool },
    /// `coo`: the entries.
    Entries,
}

fn layout(t: &SparseTensor) -> Layout {
    let enc = &t.encoding;
    if let Some((a, _)) = csr_like(enc)
        && !enc.levels[1].props.nonordered
    {
        return Layout::Compressed { transposed: a == 1 };
    }
    if let [l0, l1, l2, l3] = enc.levels.as_slice()
        && enc.dims.len() == 2
        && enc.dims.iter().all(|d| d.slice.is_none())
        && let (LvlExpr::FloorDiv(0, r), LvlExpr::FloorDiv(1, c), LvlExpr::Mod(0, r2), LvlExpr::Mod(1, c2)) =
            (l0.expr, l1.expr, l2.expr, l3.expr)
        && (r, c) == (r2, c2)
        && l0.format == LevelFormat::Dense
        && l1.format == LevelFormat::Compressed
        && !l1.props.nonunique
        && !l1.props.nonordered
        && l2.format == LevelFormat::Dense
        && l3.format == LevelFormat::Dense
    {
        return Layout::Blocked { r, c };
    }
    if let [l0, l1] = enc.levels.as_slice()
        && enc.dims.len() == 2
        && enc.dims.iter().all(|d| d.slice.is_none())
        && l0.expr == (LvlExpr::Diff { plus: 1, minus: 0 })
        && l0.format == LevelFormat::Compressed
        && !l0.props.nonunique
        && l1.format == LevelFormat::Dense
        && let LvlExpr::Dim(d) = l1.expr
    {
        return Layout::Diagonal { by_row: d == 0 };
    }
    Layout::Entries
}

/// numpy's smallest index type for these values, as scipy picks it: `int32`
/// when every index (and size) fits, else `int64`.
fn index_type(max: u64) -> ScalarType {
    if max <= i32::MAX as u64 { ScalarType::I32 } else { ScalarType::I64 }
}

/// Writes `t` as scipy's `save_npz` would write it: csr, csc or bsr when its
/// encoding stores one of those (its positions and coordinates are `indptr`
/// and `indices`), else its entries as coo (`row`, `col` for a matrix,
/// `coords` for any other rank). `data` has the tensor's element type;
/// indices are `int32` when they fit, else `int64`. `_is_array` is set, so
/// `load_npz` gives a sparse array (`csr_array`, …).
pub fn write_npz(t: &SparseTensor, path: &Path) -> Result<()> {
    let io = |e: std::io::Error| SparseError::Io { path: path.to_path_buf(), source: e };
    let zerr = |e: zip::result::ZipError| io(std::io::Error::other(e));
    // numpy's shapes and scipy's indices are int64.
    if let Some(d) = t.dim_sizes.iter().find(|&&d| d > i64::MAX as u64) {
        return Err(SparseError::Shape(format!(
            "{}: a dimension of size {d} is beyond int64, which .npz shapes are",
            path.display()
        )));
    }
    let file = std::fs::File::create(path).map_err(io)?;
    let mut z = zip::ZipWriter::new(std::io::BufWriter::with_capacity(1 << 20, file));
    let max_dim = t.dim_sizes.iter().copied().max().unwrap_or(0);
    let elem = t.elem;
    let mut member = |name: &str,
                      descr: &str,
                      shape: &[u64],
                      size: usize,
                      body: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>|
     -> Result<()> {
        let bytes = shape.iter().product::<u64>() * size as u64;
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(bytes > u64::from(u32::MAX) / 2);
        z.start_file(format!("{name}.npy"), options).map_err(zerr)?;
        npy::write_header(&mut z, descr, shape).map_err(io)?;
        body(&mut z).map_err(io)
    };
    let (format, dims) = match layout(t) {
        Layout::Compressed { transposed } => (if transposed { "csc" } else { "csr" }, None),
        Layout::Blocked { r, c } => ("bsr", Some((r, c))),
        Layout::Diagonal { .. } => ("dia", None),
        Layout::Entries => ("coo", None),
    };
    let by_row = matches!(layout(t), Layout::Diagonal { by_row: true });
    member("format", "'|S3'", &[], 3, &mut |w| w.write_all(format.as_bytes()))?;
    let shape = t.dim_sizes.clone();
    member("shape", "'<i8'", &[shape.len() as u64], 8, &mut |w| {
        shape.iter().try_for_each(|&d| w.write_all(&(d as i64).to_le_bytes()))
    })?;
    member("_is_array", "'|b1'", &[], 1, &mut |w| w.write_all(&[1]))?;
    let elem = npy::file_type(elem);
    let vdescr = format!("'{}'", npy::descr(elem));
    let vsize = elem.size_bytes();
    match format {
        "coo" => {
            let coo = t.to_coo();
            let rank = coo.rank();
            let it = index_type(max_dim);
            let idescr = format!("'{}'", npy::descr(it));
            let n = coo.len() as u64;
            if rank == 2 {
                for (d, name) in ["row", "col"].into_iter().enumerate() {
                    member(name, &idescr, &[n], it.size_bytes(), &mut |w| {
                        write_ints(w, (0..coo.len()).map(|k| coo.coords[k * 2 + d]), it)
                    })?;
                }
            } else {
                let (len, coords) = (coo.len(), &coo.coords);
                member("coords", &idescr, &[rank as u64, n], it.size_bytes(), &mut |w| {
                    write_ints(w, (0..rank).flat_map(|d| (0..len).map(move |k| coords[k * rank + d])), it)
                })?;
            }
            member("data", &vdescr, &[n], vsize, &mut |w| write_values(w, &coo.values, elem))?;
        }
        "dia" => {
            // `offsets` (signed) and `data` of shape (diagonals, columns):
            // data[k, j] is entry (j - offsets[k], j); positions outside the
            // matrix hold the implicit value, as scipy pads with zeros.
            let Some(crd) = &t.coordinates[0] else {
                return Err(SparseError::Shape("a difference level without its coordinates".into()));
            };
            let (m, n) = (t.dim_sizes[0], t.dim_sizes[1]);
            let it = index_type(max_dim);
            let idescr = format!("'{}'", npy::descr(it));
            let diags = crd.len();
            member("offsets", &idescr, &[diags as u64], it.size_bytes(), &mut |w| {
                write_ints(w, (0..diags).map(|k| crd.get_signed(k) as u64), it)
            })?;
            let values = if by_row {
                // values[k * m + i] is entry (i, i + offsets[k]); scipy wants it at column j = i + offsets[k].
                let pad = crate::sparse::assemble::implicit_value(&t.encoding);
                let mut out = ScalarVec::with_capacity(t.elem, diags * n as usize);
                for k in 0..diags {
                    let o = crd.get_signed(k);
                    for j in 0..n as i64 {
                        let i = j - o;
                        let v = if i >= 0 && (i as u64) < m { t.values.num(k * m as usize + i as usize) } else { pad };
                        let _ = out.push_num(v);
                    }
                }
                out
            } else {
                t.values.clone()
            };
            member("data", &vdescr, &[diags as u64, n], vsize, &mut |w| write_values(w, &values, elem))?;
        }
        _ => {
            let (Some(pos), Some(crd)) = (&t.positions[1], &t.coordinates[1]) else {
                return Err(SparseError::Shape("a compressed level without its buffers".into()));
            };
            let it = index_type(max_dim.max(pos.get(pos.len() - 1)));
            let idescr = format!("'{}'", npy::descr(it));
            member("indices", &idescr, &[crd.len() as u64], it.size_bytes(), &mut |w| {
                write_ints(w, (0..crd.len()).map(|k| crd.get(k)), it)
            })?;
            member("indptr", &idescr, &[pos.len() as u64], it.size_bytes(), &mut |w| {
                write_ints(w, (0..pos.len()).map(|k| pos.get(k)), it)
            })?;
            let shape: Vec<u64> = match dims {
                Some((r, c)) => vec![crd.len() as u64, r, c],
                None => vec![t.values.len() as u64],
            };
            member("data", &vdescr, &shape, vsize, &mut |w| write_values(w, &t.values, elem))?;
        }
    }
    let mut w = z.finish().map_err(zerr)?;
    w.flush().map_err(io)
}

/// One array of a plain `.npz` archive ([`write_arrays`]).
pub struct NamedArray<'a> {
    /// Its name: the archive's member `NAME.npy`, `np.load(path)[NAME]`.
    pub name: String,
    /// Its values, written at their own type (a `bf16` as `<f4`).
    pub data: &'a ScalarVec,
    /// Its shape (`[]` for a 0-d array of one value); the product is `data`'s length.
    pub shape: Vec<u64>,
}

/// Writes `arrays` as numpy's `np.savez` does (a zip of uncompressed `.npy`
/// members, one per array): `np.load(path)` gives them by name, and
/// `heddle run --input NAME=PATH` reads the one named for its parameter.
pub fn write_arrays(path: &Path, arrays: &[NamedArray]) -> Result<()> {
    let io = |e: std::io::Error| SparseError::Io { path: path.to_path_buf(), source: e };
    let zerr = |e: zip::result::ZipError| io(std::io::Error::other(e));
    let file = std::fs::File::create(path).map_err(io)?;
    let mut z = zip::ZipWriter::new(std::io::BufWriter::with_capacity(1 << 20, file));
    for a in arrays {
        debug_assert_eq!(a.shape.iter().product::<u64>(), a.data.len() as u64, "{}: shape and data agree", a.name);
        let elem = npy::file_type(a.data.elem());
        let bytes = a.data.len() as u64 * elem.size_bytes() as u64;
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(bytes > u64::from(u32::MAX) / 2);
        z.start_file(format!("{}.npy", a.name), options).map_err(zerr)?;
        npy::write_header(&mut z, &format!("'{}'", npy::descr(elem)), &a.shape).map_err(io)?;
        write_values(&mut z, a.data, elem).map_err(io)?;
    }
    let mut w = z.finish().map_err(zerr)?;
    w.flush().map_err(io)
}

/// Little-endian integers of type `it` (`int32` or `int64`), in 64 KiB writes.
fn write_ints(w: &mut dyn Write, xs: impl Iterator<Item = u64>, it: ScalarType) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1 << 16);
    for x in xs {
        if it == ScalarType::I32 {
            buf.extend_from_slice(&(x as i32).to_le_bytes());
        } else {
            buf.extend_from_slice(&(x as i64).to_le_bytes());
        }
        if buf.len() >= (1 << 16) {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    w.write_all(&buf)
}

/// Values at the element type's width, little-endian (converted exactly to
/// `elem` first when they are of another type).
fn write_values(w: &mut dyn Write, vs: &ScalarVec, elem: ScalarType) -> std::io::Result<()> {
    let converted;
    let vs = if vs.elem() == elem {
        vs
    } else {
        converted = vs
            .clone()
            .convert(elem)
            .map_err(|e| std::io::Error::other(format!("value {}: {}", e.position, e.message)))?;
        &converted
    };
    let size = elem.size_bytes();
    let mut buf = vec![0u8; 1 << 16];
    crate::with_values!(vs, xs => {
        for chunk in xs.chunks((1 << 16) / size) {
            for (x, out) in chunk.iter().zip(buf.chunks_exact_mut(size)) {
                Scalar::write_le(*x, out);
            }
            w.write_all(&buf[..chunk.len() * size])?;
        }
    });
    Ok(())
}

//! The direct COO → CSR / CSC path (a counting sort) and raw CSR buffers for
//! kernels that take `offsets` / `col_indices` / `values` arrays.
//!
//! The attribute query is the row histogram: it sizes the positions buffer,
//! and its prefix sum places every entry, so coordinates and values are
//! allocated once at their final size and written once. The sort is stable:
//! entries arrive in input order within a row, so a row-major input gives
//! sorted rows for CSR, and (CSR → CSC) sorted columns for the transpose.

use super::buffer::IndexBuf;
use super::build::finish_stored;
use super::coo::{Coo, CooColumns};
use super::counting::{self, Column, Idx, Strided};
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use crate::scalars::{Scalar, ScalarVec};
use crate::with_values;
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat, LvlExpr};

/// Compressed rows of a matrix: `pos` has `rows + 1` entries, row `r`'s
/// entries are `crd[pos[r]..pos[r+1]]` (sorted, no duplicates) with their `vals`.
#[derive(Clone, Debug, PartialEq)]
pub struct Compressed {
    /// Row starts.
    pub pos: Vec<u64>,
    /// Column of each entry.
    pub crd: Vec<u64>,
    /// Value of each entry.
    pub vals: ScalarVec,
}

/// Groups the entries of `coo` by dimension `outer` (rows) with dimension
/// `inner` as the coordinate; duplicates are summed.
pub fn compress(coo: &Coo, outer: usize, inner: usize) -> Compressed {
    with_values!(&coo.values, values => {
        let (pos, crd, vals) = compress_typed(coo, values, outer, inner);
        Compressed { pos, crd, vals: ScalarVec::from(vals) }
    })
}

fn compress_typed<T: Scalar>(coo: &Coo, values: &[T], outer: usize, inner: usize) -> (Vec<u64>, Vec<u64>, Vec<T>) {
    let r = coo.rank();
    let n_outer = coo.dims[outer] as usize;
    let n = coo.len();
    let mut pos = vec![0u64; n_outer + 1];
    for k in 0..n {
        pos[coo.coords[k * r + outer] as usize + 1] += 1;
    }
    for i in 0..n_outer {
        pos[i + 1] += pos[i];
    }
    let mut next: Vec<u64> = pos[..n_outer].to_vec();
    let mut crd = vec![0u64; n];
    let mut vals = vec![T::default(); n];
    for k in 0..n {
        let row = coo.coords[k * r + outer] as usize;
        let at = next[row] as usize;
        next[row] += 1;
        crd[at] = coo.coords[k * r + inner];
        vals[at] = values[k];
    }
    // Rows from an unsorted input, or with duplicates, are sorted and merged
    // in place; already-clean rows (the common case) are only scanned.
    let clean = (0..n_outer).all(|i| {
        let s = &crd[pos[i] as usize..pos[i + 1] as usize];
        s.windows(2).all(|w| w[0] < w[1])
    });
    if clean {
        return (pos, crd, vals);
    }
    let mut w = 0usize;
    let mut new_pos = vec![0u64; n_outer + 1];
    let mut pairs: Vec<(u64, T)> = Vec::new();
    for i in 0..n_outer {
        let (s, e) = (pos[i] as usize, pos[i + 1] as usize);
        pairs.clear();
        pairs.extend((s..e).map(|k| (crd[k], vals[k])));
        pairs.sort_by_key(|p| p.0);
        for &(c, v) in &pairs {
            if w > new_pos[i] as usize && crd[w - 1] == c {
                vals[w - 1] = Scalar::add(vals[w - 1], v);
            } else {
                crd[w] = c;
                vals[w] = v;
                w += 1;
            }
        }
        new_pos[i + 1] = w as u64;
    }
    crd.truncate(w);
    vals.truncate(w);
    (new_pos, crd, vals)
}

/// MLIR's CSR encoding, `(i, j) -> (i : dense, j : compressed)` at the native widths.
pub fn csr_encoding() -> Encoding {
    heddle_ir::encoding::parse_encoding("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>", 0)
        .expect("a well-formed encoding")
}

/// Is `enc` `(a : dense, b : compressed)` for two distinct dimensions (CSR or
/// CSC, any widths, unique)? Returns `(a, b)`.
pub fn csr_like(enc: &Encoding) -> Option<(usize, usize)> {
    match (enc.levels.as_slice(), enc.dims.len()) {
        ([l0, l1], 2)
            if l0.format == LevelFormat::Dense
                && l1.format == LevelFormat::Compressed
                && !l1.props.nonunique
                && enc.dims.iter().all(|d| d.slice.is_none()) =>
        {
            match (l0.expr, l1.expr) {
                (LvlExpr::Dim(a), LvlExpr::Dim(b)) if a != b => Some((a, b)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The counting-sort path of [`super::build::pack`] for a CSR-like `enc`
/// (see [`csr_like`]) and a matrix `coo`: checks every coordinate against
/// its dimension on the way, and stores positions and coordinates at the
/// encoding's widths (a value that does not fit is an error naming it).
pub(crate) fn pack_csr_like(coo: &Coo, enc: &Encoding, elem: ScalarType, lvl_sizes: &[u64]) -> Result<SparseTensor> {
    let (a, b) = csr_dims(enc)?;
    let column = |d| Strided { data: &coo.coords, stride: 2, offset: d };
    let outside = |k| super::build::out_of_range(coo.entry(k), &coo.dims, k);
    pack_entries(&column(a), &column(b), &coo.dims, &coo.values, (a, b), enc, elem, lvl_sizes, outside)
}

/// [`pack_csr_like`] for entries kept as columns (a coo `.npz`): the
/// counting sort reads each coordinate at the columns' width.
pub(crate) fn pack_columns_csr_like(
    cols: CooColumns,
    enc: &Encoding,
    elem: ScalarType,
    lvl_sizes: &[u64],
) -> Result<SparseTensor> {
    let (a, b) = csr_dims(enc)?;
    // Row-ordered entries whose inner column was read at 64 bits (a reader
    // that knew the target's coordinates are 64-bit, `file::read_into`):
    // the column is kept as the coordinates buffer, with no widening pass
    // (see the 32-bit case below).
    if let (IndexBuf::U32(o), IndexBuf::U64(i)) = (cols.column(a), cols.column(b))
        && a == 0
        && enc.crd_width.storage_bits() == 64
        && let Some(strict) = counting::row_ordered(o, i, cols.dims[a], cols.dims[b])
    {
        super::build::check_alloc(cols.dims[a], "the positions buffer")?;
        let dims = cols.dims.clone();
        let (_, mut columns, values) = cols.into_parts();
        let (IndexBuf::U64(inner), IndexBuf::U32(outer)) = (columns.swap_remove(b), columns.swap_remove(0)) else {
            unreachable!("a 32-bit outer and a 64-bit inner column")
        };
        let s = counting::grouped(&outer, inner, values, dims[a] as usize);
        return finish_scattered(s, enc, elem, &dims, lvl_sizes, strict);
    }
    // Not row-ordered: the inner column goes back to 32 bits (one parallel
    // pass), so the counting sort below runs as for a 32-bit read, with its
    // 32-bit cursors and no more memory than that read.
    let cols = narrow_inner(cols, a, b);
    let outside = |k| super::build::out_of_range(&cols.entry(k), &cols.dims, k);
    // Entries already grouped by `a` (a column-ordered file into CSC): the
    // counting sort's permutation is the identity, so the inner column and
    // the values are kept as they are instead of copied.
    // One parallel pass checks the order, the ranges and whether the rows
    // are already clean (sorted, no duplicates); anything else (a coordinate
    // out of range included, reported below) takes the counting sort.
    if let (IndexBuf::U32(o), IndexBuf::U32(i)) = (cols.column(a), cols.column(b))
        && counting::narrow(cols.len(), cols.dims[b])
        && let Some(strict) = counting::row_ordered(o, i, cols.dims[a], cols.dims[b])
    {
        super::build::check_alloc(cols.dims[a], "the positions buffer")?;
        let dims = cols.dims.clone();
        let (_, mut columns, values) = cols.into_parts();
        let (IndexBuf::U32(inner), IndexBuf::U32(outer)) = (columns.swap_remove(b), columns.swap_remove(0)) else {
            unreachable!("both columns are 32-bit")
        };
        let s = counting::grouped(&outer, inner, values, dims[a] as usize);
        return finish_scattered(s, enc, elem, &dims, lvl_sizes, strict);
    }
    let (dims, values) = (&cols.dims, &cols.values);
    match (cols.column(a), cols.column(b)) {
        (IndexBuf::U32(o), IndexBuf::U32(i)) => {
            pack_entries(o.as_slice(), i.as_slice(), dims, values, (a, b), enc, elem, lvl_sizes, outside)
        }
        (IndexBuf::U32(o), IndexBuf::U64(i)) => {
            // The inner column was read at the target's 64 bits: scattered
            // at 64 bits too, so its coordinates need no widening pass (and
            // no 32-bit copy is held beside the 64-bit column).
            super::build::check_alloc(dims[a], "the positions buffer")?;
            let s =
                counting::scatter_entries::<u64, [u32], [u64]>((dims[a], dims[b]), o.as_slice(), i.as_slice(), values)
                    .map_err(outside)?;
            finish_scattered(s, enc, elem, dims, lvl_sizes, false)
        }
        (IndexBuf::U64(o), IndexBuf::U64(i)) => {
            pack_entries(o.as_slice(), i.as_slice(), dims, values, (a, b), enc, elem, lvl_sizes, outside)
        }
        (o, i) => pack_entries(
            o.to_u64().as_slice(),
            i.to_u64().as_slice(),
            dims,
            values,
            (a, b),
            enc,
            elem,
            lvl_sizes,
            outside,
        ),
    }
}

/// `cols` with column `b` at 32 bits where it is a 64-bit column beside a
/// 32-bit column `a` and its coordinates all fit (else as it is).
fn narrow_inner(cols: CooColumns, a: usize, b: usize) -> CooColumns {
    use rayon::prelude::*;
    let (IndexBuf::U32(_), IndexBuf::U64(wide)) = (cols.column(a), cols.column(b)) else { return cols };
    if !counting::narrow(cols.len(), cols.dims[b]) {
        return cols;
    }
    let Some(narrow) = wide.par_iter().map(|&x| u32::try_from(x).ok()).collect::<Option<Vec<u32>>>() else {
        return cols;
    };
    let (dims, mut columns, values) = cols.into_parts();
    columns[b] = IndexBuf::U32(narrow);
    CooColumns::from_bufs(dims, columns, values)
}

/// The dimensions `(a, b)` of a CSR-like `enc`, `(a : dense, b : compressed)`.
fn csr_dims(enc: &Encoding) -> Result<(usize, usize)> {
    csr_like(enc)
        .ok_or_else(|| SparseError::Shape(format!("`{}` is not CSR-like", heddle_ir::encoding::print_encoding(enc))))
}

/// The counting sort of a matrix's entries (dimension `a`'s coordinates
/// `outer`, `b`'s `inner`) into the CSR-like `enc`: cursors and
/// coordinates at 32 bits where they fit (see [`counting::narrow`]), then
/// stored at the encoding's widths. `outside(k)` is the error for entry
/// `k`, the first with a coordinate outside its dimension.
#[allow(clippy::too_many_arguments)]
fn pack_entries<O: Column + ?Sized, C: Column + ?Sized>(
    outer: &O,
    inner: &C,
    dims: &[u64],
    values: &ScalarVec,
    (a, b): (usize, usize),
    enc: &Encoding,
    elem: ScalarType,
    lvl_sizes: &[u64],
    outside: impl Fn(usize) -> SparseError,
) -> Result<SparseTensor> {
    super::build::check_alloc(dims[a], "the positions buffer")?;
    let sizes = (dims[a], dims[b]);
    if counting::narrow(values.len(), dims[b]) {
        let s = counting::scatter_entries::<u32, O, C>(sizes, outer, inner, values).map_err(outside)?;
        finish_scattered(s, enc, elem, dims, lvl_sizes, false)
    } else {
        let s = counting::scatter_entries::<u64, O, C>(sizes, outer, inner, values).map_err(outside)?;
        finish_scattered(s, enc, elem, dims, lvl_sizes, false)
    }
}

/// `known_clean`: the rows are known to be sorted without duplicates (not
/// scanned again).
fn finish_scattered<I: Idx>(
    mut s: counting::Scattered<I>,
    enc: &Encoding,
    elem: ScalarType,
    dims: &[u64],
    lvl_sizes: &[u64],
    known_clean: bool,
) -> Result<SparseTensor> {
    // Rows from an unsorted input, or with duplicates, are sorted and
    // merged; already-clean rows (the common case) are only scanned.
    if !known_clean && !s.clean() {
        s.sort_rows();
    }
    let pos = counting::at_width(s.pos, enc.pos_width, "positions[1]")?;
    let crd = counting::at_width(s.crd, enc.crd_width, "coordinates[1]")?;
    finish_stored(enc, elem, dims.to_vec(), lvl_sizes.to_vec(), vec![None, Some(pos)], vec![None, Some(crd)], s.vals)
}

/// Raw CSR buffers with 32- or 64-bit signed indices, as OpenCL / C kernels
/// take them (the paper's `offsets`, `col_indices`, `values`).
#[derive(Clone, Debug, PartialEq)]
pub struct RawCsr<I> {
    /// Number of rows.
    pub rows: u64,
    /// Number of columns.
    pub cols: u64,
    /// `rows + 1` row starts.
    pub offsets: Vec<I>,
    /// Column of each stored entry, sorted within a row.
    pub col_indices: Vec<I>,
    /// Value of each stored entry.
    pub values: ScalarVec,
}

fn raw<I: TryFrom<u64>>(coo: &Coo, what: &str) -> Result<RawCsr<I>> {
    if coo.rank() != 2 {
        return Err(SparseError::Shape(format!("CSR needs a matrix, this tensor has {} dimensions", coo.rank())));
    }
    super::build::check_alloc(coo.dims[0], "the offsets buffer")?;
    let c = compress(coo, 0, 1);
    let too_big = |x: u64| SparseError::Shape(format!("{x} does not fit in {what} CSR indices"));
    let conv = |v: Vec<u64>| v.into_iter().map(|x| I::try_from(x).map_err(|_| too_big(x))).collect::<Result<Vec<I>>>();
    // Columns up to cols - 1 must fit too, not only those present.
    I::try_from(coo.dims[1]).map_err(|_| too_big(coo.dims[1]))?;
    Ok(RawCsr {
        rows: coo.dims[0],
        cols: coo.dims[1],
        offsets: conv(c.pos)?,
        col_indices: conv(c.crd)?,
        values: c.vals,
    })
}

/// COO → CSR with `i32` offsets and column indices (an error if they do not fit).
pub fn coo_to_csr_i32(coo: &Coo) -> Result<RawCsr<i32>> {
    raw(coo, "32-bit")
}

/// COO → CSR with `i64` offsets and column indices.
pub fn coo_to_csr_i64(coo: &Coo) -> Result<RawCsr<i64>> {
    raw(coo, "64-bit")
}

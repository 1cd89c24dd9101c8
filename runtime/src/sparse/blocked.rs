//! CSR / CSC → BSR directly on the buffers, without sorting the entries.
//!
//! BSR (`(i floordiv R : dense, j floordiv C : compressed, i mod R : dense,
//! j mod C : dense)`, or the blocks' insides column-major) stores, per block
//! row, the block columns that hold an entry, in increasing order, and a
//! full R×C block of values for each. The block rows are built one at a
//! time from their R source rows, contiguous in CSR. Where those rows are
//! sorted and R is small (at most [`MERGE_ROWS`]) they are merged: Chou et
//! al.'s attribute query is one merge that lists each block row's block
//! columns, already in order (no sort, no array over the block columns, so
//! a hypersparse matrix takes this path too), and a second pass scatters
//! each value into its block, the rows' cursors moving block by block.
//! Otherwise one pass over the block row's entries marks the block columns
//! present in a slot per block column, their sorted list numbers the
//! blocks, and a second pass scatters the values. The rest of each block
//! is the implicit value. From CSC the blocks run across the stored order,
//! so the source is first transposed (a counting sort). Stored explicit
//! zeros make blocks, as on the general path.

use super::buffer::IndexBuf;
use super::build::{check_alloc, check_storage_size, finish, finish_stored};
use super::counting::{self, Idx};
use super::csr::csr_like;
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use crate::scalars::{Scalar, ScalarVec};
use crate::with_values;
use heddle_ir::encoding::{Encoding, LevelFormat, LvlExpr, map};

/// The block structure of a BSR-like encoding.
struct Blocks {
    /// The dimension whose blocks the first level lists (rows for BSR).
    outer: usize,
    /// Block size along `outer`.
    rows: usize,
    /// Block size along the other dimension.
    cols: usize,
    /// Are the blocks' insides row-major (`outer mod R` before the other)?
    row_major: bool,
}

/// `(a floordiv R : dense, b floordiv C : compressed, a mod R : dense, b mod
/// C : dense)` (the last two in either order), unique, without slices.
fn blocks(enc: &Encoding) -> Option<Blocks> {
    let ([l0, l1, l2, l3], 2) = (enc.levels.as_slice(), enc.dim_rank()) else { return None };
    let dense = |f: LevelFormat| f == LevelFormat::Dense;
    if !dense(l0.format)
        || l1.format != LevelFormat::Compressed
        || l1.props.nonunique
        || !dense(l2.format)
        || !dense(l3.format)
        || enc.dims.iter().any(|d| d.slice.is_some())
    {
        return None;
    }
    let (LvlExpr::FloorDiv(a, r), LvlExpr::FloorDiv(b, c)) = (l0.expr, l1.expr) else { return None };
    let inner = (l2.expr, l3.expr);
    let row_major = if inner == (LvlExpr::Mod(a, r), LvlExpr::Mod(b, c)) {
        true
    } else if inner == (LvlExpr::Mod(b, c), LvlExpr::Mod(a, r)) {
        false
    } else {
        return None;
    };
    (a != b).then_some(Blocks { outer: a, rows: r as usize, cols: c as usize, row_major })
}

/// CSR or CSC `src` stored in the BSR-like `target` (see [`blocks`]);
/// `None` when the encodings are not of these shapes.
pub(crate) fn csr_to_bsr(src: &SparseTensor, target: &Encoding) -> Result<Option<SparseTensor>> {
    let Some((a, b)) = csr_like(&src.encoding) else { return Ok(None) };
    let Some(blk) = blocks(target) else { return Ok(None) };
    let (Some(pos), Some(crd)) = (&src.positions[1], &src.coordinates[1]) else { return Ok(None) };
    if blk.outer == b {
        // The blocks run along the stored coordinate: transpose first.
        let mut flipped = src.encoding.clone();
        flipped.levels[0].expr = LvlExpr::Dim(b);
        flipped.levels[1].expr = LvlExpr::Dim(a);
        flipped.pos_width = heddle_ir::encoding::Width::Native;
        flipped.crd_width = heddle_ir::encoding::Width::Native;
        let t = super::convert::transpose(src, &flipped)?;
        return csr_to_bsr(&t, target);
    }
    let dims = src.dim_sizes.clone();
    let lvl_sizes = map::lvl_sizes(target, &dims).map_err(SparseError::Shape)?;
    check_storage_size(target, &lvl_sizes, src.nse() as u64, None)?;
    if !src.encoding.levels[1].props.nonordered && blk.rows <= MERGE_ROWS {
        return match crd {
            IndexBuf::U32(c) => merged(src, target, pos, c, &blk, dims, lvl_sizes),
            IndexBuf::U64(c) => merged(src, target, pos, c, &blk, dims, lvl_sizes),
            other => merged(src, target, pos, &other.to_u64(), &blk, dims, lvl_sizes),
        }
        .map(Some);
    }
    // One slot per block column: worth it unless the block columns far
    // outnumber the entries (a hypersparse matrix), which the general path
    // (sorted coordinates) stores without such an array.
    if lvl_sizes[1] > (src.nse() as u64).saturating_mul(4).max(1 << 16) {
        return Ok(None);
    }
    let implicit = super::assemble::implicit_value(target);
    let major = src.lvl_sizes[0] as usize;
    let (bpos, bcrd, values) = with_values!(&src.values, vals => {
        let pad = Scalar::from_num(implicit)
            .ok_or_else(|| SparseError::Shape(format!("the encoding's implicitVal {implicit} is not a {}", src.elem.keyword())))?;
        let (bpos, bcrd, out) = match crd {
            IndexBuf::U32(c) => fill(pos, c, vals, major, &blk, &lvl_sizes, pad)?,
            IndexBuf::U64(c) => fill(pos, c, vals, major, &blk, &lvl_sizes, pad)?,
            other => fill(pos, &other.to_u64(), vals, major, &blk, &lvl_sizes, pad)?,
        };
        (bpos, bcrd, ScalarVec::from(out))
    });
    let positions = vec![None, Some(bpos), None, None];
    let coordinates = vec![None, Some(bcrd), None, None];
    finish(target, src.elem, dims, lvl_sizes, positions, coordinates, values).map(Some)
}

/// Block rows of at most this many source rows are merged (see the module's
/// documentation); taller ones mark their block columns instead.
const MERGE_ROWS: usize = 8;

/// The merge path for sorted source rows: block rows' positions and block
/// columns at 32 bits where they fit (see [`counting::narrow`]), then
/// stored at the target's widths.
fn merged<S: Idx>(
    src: &SparseTensor,
    target: &Encoding,
    pos: &IndexBuf,
    crd: &[S],
    blk: &Blocks,
    dims: Vec<u64>,
    lvl_sizes: Vec<u64>,
) -> Result<SparseTensor> {
    if counting::narrow(src.nse(), lvl_sizes[1]) {
        merged_into::<S, u32>(src, target, pos, crd, blk, dims, lvl_sizes)
    } else {
        merged_into::<S, u64>(src, target, pos, crd, blk, dims, lvl_sizes)
    }
}

fn merged_into<S: Idx, O: Idx>(
    src: &SparseTensor,
    target: &Encoding,
    pos: &IndexBuf,
    crd: &[S],
    blk: &Blocks,
    dims: Vec<u64>,
    lvl_sizes: Vec<u64>,
) -> Result<SparseTensor> {
    let implicit = super::assemble::implicit_value(target);
    let rows = Rows { pos, major: src.lvl_sizes[0] as usize, height: blk.rows };
    let n_brows = lvl_sizes[0] as usize;
    let values = with_values!(&src.values, vals => {
        let pad = Scalar::from_num(implicit)
            .ok_or_else(|| SparseError::Shape(format!("the encoding's implicitVal {implicit} is not a {}", src.elem.keyword())))?;
        // A power-of-two block width divides by a shift (a division costs tens of cycles per block).
        let c = blk.cols;
        let (bpos, bcrd) = if c.is_power_of_two() {
            let shift = c.trailing_zeros();
            block_columns::<S, O>(&rows, crd, c, n_brows, |j| j >> shift)
        } else {
            block_columns::<S, O>(&rows, crd, c, n_brows, |j| j / c)
        };
        let total = (bcrd.len() as u64).saturating_mul((blk.rows * blk.cols) as u64);
        check_alloc(total, "the blocks' values")?;
        let out = scatter_blocks(&rows, crd, vals, &bpos, &bcrd, blk, pad);
        (bpos, bcrd, ScalarVec::from(out))
    });
    let (bpos, bcrd, values) = values;
    // As `finish` orders its checks: the values, then the buffers' widths.
    super::assemble::check_explicit_values(target, &values)?;
    let bpos = counting::at_width(bpos, target.pos_width, "positions[1]")?;
    let bcrd = counting::at_width(bcrd, target.crd_width, "coordinates[1]")?;
    let positions = vec![None, Some(bpos), None, None];
    let coordinates = vec![None, Some(bcrd), None, None];
    finish_stored(target, src.elem, dims, lvl_sizes, positions, coordinates, values)
}

/// The source rows of each block row, read through the CSR positions.
struct Rows<'a> {
    pos: &'a IndexBuf,
    /// Number of source rows.
    major: usize,
    /// Rows per block row (at most [`MERGE_ROWS`]).
    height: usize,
}

impl Rows<'_> {
    /// Block row `br`'s rows: entry ranges `next[t]..end[t]` for its `t`-th
    /// row; returns how many rows it has.
    #[inline]
    fn load(&self, br: usize, next: &mut [usize; MERGE_ROWS], end: &mut [usize; MERGE_ROWS]) -> usize {
        let first = br * self.height;
        let last = (first + self.height).min(self.major);
        for (t, i) in (first..last).enumerate() {
            next[t] = self.pos.get(i) as usize;
            end[t] = self.pos.get(i + 1) as usize;
        }
        last.saturating_sub(first)
    }
}

/// The attribute query of the merge path: each block row's block columns,
/// in increasing order, merged from its sorted rows (`c` columns per
/// block, `block_of(j)` = `j / c`); returns the block rows' positions and
/// the block columns.
fn block_columns<S: Idx, O: Idx>(
    rows: &Rows,
    crd: &[S],
    c: usize,
    n_brows: usize,
    block_of: impl Fn(usize) -> usize,
) -> (Vec<O>, Vec<O>) {
    let mut bpos = Vec::with_capacity(n_brows + 1);
    bpos.push(O::of(0));
    let mut bcrd = Vec::new();
    let (mut next, mut end) = ([0usize; MERGE_ROWS], [0usize; MERGE_ROWS]);
    for br in 0..n_brows {
        let height = rows.load(br, &mut next, &mut end);
        loop {
            // The next block column: the one holding the smallest next column.
            let mut least = usize::MAX;
            for t in 0..height {
                if next[t] < end[t] {
                    least = least.min(crd[next[t]].at());
                }
            }
            if least == usize::MAX {
                break;
            }
            let bc = block_of(least);
            bcrd.push(O::of(bc));
            // Past that block column's entries in every row.
            let limit = (bc + 1) * c;
            for t in 0..height {
                while next[t] < end[t] && crd[next[t]].at() < limit {
                    next[t] += 1;
                }
            }
        }
        bpos.push(O::of(bcrd.len()));
    }
    (bpos, bcrd)
}

/// The blocks' values: each block row's rows walked block by block (the
/// block columns from [`block_columns`]), each value into its place in
/// its block; the rest is `pad`.
fn scatter_blocks<S: Idx, O: Idx, T: Scalar>(
    rows: &Rows,
    crd: &[S],
    vals: &[T],
    bpos: &[O],
    bcrd: &[O],
    blk: &Blocks,
    pad: T,
) -> Vec<T> {
    let (r, c) = (blk.rows, blk.cols);
    let size = r * c;
    let mut out = vec![pad; bcrd.len() * size];
    let (mut next, mut end) = ([0usize; MERGE_ROWS], [0usize; MERGE_ROWS]);
    for br in 0..bpos.len() - 1 {
        let height = rows.load(br, &mut next, &mut end);
        for k in bpos[br].at()..bpos[br + 1].at() {
            let col0 = bcrd[k].at() * c;
            let block = &mut out[k * size..(k + 1) * size];
            for t in 0..height {
                while next[t] < end[t] {
                    let j = crd[next[t]].at().wrapping_sub(col0);
                    if j >= c {
                        break;
                    }
                    let within = if blk.row_major { t * c + j } else { j * r + t };
                    block[within] = vals[next[t]];
                    next[t] += 1;
                }
            }
        }
    }
    out
}

/// The marking path (tall blocks, or unsorted rows): the block rows'
/// positions, the block columns and the blocks' values.
fn fill<S: Idx, T: Scalar>(
    pos: &IndexBuf,
    crd: &[S],
    vals: &[T],
    major: usize,
    blk: &Blocks,
    lvl_sizes: &[u64],
    pad: T,
) -> Result<(Vec<u64>, Vec<u64>, Vec<T>)> {
    let (r, c) = (blk.rows, blk.cols);
    let size = r * c;
    let (n_brows, n_bcols) = (lvl_sizes[0] as usize, lvl_sizes[1] as usize);
    let rows_of = |br: usize| (pos.get(br * r) as usize, pos.get(((br + 1) * r).min(major)) as usize);
    // slot[bc]: 1 + the number of block column bc's block in the current
    // block row; a value at most the number of blocks before this block row
    // means it has none there (yet).
    let mut slot = vec![0u64; n_bcols];
    // Attribute query: the blocks of each block row, counted, so the
    // coordinates and values are allocated once (the values as zeroed
    // memory when the padding is 0).
    let mut bpos = Vec::with_capacity(n_brows + 1);
    bpos.push(0u64);
    let mut blocks = 0u64;
    for br in 0..n_brows {
        let (s, e) = rows_of(br);
        let first = blocks;
        for &j in &crd[s..e] {
            let bc = j.at() / c;
            if slot[bc] <= first {
                blocks += 1;
                slot[bc] = blocks;
            }
        }
        bpos.push(blocks);
    }
    let total = blocks.saturating_mul(size as u64);
    check_alloc(total, "the blocks' values")?;
    let mut bcrd = vec![0u64; blocks as usize];
    let mut out = vec![pad; total as usize];
    slot.fill(0);
    for br in 0..n_brows {
        let (s, e) = rows_of(br);
        let (first, last) = (bpos[br] as usize, bpos[br + 1] as usize);
        // This block row's block columns, sorted, number its blocks.
        let row_blocks = &mut bcrd[first..last];
        let mut k = 0;
        for &j in &crd[s..e] {
            let bc = j.at() / c;
            if slot[bc] <= first as u64 {
                slot[bc] = u64::MAX;
                row_blocks[k] = bc as u64;
                k += 1;
            }
        }
        row_blocks.sort_unstable();
        for (k, &bc) in row_blocks.iter().enumerate() {
            slot[bc as usize] = (first + k + 1) as u64;
        }
        let r0 = br * r;
        let mut p = s;
        for i in r0..((br + 1) * r).min(major) {
            let end = pos.get(i + 1) as usize;
            for (j, &v) in crd[p..end].iter().zip(&vals[p..end]) {
                let j = j.at();
                let block = (slot[j / c] - 1) as usize;
                let within = if blk.row_major { (i - r0) * c + j % c } else { (j % c) * r + (i - r0) };
                out[block * size + within] = v;
            }
            p = end;
        }
    }
    Ok((bpos, bcrd, out))
}

//! CSR → ELL directly on the buffers, without sorting the entries.
//!
//! ELL (`[c](i, j) -> (c * K * i : dense, i : dense, j : compressed)`)
//! stores slice `k` of row `i` as the row's `k`-th entry (the counter of
//! Chou et al.): slice-major, a compressed level of at most one entry per
//! (slice, row). The attribute query is the row lengths, which CSR's
//! positions already hold: they size every slice's positions, and row `i`'s
//! `k`-th entry is CSR's position `pos[i] + k`, so each slice is one gather.

use super::build::{check_storage_size, finish};
use super::csr::csr_like;
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use heddle_ir::encoding::{Encoding, LevelFormat, LvlExpr, map};

/// CSR or CSC `src` (rows `a`, stored coordinate `b`) stored in `(c * K * a
/// : dense, a : dense, b : compressed)`; `None` when the encodings are not
/// of these shapes.
pub(crate) fn csr_to_ell(src: &SparseTensor, target: &Encoding) -> Result<Option<SparseTensor>> {
    let Some((a, b)) = csr_like(&src.encoding) else { return Ok(None) };
    let ([l0, l1, l2], 2) = (target.levels.as_slice(), target.dim_rank()) else { return Ok(None) };
    let (LvlExpr::Counter { dim, slices }, LvlExpr::Dim(row), LvlExpr::Dim(col)) = (l0.expr, l1.expr, l2.expr) else {
        return Ok(None);
    };
    if (dim, row, col) != (a, a, b)
        || l0.format != LevelFormat::Dense
        || l1.format != LevelFormat::Dense
        || l2.format != LevelFormat::Compressed
        || l2.props.nonunique
        || target.dims.iter().any(|d| d.slice.is_some())
    {
        return Ok(None);
    }
    let Some(pos) = &src.positions[1] else { return Ok(None) };
    let dims = src.dim_sizes.clone();
    let lvl_sizes = map::lvl_sizes(target, &dims).map_err(SparseError::Shape)?;
    check_storage_size(target, &lvl_sizes, src.nse() as u64, None)?;
    let rows = src.lvl_sizes[0] as usize;
    let len = |i: usize| pos.get(i + 1) - pos.get(i);
    // A row longer than the slices: the first, as the general path reports it.
    if let Some(i) = (0..rows).find(|&i| len(i) > slices) {
        return Err(SparseError::Shape(format!(
            "coordinate {i} of dimension `{}` has more than {slices} entries, the number of ELL slices",
            target.dims[a].name
        )));
    }
    // Slice k, row i holds CSR position pos[i] + k when the row is that long.
    let mut epos = Vec::with_capacity(slices as usize * rows + 1);
    epos.push(0u64);
    let mut from = Vec::with_capacity(src.nse());
    for k in 0..slices {
        for i in 0..rows {
            if len(i) > k {
                from.push((pos.get(i) + k) as usize);
            }
            epos.push(from.len() as u64);
        }
    }
    let crd =
        src.coordinates[1].as_ref().map(|c| from.iter().map(|&p| c.get(p)).collect::<Vec<u64>>()).unwrap_or_default();
    let values = src.values.gather(&from);
    finish(target, src.elem, dims, lvl_sizes, vec![None, None, Some(epos)], vec![None, None, Some(crd)], values)
        .map(Some)
}

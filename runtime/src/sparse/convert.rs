//! `convert`: any encoding to any encoding, dense included.
//!
//! The general path reads the source's entries as dimension coordinates and
//! assembles the target ([`super::build::pack`]): a sort in the target's
//! level order, then level-by-level assembly. Targets shaped like CSR or CSC
//! take the counting-sort path instead, which also makes CSR ↔ CSC a
//! transpose without comparisons, and dense → CSR a single scan (the dense
//! tensor's nonzeros arrive already in row order). CSR or CSC → DIA marks
//! the non-empty diagonals and scatters the values, without a sort; CSR or
//! CSC → BSR gathers each block row's blocks and scatters the values into
//! them ([`super::blocked`]); CSR → ELL gathers each slice from the rows
//! ([`super::ell`]).

use super::buffer::IndexBuf;
use super::build::{finish, finish_stored, pack};
use super::counting::{self, Idx};
use super::csr::csr_like;
use super::dense::DenseTensor;
use super::error::Result;
use super::error::SparseError;
use super::tensor::SparseTensor;
use crate::scalars::{Scalar, ScalarVec};
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat, LvlExpr, map};

/// Stores the tensor `src` denotes in `target`.
///
/// The stored entries are kept and the absent ones take the target's
/// `implicitVal`, so where the two encodings' implicit values differ the
/// tensor would change. Then the tensor is materialised if one side stores
/// every coordinate (all its levels dense: a dense source's every slot is
/// an entry, a dense target gives every coordinate a slot): through the
/// dense tensor, whose absent entries hold the source's implicit value.
/// Otherwise the conversion is refused: materialising the source's absent
/// entries into a sparse target would store every coordinate.
pub fn convert(src: &SparseTensor, target: &Encoding) -> Result<SparseTensor> {
    if let Err(differ) = super::assemble::check_same_implicit(&src.encoding, target) {
        if stores_every_coordinate(&src.encoding) || stores_every_coordinate(target) {
            return from_dense(&to_dense(src)?, target, src.elem);
        }
        return Err(differ);
    }
    if let (Some((a, b)), Some((ta, tb))) = (csr_like(&src.encoding), csr_like(target))
        && (ta, tb) == (b, a)
    {
        return transpose(src, target);
    }
    if let Some(t) = csr_to_dia(src, target)? {
        return Ok(t);
    }
    if let Some(t) = super::blocked::csr_to_bsr(src, target)? {
        return Ok(t);
    }
    if let Some(t) = super::ell::csr_to_ell(src, target)? {
        return Ok(t);
    }
    pack(&src.to_coo(), target, src.elem)
}

/// CSR or CSC → DIA (a difference level `a - b`, compressed, over a dense
/// level of `a` or `b`) on the buffers, in Chou et al.'s phases without a
/// sort: the attribute query marks the non-empty diagonals (one pass over
/// the coordinates), their prefix count numbers them, and one more pass
/// scatters each value to its diagonal's row (or column) slot; the rest is
/// the implicit value. Stored explicit zeros count, as on the general path.
/// `None` when the encodings are not of these shapes.
fn csr_to_dia(src: &SparseTensor, target: &Encoding) -> Result<Option<SparseTensor>> {
    let Some((a, b)) = csr_like(&src.encoding) else { return Ok(None) };
    let (Some(pos), Some(crd)) = (&src.positions[1], &src.coordinates[1]) else { return Ok(None) };
    let ([l0, l1], 2) = (target.levels.as_slice(), target.dim_rank()) else { return Ok(None) };
    let (LvlExpr::Diff { plus, minus }, LvlExpr::Dim(d)) = (l0.expr, l1.expr) else { return Ok(None) };
    if l0.format != LevelFormat::Compressed
        || l0.props.nonunique
        || l1.format != LevelFormat::Dense
        || target.dims.iter().any(|x| x.slice.is_some())
        || src.nse() == 0
    {
        return Ok(None);
    }
    let dims = src.dim_sizes.clone();
    let lvl_sizes = map::lvl_sizes(target, &dims).map_err(SparseError::Shape)?;
    let bias = map::diff_bias(target, &dims);
    let (len, n_offsets) = (lvl_sizes[1] as usize, lvl_sizes[0] as usize);
    let major = src.lvl_sizes[0] as usize;
    // Phase 1: which diagonals hold an entry (internal coordinate k = x[plus] + bias - x[minus]).
    super::build::check_alloc(n_offsets as u64, "the diagonals")?;
    let mut diag = vec![u32::MAX; n_offsets];
    let mut x = [0u64; 2];
    let slot = |x: &[u64; 2]| (x[plus] + bias - x[minus]) as usize;
    for r in 0..major {
        x[a] = r as u64;
        for p in pos.get(r) as usize..pos.get(r + 1) as usize {
            x[b] = crd.get(p);
            diag[slot(&x)] = 0;
        }
    }
    // Phase 2: number the non-empty diagonals in offset order.
    let mut offsets = Vec::new();
    for (k, e) in diag.iter_mut().enumerate() {
        if *e == 0 {
            *e = offsets.len() as u32;
            offsets.push(k as u64);
        }
    }
    let total = (offsets.len() as u64).saturating_mul(len as u64);
    super::build::check_alloc(total, "the diagonals' values")?;
    // Phase 3: each value to its slot; the padding is the implicit value.
    let implicit = super::assemble::implicit_value(target);
    let values = crate::with_values!(&src.values, vals => {
        let pad = Scalar::from_num(implicit)
            .ok_or_else(|| SparseError::Shape(format!("the encoding's implicitVal {implicit} is not a {}", src.elem.keyword())))?;
        let mut out = vec![pad; total as usize];
        for r in 0..major {
            x[a] = r as u64;
            for p in pos.get(r) as usize..pos.get(r + 1) as usize {
                x[b] = crd.get(p);
                out[diag[slot(&x)] as usize * len + x[d] as usize] = vals[p];
            }
        }
        ScalarVec::from(out)
    });
    let n = offsets.len() as u64;
    finish(target, src.elem, dims, lvl_sizes, vec![Some(vec![0, n]), None], vec![Some(offsets), None], values).map(Some)
}

/// CSR → CSC (or back) directly on the buffers: a counting sort of the
/// coordinates ([`counting::scatter_transpose`]). Rows are visited in
/// order, so every output segment comes out sorted; explicit zeros are
/// kept, as any compressed → compressed path does.
pub(crate) fn transpose(src: &SparseTensor, target: &Encoding) -> Result<SparseTensor> {
    let (Some(pos), Some(crd)) = (&src.positions[1], &src.coordinates[1]) else {
        return pack(&src.to_coo(), target, src.elem);
    };
    super::build::check_alloc(src.lvl_sizes[1], "the positions buffer")?;
    if counting::narrow(src.nse(), src.lvl_sizes[0]) {
        transpose_at::<u32>(src, target, pos, crd)
    } else {
        transpose_at::<u64>(src, target, pos, crd)
    }
}

fn transpose_at<I: Idx>(src: &SparseTensor, target: &Encoding, pos: &IndexBuf, crd: &IndexBuf) -> Result<SparseTensor> {
    let s: counting::Scattered<I> = match crd {
        IndexBuf::U32(c) => counting::scatter_transpose(src, pos, c),
        IndexBuf::U64(c) => counting::scatter_transpose(src, pos, c),
        other => counting::scatter_transpose(src, pos, &other.to_u64()),
    };
    let tpos = counting::at_width(s.pos, target.pos_width, "positions[1]")?;
    let tcrd = counting::at_width(s.crd, target.crd_width, "coordinates[1]")?;
    let lvl_sizes = vec![src.lvl_sizes[1], src.lvl_sizes[0]];
    finish_stored(
        target,
        src.elem,
        src.dim_sizes.clone(),
        lvl_sizes,
        vec![None, Some(tpos)],
        vec![None, Some(tcrd)],
        s.vals,
    )
}

/// Does `enc` give every coordinate a slot (every level dense, no slices:
/// a slice stores a window)?
pub(crate) fn stores_every_coordinate(enc: &Encoding) -> bool {
    enc.dims.iter().all(|d| d.slice.is_none())
        && super::batch::batch_rank(enc) == 0
        && enc.levels.iter().all(|l| l.format == LevelFormat::Dense)
}

/// Stores a dense tensor in `target` (its zeros are not stored, except where
/// the target's dense levels or n:m blocks require them).
/// The values equal to the target's implicit value are not stored.
pub fn from_dense(d: &DenseTensor, target: &Encoding, elem: ScalarType) -> Result<SparseTensor> {
    pack(&d.to_coo_without(super::assemble::implicit_value(target)), target, elem)
}

/// The dense tensor `src` denotes: its absent entries are its encoding's
/// implicit value.
pub fn to_dense(src: &SparseTensor) -> Result<DenseTensor> {
    DenseTensor::from_coo_filled(&src.to_coo(), super::assemble::implicit_value(&src.encoding))
}

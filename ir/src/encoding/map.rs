//! The dimension → level map on concrete coordinates and sizes.
//!
//! These are the functions both the type bridge and the runtime need: level
//! sizes from dimension sizes, and the map and its inverse on one entry's
//! coordinates. The ELL counter is the one level coordinate that is not a
//! function of the entry alone; callers supply it.

use super::{Encoding, LvlExpr};

/// The size of every level for the given dimension sizes, or a message
/// saying which dimension does not divide into its blocks.
pub fn lvl_sizes(enc: &Encoding, dim_sizes: &[u64]) -> Result<Vec<u64>, String> {
    if dim_sizes.len() != enc.dim_rank() {
        return Err(format!("the encoding has {} dimensions but the tensor has {}", enc.dim_rank(), dim_sizes.len()));
    }
    enc.levels
        .iter()
        .map(|l| match l.expr {
            LvlExpr::Dim(d) => Ok(dim_sizes[d]),
            LvlExpr::FloorDiv(d, k) => {
                if !dim_sizes[d].is_multiple_of(k) {
                    Err(format!(
                        "dimension {d} (`{}`) has size {}, which is not a multiple of its block size {k}",
                        enc.dims[d].name, dim_sizes[d]
                    ))
                } else {
                    Ok(dim_sizes[d] / k)
                }
            }
            LvlExpr::Mod(_, k) => Ok(k),
            LvlExpr::Counter { slices, .. } => Ok(slices),
        })
        .collect()
}

/// Writes the level coordinates of the entry at `dim` into `out`; `count` is
/// the entry's ELL counter (its rank among the stored entries sharing the
/// counted dimension's coordinate), ignored when there is no counting level.
pub fn dim_to_lvl(enc: &Encoding, dim: &[u64], count: u64, out: &mut [u64]) {
    for (o, l) in out.iter_mut().zip(&enc.levels) {
        *o = match l.expr {
            LvlExpr::Dim(d) => dim[d],
            LvlExpr::FloorDiv(d, k) => dim[d] / k,
            LvlExpr::Mod(d, k) => dim[d] % k,
            LvlExpr::Counter { .. } => count,
        };
    }
}

/// Writes the dimension coordinates of the entry at level coordinates `lvl`
/// into `out` (the map is invertible by [`super::verify`]'s rules).
pub fn lvl_to_dim(enc: &Encoding, lvl: &[u64], out: &mut [u64]) {
    out.iter_mut().for_each(|o| *o = 0);
    for (c, l) in lvl.iter().zip(&enc.levels) {
        match l.expr {
            LvlExpr::Dim(d) | LvlExpr::Mod(d, _) => out[d] += c,
            LvlExpr::FloorDiv(d, k) => out[d] += c * k,
            LvlExpr::Counter { .. } => {}
        }
    }
}

/// The level holding the ELL counter, if any.
pub fn counter_level(enc: &Encoding) -> Option<(usize, usize)> {
    enc.levels.iter().enumerate().find_map(|(l, lv)| match lv.expr {
        LvlExpr::Counter { dim, .. } => Some((l, dim)),
        _ => None,
    })
}

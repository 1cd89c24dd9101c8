//! The dimension → level map on concrete coordinates and sizes.
//!
//! These are the functions both the type bridge and the runtime need: level
//! sizes from dimension sizes, and the map and its inverse on one entry's
//! coordinates. The ELL counter is the one level coordinate that is not a
//! function of the entry alone; callers supply it.
//!
//! A difference level (DIA's offset `a - b`, [`LvlExpr::Diff`]) is signed in
//! storage; here, as everywhere in the runtime's level-coordinate world
//! (sorting, ranges, assembly), it is the unsigned `a - b + bias` with
//! `bias = size_b - 1`, in `0 .. size_a + size_b - 1`, which orders the
//! offsets as signed numbers. [`stored_offset`] and [`offset_level`] convert
//! between the two at the buffers.

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
            LvlExpr::Diff { plus, minus } => Ok(diff_size(dim_sizes[plus], dim_sizes[minus])),
        })
        .collect()
}

/// The number of offsets `a - b` can take: `size_a + size_b - 1` (0 when either is empty).
pub fn diff_size(a: u64, b: u64) -> u64 {
    if a == 0 || b == 0 { 0 } else { a.saturating_add(b - 1) }
}

/// The bias of the difference level's internal coordinate: `size_b - 1`
/// for `a - b` (0 when the encoding has no difference level).
pub fn diff_bias(enc: &Encoding, dim_sizes: &[u64]) -> u64 {
    enc.diff_level().map_or(0, |(_, _, minus)| dim_sizes.get(minus).map_or(0, |s| s.saturating_sub(1)))
}

/// The signed offset stored for the internal coordinate `c` (see the module notes).
pub fn stored_offset(c: u64, bias: u64) -> i64 {
    (c as i64).wrapping_sub(bias as i64)
}

/// The internal coordinate of the stored offset `v`, or `None` when it is
/// below the smallest offset (`-(size_b - 1)`); the caller checks the top
/// against the level's size.
pub fn offset_level(v: i64, bias: u64) -> Option<u64> {
    let c = i128::from(v) + i128::from(bias);
    u64::try_from(c).ok()
}

/// Writes the level coordinates of the entry at `dim` into `out`; `count` is
/// the entry's ELL counter (its rank among the stored entries sharing the
/// counted dimension's coordinate), ignored when there is no counting level.
/// `bias` is [`diff_bias`] (0 without a difference level).
pub fn dim_to_lvl(enc: &Encoding, dim: &[u64], count: u64, bias: u64, out: &mut [u64]) {
    for (o, l) in out.iter_mut().zip(&enc.levels) {
        *o = match l.expr {
            LvlExpr::Dim(d) => dim[d],
            LvlExpr::FloorDiv(d, k) => dim[d] / k,
            LvlExpr::Mod(d, k) => dim[d] % k,
            LvlExpr::Counter { .. } => count,
            // Exact wherever the level's size (`size_a + size_b - 1`) fits a
            // u64; past it (a file's dimensions near 2^64) wrapped rather
            // than overflowed: no storage of such a level can be formed, and
            // the size checks refuse it.
            LvlExpr::Diff { plus, minus } => dim[plus].wrapping_add(bias).wrapping_sub(dim[minus]),
        };
    }
}

/// Writes the dimension coordinates of the entry at level coordinates `lvl`
/// into `out` (the map is invertible by [`super::verify`]'s rules).
/// Returns false when the entry lies outside `dim_sizes`, which only a
/// difference level's padding can reach (DIA's positions past the matrix's
/// edge: not entries); `bias` is [`diff_bias`].
pub fn lvl_to_dim(enc: &Encoding, dim_sizes: &[u64], bias: u64, lvl: &[u64], out: &mut [u64]) -> bool {
    out.iter_mut().for_each(|o| *o = 0);
    let mut diff = None;
    for (&c, l) in lvl.iter().zip(&enc.levels) {
        match l.expr {
            LvlExpr::Dim(d) | LvlExpr::Mod(d, _) => out[d] += c,
            LvlExpr::FloorDiv(d, k) => out[d] += c * k,
            LvlExpr::Counter { .. } => {}
            LvlExpr::Diff { plus, minus } => diff = Some((c, plus, minus)),
        }
    }
    let Some((c, plus, minus)) = diff else { return true };
    let whole = |d: usize| enc.levels.iter().any(|l| l.expr == LvlExpr::Dim(d));
    // c = a - b + bias: a = c + b - bias, b = a + bias - c.
    let (d, v) = if whole(minus) {
        (plus, (c + out[minus]).checked_sub(bias))
    } else {
        (minus, (out[plus] + bias).checked_sub(c))
    };
    match v {
        Some(v) if v < dim_sizes.get(d).copied().unwrap_or(0) => {
            out[d] = v;
            true
        }
        _ => false,
    }
}

/// The level holding the ELL counter, if any.
pub fn counter_level(enc: &Encoding) -> Option<(usize, usize)> {
    enc.levels.iter().enumerate().find_map(|(l, lv)| match lv.expr {
        LvlExpr::Counter { dim, .. } => Some((l, dim)),
        _ => None,
    })
}

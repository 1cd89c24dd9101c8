//! Assembling a computed value's storage: the host side of
//! `(e : tensor<…, #ENC>)` (see `heddle_ir::encoding::result`).
//!
//! The value's entries arrive in storage order — the elements of its one
//! list, row-major over the dense levels above it — from the interpreter
//! (walking the value) or from compiled code (the fill kernel's buffers). The
//! *attribute query* of Chou et al. needs only how many entries each dense
//! position holds (`counts`): from it this module computes every level's
//! positions and the coordinates of the dense levels stored compressed (the
//! positions that have an entry below them: DCSR's non-empty rows), so both
//! paths share one assembly, and [`assemble`] validates the result either way.

use super::assemble::{Buffers, assemble};
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use crate::scalars::{Num, ScalarVec};
use heddle_ir::encoding::LevelFormat;
use heddle_ir::encoding::result::{ResultPlan, Store};

/// A result's entries in storage order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entries {
    /// For each level of [`ResultPlan::entry_levels`], in that order, the
    /// coordinate of every entry.
    pub coordinates: Vec<Vec<u64>>,
    /// The values, [`ResultPlan::block_len`] per entry, of the plan's element type.
    pub values: ScalarVec,
}

/// The storage of a result: `dims` are the dimension sizes, `dense` the
/// lengths of the dense levels above the list (every level's when there is
/// no list), `counts` the list's length at each dense position in row-major
/// order (one entry per position when there is no list).
pub fn assemble_result(
    plan: &ResultPlan,
    dims: Vec<u64>,
    dense: &[usize],
    counts: &[u64],
    entries: Entries,
) -> Result<SparseTensor> {
    let enc = &plan.encoding;
    let positions_total: usize = dense.iter().product();
    if counts.len() != positions_total {
        return Err(SparseError::Shape(format!("{} counts for {positions_total} dense positions", counts.len())));
    }
    // An n:m list level: every block (list) padded to exactly n entries.
    let padded_counts;
    let mut counts = counts;
    let entries = match plan.n_out_of_m() {
        Some((l, n, m)) => {
            let (c, e) = pad_blocks(plan, l, n, m, counts, entries)?;
            padded_counts = c;
            counts = &padded_counts;
            e
        }
        None => match plan.banded() {
            // A skyline: each row's list filled from its first column through the diagonal.
            Some(l) => {
                let cols = heddle_ir::encoding::map::lvl_sizes(enc, &dims)
                    .map_err(SparseError::Shape)?
                    .get(l)
                    .copied()
                    .unwrap_or(0);
                let (c, e) = fill_skyline(plan, l, cols, counts, entries)?;
                padded_counts = c;
                counts = &padded_counts;
                e
            }
            None => entries,
        },
    };
    // Entries below each node of each dense level: totals[l][g] for node g
    // of the first l dense levels (row-major); totals[dense.len()] = counts.
    let a = dense.len();
    let mut totals: Vec<Vec<u64>> = vec![Vec::new(); a + 1];
    totals[a] = counts.to_vec();
    for l in (0..a).rev() {
        let (nodes, n): (usize, usize) = (dense[..l].iter().product(), dense[l]);
        totals[l] = (0..nodes).map(|g| totals[l + 1][g * n..(g + 1) * n].iter().sum()).collect();
    }
    let lr = enc.lvl_rank();
    let mut positions: Vec<Option<Vec<u64>>> = vec![None; lr];
    let mut coordinates: Vec<Option<Vec<u64>>> = vec![None; lr];
    // The stored nodes of the current level: (storage position, dense node index).
    let mut parents: Vec<(u64, usize)> = vec![(0, 0)];
    let loose = |l: usize| enc.levels[l].format == LevelFormat::LooseCompressed;
    let mut per_entry_from = None;
    for (l, &n) in dense.iter().enumerate() {
        match plan.levels[l].store {
            Store::Dense => {
                parents = parents
                    .iter()
                    .flat_map(|&(q, g)| (0..n).map(move |i| (q * n as u64 + i as u64, g * n + i)))
                    .collect();
            }
            Store::Compress => {
                let (mut pos, mut crd, mut next) = (vec![0u64], Vec::new(), Vec::new());
                if loose(l) {
                    pos.clear();
                }
                for &(_, g) in &parents {
                    let lo = crd.len() as u64;
                    for i in 0..n {
                        if totals[l + 1][g * n + i] > 0 {
                            next.push((crd.len() as u64, g * n + i));
                            crd.push(i as u64);
                        }
                    }
                    if loose(l) {
                        pos.push(lo);
                    }
                    pos.push(crd.len() as u64);
                }
                positions[l] = Some(pos);
                coordinates[l] = Some(crd);
                parents = next;
            }
            Store::PerEntry | Store::Nodes => {
                per_entry_from = Some(l);
                break;
            }
        }
    }
    // Positions of the level that starts storing entries: a per-entry group's
    // first level, or the list.
    let first = per_entry_from.or_else(|| plan.list_level());
    if let Some(l) = first
        && enc.levels[l].format.has_positions()
    {
        let depth = l.min(dense.len());
        let mut pos = Vec::with_capacity(parents.len() + 1);
        let mut at = 0u64;
        if !loose(l) {
            pos.push(0);
        }
        for &(_, g) in &parents {
            if loose(l) {
                pos.push(at);
            }
            at += totals[depth][g];
            pos.push(at);
        }
        positions[l] = Some(pos);
    }
    // The entries' coordinates; an array-of-structs run interleaved at its first level.
    let entry_levels = plan.entry_levels();
    if entries.coordinates.len() != entry_levels.len() {
        return Err(SparseError::Shape(format!(
            "coordinates for {} levels, the plan stores {}",
            entries.coordinates.len(),
            entry_levels.len()
        )));
    }
    let nse = counts.iter().sum::<u64>() as usize;
    for (k, &l) in entry_levels.iter().enumerate() {
        if entries.coordinates[k].len() != nse {
            return Err(SparseError::Shape(format!(
                "{} coordinates at level {l} for {nse} entries",
                entries.coordinates[k].len()
            )));
        }
        // A banded level's coordinates are implicit (row i's k-th of len is i + 1 - len + k).
        if enc.in_aos_buffer(l) || enc.levels[l].format == LevelFormat::Banded {
            continue;
        }
        match enc.aos_run(l) {
            Some(run) => {
                let cols: Vec<&Vec<u64>> = run
                    .clone()
                    .map(|m| &entries.coordinates[entry_levels.iter().position(|&x| x == m).unwrap_or(k)])
                    .collect();
                let mut buf = Vec::with_capacity(nse * cols.len());
                for p in 0..nse {
                    buf.extend(cols.iter().map(|c| c[p]));
                }
                coordinates[l] = Some(buf);
            }
            None => coordinates[l] = Some(entries.coordinates[k].clone()),
        }
    }
    let buffers = Buffers { positions, coordinates, values: entries.values };
    if super::batch::batch_rank(enc) > 0 {
        // Counted and filled with the batch levels as dense ones (one list over
        // all batches); stored then as MLIR stores batches, one row each.
        let mut flat = enc.clone();
        for level in flat.levels.iter_mut().filter(|l| l.format == LevelFormat::Batch) {
            level.format = LevelFormat::Dense;
        }
        let t = assemble(&flat, plan.elem, dims, buffers)?;
        return super::batch::pack_batched(&t.to_coo(), enc, plan.elem);
    }
    assemble(enc, plan.elem, dims, buffers)
}

/// The lists of an n:m level `l` padded to `n` entries each, as
/// `heddle convert` stores a block with fewer: the smallest coordinates the
/// block does not hold, with the implicit value (zero), all in coordinate
/// order. A list longer than `n` is an error (its entries do not fit).
fn pad_blocks(
    plan: &ResultPlan,
    l: usize,
    n: u32,
    m: u32,
    counts: &[u64],
    entries: Entries,
) -> Result<(Vec<u64>, Entries)> {
    let entry_levels = plan.entry_levels();
    let k = entry_levels
        .iter()
        .position(|&x| x == l)
        .ok_or_else(|| SparseError::Shape(format!("level {l} stores no coordinates")))?;
    let nse: usize = counts.iter().sum::<u64>() as usize;
    let block = entries.values.len().checked_div(nse).unwrap_or(1);
    if entries.coordinates.iter().any(|c| c.len() != nse) || entries.values.len() != nse * block {
        return Err(SparseError::Shape(format!("{} values and coordinates for {nse} entries", entries.values.len())));
    }
    let pad = super::assemble::implicit_value(&plan.encoding);
    let n = n as usize;
    let mut out = Entries {
        coordinates: vec![Vec::with_capacity(counts.len() * n); entry_levels.len()],
        values: ScalarVec::with_capacity(plan.elem, counts.len() * n * block),
    };
    let mut at = 0usize;
    for (b, &c) in counts.iter().enumerate() {
        let c = c as usize;
        if c > n {
            return Err(SparseError::Shape(format!(
                "block {b} of level {l} has {c} entries; {n}:{m} sparsity stores at most {n}"
            )));
        }
        let held: Vec<u64> = entries.coordinates[k][at..at + c].to_vec();
        // (coordinate, the entry it comes from; None: padding), in coordinate order.
        let mut slots: Vec<(u64, Option<usize>)> = held.iter().enumerate().map(|(i, &x)| (x, Some(at + i))).collect();
        slots.extend((0..u64::from(m)).filter(|x| !held.contains(x)).take(n - c).map(|x| (x, None)));
        slots.sort_by_key(|s| s.0);
        for (x, from) in slots {
            push_slot(&mut out, &entries, k, x, from, block, pad, plan)?;
        }
        at += c;
    }
    Ok((vec![n as u64; counts.len()], out))
}

/// The rows of a banded (skyline) level `l` as it stores them: row `q`'s
/// list (strictly increasing columns, checked as the value was stored)
/// becomes every column from its first entry through the diagonal `q`, the
/// columns it does not hold given the implicit value (zero), as `heddle
/// convert` stores a skyline. An entry above the diagonal, or an entry in a
/// row whose diagonal is outside the columns, is an error.
fn fill_skyline(
    plan: &ResultPlan,
    l: usize,
    cols: u64,
    counts: &[u64],
    entries: Entries,
) -> Result<(Vec<u64>, Entries)> {
    let entry_levels = plan.entry_levels();
    let k = entry_levels
        .iter()
        .position(|&x| x == l)
        .ok_or_else(|| SparseError::Shape(format!("level {l} stores no coordinates")))?;
    let nse: usize = counts.iter().sum::<u64>() as usize;
    let block = entries.values.len().checked_div(nse).unwrap_or(1);
    if entries.coordinates.iter().any(|c| c.len() != nse) || entries.values.len() != nse * block {
        return Err(SparseError::Shape(format!("{} values and coordinates for {nse} entries", entries.values.len())));
    }
    let pad = super::assemble::implicit_value(&plan.encoding);
    let mut filled = Vec::with_capacity(counts.len());
    let mut stored = 0u64;
    let mut at = 0usize;
    // First the rows' lengths, checked, so a bad row fails before anything is allocated.
    for (q, &c) in counts.iter().enumerate() {
        let q = q as u64;
        let held = &entries.coordinates[k][at..at + c as usize];
        let len = match (held.first(), held.last()) {
            (Some(&first), Some(&last)) => {
                if last > q {
                    return Err(SparseError::Shape(plan.encoding.skyline_off_triangle(q, last)));
                }
                if q >= cols {
                    return Err(SparseError::Shape(plan.encoding.skyline_outside(q, cols)));
                }
                q + 1 - first
            }
            _ => 0,
        };
        stored = stored.checked_add(len).ok_or_else(|| SparseError::Shape("the skyline's length overflows".into()))?;
        filled.push(len);
        at += c as usize;
    }
    super::build::check_alloc(stored, "the banded level of the stored result")?;
    let stored = stored as usize;
    let mut out = Entries {
        coordinates: vec![Vec::with_capacity(stored); entry_levels.len()],
        values: ScalarVec::with_capacity(plan.elem, stored * block),
    };
    let mut at = 0usize;
    for (q, (&c, &len)) in counts.iter().zip(&filled).enumerate() {
        let c = c as usize;
        let first = q as u64 + 1 - len;
        let mut e = at;
        for x in first..first + len {
            let from = (e < at + c && entries.coordinates[k][e] == x).then_some(e);
            push_slot(&mut out, &entries, k, x, from, block, pad, plan)?;
            if from.is_some() {
                e += 1;
            }
        }
        at += c;
    }
    Ok((filled, out))
}

/// Appends one slot of a padded level to `out`: coordinate `x` at entry
/// level `k`, and the other levels' coordinates and the `block` values of
/// entry `from`; for padding (`from` None), zeros and the implicit value
/// `pad`.
#[allow(clippy::too_many_arguments)]
fn push_slot(
    out: &mut Entries,
    entries: &Entries,
    k: usize,
    x: u64,
    from: Option<usize>,
    block: usize,
    pad: Num,
    plan: &ResultPlan,
) -> Result<()> {
    for (j, crd) in out.coordinates.iter_mut().enumerate() {
        crd.push(match from {
            _ if j == k => x,
            Some(e) => entries.coordinates[j][e],
            None => 0,
        });
    }
    for v in 0..block {
        match from {
            Some(e) => out.values.push_from(&entries.values, e * block + v),
            None => {
                if !out.values.push_num(pad) {
                    return Err(SparseError::Shape(format!("the encoding's implicitVal {pad} is not a {}", plan.elem)));
                }
            }
        }
    }
    Ok(())
}

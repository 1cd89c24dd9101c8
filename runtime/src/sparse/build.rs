//! Assembly of a stored tensor from coordinates: the general conversion path.
//!
//! The three phases of Chou et al. (PLDI 2020): *coordinate remapping*
//! (dimension coordinates → level coordinates through the encoding's map,
//! including ELL's counter), *analysis* (here: one sort in level order, after
//! which every buffer's size is known before it is filled), and *level-by-level
//! assembly*: each level turns the parent positions' ranges of sorted entries
//! into its own positions, coordinates and child ranges.

use super::buffer::IndexBuf;
use super::coo::{Coo, CooColumns};
use super::csr;
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use crate::scalars::{Scalar, ScalarVec};
use crate::with_values;
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat, map};
use rayon::prelude::*;

/// Largest number of positions a level (or a dense tensor) may have: dense
/// levels multiply sizes, and a buffer sized from a file's header must not
/// abort the process on allocation. Beyond it the format is the wrong choice
/// for the data, and the conversion says so.
pub const MAX_STORED: u64 = 1 << 28;

/// An error unless `n` positions fit under [`MAX_STORED`].
pub(crate) fn check_alloc(n: u64, what: &str) -> Result<()> {
    if n > MAX_STORED {
        return Err(SparseError::Shape(format!(
            "{what} would need {n} entries, more than the {MAX_STORED} heddle allocates"
        )));
    }
    Ok(())
}

/// Stores `coo` in `enc` with values of type `elem` (converted exactly,
/// see [`ScalarVec::convert`], when the entries hold another type; a value
/// that does not fit is an error naming it). Duplicates add up unless the
/// innermost level is `nonunique`. Uses the counting-sort path for
/// CSR/CSC-like targets.
///
/// An encoding with dimension slices stores the window they select: the
/// entries at `offset + k * stride` (`k < size`) of each sliced dimension,
/// at coordinate `k`, in the encoding without its slices (what MLIR's
/// `tensor.extract_slice` denotes, copied into storage of its own).
pub fn pack(coo: &Coo, enc: &Encoding, elem: ScalarType) -> Result<SparseTensor> {
    if enc.dims.iter().any(|d| d.slice.is_some()) {
        let (window, base) = slice_window(coo, enc)?;
        return pack(&window, &base, elem);
    }
    if super::batch::batch_rank(enc) > 0 {
        return super::batch::pack_batched(coo, enc, elem);
    }
    let converted;
    let coo = if coo.elem() == elem {
        coo
    } else {
        let values =
            coo.values.clone().convert(elem).map_err(|e| SparseError::buffer("values", e.position, e.message))?;
        converted = Coo { dims: coo.dims.clone(), coords: coo.coords.clone(), values };
        &converted
    };
    // CSR-like targets check the coordinates' range in their histogram pass.
    if csr::csr_like(enc).is_some() && coo.rank() == 2 {
        let lvl_sizes = check_sizes(&coo.dims, coo.len(), enc)?;
        return csr::pack_csr_like(coo, enc, elem, &lvl_sizes);
    }
    let lvl_sizes = check_shape(coo, enc)?;
    let (lvl, vals) = remap(coo, enc)?;
    let (lvl, vals) = sort_levels(lvl, vals, &lvl_sizes, enc.sums_duplicates());
    assemble_levels(enc, elem, coo.dims.clone(), lvl_sizes, &lvl, &vals)
}

/// [`pack`] for entries kept as coordinate columns: a CSR-like target
/// reads the columns at their width (see [`csr::pack_columns_csr_like`]),
/// any other goes through the interleaved entries.
pub fn pack_columns(mut cols: CooColumns, enc: &Encoding, elem: ScalarType) -> Result<SparseTensor> {
    if csr::csr_like(enc).is_none() || cols.rank() != 2 {
        return pack(&cols.into_coo(), enc, elem);
    }
    // As `pack`: the values at `elem` first, then the sizes; the coordinates are checked by the counting sort.
    let values = std::mem::take(&mut cols.values);
    cols.values = values.convert(elem).map_err(|e| SparseError::buffer("values", e.position, e.message))?;
    let lvl_sizes = check_sizes(&cols.dims, cols.len(), enc)?;
    csr::pack_columns_csr_like(cols, enc, elem, &lvl_sizes)
}

/// The entries of `coo` inside the window `enc`'s dimension slices select,
/// at their coordinates within it, and `enc` without the slices.
fn slice_window(coo: &Coo, enc: &Encoding) -> Result<(Coo, Encoding)> {
    let rank = coo.rank();
    if enc.dim_rank() != rank {
        return Err(SparseError::Shape(format!("the encoding has {} dimensions, the tensor {rank}", enc.dim_rank())));
    }
    // (offset, size, stride) per dimension; an unsliced one is all of it.
    let mut windows = Vec::with_capacity(rank);
    for (d, dim) in enc.dims.iter().enumerate() {
        let Some(sl) = dim.slice else {
            windows.push((0, coo.dims[d], 1));
            continue;
        };
        let (Some(offset), Some(size), Some(stride)) = (sl.offset, sl.size, sl.stride) else {
            return Err(SparseError::Shape(format!(
                "dimension {d}'s slice has a dynamic (`?`) part, which only a running program could give; write its offset, size and stride as numbers"
            )));
        };
        let last = (size.max(1) - 1).checked_mul(stride).and_then(|x| x.checked_add(offset));
        if last.is_none_or(|l| l >= coo.dims[d]) {
            return Err(SparseError::Shape(format!(
                "dimension {d}'s slice (offset {offset}, size {size}, stride {stride}) reaches past the tensor's size {} there (a file holds the whole tensor; a window written by `heddle convert --to` a sliced encoding reads back from its `.json` storage)",
                coo.dims[d]
            )));
        }
        windows.push((offset, size, stride));
    }
    let mut window = Coo::of_type(windows.iter().map(|w| w.1).collect(), coo.elem());
    let mut at = vec![0u64; rank];
    'entries: for k in 0..coo.len() {
        for (d, (&c, &(offset, size, stride))) in coo.entry(k).iter().zip(&windows).enumerate() {
            if c < offset || (c - offset) % stride != 0 || (c - offset) / stride >= size {
                continue 'entries;
            }
            at[d] = (c - offset) / stride;
        }
        window.push_from(&at, &coo.values, k);
    }
    let mut base = enc.clone();
    for d in &mut base.dims {
        d.slice = None;
    }
    Ok((window, base))
}

/// Level sizes for the tensor's shape; rejects what cannot be stored.
pub(crate) fn check_shape(coo: &Coo, enc: &Encoding) -> Result<Vec<u64>> {
    let lvl_sizes = check_sizes(&coo.dims, coo.len(), enc)?;
    // One pass over the coordinates, in blocks of 64k entries per task.
    let r = coo.rank().max(1);
    const BLOCK: usize = 1 << 16;
    let bad = coo.coords.par_chunks(r * BLOCK).enumerate().find_map_first(|(b, block)| {
        block.chunks_exact(r).position(|c| c.iter().zip(&coo.dims).any(|(x, d)| x >= d)).map(|k| b * BLOCK + k)
    });
    if let Some(k) = bad {
        return Err(out_of_range(coo.entry(k), &coo.dims, k));
    }
    // DIA's storage is sized by its offsets, counted once the coordinates are known to be in range.
    if enc.diff_level().is_some() {
        check_storage_size(enc, &lvl_sizes, coo.len() as u64, distinct_offsets(coo, enc, &lvl_sizes))?;
    }
    Ok(lvl_sizes)
}

/// Level sizes for the tensor's shape, and the storage they would need
/// checked (but for DIA's, which [`check_shape`] checks once it has counted
/// the offsets); the coordinates are not looked at.
pub(crate) fn check_sizes(dims: &[u64], entries: usize, enc: &Encoding) -> Result<Vec<u64>> {
    if enc.dims.iter().any(|d| d.slice.is_some()) {
        return Err(SparseError::Shape(
            "an encoding with dimension slices describes a view into another tensor's storage; it cannot be a conversion target".into(),
        ));
    }
    let lvl_sizes = map::lvl_sizes(enc, dims).map_err(SparseError::Shape)?;
    if enc.diff_level().is_none() {
        check_storage_size(enc, &lvl_sizes, entries as u64, None)?;
    }
    Ok(lvl_sizes)
}

/// The error for entry `k`, at `coords`, which has a coordinate outside its dimension (of `dims`).
pub(crate) fn out_of_range(coords: &[u64], dims: &[u64], k: usize) -> SparseError {
    let c = coords;
    let d = (0..c.len()).find(|&d| c[d] >= dims[d]).unwrap_or(0);
    SparseError::Shape(format!("entry {k} has coordinate {} in dimension {d}, outside its size {}", c[d], dims[d]))
}

/// The number of different offsets among the entries of `coo` when `enc`
/// has a difference level (DIA): the attribute query that sizes DIA's
/// storage, so a banded matrix of a million rows is not refused for the
/// two million diagonals it could have had.
fn distinct_offsets(coo: &Coo, enc: &Encoding, lvl_sizes: &[u64]) -> Option<u64> {
    let (l, plus, minus) = enc.diff_level()?;
    let bias = map::diff_bias(enc, &coo.dims);
    let r = coo.rank();
    if lvl_sizes[l] <= MAX_STORED {
        // The level's coordinate `a + bias - b` lies below its size here.
        let key = |k: usize| coo.coords[k * r + plus] + bias - coo.coords[k * r + minus];
        let mut seen = vec![false; lvl_sizes[l] as usize];
        (0..coo.len()).for_each(|k| seen[key(k) as usize] = true);
        Some(seen.iter().filter(|&&s| s).count() as u64)
    } else {
        // The offsets `a - b` themselves: with dimensions near 2^64 the
        // biased coordinate does not fit a u64 (it overflowed).
        let key = |k: usize| i128::from(coo.coords[k * r + plus]) - i128::from(coo.coords[k * r + minus]);
        let mut keys: Vec<i128> = (0..coo.len()).map(key).collect();
        keys.par_sort_unstable();
        keys.dedup();
        Some(keys.len() as u64)
    }
}

/// Refuses, before anything is allocated, storage whose levels would hold
/// more than [`MAX_STORED`] positions in all: each dense level multiplies its
/// parent's positions by its size, a sparse level holds at most one position
/// per entry, and assembly keeps a range per position of every level (so the
/// cap is on the sum over levels, not on each level alone: 40 dense levels of
/// size 2 would otherwise pass every per-level check up to the 28th).
/// `offsets`: for a difference level, how many different offsets the
/// entries have (each parent holds at most that many).
pub(crate) fn check_storage_size(enc: &Encoding, lvl_sizes: &[u64], entries: u64, offsets: Option<u64>) -> Result<()> {
    let (mut parents, mut total) = (1u64, 0u64);
    for (level, &n) in enc.levels.iter().zip(lvl_sizes) {
        parents = match level.format {
            LevelFormat::Dense | LevelFormat::Batch => parents.saturating_mul(n),
            LevelFormat::Singleton => parents,
            LevelFormat::NOutOfM { n, .. } => parents.saturating_mul(u64::from(n)),
            // A skyline row's run is known only from its entries: checked as it is built.
            LevelFormat::Compressed | LevelFormat::LooseCompressed | LevelFormat::Banded => {
                let most = parents.saturating_mul(n).min(entries);
                match offsets {
                    Some(k) if level.expr.is_signed() => most.min(parents.saturating_mul(k)),
                    _ => most,
                }
            }
        };
        total = total.saturating_add(parents);
    }
    if total > MAX_STORED {
        let sizes: Vec<String> = lvl_sizes.iter().map(u64::to_string).collect();
        return Err(SparseError::Shape(format!(
            "storing this tensor (level sizes {}) in `{}` would need {} positions across its levels, more than the {MAX_STORED} heddle allocates",
            sizes.join("x"),
            heddle_ir::encoding::print_encoding(enc),
            if total == u64::MAX { "more than 2^64".to_string() } else { total.to_string() }
        )));
    }
    Ok(())
}

/// Phase 1: level coordinates of every entry. ELL's counter numbers the
/// entries sharing a coordinate of the counted dimension in lexicographic
/// dimension order, so the input is sorted (and summed) first when there is one.
fn remap(coo: &Coo, enc: &Encoding) -> Result<(Vec<u64>, ScalarVec)> {
    let lr = enc.lvl_rank();
    let sorted;
    let coo = match map::counter_level(enc) {
        Some(_) if !coo.is_sorted_unique() => {
            let mut c = coo.clone();
            c.sort_and_sum();
            sorted = c;
            &sorted
        }
        _ => coo,
    };
    let mut out = vec![0u64; coo.len() * lr];
    let bias = map::diff_bias(enc, &coo.dims);
    let mut counts: Vec<u64> = Vec::new();
    let counter = map::counter_level(enc);
    if let Some((_, d)) = counter {
        check_alloc(coo.dims[d], "the ELL counters")?;
        counts = vec![0; coo.dims[d] as usize];
    }
    for k in 0..coo.len() {
        let c = coo.entry(k);
        let n = match counter {
            Some((l, d)) => {
                let n = counts[c[d] as usize];
                counts[c[d] as usize] += 1;
                if n >= enc.levels.get(l).map_or(0, |_| map_slices(enc, l)) {
                    return Err(SparseError::Shape(format!(
                        "coordinate {} of dimension `{}` has more than {} entries, the number of ELL slices",
                        c[d],
                        enc.dims[d].name,
                        map_slices(enc, l)
                    )));
                }
                n
            }
            None => 0,
        };
        map::dim_to_lvl(enc, c, n, bias, &mut out[k * lr..(k + 1) * lr]);
    }
    Ok((out, coo.values.clone()))
}

fn map_slices(enc: &Encoding, l: usize) -> u64 {
    match enc.levels[l].expr {
        heddle_ir::encoding::LvlExpr::Counter { slices, .. } => slices,
        _ => 0,
    }
}

/// Phase 2: entries in lexicographic level order, duplicates summed when asked.
///
/// When the level coordinates linearize into 64 bits (the common case), each
/// entry becomes a `(key, index)` pair and rayon sorts the pairs; the index
/// breaks ties, so entries a nonunique level keeps stay in input order.
fn sort_levels(lvl: Vec<u64>, vals: ScalarVec, sizes: &[u64], sum: bool) -> (Vec<u64>, ScalarVec) {
    let lr = sizes.len();
    let n = vals.len();
    let key = |k: usize| &lvl[k * lr..(k + 1) * lr];
    let sorted = (1..n).all(|k| if sum { key(k - 1) < key(k) } else { key(k - 1) <= key(k) });
    if sorted {
        return (lvl, vals);
    }
    let linear = sizes.iter().try_fold(1u64, |a, &s| a.checked_mul(s.max(1))).is_some();
    let perm: Vec<usize> = if linear && u32::try_from(n).is_ok() {
        let mut pairs: Vec<(u64, u32)> = (0..n)
            .into_par_iter()
            .map(|k| (key(k).iter().zip(sizes).fold(0u64, |acc, (&c, &s)| acc * s.max(1) + c), k as u32))
            .collect();
        pairs.par_sort_unstable();
        pairs.into_iter().map(|(_, k)| k as usize).collect()
    } else {
        let mut perm: Vec<usize> = (0..n).collect();
        perm.par_sort_by(|&a, &b| key(a).cmp(key(b)));
        perm
    };
    let mut out_l = Vec::with_capacity(lvl.len());
    let out_v = with_values!(&vals, vals => {
        let mut out_v = Vec::with_capacity(n);
        for &k in &perm {
            if sum && !out_v.is_empty() && &out_l[out_l.len() - lr..] == key(k) {
                if let Some(v) = out_v.last_mut() {
                    *v = Scalar::add(*v, vals[k]);
                }
            } else {
                out_l.extend_from_slice(key(k));
                out_v.push(vals[k]);
            }
        }
        ScalarVec::from(out_v)
    });
    (out_l, out_v)
}

/// Phase 3: builds every level from sorted level coordinates. A parent
/// position owns the half-open range of entries below it; an empty range is a
/// position with nothing stored below (zeros in dense levels).
pub(crate) fn assemble_levels(
    enc: &Encoding,
    elem: ScalarType,
    dim_sizes: Vec<u64>,
    lvl_sizes: Vec<u64>,
    lvl: &[u64],
    vals: &ScalarVec,
) -> Result<SparseTensor> {
    let lr = enc.lvl_rank();
    let crd_of = |k: usize, l: usize| lvl[k * lr + l];
    let mut segs: Vec<(usize, usize)> = vec![(0, vals.len())];
    let mut pos_bufs: Vec<Option<Vec<u64>>> = vec![None; lr];
    let mut crd_bufs: Vec<Option<Vec<u64>>> = vec![None; lr];
    for (l, level) in enc.levels.iter().enumerate() {
        let mut next: Vec<(usize, usize)> = Vec::new();
        match level.format {
            LevelFormat::Dense | LevelFormat::Batch => {
                let n = lvl_sizes[l];
                let total = (segs.len() as u64).saturating_mul(n);
                check_alloc(total, &format!("dense level {l}"))?;
                next.reserve(total as usize);
                for &(s, e) in &segs {
                    let mut k = s;
                    for c in 0..n {
                        let start = k;
                        while k < e && crd_of(k, l) == c {
                            k += 1;
                        }
                        next.push((start, k));
                    }
                }
            }
            LevelFormat::Banded => {
                // heddle's skyline: row i (segment i, below the dense rows)
                // stores columns first ..= i, zeros between its entries.
                let mut pos = Vec::with_capacity(segs.len() + 1);
                pos.push(0u64);
                for (i, &(s, e)) in segs.iter().enumerate() {
                    let i = i as u64;
                    let mut stored = *pos.last().unwrap_or(&0);
                    if s < e {
                        let (first, last) = (crd_of(s, l), crd_of(e - 1, l));
                        if i >= lvl_sizes[l] {
                            return Err(SparseError::Shape(enc.skyline_outside(i, lvl_sizes[l])));
                        }
                        if last > i {
                            return Err(SparseError::Shape(enc.skyline_off_triangle(i, last)));
                        }
                        stored = stored.saturating_add(i + 1 - first);
                        check_alloc(stored, &format!("banded level {l}"))?;
                        let mut k = s;
                        for c in first..=i {
                            let start = k;
                            while k < e && crd_of(k, l) == c {
                                k += 1;
                            }
                            next.push((start, k));
                        }
                    }
                    pos.push(stored);
                }
                pos_bufs[l] = Some(pos);
            }
            LevelFormat::Compressed | LevelFormat::LooseCompressed => {
                let loose = level.format == LevelFormat::LooseCompressed;
                let mut pos = Vec::with_capacity(segs.len() * if loose { 2 } else { 1 } + 1);
                let mut crd = Vec::new();
                if !loose {
                    pos.push(0);
                }
                for &(s, e) in &segs {
                    if loose {
                        pos.push(crd.len() as u64);
                    }
                    let mut k = s;
                    while k < e {
                        let c = crd_of(k, l);
                        let start = k;
                        k += 1;
                        if !level.props.nonunique {
                            while k < e && crd_of(k, l) == c {
                                k += 1;
                            }
                        }
                        crd.push(c);
                        next.push((start, k));
                    }
                    pos.push(crd.len() as u64);
                }
                pos_bufs[l] = Some(pos);
                crd_bufs[l] = Some(crd);
            }
            LevelFormat::Singleton => {
                let mut crd = Vec::with_capacity(segs.len());
                for &(s, e) in &segs {
                    if e != s + 1 {
                        return Err(SparseError::Shape(format!(
                            "level {l} is a singleton, but the coordinate above it has {} entries below it",
                            e - s
                        ))
                        .with_hint_singleton());
                    }
                    crd.push(crd_of(s, l));
                    next.push((s, e));
                }
                crd_bufs[l] = Some(crd);
            }
            LevelFormat::NOutOfM { n, m, .. } => {
                let mut crd = Vec::with_capacity(segs.len() * n as usize);
                for (b, &(s, e)) in segs.iter().enumerate() {
                    if e - s > n as usize {
                        return Err(SparseError::Shape(format!(
                            "block {b} of level {l} has {} nonzeros; {n}:{m} sparsity stores at most {n}",
                            e - s
                        )));
                    }
                    // Pad with the smallest unused coordinates: explicit zeros.
                    let present: Vec<u64> = (s..e).map(|k| crd_of(k, l)).collect();
                    let mut fill = (0..u64::from(m)).filter(|c| !present.contains(c));
                    let mut chosen: Vec<(u64, (usize, usize))> = (s..e).map(|k| (crd_of(k, l), (k, k + 1))).collect();
                    while chosen.len() < n as usize {
                        let c = fill.next().unwrap_or(0);
                        chosen.push((c, (e, e)));
                    }
                    chosen.sort_by_key(|x| x.0);
                    for (c, r) in chosen {
                        crd.push(c);
                        next.push(r);
                    }
                }
                crd_bufs[l] = Some(crd);
            }
        }
        segs = next;
    }
    // An empty segment is padding: the implicit value, +0 unless the
    // encoding says otherwise (`Sum` for floats starts at -0.0); a segment's
    // sum starts from its first value, so a lone -0 stays -0.
    let implicit = super::assemble::implicit_value(enc);
    let values = with_values!(vals, vals => {
        let pad = Scalar::from_num(implicit)
            .ok_or_else(|| SparseError::Shape(format!("the encoding's implicitVal {implicit} is not a {}", vals_type(vals))))?;
        ScalarVec::from(
            segs.iter()
                .map(|&(s, e)| if s < e { vals[s + 1..e].iter().fold(vals[s], |a, &b| Scalar::add(a, b)) } else { pad })
                .collect::<Vec<_>>(),
        )
    });
    finish(enc, elem, dim_sizes, lvl_sizes, pos_bufs, crd_bufs, values)
}

fn vals_type<T: Scalar>(_: &[T]) -> ScalarType {
    T::TYPE
}

/// A tensor from buffers already at the encoding's widths (no AoS region):
/// the values converted to `elem` and checked against `explicitVal`, as
/// [`finish`] does.
pub(crate) fn finish_stored(
    enc: &Encoding,
    elem: ScalarType,
    dim_sizes: Vec<u64>,
    lvl_sizes: Vec<u64>,
    positions: Vec<Option<IndexBuf>>,
    coordinates: Vec<Option<IndexBuf>>,
    values: ScalarVec,
) -> Result<SparseTensor> {
    let values = values.convert(elem).map_err(|e| SparseError::buffer("values", e.position, e.message))?;
    super::assemble::check_explicit_values(enc, &values)?;
    Ok(SparseTensor { encoding: enc.clone(), elem, dim_sizes, lvl_sizes, positions, coordinates, values })
}

/// Narrows the buffers to the encoding's widths and interleaves AoS COO regions.
pub(crate) fn finish(
    enc: &Encoding,
    elem: ScalarType,
    dim_sizes: Vec<u64>,
    lvl_sizes: Vec<u64>,
    pos_bufs: Vec<Option<Vec<u64>>>,
    mut crd_bufs: Vec<Option<Vec<u64>>>,
    values: ScalarVec,
) -> Result<SparseTensor> {
    let lr = enc.lvl_rank();
    let values = values.convert(elem).map_err(|e| SparseError::buffer("values", e.position, e.message))?;
    super::assemble::check_explicit_values(enc, &values)?;
    for l in 0..lr {
        if let Some(run) = enc.aos_run(l) {
            let cols: Vec<Vec<u64>> = run.clone().map(|k| crd_bufs[k].take().unwrap_or_default()).collect();
            let n = cols.first().map_or(0, Vec::len);
            let mut inter = Vec::with_capacity(n * cols.len());
            for p in 0..n {
                inter.extend(cols.iter().map(|c| c.get(p).copied().unwrap_or(0)));
            }
            crd_bufs[l] = Some(inter);
        }
    }
    let mut positions = Vec::with_capacity(lr);
    let mut coordinates = Vec::with_capacity(lr);
    // A difference level's internal coordinates become signed offsets.
    let bias = map::diff_bias(enc, &dim_sizes);
    for (l, (p, c)) in pos_bufs.into_iter().zip(crd_bufs).enumerate() {
        positions.push(p.map(|v| IndexBuf::from_u64(v, enc.pos_width, &format!("positions[{l}]"))).transpose()?);
        let name = format!("coordinates[{l}]");
        coordinates.push(
            c.map(|v| {
                if enc.signed_level(l) {
                    IndexBuf::from_i64(
                        v.into_iter().map(|x| map::stored_offset(x, bias)).collect(),
                        enc.crd_width,
                        &name,
                    )
                } else {
                    IndexBuf::from_u64(v, enc.crd_width, &name)
                }
            })
            .transpose()?,
        );
    }
    Ok(SparseTensor { encoding: enc.clone(), elem, dim_sizes, lvl_sizes, positions, coordinates, values })
}

trait Hint {
    fn with_hint_singleton(self) -> Self;
}
impl Hint for SparseError {
    fn with_hint_singleton(self) -> Self {
        match self {
            SparseError::Shape(m) => SparseError::Shape(format!(
                "{m}; a singleton level stores exactly one coordinate per parent (use `compressed(nonunique)` above it for COO)"
            )),
            e => e,
        }
    }
}

//! The counting sorts behind COO → CSR / CSC and CSR ↔ CSC, with every
//! buffer at the width it is stored at.
//!
//! Chou et al.'s attribute query (the histogram of the outer coordinate)
//! sizes the positions; its prefix sum places every entry; one scatter
//! writes coordinates and values at their final places. What makes it as
//! fast as scipy's C loops is memory traffic: the histogram doubles as the
//! scatter's cursors (no copy), cursors and coordinates are 32-bit where
//! the encoding's widths and the number of entries allow (half the cache
//! footprint of 64-bit ones: a million rows' cursors fit in L2), the values
//! move once at their own type, and the range check of the input
//! coordinates is folded into the histogram pass instead of a pass of its
//! own.

use super::buffer::IndexBuf;
use super::error::Result;
use super::partition::{Buckets, bucket_shift};
use super::tensor::SparseTensor;
use crate::scalars::{Scalar, ScalarVec};
use crate::with_values;
use heddle_ir::encoding::Width;

/// An unsigned integer a counting sort keeps cursors and coordinates in.
pub(crate) trait Idx: Copy + Default + Ord + Send + Sync + 'static {
    /// Bits it holds.
    const BITS: u32;
    /// `x`, which the caller knows fits.
    fn of(x: usize) -> Self;
    /// The value as an index.
    fn at(self) -> usize;
    /// The buffer holding `v` at this width.
    fn buf(v: Vec<Self>) -> IndexBuf;
}

impl Idx for u32 {
    const BITS: u32 = 32;
    #[inline(always)]
    fn of(x: usize) -> u32 {
        x as u32
    }
    #[inline(always)]
    fn at(self) -> usize {
        self as usize
    }
    fn buf(v: Vec<u32>) -> IndexBuf {
        IndexBuf::U32(v)
    }
}

impl Idx for u64 {
    const BITS: u32 = 64;
    #[inline(always)]
    fn of(x: usize) -> u64 {
        x as u64
    }
    #[inline(always)]
    fn at(self) -> usize {
        self as usize
    }
    fn buf(v: Vec<u64>) -> IndexBuf {
        IndexBuf::U64(v)
    }
}

/// `v` stored at `width`: as it is when the widths agree, else through
/// [`IndexBuf::from_u64`], whose check names the buffer (`name`) and the
/// position of a value the width cannot hold.
pub(crate) fn at_width<I: Idx>(v: Vec<I>, width: Width, name: &str) -> Result<IndexBuf> {
    if width.storage_bits() == I::BITS {
        return Ok(I::buf(v));
    }
    if width.storage_bits() == 64 {
        // Widening (32-bit cursors into a 64-bit buffer): nothing to check,
        // one parallel pass straight into the final buffer. (Not advised to
        // huge pages: under load that cost 0.2 s and 0.1 s of CPU here.)
        use rayon::prelude::*;
        let mut out = Vec::with_capacity(v.len());
        v.par_iter().with_min_len(1 << 16).map(|x| x.at() as u64).collect_into_vec(&mut out);
        return Ok(IndexBuf::U64(out));
    }
    IndexBuf::from_u64(v.into_iter().map(|x| x.at() as u64).collect(), width, name)
}

/// `n` copies of `x`, for a buffer a conversion then fills in random order
/// (a scatter; one filled in order is better off without the advice, which
/// cost CPU time there, e.g. BSR's values). On Linux a large one's memory
/// is advised to be backed by
/// transparent huge pages (`madvise`, which this kernel setting, THP
/// `madvise`, requires): a scatter into tens of megabytes then misses the
/// TLB per 2 MB page instead of per 4 KB page, and faults its memory in
/// 2 MB at a time. Zero `x` (integers, floats) comes from the allocator
/// as untouched zeroed memory, so the advice applies before the first
/// write. Only advice: nothing changes where it is not followed.
pub(crate) fn scatter_buffer<T: Clone>(n: usize, x: T) -> Vec<T> {
    let v = vec![x; n];
    advise_huge_pages(&v);
    v
}

/// [`scatter_buffer`]'s advice for a vector's untouched capacity (one
/// that is then filled in order, but faulted in 2 MB at a time).
pub(crate) fn advise_capacity<T>(v: &mut Vec<T>) {
    advise_huge_pages(&*v.spare_capacity_mut());
}

/// [`crate::pages::advise`]: the whole huge pages inside a buffer of 4 MiB
/// or more, unless `HEDDLE_HUGEPAGES=0`.
fn advise_huge_pages<T>(v: &[T]) {
    crate::pages::advise(v);
}

/// Whether 32-bit cursors and coordinates hold a counting sort of
/// `entries` entries whose coordinates are below `coord_bound`. (They are
/// then widened or narrowed to the encoding's widths: a million rows'
/// 32-bit cursors fit in a core's L2 cache, 64-bit ones do not.)
pub(crate) fn narrow(entries: usize, coord_bound: u64) -> bool {
    entries as u64 <= u64::from(u32::MAX) && coord_bound <= 1 << 32
}

/// A compressed level built by a counting sort: positions (`n_outer + 1`),
/// coordinates and values, rows possibly unsorted (see [`Scattered::clean`]).
pub(crate) struct Scattered<I> {
    /// Row starts.
    pub pos: Vec<I>,
    /// The inner coordinate of each entry.
    pub crd: Vec<I>,
    /// The values, at their type.
    pub vals: ScalarVec,
}

/// Where a counting sort reads one dimension's coordinate of each entry:
/// a column of its own at its stored width (`[u32]`, `[u64]`: a coo
/// `.npz`'s `row` and `col`), or every `stride`-th element of an
/// interleaved list ([`Strided`]: [`super::coo::Coo`]'s coordinates).
pub(crate) trait Column: Sync {
    /// Entry `k`'s coordinate.
    fn at(&self, k: usize) -> u64;
}

impl Column for [u32] {
    #[inline(always)]
    fn at(&self, k: usize) -> u64 {
        u64::from(self[k])
    }
}

impl Column for [u64] {
    #[inline(always)]
    fn at(&self, k: usize) -> u64 {
        self[k]
    }
}

/// One dimension of an interleaved coordinate list: `data[k * stride + offset]`.
pub(crate) struct Strided<'a> {
    /// The interleaved coordinates.
    pub data: &'a [u64],
    /// Coordinates per entry.
    pub stride: usize,
    /// The dimension.
    pub offset: usize,
}

impl Column for Strided<'_> {
    #[inline(always)]
    fn at(&self, k: usize) -> u64 {
        self.data[k * self.stride + self.offset]
    }
}

/// A matrix's entries (coordinates `outer` and `inner`, below `dims`, and
/// `values`) grouped by `outer`, `inner` as the coordinate, in input order
/// within a group. Checks every coordinate against its dimension on the
/// way: the histogram pass the outer ones, the scatter the inner ones, so
/// it reads 4 + 8 bytes of coordinates per entry at 32 bits, as scipy's
/// `coo_tocsr` does. `Err(k)`: entry `k` is the first with a coordinate
/// outside its dimension.
pub(crate) fn scatter_entries<I: Idx, O: Column + ?Sized, N: Column + ?Sized>(
    dims: (u64, u64),
    outer: &O,
    inner: &N,
    values: &ScalarVec,
) -> std::result::Result<Scattered<I>, usize> {
    let (dim_outer, dim_inner) = dims;
    let n_outer = dim_outer as usize;
    let n = values.len();
    if let Some(done) = scatter_in_buckets(dims, outer, inner, values)? {
        return Ok(done);
    }
    // Attribute query: the histogram, shifted by one so its prefix sum gives each row's start.
    let mut pos = scatter_buffer(n_outer + 1, I::default());
    // Entries already grouped by `outer` (a column-ordered file into CSC) scatter in order.
    let grouped = count_outer(dims, outer, inner, n, |o| {
        let slot = &mut pos[o + 1];
        *slot = I::of(slot.at() + 1);
    })?;
    for r in 0..n_outer {
        pos[r + 1] = I::of(pos[r + 1].at() + pos[r].at());
    }
    // The scatter uses pos[r] as row r's cursor, leaving it at row r + 1's start.
    let buffer = |n, x| if grouped { vec![x; n] } else { scatter_buffer(n, x) };
    let mut crd = buffer(n, I::default());
    let vals = with_values!(values, values => {
        let mut out = if grouped { vec![Default::default(); n] } else { scatter_buffer(n, Default::default()) };
        for (k, &v) in values.iter().enumerate() {
            // Every outer coordinate is in range: the first inner one outside is the first entry outside.
            let i = inner.at(k);
            if i >= dim_inner {
                return Err(k);
            }
            let cursor = &mut pos[outer.at(k) as usize];
            let at = cursor.at();
            *cursor = I::of(at + 1);
            crd[at] = I::of(i as usize);
            out[at] = v;
        }
        ScalarVec::from(out)
    });
    // Shift the cursors back into row starts.
    for r in (1..=n_outer).rev() {
        pos[r] = pos[r - 1];
    }
    pos[0] = I::default();
    Ok(Scattered { pos, crd, vals })
}

/// [`scatter_entries`] in cache-sized buckets of rows
/// ([`super::partition`]) where the output is large: the buckets'
/// histogram (checking every outer coordinate), the partition (checking
/// every inner one), then each bucket's rows. `Ok(None)`: a small output,
/// or entries already grouped by `outer` (whose direct scatter writes in
/// order), which [`scatter_entries`] does directly.
fn scatter_in_buckets<I: Idx, O: Column + ?Sized, N: Column + ?Sized>(
    dims: (u64, u64),
    outer: &O,
    inner: &N,
    values: &ScalarVec,
) -> std::result::Result<Option<Scattered<I>>, usize> {
    let (dim_outer, dim_inner) = dims;
    let n_outer = dim_outer as usize;
    let n = values.len();
    with_values!(values, values => {
        let Some(shift) = bucket_shift(n, n_outer, entry_bytes::<I, _>(values)) else { return Ok(None) };
        let mut counts = vec![0usize; n_outer.div_ceil(1 << shift)];
        if count_outer(dims, outer, inner, n, |o| counts[o >> shift] += 1)? {
            return Ok(None);
        }
        let mut buckets = Buckets::new(shift, n_outer, &counts);
        for (k, &v) in values.iter().enumerate() {
            // Every outer coordinate is in range: the first inner one outside is the first entry outside.
            let i = inner.at(k);
            if i >= dim_inner {
                return Err(k);
            }
            buckets.push(outer.at(k) as usize, I::of(i as usize), v);
        }
        let (pos, crd, out) = buckets.finish();
        Ok(Some(Scattered { pos, crd, vals: ScalarVec::from(out) }))
    })
}

/// The attribute query's pass over the outer coordinates: `count(o)` for
/// each entry's, in input order. `Ok(true)` where they are nondecreasing
/// (the entries already grouped); `Err(k)`: entry `k` is the first with a
/// coordinate outside its dimension (an outer one here, or an inner one of
/// an earlier entry, which this pass then looks for).
#[inline(always)]
fn count_outer<O: Column + ?Sized, N: Column + ?Sized>(
    dims: (u64, u64),
    outer: &O,
    inner: &N,
    n: usize,
    mut count: impl FnMut(usize),
) -> std::result::Result<bool, usize> {
    let (dim_outer, dim_inner) = dims;
    let (mut grouped, mut last) = (true, 0);
    for k in 0..n {
        let o = outer.at(k);
        if o >= dim_outer {
            return Err((0..k).find(|&q| inner.at(q) >= dim_inner).unwrap_or(k));
        }
        grouped &= o >= last;
        last = o;
        count(o as usize);
    }
    Ok(grouped)
}

/// The output bytes of one entry: a coordinate and a value.
fn entry_bytes<I, T>(_: &[T]) -> usize {
    std::mem::size_of::<I>() + std::mem::size_of::<T>()
}

/// Are the entries ordered by their outer coordinate (`outer`
/// nondecreasing), with every coordinate within `(n_outer, n_inner)`?
/// Then `Some(strict)`, `strict` when they are in strictly increasing
/// (outer, inner) order: every row sorted, no duplicates (as
/// [`Scattered::clean`] would find after [`grouped`]). `None` otherwise. One
/// parallel pass over both columns, in blocks.
pub(crate) fn row_ordered<I: Idx>(outer: &[u32], inner: &[I], n_outer: u64, n_inner: u64) -> Option<bool> {
    use rayon::prelude::*;
    const BLOCK: usize = 1 << 16;
    let n = outer.len();
    assert_eq!(inner.len(), n, "one inner coordinate per entry");
    let (ok, strict) = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let (s, e) = (b * BLOCK, ((b + 1) * BLOCK).min(n));
            // The block's entries and the pair across its end.
            let (o, i) = (&outer[s..(e + 1).min(n)], &inner[s..(e + 1).min(n)]);
            let (mut max_o, mut max_i) = (0u32, I::default());
            let (mut unsorted, mut repeated) = (false, false);
            for k in 0..e - s {
                max_o = max_o.max(o[k]);
                max_i = max_i.max(i[k]);
                if k + 1 < o.len() {
                    unsorted |= o[k] > o[k + 1];
                    repeated |= o[k] == o[k + 1] && i[k] >= i[k + 1];
                }
            }
            (!unsorted && u64::from(max_o) < n_outer && (max_i.at() as u64) < n_inner, !repeated)
        })
        .reduce(|| (true, true), |a, b| (a.0 && b.0, a.1 && b.1));
    ok.then_some(strict)
}

/// [`scatter_entries`] for entries already grouped by their outer
/// coordinate (`outer` nondecreasing, every coordinate in range): the
/// scatter would be the identity, so `inner` and `values` are the result
/// as they are and only the positions are found (in parallel, each range
/// of rows from the first entry at or past it).
pub(crate) fn grouped<I: Idx>(outer: &[u32], inner: Vec<I>, values: ScalarVec, n_outer: usize) -> Scattered<I> {
    use rayon::prelude::*;
    const ROWS: usize = 1 << 16;
    let mut pos = vec![I::default(); n_outer + 1];
    pos.par_chunks_mut(ROWS).enumerate().for_each(|(c, p)| {
        let first = c * ROWS;
        // pos[r]: the entries in rows before r.
        let mut k = outer.partition_point(|&x| (x as usize) < first);
        for (r, slot) in (first..).zip(p.iter_mut()) {
            while k < outer.len() && (outer[k] as usize) < r {
                k += 1;
            }
            *slot = I::of(k);
        }
    });
    Scattered { pos, crd: inner, vals: values }
}

/// CSR-like storage (positions over the outer level, coordinates `crd`)
/// transposed: entries grouped by their coordinate, the old row as the new
/// coordinate. Rows are visited in order, so every new row comes out sorted.
pub(crate) fn scatter_transpose<S: Idx, I: Idx>(src: &SparseTensor, pos: &IndexBuf, crd: &[S]) -> Scattered<I> {
    let rows = src.lvl_sizes[0] as usize;
    let cols = src.lvl_sizes[1] as usize;
    let nse = src.nse();
    let crd = &crd[..nse];
    let bucketed = with_values!(&src.values, values => {
        bucket_shift(nse, cols, entry_bytes::<I, _>(values)).map(|shift| {
            // In cache-sized buckets of columns (`super::partition`).
            let mut counts = vec![0usize; cols.div_ceil(1 << shift)];
            for &c in crd {
                counts[c.at() >> shift] += 1;
            }
            let mut buckets = Buckets::new(shift, cols, &counts);
            let mut start = 0usize;
            for r in 0..rows {
                let end = pos.get(r + 1) as usize;
                for (&c, &v) in crd[start..end].iter().zip(&values[start..end]) {
                    buckets.push(c.at(), I::of(r), v);
                }
                start = end;
            }
            let (pos, crd, out) = buckets.finish();
            Scattered { pos, crd, vals: ScalarVec::from(out) }
        })
    });
    if let Some(done) = bucketed {
        return done;
    }
    let mut tpos = scatter_buffer(cols + 1, I::default());
    for &c in crd {
        let slot = &mut tpos[c.at() + 1];
        *slot = I::of(slot.at() + 1);
    }
    for c in 0..cols {
        tpos[c + 1] = I::of(tpos[c + 1].at() + tpos[c].at());
    }
    let mut tcrd = scatter_buffer(nse, I::default());
    let vals = with_values!(&src.values, values => {
        let mut out = scatter_buffer(nse, Default::default());
        let mut start = 0usize;
        for r in 0..rows {
            let end = pos.get(r + 1) as usize;
            for (&c, &v) in crd[start..end].iter().zip(&values[start..end]) {
                let cursor = &mut tpos[c.at()];
                let at = cursor.at();
                *cursor = I::of(at + 1);
                tcrd[at] = I::of(r);
                out[at] = v;
            }
            start = end;
        }
        ScalarVec::from(out)
    });
    for c in (1..=cols).rev() {
        tpos[c] = tpos[c - 1];
    }
    tpos[0] = I::default();
    Scattered { pos: tpos, crd: tcrd, vals }
}

impl<I: Idx> Scattered<I> {
    /// Is every row strictly increasing (sorted, no duplicates)?
    pub fn clean(&self) -> bool {
        self.pos.windows(2).all(|w| self.crd[w[0].at()..w[1].at()].windows(2).all(|p| p[0] < p[1]))
    }

    /// Sorts each row that needs it and sums duplicates in place (at the
    /// values' type, see [`Scalar::add`]); clean rows are only scanned.
    pub fn sort_rows(&mut self) {
        let Scattered { pos, crd, vals } = self;
        with_values!(vals, vals => sort_rows_typed(pos, crd, vals));
    }
}

fn sort_rows_typed<I: Idx, T: Scalar>(pos: &mut [I], crd: &mut Vec<I>, vals: &mut Vec<T>) {
    let mut w = 0usize;
    let mut pairs: Vec<(I, T)> = Vec::new();
    let mut start = 0usize;
    for r in 0..pos.len() - 1 {
        let end = pos[r + 1].at();
        let row = &crd[start..end];
        if row.windows(2).all(|p| p[0] < p[1]) {
            // Already clean: moved down over what merging removed before it.
            crd.copy_within(start..end, w);
            vals.copy_within(start..end, w);
            w += end - start;
        } else {
            pairs.clear();
            pairs.extend((start..end).map(|k| (crd[k], vals[k])));
            pairs.sort_by_key(|p| p.0);
            let row_start = w;
            for &(c, v) in &pairs {
                if w > row_start && crd[w - 1] == c {
                    vals[w - 1] = Scalar::add(vals[w - 1], v);
                } else {
                    crd[w] = c;
                    vals[w] = v;
                    w += 1;
                }
            }
        }
        start = end;
        pos[r + 1] = I::of(w);
    }
    crd.truncate(w);
    vals.truncate(w);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// COO → CSR and CSR → CSC large enough to take the bucketed path
    /// (`super::super::partition`) equal a stable sort by row, and report
    /// the first entry outside its dimension as the direct path does.
    #[test]
    fn bucketed_counting_sorts_equal_a_stable_sort() {
        let (rows, cols, n) = (300_000usize, 1000u64, 800_000usize);
        let mut next = super::super::partition::tests::below(0x2545_f491_4f6c_dd1d);
        // Rows past rows / 2 stay empty; every tenth entry in row 7 (a long row).
        let outer: Vec<u32> = (0..n).map(|k| if k % 10 == 0 { 7 } else { next(rows as u64 / 2) as u32 }).collect();
        let inner: Vec<u32> = (0..n).map(|_| next(cols) as u32).collect();
        let values: Vec<f64> = (0..n).map(|k| k as f64).collect();
        assert!(bucket_shift(n, rows, 12).is_some(), "the test must take the bucketed path");
        let s: Scattered<u32> =
            scatter_entries((rows as u64, cols), &outer[..], &inner[..], &ScalarVec::from(values.clone()))
                .expect("in range");
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&k| outer[k]);
        let ScalarVec::F64(vals) = &s.vals else { panic!("f64 values") };
        for (at, &k) in order.iter().enumerate() {
            assert_eq!((s.crd[at], vals[at]), (inner[k], values[k]), "slot {at}");
        }
        let mut lens = vec![0u32; rows];
        for &o in &outer {
            lens[o as usize] += 1;
        }
        for r in 0..rows {
            assert_eq!(s.pos[r + 1] - s.pos[r], lens[r], "row {r}");
        }
        assert_eq!(s.pos[rows] as usize, n);
        // CSR → CSC of that result (columns are the outer level now): each
        // column lists its rows in increasing order, entries within a row in
        // their stored order, as a stable sort by column of the CSR order.
        let csr = SparseTensor {
            encoding: crate::sparse::csr::csr_encoding(),
            elem: heddle_ir::ScalarType::F64,
            dim_sizes: vec![rows as u64, cols],
            lvl_sizes: vec![rows as u64, cols],
            positions: vec![None, Some(IndexBuf::U32(s.pos.clone()))],
            coordinates: vec![None, Some(IndexBuf::U32(s.crd.clone()))],
            values: s.vals.clone(),
        };
        assert!(bucket_shift(n, cols as usize, 12).is_some(), "the transpose must take the bucketed path");
        let t: Scattered<u32> = scatter_transpose(&csr, csr.positions[1].as_ref().unwrap(), &s.crd[..]);
        let mut by_column: Vec<usize> = (0..n).collect();
        by_column.sort_by_key(|&at| s.crd[at]);
        let ScalarVec::F64(tvals) = &t.vals else { panic!("f64 values") };
        for (at, &k) in by_column.iter().enumerate() {
            let row = s.pos.partition_point(|&p| p as usize <= k) - 1;
            assert_eq!((t.crd[at] as usize, tvals[at]), (row, vals[k]), "column slot {at}");
        }
        assert_eq!(t.pos[cols as usize] as usize, n);
        // The first entry outside: an inner coordinate, then an outer one after an inner one.
        let mut bad = inner.clone();
        bad[500_000] = cols as u32;
        let err =
            scatter_entries::<u32, _, _>((rows as u64, cols), &outer[..], &bad[..], &ScalarVec::from(values.clone()));
        assert_eq!(err.err(), Some(500_000));
        let mut bad_outer = outer.clone();
        bad_outer[600_000] = rows as u32;
        let err = scatter_entries::<u32, _, _>((rows as u64, cols), &bad_outer[..], &bad[..], &ScalarVec::from(values));
        assert_eq!(err.err(), Some(500_000));
    }
}

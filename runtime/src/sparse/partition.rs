//! The scatter of a counting sort in two cache-sized passes (radix
//! partitioning), for outputs far larger than a core's cache.
//!
//! A counting sort's scatter writes every entry to its row's cursor: with a
//! million rows and millions of entries each write lands on a different
//! cache line (and, past the TLB's reach, a different page) of tens of
//! megabytes of output, and reads a cursor from a 4 MB array. That is where
//! COO → CSR and CSR → CSC spent their time (`perf annotate`: cursor loads
//! and value stores), at parity with scipy's identical loop.
//!
//! Partitioning first counts the entries of each *bucket* of a few
//! thousand consecutive rows (a histogram small enough for the L1 cache),
//! then moves each entry, in input order, into its bucket's stretch of the
//! output (a bucket's rows own one contiguous stretch), with its row
//! relative to the bucket in a 16-bit side array: one sequential write
//! stream per bucket, which the cache absorbs. Then each bucket is finished
//! on its own, all within a share of the output that fits a core's L2
//! cache: its rows' histogram and prefix sum give their positions, and its
//! stretch, copied to a reused scratch buffer, is scattered back by the
//! rows' cursors. Neither the rows' histogram nor the scatter touches
//! memory outside the bucket, where scipy's loop (and the direct path)
//! misses the cache on both. No buffer the size of the input is
//! allocated: a first version with one lost its gain to page faults. Each
//! entry moves three times instead of once. Within a row the entries keep
//! their input order (both passes are stable), as the direct scatter
//! leaves them.

use super::counting::{Idx, scatter_buffer};

/// Output bytes one bucket's scatter should stay within: a quarter of a
/// core's L2 cache here (1 MiB on the development machine), leaving room
/// for the bucket's input stream, its cursors and the partitioning pass's
/// write streams.
const BUCKET_BYTES: usize = 256 << 10;

/// The most buckets asked for (rounding the rows per bucket down to a
/// power of two makes up to twice as many): one write stream each while
/// partitioning, which the L2 cache must hold a line of.
const MAX_BUCKETS: usize = 512;

/// Output smaller than this is scattered directly: it fits the last-level
/// cache well enough that a second pass costs more than it saves.
const DIRECT_BYTES: usize = 8 << 20;

/// The largest power of two not above `x` (1 for 0).
fn prev_power_of_two(x: usize) -> usize {
    if x <= 1 { 1 } else { 1 << (usize::BITS - 1 - x.leading_zeros()) }
}

/// The bucket height (`1 << shift` rows) for `n` entries of `entry_bytes`
/// output each in `n_outer` rows, or `None` where scattering directly is the
/// better plan: a small output, too few rows to split, or buckets too tall
/// for 16-bit rows.
pub(crate) fn bucket_shift(n: usize, n_outer: usize, entry_bytes: usize) -> Option<u32> {
    shift_sized(n, n_outer, entry_bytes, DIRECT_BYTES, BUCKET_BYTES)
}

/// [`bucket_shift`] with its sizes given (the tests' small ones).
pub(crate) fn shift_sized(
    n: usize,
    n_outer: usize,
    entry_bytes: usize,
    direct_bytes: usize,
    bucket_bytes: usize,
) -> Option<u32> {
    let bytes = n.saturating_mul(entry_bytes);
    if bytes < direct_bytes || n_outer < 2 {
        return None;
    }
    let wanted = bytes.div_ceil(bucket_bytes).clamp(2, MAX_BUCKETS).min(n_outer);
    // Buckets of a power of two rows each, at least `wanted` of them (rows
    // are about equally full on average; a bucket of long rows only
    // spills its own share).
    let rows_per = prev_power_of_two(n_outer / wanted);
    (rows_per <= 1 << 16).then(|| rows_per.trailing_zeros())
}

/// A counting sort into `n_outer` rows done in buckets of `1 << shift`
/// consecutive rows: [`Buckets::push`] every entry in input order, then
/// [`Buckets::finish`].
pub(crate) struct Buckets<I, T> {
    shift: u32,
    n_outer: usize,
    /// The next free slot of each bucket in the output.
    cursor: Vec<usize>,
    /// Where each bucket's stretch of the output starts (and, last, the
    /// number of entries).
    start: Vec<usize>,
    /// Each output slot's row relative to its bucket's first row.
    row_in_bucket: Vec<u16>,
    crd: Vec<I>,
    out: Vec<T>,
}

impl<I: Idx, T: Copy + Default> Buckets<I, T> {
    /// Room for the entries of `n_outer` rows, `counts[b]` of them in
    /// bucket `b` (the histogram of `outer >> shift`).
    pub(crate) fn new(shift: u32, n_outer: usize, counts: &[usize]) -> Self {
        let mut start = Vec::with_capacity(counts.len() + 1);
        let mut at = 0;
        start.push(0);
        for &c in counts {
            at += c;
            start.push(at);
        }
        Buckets {
            shift,
            n_outer,
            cursor: start[..counts.len()].to_vec(),
            start,
            row_in_bucket: scatter_buffer(at, 0),
            crd: scatter_buffer(at, I::default()),
            out: scatter_buffer(at, T::default()),
        }
    }

    /// Adds the next entry (in input order) of row `outer`, which `counts`
    /// counted.
    #[inline(always)]
    pub(crate) fn push(&mut self, outer: usize, inner: I, value: T) {
        let slot = &mut self.cursor[outer >> self.shift];
        let at = *slot;
        *slot = at + 1;
        self.row_in_bucket[at] = (outer & ((1 << self.shift) - 1)) as u16;
        self.crd[at] = inner;
        self.out[at] = value;
    }

    /// Every bucket put in row order: the rows' positions (`n_outer + 1`),
    /// coordinates and values.
    pub(crate) fn finish(mut self) -> (Vec<I>, Vec<I>, Vec<T>) {
        let mut pos = vec![I::default(); self.n_outer + 1];
        let widest = self.start.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let (mut rows, mut coords, mut values) =
            (Vec::with_capacity(widest), Vec::with_capacity(widest), Vec::with_capacity(widest));
        let mut cursors = vec![0usize; 1 << self.shift];
        for b in 0..self.start.len() - 1 {
            let (lo, hi) = (self.start[b], self.start[b + 1]);
            let first = b << self.shift;
            let height = (self.n_outer - first).min(1 << self.shift);
            // The bucket's rows: their histogram, then their starts.
            let counts = &mut cursors[..height];
            counts.fill(0);
            for &r in &self.row_in_bucket[lo..hi] {
                counts[usize::from(r)] += 1;
            }
            let mut at = lo;
            for (r, c) in counts.iter_mut().enumerate() {
                let len = *c;
                *c = at;
                at += len;
                pos[first + r + 1] = I::of(at);
            }
            rows.clear();
            coords.clear();
            values.clear();
            rows.extend_from_slice(&self.row_in_bucket[lo..hi]);
            coords.extend_from_slice(&self.crd[lo..hi]);
            values.extend_from_slice(&self.out[lo..hi]);
            for ((&r, &c), &v) in rows.iter().zip(&coords).zip(&values) {
                let cursor = &mut counts[usize::from(r)];
                let at = *cursor;
                *cursor = at + 1;
                self.crd[at] = c;
                self.out[at] = v;
            }
        }
        (pos, self.crd, self.out)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Pseudo-random numbers below `m` (xorshift from `seed`), for the
    /// counting sorts' tests.
    pub(crate) fn below(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |m| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        }
    }

    /// Entries scattered through buckets land where a stable sort by row
    /// puts them, for bucket counts from 2 to one per row, with empty rows,
    /// a long row and a row count that is not a power of two.
    #[test]
    fn partitioned_scatter_equals_a_stable_sort_by_row() {
        let mut next = below(0x9e37_79b9_7f4a_7c15);
        for (rows, n) in [(1000usize, 20_000usize), (37, 5_000), (2, 100), (4099, 30_000)] {
            let entries: Vec<(u32, u32, f64)> = (0..n)
                .map(|k| {
                    // A fifth of the entries in row 1 (a long row); some rows stay empty.
                    let r = if k % 5 == 0 { 1 } else { next(rows as u64) as u32 };
                    (r, next(1 << 20) as u32, k as f64)
                })
                .collect();
            let mut pos = vec![0u32; rows + 1];
            for &(r, _, _) in &entries {
                pos[r as usize + 1] += 1;
            }
            for r in 0..rows {
                pos[r + 1] += pos[r];
            }
            let mut expected = entries.clone();
            expected.sort_by_key(|e| e.0);
            for bucket_bytes in [64usize, 4096, 1 << 16] {
                let shift = shift_sized(n, rows, 12, 0, bucket_bytes).expect("a plan");
                let mut counts = vec![0usize; rows.div_ceil(1 << shift)];
                for &(r, _, _) in &entries {
                    counts[r as usize >> shift] += 1;
                }
                let mut buckets = Buckets::<u32, f64>::new(shift, rows, &counts);
                for &(r, c, v) in &entries {
                    buckets.push(r as usize, c, v);
                }
                let (got_pos, crd, out) = buckets.finish();
                assert_eq!(got_pos, pos, "{rows} rows, {n} entries, {bucket_bytes} bytes a bucket");
                let got: Vec<(u32, u32, f64)> = (0..rows)
                    .flat_map(|r| (pos[r] as usize..pos[r + 1] as usize).map(move |k| (r as u32, k)))
                    .map(|(r, k)| (r, crd[k], out[k]))
                    .collect();
                assert_eq!(got, expected, "{rows} rows, {n} entries, {bucket_bytes} bytes a bucket");
            }
        }
        assert!(bucket_shift(10, 2, 12).is_none(), "a small output is scattered directly");
    }
}

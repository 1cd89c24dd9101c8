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
//! Partitioning first moves each entry, in input order, to one of a few
//! hundred *buckets* of consecutive rows: a sequential write stream per
//! bucket, which the cache absorbs. A bucket's rows own one contiguous
//! stretch of the output, so the partition writes each entry's coordinate
//! and value straight into its bucket's stretch (and its row, relative to
//! the bucket, into a 16-bit side array): no buffer the size of the input
//! is allocated, whose page faults would cost what the pass saves. Then
//! each bucket is put in row order on its own: its stretch is copied to a
//! scratch buffer (reused, cache-sized) and scattered back by its rows'
//! cursors, all within a share of the output that fits a core's L2 cache.
//! Each entry moves three times instead of once, but no write misses.
//! Within a row the entries keep their input order (both passes are
//! stable), exactly as the direct scatter leaves them.

use super::counting::{scatter_buffer, Idx};

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

/// A counting sort's scatter partitioned into buckets of `1 << shift`
/// consecutive outer coordinates: [`Buckets::push`] each entry in input
/// order, then [`Buckets::finish`].
pub(crate) struct Buckets {
    shift: u32,
    /// The next free slot of each bucket in the output.
    cursor: Vec<usize>,
    /// Where each bucket's stretch of the output starts (and, last, the
    /// number of entries).
    start: Vec<usize>,
    /// Each output slot's row relative to its bucket's first row.
    row_in_bucket: Vec<u16>,
}

impl Buckets {
    /// Buckets for a scatter into `pos.len() - 1` rows (`pos`: the rows'
    /// starts, the prefix sum of the histogram) of entries of `entry_bytes`
    /// each (a coordinate and a value), or `None` where scattering directly
    /// is the better plan (a small output, too few rows to split, or
    /// buckets too tall for 16-bit rows).
    pub(crate) fn plan<I: Idx>(pos: &[I], entry_bytes: usize) -> Option<Self> {
        Self::plan_sized(pos, entry_bytes, DIRECT_BYTES, BUCKET_BYTES)
    }

    /// [`Buckets::plan`] with its sizes given (the tests' small ones).
    fn plan_sized<I: Idx>(pos: &[I], entry_bytes: usize, direct_bytes: usize, bucket_bytes: usize) -> Option<Self> {
        let n_outer = pos.len().checked_sub(1)?;
        let n = pos[n_outer].at();
        let bytes = n.saturating_mul(entry_bytes);
        if bytes < direct_bytes || n_outer < 2 {
            return None;
        }
        let wanted = bytes.div_ceil(bucket_bytes).clamp(2, MAX_BUCKETS).min(n_outer);
        // Buckets of a power of two rows each, at least `wanted` of them
        // (rows are about equally full on average; a bucket of long rows
        // only spills its own share).
        let rows_per = prev_power_of_two(n_outer / wanted);
        if rows_per > 1 << 16 {
            return None;
        }
        let shift = rows_per.trailing_zeros();
        let buckets = n_outer.div_ceil(rows_per);
        let start: Vec<usize> = (0..=buckets).map(|b| pos[(b << shift).min(n_outer)].at()).collect();
        Some(Buckets { shift, cursor: start[..buckets].to_vec(), start, row_in_bucket: scatter_buffer(n, 0) })
    }

    /// Adds the next entry (in input order) of row `outer`, which the
    /// histogram counted, to its bucket's stretch of `crd` and `out`.
    #[inline(always)]
    pub(crate) fn push<I: Idx, T: Copy>(&mut self, outer: usize, inner: I, value: T, crd: &mut [I], out: &mut [T]) {
        let slot = &mut self.cursor[outer >> self.shift];
        let at = *slot;
        *slot = at + 1;
        self.row_in_bucket[at] = (outer & ((1 << self.shift) - 1)) as u16;
        crd[at] = inner;
        out[at] = value;
    }

    /// The second pass: each bucket's stretch of `crd` and `out` put in row
    /// order, by the rows' cursors (`pos`, each advanced to the next row's
    /// start).
    pub(crate) fn finish<I: Idx, T: Copy + Default>(self, pos: &mut [I], crd: &mut [I], out: &mut [T]) {
        let widest = self.start.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let (mut rows, mut coords, mut values) = (Vec::with_capacity(widest), Vec::with_capacity(widest), Vec::with_capacity(widest));
        for b in 0..self.start.len() - 1 {
            let (lo, hi) = (self.start[b], self.start[b + 1]);
            rows.clear();
            coords.clear();
            values.clear();
            rows.extend_from_slice(&self.row_in_bucket[lo..hi]);
            coords.extend_from_slice(&crd[lo..hi]);
            values.extend_from_slice(&out[lo..hi]);
            let first = b << self.shift;
            for ((&r, &c), &v) in rows.iter().zip(&coords).zip(&values) {
                let cursor = &mut pos[first + usize::from(r)];
                let at = cursor.at();
                *cursor = I::of(at + 1);
                crd[at] = c;
                out[at] = v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries scattered through buckets land where a stable sort by row
    /// puts them, for bucket counts from 2 to one per row, with empty rows,
    /// a long row and a row count that is not a power of two.
    #[test]
    fn partitioned_scatter_equals_a_stable_sort_by_row() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for (rows, n) in [(1000usize, 20_000usize), (37, 5_000), (2, 100), (4099, 30_000)] {
            let entries: Vec<(u32, u32, f64)> = (0..n)
                .map(|k| {
                    // A fifth of the entries in row 1 (a long row); rows past rows / 2 only through the rest.
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
                let mut cursors = pos.clone();
                let mut buckets = Buckets::plan_sized(&pos, 12, 0, bucket_bytes).expect("a plan");
                let (mut crd, mut out) = (vec![0u32; n], vec![0f64; n]);
                for &(r, c, v) in &entries {
                    buckets.push(r as usize, c, v, &mut crd, &mut out);
                }
                buckets.finish(&mut cursors, &mut crd, &mut out);
                assert_eq!(&cursors[..rows], &pos[1..], "every cursor ends at the next row's start");
                let got: Vec<(u32, u32, f64)> = (0..rows).flat_map(|r| (pos[r] as usize..pos[r + 1] as usize).map(move |k| (r as u32, k))).map(|(r, k)| (r, crd[k], out[k])).collect();
                assert_eq!(got, expected, "{rows} rows, {n} entries, {bucket_bytes} bytes a bucket");
            }
        }
        assert!(Buckets::plan(&[0u32, 5, 10], 12).is_none(), "a small output is scattered directly");
    }
}

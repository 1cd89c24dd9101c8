//! SELL-C-σ (Kreutzer, Hager, Wellein, Fehske, Bishop, SIAM J. Sci. Comput.
//! 2014): a matrix's rows in slices of `C`, each slice padded to its longest
//! row and stored column-major (entry `k` of the slice's `C` rows together),
//! rows sorted by length (longest first) within windows of `σ` rows so that
//! the slices pad little.
//!
//! As a heddle type (`examples/sparse/spmv_sell8.hdl`) the format is four
//! ordinary arrays, the slice widths given as offsets like CSR's positions:
//!
//! ```text
//! soff: [int]_{S + 1}                                           slice s spans k-steps soff@s .. soff@(s + 1)
//! cols: [s -> [[int]_C]_{toNat(soff@(s + 1) - soff@s)}]_S       cols@s@k@l: column of entry k of lane l
//! vals: [s -> [[T]_C]_{toNat(soff@(s + 1) - soff@s)}]_S         its value
//! ```
//!
//! so a slice of width `w` is `w` steps of `C` lanes, and the kernel's result
//! is in *sliced order*: position `s·C + l` holds the row in lane `l` of
//! slice `s`. [`Sell::slot`] maps each row to that position (with `σ = 1`
//! it is the identity, and the first `rows` results are y). Padding entries
//! hold the value 0 and column 0 (or the lane's last real column), so they
//! add nothing and read x in range; a padded row (past the last row) is
//! all padding and yields 0.

use super::error::{Result, SparseError};
use crate::scalars::ScalarVec;

/// A matrix stored as SELL-C-σ.
#[derive(Clone, Debug, PartialEq)]
pub struct Sell {
    /// Rows per slice.
    pub c: usize,
    /// Sorting window in rows (1: no sorting).
    pub sigma: usize,
    /// The matrix's rows.
    pub rows: usize,
    /// The matrix's columns.
    pub cols: usize,
    /// Slice offsets in k-steps: slice `s` has width `soff[s + 1] - soff[s]`.
    pub soff: Vec<i32>,
    /// Columns, `C` per k-step, column-major within a slice.
    pub col: Vec<i32>,
    /// Values, laid out as `col`.
    pub val: Vec<f64>,
    /// Row `i`'s position in the sliced order (`s·C + l`).
    pub slot: Vec<usize>,
    /// The row at each sliced position (`None` for a padding row).
    pub row_at: Vec<Option<usize>>,
}

/// Rows from which [`Sell::unpermute_on`] splits its pass over threads:
/// below, the pass (a few microseconds) costs less than the pool's handover.
pub const PARALLEL_UNPERMUTE_ROWS: usize = 1 << 14;

/// The bytes SELL-C-σ stores for a matrix of `rows` rows whose slices have
/// the widths `soff` lists, with `value_bytes`-byte values: 32-bit offsets
/// and columns, and the permutation (one 32-bit slot per row) when `σ > 1`.
/// (Iso-valued SELL stores no values but a 32-bit index per step and a
/// 32-bit length per row: [`iso_storage_bytes`].)
pub fn storage_bytes(soff: &[i32], c: usize, rows: usize, sigma: usize, value_bytes: usize) -> u64 {
    let steps = *soff.last().unwrap_or(&0) as u64;
    let perm = if sigma > 1 { rows as u64 * 4 } else { 0 };
    soff.len() as u64 * 4 + steps * c as u64 * (4 + value_bytes as u64) + perm
}

/// The bytes iso-valued SELL-C-σ (`explicitVal`: no values) stores: 32-bit
/// offsets and columns, a 32-bit step index per step and a 32-bit length per
/// lane ([`Sell::step_indices`], [`Sell::lane_lengths`]), and with `σ > 1`
/// the permutation.
pub fn iso_storage_bytes(soff: &[i32], c: usize, rows: usize, sigma: usize) -> u64 {
    let steps = *soff.last().unwrap_or(&0) as u64;
    let slices = soff.len().saturating_sub(1) as u64;
    let perm = if sigma > 1 { rows as u64 * 4 } else { 0 };
    soff.len() as u64 * 4 + steps * c as u64 * 4 + steps * 4 + slices * c as u64 * 4 + perm
}

/// The row lengths' slice widths: `soff` for rows in `order`.
fn offsets(len: &[usize], order: &[usize], c: usize) -> Result<Vec<i32>> {
    let mut soff = vec![0i32];
    let mut total: i64 = 0;
    for chunk in order.chunks(c) {
        let w = chunk.iter().map(|&i| len[i]).max().unwrap_or(0);
        total += w as i64;
        let t = i32::try_from(total)
            .map_err(|_| SparseError::Shape(format!("SELL: {total} k-steps exceed 32-bit slice offsets")))?;
        soff.push(t);
    }
    Ok(soff)
}

/// Stores CSR (`rowptr`, `colidx`, `values`; `rows` × `cols`) as SELL-C-σ
/// with `f64` values: [`layout`], then the values placed as
/// [`Sell::place`] places them. Refused as [`layout`] refuses.
#[allow(clippy::too_many_arguments)]
pub fn from_csr(
    rows: usize,
    cols: usize,
    rowptr: &[usize],
    colidx: &[usize],
    values: &[f64],
    c: usize,
    sigma: usize,
    value_bytes: usize,
    limit: Option<u64>,
) -> Result<Sell> {
    let mut sell = layout(rows, cols, rowptr, colidx, c, sigma, value_bytes, limit)?;
    if values.len() < rowptr.last().copied().unwrap_or(0) {
        return Err(SparseError::buffer(
            "values",
            values.len(),
            format!("{} entries need as many values", rowptr.last().copied().unwrap_or(0)),
        ));
    }
    let mut val = vec![0f64; sell.col.len()];
    sell.for_each_entry(rowptr, |at, k| val[at] = values[k]);
    sell.val = val;
    Ok(sell)
}

/// The SELL-C-σ layout of CSR (`rowptr`, `colidx`; `rows` × `cols`): slice
/// offsets, columns (padding at the lane's last real column, 0 for an empty
/// row) and the row order, with no values (`val` empty: [`Sell::place`]
/// places values of any type, [`from_csr`] `f64` ones). Refused (a `Shape`
/// error that says why): `c` or `sigma` zero, `sigma` not a multiple of
/// `c`, a column past 32 bits, or storage beyond `limit` bytes (`tune`'s
/// limit: 3× the matrix's plain CSR bytes, [`super::estimate::plain_size`]),
/// reckoned with `value_bytes`-byte values.
#[allow(clippy::too_many_arguments)]
pub fn layout(
    rows: usize,
    cols: usize,
    rowptr: &[usize],
    colidx: &[usize],
    c: usize,
    sigma: usize,
    value_bytes: usize,
    limit: Option<u64>,
) -> Result<Sell> {
    if c == 0 || sigma == 0 {
        return Err(SparseError::Shape(format!("SELL-{c}-{sigma}: C and σ must be positive")));
    }
    if sigma > 1 && !sigma.is_multiple_of(c) {
        return Err(SparseError::Shape(format!("SELL-{c}-{sigma}: σ must be 1 or a multiple of C")));
    }
    if rowptr.len() != rows + 1 {
        return Err(SparseError::buffer(
            "positions[1]",
            rowptr.len(),
            format!("{rows} rows need {} positions", rows + 1),
        ));
    }
    if cols > i32::MAX as usize + 1 {
        return Err(SparseError::Shape(format!("SELL: {cols} columns exceed 32-bit coordinates")));
    }
    let len: Vec<usize> = rowptr.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    let mut order: Vec<usize> = (0..rows).collect();
    if sigma > 1 {
        // Longest first within each window; stable, so equal rows keep their order.
        for w in order.chunks_mut(sigma) {
            w.sort_by_key(|&i| std::cmp::Reverse(len[i]));
        }
    }
    let soff = offsets(&len, &order, c)?;
    let bytes = storage_bytes(&soff, c, rows, sigma, value_bytes);
    if let Some(limit) = limit
        && bytes > limit
    {
        return Err(SparseError::Shape(format!(
            "SELL-{c}-{sigma}: {bytes} bytes stored, more than the limit of {limit} (3x plain CSR)"
        )));
    }
    let slices = soff.len() - 1;
    let steps = *soff.last().unwrap() as usize;
    let mut col = vec![0i32; steps * c];
    let mut slot = vec![0usize; rows];
    let mut row_at = vec![None; slices * c];
    for (p, &i) in order.iter().enumerate() {
        let (s, l) = (p / c, p % c);
        slot[i] = p;
        row_at[p] = Some(i);
        let base = soff[s] as usize;
        let width = soff[s + 1] as usize - base;
        let (lo, hi) = (rowptr[i], rowptr[i + 1]);
        let mut last = 0i32;
        for k in 0..width {
            let at = (base + k) * c + l;
            if lo + k < hi {
                let j = colidx[lo + k];
                if j >= cols {
                    return Err(SparseError::buffer(
                        "coordinates[1]",
                        lo + k,
                        format!("column {j} is not below {cols}"),
                    ));
                }
                last = j as i32;
                col[at] = last;
            } else {
                // Padding: value 0 at the row's last column (a valid one,
                // already in cache), 0 for an empty row.
                col[at] = last;
            }
        }
    }
    Ok(Sell { c, sigma, rows, cols, soff, col, val: Vec::new(), slot, row_at })
}

impl Sell {
    /// Calls `f(at, k)` for each stored entry: `at` its place in the sliced
    /// layout, `k` its index in CSR order (`rowptr`, the rows' positions the
    /// layout was made from).
    fn for_each_entry(&self, rowptr: &[usize], mut f: impl FnMut(usize, usize)) {
        for (i, &p) in self.slot.iter().enumerate() {
            let (s, l) = (p / self.c, p % self.c);
            let base = self.soff[s] as usize;
            for (step, k) in (rowptr[i]..rowptr[i + 1]).enumerate() {
                f((base + step) * self.c + l, k);
            }
        }
    }

    /// `values` (CSR order, of any scalar type, one per entry of the
    /// `rowptr` the layout was made from) in the sliced layout, as `col`:
    /// padding holds zero. The type's own values, never through `f64`, so
    /// 64-bit integers and complex numbers keep every bit.
    ///
    /// # Panics
    /// If `values` holds fewer than `rowptr`'s entries.
    pub fn place(&self, rowptr: &[usize], mut values: ScalarVec) -> ScalarVec {
        let entries = rowptr.last().copied().unwrap_or(0);
        assert!(values.len() >= entries, "SELL: a value per entry");
        // Padding reads the one zero appended after the entries.
        values.truncate(entries);
        values.push_from(&ScalarVec::zeros(values.elem(), 1), 0);
        let mut from = vec![entries; self.col.len()];
        self.for_each_entry(rowptr, |at, k| from[at] = k);
        values.gather(&from)
    }

    /// Back to CSR (`rowptr`, `colidx`, `values`), padding dropped: the
    /// entries of each row in their stored order. Padding is told from a
    /// stored zero by position (a row's entries come first in its lane), so
    /// the row lengths are needed: `len` (CSR's) is what `from_csr` stored.
    pub fn to_csr(&self, len: &[usize]) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
        let mut rowptr = vec![0usize];
        let (mut colidx, mut values) = (Vec::new(), Vec::new());
        for (i, &n) in len.iter().enumerate().take(self.rows) {
            let p = self.slot[i];
            let (s, l) = (p / self.c, p % self.c);
            let base = self.soff[s] as usize;
            for k in 0..n {
                let at = (base + k) * self.c + l;
                colidx.push(self.col[at] as usize);
                values.push(self.val[at]);
            }
            rowptr.push(colidx.len());
        }
        (rowptr, colidx, values)
    }

    /// Iso-valued SELL's step indices (`explicitVal`: no values stored):
    /// for each slice, its steps' indices `0 .. width`, in the order of the
    /// steps. With [`Sell::lane_lengths`] they tell a padding slot (step `k`
    /// of lane `l` is padding exactly when `k` is not below the lane's
    /// length), which without values would otherwise add `v · x[column]`.
    pub fn step_indices(&self) -> Vec<i32> {
        self.soff.windows(2).flat_map(|w| 0..w[1] - w[0]).collect()
    }

    /// Each sliced position's row length (`C` per slice, lane by lane; 0
    /// for a padding row past the matrix's last), from CSR's `rowptr` the
    /// layout was made from: the lanes' masks of iso-valued SELL (see
    /// [`Sell::step_indices`]). A row's length is at most its slice's width,
    /// which 32-bit offsets hold.
    pub fn lane_lengths(&self, rowptr: &[usize]) -> Vec<i32> {
        let mut len = vec![0i32; self.slices() * self.c];
        for (i, &p) in self.slot.iter().enumerate() {
            // At most the slice's width, an `i32` (checked by `offsets`).
            len[p] = (rowptr[i + 1] - rowptr[i]) as i32;
        }
        len
    }

    /// The number of slices.
    pub fn slices(&self) -> usize {
        self.soff.len() - 1
    }

    /// y in row order from the kernel's result in sliced order.
    pub fn unpermute<T: Copy>(&self, z: &[T]) -> Vec<T> {
        self.slot.iter().map(|&p| z[p]).collect()
    }

    /// [`Sell::unpermute`] into `y` (of `rows` elements) from `z` (of at
    /// least `slices · C`): `y[i] = z[slot[i]]`. With `σ = 1` it is a copy.
    /// Each row reads within its own window of `σ` rows (the sort never
    /// moves a row out of its window), so `z` is read near where `y` is
    /// written.
    ///
    /// # Panics
    /// If `y` is not `rows` long or `z` is shorter than the sliced order.
    pub fn unpermute_into<T: Clone>(&self, z: &[T], y: &mut [T]) {
        assert_eq!(y.len(), self.rows, "SELL: y has the matrix's rows");
        assert!(z.len() >= self.slices() * self.c, "SELL: z holds every slice's lanes");
        for (y, &p) in y.iter_mut().zip(&self.slot) {
            *y = z[p].clone();
        }
    }

    /// [`Sell::unpermute_into`] on up to `threads` threads of the kernels'
    /// pool, each writing its own contiguous part of `y` (and reading `z`
    /// near it, within the parts' windows). Below [`PARALLEL_UNPERMUTE_ROWS`]
    /// rows, on the calling thread: handing work to the pool costs more.
    ///
    /// # Panics
    /// As [`Sell::unpermute_into`].
    pub fn unpermute_on<T: Clone + Send + Sync>(&self, z: &[T], y: &mut [T], threads: usize) {
        assert_eq!(y.len(), self.rows, "SELL: y has the matrix's rows");
        assert!(z.len() >= self.slices() * self.c, "SELL: z holds every slice's lanes");
        // Without the CPU backend's runtime (the fuzz targets' build) there is
        // no pool: the calling thread does it all.
        #[cfg(feature = "cpu")]
        if threads > 1 && self.rows >= PARALLEL_UNPERMUTE_ROWS {
            return self.unpermute_parallel(z, y, threads);
        }
        #[cfg(not(feature = "cpu"))]
        let _ = threads;
        self.unpermute_into(z, y)
    }

    /// [`Sell::unpermute_on`]'s split over the pool.
    #[cfg(feature = "cpu")]
    fn unpermute_parallel<T: Clone + Send + Sync>(&self, z: &[T], y: &mut [T], threads: usize) {
        /// `y`'s start, shared by the ranges, which write disjoint parts.
        struct Out<T>(*mut T);
        // SAFETY: each range writes only its own elements of `y` (below), so
        // no element is written by two threads, and `y` outlives the call.
        unsafe impl<T: Send> Sync for Out<T> {}
        impl<T> Out<T> {
            /// The pointer (a method, so closures capture all of `Out`, not its field).
            fn at(&self, k: usize) -> *mut T {
                self.0.wrapping_add(k)
            }
        }
        let out = Out(y.as_mut_ptr());
        crate::cpu::for_ranges(self.rows, threads, &|r| {
            // SAFETY: `r` lies in `0 .. rows` = `0 .. y.len()`, the ranges are
            // disjoint, and `y` is borrowed mutably for the whole call.
            let part = unsafe { std::slice::from_raw_parts_mut(out.at(r.start), r.len()) };
            for (y, &p) in part.iter_mut().zip(&self.slot[r]) {
                *y = z[p].clone();
            }
        });
    }
}

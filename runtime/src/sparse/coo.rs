//! Coordinate lists: the common currency of I/O and conversion.

use super::buffer::IndexBuf;
use crate::scalars::{Num, Scalar, ScalarVec};
use crate::with_values;
use heddle_ir::ScalarType;

/// A tensor as a list of entries: `coords` holds `rank` coordinates per
/// entry (row-major: entry `k` is `coords[k * rank .. (k + 1) * rank]`),
/// `values` one value per entry, at the values' own type. Coordinates are
/// 0-based dimension coordinates; duplicates are allowed (they add up).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coo {
    /// Dimension sizes.
    pub dims: Vec<u64>,
    /// Flat coordinates, `dims.len()` per entry.
    pub coords: Vec<u64>,
    /// One value per entry.
    pub values: ScalarVec,
}

impl Coo {
    /// An empty tensor of the given shape, with `f64` values.
    pub fn new(dims: Vec<u64>) -> Coo {
        Coo::of_type(dims, ScalarType::F64)
    }
    /// An empty tensor of the given shape, with values of type `elem`.
    pub fn of_type(dims: Vec<u64>, elem: ScalarType) -> Coo {
        Coo { dims, coords: Vec::new(), values: ScalarVec::new(elem) }
    }
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.values.len()
    }
    /// No entries?
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    /// The type of the values.
    pub fn elem(&self) -> ScalarType {
        self.values.elem()
    }
    /// The coordinates of entry `k`.
    pub fn entry(&self, k: usize) -> &[u64] {
        let r = self.rank();
        &self.coords[k * r..(k + 1) * r]
    }
    /// Appends an entry; `value` is converted to the values' type (see
    /// [`Scalar::from_num`]). Panics if it does not fit: for literals.
    pub fn push(&mut self, coords: &[u64], value: f64) {
        self.push_num(coords, Num::Float(value));
    }
    /// Appends an entry with a value at full precision. Panics if it does not
    /// fit the values' type.
    pub fn push_num(&mut self, coords: &[u64], value: Num) {
        assert!(self.values.push_num(value), "{value} does not fit in {}", self.values.elem());
        self.coords.extend_from_slice(coords);
    }
    /// Appends entry `k` of `other`, whose values have the same type.
    pub fn push_from(&mut self, coords: &[u64], other: &ScalarVec, k: usize) {
        self.coords.extend_from_slice(coords);
        self.values.push_from(other, k);
    }
    /// Are the entries in strictly increasing lexicographic order (sorted, no duplicates)?
    pub fn is_sorted_unique(&self) -> bool {
        (1..self.len()).all(|k| self.entry(k - 1) < self.entry(k))
    }
    /// Sorts the entries lexicographically and sums duplicates (at the
    /// values' type, as kernels add: see [`Scalar::add`]).
    pub fn sort_and_sum(&mut self) {
        if self.is_sorted_unique() {
            return;
        }
        let r = self.rank();
        let mut perm: Vec<usize> = (0..self.len()).collect();
        perm.sort_unstable_by(|&a, &b| self.coords[a * r..(a + 1) * r].cmp(&self.coords[b * r..(b + 1) * r]));
        let mut coords = Vec::with_capacity(self.coords.len());
        let values = with_values!(&self.values, vals => {
            let mut out = Vec::with_capacity(vals.len());
            for &k in &perm {
                let c = self.entry(k);
                if !out.is_empty() && &coords[coords.len() - r..] == c {
                    if let Some(v) = out.last_mut() {
                        *v = Scalar::add(*v, vals[k]);
                    }
                } else {
                    coords.extend_from_slice(c);
                    out.push(vals[k]);
                }
            }
            ScalarVec::from(out)
        });
        self.coords = coords;
        self.values = values;
    }
    /// The dense row-major array this tensor denotes (duplicates summed),
    /// at the values' type. `None` when it would exceed
    /// [`super::build::MAX_STORED`] values.
    pub fn to_dense_values(&self) -> Option<ScalarVec> {
        let n = self.dims.iter().try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))?;
        if n as u64 > super::build::MAX_STORED {
            return None;
        }
        Some(with_values!(&self.values, vals => {
            let mut out = vec![Default::default(); n];
            for (k, &v) in vals.iter().enumerate() {
                let mut flat = 0usize;
                for (c, d) in self.entry(k).iter().zip(&self.dims) {
                    flat = flat * (*d as usize) + *c as usize;
                }
                // `0.0 + -0.0` is +0: a lone -0 entry is stored, not added.
                let slot = &mut out[flat];
                *slot = if Scalar::is_padding(*slot) { v } else { Scalar::add(*slot, v) };
            }
            ScalarVec::from(out)
        }))
    }
}

/// A coordinate list kept as one column per dimension, as scipy's coo
/// `.npz` stores it (`row` and `col`, or the rows of `coords`): all at 32
/// bits when every dimension's coordinates fit (every size ≤ 2^32, and
/// every coordinate < 2^32, so one outside its dimension is still
/// reported as it is), else all at 64. COO → CSR / CSC reads these columns directly, 4 bytes per
/// coordinate where [`Coo`]'s interleaved 64-bit list would need 8; any
/// other use goes through [`CooColumns::to_coo`]. Duplicates are allowed
/// (they add up), as in a [`Coo`].
#[derive(Clone, Debug, PartialEq)]
pub struct CooColumns {
    /// Dimension sizes.
    pub dims: Vec<u64>,
    /// Entry `k`'s coordinate in dimension `d` is `columns[d].get(k)`.
    columns: Vec<IndexBuf>,
    /// One value per entry.
    pub values: ScalarVec,
}

impl CooColumns {
    /// The columns `columns` (one per dimension, each as long as `values`)
    /// at 32 bits when every dimension size is at most 2^32 and every
    /// coordinate fits, else at 64. The coordinates are not checked against
    /// `dims`: conversions check them, as for a [`Coo`].
    pub fn new(dims: Vec<u64>, columns: Vec<Vec<u64>>, values: ScalarVec) -> CooColumns {
        assert!(
            columns.len() == dims.len() && columns.iter().all(|c| c.len() == values.len()),
            "one column per dimension, one coordinate per value"
        );
        let narrow = dims.iter().all(|&d| d <= 1 << 32) && columns.iter().flatten().all(|&x| x <= u64::from(u32::MAX));
        let columns = columns
            .into_iter()
            .map(|c| if narrow { IndexBuf::U32(c.into_iter().map(|x| x as u32).collect()) } else { IndexBuf::U64(c) })
            .collect();
        CooColumns { dims, columns, values }
    }
    /// 32-bit columns as they are (a Matrix Market file read by
    /// [`super::mtx::read_mtx_columns`]): every size must be at most 2^32,
    /// so that every coordinate in range fits, as [`CooColumns::new`] would
    /// keep them.
    pub fn from_u32(dims: Vec<u64>, columns: Vec<Vec<u32>>, values: ScalarVec) -> CooColumns {
        assert!(dims.iter().all(|&d| d <= 1 << 32), "sizes up to 2^32");
        assert!(
            columns.len() == dims.len() && columns.iter().all(|c| c.len() == values.len()),
            "one column per dimension, one coordinate per value"
        );
        CooColumns { dims, columns: columns.into_iter().map(IndexBuf::U32).collect(), values }
    }
    /// The columns as given (32- or 64-bit, each as long as `values`; a
    /// 32-bit one only where its dimension's size is at most 2^32).
    pub(crate) fn from_bufs(dims: Vec<u64>, columns: Vec<IndexBuf>, values: ScalarVec) -> CooColumns {
        assert!(
            columns.len() == dims.len() && columns.iter().all(|c| c.len() == values.len()),
            "one column per dimension, one coordinate per value"
        );
        CooColumns { dims, columns, values }
    }
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.values.len()
    }
    /// No entries?
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    /// The type of the values.
    pub fn elem(&self) -> ScalarType {
        self.values.elem()
    }
    /// Dimension `d`'s column.
    pub fn column(&self, d: usize) -> &IndexBuf {
        &self.columns[d]
    }
    /// The coordinates of entry `k`.
    pub fn entry(&self, k: usize) -> Vec<u64> {
        self.columns.iter().map(|c| c.get(k)).collect()
    }
    /// The dimension sizes, the columns and the values.
    pub fn into_parts(self) -> (Vec<u64>, Vec<IndexBuf>, ScalarVec) {
        (self.dims, self.columns, self.values)
    }
    /// The same entries as an interleaved [`Coo`], in the same order.
    pub fn into_coo(self) -> Coo {
        let r = self.rank();
        let mut coords = vec![0u64; self.len() * r];
        for (d, c) in self.columns.iter().enumerate() {
            for (k, x) in coords.iter_mut().skip(d).step_by(r).enumerate() {
                *x = c.get(k);
            }
        }
        Coo { dims: self.dims, coords, values: self.values }
    }
}

//! Coordinate lists: the common currency of I/O and conversion.

/// A tensor as a list of entries: `coords` holds `rank` coordinates per
/// entry (row-major: entry `k` is `coords[k * rank .. (k + 1) * rank]`),
/// `values` one value per entry. Coordinates are 0-based dimension
/// coordinates; duplicates are allowed (they add up).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coo {
    /// Dimension sizes.
    pub dims: Vec<u64>,
    /// Flat coordinates, `dims.len()` per entry.
    pub coords: Vec<u64>,
    /// One value per entry.
    pub values: Vec<f64>,
}

impl Coo {
    /// An empty tensor of the given shape.
    pub fn new(dims: Vec<u64>) -> Coo {
        Coo { dims, coords: Vec::new(), values: Vec::new() }
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
    /// The coordinates of entry `k`.
    pub fn entry(&self, k: usize) -> &[u64] {
        let r = self.rank();
        &self.coords[k * r..(k + 1) * r]
    }
    /// Appends an entry.
    pub fn push(&mut self, coords: &[u64], value: f64) {
        self.coords.extend_from_slice(coords);
        self.values.push(value);
    }
    /// Are the entries in strictly increasing lexicographic order (sorted, no duplicates)?
    pub fn is_sorted_unique(&self) -> bool {
        (1..self.len()).all(|k| self.entry(k - 1) < self.entry(k))
    }
    /// Sorts the entries lexicographically and sums duplicates.
    pub fn sort_and_sum(&mut self) {
        if self.is_sorted_unique() {
            return;
        }
        let r = self.rank();
        let mut perm: Vec<usize> = (0..self.len()).collect();
        perm.sort_unstable_by(|&a, &b| self.coords[a * r..(a + 1) * r].cmp(&self.coords[b * r..(b + 1) * r]));
        let mut coords = Vec::with_capacity(self.coords.len());
        let mut values: Vec<f64> = Vec::with_capacity(self.len());
        for &k in &perm {
            let c = self.entry(k);
            if !values.is_empty() && &coords[coords.len() - r..] == c {
                if let Some(v) = values.last_mut() {
                    *v += self.values[k];
                }
            } else {
                coords.extend_from_slice(c);
                values.push(self.values[k]);
            }
        }
        self.coords = coords;
        self.values = values;
    }
    /// The dense row-major array this tensor denotes (duplicates summed).
    /// `None` when it would exceed [`super::build::MAX_STORED`] values.
    pub fn to_dense_values(&self) -> Option<Vec<f64>> {
        let n = self.dims.iter().try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))?;
        if n as u64 > super::build::MAX_STORED {
            return None;
        }
        let mut out = vec![0.0f64; n];
        for k in 0..self.len() {
            let mut flat = 0usize;
            for (c, d) in self.entry(k).iter().zip(&self.dims) {
                flat = flat * (*d as usize) + *c as usize;
            }
            // `0.0 + -0.0` is +0: a lone -0 entry is stored, not added.
            let slot = &mut out[flat];
            *slot = if slot.to_bits() == 0 { self.values[k] } else { *slot + self.values[k] };
        }
        Some(out)
    }
}

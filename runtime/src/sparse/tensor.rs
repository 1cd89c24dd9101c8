//! The stored sparse tensor and iteration over its entries.

use super::buffer::IndexBuf;
use super::coo::Coo;
use crate::scalars::ScalarVec;
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat, map};

/// A tensor stored per its encoding, with MLIR's buffers:
/// `positions[l]` for (loose_)compressed levels, `coordinates[l]` for levels
/// that store coordinates (an array-of-structs COO region keeps all its
/// coordinates interleaved in the buffer of its first level; the singletons'
/// entries are `None`), and the values.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseTensor {
    /// The encoding.
    pub encoding: Encoding,
    /// The element type: the type of `values`.
    pub elem: ScalarType,
    /// Dimension sizes.
    pub dim_sizes: Vec<u64>,
    /// Level sizes (from the dimension sizes through the map).
    pub lvl_sizes: Vec<u64>,
    /// Positions buffer per level, `None` where the level has none.
    pub positions: Vec<Option<IndexBuf>>,
    /// Coordinates buffer per level, `None` where the level has none.
    pub coordinates: Vec<Option<IndexBuf>>,
    /// The values, at the element type.
    pub values: ScalarVec,
}

impl SparseTensor {
    /// Number of stored entries (explicit zeros included).
    pub fn nse(&self) -> usize {
        self.values.len()
    }

    /// The coordinate that level `l` stores at position `p`, whichever
    /// buffer (own or AoS) holds it. A difference level's signed offset
    /// comes back as the internal coordinate `offset + bias` (see
    /// `heddle_ir::encoding::map`); storage that was validated has it in
    /// range.
    #[inline]
    pub fn crd(&self, l: usize, p: usize) -> u64 {
        if self.encoding.signed_level(l)
            && let Some(b) = &self.coordinates[l]
        {
            let bias = map::diff_bias(&self.encoding, &self.dim_sizes);
            return map::offset_level(b.get_signed(p), bias).unwrap_or(u64::MAX);
        }
        if let Some(b) = &self.coordinates[l] {
            let stride = self.encoding.aos_run(l).map_or(1, |r| r.len());
            return b.get(p * stride);
        }
        // A singleton inside an AoS run: find the run's head.
        for h in (0..l).rev() {
            if let (Some(r), Some(b)) = (self.encoding.aos_run(h), &self.coordinates[h])
                && r.contains(&l)
            {
                return b.get(p * r.len() + (l - h));
            }
        }
        0
    }

    /// Does the storage hold padding zeros (dense levels below a sparse one,
    /// a dense innermost level, n:m padding, a skyline row's zeros)? Such zeros are dropped when the
    /// tensor is read back as coordinates; explicit zeros of purely
    /// compressed storage are kept.
    pub fn has_padding(&self) -> bool {
        // Batches' rows end in padding when a batch stores fewer entries than the longest.
        if super::batch::batch_rank(&self.encoding) > 0 {
            return true;
        }
        let lv = &self.encoding.levels;
        let first_sparse = lv.iter().position(|l| !l.format.is_dense_like());
        lv.last().is_some_and(|l| l.format.is_dense_like())
            || lv.iter().any(|l| matches!(l.format, LevelFormat::NOutOfM { .. } | LevelFormat::Banded))
            || first_sparse.is_some_and(|f| lv[f..].iter().any(|l| l.format.is_dense_like()))
    }

    /// Calls `f(level coordinates, position in values)` for every stored entry, in storage order.
    pub fn for_each_stored(&self, f: &mut dyn FnMut(&[u64], usize)) {
        if super::batch::batch_rank(&self.encoding) > 0 {
            // Validated when built, so its batches split (see `batch`).
            let split = super::batch::for_each_stored(self, f);
            debug_assert!(split.is_ok(), "a stored batched tensor splits into its batches");
            return;
        }
        let mut lvl = vec![0u64; self.encoding.lvl_rank()];
        self.walk(0, 0, &mut lvl, f);
    }

    fn walk(&self, l: usize, q: usize, lvl: &mut Vec<u64>, f: &mut dyn FnMut(&[u64], usize)) {
        if l == self.encoding.lvl_rank() {
            f(lvl, q);
            return;
        }
        let pos = |i: usize| self.positions[l].as_ref().map_or(0, |b| b.get(i) as usize);
        match self.encoding.levels[l].format {
            // Batch levels are split off before the walk (`for_each_stored`).
            LevelFormat::Dense | LevelFormat::Batch => {
                let n = self.lvl_sizes[l] as usize;
                for c in 0..n {
                    lvl[l] = c as u64;
                    self.walk(l + 1, q * n + c, lvl, f);
                }
            }
            LevelFormat::Compressed => {
                for p in pos(q)..pos(q + 1) {
                    lvl[l] = self.crd(l, p);
                    self.walk(l + 1, p, lvl, f);
                }
            }
            LevelFormat::LooseCompressed => {
                for p in pos(2 * q)..pos(2 * q + 1) {
                    lvl[l] = self.crd(l, p);
                    self.walk(l + 1, p, lvl, f);
                }
            }
            LevelFormat::Singleton => {
                lvl[l] = self.crd(l, q);
                self.walk(l + 1, q, lvl, f);
            }
            LevelFormat::Banded => {
                // Row lvl[l - 1] ends on the diagonal; its coordinates are implicit.
                let (lo, hi) = (pos(q), pos(q + 1));
                let row = if l > 0 { lvl[l - 1] } else { 0 };
                for p in lo..hi {
                    lvl[l] = (row + 1 + (p - lo) as u64).saturating_sub((hi - lo) as u64);
                    self.walk(l + 1, p, lvl, f);
                }
            }
            LevelFormat::NOutOfM { n, .. } => {
                let n = n as usize;
                for p in q * n..(q + 1) * n {
                    lvl[l] = self.crd(l, p);
                    self.walk(l + 1, p, lvl, f);
                }
            }
        }
    }

    /// The entries as dimension coordinates, in storage order; padding zeros
    /// (see [`SparseTensor::has_padding`]) are left out.
    pub fn to_coo(&self) -> Coo {
        if super::batch::batch_rank(&self.encoding) > 0 {
            // Validated when built, so its batches split (see `batch`).
            let coo = super::batch::to_coo(self);
            debug_assert!(coo.is_ok(), "a stored batched tensor splits into its batches");
            return coo.unwrap_or_else(|_| Coo::of_type(self.dim_sizes.clone(), self.elem));
        }
        let mut coords = Vec::with_capacity(self.nse() * self.dim_sizes.len());
        // CSR / CSC: straight from the buffers, without the generic walk.
        if let Some((a, b)) = super::csr::csr_like(&self.encoding)
            && let (Some(pos), Some(crd)) = (&self.positions[1], &self.coordinates[1])
        {
            let mut x = [0u64; 2];
            for r in 0..self.lvl_sizes[0] as usize {
                x[a] = r as u64;
                for p in pos.get(r) as usize..pos.get(r + 1) as usize {
                    x[b] = crd.get(p);
                    coords.extend_from_slice(&x);
                }
            }
            // Every value, in order: the CSR positions cover them all.
            let last = pos.get(pos.len() - 1) as usize;
            return Coo { dims: self.dim_sizes.clone(), coords, values: self.values.slice(0..last) };
        }
        let skip_zeros = self.has_padding();
        // Padding is the implicit value (+0 unless the encoding says otherwise).
        let implicit = super::assemble::implicit_value(&self.encoding);
        let padding_is_zero = implicit.to_f64() == 0.0;
        let mut dim = vec![0u64; self.dim_sizes.len()];
        let mut at = Vec::with_capacity(self.nse());
        let enc = &self.encoding;
        let bias = map::diff_bias(enc, &self.dim_sizes);
        self.for_each_stored(&mut |lvl, q| {
            // Padding is +0; an explicit -0 is kept.
            if skip_zeros
                && (if padding_is_zero {
                    self.values.is_padding(q)
                } else {
                    self.values.num(q).to_f64() == implicit.to_f64()
                })
            {
                return;
            }
            // DIA's padding past the matrix's edge holds no entries, whatever its value.
            if !map::lvl_to_dim(enc, &self.dim_sizes, bias, lvl, &mut dim) {
                return;
            }
            coords.extend_from_slice(&dim);
            at.push(q);
        });
        Coo { dims: self.dim_sizes.clone(), coords, values: self.values.gather(&at) }
    }
}

//! How many bytes a tensor would take stored in an encoding, found before it
//! is stored: Chou et al.'s attribute queries, run on the entries alone.
//!
//! `heddle tune --matrix` binds one matrix to several variants of a kernel,
//! each in its own encoding; an encoding that does not suit the matrix (DIA
//! over a matrix with thousands of diagonals, BSR over scattered entries,
//! ELL with many slices) can need many times the memory of its CSR form.
//! The estimate lets such a variant be skipped, with the sizes as its
//! reason, instead of allocated.

use super::coo::Coo;
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat, map};
use std::collections::HashSet;

/// Bytes of a tensor's storage: its positions, coordinates and values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageSize {
    /// Every buffer's bytes together.
    pub bytes: u64,
    /// Stored values (entries and padding).
    pub values: u64,
}

/// The bytes `coo` would take stored in `enc` with values of type `elem`.
///
/// Per level, the number of positions: a dense level multiplies its
/// parent's by its size; a sparse level holds one per distinct prefix of
/// level coordinates (DIA's diagonals, BSR's blocks, DCSR's rows; the last
/// level's are the entries).
/// Compressed levels add their positions buffer. Duplicate entries count
/// once (as they are summed when stored). An error when the encoding's
/// level sizes cannot be formed from the tensor's shape.
pub fn storage_size(coo: &Coo, enc: &Encoding, elem: ScalarType) -> Result<StorageSize, String> {
    let lvl_sizes = map::lvl_sizes(enc, &coo.dims)?;
    let bias = map::diff_bias(enc, &coo.dims);
    let sorted;
    let coo = if coo.is_sorted_unique() {
        coo
    } else {
        let mut c = coo.clone();
        c.sort_and_sum();
        sorted = c;
        &sorted
    };
    let entries = coo.len() as u64;
    let lr = enc.levels.len();
    // ELL's counter: an entry's rank among the entries sharing the counted
    // dimension's coordinate (the entries are sorted, so a running count).
    let counted = map::counter_level(enc).map(|(_, dim)| dim);
    // The last level's prefixes are the entries themselves; the others' are counted.
    let exact_levels: Vec<usize> = (0..lr.saturating_sub(1)).filter(|&l| is_sparse(enc.levels[l].format)).collect();
    let mut distinct: Vec<Distinct> = exact_levels.iter().map(|_| Distinct::default()).collect();
    if !exact_levels.is_empty() {
        let mut lvl = vec![0u64; lr];
        let (mut last_major, mut count) = (u64::MAX, 0u64);
        for k in 0..coo.len() {
            let dim = coo.entry(k);
            if let Some(d) = counted {
                if dim[d] == last_major {
                    count += 1;
                } else {
                    (last_major, count) = (dim[d], 0);
                }
            }
            map::dim_to_lvl(enc, dim, count, bias, &mut lvl);
            for (set, &l) in distinct.iter_mut().zip(&exact_levels) {
                set.insert(&lvl[..=l]);
            }
        }
    }
    let byte = |bits: u32| u64::from(bits.max(8) / 8);
    let (pos_bytes, crd_bytes) = (byte(enc.pos_width.storage_bits()), byte(enc.crd_width.storage_bits()));
    let (mut parents, mut bytes) = (1u64, 0u64);
    for (l, (level, &size)) in enc.levels.iter().zip(&lvl_sizes).enumerate() {
        let here = match level.format {
            LevelFormat::Dense | LevelFormat::Batch => parents.saturating_mul(size),
            LevelFormat::NOutOfM { n, .. } => parents.saturating_mul(u64::from(n)),
            _ => match exact_levels.iter().position(|&x| x == l) {
                Some(k) => distinct[k].len(),
                None => parents.saturating_mul(size).min(entries),
            },
        };
        let positions = match level.format {
            LevelFormat::Compressed | LevelFormat::Banded => parents.saturating_add(1),
            LevelFormat::LooseCompressed => parents.saturating_mul(2),
            _ => 0,
        };
        let coordinates =
            if is_sparse(level.format) || matches!(level.format, LevelFormat::NOutOfM { .. }) { here } else { 0 };
        bytes = bytes
            .saturating_add(positions.saturating_mul(pos_bytes))
            .saturating_add(coordinates.saturating_mul(crd_bytes));
        parents = here;
    }
    let values = parents;
    // An iso-valued encoding (`explicitVal` without padding slots) stores no values.
    if heddle_ir::encoding::storage_types::iso_value(enc, elem).is_none() {
        bytes = bytes.saturating_add(values.saturating_mul(elem.size_bytes() as u64));
    }
    Ok(StorageSize { bytes, values })
}

/// The bytes of `coo` as plain CSR (64-bit positions and coordinates), or
/// for another rank as COO: what a storage is compared with.
pub fn plain_size(coo: &Coo, elem: ScalarType) -> u64 {
    let entries = coo.len() as u64;
    let value = elem.size_bytes() as u64;
    match coo.dims.as_slice() {
        // Saturating: a file's size line may give 2^64 - 1 rows.
        [rows, _] => rows.saturating_add(1).saturating_mul(8).saturating_add(entries * (8 + value)),
        dims => entries * (dims.len() as u64 * 8 + value),
    }
}

fn is_sparse(f: LevelFormat) -> bool {
    matches!(f, LevelFormat::Compressed | LevelFormat::LooseCompressed | LevelFormat::Singleton)
}

/// Distinct prefixes of level coordinates: packed into a `u128` where each
/// coordinate fits 32 bits and there are at most four, else as vectors.
#[derive(Default)]
struct Distinct {
    packed: HashSet<u128>,
    wide: HashSet<Vec<u64>>,
}

impl Distinct {
    fn insert(&mut self, prefix: &[u64]) {
        if prefix.len() <= 4 && prefix.iter().all(|&c| c < 1 << 32) {
            self.packed.insert(prefix.iter().fold(0u128, |acc, &c| (acc << 32) | u128::from(c)));
        } else {
            self.wide.insert(prefix.to_vec());
        }
    }
    fn len(&self) -> u64 {
        (self.packed.len() + self.wide.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalars::ScalarVec;
    use heddle_ir::encoding::parse_encoding;

    fn coo(dims: [u64; 2], entries: &[(u64, u64)]) -> Coo {
        let coords = entries.iter().flat_map(|&(i, j)| [i, j]).collect();
        Coo { dims: dims.to_vec(), coords, values: ScalarVec::from(vec![1.0f64; entries.len()]) }
    }

    fn enc(text: &str) -> Encoding {
        parse_encoding(text, 0).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    /// The estimate equals the bytes of the storage conversion builds.
    fn built_bytes(c: &Coo, e: &Encoding) -> u64 {
        let t = crate::sparse::build::pack(c, e, ScalarType::F64).expect("pack");
        let s = t.stats();
        let buffers = s
            .levels
            .iter()
            .flat_map(|l| [l.positions.as_ref(), l.coordinates.as_ref()])
            .flatten()
            .map(|b| b.bytes as u64)
            .sum::<u64>();
        buffers + s.values.bytes as u64
    }

    #[test]
    fn dia_counts_each_diagonal_over_every_row() {
        // Diagonals 0 and +1 of a 4x4 matrix: 2 diagonals x 4 rows stored.
        let c = coo([4, 4], &[(0, 0), (1, 1), (2, 2), (3, 3), (0, 1), (2, 3)]);
        let e = enc("#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, i : dense) }>");
        let s = storage_size(&c, &e, ScalarType::F64).unwrap();
        assert_eq!(s.values, 8);
        assert_eq!(s.bytes, built_bytes(&c, &e));
    }

    #[test]
    fn csr_and_bsr_match_what_is_built() {
        let c = coo([4, 6], &[(0, 5), (1, 0), (1, 1), (3, 2)]);
        for text in [
            "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>",
            "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>",
            "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>",
            "#sparse_tensor.encoding<{ map = [c](i, j) -> (c * 2 * i : dense, i : dense, j : compressed) }>",
        ] {
            let e = enc(text);
            assert_eq!(storage_size(&c, &e, ScalarType::F64).unwrap().bytes, built_bytes(&c, &e), "{text}");
        }
    }

    #[test]
    fn scattered_diagonals_cost_far_more_than_csr() {
        // An anti-diagonal of 100 entries: 100 diagonals of 100 rows each.
        let entries: Vec<(u64, u64)> = (0..100).map(|i| (i, 99 - i)).collect();
        let c = coo([100, 100], &entries);
        let e = enc("#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, i : dense) }>");
        let s = storage_size(&c, &e, ScalarType::F64).unwrap();
        assert_eq!(s.values, 100 * 100);
        assert!(s.bytes > 3 * plain_size(&c, ScalarType::F64));
    }
}

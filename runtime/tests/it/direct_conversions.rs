//! The direct conversions (issue 12): COO → CSR / CSC and CSR ↔ CSC
//! (counting sorts at the storage widths) and CSR / CSC → BSR (blocks per
//! block row), each equal, buffer for buffer, to the general path (sort in
//! level order, level-by-level assembly) on random matrices: unsorted
//! entries with duplicates, explicit zeros, empty rows, narrow widths, and
//! every error the general path reports.

use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, parse_encoding};
use heddle_runtime::sparse::assemble::{Buffers, assemble};
use heddle_runtime::sparse::build::{pack, pack_columns};
use heddle_runtime::sparse::convert::convert;
use heddle_runtime::sparse::coo::CooColumns;
use heddle_runtime::sparse::{Coo, SparseTensor};

fn enc(body: &str) -> Encoding {
    parse_encoding(&format!("#sparse_tensor.encoding<{{ {body} }}>"), 0).unwrap()
}

const CSR: &str = "map = (i, j) -> (i : dense, j : compressed)";
const CSC: &str = "map = (i, j) -> (j : dense, i : compressed)";

/// Deterministic xorshift64* numbers.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random `m` x `n` matrix with about `fill` of its entries, in random
/// order with some repeated (they add up) and some zeros (stored explicitly).
fn random(rng: &mut Rng, m: u64, n: u64, fill: f64) -> Coo {
    let mut c = Coo::new(vec![m, n]);
    let count = ((m * n) as f64 * fill) as u64;
    for _ in 0..count {
        let (i, j) = (rng.below(m), rng.below(n));
        // Multiples of 1/4 in [-2, 2]: sums of duplicates are exact in any order.
        c.push(&[i, j], rng.below(17) as f64 / 4.0 - 2.0);
    }
    c
}

/// The general path: the entries, sorted and assembled level by level.
fn general(t: &SparseTensor, target: &Encoding) -> SparseTensor {
    pack(&t.to_coo(), target, t.elem).unwrap()
}

/// The entries sorted and summed: what CSR holds, in its order.
fn sorted_entries(c: &Coo) -> Coo {
    let mut c = c.clone();
    c.sort_and_sum();
    c
}

#[test]
fn coo_to_csr_and_csc_equal_the_sorted_entries_at_every_width() {
    let mut rng = Rng(0x1234_5678);
    for (m, n, fill) in [(1, 1, 1.0), (7, 5, 0.3), (40, 33, 0.2), (300, 2, 0.5), (3, 300, 0.5), (64, 64, 0.0)] {
        let c = random(&mut rng, m, n, fill);
        let want = sorted_entries(&c);
        for widths in ["", ", posWidth = 32, crdWidth = 32", ", posWidth = 16, crdWidth = 16", ", crdWidth = 64"] {
            for (map, transposed) in [(CSR, false), (CSC, true)] {
                let target = enc(&format!("{map}{widths}"));
                let t = pack(&c, &target, ScalarType::F64).unwrap();
                let bits = |w: &str| {
                    if w.contains("= 16") {
                        16
                    } else if w.contains("= 32") {
                        32
                    } else {
                        64
                    }
                };
                assert_eq!(t.positions[1].as_ref().unwrap().bits(), bits(widths), "{widths}");
                // Read back in storage order: CSC's order is by column.
                let mut got = t.to_coo();
                if transposed {
                    got.sort_and_sum();
                }
                assert_eq!(got, want, "{m}x{n} {map}{widths}");
            }
        }
    }
}

#[test]
fn csr_csc_transpose_equals_the_general_path() {
    let mut rng = Rng(99);
    for (m, n, fill) in [(1, 1, 1.0), (9, 4, 0.4), (50, 70, 0.1), (2, 200, 0.3), (200, 3, 0.3), (5, 5, 0.0)] {
        let c = random(&mut rng, m, n, fill);
        for src_widths in ["", ", posWidth = 32, crdWidth = 32", ", crdWidth = 8, posWidth = 16"] {
            if src_widths.contains("crdWidth = 8") && m.max(n) > 255 {
                continue;
            }
            let src = pack(&c, &enc(&format!("{CSR}{src_widths}")), ScalarType::F64).unwrap();
            for target in [CSC.to_string(), format!("{CSC}, posWidth = 32, crdWidth = 32")] {
                let target = enc(&target);
                assert_eq!(convert(&src, &target).unwrap(), general(&src, &target), "{m}x{n} {src_widths}");
                // And back.
                let csc = convert(&src, &target).unwrap();
                let back = enc(&format!("{CSR}{src_widths}"));
                assert_eq!(convert(&csc, &back).unwrap(), src);
            }
        }
    }
}

#[test]
fn csr_and_csc_to_bsr_equal_the_general_path() {
    let mut rng = Rng(7);
    let blocks = [(1, 1), (2, 2), (2, 3), (3, 1), (4, 4)];
    for (m, n, fill) in [(12, 12, 0.2), (24, 36, 0.05), (48, 12, 0.5), (12, 48, 0.0), (12, 12, 1.0)] {
        let c = random(&mut rng, m, n, fill);
        let csr = pack(&c, &enc(CSR), ScalarType::F64).unwrap();
        let csc = pack(&c, &enc(&format!("{CSC}, crdWidth = 32")), ScalarType::F64).unwrap();
        for (r, k) in blocks {
            let inside_row_major = format!(
                "(i, j) -> (i floordiv {r} : dense, j floordiv {k} : compressed, i mod {r} : dense, j mod {k} : dense)"
            );
            let inside_col_major = format!(
                "(i, j) -> (i floordiv {r} : dense, j floordiv {k} : compressed, j mod {k} : dense, i mod {r} : dense)"
            );
            let by_columns = format!(
                "(i, j) -> (j floordiv {k} : dense, i floordiv {r} : compressed, i mod {r} : dense, j mod {k} : dense)"
            );
            for map in [inside_row_major, inside_col_major, by_columns] {
                for widths in ["", ", posWidth = 32, crdWidth = 32"] {
                    let target = enc(&format!("map = {map}{widths}"));
                    for (name, src) in [("csr", &csr), ("csc", &csc)] {
                        let direct = convert(src, &target).unwrap();
                        assert_eq!(direct, general(src, &target), "{m}x{n} {map}{widths} from {name}");
                    }
                }
            }
        }
    }
}

#[test]
fn csr_to_ell_equals_the_general_path() {
    let mut rng = Rng(31);
    for (m, n, fill) in [(1, 1, 1.0), (10, 8, 0.3), (30, 40, 0.1), (6, 6, 0.0), (5, 9, 1.0)] {
        let c = random(&mut rng, m, n, fill);
        for widths in ["", ", posWidth = 32, crdWidth = 32"] {
            let csr = pack(&c, &enc(&format!("{CSR}{widths}")), ScalarType::F64).unwrap();
            let longest = (0..m as usize)
                .map(|i| csr.positions[1].as_ref().unwrap().get(i + 1) - csr.positions[1].as_ref().unwrap().get(i))
                .max()
                .unwrap_or(0);
            for k in [longest.max(1), longest + 2] {
                let target =
                    enc(&format!("map = [c](i, j) -> (c * {k} * i : dense, i : dense, j : compressed){widths}"));
                assert_eq!(convert(&csr, &target).unwrap(), general(&csr, &target), "{m}x{n} K = {k}");
            }
            if longest > 1 {
                // Too few slices: the same error as the general path.
                let target =
                    enc(&format!("map = [c](i, j) -> (c * {} * i : dense, i : dense, j : compressed)", longest - 1));
                let direct = convert(&csr, &target).unwrap_err().to_string();
                assert_eq!(direct, pack(&csr.to_coo(), &target, ScalarType::F64).unwrap_err().to_string());
                assert!(direct.contains("the number of ELL slices"), "{direct}");
            }
        }
    }
}

#[test]
fn bsr_keeps_explicit_zeros_and_integer_values() {
    // An explicit zero makes a block, as on the general path; i32 values stay i32.
    let b = Buffers {
        positions: vec![None, Some(vec![0, 2, 2, 3, 4])],
        coordinates: vec![None, Some(vec![0, 5, 1, 3])],
        values: heddle_runtime::scalars::ScalarVec::from(vec![0i32, 7, -3, 2]),
    };
    let csr = assemble(&enc(CSR), ScalarType::I32, vec![4, 6], b).unwrap();
    let bsr =
        enc("map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)");
    let t = convert(&csr, &bsr).unwrap();
    assert_eq!(t, general(&csr, &bsr));
    assert_eq!(t.coordinates[1].as_ref().unwrap().to_u64(), vec![0, 2, 0, 1]);
    assert_eq!(
        t.values,
        heddle_runtime::scalars::ScalarVec::from(vec![0i32, 0, 0, 0, 0, 7, 0, 0, 0, -3, 0, 0, 0, 0, 0, 2])
    );
}

#[test]
fn direct_paths_report_what_the_general_path_reports() {
    // A coordinate outside its dimension: the first such entry, by its dimension.
    let mut c = Coo::new(vec![4, 5]);
    c.push(&[1, 2], 1.0);
    c.push(&[2, 5], 1.0);
    c.push(&[4, 0], 1.0);
    for map in [CSR, CSC] {
        let e = pack(&c, &enc(map), ScalarType::F64).unwrap_err().to_string();
        assert!(e.contains("entry 1 has coordinate 5 in dimension 1, outside its size 5"), "{e}");
    }
    let mut c = Coo::new(vec![4, 5]);
    c.push(&[9, 9], 1.0);
    let e = pack(&c, &enc(CSR), ScalarType::F64).unwrap_err().to_string();
    assert!(e.contains("entry 0 has coordinate 9 in dimension 0"), "{e}");
    // A coordinate the encoding's width cannot hold names the buffer and position.
    let mut c = Coo::new(vec![2, 300]);
    c.push(&[0, 3], 1.0);
    c.push(&[1, 299], 1.0);
    let e = pack(&c, &enc(&format!("{CSR}, crdWidth = 8")), ScalarType::F64).unwrap_err().to_string();
    assert!(e.contains("coordinates[1]") && e.contains("299 does not fit in 8 bits"), "{e}");
    let mut tall = Coo::new(vec![300, 2]);
    tall.push(&[3, 0], 1.0);
    tall.push(&[299, 1], 1.0);
    let csr = pack(&tall, &enc(CSR), ScalarType::F64).unwrap();
    let e = convert(&csr, &enc(&format!("{CSC}, crdWidth = 8"))).unwrap_err().to_string();
    assert!(e.contains("coordinates[1]") && e.contains("299 does not fit in 8 bits"), "{e}");
    let csr = pack(&c, &enc(CSR), ScalarType::F64).unwrap();
    // A block size that does not divide the dimension.
    let e = convert(
        &csr,
        &enc("map = (i, j) -> (i floordiv 2 : dense, j floordiv 7 : compressed, i mod 2 : dense, j mod 7 : dense)"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not a multiple of its block size 7"), "{e}");
}

#[test]
fn a_hypersparse_csr_matrix_converts_to_bsr_without_a_slot_per_block_column() {
    // 10^12 columns, two entries: marking would need a slot per block column;
    // the merge (2-row blocks) needs none, and taller blocks take the general
    // path instead, as `.mtx` input does. Either equals the general path.
    let mut c = Coo::new(vec![20, 1_000_000_000_000]);
    c.push(&[0, 999_999_999_998], 2.5);
    c.push(&[3, 7], -1.0);
    let csr = pack(&c, &enc(CSR), ScalarType::F64).unwrap();
    for r in [2, 10] {
        let target = enc(&format!(
            "map = (i, j) -> (i floordiv {r} : dense, j floordiv 2 : compressed, i mod {r} : dense, j mod 2 : dense)"
        ));
        let direct = convert(&csr, &target).unwrap();
        assert_eq!(direct, general(&csr, &target));
        assert_eq!(direct.nse(), 2 * 2 * r as usize, "two {r} x 2 blocks");
        // Block column 499 999 999 999 does not fit in 32 bits: the same error.
        let narrow = enc(&format!(
            "map = (i, j) -> (i floordiv {r} : dense, j floordiv 2 : compressed, i mod {r} : dense, j mod 2 : dense), crdWidth = 32"
        ));
        let e = convert(&csr, &narrow).unwrap_err().to_string();
        assert_eq!(e, pack(&c, &narrow, ScalarType::F64).unwrap_err().to_string());
        assert!(e.contains("coordinates[1]") && e.contains("499999999999 does not fit in 32 bits"), "{e}");
    }
}

/// The same result, or the same error, from two conversions.
fn same_outcome(
    a: Result<SparseTensor, heddle_runtime::sparse::SparseError>,
    b: Result<SparseTensor, heddle_runtime::sparse::SparseError>,
    what: &str,
) {
    match (a, b) {
        (Ok(x), Ok(y)) => assert_eq!(x, y, "{what}"),
        (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string(), "{what}"),
        (x, y) => panic!("{what}: {:?} against {:?}", x.map(|t| t.nse()), y.map(|t| t.nse())),
    }
}

/// Entries kept as coordinate columns (a coo `.npz`) are 32-bit exactly
/// when every dimension is at most 2^32, and COO → CSR / CSC from them
/// equals the interleaved entries' path and the sorted entries, on both
/// sides of that boundary, with repeated entries, at native and 32-bit
/// coordinate widths (where 2^32 does not fit: the same error).
#[test]
fn coordinate_columns_convert_as_the_interleaved_entries_do() {
    let mut rng = Rng(0x5eed);
    let big = 1u64 << 32;
    // (shape, CSR-like target): the outer dimension stays small, so its positions fit in memory.
    for (m, n, map) in
        [(6, big, CSR), (6, big + 1, CSR), (big, 6, CSC), (big + 1, 6, CSC), (40, 33, CSR), (40, 33, CSC)]
    {
        let mut c = Coo::new(vec![m, n]);
        let pick = |rng: &mut Rng, d: u64| [0, 1, d - 2, d - 1, rng.below(d)][rng.below(5) as usize];
        for _ in 0..60 {
            let (i, j) = (pick(&mut rng, m), pick(&mut rng, n));
            c.push(&[i, j], rng.below(17) as f64 / 4.0 - 2.0);
        }
        let columns = |c: &Coo| {
            let col = |d: usize| (0..c.len()).map(|k| c.entry(k)[d]).collect::<Vec<u64>>();
            CooColumns::new(c.dims.clone(), vec![col(0), col(1)], c.values.clone())
        };
        // Also grouped by the target's outer dimension (inner coordinates still unsorted,
        // repeats kept): the counting sort keeps the inner column and the values as they are.
        let outer = if map == CSR { 0 } else { 1 };
        let mut order: Vec<usize> = (0..c.len()).collect();
        order.sort_by_key(|&k| c.entry(k)[outer]);
        let mut grouped = Coo::new(c.dims.clone());
        for &k in &order {
            grouped.push(c.entry(k), c.values.num(k).to_f64());
        }
        for c in [c, grouped] {
            let cols = columns(&c);
            let bits = if m.max(n) <= big { 32 } else { 64 };
            assert_eq!((cols.column(0).bits(), cols.column(1).bits()), (bits, bits), "{m}x{n}");
            assert_eq!(cols.clone().into_coo(), c, "{m}x{n}: the same entries, in order");
            for widths in ["", ", crdWidth = 32", ", posWidth = 32, crdWidth = 32"] {
                let target = enc(&format!("{map}{widths}"));
                let what = format!("{m}x{n} {map}{widths}");
                let direct = pack_columns(cols.clone(), &target, ScalarType::F64);
                if let Ok(t) = &direct {
                    let mut got = t.to_coo();
                    got.sort_and_sum();
                    assert_eq!(got, sorted_entries(&c), "{what}");
                } else {
                    assert!(widths.contains("crdWidth = 32") && m.max(n) > big, "{what}: {:?}", direct.err());
                }
                same_outcome(direct, pack(&c, &target, ScalarType::F64), &what);
            }
            // Values that the element type cannot hold: the same error.
            same_outcome(
                pack_columns(cols, &enc(map), ScalarType::I32),
                pack(&c, &enc(map), ScalarType::I32),
                &format!("{m}x{n} as i32"),
            );
        }
    }
}

#[test]
fn coordinate_columns_report_the_first_entry_outside_as_the_entries_do() {
    // Entry 1 is outside in its inner dimension for CSR, entry 2 in its outer one.
    // The last two are grouped by rows (CSR's outer dimension), which keeps the columns as they are.
    let cases: [(&[[u64; 2]], &str); 5] = [
        (&[[1, 2], [2, 5], [4, 0]], "entry 1 has coordinate 5 in dimension 1, outside its size 5"),
        (&[[1, 2], [9, 1], [2, 7]], "entry 1 has coordinate 9 in dimension 0, outside its size 4"),
        (&[[1, 2], [3, 4], [3, 4], [0, 1 << 40]], "entry 3 has coordinate 1099511627776 in dimension 1"),
        (&[[0, 1], [1, 7], [2, 2], [5, 0]], "entry 1 has coordinate 7 in dimension 1, outside its size 5"),
        (&[[0, 1], [1, 2], [1, 0], [9, 3]], "entry 3 has coordinate 9 in dimension 0, outside its size 4"),
    ];
    for (entries, want) in cases {
        let mut c = Coo::new(vec![4, 5]);
        for e in entries {
            c.push(e, 1.0);
        }
        let cols = CooColumns::new(
            c.dims.clone(),
            (0..2).map(|d| entries.iter().map(|e| e[d]).collect()).collect(),
            c.values.clone(),
        );
        for map in [CSR, CSC] {
            let e = pack_columns(cols.clone(), &enc(map), ScalarType::F64).unwrap_err().to_string();
            assert!(e.contains(want), "{map}: {e}");
            assert_eq!(e, pack(&c, &enc(map), ScalarType::F64).unwrap_err().to_string());
        }
    }
}

#[test]
fn tall_blocks_and_unsorted_rows_take_the_marking_path_to_bsr() {
    // Blocks of more than 8 rows, and CSR whose rows are stored unsorted
    // (`nonordered`), are not merged; both equal the general path.
    let mut rng = Rng(77);
    let unsorted = "map = (i, j) -> (i : dense, j : compressed(nonordered))";
    for (m, n, fill) in [(36, 60, 0.1), (72, 120, 0.3), (36, 60, 0.0)] {
        let c = random(&mut rng, m, n, fill);
        let csr = pack(&c, &enc(CSR), ScalarType::F64).unwrap();
        // The same rows, each reversed.
        let pos = csr.positions[1].as_ref().unwrap().to_u64();
        let crd = csr.coordinates[1].as_ref().unwrap().to_u64();
        let (mut rcrd, mut rvals) = (Vec::new(), Vec::<f64>::new());
        let vals: Vec<f64> = (0..csr.nse()).map(|k| csr.values.num(k).to_f64()).collect();
        for w in pos.windows(2) {
            rcrd.extend(crd[w[0] as usize..w[1] as usize].iter().rev());
            rvals.extend(vals[w[0] as usize..w[1] as usize].iter().rev());
        }
        let b = Buffers {
            positions: vec![None, Some(pos.clone())],
            coordinates: vec![None, Some(rcrd)],
            values: heddle_runtime::scalars::ScalarVec::from(rvals),
        };
        let reversed = assemble(&enc(unsorted), ScalarType::F64, vec![m, n], b).unwrap();
        for (r, k) in [(9, 2), (12, 5), (2, 4), (1, 3)] {
            for widths in ["", ", posWidth = 32, crdWidth = 32"] {
                let target = enc(&format!(
                    "map = (i, j) -> (i floordiv {r} : dense, j floordiv {k} : compressed, i mod {r} : dense, j mod {k} : dense){widths}"
                ));
                for (name, src) in [("sorted", &csr), ("unsorted rows", &reversed)] {
                    assert_eq!(
                        convert(src, &target).unwrap(),
                        general(src, &target),
                        "{m}x{n} {r}x{k}{widths} from {name}"
                    );
                }
            }
        }
    }
}

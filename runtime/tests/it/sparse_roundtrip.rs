//! Round trips: for random 2-D and 3-D tensors (empty ones, single entries,
//! duplicates in the file), file → encoding A → encoding B → dense equals the
//! file's tensor densified, for every pair of encodings.

use heddle_ir::encoding::{Encoding, parse_encoding};
use heddle_runtime::sparse::convert::{convert, from_dense, to_dense};
use heddle_runtime::sparse::dense::DenseTensor;
use heddle_runtime::sparse::{Coo, SparseError, file};
use proptest::prelude::*;
use std::io::Write;

const ENC2: &[&str] = &[
    "map = (i, j) -> (i : dense, j : compressed)",
    "map = (i, j) -> (j : dense, i : compressed), posWidth = 16, crdWidth = 8",
    "map = (i, j) -> (i : compressed, j : compressed)",
    "map = (i, j) -> (j : compressed, i : compressed)",
    "map = (i, j) -> (i : compressed(nonunique), j : singleton)",
    "map = (i, j) -> (j : compressed(nonunique), i : singleton(soa))",
    "map = (i, j) -> (i : compressed(nonunique), j : singleton(nonunique))",
    "map = (i, j) -> (i : dense, j : loose_compressed)",
    "map = (i, j) -> (i : compressed(nonordered), j : compressed(nonordered))",
    "map = (i, j) -> (i floordiv 2 : dense, j floordiv 4 : compressed, i mod 2 : dense, j mod 4 : dense)",
    "map = (i, j) -> (i floordiv 2 : compressed, j floordiv 2 : compressed, j mod 2 : dense, i mod 2 : dense)",
    "map = [c](i, j) -> (c * 12 * i : dense, i : dense, j : compressed)",
    "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4])",
    "map = (i, j) -> (i : dense, j : dense)",
    "map = (i, j) -> (i : compressed, j : dense)",
    "map = (i, j) -> (i : batch, j : compressed)",
];

const ENC3: &[&str] = &[
    "map = (i, j, k) -> (i : compressed, j : compressed, k : compressed)",
    "map = (i, j, k) -> (i : dense, j : compressed, k : compressed)",
    "map = (i, j, k) -> (k : dense, i : compressed, j : compressed)",
    "map = (i, j, k) -> (i : compressed(nonunique), j : singleton(nonunique), k : singleton)",
    "map = (i, j, k) -> (j : compressed(nonunique), k : singleton(nonunique, soa), i : singleton(soa))",
    "map = (i, j, k) -> (i : dense, j : dense, k : dense)",
    "map = (i, j, k) -> (i : dense, j : compressed(nonunique), k : singleton)",
    "map = (i, j, k) -> (i : batch, j floordiv 2 : compressed, k : compressed, j mod 2 : dense)",
    "map = (i, j, k) -> (i : dense, j : loose_compressed(nonunique), k : singleton)",
];

fn enc(body: &str) -> Encoding {
    parse_encoding(&format!("#sparse_tensor.encoding<{{ {body} }}>"), 0).unwrap()
}

/// A random tensor: even sizes (so 2x blocks fit), columns a multiple of 4
/// for 2-D (BSR 2x4, 2:4), small positive integer values (sums are exact),
/// coordinates drawn from a small range so duplicates are common.
fn tensor(rank: usize) -> impl Strategy<Value = Coo> {
    let dims = if rank == 2 {
        (1u64..=4, 1u64..=3).prop_map(|(r, c)| vec![2 * r, 4 * c]).boxed()
    } else {
        (1u64..=3, 1u64..=3, 1u64..=4).prop_map(|(a, b, c)| vec![a, 2 * b, c]).boxed()
    };
    dims.prop_flat_map(move |dims| {
        let d = dims.clone();
        let entry = (0..rank).map(|k| 0..d[k]).collect::<Vec<_>>();
        (Just(dims), prop::collection::vec((entry, 1i32..=9), 0..24))
    })
    .prop_map(|(dims, es)| {
        let mut c = Coo::new(dims);
        for (x, v) in es {
            c.push(&x, f64::from(v));
        }
        c
    })
}

/// Writes the entries as they are (duplicates included) in `.mtx` or `.tns`.
fn write_raw(c: &Coo, dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join(if c.rank() == 2 { "t.mtx" } else { "t.tns" });
    let mut f = std::fs::File::create(&path).unwrap();
    if c.rank() == 2 {
        writeln!(f, "%%MatrixMarket matrix coordinate integer general\n{} {} {}", c.dims[0], c.dims[1], c.len())
            .unwrap();
    } else {
        let dims: Vec<String> = c.dims.iter().map(u64::to_string).collect();
        writeln!(f, "{} {}\n{}", c.rank(), c.len(), dims.join(" ")).unwrap();
    }
    for k in 0..c.len() {
        let xs: Vec<String> = c.entry(k).iter().map(|x| (x + 1).to_string()).collect();
        writeln!(f, "{} {}", xs.join(" "), c.values.f64(k)).unwrap();
    }
    path
}

/// Formats whose capacity the data may exceed: 2:4 blocks hold two entries.
fn over_capacity(e: &SparseError) -> bool {
    matches!(e, SparseError::Shape(m) if m.contains("sparsity stores at most"))
}

fn round_trip(c: &Coo, a: &str, b: &str) -> Result<(), TestCaseError> {
    let tmp = tempdir();
    let dir = tmp.path();
    let path = write_raw(c, dir);
    let want = DenseTensor::from_coo(c).unwrap();
    let (ea, eb) = (enc(a), enc(b));
    let ta = match file::read_into_for(&path, &ea, heddle_ir::ScalarType::F64) {
        Ok(t) => t,
        Err(e) if over_capacity(&e) => return Ok(()),
        Err(e) => return Err(TestCaseError::fail(format!("{a}: {e}"))),
    };
    prop_assert_eq!(&to_dense(&ta).unwrap(), &want, "A = {}", a);
    match convert(&ta, &eb) {
        Ok(tb) => prop_assert_eq!(&to_dense(&tb).unwrap(), &want, "A = {}, B = {}", a, b),
        Err(e) if over_capacity(&e) => {}
        Err(e) => return Err(TestCaseError::fail(format!("{a} -> {b}: {e}"))),
    }
    // Dense → B directly agrees too.
    if let Ok(tb) = from_dense(&want, &eb, heddle_ir::ScalarType::F64) {
        prop_assert_eq!(&to_dense(&tb).unwrap(), &want);
    }
    Ok(())
}

/// A directory of the case's own, removed when it ends.
fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("heddle-rt-").tempdir().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn matrices(c in tensor(2), a in 0..ENC2.len(), b in 0..ENC2.len()) {
        round_trip(&c, ENC2[a], ENC2[b])?;
    }
    #[test]
    fn tensors_3d(c in tensor(3), a in 0..ENC3.len(), b in 0..ENC3.len()) {
        round_trip(&c, ENC3[a], ENC3[b])?;
    }
}

/// Every pair, on fixed edge cases: empty, one entry, all duplicates.
#[test]
fn every_pair_on_edge_cases() {
    let mut cases = vec![Coo::new(vec![2, 4])];
    let mut one = Coo::new(vec![4, 8]);
    one.push(&[3, 7], 5.0);
    cases.push(one);
    let mut dup = Coo::new(vec![2, 4]);
    for _ in 0..3 {
        dup.push(&[1, 2], 2.0);
    }
    dup.push(&[0, 0], 1.0);
    cases.push(dup);
    for c in &cases {
        for a in ENC2 {
            for b in ENC2 {
                round_trip(c, a, b).unwrap();
            }
        }
    }
    let mut c3 = Coo::new(vec![2, 2, 3]);
    c3.push(&[1, 1, 2], 4.0);
    c3.push(&[1, 1, 2], 4.0);
    for a in ENC3 {
        for b in ENC3 {
            round_trip(&c3, a, b).unwrap();
            round_trip(&Coo::new(vec![1, 2, 1]), a, b).unwrap();
        }
    }
}

/// 2:4 rejects a block with three entries instead of dropping one.
#[test]
fn structured_rejects_full_blocks() {
    let mut c = Coo::new(vec![2, 4]);
    for j in 0..3 {
        c.push(&[0, j], 1.0);
    }
    let e = heddle_runtime::sparse::build::pack(&c, &enc(ENC2[12]), heddle_ir::ScalarType::F64).unwrap_err();
    assert!(over_capacity(&e), "{e}");
}

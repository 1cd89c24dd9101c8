//! The worked storage examples of the seeds, reproduced exactly: MLIR's
//! documentation (CSR, BSR, 2:4) and the MLIR sparse paper (sparse vector,
//! CSR, (compressed, dense), DCSC, the triply compressed 3-D tensor).
//! Each test states the seed's arrays and also snapshots the `.json` storage.

use heddle_ir::ScalarType;
use heddle_ir::encoding::parse_encoding;
use heddle_runtime::sparse::assemble::disassemble;
use heddle_runtime::sparse::build::pack;
use heddle_runtime::sparse::json::storage_to_json;
use heddle_runtime::sparse::{Coo, SparseTensor, file, mtx, write};
use std::path::Path;

fn enc(body: &str) -> heddle_ir::encoding::Encoding {
    parse_encoding(&format!("#sparse_tensor.encoding<{{ {body} }}>"), 0).expect("encoding")
}

fn coo(dims: &[u64], entries: &[(&[u64], f64)]) -> Coo {
    let mut c = Coo::new(dims.to_vec());
    for (x, v) in entries {
        c.push(x, *v);
    }
    c
}

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sparse").join(name)
}

fn check(t: &SparseTensor, positions: &[Option<&[u64]>], coordinates: &[Option<&[u64]>], values: &[f64]) {
    let b = disassemble(t);
    let p: Vec<Option<Vec<u64>>> = positions.iter().map(|x| x.map(<[u64]>::to_vec)).collect();
    let c: Vec<Option<Vec<u64>>> = coordinates.iter().map(|x| x.map(<[u64]>::to_vec)).collect();
    assert_eq!(b.positions, p, "positions");
    assert_eq!(b.coordinates, c, "coordinates");
    assert_eq!(b.values.to_f64s(), values, "values");
}

// The paper's 3x4 matrix A with a00 = 1, a03 = 2, a20 = 3.
fn paper_a() -> Coo {
    coo(&[3, 4], &[(&[0, 0], 1.0), (&[0, 3], 2.0), (&[2, 0], 3.0)])
}

#[test]
fn paper_sparse_vector() {
    let x = coo(&[16], &[(&[3], 3.0), (&[6], 6.0), (&[7], 7.0), (&[10], 10.0)]);
    let t = pack(&x, &enc("map = (i) -> (i : compressed)"), ScalarType::F64).unwrap();
    check(&t, &[Some(&[0, 4])], &[Some(&[3, 6, 7, 10])], &[3.0, 6.0, 7.0, 10.0]);
    insta::assert_snapshot!("paper_sparse_vector", pretty(&storage_to_json(&t)));
}

#[test]
fn paper_csr() {
    let t = pack(&paper_a(), &enc("dimLevelType = [ \"dense\", \"compressed\" ]"), ScalarType::F64).unwrap();
    check(&t, &[None, Some(&[0, 2, 2, 3])], &[None, Some(&[0, 3, 0])], &[1.0, 2.0, 3.0]);
    insta::assert_snapshot!("paper_csr", pretty(&storage_to_json(&t)));
}

#[test]
fn paper_compressed_dense() {
    let t = pack(&paper_a(), &enc("map = (i, j) -> (i : compressed, j : dense)"), ScalarType::F64).unwrap();
    check(&t, &[Some(&[0, 2]), None], &[Some(&[0, 2]), None], &[1.0, 0.0, 0.0, 2.0, 3.0, 0.0, 0.0, 0.0]);
    insta::assert_snapshot!("paper_compressed_dense", pretty(&storage_to_json(&t)));
}

#[test]
fn paper_dcsc() {
    // Written with the paper's legacy syntax.
    let e = enc("dimLevelType = [ \"compressed\", \"compressed\" ], dimOrdering = affine_map<(i,j) -> (j,i)>");
    let t = pack(&paper_a(), &e, ScalarType::F64).unwrap();
    check(&t, &[Some(&[0, 2]), Some(&[0, 2, 3])], &[Some(&[0, 3]), Some(&[0, 2, 0])], &[1.0, 3.0, 2.0]);
    insta::assert_snapshot!("paper_dcsc", pretty(&storage_to_json(&t)));
}

#[test]
fn paper_3d_triply_compressed() {
    // The paper lists two level types for this 3-D tensor (a typo); all three are compressed.
    let t3 = coo(
        &[3, 3, 4],
        &[(&[0, 0, 0], 1.0), (&[2, 0, 0], 2.0), (&[2, 0, 2], 3.0), (&[2, 1, 2], 4.0), (&[2, 1, 3], 5.0)],
    );
    let e = enc("dimLevelType = [ \"compressed\", \"compressed\", \"compressed\" ]");
    let t = pack(&t3, &e, ScalarType::F64).unwrap();
    check(
        &t,
        &[Some(&[0, 2]), Some(&[0, 1, 3]), Some(&[0, 1, 3, 5])],
        &[Some(&[0, 2]), Some(&[0, 0, 1]), Some(&[0, 0, 2, 2, 3])],
        &[1.0, 2.0, 3.0, 4.0, 5.0],
    );
    insta::assert_snapshot!("paper_3d", pretty(&storage_to_json(&t)));
}

#[test]
fn mlir_docs_bsr_2x2() {
    let m = coo(
        &[4, 6],
        &[
            (&[0, 0], 1.0),
            (&[0, 1], 2.0),
            (&[1, 1], 3.0),
            (&[0, 4], 4.0),
            (&[1, 5], 5.0),
            (&[2, 2], 6.0),
            (&[2, 3], 7.0),
            (&[3, 2], 8.0),
        ],
    );
    let e = enc("map = (i, j) -> ( i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)");
    let t = pack(&m, &e, ScalarType::F64).unwrap();
    check(
        &t,
        &[None, Some(&[0, 2, 3]), None, None],
        &[None, Some(&[0, 2, 1]), None, None],
        &[1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 0.0, 5.0, 6.0, 7.0, 8.0, 0.0],
    );
    insta::assert_snapshot!("mlir_bsr", pretty(&storage_to_json(&t)));
}

#[test]
fn mlir_docs_2_4() {
    // The seed writes crdWidth = 2, which MLIR's verifier rejects (widths are
    // 0, 8, 16, 32, 64); 8 bits is the narrowest accepted width.
    let e = enc("map = ( i, j ) -> ( i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 8");
    let t = file::read_into(&data("nv_2_4.mtx"), &e).unwrap();
    let rows = [
        [0, 2, 0, 2, 0, 2, 0, 2],
        [1, 3, 1, 3, 1, 3, 1, 3],
        [0, 1, 2, 3, 0, 1, 2, 3],
        [2, 3, 0, 1, 2, 3, 0, 1],
        [0, 1, 0, 1, 0, 1, 0, 1],
        [0, 1, 0, 1, 0, 1, 0, 1],
        [2, 3, 2, 3, 2, 3, 2, 3],
        [2, 3, 2, 3, 2, 3, 2, 3],
    ];
    let crd: Vec<u64> = (0..16).flat_map(|r| rows[r % 8]).collect();
    let values: Vec<f64> = (0..16).flat_map(|r| [1, 2, 3, 4, 1, 2, 3, 4].map(|k| ((r % 8) * 4 + k) as f64)).collect();
    check(&t, &[None, None, None], &[None, None, Some(&crd)], &values);
    assert_eq!(t.coordinates[2].as_ref().map(|b| b.bits()), Some(8));
    insta::assert_snapshot!("mlir_2_4", pretty(&storage_to_json(&t)));
}

#[test]
fn mlir_docs_csr_from_file_round_trips_through_mtx() {
    let e = enc("map = (i, j) -> (i : dense, j : compressed)");
    let t = file::read_into(&data("m4x8.mtx"), &e).unwrap();
    let dir = tempfile::Builder::new().prefix("heddle-sparse-seeds-").tempdir().unwrap();
    let out = dir.path().join("m.mtx");
    write::write(&t, &out).unwrap();
    let (back, _) = mtx::read_mtx(&out).unwrap();
    assert_eq!(pack(&back, &e, ScalarType::F64).unwrap(), t);
}

/// A JSON value as insta's JSON snapshots print it (serde_json's own
/// serializer: with `arbitrary_precision`, insta's would spell numbers as maps).
fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

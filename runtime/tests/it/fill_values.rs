//! Fill values (issue 12): an encoding's `explicitVal` is the value of every
//! stored entry (a pattern file's entries take it), and its `implicitVal`
//! the value of every absent one (the padding of dense levels and blocks,
//! what densifying fills in). Conversions keep stored entries, so they
//! refuse to change what absent entries mean.

use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, parse_encoding};
use heddle_runtime::scalars::ScalarVec;
use heddle_runtime::sparse::convert::{convert, from_dense, to_dense};
use heddle_runtime::sparse::{file, write};
use std::path::PathBuf;

fn enc(body: &str) -> Encoding {
    parse_encoding(&format!("#sparse_tensor.encoding<{{ {body} }}>"), 0).unwrap()
}

/// A directory of the test's own, removed when it ends.
fn dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("heddle-fill-").tempdir().unwrap()
}

const CSR2: &str = "map = (i, j) -> (i : dense, j : compressed), explicitVal = 2.0 : f64";
const BSR_ONES: &str = "map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense), implicitVal = 1.0 : f64";

#[test]
fn pattern_entries_take_the_explicit_value() {
    let tmp = dir();
    let d = tmp.path();
    let p = d.join("p.mtx");
    std::fs::write(&p, "%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 1\n2 2\n3 3\n").unwrap();
    let t = file::read_into_for(&p, &enc(CSR2), ScalarType::F64).unwrap();
    assert_eq!(t.values, vec![2.0, 2.0, 2.0].into());
    // Without an explicit value a pattern entry is 1.
    let t = file::read_into_for(&p, &enc("map = (i, j) -> (i : dense, j : compressed)"), ScalarType::F32).unwrap();
    assert_eq!(t.values, vec![1.0f32, 1.0, 1.0].into());
    // An integer explicit value into an integer tensor, exactly.
    let t = file::read_into_for(
        &p,
        &enc("map = (i, j) -> (i : dense, j : compressed), explicitVal = 7 : i64"),
        ScalarType::I64,
    )
    .unwrap();
    assert_eq!(t.values, vec![7i64, 7, 7].into());
}

#[test]
fn stored_values_other_than_the_explicit_value_are_errors() {
    let tmp = dir();
    let d = tmp.path();
    let r = d.join("r.mtx");
    std::fs::write(&r, "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 2\n2 2 3\n3 3 2\n").unwrap();
    let e = file::read_into_for(&r, &enc(CSR2), ScalarType::F64).unwrap_err().to_string();
    assert!(e.contains("values[1]: 3.0 differs from the encoding's explicitVal 2.0"), "{e}");
    // Storage that claims an explicit value it does not have.
    let j = d.join("s.json");
    std::fs::write(
        &j,
        format!(r##"{{"encoding": "#sparse_tensor.encoding<{{ {CSR2} }}>", "dim_sizes": [2, 2], "positions": [null, [0, 1, 2]], "coordinates": [null, [0, 1]], "values": [2.0, 2.5]}}"##),
    )
    .unwrap();
    let e = file::read_coo(&j).unwrap_err().to_string();
    assert!(e.contains("values[1]: 2.5 differs from the encoding's explicitVal 2.0"), "{e}");
}

/// A 4x4 matrix with entries (0,0) = 5, (1,1) = 3, (3,2) = 2, (2,3) = 0.
fn matrix_file(d: &std::path::Path) -> PathBuf {
    let p = d.join("m.mtx");
    std::fs::write(&p, "%%MatrixMarket matrix coordinate real general\n4 4 4\n1 1 5\n2 2 3\n4 3 2\n3 4 0\n").unwrap();
    p
}

#[test]
fn padding_and_densifying_take_the_implicit_value() {
    let tmp = dir();
    let d = tmp.path();
    let t = file::read_into_for(&matrix_file(d), &enc(BSR_ONES), ScalarType::F64).unwrap();
    // Two 2x2 blocks stored: the one holding (0,0) and (1,1), and the one
    // holding (3,2) and the explicit 0 at (2,3). Padding is 1.
    assert_eq!(t.values, vec![5.0, 1.0, 1.0, 3.0, 1.0, 0.0, 2.0, 1.0].into());
    // The dense tensor: 1 wherever nothing is stored; the explicit 0 stays.
    let dense = to_dense(&t).unwrap();
    let want: Vec<f64> = vec![5.0, 1.0, 1.0, 1.0, 1.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 2.0, 1.0];
    assert_eq!(dense.values, ScalarVec::from(want));
    // Back from dense into the same encoding: the same storage.
    let again = from_dense(&dense, &enc(BSR_ONES), ScalarType::F64).unwrap();
    assert_eq!(again.values, t.values);
    assert_eq!(again.positions, t.positions);
    // Into a dense encoding with the same implicit value: every value.
    let all = convert(&t, &enc("map = (i, j) -> (i : dense, j : dense), implicitVal = 1.0 : f64")).unwrap();
    assert_eq!(all.values, dense.values);
}

#[test]
fn conversions_and_writers_never_change_what_absent_means() {
    let tmp = dir();
    let d = tmp.path();
    let t = file::read_into_for(&matrix_file(d), &enc(BSR_ONES), ScalarType::F64).unwrap();
    let e = convert(&t, &enc("map = (i, j) -> (i : dense, j : compressed)")).unwrap_err().to_string();
    assert!(e.contains("absent entries are 1.0") && e.contains("the target encoding's are 0"), "{e}");
    for ext in ["mtx", "tns", "npz"] {
        let e = write::write(&t, &d.join(format!("out.{ext}"))).unwrap_err().to_string();
        assert!(e.contains("absent entries are 1.0") && e.contains(".json"), "{ext}: {e}");
    }
    // .json storage keeps the encoding, and reads back the same.
    let j = d.join("t.json");
    write::write(&t, &j).unwrap();
    let back = file::read_into(&j, &enc(BSR_ONES)).unwrap();
    assert_eq!((back.values, back.positions), (t.values.clone(), t.positions.clone()));
    let e = file::read_into(&j, &enc("map = (i, j) -> (i : dense, j : compressed)")).unwrap_err().to_string();
    assert!(e.contains("converting would change the tensor"), "{e}");
}

/// The matrix of [`matrix_file`] in the same storage a scipy archive holds
/// (csr, csc, bsr 2x2): what `.npz` reads as stored.
fn scipy_archive(d: &std::path::Path, name: &str, body: &str) -> PathBuf {
    let t = file::read_into_for(&matrix_file(d), &enc(body), ScalarType::F64).unwrap();
    let p = d.join(format!("{name}.npz"));
    write::write(&t, &p).unwrap();
    p
}

#[test]
fn scipy_storage_reads_into_implicit_encodings_like_entry_lists() {
    let tmp = dir();
    let d = tmp.path();
    let csr = "map = (i, j) -> (i : dense, j : compressed)";
    let csc = "map = (i, j) -> (j : dense, i : compressed)";
    let bsr = "map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)";
    // Every target, with absent entries 1: the same storage as the .mtx gives
    // (its explicit 0 at (2,3) an entry, the bsr archive's block zeros not).
    let targets = [
        format!("{csr}, implicitVal = 1.0 : f64"),
        format!("{csc}, implicitVal = 1.0 : f64"),
        BSR_ONES.to_string(),
        "map = (i, j) -> (i : dense, j : dense), implicitVal = 1.0 : f64".to_string(),
        format!("{csr}, implicitVal = -1.5 : f64"),
    ];
    // A bsr block's zeros are padding, so the explicit 0 is not in its archive.
    let nonzeros = d.join("nonzeros.mtx");
    std::fs::write(&nonzeros, "%%MatrixMarket matrix coordinate real general\n4 4 3\n1 1 5\n2 2 3\n4 3 2\n").unwrap();
    for (name, layout) in [("csr", csr), ("csc", csc), ("bsr", bsr)] {
        let npz = scipy_archive(d, name, layout);
        let mtx = if name == "bsr" { nonzeros.clone() } else { matrix_file(d) };
        for target in &targets {
            let want = file::read_into_for(&mtx, &enc(target), ScalarType::F64).unwrap();
            let got = file::read_into_for(&npz, &enc(target), ScalarType::F64)
                .unwrap_or_else(|e| panic!("{name} into {target}: {e}"));
            assert_eq!(
                (&got.positions, &got.coordinates, &got.values),
                (&want.positions, &want.coordinates, &want.values),
                "{name} into {target}"
            );
            assert_eq!(got.encoding, enc(target), "{name} into {target}");
        }
    }
}

#[test]
fn a_stored_entry_equal_to_the_implicit_value_stays_an_entry() {
    // (0,0) = 1 in a csr archive read into a CSR with implicitVal = 1: an
    // entry, as the same .mtx entry is.
    let tmp = dir();
    let d = tmp.path();
    let m = d.join("one.mtx");
    std::fs::write(&m, "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 3\n").unwrap();
    let csr = enc("map = (i, j) -> (i : dense, j : compressed)");
    let npz = d.join("one.npz");
    write::write(&file::read_into(&m, &csr).unwrap(), &npz).unwrap();
    let ones = enc("map = (i, j) -> (i : dense, j : compressed), implicitVal = 1.0 : f64");
    for p in [&m, &npz] {
        let t = file::read_into(p, &ones).unwrap();
        assert_eq!(t.nse(), 2, "{}", p.display());
        assert_eq!(t.values, vec![1.0, 3.0].into(), "{}", p.display());
    }
}

#[test]
fn converting_to_or_from_dense_storage_materialises_absent_entries() {
    let tmp = dir();
    let d = tmp.path();
    let t = file::read_into_for(&matrix_file(d), &enc(BSR_ONES), ScalarType::F64).unwrap();
    let dense = to_dense(&t).unwrap();
    // Into an all-dense encoding whose absent entries would be 0: every
    // coordinate has a slot, so the 1s are stored.
    let zeros = convert(&t, &enc("map = (i, j) -> (i : dense, j : dense)")).unwrap();
    assert_eq!(zeros.values, dense.values);
    // From that dense storage into CSR with absent 0: every nonzero is an
    // entry, the 1s included; the tensor is the same.
    let csr = convert(&zeros, &enc("map = (i, j) -> (i : dense, j : compressed)")).unwrap();
    assert_eq!(to_dense(&csr).unwrap().values, dense.values);
    assert_eq!(csr.nse(), 15, "every entry but the 0 at (2,3)");
    // Sparse to sparse with different absent values is refused, saying how.
    let e = convert(&t, &enc("map = (i, j) -> (i : dense, j : compressed)")).unwrap_err().to_string();
    assert!(e.contains("implicitVal = 1.0") && e.contains("all-dense"), "{e}");
    // A .json of the dense storage reads into a dense encoding with another
    // implicit value: no absent entries, so the same tensor.
    let j = d.join("dense.json");
    write::write(&zeros, &j).unwrap();
    let back = file::read_into(&j, &enc("map = (i, j) -> (i : dense, j : dense), implicitVal = 1.0 : f64")).unwrap();
    assert_eq!(back.values, dense.values);
}

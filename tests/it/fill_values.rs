//! Fill values through `heddle run` on every backend (issue 12): a pattern
//! matrix stored with `explicitVal = 2.0` multiplies as 2s (not 1s), and a
//! dense-level tensor with `implicitVal = 1.0` sees 1 wherever the file has
//! no entry. Checked against the same sums computed here.

use crate::common;

use common::{backends, heddle};

#[test]
fn pattern_spmv_uses_the_explicit_value_on_every_backend() {
    let tmp = common::scratch_dir("cli-fill-pattern");
    let d = tmp.path();
    std::fs::write(d.join("p.mtx"), "%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 1\n2 2\n3 3\n")
        .unwrap();
    std::fs::write(d.join("x.json"), "[1, 100, 10]").unwrap();
    std::fs::write(
        d.join("spmv.hdl"),
        "#P = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 2.0 : f64 }>\n\
         fun(A: tensor<?x?xf64, #P> => fun(xs: [double]_{A_dim1} =>\n  \
         A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0.0)))))\n",
    )
    .unwrap();
    for backend in backends() {
        let m = format!("A={}", d.join("p.mtx").display());
        let x = format!("xs={}", d.join("x.json").display());
        let (code, out, err) =
            heddle(&["run", d.join("spmv.hdl").to_str().unwrap(), "--backend", backend, "--matrix", &m, "--input", &x]);
        assert_eq!(code, 0, "{backend}: {err}");
        assert_eq!(out.trim(), "[2.0,200.0,20.0]", "{backend}");
    }
}

#[test]
fn dense_levels_see_the_implicit_value_on_every_backend() {
    let tmp = common::scratch_dir("cli-fill-dense");
    let d = tmp.path();
    // 3 x 4, entries (0,1) = 2, (2,3) = -4, (2,0) = 0 (an explicit zero).
    std::fs::write(d.join("m.mtx"), "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 2 2\n3 4 -4\n3 1 0\n")
        .unwrap();
    std::fs::write(
        d.join("rowsums.hdl"),
        "#D = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense), implicitVal = 1.0 : f64 }>\n\
         fun(A: tensor<?x?xf64, #D> => A :>> map(fun(row => row :>> reduce(+, 0.0))))\n",
    )
    .unwrap();
    // Every absent entry is 1: row 0 = 1 + 2 + 1 + 1, row 1 = 4, row 2 = 0 + 1 + 1 - 4.
    let want = [5.0, 4.0, -2.0];
    for backend in backends() {
        let m = format!("A={}", d.join("m.mtx").display());
        let (code, out, err) =
            heddle(&["run", d.join("rowsums.hdl").to_str().unwrap(), "--backend", backend, "--matrix", &m]);
        assert_eq!(code, 0, "{backend}: {err}");
        let got: Vec<f64> = serde_json::from_str(&out).unwrap();
        assert_eq!(got, want, "{backend}");
    }
}

#[test]
fn scipy_archives_read_into_implicit_encodings_on_every_backend() {
    // A csr archive and a bsr(2, 2) archive of the matrix the .mtx holds
    // read into a dense encoding with implicitVal = -1.5, as the .mtx does:
    // the entries are the archive's, every absent one -1.5 (robustness.md's
    // progen3 finding).
    let tmp = common::scratch_dir("cli-fill-npz");
    let d = tmp.path();
    // 4 x 4, entries (0,1) = 2, (3,3) = -4, (2,0) = 3.
    std::fs::write(d.join("m.mtx"), "%%MatrixMarket matrix coordinate real general\n4 4 3\n1 2 2\n4 4 -4\n3 1 3\n")
        .unwrap();
    for (to, name) in [("CSR", "csr.npz"), ("BSR(2, 2)", "bsr.npz")] {
        let (code, _, err) =
            heddle(&["convert", d.join("m.mtx").to_str().unwrap(), "--to", to, "-o", d.join(name).to_str().unwrap()]);
        assert_eq!(code, 0, "{to}: {err}");
    }
    std::fs::write(
        d.join("rowsums.hdl"),
        "#E = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense), implicitVal = -1.5 : f64 }>\n\
         fun(A: tensor<?x?xf64, #E> => A :>> map(fun(row => row :>> reduce(+, 0.0))))\n",
    )
    .unwrap();
    // Each row's entries and three -1.5s (row 1: four).
    let want = [-2.5, -6.0, -1.5, -8.5];
    for file in ["m.mtx", "csr.npz", "bsr.npz"] {
        for backend in backends() {
            let m = format!("A={}", d.join(file).display());
            let (code, out, err) =
                heddle(&["run", d.join("rowsums.hdl").to_str().unwrap(), "--backend", backend, "--matrix", &m]);
            assert_eq!(code, 0, "{file} {backend}: {err}");
            let got: Vec<f64> = serde_json::from_str(&out).unwrap();
            assert_eq!(got, want, "{file} {backend}");
        }
    }
}

//! Kernels over `tensor<…, #ENC>` parameters read with `--matrix`: SpMV over a
//! CSR tensor on every backend equals a dense computation, on random matrices.

use crate::common;

use common::heddle;
use proptest::prelude::*;
use std::fmt::Write;

fn mtx(rows: &[Vec<f64>], cols: usize) -> String {
    let mut entries = String::new();
    let mut count = 0;
    for (i, r) in rows.iter().enumerate() {
        for (j, v) in r.iter().enumerate() {
            if *v != 0.0 {
                let _ = writeln!(entries, "{} {} {v}", i + 1, j + 1);
                count += 1;
            }
        }
    }
    format!("%%MatrixMarket matrix coordinate real general\n{} {cols} {count}\n{entries}", rows.len())
}

fn run(backend: &str, dir: &std::path::Path, rows: &[Vec<f64>], cols: usize) -> Vec<f64> {
    let a = dir.join("a.mtx");
    std::fs::write(&a, mtx(rows, cols)).unwrap();
    let xs: Vec<f64> = (0..cols).map(|k| k as f64 * 0.5 - 1.0).collect();
    let x = dir.join("x.json");
    std::fs::write(&x, serde_json::to_string(&xs).unwrap()).unwrap();
    let (code, out, err) = heddle(&[
        "run",
        "examples/sparse/spmv_csr.hdl",
        "--backend",
        backend,
        "--matrix",
        &format!("A={}", a.display()),
        "--input",
        &format!("xs={}", x.display()),
    ]);
    assert_eq!(code, 0, "{backend}: {err}");
    serde_json::from_str(&out).unwrap()
}

fn expected(rows: &[Vec<f64>], cols: usize) -> Vec<f64> {
    let xs: Vec<f64> = (0..cols).map(|k| k as f64 * 0.5 - 1.0).collect();
    rows.iter().map(|r| r.iter().zip(&xs).map(|(a, x)| a * x).sum()).collect()
}

fn backends() -> Vec<&'static str> {
    // OpenCL runs wherever a platform is installed (CI installs POCL).
    let opencl = std::process::Command::new("clinfo").arg("-l").output().is_ok_and(|o| o.status.success());
    if opencl || std::env::var("CI").is_ok() { vec!["interp", "cpu", "opencl"] } else { vec!["interp", "cpu"] }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]
    #[test]
    fn csr_tensor_spmv_matches_dense(rows in (1usize..6).prop_flat_map(|m| prop::collection::vec(
        prop::collection::vec(prop_oneof![2 => Just(0.0), 1 => (-8i32..9).prop_map(|k| k as f64 / 4.0)], m), 1..7))) {
        let cols = rows[0].len();
        let dir = tempfile::tempdir().unwrap();
        for b in backends() {
            prop_assert_eq!(run(b, dir.path(), &rows, cols), expected(&rows, cols), "{}", b);
        }
    }
}

#[test]
fn missing_matrix_names_the_tensor() {
    let (code, _, err) = heddle(&["run", "examples/sparse/spmv_csr.hdl", "--input", "xs=examples/data/csr/xs.json"]);
    assert_eq!(code, 1);
    assert!(err.contains("`A`") && err.contains("--matrix A="), "{err}");
}

#[test]
fn matrix_for_a_non_tensor_parameter_is_an_error() {
    let (code, _, err) = heddle(&[
        "run",
        "examples/dense_mv.hdl",
        "--matrix",
        "matrix=tests/data/sparse/m4x8.mtx",
        "--input",
        "xs=examples/data/dense_mv/xs.json",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("no tensor parameter"), "{err}");
}

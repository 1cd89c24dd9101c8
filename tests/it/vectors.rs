//! Vectors `<T>w` in compiled code: `asVector(w)` reads each vector with one
//! `vloadW` on OpenCL, a reduction over `asScalar` visits each vector once
//! (then its lanes in order), a result written through `asScalar` stores
//! each vector's lanes together (one `vstoreW` on OpenCL), and every backend computes what a dense
//! computation in the test computes.

use crate::common;

use common::{Rng, heddle};

const DOT: &str = "tests/compile_coverage/vector_dot.hdl";
const ROWS: &str = "tests/compile_coverage/vector_rows.hdl";
const PRODUCTS: &str = "tests/compile_coverage/vector_products.hdl";

fn json_list(xs: &[f64]) -> String {
    format!("[{}]", xs.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", "))
}

fn result(out: &str) -> f64 {
    out.trim().parse().unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// `zip(xs asVector 4, ys asVector 4) :>> map(*) :>> asScalar :>> reduce`,
/// for lengths 0, 4, 12 and 68, against the products summed in order here
/// (quarter values: every sum is exact in f32).
#[test]
fn a_dot_product_through_vectors_equals_the_scalar_sum_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0004);
    for n in [0usize, 1, 3, 17] {
        let xs: Vec<f64> = (0..4 * n).map(|_| rng.value()).collect();
        let ys: Vec<f64> = (0..4 * n).map(|_| rng.value()).collect();
        let want: f64 = xs.iter().zip(&ys).map(|(x, y)| x * y).sum();
        let x = common::write(dir.path(), "xs.json", &json_list(&xs));
        let y = common::write(dir.path(), "ys.json", &json_list(&ys));
        for backend in common::backends() {
            let (code, out, err) = heddle(&[
                "run",
                DOT,
                "--backend",
                backend,
                "--input",
                &format!("xs={}", x.display()),
                "--input",
                &format!("ys={}", y.display()),
            ]);
            assert_eq!(code, 0, "{backend}, n = {n}: {err}");
            assert_eq!(result(&out), want, "{backend}, n = {n}");
        }
    }
}

/// The reduction's loop runs over the `n` vectors, not over the `4n`
/// scalars recomputing a vector for each (and choosing its lane at run time).
#[test]
fn a_reduction_over_as_scalar_visits_each_vector_once() {
    let (code, out, err) = heddle(&["compile", DOT, "--target", "loops"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("for k in 0 .. n {"), "{out}");
    assert!(!out.contains("0 .. 4 * n"), "a loop over the scalars: {out}");
    assert!(!out.contains("lane"), "a lane chosen at run time: {out}");
}

/// On OpenCL each vector is one `vloadW` of consecutive elements: `vload4(k,
/// xs)` where the index is `4·k`, `vload8(0, a + (…))` for a row's vectors.
#[test]
fn opencl_reads_each_vector_with_one_vector_load() {
    let (code, out, err) = heddle(&["compile", DOT, "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("= vload4(k, xs);") && out.contains("= vload4(k, ys);"), "{out}");
    assert!(!out.contains("xs[4L * k + 1L]"), "scalar loads remain: {out}");
    let (code, out, err) = heddle(&["compile", ROWS, "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("vload8(0, a + (").count(), 1, "{out}");
}

/// Rows of 8-wide vectors doubled and summed, against the doubled row sums
/// computed here, including a row length that is 0 (m = 0).
#[test]
fn rows_of_vectors_equal_a_dense_computation_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0008);
    for (n, m) in [(3usize, 2usize), (1, 1), (2, 0)] {
        let rows: Vec<Vec<f64>> = (0..n).map(|_| (0..8 * m).map(|_| rng.value()).collect()).collect();
        let want: Vec<f64> = rows.iter().map(|r| r.iter().map(|x| x + x).sum()).collect();
        let text = format!("[{}]", rows.iter().map(|r| json_list(r)).collect::<Vec<_>>().join(", "));
        let a = common::write(dir.path(), "a.json", &text);
        for backend in common::backends() {
            let (code, out, err) = heddle(&[
                "run",
                ROWS,
                "--backend",
                backend,
                "--input",
                &format!("a={}", a.display()),
                "--param",
                &format!("n={n}"),
                "--param",
                &format!("m={m}"),
            ]);
            assert_eq!(code, 0, "{backend}, {n}x{m}: {err}");
            let got: Vec<f64> = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
            assert_eq!(got, want, "{backend}, {n}x{m}");
        }
    }
}

/// `asScalar` of computed vectors as the result: lane-wise products against
/// those computed here, n = 0, 1, 5 vectors.
#[test]
fn a_result_of_vectors_equals_the_lane_wise_products_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0016);
    for n in [0usize, 1, 5] {
        let xs: Vec<f64> = (0..4 * n).map(|_| rng.value()).collect();
        let ys: Vec<f64> = (0..4 * n).map(|_| rng.value()).collect();
        let want: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| x * y).collect();
        let x = common::write(dir.path(), "xs.json", &json_list(&xs));
        let y = common::write(dir.path(), "ys.json", &json_list(&ys));
        for backend in common::backends() {
            let (code, out, err) = heddle(&[
                "run",
                PRODUCTS,
                "--backend",
                backend,
                "--input",
                &format!("xs={}", x.display()),
                "--input",
                &format!("ys={}", y.display()),
            ]);
            assert_eq!(code, 0, "{backend}, n = {n}: {err}");
            let got: Vec<f64> = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
            assert_eq!(got, want, "{backend}, n = {n}");
        }
    }
}

/// The result's loop runs over the vectors, in parallel, each storing its
/// four lanes (no lane chosen at run time); on OpenCL as one `vstore4`.
#[test]
fn a_result_of_vectors_is_stored_vector_by_vector() {
    let (code, out, err) = heddle(&["compile", PRODUCTS, "--target", "loops"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("parallel for k in 0 .. n {"), "{out}");
    assert!(out.contains("out[4 * k + 3] ="), "{out}");
    assert!(!out.contains("lane"), "a lane chosen at run time: {out}");
    let (code, out, err) = heddle(&["compile", PRODUCTS, "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("vstore4((float4)("), "{out}");
    assert!(!out.contains("out[4L * k + 1L]"), "scalar stores remain: {out}");
}

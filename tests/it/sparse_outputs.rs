//! Sparse results (issue 7): element-wise add (union) and multiply
//! (intersection) of two CSR matrices and SpMSpM (Gustavson, compressAdd),
//! each a CSR result whose row lengths are counted, on every backend,
//! against a dense computation written here; the sparse dot product
//! (intersect, reduced as it is produced). Inputs are random (fixed seeds)
//! with empty rows and columns; the result is a stored CSR tensor, read here
//! as its (column, value) pairs row after row, so a row at the wrong offset
//! or of the wrong length shows as a different list. (tests/it/sparse_results.rs
//! covers the other encodings.) OpenCL runs wherever a platform
//! is installed and must run under `CI=true`.

use crate::common;

use common::{Rng, backends, flatten, heddle, write};
use std::path::Path;

type Dense = Vec<Vec<f64>>;

/// An m x n matrix with about `percent`% of its entries stored (all
/// non-zero), one empty row and one empty column.
fn random(rng: &mut Rng, m: usize, n: usize, percent: u64) -> Dense {
    let (empty_row, empty_col) = (rng.below(m as u64) as usize, rng.below(n as u64) as usize);
    let mut a = vec![vec![0.0; n]; m];
    for (i, row) in a.iter_mut().enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            if i != empty_row && j != empty_col && rng.below(100) < percent {
                *x = rng.value();
            }
        }
    }
    a
}

fn mtx(a: &Dense) -> String {
    let mut lines = Vec::new();
    for (i, row) in a.iter().enumerate() {
        for (j, v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
            lines.push(format!("{} {} {v}", i + 1, j + 1));
        }
    }
    let cols = a.first().map_or(0, Vec::len);
    format!("%%MatrixMarket matrix coordinate real general\n{} {cols} {}\n{}\n", a.len(), lines.len(), lines.join("\n"))
}

/// Runs `examples/sparse/<kernel>.hdl` with A and B on every backend and
/// compares its (column, value) pairs with `want`.
fn check(kernel: &str, a: &Path, b: &Path, want: &[f64], case: &str) {
    let file = format!("examples/sparse/{kernel}.hdl");
    let (ma, mb) = (format!("A={}", a.display()), format!("B={}", b.display()));
    for backend in backends() {
        let (code, out, err) = heddle(&["run", &file, "--backend", backend, "--matrix", &ma, "--matrix", &mb]);
        assert_eq!(code, 0, "{kernel} on {backend}, {case}: {err}");
        let got = csr_pairs(&serde_json::from_str(&out).unwrap());
        assert_eq!(got.len(), want.len(), "{kernel} on {backend}, {case}: got {got:?}, want {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "{kernel} on {backend}, {case}: got {got:?}, want {want:?}"
            );
        }
    }
}

/// A CSR tensor's storage object as (column, value) pairs, row after row.
fn csr_pairs(storage: &serde_json::Value) -> Vec<f64> {
    let numbers =
        |v: &serde_json::Value| -> Vec<f64> { v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect() };
    let pos = numbers(&storage["positions"][1]);
    let (crd, values) = (numbers(&storage["coordinates"][1]), numbers(&storage["values"]));
    assert_eq!(pos.len() as f64, storage["dim_sizes"][0].as_f64().unwrap() + 1.0, "{storage}");
    let mut out = Vec::new();
    for (c, v) in crd.iter().zip(&values) {
        out.extend([*c, *v]);
    }
    assert_eq!(pos.last().copied().unwrap_or(0.0), crd.len() as f64);
    out
}

/// (column, value) for every column of row i where `stored(i, j)`, in order.
fn rows(m: usize, n: usize, stored: impl Fn(usize, usize) -> bool, value: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    let mut out = Vec::new();
    for i in 0..m {
        for j in (0..n).filter(|&j| stored(i, j)) {
            out.extend([j as f64, value(i, j)]);
        }
    }
    out
}

#[test]
fn elementwise_add_and_multiply_are_union_and_intersection() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0001);
    for (case, (m, n, pa, pb)) in
        [(7, 9, 30, 40), (12, 5, 60, 20), (3, 16, 10, 90), (1, 1, 100, 100)].into_iter().enumerate()
    {
        let a = random(&mut rng, m, n, pa);
        let b = if m == 1 { vec![vec![0.0]] } else { random(&mut rng, m, n, pb) };
        let (fa, fb) = (
            write(dir.path(), &format!("a{case}.mtx"), &mtx(&a)),
            write(dir.path(), &format!("b{case}.mtx"), &mtx(&b)),
        );
        let either = rows(m, n, |i, j| a[i][j] != 0.0 || b[i][j] != 0.0, |i, j| a[i][j] + b[i][j]);
        check("spadd_csr", &fa, &fb, &either, &format!("case {case} ({m}x{n})"));
        let both = rows(m, n, |i, j| a[i][j] != 0.0 && b[i][j] != 0.0, |i, j| a[i][j] * b[i][j]);
        check("spmul_csr", &fa, &fb, &both, &format!("case {case} ({m}x{n})"));
    }
}

#[test]
fn spgemm_with_a_csr_result_matches_the_dense_product() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0002);
    for (case, (m, k, n, pa, pb)) in
        [(6, 8, 7, 30, 30), (10, 4, 12, 50, 25), (5, 9, 3, 15, 80), (4, 4, 4, 0, 50)].into_iter().enumerate()
    {
        let a = random(&mut rng, m, k, pa);
        let b = random(&mut rng, k, n, pb);
        let (fa, fb) = (
            write(dir.path(), &format!("a{case}.mtx"), &mtx(&a)),
            write(dir.path(), &format!("b{case}.mtx"), &mtx(&b)),
        );
        // Gustavson's pattern: every column reached through a stored A(i, l) and B(l, j),
        // even when the products cancel.
        let reached = |i: usize, j: usize| (0..k).any(|l| a[i][l] != 0.0 && b[l][j] != 0.0);
        let want = rows(m, n, reached, |i, j| (0..k).map(|l| a[i][l] * b[l][j]).sum());
        check("spgemm_csr", &fa, &fb, &want, &format!("case {case} ({m}x{k} * {k}x{n})"));
    }
}

/// More rows than OpenCL launches work-items for workspaces (1024): each
/// work-item then compresses several rows in its one workspace, which must be
/// clean again after every row (and on the CPU, each thread's chunk does the same).
#[test]
fn spgemm_reuses_each_workspace_row_after_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0003);
    let (m, k, n) = (1500, 12, 40);
    let a = random(&mut rng, m, k, 20);
    let b = random(&mut rng, k, n, 25);
    let (fa, fb) = (write(dir.path(), "a.mtx", &mtx(&a)), write(dir.path(), "b.mtx", &mtx(&b)));
    let reached = |i: usize, j: usize| (0..k).any(|l| a[i][l] != 0.0 && b[l][j] != 0.0);
    let want = rows(m, n, reached, |i, j| (0..k).map(|l| a[i][l] * b[l][j]).sum());
    check("spgemm_csr", &fa, &fb, &want, "1500 rows");
}

#[test]
fn sparse_dot_product_visits_the_intersection() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.tns", "1 2.0\n3 3.0\n6 4.0\n9 1.0\n");
    let b = write(dir.path(), "b.tns", "2 5.0\n3 7.0\n6 0.5\n10 8.0\n");
    for backend in backends() {
        let (ma, mb) = (format!("a={}", a.display()), format!("b={}", b.display()));
        let (code, out, err) =
            heddle(&["run", "examples/sparse/spdot.hdl", "--backend", backend, "--matrix", &ma, "--matrix", &mb]);
        assert_eq!(code, 0, "{backend}: {err}");
        assert_eq!(out.trim(), "23.0", "3 * 7 + 4 * 0.5 on {backend}");
    }
}

#[test]
fn counted_results_compile_to_a_counting_phase_and_a_fill() {
    for kernel in ["spadd_csr", "spmul_csr", "spgemm_csr"] {
        let file = format!("examples/sparse/{kernel}.hdl");
        let (code, out, err) = heddle(&["compile", &file, "--target", "loops"]);
        assert_eq!(code, 0, "{err}");
        // A co-iteration's phase bounds its rows (the fill merges them once, see
        // sparse_results.rs); a workspace's counts them.
        let phase = if kernel == "spgemm_csr" { "count" } else { "bound" };
        assert!(out.starts_with(&format!("{phase} phase count#1[A_dim0]")), "{kernel}: {out}");
        // The fill's rows start at the host prefix sum of the counts.
        assert!(out.contains("host prefix[j] = sum(f = 0 .. j - 1, toNat(count#1@f))"), "{kernel}: {out}");
        let fill = out.split("\nkernel ").nth(1).unwrap();
        assert!(fill.contains("row_start"), "{kernel}: {fill}");
        // The workspace is sorted on compress and allocated once per worker.
        if kernel == "spgemm_csr" {
            assert!(fill.contains("alloc workspace") && fill.contains("sort added"), "{fill}");
        }
        insta::assert_snapshot!(format!("loops_{kernel}"), out);
    }
    // Each backend's code for both phases: any change in generated code shows as a diff.
    for (kernel, target) in [("spgemm_csr", "opencl"), ("spadd_csr", "opencl")] {
        let file = format!("examples/sparse/{kernel}.hdl");
        let (code, out, err) = heddle(&["compile", &file, "--target", target]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out.matches("__kernel void").count(), 2, "a counting kernel and a filling kernel: {out}");
        insta::assert_snapshot!(format!("{target}_{kernel}"), out);
    }
}

#[test]
fn compress_add_outside_its_workspace_is_a_run_time_error() {
    let dir = tempfile::tempdir().unwrap();
    // Columns of B reach 3, but the workspace has A_dim1 = 2 entries.
    let kernel = write(
        dir.path(),
        "bad.hdl",
        "#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>\n\
         fun(A: tensor<?x?xf32, #CSR> => fun(B: tensor<?x?xf32, #CSR> =>\n\
           A :>> map(fun(row => row :>> map(fun(a => B@a.1 :>> map(fun(b => (b.1, a.2 * b.2))))) :>> join :>> compressAdd(A_dim1)))))\n",
    );
    let a = write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 2 2.0\n");
    let b = write(dir.path(), "b.mtx", "%%MatrixMarket matrix coordinate real general\n2 4 2\n1 4 1.0\n2 1 2.0\n");
    for backend in backends() {
        let (ma, mb) = (format!("A={}", a.display()), format!("B={}", b.display()));
        let (code, _, err) =
            heddle(&["run", kernel.to_str().unwrap(), "--backend", backend, "--matrix", &ma, "--matrix", &mb]);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("out of bounds") && err.contains("compressAdd"), "{backend}: {err}");
    }
}

/// A result of rows of (column, value) pairs that is not a stored tensor
/// (no annotation) is still written as Matrix Market with `--output-dims`.
#[test]
fn a_sparse_result_is_written_as_matrix_market() {
    let dir = tempfile::tempdir().unwrap();
    let rows = write(
        dir.path(),
        "rows.hdl",
        "#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>\n\
         fun(A: tensor<?x?xf32, #CSR> => fun(B: tensor<?x?xf32, #CSR> =>\n\
           A :>> map(fun(row => row :>> map(fun(a => B@a.1 :>> map(fun(b => (b.1, a.2 * b.2))))) :>> join :>> compressAdd(B_dim1)))))\n",
    );
    let rows = rows.to_str().unwrap();
    let a = write(
        dir.path(),
        "a.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 4 5\n1 1 1.0\n1 3 2.0\n2 2 3.0\n3 1 4.0\n3 4 6.0\n",
    );
    let b = write(
        dir.path(),
        "b.mtx",
        "%%MatrixMarket matrix coordinate real general\n4 5 4\n1 1 1.0\n3 2 2.0\n4 1 3.0\n4 2 5.0\n",
    );
    let (ma, mb) = (format!("A={}", a.display()), format!("B={}", b.display()));
    let out = dir.path().join("c.mtx");
    for backend in backends() {
        let (code, _, err) = heddle(&[
            "run",
            rows,
            "--backend",
            backend,
            "--matrix",
            &ma,
            "--matrix",
            &mb,
            "-o",
            out.to_str().unwrap(),
            "--output-dims",
            "3x5",
        ]);
        assert_eq!(code, 0, "{backend}: {err}");
        let text = std::fs::read_to_string(&out).unwrap();
        // Row 2 of A is empty in B's rows it reaches; row 3 sums 4*1 + 6*3 in column 1.
        assert_eq!(
            text, "%%MatrixMarket matrix coordinate real general\n3 5 4\n1 1 1.0\n1 2 4.0\n3 1 22.0\n3 2 30.0\n",
            "{backend}"
        );
    }
    // Without --output-dims the columns end at the last one used; a shape that
    // cannot hold the result, or a result that is no matrix, is an error.
    let (code, _, err) = heddle(&["run", rows, "--matrix", &ma, "--matrix", &mb, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&out).unwrap().contains("\n3 2 4\n"));
    let (code, _, err) =
        heddle(&["run", rows, "--matrix", &ma, "--matrix", &mb, "-o", out.to_str().unwrap(), "--output-dims", "3x1"]);
    assert_eq!(code, 1);
    assert!(err.contains("column 1"), "{err}");
    let (code, _, err) = heddle(&[
        "run",
        "examples/dense_mv.hdl",
        "--input",
        "matrix=examples/data/dense_mv/matrix.json",
        "--input",
        "xs=examples/data/dense_mv/xs.json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("rows of (column, value) pairs"), "{err}");
}

/// A random sparse vector of length n (about `percent`% stored) as a `.tns`
/// file's text and as a dense vector.
fn random_vector(rng: &mut Rng, n: usize, percent: u64) -> (String, Vec<f64>) {
    let mut dense = vec![0.0; n];
    let mut text = String::new();
    for (k, x) in dense.iter_mut().enumerate() {
        if rng.below(100) < percent {
            *x = rng.value();
            text.push_str(&format!("{} {x}\n", k + 1));
        }
    }
    (text, dense)
}

/// 1-D results of co-iteration and of the workspace (a sparse vector's
/// (coordinate, value) list of counted length): a single count, then the fill,
/// on every backend. Empty vectors, a length-1 vector and disjoint patterns included.
#[test]
fn one_dimensional_sparse_results_are_counted_then_filled() {
    let dir = tempfile::tempdir().unwrap();
    let sv = "#SV = #sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>\n";
    let add = write(
        dir.path(),
        "add.hdl",
        &format!(
            "{sv}fun(a: tensor<?xf32, #SV> => fun(b: tensor<?xf32, #SV> =>\n  union(0, 0, a, b) :>> map(fun(e => (e.1, e.2 + e.3)))))\n"
        ),
    );
    let mul = write(
        dir.path(),
        "mul.hdl",
        &format!(
            "{sv}fun(a: tensor<?xf32, #SV> => fun(b: tensor<?xf32, #SV> =>\n  intersect(a, b) :>> map(fun(e => (e.1, e.2 * e.3)))))\n"
        ),
    );
    // x^T B for a sparse x and a CSR B: the rows of B that x selects, scaled and summed by column.
    let vm = write(
        dir.path(),
        "vm.hdl",
        &format!(
            "{sv}#CSR = #sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed) }}>\n\
             fun(a: tensor<?xf32, #SV> => fun(B: tensor<?x?xf32, #CSR> =>\n\
               a :>> map(fun(e => B@e.1 :>> map(fun(b => (b.1, e.2 * b.2))))) :>> join :>> compressAdd(B_dim1)))\n"
        ),
    );
    let mut rng = Rng(0x5eed_0011);
    for (case, (n, pa, pb)) in
        [(9, 40, 50), (1, 100, 100), (6, 0, 50), (12, 0, 0), (20, 15, 90), (5, 100, 0)].into_iter().enumerate()
    {
        let (ta, a) = random_vector(&mut rng, n, pa);
        let (tb, b) = random_vector(&mut rng, n, pb);
        // A .tns file gives its size by its largest coordinate: every vector ends with a stored entry.
        let pin = |t: String, v: &[f64]| if v[n - 1] == 0.0 { format!("{t}{n} 0.0\n") } else { t };
        let (ta, tb) = (pin(ta, &a), pin(tb, &b));
        let stored = |t: &str| -> Vec<usize> {
            t.lines().map(|l| l.split(' ').next().unwrap().parse::<usize>().unwrap() - 1).collect()
        };
        let (sa, sb) = (stored(&ta), stored(&tb));
        // A stored zero (the pin) takes part in the union and the intersection.
        let fa = write(dir.path(), &format!("a{case}.tns"), &ta);
        let fb = write(dir.path(), &format!("b{case}.tns"), &tb);
        let mut either = Vec::new();
        let mut both = Vec::new();
        for k in 0..n {
            if sa.contains(&k) || sb.contains(&k) {
                either.extend([k as f64, a[k] + b[k]]);
            }
            if sa.contains(&k) && sb.contains(&k) {
                both.extend([k as f64, a[k] * b[k]]);
            }
        }
        // B: n x 7 with row k holding (k % 7, k + 1) and ((3k) % 7, 1/2) when they differ.
        let mut bm = String::new();
        let mut dense_b = vec![vec![0.0; 7]; n];
        for (k, row) in dense_b.iter_mut().enumerate() {
            row[k % 7] += (k + 1) as f64;
            row[(3 * k) % 7] += 0.5;
        }
        let entries: Vec<(usize, usize, f64)> = dense_b
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.iter().enumerate().filter(|(_, v)| **v != 0.0).map(move |(j, v)| (i, j, *v)))
            .collect();
        bm.push_str(&format!("%%MatrixMarket matrix coordinate real general\n{n} 7 {}\n", entries.len()));
        for (i, j, v) in &entries {
            bm.push_str(&format!("{} {} {v}\n", i + 1, j + 1));
        }
        let fbm = write(dir.path(), &format!("bm{case}.mtx"), &bm);
        let mut product = Vec::new();
        for j in 0..7 {
            if sa.iter().any(|&k| dense_b[k][j] != 0.0) {
                product.extend([j as f64, sa.iter().map(|&k| a[k] * dense_b[k][j]).sum::<f64>()]);
            }
        }
        let runs: [(&Path, &Path, &str, &[f64]); 3] =
            [(&add, &fb, "b", &either), (&mul, &fb, "b", &both), (&vm, &fbm, "B", &product)];
        for (kernel, second, name, want) in runs {
            for backend in backends() {
                let (ma, mb) = (format!("a={}", fa.display()), format!("{name}={}", second.display()));
                let (code, out, err) =
                    heddle(&["run", kernel.to_str().unwrap(), "--backend", backend, "--matrix", &ma, "--matrix", &mb]);
                assert_eq!(code, 0, "{} on {backend}, case {case}: {err}", kernel.display());
                let mut got = Vec::new();
                flatten(&serde_json::from_str(&out).unwrap(), &mut got);
                assert_eq!(got, want, "{} on {backend}, case {case}", kernel.display());
            }
        }
    }
}

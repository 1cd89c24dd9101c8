//! The paper's Listing 7 (`examples/listing7.hdl`) runs on every backend (the
//! interpreter, the CPU backend and OpenCL; OpenCL alone in the Oclgrind pass)
//! and equals a dense SpMV computed here, over a grid of its tunables
//! ROWS_PER_WKGP and NUM_SPLITS, on random matrices whose row lengths are
//! multiples of NUM_SPLITS (empty rows included). A row whose length is not,
//! and ROWS_PER_WKGP not dividing n, are located errors with exit status 1 on
//! every backend; so is `reduce` without an initial value of an empty array.

use crate::common;

use common::{Rng, backends, heddle, heddle_json, write};
use serde_json::{Value as J, json};
use std::path::Path;

/// A CSR matrix with its dense form.
struct Csr {
    offsets: Vec<usize>,
    cols: Vec<usize>,
    vals: Vec<f64>,
    dense: Vec<Vec<f64>>,
}

impl Csr {
    /// From each row's (column, value) entries.
    fn from_rows(m: usize, rows: &[Vec<(usize, f64)>]) -> Csr {
        let mut c = Csr { offsets: vec![0], cols: Vec::new(), vals: Vec::new(), dense: Vec::new() };
        for row in rows {
            let mut dense = vec![0.0; m];
            for &(j, v) in row {
                c.cols.push(j);
                c.vals.push(v);
                dense[j] += v;
            }
            c.offsets.push(c.cols.len());
            c.dense.push(dense);
        }
        c
    }

    /// `n` rows of `m` columns, each with a multiple of `s` entries (0 included)
    /// at distinct random columns, values multiples of 1/4 (sums are exact in
    /// any order).
    fn random(rng: &mut Rng, n: usize, m: usize, s: usize) -> Csr {
        let rows: Vec<Vec<(usize, f64)>> = (0..n)
            .map(|_| {
                let len = s * rng.below((m / s + 1) as u64) as usize;
                let mut cols: Vec<usize> = (0..m).collect();
                for k in 0..len {
                    let pick = k + rng.below((m - k) as u64) as usize;
                    cols.swap(k, pick);
                }
                cols[..len].iter().map(|&j| (j, (rng.below(17) as f64 - 8.0) / 4.0)).collect()
            })
            .collect();
        Csr::from_rows(m, &rows)
    }

    /// The dense product, computed independently of heddle.
    fn mv(&self, xs: &[f64]) -> Vec<f64> {
        self.dense.iter().map(|row| row.iter().zip(xs).map(|(a, x)| a * x).sum()).collect()
    }
}

fn example() -> String {
    common::root().join("examples/listing7.hdl").display().to_string()
}

/// `heddle run` arguments for the example with these inputs (written to `dir`).
fn run_args(dir: &Path, a: &Csr, xs: &[f64], r: usize, s: usize, backend: &str) -> Vec<String> {
    let input = |name: &str, v: J| format!("{name}={}", write(dir, &format!("{name}.json"), &v.to_string()).display());
    let mut args = vec!["run".to_string(), example()];
    for (name, v) in
        [("offsets", json!(a.offsets)), ("col_indices", json!(a.cols)), ("values", json!(a.vals)), ("xs", json!(xs))]
    {
        args.push("--input".into());
        args.push(input(name, v));
    }
    for p in [format!("ROWS_PER_WKGP={r}"), format!("NUM_SPLITS={s}")] {
        args.push("--param".into());
        args.push(p);
    }
    args.extend(["--backend".to_string(), backend.to_string()]);
    args
}

fn xs(m: usize) -> Vec<f64> {
    (0..m).map(|k| (k as f64 + 1.0) / 2.0).collect()
}

#[test]
fn listing7_equals_dense_spmv_over_its_tunables() {
    let grid: &[(usize, usize)] = if common::oclgrind() {
        &[(1, 1), (2, 4), (4, 2)]
    } else {
        &[(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (4, 4), (8, 2)]
    };
    let mut rng = Rng(0x5eed_1157);
    let dir = tempfile::tempdir().unwrap();
    let (n, m) = (8, 9);
    for &(r, s) in grid {
        let a = Csr::random(&mut rng, n, m, s);
        let x = xs(m);
        let want = a.mv(&x);
        for b in backends() {
            let args = run_args(dir.path(), &a, &x, r, s, b);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, v) = heddle_json(&args);
            assert_eq!(code, 0, "{b}, R = {r}, S = {s}: {v:#}");
            let got: Vec<f64> =
                v["result"].as_array().unwrap_or_else(|| panic!("{v:#}")).iter().map(|y| y.as_f64().unwrap()).collect();
            assert_eq!(got, want, "{b}, R = {r}, S = {s}, offsets {:?}", a.offsets);
        }
    }
}

#[test]
fn listing7_with_empty_rows_and_one_block() {
    // Empty rows (first, last, all), and R = n: one work-group holds every row.
    let m = 4;
    let cases = [
        vec![vec![], vec![(0, 1.0), (3, -2.0)], vec![]],
        vec![vec![], vec![], vec![]],
        vec![vec![(1, 0.5), (2, 0.25)], vec![], vec![(0, 1.5), (1, 1.0)]],
    ];
    let dir = tempfile::tempdir().unwrap();
    for rows in cases {
        let a = Csr::from_rows(m, &rows);
        let x = xs(m);
        for (r, s) in [(1, 2), (3, 2), (3, 1)] {
            for b in backends() {
                let args = run_args(dir.path(), &a, &x, r, s, b);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let (code, v) = heddle_json(&args);
                assert_eq!(code, 0, "{b}, R = {r}, S = {s}: {v:#}");
                assert_eq!(v["result"], json!(a.mv(&x)), "{b}, R = {r}, S = {s}, offsets {:?}", a.offsets);
            }
        }
    }
}

#[test]
fn a_row_not_divisible_by_num_splits_is_a_located_error() {
    // Row 1 has 3 entries; NUM_SPLITS = 2.
    let a = Csr::from_rows(4, &[vec![(0, 1.0), (1, 1.0)], vec![(0, 1.0), (1, 2.0), (3, 3.0)]]);
    let dir = tempfile::tempdir().unwrap();
    for b in backends() {
        let args = run_args(dir.path(), &a, &xs(4), 1, 2, b);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = heddle(&args);
        assert_eq!(code, 1, "{b}: {err}");
        assert!(err.contains("listing7.hdl:24:"), "{b}: not located at the split: {err}");
        assert!(err.contains("`split(NUM_SPLITS)`: the array's length is not a multiple of NUM_SPLITS"), "{b}: {err}");
        assert!(!err.contains("internal error"), "{b}: {err}");
    }
}

#[test]
fn rows_per_workgroup_not_dividing_n_is_a_located_error() {
    let a = Csr::from_rows(4, &[vec![(0, 1.0)], vec![], vec![(2, 1.0)]]);
    let dir = tempfile::tempdir().unwrap();
    for b in backends() {
        let args = run_args(dir.path(), &a, &xs(4), 2, 1, b);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = heddle(&args);
        assert_eq!(code, 1, "{b}: {err}");
        assert!(err.contains("listing7.hdl:"), "{b}: {err}");
        assert!(err.contains("n % ROWS_PER_WKGP == 0"), "{b}: {err}");
    }
}

#[test]
fn reduce_without_init_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "k.hdl", "nFun(n => fun(xs: [float]_n => xs :>> reduce(x => x.1 + x.2)))\n");
    let file = file.to_str().unwrap();
    for (xs, want) in [("[1.5, 2.0, -4.0]", Some(-0.5)), ("[3.0]", Some(3.0)), ("[]", None)] {
        let input = write(dir.path(), "xs.json", xs);
        for b in backends() {
            let input = format!("xs={}", input.display());
            let (code, out, err) = heddle(&["run", file, "--input", &input, "--backend", b]);
            match want {
                Some(w) => {
                    assert_eq!(code, 0, "{b}: {err}");
                    assert_eq!(out.trim().parse::<f64>().unwrap_or(f64::NAN), w, "{b}: {out}");
                }
                None => {
                    assert_eq!(code, 1, "{b}: {out} {err}");
                    assert!(err.contains("k.hdl:1:"), "{b}: {err}");
                    assert!(err.contains("an empty array has no first element"), "{b}: {err}");
                }
            }
        }
    }
}

#[test]
fn an_empty_matrix_is_a_located_error() {
    // `split(n)` with n = 0 asks for chunks of no elements: refused on every backend.
    let a = Csr::from_rows(3, &[]);
    let dir = tempfile::tempdir().unwrap();
    for b in backends() {
        let args = run_args(dir.path(), &a, &xs(3), 1, 1, b);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = heddle(&args);
        assert_eq!(code, 1, "{b}: {err}");
        assert!(err.contains("listing7.hdl:"), "{b}: {err}");
        assert!(err.contains("`split(n)` needs n to be at least 1"), "{b}: {err}");
    }
}

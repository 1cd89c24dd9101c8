//! The kernels of `examples/sparse/` (issue 7) on every backend, each against
//! a dense computation of the same kernel written here: SpMV over CSR, DCSR,
//! DCSC, COO (AoS and SoA), CDR, CSC, BSR (2x2 and 1x8), 2:4, ELL, DIA, loose CSR (also
//! from storage with gaps between rows) and batched CSR; SpMM; SDDMM; MTTKRP
//! on a CSF tensor; sum/product/min/max over sparse vectors and matrices.
//!
//! Inputs are random (a fixed-seed generator, so a failure reproduces), with
//! an empty row and an empty column in every matrix, COO files with and
//! without duplicate entries, and are written as .mtx/.tns/.json files to a
//! temporary directory. The MLIR paper's worked examples (§4.1) are checked
//! exactly. OpenCL runs wherever a platform is installed and must run under
//! `CI=true` (tests/it/opencl.rs's convention).

use crate::common;

use common::{Rng, backends, flatten, heddle, opencl_platform as platform, write};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

type Dense = Vec<Vec<f64>>;

/// An m x n matrix (m even, n a multiple of 4, so BSR 2x2 and 2:4 can hold it)
/// with at most 2 entries per 4-column block, and one empty row and column.
fn random_matrix(rng: &mut Rng) -> Dense {
    let m = 2 * (1 + rng.below(3) as usize);
    let n = 4 * (1 + rng.below(2) as usize);
    random_matrix_of(rng, m, n)
}

/// As [`random_matrix`], of the given shape.
fn random_matrix_of(rng: &mut Rng, m: usize, n: usize) -> Dense {
    let (empty_row, empty_col) = (rng.below(m as u64) as usize, rng.below(n as u64) as usize);
    let mut a = vec![vec![0.0; n]; m];
    for (i, row) in a.iter_mut().enumerate() {
        for b in 0..n / 4 {
            for _ in 0..2 {
                let j = b * 4 + rng.below(4) as usize;
                if i != empty_row && j != empty_col && rng.below(3) > 0 {
                    row[j] = rng.value();
                }
            }
        }
    }
    a
}

/// Matrix Market text; with `split`, every other entry is written as two
/// halves (duplicate coordinates, which mean their sum).
fn mtx(a: &Dense, split: bool) -> String {
    let mut lines = Vec::new();
    for (i, row) in a.iter().enumerate() {
        for (j, v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
            if split && lines.len() % 2 == 0 {
                lines.push(format!("{} {} {}", i + 1, j + 1, v / 2.0));
                lines.push(format!("{} {} {}", i + 1, j + 1, v / 2.0));
            } else {
                lines.push(format!("{} {} {v}", i + 1, j + 1));
            }
        }
    }
    let cols = a.first().map_or(0, Vec::len);
    format!("%%MatrixMarket matrix coordinate real general\n{} {cols} {}\n{}\n", a.len(), lines.len(), lines.join("\n"))
}

/// Runs `examples/sparse/<kernel>.hdl` on `backend`; the result, flattened.
fn run(kernel: &str, backend: &str, args: &[String]) -> Vec<f64> {
    let file = format!("examples/sparse/{kernel}.hdl");
    let mut all: Vec<&str> = vec!["run", &file, "--backend", backend];
    all.extend(args.iter().map(String::as_str));
    let (code, out, err) = heddle(&all);
    assert_eq!(code, 0, "{kernel} on {backend}: {err}");
    let mut flat = Vec::new();
    flatten(&serde_json::from_str(&out).unwrap_or_else(|e| panic!("{kernel} on {backend}: {e}: {out}")), &mut flat);
    flat
}

/// Runs the kernel on every backend and compares with `want`.
fn check(kernel: &str, args: &[String], want: &[f64], case: &str) {
    for b in backends() {
        common::assert_close(&run(kernel, b, args), want, &format!("{kernel} on {b}, {case}"));
    }
}

fn arg(flag: &str, name: &str, path: &Path) -> [String; 2] {
    [flag.to_string(), format!("{name}={}", path.display())]
}

fn dense_spmv(a: &Dense, x: &[f64]) -> Vec<f64> {
    a.iter().map(|r| r.iter().zip(x).map(|(a, x)| a * x).sum()).collect()
}

const SPMV: [&str; 10] = [
    "spmv_csr",
    "spmv_dcsr",
    "spmv_dcsc",
    "spmv_coo",
    "spmv_coo_soa",
    "spmv_cdr",
    "spmv_csc",
    "spmv_bsr",
    "spmv_2_4",
    "spmv_loose_csr",
];

/// The matrix without the entries after the first `k` of each row (ELL with k slices holds the rest).
fn first_per_row(a: &Dense, k: usize) -> Dense {
    a.iter()
        .map(|row| {
            let mut seen = 0;
            row.iter()
                .map(|&v| {
                    seen += usize::from(v != 0.0);
                    if v != 0.0 && seen > k { 0.0 } else { v }
                })
                .collect()
        })
        .collect()
}

/// The `.json` storage of `a` as loose CSR with real gaps: rows stored in a
/// shuffled order, each after a random amount of unused room (filled with
/// junk entries that must never be read), and unused room at the end.
fn loose_csr_storage(a: &Dense, rng: &mut Rng) -> Value {
    let (m, n) = (a.len(), a[0].len());
    let mut order: Vec<usize> = (0..m).collect();
    for k in (1..m).rev() {
        order.swap(k, rng.below(k as u64 + 1) as usize);
    }
    let (mut pos, mut crd, mut values) = (vec![0u64; 2 * m], Vec::new(), Vec::new());
    let junk = |crd: &mut Vec<u64>, values: &mut Vec<f64>, k: u64| {
        for t in 0..k {
            crd.push(t % n as u64);
            values.push(1.0e6);
        }
    };
    for i in order {
        junk(&mut crd, &mut values, rng.below(3));
        pos[2 * i] = crd.len() as u64;
        for (j, &v) in a[i].iter().enumerate().filter(|(_, v)| **v != 0.0) {
            crd.push(j as u64);
            values.push(v);
        }
        pos[2 * i + 1] = crd.len() as u64;
    }
    junk(&mut crd, &mut values, 1 + rng.below(3));
    json!({
        "encoding": "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>",
        "dim_sizes": [m, n],
        "positions": [null, pos],
        "coordinates": [null, crd],
        "values": values,
    })
}

#[test]
fn spmv_in_every_format_matches_dense() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..common::cases(3) {
        let a = random_matrix(&mut rng);
        let x: Vec<f64> = (0..a[0].len()).map(|k| k as f64 * 0.5 - 1.0).collect();
        let want = dense_spmv(&a, &x);
        let xs = write(dir.path(), "x.json", &json!(x).to_string());
        let plain = write(dir.path(), "a.mtx", &mtx(&a, false));
        for kernel in SPMV {
            let args = [arg("--matrix", "A", &plain), arg("--input", "xs", &xs)].concat();
            check(kernel, &args, &want, &format!("case {case}: {a:?}"));
        }
        // Duplicate coordinates add up (COO keeps them; the others sum them when packing).
        let dup = write(dir.path(), "dup.mtx", &mtx(&a, true));
        for kernel in ["spmv_coo", "spmv_coo_soa", "spmv_csr"] {
            let args = [arg("--matrix", "A", &dup), arg("--input", "xs", &xs)].concat();
            check(kernel, &args, &want, &format!("case {case} with duplicates: {a:?}"));
        }
        // ELL with 3 slices holds at most 3 entries per row.
        let a3 = first_per_row(&a, 3);
        let ell = write(dir.path(), "a3.mtx", &mtx(&a3, case == 1));
        let args = [arg("--matrix", "A", &ell), arg("--input", "xs", &xs)].concat();
        check("spmv_ell", &args, &dense_spmv(&a3, &x), &format!("case {case}: {a3:?}"));
        // Loose CSR from storage with gaps between (shuffled) rows and room at the end.
        let gaps = loose_csr_storage(&a, &mut rng);
        let stored = write(dir.path(), "loose.json", &gaps.to_string());
        let args = [arg("--matrix", "A", &stored), arg("--input", "xs", &xs)].concat();
        check("spmv_loose_csr", &args, &want, &format!("case {case}: {gaps}"));
    }
}

/// BSR with 1x8 blocks (`spmv_bsr_1x8.hdl`) on rows that mix dense runs
/// crossing block edges, single entries, and empty rows (first and last
/// included), with a column count of 8–32: every block kind a row can hold.
#[test]
fn spmv_bsr_1x8_matches_dense() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xB5B1_0008_D00D_F00D);
    for case in 0..common::cases(3) {
        let (m, n) = (3 + rng.below(5) as usize, 8 * (1 + rng.below(4) as usize));
        let mut a = vec![vec![0.0; n]; m];
        for row in a.iter_mut().skip(1).take(m - 2) {
            match rng.below(3) {
                0 => {}
                1 => row[rng.below(n as u64) as usize] = rng.value(),
                _ => {
                    let start = rng.below(n as u64) as usize;
                    let end = (start + 1 + rng.below(12) as usize).min(n);
                    for v in &mut row[start..end] {
                        *v = rng.value();
                    }
                }
            }
        }
        let x: Vec<f64> = (0..n).map(|k| k as f64 * 0.5 - 3.0).collect();
        let xs = write(dir.path(), "x.json", &json!(x).to_string());
        let file = write(dir.path(), "a.mtx", &mtx(&a, case == 1));
        let args = [arg("--matrix", "A", &file), arg("--input", "xs", &xs)].concat();
        check("spmv_bsr_1x8", &args, &dense_spmv(&a, &x), &format!("case {case}: {a:?}"));
    }
}

/// The `.json` storage of `a` as DIA (`j - i : compressed, i : dense`)
/// written by hand: the offsets of the non-empty diagonals, then per
/// diagonal its value at every row; positions past the matrix's edge hold
/// `junk`, which a kernel must never add (nor read x out of range for).
fn dia_storage(a: &Dense, junk: f64) -> Value {
    let (m, n) = (a.len(), a.first().map_or(0, Vec::len));
    let mut offsets: Vec<i64> = Vec::new();
    for (i, row) in a.iter().enumerate() {
        for (j, _) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
            offsets.push(j as i64 - i as i64);
        }
    }
    offsets.sort_unstable();
    offsets.dedup();
    let mut values = Vec::new();
    for &o in &offsets {
        for (i, row) in a.iter().enumerate() {
            let j = i as i64 + o;
            values.push(if (0..n as i64).contains(&j) { row[j as usize] } else { junk });
        }
    }
    json!({
        "encoding": "#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, i : dense) }>",
        "dim_sizes": [m, n],
        "positions": [[0, offsets.len()], null],
        "coordinates": [offsets, null],
        "values": values,
    })
}

/// SpMV over DIA (examples/sparse/spmv_dia.hdl, issue 12.6) equals the
/// dense product on every backend: square, wide and tall random matrices
/// (banded and scattered), a matrix with no entries and a 1x1 one, read from
/// `.mtx` (converted to DIA, padding = 0) and from hand-written DIA storage
/// whose padding holds 1e6 (skipped by the kernel's bounds check).
#[test]
fn spmv_dia_matches_dense() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x3C6E_F372_FE94_F82B);
    let mut shapes: Vec<(usize, usize)> = vec![(1, 1), (3, 4), (5, 5)];
    for _ in 0..common::cases(3) {
        shapes.push((1 + rng.below(9) as usize, 1 + rng.below(9) as usize));
    }
    for (case, &(m, n)) in shapes.iter().enumerate() {
        let mut a = vec![vec![0.0; n]; m];
        if case != 1 {
            // A band around a random diagonal, plus a few scattered entries.
            let shift = rng.below((m + n) as u64) as i64 - m as i64;
            for (i, row) in a.iter_mut().enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    let off = j as i64 - i as i64 - shift;
                    if (off.abs() <= 1 && rng.below(4) > 0) || rng.below(10) == 0 {
                        *v = rng.value();
                    }
                }
            }
        }
        let x: Vec<f64> = (0..n).map(|k| k as f64 * 0.5 - 1.0).collect();
        let want = dense_spmv(&a, &x);
        let xs = write(dir.path(), "x.json", &json!(x).to_string());
        let plain = write(dir.path(), "a.mtx", &mtx(&a, case % 2 == 1));
        let args = [arg("--matrix", "A", &plain), arg("--input", "xs", &xs)].concat();
        check("spmv_dia", &args, &want, &format!("case {case}: {a:?}"));
        let stored = write(dir.path(), "a_dia.json", &dia_storage(&a, 1.0e6).to_string());
        let args = [arg("--matrix", "A", &stored), arg("--input", "xs", &xs)].concat();
        check("spmv_dia", &args, &want, &format!("case {case} from storage with junk padding: {a:?}"));
    }
}

/// Batched SpMV over `(b : batch, i : dense, j : compressed)`: each matrix
/// of the batch times its own vector, read from a dense `.json` tensor.
#[test]
fn batched_spmv_matches_dense() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x6A09_E667_F3BC_C908);
    for case in 0..common::cases(3) {
        let (batch, m, n) = (1 + rng.below(3) as usize, 2 + rng.below(4) as usize, 4 * (1 + rng.below(2) as usize));
        let mats: Vec<Dense> = (0..batch).map(|_| random_matrix_of(&mut rng, m, n)).collect();
        let xs: Dense = (0..batch).map(|_| (0..n).map(|_| rng.value()).collect()).collect();
        let want: Vec<f64> = mats.iter().zip(&xs).flat_map(|(a, x)| dense_spmv(a, x)).collect();
        let pa = write(dir.path(), "a.json", &json!(mats).to_string());
        let px = write(dir.path(), "x.json", &json!(xs).to_string());
        let args = [arg("--matrix", "A", &pa), arg("--input", "xs", &px)].concat();
        check("spmv_batch_csr", &args, &want, &format!("case {case}: {mats:?}"));
    }
}

/// Loose positions that contradict the buffers (hi < lo, hi past the
/// coordinates, a negative lo) are a clear input error naming the tensor
/// parameter, from a `.json` storage file and from raw buffers alike.
#[test]
fn bad_loose_positions_are_input_errors() {
    let dir = tempfile::tempdir().unwrap();
    let xs = write(dir.path(), "x.json", "[1, 10, 100, 1000]");
    let crd = write(dir.path(), "crd.json", "[1, 2, 0, 0, 0, 0, 3, 0]");
    let vals = write(dir.path(), "vals.json", "[3, 5, -1, -1, -1, 1, 2, -1]");
    let kernel = "examples/sparse/spmv_loose_csr.hdl";
    let cases = [
        ("[5, 4, 2, 2, 0, 2]", "below its lower bound"),
        ("[5, 7, 2, 2, 0, 9]", "past the end"),
        ("[5, 7, 2, 2, -1, 2]", "negative"),
    ];
    for (pos, why) in cases {
        // Raw buffers, bound with --input.
        let p = write(dir.path(), "pos.json", pos);
        for b in backends() {
            let (code, out, err) = heddle(&[
                "run",
                kernel,
                "--backend",
                b,
                "--input",
                &format!("A_pos1={}", p.display()),
                "--input",
                &format!("A_crd1={}", crd.display()),
                "--input",
                &format!("A_values={}", vals.display()),
                "--input",
                &format!("xs={}", xs.display()),
                "--param",
                "A_dim0=3",
            ]);
            assert_eq!(code, 1, "{pos} on {b}: {out}{err}");
            assert!(
                err.contains("parameter `A`") && err.contains("A_pos1") && err.contains(why),
                "{pos} on {b}: {err}"
            );
            assert!(!err.contains("panicked"), "{err}");
        }
        // The same buffers as .json storage (positions must be naturals there).
        if pos.contains('-') {
            continue;
        }
        let storage = json!({
            "encoding": "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>",
            "dim_sizes": [3, 4],
            "positions": [null, serde_json::from_str::<Value>(pos).unwrap()],
            "coordinates": [null, [1, 2, 0, 0, 0, 0, 3, 0]],
            "values": [3, 5, -1, -1, -1, 1, 2, -1],
        });
        let s = write(dir.path(), "bad.json", &storage.to_string());
        let (code, out, err) = heddle(&[
            "run",
            kernel,
            "--matrix",
            &format!("A={}", s.display()),
            "--input",
            &format!("xs={}", xs.display()),
        ]);
        assert_eq!(code, 1, "{pos}: {out}{err}");
        assert!(err.contains("parameter `A`") && err.contains("positions[1]") && err.contains(why), "{pos}: {err}");
    }
    // The good positions run: row 0 at 5..7, row 1 empty, row 2 at 0..2.
    let p = write(dir.path(), "pos.json", "[5, 7, 2, 2, 0, 2]");
    for b in backends() {
        let got = run(
            "spmv_loose_csr",
            b,
            &[
                arg("--input", "A_pos1", &p),
                arg("--input", "A_crd1", &crd),
                arg("--input", "A_values", &vals),
                arg("--input", "xs", &xs),
            ]
            .concat(),
        );
        assert_eq!(got, vec![2001.0, 0.0, 530.0], "{b}");
    }
}

#[test]
fn spmm_and_sddmm_match_dense() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for case in 0..common::cases(3) {
        let a = random_matrix(&mut rng);
        let (m, n, k) = (a.len(), a[0].len(), 3);
        let b: Dense = (0..n).map(|_| (0..k).map(|_| rng.value()).collect()).collect();
        let want: Vec<f64> = (0..m)
            .flat_map(|i| (0..k).map(|c| (0..n).map(|j| a[i][j] * b[j][c]).sum::<f64>()).collect::<Vec<_>>())
            .collect();
        let pa = write(dir.path(), "a.mtx", &mtx(&a, false));
        let pb = write(dir.path(), "b.json", &json!(b).to_string());
        check(
            "spmm_csr",
            &[arg("--matrix", "A", &pa), arg("--input", "B", &pb)].concat(),
            &want,
            &format!("case {case}"),
        );
        // SDDMM: the sampled entries, in CSR order.
        let u: Dense = (0..m).map(|_| (0..2).map(|_| rng.value()).collect()).collect();
        let v: Dense = (0..n).map(|_| (0..2).map(|_| rng.value()).collect()).collect();
        let mut want = Vec::new();
        for i in 0..m {
            for j in (0..n).filter(|&j| a[i][j] != 0.0) {
                want.push(a[i][j] * (0..2).map(|c| u[i][c] * v[j][c]).sum::<f64>());
            }
        }
        let (pu, pv) =
            (write(dir.path(), "u.json", &json!(u).to_string()), write(dir.path(), "v.json", &json!(v).to_string()));
        let args = [arg("--matrix", "S", &pa), arg("--input", "U", &pu), arg("--input", "V", &pv)].concat();
        check("sddmm_csr", &args, &want, &format!("case {case}"));
    }
}

/// (sum, product, min, max) of the stored values; an empty set gives the initial values.
fn reductions(values: &[f64]) -> Vec<f64> {
    let fold = |init: f64, f: fn(f64, f64) -> f64| values.iter().fold(init, |a, &v| f(a, v));
    vec![fold(0.0, |a, v| a + v), fold(1.0, |a, v| a * v), fold(3.0e38, f64::min), fold(-3.0e38, f64::max)]
}

#[test]
fn reductions_over_sparse_vectors_and_matrices_match_dense() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x94D0_49BB_1331_11EB);
    for case in 0..common::cases(3) {
        let a = random_matrix(&mut rng);
        let stored: Vec<f64> = a.iter().flatten().copied().filter(|v| *v != 0.0).collect();
        let pa = write(dir.path(), "a.mtx", &mtx(&a, false));
        check("reduce_matrix", &arg("--matrix", "A", &pa), &reductions(&stored), &format!("case {case}"));
        // A sparse vector: row 0 of the matrix, as a one-dimensional .tns file
        // whose last coordinate is stored (a .tns file has no size line).
        let mut row = a[0].clone();
        let last = row.len() - 1;
        row[last] = 1.5;
        let mut tns = String::new();
        for (j, v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
            let _ = writeln!(tns, "{} {v}", j + 1);
        }
        let pv = write(dir.path(), "v.tns", &tns);
        let stored: Vec<f64> = row.into_iter().filter(|v| *v != 0.0).collect();
        check("reduce_vector", &arg("--matrix", "a", &pv), &reductions(&stored), &format!("case {case}"));
    }
}

#[test]
fn mttkrp_on_a_csf_tensor_matches_dense() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xBF58_476D_1CE4_E5B9);
    for case in 0..common::cases(3) {
        let (ni, nk, nl, nj) = (3 + rng.below(3) as usize, 2 + rng.below(3) as usize, 2 + rng.below(3) as usize, 2);
        let mut entries = Vec::new();
        for i in (0..ni).filter(|&i| i != 1) {
            // Slice 1 stays empty; the last corner is stored so the sizes are known.
            for k in 0..nk {
                for l in 0..nl {
                    if rng.below(3) == 0 || (i, k, l) == (ni - 1, nk - 1, nl - 1) {
                        entries.push((i, k, l, rng.value()));
                    }
                }
            }
        }
        let c: Dense = (0..nk).map(|_| (0..nj).map(|_| rng.value()).collect()).collect();
        let d: Dense = (0..nl).map(|_| (0..nj).map(|_| rng.value()).collect()).collect();
        check_mttkrp(dir.path(), ni, &entries, &c, &d, &format!("case {case}"));
    }
}

/// Runs `mttkrp_csf` on the entries (i, k, l, value) of an `ni` × · × ·
/// tensor B and the dense C and D (J = their rows' length) on every backend,
/// against the dense sum A(i, j) = Σ B(i, k, l) C(k, j) D(l, j).
fn check_mttkrp(
    dir: &std::path::Path,
    ni: usize,
    entries: &[(usize, usize, usize, f64)],
    c: &Dense,
    d: &Dense,
    what: &str,
) {
    let (args, want) = mttkrp_case(dir, ni, entries, c, d);
    check("mttkrp_csf", &args, &want, &format!("{what}: {entries:?}"));
}

/// The `run` arguments for `mttkrp_csf` on these inputs (written to `dir`)
/// and the dense result A(i, j) = Σ B(i, k, l) C(k, j) D(l, j), flattened.
fn mttkrp_case(
    dir: &std::path::Path,
    ni: usize,
    entries: &[(usize, usize, usize, f64)],
    c: &Dense,
    d: &Dense,
) -> (Vec<String>, Vec<f64>) {
    let nj = c.first().map_or(0, Vec::len);
    let mut want = vec![0.0; ni * nj];
    for &(i, k, l, v) in entries {
        for j in 0..nj {
            want[i * nj + j] += v * c[k][j] * d[l][j];
        }
    }
    let tns: String = entries.iter().map(|(i, k, l, v)| format!("{} {} {} {v}\n", i + 1, k + 1, l + 1)).collect();
    let pb = write(dir, "b.tns", &tns);
    let (pc, pd) = (write(dir, "c.json", &json!(c).to_string()), write(dir, "d.json", &json!(d).to_string()));
    let args = [arg("--matrix", "B", &pb), arg("--input", "C", &pc), arg("--input", "D", &pd)].concat();
    (args, want)
}

/// MTTKRP on the CPU backend over 1 to 4 threads, where the nonzero loop
/// re-loads the kernel's arguments (`J`, the buffers' bases) in its
/// pre-header (`codegen-cpu/src/translate/rebase.rs`) and the j
/// loops count `0 .. J` with no test of `J < 0` and test what is left after
/// their main loop from the counter (`simd.rs`'s `lane_loop`). J = 0, 1, 7,
/// 8, 9 and 33 leave every remainder; slices 0 and 4 are empty, every other
/// slice has a k without entries, fibres of one and of many nonzeros; every
/// thread count splits the slices (the tests' threshold is 0). The
/// reference is a dense loop.
#[test]
fn mttkrp_with_reloaded_arguments_over_threads_matches_dense() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for nj in [0, 1, 7, 8, 9, 33] {
        let (ni, nk, nl) = (9, 5, 6);
        let mut entries = Vec::new();
        for i in (0..ni).filter(|&i| i != 0 && i != 4) {
            let skipped = rng.below(nk as u64) as usize;
            for k in (0..nk).filter(|&k| k != skipped || i == ni - 1) {
                let one = k % 2 == 0;
                for l in 0..nl {
                    let keep = if one { l == (i + k) % nl } else { rng.below(3) > 0 };
                    if keep || (i, k, l) == (ni - 1, nk - 1, nl - 1) {
                        entries.push((i, k, l, rng.value()));
                    }
                }
            }
        }
        let c: Dense = (0..nk).map(|_| (0..nj).map(|_| rng.value()).collect()).collect();
        let d: Dense = (0..nl).map(|_| (0..nj).map(|_| rng.value()).collect()).collect();
        let (args, want) = mttkrp_case(dir.path(), ni, &entries, &c, &d);
        for threads in ["1", "2", "3", "4"] {
            let all = [args.clone(), vec!["--threads".to_string(), threads.to_string()]].concat();
            common::assert_close(&run("mttkrp_csf", "cpu", &all), &want, &format!("J = {nj}, {threads} threads"));
        }
    }
}

/// MTTKRP with row lengths J around the CPU backend's lane steps (4 lanes,
/// 8 per main-loop iteration): J = 0 (no entry test: `n = max(hi - lo, 0)`),
/// 1 … 9 and 17 leave every remainder after
/// the main loop, the single vector step and the scalar rest, reached by
/// one test of `main_hi < hi` and measured from the counter
/// (`codegen-cpu/src/translate/simd.rs`'s `lane_loop`), and whose narrow
/// range check is made once per slice (`lazy.rs`'s `check_narrow_range`).
/// The tensor has an empty slice, an empty fibre's neighbour slices and
/// fibres of one and of many nonzeros; the reference is a dense loop.
#[test]
fn mttkrp_row_lengths_around_the_lanes_match_dense() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x94D0_49BB_1331_11EB);
    for nj in [0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 17] {
        let (ni, nk, nl) = (4, 3 + rng.below(3) as usize, 5);
        let mut entries = Vec::new();
        for i in (0..ni).filter(|&i| i != 2) {
            for k in 0..nk {
                // Slice 2 stays empty; fibre (0, k) holds one nonzero, the others many.
                for l in 0..nl {
                    let one = i == 0 && l != k % nl;
                    if !one && (rng.below(2) == 0 || (i, k, l) == (ni - 1, nk - 1, nl - 1)) {
                        entries.push((i, k, l, rng.value()));
                    }
                }
            }
        }
        let c: Dense = (0..nk).map(|_| (0..nj).map(|_| rng.value()).collect()).collect();
        let d: Dense = (0..nl).map(|_| (0..nj).map(|_| rng.value()).collect()).collect();
        check_mttkrp(dir.path(), ni, &entries, &c, &d, &format!("J = {nj}"));
    }
}

/// The MLIR paper's §4.1 examples with a00 = 1, a03 = 2, a20 = 3 (a 3x4 matrix
/// with an empty row), x3 = 1, x6 = 2, x7 = 3, x10 = 4 (a vector of 16), and
/// its 3x3x4 tensor: exact results.
#[test]
fn mlir_paper_worked_examples() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1\n1 4 2\n3 1 3\n");
    let xs = write(dir.path(), "x.json", "[1, 10, 100, 1000]");
    for kernel in ["spmv_csr", "spmv_cdr", "spmv_dcsr", "spmv_dcsc", "spmv_csc", "spmv_coo"] {
        check(
            kernel,
            &[arg("--matrix", "A", &a), arg("--input", "xs", &xs)].concat(),
            &[2001.0, 0.0, 3.0],
            "the 3x4 matrix A",
        );
    }
    check("reduce_matrix", &arg("--matrix", "A", &a), &[6.0, 6.0, 1.0, 3.0], "the 3x4 matrix A");
    let v = write(dir.path(), "v.tns", "4 1\n7 2\n8 3\n11 4\n16 0.5\n");
    check(
        "reduce_vector",
        &arg("--matrix", "a", &v),
        &[10.5, 12.0, 0.5, 4.0],
        "the sparse vector (with x15 = 0.5 to fix its size)",
    );
    // T: t000 = 1, t200 = 2, t202 = 3, t212 = 4, t213 = 5; C = 1 everywhere, D(l, j) = l + 1:
    // A(i, j) = sum over k, l of T(i, k, l) * (l + 1).
    let t = write(dir.path(), "t.tns", "1 1 1 1\n3 1 1 2\n3 1 3 3\n3 2 3 4\n3 2 4 5\n");
    let c = write(dir.path(), "c.json", &json!([[1.0], [1.0]]).to_string());
    let d = write(dir.path(), "d.json", &json!([[1.0], [2.0], [3.0], [4.0]]).to_string());
    let args = [arg("--matrix", "B", &t), arg("--input", "C", &c), arg("--input", "D", &d)].concat();
    check("mttkrp_csf", &args, &[1.0, 0.0, 2.0 + 9.0 + 12.0 + 20.0], "the 3x3x4 tensor T");
}

#[test]
fn scatter_add_outside_its_length_is_a_run_time_error() {
    // COO SpMV into a result shorter than the matrix: row 3 has no slot.
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(common::root().join("examples/sparse/spmv_coo.hdl")).unwrap();
    let short = write(dir.path(), "short.hdl", &src.replace("scatterAdd(A_dim0)", "scatterAdd(2)"));
    let a = write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n3 2 2\n1 1 1\n3 2 2\n");
    let xs = write(dir.path(), "x.json", "[1, 1]");
    for b in backends() {
        let (code, _, err) = heddle(&[
            "run",
            short.to_str().unwrap(),
            "--backend",
            b,
            "--matrix",
            &format!("A={}", a.display()),
            "--input",
            &format!("xs={}", xs.display()),
        ]);
        assert_eq!(code, 1, "{b}: {err}");
        assert!(err.contains("out of bounds") && err.contains("scatterAdd"), "{b}: {err}");
    }
}

fn loops(kernel: &str) -> String {
    let (code, out, err) = heddle(&["compile", "--target", "loops", &format!("examples/sparse/{kernel}.hdl")]);
    assert_eq!(code, 0, "{kernel}: {err}");
    out
}

/// The lowered loops of SpMV over CSR: the view's own positions are not
/// checked and a row's start is computed once per row, as in the hand-written
/// CSR of examples/csr_unpacked_spmv.hdl; only `xs@col` is checked.
#[test]
fn csr_spmv_loops_check_only_the_data_dependent_index() {
    let text = loops("spmv_csr");
    insta::assert_snapshot!("loops_spmv_csr", text);
    let inner = text.split("for k in").nth(1).expect("an inner loop");
    let inner = &inner[inner.find('{').expect("a loop body")..];
    assert_eq!(inner.matches("check").count(), 1, "{text}");
    assert!(!inner.contains("A_pos1["), "the row start is recomputed per entry:\n{text}");
}

/// COO SpMV: scatterAdd is the result, so one parallel loop over the entries
/// adds atomically into the (runtime-zeroed) output, after the column and row
/// checks (both data-dependent).
#[test]
fn coo_spmv_loops() {
    let text = loops("spmv_coo");
    insta::assert_snapshot!("loops_spmv_coo", text);
    assert_eq!(text.matches("check").count(), 2, "{text}");
    assert!(text.contains("parallel for") && text.contains("(atomic)") && !text.contains("alloc"), "{text}");
}

/// Many entries adding into few rows from every thread / work-item at once:
/// the atomic adds (a compare-and-swap loop for f32) lose nothing. Integer
/// values keep every order of the sum exact.
#[test]
fn parallel_scatter_add_under_contention() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (m, n) = (7, 16);
    let mut want = vec![0.0; m];
    // Fewer on Oclgrind, which runs the work-items one after another anyway.
    let entries = if common::oclgrind() { 2_000 } else { 20_000 };
    let mut text = format!("%%MatrixMarket matrix coordinate real general\n{m} {n} {entries}\n");
    for _ in 0..entries {
        let (i, j, v) = (rng.below(m as u64) as usize, rng.below(n as u64) as usize, rng.below(9) as f64 - 4.0);
        want[i] += v;
        let _ = writeln!(text, "{} {} {v}", i + 1, j + 1);
    }
    let a = write(dir.path(), "a.mtx", &text);
    let xs = write(dir.path(), "x.json", &json!(vec![1.0; n]).to_string());
    check(
        "spmv_coo",
        &[arg("--matrix", "A", &a), arg("--input", "xs", &xs)].concat(),
        &want,
        &format!("{entries} entries into 7 rows"),
    );
}

/// Integer accumulation (an atomic read-modify-write, `atomic_add` in OpenCL):
/// the number of stored entries per row of a COO matrix.
#[test]
fn scatter_add_of_integers_counts_entries_per_row() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = write(
        dir.path(),
        "counts.hdl",
        "#COO = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>\n\
         fun(A: tensor<?x?xf32, #COO> => A :>> map(fun(e => (e.1, 1))) :>> scatterAdd(A_dim0))\n",
    );
    let a = write(
        dir.path(),
        "a.mtx",
        "%%MatrixMarket matrix coordinate real general\n4 3 5\n1 1 1\n1 1 2\n4 2 1\n1 3 1\n4 3 5\n",
    );
    for b in backends() {
        let (code, out, err) =
            heddle(&["run", kernel.to_str().unwrap(), "--backend", b, "--matrix", &format!("A={}", a.display())]);
        assert_eq!(code, 0, "{b}: {err}");
        let got: Vec<i64> = serde_json::from_str(&out).unwrap();
        // Reading the file sums the duplicate (1, 1) into one stored entry.
        assert_eq!(got, vec![2, 0, 0, 2], "{b}");
    }
}

/// A kernel that adds into its output starts every launch from zero: OpenCL
/// repetitions (timing runs) reuse the device buffer and must not pile up.
#[test]
fn repeated_launches_of_a_scatter_start_from_zero() {
    let Some(cl) = platform() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n3 2 3\n1 1 1\n3 2 2\n3 1 4\n");
    let xs = write(dir.path(), "x.json", "[1, 10]");
    let path = common::root().join("examples/sparse/spmv_coo.hdl");
    let file = heddle::source::SourceFile::read(path.to_str().unwrap()).unwrap();
    let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d)));
    let (nats, mut loaded) = heddle_runtime::io::bind::tensor_inputs(&kernel, "A", &a).unwrap();
    loaded.push(("xs".to_string(), heddle_runtime::io::read_input(&xs).unwrap()));
    let env = heddle_runtime::io::bind_inputs(&kernel, &nats, loaded).unwrap();
    let compiled = heddle::opencl::compile(&kernel, "spmv_coo").unwrap();
    let (got, _) = heddle::opencl::run(cl, &kernel, &compiled, &env, 3).unwrap();
    assert_eq!(got.to_string(), "[1, 0, 24]");
}

/// A loose level under a compressed one: its positions are read at `2 * p`
/// for the parent's position p, an index over a program value inside the
/// view's types (lowering evaluates it in the kernel's environment).
#[test]
fn spmv_over_a_compressed_then_loose_matrix_matches_dense() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = write(
        dir.path(),
        "dcsr_loose.hdl",
        "#DL = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : loose_compressed) }>\n\
         fun(A: tensor<?x?xf32, #DL> => fun(xs: [float]_A_dim1 =>\n\
           A :>> map(fun(r => (r.1, r.2 :>> map(fun(e => e.2 * (xs@e.1))) :>> reduce(+, 0)))) :>> scatterAdd(A_dim0)))\n",
    );
    let mut rng = Rng(0xd1ce);
    for case in 0..common::cases(3) {
        let a = random_matrix(&mut rng);
        let x: Vec<f64> = (0..a[0].len()).map(|_| rng.value()).collect();
        let m = write(dir.path(), &format!("a{case}.mtx"), &mtx(&a, false));
        let xs = write(dir.path(), &format!("x{case}.json"), &serde_json::to_string(&x).unwrap());
        for b in backends() {
            let (code, out, err) = heddle(&[
                "run",
                kernel.to_str().unwrap(),
                "--backend",
                b,
                "--matrix",
                &format!("A={}", m.display()),
                "--input",
                &format!("xs={}", xs.display()),
            ]);
            assert_eq!(code, 0, "case {case} on {b}: {err}");
            let mut got = Vec::new();
            flatten(&serde_json::from_str(&out).unwrap(), &mut got);
            common::assert_close(
                &got,
                &dense_spmv(&a, &x),
                &format!("compressed-then-loose SpMV, case {case}, on {b}"),
            );
        }
    }
}

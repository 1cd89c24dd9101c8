//! Batch levels stored as MLIR stores them (issue 12, item 4): every buffer
//! has one row per batch (`memref<B x ? x T>`), each batch's positions start
//! at 0, rows are as long as the longest batch and the rest is padding. The
//! stored buffers are checked against hand-derived layouts (and MLIR's own
//! `sparse_print_3d.mlir` case), round trips through `heddle convert`,
//! batched CSR and COO SpMV on the interpreter, the CPU backend and OpenCL
//! against numpy (and a computation written here), and bad storage is a
//! located error with exit status 1.

use crate::common;

use common::{Rng, backends, flatten, heddle, heddle_json, write};
use serde_json::{Value, json};
use std::path::Path;

const BCSR: &str = "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed) }>";
const BCOO: &str =
    "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : compressed(nonunique), j : singleton) }>";
const BDCSR: &str = "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : compressed, j : compressed) }>";

/// Batches of dense matrices, `[b][i][j]`.
type Batches = Vec<Vec<Vec<f64>>>;

/// The 2 × 3 × 4 tensor of the hand-checked cases: batch 0 holds (0,0) = 1,
/// (0,2) = 2, (2,1) = 3; batch 1 holds (1,3) = 4.
const SMALL_TNS: &str = "1 1 1 1.0\n1 1 3 2.0\n1 3 2 3.0\n2 2 4 4.0\n";

fn convert(dir: &Path, input: &Path, to: &str, out: &str) -> Value {
    let o = dir.join(out);
    let (code, stdout, err) = heddle(&["convert", input.to_str().unwrap(), "--to", to, "-o", o.to_str().unwrap()]);
    assert_eq!(code, 0, "convert to {to}: {stdout}{err}");
    serde_json::from_str(&std::fs::read_to_string(&o).unwrap()).unwrap()
}

fn storage(v: &Value) -> (Value, Value, Value) {
    (v["positions"].clone(), v["coordinates"].clone(), v["values"].clone())
}

#[test]
fn stored_buffers_have_one_row_per_batch_with_positions_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let tns = write(dir.path(), "a.tns", SMALL_TNS);
    // Batched CSR: per batch, `rows + 1` positions from 0; coordinates and
    // values rows as long as batch 0's three entries, batch 1's padded.
    let v = convert(dir.path(), &tns, BCSR, "bcsr.json");
    assert_eq!(
        storage(&v),
        (
            json!([null, null, [[0, 2, 2, 3], [0, 0, 1, 1]]]),
            json!([null, null, [[0, 2, 1], [3, 0, 0]]]),
            json!([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
        )
    );
    assert_eq!(v["nse"], 3, "nse counts one batch's row, as sparse_tensor.print does");
    // Batched COO: a `[0, n_b]` positions row per batch, (i, j) pairs interleaved.
    let v = convert(dir.path(), &tns, BCOO, "bcoo.json");
    assert_eq!(
        storage(&v),
        (
            json!([null, [[0, 3], [0, 1]], null]),
            json!([null, [[0, 0, 0, 2, 2, 1], [1, 3, 0, 0, 0, 0]], null]),
            json!([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
        )
    );
    // Batched DCSR: level 2's positions rows are one longer than level 1's
    // coordinates rows; a shorter batch repeats its last position.
    let v = convert(dir.path(), &tns, BDCSR, "bdcsr.json");
    assert_eq!(
        storage(&v),
        (
            json!([null, [[0, 2], [0, 1]], [[0, 2, 3], [0, 1, 1]]]),
            json!([null, [[0, 2], [1, 0]], [[0, 2, 1], [3, 0, 0]]]),
            json!([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
        )
    );
    // Two batch levels: a row per (b0, b1), nested two deep; an empty batch
    // has positions of zeros and only padding.
    let tns2 = write(dir.path(), "b.tns", "1 2 1 1 5.0\n2 1 2 2 6.0\n2 1 2 1 7.0\n");
    let enc = "#sparse_tensor.encoding<{ map = (a, b, i, j) -> (a : batch, b : batch, i : dense, j : compressed) }>";
    let v = convert(dir.path(), &tns2, enc, "b2.json");
    assert_eq!(
        storage(&v),
        (
            json!([null, null, null, [[[0, 0, 0], [0, 1, 1]], [[0, 0, 2], [0, 0, 0]]]]),
            json!([null, null, null, [[[0, 0], [0, 0]], [[0, 1], [0, 0]]]]),
            json!([[[0.0, 0.0], [5.0, 0.0]], [[7.0, 6.0], [0.0, 0.0]]])
        )
    );
}

/// MLIR's own batched CSR (`sparse_print_3d.mlir`: `tensor<2x5xindex>`
/// positions, `tensor<2x32x…>` coordinates and values) is read as given and
/// means what MLIR prints.
#[test]
fn mlirs_batched_csr_reads_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let row: Vec<u64> = (0..32).map(|k| k % 8).collect();
    let vals: Vec<Vec<f64>> = (0..2).map(|b| (0..32).map(|k| (32 * b + k + 1) as f64).collect()).collect();
    let st = json!({
        "encoding": "#sparse_tensor.encoding<{ map = (d0, d1, d2) -> (d0 : batch, d1 : dense, d2 : compressed) }>",
        "dim_sizes": [2, 4, 8],
        "positions": [null, null, [[0, 8, 16, 24, 32], [0, 8, 16, 24, 32]]],
        "coordinates": [null, null, [row, row]],
        "values": vals,
    });
    let p = write(dir.path(), "mlir.json", &st.to_string());
    // Stored again exactly (a round trip through the same encoding).
    let v = convert(dir.path(), &p, st["encoding"].as_str().unwrap(), "same.json");
    assert_eq!(storage(&v), storage(&st));
    assert_eq!(v["nse"], 32);
    // Entry (b, i, j) of MLIR's tensor holds 32 b + 8 i + j + 1.
    let o = dir.path().join("mlir.tns");
    let (code, _, err) = heddle(&["convert", p.to_str().unwrap(), "--to", "COO", "-o", o.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&o).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).skip(2).collect();
    assert_eq!(lines.len(), 64);
    for l in lines {
        let f: Vec<f64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert_eq!(f[3], 32.0 * (f[0] - 1.0) + 8.0 * (f[1] - 1.0) + (f[2] - 1.0) + 1.0, "{l}");
    }
}

#[test]
fn heddle_type_shows_the_batched_buffers() {
    let (code, v) = heddle_json(&["type", BCSR]);
    assert_eq!(code, 0, "{v:#}");
    let bufs = v["buffers"].as_array().unwrap();
    let find = |n: &str| bufs.iter().find(|b| b["name"] == n).unwrap_or_else(|| panic!("no {n}: {v:#}"));
    assert_eq!(find("A_pos2")["shape"], json!(["A_dim0", "A_dim1 + 1"]));
    assert_eq!(find("A_pos2")["type"], "[[i64]_{A_dim1 + 1}]_A_dim0");
    assert_eq!(find("A_crd2")["shape"], json!(["A_dim0", "A_crd2_len"]));
    assert_eq!(find("A_values")["type"], "[[float]_A_crd2_len]_A_dim0");
    assert_eq!(v["view"], "[b -> [i -> [(int, float)]_{toNat(A_pos2@b@(i + 1) - A_pos2@b@i)}]_A_dim1]_A_dim0");
    let (code, v) = heddle_json(&["type", BCOO]);
    assert_eq!(code, 0, "{v:#}");
    let bufs = v["buffers"].as_array().unwrap();
    assert_eq!(bufs[0]["type"], "[[i64]_2]_A_dim0");
    assert_eq!(bufs[1]["type"], "[[(i64, i64)]_A_crd1_len]_A_dim0");
    // Without batch levels a buffer's shape is its length.
    let (_, v) = heddle_json(&["type", "CSR"]);
    assert_eq!(v["buffers"][0]["shape"], json!(["A_dim0 + 1"]));
    let (code, out, _) = heddle(&["type", BCSR]);
    assert_eq!(code, 0);
    assert!(out.contains("shape: A_dim0 x (A_dim1 + 1)"), "{out}");
}

/// A random batch of `b` matrices of `m × n`, about `percent` % filled; batch
/// `empty` (if any) has no entry.
fn random_batches(rng: &mut Rng, b: usize, m: usize, n: usize, percent: u64, empty: Option<usize>) -> Batches {
    (0..b)
        .map(|k| {
            (0..m)
                .map(|_| {
                    (0..n)
                        .map(|_| {
                            if Some(k) != empty && rng.below(100) < percent {
                                (rng.below(9) + 1) as f64 * 0.5
                            } else {
                                0.0
                            }
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn tns(a: &Batches) -> String {
    let (m, n) = (a[0].len(), a[0][0].len());
    let nnz = a.iter().flatten().flatten().filter(|&&v| v != 0.0).count();
    let mut s = format!("# extended FROSTT format\n3 {nnz}\n{} {m} {n}\n", a.len());
    for (b, mat) in a.iter().enumerate() {
        for (i, row) in mat.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    s.push_str(&format!("{} {} {} {v}\n", b + 1, i + 1, j + 1));
                }
            }
        }
    }
    s
}

/// The entries of a `.tns` file, sorted.
fn tns_entries(text: &str) -> Vec<(u64, u64, u64, String)> {
    let mut out: Vec<_> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4).then(|| {
                (
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].parse::<f64>().unwrap().to_string(),
                )
            })
        })
        .collect();
    out.sort();
    out
}

#[test]
fn convert_round_trips_batched_storage() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5BE0_CD19_137E_2179);
    for case in 0..common::cases(6) {
        let (b, m, n) = (1 + rng.below(4) as usize, 1 + rng.below(5) as usize, 1 + rng.below(6) as usize);
        let empty = (case % 2 == 0).then(|| rng.below(b as u64) as usize);
        let a = random_batches(&mut rng, b, m, n, 40, empty);
        let src = write(dir.path(), "a.tns", &tns(&a));
        if tns_entries(&tns(&a)).is_empty() {
            continue; // A .tns without entries does not say the shape.
        }
        let want = tns_entries(&std::fs::read_to_string(&src).unwrap());
        // tns -> each batched encoding -> the others -> tns: the same entries;
        // storing in the encoding it already has changes no buffer.
        let mut prev = src.clone();
        let (bcsc, bloose, bdia) = (
            "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, j : dense, i : compressed) }>",
            "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : loose_compressed) }>",
            "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, j - i : compressed, i : dense) }>",
        );
        for (k, enc) in [BCSR, BCOO, BDCSR, bcsc, bloose, bdia, BCSR].iter().enumerate() {
            let v = convert(dir.path(), &prev, enc, &format!("s{k}.json"));
            let again = convert(dir.path(), &dir.path().join(format!("s{k}.json")), enc, &format!("t{k}.json"));
            assert_eq!(v, again, "case {case}: {enc} stored twice differs");
            // Every batch's positions row starts at 0 and ends at its entry count.
            let pos = &v["positions"].as_array().unwrap().iter().rev().find(|p| !p.is_null()).unwrap();
            for (bi, row) in pos.as_array().unwrap().iter().enumerate() {
                assert_eq!(row[0], 0, "case {case}, {enc}, batch {bi}: {v}");
            }
            prev = dir.path().join(format!("s{k}.json"));
        }
        let out = dir.path().join("back.tns");
        let (code, _, err) = heddle(&["convert", prev.to_str().unwrap(), "--to", "COO", "-o", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(tns_entries(&std::fs::read_to_string(&out).unwrap()), want, "case {case}: {a:?}");
    }
}

/// `y[b] = A[b] x[b]` with numpy, from the dense batches; `None` where
/// python3 with numpy is missing (never under `CI=true`).
fn numpy_spmv(a: &Batches, xs: &[Vec<f64>]) -> Option<Vec<f64>> {
    let script = "import json, sys, numpy as np\nd = json.load(sys.stdin)\nA = np.array(d['a'], dtype=np.float64).reshape(d['shape'])\nx = np.array(d['x'], dtype=np.float64).reshape(d['shape'][0], d['shape'][2])\nprint(json.dumps(np.einsum('bij,bj->bi', A, x).ravel().tolist()))\n";
    let input = json!({ "a": a, "x": xs, "shape": [a.len(), a[0].len(), a[0][0].len()] }).to_string();
    let child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let out = child.and_then(|mut c| {
        use std::io::Write;
        c.stdin.take().unwrap().write_all(input.as_bytes())?;
        c.wait_with_output()
    });
    match out {
        Ok(o) if o.status.success() => Some(serde_json::from_slice(&o.stdout).unwrap()),
        other => {
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "CI must have python3 with numpy: {other:?}");
            eprintln!("SKIPPED (numpy only): python3 with numpy is not available");
            None
        }
    }
}

fn run_kernel(kernel: &str, backend: &str, matrix: &Path, xs: &Path) -> Vec<f64> {
    let file = format!("examples/sparse/{kernel}.hdl");
    let (a, x) = (format!("A={}", matrix.display()), format!("xs={}", xs.display()));
    let (code, out, err) = heddle(&["run", &file, "--backend", backend, "--matrix", &a, "--input", &x]);
    assert_eq!(code, 0, "{kernel} on {backend}: {err}");
    let mut flat = Vec::new();
    flatten(&serde_json::from_str(&out).unwrap_or_else(|e| panic!("{kernel} on {backend}: {e}: {out}")), &mut flat);
    flat
}

/// Batched CSR and COO SpMV (and batched DCSR's) on every backend equal
/// numpy's and the sums written here, from the `.tns` file and from the
/// stored batched `.json` (with empty batches and a batch of one).
#[test]
fn batched_spmv_matches_numpy_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x1F83_D9AB_FB41_BD6B);
    let kernels = [("spmv_batch_csr", BCSR), ("spmv_batch_coo", BCOO)];
    for case in 0..common::cases(5) {
        // Case 0: a batch of one; case 1: an empty batch between full ones.
        let b = if case == 0 { 1 } else { 2 + rng.below(3) as usize };
        let (m, n) = (1 + rng.below(5) as usize, 1 + rng.below(7) as usize);
        let empty = (case == 1).then_some(1);
        let mut a = random_batches(&mut rng, b, m, n, 45, empty);
        // A tensor without entries does not say its shape in a .tns file.
        a[0][0][0] = 1.5;
        let xs: Vec<Vec<f64>> = (0..b).map(|_| (0..n).map(|_| rng.value()).collect()).collect();
        let want: Vec<f64> = a
            .iter()
            .zip(&xs)
            .flat_map(|(mat, x)| {
                mat.iter().map(|r| r.iter().zip(x).map(|(p, q)| p * q).sum::<f64>()).collect::<Vec<_>>()
            })
            .collect();
        if let Some(np) = numpy_spmv(&a, &xs) {
            common::assert_close(&np, &want, &format!("numpy, case {case}"));
        }
        let src = write(dir.path(), "a.tns", &tns(&a));
        let px = write(dir.path(), "x.json", &json!(xs).to_string());
        for (kernel, enc) in kernels {
            let stored = dir.path().join(format!("{kernel}.json"));
            convert(dir.path(), &src, enc, &format!("{kernel}.json"));
            for backend in backends() {
                for input in [&src, &stored] {
                    let got = run_kernel(kernel, backend, input, &px);
                    common::assert_close(
                        &got,
                        &want,
                        &format!("{kernel} on {backend} from {}, case {case}: {a:?}", input.display()),
                    );
                }
            }
        }
    }
}

/// Rows may hold room past a batch's last position (MLIR's buffers may be
/// larger than what they hold): whatever it holds is never read.
#[test]
fn padding_past_a_batchs_last_position_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let st = json!({
        "encoding": BCSR,
        "dim_sizes": [2, 3, 4],
        "positions": [null, null, [[0, 2, 2, 3], [0, 0, 1, 1]]],
        "coordinates": [null, null, [[0, 2, 1, 3, 3], [3, 1, 2, 0, 0]]],
        "values": [[1.0, 2.0, 3.0, 99.0, 99.0], [4.0, 99.0, 99.0, 99.0, 99.0]],
    });
    let p = write(dir.path(), "padded.json", &st.to_string());
    let px = write(dir.path(), "x.json", "[[1, 2, 3, 4], [10, 20, 30, 40]]");
    for backend in backends() {
        common::assert_close(
            &run_kernel("spmv_batch_csr", backend, &p, &px),
            &[7.0, 0.0, 6.0, 0.0, 160.0, 0.0],
            backend,
        );
    }
}

/// Storage that breaks MLIR's layout is an error naming the buffer (and the
/// batch), with exit status 1: from a `.json` storage file and from buffers
/// given with `--input` alike.
#[test]
fn bad_batched_storage_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let good = json!({
        "encoding": BCSR,
        "dim_sizes": [2, 3, 4],
        "positions": [null, null, [[0, 2, 2, 3], [0, 0, 1, 1]]],
        "coordinates": [null, null, [[0, 2, 1], [3, 0, 0]]],
        "values": [[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]],
    });
    let with = |field: &str, v: Value| {
        let mut s = good.clone();
        s[field] = v;
        s
    };
    let cases = [
        (with("values", json!([[1.0, 2.0, 3.0], [4.0]])), vec!["`values`[1]", "rows of one length"]),
        (
            with("positions", json!([null, null, [[0, 2, 2, 3], [1, 1, 2, 2]]])),
            vec!["positions[2]", "batch 1", "first position is 1, not 0"],
        ),
        (
            with("positions", json!([null, null, [[0, 2, 2, 3], [0, 0, 1, 4]]])),
            vec!["coordinates[2]", "batch 1", "need 4"],
        ),
        (
            with("positions", json!([null, null, [0, 2, 2, 3, 0, 0, 1, 1]])),
            vec!["`positions[2]`", "one list per batch"],
        ),
        (with("positions", json!([null, null, [[0, 2, 3], [0, 1, 1]]])), vec!["positions[2]", "4 positions"]),
        (
            with("coordinates", json!([null, null, [[2, 0, 1], [3, 0, 0]]])),
            vec!["coordinates[2]", "batch 0", "ordered at level 2"],
        ),
        (
            with("coordinates", json!([null, null, [[0, 2, 1], [4, 0, 0]]])),
            vec!["coordinates[2]", "batch 1", "outside level 2's size"],
        ),
    ];
    let px = write(dir.path(), "x.json", "[[1, 2, 3, 4], [10, 20, 30, 40]]");
    for (k, (st, words)) in cases.iter().enumerate() {
        let p = write(dir.path(), &format!("bad{k}.json"), &st.to_string());
        let o = dir.path().join("o.json");
        let (code, out, err) = heddle(&["convert", p.to_str().unwrap(), "--to", BCOO, "-o", o.to_str().unwrap()]);
        assert_eq!(code, 1, "case {k}: {out}{err}");
        for w in words {
            assert!(err.contains(w), "case {k}: `{w}` not in: {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
        let (code, _, err) = heddle(&[
            "run",
            "examples/sparse/spmv_batch_csr.hdl",
            "--matrix",
            &format!("A={}", p.display()),
            "--input",
            &format!("xs={}", px.display()),
        ]);
        assert_eq!(code, 1, "case {k} run: {err}");
        assert!(err.contains(words[0]), "case {k} run: {err}");
    }
    // The raw buffers, bound with --input: each batch's positions are checked.
    let raw = [
        ("[[0, 2, 2, 3], [1, 1, 2, 2]]", "[[0, 2, 1], [3, 0, 0]]", "start at 0"),
        ("[[0, 2, 2, 3], [0, 0, 1, 4]]", "[[0, 2, 1], [3, 0, 0]]", "past the end"),
        ("[[0, 2, 1, 3], [0, 0, 1, 1]]", "[[0, 2, 1], [3, 0, 0]]", "is below"),
        ("[[0, 2, 2, 3], [0, 0, 1, 1]]", "[[2, 0, 1], [3, 0, 0]]", "follows 2 under one parent"),
    ];
    let vals = write(dir.path(), "vals.json", "[[1, 2, 3], [4, 0, 0]]");
    for (pos, crd, why) in raw {
        let p = write(dir.path(), "pos.json", pos);
        let c = write(dir.path(), "crd.json", crd);
        for b in backends() {
            let (code, out, err) = heddle(&[
                "run",
                "examples/sparse/spmv_batch_csr.hdl",
                "--backend",
                b,
                "--input",
                &format!("A_pos2={}", p.display()),
                "--input",
                &format!("A_crd2={}", c.display()),
                "--input",
                &format!("A_values={}", vals.display()),
                "--input",
                &format!("xs={}", px.display()),
                "--param",
                "A_dim0=2",
                "--param",
                "A_dim1=3",
            ]);
            assert_eq!(code, 1, "{pos} {crd} on {b}: {out}{err}");
            assert!(err.contains("parameter `A`") && err.contains(why), "{pos} {crd} on {b}: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}

/// Binding keeps every batch's positions within the row (`0 ..= A_crd2_len`,
/// checked above), so batched CSR's loop checks an entry's child position
/// `A_q = A_lo + p` no more than unbatched CSR's nested types make it: its
/// inner loop checks only `xs@col`, as CSR SpMV's does (`sparse_kernels.rs`).
/// So do batched COO's and loose CSR's, which reach their entries the same way.
#[test]
fn batched_csr_loops_check_only_the_data_dependent_index() {
    let loops = |kernel: &str| {
        let (code, out, err) = heddle(&["compile", &format!("examples/sparse/{kernel}.hdl"), "--target", "loops"]);
        assert_eq!(code, 0, "{kernel}: {err}");
        out
    };
    let text = loops("spmv_batch_csr");
    insta::assert_snapshot!("loops_spmv_batch_csr", text);
    let inner = text.split("for k in").nth(1).expect("an inner loop");
    let inner = &inner[inner.find('{').expect("a loop body")..];
    assert_eq!(inner.matches("check").count(), 1, "{text}");
    assert!(inner.contains("check e1 >= 0 && e1 < A_dim2"), "{text}");
    for kernel in ["spmv_batch_coo", "spmv_loose_csr"] {
        let text = loops(kernel);
        assert!(
            text.contains("A_q") && !text.contains("check A_q"),
            "{kernel}: the child position is checked per entry:\n{text}"
        );
    }
}

/// A kernel's result stored in a batched encoding (each row of a CSR
/// matrix, doubled, as a batch of sparse vectors) is stored as MLIR stores
/// batches, the same on every backend.
#[test]
fn results_stored_in_a_batched_encoding_have_one_row_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = write(
        dir.path(),
        "double.hdl",
        "#OUT = #sparse_tensor.encoding<{ map = (i, j) -> (i : batch, j : compressed) }>\n\
         fun(A: tensor<?x?xf32, CSR> =>\n  (generate(A_dim0, fun(i => A@i :>> map(fun(e => (e.1, e.2 * 2.0))))) : tensor<?x{A_dim1}xf32, #OUT>))\n",
    );
    let m =
        write(dir.path(), "m.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1.0\n1 3 2.0\n3 2 5.0\n");
    for b in backends() {
        let (code, out, err) =
            heddle(&["run", kernel.to_str().unwrap(), "--backend", b, "--matrix", &format!("A={}", m.display())]);
        assert_eq!(code, 0, "{b}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            storage(&v),
            (
                json!([null, [[0, 2], [0, 0], [0, 1]]]),
                json!([null, [[0, 2], [0, 0], [1, 0]]]),
                json!([[2.0, 4.0], [0.0, 0.0], [10.0, 0.0]])
            ),
            "{b}: {v}"
        );
    }
}

/// No batch at all, and batches without entries (rows of length 0): both
/// kernels give zeros of the right shape on every backend.
#[test]
fn zero_batches_and_entryless_batches_run() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (json!([0, 3, 4]), json!([null, null, []]), json!([null, null, []]), json!([]), "[]", vec![]),
        (
            json!([2, 3, 4]),
            json!([null, null, [[0, 0, 0, 0], [0, 0, 0, 0]]]),
            json!([null, null, [[], []]]),
            json!([[], []]),
            "[[1, 2, 3, 4], [5, 6, 7, 8]]",
            vec![0.0; 6],
        ),
    ];
    for (k, (dims, pos, crd, vals, xs, want)) in cases.into_iter().enumerate() {
        let st = json!({ "encoding": BCSR, "dim_sizes": dims, "positions": pos, "coordinates": crd, "values": vals });
        let p = write(dir.path(), &format!("z{k}.json"), &st.to_string());
        let px = write(dir.path(), &format!("x{k}.json"), xs);
        for kernel in ["spmv_batch_csr", "spmv_batch_coo"] {
            for backend in backends() {
                common::assert_close(
                    &run_kernel(kernel, backend, &p, &px),
                    &want,
                    &format!("{kernel} on {backend}, case {k}"),
                );
            }
        }
    }
}

//! MLIR `sparse_tensor` operations written as heddle patterns (issue 12, item
//! 1): the examples `select_tril_csr` (`sparse_tensor.select`),
//! `unary_abs_csr` (`unary` with a `present` region only), `unary_absent_csr`
//! (`unary` with `present` and `absent` regions: every coordinate stored), `binary_csr`
//! (`binary` with different `overlap`, `left` and `right` regions) and
//! `foreach_coo` (`foreach`: every stored entry with its coordinates),
//! `concat_cols_csr`, `concat_rows_coo` and `concat_rows_csr` (`concatenate`
//! along dimensions 1 and 0), `collapse_coo` and
//! `expand_sv` (`tensor.collapse_shape` / `expand_shape`), `insert_dense_csr`
//! (`tensor.insert` in order, from a dense matrix), `insert_unordered_csr`
//! (`tensor.insert` out of order, assembled by the workspace),
//! `insert_overwrite_csr` (`tensor.insert` over stored entries), on
//! every backend, against the same operation computed here on the entries.
//!
//! Matrices are random with an empty row and column, plus the edge shapes:
//! 0 × 0, 1 × 1, one long row, one long column. Sparse results are compared
//! as storage (positions, coordinates, values), so a dropped or extra
//! explicit zero fails as surely as a wrong value. docs/mlir-sparse.md lists
//! every operation of the dialect and what heddle offers for it.

use crate::common;

use common::{Rng, backends, heddle, write};
use serde_json::{Value as J, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Stored entries by (row, column).
type Entries = BTreeMap<(u64, u64), f64>;

fn random(rng: &mut Rng, m: u64, n: u64, percent: u64) -> Entries {
    common::random_entries(rng, m, n, percent)
}

fn mtx(m: u64, n: u64, e: &Entries) -> String {
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{m} {n} {}\n", e.len());
    for ((i, j), v) in e {
        s.push_str(&format!("{} {} {v}\n", i + 1, j + 1));
    }
    s
}

/// The CSR storage object `heddle run` prints for `e` (m × n).
fn csr_storage(m: u64, n: u64, e: &Entries) -> J {
    let mut positions = vec![0u64];
    for i in 0..m {
        positions.push(positions[i as usize] + e.range((i, 0)..(i + 1, 0)).count() as u64);
    }
    json!({
        "dim_sizes": [m, n], "lvl_sizes": [m, n], "nse": e.len(),
        "positions": [null, positions],
        "coordinates": [null, e.keys().map(|(_, j)| *j).collect::<Vec<_>>()],
        "values": e.values().collect::<Vec<_>>(),
    })
}

fn example(name: &str) -> PathBuf {
    common::root().join("examples/sparse").join(format!("{name}.hdl"))
}

fn run(kernel: &str, mats: &[(&str, &Path)], backend: &str) -> J {
    let file = example(kernel);
    let mut args = vec!["run".to_string(), file.display().to_string(), "--backend".into(), backend.into()];
    for (name, path) in mats {
        args.extend(["--matrix".into(), format!("{name}={}", path.display())]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = heddle(&args);
    assert_eq!(code, 0, "{kernel} on {backend}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{kernel} on {backend}: {e}: {out}"))
}

/// The storage fields that describe the tensor (the encoding's text aside).
fn storage_of(v: &J) -> J {
    json!({
        "dim_sizes": v["dim_sizes"], "lvl_sizes": v["lvl_sizes"], "nse": v["nse"],
        "positions": v["positions"], "coordinates": v["coordinates"], "values": v["values"],
    })
}

/// (rows, columns, percent stored) of every case.
fn shapes(rng: &mut Rng) -> Vec<(u64, u64, u64)> {
    let mut s = vec![(0, 0, 50), (1, 1, 100), (1, 40, 60), (40, 1, 60), (7, 7, 0)];
    for _ in 0..4 {
        s.push((1 + rng.below(12), 1 + rng.below(12), 10 + rng.below(60)));
    }
    s
}

#[test]
fn select_unary_and_binary_store_what_mlir_defines() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5e1ec7);
    for (case, (m, n, percent)) in shapes(&mut rng).into_iter().enumerate() {
        let a = random(&mut rng, m, n, percent);
        let mut b = random(&mut rng, m, n, percent);
        // A stored zero in B, where A has an entry: `overlap` must see it as stored.
        if let Some((&k, _)) = a.iter().next() {
            b.insert(k, 0.0);
        }
        let pa = write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &a));
        let pb = write(dir.path(), &format!("b{case}.mtx"), &mtx(m, n, &b));

        let tril: Entries = a.iter().filter(|((i, j), _)| j <= i).map(|(k, v)| (*k, *v)).collect();
        let abs: Entries = a.iter().map(|(k, v)| (*k, v.abs())).collect();
        // overlap: a * b; left (A alone): a; right (B alone): absent.
        let binary: Entries = a.iter().map(|(k, v)| (*k, b.get(k).map_or(*v, |w| v * w))).collect();
        // present: -x (a stored zero included, put at the far corner); absent: 1; all stored.
        let mut a0 = a.clone();
        if m > 0 && n > 0 {
            a0.insert((m - 1, n - 1), 0.0);
        }
        let pa0 = write(dir.path(), &format!("a0_{case}.mtx"), &mtx(m, n, &a0));
        let unary: Entries = (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|k| (k, a0.get(&k).map_or(1.0, |v| 0.0 - v)))
            .collect();

        for backend in backends() {
            let what = |k: &str| format!("{k}, case {case} ({m} x {n}), {backend}");
            let got = run("select_tril_csr", &[("A", &pa)], backend);
            assert_eq!(storage_of(&got), csr_storage(m, n, &tril), "{}", what("select_tril_csr"));
            let got = run("unary_abs_csr", &[("A", &pa)], backend);
            assert_eq!(storage_of(&got), csr_storage(m, n, &abs), "{}", what("unary_abs_csr"));
            let got = run("unary_absent_csr", &[("A", &pa0)], backend);
            assert_eq!(storage_of(&got), csr_storage(m, n, &unary), "{}", what("unary_absent_csr"));
            let got = run("binary_csr", &[("A", &pa), ("B", &pb)], backend);
            assert_eq!(storage_of(&got), csr_storage(m, n, &binary), "{}", what("binary_csr"));
        }
    }
}

#[test]
fn foreach_visits_every_entry_with_its_coordinates() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xf0ea);
    for (case, (m, n, percent)) in shapes(&mut rng).into_iter().enumerate() {
        let mut a = random(&mut rng, m, n, percent);
        if m > 0 && n > 0 {
            // The far corner: the largest distance from the diagonal, both signs.
            a.insert((m - 1, 0), 1.5);
            a.insert((0, n - 1), -0.25);
        }
        let want: f64 = a.iter().map(|((i, j), v)| v * (*j as f64 - *i as f64)).sum();
        let pa = write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &a));
        for backend in backends() {
            let got = run("foreach_coo", &[("A", &pa)], backend);
            let got = got.as_f64().unwrap_or_else(|| panic!("foreach_coo, case {case}, {backend}: {got}"));
            assert!(
                (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                "foreach_coo, case {case} ({m} x {n}), {backend}: {got}, want {want}"
            );
        }
    }
}

#[test]
fn concatenate_along_columns_shifts_the_second_operand() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xc0ca7);
    for (case, (m, n, percent)) in shapes(&mut rng).into_iter().enumerate() {
        // B has as many rows as A and a column count of its own (0 included).
        let nb = rng.below(9);
        let a = random(&mut rng, m, n, percent);
        let b = random(&mut rng, m, nb, percent);
        let pa = write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &a));
        let pb = write(dir.path(), &format!("b{case}.mtx"), &mtx(m, nb, &b));
        let mut want = a.clone();
        want.extend(b.iter().map(|((i, j), v)| ((*i, j + n), *v)));
        for backend in backends() {
            let got = run("concat_cols_csr", &[("A", &pa), ("B", &pb)], backend);
            assert_eq!(
                storage_of(&got),
                csr_storage(m, n + nb, &want),
                "concat_cols_csr, case {case} ({m} x {n} and {m} x {nb}), {backend}"
            );
        }
    }
}

#[test]
fn concatenating_rows_of_different_counts_is_a_run_time_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n3 2 1\n3 1 1.0\n");
    let b = write(dir.path(), "b.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 2.0\n");
    for backend in backends() {
        let file = example("concat_cols_csr");
        let args = [
            "run",
            file.to_str().unwrap(),
            "--backend",
            backend,
            "--matrix",
            &format!("A={}", a.display()),
            "--matrix",
            &format!("B={}", b.display()),
        ];
        let (code, out, err) = heddle(&args);
        assert_eq!(code, 1, "{backend}: B has 2 rows, A 3: {out}{err}");
        assert!(err.contains("concat_cols_csr.hdl:"), "{backend}: the error names no place: {err}");
        assert!(err.contains("out of bounds"), "{backend}: the error does not say what went wrong: {err}");
        assert!(!err.contains("internal error"), "{backend}: {err}");
    }
}

/// A sparse vector's storage object (`(i) -> (i : compressed)`), as read and printed.
fn vector_storage(len: u64, e: &BTreeMap<u64, f64>) -> J {
    json!({
        "dim_sizes": [len], "lvl_sizes": [len], "nse": e.len(),
        "positions": [[0, e.len()]], "coordinates": [e.keys().collect::<Vec<_>>()],
        "values": e.values().collect::<Vec<_>>(),
    })
}

#[test]
fn reshapes_move_every_entry_to_its_linear_or_split_coordinate() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5a9e);
    let vector_encoding = "#sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>";
    for (case, (m, n, percent)) in shapes(&mut rng).into_iter().enumerate() {
        let a = random(&mut rng, m, n, percent);
        let pa = write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &a));
        let linear: BTreeMap<u64, f64> = a.iter().map(|((i, j), v)| (i * n + j, *v)).collect();
        // The same entries as a vector of length m * n, split back into rows of n.
        let mut stored = vector_storage(m * n, &linear);
        stored["encoding"] = json!(vector_encoding);
        let pv = write(dir.path(), &format!("v{case}.json"), &stored.to_string());
        let coo = coo_storage(m, n, &a);
        for backend in backends() {
            let got = run("collapse_coo", &[("A", &pa)], backend);
            assert_eq!(
                storage_of(&got),
                vector_storage(m * n, &linear),
                "collapse_coo, case {case} ({m} x {n}), {backend}"
            );
            if n == 0 {
                continue; // expand_sv divides by n
            }
            let file = example("expand_sv");
            let args = [
                "run",
                file.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("V={}", pv.display()),
                "--param",
                &format!("n={n}"),
            ];
            let (code, out, err) = heddle(&args);
            assert_eq!(code, 0, "expand_sv, case {case}, {backend}: {err}");
            let got: J = serde_json::from_str(&out).unwrap();
            assert_eq!(storage_of(&got), coo, "expand_sv, case {case} ({m} x {n}), {backend}");
        }
    }
}

#[test]
fn inserting_the_nonzeros_of_a_dense_matrix_builds_its_csr_storage() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x1a5e47);
    for (case, (m, n, percent)) in shapes(&mut rng).into_iter().enumerate() {
        let a = random(&mut rng, m, n, percent);
        let dense: Vec<Vec<f64>> =
            (0..m).map(|i| (0..n).map(|j| a.get(&(i, j)).copied().unwrap_or(0.0)).collect()).collect();
        let pd = write(dir.path(), &format!("d{case}.json"), &json!(dense).to_string());
        for backend in backends() {
            let file = example("insert_dense_csr");
            // The sizes are given: an empty matrix has no row to tell its column count.
            let (rows, cols) = (format!("n={m}"), format!("m={n}"));
            let args = [
                "run",
                file.to_str().unwrap(),
                "--backend",
                backend,
                "--input",
                &format!("dense={}", pd.display()),
                "--param",
                &rows,
                "--param",
                &cols,
            ];
            let (code, out, err) = heddle(&args);
            assert_eq!(code, 0, "insert_dense_csr, case {case}, {backend}: {err}");
            let got: J = serde_json::from_str(&out).unwrap();
            assert_eq!(storage_of(&got), csr_storage(m, n, &a), "insert_dense_csr, case {case} ({m} x {n}), {backend}");
        }
    }
}

#[test]
fn inserting_out_of_order_assembles_sorted_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xf11b);
    for (case, (m, n, percent)) in shapes(&mut rng).into_iter().enumerate() {
        let a = random(&mut rng, m, n, percent);
        let pa = write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &a));
        // Flipped left to right: column j goes to n - 1 - j.
        let flipped: Entries = a.iter().map(|((i, j), v)| ((*i, n - 1 - j), *v)).collect();
        for backend in backends() {
            let got = run("insert_unordered_csr", &[("A", &pa)], backend);
            assert_eq!(
                storage_of(&got),
                csr_storage(m, n, &flipped),
                "insert_unordered_csr, case {case} ({m} x {n}), {backend}"
            );
        }
    }
}

/// `concatenate` along dimension 0 of two CSR matrices (`concat` of their
/// position-dependent rows): B's rows under A's, stored as CSR, against the
/// entries shifted here. B has A's column count and its own row count.
#[test]
fn stacking_the_rows_of_two_csr_matrices() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x57ac);
    for (case, (m, n, percent)) in shapes(&mut rng).into_iter().enumerate() {
        let mb = rng.below(4) + u64::from(m == 0);
        let a = random(&mut rng, m, n, percent);
        let b = random(&mut rng, mb, n, percent);
        let pa = write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &a));
        let pb = write(dir.path(), &format!("b{case}.mtx"), &mtx(mb, n, &b));
        let mut stacked = a.clone();
        stacked.extend(b.iter().map(|((i, j), v)| ((i + m, *j), *v)));
        for backend in backends() {
            let got = run("concat_rows_csr", &[("A", &pa), ("B", &pb)], backend);
            assert_eq!(
                storage_of(&got),
                csr_storage(m + mb, n, &stacked),
                "concat_rows_csr, case {case} ({m} + {mb} x {n}), {backend}"
            );
        }
    }
}

/// `compressLast`: B's entries inserted into A, B's value replacing A's
/// where both store a coordinate (an overwriting `tensor.insert`), against
/// the same update of the entries here.
#[test]
fn inserting_over_stored_entries_keeps_the_last_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x0ae5);
    let mut overwritten = 0;
    for (case, (m, n, percent)) in shapes(&mut rng).into_iter().enumerate() {
        let a = random(&mut rng, m, n, percent);
        let b = random(&mut rng, m, n, percent);
        let pa = write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &a));
        let pb = write(dir.path(), &format!("b{case}.mtx"), &mtx(m, n, &b));
        let mut updated = a.clone();
        updated.extend(b.iter().map(|(k, v)| (*k, *v)));
        overwritten += a.len() + b.len() - updated.len();
        for backend in backends() {
            let got = run("insert_overwrite_csr", &[("A", &pa), ("B", &pb)], backend);
            assert_eq!(
                storage_of(&got),
                csr_storage(m, n, &updated),
                "insert_overwrite_csr, case {case} ({m} x {n}), {backend}"
            );
        }
    }
    assert!(overwritten > 0, "no case stores a coordinate in both matrices");
}

/// The COO storage object (`compressed(nonunique)` then `singleton`, coordinates as pairs).
fn coo_storage(m: u64, n: u64, e: &Entries) -> J {
    json!({
        "dim_sizes": [m, n], "lvl_sizes": [m, n], "nse": e.len(),
        "positions": [[0, e.len()], null],
        "coordinates": [e.keys().flat_map(|(i, j)| [*i, *j]).collect::<Vec<_>>(), null],
        "values": e.values().collect::<Vec<_>>(),
    })
}

#[test]
fn concatenate_along_rows_stacks_the_coordinate_lists() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x57ac);
    for (case, (m, n, percent)) in shapes(&mut rng).into_iter().enumerate() {
        // B has as many columns as A and a row count of its own (0 included).
        let mb = rng.below(9);
        let a = random(&mut rng, m, n, percent);
        let b = random(&mut rng, mb, n, percent);
        let pa = write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &a));
        let pb = write(dir.path(), &format!("b{case}.mtx"), &mtx(mb, n, &b));
        let mut want = a.clone();
        want.extend(b.iter().map(|((i, j), v)| ((i + m, *j), *v)));
        for backend in backends() {
            let got = run("concat_rows_coo", &[("A", &pa), ("B", &pb)], backend);
            assert_eq!(
                storage_of(&got),
                coo_storage(m + mb, n, &want),
                "concat_rows_coo, case {case} ({m} x {n} over {mb} x {n}), {backend}"
            );
        }
    }
}

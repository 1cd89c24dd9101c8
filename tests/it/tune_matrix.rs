//! `heddle tune --matrix NAME=FILE` on the CPU: one matrix file, stored in
//! each variant's own encoding (CSR, DIA, ELL, BSR, DCSR, narrow
//! coordinates), every result verified against the interpreter, and a
//! variant whose storage would not suit the matrix skipped with the reason;
//! and the DIA and ELL SpMV kernels on the CPU against the interpreter and a
//! dense product on awkward matrices (empty rows, one long row, 1×1).

use crate::common;

use common::heddle;
use std::collections::BTreeMap;
use std::path::Path;

/// A Matrix Market file of the entries `(row, col, value)` (0-based here).
fn mtx(dir: &Path, name: &str, rows: u64, cols: u64, entries: &[(u64, u64, f64)]) -> String {
    let mut text = format!("%%MatrixMarket matrix coordinate real general\n{rows} {cols} {}\n", entries.len());
    for (i, j, v) in entries {
        text.push_str(&format!("{} {} {v}\n", i + 1, j + 1));
    }
    common::write(dir, &format!("{name}.mtx"), &text).to_str().unwrap().to_string()
}

/// SpMV over CSR with the given widths, for `f32`.
fn csr_variant(dir: &Path, name: &str, widths: &str) -> String {
    let src = format!(
        "#C = #sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed){widths} }}>\n\
         fun(A: tensor<?x?xf32, #C> => fun(xs: [float]_A_dim1 =>\n  \
         A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0)))))\n"
    );
    common::write(dir, &format!("{name}.hdl"), &src).to_str().unwrap().to_string()
}

/// A 200x200 tridiagonal matrix: every format holds it compactly.
fn banded(dir: &Path) -> String {
    let n = 200u64;
    let entries: Vec<(u64, u64, f64)> = (0..n)
        .flat_map(|i| {
            [i.wrapping_sub(1), i, i + 1]
                .into_iter()
                .filter(move |&j| j < n)
                .map(move |j| (i, j, 1.0 + ((i * 7 + j) % 11) as f64 * 0.125))
        })
        .collect();
    mtx(dir, "banded", n, n, &entries)
}

/// The anti-diagonal of a 200x200 matrix: 200 diagonals for 200 entries.
fn anti_diagonal(dir: &Path) -> String {
    let n = 200u64;
    let entries: Vec<(u64, u64, f64)> = (0..n).map(|i| (i, n - 1 - i, 0.5 + (i % 3) as f64)).collect();
    mtx(dir, "anti", n, n, &entries)
}

fn variants(v: &serde_json::Value, case: usize) -> Vec<serde_json::Value> {
    v["cases"][case]["variants"].as_array().unwrap_or_else(|| panic!("no case {case}: {v}")).clone()
}

/// Every variant runs on the banded matrix, each in its own encoding, and is
/// verified against the interpreter; a wrong variant (it doubles the product)
/// is caught; on the anti-diagonal DIA is skipped with its sizes as the
/// reason while the others run; the per-case best and the single best are
/// reported.
#[test]
fn tune_binds_each_variant_in_its_own_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csr32 = csr_variant(d, "spmv_csr32_16", ", posWidth = 32, crdWidth = 16");
    let wrong = common::write(
        d,
        "spmv_doubled.hdl",
        "#C = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>\n\
         fun(A: tensor<?x?xf32, #C> => fun(xs: [float]_A_dim1 =>\n  \
         A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1 + e.2 * xs@e.1)) :>> reduce(+, 0)))))\n",
    );
    let (band, anti) = (banded(d), anti_diagonal(d));
    let files = [
        "examples/sparse/spmv_csr.hdl",
        "examples/sparse/spmv_dia.hdl",
        "examples/sparse/spmv_ell.hdl",
        "examples/sparse/spmv_bsr.hdl",
        "examples/sparse/spmv_dcsr.hdl",
    ];
    let mut args: Vec<&str> = vec!["tune"];
    args.extend(files);
    let (ma, mb) = (format!("A={band}"), format!("A={anti}"));
    args.extend([
        csr32.as_str(),
        wrong.to_str().unwrap(),
        "--matrix",
        &ma,
        "--matrix",
        &mb,
        "--backend",
        "cpu",
        "--threads",
        "1,2",
        "--reps",
        "2",
        "--json",
    ]);
    let (code, out, err) = heddle(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    common::assert_schema(&v, "tune --matrix");
    assert_eq!(v["cases"][0]["case"], "banded");
    assert_eq!(v["cases"][1]["case"], "anti");
    let by_kernel = |case: usize| {
        let mut m: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
        for x in variants(&v, case) {
            m.entry(x["kernel"].as_str().unwrap().to_string()).or_default().push(x);
        }
        m
    };
    let band_outcomes = by_kernel(0);
    assert_eq!(band_outcomes.len(), 7, "{out}");
    for (kernel, outcomes) in &band_outcomes {
        assert_eq!(outcomes.len(), 2, "two thread counts: {kernel}");
        for o in outcomes {
            if kernel == "spmv_doubled" {
                assert!(o["error"].as_str().is_some_and(|e| e.contains("wrong result")), "{o}");
                assert!(o["seconds"].is_null(), "{o}");
            } else {
                assert!(o["seconds"].as_f64().is_some_and(|s| s > 0.0) && o["error"].is_null(), "{kernel}: {o}");
                assert!(o.get("skipped").is_none(), "{o}");
            }
        }
    }
    let anti_outcomes = by_kernel(1);
    for o in &anti_outcomes["spmv_dia"] {
        assert_eq!(o["skipped"], true, "{o}");
        let reason = o["error"].as_str().unwrap();
        // 200 diagonals of 200 rows each.
        assert!(reason.contains("40000 stored values for 200 entries") && reason.contains("over 3x"), "{reason}");
    }
    for kernel in ["spmv_csr", "spmv_bsr", "spmv_dcsr", "spmv_csr32_16", "spmv_ell"] {
        assert!(anti_outcomes[kernel].iter().all(|o| o["seconds"].is_f64()), "{kernel}: {out}");
    }
    for case in 0..2 {
        let best = &v["cases"][case]["best"];
        assert!(best["seconds"].as_f64().is_some_and(|s| s > 0.0) && best["kernel"] != "spmv_doubled", "{best}");
    }
    // The structural inspector's pick beside the measured best: DIA for the
    // tridiagonal matrix, SELL-8 for the anti-diagonal (200 diagonals, but
    // one entry in every row: slices of 8 rows pad nothing), with 16-bit
    // columns (200 fit).
    assert_eq!(v["inspector"]["banded"]["encoding"], "DIA", "{}", v["inspector"]);
    assert!(v["inspector"]["banded"]["reason"].as_str().unwrap().contains("3 diagonals"), "{}", v["inspector"]);
    assert_eq!(v["inspector"]["anti"]["encoding"], "SELL-8c16", "{}", v["inspector"]);
    // DIA did not run on the anti-diagonal and the doubled variant on neither: not candidates.
    let single = v["single_best"]["kernel"].as_str().unwrap();
    assert!(!["spmv_dia", "spmv_doubled"].contains(&single), "{single}");
}

/// A coordinate past a 16-bit `crdWidth` skips that variant (the
/// conversion's error is the reason); the 32-bit variant runs; a repeated
/// name starts a new case, and a name no variant has is a located input
/// error, as is a missing file.
#[test]
fn tune_matrix_skips_narrow_coordinates_that_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let narrow = csr_variant(d, "narrow", ", crdWidth = 16");
    let wide = csr_variant(d, "wide", ", crdWidth = 32");
    let long = mtx(d, "long", 2, 70_000, &[(0, 3, 2.0), (1, 69_999, 3.0)]);
    let m = format!("A={long}");
    let (code, out, err) = heddle(&[
        "tune",
        &narrow,
        &wide,
        "--matrix",
        &m,
        "--backend",
        "cpu",
        "--threads",
        "1",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let outcomes = variants(&v, 0);
    assert_eq!(outcomes[0]["skipped"], true, "{out}");
    assert!(outcomes[0]["error"].as_str().unwrap().contains("does not fit this encoding"), "{out}");
    assert!(outcomes[1]["seconds"].is_f64() && outcomes[1]["error"].is_null(), "{out}");
    assert_eq!(v["single_best"]["kernel"], "wide");
    // Only skipped variants: nothing ran, an input error.
    let (code, _, err) = heddle(&["tune", &narrow, "--matrix", &m, "--backend", "cpu", "--threads", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no configuration ran") && err.contains("does not fit"), "{err}");
    // A vector not named xs is not generated: --input gives it to every matrix case.
    let named_v = common::write(d, "named_v.hdl", &std::fs::read_to_string(&wide).unwrap().replace("xs", "v"));
    let named_v = named_v.to_str().unwrap();
    let (code, _, err) =
        heddle(&["tune", named_v, "--matrix", "A=tests/data/sparse/m4x8.mtx", "--backend", "cpu", "--threads", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("`v`"), "{err}");
    let (code, out, err) = heddle(&[
        "tune",
        named_v,
        "--matrix",
        "A=tests/data/sparse/m4x8.mtx",
        "--matrix",
        "A=tests/data/sparse/m4x8.mtx",
        "--input",
        "v=examples/data/sparse/x8.json",
        "--backend",
        "cpu",
        "--threads",
        "1",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["cases"].as_array().map(Vec::len), Some(2), "a repeated name is a second case: {out}");
    assert!((0..2).all(|c| variants(&v, c)[0]["seconds"].is_f64()), "{out}");
    let (code, _, err) = heddle(&["tune", &wide, "--matrix", "B=tests/data/sparse/m4x8.mtx", "--backend", "cpu"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("`B`") && err.contains("no tensor parameter"), "{err}");
    let (code, _, err) = heddle(&["tune", &wide, "--matrix", "A=/nonexistent/m.mtx", "--backend", "cpu"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("/nonexistent/m.mtx"), "{err}");
}

/// A matrix whose column count is not a multiple of a variant's block size
/// skips that variant on that case (it used to end the whole search with an
/// input error); the same variant still runs on a case it fits.
#[test]
fn tune_matrix_skips_blocks_that_do_not_divide_the_shape() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let odd = mtx(d, "odd", 3, 5, &[(0, 0, 1.0), (2, 4, 2.0)]);
    let even = mtx(d, "even", 3, 8, &[(0, 0, 1.0), (2, 7, 2.0)]);
    let (code, out, err) = heddle(&[
        "tune",
        "examples/sparse/spmv_bsr_1x8.hdl",
        "examples/sparse/spmv_csr.hdl",
        "--matrix",
        &format!("A={odd}"),
        "--matrix",
        &format!("A={even}"),
        "--backend",
        "cpu",
        "--threads",
        "1",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let on_odd = variants(&v, 0);
    assert_eq!(on_odd[0]["skipped"], true, "{out}");
    let reason = on_odd[0]["error"].as_str().unwrap();
    assert!(
        reason.contains("does not fit this encoding") && reason.contains("multiple of its block size 8"),
        "{reason}"
    );
    assert!(on_odd[1]["seconds"].is_f64(), "{out}");
    assert!(variants(&v, 1).iter().all(|o| o["seconds"].is_f64()), "{out}");
}

/// Runs `file` on the matrix and x with `backend`; the result as floats.
fn run(file: &str, matrix: &str, x: &str, backend: &str) -> Vec<f64> {
    let (m, xs) = (format!("A={matrix}"), format!("xs={x}"));
    let (code, out, err) = heddle(&["run", file, "--backend", backend, "--matrix", &m, "--input", &xs]);
    assert_eq!(code, 0, "{file} on {matrix} ({backend}): {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let mut got = Vec::new();
    common::flatten(&v, &mut got);
    got
}

/// DIA and ELL SpMV on the CPU equal the interpreter and the dense product
/// on matrices with empty rows, one long row (ELL with enough slices for
/// it), a 1×1 matrix, and one whose diagonals leave it at both ends.
#[test]
fn dia_and_ell_on_the_cpu_agree_with_the_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ell8 = common::write(
        d,
        "spmv_ell8.hdl",
        &std::fs::read_to_string(common::root().join("examples/sparse/spmv_ell.hdl"))
            .unwrap()
            .replace("c * 3 * i", "c * 8 * i")
            .replace("xf32", "xf64")
            .replace("[float]", "[double]"),
    );
    let ell8 = ell8.to_str().unwrap();
    // (name, rows, columns, entries)
    type Case<'a> = (&'a str, u64, u64, Vec<(u64, u64, f64)>);
    let cases: Vec<Case> = vec![
        ("empty_rows", 6, 5, vec![(1, 0, 2.0), (1, 4, -1.5), (4, 2, 3.25)]),
        ("long_row", 5, 9, (0..8).map(|j| (2, j, 1.0 + j as f64)).chain([(0, 8, 0.5), (4, 0, -2.0)]).collect()),
        ("one_by_one", 1, 1, vec![(0, 0, 7.5)]),
        ("wide_band", 7, 7, (0..7u64).flat_map(|i| [(i, (i + 3) % 7, 1.5), (i, i, -0.25)]).collect()),
    ];
    for (name, rows, cols, entries) in cases {
        let matrix = mtx(d, name, rows, cols, &entries);
        let x: Vec<f64> = (0..cols).map(|j| 0.5 + j as f64 * 0.75).collect();
        let xfile = common::write(d, &format!("{name}_x.json"), &serde_json::to_string(&x).unwrap());
        let want = common::dense_product(rows, &entries, &x);
        for file in ["examples/sparse/spmv_dia.hdl", ell8] {
            let interp = run(file, &matrix, xfile.to_str().unwrap(), "interp");
            let cpu = run(file, &matrix, xfile.to_str().unwrap(), "cpu");
            common::assert_close(&interp, &want, &format!("{file} on {name}, interpreter"));
            common::assert_close(&cpu, &want, &format!("{file} on {name}, cpu"));
        }
    }
}

/// A NaN in the matrix makes its row's sum NaN in every variant: the
/// variants agree with the reference (NaN is NaN), they are not refused as
/// wrong; an infinity likewise.
#[test]
fn tune_matrix_with_nan_and_inf_entries_verifies_the_variants() {
    let dir = common::scratch_dir("tune-nan");
    let m = format!("A={}", mtx(dir.path(), "m", 3, 3, &[(0, 0, f64::NAN), (1, 1, f64::INFINITY), (2, 2, 2.0)]));
    let xs = common::write(dir.path(), "xs.json", "[1.0, 2.0, 3.0]");
    let xs = format!("xs={}", xs.display());
    let csr = csr_variant(dir.path(), "csr", "");
    let (code, out, err) =
        heddle(&["tune", &csr, "--matrix", &m, "--input", &xs, "--backend", "cpu", "--threads", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(!variants(&v, 0).is_empty(), "{v}");
    // The interpreter says what the variants computed.
    let (code, out, err) = heddle(&["run", &csr, "--matrix", &m, "--input", &xs]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), r#"["nan","inf",6.0]"#);
}

/// A size line of 2^64 - 1 rows: CSR's storage of it is past what a u64
/// counts. The sizes saturate (they overflowed: a panic in a debug build, a
/// wrapped "12 bytes as CSR" in a release one) and the error says the
/// storage cannot be formed, never a saturated count as bytes.
#[test]
fn tune_matrix_says_a_storage_past_2_64_bytes_as_such() {
    let dir = common::scratch_dir("tune-huge");
    let m = common::write(
        dir.path(),
        "huge.mtx",
        "%%MatrixMarket matrix coordinate real general\n18446744073709551615 2 1\n1 1 1\n",
    );
    let m = format!("A={}", m.display());
    let xs = common::write(dir.path(), "xs.json", "[1.0, 2.0]");
    let xs = format!("xs={}", xs.display());
    let csr = csr_variant(dir.path(), "csr", "");
    let (code, _, err) = heddle(&["tune", &csr, "--matrix", &m, "--input", &xs, "--backend", "cpu", "--threads", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("more than 2^64") && !err.contains("panicked"), "{err}");
    assert!(!err.contains("18446744073709551615 bytes") && !err.contains("its 12 bytes"), "{err}");
}

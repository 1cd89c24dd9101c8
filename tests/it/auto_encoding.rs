//! `--encoding A=auto` (`heddle run`, `heddle sparsify`) and `heddle convert --to auto`: the
//! structural inspector (heddle_runtime::sparse::inspect) ranks formats for
//! the matrix file, the first one the front door accepts is used; the
//! result equals the dense kernel's on the interpreter and a plain dense
//! product, on every backend.
//!
//! Which format is chosen depends on what the front door accepts (DIA and
//! BSR are refused today, and learned in parallel): the tests compute the
//! expected choice through the library (the ranking, then
//! `heddle_rewrite::sparsify` and the type checker on each ranked
//! encoding), so they hold before and after.

use crate::common;

use common::{Entries, assert_close, assert_schema, backends, dense_product, floats, heddle, heddle_json, write_mtx};
use heddle_runtime::sparse::Coo;
use heddle_runtime::sparse::inspect::{inspect, rank};
use std::path::{Path, PathBuf};

const MV: &str = "examples/dense_mv.hdl";

/// A tridiagonal-plus band: diagonals -2..=2 of an n x n matrix.
fn banded(n: u64) -> Entries {
    let mut e = Vec::new();
    for i in 0..n {
        for d in -2i64..=2 {
            let j = i as i64 + d;
            if (0..n as i64).contains(&j) {
                e.push((i, j as u64, 1.0 + ((i as i64 * 3 + d) % 7) as f64 * 0.5));
            }
        }
    }
    e
}

/// Rows holding one run of 16 columns, starting at a multiple of 8 that moves from row to row.
fn rowband(rows: u64, cols: u64) -> Entries {
    let mut e = Vec::new();
    for i in 0..rows {
        let start = (i * 5 % (cols / 8 - 1)) * 8;
        // Runs of 8 or 24 columns: whole blocks of 8, but slices of 8 rows padded to 24 are 2/3 full (SELL-8 is not ranked).
        let len = if i % 2 == 0 { 8 } else { 24 };
        e.extend((0..len).map(|t| (i, (start + t) % cols, ((i + t) % 9) as f64 - 4.0)));
    }
    e
}

/// Entries at pseudo-random places, rows of different lengths.
fn scattered(rows: u64, cols: u64) -> Entries {
    let mut rng = common::Rng(0x9e3779b97f4a7c15);
    let mut e = Vec::new();
    for i in 0..rows {
        let mut js: Vec<u64> = (0..rng.below(9)).map(|_| rng.below(cols)).collect();
        js.sort();
        js.dedup();
        e.extend(js.into_iter().map(|j| (i, j, rng.value())));
    }
    e
}

/// Every row `per_row` entries at pseudo-random columns: SELL-8 pads only the last slice.
fn uniform(rows: u64, cols: u64, per_row: u64) -> Entries {
    let mut rng = common::Rng(0x5e11_8008);
    let mut e = Vec::new();
    for i in 0..rows {
        let mut js: Vec<u64> = Vec::new();
        while (js.len() as u64) < per_row {
            let j = rng.below(cols);
            if !js.contains(&j) {
                js.push(j);
            }
        }
        js.sort();
        e.extend(js.into_iter().map(|j| (i, j, rng.value())));
    }
    e
}

fn xs(dir: &Path, cols: u64) -> (PathBuf, Vec<f64>) {
    let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 13) as f64 * 0.125).collect();
    (common::write(dir, "xs.json", &serde_json::to_string(&x).unwrap()), x)
}

/// The inspector's ranking (at f32: `float` is the kernel's element type),
/// then the first encoding the front door and the type checker accept:
/// (its name, the names ranked before it).
fn expected_choice(rows: u64, cols: u64, e: &Entries) -> (String, Vec<String>) {
    let coords = e.iter().flat_map(|&(i, j, _)| [i, j]).collect();
    let coo = Coo { dims: vec![rows, cols], coords, values: e.iter().map(|x| x.2).collect::<Vec<f64>>().into() };
    let ranking = rank(&inspect(&coo).unwrap(), heddle_ir::ScalarType::F32);
    let text = std::fs::read_to_string(common::root().join(MV)).unwrap();
    let program = heddle_ir::parser::parse_program(&text).unwrap();
    let mut before = Vec::new();
    for c in ranking.candidates {
        if let Some(enc_text) = &c.encoding {
            let out = if let Some(spec) = heddle_rewrite::sparsify::sell::parse_name(enc_text) {
                heddle_rewrite::sparsify::sell::sparsify_sell(&program, "matrix", &spec.unwrap())
            } else if enc_text.starts_with('#') {
                let enc = heddle_ir::encoding::parse_encoding(enc_text, 0).unwrap();
                heddle_rewrite::sparsify::sparsify(&program, "matrix", "E", &enc)
            } else {
                let enc = heddle_ir::encoding::named::resolve(enc_text, 0, Some(2)).unwrap();
                heddle_rewrite::sparsify::sparsify(&program, "matrix", "E", &enc)
            };
            if let Ok(out) = out {
                let printed = heddle_ir::printer::print_program(&out.program);
                if heddle::check_source(&heddle::source::SourceFile::new("s", &printed)).is_ok() {
                    return (c.name, before);
                }
            }
        }
        before.push(c.name);
    }
    panic!("no ranked encoding is accepted")
}

/// Runs the dense kernel with `matrix=auto` on every backend; checks the
/// result and the reported choice.
fn check(name: &str, rows: u64, cols: u64, e: &Entries, first_ranked: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let m = write_mtx(dir.path(), name, rows, cols, e);
    let (x_path, x) = xs(dir.path(), cols);
    let (m, x_path) = (m.to_str().unwrap(), x_path.to_str().unwrap());
    let want = dense_product(rows, e, &x);
    // The dense kernel on the interpreter, the matrix stored densely.
    let (code, dense) =
        heddle_json(&["run", MV, "--dense", &format!("matrix={m}"), "--input", &format!("xs={x_path}")]);
    assert_eq!(code, 0, "{dense}");
    assert_close(&floats(&dense["result"]), &want, &format!("{name}: dense kernel"));
    let (chosen, before) = expected_choice(rows, cols, e);
    assert_eq!(before.first().map_or(chosen.as_str(), |s| s.as_str()), first_ranked, "{name}: the ranking");
    let mut last = serde_json::Value::Null;
    for backend in backends() {
        let args = [
            "run",
            MV,
            "--backend",
            backend,
            "--matrix",
            &format!("matrix={m}"),
            "--encoding",
            "matrix=auto",
            "--input",
            &format!("xs={x_path}"),
        ];
        let (code, v) = heddle_json(&args);
        assert_eq!(code, 0, "{name} {backend}: {v}");
        assert_schema(&v, &format!("{name} {backend}"));
        let got = floats(&v["result"]);
        assert_close(&got, &floats(&dense["result"]), &format!("{name} {backend}: against the dense kernel"));
        assert_close(&got, &want, &format!("{name} {backend}: against the dense product"));
        let auto = &v["auto"]["matrix"];
        assert_eq!(auto["encoding"], chosen.as_str(), "{name} {backend}: {auto}");
        let skipped: Vec<&str> =
            auto["skipped"].as_array().unwrap().iter().map(|s| s["encoding"].as_str().unwrap()).collect();
        assert_eq!(skipped, before, "{name} {backend}: {auto}");
        for s in auto["skipped"].as_array().unwrap() {
            let reason = s["reason"].as_str().unwrap();
            assert!(reason.contains("front door") || reason.contains("no storage encoding"), "{reason}");
        }
        // The stderr line says the same.
        let (code, _, err) = heddle(&args[..]);
        assert_eq!(code, 0);
        assert!(err.starts_with(&format!("auto: {chosen} for matrix (")), "{err}");
        last = v;
    }
    last
}

#[test]
fn a_banded_matrix_ranks_dia_first_and_runs_in_the_first_accepted_encoding() {
    let v = check("banded", 40, 40, &banded(40), "DIA");
    assert!(v["auto"]["matrix"]["inspection"]["diagonals"] == 5, "{v}");
}

#[test]
fn a_row_band_matrix_ranks_bsr_1x8_first_and_runs_in_the_first_accepted_encoding() {
    check("rowband", 30, 64, &rowband(30, 64), "BSR(1, 8)");
}

#[test]
fn a_scattered_matrix_runs_in_csr32() {
    let v = check("scattered", 50, 60, &scattered(50, 60), "CSR32");
    assert_eq!(v["auto"]["matrix"]["skipped"], serde_json::json!([]));
}

/// Rows of very different lengths (240, 120, 60, … 1 entries, repeating):
/// SELL-8 in row order pads every slice to its 240-entry row; sorted by
/// length, slices hold rows of one length.
fn power_law(rows: u64, cols: u64) -> Entries {
    let mut rng = common::Rng(0x9041_1a57);
    let mut e = Vec::new();
    for i in 0..rows {
        let n = (240u64 >> (i % 8)).clamp(1, cols);
        // Distinct columns (7 is prime to the 300 columns), in order.
        let mut js: Vec<u64> = (0..n).map(|k| (k * 7 + i) % cols).collect();
        js.sort();
        e.extend(js.into_iter().map(|j| (i, j, rng.value())));
    }
    e
}

#[test]
fn a_power_law_matrix_ranks_sell8_sorted_first_and_runs_in_it() {
    // 77 rows: sorted within one window of 80 (the rows rounded up to whole
    // slices); the result comes back in row order on every backend.
    let e = power_law(77, 300);
    let v = check("power_law", 77, 300, &e, "SELL-8-σ");
    assert_eq!(v["auto"]["matrix"]["encoding"], "SELL-8-σ", "{v}");
    assert_eq!(v["auto"]["matrix"]["encoding_text"], "SELL(8, sigma = 80)", "{v}");
    assert_eq!(floats(&v["result"]).len(), 77);
    // A kernel whose result is not the row map is refused SELL-8-σ by the
    // front door, and runs in the next ranked format.
    let dir = tempfile::tempdir().unwrap();
    let m = write_mtx(dir.path(), "power_law", 77, 300, &e);
    let src = common::write(
        dir.path(),
        "scaled.hdl",
        "nFun(n => nFun(m =>\nfun(matrix: [[float]_m]_n =>\nfun(xs: [float]_m =>\nfun(ws: [float]_n =>\n  \
         zip(matrix :>> map(fun(row => zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduce(+, 0.0f))), ws)\n    \
         :>> map(fun(p => p.1 * p.2)))))))\n",
    );
    let (x_path, x) = xs(dir.path(), 300);
    let ws: Vec<f64> = (0..77).map(|i| (i % 5) as f64 - 2.0).collect();
    let w_path = common::write(dir.path(), "ws.json", &serde_json::to_string(&ws).unwrap());
    let (code, v) = heddle_json(&[
        "run",
        src.to_str().unwrap(),
        "--backend",
        "cpu",
        "--matrix",
        &format!("matrix={}", m.display()),
        "--encoding",
        "matrix=auto",
        "--input",
        &format!("xs={}", x_path.display()),
        "--input",
        &format!("ws={}", w_path.display()),
    ]);
    assert_eq!(code, 0, "{v}");
    assert_ne!(v["auto"]["matrix"]["encoding"], "SELL-8-σ", "{v}");
    let skipped = v["auto"]["matrix"]["skipped"].as_array().unwrap();
    assert!(skipped.iter().any(|s| s["encoding"] == "SELL-8-σ"), "{v}");
    let want: Vec<f64> = dense_product(77, &e, &x).iter().zip(&ws).map(|(y, w)| y * w).collect();
    assert_close(&floats(&v["result"]), &want, "power law, scaled rows");
}

#[test]
fn a_uniform_matrix_ranks_sell8_first_and_runs_in_it() {
    // 45 rows: the last slice is padded with 3 rows, which the result drops.
    // 64 columns fit 16 bits: SELL-8 with 16-bit columns.
    let v = check("uniform", 45, 64, &uniform(45, 64, 4), "SELL-8c16");
    assert_eq!(v["auto"]["matrix"]["encoding"], "SELL-8c16", "{v}");
    assert_eq!(v["auto"]["matrix"]["encoding_text"], "SELL(8, crdWidth = 16)", "{v}");
    assert_eq!(v["auto"]["matrix"]["skipped"], serde_json::json!([]));
    assert_eq!(floats(&v["result"]).len(), 45);
    // `convert --to auto` stores tensors: SELL (no tensor encoding) is passed over.
    let dir = tempfile::tempdir().unwrap();
    let m = write_mtx(dir.path(), "uniform", 45, 64, &uniform(45, 64, 4));
    let out = dir.path().join("out.json");
    let (code, text, err) = heddle(&["convert", m.to_str().unwrap(), "--to", "auto", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("auto: CSR32 ("), "{text}");
}

#[test]
fn a_uniform_matrix_past_16_bit_columns_runs_in_sell8_with_32_bit_columns() {
    // 70 000 columns: SELL-8c16 is left out (with the reason), SELL-8 runs.
    let (rows, cols) = (21, 70_000);
    let e = uniform(rows, cols, 4);
    assert!(e.iter().any(|&(_, j, _)| j >= 1 << 16));
    let dir = tempfile::tempdir().unwrap();
    let m = write_mtx(dir.path(), "wide", rows, cols, &e);
    let (x_path, x) = xs(dir.path(), cols);
    let (code, v) = heddle_json(&[
        "run",
        MV,
        "--backend",
        "cpu",
        "--matrix",
        &format!("matrix={}", m.display()),
        "--encoding",
        "matrix=auto",
        "--input",
        &format!("xs={}", x_path.display()),
    ]);
    assert_eq!(code, 0, "{v}");
    assert_schema(&v, "wide");
    let auto = &v["auto"]["matrix"];
    assert_eq!(auto["encoding"], "SELL-8", "{auto}");
    assert_eq!(auto["encoding_text"], "SELL(8)", "{auto}");
    assert_eq!(auto["inspection"]["cols_fit_16_bits"], false, "{auto}");
    // Not ranked at all (so not skipped): the inspector leaves it out.
    assert_eq!(auto["skipped"], serde_json::json!([]), "{auto}");
    assert_close(&floats(&v["result"]), &dense_product(rows, &e, &x), "wide");
}

#[test]
fn auto_needs_a_matrix_file_and_a_matrix_operand() {
    let dir = tempfile::tempdir().unwrap();
    let m = write_mtx(dir.path(), "b", 8, 8, &banded(8));
    let m = m.to_str().unwrap();
    let (x, _) = xs(dir.path(), 8);
    let x = format!("xs={}", x.display());
    // No --matrix for the operand: a usage error.
    let (code, _, err) = heddle(&["run", MV, "--encoding", "matrix=auto", "--input", &x]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--matrix matrix=FILE"), "{err}");
    // An operand that is not a matrix: a usage error naming it.
    let (code, _, err) = heddle(&[
        "run",
        MV,
        "--matrix",
        &format!("xs={m}"),
        "--encoding",
        "xs=auto",
        "--dense",
        &format!("matrix={m}"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`xs` is not a matrix"), "{err}");
    // An empty matrix file: an input error.
    let empty = common::write(dir.path(), "empty.mtx", "");
    let (code, _, err) = heddle(&[
        "run",
        MV,
        "--matrix",
        &format!("matrix={}", empty.display()),
        "--encoding",
        "matrix=auto",
        "--input",
        &x,
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("empty.mtx"), "{err}");
    // A matrix without entries is no error: CSR32, a zero result.
    let zero = write_mtx(dir.path(), "zero", 8, 8, &Vec::new());
    let (code, v) = heddle_json(&[
        "run",
        MV,
        "--matrix",
        &format!("matrix={}", zero.display()),
        "--encoding",
        "matrix=auto",
        "--input",
        &x,
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["auto"]["matrix"]["encoding"], "CSR32", "{v}");
    assert_eq!(floats(&v["result"]), vec![0.0; 8]);
}

/// `heddle sparsify --encoding A=auto --matrix A=FILE`: the program printed is
/// the one `sparsify --encoding A=CHOSEN` prints, for the choice `run` makes
/// (the expected one, computed through the library), said on stderr and in
/// `--json`; without `--matrix` a usage error that says what to give.
#[test]
fn sparsify_auto_prints_the_program_for_the_chosen_encoding() {
    let dir = tempfile::tempdir().unwrap();
    for (name, rows, cols, e) in [("banded", 24, 24, banded(24)), ("scattered", 50, 60, scattered(50, 60))] {
        let m = write_mtx(dir.path(), name, rows, cols, &e);
        let matrix = format!("matrix={}", m.display());
        let (chosen, before) = expected_choice(rows, cols, &e);
        let args = ["sparsify", MV, "--encoding", "matrix=auto", "--matrix", &matrix];
        let (code, v) = heddle_json(&args);
        assert_eq!(code, 0, "{name}: {v}");
        assert_schema(&v, &format!("sparsify auto {name}"));
        let auto = &v["auto"]["matrix"];
        assert_eq!(auto["encoding"], chosen.as_str(), "{name}: {auto}");
        let skipped: Vec<&str> =
            auto["skipped"].as_array().unwrap().iter().map(|s| s["encoding"].as_str().unwrap()).collect();
        assert_eq!(skipped, before, "{name}: {auto}");
        // The same program as the chosen encoding given by its text.
        let given = format!("matrix={}", auto["encoding_text"].as_str().unwrap());
        let (code, want) = heddle_json(&["sparsify", MV, "--encoding", &given]);
        assert_eq!(code, 0, "{name}: {want}");
        assert_eq!(v["program"], want["program"], "{name}");
        assert_eq!(v["laws_applied"], want["laws_applied"], "{name}");
        // Without --json: the program on stdout, the choice on stderr.
        let (code, out, err) = heddle(&args);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(out, want["program"].as_str().unwrap(), "{name}");
        assert!(err.starts_with(&format!("auto: {chosen} for matrix (")), "{name}: {err}");
    }
    // An operand given auto with a vector file for a matrix: the operand is a matrix, the file not.
    let (code, _, err) =
        heddle(&["sparsify", MV, "--encoding", "matrix=auto", "--matrix", "matrix=examples/data/spmv8/xs.json"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--matrix matrix"), "{err}");
}

#[test]
fn convert_to_auto_stores_the_first_ranked_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let m = write_mtx(dir.path(), "banded", 24, 24, &banded(24));
    let out = dir.path().join("out.json");
    let (code, v) =
        heddle_json(&["convert", m.to_str().unwrap(), "--to", "auto", "-o", out.to_str().unwrap(), "--stats"]);
    assert_eq!(code, 0, "{v}");
    assert_schema(&v, "convert --to auto");
    assert_eq!(v["auto"]["encoding"], "DIA", "{v}");
    assert!(v["encoding"].as_str().unwrap().contains("j - i : compressed"), "{v}");
    assert_eq!(v["inspection"]["ranking"]["candidates"][0]["name"], "DIA", "{v}");
    // Stored as DIA: the file round-trips to the same entries.
    let (code, text, err) = heddle(&["convert", m.to_str().unwrap(), "--to", "auto", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("auto: DIA (5 diagonals"), "{text}");
}

#[test]
fn convert_stats_prints_the_structure_and_the_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let o = out.to_str().unwrap();
    let (code, text, err) = heddle(&["convert", "tests/data/sparse/m4x8.mtx", "--to", "CSR", "-o", o, "--stats"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("convert_stats_inspection", text.replace(o, "OUT"));
}

/// The dense kernel through `sparsify_auto` on a banded matrix with a
/// backend that refuses the first `refusals` kernels it is shown.
fn auto_with_refusals(refusals: usize) -> heddle::cli::auto::Picked {
    let e = banded(40);
    let coords = e.iter().flat_map(|&(i, j, _)| [i, j]).collect();
    let coo = Coo { dims: vec![40, 40], coords, values: e.iter().map(|x| x.2).collect::<Vec<f64>>().into() };
    let text = std::fs::read_to_string(common::root().join(MV)).unwrap();
    let file = heddle::source::SourceFile::new(MV, &text);
    let (program, _) = heddle::check_source(&file).unwrap();
    let shown = std::cell::Cell::new(0);
    let backend = |_: &heddle_typeck::Kernel| {
        shown.set(shown.get() + 1);
        if shown.get() <= refusals { Err(format!("refusal {}", shown.get())) } else { Ok(()) }
    };
    heddle::cli::auto::sparsify_auto(&file, &program, "matrix", &coo, &[], &backend)
        .unwrap_or_else(|f| panic!("{}", f.message()))
}

#[test]
fn auto_skips_a_format_the_backend_refuses_and_keeps_the_first_when_all_are() {
    let accepted = auto_with_refusals(0).choice;
    assert_eq!(accepted.encoding, "DIA", "a banded matrix, nothing refused");
    let next = auto_with_refusals(1).choice;
    assert_ne!(next.encoding, "DIA", "the refused format is not chosen");
    let skip = next.skipped.iter().find(|s| s.encoding == "DIA").expect("DIA listed as skipped");
    assert_eq!(skip.reason, "refusal 1");
    // Every format refused: the first the front door accepted stays, so
    // that running it reports the backend's own located error.
    let all = auto_with_refusals(usize::MAX).choice;
    assert_eq!(all.encoding, "DIA");
    assert!(all.skipped.iter().any(|s| s.encoding == "CSR" && s.reason.starts_with("refusal")));
}

/// A size line of 2^64 - 1 rows, and entries at coordinates past i64: the
/// inspector's counts and sizes saturate (they overflowed: a panic in a
/// debug build), and every command that inspects answers: `convert --stats`
/// and `--to auto` with the storage error, `run --encoding A=auto` with the
/// error of storing the chosen CSR.
#[test]
fn the_inspector_takes_sizes_up_to_2_64() {
    let dir = common::scratch_dir("auto-huge");
    let far = "%%MatrixMarket matrix coordinate real general\n18446744073709551615 18446744073709551615 2\n1 1 1\n2 9223372036854775809 2\n";
    let tall = "%%MatrixMarket matrix coordinate real general\n18446744073709551615 2 1\n1 1 1\n";
    let out = dir.path().join("out.json");
    let out = out.to_str().unwrap();
    let xs = common::write(dir.path(), "xs.json", "[1.0, 2.0]");
    for (name, text) in [("far", far), ("tall", tall)] {
        let m = common::write(dir.path(), &format!("{name}.mtx"), text);
        let m = m.to_str().unwrap();
        for args in
            [vec!["convert", m, "--to", "CSR", "-o", out, "--stats"], vec!["convert", m, "--to", "auto", "-o", out]]
        {
            let (code, _, err) = heddle(&args);
            assert_eq!(code, 1, "{name} {args:?}: {err}");
            assert!(err.contains(&format!("{name}.mtx")) && !err.contains("panicked"), "{name} {args:?}: {err}");
        }
        let (code, _, err) = heddle(&[
            "run",
            MV,
            "--encoding",
            "matrix=auto",
            "--matrix",
            &format!("matrix={m}"),
            "--input",
            &format!("xs={}", xs.display()),
        ]);
        assert_eq!(code, 1, "{name}: {err}");
        assert!(err.contains("auto: CSR for matrix") && !err.contains("panicked"), "{name}: {err}");
    }
}

/// DIA of a matrix whose dimensions are near 2^64, with an entry past i64:
/// the offsets' count and the level coordinates overflowed (a panic in a
/// debug build); now the storage is refused as too large, by `convert`,
/// `run --encoding`, and `tune --matrix`'s and `search-formats`' size checks.
#[test]
fn dia_of_a_matrix_of_2_64_rows_is_refused_as_too_large() {
    let dir = common::scratch_dir("dia-huge");
    let m = common::write(
        dir.path(),
        "far.mtx",
        "%%MatrixMarket matrix coordinate real general\n18446744073709551615 18446744073709551615 2\n1 1 1\n2 9223372036854775809 2\n",
    );
    let m = m.to_str().unwrap();
    let xs = common::write(dir.path(), "xs.json", "[1.0, 2.0]");
    let xs = format!("xs={}", xs.display());
    let out = dir.path().join("out.json");
    let (code, _, err) = heddle(&["convert", m, "--to", "DIA", "-o", out.to_str().unwrap(), "--stats"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("more than 2^64 positions") && !err.contains("panicked"), "{err}");
    let matrix = format!("matrix={m}");
    let (code, _, err) = heddle(&["run", MV, "--encoding", "matrix=DIA", "--matrix", &matrix, "--input", &xs]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("more than 2^64 positions") && !err.contains("panicked"), "{err}");
    let (code, _, err) = heddle(&[
        "search-formats",
        MV,
        "--operand",
        "matrix",
        "--matrix",
        &matrix,
        "--input",
        &xs,
        "--reps",
        "1",
        "--filter",
        "j - i",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no encoding of `matrix` could run") && !err.contains("panicked"), "{err}");
}

//! Iso-valued SELL-C-σ (`--encoding 'A=SELL(8, explicitVal = V)'`): no
//! values are stored; each lane reads the constant and masks its padding
//! steps with its row's length (`heddle_rewrite::sparsify::sell`, "Iso-valued
//! SELL"). y on every backend equals the dense kernel and a dense product,
//! at f32 and f64, for values 1.0, 2.5 and -0.0, σ = 1 and σ > 1, with very
//! uneven rows (the padding is what the mask must cancel), empty rows and
//! row counts not a multiple of 8; the packed arrays hold no values; the
//! lanes stay one vector per step on the CPU.

use crate::common;
use crate::sell_front_door::{check_as, dense_source};

use common::{Entries, heddle, heddle_json};
use heddle::source::SourceFile;

/// Rows of lengths drawn from `lengths` (one long row among short ones pads
/// its slice a lot), at pseudo-random columns, every value `v`.
fn iso_entries(seed: u64, rows: u64, cols: u64, lengths: &[u64], v: f64) -> Entries {
    let mut rng = common::Rng(seed);
    let mut e = Vec::new();
    for i in 0..rows {
        let n = lengths[rng.below(lengths.len() as u64) as usize].min(cols);
        let mut js: Vec<u64> = (0..n).map(|_| rng.below(cols)).collect();
        js.sort();
        js.dedup();
        e.extend(js.into_iter().map(|j| (i, j, v)));
    }
    e
}

#[test]
fn iso_sell_spmv_equals_the_dense_kernel_on_every_backend() {
    for ty in ["float", "double"] {
        for (v, text) in [(1.0, "1.0"), (2.5, "2.5"), (-0.0, "-0.0")] {
            for sigma in [1, 64] {
                let enc = format!("SELL(8, sigma = {sigma}, explicitVal = {text})");
                // Very uneven rows: mostly short, some 60 long, some empty.
                let uneven = iso_entries(0x150, 45, 70, &[0, 1, 2, 3, 60], v);
                check_as(&enc, "uneven", ty, 45, 70, &uneven);
                // A multiple of 8 rows, one row full.
                let mut full = iso_entries(0x151, 16, 33, &[1, 4], v);
                full.retain(|&(i, _, _)| i != 5);
                full.extend((0..33).map(|j| (5, j, v)));
                full.sort_by_key(|&(i, j, _)| (i, j));
                check_as(&enc, "full_row", ty, 16, 33, &full);
                // Every row empty, and a single entry.
                check_as(&enc, "empty", ty, 11, 9, &Vec::new());
                check_as(&enc, "one", ty, 1, 1, &vec![(0, 0, v)]);
            }
        }
    }
}

#[test]
fn iso_sell_refuses_a_matrix_with_another_value_and_a_value_the_type_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let src = dense_source(dir.path(), "float");
    let mut e = iso_entries(0x152, 12, 10, &[2, 3], 1.0);
    e[3].2 = 2.0;
    let m = common::write_mtx(dir.path(), "two", 12, 10, &e);
    let x = common::write(dir.path(), "xs.json", &serde_json::to_string(&vec![1.0; 10]).unwrap());
    let run = |enc: &str| {
        heddle(&[
            "run",
            src.to_str().unwrap(),
            "--matrix",
            &format!("matrix={}", m.display()),
            "--encoding",
            &format!("matrix={enc}"),
            "--input",
            &format!("xs={}", x.display()),
        ])
    };
    let (code, _, err) = run("SELL(8, explicitVal = 1.0)");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("holds 2") && err.contains("explicitVal = 1.0"), "{err}");
    // 0.1 is no f32; NaN no value at all.
    let (code, _, err) = run("SELL(8, explicitVal = 0.1)");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no value of the matrix's element type float"), "{err}");
    let (code, _, err) = run("SELL(8, explicitVal = x)");
    assert_eq!(code, 2, "{err}");
}

#[test]
fn iso_sell_packs_no_values() {
    let dir = tempfile::tempdir().unwrap();
    let e = iso_entries(0x153, 21, 30, &[0, 2, 9], 1.0);
    let m = common::write_mtx(dir.path(), "m", 21, 30, &e);
    let out = dir.path().join("a.npz");
    let (code, v) = heddle_json(&[
        "convert",
        m.to_str().unwrap(),
        "--to",
        "SELL(8, sigma = 16, explicitVal = 1.0)",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v}");
    let names: Vec<&str> = v["arrays"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["A_soff", "A_cols", "A_step", "A_len", "A_dim0", "A_dim1", "A_slices", "A_slot"], "{v}");
    // Slices of 8 lanes: the lengths are the rows' (sorted within windows of
    // 16), padding rows 0; the step indices count each slice's steps.
    let slices = 3;
    let len = v["arrays"][3]["shape"][0].as_u64().unwrap();
    assert_eq!(len, 8 * slices, "{v}");
    let steps = v["arrays"][2]["shape"][0].as_u64().unwrap();
    assert_eq!(v["arrays"][1]["shape"][0].as_u64().unwrap(), 8 * steps, "{v}");
    assert_eq!(v["nse"], 0, "no values stored: {v}");
}

/// The iso kernel's trusted CPU code: one block per step gathers x's lanes
/// and adds them to the 8 sums as vectors (the sums stay in registers); each
/// lane's mask is a compare of the step's index with the lane's length,
/// hoisted out of the steps. (The mask is chosen lane by lane, a scalar
/// select each, not yet one vector blend: codegen-cpu's `simd.rs` plans a
/// `select` per lane.)
#[test]
fn iso_sell_lanes_stay_vectors_with_one_mask_per_step() {
    for ty in ["float", "double"] {
        let dir = tempfile::tempdir().unwrap();
        let dense = dense_source(dir.path(), ty);
        let (code, text, err) = heddle(&[
            "sparsify",
            dense.to_str().unwrap(),
            "--encoding",
            "matrix=SELL(8, sigma = 64, explicitVal = 1.0)",
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(!text.contains("matrix_vals"), "{text}");
        let (_, kernel) = heddle::check_source(&SourceFile::new("s", &text)).unwrap();
        let mut program = heddle::cpu::lower(&kernel, "sell_iso").unwrap();
        heddle::cli::sell::trust_columns(&kernel, &mut program);
        let options = heddle_runtime::cpu::Tuning::default().options(true);
        let asm = heddle_codegen_cpu::disassembly(&program, &options).unwrap();
        let mut blocks = vec![String::new()];
        for l in asm.lines() {
            if l.starts_with("block") {
                blocks.push(String::new());
            }
            blocks.last_mut().unwrap().push_str(l);
            blocks.last_mut().unwrap().push('\n');
        }
        let gathers: Vec<_> =
            blocks.into_iter().filter(|b| ["vinsertps", "vpinsrq", "vmovlhps"].iter().any(|i| b.contains(i))).collect();
        assert_eq!(gathers.len(), 1, "{ty}: one block gathers: {asm}");
        let block = &gathers[0];
        if std::env::var("SELL_ASM").is_ok() {
            eprintln!("{ty}:\n{block}");
        }
        let add = if ty == "float" { "vaddps" } else { "vaddpd" };
        assert_eq!(
            block.matches(add).count(),
            if ty == "float" { 2 } else { 4 },
            "{ty}: the sums, added as vectors: {block}"
        );
        assert_eq!(block.matches("cmpl").count(), 8, "{ty}: one compare per lane: {block}");
    }
}

/// A power law of ones (rows 240, 120, … 1 long): auto ranks iso-valued
/// SELL-8-σ first and runs it, on every backend, y in row order.
#[test]
fn auto_picks_iso_sell8_sorted_for_a_power_law_of_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, cols) = (77u64, 300u64);
    let mut e = Vec::new();
    for i in 0..rows {
        let n = (240u64 >> (i % 8)).clamp(1, cols);
        let mut js: Vec<u64> = (0..n).map(|k| (k * 7 + i) % cols).collect();
        js.sort();
        e.extend(js.into_iter().map(|j| (i, j, 1.0)));
    }
    auto_runs(dir.path(), "ones", (rows, cols), &e, ("SELL-8-σ iso", "SELL(8, sigma = 80, explicitVal = 1.0 : f64)"));
}

/// `heddle tune --matrix` on a matrix of one value also tries each variant
/// with `explicitVal` (`NAME iso`), verified and timed with the others; on
/// a matrix of two values it does not.
#[test]
fn tune_tries_iso_variants_for_an_iso_matrix_only() {
    let dir = tempfile::tempdir().unwrap();
    let ones = common::write_mtx(dir.path(), "ones", 30, 20, &iso_entries(0x154, 30, 20, &[0, 2, 5], 1.0));
    let mut two = iso_entries(0x155, 30, 20, &[1, 3], 1.0);
    two[0].2 = 2.0;
    let two = common::write_mtx(dir.path(), "two", 30, 20, &two);
    let kernel = common::root().join("examples/sparse/spmv_csr.hdl");
    let tune = |m: &std::path::Path| {
        heddle_json(&[
            "tune",
            kernel.to_str().unwrap(),
            "--backend",
            "cpu",
            "--threads",
            "1",
            "--matrix",
            &format!("A={}", m.display()),
        ])
    };
    let (code, v) = tune(&ones);
    assert_eq!(code, 0, "{v}");
    let kernels: Vec<&str> =
        v["cases"][0]["variants"].as_array().unwrap().iter().map(|x| x["kernel"].as_str().unwrap()).collect();
    assert!(kernels.contains(&"spmv_csr") && kernels.contains(&"spmv_csr iso"), "{v}");
    assert!(v["cases"][0]["variants"].as_array().unwrap().iter().all(|x| x["error"].is_null()), "{v}");
    let (code, v) = tune(&two);
    assert_eq!(code, 0, "{v}");
    let kernels: Vec<&str> =
        v["cases"][0]["variants"].as_array().unwrap().iter().map(|x| x["kernel"].as_str().unwrap()).collect();
    assert_eq!(kernels, ["spmv_csr"], "{v}");
}

/// Rows of one length, every value 2.5: SELL-8's slices fill, and auto
/// ranks SELL-8 without values first and runs it on every backend.
#[test]
fn auto_picks_iso_sell8_for_rows_of_one_length() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, cols) = (45u64, 64u64);
    let e: Entries = (0..rows).flat_map(|i| (0..5).map(move |k| (i, (i * 3 + k * 11) % cols, 2.5))).collect();
    let mut e = e;
    e.sort_by_key(|&(i, j, _)| (i, j));
    auto_runs(dir.path(), "rows5", (rows, cols), &e, ("SELL-8 iso", "SELL(8, explicitVal = 2.5 : f64)"));
}

/// `--encoding matrix=auto` on the dense kernel over the matrix of `e`, on
/// every backend: auto picks `(name, encoding text)` and the result is the
/// dense product.
fn auto_runs(dir: &std::path::Path, file: &str, (rows, cols): (u64, u64), e: &Entries, (name, text): (&str, &str)) {
    let m = common::write_mtx(dir, file, rows, cols, e);
    let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 13) as f64 * 0.125).collect();
    let x_path = common::write(dir, "xs.json", &serde_json::to_string(&x).unwrap());
    let src = dense_source(dir, "double");
    let want = common::dense_product(rows, e, &x);
    for backend in common::backends() {
        let (code, v) = heddle_json(&common::strs(&common::encoded_run(&src, backend, &m, "auto", &x_path)));
        assert_eq!(code, 0, "{backend}: {v}");
        let auto = &v["auto"]["matrix"];
        assert_eq!(auto["encoding"], name, "{backend}: {auto}");
        assert_eq!(auto["encoding_text"], text, "{backend}: {auto}");
        common::assert_close(&common::floats(&v["result"]), &want, backend);
    }
}

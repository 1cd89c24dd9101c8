//! The front door's BSR(r, c) with r > 1 in vector lanes
//! (`rewrite/src/sparsify/lanes.rs`): a block row's r sums carried together
//! across its blocks. y of `examples/dense_mv.hdl` with `--encoding
//! matrix=BSR(r, c)` at f32 and f64, on every backend, equal to the dense
//! kernel and a plain dense product on matrices with empty block rows, a
//! dense block row and scattered entries; rows not a multiple of r refused;
//! the CPU code of BSR(8, 1)'s step over a block row's blocks (one broadcast
//! of x per block, the values' loads folded into the multiplies); and
//! `auto` choosing BSR(8, 1) for a row band, not for scattered rows.

use crate::common;

use common::{Entries, assert_close, assert_schema, backends, dense_product, floats, heddle, heddle_json, write_mtx};
use heddle::source::SourceFile;
use heddle_runtime::sparse::inspect::{BSR_8X1_16, BSR_8X1_32};
use std::path::{Path, PathBuf};

const MV: &str = "examples/dense_mv.hdl";

/// `examples/dense_mv.hdl` at element type `ty`, written into `dir`.
fn dense_source(dir: &Path, ty: &str) -> PathBuf {
    let text = std::fs::read_to_string(common::root().join(MV)).unwrap().replace("[float]", &format!("[{ty}]"));
    common::write(dir, &format!("dense_mv_{ty}.hdl"), &text)
}

/// `rows` rows (a multiple of 8): rows 0..8 dense (a full block row at every
/// r dividing 8), rows 8..16 empty (an empty block row), the others 0 to 4
/// scattered entries, one of them in the last column; values exact in f32
/// (quarters).
fn band(rows: u64, cols: u64, seed: u64) -> Entries {
    let mut rng = common::Rng(seed);
    let mut e = Vec::new();
    for i in 0..rows {
        let mut js: Vec<u64> = match i {
            0..8 => (0..cols).collect(),
            8..16 => Vec::new(),
            _ => (0..rng.below(5)).map(|_| rng.below(cols)).collect(),
        };
        if i == rows - 1 {
            js.push(cols - 1);
        }
        js.sort();
        js.dedup();
        e.extend(js.into_iter().map(|j| (i, j, rng.value())));
    }
    e
}

/// The named `BSR(r, c)` at 32-bit positions and 16-bit coordinates.
fn narrow(r: u64, c: u64) -> String {
    format!(
        "#sparse_tensor.encoding<{{ map = (i, j) -> (i floordiv {r} : dense, j floordiv {c} : compressed, i mod {r} : dense, j mod {c} : dense), posWidth = 32, crdWidth = 16 }}>"
    )
}

/// The front door's kernel for `matrix=enc` at `ty`.
fn sparsified(src: &Path, enc: &str) -> String {
    let (code, text, err) = heddle(&["sparsify", src.to_str().unwrap(), "--encoding", &format!("matrix={enc}")]);
    assert_eq!(code, 0, "{enc}: {err}");
    text
}

#[test]
fn bsr_r_by_c_in_lanes_equals_the_dense_kernel_and_a_dense_product() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, cols) = (40u64, 24u64);
    for (k, (r, c)) in [(8, 1), (4, 1), (2, 1), (2, 2), (4, 4)].into_iter().enumerate() {
        let e = band(rows, cols, 0xb5_81 + k as u64);
        let m = write_mtx(dir.path(), &format!("band{k}"), rows, cols, &e);
        let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 13) as f64 * 0.125).collect();
        let x_path = common::write(dir.path(), "xs.json", &serde_json::to_string(&x).unwrap());
        let want = dense_product(rows, &e, &x);
        for ty in ["float", "double"] {
            let src = dense_source(dir.path(), ty);
            let (src, m, x_path) = (src.to_str().unwrap(), m.to_str().unwrap(), x_path.to_str().unwrap());
            let what = format!("BSR({r}, {c}) at {ty}");
            for enc in [format!("BSR({r}, {c})"), narrow(r, c)] {
                // The lane form: the r sums carried in one row across the
                // blocks (a lane-wise add), no sum per lane.
                let text = sparsified(Path::new(src), &enc);
                assert!(text.contains(&format!("generate({r}, fun(z => 0))")), "{what}: {text}");
                assert!(text.contains("zip(acc, t)"), "{what}: {text}");
                if c == 1 {
                    assert!(!text.contains("reduce(+"), "{what}: {text}");
                }
                for backend in backends() {
                    let args = common::encoded_run(Path::new(src), backend, Path::new(m), &enc, Path::new(x_path));
                    let (code, v) = heddle_json(&common::strs(&args));
                    let what = format!("{what} {backend} {enc}");
                    assert_eq!(code, 0, "{what}: {v}");
                    assert_schema(&v, &what);
                    // Quarters times eighths: every sum is exact, in any order.
                    assert_close(&floats(&v["result"]), &want, &what);
                }
            }
        }
    }
}

#[test]
fn bsr_r_by_1_refuses_rows_not_a_multiple_of_r() {
    let dir = tempfile::tempdir().unwrap();
    let e = band(16, 8, 7).into_iter().chain([(18, 3, 1.0)]).collect::<Entries>();
    let m = write_mtx(dir.path(), "odd", 19, 8, &e);
    let x_path = common::write(dir.path(), "xs.json", &serde_json::to_string(&vec![1.0; 8]).unwrap());
    let src = dense_source(dir.path(), "double");
    for r in [8, 4, 2] {
        let args = common::encoded_run(&src, "cpu", &m, &format!("BSR({r}, 1)"), &x_path);
        let (code, _, err) = heddle(&common::strs(&args));
        // A located refusal naming the rows, never a short result.
        assert_eq!(code, 1, "BSR({r}, 1): {err}");
        assert!(
            err.contains("`matrix`") && err.contains("size 19") && err.contains(&format!("block size {r}")),
            "{err}"
        );
    }
}

/// The trusted CPU code of the front door's BSR(8, 1) SpMV at `ty` (16-bit
/// block coordinates): the block of the loop over a block row's blocks (the
/// one that multiplies), its instructions.
fn block_step(ty: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let src = dense_source(dir.path(), ty);
    let text = sparsified(&src, BSR_8X1_16);
    let (_, kernel) = heddle::check_source(&SourceFile::new("s", &text)).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let program = heddle::cpu::lower(&kernel, "bsr81").unwrap();
    assert!(!program.ranges.is_empty(), "the block coordinates' range: {text}");
    let options = heddle_runtime::cpu::Tuning::default().options(true);
    let asm = heddle_codegen_cpu::disassembly(&program, &options).unwrap();
    let mut blocks = vec![Vec::new()];
    for l in asm.lines().map(str::trim) {
        if l.starts_with("block") {
            blocks.push(Vec::new());
        } else if !l.is_empty() && !l.starts_with(';') && !l.starts_with("unwind") {
            blocks.last_mut().unwrap().push(l.to_string());
        }
    }
    let mul = if ty == "float" { "vmulps" } else { "vmulpd" };
    let steps: Vec<_> = blocks.into_iter().filter(|b| b.iter().any(|l| l.starts_with(mul))).collect();
    assert_eq!(steps.len(), 1, "one block multiplies: {asm}");
    steps.into_iter().next().unwrap()
}

#[test]
fn the_bsr_8x1_step_broadcasts_x_once_and_multiplies_the_values_from_memory() {
    for ty in ["float", "double"] {
        let step = block_step(ty);
        if std::env::var("BSR_ASM").is_ok() {
            eprintln!("{ty}: {step:#?}");
        }
        let count = |op: &str| step.iter().filter(|l| l.starts_with(op)).count();
        let (p, s) = if ty == "float" { ("ps", "ss") } else { ("pd", "sd") };
        // A block is 8 lanes: 2 vectors of f32, 4 of f64; a multiply and an
        // add per vector, each multiply reading the block's values from memory.
        let vectors = if ty == "float" { 2 } else { 4 };
        assert_eq!(count(&format!("vmul{p}")), vectors, "{ty}: {step:#?}");
        assert_eq!(count(&format!("vadd{p}")), vectors, "{ty}: {step:#?}");
        let from_memory = step.iter().filter(|l| l.starts_with(&format!("vmul{p}")) && l.contains('(')).count();
        assert_eq!(from_memory, vectors, "{ty}: the values' loads folded into the multiplies: {step:#?}");
        // x: one scalar load per block, broadcast once to every lane; the
        // coordinate's one 16-bit load. Nothing else is loaded or stored
        // (no spill), nothing summed across lanes.
        assert_eq!(count(&format!("vmov{s}")), 1, "{ty}: {step:#?}");
        assert_eq!(count("vpshufd") + count("vbroadcast") + count("vshufp"), 1, "{ty}: {step:#?}");
        assert_eq!(count("movzw"), 1, "{ty}: {step:#?}");
        assert!(!step.iter().any(|l| l.contains("rsp") || l.contains("rbp")), "{ty}: a spill: {step:#?}");
        assert_eq!(count(&format!("vadd{s}")) + count(&format!("vmul{s}")), 0, "{ty}: {step:#?}");
        // Before the lane form each lane walked the block row: a scalar
        // multiply per lane per block. The step now: the lanes' 2
        // instructions per vector, x's load and broadcast, the coordinate's
        // load, the block's offset, the counter's step and the jump back.
        assert!(step.len() <= 2 * vectors + 8, "{ty}: {} instructions: {step:#?}", step.len());
    }
}

/// Runs dense_mv at `ty` on `m` with `matrix=auto` on the CPU: the JSON.
fn auto_run(dir: &Path, ty: &str, m: &Path, cols: u64) -> serde_json::Value {
    let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 7) as f64 * 0.25).collect();
    let x_path = common::write(dir, "xs.json", &serde_json::to_string(&x).unwrap());
    let src = dense_source(dir, ty);
    let (code, v) = heddle_json(&common::strs(&common::encoded_run(&src, "cpu", m, "auto", &x_path)));
    assert_eq!(code, 0, "{ty}: {v}");
    v
}

#[test]
fn auto_chooses_bsr_8x1_for_a_row_band_and_not_for_scattered_rows() {
    let dir = tempfile::tempdir().unwrap();
    // 64 x 256: rows 0..16 dense, the others 2 entries: blocks of 8x1 are
    // 86% full, fewer bytes than SELL-8c16's slots.
    let (rows, cols) = (64u64, 256u64);
    let mut e: Entries = Vec::new();
    for i in 0..rows {
        let mut js: Vec<u64> = if i < 16 { (0..cols).collect() } else { vec![(i * 7) % cols, (i * 13 + 5) % cols] };
        js.sort();
        js.dedup();
        e.extend(js.into_iter().map(|j| (i, j, ((i + j) % 9) as f64 - 4.0)));
    }
    let m = write_mtx(dir.path(), "band", rows, cols, &e);
    let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 7) as f64 * 0.25).collect();
    let want = dense_product(rows, &e, &x);
    for ty in ["float", "double"] {
        let v = auto_run(dir.path(), ty, &m, cols);
        let auto = &v["auto"]["matrix"];
        assert_eq!(auto["encoding"], "BSR(8, 1)", "{ty}: {auto}");
        assert_eq!(auto["encoding_text"], BSR_8X1_16, "{ty}: {auto}");
        assert_close(&floats(&v["result"]), &want, ty);
    }
    // Scattered rows: 4 entries a row, blocks of 8x1 hold one entry each.
    let mut rng = common::Rng(0x5ca7);
    let mut e: Entries = Vec::new();
    for i in 0..rows {
        let mut js: Vec<u64> = (0..4).map(|_| rng.below(cols)).collect();
        js.sort();
        js.dedup();
        e.extend(js.into_iter().map(|j| (i, j, rng.value())));
    }
    let m = write_mtx(dir.path(), "scattered", rows, cols, &e);
    let want = dense_product(rows, &e, &x);
    for ty in ["float", "double"] {
        let v = auto_run(dir.path(), ty, &m, cols);
        let auto = &v["auto"]["matrix"];
        assert_ne!(auto["encoding"], "BSR(8, 1)", "{ty}: {auto}");
        assert_close(&floats(&v["result"]), &want, ty);
    }
    // More than 2^16 columns: 32-bit block coordinates.
    let cols = (1u64 << 16) + 8;
    let e: Entries = (0..8).flat_map(|i| (0..8).map(move |t| (i, cols - 8 + t, 1.0 + t as f64))).collect();
    let m = write_mtx(dir.path(), "wide", 8, cols, &e);
    let v = auto_run(dir.path(), "double", &m, cols);
    assert_eq!(v["auto"]["matrix"]["encoding_text"], BSR_8X1_32, "{}", v["auto"]);
}

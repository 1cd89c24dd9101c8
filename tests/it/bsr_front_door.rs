//! The front door's BSR(1, 8) SpMV (`--encoding matrix=BSR(1, 8)` of the
//! dense `examples/dense_mv.hdl`): y at f32 and f64, with 64-bit
//! (the named encoding), 32-bit and 16-bit block coordinates, on every
//! backend equal to the dense kernel and a plain dense product; auto's
//! narrow spelling of it; and the CPU code of its step over a row's blocks,
//! which adds each block's products into vector partials carried from
//! block to block (`codegen-cpu`'s `translate::nested`), not folded across
//! lanes per block.

use crate::common;

use common::{Entries, assert_close, assert_schema, backends, dense_product, floats, heddle, heddle_json, write_mtx};
use heddle::source::SourceFile;
use heddle_runtime::sparse::inspect::{BSR_1X8_16, BSR_1X8_32};
use std::path::{Path, PathBuf};

const MV: &str = "examples/dense_mv.hdl";

/// `examples/dense_mv.hdl` at element type `ty`, written into `dir`.
fn dense_source(dir: &Path, ty: &str) -> PathBuf {
    let text = std::fs::read_to_string(common::root().join(MV)).unwrap().replace("[float]", &format!("[{ty}]"));
    common::write(dir, &format!("dense_mv_{ty}.hdl"), &text)
}

/// A row band: every third row dense (all `cols` columns), the others a
/// few entries, some rows empty, one row a run that ends mid-block;
/// values exact in f32 (eighths).
fn row_band(rows: u64, cols: u64) -> Entries {
    let mut rng = common::Rng(0xb5e_1008);
    let mut e = Vec::new();
    for i in 0..rows {
        let js: Vec<u64> = match i % 3 {
            0 => (0..cols).collect(),
            1 if i % 4 == 1 => Vec::new(),
            1 => (3..cols.min(21)).collect(),
            _ => {
                let mut js: Vec<u64> = (0..4).map(|_| rng.below(cols)).collect();
                js.sort();
                js.dedup();
                js
            }
        };
        e.extend(js.into_iter().map(|j| (i, j, (rng.below(255) as f64 - 127.0) / 8.0)));
    }
    e
}

/// Runs dense_mv at `ty` with `matrix=ENC` for each BSR(1, 8) spelling on
/// every backend; y against the dense kernel and a plain product.
fn check(name: &str, ty: &str, rows: u64, cols: u64, e: &Entries) {
    let dir = tempfile::tempdir().unwrap();
    let m = write_mtx(dir.path(), name, rows, cols, e);
    let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 13) as f64 * 0.125).collect();
    let x_path = common::write(dir.path(), "xs.json", &serde_json::to_string(&x).unwrap());
    let src = dense_source(dir.path(), ty);
    let (src, m, x_path) = (src.to_str().unwrap(), m.to_str().unwrap(), x_path.to_str().unwrap());
    let want = dense_product(rows, e, &x);
    let what = format!("{name} ({rows} x {cols}, {ty})");
    let (code, dense) =
        heddle_json(&["run", src, "--dense", &format!("matrix={m}"), "--input", &format!("xs={x_path}")]);
    assert_eq!(code, 0, "{what}: {dense}");
    let dense = floats(&dense["result"]);
    assert_close(&dense, &want, &format!("{what}: the dense kernel"));
    for enc in ["BSR(1, 8)", BSR_1X8_32, BSR_1X8_16] {
        for backend in backends() {
            let args = common::encoded_run(Path::new(src), backend, Path::new(m), enc, Path::new(x_path));
            let (code, v) = heddle_json(&common::strs(&args));
            let what = format!("{what} {backend} {enc}");
            assert_eq!(code, 0, "{what}: {v}");
            assert_schema(&v, &what);
            let got = floats(&v["result"]);
            assert_close(&got, &dense, &format!("{what}: against the dense kernel"));
            assert_close(&got, &want, &format!("{what}: against the dense product"));
        }
    }
}

#[test]
fn bsr_1x8_spmv_at_every_width_equals_the_dense_kernel_and_a_dense_product() {
    for ty in ["float", "double"] {
        // Rows of 0 to 10 blocks (the step's partials carried across rows of
        // every length, an empty row folding none), and a matrix of one block column.
        check("band", ty, 25, 80, &row_band(25, 80));
        check("narrow", ty, 7, 8, &row_band(7, 8));
        // Every row empty.
        check("empty", ty, 5, 16, &Vec::new());
    }
}

#[test]
fn auto_spells_bsr_1x8_with_32_bit_positions_and_16_bit_block_coordinates() {
    // Rows of whole blocks of different lengths: BSR(1, 8) fills, SELL-8's
    // slices padded to the long rows do not.
    let dir = tempfile::tempdir().unwrap();
    let (rows, cols) = (16u64, 128u64);
    let e: Entries = (0..rows)
        .flat_map(|i| {
            let len = if i % 8 == 0 { 128 } else { 8 };
            (0..len).map(move |j| (i, (j + 8 * i) % cols, ((i + j) % 9) as f64 - 4.0))
        })
        .collect();
    let mut e = e;
    e.sort_by_key(|&(i, j, _)| (i, j));
    let m = write_mtx(dir.path(), "blocks", rows, cols, &e);
    let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 13) as f64 * 0.125).collect();
    let x_path = common::write(dir.path(), "xs.json", &serde_json::to_string(&x).unwrap());
    let want = dense_product(rows, &e, &x);
    for ty in ["float", "double"] {
        let src = dense_source(dir.path(), ty);
        let args = [
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
        ];
        let (code, v) = heddle_json(&args);
        assert_eq!(code, 0, "{ty}: {v}");
        let auto = &v["auto"]["matrix"];
        assert_eq!(auto["encoding"], "BSR(1, 8)", "{ty}: {auto}");
        assert_eq!(auto["encoding_text"], BSR_1X8_16, "{ty}: {auto}");
        assert_close(&floats(&v["result"]), &want, ty);
        let (code, _, err) = heddle(&args);
        assert_eq!(code, 0);
        assert!(err.starts_with("auto: BSR(1, 8) for matrix ("), "{err}");
    }
}

/// The trusted CPU code of the front door's BSR(1, 8) SpMV at `ty` with
/// 16-bit block coordinates, under `options`: the block of the loop over a
/// row's blocks (the one that multiplies), its instructions.
fn block_step(ty: &str, options: &heddle_codegen_cpu::Options) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let src = dense_source(dir.path(), ty);
    let (code, text, err) = heddle(&["sparsify", src.to_str().unwrap(), "--encoding", &format!("matrix={BSR_1X8_16}")]);
    assert_eq!(code, 0, "{err}");
    let (_, kernel) = heddle::check_source(&SourceFile::new("s", &text)).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let program = heddle::cpu::lower(&kernel, "bsr").unwrap();
    // What `heddle run` trusts after validating the coordinates.
    assert!(!program.ranges.is_empty(), "the block coordinates' range: {text}");
    let asm = heddle_codegen_cpu::disassembly(&program, options).unwrap();
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
fn the_block_step_adds_into_partials_carried_from_block_to_block() {
    let base = heddle_runtime::cpu::Tuning::default().options(true);
    for ty in ["float", "double"] {
        let carried = block_step(ty, &base);
        let folded = block_step(ty, &heddle_codegen_cpu::Options { nested_sums: false, ..base });
        if std::env::var("BSR_ASM").is_ok() {
            eprintln!("{ty}: {carried:#?}\n{folded:#?}");
        }
        let count = |b: &[String], op: &str| b.iter().filter(|l| l.starts_with(op)).count();
        let (p, s) = if ty == "float" { ("ps", "ss") } else { ("pd", "sd") };
        // A block is 8 lanes: 2 vectors of f32, 4 of f64; one load of the
        // values and one of x, a multiply and an add per vector.
        let vectors = if ty == "float" { 2 } else { 4 };
        assert_eq!(count(&carried, &format!("vmul{p}")), vectors, "{ty}: {carried:#?}");
        assert_eq!(count(&carried, &format!("vadd{p}")), vectors, "{ty}: {carried:#?}");
        // The loop over a row's blocks is tested at the top, so each
        // partial's update has one use and x's load folds into its multiply:
        // one `vmovup` (the values) per vector, every multiply from memory.
        assert_eq!(count(&carried, "vmovup"), vectors, "{ty}: {carried:#?}");
        let from_memory = carried.iter().filter(|l| l.starts_with(&format!("vmul{p}")) && l.contains('(')).count();
        assert_eq!(from_memory, vectors, "{ty}: x's loads folded into the multiplies: {carried:#?}");
        // Nothing crosses lanes per block: no shuffle, no scalar add, no
        // zeroed register to start a block's sum from.
        for op in ["vpshufd", "vshufp", "vmovhlps", "vunpckh", &format!("vadd{s}"), "vxorp", "vpxor"] {
            assert_eq!(count(&carried, op), 0, "{ty}: {op} in {carried:#?}");
        }
        // Before: the block's sum folded across lanes and added into the row's.
        assert!(count(&folded, &format!("vadd{s}")) >= 2, "{ty}: {folded:#?}");
        assert!(count(&folded, &format!("vadd{p}")) > vectors, "{ty}: {folded:#?}");
        // The step: the lanes' 3 instructions per vector, the block
        // coordinate's load and scaling, the values' offset, the counter's
        // step and the jump back to the test: at most 7 more than the lanes
        // (f64 was 29 instructions before the partials were carried, then
        // 24 with x's loads unfolded and the back edge split).
        assert!(carried.len() <= 3 * vectors + 7, "{ty}: {} instructions: {carried:#?}", carried.len());
        assert!(carried.len() + 5 <= folded.len(), "{ty}: {carried:#?}\n{folded:#?}");
    }
}

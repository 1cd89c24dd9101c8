//! SELL-C-σ SpMV (`examples/sparse/spmv_sell8.hdl`, packed by
//! `heddle_runtime::sparse::sell`): the CPU backend's result equals the
//! interpreter's bit for bit (each lane adds its row's products in order, as
//! the interpreter does; the loop over a slice's steps is not split) on 1 to
//! 4 threads, with and without the columns' range (validated, then the
//! per-lane column checks left out), and both equal a dense reference
//! computed here in f64 (within f32 rounding for `float`); rows of 0, 1 and
//! many entries, row counts that are not multiples of 8, an empty matrix,
//! σ = 1 and σ = 16 (rows sorted, the permutation applied to y). Packing
//! round-trips; bad storage is refused with a message that says why; and the
//! Cranelift IR runs the 8 rows in vector lanes.

use crate::common;

use common::Rng;
use heddle::source::SourceFile;
use heddle_runtime::cpu::Parallelism;
use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_runtime::sparse::sell::{Sell, from_csr};
use heddle_runtime::value::Value;
use serde_json::json;

const EXAMPLE: &str = include_str!("../../examples/sparse/spmv_sell8.hdl");

/// A random CSR matrix: `rows` × `cols`, row lengths drawn from `lengths`.
fn csr(rng: &mut Rng, rows: usize, cols: usize, lengths: &[usize]) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
    let mut rowptr = vec![0];
    let (mut col, mut val) = (Vec::new(), Vec::new());
    for _ in 0..rows {
        let n = lengths[rng.below(lengths.len() as u64) as usize].min(cols);
        let mut js: Vec<usize> = (0..cols).collect();
        for t in 0..n {
            let u = t + rng.below((cols - t) as u64) as usize;
            js.swap(t, u);
        }
        let mut row: Vec<usize> = js[..n].to_vec();
        row.sort();
        for j in row {
            col.push(j);
            // 12 significant bits, both signs: exact in f32.
            val.push((rng.below(4095) as f64 - 2047.0) / 64.0);
        }
        rowptr.push(col.len());
    }
    (rowptr, col, val)
}

/// The interpreter's y and the CPU backend's on 1 to 4 threads, in row order.
fn run(s: &Sell, xs: &[f64], ty: &str) -> (Vec<f64>, Vec<Vec<f64>>) {
    run_source(EXAMPLE, s, xs, ty)
}

/// [`run`] of the program `source` (the example's inputs and result).
fn run_source(source: &str, s: &Sell, xs: &[f64], ty: &str) -> (Vec<f64>, Vec<Vec<f64>>) {
    let src = source.replace("[float]", &format!("[{ty}]"));
    let file = SourceFile::new("spmv_sell8.hdl", &src);
    let kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
    let slices = s.slices();
    let nested = |f: &dyn Fn(usize) -> serde_json::Value| -> serde_json::Value {
        json!(
            (0..slices)
                .map(|sl| (s.soff[sl] as usize..s.soff[sl + 1] as usize)
                    .map(|k| (0..8).map(|l| f(k * 8 + l)).collect::<Vec<_>>())
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>()
        )
    };
    let inputs = vec![
        ("soff".into(), Loaded::Json(json!(s.soff))),
        ("cols".into(), Loaded::Json(nested(&|p| json!(s.col[p])))),
        ("vals".into(), Loaded::Json(nested(&|p| json!(s.val[p])))),
        ("xs".into(), Loaded::Json(json!(xs))),
    ];
    let env = bind_inputs(&kernel, &[], inputs).unwrap_or_else(|e| panic!("{e}"));
    let checked = heddle::cpu::lower(&kernel, "spmv_sell8").unwrap();
    // With the columns' range (what the packer guarantees), the runtime
    // validates them and runs code without the per-lane column checks.
    let trusted = with_column_range(checked.clone());
    let interp = common::float_array(&heddle_runtime::interp::run_kernel(&kernel, &env).unwrap());
    assert_eq!(interp.len(), 8 * slices);
    // Padding rows are all padding: 0 (in the example's sums).
    for p in 0..8 * slices {
        if source == EXAMPLE && s.row_at[p].is_none() {
            assert_eq!(interp[p], 0.0, "padding row at {p}");
        }
    }
    let cpu = (1..=4)
        .map(|t| {
            let program = if t % 2 == 0 { &trusted } else { &checked };
            let z = common::float_array(&heddle::cpu::run(&kernel, program, &env, Parallelism::always(t)).unwrap());
            assert_eq!(z.len(), interp.len());
            for (p, (a, b)) in z.iter().zip(&interp).enumerate() {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{ty}, {t} threads, sliced position {p}: cpu {a}, interpreter {b}"
                );
            }
            s.unpermute(&z)
        })
        .collect();
    (s.unpermute(&interp), cpu)
}

/// `s` and `x[j] = j / 7` (`cols` of them) bound to `kernel` as flat buffers,
/// as `heddle run --input` binds `.npy` files (the probes' inputs).
fn flat_env(kernel: &heddle_typeck::Kernel, s: &Sell, cols: usize) -> heddle_runtime::interp::Env {
    use heddle_runtime::io::read::ScalarKind;
    let flat = |items: Vec<Value>, kind| Loaded::Flat {
        shape: vec![items.len() as u64],
        items,
        dtype: "float64".into(),
        kinds: vec![kind],
    };
    let ints = |v: &[i32]| v.iter().map(|&x| Value::Int(x as i64)).collect::<Vec<_>>();
    let inputs = vec![
        ("soff".into(), flat(ints(&s.soff), ScalarKind::Int)),
        ("cols".into(), flat(ints(&s.col), ScalarKind::Int)),
        ("vals".into(), flat(s.val.iter().map(|&v| Value::Float(v)).collect(), ScalarKind::Float)),
        ("xs".into(), flat((0..cols).map(|j| Value::Float(j as f64 / 7.0)).collect(), ScalarKind::Float)),
    ];
    let nats = [("m".to_string(), cols as i64), ("S".to_string(), s.slices() as i64)];
    heddle_runtime::io::bind_inputs_flat(kernel, &nats, inputs).unwrap()
}

/// `program` with the range the packer guarantees: every column below m.
fn with_column_range(mut program: heddle_ir::loops::LoopProgram) -> heddle_ir::loops::LoopProgram {
    program.ranges.push(heddle_ir::loops::InputRange {
        buf: "cols".into(),
        field: 0,
        below: heddle_ir::loops::Expr::var("m"),
    });
    program
}

#[test]
fn a_column_out_of_range_is_an_error_with_or_without_the_range() {
    let src = EXAMPLE;
    let file = SourceFile::new("spmv_sell8.hdl", src);
    let kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
    // One slice of one step; lane 3's column is 5 in a 4-column matrix.
    let cols: Vec<i64> = vec![0, 1, 2, 5, 0, 0, 0, 0];
    let inputs = vec![
        ("soff".into(), Loaded::Json(json!([0, 1]))),
        ("cols".into(), Loaded::Json(json!([[cols]]))),
        ("vals".into(), Loaded::Json(json!([[[1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]]]))),
        ("xs".into(), Loaded::Json(json!([1.0, 2.0, 3.0, 4.0]))),
    ];
    let env = bind_inputs(&kernel, &[], inputs).unwrap_or_else(|e| panic!("{e}"));
    let checked = heddle::cpu::lower(&kernel, "spmv_sell8").unwrap();
    for program in [checked.clone(), with_column_range(checked)] {
        for t in [1, 2] {
            let e = heddle::cpu::run(&kernel, &program, &env, Parallelism::always(t)).unwrap_err();
            assert!(format!("{e:?}").contains("xs"), "{e:?}");
        }
    }
    assert!(heddle_runtime::interp::run_kernel(&kernel, &env).is_err());
}

/// y = A x densely, in f64, with A's values and x rounded to `ty`.
fn dense(rows: usize, cols: usize, csr: &(Vec<usize>, Vec<usize>, Vec<f64>), xs: &[f64]) -> Vec<f64> {
    let mut a = vec![vec![0.0; cols]; rows];
    for (i, row) in a.iter_mut().enumerate() {
        for p in csr.0[i]..csr.0[i + 1] {
            row[csr.1[p]] = csr.2[p];
        }
    }
    a.iter().map(|r| r.iter().zip(xs).map(|(v, x)| v * x).sum()).collect()
}

#[test]
fn sell8_spmv_equals_the_interpreter_and_a_dense_reference() {
    let mut rng = Rng(0x5e11_0001);
    let cases: [(usize, usize, &[usize]); 6] = [
        (0, 5, &[1]),
        (1, 9, &[0]),
        (7, 13, &[0, 1, 3]),
        (13, 40, &[0, 1, 2, 5, 40]),
        (37, 64, &[1, 2, 3, 4, 9]),
        (64, 100, &[0, 1, 17, 60]),
    ];
    for (rows, cols, lengths) in cases {
        let m = csr(&mut rng, rows, cols, lengths);
        let xs: Vec<f64> = (0..cols).map(|j| ((j * 37 % 101) as f64 - 50.0) / 16.0).collect();
        let want = dense(rows, cols, &m, &xs);
        for sigma in [1, 16] {
            let s = from_csr(rows, cols, &m.0, &m.1, &m.2, 8, sigma, 4, None).unwrap();
            assert_eq!(s.slices(), rows.div_ceil(8));
            for (ty, eps) in [("float", f32::EPSILON as f64), ("double", f64::EPSILON)] {
                let (interp, cpu) = run(&s, &xs, ty);
                let what = format!("{rows}x{cols}, σ = {sigma}, {ty}");
                assert_eq!(interp.len(), rows, "{what}");
                for (i, (g, w)) in interp.iter().zip(&want).enumerate() {
                    let mag: f64 = (m.0[i]..m.0[i + 1]).map(|p| (m.2[p] * xs[m.1[p]]).abs()).sum();
                    assert!(
                        (g - w).abs() <= 2.0 * (m.0[i + 1] - m.0[i]) as f64 * eps * mag,
                        "{what}, row {i}: {g} vs dense {w}"
                    );
                }
                for y in cpu {
                    assert_eq!(y, interp, "{what}");
                }
            }
        }
    }
}

#[test]
fn sell_packing_round_trips_and_sorts_within_windows() {
    let mut rng = Rng(0x5e11_0002);
    for (rows, sigma) in [(0, 1), (5, 1), (21, 8), (50, 16), (50, 48)] {
        let m = csr(&mut rng, rows, 30, &[0, 1, 2, 7, 30]);
        let s = from_csr(rows, 30, &m.0, &m.1, &m.2, 8, sigma, 8, None).unwrap();
        let len: Vec<usize> = m.0.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(s.to_csr(&len), m, "{rows} rows, σ = {sigma}");
        // Each slice is as wide as its longest row, and no wider.
        for sl in 0..s.slices() {
            let w = (0..8).filter_map(|l| s.row_at[sl * 8 + l]).map(|i| len[i]).max().unwrap_or(0);
            assert_eq!((s.soff[sl + 1] - s.soff[sl]) as usize, w);
        }
        // Rows stay in their window, longest first.
        for (i, &p) in s.slot.iter().enumerate() {
            assert_eq!(p / sigma, i / sigma);
        }
        for w in s.row_at.chunks(sigma) {
            let l: Vec<usize> = w.iter().flatten().map(|&i| len[i]).collect();
            assert!(l.windows(2).all(|p| p[0] >= p[1]) || sigma == 1);
        }
        // Padding: value 0 at a valid column.
        assert!(s.col.iter().all(|&j| (j as usize) < 30));
        // Putting a sliced-order result back: row i's value is where the row was sliced.
        let z: Vec<i64> = (0..s.slices() * 8).map(|p| s.row_at[p].map_or(-1, |i| i as i64)).collect();
        let mut y = vec![0i64; rows];
        s.unpermute_into(&z, &mut y);
        assert_eq!(y, (0..rows as i64).collect::<Vec<_>>(), "{rows} rows, σ = {sigma}");
        assert_eq!(s.unpermute(&z), y);
    }
}

/// The pass that puts y in row order, split over the kernels' pool, writes
/// what the sequential one writes, for thread counts that do and do not
/// divide the rows, windows smaller than a part and the whole matrix.
#[test]
fn the_unpermute_on_several_threads_equals_the_sequential_one() {
    use heddle_runtime::sparse::sell::PARALLEL_UNPERMUTE_ROWS;
    let rows = PARALLEL_UNPERMUTE_ROWS * 3 + 5;
    // Row i has (i * 7919) % 13 entries: lengths out of order, so sorting moves rows.
    let mut rowptr = vec![0usize];
    let mut colidx = Vec::new();
    for i in 0..rows {
        let n = (i * 7919) % 13;
        colidx.extend((0..n).map(|k| (i + k * 31) % 64));
        rowptr.push(colidx.len());
    }
    for sigma in [64, rows.next_multiple_of(8)] {
        let s = heddle_runtime::sparse::sell::layout(rows, 64, &rowptr, &colidx, 8, sigma, 8, None).unwrap();
        let z: Vec<i64> = (0..s.slices() * 8).map(|p| s.row_at[p].map_or(-1, |i| i as i64)).collect();
        let mut want = vec![0i64; rows];
        s.unpermute_into(&z, &mut want);
        assert_eq!(want, (0..rows as i64).collect::<Vec<_>>(), "σ = {sigma}");
        for threads in [1, 2, 3, 4] {
            let mut y = vec![-7i64; rows];
            s.unpermute_on(&z, &mut y, threads);
            assert_eq!(y, want, "σ = {sigma}, {threads} threads");
        }
    }
}

#[test]
fn bad_sell_storage_is_refused_with_the_reason() {
    // Every 8th of 64 rows has 100 entries, the others 1: σ = 1 pads each
    // slice to 100 steps (6.4x the entries); σ = 64 sorts the long rows into
    // one slice, and the storage is accepted.
    let mut rowptr = vec![0];
    let mut col = Vec::new();
    for i in 0..64 {
        col.extend(if i % 8 == 0 { 0..100 } else { 0..1 });
        rowptr.push(col.len());
    }
    let val = vec![1.0; col.len()];
    let plain = 65 * 8 + col.len() as u64 * 12;
    let e = from_csr(64, 100, &rowptr, &col, &val, 8, 1, 4, Some(3 * plain)).unwrap_err().to_string();
    assert!(e.contains("SELL-8-1") && e.contains("3x plain CSR"), "{e}");
    let sorted = from_csr(64, 100, &rowptr, &col, &val, 8, 64, 4, Some(3 * plain)).unwrap();
    assert_eq!(sorted.soff.last(), Some(&107));
    let e = from_csr(64, 100, &rowptr, &col, &val, 8, 12, 4, None).unwrap_err().to_string();
    assert!(e.contains("multiple of C"), "{e}");
    let e = from_csr(64, 100, &rowptr, &col, &val, 0, 1, 4, None).unwrap_err().to_string();
    assert!(e.contains("positive"), "{e}");
    let e = from_csr(64, 50, &rowptr, &col, &val, 8, 1, 4, None).unwrap_err().to_string();
    assert!(e.contains("coordinates[1]") && e.contains("not below 50"), "{e}");
}

#[test]
fn sell8_rows_run_in_vector_lanes() {
    let (code, clif, err) = common::heddle(&["compile", "--target", "cpu", "examples/sparse/spmv_sell8.hdl"]);
    assert_eq!(code, 0, "{err}");
    // Per step, the 8 values in two f32x4 loads, x's lanes assembled, one
    // vector multiply and add per 4 rows.
    assert!(clif.contains("load.f32x4"), "{clif}");
    assert!(clif.matches("insertlane").count() >= 6, "{clif}");
    assert!(clif.lines().any(|l| l.contains("fmul") && !l.contains(".f32 ")) && clif.contains("f32x4"), "{clif}");
    // With the columns' range trusted, the same lanes without the per-lane
    // column compares (an `icmp` per lane and bound).
    let file = SourceFile::new("spmv_sell8.hdl", EXAMPLE);
    let kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
    let program = with_column_range(heddle::cpu::lower(&kernel, "spmv_sell8").unwrap());
    let options = heddle_runtime::cpu::Tuning::default().options(true);
    let trusted = heddle_runtime::cpu::compile_cached_with(&program, &options).unwrap();
    assert!(trusted.relies_on_ranges());
    let t = trusted.clif();
    if std::env::var("SELL_CLIF").is_ok() {
        eprintln!("{t}");
    }
    assert!(t.matches("insertlane").count() >= 6, "{t}");
    assert!(t.matches("icmp slt").count() < clif.matches("icmp slt").count(), "{t}");
}

/// The trusted code with the example's row of 8 sums in registers (and,
/// with `register_arrays` off, in memory): its stores.
fn trusted_clif(source: &str, register_arrays: bool) -> String {
    let file = SourceFile::new("spmv_sell8.hdl", source);
    let kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
    let program = with_column_range(heddle::cpu::lower(&kernel, "spmv_sell8").unwrap());
    let options =
        heddle_codegen_cpu::Options { register_arrays, ..heddle_runtime::cpu::Tuning::default().options(true) };
    heddle_codegen_cpu::clif_text_with(&program, &options).unwrap()
}

#[test]
fn sell8_sums_stay_in_registers_across_a_slice() {
    for ty in ["float", "double"] {
        let src = EXAMPLE.replace("[float]", &format!("[{ty}]"));
        let regs = trusted_clif(&src, true);
        let memory = trusted_clif(&src, false);
        if std::env::var("SELL_CLIF").is_ok() {
            eprintln!("{regs}");
        }
        if std::env::var("SELL_ASM").is_ok() {
            let file = SourceFile::new("spmv_sell8.hdl", &src);
            let kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
            let program = with_column_range(heddle::cpu::lower(&kernel, "spmv_sell8").unwrap());
            let options = heddle_runtime::cpu::Tuning::default().options(true);
            eprintln!("{}", heddle_codegen_cpu::disassembly(&program, &options).unwrap());
        }
        let stores = |c: &str| c.lines().filter(|l| l.trim_start().starts_with("store ")).count();
        let vector_loads =
            |c: &str| c.lines().filter(|l| l.contains("= load.f32x4") || l.contains("= load.f64x2")).count();
        // The 8 sums are stored once per slice, to `out`, a vector per
        // 16 bytes: 2 f32x4 or 4 f64x2; nothing zeroes, updates or reads a
        // workspace in memory, and none is allocated.
        let vectors = if ty == "float" { 2 } else { 4 };
        assert_eq!(stores(&regs), vectors, "{ty}: {regs}");
        assert_eq!(vector_loads(&regs), vectors, "{ty}: only the values are vector loads: {regs}");
        // In memory: the zeroing, the update per step and the read-out too.
        assert_eq!(stores(&memory), 3 * vectors, "{ty}: {memory}");
        assert_eq!(vector_loads(&memory), 3 * vectors, "{ty}: {memory}");
        assert!(
            regs.lines().filter(|l| l.contains(" call ")).count()
                < memory.lines().filter(|l| l.contains(" call ")).count()
        );
    }
}

/// The step of the trusted code's loop over a slice's entries in `asm` (a
/// disassembly): the block that gathers x's lanes (`vinsertps` for f32,
/// `vpinsrq` or `vmovlhps` for f64).
fn gather_block(asm: &str) -> String {
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
    assert_eq!(gathers.len(), 1, "one block gathers: {asm}");
    gathers.into_iter().next().unwrap()
}

#[test]
fn sell8_gathered_lanes_load_in_their_inserts_and_nothing_spills() {
    let file = SourceFile::new("spmv_sell8.hdl", EXAMPLE);
    let f32_kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
    let src = EXAMPLE.replace("[float]", "[double]");
    let file = SourceFile::new("spmv_sell8.hdl", &src);
    let f64_kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
    let base = heddle_runtime::cpu::Tuning::default().options(true);
    let step = |kernel: &heddle_typeck::Kernel, fold: bool| {
        let program = with_column_range(heddle::cpu::lower(kernel, "spmv_sell8").unwrap());
        let options = heddle_codegen_cpu::Options { fold_lane_loads: fold, ..base };
        gather_block(&heddle_codegen_cpu::disassembly(&program, &options).unwrap())
    };
    let count = |b: &str, f: &dyn Fn(&str) -> bool| b.lines().filter(|l| f(l.trim())).count();
    // A memory operand: `(` in the instruction's operands.
    let from_memory = |l: &str, op: &str| l.starts_with(op) && l.contains('(');
    let spills = |b: &str| count(b, &|l| l.contains("(%rsp)"));
    for (ty, kernel) in [("f32", &f32_kernel), ("f64", &f64_kernel)] {
        let folded = step(kernel, true);
        let unfolded = step(kernel, false);
        let (lanes, pairs) = if ty == "f32" { (8, 2) } else { (8, 4) };
        // Every lane is loaded by the instruction that puts it in its vector:
        // lane 0 of each vector by a `vmovss`/`vmovsd` from memory, the others
        // by `vinsertps`/`vpinsrq` from memory; no lane goes through a
        // register of its own, no vector is zeroed first.
        let (first, insert) = if ty == "f32" { ("vmovss", "vinsertps") } else { ("vmovsd", "vpinsrq") };
        assert_eq!(count(&folded, &|l| from_memory(l, first)), pairs, "{ty}: {folded}");
        assert_eq!(count(&folded, &|l| from_memory(l, insert)), lanes - pairs, "{ty}: {folded}");
        assert_eq!(count(&folded, &|l| l.starts_with(insert) && !l.contains('(')), 0, "{ty}: {folded}");
        assert_eq!(count(&folded, &|l| l.starts_with(first) && !l.contains('(')), 0, "{ty}: {folded}");
        assert_eq!(count(&folded, &|l| l.starts_with("vxorp") || l.starts_with("vmovlhps")), 0, "{ty}: {folded}");
        // The values: one vector load each, ahead of x's lanes (folded into
        // the multiply, issued behind the gather, was slower; `simd.rs`).
        assert_eq!(count(&folded, &|l| from_memory(l, "vmovup")), pairs, "{ty}: {folded}");
        // The row of sums and everything the step computes stay in registers.
        assert_eq!(spills(&folded), 0, "{ty}: {folded}");
        // Unfolded (main before): x's lanes loaded one by one, then assembled.
        assert_eq!(count(&unfolded, &|l| from_memory(l, first)), lanes, "{ty}: {unfolded}");
        assert!(folded.lines().count() < unfolded.lines().count(), "{ty}: {folded}\n{unfolded}");
    }
}

#[test]
fn sell8_step_addresses_its_lanes_from_one_scaled_counter() {
    // The step's entries are at `8·k + start` (`let start2 = 8 * k1 + start`):
    // counted as that (`strength_reduction`, `translate::induction`), every
    // lane's load is `base + q·size + lane` in its addressing mode, and the
    // step computes no address: no `lea`, `shl` or `imul`; the counter's
    // add and the jump back are its only instructions besides the lanes'.
    let base = heddle_runtime::cpu::Tuning::default().options(true);
    let is_arithmetic = |l: &str| ["lea", "add", "shl", "imul", "mov "].iter().any(|op| l.starts_with(op));
    for ty in ["float", "double"] {
        let src = EXAMPLE.replace("[float]", &format!("[{ty}]"));
        let file = SourceFile::new("spmv_sell8.hdl", &src);
        let kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
        let program = with_column_range(heddle::cpu::lower(&kernel, "spmv_sell8").unwrap());
        let step = |strength_reduction: bool| {
            let options = heddle_codegen_cpu::Options { strength_reduction, ..base };
            gather_block(&heddle_codegen_cpu::disassembly(&program, &options).unwrap())
        };
        let instructions = |b: &str| -> Vec<String> {
            b.lines()
                .skip(1)
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty() && !l.starts_with("block"))
                .collect()
        };
        let (scaled, plain) = (instructions(&step(true)), instructions(&step(false)));
        if std::env::var("SELL_ASM").is_ok() {
            eprintln!("{ty}: {scaled:#?}\n{plain:#?}");
        }
        // One integer instruction: the counter's step by 8 (an `add`, or a
        // `lea` into the same register). No `shl`, no base per chain, no move.
        let arithmetic: Vec<&String> = scaled.iter().filter(|l| is_arithmetic(l)).collect();
        assert_eq!(arithmetic.len(), 1, "{ty}: {scaled:#?}");
        let step = arithmetic[0];
        let reg = step.rsplit(' ').next().unwrap();
        assert!(
            step.starts_with("addq $0x8, ") || step.starts_with(&format!("leaq 8({reg}), ")),
            "{ty}: the counter steps by 8: {step}"
        );
        // Main's step computed `8·k + start` (`lea`, `shl`), a second
        // chain's base, and its next counter early (moved at the end).
        assert!(plain.iter().filter(|l| is_arithmetic(l)).count() >= 4, "{ty}: {plain:#?}");
        // Lanes: f32 8 `movslq` + 2 values + 8 x lanes + 2 `vmulps` + 2
        // `vaddps`; f64 8 + 4 + 8 + 4 + 4. Then the counter's step and the
        // jump back (the test is in the loop's head).
        let lanes = if ty == "float" { 22 } else { 28 };
        assert_eq!(scaled.len(), lanes + 2, "{ty}: {scaled:#?}");
        assert_eq!(scaled.last().map(|l| l.starts_with("jmp")), Some(true), "{ty}: {scaled:#?}");
    }
}

/// The example with an update that also reads the row of sums at another
/// lane (`acc@(7 - l)`): a gather from the row, which registers cannot
/// serve, so the row stays in memory.
fn mirrored() -> String {
    let src = EXAMPLE.replace(
        "def rowsum = fun(acc, r => zip(acc, r) :>> map(fun(p => p.1 + p.2)));",
        "def rowsum = fun(acc, r => generate(8, fun(l => acc@l + r@l + acc@(7 - l))));",
    );
    assert_ne!(src, EXAMPLE);
    src
}

#[test]
fn a_row_of_sums_read_at_another_lane_stays_in_memory_and_agrees() {
    let src = mirrored();
    // Refused: the row is allocated and stored to in the loop.
    let clif = trusted_clif(&src, true);
    assert_eq!(clif, trusted_clif(&src, false), "the same code as with every array in memory");
    let mut rng = Rng(0x5e11_0004);
    for (rows, cols, lengths) in
        [(7usize, 13usize, &[0usize, 1, 3][..]), (37, 64, &[1, 2, 3, 4, 9]), (64, 100, &[0, 1, 17])]
    {
        let m = csr(&mut rng, rows, cols, lengths);
        let xs: Vec<f64> = (0..cols).map(|j| ((j * 37 % 101) as f64 - 50.0) / 16.0).collect();
        let s = from_csr(rows, cols, &m.0, &m.1, &m.2, 8, 1, 4, None).unwrap();
        // Independently, in f64 in the program's order of operations.
        let mut want = vec![0.0; 8 * s.slices()];
        for sl in 0..s.slices() {
            let mut acc = [0.0f64; 8];
            for k in s.soff[sl] as usize..s.soff[sl + 1] as usize {
                let next: Vec<f64> =
                    (0..8).map(|l| acc[l] + s.val[8 * k + l] * xs[s.col[8 * k + l] as usize] + acc[7 - l]).collect();
                acc.copy_from_slice(&next);
            }
            want[8 * sl..8 * sl + 8].copy_from_slice(&acc);
        }
        let (interp, cpu) = run_source(&src, &s, &xs, "double");
        assert_eq!(interp, s.unpermute(&want), "{rows}x{cols}");
        for y in cpu {
            assert_eq!(y, interp, "{rows}x{cols}");
        }
    }
}

/// Not a test: callgrind's probe of the trusted SELL-8 code (f32, or f64
/// with `SELL_TY=double`; a 20000 × 20000 matrix of 5 random columns per
/// row), `SELL_REPS` runs after one; `SELL_FOLD=0` turns
/// `fold_lane_loads` off, `SELL_SR=0` `strength_reduction`. Instructions per nonzero = (Ir(SELL_REPS=21) −
/// Ir(SELL_REPS=1)) / 20 / nnz:
/// `SELL_REPS=N valgrind --tool=callgrind target/debug/deps/it-… sell::probe --ignored`.
#[test]
#[ignore = "a callgrind probe, not a check: run by hand as its documentation says"]
fn probe() {
    let reps: usize = std::env::var("SELL_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let ty = std::env::var("SELL_TY").unwrap_or_else(|_| "float".into());
    let fold = std::env::var("SELL_FOLD").map_or(true, |v| v != "0");
    let strength_reduction = std::env::var("SELL_SR").map_or(true, |v| v != "0");
    let mut rng = Rng(0x5e11_0003);
    let (n, cols) = (20000, 20000);
    let m = csr(&mut rng, n, cols, &[5]);
    let s = from_csr(n, cols, &m.0, &m.1, &m.2, 8, 1, 4, None).unwrap();
    let src = EXAMPLE.replace("[float]", &format!("[{ty}]"));
    let file = SourceFile::new("spmv_sell8.hdl", &src);
    let kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
    let env = flat_env(&kernel, &s, cols);
    let program = with_column_range(heddle::cpu::lower(&kernel, "sell8").unwrap());
    let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
    let options = heddle_codegen_cpu::Options {
        fold_lane_loads: fold,
        strength_reduction,
        ..heddle_runtime::cpu::Tuning::default().options(true)
    };
    let kernel = heddle_codegen_cpu::compile_with(&program, &options).unwrap();
    let plan = heddle_runtime::cpu::plan(&program, &kernel, &mut launch, 1);
    for _ in 0..reps {
        heddle_runtime::cpu::execute(&program, &kernel, &mut launch, &plan).unwrap();
    }
}

/// Not a test: times the trusted SELL-8 code, one thread, with the row of
/// sums in registers, x's columns loaded lane by lane, the step's loads
/// folded into their uses and its counter scaled (the defaults) against
/// each turned off (`SELL_AB=1`: only the scaled counter against the
/// plain one), interleaved (every other round in the reverse order),
/// `SELL_TIME_REPS` rounds (default
/// 15) of runs of at least 50 ms each; prints medians (and minima) of ns per nonzero.
/// The JIT code is the same in a debug build as in release.
/// `cargo test --test it sell::timing -- --ignored --nocapture`.
#[test]
#[ignore = "a timing probe, not a check: run by hand as its documentation says"]
fn timing() {
    let rounds: usize = std::env::var("SELL_TIME_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(15);
    let mut rng = Rng(0x5e11_0005);
    for (n, d) in [(5000usize, 4usize), (100_000, 10), (1_000_000, 5)] {
        // `d` random columns per row (duplicates merged), values as `csr`'s.
        let mut m = (vec![0usize], Vec::new(), Vec::new());
        for _ in 0..n {
            let mut row: Vec<usize> = (0..d).map(|_| rng.below(n as u64) as usize).collect();
            row.sort();
            row.dedup();
            for j in row {
                m.1.push(j);
                m.2.push((rng.below(4095) as f64 - 2047.0) / 64.0);
            }
            m.0.push(m.1.len());
        }
        let s = from_csr(n, n, &m.0, &m.1, &m.2, 8, 1, 4, None).unwrap();
        for ty in ["float", "double"] {
            let src = EXAMPLE.replace("[float]", &format!("[{ty}]"));
            let file = SourceFile::new("spmv_sell8.hdl", &src);
            let kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
            let env = flat_env(&kernel, &s, n);
            let program = with_column_range(heddle::cpu::lower(&kernel, "sell8").unwrap());
            let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
            let base = heddle_runtime::cpu::Tuning::default().options(true);
            let variants = [
                ("regs+scalar cols", base),
                ("counter unscaled", heddle_codegen_cpu::Options { strength_reduction: false, ..base }),
                ("loads unfolded", heddle_codegen_cpu::Options { fold_lane_loads: false, ..base }),
                ("memory row", heddle_codegen_cpu::Options { register_arrays: false, ..base }),
                ("vector cols", heddle_codegen_cpu::Options { scalar_index_lanes: false, ..base }),
                (
                    "neither (main)",
                    heddle_codegen_cpu::Options { register_arrays: false, scalar_index_lanes: false, ..base },
                ),
            ];
            // `SELL_AB=1`: the defaults against the counter unscaled only.
            let variants =
                &variants[..if std::env::var("SELL_AB").is_ok_and(|v| v == "1") { 2 } else { variants.len() }];
            let kernels: Vec<_> =
                variants.iter().map(|(_, o)| heddle_codegen_cpu::compile_with(&program, o).unwrap()).collect();
            let plan = heddle_runtime::cpu::plan(&program, &kernels[0], &mut launch, 1);
            let nnz = m.1.len() as f64;
            let mut times = vec![Vec::new(); kernels.len()];
            for round in 0..rounds {
                // Every other round in the reverse order, so that no variant
                // always runs first (after the previous cell or round).
                let order: Vec<usize> =
                    if round % 2 == 0 { (0..kernels.len()).collect() } else { (0..kernels.len()).rev().collect() };
                for k in order {
                    let kern = &kernels[k];
                    let t0 = std::time::Instant::now();
                    let mut runs = 0;
                    while t0.elapsed().as_secs_f64() < 0.05 {
                        heddle_runtime::cpu::execute(&program, kern, &mut launch, &plan).unwrap();
                        runs += 1;
                    }
                    times[k].push(t0.elapsed().as_secs_f64() / runs as f64 / nnz * 1e9);
                }
            }
            for ((name, _), mut t) in variants.iter().zip(times) {
                t.sort_by(f64::total_cmp);
                eprintln!(
                    "{n}x{n} d{d} {ty:6} {name:18} {:.3} ns/nnz (median of {rounds}; min {:.3})",
                    t[t.len() / 2],
                    t[0]
                );
            }
        }
    }
}

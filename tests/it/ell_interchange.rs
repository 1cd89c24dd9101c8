//! SpMV over MLIR's ELL encoding (examples/sparse/spmv_ell.hdl: per slice,
//! per row, 0 or 1 entries; transposed; per row the sum over the slices)
//! runs with the slices outside and the rows inside, in blocks
//! (`heddle_ir::loops::interchange`, ARCHITECTURE.md "Loop interchange"), so
//! that a slice's positions, coordinates and values are read in order
//! instead of one slice-sized stride per slice and row. Each row still adds
//! its slices in storage order, so the CPU backend's result equals the
//! interpreter's and a plain Rust loop's bit for bit (`f32` and `f64`; empty
//! rows, rows as long as the slice count, a single row, row counts around
//! the block size; 1–4 threads).

use crate::common;

use common::Rng;
use heddle::source::SourceFile;
use heddle_ir::loops::{LoopProgram, ROW_BLOCK, Schedule, Stmt, interchange, interchanged_program};
use heddle_typeck::Kernel;
use std::path::Path;

/// `examples/sparse/spmv_ell.hdl` with `slices` slices, over `f64` or `f32`.
fn ell_source(slices: usize, f64: bool) -> String {
    let src = std::fs::read_to_string(common::root().join("examples/sparse/spmv_ell.hdl")).unwrap();
    let src = src.replace("c * 3 * i :", &format!("c * {slices} * i :"));
    if f64 { src.replace("xf32", "xf64").replace("[float]", "[double]") } else { src }
}

fn kernel_of(dir: &Path, name: &str, src: &str) -> Kernel {
    let path = dir.join(format!("{name}.hdl"));
    std::fs::write(&path, src).unwrap();
    let file = SourceFile::read(path.to_str().unwrap()).unwrap();
    heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1
}

/// The top-level parallel loop's variable and body.
fn parallel_loop(p: &LoopProgram) -> (&heddle_ir::Name, &[Stmt]) {
    p.body
        .iter()
        .find_map(|s| match s {
            Stmt::For { var, body, schedule: Schedule::Parallel, .. } => Some((var, &body[..])),
            _ => None,
        })
        .expect("a parallel loop")
}

/// A matrix as rows of `(column, value)`, columns increasing.
type Rows = Vec<Vec<(usize, f64)>>;

/// `rows × cols` with 0 to `slices` entries per row (every count, the
/// extremes included, when there are enough rows), values with 20 random
/// bits (`f32`-exact).
fn random_rows(rng: &mut Rng, rows: usize, cols: usize, slices: usize) -> Rows {
    (0..rows)
        .map(|i| {
            let want = if i <= slices { i } else { rng.below(slices as u64 + 1) as usize }.min(slices).min(cols);
            let mut cs: Vec<usize> = Vec::new();
            while cs.len() < want {
                let c = rng.below(cols as u64) as usize;
                if !cs.contains(&c) {
                    cs.push(c);
                }
            }
            cs.sort_unstable();
            cs.into_iter().map(|c| (c, value(rng))).collect()
        })
        .collect()
}

/// A value with 20 random significant bits, both signs, magnitudes 2⁻⁸ to 2⁸.
fn value(rng: &mut Rng) -> f64 {
    let m = 1.0 + rng.below(1 << 20) as f64 / (1u64 << 20) as f64;
    let s = if rng.below(2) == 0 { -1.0 } else { 1.0 };
    s * m * 2f64.powi(rng.below(17) as i32 - 8)
}

fn mtx(a: &Rows, cols: usize) -> String {
    let entries: Vec<String> = a
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.iter().map(move |(j, v)| format!("{} {} {v:e}", i + 1, j + 1)))
        .collect();
    format!(
        "%%MatrixMarket matrix coordinate real general\n{} {cols} {}\n{}\n",
        a.len(),
        entries.len(),
        entries.join("\n")
    )
}

/// The kernel's sum, independently: per row, over its entries in column
/// order (the k-th entry is in slice k), `acc + (0 + v · x)` in the
/// element type.
fn spmv(a: &Rows, x: &[f64], f64: bool) -> Vec<f64> {
    a.iter()
        .map(|r| {
            if f64 {
                r.iter().fold(0.0f64, |acc, &(j, v)| acc + (0.0 + v * x[j]))
            } else {
                r.iter().fold(0.0f32, |acc, &(j, v)| acc + (0.0 + v as f32 * x[j] as f32)) as f64
            }
        })
        .collect()
}

/// Runs `kernel` on `a` and `x`: the interpreter, the loop-IR interpreter on
/// the interchanged program, and the CPU backend on 1–4 threads, each
/// checked bit for bit against the plain loop.
#[allow(clippy::too_many_arguments)]
fn check(kernel: &Kernel, name: &str, dir: &Path, a: &Rows, cols: usize, x: &[f64], f64: bool, case: &str) {
    let path = dir.join("a.mtx");
    std::fs::write(&path, mtx(a, cols)).unwrap();
    let (nats, mut loaded) = heddle_runtime::io::bind::tensor_inputs(kernel, "A", &path).unwrap();
    let xs = dir.join("x.json");
    std::fs::write(&xs, serde_json::to_string(x).unwrap()).unwrap();
    loaded.push(("xs".to_string(), heddle_runtime::io::read_input(&xs).unwrap()));
    let env = heddle_runtime::io::bind_inputs(kernel, &nats, loaded).unwrap();
    let want = common::float_bits(&spmv(a, x, f64));

    crate::dia_interchange::assert_interchanged_runs_bit_exact(kernel, name, &env, &want, case);
}

#[test]
fn ell_spmv_is_bit_exact_on_every_shape() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x00e1_1511_1ce5);
    let b = ROW_BLOCK as usize;
    // (rows, cols, slices): a single row, rows around the block size, one
    // slice, more slices than columns allow (rows cut at the column count).
    let shapes: Vec<(usize, usize, usize)> = vec![
        (1, 1, 1),
        (1, 7, 3),
        (4, 6, 3),
        (9, 4, 5),
        (17, 30, 1),
        (b - 1, 40, 4),
        (b, 13, 3),
        (b + 1, 9, 6),
        (2 * b + 5, 50, 5),
        (3 * b + 7, 3, 2),
    ];
    for f64 in [false, true] {
        let ty = if f64 { "f64" } else { "f32" };
        for (case, &(rows, cols, slices)) in shapes.iter().enumerate() {
            let name = format!("ell{slices}_{ty}");
            let kernel = kernel_of(dir.path(), &name, &ell_source(slices, f64));
            let a = random_rows(&mut rng, rows, cols, slices);
            let x: Vec<f64> = (0..cols).map(|_| value(&mut rng)).collect();
            let case = format!("case {case} {ty}: {rows}x{cols}, {slices} slices");
            check(&kernel, &name, dir.path(), &a, cols, &x, f64, &case);
        }
    }
}

/// The slices are outside, the rows inside, with one accumulator per row in
/// `out` (zeroed per block, then per slice `out[i] = out[i] + the row's
/// entries in that slice`): no slice-by-row walk comes back unnoticed.
#[test]
fn ell_spmv_runs_slices_outside_rows_inside() {
    let kernel = kernel_of(tempfile::tempdir().unwrap().path(), "spmv_ell", &ell_source(3, false));
    let program = heddle::cpu::lower(&kernel, "spmv_ell").unwrap();
    let (var, body) = parallel_loop(&program);
    let x = interchange(&program, var, body).expect("ELL's sum over slices is interchanged");
    assert!(!x.split, "ELL has no guard to split the rows by");
    insta::assert_snapshot!("spmv_ell_interchanged", interchanged_program(&program).unwrap().to_string());
}

/// A `reduceSeq` over the slices keeps its order: the interchange changes
/// only the memory order, each row still adds its slices first to last from
/// its initial value (bit for bit the sequential sum).
#[test]
fn ell_spmv_with_reduce_seq_keeps_its_order() {
    let dir = tempfile::tempdir().unwrap();
    let src = ell_source(4, true).replace(":>> map(reduce(+, 0))", ":>> map(reduceSeq(+, 0))");
    assert!(src.contains("reduceSeq"));
    let kernel = kernel_of(dir.path(), "ell_seq", &src);
    let mut rng = Rng(0x5e9_0de5);
    let cols = 11;
    let a = random_rows(&mut rng, 2 * ROW_BLOCK as usize + 3, cols, 4);
    let x: Vec<f64> = (0..cols).map(|_| value(&mut rng)).collect();
    check(&kernel, "ell_seq", dir.path(), &a, cols, &x, true, "reduceSeq over 4 slices");
}

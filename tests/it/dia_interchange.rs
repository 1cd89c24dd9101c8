//! The interchange of a row sum with its row-invariant inner loop
//! (`heddle_ir::loops::interchange`, ARCHITECTURE.md "Loop interchange"):
//! DIA SpMV (examples/sparse/spmv_dia.hdl) runs diagonal by diagonal over
//! blocks of rows, its rows' range split where the diagonal stays inside the
//! matrix. Each row still adds its diagonals in storage order, so the CPU
//! backend's result equals the interpreter's and a plain Rust loop's bit for
//! bit, on matrices whose diagonals leave at both ends, a single diagonal,
//! no rows, row counts around the block size and the vector width, and 1–4
//! threads (chunks that cut blocks anywhere). CSR, whose inner range depends
//! on the row, is left alone.

use crate::common;

use common::Rng;
use heddle::source::SourceFile;
use heddle_ir::loops::{ROW_BLOCK, Stmt, interchange, interchanged_program};
use heddle_runtime::cpu::Parallelism;
use heddle_typeck::Kernel;
use serde_json::json;
use std::path::Path;

fn load(rel: &str) -> Kernel {
    let path = common::root().join(rel);
    let file = SourceFile::read(path.to_str().unwrap()).unwrap();
    heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1
}

/// The top-level parallel loop's variable and body.
fn parallel_loop(p: &heddle_ir::loops::LoopProgram) -> (&heddle_ir::Name, &[Stmt]) {
    p.body
        .iter()
        .find_map(|s| match s {
            Stmt::For { var, body, schedule: heddle_ir::loops::Schedule::Parallel, .. } => Some((var, &body[..])),
            _ => None,
        })
        .expect("a parallel loop")
}

/// A DIA matrix: `rows × cols`, the given diagonal offsets, random values
/// (multiples of 1/4: no two rounding paths agree by chance only on exact
/// data, so values carry 20 random bits), junk in the padding.
struct Dia {
    rows: usize,
    cols: usize,
    offsets: Vec<i64>,
    values: Vec<f64>,
}

impl Dia {
    fn random(rng: &mut Rng, rows: usize, cols: usize, offsets: Vec<i64>) -> Dia {
        let mut values = Vec::new();
        for &d in &offsets {
            for i in 0..rows {
                let j = i as i64 + d;
                values.push(if (0..cols as i64).contains(&j) { value(rng) } else { 1.0e6 });
            }
        }
        Dia { rows, cols, offsets, values }
    }

    fn storage(&self) -> serde_json::Value {
        json!({
            "encoding": "#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, i : dense) }>",
            "dim_sizes": [self.rows, self.cols],
            "positions": [[0, self.offsets.len()], null],
            "coordinates": [self.offsets, null],
            "values": self.values,
        })
    }

    /// The kernel's sum, independently: per row, over the diagonals in
    /// storage order, `acc + v · x` inside the matrix and `acc + 0` outside.
    fn spmv(&self, x: &[f64]) -> Vec<f64> {
        (0..self.rows)
            .map(|i| {
                let mut acc = 0.0f64;
                for (k, &d) in self.offsets.iter().enumerate() {
                    let j = i as i64 + d;
                    acc += if (0..self.cols as i64).contains(&j) {
                        self.values[k * self.rows + i] * x[j as usize]
                    } else {
                        0.0
                    };
                }
                acc
            })
            .collect()
    }
}

/// A value with 20 random significant bits, both signs, magnitudes 2⁻⁸ to 2⁸.
fn value(rng: &mut Rng) -> f64 {
    let m = 1.0 + rng.below(1 << 20) as f64 / (1u64 << 20) as f64;
    let s = if rng.below(2) == 0 { -1.0 } else { 1.0 };
    s * m * 2f64.powi(rng.below(17) as i32 - 8)
}

/// Runs spmv_dia on `a` and `x`: the interpreter, the loop-IR interpreter on
/// the interchanged program, and the CPU backend on 1–4 threads, each
/// checked bit for bit against the plain loop.
fn check(kernel: &Kernel, dir: &Path, a: &Dia, x: &[f64], case: &str) {
    let path = dir.join("a.json");
    std::fs::write(&path, a.storage().to_string()).unwrap();
    let (nats, mut loaded) = heddle_runtime::io::bind::tensor_inputs(kernel, "A", &path).unwrap();
    let xs = dir.join("x.json");
    std::fs::write(&xs, serde_json::to_string(x).unwrap()).unwrap();
    loaded.push(("xs".to_string(), heddle_runtime::io::read_input(&xs).unwrap()));
    let env = heddle_runtime::io::bind_inputs(kernel, &nats, loaded).unwrap();
    let want = common::float_bits(&a.spmv(x));

    assert_interchanged_runs_bit_exact(kernel, "spmv_dia", &env, &want, case);
}

/// `kernel` on `env` gives `want`, bit for bit, on the interpreter, on the
/// loop-IR interpreter running its lowered program interchanged (which must
/// be), and on the CPU backend on 1–4 threads. (Shared with the ELL tests.)
pub(crate) fn assert_interchanged_runs_bit_exact(
    kernel: &Kernel,
    name: &str,
    env: &heddle_runtime::interp::Env,
    want: &[u64],
    case: &str,
) {
    let interp = common::float_array(&heddle_runtime::interp::run_kernel(kernel, env).unwrap());
    assert_eq!(common::float_bits(&interp), want, "interpreter, {case}");

    let program = heddle::cpu::lower(kernel, name).unwrap();
    let blocked = interchanged_program(&program).unwrap_or_else(|| panic!("{name} is not interchanged"));
    let mut launch = heddle_runtime::launch::prepare(&blocked, env).unwrap();
    heddle_runtime::loops_interp::run(&blocked, &mut launch).unwrap_or_else(|e| panic!("{e:?}, {case}"));
    let looped =
        common::float_array(&heddle_runtime::launch::output_value(&blocked, &launch, &kernel.body.ty, env).unwrap());
    assert_eq!(common::float_bits(&looped), want, "loop-IR interpreter on the interchanged program, {case}");

    for threads in 1..=4 {
        let got = common::float_array(&heddle::cpu::run(kernel, &program, env, Parallelism::always(threads)).unwrap());
        assert_eq!(common::float_bits(&got), want, "CPU on {threads} threads, {case}");
    }
}

#[test]
fn dia_spmv_is_bit_exact_on_every_shape() {
    let kernel = load("examples/sparse/spmv_dia.hdl");
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xd1a6_0a15);
    let b = ROW_BLOCK as usize;
    // (rows, cols, offsets): leaving at both ends, one diagonal, none, far
    // outside, wide and tall, rows around the block size and vector width.
    let shapes: Vec<(usize, usize, Vec<i64>)> = vec![
        (0, 0, vec![]),
        (0, 5, vec![]),
        (1, 1, vec![0]),
        (3, 3, vec![-2, 0, 2]),
        (5, 5, vec![1]),
        (7, 7, vec![-1]),
        (9, 4, vec![-6, -1, 0, 3]),
        (4, 9, vec![-3, 0, 5, 8]),
        (17, 17, vec![-16, -8, 0, 8, 16]),
        (b - 1, b - 1, vec![-2, -1, 0, 1, 2]),
        (b, b, vec![-3, 0, 3]),
        (b + 1, b + 3, vec![-(b as i64), -5, 0, 7, b as i64 + 2]),
        (2 * b + 5, 2 * b + 5, vec![-(b as i64) - 100, -1, 0, 1, b as i64 + 100]),
        (3 * b + 7, b / 2, vec![-2 * b as i64, -(b as i64) / 2 - 3, -3, 0, 4, b as i64 / 2 - 10]),
    ];
    for (case, (rows, cols, offsets)) in shapes.into_iter().enumerate() {
        let a = Dia::random(&mut rng, rows, cols, offsets.clone());
        let x: Vec<f64> = (0..cols).map(|_| value(&mut rng)).collect();
        check(&kernel, dir.path(), &a, &x, &format!("case {case}: {rows}x{cols}, offsets {offsets:?}"));
    }
}

/// The pass applies to DIA and splits its rows by the diagonal's edge; the
/// interchanged loops are the snapshot's (`out` zeroed per block, then per
/// diagonal: the edge rows with their branch, the middle rows without).
#[test]
fn dia_spmv_is_interchanged_and_split() {
    let kernel = load("examples/sparse/spmv_dia.hdl");
    let program = heddle::cpu::lower(&kernel, "spmv_dia").unwrap();
    let (var, body) = parallel_loop(&program);
    let x = interchange(&program, var, body).expect("DIA's row sum is interchanged");
    assert!(x.split, "the diagonal's edge splits the rows");
    insta::assert_snapshot!("spmv_dia_interchanged", interchanged_program(&program).unwrap().to_string());
}

/// CSR's inner range depends on the row (`A_pos1[i] .. A_pos1[i + 1]`):
/// not interchanged. Nor is a dense row-major matrix-vector product, whose
/// loads are strided by the row (no gain).
#[test]
fn row_dependent_or_strided_inner_loops_are_not_interchanged() {
    for (file, name) in
        [("examples/sparse/spmv_csr.hdl", "spmv_csr"), ("examples/csr_packed_spmv.hdl", "csr_packed_spmv")]
    {
        let kernel = load(file);
        let program = heddle::cpu::lower(&kernel, name).unwrap();
        let (var, body) = parallel_loop(&program);
        assert!(interchange(&program, var, body).is_none(), "{file}");
    }
    let dir = tempfile::tempdir().unwrap();
    // A dense gemv (only strided loads), and a row sum of `a + aᵀ` (one
    // contiguous load, one strided: still refused).
    let sources = [
        (
            "gemv",
            "nFun(n => nFun(m => fun(a: [[double]_m]_n => fun(x: [double]_m =>\n  a :>> map(fun(r => zip(r, x) :>> map(fun(p => p.1 * p.2)) :>> reduce(+, 0)))))))\n",
        ),
        (
            "symsum",
            "nFun(n => fun(a: [[double]_n]_n =>\n  generate(n, fun(i => generate(n, fun(k => a@i@k + a@k@i)) :>> reduce(+, 0)))))\n",
        ),
    ];
    for (name, src) in sources {
        let path = dir.path().join(format!("{name}.hdl"));
        std::fs::write(&path, src).unwrap();
        let file = SourceFile::read(path.to_str().unwrap()).unwrap();
        let kernel = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1;
        let program = heddle::cpu::lower(&kernel, name).unwrap();
        let (var, body) = parallel_loop(&program);
        assert!(interchange(&program, var, body).is_none(), "{name}:\n{program}");
    }
}

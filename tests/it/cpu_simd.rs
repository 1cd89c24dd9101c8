//! The CPU backend's vector lanes (`codegen-cpu/src/translate/simd.rs`)
//! against the interpreter, end to end from heddle source: an innermost loop
//! runs `16 bytes / element size` iterations at a time, then the rest one at
//! a time, so every row length below leaves a different remainder (0, 1, 3,
//! 4, 5, 7, 8, 9, 17 and 1000 elements, `f32` in 4 lanes, `f64` in 2, `i32`
//! in 4).
//!
//! - A *map* loop (element-wise rows, a row update `acc[j] += v · d[j]`)
//!   computes each element with the same operations in the same order in its
//!   lane as the scalar loop: results equal the interpreter bit for bit.
//! - A `reduce` is reassociated (partial sums in lanes, combined at the end):
//!   a float result is within the rounding bound `2 n ε Σ|aᵢ bᵢ|` of the
//!   interpreter's, an integer one exact (wrapping addition is associative).
//! - `reduceSeq` is never vectorised: bit for bit.
//!
//! The last test reads the Cranelift IR (`heddle compile --target cpu`) and
//! fails if the loops were not given vector types at all.

use crate::common;

use common::Rng;
use heddle::source::SourceFile;
use heddle_runtime::cpu::Parallelism;
use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;
use serde_json::json;

/// Row lengths: below, at and past one vector step, and long.
const LENGTHS: [usize; 10] = [0, 1, 3, 4, 5, 7, 8, 9, 17, 1000];

/// Rows per input matrix.
const ROWS: usize = 3;

/// The element types and their unit roundoff (0 for integers: exact).
const TYPES: [(&str, f64); 3] = [("float", f32::EPSILON as f64 / 2.0), ("double", f64::EPSILON / 2.0), ("int", 0.0)];

/// Row-wise dot products of `a` and `b` with `pattern` (`reduce` or `reduceSeq`).
fn row_dots(pattern: &str, ty: &str) -> String {
    format!(
        "nFun(n => nFun(m => fun(a: [[{ty}]_m]_n => fun(b: [[{ty}]_m]_n =>
           zip(a, b) :>> map(fun(r => zip(r.1, r.2) :>> map(fun(p => p.1 * p.2)) :>> {pattern}(+, 0)))))))"
    )
}

/// Element-wise rows: `a · b + a − b`.
fn row_map(ty: &str) -> String {
    format!(
        "nFun(n => nFun(m => fun(a: [[{ty}]_m]_n => fun(b: [[{ty}]_m]_n =>
           zip(a, b) :>> map(fun(r => zip(r.1, r.2) :>> map(fun(p => p.1 * p.2 + p.1 - p.2))))))))"
    )
}

/// MTTKRP's inner loops: per row `i` of `a`, `Σ_l a(i, l) · b(l, :)`, the
/// sum of scaled rows of `b` in an array accumulator (updated in place, one
/// element per `j` of `generate`, whose loop variable is converted to `int`).
fn row_updates(ty: &str) -> String {
    format!(
        "def rowsum = fun(acc, row => zip(acc, row) :>> map(fun(p => p.1 + p.2)));
         nFun(n => nFun(m => fun(a: [[{ty}]_n]_n => fun(b: [[{ty}]_m]_n =>
           a :>> map(fun(ai => zip(ai, b)
             :>> map(fun(p => generate(m, fun(j => p.1 * p.2@j))))
             :>> reduce(rowsum, generate(m, fun(j => 0)))))))))"
    )
}

fn check(src: &str) -> Kernel {
    let file = SourceFile::new("cpu_simd.hdl", src);
    heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1
}

/// An `rows × len` matrix of values that make rounding visible (both signs,
/// magnitudes 2⁻¹⁰ to 2¹⁰, 12 significant bits) or, for `int`, small
/// integers whose products and sums of 1000 stay in range.
fn matrix(rng: &mut Rng, rows: usize, len: usize, ty: &str) -> serde_json::Value {
    let value = |rng: &mut Rng| -> serde_json::Value {
        if ty == "int" {
            json!(rng.below(201) as i64 - 100)
        } else {
            let scale = 2f64.powi(rng.below(21) as i32 - 10);
            let sign = if rng.below(2) == 0 { -1.0 } else { 1.0 };
            json!(sign * scale * (1.0 + rng.below(1 << 11) as f64 / (1 << 11) as f64))
        }
    };
    json!((0..rows).map(|_| (0..len).map(|_| value(rng)).collect::<Vec<_>>()).collect::<Vec<_>>())
}

fn number(v: &Value) -> f64 {
    match v {
        Value::Float(x) => *x,
        Value::Int(x) => *x as f64,
        other => panic!("expected a number, got {other}"),
    }
}

fn items(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items.to_vec(),
        other => panic!("expected an array, got {other}"),
    }
}

/// The interpreter's result and the CPU backend's on 1 and 2 threads.
fn results(src: &str, a: serde_json::Value, b: serde_json::Value) -> (Value, Vec<Value>) {
    let kernel = check(src);
    let env = bind_inputs(&kernel, &[], vec![("a".into(), Loaded::Json(a)), ("b".into(), Loaded::Json(b))])
        .unwrap_or_else(|e| panic!("{e}"));
    let program = heddle::cpu::lower(&kernel, "cpu_simd").unwrap();
    let interp = heddle_runtime::interp::run_kernel(&kernel, &env).unwrap();
    let cpu = [1, 2].map(|t| heddle::cpu::run(&kernel, &program, &env, Parallelism::always(t)).unwrap());
    (interp, cpu.to_vec())
}

/// The flat numbers of a JSON matrix.
fn flat(m: &serde_json::Value) -> Vec<Vec<f64>> {
    m.as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()).collect()
}

/// Rounds to the kernel's element type (the inputs are bound in it).
fn in_type(x: f64, ty: &str) -> f64 {
    if ty == "float" { x as f32 as f64 } else { x }
}

#[test]
fn map_loops_in_lanes_equal_the_interpreter_exactly() {
    let mut rng = Rng(0x51_3d00_0001);
    for (ty, _) in TYPES {
        for len in LENGTHS {
            let (a, b) = (matrix(&mut rng, ROWS, len, ty), matrix(&mut rng, ROWS, len, ty));
            let (want, got) = results(&row_map(ty), a, b);
            assert_eq!(items(&want).len(), ROWS);
            for cpu in got {
                assert_eq!(format!("{cpu:?}"), format!("{want:?}"), "{ty} rows of {len}");
            }
        }
    }
}

#[test]
fn row_updates_in_lanes_equal_the_interpreter_exactly() {
    let mut rng = Rng(0x51_3d00_0002);
    for (ty, _) in TYPES {
        for len in LENGTHS {
            // `a` is n × n with n = ROWS; `b` is n × len.
            let (a, b) = (matrix(&mut rng, ROWS, ROWS, ty), matrix(&mut rng, ROWS, len, ty));
            let (want, got) = results(&row_updates(ty), a, b);
            let rows = items(&want);
            assert_eq!(rows.len(), ROWS);
            assert!(rows.iter().all(|r| items(r).len() == len), "{ty} rows of {len}: {want:?}");
            for cpu in got {
                assert_eq!(format!("{cpu:?}"), format!("{want:?}"), "{ty} rows of {len}");
            }
        }
    }
}

#[test]
fn reduce_in_lanes_agrees_within_rounding() {
    let mut rng = Rng(0x51_3d00_0003);
    for (ty, eps) in TYPES {
        for len in LENGTHS {
            let (a, b) = (matrix(&mut rng, ROWS, len, ty), matrix(&mut rng, ROWS, len, ty));
            let products: Vec<Vec<f64>> = flat(&a)
                .iter()
                .zip(flat(&b))
                .map(|(x, y)| x.iter().zip(&y).map(|(p, q)| in_type(*p, ty) * in_type(*q, ty)).collect())
                .collect();
            let (want, got) = results(&row_dots("reduce", ty), a, b);
            let want = items(&want);
            assert_eq!(want.len(), ROWS);
            for cpu in got {
                for (r, (g, w)) in items(&cpu).iter().zip(&want).enumerate() {
                    let (g, w) = (number(g), number(w));
                    let bound = 2.0 * len as f64 * eps * products[r].iter().map(|p| p.abs()).sum::<f64>();
                    assert!(
                        (g - w).abs() <= bound,
                        "{ty}, length {len}, row {r}: cpu {g}, interpreter {w}, bound {bound}"
                    );
                    if eps == 0.0 {
                        // Integers: exact, and the exact sum of products.
                        assert_eq!(g, products[r].iter().sum::<f64>(), "int row {r} of length {len}");
                    }
                }
            }
        }
    }
}

#[test]
fn reduce_seq_is_bit_exact_at_every_length() {
    let mut rng = Rng(0x51_3d00_0004);
    for (ty, _) in TYPES {
        for len in LENGTHS {
            let (a, b) = (matrix(&mut rng, ROWS, len, ty), matrix(&mut rng, ROWS, len, ty));
            let (want, got) = results(&row_dots("reduceSeq", ty), a, b);
            for cpu in got {
                assert_eq!(format!("{cpu:?}"), format!("{want:?}"), "{ty} reduceSeq over rows of {len}");
            }
        }
    }
}

/// How many vector loads of `vector` (e.g. `f32x4`) the kernel's Cranelift IR has.
fn vector_loads(src: &str, vector: &str) -> usize {
    let program = heddle::cpu::lower(&check(src), "cpu_simd").unwrap();
    let clif = heddle::cpu::clif(&program).unwrap();
    clif.matches(&format!("load.{vector}")).count()
}

#[test]
fn the_loops_are_given_vector_types() {
    for (ty, vector) in [("float", "f32x4"), ("double", "f64x2"), ("int", "i32x4")] {
        // Two chains of vector partial sums, each loading a and b.
        assert!(vector_loads(&row_dots("reduce", ty), vector) >= 4, "{ty} reduce");
        assert_eq!(vector_loads(&row_dots("reduceSeq", ty), vector), 0, "{ty} reduceSeq must stay scalar");
        assert!(vector_loads(&row_map(ty), vector) >= 2, "{ty} map");
        // The row update reads the accumulator and b's row in lanes (its
        // loop variable is narrowed to `int` by `generate`).
        assert!(vector_loads(&row_updates(ty), vector) >= 2, "{ty} row update");
    }
    // MTTKRP's kernel as shipped: the fibre's row update (acc_row1 and D)
    // and the scaling by C's row (C, acc_row1 and acc_row) in lanes.
    let mttkrp = std::fs::read_to_string(common::root().join("examples/sparse/mttkrp_csf.hdl")).unwrap();
    assert!(vector_loads(&mttkrp, "f32x4") >= 5, "mttkrp_csf");
}

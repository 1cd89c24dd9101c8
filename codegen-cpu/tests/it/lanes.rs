//! Map loops in vector lanes (`src/translate/simd.rs`) with checks: the
//! main loop takes two vector steps per iteration, then one more step when a
//! whole vector is left, then one element at a time. Whichever of those an
//! element lands in, a failing check reports what a sequential run reports,
//! and exactly the elements before it have been stored.

use crate::common;

use common::*;
use heddle_codegen_cpu::{ArgValue, Fault, Options, compile_with, disassembly};
use heddle_ir::loops::{BinOp, Expr, LoopProgram, Schedule, Stmt};

/// `for j in 0 .. n { let x = xs[j]; check x < 100 (#0); check x < 50 (#1); out[j] = x * 2 }` over `f32`.
fn checked_double() -> LoopProgram {
    let body = vec![for_(
        "j",
        i(0),
        v("n"),
        Schedule::Seq,
        vec![
            let_("x", F32, load("xs", v("j"), 0)),
            Stmt::Check { cond: bin(BinOp::Lt, v("x"), Expr::Float(100.0, F32)), id: 0 },
            Stmt::Check { cond: bin(BinOp::Lt, v("x"), Expr::Float(50.0, F32)), id: 1 },
            store("out", v("j"), 0, bin(BinOp::Mul, v("x"), Expr::Float(2.0, F32))),
        ],
    )];
    program(
        "checked_double",
        vec![arg("n", heddle_ir::loops::ArgKind::Nat), input("xs", &[F32], "n"), output("out", &[F32], "n")],
        body,
        2,
    )
}

const UNTOUCHED: f32 = -1.0;

fn run(xs: &mut [f32], out: &mut [f32]) -> Result<(), Fault> {
    let k = compile_with(&checked_double(), &Options::default()).unwrap();
    call(&k, &[ArgValue::Nat(xs.len() as i64), buf(xs), buf(out)])
}

#[test]
fn the_map_loop_is_vectorised() {
    let asm = disassembly(&checked_double(), &Options::default()).unwrap();
    assert!(asm.contains("mulps"), "four lanes multiplied at once:\n{asm}");
}

#[test]
fn map_lanes_store_every_element_at_every_length() {
    for n in [0usize, 1, 3, 4, 5, 7, 8, 9, 11, 12, 13, 15, 16, 17, 20, 23, 33, 1000] {
        let mut xs: Vec<f32> = (0..n).map(|k| (k % 45) as f32 * 0.75 - 3.0).collect();
        let mut out = vec![UNTOUCHED; n];
        run(&mut xs, &mut out).unwrap_or_else(|f| panic!("n = {n}: {f:?}"));
        let want: Vec<f32> = xs.iter().map(|x| x * 2.0).collect();
        assert_eq!(out, want, "n = {n}");
    }
}

#[test]
fn a_failing_check_in_any_lane_stops_where_a_sequential_run_stops() {
    // Element p fails check #1 and element p + 1 check #0 (in the same
    // vector step for most p): a sequential run stops at p with #1, having
    // stored elements 0 .. p.
    let n = 21;
    for p in 0..n {
        let mut xs: Vec<f32> = (0..n).map(|k| k as f32).collect();
        xs[p] = 70.0;
        if p + 1 < n {
            xs[p + 1] = 200.0;
        }
        let mut out = vec![UNTOUCHED; n];
        assert_eq!(run(&mut xs, &mut out), Err(Fault::Check(1)), "p = {p}");
        for (j, got) in out.iter().enumerate() {
            let want = if j < p { xs[j] * 2.0 } else { UNTOUCHED };
            assert_eq!(*got, want, "p = {p}, element {j}");
        }
    }
}

//! Straight-line lane groups as vectors (`src/translate/slp.rs`) on
//! hand-written loop programs: a name equal in every lane is broadcast, and
//! lanes gathered through an index stay scalar. Results against the same
//! computation done here.

use crate::common;

use common::*;
use heddle_codegen_cpu::{ArgValue, Options, clif_text, compile, compile_with, disassembly};
use heddle_ir::loops::{ArgKind, BinOp, Expr, LoopProgram, Schedule, Stmt};

/// `parallel for k in 0 .. n { let x_c = xs[at(c)]; out[4k + c] = x_c * s + x_c }`, c = 0 .. 3.
fn lanes(name: &str, at: impl Fn(i64) -> Expr, extra: Vec<heddle_ir::loops::Arg>) -> LoopProgram {
    let mut body: Vec<Stmt> = (0..4).map(|c| let_(&format!("x{c}"), F32, load("xs", at(c), 0))).collect();
    for c in 0..4 {
        let x = v(&format!("x{c}"));
        body.push(store("out", lane(c), 0, bin(BinOp::Add, bin(BinOp::Mul, x.clone(), v("s")), x)));
    }
    let mut args = vec![
        arg("n", ArgKind::Nat),
        arg("s", ArgKind::Scalar(F32)),
        input("xs", &[F32], "4 * n"),
        output("out", &[F32], "4 * n"),
    ];
    args.extend(extra);
    program(name, args, vec![for_("k", i(0), v("n"), Schedule::Parallel, body)], 0)
}

/// `4·k + c`.
fn lane(c: i64) -> Expr {
    let base = bin(BinOp::Mul, i(4), v("k"));
    if c == 0 { base } else { bin(BinOp::Add, base, i(c)) }
}

fn xs(n: usize) -> Vec<f32> {
    (0..4 * n).map(|k| (k % 23) as f32 * 0.5 - 4.0).collect()
}

#[test]
fn a_name_equal_in_every_lane_is_broadcast() {
    let p = lanes("scaled", lane, vec![]);
    let ir = clif_text(&p).unwrap();
    assert_eq!(ir.matches("load.f32x4 ").count(), 1, "{ir}");
    assert_eq!(ir.matches("splat").count(), 1, "{ir}");
    let k = compile(&p).unwrap();
    for n in [0usize, 1, 5, 1000] {
        let mut x = xs(n);
        let mut out = vec![-1.0f32; 4 * n];
        call(&k, &[ArgValue::Nat(n as i64), ArgValue::Float(1.5), buf(&mut x), buf(&mut out)]).unwrap();
        let want: Vec<f32> = x.iter().map(|x| x * 1.5 + x).collect();
        assert_eq!(out, want, "n = {n}");
    }
}

#[test]
fn lanes_gathered_through_an_index_stay_scalar() {
    // x_c = xs[idx[4k + c]]: the lanes are not consecutive in `xs`.
    let gather = |c: i64| load("idx", lane(c), 0);
    let p = lanes("gathered", gather, vec![input("idx", &[I64], "4 * n")]);
    let ir = clif_text(&p).unwrap();
    assert!(!ir.contains("x4"), "a vector for gathered lanes:\n{ir}");
    let k = compile(&p).unwrap();
    for n in [0usize, 1, 5, 1000] {
        let mut x = xs(n);
        let mut idx: Vec<i64> = (0..4 * n as i64).map(|j| (j * 7 + 3) % (4 * n as i64)).collect();
        let mut out = vec![-1.0f32; 4 * n];
        call(&k, &[ArgValue::Nat(n as i64), ArgValue::Float(1.5), buf(&mut x), buf(&mut out), buf(&mut idx)]).unwrap();
        let want: Vec<f32> = idx.iter().map(|&j| x[j as usize] * 1.5 + x[j as usize]).collect();
        assert_eq!(out, want, "n = {n}");
    }
}

#[test]
fn lanes_in_another_order_stay_scalar() {
    // x_c = xs[4k + 3 - c]: consecutive, but lane c is not at offset c.
    let p = lanes("reversed", |c| lane(3 - c), vec![]);
    let ir = clif_text(&p).unwrap();
    assert!(!ir.contains("x4"), "{ir}");
    let k = compile(&p).unwrap();
    let n = 5;
    let mut x = xs(n);
    let mut out = vec![-1.0f32; 4 * n];
    call(&k, &[ArgValue::Nat(n as i64), ArgValue::Float(-2.0), buf(&mut x), buf(&mut out)]).unwrap();
    let want: Vec<f32> = (0..4 * n).map(|j| x[4 * (j / 4) + 3 - j % 4]).map(|x| x * -2.0 + x).collect();
    assert_eq!(out, want);
}

/// `var acc = 0 (reassociable); for k { acc = acc + xs[4k + c] * ys[4k + c], c = 0 .. 3 }; out[0] = acc`.
fn lane_dot() -> LoopProgram {
    let mut body = Vec::new();
    for c in 0..4 {
        body.push(let_(&format!("x{c}"), F32, load("xs", lane(c), 0)));
        body.push(let_(&format!("y{c}"), F32, load("ys", lane(c), 0)));
    }
    for c in 0..4 {
        body.push(let_(&format!("p{c}"), F32, bin(BinOp::Mul, v(&format!("x{c}")), v(&format!("y{c}")))));
        body.push(assign("acc", bin(BinOp::Add, v("acc"), v(&format!("p{c}")))));
    }
    let prog = vec![
        var_("acc", F32, Expr::Float(0.0, F32)),
        for_("k", i(0), v("n"), Schedule::Seq, body),
        store("out", i(0), 0, v("acc")),
    ];
    let args = vec![
        arg("n", ArgKind::Nat),
        input("xs", &[F32], "4 * n"),
        input("ys", &[F32], "4 * n"),
        output("out", &[F32], "1"),
    ];
    let mut p = program("lane_dot", args, prog, 0);
    p.reassociable = vec!["acc".into()];
    p
}

#[test]
fn a_lane_sum_adds_vectors_unless_one_accumulator_is_asked_for() {
    let p = lane_dot();
    let asm = disassembly(&p, &Options::default()).unwrap();
    assert!(asm.contains("mulps") && asm.contains("addps"), "{asm}");
    let one = Options { accumulators: 1, ..Options::default() };
    let asm = disassembly(&p, &one).unwrap();
    // The products stay one vector multiply (exact lane by lane); the sum is
    // not regrouped: its lanes are added one by one.
    assert!(asm.contains("mulps") && !asm.contains("addps"), "one accumulator: no regrouping\n{asm}");
    for opts in [Options::default(), one] {
        let k = compile_with(&p, &opts).unwrap();
        for n in [0usize, 1, 5, 1000] {
            let mut x = xs(n);
            let mut y: Vec<f32> = x.iter().map(|v| 2.0 - v).collect();
            let mut out = [-1.0f32];
            call(&k, &[ArgValue::Nat(n as i64), buf(&mut x), buf(&mut y), buf(&mut out)]).unwrap();
            // Quarter values: every partial sum is exact, in any order.
            let want: f32 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
            assert_eq!(out[0], want, "n = {n}, {opts:?}");
        }
    }
}

/// `out[4k + c] = min(xs[4k + c], ys[4k + c]) - max(xs[4k + c], ys[4k + c])` over `i32`: one vector `min` and `max`.
#[test]
fn integer_min_and_max_are_lane_wise() {
    let mut body = Vec::new();
    for c in 0..4 {
        body.push(let_(&format!("x{c}"), I32, load("xs", lane(c), 0)));
        body.push(let_(&format!("y{c}"), I32, load("ys", lane(c), 0)));
    }
    for c in 0..4 {
        let (x, y) = (v(&format!("x{c}")), v(&format!("y{c}")));
        body.push(store(
            "out",
            lane(c),
            0,
            bin(BinOp::Sub, bin(BinOp::Min, x.clone(), y.clone()), bin(BinOp::Max, x, y)),
        ));
    }
    let args = vec![
        arg("n", ArgKind::Nat),
        input("xs", &[I32], "4 * n"),
        input("ys", &[I32], "4 * n"),
        output("out", &[I32], "4 * n"),
    ];
    let p = program("min_max", args, vec![for_("k", i(0), v("n"), Schedule::Parallel, body)], 0);
    let ir = clif_text(&p).unwrap();
    assert!(ir.contains("smin") && ir.contains("smax") && ir.contains("load.i32x4"), "{ir}");
    let k = compile(&p).unwrap();
    for n in [0usize, 1, 5, 1000] {
        let mut x: Vec<i32> = (0..4 * n as i32).map(|j| (j * 37) % 101 - 50).collect();
        let mut y: Vec<i32> = (0..4 * n as i32).map(|j| (j * 53) % 89 - 44).collect();
        let mut out = vec![7i32; 4 * n];
        call(&k, &[ArgValue::Nat(n as i64), buf(&mut x), buf(&mut y), buf(&mut out)]).unwrap();
        let want: Vec<i32> = x.iter().zip(&y).map(|(a, b)| a.min(b) - a.max(b)).collect();
        assert_eq!(out, want, "n = {n}");
    }
}

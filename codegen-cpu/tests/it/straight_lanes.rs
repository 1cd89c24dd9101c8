//! Inner loops of a constant trip count that is a multiple of a vector step
//! (`src/translate/simd.rs`, `straight_steps`) run their steps straight,
//! with no loop around them: BSR 1×8's dot product over a block. Every
//! length from 1 to 20 (straight, looped, with a rest), in `f32` and `f64`,
//! as a reassociable dot product per row and as a map loop, against the
//! same computation done here (small integers: every order gives the same sum).

use crate::common;

use common::*;
use heddle_codegen_cpu::{ArgValue, Options, compile, disassembly};
use heddle_ir::ScalarType;
use heddle_ir::loops::{ArgKind, BinOp, Expr, LoopProgram, Schedule};

/// `parallel for r in 0 .. n { var acc = 0; for j in 0 .. len { acc = acc + a[r·len + j] · b[r·len + j] }; out[r] = acc }`.
fn row_dots(t: ScalarType, len: i64) -> LoopProgram {
    let at = bin(BinOp::Add, bin(BinOp::Mul, v("r"), i(len)), v("j"));
    let zero = if t == F32 { Expr::Float(0.0, F32) } else { Expr::Float(0.0, F64) };
    let inner = for_(
        "j",
        i(0),
        i(len),
        Schedule::Seq,
        vec![
            let_("p", t, bin(BinOp::Mul, load("a", at.clone(), 0), load("b", at, 0))),
            assign("acc", bin(BinOp::Add, v("acc"), v("p"))),
        ],
    );
    let row = for_(
        "r",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![var_("acc", t, zero), inner, store("out", v("r"), 0, v("acc"))],
    );
    let size = format!("{len} * n");
    let args = vec![arg("n", ArgKind::Nat), input("a", &[t], &size), input("b", &[t], &size), output("out", &[t], "n")];
    let mut p = program(&format!("row_dots_{len}"), args, vec![row], 0);
    p.reassociable.push("acc".into());
    p
}

/// `parallel for r in 0 .. n { for j in 0 .. len { out[r·len + j] = a[r·len + j] · 3 } }`.
fn row_scale(t: ScalarType, len: i64) -> LoopProgram {
    let at = bin(BinOp::Add, bin(BinOp::Mul, v("r"), i(len)), v("j"));
    let three = if t == F32 { Expr::Float(3.0, F32) } else { Expr::Float(3.0, F64) };
    let inner = for_(
        "j",
        i(0),
        i(len),
        Schedule::Seq,
        vec![store("out", at.clone(), 0, bin(BinOp::Mul, load("a", at, 0), three))],
    );
    let size = format!("{len} * n");
    let args = vec![arg("n", ArgKind::Nat), input("a", &[t], &size), output("out", &[t], &size)];
    program(&format!("row_scale_{len}"), args, vec![for_("r", i(0), v("n"), Schedule::Parallel, vec![inner])], 0)
}

fn values(count: usize, seed: usize) -> Vec<f64> {
    (0..count).map(|k| ((k * 7 + seed) % 11) as f64 - 5.0).collect()
}

#[test]
fn constant_length_dot_products_match_at_every_length() {
    let rows = 5usize;
    for len in 1..=20usize {
        let (a, b) = (values(rows * len, 1), values(rows * len, 4));
        let want: Vec<f64> = (0..rows).map(|r| (0..len).map(|j| a[r * len + j] * b[r * len + j]).sum()).collect();
        let mut out = vec![-1.0f64; rows];
        let k = compile(&row_dots(F64, len as i64)).unwrap();
        call(&k, &[ArgValue::Nat(rows as i64), buf(&mut a.clone()), buf(&mut b.clone()), buf(&mut out)]).unwrap();
        assert_eq!(out, want, "f64, len {len}");
        let (a32, b32): (Vec<f32>, Vec<f32>) =
            (a.iter().map(|&x| x as f32).collect(), b.iter().map(|&x| x as f32).collect());
        let mut out32 = vec![-1.0f32; rows];
        let k = compile(&row_dots(F32, len as i64)).unwrap();
        call(&k, &[ArgValue::Nat(rows as i64), buf(&mut a32.clone()), buf(&mut b32.clone()), buf(&mut out32)]).unwrap();
        assert_eq!(out32, want.iter().map(|&x| x as f32).collect::<Vec<_>>(), "f32, len {len}");
    }
}

#[test]
fn constant_length_map_loops_store_every_element() {
    let rows = 3usize;
    for len in 1..=20usize {
        let a = values(rows * len, 2);
        let mut out = vec![-1.0f64; rows * len];
        let k = compile(&row_scale(F64, len as i64)).unwrap();
        call(&k, &[ArgValue::Nat(rows as i64), buf(&mut a.clone()), buf(&mut out)]).unwrap();
        assert_eq!(out, a.iter().map(|x| x * 3.0).collect::<Vec<_>>(), "f64, len {len}");
        let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
        let mut out32 = vec![-1.0f32; rows * len];
        let k = compile(&row_scale(F32, len as i64)).unwrap();
        call(&k, &[ArgValue::Nat(rows as i64), buf(&mut a32.clone()), buf(&mut out32)]).unwrap();
        assert_eq!(out32, a32.iter().map(|x| x * 3.0).collect::<Vec<_>>(), "f32, len {len}");
    }
}

/// A step is two vectors (two chains): 4 `f64` or 8 `f32`. Lengths of one
/// or two steps are straight: every vector multiply written out, none in a
/// loop. Longer ones, and lengths with a rest, keep the loop: one step's two
/// vector multiplies, repeated.
#[test]
fn one_or_two_steps_run_straight() {
    let vector_multiplies = |t: ScalarType, len: i64| {
        let asm = disassembly(&row_dots(t, len), &Options::default()).unwrap();
        asm.matches(if t == F64 { "mulpd" } else { "mulps" }).count()
    };
    for (t, len, steps) in [(F64, 4, 1), (F64, 8, 2), (F32, 8, 1), (F32, 16, 2)] {
        assert_eq!(vector_multiplies(t, len), 2 * steps, "{len} × {t:?}");
    }
    for (t, len) in [(F64, 12), (F64, 10), (F32, 24), (F32, 12)] {
        assert_eq!(vector_multiplies(t, len), 2, "{len} × {t:?}: the loop");
    }
}

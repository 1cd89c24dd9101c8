//! Strength reduction of loop counters (`translate::induction`): a loop
//! whose body reads its variable only in sums `a·k + …` counts `q = a·k + b`
//! instead. The results equal the plain loop's for every range, empty and
//! reversed ones included, and for counters that wrap; where the rewrite
//! does not apply (or is not known exact), the code is the plain loop's.

use crate::common;

use common::*;
use heddle_codegen_cpu::{ArgValue, Options, clif_text_with, compile_with};
use heddle_ir::loops::{ArgKind, BinOp, Expr, LoopProgram, Schedule, Stmt};

fn off() -> Options {
    Options { strength_reduction: false, ..Options::default() }
}

/// `for k in lo .. hi { let p = a·k + b; out[p] = (f64) (p + 7) + xs[k·a + b + 1] }`,
/// `lo` and `hi` given by `bounds` (expressions of the arguments `lo`, `hi`).
fn strided(a: i64, bounds: (Expr, Expr), bound_type: heddle_ir::ScalarType, body_extra: Vec<Stmt>) -> LoopProgram {
    let ak = bin(BinOp::Mul, i(a), v("k"));
    let ka = bin(BinOp::Mul, v("k"), i(a));
    let mut body = vec![
        let_("p", I64, bin(BinOp::Add, ak, v("b"))),
        let_("y", F64, load("xs", bin(BinOp::Add, bin(BinOp::Add, ka, v("b")), i(1)), 0)),
        store("out", v("p"), 0, bin(BinOp::Add, cast(F64, bin(BinOp::Add, v("p"), i(7))), v("y"))),
    ];
    body.extend(body_extra);
    program(
        "strided",
        vec![
            arg("m", ArgKind::Nat),
            arg("lo", ArgKind::Scalar(bound_type)),
            arg("hi", ArgKind::Scalar(bound_type)),
            arg("b", ArgKind::Scalar(I64)),
            input("xs", &[F64], "m + 1"),
            output("out", &[F64], "m"),
        ],
        vec![for_("k", bounds.0, bounds.1, Schedule::Seq, body)],
        0,
    )
}

fn run(p: &LoopProgram, options: &Options, m: usize, lo: i64, hi: i64, b: i64, narrow: bool) -> Vec<f64> {
    let k = compile_with(p, options).unwrap();
    let mut xs: Vec<f64> = (0..=m).map(|j| j as f64 * 0.25).collect();
    let mut out = vec![-1.0; m];
    let bound = |x: i64| if narrow { ArgValue::Int(x as i32 as i64) } else { ArgValue::Int(x) };
    call(&k, &[ArgValue::Nat(m as i64), bound(lo), bound(hi), ArgValue::Int(b), buf(&mut xs), buf(&mut out)]).unwrap();
    out
}

/// What the loop writes, computed here with wrapping arithmetic.
fn reference(a: i64, m: usize, lo: i64, hi: i64, b: i64) -> Vec<f64> {
    let xs: Vec<f64> = (0..=m).map(|j| j as f64 * 0.25).collect();
    let mut out = vec![-1.0; m];
    let mut k = lo;
    while k < hi {
        let p = a.wrapping_mul(k).wrapping_add(b);
        out[p as usize] = p.wrapping_add(7) as f64 + xs[p as usize + 1];
        k += 1;
    }
    out
}

fn narrow_bounds() -> (Expr, Expr) {
    (cast(I64, v("lo")), cast(I64, v("hi")))
}

#[test]
fn scaled_counters_write_what_the_plain_loop_writes() {
    for a in [1, 3, 8] {
        let p = strided(a, narrow_bounds(), I32, vec![]);
        // Counted scaled: the code differs from the plain loop's.
        assert_ne!(clif_text_with(&p, &Options::default()).unwrap(), clif_text_with(&p, &off()).unwrap(), "a = {a}");
        for (lo, hi, b) in [(0, 0, 0), (0, 1, 0), (2, 7, 1), (5, 3, 0), (-2, 4, 16), (0, 9, 2), (4, 4, 3)] {
            let m = 80;
            let want = reference(a, m, lo, hi, b);
            for options in [Options::default(), off(), Options { vectorize: false, ..Options::default() }] {
                assert_eq!(run(&p, &options, m, lo, hi, b, true), want, "a = {a}, {lo} .. {hi}, b = {b}");
            }
        }
    }
}

#[test]
fn an_odd_scale_counts_exactly_through_wrapping() {
    // `3·k + b` wraps around for k near i64::MAX; the counter runs from
    // `3·lo + b` to `3·hi + b` (mod 2⁶⁴) and stops after exactly `hi - lo`
    // steps, whatever the bounds: an odd scale needs no bound on them.
    let p = strided(3, (v("lo"), v("hi")), I64, vec![]);
    assert_ne!(clif_text_with(&p, &Options::default()).unwrap(), clif_text_with(&p, &off()).unwrap());
    for lo in [i64::MAX - 5, i64::MIN, -7] {
        let hi = lo + 5;
        let b = 3i64.wrapping_mul(lo).wrapping_neg().wrapping_add(2);
        let want = reference(3, 20, lo, hi, b);
        assert_eq!(want.iter().filter(|x| **x >= 0.0).count(), 5);
        assert_eq!(run(&p, &Options::default(), 20, lo, hi, b, false), want, "{lo} .. {hi}");
    }
}

#[test]
fn counters_stay_plain_where_scaling_is_not_known_exact_or_reads_the_counter() {
    let same = |p: &LoopProgram, why: &str| {
        assert_eq!(clif_text_with(p, &Options::default()).unwrap(), clif_text_with(p, &off()).unwrap(), "{why}");
    };
    // An even scale over bounds of unknown size: `8·n` could wrap onto `8·j`.
    same(&strided(8, (v("lo"), v("hi")), I64, vec![]), "an even scale, 64-bit bounds");
    // The counter read alone: compared, converted (the narrow range check
    // needs `k`), or multiplied by a variable.
    let compared = Stmt::If { cond: bin(BinOp::Lt, v("k"), i(3)), then: vec![], els: vec![] };
    same(&strided(8, narrow_bounds(), I32, vec![compared]), "a comparison of k");
    let converted = let_("n32", I32, cast(I32, v("k")));
    same(&strided(8, narrow_bounds(), I32, vec![converted]), "(int) k");
    let product = let_("kb", I64, bin(BinOp::Mul, v("k"), v("b")));
    same(&strided(8, narrow_bounds(), I32, vec![product]), "k · b");
    // A second sum computed on its own with other invariant terms: it would
    // read `q + (m - b)`, an add per iteration as before and a value more
    // live across the loop (BSR addition's block loops).
    let other_offset = let_("r", I64, bin(BinOp::Add, bin(BinOp::Mul, i(8), v("k")), v("m")));
    same(&strided(8, narrow_bounds(), I32, vec![other_offset]), "two lets with other offsets");
    // Two scales.
    let other = let_("k2", I64, bin(BinOp::Mul, i(2), v("k")));
    same(&strided(8, narrow_bounds(), I32, vec![other]), "two scales");
    // A scale of 1 used only as whole indices: `address` already splits it.
    let p = program(
        "copy",
        vec![
            arg("n", ArgKind::Nat),
            arg("b", ArgKind::Scalar(I64)),
            input("xs", &[F64], "n"),
            output("out", &[F64], "n"),
        ],
        vec![for_(
            "k",
            i(0),
            v("n"),
            Schedule::Seq,
            vec![store("out", bin(BinOp::Add, v("k"), v("b")), 0, load("xs", bin(BinOp::Add, v("k"), v("b")), 0))],
        )],
        0,
    );
    same(&p, "k + b as whole indices");
    // CSR SpMV: a parallel row loop (left alone) and a reduction over the
    // row (`reduce.rs` counts its own positions): the same code.
    same(&csr_packed(), "CSR SpMV");
    same(&crate::inner_loops::csr32_lowered(), "CSR32 SpMV as lowered");
}

#[test]
fn a_narrow_conversion_of_a_scaled_loop_still_checks_its_range() {
    // `(int) k` keeps the loop's counter (previous test), so the fault for a
    // range that does not fit `int` is reported as before.
    let converted = store("out", i(0), 0, cast(F64, cast(I32, v("k"))));
    let p = strided(1, (v("lo"), v("hi")), I64, vec![converted]);
    let k = compile_with(&p, &Options::default()).unwrap();
    let mut xs = vec![0.0; 4];
    let mut out = vec![0.0; 3];
    let lo = i64::from(i32::MAX) - 1;
    let r = call(
        &k,
        &[ArgValue::Nat(3), ArgValue::Int(lo), ArgValue::Int(lo + 3), ArgValue::Int(-lo), buf(&mut xs), buf(&mut out)],
    );
    assert!(r.is_err(), "{r:?}");
}

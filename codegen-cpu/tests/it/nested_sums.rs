//! A loop whose every iteration adds a short inner sum run as straight
//! vector steps (`src/translate/nested.rs`: BSR 1×8's blocks) carries the
//! inner sum's vector partials across its iterations. Per row, blocks of
//! `len` products are summed into the row's accumulator: every row length
//! from 0 to 5 blocks and every block length from 1 to 20 (carried where
//! the length is whole straight steps, per block elsewhere), in `f32`,
//! `f64` and `i32`, with the option on and off, against the same sums done
//! here (small integers: every order gives the same sum). Shapes outside
//! the rule (an inner sum from 1, a sequential outer accumulator, the row's
//! sum read in the block loop) keep their meaning.

use crate::common;

use common::*;
use heddle_codegen_cpu::{ArgValue, CpuKernel, Options, compile_with, disassembly};
use heddle_ir::ScalarType;
use heddle_ir::loops::{BinOp, Expr, LoopProgram, Schedule, Stmt};

/// How a variant departs from the rule's shape.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Variant {
    /// The shape: `var s = 0; for j { s = s + a·x }; acc = acc + s`.
    Plain,
    /// `var s = 1`: not the sum's identity.
    FromOne,
    /// `acc` not reassociable (`reduceSeq`).
    SequentialRow,
    /// The block loop's `let` reads `acc` (`let seen = acc`, unused).
    RowRead,
}

fn zero(t: ScalarType, v: f64) -> Expr {
    if t.is_float() { Expr::Float(v, t) } else { Expr::Int(v as i64, t) }
}

/// `parallel for r in 0 .. n { var acc = 0; for k in 0 .. blocks[r] { let
/// o = (r·B + k)·len; var s = 0; for j in 0 .. len { s = s + a[o + j] ·
/// x[k·len + j] }; acc = acc + s }; out[r] = acc }` (B the most blocks a row has).
fn row_blocks(t: ScalarType, len: i64, most: i64, variant: Variant) -> LoopProgram {
    let o = bin(BinOp::Mul, bin(BinOp::Add, bin(BinOp::Mul, v("r"), i(most)), v("k")), i(len));
    let inner = for_(
        "j",
        i(0),
        i(len),
        Schedule::Seq,
        vec![
            let_("p", t, load("a", bin(BinOp::Add, v("o"), v("j")), 0)),
            let_("q", t, load("x", bin(BinOp::Add, bin(BinOp::Mul, v("k"), i(len)), v("j")), 0)),
            assign("s", bin(BinOp::Add, v("s"), bin(BinOp::Mul, v("p"), v("q")))),
        ],
    );
    let mut block: Vec<Stmt> = vec![let_("o", ScalarType::I64, o)];
    if variant == Variant::RowRead {
        block.push(let_("seen", t, v("acc")));
    }
    block.extend([
        var_("s", t, zero(t, if variant == Variant::FromOne { 1.0 } else { 0.0 })),
        inner,
        assign("acc", bin(BinOp::Add, v("acc"), v("s"))),
    ]);
    let blocks = load("blocks", v("r"), 0);
    let row = for_(
        "r",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![
            var_("acc", t, zero(t, 0.0)),
            for_("k", i(0), cast(ScalarType::I64, blocks), Schedule::Seq, block),
            store("out", v("r"), 0, v("acc")),
        ],
    );
    let (a_len, x_len) = (format!("{} * n", most * len), format!("{}", most * len));
    let args = vec![
        arg("n", heddle_ir::loops::ArgKind::Nat),
        input("blocks", &[ScalarType::I32], "n"),
        input("a", &[t], &a_len),
        input("x", &[t], &x_len),
        output("out", &[t], "n"),
    ];
    let mut p = program(&format!("row_blocks_{len}"), args, vec![row], 0);
    p.reassociable.push("s".into());
    if variant != Variant::SequentialRow {
        p.reassociable.push("acc".into());
    }
    p
}

fn values(count: usize, seed: usize) -> Vec<f64> {
    (0..count).map(|k| ((k * 7 + seed) % 11) as f64 - 5.0).collect()
}

/// Runs `k` on rows of `blocks[r]` blocks and returns y as `f64`s.
fn run(k: &CpuKernel, t: ScalarType, blocks: &[i32], a: &[f64], x: &[f64]) -> Vec<f64> {
    let n = blocks.len();
    let mut blocks = blocks.to_vec();
    match t {
        ScalarType::F64 => {
            let mut out = vec![-1.0f64; n];
            let (mut a, mut x) = (a.to_vec(), x.to_vec());
            call(k, &[ArgValue::Nat(n as i64), buf(&mut blocks), buf(&mut a), buf(&mut x), buf(&mut out)]).unwrap();
            out
        }
        ScalarType::F32 => {
            let mut out = vec![-1.0f32; n];
            let (mut a, mut x): (Vec<f32>, Vec<f32>) =
                (a.iter().map(|&v| v as f32).collect(), x.iter().map(|&v| v as f32).collect());
            call(k, &[ArgValue::Nat(n as i64), buf(&mut blocks), buf(&mut a), buf(&mut x), buf(&mut out)]).unwrap();
            out.into_iter().map(f64::from).collect()
        }
        _ => {
            let mut out = vec![-1i32; n];
            let (mut a, mut x): (Vec<i32>, Vec<i32>) =
                (a.iter().map(|&v| v as i32).collect(), x.iter().map(|&v| v as i32).collect());
            call(k, &[ArgValue::Nat(n as i64), buf(&mut blocks), buf(&mut a), buf(&mut x), buf(&mut out)]).unwrap();
            out.into_iter().map(f64::from).collect()
        }
    }
}

#[test]
fn nested_sums_match_at_every_block_length_and_row_length() {
    let most = 5usize;
    // Rows of 0 .. 5 blocks, twice.
    let blocks: Vec<i32> = (0..12).map(|r| (r % (most + 1)) as i32).collect();
    let rows = blocks.len();
    let variants = [Variant::Plain, Variant::FromOne, Variant::SequentialRow, Variant::RowRead];
    for t in [ScalarType::F64, ScalarType::F32, ScalarType::I32] {
        for len in 1..=20usize {
            let (a, x) = (values(rows * most * len, 1), values(most * len, 4));
            for variant in variants {
                let from = if variant == Variant::FromOne { 1.0 } else { 0.0 };
                let want: Vec<f64> = (0..rows)
                    .map(|r| {
                        (0..blocks[r] as usize)
                            .map(|k| from + (0..len).map(|j| a[(r * most + k) * len + j] * x[k * len + j]).sum::<f64>())
                            .sum()
                    })
                    .collect();
                let p = row_blocks(t, len as i64, most as i64, variant);
                for nested_sums in [true, false] {
                    let options = Options { nested_sums, ..Options::default() };
                    let k = compile_with(&p, &options).unwrap();
                    let got = run(&k, t, &blocks, &a, &x);
                    assert_eq!(got, want, "{t:?}, len {len}, {variant:?}, nested_sums {nested_sums}");
                }
            }
        }
    }
}

/// The block loop's body (the block that multiplies), as instructions.
fn block_step(p: &LoopProgram, options: &Options, mul: &str) -> Vec<String> {
    let asm = disassembly(p, options).unwrap();
    let mut blocks = vec![Vec::new()];
    for l in asm.lines().map(str::trim) {
        if l.starts_with("block") {
            blocks.push(Vec::new());
        } else if !l.is_empty() && !l.starts_with("unwind") {
            blocks.last_mut().unwrap().push(l.to_string());
        }
    }
    let steps: Vec<Vec<String>> = blocks.into_iter().filter(|b| b.iter().any(|l| l.starts_with(mul))).collect();
    assert_eq!(steps.len(), 1, "one block multiplies: {asm}");
    steps.into_iter().next().unwrap()
}

#[test]
fn carried_partials_take_the_lane_folds_out_of_the_block_loop() {
    for (t, mul, scalar_add, vectors) in
        [(ScalarType::F64, "vmulpd", "vaddsd", 4), (ScalarType::F32, "vmulps", "vaddss", 2)]
    {
        let p = row_blocks(t, 8, 5, Variant::Plain);
        let carried = block_step(&p, &Options::default(), mul);
        let folded = block_step(&p, &Options { nested_sums: false, ..Options::default() }, mul);
        let count = |b: &[String], op: &str| b.iter().filter(|l| l.starts_with(op)).count();
        // One vector add per 16 bytes, straight into the carried partials; no
        // scalar add, no shuffle.
        assert_eq!(count(&carried, mul), vectors, "{t:?}: {carried:#?}");
        assert_eq!(count(&carried, &mul.replace("mul", "add")), vectors, "{t:?}: {carried:#?}");
        assert_eq!(count(&carried, scalar_add), 0, "{t:?}: {carried:#?}");
        assert_eq!(count(&carried, "vpshufd"), 0, "{t:?}: {carried:#?}");
        // Off: the block's lanes folded and added into the row's sum per block.
        assert!(count(&folded, scalar_add) >= 2, "{t:?}: {folded:#?}");
        // The shapes outside the rule compile as with the option off.
        for variant in [Variant::FromOne, Variant::SequentialRow, Variant::RowRead] {
            let p = row_blocks(t, 8, 5, variant);
            let off = Options { nested_sums: false, ..Options::default() };
            assert_eq!(disassembly(&p, &Options::default()).unwrap(), disassembly(&p, &off).unwrap(), "{variant:?}");
        }
    }
}

//! The inner-loop transformations of the CPU backend on hand-written loop
//! programs: reductions over several accumulators (exact for integers,
//! reassociated only where the program allows it, checks still in order),
//! narrow loop indices, input ranges that let checks go, and the machine
//! code of the CSR SpMV loop.

use crate::common;

use common::*;
use heddle_codegen_cpu::{ArgValue, Fault, Options, compile_with, disassembly};
use heddle_ir::loops::{BinOp, Expr, InputRange, LoopProgram, Schedule, Stmt};

/// `out[0] = reduce(op, init)(xs[0 .. n])` over `xs: [t]_n`, reassociable or not.
fn reduction(op: BinOp, t: heddle_ir::ScalarType, init: Expr, reassociable: bool) -> LoopProgram {
    let body = vec![
        var_("acc", t, init),
        for_("k", i(0), v("n"), Schedule::Seq, vec![assign("acc", bin(op, v("acc"), load("xs", v("k"), 0)))]),
        store("out", i(0), 0, v("acc")),
    ];
    let mut p = program(
        "reduction",
        vec![arg("n", heddle_ir::loops::ArgKind::Nat), input("xs", &[t], "n"), output("out", &[t], "1")],
        body,
        0,
    );
    if reassociable {
        p.reassociable.push("acc".into());
    }
    p
}

fn run_f64(p: &LoopProgram, options: Options, xs: &mut [f64]) -> f64 {
    let k = compile_with(p, &options).unwrap();
    let mut out = [f64::NAN];
    call(&k, &[ArgValue::Nat(xs.len() as i64), buf(xs), buf(&mut out)]).unwrap();
    out[0]
}

#[test]
fn integer_reductions_are_exact_over_any_number_of_accumulators() {
    let ops = [(BinOp::Add, 0), (BinOp::Mul, 1), (BinOp::Min, i64::MAX), (BinOp::Max, i64::MIN)];
    // Every length up to 20: the iterations before the unrolled loop (0 to
    // U - 1 of them), with and without the unrolled loop after them.
    for len in (0usize..=20).chain([100]) {
        let mut xs: Vec<i64> = (0..len as i64).map(|k| (k * 7919 + 13) % 201 - 100).collect();
        for (op, init) in ops {
            let want = xs.iter().fold(init, |a, x| match op {
                BinOp::Add => a.wrapping_add(*x),
                BinOp::Mul => a.wrapping_mul(*x),
                BinOp::Min => a.min(*x),
                _ => a.max(*x),
            });
            for accumulators in [1, 2, 3, 4, 8] {
                // Short loops over partials too (`short_loop: 0`), and the
                // one-accumulator loop below 16 iterations (the default).
                for short_loop in [0, heddle_codegen_cpu::DEFAULT_SHORT_LOOP] {
                    let p = reduction(op, I64, Expr::Int(init, I64), true);
                    let k = compile_with(&p, &Options { accumulators, short_loop, ..Options::default() }).unwrap();
                    let mut out = [0i64];
                    call(&k, &[ArgValue::Nat(len as i64), buf(&mut xs), buf(&mut out)]).unwrap();
                    assert_eq!(
                        out[0], want,
                        "{op:?} over {len} with {accumulators} accumulators, short loops below {short_loop}"
                    );
                }
            }
        }
    }
}

#[test]
fn float_sums_are_reassociated_only_when_allowed() {
    // 1e16 + 1 + 1 + … rounds each 1 away in order; partial sums keep them.
    let mut xs = vec![1e16];
    xs.extend(std::iter::repeat_n(1.0, 15));
    let sequential = xs.iter().fold(0.0, |a, x| a + x);
    let reassociable = reduction(BinOp::Add, F64, Expr::Float(0.0, F64), true);
    let strict = reduction(BinOp::Add, F64, Expr::Float(0.0, F64), false);
    let four = Options { accumulators: 4, ..Options::default() };
    assert_eq!(
        run_f64(&strict, four, &mut xs).to_bits(),
        sequential.to_bits(),
        "a reduction not listed as reassociable stays in order"
    );
    let got = run_f64(&reassociable, four, &mut xs);
    assert_ne!(got.to_bits(), sequential.to_bits(), "four accumulators should keep some of the ones");
    let exact: f64 = 1e16 + 15.0;
    assert!((got - exact).abs() <= 16.0, "{got}");
    assert_eq!(run_f64(&reassociable, Options { accumulators: 1, ..four }, &mut xs).to_bits(), sequential.to_bits());
}

#[test]
fn loops_shorter_than_short_loop_add_in_order() {
    // As above, 1e16 followed by ones: the sequential sum rounds each one
    // away, partial sums keep some. Below `short_loop` iterations the loop
    // runs with one accumulator, in order; from `short_loop` on, over the
    // partials.
    let reassociable = reduction(BinOp::Add, F64, Expr::Float(0.0, F64), true);
    // Around `COPIES_BELOW` (8) too: below it straight copies, from it the
    // loop of pairs, both in order; short loops up to 32 iterations.
    for (short_loop, len, in_order) in [
        (16, 15, true),
        (16, 16, false),
        (0, 15, false),
        (8, 8, false),
        (8, 7, true),
        (16, 7, true),
        (16, 8, true),
        (16, 9, true),
        (9, 8, true),
        (9, 9, false),
        (32, 31, true),
        (32, 32, false),
        (4, 3, true),
        (4, 4, false),
    ] {
        // With the straight copies and without them (`copies_below` 0: the
        // loop of pairs for every short loop), the same.
        for copies_below in [heddle_codegen_cpu::COPIES_BELOW, 0] {
            let mut xs = vec![1e16];
            xs.extend(std::iter::repeat_n(1.0, len - 1));
            let sequential = xs.iter().fold(0.0, |a, x| a + x);
            // Without vector lanes, which take a contiguous sum whatever its length.
            let got = run_f64(
                &reassociable,
                Options { accumulators: 4, short_loop, vectorize: false, copies_below, ..Options::default() },
                &mut xs,
            );
            assert_eq!(
                got.to_bits() == sequential.to_bits(),
                in_order,
                "{len} iterations, short loops below {short_loop}, copies below {copies_below}: {got} against the \
                 sequential {sequential}"
            );
            assert!((got - (1e16 + (len - 1) as f64)).abs() <= len as f64, "{got}");
        }
    }
}

#[test]
fn a_sum_of_negative_zeros_stays_negative_zero() {
    // The partial accumulators start at -0.0, the identity of +.
    let p = reduction(BinOp::Add, F64, Expr::Float(-0.0, F64), true);
    let mut xs = vec![-0.0; 7];
    assert_eq!(run_f64(&p, Options::default(), &mut xs).to_bits(), (-0.0f64).to_bits());
}

/// `acc += xs[k]` after `check xs[k] < limit`, reassociable.
fn checked_sum() -> LoopProgram {
    let body = vec![
        var_("acc", I64, Expr::Int(0, I64)),
        for_(
            "k",
            i(0),
            v("n"),
            Schedule::Seq,
            vec![
                let_("x", I64, load("xs", v("k"), 0)),
                Stmt::Check { cond: bin(BinOp::Lt, v("x"), i(100)), id: 0 },
                Stmt::Check { cond: bin(BinOp::Lt, v("x"), i(50)), id: 1 },
                assign("acc", bin(BinOp::Add, v("acc"), v("x"))),
            ],
        ),
        store("out", i(0), 0, v("acc")),
    ];
    let mut p = program(
        "checked",
        vec![arg("n", heddle_ir::loops::ArgKind::Nat), input("xs", &[I64], "n"), output("out", &[I64], "1")],
        body,
        2,
    );
    p.reassociable.push("acc".into());
    p
}

#[test]
fn unrolled_iterations_fail_their_checks_in_order() {
    // Element 5 fails check 1 and element 6 check 0: a sequential run stops
    // at element 5, whichever copy of the body each lands in.
    let mut xs: Vec<i64> = vec![1, 2, 3, 4, 5, 70, 200, 8, 9];
    for accumulators in [1, 2, 4, 8] {
        for short_loop in [0, heddle_codegen_cpu::DEFAULT_SHORT_LOOP] {
            let k = compile_with(&checked_sum(), &Options { accumulators, short_loop, ..Options::default() }).unwrap();
            let mut out = [0i64];
            assert_eq!(
                call(&k, &[ArgValue::Nat(9), buf(&mut xs), buf(&mut out)]),
                Err(Fault::Check(1)),
                "{accumulators} accumulators, short loops below {short_loop}"
            );
        }
    }
}

#[test]
fn a_narrow_loop_index_outside_its_type_is_a_fault() {
    // for k in lo .. hi { out[0] = (i64)(int) k } — with a range past i32::MAX
    // the narrowing would wrap; the loop refuses to start instead.
    let body =
        vec![for_("k", v("lo"), v("hi"), Schedule::Seq, vec![store("out", i(0), 0, cast(I64, cast(I32, v("k"))))])];
    let p = program(
        "narrow",
        vec![
            arg("lo", heddle_ir::loops::ArgKind::Nat),
            arg("hi", heddle_ir::loops::ArgKind::Nat),
            output("out", &[I64], "1"),
        ],
        body,
        0,
    );
    let k = compile_with(&p, &Options::default()).unwrap();
    let mut out = [0i64];
    call(&k, &[ArgValue::Nat(5), ArgValue::Nat(9), buf(&mut out)]).unwrap();
    assert_eq!(out[0], 8);
    let top = i64::from(i32::MAX);
    call(&k, &[ArgValue::Nat(top - 1), ArgValue::Nat(top + 1), buf(&mut out)]).unwrap();
    assert_eq!(out[0], top);
    assert_eq!(call(&k, &[ArgValue::Nat(top - 1), ArgValue::Nat(top + 2), buf(&mut out)]), Err(Fault::IndexOverflow));
}

/// `out[i] = xs[crd[i]]` with `check crd[i] < m`, and the range `crd < m`.
fn gather_with_range() -> LoopProgram {
    let body = vec![for_(
        "i",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![
            let_("e", I64, cast(I64, load("crd", v("i"), 0))),
            Stmt::Check { cond: bin(BinOp::And, bin(BinOp::Ge, v("e"), i(0)), bin(BinOp::Lt, v("e"), v("m"))), id: 0 },
            store("out", v("i"), 0, load("xs", v("e"), 0)),
        ],
    )];
    let mut p = program(
        "gather",
        vec![
            arg("n", heddle_ir::loops::ArgKind::Nat),
            arg("m", heddle_ir::loops::ArgKind::Nat),
            input("crd", &[I32], "n"),
            input("xs", &[F64], "m"),
            output("out", &[F64], "n"),
        ],
        body,
        1,
    );
    p.ranges.push(InputRange { buf: "crd".into(), field: 0, below: v("m") });
    p
}

#[test]
fn checks_implied_by_input_ranges_go_only_when_trusted() {
    let p = gather_with_range();
    p.validate().unwrap();
    // Physically 4 elements of xs, but m = 2: index 3 is in memory, outside m.
    let mut xs = [10.0, 11.0, 12.0, 13.0];
    let mut crd = [0i32, 3];
    let mut out = [0.0f64; 2];
    let args = |crd: &mut [i32], xs: &mut [f64], out: &mut [f64]| {
        vec![ArgValue::Nat(2), ArgValue::Nat(2), buf(crd), buf(xs), buf(out)]
    };
    let checked = compile_with(&p, &Options::default()).unwrap();
    assert_eq!(call(&checked, &args(&mut crd, &mut xs, &mut out)), Err(Fault::Check(0)));
    // Trusted code has no check left: it reads xs[3].
    let trusted = compile_with(&p, &Options { trust_ranges: true, ..Options::default() }).unwrap();
    call(&trusted, &args(&mut crd, &mut xs, &mut out)).unwrap();
    assert_eq!(out, [10.0, 13.0]);
    // A check the ranges do not imply (a bound other than the range's) stays.
    let mut other = gather_with_range();
    other.ranges[0].below = v("n");
    let trusted = compile_with(&other, &Options { trust_ranges: true, ..Options::default() }).unwrap();
    assert_eq!(call(&trusted, &args(&mut crd, &mut xs, &mut out)), Err(Fault::Check(0)));
}

#[test]
fn the_csr_inner_loop_has_no_sign_extension_and_unrolls() {
    // Listing 5 with an `(int) k` index, as lowering writes tensor views.
    let mut p = csr_packed();
    p.reassociable.push("acc".into());
    let asm = disassembly(&p, &Options::default()).unwrap();
    // Four copies of the multiply-add (fused or not).
    let multiplies = |asm: &str| asm.matches("mulss").count() + asm.matches("vfmadd").count();
    assert!(multiplies(&asm) >= 4, "{asm}");
    let single = disassembly(&p, &Options { accumulators: 1, ..Options::default() }).unwrap();
    assert!(multiplies(&single) < multiplies(&asm), "{single}");
    // One accumulator: two copies of the multiply-add per step and one for
    // the first, odd iteration, no partials to combine.
    assert_eq!(multiplies(&single), 3, "{single}");
    assert!(asm.matches("addss").count() > single.matches("addss").count(), "{single}");
}

/// Whether Cranelift fuses multiply-adds on this host (see `Options::fused_multiply_add`).
fn host_has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(target_arch = "aarch64")]
    {
        true
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

#[test]
fn only_a_reassociable_sum_of_products_is_fused() {
    let strict = csr_packed();
    let mut reassociable = csr_packed();
    reassociable.reassociable.push("acc".into());
    let fused = |p: &LoopProgram, fused_multiply_add: bool| {
        let asm = disassembly(p, &Options { fused_multiply_add, ..Options::default() }).unwrap();
        (asm.contains("vfmadd"), asm)
    };
    let (yes, asm) = fused(&reassociable, true);
    assert_eq!(yes, host_has_fma(), "{asm}");
    if cfg!(target_arch = "x86_64") && host_has_fma() {
        // The `values` or `xs` load is the fused multiply-add's memory operand.
        assert!(asm.lines().any(|l| l.contains("vfmadd") && l.contains('(')), "{asm}");
    }
    for (p, allowed, what) in [(&reassociable, false, "with the option off"), (&strict, true, "a sequential reduction")]
    {
        let (yes, asm) = fused(p, allowed);
        assert!(!yes, "{what} must round the product on its own:\n{asm}");
    }
    // The same sums, fused or not, up to rounding.
    let mut offset = [0i32, 3, 3, 8, 17];
    let mut values: Vec<u8> = Vec::new();
    for k in 0..17i32 {
        values.extend_from_slice(&(k * 5 % 7).to_le_bytes());
        values.extend_from_slice(&(1.0f32 + k as f32 / 3.0).to_le_bytes());
    }
    let mut xs: Vec<f32> = (0..7).map(|k| 0.5 + k as f32 * 0.25).collect();
    let mut outs = Vec::new();
    for fused_multiply_add in [false, true] {
        let k = compile_with(&reassociable, &Options { fused_multiply_add, ..Options::default() }).unwrap();
        let mut out = [f32::NAN; 4];
        call(
            &k,
            &[ArgValue::Nat(4), ArgValue::Nat(7), buf(&mut offset), buf(&mut values), buf(&mut xs), buf(&mut out)],
        )
        .unwrap();
        outs.push(out);
    }
    // Against the sums in f64 (each row's terms are positive: no cancellation).
    let want: Vec<f64> = offset
        .windows(2)
        .map(|w| (w[0]..w[1]).map(|k| f64::from(1.0f32 + k as f32 / 3.0) * f64::from(xs[(k * 5 % 7) as usize])).sum())
        .collect();
    for out in &outs {
        for (g, w) in out.iter().zip(&want) {
            assert!((f64::from(*g) - w).abs() <= 1e-6 * w.abs().max(1.0), "{outs:?} against {want:?}");
        }
    }
}

#[test]
fn unrolled_copies_address_their_elements_by_displacement() {
    // Copy c of the body reads `values[j + c]`: `c · size` belongs in the
    // instruction's displacement, not in an add of its own per copy.
    let mut p = csr_packed();
    p.reassociable.push("acc".into());
    let asm = disassembly(&p, &Options { accumulators: 4, short_loop: 0, ..Options::default() }).unwrap();
    // (`leaq 1(` is also the one-at-a-time loop's step, `leaq 4(` the unrolled one's.)
    for c in 2..4 {
        assert!(!asm.contains(&format!("leaq {c}(")), "copy {c} computes its index with an add:\n{asm}");
    }
    // The records of `values` are 8 bytes (column, value): copy 3 is 24 bytes on.
    assert!(asm.contains("0x18("), "{asm}");
}

#[test]
fn only_rows_below_copies_below_run_as_straight_copies() {
    // The jump table's copies read `values[end - m]` at a negative
    // displacement, one multiply each; the loops read from their index up.
    // Rows of `COPIES_BELOW` entries or more (up to `short_loop`) take the
    // loop of pairs: straight copies of a long row were slower (see
    // `COPIES_BELOW`).
    let p = csr32_lowered();
    let copies_with = |short_loop: u32, copies_below: u32| {
        let asm = disassembly(
            &p,
            &Options {
                accumulators: 4,
                short_loop,
                trust_ranges: true,
                fused_multiply_add: false,
                copies_below,
                ..Options::default()
            },
        )
        .unwrap();
        asm.lines().filter(|l| l.contains("mulsd -")).count()
    };
    let copies = |short_loop: u32| copies_with(short_loop, heddle_codegen_cpu::COPIES_BELOW);
    let below = heddle_codegen_cpu::COPIES_BELOW as usize;
    assert_eq!(copies(16), below - 1);
    assert_eq!(copies(32), below - 1);
    assert_eq!(copies(5), 4);
    assert_eq!(copies(0), 0);
    // `copies_below` sets where they stop; 0 leaves none (the loop of pairs).
    assert_eq!(copies_with(16, 5), 4);
    assert_eq!(copies_with(16, 0), 0);
    assert_eq!(copies_with(32, 0), 0);
}

#[test]
fn the_csr_row_loop_computes_its_rebased_bases_once_and_spills_nothing() {
    // A row's loads read `(buf - pos[0] · size) + q · size`: the first
    // sum is the same for every row, and must be computed once, before the
    // row loop, on every path through it (the short rows' loop, the long
    // rows' partials, the straight copies). Two things kept Cranelift from
    // hoisting it: each check's own failure block (a block outside every
    // loop, which made the elaborator forget the row loop for the blocks it
    // visited after it: now one exit block, dominated by the entry alone),
    // and the multiply by the constant `-size` (a constant is placed one
    // loop out from its first use, the long rows' partials loop, and held
    // its user there: now `pos[0]` doubled). Recomputed per row, the
    // bases cost an `imul` and a `lea` each, and their extra live values
    // spilled `out`'s base around the row loop.
    let p = csr32_lowered();
    for trust_ranges in [true, false] {
        for (accumulators, copies_below) in [(4, 0), (4, heddle_codegen_cpu::COPIES_BELOW), (1, 0)] {
            let options =
                Options { accumulators, trust_ranges, fused_multiply_add: false, copies_below, ..Options::default() };
            let asm = disassembly(&p, &options).unwrap();
            let what = format!("{accumulators} accumulators, copies below {copies_below}, trusted {trust_ranges}");
            assert_eq!(asm.matches("imul").count(), 0, "{what}: a base computed by a multiply:\n{asm}");
            assert!(!asm.contains("<offset:"), "{what}: a spill slot:\n{asm}");
            // One block returns, whatever fails (the checked code's column
            // check, the long rows' narrow range check).
            assert_eq!(asm.matches("retq").count(), 1, "{what}:\n{asm}");
        }
    }
}

/// `for j in 0 .. n { acc[j + a] = acc[j + a] + v * d[j + b] }`: a map loop
/// over a written buffer, read only where it is written.
fn row_update(t: heddle_ir::ScalarType) -> LoopProgram {
    let idx_a = bin(BinOp::Add, v("j"), v("a"));
    let body = vec![for_(
        "j",
        i(0),
        v("n"),
        Schedule::Seq,
        vec![
            let_("p", t, load("acc", idx_a.clone(), 0)),
            let_("q", t, bin(BinOp::Mul, v("s"), load("d", bin(BinOp::Add, v("j"), v("b")), 0))),
            store("acc", idx_a, 0, bin(BinOp::Add, v("p"), v("q"))),
        ],
    )];
    program(
        "row_update",
        vec![
            arg("n", heddle_ir::loops::ArgKind::Nat),
            arg("a", heddle_ir::loops::ArgKind::Nat),
            arg("b", heddle_ir::loops::ArgKind::Nat),
            arg("s", heddle_ir::loops::ArgKind::Scalar(t)),
            input("d", &[t], "n + b"),
            output("acc", &[t], "n + a"),
        ],
        body,
        0,
    )
}

#[test]
fn map_loops_in_vector_lanes_equal_the_scalar_loop() {
    for n in [0usize, 1, 3, 4, 5, 7, 8, 9, 33] {
        let p = row_update(F32);
        let d: Vec<f32> = (0..n + 2).map(|k| k as f32 * 0.5 - 3.0).collect();
        let mut results = Vec::new();
        for vectorize in [false, true] {
            let k = compile_with(&p, &Options { vectorize, ..Options::default() }).unwrap();
            let mut acc: Vec<f32> = (0..n + 1).map(|k| k as f32).collect();
            let mut d = d.clone();
            call(
                &k,
                &[
                    ArgValue::Nat(n as i64),
                    ArgValue::Nat(1),
                    ArgValue::Nat(2),
                    ArgValue::Float(1.5),
                    buf(&mut d),
                    buf(&mut acc),
                ],
            )
            .unwrap();
            results.push(acc);
        }
        assert_eq!(results[0], results[1], "n = {n}");
        let want: Vec<f32> = (0..n + 1).map(|k| if k == 0 { 0.0 } else { k as f32 + 1.5 * d[k - 1 + 2] }).collect();
        assert_eq!(results[1], want, "n = {n}");
    }
    let asm = disassembly(&row_update(F32), &Options::default()).unwrap();
    assert!(asm.contains("mulps"), "the map loop should multiply four lanes at once:\n{asm}");
}

#[test]
fn dot_products_in_vector_lanes_agree_within_rounding() {
    // out[0] = Σ x[k] · y[k]: contiguous loads, vector accumulators.
    let body = vec![
        var_("acc", F32, Expr::Float(0.0, F32)),
        for_(
            "k",
            i(0),
            v("n"),
            Schedule::Seq,
            vec![assign("acc", bin(BinOp::Add, v("acc"), bin(BinOp::Mul, load("x", v("k"), 0), load("y", v("k"), 0))))],
        ),
        store("out", i(0), 0, v("acc")),
    ];
    let mut p = program(
        "dot",
        vec![
            arg("n", heddle_ir::loops::ArgKind::Nat),
            input("x", &[F32], "n"),
            input("y", &[F32], "n"),
            output("out", &[F32], "1"),
        ],
        body,
        0,
    );
    p.reassociable.push("acc".into());
    let unfused = Options { fused_multiply_add: false, ..Options::default() };
    let asm = disassembly(&p, &unfused).unwrap();
    assert!(asm.contains("mulps") && asm.contains("addps"), "{asm}");
    // Fused, the lanes multiply-add in one packed instruction.
    let fusing = Options { fused_multiply_add: true, ..Options::default() };
    let fused = disassembly(&p, &fusing).unwrap();
    assert_eq!(fused.lines().any(|l| l.contains("vfmadd") && l.contains("ps ")), host_has_fma(), "{fused}");
    for (n, options) in [0usize, 1, 7, 8, 9, 31, 100, 1001].into_iter().flat_map(|n| [(n, unfused), (n, fusing)]) {
        let mut x: Vec<f32> = (0..n).map(|k| ((k * 37) % 23) as f32 - 11.0).collect();
        let mut y: Vec<f32> = (0..n).map(|k| ((k * 11) % 7) as f32 * 0.25).collect();
        let exact: f64 = x.iter().zip(&y).map(|(a, b)| *a as f64 * *b as f64).sum();
        let scale: f64 = x.iter().zip(&y).map(|(a, b)| (*a as f64 * *b as f64).abs()).sum();
        let k = compile_with(&p, &options).unwrap();
        let mut out = [f32::NAN];
        call(&k, &[ArgValue::Nat(n as i64), buf(&mut x), buf(&mut y), buf(&mut out)]).unwrap();
        assert!(
            (out[0] as f64 - exact).abs() <= 2.0 * n as f64 * f32::EPSILON as f64 * scale,
            "n = {n}, {options:?}: {} vs {exact}",
            out[0]
        );
    }
}

#[test]
fn lazy_lets_with_branchy_values_and_shadowing() {
    // `let s = select(i == 0, 0, off[i])` has a load in an arm (a branch),
    // and `let t = t + s` reads the name it shadows: both must evaluate once,
    // in order, to what they say.
    let body = vec![for_(
        "i",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![
            let_(
                "s",
                I64,
                Expr::Select(Box::new(bin(BinOp::Eq, v("i"), i(0))), Box::new(i(0)), Box::new(load("off", v("i"), 0))),
            ),
            let_("t", I64, load("off", v("i"), 0)),
            let_("t", I64, bin(BinOp::Add, v("t"), v("s"))),
            store("out", v("i"), 0, v("t")),
        ],
    )];
    let p = program(
        "lazy",
        vec![arg("n", heddle_ir::loops::ArgKind::Nat), input("off", &[I64], "n"), output("out", &[I64], "n")],
        body,
        0,
    );
    let k = compile_with(&p, &Options::default()).unwrap();
    let mut off = [5i64, 7, 11];
    let mut out = [0i64; 3];
    call(&k, &[ArgValue::Nat(3), buf(&mut off), buf(&mut out)]).unwrap();
    assert_eq!(out, [5, 14, 22]);
}

const U32: heddle_ir::ScalarType = heddle_ir::ScalarType::U32;

/// CSR SpMV as lowering writes it for `posWidth = crdWidth = 32` (see
/// `heddle compile examples/sparse/spmv_csr.hdl --target loops`): the
/// buffers hold positions `pos[0] ..`, a row's entries are read at
/// `k + (pos[i] - pos[0])`, `k` an `int`, and a column outside `m` fails check 0.
pub(crate) fn csr32_lowered() -> LoopProgram {
    let body = vec![for_(
        "i",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![
            var_("acc", F64, Expr::Float(0.0, F64)),
            let_("start", I64, bin(BinOp::Sub, cast(I64, load("pos", v("i"), 0)), cast(I64, load("pos", i(0), 0)))),
            let_("start1", I64, v("start")),
            for_(
                "k",
                i(0),
                bin(
                    BinOp::Sub,
                    cast(I64, load("pos", bin(BinOp::Add, v("i"), i(1)), 0)),
                    cast(I64, load("pos", v("i"), 0)),
                ),
                Schedule::Seq,
                vec![
                    let_("p", I32, cast(I32, v("k"))),
                    let_("idx1", I64, cast(I64, v("p"))),
                    let_("e1", U32, load("crd", bin(BinOp::Add, v("idx1"), v("start")), 0)),
                    let_("e2", F64, load("values", bin(BinOp::Add, v("idx1"), v("start1")), 0)),
                    let_("col", I64, cast(I64, v("e1"))),
                    Stmt::Check {
                        cond: bin(BinOp::And, bin(BinOp::Ge, v("col"), i(0)), bin(BinOp::Lt, v("col"), v("m"))),
                        id: 0,
                    },
                    assign("acc", bin(BinOp::Add, v("acc"), bin(BinOp::Mul, v("e2"), load("xs", v("col"), 0)))),
                ],
            ),
            store("out", v("i"), 0, v("acc")),
        ],
    )];
    let mut p = program(
        "spmv_csr32",
        vec![
            arg("n", heddle_ir::loops::ArgKind::Nat),
            arg("m", heddle_ir::loops::ArgKind::Nat),
            input("pos", &[U32], "n + 1"),
            input("crd", &[U32], "toNat(pos@n) - toNat(pos@0)"),
            input("values", &[F64], "toNat(pos@n) - toNat(pos@0)"),
            input("xs", &[F64], "m"),
            output("out", &[F64], "n"),
        ],
        body,
        1,
    );
    p.reassociable.push("acc".into());
    p.ranges.push(InputRange { buf: "crd".into(), field: 0, below: v("m") });
    p
}

/// Rows of `lens` entries (columns spread over `m`, distinct and sorted),
/// positions starting at `base`: (pos, crd, values).
fn csr32_rows(lens: &[i64], base: u32, m: u32) -> (Vec<u32>, Vec<u32>, Vec<f64>) {
    let mut pos = vec![base];
    let (mut crd, mut values) = (Vec::new(), Vec::new());
    let mut seed = 12345u64;
    for (r, &len) in lens.iter().enumerate() {
        let len = len.max(0) as u32;
        for e in 0..len {
            crd.push((e * 7 + r as u32) % m);
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            values.push(((seed >> 33) as f64 / (1u64 << 31) as f64) - 0.5);
        }
        pos.push(pos[r] + len);
    }
    (pos, crd, values)
}

/// The independent reference for CSR rows from [`csr32_rows`] (positions from
/// `base`): the dense matrix times `xs`, and each row's entries summed in
/// order (what `reduceSeq` and one accumulator give).
fn csr32_reference(pos: &[u32], crd: &[u32], values: &[f64], base: u32, xs: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = pos.len() - 1;
    let mut dense = vec![vec![0.0f64; xs.len()]; n];
    let mut in_order = vec![0.0f64; n];
    for r in 0..n {
        for p in pos[r]..pos[r + 1] {
            let q = (p - base) as usize;
            dense[r][crd[q] as usize] += values[q];
            in_order[r] += values[q] * xs[crd[q] as usize];
        }
    }
    let want = dense.iter().map(|row| row.iter().zip(xs).map(|(a, x)| a * x).sum()).collect();
    (want, in_order)
}

#[test]
fn csr_rows_of_every_length_from_an_offset_position_equal_a_dense_product() {
    // Empty rows first and last, rows around the pair step (1, 2, 3), around
    // `COPIES_BELOW` (7, 8, 9), around `short_loop` (15, 16, 17; 31, 32, 33)
    // and long ones; positions from 5, not 0.
    let lens = [0, 0, 1, 2, 3, 15, 0, 16, 17, 1000, 4, 5, 6, 7, 8, 9, 10, 0, 31, 32, 33, 0];
    let m = 1100u32;
    let (pos, mut crd, mut values) = csr32_rows(&lens, 5, m);
    for (r, &len) in lens.iter().enumerate() {
        // Distinct sorted columns per row.
        let s = (pos[r] - 5) as usize;
        for e in 0..len as usize {
            crd[s + e] = ((e * 1100 / len.max(1) as usize) as u32 + r as u32) % m;
        }
        crd[s..s + len as usize].sort_unstable();
    }
    let mut xs: Vec<f64> = (0..m).map(|j| f64::from(j % 13) * 0.25 - 1.0).collect();
    let n = lens.len();
    let (want, in_order) = csr32_reference(&pos, &crd, &values, 5, &xs);
    let p = csr32_lowered();
    p.validate().unwrap();
    for trust_ranges in [false, true] {
        for (accumulators, short_loop, copies_below) in
            [(1, 16, 8), (4, 16, 8), (4, 0, 8), (2, 4, 8), (4, 32, 8), (4, 9, 8), (4, 16, 0), (4, 32, 0), (4, 16, 5)]
        {
            let options = Options {
                accumulators,
                short_loop,
                trust_ranges,
                fused_multiply_add: false,
                copies_below,
                ..Options::default()
            };
            let k = compile_with(&p, &options).unwrap();
            let mut out = vec![f64::NAN; n];
            let (mut pos, mut crd) = (pos.clone(), crd.clone());
            call(
                &k,
                &[
                    ArgValue::Nat(n as i64),
                    ArgValue::Nat(i64::from(m)),
                    buf(&mut pos),
                    buf(&mut crd),
                    buf(&mut values),
                    buf(&mut xs),
                    buf(&mut out),
                ],
            )
            .unwrap();
            for r in 0..n {
                let what = format!(
                    "row {r} of {} entries, {accumulators} accumulators, short loops below {short_loop}, copies below \
                     {copies_below}, trusted {trust_ranges}",
                    lens[r]
                );
                assert!(
                    (out[r] - want[r]).abs() <= 1e-12 * (1.0 + want[r].abs()),
                    "{what}: {} against {}",
                    out[r],
                    want[r]
                );
                // Below `short_loop` entries (and with one accumulator) the sum runs in order.
                if accumulators == 1 || lens[r] < short_loop as i64 {
                    assert_eq!(out[r].to_bits(), in_order[r].to_bits(), "{what}");
                }
            }
        }
    }
}

#[test]
fn csr_rows_with_decreasing_positions_are_empty() {
    // The kernel alone (the host rejects such positions before a run): a
    // row whose end lies before its start has no entries, odd or even.
    let p = csr32_lowered();
    let mut pos = vec![3u32, 6, 4, 3, 5, 7];
    let mut crd = vec![0u32, 1, 2, 3];
    let mut values = vec![1.0f64, 2.0, 4.0, 8.0];
    let mut xs = vec![1.0f64, 10.0, 100.0, 1000.0];
    for accumulators in [1, 4] {
        let k = compile_with(&p, &Options { accumulators, ..Options::default() }).unwrap();
        let mut out = vec![f64::NAN; 5];
        call(
            &k,
            &[
                ArgValue::Nat(5),
                ArgValue::Nat(4),
                buf(&mut pos),
                buf(&mut crd),
                buf(&mut values),
                buf(&mut xs),
                buf(&mut out),
            ],
        )
        .unwrap();
        // Row 0: entries 0 .. 3; rows 1 (length -2) and 2 (-1) empty; rows 3, 4: entries 0, 1 and 2, 3.
        assert_eq!(out, vec![421.0, 0.0, 0.0, 21.0, 8400.0], "{accumulators} accumulators");
    }
}

#[test]
fn a_bad_column_is_reported_from_every_part_of_the_row_loop_unless_trusted() {
    // The bad column in a row's odd first entry, in a pair, in the last
    // entry of a short row, and in the partials of a long row.
    let lens = [3i64, 4, 15, 40];
    let m = 50u32;
    for (row, entry) in [(0usize, 0usize), (0, 2), (1, 1), (1, 3), (2, 14), (3, 0), (3, 37)] {
        let (mut pos, mut crd, mut values) = csr32_rows(&lens, 7, m);
        let s = (pos[row] - 7) as usize;
        crd[s + entry] = m;
        let mut xs = vec![1.0f64; m as usize + 8];
        for (accumulators, trust_ranges) in [(1, false), (4, false), (4, true)] {
            let k =
                compile_with(&csr32_lowered(), &Options { accumulators, trust_ranges, ..Options::default() }).unwrap();
            let mut out = vec![0.0f64; lens.len()];
            let got = call(
                &k,
                &[
                    ArgValue::Nat(lens.len() as i64),
                    ArgValue::Nat(i64::from(m)),
                    buf(&mut pos),
                    buf(&mut crd),
                    buf(&mut values),
                    buf(&mut xs),
                    buf(&mut out),
                ],
            );
            let want = if trust_ranges { Ok(()) } else { Err(Fault::Check(0)) };
            assert_eq!(
                got, want,
                "column {m} at entry {entry} of row {row}, {accumulators} accumulators, trusted {trust_ranges}"
            );
        }
    }
}

#[test]
fn a_carried_row_start_is_right_in_every_chunk_on_any_number_of_threads() {
    // Each row's start is the previous row's end, carried in a loop variable
    // and loaded afresh where a call's range starts (reduce.rs, carry.rs):
    // empty rows between long ones, every row length below `short_loop`
    // (the jump table's copies) and above it, positions from 9, and calls
    // over chunks that start anywhere, 1 to 4 threads at a time.
    let lens = [0i64, 40, 0, 0, 17, 0, 1, 0, 2, 3, 0, 33, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 1, 64, 0];
    let m = 97u32;
    let (pos, crd, values) = csr32_rows(&lens, 9, m);
    let xs: Vec<f64> = (0..m).map(|j| f64::from(j % 11) * 0.5 - 2.0).collect();
    let n = lens.len();
    let (want, in_order) = csr32_reference(&pos, &crd, &values, 9, &xs);
    for (accumulators, trust_ranges) in [(4, false), (4, true), (1, true)] {
        let k = compile_with(
            &csr32_lowered(),
            &Options { accumulators, trust_ranges, fused_multiply_add: false, ..Options::default() },
        )
        .unwrap();
        for threads in 1..=4usize {
            for chunk in [1usize, 2, 3, 7, 13, n] {
                let mut out = vec![f64::NAN; n];
                let out_addr = out.as_mut_ptr() as usize;
                let starts: Vec<usize> = (0..n).step_by(chunk).collect();
                std::thread::scope(|s| {
                    for t in 0..threads {
                        let (k, starts, pos, crd, values, xs) = (&k, &starts, &pos, &crd, &values, &xs);
                        s.spawn(move || {
                            for &lo in starts.iter().skip(t).step_by(threads) {
                                let hi = (lo + chunk).min(n);
                                let args = [
                                    ArgValue::Nat(n as i64),
                                    ArgValue::Nat(i64::from(m)),
                                    ArgValue::Buffer(pos.as_ptr() as *mut u8),
                                    ArgValue::Buffer(crd.as_ptr() as *mut u8),
                                    ArgValue::Buffer(values.as_ptr() as *mut u8),
                                    ArgValue::Buffer(xs.as_ptr() as *mut u8),
                                    ArgValue::Buffer(out_addr as *mut u8),
                                ];
                                // SAFETY: the buffers are as long as the program
                                // indexes them; the inputs are only read, and the
                                // calls' ranges (rows) are disjoint.
                                unsafe { k.call(&args, (lo as i64, hi as i64)) }.unwrap();
                            }
                        });
                    }
                });
                for r in 0..n {
                    let what = format!(
                        "row {r} of {} entries, chunks of {chunk} on {threads} threads, {accumulators} accumulators",
                        lens[r]
                    );
                    assert!(
                        (out[r] - want[r]).abs() <= 1e-12 * (1.0 + want[r].abs()),
                        "{what}: {} against {}",
                        out[r],
                        want[r]
                    );
                    if accumulators == 1 || lens[r] < 16 {
                        assert_eq!(out[r].to_bits(), in_order[r].to_bits(), "{what}");
                    }
                }
            }
        }
    }
}

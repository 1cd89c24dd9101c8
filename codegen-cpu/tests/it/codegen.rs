//! One test per statement and expression kind, on hand-written loop programs,
//! against values computed here in Rust with the interpreter's semantics.

use crate::common;

use common::*;
use heddle_codegen_cpu::{ArgValue, CodegenError, Fault, compile};
use heddle_ir::ScalarType;
use heddle_ir::loops::{ArgKind, BinOp, Expr, Schedule, Space, Stmt};

/// Little-endian bytes of `x` at type `t` (integers by their low bits).
fn encode(t: ScalarType, x: f64, out: &mut Vec<u8>) {
    match t {
        ScalarType::F32 => out.extend((x as f32).to_le_bytes()),
        ScalarType::F64 => out.extend(x.to_le_bytes()),
        // Negative values by their two's complement, large unsigned ones exactly.
        _ if x < 0.0 => out.extend(&(x as i64).to_le_bytes()[..t.size_bytes()]),
        _ => out.extend(&(x as u64).to_le_bytes()[..t.size_bytes()]),
    }
}

/// The value of the `k`-th element of `bytes` at type `t`, as f64 (integers
/// sign- or zero-extended; all test values fit f64 exactly).
fn decode(t: ScalarType, bytes: &[u8], k: usize) -> f64 {
    let s = t.size_bytes();
    let b = &bytes[k * s..(k + 1) * s];
    match t {
        ScalarType::F32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
        ScalarType::F64 => f64::from_le_bytes(b.try_into().unwrap()),
        _ => {
            let mut w = [0u8; 8];
            w[..s].copy_from_slice(b);
            let u = u64::from_le_bytes(w);
            let shift = 64 - 8 * s as u32;
            if t.is_signed() { ((u << shift) as i64 >> shift) as f64 } else { u as f64 }
        }
    }
}

/// `out[k] = f(a[k], b[k])` for every pair, in an 8-byte aligned buffer.
fn elementwise(t_in: ScalarType, t_out: ScalarType, f: Expr, pairs: &[(f64, f64)]) -> Result<Vec<f64>, Fault> {
    let body = vec![for_(
        "k",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![let_("x", t_in, load("a", v("k"), 0)), let_("y", t_in, load("b", v("k"), 0)), store("out", v("k"), 0, f)],
    )];
    let prog = program(
        "elementwise",
        vec![arg("n", ArgKind::Nat), input("a", &[t_in], "n"), input("b", &[t_in], "n"), output("out", &[t_out], "n")],
        body,
        0,
    );
    let k = compile(&prog).expect("compiles");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (x, y) in pairs {
        encode(t_in, *x, &mut a);
        encode(t_in, *y, &mut b);
    }
    // u64 storage keeps every buffer 8-byte aligned.
    let words = |bytes: &[u8]| -> Vec<u64> {
        let mut w = vec![0u64; bytes.len().div_ceil(8) + 1];
        for (k, c) in bytes.iter().enumerate() {
            w[k / 8] |= u64::from(*c) << (8 * (k % 8));
        }
        w
    };
    let (mut aw, mut bw) = (words(&a), words(&b));
    let mut out = vec![0u64; pairs.len() + 1];
    call(&k, &[ArgValue::Nat(pairs.len() as i64), buf(&mut aw), buf(&mut bw), buf(&mut out)])?;
    let bytes: Vec<u8> = out.iter().flat_map(|w| w.to_le_bytes()).collect();
    Ok((0..pairs.len()).map(|k| decode(t_out, &bytes, k)).collect())
}

fn xy(op: BinOp) -> Expr {
    bin(op, v("x"), v("y"))
}

const INTS: [ScalarType; 8] = [
    ScalarType::I8,
    ScalarType::I16,
    ScalarType::I32,
    ScalarType::I64,
    ScalarType::U8,
    ScalarType::U16,
    ScalarType::U32,
    ScalarType::U64,
];

/// The interpreter's integer semantics on values already at width `t`.
fn int_ref(op: BinOp, x: i128, y: i128, t: ScalarType) -> f64 {
    let bits = 8 * t.size_bytes() as u32;
    let wrap = |v: i128| -> f64 {
        let m = v.rem_euclid(1i128 << bits);
        (if t.is_signed() && m >= 1i128 << (bits - 1) { m - (1i128 << bits) } else { m }) as f64
    };
    match op {
        BinOp::Add => wrap(x + y),
        BinOp::Sub => wrap(x - y),
        BinOp::Mul => wrap(x * y),
        BinOp::Div => wrap(x / y),
        BinOp::Rem => wrap(x % y),
        BinOp::Min => x.min(y) as f64,
        BinOp::Max => x.max(y) as f64,
        BinOp::Lt => f64::from(u8::from(x < y)),
        BinOp::Ge => f64::from(u8::from(x >= y)),
        BinOp::Eq => f64::from(u8::from(x == y)),
        _ => unreachable!(),
    }
}

#[test]
fn integer_arithmetic_wraps_and_truncates_at_every_width() {
    for t in INTS {
        let bits = 8 * t.size_bytes() as u32;
        let (lo, hi): (i128, i128) =
            if t.is_signed() { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
        let samples = [lo, lo + 1, -7, -1, 0, 1, 3, 7, 100, hi - 1, hi];
        let vals: Vec<i128> = samples.into_iter().filter(|x| *x >= lo && *x <= hi).collect();
        let mut pairs = Vec::new();
        for x in &vals {
            for y in &vals {
                if *y != 0 {
                    pairs.push((*x, *y));
                }
            }
        }
        // f64 cannot hold every 64-bit value: keep those pairs exact or skip them.
        let exact = |x: i128| (x as f64) as i128 == x;
        pairs.retain(|(x, y)| exact(*x) && exact(*y));
        let fp: Vec<(f64, f64)> = pairs.iter().map(|(x, y)| (*x as f64, *y as f64)).collect();
        for op in [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Rem, BinOp::Min, BinOp::Max] {
            let got = elementwise(t, t, xy(op), &fp).unwrap();
            for ((x, y), g) in pairs.iter().zip(&got) {
                let want = int_ref(op, *x, *y, t);
                if exact(want as i128) {
                    assert_eq!(*g, want, "{t:?} {x} {op:?} {y}");
                }
            }
        }
        for op in [BinOp::Lt, BinOp::Ge, BinOp::Eq] {
            let got = elementwise(t, ScalarType::Bool, xy(op), &fp).unwrap();
            for ((x, y), g) in pairs.iter().zip(&got) {
                assert_eq!(*g, int_ref(op, *x, *y, t), "{t:?} {x} {op:?} {y}");
            }
        }
    }
}

#[test]
fn integer_division_by_zero_is_a_fault_not_a_crash() {
    for t in INTS {
        for op in [BinOp::Div, BinOp::Rem] {
            let r = elementwise(t, t, xy(op), &[(5.0, 1.0), (5.0, 0.0)]);
            assert_eq!(r, Err(Fault::DivisionByZero), "{t:?} {op:?}");
        }
    }
}

#[test]
fn float_arithmetic_is_ieee_and_min_max_ignore_nan() {
    let pairs = [(1.5, 2.25), (-3.0, 0.1), (1e30, 1e-30), (f64::NAN, 1.0), (2.0, f64::NAN), (7.5, -2.0), (0.0, 0.0)];
    for t in [F32, F64] {
        let r = |x: f64| if t == F32 { x as f32 as f64 } else { x };
        for op in [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Rem, BinOp::Min, BinOp::Max] {
            let got = elementwise(t, t, xy(op), &pairs).unwrap();
            for ((x, y), g) in pairs.iter().zip(&got) {
                let (x, y) = (r(*x), r(*y));
                let want = r(match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div => x / y,
                    BinOp::Rem => x % y,
                    BinOp::Min => x.min(y),
                    _ => x.max(y),
                });
                assert!(
                    want.to_bits() == g.to_bits() || (want.is_nan() && g.is_nan()),
                    "{t:?} {x} {op:?} {y}: {g} != {want}"
                );
            }
        }
        for op in [BinOp::Eq, BinOp::Ne, BinOp::Lt, BinOp::Le, BinOp::Gt, BinOp::Ge] {
            let got = elementwise(t, ScalarType::Bool, xy(op), &pairs).unwrap();
            for ((x, y), g) in pairs.iter().zip(&got) {
                let (x, y) = (r(*x), r(*y));
                let want = match op {
                    BinOp::Eq => x == y,
                    BinOp::Ne => x != y,
                    BinOp::Lt => x < y,
                    BinOp::Le => x <= y,
                    BinOp::Gt => x > y,
                    _ => x >= y,
                };
                assert_eq!(*g, f64::from(u8::from(want)), "{t:?} {x} {op:?} {y}");
            }
        }
    }
}

#[test]
fn unary_operators_select_and_logic() {
    let pairs = [(1.0, 2.0), (-3.0, -3.0), (0.0, 5.0), (4.0, 0.0)];
    let neg = elementwise(I32, I32, Expr::Neg(Box::new(v("x"))), &pairs).unwrap();
    assert_eq!(neg, vec![-1.0, 3.0, 0.0, -4.0]);
    let fneg = elementwise(F64, F64, Expr::Neg(Box::new(v("x"))), &pairs).unwrap();
    assert_eq!(fneg[0], -1.0);
    let not = elementwise(I32, ScalarType::Bool, Expr::Not(Box::new(v("x"))), &pairs).unwrap();
    assert_eq!(not, vec![0.0, 0.0, 1.0, 0.0]);
    let sel = Expr::Select(Box::new(bin(BinOp::Lt, v("x"), v("y"))), Box::new(v("x")), Box::new(v("y")));
    assert_eq!(elementwise(I32, I32, sel, &pairs).unwrap(), vec![1.0, -3.0, 0.0, 0.0]);
    let both = bin(BinOp::And, bin(BinOp::Gt, v("x"), i32c(0)), bin(BinOp::Gt, v("y"), i32c(0)));
    assert_eq!(elementwise(I32, ScalarType::Bool, both, &pairs).unwrap(), vec![1.0, 0.0, 0.0, 0.0]);
    let either = bin(BinOp::Or, bin(BinOp::Gt, v("x"), i32c(0)), bin(BinOp::Gt, v("y"), i32c(0)));
    assert_eq!(elementwise(I32, ScalarType::Bool, either, &pairs).unwrap(), vec![1.0, 0.0, 1.0, 1.0]);
}

fn i32c(k: i64) -> Expr {
    Expr::Int(k, I32)
}

#[test]
fn short_circuit_skips_a_division_by_zero() {
    // `y != 0 && x / y > 1` and `y == 0 ? 0 : x / y` never divide by zero.
    let pairs = [(6.0, 2.0), (6.0, 0.0)];
    let guarded = bin(BinOp::And, bin(BinOp::Ne, v("y"), i32c(0)), bin(BinOp::Gt, xy(BinOp::Div), i32c(1)));
    assert_eq!(elementwise(I32, ScalarType::Bool, guarded, &pairs).unwrap(), vec![1.0, 0.0]);
    let sel = Expr::Select(Box::new(bin(BinOp::Eq, v("y"), i32c(0))), Box::new(i32c(0)), Box::new(xy(BinOp::Div)));
    assert_eq!(elementwise(I32, I32, sel, &pairs).unwrap(), vec![3.0, 0.0]);
}

#[test]
fn casts_extend_truncate_and_saturate() {
    let pairs = [(-1.0, 0.0), (300.0, 0.0), (1e10, 0.0), (-1e10, 0.0), (f64::NAN, 0.0), (2.75, 0.0)];
    // Float to integer saturates like Rust's `as`.
    let got = elementwise(F64, ScalarType::I8, cast(ScalarType::I8, v("x")), &pairs).unwrap();
    let want: Vec<f64> = pairs.iter().map(|(x, _)| f64::from(*x as i8)).collect();
    assert_eq!(got, want);
    let got = elementwise(F64, ScalarType::U32, cast(ScalarType::U32, v("x")), &pairs).unwrap();
    let want: Vec<f64> = pairs.iter().map(|(x, _)| f64::from(*x as u32)).collect();
    assert_eq!(got, want);
    // Integer to integer: truncation, sign and zero extension.
    let ints = [(-1.0, 0.0), (300.0, 0.0), (-129.0, 0.0)];
    let got = elementwise(I32, ScalarType::U8, cast(ScalarType::U8, v("x")), &ints).unwrap();
    assert_eq!(got, vec![255.0, 44.0, 127.0]);
    let got = elementwise(ScalarType::I16, I64, cast(I64, v("x")), &ints).unwrap();
    assert_eq!(got, vec![-1.0, 300.0, -129.0]);
    let got = elementwise(ScalarType::U16, I64, cast(I64, v("x")), &ints).unwrap();
    assert_eq!(got, vec![65535.0, 300.0, 65407.0]);
    // To and from bool, to float.
    let got = elementwise(F32, ScalarType::Bool, cast(ScalarType::Bool, v("x")), &[(0.0, 0.0), (-0.5, 0.0)]).unwrap();
    assert_eq!(got, vec![0.0, 1.0]);
    let got = elementwise(ScalarType::U8, F32, cast(F32, v("x")), &[(255.0, 0.0)]).unwrap();
    assert_eq!(got, vec![255.0]);
    let got = elementwise(ScalarType::U64, F64, cast(F64, v("x")), &[(18446744073709549568.0, 0.0)]).unwrap();
    assert_eq!(got, vec![18446744073709549568.0]);
    let got = elementwise(F64, F32, cast(F32, v("x")), &[(0.1, 0.0)]).unwrap();
    assert_eq!(got, vec![0.1f32 as f64]);
}

#[test]
fn records_with_several_fields_and_a_check() {
    let k = compile(&csr_packed()).unwrap();
    let offset = [0i32, 2, 2, 5];
    let mut values = vec![
        Entry { col: 0, val: 1.0 },
        Entry { col: 2, val: 2.0 },
        Entry { col: 1, val: 3.0 },
        Entry { col: 0, val: 4.0 },
        Entry { col: 2, val: 0.5 },
    ];
    let mut xs = [1.0f32, 10.0, 100.0];
    let mut out = [f32::NAN; 3];
    let mut off = offset;
    let args = |o: &mut [i32], vals: &mut [Entry], x: &mut [f32], out: &mut [f32]| {
        vec![ArgValue::Nat(3), ArgValue::Nat(3), buf(o), buf(vals), buf(x), buf(out)]
    };
    call(&k, &args(&mut off, &mut values, &mut xs, &mut out)).unwrap();
    assert_eq!(out, [201.0, 0.0, 84.0]);
    // Running the parallel loop in two chunks gives the same result.
    let mut out2 = [f32::NAN; 3];
    let a = args(&mut off, &mut values, &mut xs, &mut out2);
    // SAFETY: buffers as above; the two calls are sequential.
    unsafe {
        k.call(&a, (0, 1)).unwrap();
        k.call(&a, (1, 99)).unwrap();
    }
    assert_eq!(out2, out);
    assert!(k.splittable());
    // A column out of range fails check 0 instead of reading past xs.
    values[3].col = 3;
    assert_eq!(call(&k, &args(&mut off, &mut values, &mut xs, &mut out)), Err(Fault::Check(0)));
    values[3].col = -1;
    assert_eq!(call(&k, &args(&mut off, &mut values, &mut xs, &mut out)), Err(Fault::Check(0)));
}

#[test]
fn if_else_and_mutable_locals() {
    // out[k] = if a[k] > 0 { a[k] * 2 } else { -1 }, through a `var`.
    let body = vec![for_(
        "k",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![
            var_("r", I32, i32c(-1)),
            Stmt::If {
                cond: bin(BinOp::Gt, load("a", v("k"), 0), i32c(0)),
                then: vec![assign("r", bin(BinOp::Mul, load("a", v("k"), 0), i32c(2)))],
                els: vec![],
            },
            store("out", v("k"), 0, v("r")),
        ],
    )];
    let prog =
        program("if", vec![arg("n", ArgKind::Nat), input("a", &[I32], "n"), output("out", &[I32], "n")], body, 0);
    let k = compile(&prog).unwrap();
    let mut a = [3i32, -2, 0, 7];
    let mut out = [0i32; 4];
    call(&k, &[ArgValue::Nat(4), buf(&mut a), buf(&mut out)]).unwrap();
    assert_eq!(out, [6, -1, -1, 14]);
}

/// Reverses each chunk of 4 through a private temporary of `len` records.
fn reverse_through_temp(len: Expr) -> Vec<i64> {
    let body = vec![for_(
        "c",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![
            Stmt::Alloc { buf: "t".into(), fields: vec![I64, ScalarType::U8], len, space: Space::Private },
            for_(
                "j",
                i(0),
                i(4),
                Schedule::Seq,
                vec![
                    store("t", v("j"), 0, load("a", bin(BinOp::Add, bin(BinOp::Mul, v("c"), i(4)), v("j")), 0)),
                    store("t", v("j"), 1, Expr::Int(1, ScalarType::U8)),
                ],
            ),
            for_(
                "j",
                i(0),
                i(4),
                Schedule::Seq,
                vec![store(
                    "out",
                    bin(BinOp::Add, bin(BinOp::Mul, v("c"), i(4)), v("j")),
                    0,
                    bin(BinOp::Mul, load("t", bin(BinOp::Sub, i(3), v("j")), 0), cast(I64, load("t", v("j"), 1))),
                )],
            ),
        ],
    )];
    let prog = program(
        "temp",
        vec![arg("n", ArgKind::Nat), input("a", &[I64], "4 * n"), output("out", &[I64], "4 * n")],
        body,
        0,
    );
    let k = compile(&prog).unwrap();
    let mut a: Vec<i64> = (0..12).collect();
    let mut out = vec![0i64; 12];
    call(&k, &[ArgValue::Nat(3), buf(&mut a), buf(&mut out)]).unwrap();
    out
}

#[test]
fn private_temporaries_on_the_stack_and_on_the_heap() {
    let want = vec![3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8];
    assert_eq!(reverse_through_temp(i(4)), want, "constant length: a stack slot");
    // A length only known at run time (and a large constant) go to the heap.
    assert_eq!(reverse_through_temp(bin(BinOp::Add, v("n"), i(1))), want);
    assert_eq!(reverse_through_temp(i(1 << 20)), want);
}

#[test]
fn hoisted_loads_keep_their_values() {
    // out[i] = Σ_j values[offset[i] + j] for j < len[i]: offset[i] is invariant in j.
    let body = vec![for_(
        "r",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![
            var_("acc", F64, Expr::Float(0.0, F64)),
            for_(
                "j",
                i(0),
                cast(I64, load("len", v("r"), 0)),
                Schedule::Seq,
                vec![assign(
                    "acc",
                    bin(
                        BinOp::Add,
                        v("acc"),
                        load("values", bin(BinOp::Add, cast(I64, load("offset", v("r"), 0)), v("j")), 0),
                    ),
                )],
            ),
            store("out", v("r"), 0, v("acc")),
        ],
    )];
    let prog = program(
        "lil",
        vec![
            arg("n", ArgKind::Nat),
            input("len", &[I32], "n"),
            input("offset", &[I32], "n"),
            input("values", &[F64], "10"),
            output("out", &[F64], "n"),
        ],
        body,
        0,
    );
    let k = compile(&prog).unwrap();
    let mut len = [2i32, 0, 3];
    let mut offset = [0i32, 2, 2];
    let mut values: Vec<f64> = (1..=10).map(f64::from).collect();
    let mut out = [0.0f64; 3];
    call(&k, &[ArgValue::Nat(3), buf(&mut len), buf(&mut offset), buf(&mut values), buf(&mut out)]).unwrap();
    assert_eq!(out, [3.0, 0.0, 12.0]);
    assert!(k.clif().contains("readonly"));
}

#[test]
fn scalar_arguments_of_every_type_and_host_buffers() {
    // out[0] = (f64) s8 + (f64) u16 + f32 + f64 + (b ? 1 : 0) + host[1]
    let mut args = vec![];
    let mut terms = vec![];
    for (name, t) in [("a", ScalarType::I8), ("b", ScalarType::U16), ("c", F32), ("d", F64), ("e", ScalarType::U64)] {
        args.push(arg(name, ArgKind::Scalar(t)));
        terms.push(cast(F64, v(name)));
    }
    args.push(arg("flag", ArgKind::Scalar(ScalarType::Bool)));
    terms.push(Expr::Select(Box::new(v("flag")), Box::new(Expr::Float(1.0, F64)), Box::new(Expr::Float(0.0, F64))));
    args.push(arg("h", ArgKind::Host));
    terms.push(cast(F64, load("h", i(1), 0)));
    args.push(output("out", &[F64], "1"));
    let sum = terms.into_iter().reduce(|a, b| bin(BinOp::Add, a, b)).unwrap();
    let prog = program("scalars", args, vec![store("out", i(0), 0, sum)], 0);
    let k = compile(&prog).unwrap();
    assert!(!k.splittable());
    let mut h = [0i64, 1000];
    let mut out = [0.0f64];
    call(
        &k,
        &[
            ArgValue::Int(-3),
            ArgValue::Int(65535),
            ArgValue::Float(0.5),
            ArgValue::Float(0.25),
            ArgValue::Int(7),
            ArgValue::Bool(true),
            buf(&mut h),
            buf(&mut out),
        ],
    )
    .unwrap();
    assert_eq!(out[0], -3.0 + 65535.0 + 0.5 + 0.25 + 7.0 + 1.0 + 1000.0);
    // Arguments that do not match the parameters are refused before the call.
    let r = call(&k, &[ArgValue::Int(1)]);
    assert!(matches!(r, Err(Fault::BadArguments(_))), "{r:?}");
    let r = call(
        &k,
        &[
            ArgValue::Float(1.0),
            ArgValue::Int(1),
            ArgValue::Float(0.5),
            ArgValue::Float(0.25),
            ArgValue::Int(7),
            ArgValue::Bool(true),
            buf(&mut h),
            buf(&mut out),
        ],
    );
    assert!(matches!(r, Err(Fault::BadArguments(_))), "{r:?}");
}

/// A loop nested in another whose body holds a loop re-loads the arguments
/// it names in its pre-header (`translate/rebase.rs`): the values are the
/// entry's, a `let` that shadows an argument keeps its own value, and a
/// negative natural is refused before the call (loops over `0 .. n` take no
/// test of `n < 0`).
#[test]
fn reloaded_arguments_keep_their_values_and_shadowing() {
    // for i in 0 .. m (parallel) { for z in 0 .. 1 {
    //   for k in 0 .. n { for j in 0 .. n { out[(i*n + k)*n + j] = x[j] + 10k + 100i } }
    //   let n = 2; for k in 0 .. n { for j in 0 .. n { out2[16i + 4k + j] = x[j] + 1000n } }
    // } }
    // (the k loops, nested in two, re-load.)
    let ijk = |e: Expr| cast(F64, e);
    let value = |n: Expr| {
        bin(
            BinOp::Add,
            load("x", v("j"), 0),
            ijk(bin(
                BinOp::Add,
                bin(BinOp::Mul, i(10), v("k")),
                bin(BinOp::Add, bin(BinOp::Mul, i(100), v("i")), bin(BinOp::Mul, i(1000), n)),
            )),
        )
    };
    let at = bin(BinOp::Add, bin(BinOp::Mul, bin(BinOp::Add, bin(BinOp::Mul, v("i"), v("n")), v("k")), v("n")), v("j"));
    let at2 = bin(BinOp::Add, bin(BinOp::Add, bin(BinOp::Mul, i(16), v("i")), bin(BinOp::Mul, i(4), v("k"))), v("j"));
    let body = vec![for_(
        "i",
        i(0),
        v("m"),
        Schedule::Parallel,
        vec![for_(
            "z",
            i(0),
            i(1),
            Schedule::Seq,
            vec![
                for_(
                    "k",
                    i(0),
                    v("n"),
                    Schedule::Seq,
                    vec![for_("j", i(0), v("n"), Schedule::Seq, vec![store("out", at, 0, value(i(0)))])],
                ),
                let_("n", I64, i(2)),
                for_(
                    "k",
                    i(0),
                    v("n"),
                    Schedule::Seq,
                    vec![for_("j", i(0), v("n"), Schedule::Seq, vec![store("out2", at2, 0, value(v("n")))])],
                ),
            ],
        )],
    )];
    let prog = program(
        "reloads",
        vec![
            arg("m", ArgKind::Nat),
            arg("n", ArgKind::Nat),
            input("x", &[F64], "n"),
            output("out", &[F64], "m * n * n"),
            output("out2", &[F64], "16 * m"),
        ],
        body,
        0,
    );
    let k = compile(&prog).unwrap();
    let (m, n) = (3usize, 4usize);
    let mut x: Vec<f64> = (0..n).map(|j| 0.5 * j as f64).collect();
    let mut out = vec![0.0f64; m * n * n];
    let mut out2 = vec![-1.0f64; 16 * m];
    call(&k, &[ArgValue::Nat(m as i64), ArgValue::Nat(n as i64), buf(&mut x), buf(&mut out), buf(&mut out2)]).unwrap();
    for i in 0..m {
        for k in 0..n {
            for j in 0..n {
                assert_eq!(out[(i * n + k) * n + j], x[j] + (10 * k + 100 * i) as f64, "out at {i}, {k}, {j}");
                let want = if k < 2 && j < 2 { x[j] + (10 * k + 100 * i + 2000) as f64 } else { -1.0 };
                assert_eq!(out2[16 * i + 4 * k + j], want, "out2 at {i}, {k}, {j}");
            }
        }
    }
    let r = call(&k, &[ArgValue::Nat(-1), ArgValue::Nat(n as i64), buf(&mut x), buf(&mut out), buf(&mut out2)]);
    assert!(matches!(r, Err(Fault::BadArguments(_))), "{r:?}");
}

#[test]
fn opencl_schedules_run_sequentially_and_barriers_are_no_ops() {
    // for.workgroup(g) { for.local(l) { out[g*2+l] = g*10+l }; barrier }
    let body = vec![for_(
        "g",
        i(0),
        i(3),
        Schedule::Workgroup(0),
        vec![
            for_(
                "l",
                i(0),
                i(2),
                Schedule::Local(0),
                vec![store(
                    "out",
                    bin(BinOp::Add, bin(BinOp::Mul, v("g"), i(2)), v("l")),
                    0,
                    bin(BinOp::Add, bin(BinOp::Mul, v("g"), i(10)), v("l")),
                )],
            ),
            Stmt::Barrier,
        ],
    )];
    let prog = program("ocl", vec![output("out", &[I64], "6")], body, 0);
    let k = compile(&prog).unwrap();
    let mut out = [0i64; 6];
    call(&k, &[buf(&mut out)]).unwrap();
    assert_eq!(out, [0, 1, 10, 11, 20, 21]);
}

#[test]
fn empty_and_reversed_ranges_run_no_iteration() {
    let k = compile(&csr_packed()).unwrap();
    let mut off = [0i32; 1];
    let mut values: [Entry; 0] = [];
    let mut xs = [0.0f32; 1];
    let mut out = [0.0f32; 1];
    call(&k, &[ArgValue::Nat(0), ArgValue::Nat(0), buf(&mut off), buf(&mut values), buf(&mut xs), buf(&mut out)])
        .unwrap();
    let mut off = [0i32, 0];
    let a = [ArgValue::Nat(1), ArgValue::Nat(0), buf(&mut off), buf(&mut values), buf(&mut xs), buf(&mut out)];
    // SAFETY: buffers as long as the program reads with n = 1.
    unsafe { k.call(&a, (5, 2)) }.unwrap();
    assert_eq!(out, [0.0]);
}

#[test]
fn malformed_programs_are_errors() {
    let bad = program("bad", vec![output("out", &[I32], "1")], vec![store("out", i(0), 0, v("nope"))], 0);
    assert!(matches!(compile(&bad), Err(CodegenError::Invalid(_))));
    let bad = program("bad", vec![output("out", &[I32], "1")], vec![store("out", i(0), 0, Expr::Float(1.0, F32))], 0);
    assert!(matches!(heddle_codegen_cpu::clif_text(&bad), Err(CodegenError::Invalid(_))));
    let bad = program("bad", vec![output("out", &[I32], "1")], vec![Stmt::Check { cond: Expr::Bool(true), id: 3 }], 1);
    assert!(matches!(compile(&bad), Err(CodegenError::Invalid(_))));
    let bools = program(
        "bad",
        vec![output("out", &[ScalarType::Bool], "1")],
        vec![store("out", i(0), 0, bin(BinOp::Add, Expr::Bool(true), Expr::Bool(true)))],
        0,
    );
    assert!(matches!(compile(&bools), Err(CodegenError::Unsupported(_))));
}

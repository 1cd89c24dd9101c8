//! Reassociated reductions on the CPU backend (LANGUAGE.md §5): `reduce`
//! may add in any order — the CPU backend unrolls it over several partial
//! accumulators — so a float result may differ from the interpreter's
//! left-to-right sum by rounding, and only by rounding; `reduceSeq` is
//! strictly left to right on every backend, so it equals the interpreter
//! bit for bit.
//!
//! The tolerance for a float sum of `n` terms `x₁ … xₙ` in any order is the
//! classical bound on the rounding error of a recursive sum,
//! `|got − exact| ≤ (n − 1) · ε · Σ|xᵢ|` (ε the unit roundoff), applied to
//! both results: `|cpu − interp| ≤ 2 (n − 1) ε Σ|xᵢ|`. Integer sums,
//! products, `min` and `max` are exact in any order.
//!
//! With `codegen_cpu::Options::fused_multiply_add` (off by default) and a
//! host that has the instruction, a `reduce`'s `acc + a · b` is one fused
//! multiply-add: the product is not rounded on its own, so a dot product of
//! `n` terms may differ by one more rounding per term,
//! `|cpu − interp| ≤ 2 n ε Σ|aᵢ bᵢ|`, the tolerance used here for dot
//! products. `reduceSeq` never fuses.

use crate::common;

use common::Rng;
use heddle::source::SourceFile;
use heddle_runtime::cpu::Parallelism;
use heddle_runtime::interp::Env;
use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;
use serde_json::json;

/// Row sums of a CSR matrix with `reduce` or `reduceSeq`, over `ty`.
fn row_sums(pattern: &str, ty: &str) -> String {
    format!(
        "nFun(n => fun(offset: [int]_{{n + 1}} => fun(values: [i -> [{ty}]_{{toNat(offset@(i + 1) - offset@i)}}]_n =>
           values :>> map({pattern}(+, 0)))))"
    )
}

/// Row dot products `Σ values · xs[col]` (SpMV) in double precision.
fn spmv(pattern: &str) -> String {
    format!(
        "nFun(n => nFun(m => fun(offset: [int]_{{n + 1}} =>
         fun(col_indices: [i -> [int]_{{toNat(offset@(i + 1) - offset@i)}}]_n =>
         fun(values: [i -> [double]_{{toNat(offset@(i + 1) - offset@i)}}]_n => fun(xs: [double]_m =>
           zip(col_indices, values) :>> map(fun(row =>
             zip(row.1, row.2) :>> map(fun(x => x.2 * (xs@x.1))) :>> {pattern}(+, 0)))))))))"
    )
}

/// Four reductions in one pass per row: sum, product, min and max.
fn four_at_once(pattern: &str) -> String {
    format!(
        "nFun(n => fun(offset: [int]_{{n + 1}} => fun(values: [i -> [double]_{{toNat(offset@(i + 1) - offset@i)}}]_n =>
           values :>> map({pattern}(fun(acc, v => (acc.1 + v, acc.2 * v, min(acc.3, v), max(acc.4, v))), (0.0, 1.0, 1.0e300, -1.0e300))))))"
    )
}

fn check(src: &str) -> Kernel {
    let file = SourceFile::new("reassociation.hdl", src);
    heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d))).1
}

/// Rows of every length from 0 to 70 (the unrolled loop's remainders and
/// more), with values from 2⁻²⁰ to 2²⁰ and both signs, so that the order of
/// additions shows in the last bits.
fn rows(rng: &mut Rng, count: usize, ints: bool) -> Vec<Vec<f64>> {
    (0..count)
        .map(|r| {
            (0..(r % 71))
                .map(|_| {
                    if ints {
                        (rng.below(2_000_000_001) as i64 - 1_000_000_000) as f64
                    } else {
                        let scale = 2f64.powi(rng.below(41) as i32 - 20);
                        let sign = if rng.below(2) == 0 { -1.0 } else { 1.0 };
                        sign * scale * (1.0 + rng.below(1 << 20) as f64 / (1 << 20) as f64)
                    }
                })
                .collect()
        })
        .collect()
}

fn bind(kernel: &Kernel, rows: &[Vec<f64>]) -> Env {
    let mut offsets = vec![0usize];
    for r in rows {
        offsets.push(offsets.last().unwrap() + r.len());
    }
    let cols: Vec<usize> = rows.iter().flat_map(|r| (0..r.len()).map(|k| (k * 7) % 50)).collect();
    let xs: Vec<f64> = (0..50).map(|k| 0.75 + k as f64 / 64.0).collect();
    let ints = kernel.params.iter().any(|p| matches!(p, heddle_typeck::KernelParam::Value { name, ty, .. } if name.as_str() == "values" && ty.to_string().contains("int")));
    let values = if ints {
        json!(rows.iter().flatten().map(|x| *x as i64).collect::<Vec<_>>())
    } else {
        json!(rows.iter().flatten().collect::<Vec<_>>())
    };
    let mut inputs: Vec<(String, Loaded)> =
        vec![("offset".into(), Loaded::Json(json!(offsets))), ("values".into(), Loaded::Json(values))];
    if kernel.params.iter().any(|p| p.name().as_str() == "xs") {
        inputs.push(("col_indices".into(), Loaded::Json(json!(cols))));
        inputs.push(("xs".into(), Loaded::Json(json!(xs))));
    }
    bind_inputs(kernel, &[], inputs).unwrap_or_else(|e| panic!("{e}"))
}

/// Both results, row by row, on 1 and 3 threads.
fn results(src: &str, rows: &[Vec<f64>]) -> (Vec<Value>, Vec<Vec<Value>>) {
    let kernel = check(src);
    let env = bind(&kernel, rows);
    let program = heddle::cpu::lower(&kernel, "reassociation").unwrap();
    let interp = heddle_runtime::interp::run_kernel(&kernel, &env).unwrap();
    let items = |v: Value| match v {
        Value::Array(items) => items.to_vec(),
        other => panic!("expected an array, got {other}"),
    };
    let cpu = [1, 3].map(|t| items(heddle::cpu::run(&kernel, &program, &env, Parallelism::always(t)).unwrap()));
    (items(interp), cpu.to_vec())
}

fn float(v: &Value) -> f64 {
    match v {
        Value::Float(x) => *x,
        Value::Int(x) => *x as f64,
        other => panic!("expected a number, got {other}"),
    }
}

/// `|a − b| ≤ 2 (n − 1) ε Σ|terms|`.
fn within_rounding(a: f64, b: f64, terms: &[f64], eps: f64) -> bool {
    let n = terms.len().max(1) as f64;
    let magnitude: f64 = terms.iter().map(|t| t.abs()).sum();
    (a - b).abs() <= 2.0 * (n - 1.0) * eps * magnitude
}

/// `|a − b| ≤ 2 n ε Σ|products|`: a sum of products, each of which one side
/// may round on its own and the other fuse into the add.
fn within_rounding_of_products(a: f64, b: f64, products: &[f64], eps: f64) -> bool {
    let n = products.len() as f64;
    let magnitude: f64 = products.iter().map(|t| t.abs()).sum();
    (a - b).abs() <= 2.0 * n * eps * magnitude
}

/// SpMV (`pattern` `reduce` or `reduceSeq`) of two rows, `[a, b]` and
/// `[a, b, 0, 0, 0]` (the second reaches the unrolled loop: its first entry
/// runs alone, its second goes to the first partial accumulator), with
/// `a = −(1 + 2⁻²⁹)` at column 0, `b = 1 + 2⁻³⁰` at column 1 and
/// `xs = [1, 1 + 2⁻³⁰]`. `b · xs[1] = 1 + 2⁻²⁹ + 2⁻⁶⁰` rounds to `1 + 2⁻²⁹`,
/// which `a` cancels exactly: 0 when the product is rounded on its own,
/// 2⁻⁶⁰ when it is fused into the add. The interpreter's rows, then the
/// CPU backend's on 1 and 3 threads.
fn cancelling_rows(pattern: &str) -> (Vec<f64>, Vec<Vec<f64>>) {
    let kernel = check(&spmv(pattern));
    let (a, b) = (-(1.0 + 2f64.powi(-29)), 1.0 + 2f64.powi(-30));
    let inputs: Vec<(String, Loaded)> = vec![
        ("offset".into(), Loaded::Json(json!([0, 2, 7]))),
        ("col_indices".into(), Loaded::Json(json!([0, 1, 0, 1, 0, 0, 0]))),
        ("values".into(), Loaded::Json(json!([a, b, a, b, 0.0, 0.0, 0.0]))),
        ("xs".into(), Loaded::Json(json!([1.0, 1.0 + 2f64.powi(-30)]))),
    ];
    let env = bind_inputs(&kernel, &[], inputs).unwrap_or_else(|e| panic!("{e}"));
    let program = heddle::cpu::lower(&kernel, "reassociation").unwrap();
    let floats = |v: Value| match v {
        Value::Array(items) => items.iter().map(float).collect::<Vec<f64>>(),
        other => panic!("expected an array, got {other}"),
    };
    let interp = floats(heddle_runtime::interp::run_kernel(&kernel, &env).unwrap());
    let cpu = [1, 3].map(|t| floats(heddle::cpu::run(&kernel, &program, &env, Parallelism::always(t)).unwrap()));
    (interp, cpu.to_vec())
}

#[test]
fn reduce_sums_agree_within_rounding_and_are_reassociated() {
    let mut rng = Rng(0x5eed_0001);
    let data = rows(&mut rng, 400, false);
    for (ty, eps) in [("float", f32::EPSILON as f64 / 2.0), ("double", f64::EPSILON / 2.0)] {
        let (want, got) = results(&row_sums("reduce", ty), &data);
        let mut reassociated = 0;
        for cpu in &got {
            for (r, (g, w)) in cpu.iter().zip(&want).enumerate() {
                let terms: Vec<f64> =
                    data[r].iter().map(|x| if ty == "float" { *x as f32 as f64 } else { *x }).collect();
                assert!(within_rounding(float(g), float(w), &terms, eps), "{ty} row {r}: cpu {g}, interp {w}");
                reassociated += usize::from(float(g).to_bits() != float(w).to_bits());
            }
        }
        // The adversarial magnitudes make the order visible: some rows must
        // differ, or `reduce` was not reassociated at all.
        assert!(reassociated > 0, "{ty}: every reduce result equals the sequential sum bit for bit");
    }
}

#[test]
fn reduce_seq_is_bit_exact() {
    let mut rng = Rng(0x5eed_0002);
    let data = rows(&mut rng, 400, false);
    for src in
        [row_sums("reduceSeq", "float"), row_sums("reduceSeq", "double"), spmv("reduceSeq"), four_at_once("reduceSeq")]
    {
        let (want, got) = results(&src, &data);
        for cpu in got {
            assert_eq!(cpu.len(), want.len());
            for (r, (g, w)) in cpu.iter().zip(&want).enumerate() {
                assert_eq!(format!("{g:?}"), format!("{w:?}"), "row {r} of {src}");
            }
        }
    }
}

#[test]
fn reduce_dot_products_and_tuples_agree_within_rounding() {
    let mut rng = Rng(0x5eed_0003);
    let data = rows(&mut rng, 300, false);
    let xs: Vec<f64> = (0..50).map(|k| 0.75 + k as f64 / 64.0).collect();
    let (want, got) = results(&spmv("reduce"), &data);
    for cpu in &got {
        for (r, (g, w)) in cpu.iter().zip(&want).enumerate() {
            let terms: Vec<f64> = data[r].iter().enumerate().map(|(k, v)| v * xs[(k * 7) % 50]).collect();
            assert!(
                within_rounding_of_products(float(g), float(w), &terms, f64::EPSILON / 2.0),
                "spmv row {r}: cpu {g}, interp {w}"
            );
        }
    }
    // Sum within rounding; product (of values near 1 in magnitude it is
    // not, so only its sign and rough size), min and max exactly.
    let small: Vec<Vec<f64>> = data.iter().map(|r| r.iter().take(12).copied().collect()).collect();
    let (want, got) = results(&four_at_once("reduce"), &small);
    for cpu in &got {
        for (r, (g, w)) in cpu.iter().zip(&want).enumerate() {
            let (Value::Tuple(g), Value::Tuple(w)) = (g, w) else { panic!("expected tuples") };
            assert!(within_rounding(float(&g[0]), float(&w[0]), &small[r], f64::EPSILON / 2.0), "sum of row {r}");
            let (gp, wp) = (float(&g[1]), float(&w[1]));
            assert!((gp - wp).abs() <= 1e-12 * wp.abs(), "product of row {r}: {gp} vs {wp}");
            assert_eq!((float(&g[2]), float(&g[3])), (float(&w[2]), float(&w[3])), "min and max of row {r}");
        }
    }
}

#[test]
fn products_are_rounded_before_the_add_by_default_and_always_in_reduce_seq() {
    let (interp, cpu) = cancelling_rows("reduceSeq");
    assert_eq!(interp, [0.0, 0.0]);
    for rows in &cpu {
        for (r, got) in rows.iter().enumerate() {
            assert_eq!(got.to_bits(), 0f64.to_bits(), "reduceSeq row {r}: the product must be rounded before the add");
        }
    }
    // `reduce` could fuse (2⁻⁶⁰ here on a host with FMA), but the CPU
    // backend's default options do not: a fused multiply-add measured
    // slower (docs/performance.md). If that default changes, this changes.
    let (interp, cpu) = cancelling_rows("reduce");
    assert_eq!(interp, [0.0, 0.0]);
    for rows in &cpu {
        for (r, got) in rows.iter().enumerate() {
            assert_eq!(*got, 0.0, "reduce row {r}: fused multiply-adds are off by default");
        }
    }
}

#[test]
fn integer_reductions_are_exact_in_any_order() {
    // i32 sums that overflow and wrap: wrapping addition is associative.
    let mut rng = Rng(0x5eed_0004);
    let data = rows(&mut rng, 300, true);
    let (want, got) = results(&row_sums("reduce", "int"), &data);
    for cpu in got {
        assert_eq!(cpu, want);
    }
}

/// Every accumulator count from 1 to 8 and chunking of a split launch
/// (`heddle run --accumulators N --chunks-per-thread N`, what `heddle tune`
/// searches), on 1 to 4 threads, over rows of every length up to 70, empty
/// and single-entry rows, and a row of 5 000: `reduce` SpMV agrees with the
/// interpreter within rounding, and bit for bit with one accumulator (the
/// short-row loop adds in sequential order); `reduceSeq` is bit-exact
/// whatever the settings.
#[test]
fn every_accumulator_count_and_chunking_agrees_with_the_interpreter() {
    use heddle_runtime::cpu::Tuning;
    let mut rng = Rng(0x5eed_0003);
    let mut data = rows(&mut rng, 300, false);
    let long = rows(&mut rng, 71, false).pop().unwrap().repeat(71);
    data.splice(150..150, [vec![], vec![2.5], long, vec![], vec![-1.0]]);
    let eps = f64::EPSILON / 2.0;
    for pattern in ["reduce", "reduceSeq"] {
        let kernel = check(&spmv(pattern));
        let env = bind(&kernel, &data);
        let program = heddle::cpu::lower(&kernel, "reassociation").unwrap();
        let want = match heddle_runtime::interp::run_kernel(&kernel, &env).unwrap() {
            Value::Array(items) => items.iter().map(float).collect::<Vec<f64>>(),
            other => panic!("expected an array, got {other}"),
        };
        let xs = |col: usize| 0.75 + col as f64 / 64.0;
        for accumulators in 1..=8 {
            for chunks_per_thread in [1, 3, 8] {
                for threads in 1..=4 {
                    let tuning = Tuning { accumulators, chunks_per_thread, ..Tuning::default() };
                    let got =
                        match heddle::cpu::run(&kernel, &program, &env, Parallelism::always(threads).tuned(tuning))
                            .unwrap()
                        {
                            Value::Array(items) => items.iter().map(float).collect::<Vec<f64>>(),
                            other => panic!("expected an array, got {other}"),
                        };
                    assert_eq!(got.len(), want.len());
                    let at = format!(
                        "{pattern}, {accumulators} accumulators, {chunks_per_thread} chunks per thread, {threads} threads"
                    );
                    for (r, (g, w)) in got.iter().zip(&want).enumerate() {
                        if pattern == "reduceSeq" || accumulators == 1 {
                            assert_eq!(g.to_bits(), w.to_bits(), "{at}, row {r}: cpu {g}, interp {w}");
                        } else {
                            let products: Vec<f64> =
                                data[r].iter().enumerate().map(|(k, v)| v * xs((k * 7) % 50)).collect();
                            assert!(
                                within_rounding_of_products(*g, *w, &products, eps),
                                "{at}, row {r}: cpu {g}, interp {w}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// With one accumulator every `reduce` adds in sequential order: four
/// reductions at once (sum, product, min, max) and float and integer row
/// sums equal the interpreter bit for bit, on 1 and 3 threads.
#[test]
fn one_accumulator_is_the_sequential_order() {
    use heddle_runtime::cpu::Tuning;
    let mut rng = Rng(0x5eed_0004);
    let data = rows(&mut rng, 200, false);
    let ints = rows(&mut rng, 200, true);
    for (src, data) in
        [(four_at_once("reduce"), &data), (row_sums("reduce", "double"), &data), (row_sums("reduce", "int"), &ints)]
    {
        let kernel = check(&src);
        let env = bind(&kernel, data);
        let program = heddle::cpu::lower(&kernel, "reassociation").unwrap();
        let want = heddle_runtime::interp::run_kernel(&kernel, &env).unwrap();
        for threads in [1, 3] {
            let one = Parallelism::always(threads).tuned(Tuning { accumulators: 1, ..Tuning::default() });
            let got = heddle::cpu::run(&kernel, &program, &env, one).unwrap();
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{src}, {threads} threads");
        }
    }
}

//! Counted results checked on their own: co-iteration (`union`,
//! `intersect`) and the expand/compress workspace (`compressAdd`), lowered to
//! a counting phase and a fill and run by the loop-IR interpreter
//! (`launch::run_counts`), give what the reference interpreter gives, on
//! random packed-CSR inputs (empty rows, empty matrices, unsorted rows with
//! repeated columns for `compressAdd`).

use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_runtime::{interp, launch, loops_interp};
use proptest::prelude::*;
use serde_json::{Value as J, json};

const HEADER: &str = "nFun(n => nFun(m =>
fun(oa: [int]_{n + 1} => fun(a: [i -> [(int, float)]_{toNat(oa@(i + 1) - oa@i)}]_n =>
fun(ob: [int]_{n + 1} => fun(b: [i -> [(int, float)]_{toNat(ob@(i + 1) - ob@i)}]_n =>";

fn kernel(body: &str) -> heddle_typeck::Kernel {
    let src = format!("{HEADER}\n  {body}))))))");
    heddle_typeck::check_program(&heddle_ir::parser::parse_program(&src).unwrap())
        .unwrap_or_else(|d| panic!("{body}: {d:?}"))
}

/// Runs `body` both ways on rows `a` and `b` of an n x m matrix.
fn both(body: &str, a: &[Vec<(usize, f64)>], b: &[Vec<(usize, f64)>], m: usize, phases: usize) -> (J, J) {
    let k = kernel(body);
    let packed = |rows: &[Vec<(usize, f64)>]| {
        let mut offsets = vec![0usize];
        for r in rows {
            offsets.push(offsets.last().unwrap() + r.len());
        }
        let flat: Vec<J> = rows.iter().flatten().map(|(c, v)| json!([c, v])).collect();
        (json!(offsets), json!(flat))
    };
    let ((oa, fa), (ob, fb)) = (packed(a), packed(b));
    let inputs = [("oa", oa), ("a", fa), ("ob", ob), ("b", fb)]
        .into_iter()
        .map(|(n, v)| (n.to_string(), Loaded::Json(v)))
        .collect();
    let env = bind_inputs(&k, &[("m".to_string(), m as i64)], inputs).unwrap();
    let reference = interp::run_kernel(&k, &env).unwrap();
    let prog = heddle_rewrite::lower::lower_kernel(&k, "counted").unwrap();
    assert_eq!(prog.counts.len(), phases, "{body}: counting phases\n{prog}");
    let env = launch::run_counts(&prog, &env, &mut |_, p, l| {
        loops_interp::run(p, l).map_err(|e| heddle_ir::Diagnostic::new(heddle_ir::Span::DUMMY, format!("{e:?}\n{p}")))
    })
    .unwrap();
    let mut l = launch::prepare(&prog, &env).unwrap();
    loops_interp::run(&prog, &mut l).unwrap_or_else(|e| panic!("{body}: {e:?}\n{prog}"));
    let lowered = launch::output_value(&prog, &l, &k.body.ty, &env).unwrap();
    let ty = &k.body.ty;
    (heddle_runtime::io::write::to_json(&reference, ty), heddle_runtime::io::write::to_json(&lowered, ty))
}

/// n rows over m columns, each of at most `len` entries; `sorted`: each
/// row's columns increasing and distinct.
fn matrix(n: usize, m: usize, len: usize, sorted: bool) -> impl Strategy<Value = Vec<Vec<(usize, f64)>>> {
    let row = prop::collection::vec((0..m, -8i32..9), 0..len).prop_map(move |r| {
        let mut r: Vec<(usize, f64)> = r.into_iter().map(|(c, v)| (c, v as f64 / 4.0)).collect();
        if sorted {
            r.sort_by_key(|e| e.0);
            r.dedup_by_key(|e| e.0);
        }
        r
    });
    prop::collection::vec(row, n)
}

fn shapes() -> impl Strategy<Value = (usize, usize)> {
    (0usize..6, 1usize..7)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn union_and_intersection_lower_like_the_interpreter(
        (a, b, m) in shapes().prop_flat_map(|(n, m)| (matrix(n, m, 2 * m, true), matrix(n, m, 2 * m, true), Just(m)))
    ) {
        for (body, phases) in [
            ("zip(a, b) :>> map(fun(r => union(0, 0, r.1, r.2) :>> map(fun(e => (e.1, e.2 + e.3)))))", 1),
            ("zip(a, b) :>> map(fun(r => intersect(r.1, r.2) :>> map(fun(e => (e.1, e.2 * e.3)))))", 1),
            // Reduced as produced: row dot products need no counting phase.
            ("zip(a, b) :>> map(fun(r => intersect(r.1, r.2) :>> map(fun(e => e.2 * e.3)) :>> reduce(+, 0)))", 0),
        ] {
            let (reference, lowered) = both(body, &a, &b, m, phases);
            prop_assert_eq!(&reference, &lowered, "{}", body);
        }
    }

    #[test]
    fn compress_add_lowers_like_the_interpreter(
        // Narrow rows (listed from the mask) and wide ones with few entries (sorted).
        (a, b, m) in (0usize..6, prop_oneof![1usize..7, 40usize..90])
            .prop_flat_map(|(n, m)| (matrix(n, m, 12, false), matrix(n, m, 2, true), Just(m)))
    ) {
        let body = "a :>> map(fun(row => row :>> compressAdd(m)))";
        let (reference, lowered) = both(body, &a, &b, m, 1);
        prop_assert_eq!(reference, lowered);
    }
}

/// Runs a kernel over a dense n x m matrix both ways; also returns the loop program's text.
fn dense_both(src: &str, rows: &[Vec<f64>]) -> (J, J, String) {
    let k = heddle_typeck::check_program(&heddle_ir::parser::parse_program(src).unwrap())
        .unwrap_or_else(|d| panic!("{src}: {d:?}"));
    let m = rows.first().map_or(1, Vec::len);
    let env =
        bind_inputs(&k, &[("m".to_string(), m as i64)], vec![("a".to_string(), Loaded::Json(json!(rows)))]).unwrap();
    let reference = interp::run_kernel(&k, &env).unwrap();
    let prog = heddle_rewrite::lower::lower_kernel(&k, "rows").unwrap();
    let mut l = launch::prepare(&prog, &env).unwrap();
    loops_interp::run(&prog, &mut l).unwrap_or_else(|e| panic!("{src}: {e:?}\n{prog}"));
    let lowered = launch::output_value(&prog, &l, &k.body.ty, &env).unwrap();
    let ty = &k.body.ty;
    (
        heddle_runtime::io::write::to_json(&reference, ty),
        heddle_runtime::io::write::to_json(&lowered, ty),
        prog.to_string(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// `reduce` with an array accumulator: in place when the operator reads
    /// the accumulator only where it writes, through a second workspace when
    /// it does not (here it reads it reversed).
    #[test]
    fn array_accumulators_lower_like_the_interpreter(
        rows in (1usize..6, 1usize..5).prop_flat_map(|(n, m)| prop::collection::vec(prop::collection::vec((-8i32..9).prop_map(|v| v as f64 / 4.0), m), n))
    ) {
        let header = "nFun(n => nFun(m => fun(a: [[float]_m]_n =>\n  ";
        let pointwise = format!("{header}a :>> reduce(fun(acc, row => zip(acc, row) :>> map(fun(p => p.1 + 2.0 * p.2))), generate(m, fun(j => 1.0))))))");
        let (reference, lowered, loops) = dense_both(&pointwise, &rows);
        prop_assert_eq!(reference, lowered);
        prop_assert!(loops.contains("acc_row") && !loops.contains("acc_next"), "in place:\n{}", loops);
        let reversed = format!("{header}a :>> reduce(fun(acc, row => generate(m, fun(j => acc@(m - 1 - j) + row@j))), generate(m, fun(j => 0.0))))))");
        let (reference, lowered, loops) = dense_both(&reversed, &rows);
        prop_assert_eq!(reference, lowered);
        prop_assert!(loops.contains("acc_next"), "through a second workspace:\n{}", loops);
    }
}

//! Lowering checked on its own: every example, lowered to loops and run by the
//! loop-IR interpreter, gives what the reference interpreter gives, on random
//! inputs (empty rows, a very long row, sizes 0 and 1).

use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_runtime::{interp, launch, loops_interp};
use proptest::prelude::*;
use serde_json::{Value as J, json};

fn kernel(name: &str) -> heddle_typeck::Kernel {
    let path = format!("{}/../examples/{name}.hdl", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap();
    heddle_typeck::check_program(&heddle_ir::parser::parse_program(&src).unwrap()).unwrap()
}

/// Runs both ways; returns (reference, lowered) results as JSON.
fn both(name: &str, inputs: Vec<(&str, J)>) -> (J, J) {
    let k = kernel(name);
    let loaded = inputs.into_iter().map(|(n, v)| (n.to_string(), Loaded::Json(v))).collect();
    let env = bind_inputs(&k, &[], loaded).unwrap();
    let reference = interp::run_kernel(&k, &env).unwrap();
    let prog = heddle_rewrite::lower::lower_kernel(&k, name).unwrap();
    let mut l = launch::prepare(&prog, &env).unwrap();
    loops_interp::run(&prog, &mut l).unwrap_or_else(|e| panic!("{name}: {e:?}\n{prog}"));
    let lowered = launch::output_value(&prog, &l, &k.body.ty, &env).unwrap();
    let ty = &k.body.ty;
    (heddle_runtime::io::write::to_json(&reference, ty), heddle_runtime::io::write::to_json(&lowered, ty))
}

/// Rows of (column, value) with values k/4 (exact in f32).
fn rows() -> impl Strategy<Value = (Vec<Vec<(usize, f64)>>, usize)> {
    (1usize..6).prop_flat_map(|m| {
        let row = prop::collection::vec((0..m, -8i32..9), 0..7)
            .prop_map(|r| r.into_iter().map(|(c, v)| (c, v as f64 / 4.0)).collect());
        (prop::collection::vec(row, 0..8), Just(m))
    })
}

fn run_all(rows: &[Vec<(usize, f64)>], m: usize) {
    let xs: Vec<f64> = (0..m).map(|k| k as f64 - 1.5).collect();
    let mut offsets = vec![0usize];
    for r in rows {
        offsets.push(offsets.last().unwrap() + r.len());
    }
    let cols: Vec<usize> = rows.iter().flatten().map(|e| e.0).collect();
    let vals: Vec<f64> = rows.iter().flatten().map(|e| e.1).collect();
    let packed: Vec<J> = rows.iter().flatten().map(|(c, v)| json!([c, v])).collect();
    let lengths: Vec<usize> = rows.iter().map(Vec::len).collect();
    let dense: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| {
            let mut d = vec![0.0; m];
            for (c, v) in r {
                d[*c] += v;
            }
            d
        })
        .collect();
    let cases: Vec<(&str, Vec<(&str, J)>)> = vec![
        ("dense_mv", vec![("matrix", json!(dense)), ("xs", json!(xs))]),
        (
            "lil_spmv",
            vec![
                ("row_length", json!(lengths)),
                ("col_indices", json!(cols)),
                ("values", json!(vals)),
                ("xs", json!(xs)),
            ],
        ),
        (
            "csr_unpacked_spmv",
            vec![("offset", json!(offsets)), ("col_indices", json!(cols)), ("values", json!(vals)), ("xs", json!(xs))],
        ),
        ("csr_packed_spmv", vec![("offset", json!(offsets)), ("values", json!(packed)), ("xs", json!(xs))]),
        ("csr_refined_spmv", vec![("offset", json!(offsets)), ("values", json!(packed)), ("xs", json!(xs))]),
        ("csr_row_sums", vec![("offset", json!(offsets)), ("values", json!(vals))]),
    ];
    for (name, inputs) in cases {
        let (reference, lowered) = both(name, inputs);
        assert_eq!(reference, lowered, "{name} on rows {rows:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn lowered_examples_match_the_interpreter((rows, m) in rows()) {
        run_all(&rows, m);
    }
}

#[test]
fn edge_cases() {
    run_all(&[], 3);
    run_all(&[vec![]], 1);
    run_all(&[vec![(0, 1.0)]], 1);
    let long: Vec<(usize, f64)> = (0..300).map(|k| (k % 7, (k % 5) as f64)).collect();
    run_all(&[vec![], long, vec![(2, -1.0)]], 7);
}

#[test]
fn out_of_range_column_is_caught_by_a_check() {
    let k = kernel("csr_packed_spmv");
    let inputs = vec![
        ("offset".to_string(), Loaded::Json(json!([0, 1]))),
        ("values".to_string(), Loaded::Json(json!([[5, 1.0]]))),
        ("xs".to_string(), Loaded::Json(json!([1.0, 2.0]))),
    ];
    let env = bind_inputs(&k, &[], inputs).unwrap();
    let prog = heddle_rewrite::lower::lower_kernel(&k, "csr").unwrap();
    let mut l = launch::prepare(&prog, &env).unwrap();
    match loops_interp::run(&prog, &mut l) {
        Err(loops_interp::LoopFailure::Check(id)) => {
            let d = launch::check_failure(&prog, id);
            assert!(d.message.contains("`xs`"), "{}", d.message);
        }
        other => panic!("expected a failed check, got {other:?}"),
    }
}

//! Every example, run on the reference interpreter, equals a direct dense
//! computation written here, on random matrices (empty rows, a single row,
//! all-zero and empty matrices included).

use crate::common;

use heddle::source::SourceFile;
use heddle_runtime::io::{Loaded, bind_inputs};
use proptest::prelude::*;
use serde_json::{Value as J, json};

/// A dense matrix with exactly representable entries (multiples of 1/4).
#[derive(Clone, Debug)]
struct Matrix {
    rows: Vec<Vec<f64>>,
    cols: usize,
}

impl Matrix {
    fn nonzeros(&self, r: usize) -> Vec<(usize, f64)> {
        self.rows[r].iter().enumerate().filter(|(_, v)| **v != 0.0).map(|(c, v)| (c, *v)).collect()
    }
    fn offsets(&self) -> Vec<usize> {
        let mut o = vec![0];
        for r in 0..self.rows.len() {
            o.push(o[r] + self.nonzeros(r).len());
        }
        o
    }
    fn mv(&self, xs: &[f64]) -> Vec<f64> {
        self.rows.iter().map(|row| row.iter().zip(xs).map(|(a, x)| a * x).sum()).collect()
    }
    fn row_sums(&self) -> Vec<f64> {
        self.rows.iter().map(|row| row.iter().sum()).collect()
    }
}

fn matrix() -> impl Strategy<Value = Matrix> {
    (0usize..7, 1usize..7).prop_flat_map(|(n, m)| {
        let entry = prop_oneof![3 => Just(0.0), 2 => (-8i32..9).prop_map(|k| k as f64 / 4.0)];
        prop::collection::vec(prop::collection::vec(entry, m), n).prop_map(move |rows| Matrix { rows, cols: m })
    })
}

fn vector(m: usize) -> Vec<f64> {
    (0..m).map(|k| (k as f64 + 1.0) / 2.0).collect()
}

/// Runs an example with JSON inputs; the result as floats.
fn run(example: &str, inputs: Vec<(&str, J)>) -> Vec<f64> {
    run_with(example, inputs, &[])
}

/// [`run`] with natural parameters given (tunables).
fn run_with(example: &str, inputs: Vec<(&str, J)>, nats: &[(&str, i64)]) -> Vec<f64> {
    let path = common::root().join("examples").join(format!("{example}.hdl"));
    let file = SourceFile::read(path.to_str().unwrap()).unwrap();
    let (_, kernel) = heddle::check_source(&file).unwrap();
    let loaded = inputs.into_iter().map(|(k, v)| (k.to_string(), Loaded::Json(v))).collect();
    let nats: Vec<(String, i64)> = nats.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let env = bind_inputs(&kernel, &nats, loaded).unwrap_or_else(|e| panic!("{example}: {e}"));
    let value = heddle_runtime::interp::run_kernel(&kernel, &env)
        .unwrap_or_else(|d| panic!("{example}: {}", file.render(&[d])));
    let out = heddle_runtime::io::write::to_json(&value, &kernel.body.ty);
    out.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

fn check_all(a: &Matrix) {
    let xs = vector(a.cols);
    let expected = a.mv(&xs);
    let n = a.rows.len();
    let entries: Vec<Vec<(usize, f64)>> = (0..n).map(|r| a.nonzeros(r)).collect();
    let flat_cols: Vec<usize> = entries.iter().flatten().map(|e| e.0).collect();
    let flat_vals: Vec<f64> = entries.iter().flatten().map(|e| e.1).collect();
    let packed: Vec<J> = entries.iter().flatten().map(|(c, v)| json!([c, v])).collect();
    let lengths: Vec<usize> = entries.iter().map(Vec::len).collect();

    assert_eq!(run("dense_mv", vec![("matrix", json!(a.rows)), ("xs", json!(xs))]), expected, "dense_mv on {a:?}");
    let lil = run(
        "lil_spmv",
        vec![
            ("row_length", json!(lengths)),
            ("col_indices", json!(flat_cols)),
            ("values", json!(flat_vals)),
            ("xs", json!(xs)),
        ],
    );
    assert_eq!(lil, expected, "lil_spmv on {a:?}");
    let csr = run(
        "csr_unpacked_spmv",
        vec![
            ("offset", json!(a.offsets())),
            ("col_indices", json!(flat_cols)),
            ("values", json!(flat_vals)),
            ("xs", json!(xs)),
        ],
    );
    assert_eq!(csr, expected, "csr_unpacked_spmv on {a:?}");
    let csr_inputs = || {
        vec![
            ("offset", json!(a.offsets())),
            ("col_indices", json!(flat_cols)),
            ("values", json!(flat_vals)),
            ("xs", json!(xs)),
        ]
    };
    assert_eq!(run("csr_spmv_row_per_item", csr_inputs()), expected, "csr_spmv_row_per_item on {a:?}");
    // R = 1 divides every n; W = 3 leaves some work-items without entries.
    let parallel = run_with("csr_spmv_parallel", csr_inputs(), &[("R", 1), ("W", 3)]);
    assert_eq!(parallel, expected, "csr_spmv_parallel on {a:?}");
    // Listing 7 as printed: R = 1 divides every n and S = 1 every row length; its
    // `split(n)` needs a row (an empty matrix is refused, tests/it/listing7.rs).
    if n > 0 {
        let listing7 = run_with(
            "listing7",
            vec![
                ("offsets", json!(a.offsets())),
                ("col_indices", json!(flat_cols)),
                ("values", json!(flat_vals)),
                ("xs", json!(xs)),
            ],
            &[("ROWS_PER_WKGP", 1), ("NUM_SPLITS", 1)],
        );
        assert_eq!(listing7, expected, "listing7 on {a:?}");
    }
    let lil_par = run(
        "lil_spmv_parallel",
        vec![
            ("row_length", json!(lengths)),
            ("col_indices", json!(flat_cols)),
            ("values", json!(flat_vals)),
            ("xs", json!(xs)),
        ],
    );
    assert_eq!(lil_par, expected, "lil_spmv_parallel on {a:?}");
    for packed_example in ["csr_packed_spmv", "csr_refined_spmv"] {
        let got =
            run(packed_example, vec![("offset", json!(a.offsets())), ("values", json!(packed)), ("xs", json!(xs))]);
        assert_eq!(got, expected, "{packed_example} on {a:?}");
    }
    let sums = run("csr_row_sums", vec![("offset", json!(a.offsets())), ("values", json!(flat_vals))]);
    assert_eq!(sums, a.row_sums(), "csr_row_sums on {a:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn examples_match_dense_computation(a in matrix()) {
        check_all(&a);
    }
}

#[test]
fn edge_cases() {
    let m = |rows: Vec<Vec<f64>>, cols| Matrix { rows, cols };
    check_all(&m(vec![], 3)); // no rows
    check_all(&m(vec![vec![1.0, 0.0, -2.5]], 3)); // a single row
    check_all(&m(vec![vec![0.0; 4]; 3], 4)); // all zero
    check_all(&m(vec![vec![0.0, 0.0], vec![1.5, 2.0], vec![0.0, 0.0]], 2)); // empty first and last rows
    check_all(&m(vec![vec![0.25; 9]], 9)); // one dense row
}

#[test]
fn every_example_is_exercised() {
    let tested = ["dense_mv", "lil_spmv", "csr_unpacked_spmv", "csr_packed_spmv", "csr_refined_spmv", "csr_row_sums"]
        .into_iter()
        .chain(["csr_spmv_row_per_item", "csr_spmv_parallel", "lil_spmv_parallel", "listing7"]);
    for path in common::hdl_files("examples") {
        let name = common::stem(&path);
        assert!(
            tested.clone().any(|t| t == name),
            "examples/{name}.hdl has no differential test in tests/it/examples_interp.rs"
        );
    }
}

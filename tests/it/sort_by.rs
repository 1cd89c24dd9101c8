//! `sortBy(key)`, sorting inside a kernel (issue 12, item 1): on the
//! interpreter, the CPU backend and OpenCL, every result equals a stable sort
//! computed here (Rust's `sort_by`, and numpy's `argsort(kind='stable')` for
//! float keys, NaN included), element for element.
//!
//! Inputs: empty, one element, all keys equal (stability: the positions must
//! come out in order), already sorted, reversed, random with many ties, and
//! floats with NaN, -0.0 and 0.0. Kernels: a top-level sort of an input
//! (one sequential merge sort), a decreasing tuple key over nested tuples,
//! rows of a matrix (elements that are arrays) by a key of their columns,
//! and the examples `sort_rows_csr` (a sort per row inside the parallel loop,
//! each row's temporary sized by its length) and `sort_coo_by_column`
//! (`reorder_coo`: a COO matrix's entries stored again in column-major order) on random matrices with empty
//! rows, no rows and one long row of equal values.

use crate::common;

use common::{Rng, backends, heddle, write};
use serde_json::{Value as J, json};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::Path;

/// Each float with its position, sorted by the float.
const BY_VALUE: &str =
    "nFun(n =>\nfun(xs: [float]_n =>\n  zip(xs, generate(n, fun(i => i))) :>> sortBy(fun(p => p.1))))\n";

/// ((a, b), position) sorted by a increasing, then b decreasing.
const BY_TUPLE: &str = "nFun(n =>\nfun(a: [int]_n =>\nfun(b: [double]_n =>\n  zip(zip(a, b), generate(n, fun(i => i))) :>> sortBy(fun(p => (p.1.1, -p.1.2))))))\n";

/// Rows of three (a matrix's rows) sorted by their second column, then their
/// first decreasing: elements that are arrays (compiled code sorts (key,
/// position) records and reads the rows in that order).
const ROWS: &str = "nFun(n =>\nfun(rows: [[int]_3]_n =>\n  rows :>> sortBy(fun(r => (r@1, 0 - r@0)))))\n";

/// numpy's order of floats: by value, -0.0 equal to 0.0, NaN after every number.
fn float_order(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => x.partial_cmp(&y).unwrap(),
    }
}

/// The families of inputs, `n` long (NaN and signed zeros only in `Specials`).
#[derive(Clone, Copy, Debug)]
enum Family {
    AllEqual,
    Sorted,
    Reversed,
    Ties,
    Specials,
}

fn draw(rng: &mut Rng, family: Family, n: usize) -> Vec<f64> {
    let mut xs: Vec<f64> = (0..n).map(|_| rng.below(7) as f64 - 3.0).collect();
    match family {
        Family::AllEqual => xs.iter_mut().for_each(|x| *x = 1.5),
        Family::Sorted => xs.sort_by(|a, b| a.partial_cmp(b).unwrap()),
        Family::Reversed => xs.sort_by(|a, b| b.partial_cmp(a).unwrap()),
        Family::Ties => {}
        Family::Specials => {
            for x in xs.iter_mut() {
                *x = [f64::NAN, -0.0, 0.0, 0.25, -2.5][rng.below(5) as usize];
            }
        }
    }
    xs
}

/// A float as heddle's JSON writes and reads it (NaN as a string).
fn float_json(x: f64) -> J {
    if x.is_nan() { json!("nan") } else { json!(x) }
}

fn json_float(v: &J) -> f64 {
    match v {
        J::String(s) if s == "nan" => f64::NAN,
        other => other.as_f64().unwrap_or_else(|| panic!("not a float: {other}")),
    }
}

fn run(file: &Path, inputs: &[(&str, &Path)], backend: &str) -> J {
    let mut args = vec!["run".to_string(), file.display().to_string(), "--backend".into(), backend.into()];
    for (name, path) in inputs {
        args.extend(["--input".into(), format!("{name}={}", path.display())]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = heddle(&args);
    assert_eq!(code, 0, "{} on {backend}: {err}", file.display());
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{backend}: {e}: {out}"))
}

/// The positions numpy's stable argsort gives for `xs`, where numpy is installed.
fn numpy_argsort(dir: &Path, xs: &[f64]) -> Option<Vec<usize>> {
    let data = write(
        dir,
        "numpy_in.json",
        &serde_json::to_string(&xs.iter().map(|&x| float_json(x)).collect::<Vec<_>>()).unwrap(),
    );
    let script = format!(
        "import json, numpy as np\nxs = np.array([float(x) for x in json.load(open({:?}))], dtype=np.float32)\nprint(json.dumps(np.argsort(xs, kind='stable').tolist()))",
        data.display().to_string()
    );
    common::python(dir, &script).map(|out| serde_json::from_str(out.trim()).unwrap())
}

#[test]
fn floats_sort_stably_with_nan_last() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = write(dir.path(), "by_value.hdl", BY_VALUE);
    let mut rng = Rng(0x5eed_0001);
    let families = [Family::AllEqual, Family::Sorted, Family::Reversed, Family::Ties, Family::Specials];
    let lengths: &[usize] = if common::oclgrind() { &[0, 1, 9] } else { &[0, 1, 2, 17, 200] };
    for &n in lengths {
        for family in families {
            let xs = draw(&mut rng, family, n);
            let mut want: Vec<usize> = (0..n).collect();
            want.sort_by(|&a, &b| float_order(xs[a], xs[b]));
            if n > 1
                && let Some(np) = numpy_argsort(dir.path(), &xs)
            {
                assert_eq!(np, want, "numpy disagrees with the reference on {family:?} {xs:?}");
            }
            let input = write(
                dir.path(),
                "xs.json",
                &serde_json::to_string(&xs.iter().map(|&x| float_json(x)).collect::<Vec<_>>()).unwrap(),
            );
            for backend in backends() {
                let got = run(&kernel, &[("xs", &input)], backend);
                let got = got.as_array().unwrap_or_else(|| panic!("{backend}: {got}"));
                let positions: Vec<usize> = got.iter().map(|p| p[1].as_u64().unwrap() as usize).collect();
                assert_eq!(positions, want, "{backend}, {family:?}, n = {n}: {xs:?}");
                for (p, &k) in got.iter().zip(&want) {
                    let v = json_float(&p[0]);
                    assert!(
                        v.to_bits() == xs[k].to_bits() || (v.is_nan() && xs[k].is_nan()),
                        "{backend}: value {v} at position {k}, which holds {}",
                        xs[k]
                    );
                }
            }
        }
    }
}

#[test]
fn tuple_keys_compare_lexicographically() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = write(dir.path(), "by_tuple.hdl", BY_TUPLE);
    let mut rng = Rng(0x5eed_0002);
    let lengths: &[usize] = if common::oclgrind() { &[0, 7] } else { &[0, 1, 3, 64, 150] };
    for &n in lengths {
        let a: Vec<i64> = (0..n).map(|_| rng.below(3) as i64 - 1).collect();
        let b: Vec<f64> = (0..n).map(|_| rng.below(4) as f64 * 0.5).collect();
        let mut want: Vec<usize> = (0..n).collect();
        // a increasing, then b decreasing; ties in both keep their positions' order.
        want.sort_by(|&x, &y| a[x].cmp(&a[y]).then(float_order(-b[x], -b[y])));
        let ia = write(dir.path(), "a.json", &serde_json::to_string(&a).unwrap());
        let ib = write(dir.path(), "b.json", &serde_json::to_string(&b).unwrap());
        let expected: Vec<J> = want.iter().map(|&k| json!([[a[k], b[k]], k])).collect();
        for backend in backends() {
            let got = run(&kernel, &[("a", &ia), ("b", &ib)], backend);
            assert!(
                common::json_agree(&got, &J::Array(expected.clone())),
                "{backend}, n = {n}: got {got}, want {expected:?}"
            );
        }
    }
}

#[test]
fn rows_sort_by_a_key_of_their_columns() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = write(dir.path(), "rows.hdl", ROWS);
    let mut rng = Rng(0x5eed_0003);
    let lengths: &[usize] = if common::oclgrind() { &[0, 5] } else { &[0, 1, 2, 33, 120] };
    for &n in lengths {
        // Few distinct keys: many ties, kept in their rows' order.
        let rows: Vec<[i64; 3]> =
            (0..n).map(|_| [rng.below(3) as i64, rng.below(4) as i64 - 2, rng.below(1000) as i64]).collect();
        let mut want = rows.clone();
        want.sort_by(|x, y| x[1].cmp(&y[1]).then(y[0].cmp(&x[0])));
        let input = write(dir.path(), "rows.json", &serde_json::to_string(&rows).unwrap());
        // A result of rows is written flat (row-major), as the CLI prints it.
        let expected: Vec<J> = want.iter().flatten().map(|v| json!(v)).collect();
        for backend in backends() {
            let got = run(&kernel, &[("rows", &input)], backend);
            assert_eq!(got, J::Array(expected.clone()), "{backend}, n = {n}: rows {rows:?}");
        }
    }
}

/// The shapes (rows, columns, percent stored) of the matrix cases.
const SHAPES: &[(u64, u64, u64)] = &[(0, 0, 0), (1, 1, 100), (6, 8, 40), (1, 40, 100), (40, 1, 100), (12, 30, 25)];

fn mtx(m: u64, n: u64, e: &BTreeMap<(u64, u64), f64>) -> String {
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{m} {n} {}\n", e.len());
    for ((i, j), v) in e {
        s.push_str(&format!("{} {} {v}\n", i + 1, j + 1));
    }
    s
}

fn run_example(name: &str, matrix: &Path, backend: &str) -> J {
    let file = common::root().join("examples/sparse").join(format!("{name}.hdl"));
    let args = ["run", file.to_str().unwrap(), "--backend", backend, "--matrix", &format!("A={}", matrix.display())];
    let (code, out, err) = heddle(&args);
    assert_eq!(code, 0, "{name} on {backend}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name} on {backend}: {e}: {out}"))
}

/// Random entries; in the long row or column every value is equal, so the
/// order of the result is the stored order (stability).
fn entries(rng: &mut Rng, m: u64, n: u64, percent: u64) -> BTreeMap<(u64, u64), f64> {
    let mut e = common::random_entries(rng, m, n, percent);
    if m == 1 || n == 1 {
        e.values_mut().for_each(|v| *v = 0.75);
    }
    e
}

#[test]
fn csr_rows_sort_by_decreasing_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0003);
    let shapes = if common::oclgrind() { &SHAPES[..3] } else { SHAPES };
    for &(m, n, percent) in shapes {
        let e = entries(&mut rng, m, n, percent);
        let matrix = write(dir.path(), "a.mtx", &mtx(m, n, &e));
        let mut want = Vec::new();
        for i in 0..m {
            // A row's entries in column order, then stably by decreasing value.
            let mut row: Vec<(u64, f64)> = e.range((i, 0)..(i + 1, 0)).map(|((_, j), v)| (*j, *v)).collect();
            row.sort_by(|x, y| float_order(-x.1, -y.1));
            want.extend(row.into_iter().map(|(j, v)| json!([j, v])));
        }
        for backend in backends() {
            let got = run_example("sort_rows_csr", &matrix, backend);
            assert_eq!(got, J::Array(want.clone()), "{backend}, {m}x{n}");
        }
    }
}

#[test]
fn coo_entries_reorder_by_column() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0004);
    let shapes = if common::oclgrind() { &SHAPES[..3] } else { SHAPES };
    for &(m, n, percent) in shapes {
        let e = entries(&mut rng, m, n, percent);
        let matrix = write(dir.path(), "a.mtx", &mtx(m, n, &e));
        let mut by_column: Vec<(&(u64, u64), &f64)> = e.iter().collect();
        by_column.sort_by_key(|((i, j), _)| (*j, *i));
        // Column-major COO storage: one position range, (column, row) coordinate pairs.
        let coordinates: Vec<u64> = by_column.iter().flat_map(|((i, j), _)| [*j, *i]).collect();
        let values: Vec<f64> = by_column.iter().map(|(_, v)| **v).collect();
        let want = json!({
            "dim_sizes": [m, n], "lvl_sizes": [n, m], "nse": e.len(),
            "positions": [[0, e.len()], null], "coordinates": [coordinates, null], "values": values,
        });
        for backend in backends() {
            let got = run_example("sort_coo_by_column", &matrix, backend);
            let storage = json!({
                "dim_sizes": got["dim_sizes"], "lvl_sizes": got["lvl_sizes"], "nse": got["nse"],
                "positions": got["positions"], "coordinates": got["coordinates"], "values": got["values"],
            });
            assert_eq!(storage, want, "{backend}, {m}x{n}");
        }
    }
}

//! MLIR's `sparse_tensor.push_back` in heddle (docs/mlir-sparse.md):
//! appending is `concat(xs, generate(n, …))`, a value whose length is
//! counted before the fill. `push_back.hdl` appends each row's diagonal 1 to
//! the strictly lower triangle of a CSR matrix (L = tril(A, -1) + I, stored
//! as CSR), checked as storage against the same matrix built here from the
//! entries, on every backend; square matrices, with an empty row, 0 × 0 and 1 × 1.

use crate::common;

use common::{Rng, backends, cases, heddle, write};
use serde_json::{Value as J, json};
use std::collections::BTreeMap;

#[test]
fn appending_the_diagonal_to_each_lower_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9b5c);
    let mut sizes = vec![0, 1, 2];
    for _ in 0..cases(4) {
        sizes.push(3 + rng.below(10));
    }
    for (case, &n) in sizes.iter().enumerate() {
        let a = common::random_entries(&mut rng, n, n, 40);
        let mut s = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} {}\n", a.len());
        for ((i, j), v) in &a {
            s.push_str(&format!("{} {} {v}\n", i + 1, j + 1));
        }
        let pa = write(dir.path(), &format!("a{case}.mtx"), &s);
        let mut l: BTreeMap<(u64, u64), f64> = a.iter().filter(|((i, j), _)| j < i).map(|(k, v)| (*k, *v)).collect();
        for i in 0..n {
            l.insert((i, i), 1.0);
        }
        let mut positions = vec![0u64];
        for i in 0..n {
            positions.push(positions[i as usize] + l.range((i, 0)..(i + 1, 0)).count() as u64);
        }
        let want = json!({
            "positions": [null, positions],
            "coordinates": [null, l.keys().map(|(_, j)| *j).collect::<Vec<_>>()],
            "values": l.values().collect::<Vec<_>>(),
            "dim_sizes": [n, n],
        });
        for backend in backends() {
            let file = common::root().join("examples/sparse/push_back.hdl");
            let (code, out, err) = heddle(&[
                "run",
                file.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", pa.display()),
            ]);
            assert_eq!(code, 0, "case {case}, {backend}: {err}");
            let got: J = serde_json::from_str(&out).unwrap();
            let got = json!({"positions": got["positions"], "coordinates": got["coordinates"], "values": got["values"], "dim_sizes": got["dim_sizes"]});
            assert_eq!(got, want, "push_back, case {case} ({n} x {n}), {backend}");
        }
    }
}

//! Results stored in 2:4 structured sparsity (`block2_4`, issue 12): every
//! block of 4 columns keeps exactly 2 slots, a coordinate within the block
//! and a value each. A kernel gives each block as a list of at most 2
//! (coordinate, value) pairs; a shorter list is padded when stored as
//! `heddle convert` pads a block (the smallest unused coordinates, value 0),
//! and a longer one is a run-time error located at the annotation.
//!
//! `prune_2_4` (keep the two largest magnitudes of every 4, zeros dropped)
//! is checked against numpy's pruning and against `heddle convert` of the
//! pruned matrix; `scale_2_4` (an element-wise op over a 2:4 tensor stored
//! as 2:4) against the input's storage; a small case by hand. Every backend.

use crate::common;

use common::{Rng, backends, cases, heddle, python, write};
use serde_json::{Value as J, json};
use std::path::{Path, PathBuf};

const NV24: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4) }>";

fn example(name: &str) -> PathBuf {
    common::root().join("examples/sparse").join(format!("{name}.hdl"))
}

/// The storage fields that describe the tensor (the encoding's text aside).
fn storage_of(v: &J) -> J {
    json!({
        "dim_sizes": v["dim_sizes"], "lvl_sizes": v["lvl_sizes"], "nse": v["nse"],
        "positions": v["positions"], "coordinates": v["coordinates"], "values": v["values"],
    })
}

/// Runs `heddle` and parses its JSON output; the exit status must be 0.
fn run_json(args: &[&str], what: &str) -> J {
    let (code, out, err) = heddle(args);
    assert_eq!(code, 0, "{what}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{what}: {e}: {out}"))
}

/// `prune_2_4` on a dense m × 4k matrix written to `path`.
fn prune(path: &Path, m: usize, k: usize, backend: &str) -> J {
    let file = example("prune_2_4");
    let (n, blocks) = (format!("n={m}"), format!("m={k}"));
    let input = format!("dense={}", path.display());
    run_json(
        &["run", file.to_str().unwrap(), "--backend", backend, "--input", &input, "--param", &n, "--param", &blocks],
        &format!("prune_2_4 on {backend}"),
    )
}

/// A random m × 4k matrix: multiples of 1/4 in [-2, 2] (ties in magnitude
/// are common), about `percent`% of them non-zero.
fn random_dense(rng: &mut Rng, m: usize, k: usize, percent: u64) -> Vec<Vec<f64>> {
    (0..m).map(|_| (0..4 * k).map(|_| if rng.below(100) < percent { rng.value() } else { 0.0 }).collect()).collect()
}

#[test]
fn pruning_a_small_matrix_stores_the_storage_checked_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    // Row 0: block 0 keeps -3 (column 1) and 2 (column 2); block 1 is all
    // zeros, padded with coordinates 0 and 1. Row 1: block 0 keeps 5 alone
    // (column 2), padded with coordinate 0 before it; block 1 has three 4s
    // and keeps the first two.
    let d = write(dir.path(), "d.json", "[[1, -3, 2, 0, 0, 0, 0, 0], [0, 0, 5, 0, 4, 4, 4, 1]]");
    let want = json!({
        "dim_sizes": [2, 8], "lvl_sizes": [2, 2, 4], "nse": 8,
        "positions": [null, null, null],
        "coordinates": [null, null, [1, 2, 0, 1, 0, 2, 0, 1]],
        "values": [-3.0, 2.0, 0.0, 0.0, 0.0, 5.0, 4.0, 4.0],
    });
    for backend in backends() {
        let got = prune(&d, 2, 2, backend);
        assert_eq!(got["encoding"], json!(NV24), "{backend}");
        assert_eq!(storage_of(&got), want, "prune_2_4 on {backend}");
    }
}

#[test]
fn pruning_matches_numpy_and_convert_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x24_5a_2e);
    // (rows, blocks of 4 columns, percent non-zero): the empty matrix, one
    // block, one long row, one tall column of blocks, then random ones.
    let mut shapes = vec![(0, 0, 50), (1, 1, 100), (1, 9, 60), (9, 1, 30), (5, 3, 0)];
    for _ in 0..cases(4) {
        shapes.push((1 + rng.below(8) as usize, 1 + rng.below(5) as usize, 10 + rng.below(90)));
    }
    if common::oclgrind() {
        shapes.truncate(3);
    }
    let mats: Vec<Vec<Vec<f64>>> = shapes.iter().map(|&(m, k, p)| random_dense(&mut rng, m, k, p)).collect();
    let sized: Vec<J> = shapes.iter().zip(&mats).map(|(&(m, k, _), a)| json!([m, 4 * k, a])).collect();
    let all = write(dir.path(), "all.json", &json!(sized).to_string());
    // numpy: each block's two largest magnitudes (a stable sort: the earlier
    // column on a tie), zeros dropped; the pruned dense matrix, and the 2:4
    // storage with each block's free slots at its smallest unused coordinates.
    let script = format!(
        r#"
import json, numpy as np
out = []
for m, n, a in json.load(open({all:?})):
    a = np.array(a, dtype=np.float64).reshape(m, n)
    m, n = a.shape
    blocks = a.reshape(m, n // 4, 4)
    order = np.argsort(-np.abs(blocks), axis=2, kind="stable")
    keep = np.zeros(blocks.shape, dtype=bool)
    np.put_along_axis(keep, order[:, :, :2], True, axis=2)
    keep &= blocks != 0
    pruned = np.where(keep, blocks, 0.0).reshape(m, n)
    crd, vals = [], []
    for i in range(m):
        for b in range(n // 4):
            kept = [int(c) for c in np.flatnonzero(keep[i, b])]
            free = [c for c in range(4) if c not in kept][: 2 - len(kept)]
            for c in sorted(kept + free):
                crd.append(c)
                vals.append(float(blocks[i, b, c]) if c in kept else 0.0)
    out.append({{"pruned": pruned.tolist(), "storage": {{"dim_sizes": [m, n], "lvl_sizes": [m, n // 4, 4], "nse": len(vals),
                "positions": [None, None, None], "coordinates": [None, None, crd], "values": vals}}}})
print(json.dumps(out))
"#,
        all = all.display().to_string()
    );
    let Some(out) = python(dir.path(), &script) else { return };
    let want: Vec<J> = serde_json::from_str(&out).unwrap();
    for (case, ((&(m, k, _), a), w)) in shapes.iter().zip(&mats).zip(&want).enumerate() {
        let pa = write(dir.path(), &format!("a{case}.json"), &json!(a).to_string());
        // `heddle convert` of numpy's pruned matrix pads its blocks alike.
        if m > 0 {
            let pruned = write(dir.path(), &format!("p{case}.json"), &w["pruned"].to_string());
            let conv = dir.path().join(format!("c{case}.json"));
            let (code, _, err) =
                heddle(&["convert", pruned.to_str().unwrap(), "--to", NV24, "-o", conv.to_str().unwrap()]);
            assert_eq!(code, 0, "convert, case {case}: {err}");
            let got: J = serde_json::from_str(&std::fs::read_to_string(&conv).unwrap()).unwrap();
            let mut conv_values = Vec::new();
            common::flatten(&got["values"], &mut conv_values);
            assert_eq!(json!(conv_values), w["storage"]["values"], "convert's values, case {case}");
            assert_eq!(got["coordinates"], w["storage"]["coordinates"], "convert's coordinates, case {case}");
        }
        for backend in backends() {
            let got = prune(&pa, m, k, backend);
            assert_eq!(storage_of(&got), w["storage"], "prune_2_4, case {case} ({m} x {}), {backend}", 4 * k);
        }
    }
}

#[test]
fn scaling_a_2_4_tensor_keeps_its_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5ca1e);
    for case in 0..cases(3) {
        let (m, k) = (1 + rng.below(6) as usize, 1 + rng.below(4) as usize);
        // At most two non-zeros per block, some blocks with fewer (padded by convert).
        let mut a = vec![vec![0.0; 4 * k]; m];
        for row in a.iter_mut() {
            for b in 0..k {
                for _ in 0..rng.below(3) {
                    row[4 * b + rng.below(4) as usize] = rng.value();
                }
            }
        }
        let pa = write(dir.path(), &format!("a{case}.json"), &json!(a).to_string());
        let stored = dir.path().join(format!("s{case}.json"));
        let (code, _, err) = heddle(&["convert", pa.to_str().unwrap(), "--to", NV24, "-o", stored.to_str().unwrap()]);
        assert_eq!(code, 0, "convert: {err}");
        let input: J = serde_json::from_str(&std::fs::read_to_string(&stored).unwrap()).unwrap();
        let s = write(dir.path(), "s.json", "-0.5");
        let mut values = Vec::new();
        common::flatten(&input["values"], &mut values);
        // Every slot (padding too) is scaled; the coordinates stay.
        let want = json!({
            "dim_sizes": [m, 4 * k], "lvl_sizes": [m, k, 4], "nse": 2 * m * k,
            "positions": [null, null, null],
            "coordinates": input["coordinates"],
            "values": values.iter().map(|v| v * -0.5).collect::<Vec<_>>(),
        });
        for backend in backends() {
            let file = example("scale_2_4");
            let args = [
                "run",
                file.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", stored.display()),
                "--input",
                &format!("s={}", s.display()),
            ];
            let got = run_json(&args, &format!("scale_2_4, case {case}, {backend}"));
            assert_eq!(storage_of(&got), want, "scale_2_4, case {case} ({m} x {}), {backend}", 4 * k);
        }
    }
}

#[test]
fn a_block_with_more_than_two_entries_is_a_located_run_time_error() {
    let dir = tempfile::tempdir().unwrap();
    // Every non-zero of each block, however many.
    let kernel = write(
        dir.path(),
        "all_nonzeros.hdl",
        &format!(
            "#NV24 = {NV24}\n\nnFun(n => nFun(m =>\nfun(dense: [[float]_{{4 * m}}]_n =>\n  (dense\n    :>> map(fun(row =>\n      row\n        :>> split(4)\n        :>> map(fun(b =>\n          generate(4, fun(k => (k, b@k))) :>> filter(fun(e => e.2 != 0.0)))))) : tensor<?x?xf32, #NV24>))))\n"
        ),
    );
    let fits = write(dir.path(), "fits.json", "[[0, 1, 0, 2, 3, 0, 0, 0], [0, 0, 0, 0, 0, 0, 7, 0]]");
    let three = write(dir.path(), "three.json", "[[0, 1, 0, 2, 3, 0, 0, 0], [0, 0, 0, 0, 1, 0, 7, 2]]");
    for backend in backends() {
        let run = |input: &Path| {
            heddle(&[
                "run",
                kernel.to_str().unwrap(),
                "--backend",
                backend,
                "--input",
                &format!("dense={}", input.display()),
            ])
        };
        let (code, out, err) = run(&fits);
        assert_eq!(code, 0, "{backend}: {err}");
        let got: J = serde_json::from_str(&out).unwrap();
        assert_eq!(got["coordinates"], json!([null, null, [1, 3, 0, 1, 0, 1, 0, 2]]), "{backend}");
        assert_eq!(got["values"], json!([1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0, 7.0]), "{backend}");
        let (code, _, err) = run(&three);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(
            err.contains("level 2 (`j mod 4 : block2_4`) stores at most 2 entries of every block of 4"),
            "{backend}: {err}"
        );
        assert!(err.contains("all_nonzeros.hdl:5:3"), "{backend}: the error is located at the annotation: {err}");
    }
}

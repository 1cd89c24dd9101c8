//! heddle's banded (skyline) level (issue 12, item 6):
//! `(i, j) -> (i : dense, j : banded)` stores, for every row, each column
//! from the row's first nonzero through the diagonal, zeros between; its
//! positions per row, its coordinates implicit (child k of a row of len
//! values is column i + 1 - len + k).
//!
//! Checked against numpy/scipy: the storage `heddle convert` writes (from
//! Matrix Market and from scipy's `.npz`), the round trip back to `.mtx`
//! and `.npz`, and `spmv_skyline.hdl` on every backend; the edge shapes
//! 0 × 0, 1 × 1, an empty row, a wide matrix. An entry above the diagonal
//! and storage whose row runs past it are located errors (exit status 1).
//! A kernel's result annotated with the skyline encoding is stored on every
//! backend (each row's list filled through the diagonal on the host, as
//! `heddle convert` stores it), checked against scipy; an entry above the
//! diagonal is a located error there too.
//!
//! The upper skyline, `(i, j) -> (j : dense, i : banded)`, stores each
//! column's rows from its first nonzero through the diagonal: converted,
//! read back, multiplied (`spmv_skyline_upper.hdl`) and stored as a result,
//! against scipy; an entry below its diagonal is a located error.

use crate::common;

use common::{Rng, backends, cases, heddle, python, write};
use serde_json::{Value as J, json};
use std::collections::BTreeMap;

const SKY: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : banded) }>";
const UPPER: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : banded) }>";

fn mtx(m: u64, n: u64, e: &BTreeMap<(u64, u64), f64>) -> String {
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{m} {n} {}\n", e.len());
    for ((i, j), v) in e {
        s.push_str(&format!("{} {} {v}\n", i + 1, j + 1));
    }
    s
}

/// A random m × n lower-triangular matrix (j <= i), about `percent`% stored,
/// with an empty row where there is room.
fn random_lower(rng: &mut Rng, m: u64, n: u64, percent: u64) -> BTreeMap<(u64, u64), f64> {
    let empty = rng.below(m.max(1));
    let mut e = BTreeMap::new();
    for i in 0..m {
        for j in 0..n.min(i + 1) {
            if (m < 3 || i != empty) && rng.below(100) < percent {
                e.insert((i, j), rng.value());
            }
        }
    }
    e
}

#[test]
fn a_small_skyline_stores_what_was_checked_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    // Row 0: column 0. Row 1: columns 0 ..= 1. Row 2: only its diagonal.
    // Row 3: columns 0 ..= 3, a zero at column 1 stored between.
    let a = write(dir.path(), "a.json", "[[4, 0, 0, 0], [1, 5, 0, 0], [0, 0, 6, 0], [2, 0, 3, 7]]");
    let out = dir.path().join("sky.json");
    let (code, _, err) = heddle(&["convert", a.to_str().unwrap(), "--to", SKY, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let got: J = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(got["positions"], json!([null, [0, 1, 3, 4, 8]]));
    assert_eq!(got["coordinates"], json!([null, null]));
    assert_eq!(got["values"], json!([4, 1, 5, 6, 2, 0, 3, 7]));
    let x = write(dir.path(), "x.json", "[1, 2, 3, 4]");
    for backend in backends() {
        let file = common::root().join("examples/sparse/spmv_skyline.hdl");
        let (code, out, err) = heddle(&[
            "run",
            file.to_str().unwrap(),
            "--backend",
            backend,
            "--matrix",
            &format!("A={}", out.display()),
            "--input",
            &format!("xs={}", x.display()),
        ]);
        assert_eq!(code, 0, "{backend}: {err}");
        assert_eq!(serde_json::from_str::<J>(&out).unwrap(), json!([4.0, 11.0, 18.0, 39.0]), "{backend}");
    }
    // `heddle type` shows its buffers: positions and values, no coordinates.
    let (code, out, err) = heddle(&["type", SKY]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("A_pos1 : [i64]_{A_dim0 + 1}") && !out.contains("A_crd1"), "{out}");
}

#[test]
fn skyline_conversions_and_spmv_match_scipy() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5c1_11e);
    let mut shapes = vec![(0, 0, 50), (1, 1, 100), (1, 1, 0), (6, 6, 0), (3, 7, 70), (12, 12, 8)];
    for _ in 0..cases(4) {
        let n = 1 + rng.below(14);
        shapes.push((n, n, 5 + rng.below(60)));
    }
    if common::oclgrind() {
        shapes.truncate(4);
    }
    for (case, &(m, n, percent)) in shapes.iter().enumerate() {
        let e = random_lower(&mut rng, m, n, percent);
        let x: Vec<f64> = (0..n).map(|_| rng.value()).collect();
        let pa = write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &e));
        let px = write(dir.path(), &format!("x{case}.json"), &json!(x).to_string());
        // scipy: the skyline storage (each row from its first entry through
        // the diagonal), A x, and the matrix as .npz for the other reader.
        let script = format!(
            r#"
import json, numpy as np, scipy.io, scipy.sparse as sp
a = sp.csr_array(scipy.io.mmread({pa:?}))
a.sort_indices()
d = a.toarray() if {m} * {n} > 0 else np.zeros(({m}, {n}))
pos, vals = [0], []
for i in range({m}):
    cols = a.indices[a.indptr[i]:a.indptr[i + 1]]
    if len(cols):
        vals += [float(v) for v in d[i, cols.min():i + 1]]
    pos.append(len(vals))
x = np.array(json.load(open({px:?})), dtype=np.float64)
y = d @ x if {m} * {n} > 0 else np.zeros({m})
sp.save_npz("a{case}.npz", sp.csr_matrix(a))
print(json.dumps({{"positions": pos, "values": vals, "y": y.tolist(), "dense": d.tolist()}}))
"#,
            pa = pa.display().to_string(),
            px = px.display().to_string()
        );
        let Some(out) = python(dir.path(), &script) else { return };
        let want: J = serde_json::from_str(&out).unwrap();
        for input in [pa.clone(), dir.path().join(format!("a{case}.npz"))] {
            let sky = dir.path().join(format!("s{case}.json"));
            let (code, _, err) =
                heddle(&["convert", input.to_str().unwrap(), "--to", SKY, "-o", sky.to_str().unwrap()]);
            assert_eq!(code, 0, "convert, case {case}: {err}");
            let got: J = serde_json::from_str(&std::fs::read_to_string(&sky).unwrap()).unwrap();
            let mut values = Vec::new();
            common::flatten(&got["values"], &mut values);
            assert_eq!(
                got["positions"],
                json!([null, want["positions"]]),
                "positions, case {case} ({m} x {n}) from {}",
                input.display()
            );
            assert_eq!(json!(values), want["values"], "values, case {case} ({m} x {n})");
            assert_eq!(got["dim_sizes"], json!([m, n]), "case {case}");
        }
        // Back out of it: .npz and .mtx that scipy reads as the same matrix.
        let sky = dir.path().join(format!("s{case}.json"));
        let (back_npz, back_mtx) = (dir.path().join(format!("b{case}.npz")), dir.path().join(format!("b{case}.mtx")));
        for back in [&back_npz, &back_mtx] {
            let (code, _, err) =
                heddle(&["convert", sky.to_str().unwrap(), "--to", "CSR", "-o", back.to_str().unwrap()]);
            assert_eq!(code, 0, "convert back, case {case}: {err}");
        }
        let check = format!(
            r#"
import json, numpy as np, scipy.io, scipy.sparse as sp
want = np.array(json.loads({dense:?}), dtype=np.float64).reshape({m}, {n})
for b in [sp.load_npz("b{case}.npz"), scipy.io.mmread("b{case}.mtx")]:
    assert (sp.csr_array(b).toarray() == want).all()
    assert sp.csr_array(b).shape == ({m}, {n})
print("ok")
"#,
            dense = want["dense"].to_string()
        );
        assert_eq!(python(dir.path(), &check).as_deref().map(str::trim), Some("ok"), "round trip, case {case}");
        let mut y = Vec::new();
        common::flatten(&want["y"], &mut y);
        for backend in backends() {
            let file = common::root().join("examples/sparse/spmv_skyline.hdl");
            let (code, out, err) = heddle(&[
                "run",
                file.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", sky.display()),
                "--input",
                &format!("xs={}", px.display()),
            ]);
            assert_eq!(code, 0, "spmv_skyline, case {case}, {backend}: {err}");
            let mut got = Vec::new();
            common::flatten(&serde_json::from_str(&out).unwrap(), &mut got);
            common::assert_close(&got, &y, &format!("spmv_skyline, case {case} ({m} x {n}), {backend}"));
        }
    }
}

#[test]
fn an_entry_above_the_diagonal_or_a_row_past_it_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", "[[1, 2], [0, 3]]");
    let out = dir.path().join("o.json");
    let (code, _, err) = heddle(&["convert", a.to_str().unwrap(), "--to", SKY, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("entry (0, 1) lies above the diagonal"), "{err}");
    // Storage whose row 0 holds two values: it would reach column -1.
    let bad = write(
        dir.path(),
        "bad.json",
        &json!({"encoding": SKY, "dim_sizes": [2, 2], "lvl_sizes": [2, 2], "nse": 3,
                "positions": [null, [0, 2, 3]], "coordinates": [null, null], "values": [1.0, 2.0, 3.0]})
        .to_string(),
    );
    let x = write(dir.path(), "x.json", "[1, 1]");
    let file = common::root().join("examples/sparse/spmv_skyline.hdl");
    for backend in backends() {
        let (code, _, err) = heddle(&[
            "run",
            file.to_str().unwrap(),
            "--backend",
            backend,
            "--matrix",
            &format!("A={}", bad.display()),
            "--input",
            &format!("xs={}", x.display()),
        ]);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("row 0 stores 2 columns through the diagonal"), "{backend}: {err}");
    }
}

/// A kernel storing `2·A` (A in CSR) as a skyline.
fn doubled_as_skyline(dir: &std::path::Path) -> std::path::PathBuf {
    write(
        dir,
        "k.hdl",
        &format!(
            "#SKY = {SKY}\n#CSR = #sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed) }}>\n\nfun(A: tensor<?x?xf32, #CSR> =>\n  (A :>> map(fun(row => row :>> map(fun(e => (e.1, 2.0 * e.2))))) : tensor<?x{{A_dim1}}xf32, #SKY>))\n"
        ),
    )
}

#[test]
fn a_result_stored_as_a_skyline_matches_scipy_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = doubled_as_skyline(dir.path());
    let mut rng = Rng(0x5c1_2e5);
    // Edge shapes (0 × 0, 1 × 1 empty and full, no entries, a wide matrix), then random squares.
    let mut shapes = vec![(0, 0, 50), (1, 1, 100), (1, 1, 0), (5, 5, 0), (3, 7, 70), (12, 12, 10), (9, 9, 60)];
    for _ in 0..cases(4) {
        let n = 1 + rng.below(16);
        shapes.push((n, n, 5 + rng.below(60)));
    }
    if common::oclgrind() {
        shapes.truncate(4);
    }
    for (case, &(m, n, percent)) in shapes.iter().enumerate() {
        let e = random_lower(&mut rng, m, n, percent);
        let pa = write(dir.path(), &format!("r{case}.mtx"), &mtx(m, n, &e));
        let csr = dir.path().join(format!("r{case}.json"));
        let (code, _, err) = heddle(&["convert", pa.to_str().unwrap(), "--to", "CSR", "-o", csr.to_str().unwrap()]);
        assert_eq!(code, 0, "case {case}: {err}");
        // scipy: 2·A's skyline (each row from its first stored column through the diagonal).
        let script = format!(
            r#"
import json, numpy as np, scipy.io, scipy.sparse as sp
a = sp.csr_array(scipy.io.mmread({pa:?})) * 2.0
a.sort_indices()
d = a.toarray() if {m} * {n} > 0 else np.zeros(({m}, {n}))
pos, vals = [0], []
for i in range({m}):
    cols = a.indices[a.indptr[i]:a.indptr[i + 1]]
    if len(cols):
        vals += [float(v) for v in d[i, cols.min():i + 1]]
    pos.append(len(vals))
print(json.dumps({{"positions": pos, "values": vals}}))
"#,
            pa = pa.display().to_string()
        );
        let Some(out) = python(dir.path(), &script) else { return };
        let want: J = serde_json::from_str(&out).unwrap();
        for backend in backends() {
            let (code, out, err) = heddle(&[
                "run",
                kernel.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", csr.display()),
            ]);
            assert_eq!(code, 0, "case {case} ({m} x {n}), {backend}: {err}");
            let got: J = serde_json::from_str(&out).unwrap();
            let mut values = Vec::new();
            common::flatten(&got["values"], &mut values);
            assert_eq!(
                got["positions"],
                json!([null, want["positions"]]),
                "positions, case {case} ({m} x {n}), {backend}"
            );
            assert_eq!(json!(values), want["values"], "values, case {case} ({m} x {n}), {backend}");
            assert_eq!(got["coordinates"], json!([null, null]), "case {case}, {backend}");
            assert_eq!(got["dim_sizes"], json!([m, n]), "case {case}, {backend}");
        }
    }
}

#[test]
fn a_stored_skyline_with_an_entry_above_the_diagonal_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = doubled_as_skyline(dir.path());
    // An entry above the diagonal; a tall matrix whose row 2 has an entry but no diagonal column.
    let cases = [
        ("[[1, 0, 0], [0, 2, 5], [0, 0, 3]]", "entry (1, 2) lies above the diagonal"),
        ("[[1, 0], [0, 3], [5, 0]]", "row 2 has entries, but its diagonal (column 2) is outside the 2 columns"),
    ];
    for (k, (dense, message)) in cases.iter().enumerate() {
        let a = write(dir.path(), &format!("a{k}.json"), dense);
        let csr = dir.path().join(format!("c{k}.json"));
        let (code, _, err) = heddle(&["convert", a.to_str().unwrap(), "--to", "CSR", "-o", csr.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        let mut first: Option<String> = None;
        for backend in backends() {
            let (code, out, err) = heddle(&[
                "run",
                kernel.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", csr.display()),
            ]);
            assert_eq!(code, 1, "{backend}: {out}{err}");
            assert!(err.contains(message) && err.contains("k.hdl:5:3"), "{backend}: {err}");
            assert!(!err.contains("internal error") && !err.contains("panicked"), "{backend}: {err}");
            // Every backend reports the same diagnostic, label included.
            match &first {
                None => first = Some(err),
                Some(want) => assert_eq!(&err, want, "{backend} words the error differently from the interpreter"),
            }
        }
    }
}

#[test]
fn the_upper_skyline_converts_multiplies_and_stores_as_scipy_says() {
    let dir = tempfile::tempdir().unwrap();
    let csc = "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>";
    let kernel = write(
        dir.path(),
        "k.hdl",
        &format!(
            "#UP = {UPPER}\n#CSC = {csc}\n\nfun(A: tensor<?x?xf32, #CSC> =>\n  (A :>> map(fun(col => col :>> map(fun(e => (e.1, 2.0 * e.2))))) : tensor<{{A_dim0}}x{{A_dim1}}xf32, #UP>))\n"
        ),
    );
    let spmv = common::root().join("examples/sparse/spmv_skyline_upper.hdl");
    let mut rng = Rng(0x0b_5c1);
    let mut shapes = vec![(0, 0, 50), (1, 1, 100), (5, 5, 0), (7, 3, 70), (12, 12, 10)];
    for _ in 0..cases(3) {
        let n = 1 + rng.below(14);
        shapes.push((n, n, 5 + rng.below(60)));
    }
    if common::oclgrind() {
        shapes.truncate(3);
    }
    for (case, &(m, n, percent)) in shapes.iter().enumerate() {
        // The transpose of a random lower n × m matrix: upper triangular, m × n.
        let e: BTreeMap<(u64, u64), f64> =
            random_lower(&mut rng, n, m, percent).into_iter().map(|((i, j), v)| ((j, i), v)).collect();
        let x: Vec<f64> = (0..n).map(|_| rng.value()).collect();
        let pa = write(dir.path(), &format!("u{case}.mtx"), &mtx(m, n, &e));
        let px = write(dir.path(), &format!("ux{case}.json"), &json!(x).to_string());
        let script = format!(
            r#"
import json, numpy as np, scipy.io, scipy.sparse as sp
a = sp.csc_array(scipy.io.mmread({pa:?}))
a.sort_indices()
d = a.toarray() if {m} * {n} > 0 else np.zeros(({m}, {n}))
def sky(d):
    pos, vals = [0], []
    for j in range({n}):
        rows = np.nonzero(d[:, j])[0]
        if len(rows):
            vals += [float(v) for v in d[rows.min():j + 1, j]]
        pos.append(len(vals))
    return pos, vals
pos, vals = sky(d)
pos2, vals2 = sky(2 * d)
x = np.array(json.load(open({px:?})), dtype=np.float64)
y = d @ x if {m} * {n} > 0 else np.zeros({m})
print(json.dumps({{"positions": pos, "values": vals, "doubled": vals2, "y": y.tolist(), "dense": d.tolist()}}))
"#,
            pa = pa.display().to_string(),
            px = px.display().to_string()
        );
        let Some(out) = python(dir.path(), &script) else { return };
        let want: J = serde_json::from_str(&out).unwrap();
        let sky = dir.path().join(format!("us{case}.json"));
        let (code, _, err) = heddle(&["convert", pa.to_str().unwrap(), "--to", UPPER, "-o", sky.to_str().unwrap()]);
        assert_eq!(code, 0, "convert, case {case}: {err}");
        let got: J = serde_json::from_str(&std::fs::read_to_string(&sky).unwrap()).unwrap();
        let mut values = Vec::new();
        common::flatten(&got["values"], &mut values);
        assert_eq!(got["positions"], json!([null, want["positions"]]), "positions, case {case} ({m} x {n})");
        assert_eq!(json!(values), want["values"], "values, case {case} ({m} x {n})");
        assert_eq!(got["coordinates"], json!([null, null]), "case {case}");
        // Back to CSR as scipy reads it.
        let back = dir.path().join(format!("ub{case}.mtx"));
        let (code, _, err) = heddle(&["convert", sky.to_str().unwrap(), "--to", "CSR", "-o", back.to_str().unwrap()]);
        assert_eq!(code, 0, "convert back, case {case}: {err}");
        let check = format!(
            "import json, numpy as np, scipy.io, scipy.sparse as sp\nwant = np.array(json.loads({dense:?}), dtype=np.float64).reshape({m}, {n})\nb = sp.csr_array(scipy.io.mmread('ub{case}.mtx'))\nassert b.shape == ({m}, {n}) and (b.toarray() == want).all()\nprint('ok')\n",
            dense = want["dense"].to_string()
        );
        assert_eq!(python(dir.path(), &check).as_deref().map(str::trim), Some("ok"), "round trip, case {case}");
        let mut y = Vec::new();
        common::flatten(&want["y"], &mut y);
        let csc_file = dir.path().join(format!("uc{case}.json"));
        let (code, _, err) = heddle(&["convert", pa.to_str().unwrap(), "--to", csc, "-o", csc_file.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        for backend in backends() {
            let (code, out, err) = heddle(&[
                "run",
                spmv.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", sky.display()),
                "--input",
                &format!("xs={}", px.display()),
            ]);
            assert_eq!(code, 0, "spmv_skyline_upper, case {case}, {backend}: {err}");
            let mut got = Vec::new();
            common::flatten(&serde_json::from_str(&out).unwrap(), &mut got);
            common::assert_close(&got, &y, &format!("spmv_skyline_upper, case {case} ({m} x {n}), {backend}"));
            // 2·A stored as an upper skyline by a kernel.
            let (code, out, err) = heddle(&[
                "run",
                kernel.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", csc_file.display()),
            ]);
            assert_eq!(code, 0, "stored, case {case}, {backend}: {err}");
            let got: J = serde_json::from_str(&out).unwrap();
            let mut values = Vec::new();
            common::flatten(&got["values"], &mut values);
            assert_eq!(got["positions"], json!([null, want["positions"]]), "stored positions, case {case}, {backend}");
            assert_eq!(json!(values), want["doubled"], "stored values, case {case}, {backend}");
        }
    }
    // An entry below the diagonal: converting and storing both refuse it, located.
    let a = write(dir.path(), "low.json", "[[1, 0, 0], [0, 2, 0], [0, 4, 3]]");
    let (code, _, err) =
        heddle(&["convert", a.to_str().unwrap(), "--to", UPPER, "-o", dir.path().join("no.json").to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("entry (2, 1) lies below the diagonal"), "{err}");
    let low = dir.path().join("low_csc.json");
    assert_eq!(heddle(&["convert", a.to_str().unwrap(), "--to", csc, "-o", low.to_str().unwrap()]).0, 0);
    for backend in backends() {
        let (code, _, err) = heddle(&[
            "run",
            kernel.to_str().unwrap(),
            "--backend",
            backend,
            "--matrix",
            &format!("A={}", low.display()),
        ]);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("entry (2, 1) lies below the diagonal") && err.contains("k.hdl:5:3"), "{backend}: {err}");
    }
}

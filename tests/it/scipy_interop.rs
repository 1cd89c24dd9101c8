//! numpy and scipy on both sides (LANGUAGE.md §7, issue 15.4): files that
//! `scipy.sparse.save_npz` and `np.save` write in the test's setup are read
//! by heddle (`--matrix`, `--input`, `convert`), and the files heddle writes
//! (`convert -o M.npz`, `run -o y.npy`, `run -o C.npz`) are loaded by scipy
//! and numpy in the test and compared with what they computed themselves,
//! bit for bit. Values are multiples of 1/4 and small integers, so every
//! product and sum is exact in any order and at either float width.
//!
//! Needs python3 with numpy and scipy (scripts/test.sh installs them); without
//! them the tests are skipped visibly, except under `CI=true`, where they fail.

use crate::common;

use common::{backends, heddle, python};
use std::path::{Path, PathBuf};

/// The test's own directory, new and empty (the checks count the result
/// files in it), removed when it ends.
fn dir(name: &str) -> tempfile::TempDir {
    common::scratch_dir(&format!("scipy-{name}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The matrix of every test: 12 x 18, about 30 % filled with multiples of
/// 1/4 in [-2, 2] (no zeros stored), and a vector of small integers.
const SETUP: &str = r#"
import numpy as np, scipy.sparse as sp
rng = np.random.default_rng(7)
m, n = 12, 18
dense = rng.integers(-8, 9, size=(m, n)) / 4.0 * (rng.random((m, n)) < 0.3)
A = sp.csr_array(dense)
A.eliminate_zeros()
x = rng.integers(-3, 4, size=n).astype(np.float64)
# In an integer type the values are scaled to integers (4 A), which keeps every one nonzero.
scaled = lambda dt: (A * 4 if dt.startswith('int') else A).astype(dt)
"#;

const FORMATS: [&str; 5] = ["csr", "csc", "coo", "bsr", "dia"];
const DTYPES: [&str; 4] = ["float64", "float32", "int64", "int32"];

fn kernel(d: &Path, name: &str, enc: &str, elem: &str, x: &str) -> PathBuf {
    let p = d.join(format!("{name}.hdl"));
    let text = format!(
        "#E = #sparse_tensor.encoding<{{ map = {enc} }}>\n\nfun(A: tensor<?x?x{elem}, #E> =>\nfun(xs: [{x}]_A_dim1 =>\n  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0)))))\n"
    );
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn scipy_npz_files_are_read_exactly() {
    let tmp = dir("read");
    let d = tmp.path();
    // Every format scipy saves, every value type, stored and deflated; int64
    // indices; a csr with unsorted and repeated indices; a coo with repeats.
    let setup = format!(
        "{SETUP}
np.save('x64.npy', x)
np.save('x32.npy', x.astype(np.float32))
for dt in {DTYPES:?}:
    B = scaled(dt)
    for k, fmt in enumerate({FORMATS:?}):
        M = {{'csr': B.tocsr(), 'csc': B.tocsc(), 'coo': B.tocoo(), 'bsr': B.tobsr(blocksize=(2, 3)), 'dia': B.todia()}}[fmt]
        sp.save_npz(f'{{fmt}}_{{dt}}.npz', M, compressed=(k % 2 == 0))
C = A.tocsr()
C.indices = C.indices.astype(np.int64); C.indptr = C.indptr.astype(np.int64)
sp.save_npz('csr_idx64.npz', C)
U = sp.csr_matrix((np.array([1.0, 2.0, 0.5]), np.array([3, 1, 3]), np.array([0, 3] + [3] * (m - 1))), shape=(m, n))
sp.save_npz('csr_unsorted.npz', U)
R = sp.coo_matrix((np.array([1.0, 2.0, 0.5]), (np.array([0, 5, 0]), np.array([3, 1, 3]))), shape=(m, n))
sp.save_npz('coo_repeats.npz', R)
"
    );
    if python(d, &setup).is_none() {
        return;
    }
    // convert every file to CSR as .npz; scipy checks them below.
    let mut files: Vec<String> =
        DTYPES.iter().flat_map(|dt| FORMATS.iter().map(move |f| format!("{f}_{dt}"))).collect();
    files.extend(["csr_idx64", "csr_unsorted", "coo_repeats"].map(String::from));
    for f in &files {
        let (input, output) = (d.join(format!("{f}.npz")), d.join(format!("out_{f}.npz")));
        let (code, _, err) = heddle(&["convert", s(&input), "--to", "CSR", "-o", s(&output)]);
        assert_eq!(code, 0, "convert {f}: {err}");
    }
    // SpMV on every backend over each format of the float64 files (kernel in
    // f64), and over the float32 csr file (kernel in f32).
    let k64 = kernel(d, "spmv64", "(i, j) -> (i : dense, j : compressed)", "f64", "double");
    let k32 = kernel(d, "spmv32", "(i, j) -> (i : dense, j : compressed)", "f32", "float");
    let kcsc = common::root().join("examples/sparse/spmv_csc.hdl");
    let mut runs = Vec::new();
    for backend in backends() {
        for fmt in FORMATS {
            runs.push((k64.clone(), format!("{fmt}_float64"), "x64", backend));
        }
        runs.push((k32.clone(), "csr_float32".to_string(), "x32", backend));
        runs.push((kcsc.clone(), "csc_float32".to_string(), "x32", backend));
    }
    for (k, f, x, backend) in &runs {
        let out = d.join(format!("y_{}_{f}_{backend}.npy", heddle_stem(k)));
        let (m, xs) =
            (format!("A={}", s(&d.join(format!("{f}.npz")))), format!("xs={}", s(&d.join(format!("{x}.npy")))));
        let (code, _, err) =
            heddle(&["run", s(k), "--backend", backend, "--matrix", &m, "--input", &xs, "-o", s(&out)]);
        assert_eq!(code, 0, "run {f} on {backend}: {err}");
    }
    let check = format!(
        "{SETUP}
import glob
def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
bad = []
for f in {files:?}:
    got = sp.load_npz(f'out_{{f}}.npz')
    if f == 'csr_unsorted':
        want = sp.csr_matrix((np.array([2.0, 1.5]), np.array([1, 3]), np.array([0, 2] + [2] * (m - 1))), shape=(m, n))
    elif f == 'coo_repeats':
        want = sp.csr_matrix(([1.5, 2.0], ([0, 5], [3, 1])), shape=(m, n))
    else:
        want = scaled('float64' if f == 'csr_idx64' else f.split('_')[1]).tocsr()
    if got.format != 'csr' or got.shape != want.shape or not (same(got.indptr.astype(np.int64), want.indptr.astype(np.int64))
            and same(got.indices.astype(np.int64), want.indices.astype(np.int64)) and same(got.data, want.data)):
        bad.append(f)
for path in sorted(glob.glob('y_*.npy')):
    y = np.load(path)
    want = (A @ x).astype(np.float32 if 'spmv32' in path or 'spmv_csc' in path else np.float64)
    if not same(y, want):
        bad.append(path)
print(len(bad), bad)
"
    );
    let Some(out) = python(d, &check) else { return };
    assert!(out.starts_with("0 "), "files that differ from scipy's: {out}");
    assert!(
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("y_"))
            .count()
            == runs.len()
    );
}

fn heddle_stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

#[test]
fn heddle_npz_files_load_in_scipy() {
    let tmp = dir("write");
    let d = tmp.path();
    let mtx = common::root().join("tests/data/sparse/m4x8.mtx");
    // (encoding, the scipy format heddle writes for it)
    let cases = [("CSR", "csr"), ("CSC", "csc"), ("BSR(2, 4)", "bsr"), ("DCSR", "coo"), ("COO", "coo"), ("dd", "coo")];
    for (k, (enc, _)) in cases.iter().enumerate() {
        let (code, _, err) = heddle(&["convert", s(&mtx), "--to", enc, "-o", s(&d.join(format!("m{k}.npz")))]);
        assert_eq!(code, 0, "{enc}: {err}");
    }
    // A 3-D tensor as coo with `coords`, and integer and f32 values.
    std::fs::write(d.join("t.tns"), "3 3\n2 3 4\n1 1 1 1.5\n2 3 4 -0.25\n1 2 3 2\n").unwrap();
    let (code, _, err) = heddle(&["convert", s(&d.join("t.tns")), "--to", "CSF", "-o", s(&d.join("t.npz"))]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(
        d.join("i.mtx"),
        "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 9007199254740992\n2 1 -3\n",
    )
    .unwrap();
    let (code, _, err) = heddle(&["convert", s(&d.join("i.mtx")), "--to", "CSR", "-o", s(&d.join("i.npz"))]);
    assert_eq!(code, 0, "{err}");
    // SpGEMM's result, a stored CSR tensor, as .npz.
    let spgemm = common::root().join("examples/sparse/spgemm_csr.hdl");
    let setup = "import numpy as np, scipy.sparse as sp, scipy.io
rng = np.random.default_rng(3)
for name, (r, c) in [('P', (9, 7)), ('Q', (7, 11))]:
    M = sp.random(r, c, density=0.3, random_state=rng, data_rvs=lambda k: rng.integers(-8, 9, size=k) / 4.0, format='csr')
    M.eliminate_zeros()
    sp.save_npz(name + '.npz', M.astype(np.float32))
";
    if python(d, setup).is_none() {
        return;
    }
    for backend in backends() {
        let (p, q) = (format!("A={}", s(&d.join("P.npz"))), format!("B={}", s(&d.join("Q.npz"))));
        let out = d.join(format!("PQ_{backend}.npz"));
        let (code, _, err) =
            heddle(&["run", s(&spgemm), "--backend", backend, "--matrix", &p, "--matrix", &q, "-o", s(&out)]);
        assert_eq!(code, 0, "spgemm on {backend}: {err}");
    }
    let check = format!(
        "import numpy as np, scipy.sparse as sp, scipy.io, glob
want = scipy.io.mmread('{mtx}').toarray()
bad = []
for k, fmt in enumerate({formats:?}):
    M = sp.load_npz(f'm{{k}}.npz')
    if M.format != fmt or M.dtype != np.float64 or M.toarray().tobytes() != want.tobytes():
        bad.append((k, fmt, M.format))
T = sp.load_npz('t.npz')
W = np.zeros((2, 3, 4)); W[0, 0, 0] = 1.5; W[1, 2, 3] = -0.25; W[0, 1, 2] = 2
if T.format != 'coo' or T.shape != (2, 3, 4) or T.toarray().tobytes() != W.tobytes():
    bad.append('t')
I = sp.load_npz('i.npz')
if I.dtype != np.int64 or I.toarray().tolist() != [[9007199254740992, 0], [-3, 0]]:
    bad.append('i')
P, Q = sp.load_npz('P.npz'), sp.load_npz('Q.npz')
PQ = (P @ Q).tocsr(); PQ.sort_indices()
for path in sorted(glob.glob('PQ_*.npz')):
    R = sp.load_npz(path)
    if R.format != 'csr' or R.dtype != np.float32 or R.shape != PQ.shape or R.toarray().tobytes() != PQ.toarray().tobytes():
        bad.append(path)
print(len(bad), bad)
",
        mtx = mtx.display(),
        formats = cases.iter().map(|c| c.1).collect::<Vec<_>>(),
    );
    let Some(out) = python(d, &check) else { return };
    assert!(out.starts_with("0 "), "files scipy reads differently: {out}");
}

#[test]
fn numpy_npy_files_are_read_exactly() {
    let tmp = dir("npy");
    let d = tmp.path();
    // Little- and big-endian, 2-D, int32 offsets and a structured dtype of
    // (column, value) records: Listing 4's buffers and a dense matrix.
    let setup = format!(
        "{SETUP}
np.save('offset.npy', A.indptr.astype(np.int32))
np.save('cols.npy', A.indices.astype('>i4'))
np.save('vals.npy', A.data.astype(np.float32))
np.save('xs.npy', x.astype('>f4'))
rec = np.zeros(A.nnz, dtype=[('c', '<i4'), ('v', '<f4')])
rec['c'] = A.indices; rec['v'] = A.data
np.save('entries.npy', rec)
np.save('M.npy', dense.astype(np.float32))
"
    );
    if python(d, &setup).is_none() {
        return;
    }
    let root = common::root();
    let input = |name: &str, file: &str| format!("{name}={}", s(&d.join(file)));
    for backend in backends() {
        let runs: [(&str, Vec<String>); 3] = [
            (
                "csr_unpacked_spmv",
                vec![
                    input("offset", "offset.npy"),
                    input("col_indices", "cols.npy"),
                    input("values", "vals.npy"),
                    input("xs", "xs.npy"),
                ],
            ),
            (
                "csr_packed_spmv",
                vec![input("offset", "offset.npy"), input("values", "entries.npy"), input("xs", "xs.npy")],
            ),
            ("dense_mv", vec![input("matrix", "M.npy"), input("xs", "xs.npy")]),
        ];
        for (example, inputs) in runs {
            let k = root.join(format!("examples/{example}.hdl"));
            let out = d.join(format!("y_{example}_{backend}.npy"));
            let mut args = vec!["run", s(&k), "--backend", backend, "-o", s(&out)];
            for i in &inputs {
                args.extend(["--input", i]);
            }
            let (code, _, err) = heddle(&args);
            assert_eq!(code, 0, "{example} on {backend}: {err}");
        }
    }
    let check = format!(
        "{SETUP}
import glob
want = (dense.astype(np.float32) @ x.astype(np.float32)).astype(np.float32)
bad = [p for p in sorted(glob.glob('y_*.npy')) if np.load(p).dtype != np.float32 or np.load(p).tobytes() != want.tobytes()]
print(len(bad), bad, len(glob.glob('y_*.npy')))
"
    );
    let Some(out) = python(d, &check) else { return };
    assert_eq!(out.trim(), format!("0 [] {}", 3 * backends().len()), "results that differ from numpy's");
}

/// DIA (issue 12, item 6) against scipy's `todia()`: heddle's storage in
/// scipy's own layout, `(j - i : compressed, j : dense)`, has scipy's
/// offsets (sorted) and data (padded to the matrix's columns with zeros);
/// the row-indexed DIA, written as `.npz`, loads in scipy as a dia matrix
/// equal to the original; scipy's dia files convert into DIA and back out
/// to CSR unchanged. Wide, tall, empty and 1x1 matrices.
#[test]
fn dia_matches_scipy_todia() {
    let tmp = dir("dia");
    let d = tmp.path();
    let setup = format!(
        "{SETUP}
shapes = {{'wide': A, 'tall': sp.csr_array(A.T), 'empty': sp.csr_array((3, 4)), 'one': sp.csr_array(np.array([[2.5]]))}}
for name, M in shapes.items():
    sp.save_npz(name + '.npz', M)
    sp.save_npz(name + '_dia.npz', M.todia())
"
    );
    if python(d, &setup).is_none() {
        return;
    }
    let names = ["wide", "tall", "empty", "one"];
    for name in names {
        let input = d.join(format!("{name}.npz"));
        let cases = [
            (
                "#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, j : dense), crdWidth = 32 }>",
                format!("{name}_bycol.json"),
            ),
            ("DIA", format!("{name}_heddle_dia.npz")),
            ("DIA", format!("{name}_rows.json")),
        ];
        for (enc, out) in cases {
            let (code, _, err) = heddle(&["convert", s(&input), "--to", enc, "-o", s(&d.join(&out))]);
            assert_eq!(code, 0, "{name} -> {out}: {err}");
        }
        // scipy's own dia file -> DIA -> CSR.
        let (code, _, err) = heddle(&[
            "convert",
            s(&d.join(format!("{name}_dia.npz"))),
            "--to",
            "DIA",
            "-o",
            s(&d.join(format!("{name}_from_scipy.json"))),
        ]);
        assert_eq!(code, 0, "{name}: {err}");
        let (code, _, err) = heddle(&[
            "convert",
            s(&d.join(format!("{name}_from_scipy.json"))),
            "--to",
            "CSR",
            "-o",
            s(&d.join(format!("{name}_back.npz"))),
        ]);
        assert_eq!(code, 0, "{name}: {err}");
    }
    let check = format!(
        "{SETUP}
import json
shapes = {{'wide': A, 'tall': sp.csr_array(A.T), 'empty': sp.csr_array((3, 4)), 'one': sp.csr_array(np.array([[2.5]]))}}
bad = []
for name, M in shapes.items():
    m, n = M.shape
    D = M.todia()
    order = np.argsort(D.offsets)
    offsets = D.offsets[order]
    data = np.zeros((len(offsets), n))
    data[:, :D.data.shape[1]] = D.data[order, :n]
    got = json.load(open(name + '_bycol.json'))
    if got['coordinates'][0] != offsets.tolist() or got['positions'][0] != [0, len(offsets)]:
        bad.append((name, 'offsets', got['coordinates'][0], offsets.tolist()))
    if np.array(got['values'], dtype=np.float64).reshape(len(offsets), n).tobytes() != data.tobytes():
        bad.append((name, 'data'))
    # Row-indexed: values[k, i] is entry (i, i + offsets[k]), 0 past the edge.
    rows = json.load(open(name + '_rows.json'))
    want = np.zeros((len(offsets), m))
    dense = M.toarray()
    for k, o in enumerate(offsets):
        for i in range(m):
            if 0 <= i + o < n:
                want[k, i] = dense[i, i + o]
    if rows['coordinates'][0] != offsets.tolist() or np.array(rows['values'], dtype=np.float64).reshape(len(offsets), m).tobytes() != want.tobytes():
        bad.append((name, 'rows'))
    H = sp.load_npz(name + '_heddle_dia.npz')
    if H.format != 'dia' or H.shape != M.shape or H.toarray().tobytes() != dense.tobytes():
        bad.append((name, 'npz', H.format))
    B = sp.load_npz(name + '_back.npz')
    if B.format != 'csr' or B.toarray().tobytes() != dense.tobytes():
        bad.append((name, 'back'))
print(len(bad), bad)
"
    );
    let Some(out) = python(d, &check) else { return };
    assert!(out.starts_with("0 "), "DIA differs from scipy's: {out}");
}

/// CSR and CSC → BSR (the direct path, issue 12): heddle's `.npz` loads in
/// scipy as a bsr matrix with exactly the block size, `indptr`, `indices`
/// and `data` of scipy's own `tobsr(blocksize=…)` (its block columns
/// sorted), for several block shapes, a matrix with an explicit zero, and
/// at 32-bit widths.
#[test]
fn bsr_matches_scipy_tobsr() {
    let tmp = dir("bsr");
    let d = tmp.path();
    let setup = format!(
        "{SETUP}
Z = A.copy()
Z.data[3] = 0.0
sp.save_npz('a.npz', A)
sp.save_npz('a_csc.npz', sp.csc_array(A))
sp.save_npz('z.npz', Z)
"
    );
    if python(d, &setup).is_none() {
        return;
    }
    let shapes = [(1, 1), (2, 3), (3, 2), (4, 6), (12, 9)];
    for (r, c) in shapes {
        for src in ["a", "a_csc", "z"] {
            for (tag, widths) in [("native", ""), ("w32", ", posWidth = 32, crdWidth = 32")] {
                let enc = format!(
                    "#sparse_tensor.encoding<{{ map = (i, j) -> (i floordiv {r} : dense, j floordiv {c} : compressed, i mod {r} : dense, j mod {c} : dense){widths} }}>"
                );
                let out = d.join(format!("{src}_{r}x{c}_{tag}.npz"));
                let (code, _, err) =
                    heddle(&["convert", s(&d.join(format!("{src}.npz"))), "--to", &enc, "-o", s(&out)]);
                assert_eq!(code, 0, "{src} -> BSR({r}, {c}) {tag}: {err}");
            }
        }
    }
    let check = format!(
        "{SETUP}
import itertools
Z = A.copy()
Z.data[3] = 0.0
bad = []
for (r, c), src, tag in itertools.product({shapes:?}, ['a', 'a_csc', 'z'], ['native', 'w32']):
    M = Z if src == 'z' else A
    want = sp.csr_array(M).tobsr(blocksize=(r, c))
    want.sort_indices()
    got = sp.load_npz(f'{{src}}_{{r}}x{{c}}_{{tag}}.npz')
    same = (got.format == 'bsr' and got.blocksize == (r, c)
            and np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
            and got.data.tobytes() == want.data.tobytes())
    if not same:
        bad.append((src, r, c, tag))
print(len(bad), bad)
"
    );
    let Some(out) = python(d, &check) else { return };
    assert!(out.starts_with("0 "), "BSR differs from scipy's tobsr: {out}");
}

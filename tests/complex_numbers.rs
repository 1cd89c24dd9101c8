//! Complex element types (issue 12, item 5): `complex<f32>` and
//! `complex<f64>` values read from Matrix Market (`complex` and `hermitian`),
//! `.npy` (complex64 / complex128), scipy's `.npz` and JSON (`[re, im]`
//! pairs), computed by the interpreter and compared with numpy / scipy, and
//! written back. Values are multiples of 1/4 and small integers, so SpMV's
//! products and sums are exact in any order and at either width: those
//! results are compared bit for bit. The compiled backends refuse complex
//! kernels with a located error until they compile them.
//!
//! Needs python3 with numpy and scipy; without them the scipy tests are
//! skipped visibly, except under `CI=true`, where they fail.

mod common;

use common::{heddle, python, write};
use std::path::{Path, PathBuf};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("heddle-complex-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs heddle and asserts it succeeded; its stdout.
fn ok(args: &[&str]) -> String {
    let (code, out, err) = heddle(args);
    assert_eq!(code, 0, "heddle {args:?} failed:\n{err}");
    out
}

/// A 9 x 11 complex matrix, about 40 % filled with quarter multiples (some
/// entries purely real or purely imaginary), a Hermitian 9 x 9 one, and a
/// complex vector of small integers; saved as `.npz`, `.mtx` and `.npy`.
const SETUP: &str = r#"
import numpy as np, scipy.sparse as sp, scipy.io as sio
rng = np.random.default_rng(11)
m, n = 9, 11
re = rng.integers(-8, 9, size=(m, n)) / 4.0
im = rng.integers(-8, 9, size=(m, n)) / 4.0 * (rng.random((m, n)) < 0.7)
dense = (re + 1j * im) * (rng.random((m, n)) < 0.4)
A = sp.csr_array(dense)
A.eliminate_zeros()
sq = dense[:, :m]
Hd = np.tril(sq, -1) + np.tril(sq, -1).conj().T + np.diag(np.real(np.diag(sq)) + 1.0)
H = sp.csr_array(Hd)
H.eliminate_zeros()
x = rng.integers(-3, 4, size=n) + 1j * rng.integers(-3, 4, size=n)
sp.save_npz('A.npz', A)
sio.mmwrite('A.mtx', A)
sio.mmwrite('H.mtx', H, symmetry='hermitian')
np.save('x128.npy', x)
np.save('x64.npy', x.astype(np.complex64))
np.save('xh.npy', x[:m])
"#;

/// SpMV over a CSR tensor of `elem` values.
fn spmv(d: &Path, elem: &str) -> PathBuf {
    let text = format!(
        "fun(A: tensor<?x?x{elem}, #CSR> =>\nfun(xs: [{elem}]_A_dim1 =>\n  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0.0)))))\n"
    );
    write(d, &format!("spmv_{}.hdl", elem.replace(['<', '>'], "_")), &text)
}

#[test]
fn hermitian_files_read_with_conjugate_mirrors_and_round_trip() {
    let d = dir("hermitian");
    if python(&d, SETUP).is_none() {
        return;
    }
    // The header says what scipy wrote: the lower triangle of a Hermitian matrix.
    let text = std::fs::read_to_string(d.join("H.mtx")).unwrap();
    assert!(text.starts_with("%%MatrixMarket matrix coordinate complex hermitian"), "{}", &text[..60]);
    for out in ["H2.mtx", "H.npz", "H.json"] {
        ok(&["convert", s(&d.join("H.mtx")), "--to", "CSR", "-o", s(&d.join(out))]);
    }
    // Back from the JSON storage form, to Matrix Market again.
    ok(&["convert", s(&d.join("H.json")), "--to", "COO", "-o", s(&d.join("H3.mtx"))]);
    let check = python(
        &d,
        "
import numpy as np, scipy.sparse as sp, scipy.io as sio
want = sio.mmread('H.mtx').toarray()
assert np.iscomplexobj(want) and np.array_equal(want, want.conj().T)
for got in [sio.mmread('H2.mtx').toarray(), sp.load_npz('H.npz').toarray(), sio.mmread('H3.mtx').toarray()]:
    assert got.dtype == np.complex128, got.dtype
    assert np.array_equal(got, want), (got, want)
assert open('H2.mtx').readline().split()[3:] == ['complex', 'general']
print('ok')
",
    );
    assert_eq!(check.as_deref().map(str::trim), Some("ok"));
}

#[test]
fn complex_spmv_on_the_interpreter_matches_scipy_exactly() {
    let d = dir("spmv");
    if python(&d, SETUP).is_none() {
        return;
    }
    let (k64, k32) = (spmv(&d, "complex<f64>"), spmv(&d, "complex<f32>"));
    // Every reader: scipy's .npz, Matrix Market (general and Hermitian), .npy of either width.
    let runs = [
        (&k64, "A.npz", "x128.npy", "y_npz.npy"),
        (&k64, "A.mtx", "x64.npy", "y_mtx.npy"),
        (&k32, "A.npz", "x64.npy", "y32.npy"),
        (&k64, "H.mtx", "xh.npy", "yh.npy"),
    ];
    for (k, a, x, y) in runs {
        let (a, x) = (format!("A={}", s(&d.join(a))), format!("xs={}", s(&d.join(x))));
        ok(&["run", s(k), "--matrix", &a, "--input", &x, "-o", s(&d.join(y))]);
    }
    let a = format!("A={}", s(&d.join("A.npz")));
    let x = format!("xs={}", s(&d.join("x128.npy")));
    let json = ok(&["run", s(&k64), "--matrix", &a, "--input", &x]);
    std::fs::write(d.join("y.json"), json).unwrap();
    let check = python(
        &d,
        "
import json, numpy as np, scipy.sparse as sp, scipy.io as sio
A = sp.load_npz('A.npz'); x = np.load('x128.npy')
want = A @ x
for name, dtype in [('y_npz.npy', np.complex128), ('y_mtx.npy', np.complex128), ('y32.npy', np.complex64)]:
    got = np.load(name)
    assert got.dtype == dtype, (name, got.dtype)
    assert np.array_equal(got, want.astype(dtype)), (name, got, want)
H = sio.mmread('H.mtx').tocsr()
assert np.array_equal(np.load('yh.npy'), H @ np.load('xh.npy'))
pairs = json.load(open('y.json'))
assert np.array_equal(np.array([complex(r, i) for r, i in pairs]), want), pairs
print('ok')
",
    );
    assert_eq!(check.as_deref().map(str::trim), Some("ok"));
}

#[test]
fn element_wise_complex_arithmetic_matches_python() {
    let d = dir("elementwise");
    let k = write(
        &d,
        "k.hdl",
        "nFun(n =>\nfun(zs: [complex<f64>]_n =>\nfun(ws: [complex<f64>]_n =>\n  zip(zs, ws) :>> map(fun(p => (p.1 * conj(p.2) - complex(re(p.2), 1.0)) / (p.2 + 0.5) * 2.0 + complex(0.0, im(p.1)))))))\n",
    );
    let zs = "[[1, 2], [0.5, -1], [3, 0], [-2.25, 0.75]]";
    let ws = "[[2, 1], [-1, -1], [0, 4], [1.5, -0.5]]";
    let (zp, wp) = (write(&d, "z.json", zs), write(&d, "w.json", ws));
    let out = ok(&["run", s(&k), "--input", &format!("zs={}", s(&zp)), "--input", &format!("ws={}", s(&wp))]);
    let got: Vec<Vec<f64>> = serde_json::from_str(&out).unwrap();
    // The same formula with Python's complex numbers (its division is Smith's,
    // heddle's the textbook one: equal to a few ulps).
    let pairs = |t: &str| -> Vec<(f64, f64)> { serde_json::from_str::<Vec<(f64, f64)>>(t).unwrap() };
    for (k, ((z, w), g)) in pairs(zs).into_iter().zip(pairs(ws)).zip(&got).enumerate() {
        let (a, b, c, e) = (z.0, z.1, w.0, w.1);
        // p.1 * conj(p.2) - complex(re(p.2), 1)
        let (nr, ni) = (a * c + b * e - c, b * c - a * e - 1.0);
        let (dr, di) = (c + 0.5, e);
        let den = dr * dr + di * di;
        let (qr, qi) = ((nr * dr + ni * di) / den, (ni * dr - nr * di) / den);
        let want = (qr * 2.0, qi * 2.0 + b);
        assert!((g[0] - want.0).abs() <= 1e-12 * want.0.abs().max(1.0), "element {k}: {g:?} vs {want:?}");
        assert!((g[1] - want.1).abs() <= 1e-12 * want.1.abs().max(1.0), "element {k}: {g:?} vs {want:?}");
    }
    // Equality compares both parts.
    let eq = write(&d, "eq.hdl", "nFun(n =>\nfun(zs: [complex<f32>]_n => zs :>> map(fun(z => z == conj(z)))))\n");
    let out = ok(&["run", s(&eq), "--input", &format!("zs={}", s(&zp))]);
    assert_eq!(out.trim(), "[false,false,true,false]");
}

#[test]
fn compiled_backends_refuse_complex_kernels_with_a_located_error() {
    let d = dir("refuse");
    let m = write(&d, "m.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 2\n1 1 1 2\n2 1 0.5 -1\n");
    let x = write(&d, "x.json", "[[1, 0], [0, 1]]");
    let k = spmv(&d, "complex<f64>");
    let reals = write(&d, "reals.json", "[1.5, -2]");
    let ew = write(&d, "ew.hdl", "nFun(n =>\nfun(xs: [double]_n => xs :>> map(fun(x => re(complex(x, x) * complex(x, 0.0))))))\n");
    let (a, xs) = (format!("A={}", s(&m)), format!("xs={}", s(&x)));
    for backend in ["cpu", "opencl"] {
        let (code, _, err) = heddle(&["run", s(&k), "--backend", backend, "--matrix", &a, "--input", &xs]);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("complex<f64> values (complex numbers) cannot be compiled yet") && err.contains("spmv_complex_f64_.hdl:1:5"), "{backend}: {err}");
        assert!(!err.contains("internal error") && !err.contains("panicked"), "{err}");
        // A kernel whose inputs and result are real refuses at the complex expression inside.
        let (code, _, err) = heddle(&["run", s(&ew), "--backend", backend, "--input", &format!("xs={}", s(&reals))]);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("arithmetic on complex<f64> (complex numbers) cannot be compiled yet") && err.contains("ew.hdl:2:"), "{backend}: {err}");
    }
    // The interpreter runs both.
    assert_eq!(ok(&["run", s(&k), "--matrix", &a, "--input", &xs]).trim(), "[[1.0,2.0],[0.5,-1.0]]");
}

#[test]
fn complex_misuse_is_a_type_error() {
    let d = dir("typing");
    let cases = [
        ("fun(zs: [complex<f64>]_4 => zs :>> map(fun(z => z < z)))", "`<` is not defined on complex numbers"),
        ("fun(zs: [complex<f64>]_4 => zs :>> reduce(max, 0.0))", "`max` is not defined on complex numbers"),
        ("fun(zs: [complex<f64>]_4 => zs :>> map(fun(z => double(z))))", "`double` converts a real number, found complex<f64>"),
        ("fun(xs: [int]_4 => xs :>> map(fun(x => complex(x, x))))", "`complex` takes parts of type f32 or f64, found int"),
        ("fun(xs: [double]_4 => xs :>> map(fun(x => re(x))))", "expected a complex number, found double"),
        ("fun(xs: [complex<f16>]_4 => xs)", "unknown complex type `complex<f16>`"),
    ];
    for (k, (src, want)) in cases.iter().enumerate() {
        let f = write(&d, &format!("bad{k}.hdl"), &format!("{src}\n"));
        let (code, _, err) = heddle(&["check", s(&f)]);
        assert_eq!(code, 1, "{src}: {err}");
        assert!(err.contains(want), "{src}: expected `{want}` in\n{err}");
    }
    // Literal parts follow the complex type the context needs (here complex<f64>, from zs).
    let f = write(&d, "lit.hdl", "fun(zs: [complex<f64>]_2 => zs :>> map(fun(z => z * complex(0.1, 2.0))))\n");
    let x = write(&d, "x.json", "[[1, 0], [0, 1]]");
    let out = ok(&["run", s(&f), "--input", &format!("zs={}", s(&x))]);
    assert_eq!(out.trim(), "[[0.1,2.0],[-2.0,0.1]]", "0.1 kept at double precision");
}

#[test]
fn bad_complex_matrix_market_files_are_located_errors() {
    let d = dir("mtx-errors");
    let k = spmv(&d, "complex<f64>");
    let cases = [
        ("%%MatrixMarket matrix coordinate real hermitian\n2 2 1\n1 1 1\n", ":1: a hermitian matrix has complex values, but this one's field is `real`"),
        ("%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 1 0\n2 2 1 0.5\n", ":4: a hermitian matrix's diagonal is real, but entry (2, 2) is complex(1.0, 0.5)"),
        ("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1\n", ":3: expected 4 numbers on an entry line (a complex value is two), found 3"),
        ("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1 x\n", ":3: value `x` is not a number"),
    ];
    let x = write(&d, "x.json", "[[1, 0], [0, 1]]");
    for (n, (text, want)) in cases.iter().enumerate() {
        let m = write(&d, &format!("m{n}.mtx"), text);
        let (code, _, err) = heddle(&["run", s(&k), "--matrix", &format!("A={}", s(&m)), "--input", &format!("xs={}", s(&x))]);
        assert_eq!(code, 1, "{text}: {err}");
        assert!(err.contains(want), "expected `{want}` in\n{err}");
    }
    // A complex file for a real tensor is refused, naming the value.
    let m = write(&d, "c.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1 2\n");
    let (code, _, err) = heddle(&["convert", s(&m), "--to", "CSR", "--elem", "f64", "-o", s(&d.join("r.mtx"))]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("complex(1.0, 2.0) does not fit in double"), "{err}");
    // FROSTT files hold one number per value.
    let (code, _, err) = heddle(&["convert", s(&m), "--to", "COO", "-o", s(&d.join("c.tns"))]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("FROSTT .tns files hold real values"), "{err}");
}

#[test]
fn stored_complex_results_are_written_for_scipy() {
    let d = dir("stored");
    if python(&d, SETUP).is_none() {
        return;
    }
    // 2 conj(H), stored as CSR: written as .npz and .mtx, read back by scipy.
    let k = write(
        &d,
        "k.hdl",
        "fun(A: tensor<?x?xcomplex<f64>, #CSR> =>\n  (A :>> map(fun(row => row :>> map(fun(e => (e.1, conj(e.2) * 2.0))))) : tensor<?x{A_dim1}xcomplex<f64>, #CSR>))\n",
    );
    let a = format!("A={}", s(&d.join("H.mtx")));
    for out in ["C.npz", "C.mtx"] {
        ok(&["run", s(&k), "--matrix", &a, "-o", s(&d.join(out))]);
    }
    let check = python(
        &d,
        "
import numpy as np, scipy.sparse as sp, scipy.io as sio
want = 2 * sio.mmread('H.mtx').toarray().conj()
for got in [sp.load_npz('C.npz').toarray(), sio.mmread('C.mtx').toarray()]:
    assert got.dtype == np.complex128 and np.array_equal(got, want), (got, want)
print('ok')
",
    );
    assert_eq!(check.as_deref().map(str::trim), Some("ok"));
}

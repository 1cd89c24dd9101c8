//! Complex element types (issue 12, item 5): `complex<f32>` and
//! `complex<f64>` values read from Matrix Market (`complex` and `hermitian`),
//! `.npy` (complex64 / complex128), scipy's `.npz` and JSON (`[re, im]`
//! pairs), computed by the interpreter and compared with numpy / scipy, and
//! written back. Values are multiples of 1/4 and small integers, so SpMV's
//! products and sums are exact in any order and at either width: those
//! results are compared bit for bit. The compiled backends (CPU, OpenCL)
//! run the same kernels: equal to scipy / numpy, and to the interpreter bit
//! for bit (the same operations in the same order at the same width),
//! vectors of complex numbers (`asVector` over complex arrays) included.
//!
//! Needs python3 with numpy and scipy; without them the scipy tests are
//! skipped visibly, except under `CI=true`, where they fail.

use crate::common;

use common::{heddle, python, write};
use std::path::{Path, PathBuf};

/// The test's own directory, removed when it ends.
fn dir(name: &str) -> tempfile::TempDir {
    common::scratch_dir(&format!("complex-{name}"))
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
    let tmp = dir("hermitian");
    let d = tmp.path();
    if python(d, SETUP).is_none() {
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
        d,
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
    let tmp = dir("spmv");
    let d = tmp.path();
    if python(d, SETUP).is_none() {
        return;
    }
    let (k64, k32) = (spmv(d, "complex<f64>"), spmv(d, "complex<f32>"));
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
        d,
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
    let tmp = dir("elementwise");
    let d = tmp.path();
    let k = write(
        d,
        "k.hdl",
        "nFun(n =>\nfun(zs: [complex<f64>]_n =>\nfun(ws: [complex<f64>]_n =>\n  zip(zs, ws) :>> map(fun(p => (p.1 * conj(p.2) - complex(re(p.2), 1.0)) / (p.2 + 0.5) * 2.0 + complex(0.0, im(p.1)))))))\n",
    );
    let zs = "[[1, 2], [0.5, -1], [3, 0], [-2.25, 0.75]]";
    let ws = "[[2, 1], [-1, -1], [0, 4], [1.5, -0.5]]";
    let (zp, wp) = (write(d, "z.json", zs), write(d, "w.json", ws));
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
    let eq = write(d, "eq.hdl", "nFun(n =>\nfun(zs: [complex<f32>]_n => zs :>> map(fun(z => z == conj(z)))))\n");
    let out = ok(&["run", s(&eq), "--input", &format!("zs={}", s(&zp))]);
    assert_eq!(out.trim(), "[false,false,true,false]");
}

/// The compiled backends (OpenCL where a platform exists, and alone in the
/// Oclgrind pass); the interpreter is always run as the reference.
fn compiled() -> Vec<&'static str> {
    common::backends().into_iter().filter(|b| *b != "interp").collect()
}

#[test]
fn compiled_complex_spmv_matches_scipy_and_the_interpreter_bit_for_bit() {
    let tmp = dir("spmv-compiled");
    let d = tmp.path();
    if python(d, SETUP).is_none() {
        return;
    }
    let (k64, k32) = (spmv(d, "complex<f64>"), spmv(d, "complex<f32>"));
    // scipy's .npz, Matrix Market (a Hermitian file: conjugated mirrors), .npy of either width.
    let runs = [(&k64, "A.npz", "x128.npy", "y64"), (&k32, "A.npz", "x64.npy", "y32"), (&k64, "H.mtx", "xh.npy", "yh")];
    let mut names = Vec::new();
    for backend in std::iter::once("interp").chain(compiled()) {
        for (k, a, x, y) in runs {
            let out = d.join(format!("{y}_{backend}.npy"));
            let (a, x) = (format!("A={}", s(&d.join(a))), format!("xs={}", s(&d.join(x))));
            ok(&["run", s(k), "--backend", backend, "--matrix", &a, "--input", &x, "-o", s(&out)]);
        }
        names.push(format!("'{backend}'"));
    }
    // Quarter multiples and small integers: every product and sum is exact,
    // so each backend equals scipy, and the interpreter, exactly.
    let check = python(
        d,
        &format!(
            "
import numpy as np, scipy.sparse as sp, scipy.io as sio
A = sp.load_npz('A.npz'); x = np.load('x128.npy')
H = sio.mmread('H.mtx').tocsr()
want = {{'y64': (A @ x, np.complex128), 'y32': (A @ x, np.complex64), 'yh': (H @ np.load('xh.npy'), np.complex128)}}
for backend in [{}]:
    for y, (w, dtype) in want.items():
        got = np.load(f'{{y}}_{{backend}}.npy')
        assert got.dtype == dtype, (backend, y, got.dtype)
        assert np.array_equal(got, w.astype(dtype)), (backend, y, got, w)
        assert got.tobytes() == np.load(f'{{y}}_interp.npy').tobytes(), (backend, y)
print('ok', len(want))
",
            names.join(", ")
        ),
    );
    assert_eq!(check.as_deref().map(str::trim), Some("ok 3"));
}

/// Random complex numbers (normal parts, none near 0, so quotients are
/// tame) at both widths, saved as `.npy`.
const RANDOM: &str = r"
import numpy as np
rng = np.random.default_rng(5)
n = 37
for name in ['z', 'w']:
    v = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    v += np.sign(v.real) * 0.5
    np.save(name + '128.npy', v)
    np.save(name + '64.npy', v.astype(np.complex64))
";

/// Element-wise complex arithmetic at `elem`: every operation of the
/// language on complex numbers, as a tuple of arrays.
fn element_wise(d: &Path, elem: &str) -> PathBuf {
    let text = format!(
        "nFun(n =>\nfun(zs: [{elem}]_n =>\nfun(ws: [{elem}]_n =>\n  (zip(zs, ws) :>> map(fun(p => p.1 / p.2)),\n   zip(zs, ws) :>> map(fun(p => p.1 * conj(p.2) - complex(re(p.2), im(p.1)))),\n   zip(zs, ws) :>> map(fun(p => -(p.1 + p.2) * 2.0)),\n   zip(zs, ws) :>> map(fun(p => (p.1 == p.1 * 1.0, p.1 != p.2, re(p.1) * im(p.2))))))))\n"
    );
    write(d, &format!("ew_{}.hdl", elem.replace(['<', '>'], "_")), &text)
}

#[test]
fn compiled_element_wise_complex_arithmetic_matches_numpy_and_the_interpreter_bit_for_bit() {
    let tmp = dir("ew-compiled");
    let d = tmp.path();
    if python(d, RANDOM).is_none() {
        return;
    }
    let mut names = Vec::new();
    for (elem, width) in [("complex<f64>", "128"), ("complex<f32>", "64")] {
        let k = element_wise(d, elem);
        let (z, w) = (
            format!("zs={}", s(&d.join(format!("z{width}.npy")))),
            format!("ws={}", s(&d.join(format!("w{width}.npy")))),
        );
        for backend in std::iter::once("interp").chain(compiled()) {
            let out = ok(&["run", s(&k), "--backend", backend, "--input", &z, "--input", &w]);
            std::fs::write(d.join(format!("ew{width}_{backend}.json")), out).unwrap();
            // The quotients as .npy too: complex results are written with numpy's dtypes.
            let q = write(
                d,
                "q.hdl",
                &format!(
                    "nFun(n =>\nfun(zs: [{elem}]_n =>\nfun(ws: [{elem}]_n =>\n  zip(zs, ws) :>> map(fun(p => conj(p.1) / p.2)))))\n"
                ),
            );
            ok(&[
                "run",
                s(&q),
                "--backend",
                backend,
                "--input",
                &z,
                "--input",
                &w,
                "-o",
                s(&d.join(format!("q{width}_{backend}.npy"))),
            ]);
            if width == "128" {
                names.push(format!("'{backend}'"));
            }
        }
    }
    // numpy's quotient is Smith's algorithm, heddle's the textbook one: equal
    // to a few ulps. Against the interpreter, the same operations in the same
    // order at the same width: equal bit for bit.
    let check = python(
        d,
        &format!(
            "
import json, numpy as np
def pairs(v): return np.array([complex(r, i) for r, i in v])
for width, dtype, rtol in [('128', np.complex128, 1e-13), ('64', np.complex64, 1e-5)]:
    z, w = np.load(f'z{{width}}.npy'), np.load(f'w{{width}}.npy')
    ref = json.load(open(f'ew{{width}}_interp.json'))
    for backend in [{}]:
        got = json.load(open(f'ew{{width}}_{{backend}}.json'))
        assert got == ref, (width, backend)
        div, mix, neg, cmp = got
        np.testing.assert_allclose(pairs(div), z / w, rtol=rtol)
        np.testing.assert_allclose(pairs(mix), z * w.conj() - (w.real + 1j * z.imag), rtol=rtol, atol=rtol)
        np.testing.assert_allclose(pairs(neg), -(z + w) * 2, rtol=rtol)
        assert [c[0] for c in cmp] == [True] * len(z) and [c[1] for c in cmp] == list(z != w)
        np.testing.assert_allclose([c[2] for c in cmp], z.real * w.imag, rtol=rtol)
        q = np.load(f'q{{width}}_{{backend}}.npy')
        assert q.dtype == dtype, q.dtype
        np.testing.assert_allclose(q, z.conj() / w, rtol=rtol)
        assert q.tobytes() == np.load(f'q{{width}}_interp.npy').tobytes(), (width, backend)
print('ok')
",
            names.join(", ")
        ),
    );
    assert_eq!(check.as_deref().map(str::trim), Some("ok"));
}

#[test]
fn compiled_dense_complex_matrix_from_npy_matches_numpy_exactly() {
    let tmp = dir("dense-compiled");
    let d = tmp.path();
    // A 2-D complex128 .npy matrix and a complex64 vector (widened exactly);
    // quarter multiples, so the sums are exact in any order.
    let setup = "
import numpy as np
rng = np.random.default_rng(8)
q = lambda *s: rng.integers(-8, 9, size=s) / 4
np.save('M.npy', q(7, 10) + 1j * q(7, 10))
np.save('v.npy', (q(10) + 1j * q(10)).astype(np.complex64))
";
    if python(d, setup).is_none() {
        return;
    }
    let k = write(
        d,
        "mv.hdl",
        "nFun(n => nFun(m =>\nfun(a: [[complex<f64>]_m]_n =>\nfun(xs: [complex<f32>]_m =>\n  a :>> map(fun(row => zip(row, xs) :>> map(fun(p => p.1 * complex(double(re(p.2)), double(im(p.2))))) :>> reduce(+, 0.0)))))))\n",
    );
    let (a, x) = (format!("a={}", s(&d.join("M.npy"))), format!("xs={}", s(&d.join("v.npy"))));
    let mut names = Vec::new();
    for backend in std::iter::once("interp").chain(compiled()) {
        ok(&[
            "run",
            s(&k),
            "--backend",
            backend,
            "--input",
            &a,
            "--input",
            &x,
            "-o",
            s(&d.join(format!("y_{backend}.npy"))),
        ]);
        names.push(format!("'y_{backend}.npy'"));
    }
    let check = python(
        d,
        &format!(
            "
import numpy as np
want = np.load('M.npy') @ np.load('v.npy').astype(np.complex128)
for name in [{}]:
    got = np.load(name)
    assert got.dtype == np.complex128 and np.array_equal(got, want), (name, got, want)
print('ok')
",
            names.join(", ")
        ),
    );
    assert_eq!(check.as_deref().map(str::trim), Some("ok"));
}

#[test]
fn compiled_complex_reductions_scalars_and_tuples_equal_the_interpreter() {
    let tmp = dir("reduce-compiled");
    let d = tmp.path();
    // A sum (whose accumulators a backend may split: exact on quarter
    // multiples), a product (whose new parts read both old ones), a
    // sequential fold, squares, a complex scalar parameter; a kernel with
    // real inputs and result computing through complex numbers.
    let k = write(
        d,
        "k.hdl",
        "nFun(n =>\nfun(zs: [complex<f64>]_n =>\nfun(c: complex<f64> =>\n  (zs :>> reduce(+, 0.0),\n   zs :>> reduce(*, 1.0),\n   zs :>> reduceSeq(fun(a, z => a * c - z), c),\n   zs :>> map(fun(z => z * z + c))))))\n",
    );
    let zs = write(d, "z.json", "[[1, 2], [0.5, -1], [3, 0], [-2.25, 0.75], [0, -1], [1.25, 0.5], [-0.5, -0.25]]");
    let c = write(d, "c.json", "[0.5, -1.5]");
    let reals = write(d, "r.json", "[1.5, -2, 0.25]");
    let ew = write(
        d,
        "ew.hdl",
        "nFun(n =>\nfun(xs: [double]_n => xs :>> map(fun(x => re(complex(x, x) * complex(x, 0.0)) + im(conj(complex(0.0, x)))))))\n",
    );
    let args = ["--input", &format!("zs={}", s(&zs)), "--input", &format!("c={}", s(&c))];
    let run = |backend: &str| -> (String, String) {
        let mut a = vec!["run", s(&k), "--backend", backend];
        a.extend(args);
        (ok(&a), ok(&["run", s(&ew), "--backend", backend, "--input", &format!("xs={}", s(&reals))]))
    };
    let want = run("interp");
    // The interpreter against the formulas by hand (independent of heddle).
    let z: Vec<(f64, f64)> = serde_json::from_str(&std::fs::read_to_string(&zs).unwrap()).unwrap();
    let mul = |(a, b): (f64, f64), (c, d): (f64, f64)| (a * c - b * d, a * d + b * c);
    let sum = z.iter().fold((0.0, 0.0), |s, z| (s.0 + z.0, s.1 + z.1));
    let product = z.iter().fold((1.0, 0.0), |p, &z| mul(p, z));
    let cc = (0.5, -1.5);
    let fold = z.iter().fold(cc, |a, z| {
        let m = mul(a, cc);
        (m.0 - z.0, m.1 - z.1)
    });
    let got: serde_json::Value = serde_json::from_str(&want.0).unwrap();
    let pair = |v: &serde_json::Value| (v[0].as_f64().unwrap(), v[1].as_f64().unwrap());
    assert_eq!(pair(&got[0]), sum, "{got}");
    assert_eq!(pair(&got[1]), product, "{got}");
    assert_eq!(pair(&got[2]), fold, "{got}");
    assert_eq!(
        got[3].as_array().unwrap().iter().map(pair).collect::<Vec<_>>(),
        z.iter()
            .map(|&z| {
                let m = mul(z, z);
                (m.0 + cc.0, m.1 + cc.1)
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(want.1.trim(), "[0.75,6.0,-0.1875]");
    for backend in compiled() {
        assert_eq!(run(backend), want, "{backend}");
    }
}

/// Vectors of complex numbers (`asVector` over a complex array): lane-wise
/// `-`, `*`, `/`, `+`, `-`, a result of vectors, `asScalar` back (each
/// scalar's lane chosen at run time, then `conj` / `re`) and a dot product
/// reduced through `asScalar`; at either width and 2 or 4 lanes.
fn complex_vector_kernel(d: &Path, elem: &str, w: usize) -> PathBuf {
    let text = format!(
        "nFun(n =>\nfun(as: [{elem}]_{{{w} * n}} =>\nfun(bs: [{elem}]_{{{w} * n}} =>\n  (zip(as :>> asVector({w}), bs :>> asVector({w})) :>> map(fun(p => -(p.1 * p.2) + p.1 / p.2 - p.2)),\n   zip(as :>> asVector({w}), bs :>> asVector({w}))\n     :>> map(fun(p => p.1 * p.2 + p.1))\n     :>> asScalar\n     :>> map(fun(z => conj(z) * complex(re(z), 0.5))),\n   zip(as :>> asVector({w}), bs :>> asVector({w})) :>> map(fun(p => p.1 * p.2)) :>> asScalar :>> reduce(+, 0.0)))))\n"
    );
    write(d, &format!("cv_{}_{w}.hdl", elem.replace(['<', '>'], "_")), &text)
}

#[test]
fn vectors_of_complex_numbers_compile_and_match_numpy_bit_for_bit() {
    let tmp = dir("vectors");
    let d = tmp.path();
    // Quarter multiples (products and sums exact in any order), no zero
    // divisor; 16 numbers, so 8 vectors of 2 lanes or 4 of 4.
    let setup = "
import numpy as np
rng = np.random.default_rng(5)
q = lambda: rng.integers(-8, 9, size=16) / 4
a = q() + 1j * q()
b = (rng.integers(1, 9, size=16) * rng.choice([-1, 1], size=16)) / 4 + 1j * q()
for name, z in [('a', a), ('b', b)]:
    np.save(name + '128.npy', z)
    np.save(name + '64.npy', z.astype(np.complex64))
";
    if python(d, setup).is_none() {
        return;
    }
    let mut names = Vec::new();
    for (elem, bits) in [("complex<f64>", "128"), ("complex<f32>", "64")] {
        for w in [2, 4] {
            let k = complex_vector_kernel(d, elem, w);
            let (a, b) = (
                format!("as={}", s(&d.join(format!("a{bits}.npy")))),
                format!("bs={}", s(&d.join(format!("b{bits}.npy")))),
            );
            let want = ok(&["run", s(&k), "--input", &a, "--input", &b]);
            for backend in compiled() {
                let (code, out, err) = heddle(&["run", s(&k), "--backend", backend, "--input", &a, "--input", &b]);
                assert_eq!(code, 0, "{backend} {elem} w={w}: {err}");
                assert_eq!(out, want, "{backend} {elem} w={w}: differs from the interpreter");
            }
            let name = format!("out{bits}_{w}.json");
            std::fs::write(d.join(&name), want).unwrap();
            names.push(format!("('{name}', {bits})"));
        }
    }
    // The example: BLAS's zdotc through vectors, on every backend, as numpy's vdot.
    let example = common::root().join("examples/dense/complex_vector_dot.hdl");
    let (a, b) = (format!("as={}", s(&d.join("a128.npy"))), format!("bs={}", s(&d.join("b128.npy"))));
    for backend in std::iter::once("interp").chain(compiled()) {
        let out = ok(&["run", s(&example), "--backend", backend, "--input", &a, "--input", &b]);
        std::fs::write(d.join(format!("zdotc_{backend}.json")), out).unwrap();
        names.push(format!("('zdotc_{backend}.json', 0)"));
    }
    // The interpreter against numpy, each real operation in the interpreter's
    // order at the part type (the textbook quotient, as `launch::complex_bin`).
    let check = python(
        d,
        &format!(
            "
import numpy as np, json
def mul(x, y): return (x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0])
def div(x, y):
    den = y[0] * y[0] + y[1] * y[1]
    return ((x[0] * y[0] + x[1] * y[1]) / den, (x[1] * y[0] - x[0] * y[1]) / den)
def parts(z): return (z.real.copy(), z.imag.copy())
def pairs(v, t): return np.array(v, dtype=t).reshape(-1, 2)
for name, bits in [{}]:
    if bits == 0:
        got = json.load(open(name))
        assert complex(*got) == np.vdot(np.load('a128.npy'), np.load('b128.npy')), (name, got)
        continue
    t = np.float64 if bits == 128 else np.float32
    a, b = parts(np.load('a%d.npy' % bits)), parts(np.load('b%d.npy' % bits))
    got = json.load(open(name))
    m = mul(a, b)
    neg = (-m[0], -m[1])
    q = div(a, b)
    first = (neg[0] + q[0] - b[0], neg[1] + q[1] - b[1])
    s = (m[0] + a[0], m[1] + a[1])
    second = mul((s[0], -s[1]), (s[0], np.full_like(s[0], 0.5)))
    dot = (m[0].sum(), m[1].sum())
    for got_part, want in [(got[0], first), (got[1], second)]:
        g = pairs(got_part, t)
        assert g.dtype == t and np.array_equal(g[:, 0], want[0]) and np.array_equal(g[:, 1], want[1]), (name, g, want)
    assert np.array_equal(pairs(got[2], t)[0], np.array(dot, dtype=t)), (name, got[2], dot)
print('ok')
",
            names.join(", ")
        ),
    );
    assert_eq!(check.as_deref().map(str::trim), Some("ok"));
}

#[test]
fn a_kernel_parameter_holding_a_vector_of_complex_numbers_is_refused() {
    // The interpreter takes no vector input either; compiling refuses the
    // parameter itself, located, and says what to pass instead.
    let tmp = dir("vector-param");
    let d = tmp.path();
    let k = write(
        d,
        "v.hdl",
        "fun(as: [complex<f64>]_2 =>\nfun(v: <complex<f64>>2 =>\n  as :>> asVector(2) :>> map(fun(u => u * v))))\n",
    );
    let (code, _, err) = heddle(&["compile", s(&k)]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("a kernel parameter of vector type (`v`: <complex<f64>>2) cannot be compiled yet")
            && err.contains("v.hdl:2:5"),
        "{err}"
    );
    assert!(err.contains("pass an array of scalars and group it in the kernel with `asVector(w)`"), "{err}");
    assert!(!err.contains("--backend interp"), "the interpreter takes no vector input either: {err}");
    assert!(!err.contains("internal error") && !err.contains("panicked"), "{err}");
}

#[test]
fn complex_misuse_is_a_type_error() {
    let tmp = dir("typing");
    let d = tmp.path();
    let cases = [
        ("fun(zs: [complex<f64>]_4 => zs :>> map(fun(z => z < z)))", "`<` is not defined on complex numbers"),
        ("fun(zs: [complex<f64>]_4 => zs :>> reduce(max, 0.0))", "`max` is not defined on complex numbers"),
        (
            "fun(zs: [complex<f64>]_4 => zs :>> map(fun(z => double(z))))",
            "`double` converts a real number, found complex<f64>",
        ),
        (
            "fun(xs: [int]_4 => xs :>> map(fun(x => complex(x, x))))",
            "`complex` takes parts of type f32 or f64, found int",
        ),
        ("fun(xs: [double]_4 => xs :>> map(fun(x => re(x))))", "expected a complex number, found double"),
        ("fun(xs: [complex<f16>]_4 => xs)", "unknown complex type `complex<f16>`"),
    ];
    for (k, (src, want)) in cases.iter().enumerate() {
        let f = write(d, &format!("bad{k}.hdl"), &format!("{src}\n"));
        let (code, _, err) = heddle(&["check", s(&f)]);
        assert_eq!(code, 1, "{src}: {err}");
        assert!(err.contains(want), "{src}: expected `{want}` in\n{err}");
    }
    // Literal parts follow the complex type the context needs (here complex<f64>, from zs).
    let f = write(d, "lit.hdl", "fun(zs: [complex<f64>]_2 => zs :>> map(fun(z => z * complex(0.1, 2.0))))\n");
    let x = write(d, "x.json", "[[1, 0], [0, 1]]");
    let out = ok(&["run", s(&f), "--input", &format!("zs={}", s(&x))]);
    assert_eq!(out.trim(), "[[0.1,2.0],[-2.0,0.1]]", "0.1 kept at double precision");
}

#[test]
fn bad_complex_matrix_market_files_are_located_errors() {
    let tmp = dir("mtx-errors");
    let d = tmp.path();
    let k = spmv(d, "complex<f64>");
    let cases = [
        (
            "%%MatrixMarket matrix coordinate real hermitian\n2 2 1\n1 1 1\n",
            ":1: a hermitian matrix has complex values, but this one's field is `real`",
        ),
        (
            "%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 1 0\n2 2 1 0.5\n",
            ":4: a hermitian matrix's diagonal is real, but entry (2, 2) is complex(1.0, 0.5)",
        ),
        (
            "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1\n",
            ":3: expected 4 numbers on an entry line (a complex value is two), found 3",
        ),
        ("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1 x\n", ":3: value `x` is not a number"),
    ];
    let x = write(d, "x.json", "[[1, 0], [0, 1]]");
    for (n, (text, want)) in cases.iter().enumerate() {
        let m = write(d, &format!("m{n}.mtx"), text);
        let (code, _, err) =
            heddle(&["run", s(&k), "--matrix", &format!("A={}", s(&m)), "--input", &format!("xs={}", s(&x))]);
        assert_eq!(code, 1, "{text}: {err}");
        assert!(err.contains(want), "expected `{want}` in\n{err}");
    }
    // A complex file for a real tensor is refused, naming the value.
    let m = write(d, "c.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1 2\n");
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
    let tmp = dir("stored");
    let d = tmp.path();
    if python(d, SETUP).is_none() {
        return;
    }
    // 2 conj(H), stored as CSR by every backend: written as .npz and .mtx, read back by scipy.
    let k = write(
        d,
        "k.hdl",
        "fun(A: tensor<?x?xcomplex<f64>, #CSR> =>\n  (A :>> map(fun(row => row :>> map(fun(e => (e.1, conj(e.2) * 2.0))))) : tensor<?x{A_dim1}xcomplex<f64>, #CSR>))\n",
    );
    let a = format!("A={}", s(&d.join("H.mtx")));
    let mut files = Vec::new();
    for backend in std::iter::once("interp").chain(compiled()) {
        for ext in ["npz", "mtx"] {
            let out = format!("C_{backend}.{ext}");
            ok(&["run", s(&k), "--backend", backend, "--matrix", &a, "-o", s(&d.join(&out))]);
            files.push(format!("'{out}'"));
        }
    }
    let check = python(
        d,
        &format!(
            "
import numpy as np, scipy.sparse as sp, scipy.io as sio
want = 2 * sio.mmread('H.mtx').toarray().conj()
for name in [{}]:
    got = sp.load_npz(name).toarray() if name.endswith('npz') else sio.mmread(name).toarray()
    assert got.dtype == np.complex128 and np.array_equal(got, want), (name, got, want)
print('ok')
",
            files.join(", ")
        ),
    );
    assert_eq!(check.as_deref().map(str::trim), Some("ok"));
}

//! Iso-valued tensors (issue 14): an encoding with `explicitVal` whose every
//! value slot is an entry (CSR, CSC, DCSR, COO, CSF) keeps no values buffer in
//! its kernels; they read the constant. Checked here: the results of every
//! backend over iso CSR (three widths; f32 and f64; the values 1.0, 2.5 and
//! -0.0; rows without entries) against a dense sum computed here, and over
//! COO and CSC; a sparse result stored into an iso encoding; that the kernel takes no values
//! buffer (`heddle type`, the loop program, the OpenCL kernel), that padded
//! storage (BSR) keeps its buffer, that a stored value that differs (one
//! entry, a +0.0 under -0.0) is refused, and that `--encoding A=auto` picks
//! the iso form for a matrix of one value and not for one with a NaN or a
//! differing value.

use crate::common;

use common::{Entries, backends, floats, heddle, heddle_json, write_mtx};
use std::path::Path;

/// Entries at pseudo-random places; rows 0, 3 and the last are empty.
fn entries(rows: u64, cols: u64, v: f64) -> Entries {
    let mut rng = common::Rng(0x150_7a1);
    let mut e = Vec::new();
    for i in 0..rows {
        if i == 0 || i == 3 || i == rows - 1 {
            continue;
        }
        let mut js: Vec<u64> = (0..1 + rng.below(6)).map(|_| rng.below(cols)).collect();
        js.sort();
        js.dedup();
        e.extend(js.into_iter().map(|j| (i, j, v)));
    }
    e
}

/// `x[j]`: small integers, so that every sum below is exact in f32 and f64
/// whatever the order the backends add in.
fn x_of(cols: u64) -> Vec<f64> {
    (0..cols).map(|j| 1.0 + (j % 7) as f64).collect()
}

/// The sum of each row's products, in row order from `0.0` as the kernel's `reduce(+, 0.0)`.
fn row_sums(rows: u64, e: &Entries, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; rows as usize];
    for &(i, j, v) in e {
        y[i as usize] += v * x[j as usize];
    }
    y
}

fn csr(widths: &str, explicit: &str) -> String {
    format!(
        "#sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed){widths}, explicitVal = {explicit} }}>"
    )
}

/// An SpMV over encoding `enc` of `elem` values (`f64`: `double`).
fn spmv(dir: &Path, enc: &str, elem: &str) -> std::path::PathBuf {
    let scalar = if elem == "f64" { "double" } else { "float" };
    let src = format!(
        "#E = {enc}\nfun(A: tensor<?x?x{elem}, #E> => fun(xs: [{scalar}]_{{A_dim1}} =>\n  \
         A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0.0)))))\n"
    );
    common::write(dir, &format!("spmv_{elem}.hdl"), &src)
}

#[test]
fn iso_spmv_equals_the_dense_sum_on_every_backend() {
    let dir = common::scratch_dir("iso-spmv");
    let d = dir.path();
    let (rows, cols) = (23, 17);
    let x = x_of(cols);
    let x_path = common::write(d, "x.json", &serde_json::to_string(&x).unwrap());
    for (value, text) in [(1.0, "1.0"), (2.5, "2.5"), (-0.0, "-0.0")] {
        let e = entries(rows, cols, value);
        let m = write_mtx(d, "m", rows, cols, &e);
        let want = row_sums(rows, &e, &x);
        for elem in ["f64", "f32"] {
            // Every width at 1.0 (the multiply folded away); CSR32 for the others.
            let widths: &[&str] = if value == 1.0 {
                &["", ", posWidth = 32, crdWidth = 32", ", posWidth = 32, crdWidth = 16"]
            } else {
                &[", posWidth = 32, crdWidth = 32"]
            };
            for widths in widths {
                let enc = csr(widths, &format!("{text} : {elem}"));
                let k = spmv(d, &enc, elem);
                for backend in backends() {
                    let args = [
                        "run",
                        k.to_str().unwrap(),
                        "--backend",
                        backend,
                        "--matrix",
                        &format!("A={}", m.display()),
                        "--input",
                        &format!("xs={}", x_path.display()),
                    ];
                    let (code, v) = heddle_json(&args);
                    assert_eq!(code, 0, "{enc} {backend}: {v}");
                    let got = floats(&v["result"]);
                    // Bit for bit: the sums are exact, and -0.0 products summed from 0.0 are +0.0.
                    let bits = |y: &[f64]| y.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{enc} {backend}: {got:?} against {want:?}");
                }
            }
        }
    }
}

#[test]
fn a_pattern_file_into_an_iso_encoding_multiplies_by_its_value() {
    let dir = common::scratch_dir("iso-pattern");
    let d = dir.path();
    // Row 1 empty; a pattern file has no values: each entry is the explicitVal.
    let m = common::write(d, "p.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 4 4\n1 1\n1 4\n3 2\n3 3\n");
    let x = common::write(d, "x.json", "[1, 10, 100, 1000]");
    for (explicit, want) in [("1.0", "[1001.0,0.0,110.0]"), ("0.5", "[500.5,0.0,55.0]")] {
        let k = spmv(d, &csr(", posWidth = 32, crdWidth = 32", &format!("{explicit} : f32")), "f32");
        for backend in backends() {
            let (code, out, err) = heddle(&[
                "run",
                k.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", m.display()),
                "--input",
                &format!("xs={}", x.display()),
            ]);
            assert_eq!(code, 0, "{backend}: {err}");
            assert_eq!(out.trim(), want, "{explicit} {backend}");
        }
    }
}

#[test]
fn the_kernel_of_an_iso_tensor_takes_no_values_buffer() {
    let enc = csr(", posWidth = 32, crdWidth = 32", "1.0 : f64");
    // `heddle type`: no values buffer, the constant said; the view unchanged.
    let (code, v) = heddle_json(&["type", &enc, "--elem", "f64"]);
    assert_eq!(code, 0, "{v}");
    let kinds: Vec<&str> = v["buffers"].as_array().unwrap().iter().map(|b| b["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["positions", "coordinates"], "{v}");
    assert_eq!(v["iso_value"], "1.0", "{v}");
    common::assert_schema(&v, "type of an iso encoding");
    let (code, text, err) = heddle(&["type", &enc, "--elem", "f64"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("no values buffer: every stored entry is 1.0"), "{text}");
    assert!(!text.contains("A_values"), "{text}");
    // The same encoding without explicitVal has the buffer.
    let (_, plain) = heddle_json(&[
        "type",
        &csr(", posWidth = 32, crdWidth = 32", "1.0 : f64").replace(", explicitVal = 1.0 : f64", ""),
        "--elem",
        "f64",
    ]);
    assert_eq!(plain["buffers"].as_array().unwrap().len(), 3, "{plain}");
    assert!(plain.get("iso_value").is_none(), "{plain}");
    // BSR stores padding in its blocks (which must read 0): it keeps its values.
    let bsr = "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense), explicitVal = 1.0 : f64 }>";
    let (_, b) = heddle_json(&["type", bsr, "--elem", "f64"]);
    assert!(b["buffers"].as_array().unwrap().iter().any(|b| b["kind"] == "values"), "{b}");
    assert!(b.get("iso_value").is_none(), "{b}");

    // The loop program and the OpenCL kernel take positions, coordinates and x, no values.
    let dir = common::scratch_dir("iso-kernel");
    let k = spmv(dir.path(), &enc, "f64");
    let (code, loops, err) = heddle(&["compile", k.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let signature = loops.lines().find(|l| l.starts_with("kernel ")).unwrap();
    assert!(signature.contains("A_crd1") && !signature.contains("values"), "{signature}");
    // `1.0 * x` is `x`: no multiply left.
    assert!(!loops.contains("1.0 *"), "{loops}");
    let (code, cl, err) = heddle(&["compile", k.to_str().unwrap(), "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    assert!(cl.contains("A_crd1") && !cl.contains("A_values"), "{cl}");
    // With 2.5 the multiply stays.
    let k = spmv(dir.path(), &csr("", "2.5 : f64"), "f64");
    let (_, loops, _) = heddle(&["compile", k.to_str().unwrap()]);
    assert!(loops.contains("2.5 *") && !loops.contains("A_values"), "{loops}");
}

#[test]
fn a_stored_value_that_differs_from_the_explicit_value_is_refused() {
    let dir = common::scratch_dir("iso-differs");
    let d = dir.path();
    let x = common::write(d, "x.json", "[1, 2, 3]");
    let cases = [
        // One entry of five differs.
        ("1.0", "1 1 1.0\n1 3 1.0\n2 2 1.5\n3 1 1.0\n3 3 1.0\n", "1.5 differs from the encoding's explicitVal 1.0"),
        // +0.0 is not -0.0 (every value slot is an entry: no padding to be 0).
        ("-0.0", "1 1 -0.0\n1 3 -0.0\n2 2 0.0\n3 1 -0.0\n3 3 -0.0\n", "differs from the encoding's explicitVal -0.0"),
    ];
    for (explicit, lines, message) in cases {
        let m = common::write(d, "m.mtx", &format!("%%MatrixMarket matrix coordinate real general\n3 3 5\n{lines}"));
        let k = spmv(d, &csr("", &format!("{explicit} : f64")), "f64");
        for backend in backends() {
            let (code, _, err) = heddle(&[
                "run",
                k.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", m.display()),
                "--input",
                &format!("xs={}", x.display()),
            ]);
            assert_eq!(code, 1, "{explicit} {backend}: {err}");
            assert!(err.contains(message) && err.contains("values[2]"), "{explicit} {backend}: {err}");
        }
    }
}

/// `--encoding matrix=auto` over `examples/dense_mv.hdl` (f32).
fn auto_run(m: &Path, x: &Path, backend: &str) -> serde_json::Value {
    let (code, v) = heddle_json(&[
        "run",
        "examples/dense_mv.hdl",
        "--backend",
        backend,
        "--matrix",
        &format!("matrix={}", m.display()),
        "--encoding",
        "matrix=auto",
        "--input",
        &format!("xs={}", x.display()),
    ]);
    assert_eq!(code, 0, "{backend}: {v}");
    v
}

#[test]
fn auto_picks_the_iso_form_for_a_matrix_of_one_value_and_runs_it() {
    let dir = common::scratch_dir("iso-auto");
    let d = dir.path();
    let (rows, cols) = (40, 30);
    let x = x_of(cols);
    let x_path = common::write(d, "x.json", &serde_json::to_string(&x).unwrap());
    let e = entries(rows, cols, 2.5);
    let m = write_mtx(d, "iso", rows, cols, &e);
    let want = row_sums(rows, &e, &x);
    for backend in backends() {
        let v = auto_run(&m, &x_path, backend);
        assert_eq!(floats(&v["result"]), want, "{backend}");
        let auto = &v["auto"]["matrix"];
        assert_eq!(auto["encoding"], "CSR32", "{auto}");
        assert!(auto["encoding_text"].as_str().unwrap().contains("explicitVal = 2.5 : f32"), "{auto}");
        assert!(auto["reason"].as_str().unwrap().contains("no values stored"), "{auto}");
        assert_eq!(auto["inspection"]["iso_value"], "2.5", "{auto}");
    }
    // `convert --stats` says so, in text and JSON.
    let out = d.join("out.json");
    let (code, text, err) =
        heddle(&["convert", m.to_str().unwrap(), "--to", "auto", "--stats", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("values: every entry is 2.5"), "{text}");
    assert!(text.contains("explicitVal = 2.5 : f64"), "{text}");
    let (code, v) =
        heddle_json(&["convert", m.to_str().unwrap(), "--to", "auto", "--stats", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    common::assert_schema(&v, "convert --stats of an iso matrix");
    assert_eq!(v["inspection"]["structure"]["iso_value"], "2.5", "{v}");

    // One differing value, or a NaN: not iso; CSR32 keeps its values.
    let mut one_off = e.clone();
    one_off[5].2 = 2.0;
    let mut nan = e.clone();
    for t in nan.iter_mut() {
        t.2 = f64::NAN;
    }
    for (name, entries) in [("one_off", one_off), ("nan", nan)] {
        let m = write_mtx(d, name, rows, cols, &entries);
        let v = auto_run(&m, &x_path, "interp");
        let auto = &v["auto"]["matrix"];
        assert!(!auto["encoding_text"].as_str().unwrap().contains("explicitVal"), "{name}: {auto}");
        assert!(auto["inspection"]["iso_value"].is_null(), "{name}: {auto}");
    }
}

#[test]
fn a_result_stored_into_an_iso_encoding_is_checked_on_every_backend() {
    let dir = common::scratch_dir("iso-result");
    let d = dir.path();
    let m =
        common::write(d, "m.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 2 5.0\n3 1 -1.0\n3 4 2.0\n");
    // The kernel computes every stored value (x * 0 + c); the result's encoding says they are 1.
    let kernel = |c: &str| {
        common::write(
            d,
            &format!("res{c}.hdl"),
            &format!(
                "#P = #sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 1.0 : f64 }}>\n\
                 fun(A: tensor<?x?xf64, CSR> =>\n  \
                 (A :>> map(fun(row => row :>> map(fun(e => (e.1, e.2 * 0.0 + {c}))))) : tensor<?x{{A_dim1}}xf64, #P>))\n"
            ),
        )
    };
    for backend in backends() {
        let out = d.join(format!("r_{backend}.json"));
        let k = kernel("1.0");
        let args = ["run", k.to_str().unwrap(), "--backend", backend, "--matrix", &format!("A={}", m.display())];
        let (code, _, err) = heddle(&[&args[..], &["-o", out.to_str().unwrap()]].concat());
        assert_eq!(code, 0, "{backend}: {err}");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(v["coordinates"][1], serde_json::json!([1, 0, 3]), "{backend}: {v}");
        assert_eq!(v["values"], serde_json::json!([1.0, 1.0, 1.0]), "{backend}: {v}");
        // A computed value that is not the explicitVal is an error, located at the annotation.
        let k = kernel("2.0");
        let args = ["run", k.to_str().unwrap(), "--backend", backend, "--matrix", &format!("A={}", m.display())];
        let (code, _, err) = heddle(&[&args[..], &["-o", out.to_str().unwrap()]].concat());
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("2.0 differs from the encoding's explicitVal 1.0"), "{backend}: {err}");
    }
}

#[test]
fn iso_coo_and_csc_read_the_constant_on_every_backend() {
    let dir = common::scratch_dir("iso-coo-csc");
    let d = dir.path();
    let m = common::write(
        d,
        "m.mtx",
        "%%MatrixMarket matrix coordinate real general\n4 5 5\n1 1 2.5\n1 3 2.5\n3 2 2.5\n3 5 2.5\n4 4 2.5\n",
    );
    let x = common::write(d, "x.json", "[1, 2, 3, 4, 5]");
    // COO: the sum of every entry times x at its column; CSC: each column's entries' row sums of x.
    let coo = common::write(
        d,
        "coo.hdl",
        "#P = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton), explicitVal = 2.5 : f64 }>\n\
         fun(A: tensor<?x?xf64, #P> => fun(xs: [double]_{A_dim1} =>\n  \
         A :>> map(fun(r => r.2.2 * xs@r.2.1)) :>> reduce(+, 0.0)))\n",
    );
    let csc = common::write(
        d,
        "csc.hdl",
        "#P = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), explicitVal = 2.5 : f64 }>\n\
         fun(A: tensor<?x?xf64, #P> => A :>> map(fun(col => col :>> map(fun(e => e.2)) :>> reduce(+, 0.0))))\n",
    );
    for backend in backends() {
        let run = |k: &Path, input: bool| {
            let mut args = vec!["run", k.to_str().unwrap(), "--backend", backend, "--matrix"];
            let m = format!("A={}", m.display());
            let x = format!("xs={}", x.display());
            args.push(&m);
            if input {
                args.extend(["--input", &x]);
            }
            let (code, out, err) = heddle(&args);
            assert_eq!(code, 0, "{backend}: {err}");
            out.trim().to_string()
        };
        // 2.5 * (1 + 3 + 2 + 5 + 4).
        assert_eq!(run(&coo, true), "37.5", "{backend}");
        // Columns 0..5 hold 1, 1, 1, 1, 1 entries.
        assert_eq!(run(&csc, false), "[2.5,2.5,2.5,2.5,2.5]", "{backend}");
    }
    let (_, v) = heddle_json(&[
        "type",
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton), explicitVal = 2.5 : f64 }>",
        "--elem",
        "f64",
    ]);
    assert!(v["buffers"].as_array().unwrap().iter().all(|b| b["kind"] != "values"), "{v}");
}

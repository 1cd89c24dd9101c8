//! `f16` and `bf16` (issue 12, element types): stored in 2 bytes, computed in
//! `f32`, every operation and conversion rounded once to nearest even. Each
//! backend's results are compared bit for bit with values computed here by
//! the `half` crate (whose arithmetic is exactly that: compute in `f32`,
//! round), on every `f16` bit pattern or random ones, any NaN as a NaN.

use crate::common;

use common::{Rng, backends, heddle, oclgrind, write};
use half::{bf16, f16};
use std::path::Path;

/// A `.npy` file of `f16`s.
fn write_f16_npy(path: &Path, xs: &[f16]) {
    let mut out = Vec::new();
    heddle_runtime::io::npy::write_header(&mut out, "'<f2'", &[xs.len() as u64]).unwrap();
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
    std::fs::write(path, out).unwrap();
}

/// The data bytes of a `.npy` file, after checking its type string.
fn npy_data(path: &Path, descr: &str) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let start = heddle_runtime::io::npy::check_npy_header(&bytes).unwrap();
    let header = String::from_utf8_lossy(&bytes[..start]).to_string();
    assert!(header.contains(descr), "{}: header {header}", path.display());
    bytes[start..].to_vec()
}

fn read_f16_npy(path: &Path) -> Vec<f16> {
    npy_data(path, "'<f2'").chunks_exact(2).map(|c| f16::from_le_bytes([c[0], c[1]])).collect()
}

/// A bf16 result: written as float32 (numpy has no bfloat16), exactly.
fn read_bf16_npy(path: &Path) -> Vec<bf16> {
    npy_data(path, "'<f4'")
        .chunks_exact(4)
        .map(|c| {
            let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            let h = bf16::from_f32(x);
            assert!(x.is_nan() || h.to_f32() == x, "{x} is not a bf16 value");
            h
        })
        .collect()
}

fn same16(a: u16, b: u16, nan: impl Fn(u16) -> bool) -> bool {
    a == b || (nan(a) && nan(b))
}

/// Runs `src` on every backend with the inputs `args` and `-o out.npy`.
fn run_all(dir: &Path, src: &str, args: &[String]) -> Vec<(&'static str, std::path::PathBuf)> {
    let file = write(dir, "k.hdl", src);
    backends()
        .into_iter()
        .map(|b| {
            let out = dir.join(format!("out_{b}.npy"));
            let mut argv: Vec<String> = vec![
                "run".into(),
                file.display().to_string(),
                "--backend".into(),
                b.into(),
                "-o".into(),
                out.display().to_string(),
            ];
            argv.extend(args.iter().cloned());
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let (code, stdout, stderr) = heddle(&argv);
            assert_eq!(code, 0, "{b}: {stdout}{stderr}");
            (b, out)
        })
        .collect()
}

/// Every `f16` bit pattern, and the same patterns rotated (so each meets a
/// different partner in a binary operation); every 97th in the Oclgrind
/// pass, where the simulator runs each element's work-item slowly.
fn all_f16() -> (Vec<f16>, Vec<f16>) {
    let step = if oclgrind() { 97 } else { 1 };
    let bits = || (0..=u16::MAX).step_by(step);
    let xs: Vec<f16> = bits().map(f16::from_bits).collect();
    let ys: Vec<f16> = bits().map(|b| f16::from_bits(b.wrapping_mul(40503).rotate_left(5))).collect();
    (xs, ys)
}

/// `n`, or a few hundred in the Oclgrind pass.
fn sized(n: usize) -> usize {
    if oclgrind() { n.min(300) } else { n }
}

#[test]
fn f16_arithmetic_rounds_once_per_operation_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let (xs, ys) = all_f16();
    write_f16_npy(&dir.path().join("xs.npy"), &xs);
    write_f16_npy(&dir.path().join("ys.npy"), &ys);
    let args =
        [format!("xs={}", dir.path().join("xs.npy").display()), format!("ys={}", dir.path().join("ys.npy").display())];
    let args: Vec<String> = args.iter().flat_map(|a| ["--input".to_string(), a.clone()]).collect();
    type Op = fn(f16, f16) -> f16;
    let ops: [(&str, Op); 6] = [
        ("p.1 + p.2", |a, b| a + b),
        ("p.1 - p.2", |a, b| a - b),
        ("p.1 * p.2", |a, b| a * b),
        ("p.1 / p.2", |a, b| a / b),
        ("p.1 * p.2 + p.1", |a, b| a * b + a),
        ("-p.1", |a, _| -a),
    ];
    for (expr, op) in ops {
        let src = format!("nFun(n => fun(xs: [f16]_n => fun(ys: [f16]_n => zip(xs, ys) :>> map(fun(p => {expr})))))");
        for (backend, out) in run_all(dir.path(), &src, &args) {
            let got = read_f16_npy(&out);
            assert_eq!(got.len(), xs.len(), "{backend}: {expr}");
            for k in 0..xs.len() {
                let want = op(xs[k], ys[k]);
                assert!(
                    same16(got[k].to_bits(), want.to_bits(), |b| f16::from_bits(b).is_nan()),
                    "{backend}: {expr} with p = ({:?}, {:?}) gave {:?} ({:#06x}), expected {want:?} ({:#06x})",
                    xs[k],
                    ys[k],
                    got[k],
                    got[k].to_bits(),
                    want.to_bits()
                );
            }
        }
    }
}

#[test]
fn bf16_arithmetic_rounds_once_per_operation_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xbf16);
    // Random bit patterns (every class: subnormals, infinities, NaNs) and
    // pairs chosen so that sums and products land on ties.
    let mut xs: Vec<bf16> = (0..sized(4000)).map(|_| bf16::from_bits(rng.next() as u16)).collect();
    let mut ys: Vec<bf16> = (0..sized(4000)).map(|_| bf16::from_bits(rng.next() as u16)).collect();
    for (a, b) in [(1.0f32, 1.0 / 256.0), (1.0, 3.0 / 256.0), (3.0, 1.0 / 128.0), (255.0, 1.0), (1e38, 1e38)] {
        xs.push(bf16::from_f32(a));
        ys.push(bf16::from_f32(b));
    }
    let json = |v: &[bf16]| {
        let items: Vec<String> = v
            .iter()
            .map(|x| {
                let f = x.to_f64();
                if f.is_nan() {
                    "\"nan\"".into()
                } else if f.is_infinite() {
                    (if f > 0.0 { "\"inf\"" } else { "\"-inf\"" }).into()
                } else {
                    format!("{f:?}")
                }
            })
            .collect();
        format!("[{}]", items.join(","))
    };
    let xf = write(dir.path(), "xs.json", &json(&xs));
    let yf = write(dir.path(), "ys.json", &json(&ys));
    let args = vec!["--input".into(), format!("xs={}", xf.display()), "--input".into(), format!("ys={}", yf.display())];
    type Op = fn(bf16, bf16) -> bf16;
    let ops: [(&str, Op); 4] = [
        ("p.1 + p.2", |a, b| a + b),
        ("p.1 * p.2", |a, b| a * b),
        ("p.1 / p.2", |a, b| a / b),
        ("p.1 - p.2 * p.2", |a, b| a - b * b),
    ];
    for (expr, op) in ops {
        let src = format!("nFun(n => fun(xs: [bf16]_n => fun(ys: [bf16]_n => zip(xs, ys) :>> map(fun(p => {expr})))))");
        for (backend, out) in run_all(dir.path(), &src, &args) {
            let got = read_bf16_npy(&out);
            assert_eq!(got.len(), xs.len(), "{backend}: {expr}");
            for k in 0..xs.len() {
                let want = op(xs[k], ys[k]);
                assert!(
                    same16(got[k].to_bits(), want.to_bits(), |b| bf16::from_bits(b).is_nan()),
                    "{backend}: {expr} with p = ({:?}, {:?}) gave {:?}, expected {want:?}",
                    xs[k],
                    ys[k],
                    got[k]
                );
            }
        }
    }
}

#[test]
fn conversions_to_half_floats_round_once_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    // (double, its f16, its bf16), worked out by hand: doubles just above a
    // midpoint between two halves (rounding to f32 first would land on the
    // midpoint and tie to even, down: the `half` crate's `from_f64` does),
    // exact ties, overflow, subnormals. 0.1 and 1e-8 lie far from any
    // midpoint, so rounding through f32 is right for them.
    let p = |e: i32| 2f64.powi(e);
    let cases: [(f64, f64, f64); 11] = [
        (1.0 + p(-11) + p(-40), 1.0 + p(-10), 1.0),
        (1.0 + p(-8) + p(-40), 1.0 + p(-8), 1.0 + p(-7)),
        (-(1.0 + p(-11) + p(-40)), -(1.0 + p(-10)), -1.0),
        (1.0 + p(-11), 1.0, 1.0),
        (65519.99, 65504.0, 65536.0),
        (65520.0, f64::INFINITY, 65536.0),
        (p(-25), 0.0, p(-25)),
        (p(-25) + p(-60), p(-24), p(-25)),
        (f64::MAX, f64::INFINITY, f64::INFINITY),
        (0.1, f16::from_f32(0.1).to_f64(), bf16::from_f32(0.1).to_f64()),
        (1e-8, 0.0, bf16::from_f32(1e-8).to_f64()),
    ];
    let doubles: Vec<f64> = cases.iter().map(|c| c.0).collect();
    let input = write(dir.path(), "ds.json", &serde_json::to_string(&doubles).unwrap());
    let src = "nFun(n => fun(ds: [double]_n => ds :>> map(fun(d => (f16(d), bf16(d), double(f16(d)), double(bf16(d)), int(bf16(d)))))))";
    let file = write(dir.path(), "k.hdl", src);
    let num = |j: &serde_json::Value| match j {
        serde_json::Value::String(s) => heddle_runtime::io::number::parse_float(s.as_bytes()).unwrap(),
        j => j.as_f64().unwrap(),
    };
    for backend in backends() {
        let (code, stdout, stderr) = heddle(&[
            "run",
            file.to_str().unwrap(),
            "--backend",
            backend,
            "--input",
            &format!("ds={}", input.display()),
            "--json",
        ]);
        assert_eq!(code, 0, "{backend}: {stdout}{stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let rows = v["result"].as_array().unwrap_or_else(|| panic!("{backend}: {v}"));
        for ((d, h, b), row) in cases.iter().zip(rows) {
            // The f16 / bf16 columns are printed at their precision: the
            // shortest text that reads back to the value.
            assert_eq!(f16::from_f64(num(&row[0])).to_f64(), *h, "{backend}: f16({d:e}) gave {row}");
            assert_eq!(num(&row[2]), *h, "{backend}: double(f16({d:e})) gave {row}");
            assert_eq!(num(&row[3]), *b, "{backend}: double(bf16({d:e})) gave {row}");
            assert_eq!(row[4].as_i64().unwrap(), *b as i32 as i64, "{backend}: int(bf16({d:e})) gave {row}");
        }
    }
    // Integers beyond 2^53: one rounding too (through f64 it would tie down).
    let ints: [i64; 4] = [(1 << 60) + (1 << 52) + 1, -((1 << 60) + (1 << 52) + 1), 65520, 3];
    let input = write(dir.path(), "is.json", &serde_json::to_string(&ints).unwrap());
    let src = "nFun(n => fun(is: [i64]_n => is :>> map(fun(i => (double(bf16(i)), double(f16(i)))))))";
    let file = write(dir.path(), "k.hdl", src);
    for backend in backends() {
        let (code, stdout, stderr) = heddle(&[
            "run",
            file.to_str().unwrap(),
            "--backend",
            backend,
            "--input",
            &format!("is={}", input.display()),
            "--json",
        ]);
        assert_eq!(code, 0, "{backend}: {stdout}{stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let rows = v["result"].as_array().unwrap_or_else(|| panic!("{backend}: {v}"));
        let expect_bf16 = [2f64.powi(60) + 2f64.powi(53), -(2f64.powi(60) + 2f64.powi(53)), 65536.0, 3.0];
        let expect_f16 = [f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, 3.0];
        for k in 0..ints.len() {
            assert_eq!(num(&rows[k][0]), expect_bf16[k], "{backend}: bf16({}) gave {}", ints[k], rows[k]);
            assert_eq!(num(&rows[k][1]), expect_f16[k], "{backend}: f16({}) gave {}", ints[k], rows[k]);
        }
    }
}

#[test]
fn spmv_over_half_float_tensors_matches_a_sequential_reference() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(7);
    let (rows, cols) = (37usize, 29usize);
    let mut entries = Vec::new();
    for i in 0..rows {
        for j in 0..cols {
            // Some empty rows; values with more bits than a half holds.
            if i % 7 != 3 && rng.below(4) == 0 {
                entries.push((i, j, (rng.value() - 0.5) * 10.0));
            }
        }
    }
    let mut mtx = format!("%%MatrixMarket matrix coordinate real general\n{rows} {cols} {}\n", entries.len());
    for (i, j, v) in &entries {
        mtx.push_str(&format!("{} {} {v:?}\n", i + 1, j + 1));
    }
    let a = write(dir.path(), "a.mtx", &mtx);
    let xs: Vec<f64> = (0..cols).map(|_| (rng.value() - 0.5) * 4.0).collect();
    let x = write(dir.path(), "x.json", &serde_json::to_string(&xs).unwrap());
    for (ty, mlir) in [("f16", "f16"), ("bf16", "bf16")] {
        let src = format!(
            "#CSR = #sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed) }}>
fun(A: tensor<?x?x{mlir}, #CSR> => fun(xs: [{ty}]_A_dim1 =>
  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduceSeq(+, 0)))))"
        );
        // The reference: values and x rounded to the type, each product and
        // each partial sum rounded, rows summed left to right.
        let round = |v: f64| if ty == "f16" { f16::from_f64(v).to_f64() } else { bf16::from_f64(v).to_f64() };
        let mut want = vec![0.0f64; rows];
        for (i, j, v) in &entries {
            want[*i] = round(want[*i] + round(round(*v) * round(xs[*j])));
        }
        let args =
            vec!["--matrix".to_string(), format!("A={}", a.display()), "--input".into(), format!("xs={}", x.display())];
        for (backend, out) in run_all(dir.path(), &src, &args) {
            let got: Vec<f64> = if ty == "f16" {
                read_f16_npy(&out).iter().map(|h| h.to_f64()).collect()
            } else {
                read_bf16_npy(&out).iter().map(|h| h.to_f64()).collect()
            };
            assert_eq!(got, want, "{ty} on {backend}");
        }
    }
}

#[test]
// 3.14159 is a value of the data file, rounded to f16 and bf16, not π.
#[allow(clippy::approx_constant)]
fn half_float_storage_is_two_bytes_and_converts() {
    let dir = tempfile::tempdir().unwrap();
    // `heddle type` shows the values buffer at the element type.
    let (code, stdout, stderr) = heddle(&["type", "CSR", "--elem", "bf16"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("A_values : [i -> [bf16]_"), "{stdout}");
    let a = write(
        dir.path(),
        "a.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 0.1\n1 3 3.14159\n2 2 -70000\n",
    );
    // Stored at f16: the shortest text that reads back to each f16, and
    // an overflow to -inf (f16's largest finite value is 65504).
    let json = dir.path().join("a.json");
    let (code, _, stderr) =
        heddle(&["convert", a.to_str().unwrap(), "--to", "CSR", "--elem", "f16", "-o", json.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(stored["values"], serde_json::json!([0.1, 3.14, "-inf"]), "{stored}");
    // A bf16 tensor saved for scipy: float32 data (numpy has no bfloat16), exact.
    let npz = dir.path().join("a.npz");
    let (code, _, stderr) =
        heddle(&["convert", a.to_str().unwrap(), "--to", "CSR", "--elem", "bf16", "-o", npz.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let t = heddle_runtime::sparse::file::read_as_written(&npz).unwrap();
    let csr = heddle_ir::encoding::parse_encoding(
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>",
        0,
    )
    .unwrap();
    let back = t.into_encoding(&csr).unwrap();
    assert_eq!(back.elem, heddle_ir::ScalarType::F32);
    let values: Vec<f64> = (0..back.values.len()).map(|k| back.values.f64(k)).collect();
    assert_eq!(values, vec![bf16::from_f64(0.1).to_f64(), bf16::from_f64(3.14159).to_f64(), -70144.0]);
    // A bad element type is a usage error naming it.
    let (code, _, stderr) =
        heddle(&["convert", a.to_str().unwrap(), "--to", "CSR", "--elem", "f8", "-o", npz.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("`f8` is not a scalar type"), "{stderr}");
}

#[test]
fn a_scatter_add_into_halves_runs_on_every_backend() {
    // scatterAdd into f16 and bf16 arrays: a 16-bit compare-and-swap loop
    // on the CPU, a 32-bit one on the word holding the slot on OpenCL
    // (which has no 16-bit atomics). Neighbouring slots share words. The
    // 1e-3 rounds to its f16.
    let dir = tempfile::tempdir().unwrap();
    let src = "nFun(n => fun(xs: [(int, f16)]_n => xs :>> scatterAdd(4)))";
    let file = write(dir.path(), "k.hdl", src);
    let input = write(dir.path(), "xs.json", "[[0, 1.5], [2, 0.25], [0, 0.5], [3, 1e-3]]");
    let (code, interp, stderr) =
        heddle(&["run", file.to_str().unwrap(), "--input", &format!("xs={}", input.display())]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(interp.trim(), "[2.0,0.0,0.25,0.001]");
    for backend in backends() {
        let (code, stdout, stderr) = heddle(&[
            "run",
            file.to_str().unwrap(),
            "--backend",
            backend,
            "--input",
            &format!("xs={}", input.display()),
        ]);
        assert_eq!(code, 0, "{backend}: {stderr}");
        assert_eq!(stdout.trim(), interp.trim(), "{backend}");
    }
    // Many adds into few slots, bf16: every partial sum is an integer up to
    // 256, exact in bf16, so any order gives the same result; a lost update
    // would show.
    let n = if oclgrind() { 64 } else { 1280 };
    let pairs: Vec<(usize, f64)> = (0..n).map(|k| (k % 5, 1.0)).collect();
    let mut want = [0.0f64; 5];
    pairs.iter().for_each(|(i, v)| want[*i] += v);
    let input = write(dir.path(), "ps.json", &serde_json::to_string(&pairs).unwrap());
    let file = write(dir.path(), "k2.hdl", "nFun(n => fun(xs: [(int, bf16)]_n => xs :>> scatterAdd(5)))");
    for backend in backends() {
        let (code, stdout, stderr) = heddle(&[
            "run",
            file.to_str().unwrap(),
            "--backend",
            backend,
            "--input",
            &format!("xs={}", input.display()),
            "--json",
        ]);
        assert_eq!(code, 0, "{backend}: {stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let got: Vec<f64> = v["result"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(got, want.to_vec(), "{backend}");
    }
}

#[test]
fn floats_narrow_to_f16_and_bf16_exactly_as_the_half_crate_rounds_them() {
    // f32 → f16 / bf16 (one rounding; `from_f32` is correctly rounded):
    // random bit patterns and every boundary of the conversions (the
    // smallest normal f16, the overflow threshold, subnormal ties, NaNs).
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xf16);
    let mut xs: Vec<f32> = (0..sized(60_000)).map(|_| f32::from_bits(rng.next() as u32)).collect();
    // Values in f16's range, where the rounding bits matter.
    xs.extend((0..sized(60_000)).map(|_| {
        f32::from_bits(0x3300_0000 + (rng.next() as u32 % 0x1500_0000)) * if rng.below(2) == 0 { 1.0 } else { -1.0 }
    }));
    for b in [
        0x387f_ffffu32,
        0x3880_0000,
        0x477f_efff,
        0x477f_f000,
        0x477f_e000,
        0x3300_0000,
        0x3300_0001,
        0x3380_0000,
        0x33c0_0000,
        0x7f80_0001,
        0xffc0_0000,
        0x7f7f_ffff,
        0x0000_0001,
    ] {
        xs.push(f32::from_bits(b));
        xs.push(-f32::from_bits(b));
    }
    let mut bytes = Vec::new();
    heddle_runtime::io::npy::write_header(&mut bytes, "'<f4'", &[xs.len() as u64]).unwrap();
    xs.iter().for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
    std::fs::write(dir.path().join("xs.npy"), bytes).unwrap();
    let args = vec!["--input".to_string(), format!("xs={}", dir.path().join("xs.npy").display())];
    let src = "nFun(n => fun(xs: [float]_n => xs :>> map(fun(x => f16(x)))))";
    for (backend, out) in run_all(dir.path(), src, &args) {
        let got = read_f16_npy(&out);
        for (x, g) in xs.iter().zip(&got) {
            let want = f16::from_f32(*x);
            assert!(
                same16(g.to_bits(), want.to_bits(), |b| f16::from_bits(b).is_nan()),
                "{backend}: f16({x:e} = {:#010x}) gave {g:?}, expected {want:?}",
                x.to_bits()
            );
        }
    }
    let src = "nFun(n => fun(xs: [float]_n => xs :>> map(fun(x => bf16(x)))))";
    for (backend, out) in run_all(dir.path(), src, &args) {
        let got = read_bf16_npy(&out);
        for (x, g) in xs.iter().zip(&got) {
            let want = bf16::from_f32(*x);
            assert!(
                same16(g.to_bits(), want.to_bits(), |b| bf16::from_bits(b).is_nan()),
                "{backend}: bf16({x:e}) gave {g:?}, expected {want:?}"
            );
        }
    }
}

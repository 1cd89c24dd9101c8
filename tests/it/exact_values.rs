//! Values pass through `heddle run` unchanged on every backend (issue 19):
//! identity kernels over dense inputs (`.json`, `.npy`) and over stored
//! tensors (`.mtx`, `.tns`, `.json` storage, in CSR at every coordinate
//! width), their results on stdout and in `-o` files (`.json`, `.npy`),
//! compared bit for bit with what went in (any nan as a nan). The values are
//! random bit patterns and the ones careless readers and writers lose: ±0,
//! subnormals, the extremes, 0.1, -0.9999999999999999, ±inf, nan.

use crate::common;

use common::{Rng, backends, heddle};
use heddle_runtime::io::number::{float, float_to_json};
use heddle_runtime::value::Value;
use std::path::Path;

const SPECIAL: &[f64] = &[
    -0.0,
    0.0,
    0.1,
    -0.9999999999999999,
    0.9620693325996399,
    5e-324,
    -2.225073858507201e-308,
    f64::MAX,
    f64::MIN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
];

const SPECIAL_F32: &[f32] =
    &[-0.0, 0.1, 1e-45, -1.1754942e-38, f32::MAX, f32::MIN, 0.33333334, f32::INFINITY, f32::NAN];

/// The special values and `n` random bit patterns, at `f32` precision when `single`.
fn values(single: bool, rng: &mut Rng, n: usize) -> Vec<f64> {
    let mut v: Vec<f64> = if single { SPECIAL_F32.iter().map(|&x| f64::from(x)).collect() } else { SPECIAL.to_vec() };
    for _ in 0..n {
        let r = rng.next();
        v.push(if single { f64::from(f32::from_bits(r as u32)) } else { f64::from_bits(r) });
    }
    v
}

/// The bits to compare: the value at its width, every nan alike.
fn bits(v: f64, single: bool) -> u64 {
    match () {
        _ if v.is_nan() => u64::MAX,
        _ if single => u64::from((v as f32).to_bits()),
        _ => v.to_bits(),
    }
}

fn assert_exact(got: &[f64], want: &[f64], single: bool, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?}");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(bits(*g, single), bits(*w, single), "{what}: element {k} is {g:e}, sent {w:e}");
    }
}

/// Numbers of a JSON result (nested lists flattened, "inf"/"-inf"/"nan" read back).
fn json_numbers(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Array(items) => items.iter().for_each(|x| json_numbers(x, out)),
        x => out.push(heddle_runtime::io::number::float_from_json(x).unwrap_or_else(|| panic!("not a number: {x}"))),
    }
}

fn read_npy(path: &Path) -> Vec<f64> {
    match heddle_runtime::io::read_input(path).unwrap().into_values() {
        heddle_runtime::io::Loaded::Flat { items, .. } => items.iter().map(|v| v.as_float().unwrap()).collect(),
        other => panic!("{other:?}"),
    }
}

/// The test's own directory, removed when it ends.
fn tempdir(tag: &str) -> tempfile::TempDir {
    crate::common::scratch_dir(&format!("exact-cli-{tag}"))
}

/// Runs `heddle run` and returns the result's numbers: from stdout, or from `out`.
fn run(args: &[&str], out: Option<&Path>) -> Vec<f64> {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let o;
    if let Some(p) = out {
        o = p.to_str().unwrap().to_string();
        all.extend(["-o", &o]);
    }
    let (code, stdout, stderr) = heddle(&all);
    assert_eq!(code, 0, "{all:?}: {stderr}");
    match out {
        Some(p) if p.extension().is_some_and(|e| e == "npy") => read_npy(p),
        Some(p) => {
            let mut v = Vec::new();
            json_numbers(&serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap(), &mut v);
            v
        }
        None => {
            let mut v = Vec::new();
            json_numbers(&serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}")), &mut v);
            v
        }
    }
}

#[test]
fn dense_values_pass_through_every_backend_and_format() {
    let tmp = tempdir("dense");
    let dir = tmp.path();
    let mut rng = Rng(0x5eed_0019);
    for (ty, single) in [("double", false), ("float", true)] {
        let kernel = dir.join(format!("id_{ty}.hdl"));
        std::fs::write(&kernel, format!("nFun(n => fun(xs: [{ty}]_n => xs :>> map(fun(x => x))))\n")).unwrap();
        let want = values(single, &mut rng, 40);
        let elem = if single { heddle_ir::ScalarType::F32 } else { heddle_ir::ScalarType::F64 };
        let json_in = dir.join(format!("in_{ty}.json"));
        let list: Vec<serde_json::Value> = want.iter().map(|&v| float_to_json(v, elem)).collect();
        std::fs::write(&json_in, serde_json::to_string(&list).unwrap()).unwrap();
        let npy_in = dir.join(format!("in_{ty}.npy"));
        let value = Value::array(want.iter().map(|&v| Value::Float(v)).collect());
        let array_ty = heddle_ir::Type::array(heddle_ir::Type::Scalar(elem), heddle_ir::Nat::Lit(want.len() as i64));
        heddle_runtime::io::write::write_npy(&npy_in, &value, &array_ty).unwrap();
        for backend in backends() {
            for input in [&json_in, &npy_in] {
                let arg = format!("xs={}", input.display());
                let args = ["--backend", backend, kernel.to_str().unwrap(), "--input", &arg];
                for out in [None, Some(dir.join("out.json")), Some(dir.join("out.npy"))] {
                    let got = run(&args, out.as_deref());
                    assert_exact(
                        &got,
                        &want,
                        single,
                        &format!("{ty} on {backend} from {} to {out:?}", input.display()),
                    );
                }
            }
        }
    }
}

#[test]
fn stored_values_pass_through_every_backend_format_and_width() {
    let tmp = tempdir("stored");
    let dir = tmp.path();
    let mut rng = Rng(0xc0ffee);
    // A 3 x 200 matrix: rows 0 and 2 full of special and random values, row 1 empty.
    let want = values(false, &mut rng, 2 * 200 - SPECIAL.len());
    let mut mtx = format!("%%MatrixMarket matrix coordinate real general\n3 200 {}\n", want.len());
    let mut tns = format!("2 {}\n3 200\n", want.len());
    for (k, v) in want.iter().enumerate() {
        let (i, j) = (if k < 200 { 1 } else { 3 }, k % 200 + 1);
        let text = float(*v, heddle_ir::ScalarType::F64);
        mtx += &format!("{i} {j} {text}\n");
        tns += &format!("{i} {j} {text}\n");
    }
    let (mtx_in, tns_in) = (dir.join("a.mtx"), dir.join("a.tns"));
    std::fs::write(&mtx_in, mtx).unwrap();
    std::fs::write(&tns_in, tns).unwrap();
    for width in [8, 16, 32, 64] {
        // 400 entries need 16-bit positions; 200 columns fit 8-bit coordinates.
        let enc = format!(
            "#sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed), posWidth = {}, crdWidth = {width} }}>",
            width.max(16)
        );
        let json_in = dir.join(format!("a{width}.json"));
        let (code, _, err) =
            heddle(&["convert", mtx_in.to_str().unwrap(), "--to", &enc, "-o", json_in.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        let kernel = dir.join(format!("values{width}.hdl"));
        std::fs::write(
            &kernel,
            format!("fun(A: tensor<?x?xf64, {enc}> => A :>> map(fun(row => row :>> map(fun(e => e.2)))))\n"),
        )
        .unwrap();
        for backend in backends() {
            for input in [&mtx_in, &tns_in, &json_in] {
                let arg = format!("A={}", input.display());
                let args = ["--backend", backend, kernel.to_str().unwrap(), "--matrix", &arg];
                for out in [None, Some(dir.join("out.json")), Some(dir.join("out.npy"))] {
                    let got = run(&args, out.as_deref());
                    assert_exact(
                        &got,
                        &want,
                        false,
                        &format!("{backend}, width {width}, {} to {out:?}", input.display()),
                    );
                }
            }
        }
    }
}

/// Integers at every width, their extremes included, pass through exactly
/// (a `u64` up to 2^64 − 1 in JSON, an `i64` down to −2^63).
#[test]
fn integers_at_every_width_pass_through() {
    let tmp = tempdir("ints");
    let dir = tmp.path();
    let cases: &[(&str, &str)] = &[
        ("i8", "[-128, 127, 0, -1]"),
        ("u8", "[0, 255, 1]"),
        ("i16", "[-32768, 32767]"),
        ("u16", "[65535, 0]"),
        ("i32", "[-2147483648, 2147483647]"),
        ("u32", "[4294967295, 0]"),
        ("i64", "[-9223372036854775808, 9223372036854775807, 9007199254740993]"),
        ("u64", "[18446744073709551615, 9223372036854775808, 9007199254740993, 0]"),
    ];
    for (ty, list) in cases {
        let kernel = dir.join(format!("id_{ty}.hdl"));
        std::fs::write(&kernel, format!("nFun(n => fun(xs: [{ty}]_n => xs :>> map(fun(x => x))))\n")).unwrap();
        let input = dir.join(format!("{ty}.json"));
        std::fs::write(&input, list).unwrap();
        let want: serde_json::Value = serde_json::from_str(list).unwrap();
        for backend in backends() {
            let arg = format!("xs={}", input.display());
            let (code, out, err) = heddle(&["run", "--backend", backend, kernel.to_str().unwrap(), "--input", &arg]);
            assert_eq!(code, 0, "{ty} on {backend}: {err}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap(), want, "{ty} on {backend}");
        }
    }
    // Out of range is an error naming the parameter, never a wrapped value.
    for (ty, list) in [("u64", "[-1]"), ("i64", "[9223372036854775808]"), ("u8", "[256]")] {
        let kernel = dir.join(format!("id_{ty}.hdl"));
        let input = dir.join("bad.json");
        std::fs::write(&input, list).unwrap();
        let arg = format!("xs={}", input.display());
        let (code, _, err) = heddle(&["run", kernel.to_str().unwrap(), "--input", &arg]);
        assert_eq!(code, 1, "{ty} {list}: {err}");
        assert!(err.contains("parameter `xs`"), "{err}");
    }
}

/// An `f32` tensor's text values are rounded once, straight to `f32`:
/// `7.038531e-26` is the shortest text of the f32 0x15ae43fd, which rounding
/// to `f64` first and then to `f32` turns into its neighbour.
#[test]
fn f32_tensor_values_are_rounded_once() {
    let tmp = tempdir("f32once");
    let dir = tmp.path();
    let want = f32::from_bits(0x15ae_43fd);
    let mtx = dir.join("a.mtx");
    std::fs::write(&mtx, "%%MatrixMarket matrix coordinate real general\n1 2 2\n1 1 7.038531e-26\n1 2 0.1\n").unwrap();
    let tns = dir.join("a.tns");
    std::fs::write(&tns, "2 2\n1 2\n1 1 7.038531e-26\n1 2 0.1\n").unwrap();
    let kernel = dir.join("values.hdl");
    std::fs::write(
        &kernel,
        "fun(A: tensor<?x?xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>> => A :>> map(fun(row => row :>> map(fun(e => e.2)))))\n",
    )
    .unwrap();
    for backend in backends() {
        for input in [&mtx, &tns] {
            let arg = format!("A={}", input.display());
            let (code, out, err) = heddle(&["run", "--backend", backend, kernel.to_str().unwrap(), "--matrix", &arg]);
            assert_eq!(code, 0, "{backend}: {err}");
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            let texts: Vec<String> = v.as_array().unwrap().iter().map(|x| x.to_string()).collect();
            let got: Vec<u32> =
                texts.iter().map(|t| heddle_runtime::io::number::parse_f32(t.as_bytes()).unwrap().to_bits()).collect();
            assert_eq!(got, vec![want.to_bits(), 0.1f32.to_bits()], "{backend}, {}: {out}", input.display());
            assert_eq!(texts[1], "0.1");
        }
    }
}

/// Stored integer tensors keep values far beyond 2^53 (where an `f64` would
/// round them) exactly: through `convert` to `.json` storage, `.npz` and back
/// to `.mtx`, and through `run --matrix` on every backend.
#[test]
fn stored_integers_beyond_2_53_pass_through() {
    let tmp = tempdir("stored-ints");
    let dir = tmp.path();
    let cases: &[(&str, &[&str])] = &[
        ("i64", &["9007199254740993", "-9223372036854775808", "9223372036854775807", "-3"]),
        ("ui64", &["18446744073709551615", "9007199254740993", "9223372036854775808", "1"]),
    ];
    for (ty, values) in cases {
        let mut mtx = format!("%%MatrixMarket matrix coordinate integer general\n2 3 {}\n", values.len());
        for (k, v) in values.iter().enumerate() {
            mtx += &format!("{} {} {v}\n", k / 3 + 1, k % 3 + 1);
        }
        let src = dir.join(format!("{ty}.mtx"));
        std::fs::write(&src, &mtx).unwrap();
        // convert: .mtx → CSR .json → .npz → .mtx, every value as written.
        let (json, npz, back) =
            (dir.join(format!("{ty}.json")), dir.join(format!("{ty}.npz")), dir.join(format!("{ty}_back.mtx")));
        for (from, to) in [(&src, &json), (&json, &npz), (&npz, &back)] {
            let (code, _, err) =
                heddle(&["convert", from.to_str().unwrap(), "--to", "CSR", "-o", to.to_str().unwrap()]);
            assert_eq!(code, 0, "{ty}: {} → {}: {err}", from.display(), to.display());
        }
        let storage = std::fs::read_to_string(&json).unwrap();
        assert!(storage.contains(&format!("\"values\":[{}]", values.join(","))), "{ty}: {storage}");
        assert_eq!(std::fs::read_to_string(&back).unwrap(), mtx, "{ty}: .mtx → .json → .npz → .mtx");
        // run: the stored values, on every backend, from every format.
        let kernel = dir.join(format!("values_{ty}.hdl"));
        std::fs::write(
            &kernel,
            format!("fun(A: tensor<?x?x{ty}, CSR> => A :>> map(fun(row => row :>> map(fun(e => e.2)))))\n"),
        )
        .unwrap();
        for backend in backends() {
            for input in [&src, &json, &npz] {
                let arg = format!("A={}", input.display());
                let (code, out, err) =
                    heddle(&["run", "--backend", backend, kernel.to_str().unwrap(), "--matrix", &arg]);
                assert_eq!(code, 0, "{ty} on {backend} from {}: {err}", input.display());
                assert_eq!(out.trim(), format!("[{}]", values.join(",")), "{ty} on {backend} from {}", input.display());
            }
        }
    }
    // A value the parameter's type cannot hold is an error naming it.
    let kernel = dir.join("values_i64.hdl");
    let arg = format!("A={}", dir.join("ui64.mtx").display());
    let (code, _, err) = heddle(&["run", kernel.to_str().unwrap(), "--matrix", &arg]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("18446744073709551615 does not fit in i64"), "{err}");
}

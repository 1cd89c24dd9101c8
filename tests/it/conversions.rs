//! Numeric conversions (`float(x)`, `int(x)`, `u8(x)`, …) and the `inf` /
//! `nan` literals, on every backend, against values computed here with
//! Rust's `as` (the semantics `prims.sig` states: float to integer toward
//! zero, saturating, NaN giving 0; integers wrap; to bool is `x != 0`).

use crate::common;

use common::{backends, heddle_json, write};
use serde_json::{Value as J, json};

/// Runs `src` with `xs` on every backend; the results.
fn run_all(src: &str, xs: &str) -> Vec<(&'static str, J)> {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "k.hdl", src);
    let input = write(dir.path(), "xs.json", xs);
    backends()
        .into_iter()
        .map(|b| {
            let (code, v) = heddle_json(&[
                "run",
                file.to_str().unwrap(),
                "--input",
                &format!("xs={}", input.display()),
                "--backend",
                b,
            ]);
            assert_eq!(code, 0, "{b}: {v:#}");
            (b, v["result"].clone())
        })
        .collect()
}

/// A float as JSON, the non-finite ones as heddle writes them.
fn float(x: f64) -> J {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

#[test]
fn floats_convert_as_rust_does_on_every_backend() {
    let xs = [3.7, -3.7, 300.5, -1e20, 1e20, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, 65535.9];
    let src = "nFun(n => fun(xs: [double]_n => xs :>> map(fun(x =>
        (int(x), u8(x), i8(x), u16(x), i64(x), u64(x), bool(x), float(x), index(x))))))";
    let input = J::Array(xs.iter().map(|&x| float(x)).collect()).to_string();
    let expected: Vec<J> = xs
        .iter()
        .map(|&x| {
            json!([
                x as i32,
                x as u8,
                x as i8,
                x as u16,
                x as i64,
                x as u64,
                x != 0.0,
                float(x as f32 as f64),
                x as i64
            ])
        })
        .collect();
    for (backend, got) in run_all(src, &input) {
        let got = got.as_array().unwrap_or_else(|| panic!("{backend}: {got}"));
        for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
            // f32 results are written at f32 precision: compare the float column as f32.
            let (mut g, mut e) = (g.clone(), e.clone());
            for v in [&mut g, &mut e] {
                if let Some(f) = v[7].as_f64() {
                    v[7] = json!(f as f32);
                }
            }
            assert_eq!(g, e, "{backend}: element {k} ({})", xs[k]);
        }
    }
}

#[test]
fn integers_and_bools_convert_on_every_backend() {
    let xs: [i64; 6] = [0, 1, -1, 300, 16_777_217, -2_147_483_648];
    let src = "nFun(n => fun(xs: [int]_n => xs :>> map(fun(x =>
        (u8(x), i16(x), float(x), double(x), bool(x), u32(x), int(x > 0), float(x == 1))))))";
    let input = json!(xs).to_string();
    let expected: Vec<J> = xs
        .iter()
        .map(|&x| {
            let i = x as i32;
            json!([i as u8, i as i16, i as f32, i as f64, i != 0, i as u32, (i > 0) as i32, ((i == 1) as i32) as f32])
        })
        .collect();
    // heddle writes an f32 as its shortest text (-2147483600 for -2^31): compare those columns as f32.
    let as_f32 = |mut rows: J| {
        for row in rows.as_array_mut().unwrap() {
            for c in [2, 7] {
                row[c] = json!(row[c].as_f64().unwrap() as f32);
            }
        }
        rows
    };
    for (backend, got) in run_all(src, &input) {
        assert_eq!(as_f32(got), as_f32(J::Array(expected.clone())), "{backend}");
    }
}

#[test]
fn a_row_mean_needs_a_conversion() {
    // The example: the mean of each row of a CSR matrix.
    let src =
        "nFun(n => fun(offset: [int]_{n + 1} => fun(values: [i -> [float]_{toNat(offset@(i + 1) - offset@i)}]_n =>
        generate(n, fun(i => (values@i :>> reduce(+, 0)) / float(max(offset@(i + 1) - offset@i, 1)))))))";
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "mean.hdl", src);
    let offset = write(dir.path(), "offset.json", "[0, 2, 2, 5]");
    let values = write(dir.path(), "values.json", "[1.0, 2.0, 3.0, 4.0, 5.0]");
    for b in backends() {
        let args = [
            "run",
            file.to_str().unwrap(),
            "--input",
            &format!("offset={}", offset.display()),
            "--input",
            &format!("values={}", values.display()),
            "--backend",
            b,
        ];
        let (code, v) = heddle_json(&args);
        assert_eq!(code, 0, "{b}: {v:#}");
        assert_eq!(v["result"], json!([1.5, 0.0, 4.0]), "{b}");
    }
}

#[test]
fn inf_and_nan_are_literals() {
    // The maximum of an empty array is -inf on every backend; nan compares unequal to itself.
    let src = "nFun(n => fun(xs: [float]_n => (xs :>> reduce(max, -inf), xs :>> reduce(min, inf), nan == nan, inf > 3.0e38)))";
    for (backend, got) in run_all(src, "[]") {
        assert_eq!(got, json!(["-inf", "inf", false, true]), "{backend}");
    }
    for (backend, got) in run_all(src, "[2.5, -1.0]") {
        assert_eq!(got, json!([2.5, -1.0, false, true]), "{backend}");
    }
}

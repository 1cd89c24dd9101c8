//! `.npy` shapes both ways (LANGUAGE.md §7): a 2-D `.npy` binds
//! `[[T]_m]_n` with `n` and `m` solved from its shape, a shape that
//! contradicts the type is an error naming the parameter, and a nested dense
//! result is written shaped (`(n, m)`), on every backend.

use crate::common;

use common::{backends, heddle};
use heddle_ir::{Nat, ScalarType, Type};
use heddle_runtime::io::{Loaded, read_input};
use heddle_runtime::value::Value;

/// Writes a rows x cols matrix of f64 (value 10 i + j) as a 2-D `.npy`.
fn matrix_npy(path: &std::path::Path, rows: usize, cols: usize) {
    let v = Value::array(
        (0..rows).map(|i| Value::array((0..cols).map(|j| Value::Float((10 * i + j) as f64)).collect())).collect(),
    );
    let ty = Type::array(Type::array(Type::Scalar(ScalarType::F64), Nat::Lit(cols as i64)), Nat::Lit(rows as i64));
    heddle_runtime::io::write::write_npy(path, &v, &ty).unwrap();
}

fn npy_header(path: &std::path::Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    String::from_utf8(bytes[10..10 + len].to_vec()).unwrap()
}

#[test]
fn a_2d_npy_gives_both_sizes_and_a_2d_result_is_written_2d() {
    let tmp = common::scratch_dir("npy-shapes");
    let d = tmp.path();
    let a = d.join("a.npy");
    matrix_npy(&a, 3, 4);
    assert!(npy_header(&a).contains("'shape': (3, 4)"), "{}", npy_header(&a));
    let kernel = d.join("scale.hdl");
    std::fs::write(
        &kernel,
        "nFun(n => nFun(m => fun(a: [[double]_m]_n => a :>> map(fun(row => row :>> map(fun(x => x * 2.0)))))))\n",
    )
    .unwrap();
    let input = format!("a={}", a.display());
    for backend in backends() {
        let out = d.join(format!("out_{backend}.npy"));
        let (code, _, err) = heddle(&[
            "run",
            kernel.to_str().unwrap(),
            "--backend",
            backend,
            "--input",
            &input,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{backend}: {err}");
        assert!(npy_header(&out).contains("'shape': (3, 4)"), "{backend}: {}", npy_header(&out));
        let Loaded::Flat { items, shape, .. } = read_input(&out).unwrap().into_values() else { panic!("not an npy") };
        assert_eq!(shape, vec![3, 4]);
        let want: Vec<f64> = (0..3).flat_map(|i| (0..4).map(move |j| 2.0 * (10 * i + j) as f64)).collect();
        assert_eq!(items.iter().map(|v| v.as_float().unwrap()).collect::<Vec<_>>(), want, "{backend}");
    }
    // A flat result stays one-dimensional.
    let sums = d.join("sums.hdl");
    std::fs::write(
        &sums,
        "nFun(n => nFun(m => fun(a: [[double]_m]_n => a :>> map(fun(row => row :>> reduce(+, 0.0))))))\n",
    )
    .unwrap();
    let out = d.join("sums.npy");
    let (code, _, err) = heddle(&["run", sums.to_str().unwrap(), "--input", &input, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(npy_header(&out).contains("'shape': (3,)"), "{}", npy_header(&out));
}

#[test]
fn a_shape_that_contradicts_the_type_is_an_error() {
    let tmp = common::scratch_dir("npy-shapes-bad");
    let d = tmp.path();
    let a = d.join("a.npy");
    matrix_npy(&a, 4, 3);
    let kernel = d.join("k.hdl");
    std::fs::write(
        &kernel,
        "nFun(n => nFun(m => fun(a: [[double]_m]_n => a :>> map(fun(row => row :>> reduce(+, 0.0))))))\n",
    )
    .unwrap();
    let input = format!("a={}", a.display());
    // 12 elements fit 3 x 4 as a flat buffer, but the file is 4 x 3.
    let (code, _, err) =
        heddle(&["run", kernel.to_str().unwrap(), "--input", &input, "--param", "n=3", "--param", "m=4"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("parameter `a`") && err.contains("shape is (4, 3)"), "{err}");
    // A flat array type takes a 2-D file as its flat buffer.
    let flat = d.join("flat.hdl");
    std::fs::write(&flat, "nFun(n => fun(a: [double]_n => a :>> reduce(+, 0.0)))\n").unwrap();
    let (code, out, err) = heddle(&["run", flat.to_str().unwrap(), "--input", &input]);
    assert_eq!(code, 0, "{err}");
    let want: f64 = (0..4).flat_map(|i| (0..3).map(move |j| (10 * i + j) as f64)).sum();
    assert_eq!(out.trim().parse::<f64>().unwrap(), want);
}

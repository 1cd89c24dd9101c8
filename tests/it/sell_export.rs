//! `heddle convert M --to 'SELL(C…)' --name NAME -o OUT.npz`: SELL-C-σ's
//! arrays in a numpy archive, named as the kernel `heddle sparsify
//! --encoding NAME=SELL(C…)` takes them, and `heddle run --input P=OUT.npz`
//! reading the archive's array named for each parameter. A host program
//! (or heddle itself) runs the sparsified kernel on them and, with σ > 1,
//! puts its result back in row order with `NAME_slot`.

use crate::common;

use crate::sell_sigma::entries;
use common::{assert_close, backends, dense_product, floats, heddle, heddle_json, write_mtx};
use heddle_runtime::io::read::{Loaded, read_npz_member};
use std::path::Path;

/// The integers of an archive's array (a 0-d one gives one).
fn ints(archive: &Path, name: &str) -> Vec<i64> {
    match read_npz_member(archive, name).unwrap_or_else(|e| panic!("{e}")) {
        Loaded::Packed { data, .. } => (0..data.len()).map(|k| data.num(k).to_value().as_int().unwrap()).collect(),
        _ => panic!("{name}: a plain integer array"),
    }
}

#[test]
fn exported_sell_arrays_run_the_sparsified_kernel_on_every_backend() {
    let (rows, cols) = (45u64, 33u64);
    // Growing lengths with empty rows: sorted longest first, every window's
    // rows move, so a result read without the slots could not pass.
    let lengths: Vec<u64> = (0..23).chain([0, 0]).collect();
    let e = entries(0x5e1f, rows, cols, &lengths);
    let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 13) as f64 * 0.125).collect();
    let want = dense_product(rows, &e, &x);
    let dir = common::scratch_dir("sell-export");
    let m = write_mtx(dir.path(), "m", rows, cols, &e);
    let xs = common::write(dir.path(), "xs.json", &serde_json::to_string(&x).unwrap());
    for (encoding, ty, elem) in [
        ("SELL(8)", "double", "f64"),
        ("SELL(8, sigma = 16)", "double", "f64"),
        ("SELL(8, crdWidth = 16, sigma = 48)", "float", "f32"),
        ("SELL(4, sigma = 8)", "float", "f32"),
    ] {
        let what = format!("{encoding} at {ty}");
        let archive = dir.path().join("m.npz");
        let (code, v) = heddle_json(&[
            "convert",
            m.to_str().unwrap(),
            "--to",
            encoding,
            "--name",
            "matrix",
            "--elem",
            elem,
            "-o",
            archive.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{what}: {v}");
        common::assert_schema(&v, &what);
        assert_eq!(v["dim_sizes"], serde_json::json!([rows, cols]), "{what}");
        let names: Vec<&str> = v["arrays"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
        let sorted = encoding.contains("sigma");
        assert_eq!(names.contains(&"matrix_slot"), sorted, "{what}: {names:?}");
        // The naturals the kernel is sized by.
        assert_eq!(ints(&archive, "matrix_dim0"), [rows as i64], "{what}");
        assert_eq!(ints(&archive, "matrix_dim1"), [cols as i64], "{what}");
        let slices = ints(&archive, "matrix_slices")[0];
        let lanes: u64 = encoding[5..6].parse().unwrap();
        assert_eq!(slices as u64, rows.div_ceil(lanes), "{what}");
        assert_eq!(ints(&archive, "matrix_soff").len() as i64, slices + 1, "{what}");

        // The kernel the arrays are for: dense_mv sparsified with the same SELL.
        let dense = std::fs::read_to_string(common::root().join("examples/dense_mv.hdl"))
            .unwrap()
            .replace("[float]", &format!("[{ty}]"));
        let dense = common::write(dir.path(), "dense.hdl", &dense);
        let (code, text, err) =
            heddle(&["sparsify", dense.to_str().unwrap(), "--encoding", &format!("matrix={encoding}")]);
        assert_eq!(code, 0, "{what}: {err}");
        let kernel = common::write(dir.path(), "k.hdl", &text);
        let slot: Vec<usize> = if sorted {
            ints(&archive, "matrix_slot").into_iter().map(|p| p as usize).collect()
        } else {
            (0..rows as usize).collect()
        };
        let a = archive.to_str().unwrap();
        for backend in std::iter::once("interp").chain(backends()) {
            let (code, v) = heddle_json(&[
                "run",
                kernel.to_str().unwrap(),
                "--backend",
                backend,
                "--input",
                &format!("matrix_soff={a}"),
                "--input",
                &format!("matrix_cols={a}"),
                // The array named explicitly: the same one.
                "--input",
                &format!("matrix_vals={a}:matrix_vals"),
                "--input",
                &format!("xs={}", xs.to_str().unwrap()),
            ]);
            assert_eq!(code, 0, "{what} {backend}: {v}");
            // The kernel's result: the rows in sliced order, whole slices.
            let z = floats(&v["result"]);
            assert_eq!(z.len() as u64, slices as u64 * lanes, "{what} {backend}");
            let y: Vec<f64> = slot.iter().map(|&p| z[p]).collect();
            assert_close(&y, &want, &format!("{what} {backend}"));
        }
    }
}

/// A `.npy` file's bytes: version 1.0, `<f8`, of shape `shape` (`(2, 3)`).
fn npy_bytes(shape: &str, data: &[f64]) -> Vec<u8> {
    let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

#[test]
fn an_npz_input_is_the_array_named_for_its_parameter_stored_or_deflated() {
    use std::io::Write;
    let dir = common::scratch_dir("npz-input");
    let archive = dir.path().join("in.npz");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&archive).unwrap());
    let deflated = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    z.start_file("matrix.npy", deflated).unwrap();
    z.write_all(&npy_bytes("(2, 3)", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])).unwrap();
    z.start_file("xs.npy", stored).unwrap();
    z.write_all(&npy_bytes("(3,)", &[1.0, 1.0, 1.0])).unwrap();
    z.start_file("other.npy", deflated).unwrap();
    z.write_all(&npy_bytes("(3,)", &[1.0, 0.0, -1.0])).unwrap();
    z.finish().unwrap();
    let a = archive.to_str().unwrap();
    let kernel = common::root().join("examples/dense_mv.hdl");
    let kernel = kernel.to_str().unwrap();
    let double = std::fs::read_to_string(kernel).unwrap().replace("[float]", "[double]");
    let double = common::write(dir.path(), "mv.hdl", &double);
    let double = double.to_str().unwrap();
    for backend in std::iter::once("interp").chain(backends()) {
        let run = |xs: &str| {
            heddle_json(&[
                "run",
                double,
                "--backend",
                backend,
                "--input",
                &format!("matrix={a}"),
                "--input",
                &format!("xs={xs}"),
            ])
        };
        let (code, v) = run(a);
        assert_eq!(code, 0, "{backend}: {v}");
        assert_eq!(floats(&v["result"]), [6.0, 15.0], "{backend}");
        let (code, v) = run(&format!("{a}:other"));
        assert_eq!(code, 0, "{backend}: {v}");
        assert_eq!(floats(&v["result"]), [-2.0, -2.0], "{backend}");
    }
    // An array the archive lacks: exit 1, naming the parameter, the file and
    // what it holds.
    let (code, v) = heddle_json(&["run", double, "--input", &format!("matrix={a}"), "--input", &format!("xs={a}:ys")]);
    assert_eq!(code, 1, "{v}");
    let message = v["errors"][0]["message"].as_str().unwrap();
    assert_eq!(v["errors"][0]["parameter"], "xs", "{v}");
    assert!(message.contains("no array `ys`") && message.contains("`matrix`, `other`, `xs`"), "{message}");
    // Not an archive: exit 1 saying so; `FILE.npy:ARRAY` is no input form: exit 2.
    let fake = common::write(dir.path(), "fake.npz", "not a zip");
    let (code, v) =
        heddle_json(&["run", double, "--input", &format!("matrix={}", fake.to_str().unwrap()), "--input", "xs=x.npy"]);
    assert_eq!(code, 1, "{v}");
    assert!(v["errors"][0]["message"].as_str().unwrap().contains("not a valid .npz archive"), "{v}");
    let (code, _, err) = heddle(&["run", double, "--input", "matrix=m.npy:matrix"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn sell_export_refuses_what_it_cannot_write() {
    let dir = common::scratch_dir("sell-export-bad");
    let m = write_mtx(dir.path(), "m", 3, 4, &vec![(0, 1, 300.0), (2, 3, 1.5)]);
    let m = m.to_str().unwrap();
    let out = dir.path().join("s.npz");
    let out = out.to_str().unwrap();
    // Only a .npz archive holds SELL's arrays: a usage error naming it.
    let (code, _, err) = heddle(&["convert", m, "--to", "SELL(8)", "-o", "s.mtx"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".npz archive"), "{err}");
    // An array prefix that is no parameter name: usage.
    let (code, _, err) = heddle(&["convert", m, "--to", "SELL(8)", "--name", "a-b", "-o", out]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a parameter name"), "{err}");
    // A σ that is no multiple of C: usage.
    let (code, _, err) = heddle(&["convert", m, "--to", "SELL(8, sigma = 12)", "-o", out]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sigma = 12"), "{err}");
    // A value the element type cannot hold: exit 1 naming the entry.
    let (code, _, err) = heddle(&["convert", m, "--to", "SELL(8)", "--elem", "i8", "-o", out]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("row 0, column 1"), "{err}");
    // A tensor that is no matrix.
    let t = common::write(dir.path(), "t.tns", "1 1 1 2.0\n2 2 2 3.0\n");
    let (code, _, err) = heddle(&["convert", t.to_str().unwrap(), "--to", "SELL(8)", "-o", out]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("rank 3"), "{err}");
    assert!(!Path::new(out).exists(), "nothing written on failure");
}

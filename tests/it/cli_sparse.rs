//! `heddle type` and `heddle convert`: outputs, `--json`, and exit statuses
//! (1 with a located diagnostic on bad input, 2 on usage errors).

use crate::common;

use common::heddle;

const CSR: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";

#[test]
fn type_prints_buffers_and_view() {
    let (code, out, err) = heddle(&["type", CSR, "--dims", "?x8"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("A_values : [i -> [float]_{toNat(A_pos1@(i + 1) - A_pos1@i)}]_A_dim0"), "{out}");
    assert!(out.contains("view: [i -> [(int, float)]_{toNat(A_pos1@(i + 1) - A_pos1@i)}]_A_dim0"), "{out}");
    let (code, out, _) = heddle(&["type", CSR, "--json", "--name", "M"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["buffers"][0]["name"], "M_pos1");
    assert_eq!(v["nat_vars"], serde_json::json!(["M_dim0", "M_dim1"]));
}

#[test]
fn type_reports_located_errors_and_usage() {
    let (code, _, err) = heddle(&["type", "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : singleton) }>"]);
    assert_eq!(code, 1);
    assert!(err.contains("<encoding>:1:") && err.contains("before singleton level"), "{err}");
    let (code, out, _) = heddle(&["type", "#sparse_tensor.encoding<{ map = (i) -> (i : compresed) }>", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["errors"][0]["column"], 45);
    let (code, _, _) = heddle(&["type", CSR, "--dims", "4xq"]);
    assert_eq!(code, 2);
    let (code, _, err) = heddle(&["type", CSR, "--dims", "4x8x2"]);
    assert_eq!(code, 1, "{err}");
}

#[test]
fn convert_writes_storage_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let o = out.to_str().unwrap();
    let (code, stdout, err) = heddle(&["convert", "tests/data/sparse/m4x8.mtx", "--to", CSR, "-o", o, "--json"]);
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["nse"], 6);
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(stored["positions"], serde_json::json!([null, [0, 2, 2, 5, 6]]));
    assert_eq!(stored["coordinates"], serde_json::json!([null, [0, 5, 1, 2, 7, 6]]));
    // Storage → DCSC through a named definition, then back out as .tns and .mtx.
    let defs = dir.path().join("defs.hdl");
    std::fs::write(
        &defs,
        "#DCSC = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed), crdWidth = 8 }>\n",
    )
    .unwrap();
    let out2 = dir.path().join("m.tns");
    let (code, _, err) =
        heddle(&["convert", o, "--to", "#DCSC", "--defs", defs.to_str().unwrap(), "-o", out2.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let tns = std::fs::read_to_string(&out2).unwrap();
    assert!(tns.contains("2 6\n4 8\n1 1 1"), "{tns}");
}

#[test]
fn convert_rejects_bad_inputs_with_locations() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.mtx");
    std::fs::write(&bad, "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n3 1 1\n").unwrap();
    let o = dir.path().join("o.json");
    let (code, _, err) = heddle(&["convert", bad.to_str().unwrap(), "--to", CSR, "-o", o.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("bad.mtx:4: row index 3 is beyond the size 2"), "{err}");
    let defs = dir.path().join("defs.hdl");
    std::fs::write(
        &defs,
        "// encodings\n#X = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 12 }>\n",
    )
    .unwrap();
    let (code, _, err) = heddle(&[
        "convert",
        "tests/data/sparse/m4x8.mtx",
        "--to",
        "#X",
        "--defs",
        defs.to_str().unwrap(),
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("defs.hdl:2:") && err.contains("position bitwidth: 12"), "{err}");
    let (code, _, _) = heddle(&["convert", "tests/data/sparse/m4x8.mtx", "-o", "x.json"]);
    assert_eq!(code, 2);
}

/// `convert --stats`: the storage's sizes, level by level, for people and
/// in `--json` (snapshots), on a matrix with 6 entries: BSR's blocks and
/// padding, DIA's diagonals, a CSR at narrow widths.
#[test]
fn convert_stats_report_levels_values_blocks_and_diagonals() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("bsr", "BSR(2, 2)"),
        ("dia", "DIA"),
        (
            "csr_narrow",
            "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>",
        ),
    ];
    for (name, enc) in cases {
        let out = dir.path().join(format!("{name}.json"));
        let o = out.to_str().unwrap();
        let (code, text, err) = heddle(&["convert", "tests/data/sparse/m4x8.mtx", "--to", enc, "-o", o, "--stats"]);
        assert_eq!(code, 0, "{err}");
        insta::assert_snapshot!(format!("convert_stats_{name}"), text.replace(o, "OUT"));
        let (code, json, err) =
            heddle(&["convert", "tests/data/sparse/m4x8.mtx", "--to", enc, "-o", o, "--stats", "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let stats = &v["stats"];
        // Every stored value is an entry or padding; the matrix has 6 entries.
        assert_eq!(stats["entries"], 6, "{stats}");
        assert_eq!(stats["entries"].as_u64().unwrap() + stats["padding"].as_u64().unwrap(), v["nse"].as_u64().unwrap());
        insta::assert_snapshot!(format!("convert_stats_{name}_json"), serde_json::to_string_pretty(stats).unwrap());
    }
    // Without --stats there is none.
    let o = dir.path().join("plain.json");
    let (_, json, _) =
        heddle(&["convert", "tests/data/sparse/m4x8.mtx", "--to", "CSR", "-o", o.to_str().unwrap(), "--json"]);
    assert!(serde_json::from_str::<serde_json::Value>(&json).unwrap().get("stats").is_none());
}

/// A stored result the host cannot assemble (here a level of 302 whose
/// coordinates an 8-bit `crdWidth` cannot all hold) is reported at the
/// annotation that stores it, with exit status 1, on the compiled backends.
#[test]
fn a_stored_result_the_host_cannot_assemble_is_located_at_its_annotation() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = dir.path().join("narrow.hdl");
    std::fs::write(
        &kernel,
        "#SV8 = #sparse_tensor.encoding<{ map = (i) -> (i : compressed), crdWidth = 8 }>\n\n\
         fun(a: tensor<?xf32, #SV8> =>\n\
         fun(b: tensor<?xf32, #SV8> =>\n  \
         (union(0, 0, a, b) :>> map(fun(e => (e.1, e.2 + e.3))) : tensor<{a_dim0 * 2}xf32, #SV8>)))\n",
    )
    .unwrap();
    let vector = dir.path().join("a.tns");
    std::fs::write(&vector, "4 1.0\n151 2.0\n").unwrap();
    let (k, a) = (kernel.to_str().unwrap(), format!("a={}", vector.to_str().unwrap()));
    let b = format!("b={}", vector.to_str().unwrap());
    let backends: &[&str] = if common::opencl_platform().is_some() { &["cpu", "opencl"] } else { &["cpu"] };
    for backend in backends {
        let (code, _, err) = heddle(&["run", k, "--backend", backend, "--matrix", &a, "--matrix", &b]);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(
            err.contains("do not fit the encoding's crdWidth (8 bits)") && err.contains("narrow.hdl:5:3"),
            "{backend}: {err}"
        );
    }
}

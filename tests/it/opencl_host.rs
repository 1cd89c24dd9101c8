//! Launching generated kernels from a host program of one's own:
//! `heddle compile --target opencl --json` describes every kernel (snapshots
//! of that description), and docs/examples/spmv_host.c — a C program on
//! nothing but libOpenCL, written from that description — computes what
//! `heddle run` computes (on POCL; on Oclgrind in the Oclgrind pass, where
//! anything Oclgrind reports about it fails the test).

use crate::common;

use common::heddle;
use serde_json::Value;
use std::process::Command;

/// `compile --json`, with the (long, separately snapshotted) texts elided.
fn describe(file: &str, params: &[&str]) -> Value {
    let mut args = vec!["compile", file, "--target", "opencl", "--json"];
    for p in params {
        args.extend(["--param", p]);
    }
    let (code, out, err) = heddle(&args);
    assert_eq!(code, 0, "{err}");
    let mut v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["schema"], "heddle.compile/1");
    common::assert_schema(&v, &format!("heddle {}", args.join(" ")));
    v["text"] = "…".into();
    for k in v["kernels"].as_array_mut().unwrap() {
        assert!(k["source"].as_str().unwrap().contains(&format!("__kernel void {}(", k["name"].as_str().unwrap())));
        k["source"] = "…".into();
    }
    v
}

/// The parallel SpMV: naturals, inputs whose sizes depend on the data, the
/// output, a `__local` buffer sized by the naturals, the NDRange evaluated
/// for the given tunables, and the error codes with their source locations.
#[test]
fn compile_json_describes_the_parallel_spmv() {
    let v = describe("examples/csr_spmv_parallel.hdl", &["n=8", "m=6", "R=2", "W=4"]);
    let args = v["kernels"][0]["args"].as_array().unwrap();
    let local = args.iter().find(|a| a["role"] == "local").unwrap();
    assert_eq!(local["bytes"], 2 * 4 * 4, "W * R floats");
    let dims = &v["kernels"][0]["launch"]["dims"];
    assert_eq!((dims[0]["global_value"].as_i64(), dims[0]["local_value"].as_i64()), (Some(16), Some(4)));
    insta::assert_snapshot!(pretty(&v));
}

/// A result of counted lengths: the counting kernel first, then the fill,
/// whose row offsets are a prefix sum the host computes from the counts.
#[test]
fn compile_json_describes_counting_phases_and_host_buffers() {
    let v = describe("examples/sparse/spgemm_csr.hdl", &[]);
    let kernels = v["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2);
    assert_eq!(kernels[0]["phase"]["kind"], "count");
    let fills = kernels[0]["phase"]["fills"].as_str().unwrap();
    let main = kernels[1]["args"].as_array().unwrap();
    assert!(main.iter().any(|a| a["param"] == fills && a["role"] == "input"), "the fill reads the counts");
    let host = main.iter().find(|a| a["role"] == "host").expect("the row offsets");
    assert!(host["computed"].as_str().unwrap().contains(fills), "{host}");
    insta::assert_snapshot!(pretty(&v));
}

#[test]
fn compile_param_must_name_a_natural() {
    let (code, _, err) =
        heddle(&["compile", "examples/csr_spmv_parallel.hdl", "--target", "opencl", "--json", "--param", "Q=2"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no natural of this name"), "{err}");
}

/// docs/examples/spmv_host.c hard-codes what the description says about the
/// parallel SpMV; this keeps the two in step.
#[test]
fn the_c_host_example_follows_the_description() {
    let v = describe("examples/csr_spmv_parallel.hdl", &["n=8", "m=6", "R=2", "W=4"]);
    let k = &v["kernels"][0];
    assert_eq!(k["name"], "heddle_csr_spmv_parallel");
    assert_eq!(k["build_options"], "-cl-std=CL1.2");
    let roles: Vec<(String, String)> = k["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["name"].as_str().unwrap().to_string(), a["role"].as_str().unwrap().to_string()))
        .collect();
    let expected = [
        ("n", "natural"),
        ("m", "natural"),
        ("R", "natural"),
        ("W", "natural"),
        ("offset", "input"),
        ("col_indices", "input"),
        ("values", "input"),
        ("xs", "input"),
        ("out", "output"),
        ("tmp", "local"),
        ("heddle_error", "error"),
    ];
    assert_eq!(roles, expected.map(|(a, b)| (a.to_string(), b.to_string())).to_vec());
    assert_eq!(k["launch"]["text"], "global = [(n / R) * W, R], local = [W, R]");
    assert_eq!(k["args"][9]["records"], "W * R");
}

/// Builds docs/examples/spmv_host.c with the system C compiler and runs it on
/// the kernel heddle writes; its result equals `heddle run --backend interp`.
#[test]
fn the_c_host_example_computes_what_heddle_run_does() {
    if common::opencl_platform().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kernel = dir.path().join("kernel.cl");
    let (code, _, err) =
        heddle(&["compile", "examples/csr_spmv_parallel.hdl", "--target", "opencl", "-o", kernel.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let exe = dir.path().join("spmv_host");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args([
            "-O1",
            "-o",
            exe.to_str().unwrap(),
            common::root().join("docs/examples/spmv_host.c").to_str().unwrap(),
            "-lOpenCL",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{cc}: {e}"));
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let data = common::root().join("examples/data/spmv8");
    let mut stdin = String::new();
    for f in ["offset", "col_indices", "values", "xs"] {
        let text = std::fs::read_to_string(data.join(format!("{f}.json"))).unwrap();
        stdin.push_str(&text.replace(['[', ']', ','], " "));
        stdin.push('\n');
    }
    let d = "examples/data/spmv8";
    for (r, w) in [("2", "4"), ("8", "1"), ("1", "16")] {
        let (code, want, err) = heddle(&[
            "run",
            "examples/csr_spmv_parallel.hdl",
            "--backend",
            "interp",
            "--param",
            &format!("R={r}"),
            "--param",
            &format!("W={w}"),
            "--input",
            &format!("offset={d}/offset.json"),
            "--input",
            &format!("col_indices={d}/col_indices.json"),
            "--input",
            &format!("values={d}/values.json"),
            "--input",
            &format!("xs={d}/xs.json"),
        ]);
        assert_eq!(code, 0, "{err}");
        let log = dir.path().join(format!("oclgrind-{r}-{w}.log"));
        let mut child = Command::new(&exe)
            .args([kernel.to_str().unwrap(), "8", "6", r, w])
            // On Oclgrind, the host program's reports go to a file of its own.
            .env("OCLGRIND_LOG", &log)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "R={r} W={w}: {}", String::from_utf8_lossy(&out.stderr));
        let got: Vec<f64> = serde_json::from_slice(&out.stdout).unwrap();
        let want: Vec<f64> = serde_json::from_str(&want).unwrap();
        assert_eq!(got, want, "R={r} W={w}");
        let reports = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(reports.trim().is_empty(), "Oclgrind reports about the C host's launch:\n{reports}");
    }
}

/// A JSON value as insta's JSON snapshots print it (serde_json's own
/// serializer: with `arbitrary_precision`, insta's would spell numbers as maps).
fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

/// `--trust-ranges`: the kernels without the checks that valid coordinates
/// make unnecessary, each with the ranges it assumes (SpGEMM: both operands'
/// columns; its counting kernel too); without the flag nothing is assumed.
#[test]
fn trust_ranges_leaves_out_the_coordinate_checks_and_lists_what_it_assumes() {
    let run = |extra: &[&str]| {
        let mut args = vec!["compile", "examples/sparse/spgemm_csr.hdl", "--target", "opencl", "--json"];
        args.extend(extra);
        let (code, out, err) = heddle(&args);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        common::assert_schema(&v, &format!("heddle {}", args.join(" ")));
        v
    };
    let checked = run(&[]);
    let trusted = run(&["--trust-ranges"]);
    let kernels = |v: &Value| v["kernels"].as_array().unwrap().clone();
    assert_eq!(kernels(&trusted).len(), 2);
    for (c, t) in kernels(&checked).iter().zip(kernels(&trusted).iter()) {
        assert!(c.get("assumes").is_none(), "{c}");
        assert_eq!(t["assumes"], serde_json::json!(["A_crd1 < A_dim1", "B_crd1 < B_dim1"]), "{}", t["phase"]);
        // The trusted kernel has fewer checks of the error buffer; the codes are the same.
        let checks = |k: &Value| k["source"].as_str().unwrap().matches("atomic_cmpxchg(heddle_error").count();
        assert!(checks(t) < checks(c), "{}: {} vs {}", t["phase"], checks(t), checks(c));
        assert_eq!(t["errors"], c["errors"]);
    }
    // The text says it before each kernel's source.
    assert_eq!(
        trusted["text"].as_str().unwrap().matches("// assumes: A_crd1 < A_dim1, B_crd1 < B_dim1 (").count(),
        2,
        "{}",
        trusted["text"]
    );
    assert!(!checked["text"].as_str().unwrap().contains("assumes"));
}

//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.hdl` file in a directory of the repository, sorted.
pub fn hdl_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("cannot list {dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hdl"))
        .collect();
    files.sort();
    files
}

/// A new, empty directory for one test's files, removed with everything in
/// it when the guard is dropped (when the test ends, passing or failing).
/// Its name is unique, never the process id: ids come back (pid_max is 32768
/// here, and CI starts thousands of processes), and a directory named after
/// one could hold an earlier process's files.
pub fn scratch_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("heddle-{tag}-")).tempdir().expect("create a temporary directory")
}

/// The file's name without directory or extension.
pub fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// Runs the `heddle` binary; returns (exit code, stdout, stderr). The CPU
/// backend splits every launch across its threads, however small (test
/// inputs are far below the size where that pays), so that multi-threaded
/// execution is what the tests check.
pub fn heddle(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_heddle"))
        .args(args)
        .env("HEDDLE_PARALLEL_THRESHOLD", "0")
        .current_dir(root())
        .output()
        .expect("run heddle");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Is this the Oclgrind pass (`scripts/oclgrind.sh`, `HEDDLE_OCLGRIND=1`)?
/// Then every OpenCL launch runs on Oclgrind and fails on any report; tests
/// run the OpenCL backend only and choose small inputs.
pub fn oclgrind() -> bool {
    std::env::var("HEDDLE_OCLGRIND").is_ok_and(|v| v == "1")
}

/// How many random cases a test runs: `n`, or one in the Oclgrind pass,
/// where the simulator is slow and what it checks is the kernel (each case
/// runs the same kernel on another random input).
pub fn cases(n: u64) -> u64 {
    if oclgrind() { 1 } else { n }
}

/// The OpenCL device, where a platform exists; under `CI=true` (or in the
/// Oclgrind pass) its absence fails the test, elsewhere it is skipped
/// visibly. In the Oclgrind pass it must be Oclgrind's device.
pub fn opencl_platform() -> Option<&'static heddle_runtime::opencl::OpenCl> {
    static CL: std::sync::OnceLock<Result<heddle_runtime::opencl::OpenCl, String>> = std::sync::OnceLock::new();
    match CL.get_or_init(|| heddle_runtime::opencl::OpenCl::new(None).map_err(|d| d.message)) {
        Ok(cl) => {
            let d = cl.device();
            assert!(
                !oclgrind() || d.simulator,
                "HEDDLE_OCLGRIND=1, but the OpenCL device is {} ({}): run scripts/oclgrind.sh",
                d.name,
                d.platform
            );
            Some(cl)
        }
        Err(e) if oclgrind() || std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI must run the OpenCL tests, but: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED (opencl only): the OpenCL backend needs a platform: {e}");
            None
        }
    }
}

/// The backends to run: OpenCL only where a platform exists, never skipped
/// under CI; in the Oclgrind pass OpenCL alone (the others ran in the main pass).
pub fn backends() -> Vec<&'static str> {
    if oclgrind() {
        let _ = opencl_platform();
        return vec!["opencl"];
    }
    if opencl_platform().is_some() { vec!["interp", "cpu", "opencl"] } else { vec!["interp", "cpu"] }
}

/// xorshift64*: deterministic inputs without a dependency.
pub struct Rng(pub u64);
impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number in `0 .. n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A non-zero multiple of 1/4 in [-2, 2]: sums and products stay exact in f32.
    pub fn value(&mut self) -> f64 {
        let k = self.below(16) as i64 - 8;
        (if k >= 0 { k + 1 } else { k }) as f64 / 4.0
    }
}

/// A random m x n matrix's entries by (row, column), about `percent`% of
/// them stored (never as 0), with an empty row and an empty column where
/// there is room.
pub fn random_entries(rng: &mut Rng, m: u64, n: u64, percent: u64) -> std::collections::BTreeMap<(u64, u64), f64> {
    let (er, ec) = (rng.below(m.max(1)), rng.below(n.max(1)));
    let mut e = std::collections::BTreeMap::new();
    for i in 0..m {
        for j in 0..n {
            if (m < 3 || i != er) && (n < 3 || j != ec) && rng.below(100) < percent {
                e.insert((i, j), rng.value());
            }
        }
    }
    e
}

/// Writes `text` to `dir/name`; its path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The numbers of a JSON result, in order (nested lists flattened).
pub fn flatten(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Array(items) => items.iter().for_each(|x| flatten(x, out)),
        serde_json::Value::Number(n) => out.push(n.as_f64().unwrap()),
        other => panic!("unexpected output {other}"),
    }
}

/// Validates a `--json` output against its schema in `docs/schemas/`
/// (named by the output's own `schema` field, `heddle.COMMAND/1`); panics
/// with every violation.
pub fn assert_schema(output: &serde_json::Value, context: &str) {
    let id = output["schema"].as_str().unwrap_or_else(|| panic!("{context}: no `schema` field in {output}"));
    let (name, version) = id.rsplit_once('/').unwrap_or_else(|| panic!("{context}: schema `{id}` has no version"));
    assert_eq!(version, "1", "{context}: {id}");
    let path = root().join("docs/schemas").join(format!("{name}.json"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{context}: no schema {}: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let validator =
        jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{}: not a valid schema: {e}", path.display()));
    let errors: Vec<String> =
        validator.iter_errors(output).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(
        errors.is_empty(),
        "{context}: the output does not match {}:\n  {}\n{output:#}",
        path.display(),
        errors.join("\n  ")
    );
}

/// Runs `heddle ARGS --json`; (exit code, the stdout object).
pub fn heddle_json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--json");
    let (code, out, err) = heddle(&all);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| {
        panic!("heddle {}: stdout is not one JSON object ({e}):\n{out}\nstderr:\n{err}", all.join(" "))
    });
    (code, v)
}

/// Floats equal within a relative 1e-4 (at least 1e-4 absolute), element by
/// element; `what` names the comparison in the failure.
pub fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: got {got:?}, want {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{what}: got {got:?}, want {want:?}");
    }
}

/// Do two JSON results agree: the same structure, integers and booleans
/// equal, floats within a relative 1e-4?
pub fn json_agree(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (a, b) {
        (J::Array(xs), J::Array(ys)) => xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| json_agree(x, y)),
        (J::Object(xs), J::Object(ys)) => {
            xs.len() == ys.len() && xs.iter().all(|(k, x)| ys.get(k).is_some_and(|y| json_agree(x, y)))
        }
        (J::Number(x), J::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
            x == y || (x - y).abs() <= 1e-4 * x.abs().max(y.abs()).max(1.0)
        }
        _ => a == b,
    }
}

/// Runs a Python script (numpy and scipy imported by it) in `dir` and
/// returns its stdout; `None`, saying so, where python3 with numpy and
/// scipy cannot be imported outside CI (in CI that is a failure).
pub fn python(dir: &Path, script: &str) -> Option<String> {
    static HAVE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let have = *HAVE.get_or_init(|| {
        Command::new("python3")
            .args(["-c", "import numpy, scipy.sparse, scipy.io"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !have {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "CI must install numpy and scipy (scripts/test.sh)");
        eprintln!("SKIPPED: python3 with numpy and scipy is not installed");
        return None;
    }
    let out = Command::new("python3").args(["-c", script]).current_dir(dir).output().expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "the Python script failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    Some(stdout)
}

/// A run (`heddle(…)`'s result) that failed on bad input: exit status 1, an
/// error naming the kernel parameter `parameter` and saying `phrase`, no panic.
pub fn assert_input_error(r: (i32, String, String), parameter: &str, phrase: &str) {
    let (code, _, err) = r;
    assert_eq!(code, 1, "expected exit status 1; stderr:\n{err}");
    assert!(err.contains(&format!("`{parameter}`")), "the error should name `{parameter}`:\n{err}");
    assert!(err.contains(phrase), "the error should say {phrase:?}:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// The floats of a one-dimensional array value, in order; panics on any
/// other value (the checks of exact results compare these, or their bits).
pub fn float_array(v: &heddle_runtime::value::Value) -> Vec<f64> {
    use heddle_runtime::value::Value;
    match v {
        Value::Array(items) => items
            .iter()
            .map(|x| match x {
                Value::Float(f) => *f,
                other => panic!("expected a float, got {other}"),
            })
            .collect(),
        other => panic!("expected an array, got {other}"),
    }
}

/// Each float's bits, for comparisons that must be exact.
pub fn float_bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A matrix's entries `(row, column, value)`, for the SpMV tests.
pub type Entries = Vec<(u64, u64, f64)>;

/// Writes `e` as a Matrix Market file `name.mtx` of `rows × cols` into `dir`.
pub fn write_mtx(dir: &Path, name: &str, rows: u64, cols: u64, e: &Entries) -> PathBuf {
    let mut text = format!("%%MatrixMarket matrix coordinate real general\n{rows} {cols} {}\n", e.len());
    for (i, j, v) in e {
        text += &format!("{} {} {v}\n", i + 1, j + 1);
    }
    write(dir, &format!("{name}.mtx"), &text)
}

/// The dense product `A x` of the matrix of entries `e`, in plain Rust: the
/// independent reference of the SpMV tests.
pub fn dense_product(rows: u64, e: &Entries, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; rows as usize];
    for &(i, j, v) in e {
        y[i as usize] += v * x[j as usize];
    }
    y
}

/// Every number of a JSON result, in order.
pub fn floats(v: &serde_json::Value) -> Vec<f64> {
    let mut out = Vec::new();
    flatten(v, &mut out);
    out
}

/// The arguments of `heddle run SRC --backend BACKEND --matrix matrix=M
/// --encoding matrix=ENCODING --input xs=X`: a dense kernel (`dense_mv`'s
/// operands `matrix` and `xs`) run over the matrix file `m` stored in
/// `encoding`. Pass them to [`heddle`] or [`heddle_json`] via [`strs`].
pub fn encoded_run(src: &Path, backend: &str, m: &Path, encoding: &str, x: &Path) -> Vec<String> {
    [
        "run".to_string(),
        src.display().to_string(),
        "--backend".into(),
        backend.into(),
        "--matrix".into(),
        format!("matrix={}", m.display()),
        "--encoding".into(),
        format!("matrix={encoding}"),
        "--input".into(),
        format!("xs={}", x.display()),
    ]
    .into()
}

/// `args` as the `&str`s [`heddle`] and [`heddle_json`] take.
pub fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

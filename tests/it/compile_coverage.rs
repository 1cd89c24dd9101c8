//! The compile-coverage corpus (issue 11): every kernel in
//! `tests/compile_coverage/*.hdl` runs on the reference interpreter, the CPU
//! backend and OpenCL (POCL; never skipped under `CI=true`), and each compiled
//! result must equal the interpreter's, structure and values (floats within a
//! relative 1e-4: a parallel reduction may add in another order).
//!
//! A kernel's inputs are written in its leading comments, one per line:
//!
//! ```text
//! // input xs = [1.0, 2.0, 3.0]        a value parameter, as JSON
//! // matrix A = m6x8.mtx               a tensor parameter, from tests/compile_coverage/data/
//! // param n = 3                       a natural parameter
//! // refused: TEXT                     the compiled backends refuse it with a located
//! //                                   "cannot be compiled yet" error containing TEXT
//! // refused on opencl: TEXT           OpenCL alone refuses it with a located error containing TEXT
//!                                      (the CPU backend runs it)
//! // fails: TEXT                       every backend stops with a run-time error containing TEXT
//! ```
//!
//! An "internal error" from any backend is reported as a bug in heddle,
//! whatever the file expects. Every failure of every file is collected and
//! reported together.

use crate::common;

use heddle::source::SourceFile;
use heddle_ir::Diagnostic;
use heddle_runtime::interp::Env;
use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;
use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a corpus file says about itself.
#[derive(Default)]
struct Spec {
    inputs: Vec<(String, J)>,
    matrices: Vec<(String, PathBuf)>,
    params: Vec<(String, i64)>,
    refused: Option<String>,
    refused_opencl: Option<String>,
    fails: Option<String>,
}

fn spec(path: &Path, src: &str) -> Result<Spec, String> {
    let mut s = Spec::default();
    let data = common::root().join("tests/compile_coverage/data");
    for line in src.lines() {
        let Some(d) = line.trim().strip_prefix("//") else { continue };
        let d = d.trim();
        let value = |rest: &str| -> Result<(String, String), String> {
            let (k, v) =
                rest.split_once('=').ok_or_else(|| format!("{}: `{line}`: expected NAME = VALUE", path.display()))?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        };
        if let Some(rest) = d.strip_prefix("input ") {
            let (k, v) = value(rest)?;
            let j = serde_json::from_str(&v).map_err(|e| format!("{}: input {k}: {e}", path.display()))?;
            s.inputs.push((k, j));
        } else if let Some(rest) = d.strip_prefix("matrix ") {
            let (k, v) = value(rest)?;
            s.matrices.push((k, data.join(v)));
        } else if let Some(rest) = d.strip_prefix("param ") {
            let (k, v) = value(rest)?;
            s.params.push((k, v.parse().map_err(|e| format!("{}: param {v}: {e}", path.display()))?));
        } else if let Some(rest) = d.strip_prefix("refused on opencl:") {
            s.refused_opencl = Some(rest.trim().to_string());
        } else if let Some(rest) = d.strip_prefix("refused:") {
            s.refused = Some(rest.trim().to_string());
        } else if let Some(rest) = d.strip_prefix("fails:") {
            s.fails = Some(rest.trim().to_string());
        }
    }
    Ok(s)
}

fn bind(kernel: &Kernel, s: &Spec) -> Result<Env, String> {
    let mut nats = s.params.clone();
    let mut inputs: Vec<(String, Loaded)> =
        s.inputs.iter().map(|(k, v)| (k.clone(), Loaded::Json(v.clone()))).collect();
    for (name, path) in &s.matrices {
        let (dims, buffers) = heddle_runtime::io::bind::tensor_inputs(kernel, name, path).map_err(|e| e.to_string())?;
        nats.extend(dims);
        inputs.extend(buffers);
    }
    bind_inputs(kernel, &nats, inputs).map_err(|e| e.to_string())
}

/// How one backend ended.
enum Outcome {
    Ran(Value),
    /// Lowering or code generation refused the kernel.
    Refused(Diagnostic),
    /// The kernel stopped with a run-time error.
    Failed(Diagnostic),
}

fn run_cpu(kernel: &Kernel, env: &Env) -> Outcome {
    match heddle::cpu::lower(kernel, "coverage") {
        Err(d) => Outcome::Refused(d),
        Ok(p) => match heddle::cpu::run(kernel, &p, env, 2) {
            Ok(v) => Outcome::Ran(v),
            Err(d) => Outcome::Failed(d),
        },
    }
}

fn run_opencl(cl: &heddle_runtime::opencl::OpenCl, kernel: &Kernel, env: &Env) -> Outcome {
    match heddle::opencl::compile(kernel, "coverage") {
        Err(d) => Outcome::Refused(d),
        Ok(c) => match heddle::opencl::run(cl, kernel, &c, env, 1) {
            Ok((v, _)) => Outcome::Ran(v),
            Err(d) => Outcome::Failed(d),
        },
    }
}

/// Checks one corpus file; the problems found (empty when it passes).
fn check_file(path: &Path) -> Vec<String> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let src = std::fs::read_to_string(path).unwrap();
    let file = SourceFile::new(&name, &src);
    let s = match spec(path, &src) {
        Ok(s) => s,
        Err(e) => return vec![e],
    };
    let kernel = match heddle::check_source(&file) {
        Ok((_, k)) => k,
        Err(d) => return vec![format!("{name}: does not type-check:\n{}", file.render(&d))],
    };
    let env = match bind(&kernel, &s) {
        Ok(env) => env,
        Err(e) => return vec![format!("{name}: bad inputs: {e}")],
    };
    let ty = &kernel.body.ty;
    let mut problems = Vec::new();
    let reference = match (heddle_runtime::interp::run_kernel(&kernel, &env), &s.fails) {
        (Ok(v), None) => Some(heddle_runtime::io::write::to_json(&v, ty)),
        (Err(d), Some(want)) if d.message.contains(want.as_str()) => None,
        (Ok(v), Some(want)) => {
            return vec![format!("{name}: the interpreter ran (result {v}), expected the error `{want}`")];
        }
        (Err(d), _) => return vec![format!("{name}: the interpreter fails:\n{}", file.render(&[d]))],
    };
    let (kernel, env) = (&kernel, &env);
    type Backend<'a> = (&'a str, Box<dyn Fn() -> Outcome + 'a>);
    let mut backends: Vec<Backend> = vec![("cpu", Box::new(|| run_cpu(kernel, env)))];
    if let Some(cl) = common::opencl_platform() {
        backends.push(("opencl", Box::new(move || run_opencl(cl, kernel, env))));
    }
    for (backend, run) in backends {
        let at = format!("{name} on {backend}");
        let outcome = run();
        if let Outcome::Refused(d) | Outcome::Failed(d) = &outcome
            && d.message.contains("internal error")
        {
            problems.push(format!("BUG: {at} reaches an internal error:\n{}", file.render(std::slice::from_ref(d))));
            continue;
        }
        let opencl_only = if backend == "opencl" { s.refused_opencl.as_ref() } else { None };
        let refused = s.refused.as_ref().or(opencl_only);
        match (outcome, refused, &reference) {
            (Outcome::Refused(d), Some(want), _) => {
                let located = d.span.end > d.span.start;
                let worded = d.message.contains("cannot be compiled yet") || opencl_only.is_some();
                if !worded || !d.message.contains(want.as_str()) || !located {
                    problems
                        .push(format!("{at}: expected a located refusal naming `{want}`, got:\n{}", file.render(&[d])));
                }
            }
            (Outcome::Ran(_), Some(want), _) => problems
                .push(format!("{at}: runs, but the file expects the refusal `{want}` (remove the `refused:` line)")),
            (Outcome::Refused(d), None, _) => problems.push(format!("{at}: refused:\n{}", file.render(&[d]))),
            (Outcome::Failed(d), _, None) => {
                if !d.message.contains(s.fails.as_deref().unwrap_or_default()) {
                    problems.push(format!(
                        "{at}: fails with another error than `{}`:\n{}",
                        s.fails.as_deref().unwrap_or_default(),
                        file.render(&[d])
                    ));
                }
            }
            (Outcome::Ran(v), None, None) => problems.push(format!(
                "{at}: ran (result {v}), expected the error `{}`",
                s.fails.as_deref().unwrap_or_default()
            )),
            (Outcome::Failed(d), _, Some(_)) => problems.push(format!("{at}: fails:\n{}", file.render(&[d]))),
            (Outcome::Ran(v), None, Some(want)) => {
                let got = heddle_runtime::io::write::to_json(&v, ty);
                if !common::json_agree(&got, want) {
                    problems.push(format!("{at}: got {got}, the interpreter gives {want}"));
                }
            }
        }
    }
    problems
}

#[test]
fn every_kernel_runs_on_every_backend() {
    let files = common::hdl_files("tests/compile_coverage");
    assert!(files.len() >= 100, "the corpus has {} kernels; it should cover every pattern of prims.sig", files.len());
    // Files are independent: check them on every core (POCL compiles dominate).
    let next = AtomicUsize::new(0);
    let problems = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(files.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while let Some(path) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let found = check_file(path);
                    problems.lock().unwrap().extend(found);
                }
            });
        }
    });
    let problems = problems.into_inner().unwrap();
    assert!(
        problems.is_empty(),
        "{} problem(s) in the compile-coverage corpus:\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// Primitives the corpus cannot cover yet, with the reason. The test fails
/// once one is covered, so the entry is removed when it stops being true.
const NOT_YET_COVERED: [(&str, &str); 0] = [];

/// The corpus uses every primitive of `prims.sig` in a kernel (comments aside).
#[test]
fn corpus_covers_every_primitive() {
    let mut code = String::new();
    for f in common::hdl_files("tests/compile_coverage") {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            code.push_str(line.split("//").next().unwrap_or(""));
            code.push('\n');
        }
    }
    let used = |p: &str| code.split(|c: char| !c.is_alphanumeric()).any(|w| w == p);
    let missing: Vec<&str> = heddle_ir::prims::signatures()
        .iter()
        .map(|p| p.name)
        .filter(|p| !used(p) && !NOT_YET_COVERED.iter().any(|(n, _)| n == p))
        .collect();
    assert!(missing.is_empty(), "no corpus kernel uses {missing:?}");
    for (p, why) in NOT_YET_COVERED {
        assert!(!used(p), "the corpus now uses `{p}`: remove it from NOT_YET_COVERED (\"{why}\")");
    }
}

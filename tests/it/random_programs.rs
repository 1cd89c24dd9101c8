//! Random well-typed programs (the generator in `tests/progen/`) with random
//! inputs, run on the interpreter, the CPU backend and OpenCL (POCL):
//! every backend gives the interpreter's result (integers exactly, floats to
//! a relative 1e-4), or refuses to compile with a located diagnostic, or
//! fails at run time exactly when the interpreter does. Never a panic,
//! never an internal error, never a program the type checker refuses.
//!
//! `HEDDLE_PROGEN_CASES` sets how many programs ([`DEFAULT_CASES`] by default),
//! `HEDDLE_PROGEN_SEED` the first seed (fixed under `CI=true`, else drawn
//! from the clock and printed). A failing case is shrunk (its random
//! choices minimised) and printed with its inputs; a shrunk failure, once
//! fixed, becomes a kernel of the compile-coverage corpus
//! (`tests/compile_coverage/`), which runs it on every backend.

use crate::common;
use crate::progen;

use heddle::source::SourceFile;
use heddle_ir::Diagnostic;
use heddle_runtime::interp::Env;
use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;
use progen::{Case, Form, Tape};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;

/// What one backend did with a case.
#[derive(Debug)]
enum Outcome {
    /// A result.
    Value(Value),
    /// It refused to compile the program, with a located diagnostic.
    Refused(String),
    /// It failed while running (a check, a size, a requirement).
    Failed(String),
}

/// Why a case fails the test.
#[derive(Debug, Clone, PartialEq)]
enum Problem {
    Panic(String),
    Rejected(String),
    BadInputs(String),
    Internal(String),
    Unlocated(String),
    /// A refusal not in the words of one: not "… cannot be compiled yet"
    /// (lowering's, naming the construct), nor "OpenCL backend: …" (the OpenCL
    /// generator's, naming what it cannot schedule).
    Unworded(String),
    Mismatch(String),
}

impl Problem {
    /// The kind, for shrinking (a smaller case must fail the same way): the
    /// variant and the start of its message without numbers or names.
    fn kind(&self) -> String {
        let (what, m) = match self {
            Problem::Panic(m) => ("panic", m),
            Problem::Rejected(m) => ("rejected", m),
            Problem::BadInputs(m) => ("inputs", m),
            Problem::Internal(m) => ("internal", m),
            Problem::Unlocated(m) => ("unlocated", m),
            Problem::Unworded(m) => ("unworded", m),
            Problem::Mismatch(m) => ("mismatch", m),
        };
        let first = m.lines().find(|l| l.starts_with("error") || !l.trim().is_empty()).unwrap_or("");
        let words: String = first.chars().filter(|c| !c.is_ascii_digit()).take(60).collect();
        format!("{what}: {}", words.split('`').step_by(2).collect::<Vec<_>>().join("_"))
    }
}

fn agree_floats(x: f64, y: f64) -> bool {
    x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-4 * x.abs().max(y.abs()).max(1.0)
}

fn agree(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => agree_floats(*x, *y),
        // Part by part: a parallel complex sum may round in another order.
        (Value::Complex(x), Value::Complex(y)) => agree_floats(x.re, y.re) && agree_floats(x.im, y.im),
        (Value::Array(xs), Value::Array(ys)) | (Value::Tuple(xs), Value::Tuple(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys.iter()).all(|(x, y)| agree(x, y))
        }
        _ => a == b,
    }
}

fn internal(d: &Diagnostic) -> bool {
    d.message.contains("internal error")
}

/// Where a refusal comes from.
#[derive(Clone, Copy, PartialEq)]
enum Stage {
    /// Lowering to loops (both backends).
    Lowering,
    /// The OpenCL generator.
    OpenCl,
}

/// A compile-time refusal: located (a non-empty span), no internal error,
/// and in the words of a refusal that names its construct ([`refusal_worded`]).
fn refusal(stage: Stage, d: Diagnostic) -> Result<Outcome, Problem> {
    let at = match stage {
        Stage::Lowering => "lowering",
        Stage::OpenCl => "OpenCL code generation",
    };
    if internal(&d) {
        return Err(Problem::Internal(format!("{at}: {}", d.message)));
    }
    // An empty span (`Span::DUMMY` among them) points at nothing.
    if d.span.end <= d.span.start {
        return Err(Problem::Unlocated(format!("{at}: {}", d.message)));
    }
    if !refusal_worded(stage, &d.message) {
        return Err(Problem::Unworded(format!("{at}: {}", d.message)));
    }
    Ok(Outcome::Refused(d.message))
}

/// Whether `message` is worded as a refusal: lowering's "WHAT cannot be
/// compiled yet" (`heddle_rewrite::lower::unsupported`, WHAT the construct),
/// or the OpenCL generator's "OpenCL backend: …" (what it cannot schedule,
/// where: ARCHITECTURE.md's list of OpenCL refusals), with something named
/// before the verdict. Anything else is an error of another kind that
/// escaped as a refusal.
fn refusal_worded(stage: Stage, message: &str) -> bool {
    let what = message.strip_suffix(" cannot be compiled yet").or_else(|| match stage {
        Stage::OpenCl => message.strip_prefix("OpenCL backend: "),
        Stage::Lowering => None,
    });
    what.is_some_and(|w| w.split_whitespace().count() >= 2)
}

#[test]
fn refusals_are_worded_by_kind() {
    assert!(refusal_worded(
        Stage::Lowering,
        "`sortBy` of an array whose elements' types depend on their positions cannot be compiled yet"
    ));
    assert!(refusal_worded(
        Stage::OpenCl,
        "OpenCL backend: dimension 0 is used by mapGlobal and by mapWorkgroup/mapLocal"
    ));
    assert!(!refusal_worded(Stage::Lowering, "OpenCL backend: dimension 0 is used by mapGlobal"));
    assert!(!refusal_worded(Stage::Lowering, "index 3 out of bounds"));
    assert!(!refusal_worded(Stage::OpenCl, " cannot be compiled yet"));
}

fn ran(stage: &str, r: Result<Value, Diagnostic>) -> Result<Outcome, Problem> {
    match r {
        Ok(v) => Ok(Outcome::Value(v)),
        Err(d) if internal(&d) => Err(Problem::Internal(format!("{stage}: {}", d.message))),
        Err(d) => Ok(Outcome::Failed(d.message)),
    }
}

/// The case's inputs bound to `kernel`, each tensor from its file in the
/// case's form (`.npz`, `.json`), or with `as_text` from its text whatever
/// the form.
fn bind(case: &Case, kernel: &Kernel, dir: &std::path::Path, as_text: bool) -> Result<Env, String> {
    let mut nats: Vec<(String, i64)> = case.nats.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut inputs: Vec<(String, Loaded)> =
        case.inputs.iter().map(|(k, v)| (k.clone(), Loaded::Json(v.clone()))).collect();
    for (name, text) in &case.matrices {
        // Matrix Market text, or FROSTT (a 3-D tensor).
        let ext = if text.starts_with("%%MatrixMarket") { "mtx" } else { "tns" };
        let path = dir.join(format!("{name}.{ext}"));
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        let form = case.forms.iter().find(|(n, _)| n == name).map(|(_, f)| f).filter(|_| !as_text);
        let path = match form {
            Some(Form::Npz(bytes)) => {
                let npz = dir.join(format!("{name}.npz"));
                std::fs::write(&npz, bytes).map_err(|e| e.to_string())?;
                npz
            }
            Some(Form::Json) => {
                // heddle's storage of the text's tensor, in the parameter's
                // encoding without its slices: a file is the whole tensor, of
                // which a sliced parameter takes the window.
                let (encoding, elem) =
                    heddle_runtime::io::bind::tensor_param(kernel, name).map_err(|e| e.to_string())?;
                let mut whole = encoding.clone();
                for d in &mut whole.dims {
                    d.slice = None;
                }
                let t = heddle_runtime::sparse::file::read_into_for(&path, &whole, elem)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let json = dir.join(format!("{name}.json"));
                heddle_runtime::sparse::write::write(&t, &json).map_err(|e| format!("writing {name}.json: {e}"))?;
                json
            }
            Some(Form::Text) | None => path,
        };
        let (dims, buffers) =
            heddle_runtime::io::bind::tensor_inputs(kernel, name, &path).map_err(|e| e.to_string())?;
        nats.extend(dims);
        inputs.extend(buffers);
    }
    bind_inputs(kernel, &nats, inputs).map_err(|e| e.to_string())
}

/// Per-backend tallies over a run.
#[derive(Default, Debug)]
struct Tally {
    counts: BTreeMap<String, usize>,
}
impl Tally {
    fn add(&mut self, key: String) {
        *self.counts.entry(key).or_default() += 1;
    }
}

/// Runs one case everywhere; what each backend did, or the problem.
fn check(case: &Case, name: &str, tally: &mut Tally) -> Result<(), Problem> {
    let file = SourceFile::new(format!("{name}.hdl"), case.source.clone());
    let kernel = match heddle::check_source(&file) {
        Ok((_, k)) => k,
        Err(d) => return Err(Problem::Rejected(file.render(&d))),
    };
    let dir = tempfile::tempdir().expect("a scratch directory");
    let env = bind(case, &kernel, dir.path(), false).map_err(Problem::BadInputs)?;
    let want = ran("the interpreter", heddle_runtime::interp::run_kernel(&kernel, &env))?;
    tally.add(format!("interp {}", short(&want)));
    if !case.forms.is_empty() {
        // A tensor bound from `.npz` or `.json` is the tensor its text gives.
        let text = bind(case, &kernel, dir.path(), true).map_err(Problem::BadInputs)?;
        let from_text = ran("the interpreter", heddle_runtime::interp::run_kernel(&kernel, &text))?;
        tally.add(format!("tensor bound from {:?}", case.forms.iter().map(|(_, f)| form_name(f)).collect::<Vec<_>>()));
        match (&want, &from_text) {
            (Outcome::Value(a), Outcome::Value(b)) if agree(a, b) => {}
            (Outcome::Failed(_), Outcome::Failed(_)) => {}
            (a, b) => {
                return Err(Problem::Mismatch(format!(
                    "the interpreter over the tensor read from the other file: {}, over its text: {}",
                    outcome_text(a),
                    outcome_text(b)
                )));
            }
        }
    }

    let mut outcomes: Vec<(&str, Outcome)> = Vec::new();
    match heddle::cpu::lower(&kernel, name) {
        Err(d) => {
            let r = refusal(Stage::Lowering, d)?;
            outcomes.push(("cpu", r));
        }
        Ok(program) => {
            let threads = 1 + (case.source.len() % 3);
            outcomes.push(("cpu", ran("cpu", heddle::cpu::run(&kernel, &program, &env, threads))?));
        }
    }
    if let Some(cl) = common::opencl_platform() {
        match heddle::opencl::compile(&kernel, name) {
            Err(d) => {
                // Lowering's refusals come first, in their words; the OpenCL
                // generator's after.
                let stage = if d.message.starts_with("OpenCL backend: ") { Stage::OpenCl } else { Stage::Lowering };
                outcomes.push(("opencl", refusal(stage, d)?));
            }
            Ok(compiled) => {
                let r = heddle::opencl::run(cl, &kernel, &compiled, &env, 1).map(|(v, _)| v);
                outcomes.push(("opencl", ran("opencl", r)?));
            }
        }
    }
    for (backend, got) in outcomes {
        tally.add(format!("{backend} {}", short(&got)));
        if let Outcome::Refused(why) = &got {
            tally.add(format!("{backend} refused: {}", why.chars().take(70).collect::<String>()));
            if std::env::var_os("HEDDLE_PROGEN_REFUSALS").is_some() {
                eprintln!("{name} on {backend} refused: {why}");
            }
        }
        match (&want, &got) {
            (_, Outcome::Refused(_)) => {}
            (Outcome::Value(a), Outcome::Value(b)) if agree(a, b) => {}
            (Outcome::Failed(_), Outcome::Failed(_)) => {}
            (Outcome::Value(a), Outcome::Value(b)) => {
                return Err(Problem::Mismatch(format!("{backend}: {b} but the interpreter gives {a}")));
            }
            (Outcome::Value(a), Outcome::Failed(m)) => {
                return Err(Problem::Mismatch(format!("{backend}: fails ({m}) but the interpreter gives {a}")));
            }
            (Outcome::Failed(m), Outcome::Value(b)) => {
                return Err(Problem::Mismatch(format!("{backend}: gives {b} but the interpreter fails ({m})")));
            }
            (Outcome::Refused(_), _) => unreachable!("the interpreter does not compile"),
        }
    }
    if let Some(sell) = &case.sell {
        check_sell(case, sell, &kernel, &want, dir.path(), tally)?;
    }
    Ok(())
}

/// A dense SpMV run by `heddle run --encoding A=SELL(…) --matrix A=A.mtx`
/// (in process) on every backend: the interpreter's result over the dense
/// matrix, or, for SELL-C-σ with σ > 1 and a kernel whose result is not its
/// row map, the front door's refusal in its words.
fn check_sell(
    case: &Case,
    sell: &progen::Sell,
    kernel: &Kernel,
    want: &Outcome,
    dir: &std::path::Path,
    tally: &mut Tally,
) -> Result<(), Problem> {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("a file in the scratch directory");
        path.display().to_string()
    };
    let source = write("sell.hdl", &case.source);
    let matrix = write("A.mtx", &sell.mtx);
    let xs = case.inputs.iter().find(|(k, _)| k == "xs").map(|(_, v)| v.to_string()).unwrap_or_default();
    let xs = write("xs.json", &xs);
    let mut backends = vec!["interp", "cpu"];
    if common::opencl_platform().is_some() {
        backends.push("opencl");
    }
    for backend in backends {
        let argv: Vec<String> = [
            "run",
            &source,
            "--backend",
            backend,
            "--encoding",
            &format!("A={}", sell.spec),
            "--matrix",
            &format!("A={matrix}"),
            "--input",
            &format!("xs={xs}"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (code, out) = heddle::cli::invoke(&argv);
        let what = format!("SELL: {backend} with --encoding A={}", sell.spec);
        if code != 0 {
            let message = out.to_string();
            if message.contains("internal error") {
                return Err(Problem::Internal(format!("{what}: {message}")));
            }
            if sell.sorted() && !sell.row_map && code == 1 && message.contains("is not its row map") {
                tally.add(format!("SELL {backend} refused (not the row map)"));
                continue;
            }
            return Err(Problem::Mismatch(format!("{what}: exit {code}: {message}")));
        }
        let Outcome::Value(v) = want else {
            return Err(Problem::Mismatch(format!("{what}: runs, but the interpreter fails on the dense matrix")));
        };
        let want_json = heddle_runtime::io::write::to_json(v, &kernel.body.ty);
        if !common::json_agree(&out["result"], &want_json) {
            return Err(Problem::Mismatch(format!("{what}: {} but the dense kernel gives {want_json}", out["result"])));
        }
        tally.add(format!("SELL {backend} ran"));
    }
    Ok(())
}

fn form_name(f: &Form) -> &'static str {
    match f {
        Form::Text => "text",
        Form::Npz(_) => ".npz",
        Form::Json => ".json",
    }
}

fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Value(v) => v.to_string(),
        Outcome::Refused(m) | Outcome::Failed(m) => m.clone(),
    }
}

fn short(o: &Outcome) -> &'static str {
    match o {
        Outcome::Value(_) => "ran",
        Outcome::Refused(_) => "refused to compile",
        Outcome::Failed(_) => "failed at run time",
    }
}

/// `check` with panics caught and turned into problems.
fn check_caught(case: &Case, name: &str, tally: &mut Tally) -> Result<(), Problem> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| check(case, name, tally))) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(Problem::Panic(msg))
        }
    }
}

fn env_u64(key: &str) -> Option<u64> {
    std::env::var(key).ok().and_then(|v| v.trim().parse().ok())
}

/// Patterns every run must exercise somewhere (as program text).
const PATTERNS: &[&str] = &[
    "map(",
    "mapSeq(",
    "mapPar(",
    "mapGlobal(",
    "reduce(",
    "reduceSeq(",
    "zip(",
    "split(",
    "join",
    "transpose",
    "slide(",
    "pad(",
    "gather(",
    "scatter(",
    "generate(",
    "iterate(",
    "toLocal(",
    "toPrivate(",
    "toGlobal(",
    "interleave(",
    "scatterAdd(",
    "union(",
    "intersect(",
    "compressAdd(",
    "select(",
    "let ",
    "tensor<",
    "concat(",
    "sortBy(",
    "compressLast(",
    "unzip",
    "asVector(",
    "asScalar",
    "mapWorkgroup(",
    "mapLocal(",
    "tensor<?x?x?x",
];

/// Whether a program's text has a construct.
type Has = fn(&str) -> bool;

/// Constructs every run must exercise somewhere, beyond [`PATTERNS`]: a name
/// and how to tell a program has it.
const CONSTRUCTS: &[(&str, Has)] = &[
    ("def", |s| s.starts_with("def ") || s.contains("\ndef ")),
    ("a definition used twice", |s| {
        s.lines()
            .filter_map(|l| l.strip_prefix("def ")?.split(' ').next())
            .any(|d| s.matches(&format!("{d}(")).count() >= 2)
    }),
    ("DIA", |s| s.contains("DIA") || s.contains("j - i :") || s.contains("i - j :")),
    ("ELL", |s| s.contains("[c](")),
    ("BSR(r, c)", |s| s.contains("BSR(")),
    ("rank 4", |s| s.contains("tensor<?x?x?x?x")),
    ("sparse vector", |s| s.contains("A: tensor<?x") && !s.contains("A: tensor<?x?")),
    ("integer tensor", |s| ["xi8,", "xu8,", "xi16,", "xi32,", "xi64,"].iter().any(|t| s.contains(t))),
    ("complex tensor", |s| s.contains("xcomplex<")),
    ("a type annotation", |s| s.contains(")) : [")),
    ("skyline (banded)", |s| s.contains(": banded)")),
    ("n:m structured", |s| s.contains(": structured[") || s.contains(": block")),
    ("dimension slices", |s| s.contains("#sparse_tensor<slice(")),
    ("explicitVal", |s| s.contains("explicitVal =")),
    ("implicitVal", |s| s.contains("implicitVal =")),
    ("static tensor sizes", |s| {
        s.lines().any(|l| l.starts_with("fun(A: tensor<") && l.as_bytes().get(14).is_some_and(u8::is_ascii_digit))
    }),
    ("rank 5", |s| {
        // The parameter's shape, `?x…x` or sizes, then the value type.
        s.lines()
            .filter_map(|l| l.strip_prefix("fun(A: tensor<")?.split(',').next())
            .any(|t| t.matches('x').count() >= 5)
    }),
    ("stored result of rank 3", |s| s.contains("x{A_dim2}x")),
    ("a tensor kernel with definitions", |s| s.contains("def total = ")),
    ("stored skyline or n:m result", |s| {
        s.contains("#E>)") && [": banded)", ": structured[", ": block"].iter().any(|l| s.contains(l))
    }),
    ("SELL", |s| s.contains("fun(A: [[")),
];

/// Tensor files every run must bind from each form (as [`form_name`] names them).
const FORMS: &[&str] = &[".npz", ".json"];

/// How many programs a run checks by default: 500 until the generator
/// learnt vectors, work-group maps and 3-D tensors, whose programs take
/// longer to compile; 450 of them took about what 500 took before. With
/// definitions and the tensors of `tensors.rs` (cheaper to compile than the
/// dense programs they stand beside), 450 took 82 to 88 s where they had
/// taken 100 to 102 (docs/robustness.md, "Progen2 session"): 520 take about
/// that time again. The rest of the sparse dialect (`dialect.rs`: SELL runs
/// on three backends, rank-3 stored results, n:m and rank-5 kernels) made
/// 520 take 16 to 45% longer (docs/robustness.md, "Progen3 session"): 420
/// take about what 520 took before (CI's seeds 16000 .. 16419 use every
/// pattern and construct).
const DEFAULT_CASES: u64 = 420;

#[test]
fn random_programs_agree_on_every_backend() {
    // The passes recurse as deep as a program nests (bounded: ARCHITECTURE.md,
    // "Limits"); the CLI gives them a 256 MB stack (src/main.rs), a test
    // thread has 2 MB, which a deeply nested program overflows in a debug
    // build (seed 2000647). So this test gives them what the CLI does.
    let runner = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(agree_on_every_backend)
        .expect("a thread for the random programs");
    if let Err(panic) = runner.join() {
        std::panic::resume_unwind(panic);
    }
}

fn agree_on_every_backend() {
    // Under Oclgrind (scripts/oclgrind.sh) a sample: the simulator is slow,
    // and what it adds is the check of each generated kernel's memory use.
    let cases = env_u64("HEDDLE_PROGEN_CASES").unwrap_or(if common::oclgrind() { 30 } else { DEFAULT_CASES });
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let first = env_u64("HEDDLE_PROGEN_SEED").unwrap_or_else(|| {
        if ci {
            16_000
        } else {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() % 1_000_000)
                * 1000
        }
    });
    eprintln!(
        "random programs: seeds {first} .. {} (HEDDLE_PROGEN_SEED={first} HEDDLE_PROGEN_CASES={cases} reproduces this run)",
        first + cases
    );
    // HEDDLE_PROGEN_SURVEY=1: go on after a failure, and list every kind
    // of failure found (one shrunk example each) instead of stopping.
    let survey = std::env::var("HEDDLE_PROGEN_SURVEY").is_ok();
    // HEDDLE_PROGEN_TRACE=1: each seed before its case runs (to find one that hangs).
    let trace = std::env::var_os("HEDDLE_PROGEN_TRACE").is_some();
    // HEDDLE_PROGEN_FILTER=A|B: only the cases whose program text holds A
    // or B (to survey one construct over many seeds; the checks of what a
    // run must exercise are then skipped).
    let filter: Option<Vec<String>> =
        std::env::var("HEDDLE_PROGEN_FILTER").ok().map(|f| f.split('|').map(str::to_string).collect());
    let mut found: BTreeMap<String, usize> = BTreeMap::new();
    let mut tally = Tally::default();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let start = std::time::Instant::now();
    for seed in first..first + cases {
        let tape = Tape::seeded(seed);
        let case = progen::case(tape.clone());
        if filter.as_ref().is_some_and(|f| !f.iter().any(|t| case.source.contains(t.as_str()))) {
            continue;
        }
        for p in PATTERNS {
            if case.source.contains(p) {
                *seen.entry(p).or_default() += 1;
            }
        }
        for (c, has) in CONSTRUCTS {
            if has(&case.source) {
                *seen.entry(c).or_default() += 1;
            }
        }
        if let Some(s) = case.extra {
            tally.add(format!("scalar type {s}"));
        }
        for (_, f) in &case.forms {
            *seen.entry(form_name(f)).or_default() += 1;
        }
        let name = format!("case{seed}");
        if trace {
            eprintln!("seed {seed}");
        }
        if let Err(problem) = check_caught(&case, &name, &mut tally) {
            if survey {
                let kind = problem.kind();
                if !found.contains_key(&kind) {
                    let mut replay = Tape::seeded(seed);
                    let _ = progen::case_with(&mut replay);
                    let small = progen::shrink(replay.drawn, &mut |c| {
                        check_caught(c, "shrunk", &mut Tally::default()).is_err_and(|p| p.kind() == kind)
                    });
                    let shrunk = progen::case(Tape::replaying(small));
                    eprintln!("=== seed {seed}: {problem:?}\n{}\n", shrunk.describe());
                }
                *found.entry(kind).or_default() += 1;
                continue;
            }
            // Record the tape of the failing case, then shrink it.
            let mut replay = Tape::seeded(seed);
            let _ = progen::case_with(&mut replay);
            let kind = problem.kind();
            let small = progen::shrink(replay.drawn, &mut |c| {
                check_caught(c, "shrunk", &mut Tally::default()).is_err_and(|p| p.kind() == kind)
            });
            let shrunk = progen::case(Tape::replaying(small));
            let why = check_caught(&shrunk, "shrunk", &mut Tally::default()).err();
            panic!(
                "seed {seed}: {problem:?}\n\nthe program:\n{}\n\nshrunk to ({why:?}):\n{}",
                case.describe(),
                shrunk.describe()
            );
        }
    }
    eprintln!("{cases} programs in {:.1} s", start.elapsed().as_secs_f64());
    for (k, v) in &tally.counts {
        eprintln!("  {k}: {v}");
    }
    eprintln!("  patterns: {seen:?}");
    assert!(found.is_empty(), "failures by kind: {found:#?}");
    if cases >= DEFAULT_CASES && filter.is_none() {
        // A pattern no program of the sample used: a fault of the generator
        // for CI's seeds (the same sample every run); by chance for any other
        // sample (a rare pattern can miss that many draws), so there it is said,
        // not failed. CI=true with a seed of one's own (docs/robustness.md's
        // long runs) is such a sample: seeds 2026113800.. never drew `transpose`.
        let missing: Vec<&&str> = PATTERNS
            .iter()
            .chain(CONSTRUCTS.iter().map(|(c, _)| c))
            .chain(FORMS)
            .filter(|p| !seen.contains_key(**p))
            .collect();
        if ci && std::env::var_os("HEDDLE_PROGEN_SEED").is_none() {
            assert!(missing.is_empty(), "no program used {missing:?}");
        } else if !missing.is_empty() {
            eprintln!("note: no program of this sample used {missing:?} (by chance; CI's seeds use every pattern)");
        }
        let ran = tally.counts.get("cpu ran").copied().unwrap_or(0);
        assert!(ran * 2 >= cases as usize, "most programs must compile and run on the CPU: {:?}", tally.counts);
    }
}

/// The seeds among `HEDDLE_PROGEN_SEED=813642000 HEDDLE_PROGEN_CASES=800`
/// whose OpenCL kernels take temporaries from the work-item's arena
/// (codegen-opencl's `arena.rs`): stored streams, `toGlobal`/`toPrivate`
/// temporaries and `scatter`'s buffers allocated inside a loop or a branch,
/// or of a length the data gives: the kinds of temporaries OpenCL refused
/// before the arena.
/// (Surveyed again when the generator learnt `sortBy`, which changed every
/// seed's program, and again, with [`print_arena_seeds`], when it learnt
/// vectors, work-group maps, `unzip`, `compressLast` and 3-D tensors, which
/// changed most large programs: the first 40 of the 54 seeds it found.)
const ARENA_SEEDS: &[u64] = &[
    813642000, 813642001, 813642014, 813642025, 813642041, 813642044, 813642071, 813642098, 813642125, 813642133,
    813642147, 813642169, 813642178, 813642182, 813642187, 813642201, 813642204, 813642208, 813642209, 813642225,
    813642306, 813642314, 813642329, 813642332, 813642375, 813642383, 813642385, 813642404, 813642426, 813642428,
    813642438, 813642449, 813642467, 813642477, 813642503, 813642505, 813642526, 813642561, 813642579, 813642586,
];

/// Those programs now compile on OpenCL and agree with the interpreter
/// there (`check`), and they still exercise the arena (a change of the
/// generator gives these seeds other programs: then take the seeds of a new
/// survey whose kernels use `heddle_arena`).
#[test]
fn programs_opencl_refused_before_the_arena_run_there() {
    let Some(_) = common::opencl_platform() else { return };
    let runner = std::thread::Builder::new().stack_size(256 << 20).spawn(|| {
        let mut with_arena = 0;
        for &seed in ARENA_SEEDS {
            let case = progen::case(Tape::seeded(seed));
            let name = format!("case{seed}");
            let mut tally = Tally::default();
            if let Err(problem) = check_caught(&case, &name, &mut tally) {
                panic!("seed {seed}: {problem:?}\n{}", case.describe());
            }
            let refused: Vec<&String> = tally.counts.keys().filter(|k| k.starts_with("opencl refused")).collect();
            assert!(refused.is_empty(), "seed {seed}: {refused:?}\n{}", case.describe());
            let file = SourceFile::new(format!("{name}.hdl"), case.source.clone());
            let (_, kernel) = heddle::check_source(&file).expect("checked by `check`");
            let compiled = heddle::opencl::compile(&kernel, &name).expect("compiled by `check`");
            if std::iter::once(&compiled.kernel).chain(&compiled.counts).any(|k| k.source.contains("heddle_arena")) {
                with_arena += 1;
            }
        }
        assert!(
            with_arena * 2 >= ARENA_SEEDS.len(),
            "only {with_arena} of the {} programs use the arena: the generator changed",
            ARENA_SEEDS.len()
        );
    });
    if let Err(panic) = runner.expect("a thread for the programs").join() {
        std::panic::resume_unwind(panic);
    }
}

/// Prints the seeds among `HEDDLE_PROGEN_SEED` .. `+ HEDDLE_PROGEN_CASES`
/// (813642000 and 800 by default) whose OpenCL kernels take temporaries from
/// the arena: [`ARENA_SEEDS`] anew when the generator changes
/// (`cargo test --test it random_programs::print_arena_seeds -- --ignored --nocapture`).
#[test]
#[ignore = "prints seeds; run by hand"]
fn print_arena_seeds() {
    let first = env_u64("HEDDLE_PROGEN_SEED").unwrap_or(813_642_000);
    let cases = env_u64("HEDDLE_PROGEN_CASES").unwrap_or(800);
    let runner = std::thread::Builder::new().stack_size(256 << 20).spawn(move || {
        let mut seeds = Vec::new();
        for seed in first..first + cases {
            let case = progen::case(Tape::seeded(seed));
            let file = SourceFile::new(format!("case{seed}.hdl"), case.source.clone());
            let Ok((_, kernel)) = heddle::check_source(&file) else { continue };
            let Ok(compiled) = heddle::opencl::compile(&kernel, &format!("case{seed}")) else { continue };
            if std::iter::once(&compiled.kernel).chain(&compiled.counts).any(|k| k.source.contains("heddle_arena")) {
                seeds.push(seed);
            }
        }
        eprintln!("{} seeds use the arena: {seeds:?}", seeds.len());
    });
    runner.expect("a thread for the programs").join().expect("the survey");
}

/// Prints the programs of `HEDDLE_PROGEN_SEED` .. `+ HEDDLE_PROGEN_CASES`
/// (10 from 0 by default) with their inputs, running nothing: to see what
/// the generator writes (`cargo test --test it random_programs::print_programs
/// -- --ignored --nocapture`).
#[test]
#[ignore = "prints programs; run by hand"]
fn print_programs() {
    let first = env_u64("HEDDLE_PROGEN_SEED").unwrap_or(0);
    let cases = env_u64("HEDDLE_PROGEN_CASES").unwrap_or(10);
    for seed in first..first + cases {
        let case = progen::case(Tape::seeded(seed));
        eprintln!("=== seed {seed} (scalar type {:?})\n{}", case.extra, case.describe());
    }
}

//! `heddle rewrite FILE --search N --backend cpu|opencl --csr-packed … / --input …`:
//! measured search. One e-graph run over the kernel, N distinct good
//! candidates extracted (the cheapest terms of each sketch in turn,
//! [`heddle_rewrite::program::candidates`]), each compiled for the backend,
//! run on the given inputs, checked against the reference interpreter and
//! timed (the kernel alone, median of `--reps` runs after a warm-up, all
//! programs' runs interleaved); the input program is measured the same way
//! for comparison. A candidate the backend refuses is rejected while
//! extracting (the next one is taken instead); candidates that fail to run
//! or differ from the interpreter are listed apart and never ranked.

use super::{Args, check, cost_model, limits};
use crate::cli::matrix::{self, Storage};
use crate::cli::run::Backend;
use crate::cli::timing::{self, Timer};
use crate::cli::{Failure, Output, load};
use heddle_ir::{Diagnostic, Program};
use heddle_rewrite::program::candidates::{Candidate, candidates};
use heddle_rewrite::program::sketch::{self, Sketch};
use heddle_rewrite::program::{self, Checked, CostKind, Options, Rule};
use heddle_runtime::interp::Env;
use heddle_runtime::io::{Loaded, bind_inputs, bind_inputs_flat, read_input_for};
use heddle_runtime::opencl::OpenCl;
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;
use serde_json::json;
use std::fmt::Write;
use std::path::Path;
use std::time::Instant;

/// The flags of a measured search.
#[derive(clap::Args)]
pub struct SearchArgs {
    /// Measured search: extract N distinct candidates, compile, check against the interpreter and time each.
    #[arg(long = "search", value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub count: Option<u64>,
    /// The backend the candidates run on (with --search).
    #[arg(long, value_enum, default_value = "cpu", requires = "count")]
    backend: Backend,
    /// The OpenCL device's index (default: the first GPU, else the first device).
    #[arg(long, value_name = "N", requires = "count")]
    device: Option<usize>,
    /// Threads for --backend cpu (default: HEDDLE_THREADS, else every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), requires = "count")]
    threads: Option<u32>,
    /// Timed runs per candidate after a warm-up; the median counts.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100_000), requires = "count")]
    reps: u32,
    /// An input: NAME=PATH to a .npy or .json file.
    #[arg(long = "input", value_name = "NAME=PATH", requires = "count")]
    inputs: Vec<String>,
    /// A tensor parameter: NAME=FILE (.mtx, .tns, .json), stored in the parameter's encoding.
    #[arg(long = "matrix", value_name = "NAME=FILE", requires = "count")]
    matrices: Vec<String>,
    /// A Matrix Market file as CSR buffers: OFFSETS,COL_INDICES,VALUES=FILE.mtx.
    #[arg(long = "csr", value_name = "O,C,V=FILE", requires = "count")]
    csr: Vec<String>,
    /// A Matrix Market file as LIL buffers: ROW_LENGTH,COL_INDICES,VALUES=FILE.mtx.
    #[arg(long = "lil", value_name = "L,C,V=FILE", requires = "count")]
    lil: Vec<String>,
    /// A Matrix Market file as packed CSR: OFFSETS,ENTRIES=FILE.mtx (Listing 5's form).
    #[arg(long = "csr-packed", value_name = "O,E=FILE", requires = "count")]
    csr_packed: Vec<String>,
    /// A Matrix Market file as a dense row-major matrix: MATRIX=FILE.mtx.
    #[arg(long = "dense", value_name = "M=FILE", requires = "count")]
    dense: Vec<String>,
}

/// The sketches tried when none is given: every level of the OpenCL
/// hierarchy the schedule rules reach, and the unconstrained best.
fn default_sketches(backend: Backend) -> Vec<Sketch> {
    let texts: &[&str] = match backend {
        Backend::Opencl => &[
            "?",
            "mapGlobal",
            "mapWorkgroup(mapLocal(interleave))",
            "mapWorkgroup(mapLocal(toLocal))",
            "join(mapWorkgroup(mapLocal(mapLocal)))",
            "join(mapWorkgroup(mapLocal(mapLocal(toLocal))))",
            "join(mapWorkgroup(mapLocal))",
        ],
        _ => &["?", "interleave", "join(map(map))"],
    };
    texts.iter().filter_map(|t| sketch::parse(t).ok()).collect()
}

fn split_assignment<'a>(flag: &str, s: &'a str) -> Result<(&'a str, &'a str), Failure> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| Failure::Input(format!("--{flag} {s}: expected NAME=VALUE")))
}

/// The inputs the flags give, and the naturals.
fn inputs(a: &Args, kernel: &Kernel) -> Result<heddle_runtime::io::bind::NamedInputs, Failure> {
    let s = &a.search;
    let mut nats: Vec<(String, i64)> = a.params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut loaded = Vec::new();
    for i in &s.inputs {
        let (k, path) = split_assignment("input", i)?;
        loaded.push((
            k.to_string(),
            read_input_for(Path::new(path), k).map_err(|e| Failure::Input(format!("parameter `{k}`: {e}")))?,
        ));
    }
    for (specs, storage) in [
        (&s.csr, Storage::Csr),
        (&s.lil, Storage::Lil),
        (&s.csr_packed, Storage::CsrPacked),
        (&s.dense, Storage::Dense),
    ] {
        for spec in specs {
            loaded.extend(matrix::inputs(storage, spec)?);
        }
    }
    for m in &s.matrices {
        let (k, path) = split_assignment("matrix", m)?;
        let (dims, buffers) = heddle_runtime::io::bind::tensor_inputs(kernel, k, Path::new(path))
            .map_err(|e| Failure::Input(e.to_string()))?;
        nats.extend(dims);
        loaded.extend(buffers);
    }
    Ok((nats, loaded))
}

/// How a program fared.
#[derive(Clone, Debug, serde::Serialize)]
struct Measured {
    /// Median kernel seconds.
    median: f64,
    /// Fastest run.
    min: f64,
    /// Compile (lower + generate + build) seconds.
    compile_seconds: f64,
}

/// Where the candidates run.
enum Runner {
    Interp,
    Cpu(usize),
    Opencl(OpenCl),
}

/// Compiles and runs one program once (the run that compiles is not timed);
/// its result, its compile time, and a timer for the timed runs.
fn prepare<'a>(
    runner: &'a Runner,
    program: &Program,
    name: &str,
    nats: &[(String, i64)],
    loaded: &[(String, Loaded)],
) -> Result<(Value, f64, Timer<'a>), String> {
    let kernel = heddle_typeck::check_program(program)
        .map_err(|d| d.first().map_or_else(|| "type error".into(), |d| d.message.clone()))?;
    // Compiled candidates read the inputs as flat buffers; the interpreter as values.
    let bind = if matches!(runner, Runner::Interp) { bind_inputs } else { bind_inputs_flat };
    let env = bind(&kernel, nats, loaded.to_vec()).map_err(|e| e.to_string())?;
    let msg = |d: Diagnostic| d.message;
    let compile_start = Instant::now();
    match runner {
        Runner::Interp => {
            let value = heddle_runtime::interp::run_kernel(&kernel, &env).map_err(msg)?;
            let timer = move || {
                let t = Instant::now();
                heddle_runtime::interp::run_kernel(&kernel, &env).map_err(msg)?;
                Ok(t.elapsed().as_secs_f64())
            };
            Ok((value, 0.0, Box::new(timer)))
        }
        Runner::Cpu(threads) => {
            let threads = *threads;
            let p = heddle::cpu::lower(&kernel, name).map_err(msg)?;
            heddle_runtime::interp::check_obligations(&kernel, &env).map_err(msg)?;
            let env: Env = heddle_runtime::launch::run_counts(&p, &env, &mut |_, phase, launch| {
                heddle_runtime::cpu::run(phase, launch, threads)
            })
            .map_err(msg)?;
            // The first run compiles (the JIT caches by program): it is not timed.
            let mut launch = heddle_runtime::launch::prepare(&p, &env).map_err(msg)?;
            heddle_runtime::cpu::run(&p, &mut launch, threads).map_err(msg)?;
            let compile_seconds = compile_start.elapsed().as_secs_f64();
            let value = heddle_runtime::launch::output_value(&p, &launch, &kernel.body.ty, &env).map_err(msg)?;
            let timer = move || {
                // A fresh launch per run: a kernel may accumulate into its output.
                let mut launch = heddle_runtime::launch::prepare(&p, &env).map_err(msg)?;
                let t = Instant::now();
                heddle_runtime::cpu::run(&p, &mut launch, threads).map_err(msg)?;
                Ok(t.elapsed().as_secs_f64())
            };
            Ok((value, compile_seconds, Box::new(timer)))
        }
        Runner::Opencl(cl) => {
            let compiled = heddle::opencl::compile(&kernel, name).map_err(msg)?;
            // The first launch builds the program (cached by source).
            let (value, _) = heddle::opencl::run(cl, &kernel, &compiled, &env, 1).map_err(msg)?;
            let compile_seconds = compile_start.elapsed().as_secs_f64();
            let timer = move || {
                let (_, timing) = heddle::opencl::run(cl, &kernel, &compiled, &env, 1).map_err(msg)?;
                timing.kernel_seconds.first().copied().ok_or_else(|| "no timed launch".to_string())
            };
            Ok((value, compile_seconds, Box::new(timer)))
        }
    }
}

/// Times every prepared program `reps` times, interleaved ([`timing::interleaved`]):
/// each program's median and minimum, or the error of a run that failed.
fn time_interleaved(
    timers: Vec<Option<(f64, Timer)>>,
    reps: usize,
    bar: &indicatif::ProgressBar,
) -> Vec<Result<Measured, String>> {
    let (compile, mut timers): (Vec<f64>, Vec<Option<Timer>>) = timers
        .into_iter()
        .map(|t| match t {
            Some((c, t)) => (c, Some(t)),
            None => (0.0, None),
        })
        .unzip();
    let times = timing::interleaved(&mut timers, reps, &mut || bar.inc(1));
    times
        .into_iter()
        .zip(compile)
        .map(|(t, compile_seconds)| {
            let (median, min) = timing::median_min(t?).ok_or_else(|| "no timed run".to_string())?;
            Ok(Measured { median, min, compile_seconds })
        })
        .collect()
}

/// One candidate's fate.
struct Row {
    candidate: Candidate,
    result: Result<Measured, String>,
}

pub fn run(a: &Args, path: &str, rules: &[Rule], sketches: &[Sketch]) -> Result<Output, Failure> {
    let s = &a.search;
    let n = s.count.unwrap_or(1) as usize;
    let (file, program, kernel) = load(path)?;
    let (nats, loaded) = inputs(a, &kernel)?;
    let env = bind_inputs(&kernel, &nats, loaded.clone()).map_err(|e| Failure::Input(e.to_string()))?;
    // The reference, and the naturals' values as facts for the rules' conditions.
    let reference =
        heddle_runtime::interp::run_kernel(&kernel, &env).map_err(|d| Failure::Source(file.clone(), vec![d]))?;
    let facts: Vec<(heddle_ir::Name, i64)> = kernel
        .params
        .iter()
        .filter_map(|p| match p {
            heddle_typeck::KernelParam::Nat(name) => env.nat(name).map(|v| (name.clone(), v)),
            _ => None,
        })
        .collect();
    // Without a cost model named, the backend's own.
    let kind = a.cost.unwrap_or(match s.backend {
        Backend::Cpu => CostKind::Cpu,
        _ => CostKind::Parallel,
    });
    let opts = Options {
        limits: limits(a.iter_limit, a.node_limit, a.time_limit),
        cost: cost_model(kind, a.cost_file.as_deref())?,
        explain: false,
        keep_egraph: false,
        facts,
    };
    let sketches = if sketches.is_empty() { default_sketches(s.backend) } else { sketches.to_vec() };
    // A candidate the backend refuses is rejected while extracting, as an
    // ill-typed one is, so the search goes on to the next instead of listing
    // it as a failure. The input program itself is measured as it is.
    let backend = s.backend;
    let for_backend = |p: &Program| -> Result<Checked, String> {
        let checked = check(p)?;
        if std::ptr::eq(p, &program) || backend == Backend::Interp {
            return Ok(checked);
        }
        let kernel = heddle_typeck::check_program(p)
            .map_err(|d| d.first().map_or_else(|| "type error".into(), |d| d.message.clone()))?;
        let refused = match backend {
            Backend::Opencl => heddle::opencl::compile(&kernel, "candidate").err(),
            _ => heddle::cpu::lower(&kernel, "candidate").err(),
        };
        match refused {
            Some(d) => Err(format!("the {} backend refuses it: {}", format!("{backend:?}").to_lowercase(), d.message)),
            None => Ok(checked),
        }
    };
    let found = candidates(&program, rules, &opts, &sketches, n, &for_backend)
        .map_err(|e| Failure::Source(file.clone(), vec![Diagnostic::new(heddle_ir::Span::new(0, 0), e.to_string())]))?;
    let runner = match s.backend {
        Backend::Interp => Runner::Interp,
        Backend::Cpu => Runner::Cpu(s.threads.map_or_else(heddle_runtime::cpu::default_threads, |t| t as usize)),
        Backend::Opencl => Runner::Opencl(OpenCl::new(s.device).map_err(|d| Failure::Input(d.message))?),
    };
    let name = crate::cli::compile::kernel_name(&file);
    let reps = s.reps as usize;
    let bar = indicatif::ProgressBar::new(found.list.len() as u64 + 1 + reps as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message("compiling and checking the input program");
    let agrees = |v: &Value| crate::cli::tune::agree(&reference, v);
    // Every program is compiled and checked first, then all are timed together.
    let mut timers: Vec<Option<(f64, Timer)>> = Vec::new();
    let mut failures: Vec<Option<String>> = Vec::new();
    let programs = std::iter::once(&program).chain(found.list.iter().map(|c| &c.program));
    for (k, p) in programs.enumerate() {
        if k > 0 {
            bar.set_message(format!("compiling and checking candidate {k} ({})", found.list[k - 1].sketch));
        }
        let wrong = if k == 0 { "differs from the interpreter" } else { "wrong result: differs from the interpreter" };
        match prepare(&runner, p, &name, &nats, &loaded) {
            Ok((v, _, _)) if !agrees(&v) => {
                timers.push(None);
                failures.push(Some(wrong.to_string()));
            }
            Ok((_, compile, timer)) => {
                timers.push(Some((compile, timer)));
                failures.push(None);
            }
            Err(e) => {
                timers.push(None);
                failures.push(Some(e));
            }
        }
        bar.inc(1);
    }
    bar.set_message(format!("timing {} programs, interleaved", timers.iter().filter(|t| t.is_some()).count()));
    let measured = time_interleaved(timers, reps, &bar);
    let mut results = measured.into_iter().zip(failures).map(|(m, f)| match f {
        Some(why) => Err(why),
        None => m,
    });
    let input = results.next().unwrap_or_else(|| Err("not run".into()));
    let rows: Vec<Row> =
        found.list.into_iter().zip(results).map(|(candidate, result)| Row { candidate, result }).collect();
    bar.finish_and_clear();
    // A refusal passed through the type checker's slot: say what it is.
    let first_rejection = found.first_rejection.as_ref().map(|why| match why.split_once(": the ") {
        Some((_, rest)) if rest.contains(" backend refuses it: ") => format!("the {rest}"),
        _ => why.clone(),
    });
    let device = match &runner {
        Runner::Opencl(cl) => format!("{} ({})", cl.device().name, cl.device().platform),
        Runner::Cpu(t) => format!("cpu, {t} threads"),
        Runner::Interp => "interpreter".into(),
    };
    let info = Info {
        file: path,
        backend: format!("{:?}", s.backend).to_lowercase(),
        device,
        reps,
        cost: &opts.cost.name,
        terms: found.terms,
        rejected: found.rejected,
        first_rejection: first_rejection.as_deref(),
        empty_sketches: &found.empty_sketches,
        stats: &found.stats,
    };
    Ok(report(&info, input, rows))
}

struct Info<'a> {
    file: &'a str,
    backend: String,
    device: String,
    reps: usize,
    cost: &'a str,
    terms: usize,
    rejected: usize,
    first_rejection: Option<&'a str>,
    empty_sketches: &'a [String],
    stats: &'a program::Stats,
}

fn report(info: &Info, input: Result<Measured, String>, mut rows: Vec<Row>) -> Output {
    // Ranked: the verified ones by median time; the rest after, in the order found.
    rows.sort_by(|x, y| match (&x.result, &y.result) {
        (Ok(a), Ok(b)) => a.median.total_cmp(&b.median),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        _ => std::cmp::Ordering::Equal,
    });
    let base = input.as_ref().ok().map(|m| m.median);
    let mut text = format!(
        "search: {} candidates from {} terms ({} not well-typed), backend {} on {}, median of {} runs (kernel only)\n",
        rows.len(),
        info.terms,
        info.rejected,
        info.backend,
        info.device,
        info.reps
    );
    let _ = writeln!(
        text,
        "e-graph: {} iterations, {} e-nodes, stopped: {}{}; extraction {:.3} s; cost model {}",
        info.stats.iterations,
        info.stats.nodes,
        info.stats.stop_reason.name(),
        info.stats.grew_most.as_ref().map_or(String::new(), |r| format!(" (grew most: {r})")),
        info.stats.extract_seconds,
        info.cost
    );
    if !info.empty_sketches.is_empty() {
        let _ = writeln!(text, "no program of the shape: {}", info.empty_sketches.join(", "));
    }
    let _ = writeln!(text, "\n{:>5}  {:>11}  {:>8}  {:>6}  sketch", "rank", "median ms", "vs input", "cost");
    match &input {
        Ok(m) => {
            let _ = writeln!(
                text,
                "{:>5}  {:>11.4}  {:>8}  {:>6}  (the program as written)",
                "input",
                m.median * 1e3,
                "1.00x",
                ""
            );
        }
        Err(e) => {
            let _ = writeln!(text, "{:>5}  failed: {e}", "input");
        }
    }
    let mut json_rows = Vec::new();
    for (k, r) in rows.iter().enumerate() {
        let c = &r.candidate;
        match &r.result {
            Ok(m) => {
                let speedup = base.map(|b| if m.median > 0.0 { b / m.median } else { f64::INFINITY });
                let _ = writeln!(
                    text,
                    "{:>5}  {:>11.4}  {:>8}  {:>6}  {}",
                    k + 1,
                    m.median * 1e3,
                    speedup.map_or("-".into(), |s| format!("{s:.2}x")),
                    c.cost,
                    c.sketch
                );
            }
            Err(e) => {
                let _ = writeln!(text, "{:>5}  not ranked: {e}  [{}]", "-", c.sketch);
            }
        }
        json_rows.push(json!({
            "rank": r.result.is_ok().then_some(k + 1),
            "program": c.text,
            "sketch": c.sketch,
            "cost": c.cost,
            "assumptions": c.assumptions,
            "verified": r.result.is_ok(),
            "kernel_seconds": r.result.as_ref().ok().map(|m| json!({ "median": m.median, "min": m.min })),
            "compile_seconds": r.result.as_ref().ok().map(|m| m.compile_seconds),
            "speedup_vs_input": r.result.as_ref().ok().and_then(|m| base.map(|b| b / m.median)),
            "error": r.result.as_ref().err(),
        }));
    }
    if let Some(why) = info.first_rejection {
        let _ = writeln!(text, "\nfirst term dropped: {why}");
    }
    for (k, r) in rows.iter().enumerate().filter(|(_, r)| r.result.is_ok()) {
        let c = &r.candidate;
        let _ = writeln!(
            text,
            "\n// #{} ({}){}",
            k + 1,
            c.sketch,
            if c.assumptions.is_empty() {
                String::new()
            } else {
                format!(", checks at run time: {}", c.assumptions.join(", "))
            }
        );
        text.push_str(&c.text);
        if !c.text.ends_with('\n') {
            text.push('\n');
        }
    }
    let json = json!({
        "schema": "heddle.rewrite-search/1",
        "ok": true,
        "file": info.file,
        "backend": info.backend,
        "device": info.device,
        "reps": info.reps,
        "cost_model": info.cost,
        "terms": info.terms,
        "rejected": info.rejected,
        "first_rejection": info.first_rejection,
        "empty_sketches": info.empty_sketches,
        "stats": {
            "iterations": info.stats.iterations,
            "nodes": info.stats.nodes,
            "classes": info.stats.classes,
            "stop_reason": info.stats.stop_reason.name(),
            "limit": info.stats.stop_reason.limit(),
            "grew_most": info.stats.grew_most,
            "run_seconds": info.stats.run_seconds,
            "extract_seconds": info.stats.extract_seconds,
        },
        "input": match &input {
            Ok(m) => json!({ "verified": true, "kernel_seconds": { "median": m.median, "min": m.min }, "compile_seconds": m.compile_seconds }),
            Err(e) => json!({ "verified": false, "error": e }),
        },
        "candidates": json_rows,
    });
    Output { text, json }
}

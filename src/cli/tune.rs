//! `heddle tune FILE…`: search a kernel's variants and tunable naturals, per
//! input, on the OpenCL device or on the CPU, verifying every result.
//!
//! Each file is a variant of one kernel (the same inputs, the same result:
//! a row per work-item, rows dealt across a work-group, …). A configuration
//! is a variant with one combination of the `--param-range` values of the
//! naturals it has (and, on the CPU, a thread count, an accumulator count
//! and a cap on chunks per thread: `--accumulators`, `--chunks-per-thread`). Every configuration
//! runs on every input case (the `--input` set, each `--csr` matrix, and
//! each `--matrix` file, stored in each variant's own encoding:
//! `tune_matrix.rs`, which also skips a variant whose storage would be too
//! large);
//! its result is compared with the reference interpreter's (or, with
//! `--verify first`, the first configuration's) before its time counts.
//! The timed runs of all a case's configurations are interleaved, round by
//! round (`timing.rs`), so that load on a shared machine falls on all alike.
//! Each variant is lowered and generated once: tunables are kernel
//! arguments, so one build serves all its configurations.

use super::timing::{self, Timer};
use super::tune_matrix::{self, Bound};
use super::{Failure, Output, load};
use heddle::source::SourceFile;
use heddle_ir::Type;
use heddle_ir::loops::LoopProgram;
use heddle_runtime::interp::Env;
use heddle_runtime::io::read::ScalarKind;
use heddle_runtime::io::{Loaded, bind_inputs, bind_inputs_flat, read_input_for};
use heddle_runtime::opencl::OpenCl;
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Verify {
    /// Against the reference interpreter (slow on large inputs).
    Interp,
    /// Against the first configuration that runs.
    First,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// Generated OpenCL C on an OpenCL device (see --device).
    Opencl,
    /// Native code JIT-compiled with Cranelift (see --threads).
    Cpu,
}

#[derive(clap::Args)]
pub struct Args {
    /// The kernel's source file; several files are variants of one kernel
    /// (the same parameters, the same result), tuned together.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<String>,
    /// A tunable's values: NAME=a..b (inclusive, doubling) or NAME=a..b,step
    /// (adding step). A variant without this natural ignores it.
    #[arg(long = "param-range", value_name = "NAME=a..b[,step]", value_parser = super::args::checked(super::args::range_binding))]
    ranges: Vec<String>,
    /// A fixed natural: NAME=VALUE.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = super::args::checked(super::args::nat_binding))]
    params: Vec<String>,
    /// An input of the first case: NAME=PATH (.npy or .json); with --matrix,
    /// an input of every matrix case instead.
    #[arg(long = "input", value_name = "NAME=PATH", value_parser = super::args::checked(super::args::input_binding))]
    inputs: Vec<String>,
    /// A matrix file (.mtx, .npz, .tns or .json), one case: PATH binds the
    /// CSR/LIL parameters by name (offset(s), row_length, col_indices, values —
    /// packed or not — and xs); O,C,V=PATH names them as `heddle run --csr`
    /// does (xs is still generated).
    #[arg(long = "csr", value_name = "PATH", value_parser = super::args::matrix_file)]
    csr: Vec<String>,
    /// A tensor parameter: NAME=FILE (.mtx, .npz, .tns or .json), stored in
    /// each variant's own encoding (not timed); each file is a case (a
    /// repeated NAME starts the next), and the vector xs is generated. A
    /// variant whose storage would exceed 3x the matrix's CSR bytes, or that
    /// cannot hold the matrix, is skipped with the reason.
    #[arg(long = "matrix", value_name = "NAME=FILE", value_parser = super::args::matrix_binding)]
    matrices: Vec<(String, String)>,
    /// Which backend runs the configurations.
    #[arg(long, value_enum, default_value = "opencl")]
    backend: Backend,
    /// Thread counts to try with --backend cpu: N or N,M,… (default: HEDDLE_THREADS, else every core).
    #[arg(long, value_name = "N[,N…]", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Vec<u32>,
    /// Partial accumulators of a `reduce` loop to try with --backend cpu: N or N,M,… (1 to 16;
    /// default 4). 1 is the one-accumulator loop, cheapest on short rows. E.g. 1,2,4,8.
    #[arg(long, value_name = "N[,N…]", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=heddle_runtime::cpu::MAX_ACCUMULATORS as i64))]
    accumulators: Vec<u32>,
    /// With --backend cpu, the most chunks per thread a split launch is cut into, to try:
    /// N or N,M,… (1 to 64; default 8).
    #[arg(long, value_name = "N[,N…]", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=heddle_runtime::cpu::MAX_CHUNKS_PER_THREAD as i64))]
    chunks_per_thread: Vec<u32>,
    /// Timed launches per configuration (the median counts; 1 to 1000000,
    /// as `run --reps`).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    reps: u32,
    /// What each configuration's result is checked against.
    #[arg(long, value_enum, default_value = "interp")]
    verify: Verify,
    /// The OpenCL device's index.
    #[arg(long, value_name = "N")]
    device: Option<usize>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// One variant: a source file, its kernel, and its code for the backend.
struct Candidate {
    name: String,
    file: SourceFile,
    kernel: Kernel,
    code: Code,
    /// The kernel's natural parameters.
    nats: Vec<String>,
}

enum Code {
    Opencl(heddle::opencl::Compiled),
    Cpu(LoopProgram),
}

/// Where a case's inputs come from; they are bound to each variant's
/// parameters by name.
enum Source {
    Inputs(Vec<(String, Loaded)>),
    Csr(String),
    /// Tensor parameters and their files (`--matrix`), with the `--input` files.
    Matrices(Vec<(String, String)>),
}

/// One input case, bound for each variant (in the order of the files).
struct Case {
    name: String,
    per_variant: Vec<Bound>,
}

/// A configuration: a variant, its tunables' values, its thread count and
/// code settings (CPU).
#[derive(Clone, Debug)]
struct Config {
    variant: usize,
    params: Vec<(String, i64)>,
    threads: Option<usize>,
    tuning: Option<heddle_runtime::cpu::Tuning>,
}

/// One configuration's outcome on one case.
#[derive(Clone, Debug, serde::Serialize)]
struct Outcome {
    /// The variant: its file's name.
    kernel: String,
    params: Vec<(String, i64)>,
    /// Threads (--backend cpu).
    #[serde(skip_serializing_if = "Option::is_none")]
    threads: Option<usize>,
    /// Partial accumulators of its `reduce` loops (--backend cpu).
    #[serde(skip_serializing_if = "Option::is_none")]
    accumulators: Option<u32>,
    /// The most chunks per thread of a split launch (--backend cpu).
    #[serde(skip_serializing_if = "Option::is_none")]
    chunks_per_thread: Option<usize>,
    /// Median kernel time in seconds, when it ran and verified.
    seconds: Option<f64>,
    /// Input and output bytes over the kernel time, GB/s.
    gbps: Option<f64>,
    /// Why it has no time (refused, failed or wrong).
    error: Option<String>,
    /// The variant did not run on this case: `error` says why (its storage
    /// of the matrix would be too large, or cannot hold it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    skipped: bool,
}

fn assignment<'a>(flag: &str, s: &'a str) -> Result<(&'a str, &'a str), Failure> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| Failure::Input(format!("--{flag} {s}: expected NAME=VALUE")))
}

/// `a..b` doubles from a to b; `a..b,step` adds step.
fn parse_range(s: &str) -> Result<(String, Vec<i64>), Failure> {
    let bad = || Failure::Input(format!("--param-range {s}: expected NAME=a..b or NAME=a..b,step with 1 <= a <= b"));
    let (name, spec) = assignment("param-range", s)?;
    let (range, step) = match spec.split_once(',') {
        Some((r, st)) => (r, Some(st.trim().parse::<i64>().map_err(|_| bad())?)),
        None => (spec, None),
    };
    let (a, b) = range.split_once("..").ok_or_else(bad)?;
    let (a, b): (i64, i64) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if a < 1 || b < a || step.is_some_and(|s| s < 1) {
        return Err(bad());
    }
    let mut values = vec![a];
    while let Some(&last) = values.last() {
        let next = match step {
            Some(st) => last.checked_add(st),
            None => last.checked_mul(2),
        };
        match next {
            Some(n) if n <= b && values.len() < 64 => values.push(n),
            _ => break,
        }
    }
    Ok((name.to_string(), values))
}

/// Every combination of the ranges' values.
fn grid(ranges: &[(String, Vec<i64>)]) -> Vec<Vec<(String, i64)>> {
    let mut out = vec![Vec::new()];
    for (name, values) in ranges {
        out = out
            .into_iter()
            .flat_map(|prefix| values.iter().map(move |v| [prefix.clone(), vec![(name.clone(), *v)]].concat()))
            .collect();
    }
    out
}

fn flat(items: Vec<Value>, dtype: &str, kinds: Vec<ScalarKind>) -> Loaded {
    Loaded::Flat { shape: vec![items.len() as u64], items, dtype: dtype.into(), kinds }
}

/// Binds a Matrix Market matrix to the kernel's CSR/LIL parameters by name.
fn csr_case(kernel: &Kernel, spec: &str, strict: bool) -> Result<(String, Vec<(String, Loaded)>), Failure> {
    if let Some((_, path)) = spec.split_once('=') {
        let mut inputs = super::matrix::inputs(super::matrix::Storage::Csr, spec)?;
        let by_name = csr_case(kernel, path, false)?;
        // The vector is the one input the matrix does not give.
        inputs.extend(by_name.1.into_iter().filter(|(k, _)| k == "xs" || k == "x"));
        return Ok((by_name.0, inputs));
    }
    let path = spec;
    let (mut coo, _) = heddle_runtime::sparse::file::read_coo(Path::new(path))
        .map_err(|e| Failure::Input(format!("--csr {path}: {e}")))?;
    if coo.rank() != 2 {
        return Err(Failure::Input(format!(
            "--csr {path}: a matrix has two dimensions, this tensor has {}",
            coo.rank()
        )));
    }
    coo.sort_and_sum();
    let (n, m) = (coo.dims[0] as usize, coo.dims[1] as usize);
    let mut counts = vec![0i64; n];
    for k in 0..coo.len() {
        counts[coo.entry(k)[0] as usize] += 1;
    }
    let mut offsets = vec![0i64];
    for c in &counts {
        offsets.push(offsets.last().copied().unwrap_or(0) + c);
    }
    let cols: Vec<Value> = (0..coo.len()).map(|k| Value::Int(coo.entry(k)[1] as i64)).collect();
    let vals: Vec<Value> = coo.values.to_f64s().into_iter().map(Value::Float).collect();
    let mut inputs = Vec::new();
    for p in &kernel.params {
        let heddle_typeck::KernelParam::Value { name, ty, .. } = p else { continue };
        let ints = |v: &[i64]| flat(v.iter().map(|x| Value::Int(*x)).collect(), "int64", vec![ScalarKind::Int]);
        let loaded = match name.as_str() {
            s if s.starts_with("offset") => ints(&offsets),
            "row_length" | "row_lengths" | "lengths" => ints(&counts),
            "col_indices" => flat(cols.clone(), "int64", vec![ScalarKind::Int]),
            "values" if matches!(leaf(ty), Type::Tuple(_)) => flat(
                cols.iter().zip(&vals).map(|(c, v)| Value::tuple(vec![c.clone(), v.clone()])).collect(),
                "(int64, float64)",
                vec![ScalarKind::Int, ScalarKind::Float],
            ),
            "values" => flat(vals.clone(), "float64", vec![ScalarKind::Float]),
            // A vector of small exact values, so float sums depend little on order.
            "xs" | "x" => flat(
                (0..m).map(|j| Value::Float(1.0 + (j % 5) as f64 * 0.25)).collect(),
                "float64",
                vec![ScalarKind::Float],
            ),
            other if strict => {
                return Err(Failure::Input(format!("--csr {path}: no CSR buffer for the parameter `{other}`")));
            }
            _ => continue,
        };
        inputs.push((name.to_string(), loaded));
    }
    let stem = Path::new(path).file_stem().and_then(|s| s.to_str()).unwrap_or(path);
    Ok((stem.to_string(), inputs))
}

/// The scalar (or tuple) at the bottom of nested array types: `(int, float)` for
/// packed CSR's `values`, `float` for unpacked CSR's, position-dependent or not.
fn leaf(ty: &Type) -> &Type {
    match ty {
        Type::Array { elem, .. } => leaf(elem),
        t => t,
    }
}

/// Do two results agree? Floats within a relative 1e-4 (a parallel reduction
/// adds in another order), NaN with NaN (a NaN in the data gives NaN in
/// every variant), everything else exactly.
pub fn agree(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => {
            x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-4 * x.abs().max(y.abs()).max(1.0)
        }
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys.iter()).all(|(x, y)| agree(x, y))
        }
        (Value::Tuple(xs), Value::Tuple(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys.iter()).all(|(x, y)| agree(x, y))
        }
        _ => a == b,
    }
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let ranges = a.ranges.iter().map(|r| parse_range(r)).collect::<Result<Vec<_>, _>>()?;
    let mut fixed = Vec::new();
    for p in &a.params {
        let (k, v) = assignment("param", p)?;
        fixed.push((
            k.to_string(),
            v.parse::<i64>().map_err(|_| Failure::Input(format!("--param {p}: `{v}` is not a natural number")))?,
        ));
    }
    if a.backend == Backend::Cpu && a.device.is_some() {
        super::warn("--device applies to --backend opencl; it is ignored here");
    }
    for (given, flag) in [
        (!a.threads.is_empty(), "--threads"),
        (!a.accumulators.is_empty(), "--accumulators"),
        (!a.chunks_per_thread.is_empty(), "--chunks-per-thread"),
    ] {
        if a.backend == Backend::Opencl && given {
            super::warn(format!("{flag} applies to --backend cpu; the opencl backend ignores it"));
        }
    }
    let mut sources = Vec::new();
    let mut inputs = Vec::new();
    for i in &a.inputs {
        let (k, path) = assignment("input", i)?;
        inputs.push((
            k.to_string(),
            read_input_for(Path::new(path), k).map_err(|e| Failure::Input(format!("parameter `{k}`: {e}")))?,
        ));
    }
    // With --matrix, the --input files are the matrix cases' other inputs.
    if !inputs.is_empty() && a.matrices.is_empty() {
        sources.push(Source::Inputs(inputs.clone()));
    }
    sources.extend(a.csr.iter().map(|p| Source::Csr(p.clone())));
    sources.extend(tune_matrix::cases(&a.matrices).into_iter().map(Source::Matrices));
    if sources.is_empty() {
        return Err(Failure::Input(
            "nothing to tune on: give --input NAME=PATH…, --csr MATRIX.mtx or --matrix NAME=FILE".into(),
        ));
    }
    // Every file is checked before anything runs.
    let mut loaded = Vec::new();
    let mut names = variant_names(&a.files);
    let mut reader = tune_matrix::Reader::default();
    let nats_of = |kernel: &Kernel| -> Vec<String> {
        kernel
            .params
            .iter()
            .filter(|p| matches!(p, heddle_typeck::KernelParam::Nat(_)))
            .map(|p| p.name().to_string())
            .collect()
    };
    let mut iso = Vec::new();
    for (path, name) in a.files.iter().zip(&names) {
        let (file, program, kernel) = load(path)?;
        // An iso-valued matrix: the variant also with `explicitVal` (`tune_iso.rs`).
        if !a.matrices.is_empty()
            && let Some((file, kernel)) =
                super::tune_iso::iso_variant(&file, &program, &kernel, &a.matrices, &mut reader)?
        {
            let nats = nats_of(&kernel);
            iso.push((format!("{name} iso"), (path.clone(), file, kernel, nats)));
        }
        let nats = nats_of(&kernel);
        loaded.push((path.clone(), file, kernel, nats));
    }
    for (name, variant) in iso {
        names.push(name);
        loaded.push(variant);
    }
    let known = |n: &str| loaded.iter().any(|(_, _, _, nats)| nats.iter().any(|x| x == n));
    if let Some((bad, _)) = ranges.iter().find(|(n, _)| !known(n)) {
        let theirs: Vec<String> = loaded
            .iter()
            .flat_map(|(_, _, _, nats)| nats.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        return Err(Failure::Input(format!(
            "--param-range {bad}: no kernel has a natural of this name (their naturals: {})",
            theirs.join(", ")
        )));
    }
    if let Some((bad, _)) = fixed.iter().find(|(n, _)| !known(n)) {
        return Err(Failure::Input(format!("--param {bad}=…: no kernel has a natural of this name")));
    }
    let cl = match a.backend {
        Backend::Opencl => Some(OpenCl::new(a.device).map_err(|d| Failure::Device(d.message))?),
        Backend::Cpu => None,
    };
    let mut candidates = Vec::new();
    for ((_, file, kernel, nats), name) in loaded.into_iter().zip(names) {
        let stem = super::compile::kernel_name(&file);
        let located = |d| Failure::Source(file.clone(), vec![d]);
        let code = match a.backend {
            Backend::Opencl => Code::Opencl(heddle::opencl::compile(&kernel, &stem).map_err(located)?),
            Backend::Cpu => {
                let program = heddle::cpu::lower(&kernel, &stem).map_err(located)?;
                heddle::cpu::compile(&program).map_err(located)?;
                Code::Cpu(program)
            }
        };
        candidates.push(Candidate { name, file, kernel, code, nats });
    }
    let mut cases = Vec::new();
    // Per matrix case, the structural inspector's pick (`--encoding A=auto`).
    let mut picks: Vec<(String, String, String)> = Vec::new();
    for source in &sources {
        if let (Source::Matrices(files), Some(c)) = (source, candidates.first())
            && let Some((enc, reason)) = tune_matrix::inspector_pick(&c.kernel, files, &mut reader)?
        {
            picks.push((tune_matrix::case_name(files), enc, reason));
        }
        let mut per_variant = Vec::new();
        let mut name = String::from("inputs");
        for c in &candidates {
            let plain = |inputs| Bound { inputs, nats: Vec::new(), skipped: None };
            per_variant.push(match source {
                Source::Inputs(inputs) => {
                    let params: Vec<String> = c.kernel.params.iter().map(|p| p.name().to_string()).collect();
                    plain(inputs.iter().filter(|(k, _)| params.contains(k)).cloned().collect())
                }
                Source::Csr(spec) => {
                    let case = csr_case(&c.kernel, spec, true).map_err(|e| in_variant(e, &c.name, candidates.len()))?;
                    name = case.0;
                    plain(case.1)
                }
                Source::Matrices(files) => {
                    name = tune_matrix::case_name(files);
                    tune_matrix::bind(&c.kernel, files, &inputs, &mut reader)
                        .map_err(|e| in_variant(e, &c.name, candidates.len()))?
                }
            });
        }
        cases.push(Case { name, per_variant });
    }
    let threads: Vec<Option<usize>> = match a.backend {
        Backend::Opencl => vec![None],
        Backend::Cpu if a.threads.is_empty() => {
            vec![Some(
                heddle_runtime::cpu::threads_from_env()
                    .map_err(Failure::Input)?
                    .unwrap_or_else(heddle_runtime::cpu::default_threads),
            )]
        }
        Backend::Cpu => a.threads.iter().map(|t| Some(*t as usize)).collect(),
    };
    // The code settings (CPU): every combination of the listed values,
    // the defaults where a flag is not given.
    let tunings: Vec<Option<heddle_runtime::cpu::Tuning>> = match a.backend {
        Backend::Opencl => vec![None],
        Backend::Cpu => {
            let base = heddle_runtime::cpu::Tuning::default();
            let accs = if a.accumulators.is_empty() { vec![base.accumulators] } else { dedup(&a.accumulators) };
            let chunks = if a.chunks_per_thread.is_empty() {
                vec![base.chunks_per_thread as u32]
            } else {
                dedup(&a.chunks_per_thread)
            };
            accs.iter()
                .flat_map(|&accumulators| {
                    chunks.iter().map(move |&c| {
                        Some(heddle_runtime::cpu::Tuning { accumulators, chunks_per_thread: c as usize, ..base })
                    })
                })
                .collect()
        }
    };
    let mut configs = Vec::new();
    for (v, c) in candidates.iter().enumerate() {
        let own: Vec<(String, Vec<i64>)> = ranges.iter().filter(|(n, _)| c.nats.contains(n)).cloned().collect();
        for params in grid(&own) {
            for t in &threads {
                for tuning in &tunings {
                    configs.push(Config { variant: v, params: params.clone(), threads: *t, tuning: *tuning });
                }
            }
        }
    }
    let reps = a.reps as usize;
    let bar = indicatif::ProgressBar::new(((configs.len() + reps) * cases.len()) as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let several = candidates.len() > 1;
    let mut table: Vec<(String, Vec<Outcome>)> = Vec::new();
    for case in &cases {
        let mut reference: Option<Value> = None;
        // Each variant's inputs are bound once, with its first configuration's
        // naturals (as the flat buffers the compiled kernels read; as values
        // only for the interpreter's reference); another configuration's
        // naturals shadow them.
        let mut bases: Vec<Option<Result<Env, String>>> = vec![None; candidates.len()];
        let mut timers: Vec<Option<Timer>> = Vec::new();
        let mut outcomes = Vec::new();
        let mut bytes = Vec::new();
        for config in &configs {
            let c = &candidates[config.variant];
            bar.set_message(format!("{}: checking {}", case.name, show(config, &c.name, several)));
            let bound = &case.per_variant[config.variant];
            let given: Vec<(String, i64)> = fixed
                .iter()
                .filter(|(n, _)| c.nats.contains(n))
                .cloned()
                .chain(config.params.iter().cloned())
                .collect();
            let nats: Vec<(String, i64)> = bound.nats.iter().cloned().chain(given).collect();
            let mut o = Outcome {
                kernel: c.name.clone(),
                params: config.params.clone(),
                threads: config.threads,
                accumulators: config.tuning.map(|t| t.accumulators),
                chunks_per_thread: config.tuning.map(|t| t.chunks_per_thread),
                seconds: None,
                gbps: None,
                error: None,
                skipped: false,
            };
            if let Some(reason) = &bound.skipped {
                o.error = Some(reason.clone());
                o.skipped = true;
                timers.push(None);
                bytes.push(0.0);
                outcomes.push(o);
                bar.inc(1);
                continue;
            }
            let base = bases[config.variant]
                .get_or_insert_with(|| {
                    bind_inputs_flat(&c.kernel, &nats, bound.inputs.clone()).map_err(|e| e.to_string())
                })
                .clone();
            let values = || {
                let env = bind_inputs(&c.kernel, &nats, bound.inputs.clone()).map_err(|e| e.to_string())?;
                Ok(nats.iter().fold(env, |e, (k, v)| e.with_nat(heddle_ir::Name::from(k.as_str()), *v)))
            };
            let prepared = base.and_then(|env| {
                let env = nats.iter().fold(env, |e, (k, v)| e.with_nat(heddle_ir::Name::from(k.as_str()), *v));
                prepare(
                    c,
                    cl.as_ref(),
                    env,
                    (config.threads, config.tuning.unwrap_or_default()),
                    a.verify,
                    &mut reference,
                    values,
                )
            });
            match prepared {
                Ok((timer, moved)) => {
                    timers.push(Some(timer));
                    bytes.push(moved);
                }
                Err(e) => {
                    timers.push(None);
                    bytes.push(0.0);
                    o.error = Some(e);
                }
            }
            outcomes.push(o);
            bar.inc(1);
        }
        bar.set_message(format!(
            "{}: timing {} configurations, interleaved",
            case.name,
            timers.iter().filter(|t| t.is_some()).count()
        ));
        let times = timing::interleaved(&mut timers, reps, &mut || bar.inc(1));
        drop(timers);
        for ((o, t), moved) in outcomes.iter_mut().zip(times).zip(bytes) {
            if o.error.is_some() {
                continue;
            }
            match t.map(timing::median_min) {
                Ok(Some((s, _))) => {
                    o.seconds = Some(s);
                    o.gbps = (s > 0.0).then(|| moved / s * 1e-9);
                }
                Ok(None) => o.error = Some("no timed launch".into()),
                Err(e) => o.error = Some(e),
            }
        }
        table.push((case.name.clone(), outcomes));
    }
    bar.finish_and_clear();
    // Nothing ran: a tuning that measured nothing is a failure, not a report.
    if table.iter().all(|(_, outcomes)| outcomes.iter().all(|o| o.seconds.is_none())) {
        let first = table.iter().find_map(|(case, outcomes)| {
            outcomes
                .iter()
                .zip(&configs)
                .find_map(|(o, k)| o.error.as_ref().map(|e| format!("{case}, {}: {e}", show(k, &o.kernel, several))))
        });
        return Err(Failure::Input(format!(
            "no configuration ran on any case (the first failure: {})",
            first.unwrap_or_default()
        )));
    }
    let target = match &cl {
        Some(cl) => Target::Device(cl.device()),
        None => Target::Cpu,
    };
    let mut out = report(&table, &configs, &candidates, target);
    if !picks.is_empty() {
        out.text.push_str("\nthe structural inspector's pick (no timing; `--encoding A=auto` tries it first):\n");
        let mut json = serde_json::Map::new();
        for (case, enc, reason) in picks {
            out.text.push_str(&format!("  {case}: {enc} ({reason})\n"));
            json.insert(case, serde_json::json!({ "encoding": enc, "reason": reason }));
        }
        out.json["inspector"] = serde_json::Value::Object(json);
    }
    Ok(out)
}

/// `values` in their order, each once.
fn dedup(values: &[u32]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for v in values {
        if !out.contains(v) {
            out.push(*v);
        }
    }
    out
}

/// The names variants are reported by: their files' stems, or their paths
/// where two stems are the same.
fn variant_names(files: &[String]) -> Vec<String> {
    let stem = |f: &String| Path::new(f).file_stem().and_then(|s| s.to_str()).unwrap_or(f).to_string();
    files
        .iter()
        .map(|f| if files.iter().filter(|g| stem(g) == stem(f)).count() > 1 { f.clone() } else { stem(f) })
        .collect()
}

/// An input error about one variant names it when there are several.
fn in_variant(e: Failure, name: &str, variants: usize) -> Failure {
    match e {
        Failure::Input(m) if variants > 1 => Failure::Input(format!("{name}: {m}")),
        e => e,
    }
}

/// Runs one configuration once on its bound inputs and checks the result
/// (against the interpreter, or the first configuration's); a timer for its
/// timed runs and the bytes it moves.
/// `values` binds the inputs as the interpreter's values, for its reference.
fn prepare<'a>(
    c: &'a Candidate,
    cl: Option<&'a OpenCl>,
    env: Env,
    (threads, tuning): (Option<usize>, heddle_runtime::cpu::Tuning),
    verify: Verify,
    reference: &mut Option<Value>,
    values: impl FnOnce() -> Result<Env, String>,
) -> Result<(Timer<'a>, f64), String> {
    if reference.is_none() && verify == Verify::Interp {
        let values = values()?;
        *reference = Some(
            heddle_runtime::interp::run_kernel(&c.kernel, &values)
                .map_err(|d| format!("the interpreter failed: {}", d.message))?,
        );
    }
    let (value, timer, bytes): (Value, Timer<'a>, f64) = match (&c.code, cl) {
        (Code::Opencl(compiled), Some(cl)) => {
            let (value, _) = heddle::opencl::run(cl, &c.kernel, compiled, &env, 1).map_err(|d| d.message)?;
            let bytes = bytes_moved(&compiled.program, &env);
            // Staged once: each timed run is the kernel alone, its buffers
            // left on the device (re-uploading a large matrix for every run
            // made tuning take seconds per configuration).
            let timer: Timer<'a> = match heddle::opencl::stage(cl, &c.kernel, compiled, &env).map_err(|d| d.message)? {
                Some(mut staged) => Box::new(move || staged.run_once().map_err(|d| d.message)),
                None => Box::new(move || {
                    let (_, timing) = heddle::opencl::run(cl, &c.kernel, compiled, &env, 1).map_err(|d| d.message)?;
                    timing.kernel_seconds.first().copied().ok_or_else(|| "no timed launch".to_string())
                }),
            };
            (value, timer, bytes)
        }
        (Code::Cpu(program), _) => {
            let threshold = heddle_runtime::cpu::thresholds_from_env().unwrap_or_default();
            let threads = heddle_runtime::cpu::Parallelism { threads: threads.unwrap_or(1), threshold, tuning };
            let value = heddle::cpu::run(&c.kernel, program, &env, threads).map_err(|d| d.message)?;
            let bytes = bytes_moved(program, &env);
            let timer: Timer<'a> = if program.counts.is_empty() {
                // Laid out once (a large matrix's buffers are not copied,
                // nor its result read back, for every timed run); each run
                // plans its split and runs once untimed (the other
                // configurations ran in between: this wakes the thread
                // pool), then times the kernel alone.
                let mut launch = heddle_runtime::launch::prepare(program, &env).map_err(|d| d.message)?;
                Box::new(move || {
                    let mut ready =
                        heddle_runtime::cpu::Ready::new(program, &mut launch, threads).map_err(|d| d.message)?;
                    ready.run().map_err(|d| d.message)?;
                    let start = std::time::Instant::now();
                    ready.run().map_err(|d| d.message)?;
                    Ok(start.elapsed().as_secs_f64())
                })
            } else {
                Box::new(move || {
                    let (_, times) =
                        heddle::cpu::run_timed(&c.kernel, program, &env, threads, 1).map_err(|d| d.message)?;
                    times.first().copied().ok_or_else(|| "no timed run".to_string())
                })
            };
            (value, timer, bytes)
        }
        (Code::Opencl(_), None) => return Err("no OpenCL device".into()),
    };
    if !agree(reference.get_or_insert_with(|| value.clone()), &value) {
        return Err("wrong result: differs from the reference".into());
    }
    Ok((timer, bytes))
}

fn bytes_moved(program: &LoopProgram, env: &Env) -> f64 {
    heddle_runtime::launch::prepare(program, env)
        .map(|l| {
            l.slots
                .iter()
                .map(|s| if let heddle_runtime::launch::Slot::Buffer(b) = s { b.byte_len() as f64 } else { 0.0 })
                .sum()
        })
        .unwrap_or(0.0)
}

/// A configuration as text: `R=2 W=4`, with the variant's name first when
/// there are several, and the thread count on the CPU.
fn show(config: &Config, name: &str, several: bool) -> String {
    show_parts(
        name,
        &config.params,
        config.threads,
        config.tuning.map(|t| (t.accumulators, t.chunks_per_thread)),
        several,
    )
}

fn show_parts(
    name: &str,
    params: &[(String, i64)],
    threads: Option<usize>,
    tuning: Option<(u32, usize)>,
    several: bool,
) -> String {
    let mut parts: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if let Some(t) = threads {
        parts.push(format!("threads={t}"));
    }
    if let Some((accs, chunks)) = tuning {
        parts.push(format!("accumulators={accs} chunks/thread={chunks}"));
    }
    match (several, parts.is_empty()) {
        (true, true) => name.to_string(),
        (true, false) => format!("{name}: {}", parts.join(" ")),
        (false, true) => "(no tunables)".to_string(),
        (false, false) => parts.join(" "),
    }
}

enum Target<'a> {
    Device(&'a heddle_runtime::opencl::DeviceEntry),
    Cpu,
}

fn report(table: &[(String, Vec<Outcome>)], configs: &[Config], candidates: &[Candidate], target: Target) -> Output {
    let several = candidates.len() > 1;
    let mut text = match &target {
        Target::Device(d) => format!("device: {} ({})\n", d.name, d.platform),
        Target::Cpu => "backend: cpu (Cranelift)\n".to_string(),
    };
    let width = configs.iter().map(|k| show(k, &candidates[k.variant].name, several).len()).max().unwrap_or(0).max(28);
    let mut cases_json = Vec::new();
    for (case, outcomes) in table {
        text.push_str(&format!("\n{case}\n  {:<width$} {:>12} {:>9}\n", "configuration", "median ms", "GB/s"));
        for (o, k) in outcomes.iter().zip(configs) {
            let label = show(k, &o.kernel, several);
            match (o.seconds, &o.error) {
                (Some(s), _) => {
                    text.push_str(&format!("  {label:<width$} {:>12.4} {:>9.2}\n", s * 1e3, o.gbps.unwrap_or(0.0)))
                }
                (None, e) => text.push_str(&format!("  {label:<width$} {}\n", e.as_deref().unwrap_or("failed"))),
            }
        }
        let best = outcomes
            .iter()
            .filter(|o| o.seconds.is_some())
            .min_by(|x, y| x.seconds.unwrap_or(f64::MAX).total_cmp(&y.seconds.unwrap_or(f64::MAX)));
        if let Some(b) = best {
            text.push_str(&format!(
                "  best: {} ({:.4} ms)\n",
                show_parts(&b.kernel, &b.params, b.threads, b.accumulators.zip(b.chunks_per_thread), several),
                b.seconds.unwrap_or(0.0) * 1e3
            ));
        }
        cases_json.push(serde_json::json!({ "case": case, "best": best, "variants": outcomes }));
    }
    // The single configuration best over every case: least geometric-mean
    // slowdown relative to each case's own best.
    let mut single: Option<(usize, f64)> = None;
    for (k, _) in configs.iter().enumerate() {
        let mut log_sum = 0.0;
        let mut ok = true;
        for (_, outcomes) in table {
            let best = outcomes.iter().filter_map(|o| o.seconds).fold(f64::MAX, f64::min);
            match outcomes.get(k).and_then(|o| o.seconds) {
                Some(s) if best > 0.0 => log_sum += (s / best).ln(),
                _ => ok = false,
            }
        }
        let geo = (log_sum / table.len().max(1) as f64).exp();
        if ok && single.is_none_or(|(_, g)| geo < g) {
            single = Some((k, geo));
        }
    }
    let single_json = single.map(|(k, g)| {
        let c = &configs[k];
        let mut j =
            serde_json::json!({ "kernel": candidates[c.variant].name, "params": c.params, "geomean_slowdown": g });
        if let Some(t) = c.threads {
            j["threads"] = serde_json::json!(t);
        }
        if let Some(t) = c.tuning {
            j["accumulators"] = serde_json::json!(t.accumulators);
            j["chunks_per_thread"] = serde_json::json!(t.chunks_per_thread);
        }
        j
    });
    match single {
        Some((k, g)) => text.push_str(&format!(
            "\nsingle best over all cases: {} (geomean {:.3}x the per-case best)\n",
            show(&configs[k], &candidates[configs[k].variant].name, several),
            g
        )),
        None => text.push_str("\nno configuration ran on every case\n"),
    }
    let kernels: Vec<serde_json::Value> =
        candidates.iter().map(|c| serde_json::json!({ "name": c.name, "file": c.file.name })).collect();
    let mut json = serde_json::json!({ "ok": true, "backend": match target { Target::Device(_) => "opencl", Target::Cpu => "cpu" }, "kernels": kernels, "cases": cases_json, "single_best": single_json });
    if let Target::Device(d) = target {
        json["device"] = serde_json::json!(d);
    }
    Output { text, json }
}

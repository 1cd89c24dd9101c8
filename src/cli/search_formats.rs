//! `heddle search-formats FILE --operand A --matrix A=FILE.mtx`: the format
//! state-space search of the MLIR sparse compiler paper (§5.2), through the
//! front door. Every encoding of the operand — a level type per level
//! (dense, compressed, singleton) × level order × position/coordinate
//! widths — that MLIR's verifier accepts is built from the dense kernel by
//! `heddle sparsify`, run on the chosen backend and timed; every result must
//! equal the first. Variants the verifier or the front door refuses are
//! listed with the reason. For a matrix operand, DIA and a few BSR block
//! shapes are tried too, unless the matrix stored so would be over
//! `tune --matrix`'s limit (3x its CSR bytes) or does not divide into the blocks.

use super::run::Backend;
use super::sparsify::front_door;
use super::{Failure, Output, load};
use heddle_ir::encoding::parse_encoding;
use heddle_runtime::io::{bind_inputs, bind_inputs_flat, read_input_for, write};
use heddle_runtime::opencl::OpenCl;
use heddle_runtime::sparse::file::{Contents, read_tensor};
use std::path::Path;
use std::time::{Duration, Instant};

mod variants;

#[derive(clap::Args)]
pub struct Args {
    /// The source file, written over dense arrays.
    file: String,
    /// The parameter whose encoding is searched.
    #[arg(long)]
    operand: String,
    /// A tensor input: NAME=FILE (.mtx or .tns); the operand's is required.
    #[arg(long = "matrix", value_name = "NAME=FILE", value_parser = super::args::checked(super::args::matrix_binding))]
    matrices: Vec<String>,
    /// Another input: NAME=PATH to a .npy or .json file.
    #[arg(long = "input", value_name = "NAME=PATH", value_parser = super::args::checked(super::args::input_binding))]
    inputs: Vec<String>,
    /// A natural parameter: NAME=VALUE.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = super::args::checked(super::args::nat_binding))]
    params: Vec<String>,
    /// Which backend runs the variants.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// The OpenCL device's index for --backend opencl (default: the first GPU, else the first device).
    #[arg(long, value_name = "N")]
    device: Option<usize>,
    /// Threads for --backend cpu (default: HEDDLE_THREADS, else every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// Try only encodings whose text contains one of these (repeatable); the
    /// others are counted as filtered out.
    #[arg(long = "filter", value_name = "TEXT")]
    filters: Vec<String>,
    /// Runs per variant; the fastest is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    reps: u32,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// The data files, each read once and shared by every variant: the
/// `--input`s up front, a `--matrix` file when the first variant binds it
/// (its values are read at the parameter's element type, which the kernel
/// knows, and every variant has the same). Each variant stores a copy in its
/// own encoding, so peak memory holds one copy of a file's contents beside
/// what a single variant needs.
struct Files {
    /// `--input NAME=PATH`, loaded.
    inputs: Vec<(String, heddle_runtime::io::Loaded)>,
    /// `--matrix NAME=PATH`, by name: the element type read at and the
    /// contents, or why the file could not be read (each variant reports it).
    matrices: std::collections::HashMap<String, (heddle_ir::ScalarType, Result<Contents, String>)>,
}

impl Files {
    /// Reads every `--input`; a file that cannot be read is an error here,
    /// before any variant runs.
    fn read_inputs(a: &Args) -> Result<Files, Failure> {
        let mut inputs = Vec::new();
        for i in &a.inputs {
            let (k, path) = split("input", i)?;
            let loaded =
                read_input_for(Path::new(path), k).map_err(|e| Failure::Input(format!("parameter `{k}`: {e}")))?;
            inputs.push((k.to_string(), loaded));
        }
        Ok(Files { inputs, matrices: Default::default() })
    }

    /// The contents of `--matrix name=path` with values of type `elem`,
    /// read on first use.
    fn matrix(&mut self, name: &str, path: &str, elem: heddle_ir::ScalarType) -> Result<&Contents, String> {
        let stale = self.matrices.get(name).is_some_and(|(at, _)| *at != elem);
        if stale || !self.matrices.contains_key(name) {
            let read = read_tensor(Path::new(path), elem)
                .map_err(|e| heddle_runtime::io::bind::in_file(name, Path::new(path), e).to_string());
            self.matrices.insert(name.to_string(), (elem, read));
        }
        match self.matrices.get(name) {
            Some((_, read)) => read.as_ref().map_err(Clone::clone),
            None => Err("no matrix file".into()),
        }
    }
}

/// One variant's fate.
enum Fate {
    /// Ran: the best time and the result as JSON.
    Ran(Duration, serde_json::Value),
    /// Not run, and why.
    Skipped(String),
}

fn split<'a>(flag: &str, s: &'a str) -> Result<(&'a str, &'a str), Failure> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| Failure::Input(format!("--{flag} {s}: expected NAME=VALUE")))
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let (file, program, _) = load(&a.file)?;
    if !a.matrices.iter().any(|m| m.split_once('=').is_some_and(|(k, _)| k == a.operand)) {
        return Err(Failure::Input(format!(
            "--operand {}: give its data with --matrix {}=FILE.mtx",
            a.operand, a.operand
        )));
    }
    // One OpenCL context for every variant; no device is an error up front.
    let cl = match a.backend {
        Backend::Opencl => Some(OpenCl::new(a.device).map_err(|d| Failure::Device(d.message))?),
        _ => None,
    };
    let rank = variants::operand_rank(&program, &a.operand).map_err(|d| Failure::Source(file.clone(), vec![d]))?;
    let all = variants::enumerate(rank);
    let candidates: Vec<String> = all
        .iter()
        .filter(|t| a.filters.is_empty() || a.filters.iter().any(|f| t.contains(f.as_str())))
        .cloned()
        .collect();
    let filtered_out = all.len() - candidates.len();
    let bar = indicatif::ProgressBar::new(candidates.len() as u64);
    if a.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut files = Files::read_inputs(a)?;
    let mut results = Vec::new();
    for text in &candidates {
        bar.set_message(variants::short(text));
        let fate = match parse_encoding(text, 0) {
            Err(d) => Fate::Skipped(format!("rejected by the verifier: {}", d.message)),
            Ok(enc) => match one(a, &file, &program, enc, cl.as_ref(), &mut files) {
                Ok((t, v)) => Fate::Ran(t, v),
                Err(why) => Fate::Skipped(why),
            },
        };
        results.push((text.clone(), fate));
        bar.inc(1);
    }
    bar.finish_and_clear();
    report(a, results, filtered_out)
}

/// Builds, binds and runs one variant; the reason as text when it cannot.
fn one(
    a: &Args,
    file: &heddle::source::SourceFile,
    program: &heddle_ir::Program,
    enc: heddle_ir::encoding::Encoding,
    cl: Option<&OpenCl>,
    files: &mut Files,
) -> Result<(Duration, serde_json::Value), String> {
    let first = |f: Failure| match f {
        Failure::Source(src, d) => d.first().map_or_else(
            || "failed".to_string(),
            |d| {
                let at = src.locate(d);
                format!("{} ({}:{}:{})", d.message, src.name, at.line, at.column)
            },
        ),
        other => other.message(),
    };
    let spec = (a.operand.clone(), format!("{}_enc", a.operand), super::sparsify::Format::Encoding(enc));
    let super::sparsify::Sparse { file: sparse, kernel, .. } = front_door(file, program, &[spec]).map_err(first)?;
    let mut nats = Vec::new();
    for p in &a.params {
        let (k, v) = split("param", p).map_err(first)?;
        nats.push((
            k.to_string(),
            v.parse::<i64>().map_err(|_| format!("--param {p}: `{v}` is not a natural number"))?,
        ));
    }
    let mut inputs = files.inputs.clone();
    for m in &a.matrices {
        let (k, path) = split("matrix", m).map_err(first)?;
        let (encoding, elem) = heddle_runtime::io::bind::tensor_param(&kernel, k).map_err(|e| e.to_string())?;
        let contents = files.matrix(k, path, elem)?;
        if k == a.operand && variants::is_structured(&a.operand, &kernel) {
            // DIA and BSR can need many times the memory of CSR (a matrix with
            // thousands of diagonals, scattered entries in blocks): as `tune
            // --matrix` does, such a variant is skipped with its sizes, never allocated.
            let coo = super::auto::entries_of(contents);
            let size = heddle_runtime::sparse::estimate::storage_size(&coo, encoding, elem)
                .map_err(|e| format!("`{k}` does not fit this encoding: {e}"))?;
            let plain = heddle_runtime::sparse::estimate::plain_size(&coo, elem);
            let limit = super::tune_matrix::SIZE_LIMIT;
            if size.bytes > limit.saturating_mul(plain) {
                return Err(format!(
                    "`{k}` in this encoding would take {} bytes ({} stored values for {} entries), over {limit}x its {plain} bytes as CSR",
                    super::tune_matrix::at_least(size.bytes),
                    super::tune_matrix::at_least(size.values),
                    coo.len()
                ));
            }
        }
        let (dims, buffers) =
            heddle_runtime::io::bind::tensor_inputs_from(&kernel, k, contents.clone(), Path::new(path))
                .map_err(|e| e.to_string())?;
        nats.extend(dims);
        inputs.extend(buffers);
    }
    // Compiled kernels read the inputs as flat buffers; the interpreter as values.
    let bind = if matches!(a.backend, Backend::Interp) { bind_inputs } else { bind_inputs_flat };
    let env = bind(&kernel, &nats, inputs).map_err(|e| e.to_string())?;
    let located = |d| first(Failure::Source(sparse.clone(), vec![d]));
    let lowered = match a.backend {
        Backend::Cpu => Some(heddle::cpu::lower(&kernel, &super::compile::kernel_name(&sparse)).map_err(located)?),
        _ => None,
    };
    let threads = a.threads.map_or_else(heddle_runtime::cpu::default_threads, |n| n as usize);
    if let Some(p) = &lowered {
        // On cpu the inputs are validated once and laid out before each run;
        // the time is the compiled kernel's alone, so formats are compared on
        // their loops rather than on copying their buffers.
        // A fresh launch per run: a kernel may accumulate into its output.
        heddle_runtime::interp::check_obligations(&kernel, &env).map_err(located)?;
        let mut best = Duration::MAX;
        let mut last = None;
        for _ in 0..a.reps {
            let mut launch = heddle_runtime::launch::prepare(p, &env).map_err(located)?;
            let start = Instant::now();
            heddle_runtime::cpu::run(p, &mut launch, threads).map_err(located)?;
            best = best.min(start.elapsed());
            last = Some(launch);
        }
        let launch = last.ok_or("no run")?;
        let value = heddle_runtime::launch::output_value(p, &launch, &kernel.body.ty, &env).map_err(located)?;
        return Ok((best, write::to_json(&value, &kernel.body.ty)));
    }
    if let Some(cl) = cl {
        // The kernel is built once; its time is from OpenCL profiling events.
        let compiled = heddle::opencl::compile(&kernel, &super::compile::kernel_name(&sparse)).map_err(located)?;
        let (value, timing) = heddle::opencl::run(cl, &kernel, &compiled, &env, a.reps as usize).map_err(located)?;
        let best = timing.kernel_seconds.iter().copied().fold(f64::INFINITY, f64::min);
        let best = if best.is_finite() { Duration::from_secs_f64(best.max(0.0)) } else { Duration::ZERO };
        return Ok((best, write::to_json(&value, &kernel.body.ty)));
    }
    let mut best = Duration::MAX;
    let mut value = None;
    for _ in 0..a.reps {
        let start = Instant::now();
        let v = heddle_runtime::interp::run_kernel(&kernel, &env).map_err(located)?;
        best = best.min(start.elapsed());
        value = Some(v);
    }
    let value = value.ok_or("no run")?;
    Ok((best, write::to_json(&value, &kernel.body.ty)))
}

/// Whether two results agree: same shape, numbers within 1e-5 relative.
fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (a, b) {
        (J::Array(x), J::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| close(p, q)),
        (J::Number(x), J::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(p), Some(q)) => (p - q).abs() <= 1e-5 * p.abs().max(q.abs()).max(1.0),
            _ => x == y,
        },
        _ => a == b,
    }
}

fn report(a: &Args, results: Vec<(String, Fate)>, filtered_out: usize) -> Result<Output, Failure> {
    let mut ran: Vec<(String, Duration, serde_json::Value)> = Vec::new();
    let mut skipped = Vec::new();
    for (text, fate) in results {
        match fate {
            Fate::Ran(t, v) => ran.push((text, t, v)),
            Fate::Skipped(why) => skipped.push((text, why)),
        }
    }
    // Every result is compared with the first variant's, in enumeration order.
    if let Some((first_enc, _, first)) = ran.first()
        && let Some((bad, _, _)) = ran.iter().find(|(_, _, v)| !close(v, first))
    {
        return Err(Failure::Input(format!("the result with {bad} differs from the one with {first_enc}")));
    }
    if ran.is_empty() {
        let mut reasons: Vec<&str> = skipped.iter().map(|(_, why)| why.as_str()).collect();
        reasons.sort();
        reasons.dedup();
        return Err(Failure::Input(format!(
            "no encoding of `{}` could run ({} tried):\n  {}",
            a.operand,
            skipped.len(),
            reasons.join("\n  ")
        )));
    }
    ran.sort_by_key(|(_, t, _)| *t);
    let fastest = ran.first().map_or(0.0, |(_, t, _)| t.as_secs_f64());
    let backend = format!("{:?}", a.backend).to_lowercase();
    let mut text = format!(
        "{} variants of `{}` on {backend}: {} ran, {} skipped",
        ran.len() + skipped.len(),
        a.operand,
        ran.len(),
        skipped.len()
    );
    if filtered_out > 0 {
        text.push_str(&format!(", {filtered_out} filtered out by --filter"));
    }
    text.push('\n');
    // Microseconds: readable for the small kernels OpenCL profiles and for large ones alike.
    text.push_str(&format!("{:>4}  {:>12}  {:>7}  encoding\n", "rank", "time (µs)", "ratio"));
    for (k, (enc, t, _)) in ran.iter().enumerate() {
        let ratio = if fastest > 0.0 { t.as_secs_f64() / fastest } else { 1.0 };
        text.push_str(&format!(
            "{:>4}  {:>12.1}  {:>7.2}  {}\n",
            k + 1,
            t.as_secs_f64() * 1e6,
            ratio,
            variants::short(enc)
        ));
    }
    if !skipped.is_empty() {
        text.push_str("skipped:\n");
        for (enc, why) in &skipped {
            text.push_str(&format!("  {}: {}\n", variants::short(enc), why));
        }
    }
    let json = serde_json::json!({
        "ok": true,
        "operand": a.operand,
        "backend": backend,
        "reps": a.reps,
        "filtered_out": filtered_out,
        "variants": ran.iter().map(|(e, t, _)| serde_json::json!({ "encoding": e, "seconds": t.as_secs_f64() })).collect::<Vec<_>>(),
        "skipped": skipped.iter().map(|(e, why)| serde_json::json!({ "encoding": e, "reason": why })).collect::<Vec<_>>(),
    });
    Ok(Output { text, json })
}

//! `heddle run FILE`: execute the kernel.

use super::matrix::{self, Storage};
use super::{Failure, Output, args, load};
use heddle::source::SourceFile;
use heddle_runtime::interp::Env;
use heddle_runtime::io::bind::InputError;
use heddle_runtime::io::{bind_inputs, bind_inputs_flat, read_input_for, write};
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;
use std::path::Path;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The reference interpreter.
    Interp,
    /// Generated OpenCL C on an OpenCL device (see --device).
    Opencl,
    /// Native code JIT-compiled with Cranelift, on several threads (see --threads).
    Cpu,
}

#[derive(clap::Args)]
pub struct Args {
    /// The source file.
    file: String,
    /// Which backend executes the kernel.
    #[arg(long, value_enum, default_value = "interp")]
    backend: Backend,
    /// The OpenCL device's index (default: the first GPU, else the first device).
    #[arg(long, value_name = "N")]
    device: Option<usize>,
    /// A natural parameter: NAME=VALUE (otherwise solved from input lengths).
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = args::nat_binding)]
    params: Vec<(String, i64)>,
    /// An input: NAME=PATH to a .npy or .json file.
    #[arg(long = "input", value_name = "NAME=PATH", value_parser = args::input_binding)]
    inputs: Vec<(String, String)>,
    /// A tensor parameter: NAME=FILE (.mtx, .tns, or .json nested lists), stored in the parameter's encoding.
    #[arg(long = "matrix", value_name = "NAME=FILE", value_parser = args::matrix_binding)]
    matrices: Vec<(String, String)>,
    /// Store a dense-typed operand sparsely: NAME=ENCODING (the kernel goes through `heddle sparsify` first;
    /// NAME=SELL(C): slices of C rows in vector lanes, packed from NAME's --matrix file, y printed;
    /// SELL(C, sigma = S) sorts the rows by length within windows of S rows and puts y back in order);
    /// NAME=auto chooses the encoding from the structure of NAME's --matrix file (the first format of the
    /// inspector's ranking the front door accepts and the backend compiles; said on stderr, and under
    /// `auto` with --json).
    #[arg(long = "encoding", value_name = "NAME=ENCODING", value_parser = args::encoding_binding)]
    encodings: Vec<(String, String)>,
    /// A file with `#NAME = #sparse_tensor.encoding<{...}>` lines, for --encoding NAME=#ENC.
    #[arg(long)]
    defs: Option<String>,
    /// A matrix file (.mtx, .npz, .tns or .json) as CSR buffers: OFFSETS,COL_INDICES,VALUES=FILE.
    #[arg(long = "csr", value_name = "O,C,V=FILE", value_parser = args::buffers_from_matrix(3))]
    csr: Vec<String>,
    /// A matrix file as LIL buffers: ROW_LENGTH,COL_INDICES,VALUES=FILE.
    #[arg(long = "lil", value_name = "L,C,V=FILE", value_parser = args::buffers_from_matrix(3))]
    lil: Vec<String>,
    /// A matrix file as packed CSR: OFFSETS,ENTRIES=FILE, entries (column, value).
    #[arg(long = "csr-packed", value_name = "O,E=FILE", value_parser = args::buffers_from_matrix(2))]
    csr_packed: Vec<String>,
    /// A matrix file as a dense row-major matrix: MATRIX=FILE.
    #[arg(long = "dense", value_name = "M=FILE", value_parser = args::buffers_from_matrix(1))]
    dense: Vec<String>,
    /// Threads for --backend cpu (default: HEDDLE_THREADS, else every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// Partial accumulators of a `reduce` loop for --backend cpu (1 to 16; default 4): 1 is the
    /// one-accumulator loop, cheapest on short rows; more hide a float add's latency on long rows.
    /// With more than 1, a loop of fewer than 16 iterations still runs with one.
    /// Changes only a `reduce`'s float rounding (LANGUAGE.md §5); `heddle tune` searches it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=heddle_runtime::cpu::MAX_ACCUMULATORS as i64))]
    accumulators: Option<u32>,
    /// For --backend cpu: at most N chunks per thread when a launch is split over threads
    /// (1 to 64; default 8). 1 gives each thread one contiguous part of equal work.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=heddle_runtime::cpu::MAX_CHUNKS_PER_THREAD as i64))]
    chunks_per_thread: Option<u32>,
    /// Run the kernel N more times after the first run and report the time of the kernel alone
    /// (median, min, max, nearest-rank p10 and p90; inputs already bound and laid out, code
    /// already compiled).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    reps: Option<u32>,
    /// Where to write the result (.npy or .json; a stored tensor `(e : tensor<…>)` as .json
    /// storage, .mtx, .tns or .npz; .mtx, .npz or .tns also for a result of rows of
    /// (column, value) pairs, packed as CSR); stdout as JSON without it.
    #[arg(long, short, value_parser = args::output_file)]
    output: Option<String>,
    /// The matrix shape ROWSxCOLS of a .mtx / .npz / .tns result (default: its rows, and its largest column + 1).
    #[arg(long = "output-dims", value_name = "ROWSxCOLS", value_parser = args::dims2)]
    output_dims: Option<(u64, u64)>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// Flags that contradict each other, found before any work.
fn check_usage(a: &Args) -> Result<(), Failure> {
    let matrix_output = a.output.as_deref().is_some_and(|o| [".mtx", ".npz", ".tns"].iter().any(|e| o.ends_with(e)));
    if a.output_dims.is_some() && !matrix_output {
        return Err(Failure::usage(
            "--output-dims",
            "--output-dims gives the shape of a .mtx, .npz or .tns --output; there is none",
        ));
    }
    if a.threads.is_some() && a.backend != Backend::Cpu {
        let backend = format!("{:?}", a.backend).to_lowercase();
        super::warn(format!("--threads applies to --backend cpu; the {backend} backend ignores it"));
    }
    for (given, flag) in
        [(a.accumulators.is_some(), "--accumulators"), (a.chunks_per_thread.is_some(), "--chunks-per-thread")]
    {
        if given && a.backend != Backend::Cpu {
            let backend = format!("{:?}", a.backend).to_lowercase();
            super::warn(format!("{flag} applies to --backend cpu; the {backend} backend ignores it"));
        }
    }
    if a.device.is_some() && a.backend != Backend::Opencl {
        super::warn("--device applies to --backend opencl; it is ignored here");
    }
    for (name, enc) in &a.encodings {
        if super::auto::is_auto(enc) {
            // The inspector reads the operand's matrix file.
            if !a.matrices.iter().any(|(k, _)| k.trim() == name.trim()) {
                return Err(Failure::usage(
                    "--encoding",
                    format!(
                        "--encoding {name}=auto chooses from the matrix file of `{name}`: give it with --matrix {name}=FILE"
                    ),
                ));
            }
            continue;
        }
        super::type_cmd::check_encoding_arg("--encoding", enc, a.defs.as_deref())?;
    }
    Ok(())
}

/// Whether `backend` can compile `kernel`, or why not (its lowering's or
/// code generator's message): `--encoding NAME=auto` skips a format the
/// backend refuses. The interpreter runs every kernel. `name` is the name
/// the run compiles the kernel under, so that the CPU code compiled here is
/// what the run finds in the cache, not compiled twice.
fn compiles_on(backend: Backend, name: &str, kernel: &Kernel) -> Result<(), String> {
    let refused =
        |d: heddle_ir::Diagnostic| format!("the {} backend: {}", format!("{backend:?}").to_lowercase(), d.message);
    match backend {
        Backend::Interp => Ok(()),
        Backend::Cpu => heddle::cpu::lower(kernel, name)
            .and_then(|mut p| {
                // As the run compiles it, so that the run finds this code in the cache.
                super::sell::trust_columns(kernel, &mut p);
                heddle::cpu::compile(&p)
            })
            .map_err(refused),
        Backend::Opencl => heddle::opencl::compile(kernel, name).map(|_| ()).map_err(refused),
    }
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    check_usage(a)?;
    use heddle_runtime::profile::phase as prof;
    let front = prof(|| "parse and check".into());
    let (file, program, kernel) = load(&a.file)?;
    drop(front);
    let mut choices = Vec::new();
    // Every operand's format, given or chosen (SELL operands are bound below).
    let mut all_specs = Vec::new();
    // The matrix files `auto` read, stored below in the chosen encodings (not read again).
    let mut auto_contents = Vec::new();
    let (file, kernel) = if a.encodings.is_empty() {
        (file, kernel)
    } else {
        // The given encodings first, then each `auto` chosen with them (the
        // last choice's sparse kernel holds every operand's).
        let mut specs = a
            .encodings
            .iter()
            .filter(|(_, enc)| !super::auto::is_auto(enc))
            .map(|s| super::sparsify::parse_spec(s, a.defs.as_deref(), &program))
            .collect::<Result<Vec<_>, _>>()?;
        let mut last = None;
        for (name, _) in a.encodings.iter().filter(|(_, enc)| super::auto::is_auto(enc)) {
            let name = name.trim();
            let elem = super::auto::matrix_elem(&program, name)?;
            let path = a.matrices.iter().find(|(k, _)| k.trim() == name).map(|(_, p)| p.as_str()).unwrap_or_default();
            let _p = prof(|| format!("inspect --matrix {name}"));
            let contents = super::auto::read_matrix(path, elem, &format!("--matrix {name}="))?;
            let kernel_name = super::compile::kernel_name(&file);
            let backend = |k: &Kernel| compiles_on(a.backend, &kernel_name, k);
            let picked = super::auto::sparsify_auto(
                &file,
                &program,
                name,
                &super::auto::entries_of(&contents),
                &specs,
                &backend,
            )?;
            auto_contents.push((name.to_string(), contents));
            // Not eprintln!: a closed stderr must not panic.
            let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{}\n", picked.choice.line()));
            specs.push(picked.spec);
            choices.push(picked.choice);
            last = Some((picked.file, picked.kernel));
        }
        all_specs.clone_from(&specs);
        match last {
            Some(sparse) => sparse,
            None => {
                let sparse = super::sparsify::front_door(&file, &program, &specs)?;
                (sparse.file, sparse.kernel)
            }
        }
    };
    let mut nats = a.params.clone();
    let mut inputs = Vec::new();
    for (k, path) in &a.inputs {
        let _p = prof(|| format!("read --input {k}"));
        let loaded =
            read_input_for(Path::new(path), k).map_err(|e| InputError { parameter: Some(k.clone()), message: e })?;
        inputs.push((k.to_string(), loaded));
    }
    let matrices = [
        (&a.csr, Storage::Csr),
        (&a.lil, Storage::Lil),
        (&a.csr_packed, Storage::CsrPacked),
        (&a.dense, Storage::Dense),
    ];
    for (specs, storage) in matrices {
        for spec in specs {
            inputs.extend(matrix::inputs(storage, spec)?);
        }
    }
    let sells = super::sparsify::sell_operands(&all_specs);
    // How a SELL kernel's result becomes y: its padding rows dropped, and
    // with σ > 1 its rows put back in order (the front door took only a
    // kernel whose result is that operand's row map).
    let mut restore: Option<super::sell::Restore> = None;
    for (k, path) in &a.matrices {
        let _p = prof(|| format!("read --matrix {k}"));
        let read = auto_contents.iter().position(|(n, _)| n == k.trim()).map(|at| auto_contents.swap_remove(at).1);
        if let Some((_, spec)) = sells.iter().find(|(o, _)| o == k.trim()) {
            let mut packed = match &read {
                Some(contents) => super::sell::pack(&kernel, k.trim(), path, spec, &super::auto::entries_of(contents))?,
                None => {
                    let (coo, _) = heddle_runtime::sparse::file::read_coo(Path::new(path))
                        // The reader's errors name the file.
                        .map_err(|e| InputError { parameter: Some(k.clone()), message: e.to_string() })?;
                    super::sell::pack(&kernel, k.trim(), path, spec, &coo)?
                }
            };
            super::sell::check_literal_sizes(&program, k.trim(), &packed)?;
            if spec.sigma > 1 || sells.len() == 1 {
                restore = Some(super::sell::Restore::of(&mut packed));
            }
            nats.extend(packed.nats);
            inputs.extend(packed.inputs);
            continue;
        }
        let (dims, buffers) = match read {
            Some(contents) => {
                let (enc, _) = heddle_runtime::io::bind::tensor_param(&kernel, k)?;
                let t = contents
                    .into_encoding(enc)
                    .map_err(|e| InputError { parameter: Some(k.clone()), message: format!("{path}: {e}") })?;
                heddle_runtime::io::bind::stored_tensor_inputs(&kernel, k, t)?
            }
            None => heddle_runtime::io::bind::tensor_inputs(&kernel, k, Path::new(path))?,
        };
        nats.extend(dims);
        inputs.extend(buffers);
    }
    // The compiled backends take packed inputs as their flat buffers.
    let binding = prof(|| "bind inputs".into());
    let env = match a.backend {
        Backend::Interp => bind_inputs(&kernel, &nats, inputs)?,
        Backend::Cpu | Backend::Opencl => bind_inputs_flat(&kernel, &nats, inputs)?,
    };
    drop(binding);
    let reps = a.reps.map_or(0, |n| n as usize);
    let running = prof(|| "run (compile, lay out, kernel, result)".into());
    let start = Instant::now();
    let (value, compile_seconds, mut times) = match a.backend {
        Backend::Interp => {
            let value = heddle_runtime::interp::run_kernel(&kernel, &env)
                .map_err(|d| Failure::Source(file.clone(), vec![d.or_kind(heddle_ir::ErrorKind::Runtime)]))?;
            let mut times = Vec::with_capacity(reps);
            for _ in 0..reps {
                let t = Instant::now();
                heddle_runtime::interp::run_kernel(&kernel, &env)
                    .map_err(|d| Failure::Source(file.clone(), vec![d.or_kind(heddle_ir::ErrorKind::Runtime)]))?;
                times.push(t.elapsed().as_secs_f64());
            }
            (value, 0.0, times)
        }
        Backend::Opencl => run_opencl(&file, &kernel, &env, a.device, reps)?,
        Backend::Cpu => {
            let located = |d| Failure::Source(file.clone(), vec![d]);
            let threads = match a.threads {
                Some(n) => n as usize,
                None => heddle_runtime::cpu::threads_from_env()
                    .map_err(Failure::Input)?
                    .unwrap_or_else(heddle_runtime::cpu::default_threads),
            };
            let threshold = heddle_runtime::cpu::thresholds_from_env().map_err(Failure::Input)?;
            let mut tuning = heddle_runtime::cpu::Tuning::default();
            if let Some(n) = a.accumulators {
                tuning.accumulators = n;
            }
            if let Some(n) = a.chunks_per_thread {
                tuning.chunks_per_thread = n as usize;
            }
            let threads = heddle_runtime::cpu::Parallelism { threads, threshold, tuning };
            let compiling = Instant::now();
            let mut program = heddle::cpu::lower(&kernel, &super::compile::kernel_name(&file)).map_err(located)?;
            super::sell::trust_columns(&kernel, &mut program);
            heddle::cpu::compile(&program).map_err(located)?;
            let compile_seconds = compiling.elapsed().as_secs_f64();
            let (value, times) = heddle::cpu::run_timed(&kernel, &program, &env, threads, reps).map_err(located)?;
            (value, compile_seconds, times)
        }
    };
    // A SELL kernel's result made y, of the matrix's rows in their order
    // (the type says so too); with σ > 1, putting them back in order is
    // part of each rep's time.
    let (value, ty) = match &restore {
        Some(r) => {
            // The pass runs on the host's threads: the CPU backend's, which
            // the kernel ran on, or as many for another backend.
            let threads =
                a.threads.map(|n| n as usize).or_else(|| heddle_runtime::cpu::threads_from_env().ok().flatten());
            r.time(&value, &kernel.body.ty, &mut times, threads.unwrap_or_else(heddle_runtime::cpu::default_threads));
            r.apply(value, &kernel.body.ty)?
        }
        None => (value, kernel.body.ty.clone()),
    };
    let elapsed = start.elapsed();
    drop(running);
    let _writing = prof(|| "write the result".into());
    let ty = &ty;
    // The JSON form only where it is printed or written (building it for a
    // million elements costs more than the kernel).
    let result_json = || write::to_json(&value, ty);
    if let (Some(out), heddle_runtime::value::Value::Tensor(t)) = (&a.output, &value) {
        // A stored tensor: the writers `heddle convert` uses.
        if a.output_dims.is_some() {
            return Err(Failure::usage(
                "--output-dims",
                "--output-dims sizes a result of rows of pairs; a stored tensor has its own shape",
            ));
        }
        let path = Path::new(out);
        match path.extension().and_then(|e| e.to_str()) {
            Some("json" | "mtx" | "tns" | "npz") => {
                heddle_runtime::sparse::write::write(t, path).map_err(|e| match e {
                    heddle_runtime::sparse::SparseError::Io { .. } => Failure::Io(format!("--output {out}: {e}")),
                    _ => Failure::Input(format!("--output {out}: {e}")),
                })?
            }
            _ => {
                return Err(Failure::Input(format!(
                    "--output {out}: a stored tensor is written as .json (its storage), .mtx, .tns or .npz"
                )));
            }
        }
    } else if let Some(out) = &a.output {
        let path = Path::new(out);
        match path.extension().and_then(|e| e.to_str()) {
            Some("npy") => write::write_npy(path, &value, ty).map_err(Failure::Input)?,
            Some("json") => std::fs::write(path, serde_json::to_string(&result_json()).unwrap_or_default())
                .map_err(|e| Failure::Io(format!("cannot write {out}: {e}")))?,
            Some("mtx" | "npz" | "tns") => {
                let dims = a.output_dims;
                let (coo, elem) =
                    write::sparse_rows(&value, ty, dims).map_err(|m| Failure::Input(format!("--output {out}: {m}")))?;
                let fail = |e: heddle_runtime::sparse::SparseError| match e {
                    heddle_runtime::sparse::SparseError::Io { .. } => Failure::Io(e.to_string()),
                    e => Failure::Input(format!("--output {out}: {e}")),
                };
                let csr = heddle_runtime::sparse::build::pack(&coo, &heddle_runtime::sparse::csr::csr_encoding(), elem)
                    .map_err(fail)?;
                heddle_runtime::sparse::write::write(&csr, path).map_err(fail)?;
            }
            _ => {
                return Err(Failure::usage(
                    "--output",
                    format!("--output {out}: expected a .npy, .json, .mtx, .npz or .tns file name"),
                ));
            }
        }
    }
    let result_json = if a.output.is_some() { serde_json::Value::Null } else { result_json() };
    let text = if a.output.is_some() { String::new() } else { serde_json::to_string(&result_json).unwrap_or_default() };
    let mut json = serde_json::json!({
        "ok": true,
        "backend": format!("{:?}", a.backend).to_lowercase(),
        "type": ty.to_string(),
        "result": result_json,
        "output": a.output,
        "seconds": elapsed.as_secs_f64(),
    });
    if !choices.is_empty() {
        let auto: serde_json::Map<String, serde_json::Value> =
            choices.iter().map(|c| (c.operand.clone(), serde_json::to_value(c).unwrap_or_default())).collect();
        json["auto"] = serde_json::Value::Object(auto);
    }
    if let Some(stats) = KernelTimes::of(&times) {
        json["compile_seconds"] = serde_json::json!(compile_seconds);
        json["kernel_seconds"] = serde_json::json!({
            "median": stats.median,
            "min": stats.min,
            "max": stats.max,
            "p10": stats.p10,
            "p90": stats.p90,
            "reps": times.len(),
        });
        if !a.json {
            // Not eprintln!: a closed stderr must not panic.
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("{}\n", stats.line(times.len(), compile_seconds)),
            );
        }
    }
    Ok(Output { text, json })
}

/// The summary of `--reps` timings.
#[derive(Debug, PartialEq)]
struct KernelTimes {
    median: f64,
    min: f64,
    max: f64,
    /// The 10th and 90th percentiles, nearest-rank: of `n` times sorted, the
    /// `⌈p·n/100⌉`-th (1-based), always one of the times. They bound the
    /// middle 80 % of the runs, a spread that one slow run (a burst of load)
    /// does not move as it moves `max`.
    p10: f64,
    p90: f64,
}

impl KernelTimes {
    /// The median (the mean of the middle two for an even count), min, max
    /// and the nearest-rank p10 and p90; `None` without times.
    fn of(times: &[f64]) -> Option<KernelTimes> {
        let mut t = times.to_vec();
        t.sort_by(f64::total_cmp);
        let n = t.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => t[n / 2],
            _ => (t[n / 2 - 1] + t[n / 2]) / 2.0,
        };
        // Rank ⌈p·n/100⌉ in 1..=n (n ≥ 1 here), as an index.
        let nearest_rank = |p: usize| t[(p * n).div_ceil(100).clamp(1, n) - 1];
        Some(KernelTimes { median, min: t[0], max: t[n - 1], p10: nearest_rank(10), p90: nearest_rank(90) })
    }

    /// The one stderr line of `--reps` without `--json`.
    fn line(&self, reps: usize, compile_seconds: f64) -> String {
        let ms = |s: f64| format!("{:.4} ms", s * 1e3);
        format!(
            "kernel: median {} (min {}, p10 {}, p90 {}, max {}) over {reps} runs; compile {}",
            ms(self.median),
            ms(self.min),
            ms(self.p10),
            ms(self.p90),
            ms(self.max),
            ms(compile_seconds)
        )
    }
}

/// Runs a kernel on the OpenCL backend, then `reps` more launches: the
/// result, the seconds from the checked kernel to a built OpenCL program,
/// and each repetition's kernel time (OpenCL profiling events: the kernel
/// alone, no transfers).
fn run_opencl(
    file: &SourceFile,
    kernel: &Kernel,
    env: &Env,
    device: Option<usize>,
    reps: usize,
) -> Result<(Value, f64, Vec<f64>), Failure> {
    let cl = heddle_runtime::opencl::OpenCl::new(device).map_err(|d| Failure::Device(d.message))?;
    let located = |d| Failure::Source(SourceFile::new(file.name.clone(), file.text.clone()), vec![d]);
    let start = Instant::now();
    let compiled = heddle::opencl::compile(kernel, &super::compile::kernel_name(file)).map_err(located)?;
    // Both variants of each kernel: which one runs depends on the inputs.
    let trusted = compiled.trusted_counts.iter().flatten().chain(compiled.trusted.as_ref());
    for k in compiled.counts.iter().chain([&compiled.kernel]).chain(trusted) {
        cl.build(k).map_err(located)?;
    }
    let compile_seconds = start.elapsed().as_secs_f64();
    let (value, timing) = heddle::opencl::run(&cl, kernel, &compiled, env, reps + 1).map_err(located)?;
    Ok((value, compile_seconds, timing.kernel_seconds.into_iter().skip(1).collect()))
}

#[cfg(test)]
mod tests {
    use super::KernelTimes;

    #[test]
    fn percentiles_are_nearest_rank() {
        assert_eq!(KernelTimes::of(&[]), None);
        let one = KernelTimes::of(&[2.0]).unwrap();
        assert_eq!(one, KernelTimes { median: 2.0, min: 2.0, max: 2.0, p10: 2.0, p90: 2.0 });
        // 1..=20 shuffled: p10 is the 2nd, p90 the 18th.
        let t: Vec<f64> = (1..=20).map(|k| f64::from((k * 7) % 20 + 1)).collect();
        let s = KernelTimes::of(&t).unwrap();
        assert_eq!((s.min, s.p10, s.median, s.p90, s.max), (1.0, 2.0, 10.5, 18.0, 20.0));
        // 5 times: ⌈0.5⌉ = 1st and ⌈4.5⌉ = 5th.
        let s = KernelTimes::of(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.p10, s.median, s.p90), (1.0, 3.0, 5.0));
        // 11 times: ⌈1.1⌉ = 2nd and ⌈9.9⌉ = 10th.
        let t: Vec<f64> = (0..11).map(f64::from).collect();
        let s = KernelTimes::of(&t).unwrap();
        assert_eq!((s.p10, s.p90), (1.0, 9.0));
    }
}

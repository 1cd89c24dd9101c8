//! `heddle run FILE`: execute the kernel.

use super::matrix::{self, Storage};
use super::{load, Failure, Output};
use heddle_runtime::io::{bind_inputs, read_input, write};
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
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// An input: NAME=PATH to a .npy or .json file.
    #[arg(long = "input", value_name = "NAME=PATH")]
    inputs: Vec<String>,
    /// A tensor parameter: NAME=FILE (.mtx, .tns, or .json nested lists), stored in the parameter's encoding.
    #[arg(long = "matrix", value_name = "NAME=FILE")]
    matrices: Vec<String>,
    /// Store a dense-typed operand sparsely: NAME=ENCODING (the kernel goes through `heddle sparsify` first).
    #[arg(long = "encoding", value_name = "NAME=ENCODING")]
    encodings: Vec<String>,
    /// A file with `#NAME = #sparse_tensor.encoding<{...}>` lines, for --encoding NAME=#ENC.
    #[arg(long)]
    defs: Option<String>,
    /// A Matrix Market file as CSR buffers: OFFSETS,COL_INDICES,VALUES=FILE.mtx.
    #[arg(long = "csr", value_name = "O,C,V=FILE")]
    csr: Vec<String>,
    /// A Matrix Market file as LIL buffers: ROW_LENGTH,COL_INDICES,VALUES=FILE.mtx.
    #[arg(long = "lil", value_name = "L,C,V=FILE")]
    lil: Vec<String>,
    /// A Matrix Market file as packed CSR: OFFSETS,ENTRIES=FILE.mtx, entries (column, value).
    #[arg(long = "csr-packed", value_name = "O,E=FILE")]
    csr_packed: Vec<String>,
    /// A Matrix Market file as a dense row-major matrix: MATRIX=FILE.mtx.
    #[arg(long = "dense", value_name = "M=FILE")]
    dense: Vec<String>,
    /// Threads for --backend cpu (default: HEDDLE_THREADS, else every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// Where to write the result (.npy or .json; .mtx for a result of rows of (column, value)
    /// pairs, such as a sparse product's CSR rows); stdout as JSON without it.
    #[arg(long, short)]
    output: Option<String>,
    /// The matrix shape ROWSxCOLS of a .mtx result (default: its rows, and its largest column + 1).
    #[arg(long = "output-dims", value_name = "ROWSxCOLS")]
    output_dims: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

fn split_assignment<'a>(flag: &str, s: &'a str) -> Result<(&'a str, &'a str), Failure> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| Failure::Input(format!("--{flag} {s}: expected NAME=VALUE")))
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let (file, program, kernel) = load(&a.file)?;
    let (file, kernel) = if a.encodings.is_empty() {
        (file, kernel)
    } else {
        let specs = a.encodings.iter().map(|s| super::sparsify::parse_spec(s, a.defs.as_deref())).collect::<Result<Vec<_>, _>>()?;
        let sparse = super::sparsify::front_door(&file, &program, &specs)?;
        (sparse.file, sparse.kernel)
    };
    let mut nats = Vec::new();
    for p in &a.params {
        let (k, v) = split_assignment("param", p)?;
        let v: i64 = v
            .parse()
            .map_err(|_| Failure::Input(format!("--param {p}: `{v}` is not a natural number")))?;
        nats.push((k.to_string(), v));
    }
    let mut inputs = Vec::new();
    for i in &a.inputs {
        let (k, path) = split_assignment("input", i)?;
        let loaded = read_input(Path::new(path)).map_err(|e| Failure::Input(format!("parameter `{k}`: {e}")))?;
        inputs.push((k.to_string(), loaded));
    }
    let matrices = [(&a.csr, Storage::Csr), (&a.lil, Storage::Lil), (&a.csr_packed, Storage::CsrPacked), (&a.dense, Storage::Dense)];
    for (specs, storage) in matrices {
        for spec in specs {
            inputs.extend(matrix::inputs(storage, spec)?);
        }
    }
    for m in &a.matrices {
        let (k, path) = split_assignment("matrix", m)?;
        let (dims, buffers) = heddle_runtime::io::bind::tensor_inputs(&kernel, k, Path::new(path)).map_err(|e| Failure::Input(e.to_string()))?;
        nats.extend(dims);
        inputs.extend(buffers);
    }
    let env = bind_inputs(&kernel, &nats, inputs).map_err(|e| Failure::Input(e.to_string()))?;
    let start = Instant::now();
    let value = match a.backend {
        Backend::Interp => heddle_runtime::interp::run_kernel(&kernel, &env).map_err(|d| Failure::Source(file, vec![d]))?,
        Backend::Opencl => super::tune::run_opencl(&file, &kernel, &env, a.device)?,
        Backend::Cpu => {
            let located = |d| Failure::Source(file.clone(), vec![d]);
            let program = heddle::cpu::lower(&kernel, &super::compile::kernel_name(&file)).map_err(located)?;
            let threads = a.threads.map_or_else(heddle_runtime::cpu::default_threads, |n| n as usize);
            heddle::cpu::run(&kernel, &program, &env, threads).map_err(located)?
        }
    };
    let elapsed = start.elapsed();
    let ty = &kernel.body.ty;
    let result_json = write::to_json(&value, ty);
    if let Some(out) = &a.output {
        let path = Path::new(out);
        match path.extension().and_then(|e| e.to_str()) {
            Some("npy") => write::write_npy(path, &value, ty).map_err(Failure::Input)?,
            Some("json") => std::fs::write(path, serde_json::to_string(&result_json).unwrap_or_default())
                .map_err(|e| Failure::Input(format!("cannot write {out}: {e}")))?,
            Some("mtx") => {
                let dims = match &a.output_dims {
                    None => None,
                    Some(d) => {
                        let parsed = d.split_once('x').and_then(|(r, c)| Some((r.trim().parse::<u64>().ok()?, c.trim().parse::<u64>().ok()?)));
                        Some(parsed.ok_or_else(|| Failure::Input(format!("--output-dims {d}: expected ROWSxCOLS, e.g. 1024x1024")))?)
                    }
                };
                let (coo, elem) = write::sparse_rows(&value, ty, dims).map_err(|m| Failure::Input(format!("--output {out}: {m}")))?;
                heddle_runtime::sparse::mtx::write_mtx(&coo, elem, path).map_err(|e| Failure::Input(format!("--output {out}: {e}")))?;
            }
            _ => return Err(Failure::Input(format!("--output {out}: expected a .npy, .json or .mtx file name"))),
        }
    } else if a.output_dims.is_some() {
        return Err(Failure::Input("--output-dims describes a .mtx --output; there is none".into()));
    }
    let text = if a.output.is_some() { String::new() } else { serde_json::to_string(&result_json).unwrap_or_default() };
    let json = serde_json::json!({
        "ok": true,
        "backend": format!("{:?}", a.backend).to_lowercase(),
        "type": ty.to_string(),
        "result": if a.output.is_some() { serde_json::Value::Null } else { result_json },
        "output": a.output,
        "seconds": elapsed.as_secs_f64(),
    });
    Ok(Output { text, json })
}

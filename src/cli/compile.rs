//! `heddle compile FILE --target loops|cpu|opencl`: show what a kernel compiles to.
//!
//! `loops` prints the lowered loop program (the loops and the final index
//! formulas, Σ already replaced by closed forms or host prefix sums);
//! `cpu` prints the Cranelift IR the CPU backend JIT-compiles. Each target
//! is one arm of [`emit`], so a backend adds its own.

use super::{load, Failure, Output};
use heddle::source::SourceFile;
use std::path::Path;

/// What to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// The lowered loop program.
    Loops,
    /// Cranelift IR for the CPU backend.
    Cpu,
    /// OpenCL C and the launch configuration (global/local sizes over the naturals).
    Opencl,
}

#[derive(clap::Args)]
pub struct Args {
    /// The source file.
    file: String,
    /// What to compile to.
    #[arg(long, value_enum, default_value = "loops")]
    target: Target,
    /// A natural parameter: NAME=VALUE. Naturals are kernel arguments, so the
    /// code does not depend on them; accepted for symmetry with `run`.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = super::args::checked(super::args::nat_binding))]
    params: Vec<String>,
    /// Write the text here instead of stdout.
    #[arg(long, short)]
    output: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// The kernel's name: the file's stem.
pub fn kernel_name(file: &SourceFile) -> String {
    Path::new(&file.name).file_stem().and_then(|s| s.to_str()).unwrap_or("kernel").to_string()
}

/// The text of `target` for a checked kernel.
fn emit(target: Target, file: &SourceFile, kernel: &heddle_typeck::Kernel) -> Result<String, Failure> {
    let located = |d| Failure::Source(file.clone(), vec![d]);
    let program = heddle::cpu::lower(kernel, &kernel_name(file)).map_err(located)?;
    let one = |p: &heddle_ir::loops::LoopProgram| match target {
        Target::Loops => Ok(p.to_string()),
        Target::Cpu => heddle::cpu::clif(p).map_err(located),
        Target::Opencl => heddle_codegen_opencl::compile(p).map(|k| k.to_string()).map_err(located),
    };
    if target == Target::Loops {
        // The loop program's text shows its counting phases itself.
        return one(&program);
    }
    // A result of counted lengths: each counting phase's kernel first, in the order they run.
    let mut text = String::new();
    for phase in &program.counts {
        text.push_str(&format!("// counting phase: fills `{}`, read by the kernel after it\n", phase.name));
        text.push_str(&one(&phase.program)?);
        text.push('\n');
    }
    text.push_str(&one(&program)?);
    Ok(text)
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    for p in &a.params {
        let ok = p.split_once('=').is_some_and(|(k, v)| !k.is_empty() && v.parse::<i64>().is_ok_and(|v| v >= 0));
        if !ok {
            return Err(Failure::Input(format!("--param {p}: expected NAME=VALUE with a natural number")));
        }
    }
    let (file, _, kernel) = load(&a.file)?;
    let text = emit(a.target, &file, &kernel)?;
    if let Some(out) = &a.output {
        std::fs::write(out, &text).map_err(|e| Failure::Input(format!("cannot write {out}: {e}")))?;
    }
    let json = serde_json::json!({
        "ok": true,
        "target": format!("{:?}", a.target).to_lowercase(),
        "text": if a.output.is_some() { serde_json::Value::Null } else { serde_json::Value::String(text.clone()) },
        "output": a.output,
    });
    Ok(Output { text: if a.output.is_some() { String::new() } else { text }, json })
}

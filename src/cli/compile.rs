//! `heddle compile FILE --target loops|cpu|opencl`: show what a kernel compiles to.
//!
//! `loops` prints the lowered loop program (the loops and the final index
//! formulas, Σ already replaced by closed forms or host prefix sums);
//! `cpu` prints the Cranelift IR the CPU backend JIT-compiles, `asm` the
//! machine code it becomes (after register allocation); `opencl` the
//! OpenCL C kernels with, as comments, how to launch them. Each target is
//! one arm of [`emit`], so a backend adds its own.
//!
//! With `--json`, `--target opencl` also describes every kernel for a host
//! program that launches it itself (docs/opencl-host.md, schema in
//! docs/schemas/heddle.compile.json): its arguments in order with role,
//! C declaration, record layout and size formula, the NDRange formulas, the
//! values of all of these for the `--param`s given, and the error codes.

use super::{Failure, Output, load};
use heddle::source::SourceFile;
use std::path::Path;

/// What to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// The lowered loop program.
    Loops,
    /// Cranelift IR for the CPU backend.
    Cpu,
    /// The CPU backend's machine code after register allocation (Cranelift's listing; a kernel
    /// with input ranges has two: the code for inputs validated once, without the bounds checks the
    /// ranges imply, and the checked code for other inputs).
    Asm,
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
    /// code does not depend on them; with `--json`, sizes are evaluated for them.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = super::args::checked(super::args::nat_binding))]
    params: Vec<String>,
    /// Write the text here instead of stdout.
    #[arg(long, short)]
    output: Option<String>,
    /// Leave out the checks that valid tensor coordinates make unnecessary
    /// (a column below the matrix's column count): the code then assumes
    /// every input lies in the ranges it lists (`// assumes:`; `assumes` in
    /// `--json`), which a host program must validate. `heddle run` picks this
    /// code by itself for inputs it has validated.
    #[arg(long)]
    trust_ranges: bool,
    /// Partial accumulators of a `reduce` loop in `--target cpu|asm` (1 to 16; default 4), as
    /// `heddle run --accumulators` compiles it: 1 shows the one-accumulator loop.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=heddle_runtime::cpu::MAX_ACCUMULATORS as i64))]
    accumulators: Option<u32>,
    /// In `--target cpu|asm`, the code `heddle run` uses for a launch whose inputs take more than
    /// 4 MiB: short reduction loops run as loops, not as straight copies of their body. Without it,
    /// the code for smaller inputs; a comment line says which is shown where the two differ.
    #[arg(long)]
    large_inputs: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// `prog` without the checks its ranges imply, when `trust` (and it has some).
fn trusting(prog: heddle_ir::loops::LoopProgram, trust: bool) -> heddle_ir::loops::LoopProgram {
    match heddle_ir::loops::trusting_ranges(&prog) {
        Some((t, _)) if trust => t,
        _ => prog,
    }
}

/// The ranges a trusted program assumes of its inputs, as text (`A_crd1 < A_dim1`).
fn assumptions(prog: &heddle_ir::loops::LoopProgram) -> Vec<String> {
    prog.ranges.iter().map(ToString::to_string).collect()
}

/// The kernel's name: the file's stem.
pub fn kernel_name(file: &SourceFile) -> String {
    Path::new(&file.name).file_stem().and_then(|s| s.to_str()).unwrap_or("kernel").to_string()
}

/// The comment line over CPU code whose short reduction loops `heddle run`
/// compiles by the size of the launch's inputs: which variant `options` is.
fn variant_note(options: &heddle_codegen_cpu::Options) -> String {
    let limit = heddle_runtime::cpu::STRAIGHT_COPIES_MAX_BYTES;
    let mib = limit >> 20;
    if options.copies_below == 0 {
        format!(
            "; short reduction loops as loops: the code heddle run uses for a launch whose inputs take over {mib} MiB ({limit} bytes); without --large-inputs, the code for smaller inputs"
        )
    } else {
        format!(
            "; short reduction loops (under {} iterations) as straight copies: the code heddle run uses for a launch whose inputs take at most {mib} MiB ({limit} bytes); --large-inputs shows the code for larger inputs",
            options.copies_below
        )
    }
}

/// The text of `target` for a checked kernel.
fn emit(
    target: Target,
    file: &SourceFile,
    kernel: &heddle_typeck::Kernel,
    trust: bool,
    options: &heddle_codegen_cpu::Options,
) -> Result<String, Failure> {
    let located = |d| Failure::Source(file.clone(), vec![d]);
    // OpenCL C is generated from the program lowered for it (its `i64`
    // arithmetic wraps in `ulong`: `heddle::opencl::lower`).
    let lowered = match target {
        Target::Opencl => heddle::opencl::lower(kernel, &kernel_name(file)),
        _ => heddle::cpu::lower(kernel, &kernel_name(file)),
    };
    let mut program = trusting(lowered.map_err(located)?, trust);
    for phase in &mut program.counts {
        *phase.program = trusting((*phase.program).clone(), trust);
    }
    let native = |p: &heddle_ir::loops::LoopProgram, options: &heddle_codegen_cpu::Options| match target {
        Target::Asm => heddle::cpu::asm_with(p, options).map_err(located),
        _ => heddle::cpu::clif_with(p, options).map_err(located),
    };
    let one = |p: &heddle_ir::loops::LoopProgram| {
        let text = match target {
            Target::Loops => Ok(p.to_string()),
            Target::Cpu | Target::Asm => {
                let text = native(p, options)?;
                // `heddle run` compiles one of two variants by the size of the
                // launch's inputs (`heddle_runtime::cpu::STRAIGHT_COPIES_MAX_BYTES`):
                // where they differ, say which this is and when run uses the other.
                let other = heddle_codegen_cpu::Options {
                    copies_below: if options.copies_below == 0 { heddle_codegen_cpu::COPIES_BELOW } else { 0 },
                    ..*options
                };
                Ok(if native(p, &other)? == text { text } else { format!("{}\n{text}", variant_note(options)) })
            }
            Target::Opencl => heddle_codegen_opencl::compile(p).map(|k| k.to_string()).map_err(located),
        }?;
        let comment = if target == Target::Opencl { "//" } else { ";" };
        Ok::<_, Failure>(match assumptions(p) {
            a if trust && !a.is_empty() && target != Target::Loops => {
                format!("{comment} assumes: {} (checked by no code here: validate the inputs)\n{text}", a.join(", "))
            }
            _ => text,
        })
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
    let params =
        a.params.iter().map(|p| super::args::nat_binding(p).map_err(Failure::Input)).collect::<Result<Vec<_>, _>>()?;
    let (file, _, kernel) = load(&a.file)?;
    for (k, _) in &params {
        if !kernel.params.iter().any(|p| matches!(p, heddle_typeck::KernelParam::Nat(n) if n.as_str() == k)) {
            return Err(Failure::Input(format!("--param {k}: the kernel has no natural of this name")));
        }
    }
    let mut options = heddle_codegen_cpu::Options::default();
    if let Some(n) = a.accumulators {
        if !matches!(a.target, Target::Cpu | Target::Asm) {
            let target = format!("{:?}", a.target).to_lowercase();
            super::warn(format!("--accumulators applies to --target cpu and asm; --target {target} ignores it"));
        }
        options.accumulators = n;
    }
    if a.large_inputs {
        if !matches!(a.target, Target::Cpu | Target::Asm) {
            let target = format!("{:?}", a.target).to_lowercase();
            super::warn(format!("--large-inputs applies to --target cpu and asm; --target {target} ignores it"));
        }
        options.copies_below = 0;
    }
    let text = emit(a.target, &file, &kernel, a.trust_ranges, &options)?;
    if let Some(out) = &a.output {
        std::fs::write(out, &text).map_err(|e| Failure::Input(format!("cannot write {out}: {e}")))?;
    }
    let mut json = serde_json::json!({
        "ok": true,
        "target": format!("{:?}", a.target).to_lowercase(),
        "text": if a.output.is_some() { serde_json::Value::Null } else { serde_json::Value::String(text.clone()) },
        "output": a.output,
    });
    if a.json && a.target == Target::Opencl {
        json["params"] =
            serde_json::Value::Object(params.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect());
        json["kernels"] = serde_json::Value::Array(describe(&file, &kernel, &params, a.trust_ranges)?);
    }
    Ok(Output { text: if a.output.is_some() { String::new() } else { text }, json })
}

/// Every OpenCL kernel of a checked kernel in launch order (counting phases
/// first), described for a host program.
fn describe(
    file: &SourceFile,
    kernel: &heddle_typeck::Kernel,
    params: &[(String, i64)],
    trust: bool,
) -> Result<Vec<serde_json::Value>, Failure> {
    use serde_json::json;
    let located = |d| Failure::Source(file.clone(), vec![d]);
    let compiled = heddle::opencl::compile(kernel, &kernel_name(file)).map_err(located)?;
    let nat = |n: &heddle_ir::Name| params.iter().find(|(k, _)| k == n.as_str()).map(|(_, v)| *v);
    let one = |k: &heddle_codegen_opencl::Kernel, phase: serde_json::Value, assumes: Vec<String>| {
        let bytes = k.interface.bytes(&nat, &k.launch);
        let args: Vec<serde_json::Value> = k
            .interface
            .args
            .iter()
            .zip(bytes)
            .map(|(a, b)| {
                let mut v = serde_json::to_value(a).unwrap_or_default();
                if a.record_bytes.is_some() {
                    v["bytes"] = json!(b);
                }
                if a.role == heddle_codegen_opencl::Role::Natural {
                    v["value"] = json!(nat(&heddle_ir::Name::from(a.name.as_str())));
                }
                v
            })
            .collect();
        let sizes = k.launch.sizes(&nat).ok();
        let dims: Vec<serde_json::Value> = k
            .launch
            .dims
            .iter()
            .enumerate()
            .map(|(d, dim)| {
                let (global, local) = match dim {
                    heddle_codegen_opencl::Dim::Global { items } => (heddle_codegen_opencl::launch::text(items), None),
                    heddle_codegen_opencl::Dim::Grouped { groups, local } => {
                        let l = heddle_codegen_opencl::launch::text(local);
                        let g = heddle_codegen_opencl::launch::text(groups);
                        (if g == "1" { l.clone() } else { format!("({g}) * ({l})") }, Some(l))
                    }
                };
                json!({
                    "global": global,
                    "local": local,
                    "global_value": sizes.as_ref().map(|s| s.global[d]),
                    "local_value": sizes.as_ref().and_then(|s| s.local.as_ref()).map(|l| l[d]),
                })
            })
            .collect();
        let errors: Vec<serde_json::Value> = k
            .interface
            .errors
            .iter()
            .map(|e| {
                let (line, column) = file.line_col(e.span.start as usize);
                json!({ "code": e.code, "message": e.message, "file": file.name, "line": line, "column": column })
            })
            .collect();
        let mut v = json!({
            "name": k.name,
            "source": k.source,
            "build_options": heddle_runtime::opencl::BUILD_OPTIONS,
            "args": args,
            "launch": {
                "dims": dims,
                "local_chosen_by_implementation": sizes.as_ref().is_some_and(|s| s.local.is_none()),
                "text": k.launch.to_string(),
            },
            "errors": errors,
        });
        v["phase"] = phase;
        if !assumes.is_empty() {
            v["assumes"] = json!(assumes);
        }
        v
    };
    // With --trust-ranges, each kernel's variant without the range-implied
    // checks, where it has one, and the ranges it assumes.
    let pick = |checked: &'_ heddle_codegen_opencl::Kernel,
                trusted: Option<&'_ heddle_codegen_opencl::Kernel>,
                prog: &heddle_ir::loops::LoopProgram| {
        match trusted {
            Some(t) if trust => (t.clone(), assumptions(prog)),
            _ => (checked.clone(), Vec::new()),
        }
    };
    let mut out = Vec::new();
    for ((k, phase), trusted) in compiled.counts.iter().zip(&compiled.program.counts).zip(&compiled.trusted_counts) {
        let (k, assumes) = pick(k, trusted.as_ref(), &phase.program);
        out.push(one(&k, json!({ "kind": "count", "fills": phase.name.as_str() }), assumes));
    }
    let (k, assumes) = pick(&compiled.kernel, compiled.trusted.as_ref(), &compiled.program);
    out.push(one(&k, json!({ "kind": "main" }), assumes));
    Ok(out)
}

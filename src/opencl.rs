//! The OpenCL path of `heddle run` and `heddle tune`: lower the checked
//! kernel to a loop program, generate its OpenCL kernel, marshal the bound
//! inputs, launch, and read the result back as a value.

use heddle_codegen_opencl::Kernel as ClKernel;
use heddle_ir::loops::LoopProgram;
use heddle_ir::{Diagnostic, Span};
use heddle_runtime::interp::Env;
use heddle_runtime::opencl::{OpenCl, Timing};
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;

/// A kernel ready for OpenCL: its loop program and generated kernel.
pub struct Compiled {
    /// The lowered program.
    pub program: LoopProgram,
    /// The generated OpenCL kernel.
    pub kernel: ClKernel,
    /// The kernels of its counting phases, in order (`program.counts`).
    pub counts: Vec<ClKernel>,
    /// The kernel without the checks the program's input ranges imply
    /// ([`heddle_ir::loops::trusting_ranges`]), where it leaves some out: a
    /// launch whose inputs lie in those ranges (validated once on the host)
    /// runs it. Likewise for each counting phase.
    pub trusted: Option<ClKernel>,
    /// The counting phases' kernels without their range-implied checks.
    pub trusted_counts: Vec<Option<ClKernel>>,
}

impl Compiled {
    /// The main kernel to launch on `launch` (prepared for [`Compiled::program`]):
    /// the trusted one when its inputs lie in the program's ranges.
    pub fn kernel_for(&self, launch: &heddle_runtime::launch::Launch) -> &ClKernel {
        Compiled::pick(&self.program, &self.kernel, self.trusted.as_ref(), launch)
    }

    /// The kernel to launch for `prog` (the program or one of its counting
    /// phases, `checked` and `trusted` its kernels) on `launch`'s inputs: the
    /// trusted one when they lie in the program's ranges.
    fn pick<'k>(
        prog: &LoopProgram,
        checked: &'k ClKernel,
        trusted: Option<&'k ClKernel>,
        launch: &heddle_runtime::launch::Launch,
    ) -> &'k ClKernel {
        let Some(t) = trusted else { return checked };
        let mut checking = heddle_runtime::profile::phase(|| "check the inputs' ranges".into());
        let valid = heddle_runtime::cpu::inputs_in_ranges(prog, launch, heddle_runtime::cpu::default_threads());
        checking.rename(|| heddle_runtime::profile::ranges_outcome(valid));
        if valid { t } else { checked }
    }
}

/// Lowers `kernel` and generates its OpenCL kernel; `name` names it (the file's stem).
pub fn compile(kernel: &Kernel, name: &str) -> Result<Compiled, Diagnostic> {
    compile_checked(kernel, name).map_err(crate::compile_error)
}

/// Lowers `kernel` to the loop program OpenCL code is generated from:
/// `long` overflow is undefined in OpenCL C, so the program's own `i64`
/// arithmetic is lowered to wrap in `ulong` (`LowerOptions::wrapping_i64`,
/// `heddle_ir::loops`).
pub fn lower(kernel: &Kernel, name: &str) -> Result<LoopProgram, Diagnostic> {
    lower_unlocated(kernel, name).map_err(crate::compile_error)
}

fn lower_unlocated(kernel: &Kernel, name: &str) -> Result<LoopProgram, Diagnostic> {
    let options = heddle_rewrite::lower::LowerOptions { wrapping_i64: true, ..Default::default() };
    heddle_rewrite::lower::lower_kernel_with(kernel, name, &options)
}

fn compile_checked(kernel: &Kernel, name: &str) -> Result<Compiled, Diagnostic> {
    let program = lower_unlocated(kernel, name)?;
    // The OpenCL generator works on the loop program, which has no spans: a
    // refusal of it is located at the kernel it comes from.
    let located = |mut d: Diagnostic| {
        if (d.span.start, d.span.end) == (Span::DUMMY.start, Span::DUMMY.end) {
            d.span = kernel.body.span;
            d = d.with_note(
                "the OpenCL backend cannot run this kernel as it is lowered; the cpu backend and the interpreter can",
            );
        }
        d
    };
    let cl = heddle_codegen_opencl::compile(&program).map_err(located)?;
    let counts = program
        .counts
        .iter()
        .map(|c| heddle_codegen_opencl::compile(&c.program).map_err(located))
        .collect::<Result<_, _>>()?;
    // Leaving checks out never makes a program harder to generate; should it
    // fail, the checked kernel still runs every input.
    let trusting = |p: &LoopProgram| {
        heddle_ir::loops::trusting_ranges(p).and_then(|(t, _)| heddle_codegen_opencl::compile(&t).ok())
    };
    let trusted = trusting(&program);
    let trusted_counts = program.counts.iter().map(|c| trusting(&c.program)).collect();
    Ok(Compiled { program, kernel: cl, counts, trusted, trusted_counts })
}

/// Runs a compiled kernel on bound inputs `reps` times (at least once);
/// the result and the kernel timings.
pub fn run(
    cl: &OpenCl,
    kernel: &Kernel,
    compiled: &Compiled,
    env: &Env,
    reps: usize,
) -> Result<(Value, Timing), Diagnostic> {
    run_checked(cl, kernel, compiled, env, reps).map_err(crate::run_error)
}

fn run_checked(
    cl: &OpenCl,
    kernel: &Kernel,
    compiled: &Compiled,
    env: &Env,
    reps: usize,
) -> Result<(Value, Timing), Diagnostic> {
    heddle_runtime::interp::check_obligations(kernel, env)?;
    let env = run_counts(cl, compiled, env)?;
    let mut launch = heddle_runtime::launch::prepare(&compiled.program, &env)?;
    let chosen = compiled.kernel_for(&launch);
    let timing = cl.run(&compiled.program, chosen, &mut launch, reps)?;
    let value = heddle_runtime::launch::output_value(&compiled.program, &launch, &kernel.body.ty, &env)?;
    Ok((value, timing))
}

/// The kernel's launch on `env`, staged on the device so that it can be run
/// again and again without laying out, uploading or reading back its buffers
/// (counting phases, where the result is sparse, run once here); `None` on
/// Oclgrind. The first run of the staged launch computes what [`run`] does.
pub fn stage(
    cl: &OpenCl,
    kernel: &Kernel,
    compiled: &Compiled,
    env: &Env,
) -> Result<Option<heddle_runtime::opencl::Staged>, Diagnostic> {
    let staged = (|| {
        heddle_runtime::interp::check_obligations(kernel, env)?;
        let env = run_counts(cl, compiled, env)?;
        let launch = heddle_runtime::launch::prepare(&compiled.program, &env)?;
        let chosen = compiled.kernel_for(&launch);
        cl.stage(&compiled.program, chosen, &launch)
    })();
    staged.map_err(crate::run_error)
}

/// Runs the counting phases of a sparse result (each on its trusted kernel
/// where its inputs lie in its ranges); the environment the fill reads.
fn run_counts(cl: &OpenCl, compiled: &Compiled, env: &Env) -> Result<Env, Diagnostic> {
    heddle_runtime::launch::run_counts(&compiled.program, env, &mut |k, phase, launch| {
        let chosen = Compiled::pick(phase, &compiled.counts[k], compiled.trusted_counts[k].as_ref(), launch);
        cl.run(phase, chosen, launch, 1).map(|_| ())
    })
}

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
}

/// Lowers `kernel` and generates its OpenCL kernel; `name` names it (the file's stem).
pub fn compile(kernel: &Kernel, name: &str) -> Result<Compiled, Diagnostic> {
    compile_checked(kernel, name).map_err(crate::compile_error)
}

fn compile_checked(kernel: &Kernel, name: &str) -> Result<Compiled, Diagnostic> {
    let program = heddle_rewrite::lower::lower_kernel(kernel, name)?;
    // The OpenCL generator works on the loop program, which has no spans: a
    // refusal of it is located at the kernel it comes from.
    let located = |mut d: Diagnostic| {
        if (d.span.start, d.span.end) == (Span::DUMMY.start, Span::DUMMY.end) {
            d.span = kernel.body.span;
            d = d.with_note("the OpenCL backend cannot run this kernel as it is lowered; the cpu backend and the interpreter can");
        }
        d
    };
    let cl = heddle_codegen_opencl::compile(&program).map_err(located)?;
    let counts = program.counts.iter().map(|c| heddle_codegen_opencl::compile(&c.program).map_err(located)).collect::<Result<_, _>>()?;
    Ok(Compiled { program, kernel: cl, counts })
}

/// Runs a compiled kernel on bound inputs `reps` times (at least once);
/// the result and the kernel timings.
pub fn run(cl: &OpenCl, kernel: &Kernel, compiled: &Compiled, env: &Env, reps: usize) -> Result<(Value, Timing), Diagnostic> {
    run_checked(cl, kernel, compiled, env, reps).map_err(crate::run_error)
}

fn run_checked(cl: &OpenCl, kernel: &Kernel, compiled: &Compiled, env: &Env, reps: usize) -> Result<(Value, Timing), Diagnostic> {
    heddle_runtime::interp::check_obligations(kernel, env)?;
    let env = heddle_runtime::launch::run_counts(&compiled.program, env, &mut |k, phase, launch| {
        cl.run(phase, &compiled.counts[k], launch, 1).map(|_| ())
    })?;
    let mut launch = heddle_runtime::launch::prepare(&compiled.program, &env)?;
    let timing = cl.run(&compiled.program, &compiled.kernel, &mut launch, reps)?;
    let value = heddle_runtime::launch::output_value(&compiled.program, &launch, &kernel.body.ty, &env)?;
    Ok((value, timing))
}

/// The kernel's launch on `env`, staged on the device so that it can be run
/// again and again without laying out, uploading or reading back its buffers
/// (counting phases, where the result is sparse, run once here); `None` on
/// Oclgrind. The first run of the staged launch computes what [`run`] does.
pub fn stage(cl: &OpenCl, kernel: &Kernel, compiled: &Compiled, env: &Env) -> Result<Option<heddle_runtime::opencl::Staged>, Diagnostic> {
    let staged = (|| {
        heddle_runtime::interp::check_obligations(kernel, env)?;
        let env = heddle_runtime::launch::run_counts(&compiled.program, env, &mut |k, phase, launch| {
            cl.run(phase, &compiled.counts[k], launch, 1).map(|_| ())
        })?;
        let launch = heddle_runtime::launch::prepare(&compiled.program, &env)?;
        cl.stage(&compiled.program, &compiled.kernel, &launch)
    })();
    staged.map_err(crate::run_error)
}

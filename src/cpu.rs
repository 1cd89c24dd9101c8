//! The CPU path of `heddle run --backend cpu` and `heddle compile --target cpu`:
//! lower the checked kernel to a loop program, JIT it with Cranelift
//! (through the runtime's cache), marshal the bound inputs, run it on
//! several threads split by work, and read the result back as a value.

use heddle_ir::loops::LoopProgram;
use heddle_ir::{Diagnostic, Span};
use heddle_runtime::interp::Env;
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;

/// Lowers `kernel` to its loop program; `name` names it (the file's stem).
pub fn lower(kernel: &Kernel, name: &str) -> Result<LoopProgram, Diagnostic> {
    heddle_rewrite::lower::lower_kernel(kernel, name).map_err(crate::compile_error)
}

/// The Cranelift IR of a lowered program.
pub fn clif(program: &LoopProgram) -> Result<String, Diagnostic> {
    heddle_codegen_cpu::clif_text(program)
        .map_err(|e| crate::compile_error(Diagnostic::new(Span::DUMMY, format!("CPU code generation failed: {e}"))))
}

/// Runs the lowered `program` of `kernel` on bound inputs with `threads`
/// threads; the result value. Validation is the interpreter's: the same
/// obligations, the same inputs.
pub fn run(kernel: &Kernel, program: &LoopProgram, env: &Env, threads: usize) -> Result<Value, Diagnostic> {
    run_checked(kernel, program, env, threads).map_err(crate::run_error)
}

fn run_checked(kernel: &Kernel, program: &LoopProgram, env: &Env, threads: usize) -> Result<Value, Diagnostic> {
    heddle_runtime::interp::check_obligations(kernel, env)?;
    let env = heddle_runtime::launch::run_counts(program, env, &mut |_, phase, launch| heddle_runtime::cpu::run(phase, launch, threads))?;
    let mut launch = heddle_runtime::launch::prepare(program, &env)?;
    heddle_runtime::cpu::run(program, &mut launch, threads)?;
    heddle_runtime::launch::output_value(program, &launch, &kernel.body.ty, &env)
}

//! The CPU path of `heddle run --backend cpu` and `heddle compile --target cpu`:
//! lower the checked kernel to a loop program, JIT it with Cranelift
//! (through the runtime's cache), marshal the bound inputs, run it on
//! several threads split by work, and read the result back as a value.

use heddle_ir::loops::LoopProgram;
use heddle_ir::{Diagnostic, Span};
use heddle_runtime::cpu::Parallelism;
use heddle_runtime::interp::Env;
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;
use std::time::Instant;

/// Lowers `kernel` to its loop program; `name` names it (the file's stem).
pub fn lower(kernel: &Kernel, name: &str) -> Result<LoopProgram, Diagnostic> {
    heddle_rewrite::lower::lower_kernel(kernel, name).map_err(crate::compile_error)
}

/// The Cranelift IR of a lowered program.
pub fn clif(program: &LoopProgram) -> Result<String, Diagnostic> {
    clif_with(program, &heddle_codegen_cpu::Options::default())
}

/// [`clif`] with code-generation `options` (`heddle compile --accumulators`).
pub fn clif_with(program: &LoopProgram, options: &heddle_codegen_cpu::Options) -> Result<String, Diagnostic> {
    heddle_codegen_cpu::clif_text_with(program, options)
        .map_err(|e| crate::compile_error(Diagnostic::new(Span::DUMMY, format!("CPU code generation failed: {e}"))))
}

/// The machine code of a lowered program, as text. A program that states
/// input ranges has two: the code a run uses for inputs inside them (the
/// checks they imply left out) and the checked code for any other inputs;
/// both are listed, each under a heading.
pub fn asm(program: &LoopProgram) -> Result<String, Diagnostic> {
    asm_with(program, &heddle_codegen_cpu::Options::default())
}

/// [`asm`] with code-generation `options` (`heddle compile --accumulators`);
/// their `trust_ranges` is ignored: both variants are listed.
pub fn asm_with(program: &LoopProgram, options: &heddle_codegen_cpu::Options) -> Result<String, Diagnostic> {
    let failed = |e| Diagnostic::new(Span::DUMMY, format!("CPU code generation failed: {e}"));
    let checked_options = heddle_codegen_cpu::Options { trust_ranges: false, ..*options };
    let checked = heddle_codegen_cpu::disassembly(program, &checked_options).map_err(failed)?;
    if program.ranges.is_empty() {
        return Ok(checked);
    }
    let trusted_options = heddle_codegen_cpu::Options { trust_ranges: true, ..*options };
    let trusted = heddle_codegen_cpu::disassembly(program, &trusted_options).map_err(failed)?;
    if trusted == checked {
        return Ok(checked);
    }
    // The loop program's own `range` lines name them.
    let ranges = program.to_string().lines().filter_map(|l| l.strip_prefix("range ")).collect::<Vec<_>>().join(", ");
    Ok(format!(
        "; for inputs inside the ranges ({ranges}), checked once before the launch:\n{trusted}\n; for any other inputs:\n{checked}"
    ))
}

/// Compiles `program` and its counting phases to native code (through the
/// runtime's cache), so that a run that follows finds them compiled: each
/// program as it is and, when it states input ranges, also without the
/// checks they imply (what a run uses for inputs inside them).
pub fn compile(program: &LoopProgram) -> Result<(), Diagnostic> {
    let failed = |e| crate::compile_error(Diagnostic::new(Span::DUMMY, format!("CPU code generation failed: {e}")));
    for p in program.counts.iter().map(|c| &*c.program).chain([program]) {
        heddle_runtime::cpu::compile_cached(p).map_err(failed)?;
        if !p.ranges.is_empty() {
            let trusted = heddle_codegen_cpu::Options { trust_ranges: true, ..Default::default() };
            heddle_runtime::cpu::compile_cached_with(p, &trusted).map_err(failed)?;
        }
    }
    Ok(())
}

/// Runs the lowered `program` of `kernel` on bound inputs with `threads`
/// threads; the result value. Validation is the interpreter's: the same
/// obligations, the same inputs.
pub fn run(
    kernel: &Kernel,
    program: &LoopProgram,
    env: &Env,
    threads: impl Into<Parallelism>,
) -> Result<Value, Diagnostic> {
    Ok(run_timed(kernel, program, env, threads, 0)?.0)
}

/// [`run`], then `reps` more runs, each timed: the result of the first run
/// and the seconds of each repetition.
///
/// A repetition is the kernel alone: inputs are bound, validated and laid
/// out once, the code compiled and the work split planned once (as MKL's
/// inspector-executor plans once), and each repetition runs the kernel over
/// them (zeroing the output first where the kernel adds into it). A kernel
/// whose result has counted lengths (count → allocate → fill) repeats all of
/// it: the counting phases, the prefix sum of the counts, laying out the
/// fill's arguments, allocating the result, and the fill.
pub fn run_timed(
    kernel: &Kernel,
    program: &LoopProgram,
    env: &Env,
    threads: impl Into<Parallelism>,
    reps: usize,
) -> Result<(Value, Vec<f64>), Diagnostic> {
    let (value, times) =
        run_timed_read(kernel, program, env, threads, reps, |_, _, _| None::<std::convert::Infallible>)?;
    let value = match value {
        Ok(never) => match never {},
        Err(v) => v,
    };
    Ok((value, times))
}

/// [`run_timed`], the result read by `read` from the launch's output
/// buffers (given the program whose outputs they are, the launch and the
/// environment its lengths are evaluated in) where it gives one: `Ok` with
/// what it read, else `Err` with the result as a value. Lets a caller copy a
/// flat result straight out of the output buffer.
pub fn run_timed_read<T>(
    kernel: &Kernel,
    program: &LoopProgram,
    env: &Env,
    threads: impl Into<Parallelism>,
    reps: usize,
    read: impl FnOnce(&LoopProgram, &heddle_runtime::launch::Launch, &Env) -> Option<T>,
) -> Result<(Result<T, Value>, Vec<f64>), Diagnostic> {
    run_timed_checked(kernel, program, env, threads.into(), reps, read).map_err(crate::run_error)
}

fn run_timed_checked<T>(
    kernel: &Kernel,
    program: &LoopProgram,
    env: &Env,
    threads: Parallelism,
    reps: usize,
    read: impl FnOnce(&LoopProgram, &heddle_runtime::launch::Launch, &Env) -> Option<T>,
) -> Result<(Result<T, Value>, Vec<f64>), Diagnostic> {
    use heddle_runtime::{cpu, launch};
    heddle_runtime::interp::check_obligations(kernel, env)?;
    let mut times = Vec::with_capacity(reps);
    if !program.counts.is_empty() {
        let once = || -> Result<_, Diagnostic> {
            use heddle_runtime::profile::phase;
            let counting = phase(|| "count (the counting phases, their counts back)".into());
            let env = launch::run_counts(program, env, &mut |_, phase, l| cpu::run(phase, l, threads))?;
            drop(counting);
            let layout = phase(|| "lay out the fill (prefix sums, the result allocated)".into());
            let mut l = launch::prepare(program, &env)?;
            drop(layout);
            let _fill = phase(|| "fill".into());
            cpu::run(program, &mut l, threads)?;
            Ok((l, env))
        };
        let (l, counted) = once()?;
        for _ in 0..reps {
            let start = Instant::now();
            drop(once()?);
            times.push(start.elapsed().as_secs_f64());
        }
        if let Some(out) = read(program, &l, &counted) {
            return Ok((Ok(out), times));
        }
        return Ok((Err(launch::output_value(program, &l, &kernel.body.ty, &counted)?), times));
    }
    let layout = heddle_runtime::profile::phase(|| "lay out the launch".into());
    let mut l = launch::prepare(program, env)?;
    drop(layout);
    {
        let _kernel = heddle_runtime::profile::phase(|| format!("kernel ({} runs)", 1 + reps));
        let mut ready = cpu::Ready::new(program, &mut l, threads)?;
        ready.run()?;
        for _ in 0..reps {
            let start = Instant::now();
            ready.run()?;
            times.push(start.elapsed().as_secs_f64());
        }
    }
    let _result = heddle_runtime::profile::phase(|| "read the result back".into());
    if let Some(out) = read(program, &l, env) {
        return Ok((Ok(out), times));
    }
    Ok((Err(launch::output_value(program, &l, &kernel.body.ty, env)?), times))
}

//! Running loop programs compiled by the Cranelift backend
//! ([`heddle_codegen_cpu`]) on the CPU, over several threads.
//!
//! A launch goes: [`crate::launch::prepare`] (validated inputs → flat
//! buffers, host prefix sums, a zeroed output) → [`compile_cached`] (JIT
//! once per distinct program) → [`plan`] (split the top-level parallel
//! loop into chunks of equal *work*, from the program's `parallel_work`) →
//! [`execute`] (one kernel call per chunk on a thread pool) →
//! [`crate::launch::output_value`]. [`run`] does the middle three.
//!
//! Why generated code may skip bounds checks: `prepare` lays every input
//! out at exactly the length its type gives (after `bind` validated offsets
//! as non-decreasing and in range), host buffers have their `count + 1`
//! entries, the output its `len`, and every data-dependent index the
//! validation cannot cover is a `Check` in the program. That is the
//! contract of [`CpuKernel::call`]; [`execute`] upholds it by taking the
//! buffers from a [`Launch`] built by `prepare` for the same program.

mod cache;
mod pool;
mod split;

pub use cache::{compile_cached, KernelCache};
pub use pool::default_threads;
pub use split::{plan, Plan};

use crate::launch::{check_failure, Launch, Slot};
use heddle_codegen_cpu::{ArgValue, CpuKernel, Fault};
use heddle_ir::loops::{ArgKind, LoopProgram};
use heddle_ir::{Diagnostic, Span};

/// Compiles (or finds in the cache) `prog`, splits its parallel loop over
/// `threads` threads by work and runs it over `launch`, which must come from
/// [`crate::launch::prepare`] for the same program. The output buffer holds
/// the result afterwards.
pub fn run(prog: &LoopProgram, launch: &mut Launch, threads: usize) -> Result<(), Diagnostic> {
    let kernel = compile_cached(prog).map_err(|e| Diagnostic::new(Span::DUMMY, format!("CPU code generation failed: {e}")))?;
    let plan = plan(prog, &kernel, launch, threads);
    execute(prog, &kernel, launch, &plan)
}

/// Runs a compiled kernel over the chunks of `plan`, in parallel. A failed
/// check is reported as the one the first failing chunk (in loop order) met,
/// which is the one a sequential run meets.
pub fn execute(prog: &LoopProgram, kernel: &CpuKernel, launch: &mut Launch, plan: &Plan) -> Result<(), Diagnostic> {
    if prog.adds_into_output() {
        // The kernel adds into its outputs (scatterAdd): start each run from zero.
        for o in prog.output_slots() {
            if let Some(Slot::Buffer(b)) = launch.slots.get_mut(o) {
                b.bytes_mut().fill(0);
            }
        }
    }
    let args = arguments(prog, launch)?;
    let call = |range: (i64, i64)| {
        // SAFETY: `arguments` checked that `launch` matches the program slot by
        // slot and takes the buffer pointers from it: `prepare` built each
        // input at the length its type gives, the host buffers and the output
        // at theirs, all 8-byte aligned (see the module docs). The `&mut
        // Launch` keeps every buffer alive and unshared for this call; the
        // chunks of a plan are disjoint ranges of a splittable kernel (or one
        // call), so concurrent calls write disjoint output records, or add into
        // shared ones only through atomic instructions (`AddAtomic`).
        unsafe { kernel.call(args.values(), range) }
    };
    let results = pool::run_chunks(&plan.chunks, plan.threads, &call);
    match results.into_iter().find_map(Result::err) {
        None => Ok(()),
        Some(Fault::Check(id)) => Err(check_failure(prog, id)),
        Some(Fault::DivisionByZero) => Err(Diagnostic::new(Span::DUMMY, "integer division by zero")),
        Some(f) => Err(Diagnostic::new(Span::DUMMY, f.to_string())),
    }
}

/// The argument values of a call, with the buffer pointers of `launch`.
pub(crate) struct Args(pub(crate) Vec<ArgValue>);

impl Args {
    /// The values (a method, so that closures capture the `Sync` wrapper).
    pub(crate) fn values(&self) -> &[ArgValue] {
        &self.0
    }
}

// SAFETY: the pointers point into the buffers of a `Launch` that the caller
// borrows mutably for as long as the `Args` are used; kernels only read the
// inputs and write disjoint output records from different threads.
unsafe impl Send for Args {}
// SAFETY: as for `Send`.
unsafe impl Sync for Args {}

/// The kernel arguments for `launch`, checked against the program's parameters.
pub(crate) fn arguments(prog: &LoopProgram, launch: &mut Launch) -> Result<Args, Diagnostic> {
    if launch.slots.len() != prog.args.len() {
        return Err(Diagnostic::new(Span::DUMMY, "the launch does not match the kernel's parameters"));
    }
    let mut out = Vec::with_capacity(prog.args.len());
    for (slot, arg) in launch.slots.iter_mut().zip(&prog.args) {
        let v = match (slot, &arg.kind) {
            (Slot::Nat(v), ArgKind::Nat) => ArgValue::Nat(*v),
            (Slot::Int(v, _), ArgKind::Scalar(_)) => ArgValue::Int(*v),
            (Slot::Float(v, _), ArgKind::Scalar(_)) => ArgValue::Float(*v),
            (Slot::Bool(v), ArgKind::Scalar(_)) => ArgValue::Bool(*v),
            (Slot::Buffer(b), ArgKind::Input { fields, .. } | ArgKind::Output { fields, .. }) if &b.fields == fields => {
                ArgValue::Buffer(b.as_mut_ptr())
            }
            (Slot::Buffer(b), ArgKind::Host) => ArgValue::Buffer(b.as_mut_ptr()),
            _ => return Err(Diagnostic::new(Span::DUMMY, format!("the launch's value for `{}` does not match its kind", arg.name))),
        };
        out.push(v);
    }
    Ok(Args(out))
}

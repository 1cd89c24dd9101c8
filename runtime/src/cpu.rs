//! Running loop programs compiled by the Cranelift backend
//! ([`heddle_codegen_cpu`]) on the CPU, over several threads.
//!
//! A launch goes: [`crate::launch::prepare`] (validated inputs → flat
//! buffers, host prefix sums, a zeroed output) → [`compile_cached`] (JIT
//! once per distinct program) → [`plan`] (split the top-level parallel
//! loop into chunks of equal *work*, from the program's `parallel_work`) →
//! [`execute`] (one kernel call per chunk on the thread runtime of
//! `pool.rs`) → [`crate::launch::output_value`]. [`run`] does the middle
//! three; [`Ready`] keeps the compiled kernel, packed arguments and split of
//! one launch for running it again and again (`--reps`, benchmarks).
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
mod ranges;
mod split;

pub use cache::{KernelCache, compile_cached, compile_cached_with};
pub use pool::{Helpers, MAX_THREADS, default_threads, helpers, parse_threads, threads_from_env};
pub use ranges::inputs_in_ranges;
pub use split::{
    AWAKE_THRESHOLD, CHUNKS_PER_THREAD, ITEM_COST, PARALLEL_THRESHOLD, Plan, ROW_COST, SplitWhen, Thresholds, plan,
    plan_tuned, plan_with,
};

/// Calls `f` on `0 .. n` split into up to `threads` contiguous ranges of
/// nearly equal length, on the kernels' worker pool (the calling thread
/// takes one range): host passes that belong to a kernel's work (SELL-C-σ
/// putting y back in row order) run on the threads the kernel ran on,
/// without spawning any.
pub fn for_ranges(n: usize, threads: usize, f: &(dyn Fn(std::ops::Range<usize>) + Sync)) {
    let t = threads.clamp(1, MAX_THREADS).min(n.max(1));
    let chunks: Vec<(i64, i64)> = (0..t).map(|k| ((n * k / t) as i64, (n * (k + 1) / t) as i64)).collect();
    // `f` cannot fail, so neither can the chunks.
    let _ = pool::run_chunks(&chunks, t, &|(a, b)| {
        f(a as usize..b as usize);
        Ok(())
    });
}

use crate::launch::{Launch, Slot, check_failure};
use heddle_codegen_cpu::{ArgValue, CpuKernel, Fault, Options, Slots};
use heddle_ir::loops::{ArgKind, LoopProgram};
use heddle_ir::{Diagnostic, Span};
use std::marker::PhantomData;
use std::sync::Arc;

/// Compiles (or finds in the cache) `prog`, splits its parallel loop over
/// `threads` threads by work and runs it over `launch`, which must come from
/// [`crate::launch::prepare`] for the same program. The output buffer holds
/// the result afterwards.
pub fn run(prog: &LoopProgram, launch: &mut Launch, threads: impl Into<Parallelism>) -> Result<(), Diagnostic> {
    Ready::new(prog, launch, threads)?.run()
}

/// How a launch may use threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parallelism {
    /// At most this many threads (the calling one included).
    pub threads: usize,
    /// A launch whose estimated cost is below these runs on one thread
    /// ([`Thresholds::default`]: [`AWAKE_THRESHOLD`] when the workers are
    /// awake, [`PARALLEL_THRESHOLD`] when they are parked; 0 splits every
    /// launch, as tests of the split itself want).
    pub threshold: Thresholds,
    /// How the code is generated and the launch cut (per matrix, by
    /// `heddle tune`): speed only, results within what LANGUAGE.md §5 allows.
    pub tuning: Tuning,
}

impl Parallelism {
    /// `threads` threads for every launch, however small.
    pub fn always(threads: usize) -> Parallelism {
        Parallelism { threads, threshold: Thresholds::uniform(0), tuning: Tuning::default() }
    }

    /// These settings with `tuning`.
    pub fn tuned(self, tuning: Tuning) -> Parallelism {
        Parallelism { tuning, ..self }
    }
}

/// The settings `heddle run --accumulators N --chunks-per-thread N` and
/// `heddle tune` choose: they change speed, and a reassociated `reduce`'s
/// rounding (LANGUAGE.md §5), never anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// Partial accumulators of a reassociable reduction loop
    /// ([`Options::accumulators`]); 1 is the single-accumulator loop, in
    /// sequential order, the cheapest per row for short rows.
    pub accumulators: u32,
    /// Vector lanes for innermost loops ([`Options::vectorize`]).
    pub vectorize: bool,
    /// At most this many chunks per thread when a launch is split
    /// ([`CHUNKS_PER_THREAD`] by default; 1 cuts one chunk per thread).
    pub chunks_per_thread: usize,
}

impl Default for Tuning {
    fn default() -> Tuning {
        let o = Options::default();
        Tuning { accumulators: o.accumulators, vectorize: o.vectorize, chunks_per_thread: CHUNKS_PER_THREAD }
    }
}

impl Tuning {
    /// The code generator's options for these settings.
    pub fn options(&self, trust_ranges: bool) -> Options {
        Options { accumulators: self.accumulators, vectorize: self.vectorize, trust_ranges, ..Options::default() }
    }
}

/// The accumulator counts `--accumulators` accepts.
pub const MAX_ACCUMULATORS: u32 = 16;
/// The chunks per thread `--chunks-per-thread` accepts.
pub const MAX_CHUNKS_PER_THREAD: usize = 64;

impl From<usize> for Parallelism {
    /// `threads` threads, with the threshold of `HEDDLE_PARALLEL_THRESHOLD`
    /// when it is set to a valid cost (see [`threshold_from_env`]), else
    /// the default [`Thresholds`].
    fn from(threads: usize) -> Parallelism {
        let threshold = thresholds_from_env().unwrap_or_default();
        Parallelism { threads, threshold, tuning: Tuning::default() }
    }
}

/// The thresholds a launch uses: `HEDDLE_PARALLEL_THRESHOLD`'s one value
/// for every state of the workers when it is set ([`threshold_from_env`]),
/// else the default [`Thresholds`]; an error when it is not a whole number.
pub fn thresholds_from_env() -> Result<Thresholds, String> {
    Ok(threshold_from_env()?.map_or_else(Thresholds::default, Thresholds::uniform))
}

/// `HEDDLE_PARALLEL_THRESHOLD`: the estimated cost (about nanoseconds, see
/// [`ROW_COST`]) below which a launch runs on one thread, whether the
/// workers are awake or parked (it overrides both [`Thresholds`]); `None`
/// when unset, an error when it is not a whole number. 0 splits every
/// launch (the integration tests set it, so that their small inputs still
/// run on several threads).
pub fn threshold_from_env() -> Result<Option<u64>, String> {
    let Some(raw) = std::env::var_os("HEDDLE_PARALLEL_THRESHOLD") else { return Ok(None) };
    let text = raw.to_string_lossy();
    text.trim().parse::<u64>().map(Some).map_err(|_| {
        format!("HEDDLE_PARALLEL_THRESHOLD={text}: expected a whole number (an estimated cost; 0 splits every launch)")
    })
}

/// Runs a compiled kernel over the chunks of `plan`, in parallel. A failed
/// check is reported as the one the first failing chunk (in loop order) met,
/// which is the one a sequential run meets.
pub fn execute(prog: &LoopProgram, kernel: &CpuKernel, launch: &mut Launch, plan: &Plan) -> Result<(), Diagnostic> {
    let args = arguments(prog, launch)?;
    let slots = kernel.slots(args.values()).map_err(|f| fault(prog, f))?;
    let outputs = zeroed_output(prog, launch);
    launch_chunks(prog, kernel, &slots, plan, &outputs)
}

/// A launch ready to run, again and again: the compiled kernel, its
/// arguments packed once, and its split into chunks, computed once (the
/// split depends on the inputs only). Running it allocates nothing. Inputs
/// validated against the program's ranges (a tensor's coordinates) get the
/// kernel compiled without the checks those ranges imply.
pub struct Ready<'l> {
    prog: &'l LoopProgram,
    kernel: Arc<CpuKernel>,
    slots: Slots,
    plan: Plan,
    outputs: Vec<(*mut u8, usize)>,
    trusted: bool,
    options: Options,
    // The slots point into the launch's buffers: it stays borrowed.
    _launch: PhantomData<&'l mut Launch>,
}

impl<'l> Ready<'l> {
    /// Compiles (or finds in the cache) `prog` and plans its launch over
    /// `launch` (from [`crate::launch::prepare`] for the same program) on
    /// `threads` threads.
    pub fn new(
        prog: &'l LoopProgram,
        launch: &'l mut Launch,
        threads: impl Into<Parallelism>,
    ) -> Result<Ready<'l>, Diagnostic> {
        let p = threads.into();
        // Inputs that lie in the program's ranges (valid tensor coordinates)
        // run the code without the checks those imply. Code that leaves out
        // none is the checked code: the inputs need no validating pass.
        let mut checking = crate::profile::phase(|| "check the inputs' ranges".into());
        let copies_below = copies_below(prog, launch);
        let trust = Options { copies_below, ..p.tuning.options(true) };
        let trusted = !prog.ranges.is_empty()
            && compile_cached_with(prog, &trust).is_ok_and(|k| k.relies_on_ranges())
            && ranges::inputs_in_ranges(prog, launch, p.threads);
        checking.rename(|| crate::profile::ranges_outcome(trusted));
        drop(checking);
        let options = Options { copies_below, ..p.tuning.options(trusted) };
        let compiling = crate::profile::phase(|| "compile (or find in the cache)".into());
        let kernel = compile_cached_with(prog, &options)
            .map_err(|e| Diagnostic::new(Span::DUMMY, format!("CPU code generation failed: {e}")))?;
        drop(compiling);
        let mut planning = crate::profile::phase(|| "plan the split".into());
        let plan = plan_tuned(prog, &kernel, launch, p.threads, p.threshold, p.tuning.chunks_per_thread);
        planning.rename(|| {
            let when = if plan.when == SplitWhen::HelpersAwake { ", when the workers are awake" } else { "" };
            format!("plan the split ({} chunks on {} threads{when})", plan.chunks.len(), plan.threads)
        });
        drop(planning);
        let args = arguments(prog, launch)?;
        let slots = kernel.slots(args.values()).map_err(|f| fault(prog, f))?;
        let outputs = zeroed_output(prog, launch);
        Ok(Ready { prog, kernel, slots, plan, outputs, trusted, options, _launch: PhantomData })
    }

    /// The code generator's options the kernel was compiled with.
    pub fn options(&self) -> Options {
        self.options
    }

    /// How the launch is split.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Whether the inputs lie in the program's ranges, so that the kernel
    /// runs without the checks those imply.
    pub fn ranges_trusted(&self) -> bool {
        self.trusted
    }

    /// Runs the kernel once; the launch's output buffer holds the result.
    pub fn run(&mut self) -> Result<(), Diagnostic> {
        launch_chunks(self.prog, &self.kernel, &self.slots, &self.plan, &self.outputs)
    }
}

/// Inputs of more bytes than this, all together, run short reduction loops
/// (SpMV rows of under [`heddle_codegen_cpu::COPIES_BELOW`] entries) as the
/// loop of pairs rather than as straight copies ([`Options::copies_below`]
/// 0). The copies gain where the launch's data sits in cache (a 5 000-row
/// matrix of 4 entries per row, 0.3 MB: 1.35× the time without them) and
/// lose where the rows gather from a vector that does not (a million rows
/// of 5 random columns, x of 8 MB: 0.80 of the time without them, at 1
/// and 2 threads); a banded million-row matrix and an R-MAT one ran alike
/// either way (docs/performance.md, "rmat2t"). This is a core's L2 cache
/// of the machine measured on, times four.
pub const STRAIGHT_COPIES_MAX_BYTES: usize = 4 << 20;

/// [`Options::copies_below`] for a launch: the default up to
/// [`STRAIGHT_COPIES_MAX_BYTES`] of inputs, else 0.
fn copies_below(prog: &LoopProgram, launch: &Launch) -> u32 {
    let bytes: usize = prog
        .args
        .iter()
        .zip(&launch.slots)
        .map(|(a, s)| match (&a.kind, s) {
            (ArgKind::Input { .. }, Slot::Buffer(b)) => b.byte_len(),
            _ => 0,
        })
        .sum();
    if bytes > STRAIGHT_COPIES_MAX_BYTES { 0 } else { Options::default().copies_below }
}

/// The output buffers (address and bytes) of a program that adds into them
/// (`scatterAdd`), which must be zero at the start of every run; none for
/// other programs.
fn zeroed_output(prog: &LoopProgram, launch: &mut Launch) -> Vec<(*mut u8, usize)> {
    if !prog.adds_into_output() {
        return Vec::new();
    }
    let mut outputs = Vec::new();
    for o in prog.output_slots() {
        if let Some(Slot::Buffer(b)) = launch.slots.get_mut(o) {
            outputs.push((b.as_mut_ptr(), b.byte_len()));
        }
    }
    outputs
}

fn launch_chunks(
    prog: &LoopProgram,
    kernel: &CpuKernel,
    slots: &Slots,
    plan: &Plan,
    outputs: &[(*mut u8, usize)],
) -> Result<(), Diagnostic> {
    for &(ptr, len) in outputs {
        // SAFETY: `ptr` and `len` are the output buffer of the launch the
        // caller borrows mutably (`Ready` holds the borrow; `execute` has it).
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
    }
    let call = |range: (i64, i64)| {
        // SAFETY: the slots were packed from `arguments`, which checked that
        // the launch matches the program slot by slot and took the buffer
        // pointers from it: `prepare` built each input at the length its type
        // gives, the host buffers and the output at theirs, all 8-byte aligned
        // (see the module docs). The caller's `&mut Launch` keeps every buffer
        // alive and unshared for this call; the chunks of a plan are disjoint
        // ranges of a splittable kernel (or one call), so concurrent calls
        // write disjoint output records, or add into shared ones only through
        // atomic instructions (`AddAtomic`).
        unsafe { kernel.call_with(slots, range) }
    };
    // A small launch is split only if its workers are awake now (`split.rs`).
    let (chunks, threads) = plan.now(pool::helpers);
    pool::run_chunks(chunks, threads, &call).map_err(|f| fault(prog, f))
}

/// The diagnostic for a kernel's fault.
fn fault(prog: &LoopProgram, f: Fault) -> Diagnostic {
    match f {
        Fault::Check(id) => check_failure(prog, id),
        Fault::DivisionByZero => Diagnostic::new(Span::DUMMY, "integer division by zero"),
        Fault::IndexOverflow => crate::launch::index_overflow(prog),
        f => Diagnostic::new(Span::DUMMY, f.to_string()),
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
            // Kernels only read their inputs, so an input's storage stays
            // shared with the binding it came from (no copy per launch).
            (Slot::Buffer(b), ArgKind::Input { fields, .. }) if &b.fields == fields => {
                ArgValue::Buffer(b.as_ptr().cast_mut())
            }
            (Slot::Buffer(b), ArgKind::Output { fields, .. }) if &b.fields == fields => {
                ArgValue::Buffer(b.as_mut_ptr())
            }
            (Slot::Buffer(b), ArgKind::Host) => ArgValue::Buffer(b.as_mut_ptr()),
            _ => {
                return Err(Diagnostic::new(
                    Span::DUMMY,
                    format!("the launch's value for `{}` does not match its kind", arg.name),
                ));
            }
        };
        out.push(v);
    }
    Ok(Args(out))
}

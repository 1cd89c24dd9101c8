//! # heddle-codegen-cpu
//!
//! The CPU backend: a validated [`LoopProgram`] is translated to Cranelift
//! IR ([`clif_text`] shows it) and compiled to native code for the host
//! (`cranelift-native` picks the ISA features, so AVX is used where the
//! machine has it) through `cranelift-jit` ([`compile`]).
//!
//! The compiled function has one signature whatever the program:
//! `fn(args: *const u64, lo: i64, hi: i64) -> u32`. `args` holds one 8-byte
//! slot per [`LoopProgram::args`] entry (see [`ArgValue`]); `lo .. hi` clips
//! the body's top-level `Parallel` loop, so a runtime can hand each thread a
//! chunk of it; the result is a [`status`] code. [`CpuKernel::call`] wraps
//! it.
//!
//! Semantics the generated code keeps (the reference interpreter's):
//! integers wrap at their width; `/` and `%` truncate toward zero (C); an
//! integer division by zero stops the kernel with
//! [`Fault::DivisionByZero`] (the interpreter reports the same error) and
//! `MIN / -1` wraps instead of trapping; `min`/`max` of floats ignore a NaN
//! operand like Rust's `f64::min`; float-to-integer casts saturate (Rust's
//! `as`); `&&`, `||` and `select` evaluate an operand only when C would
//! whenever that operand could fault (a load or a division).
//!
//! Schedules: `Parallel` at the top level of the body is the one a runtime
//! splits; every other loop, including the OpenCL schedules (`Global`,
//! `Workgroup`, `Local`), runs sequentially, and `Barrier` is a no-op (a
//! sequential run of a work-group's phases is already ordered).
#![warn(missing_docs)]

#[cfg(not(target_endian = "little"))]
compile_error!("heddle-codegen-cpu passes scalar arguments in the low bytes of 8-byte slots: little-endian hosts only");

mod error;
mod helpers;
mod jit;
mod kernel;
pub mod status;
mod translate;
mod types;

pub use error::CodegenError;
pub use kernel::{ArgValue, CpuKernel, Fault, Slots};

use heddle_ir::loops::LoopProgram;

/// Choices in code generation that change speed, never results beyond
/// what the language allows (a reassociated `reduce`'s rounding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Partial accumulators of a reassociable reduction loop (LANGUAGE.md
    /// §5): its body is unrolled this many times, each copy adding into its
    /// own accumulator, combined after the loop. 1 keeps every reduction
    /// sequential.
    pub accumulators: u32,
    /// Leave out the checks that the program's input ranges
    /// (`LoopProgram::ranges`) imply. Only for inputs validated against those
    /// ranges: the runtime does that before it runs such a kernel.
    pub trust_ranges: bool,
    /// Run innermost reduction and map loops in 128-bit vector lanes where
    /// that pays (LANGUAGE.md §5 allows it for reductions; maps are exact).
    pub vectorize: bool,
    /// Fuse a reassociable float reduction's `acc + a * b` (a `reduce`'s
    /// add of a product, SpMV's multiply-add) into one fused multiply-add,
    /// rounded once, where the host has the instruction (x86-64 with AVX and
    /// FMA, AArch64); elsewhere, and for `reduceSeq`, the product is rounded
    /// on its own. Like reassociation, this changes only the rounding of a
    /// `reduce`'s float result (ARCHITECTURE.md, "codegen-cpu"). Off by
    /// default: Cranelift's x86-64 FMA overwrites a multiplicand, so a
    /// loop-carried accumulator needs a move after each one, and CSR SpMV on
    /// short rows measured 15–20% slower with it (docs/performance.md).
    pub fused_multiply_add: bool,
    /// A reassociable reduction loop of fewer iterations than this, decided
    /// when the loop starts, runs the one-accumulator loop of
    /// `accumulators = 1`; a longer one runs over `accumulators` partials.
    /// (A loop in vector lanes, [`vectorize`](Self::vectorize), keeps its
    /// lanes whatever its length.)
    /// Setting up and combining partials costs more than their independent
    /// chains gain on an SpMV row of a few entries (docs/performance.md,
    /// "Short rows"). 0 or 1: every loop runs over the partials.
    pub short_loop: u32,
    /// Interchange a parallel row sum with its row-invariant inner loop, in
    /// blocks of rows, and split the rows' range by the row's guards
    /// (`heddle_ir::loops::interchange`: DIA SpMV). Results are unchanged
    /// bit for bit; only the memory order of the loads.
    pub interchange: bool,
    /// Keep a small array of a constant length (a `reduce`'s row of sums,
    /// at most 64 bytes) in vector registers when every access to it is at
    /// a constant position (`translate::regs`). Results are unchanged bit for
    /// bit; off keeps every array in memory (for comparisons).
    pub register_arrays: bool,
    /// In vector lanes, load a 32-bit integer widened to an index (a gather's
    /// column) lane by lane, straight to 64 bits, rather than as a vector
    /// whose lanes are extracted (`translate::simd`, `widened_lanes`).
    pub scalar_index_lanes: bool,
    /// A short reduction loop (below [`short_loop`](Self::short_loop)) of
    /// fewer iterations than this runs as straight copies of its body,
    /// entered by a jump table on its count ([`COPIES_BELOW`] by default);
    /// 0 runs every short loop as the one-accumulator loop of pairs. The
    /// CPU runtime turns the copies off for launches whose inputs do not
    /// fit in cache (`heddle_runtime::cpu`, `STRAIGHT_COPIES_MAX_BYTES`).
    /// Results are the same bit for bit: both add in order.
    pub copies_below: u32,

    /// Let a lane step's loads fold into their uses (`translate::simd`,
    /// `lane_load_flags`: x's gathered lanes into `insertps`/`pinsrq` from
    /// memory, the values into `mulps`), and test a loop that carries an
    /// array in registers at the top (`translate::stmt`, `carries_registers`)
    /// so that nothing keeps them from folding. Results are unchanged bit for
    /// bit; off for comparisons.
    pub fold_lane_loads: bool,
    /// Take the address and counter arithmetic out of a loop's step:
    /// count a sequential loop whose body reads its variable `k` only in
    /// sums `a·k + …` (one constant `a`) as `q = a·k + b` instead, `b` the
    /// first sum's invariant terms (`translate::induction`); put a straight
    /// lane step's constant first lane in its loads' displacement
    /// (`translate::simd`, `lane_address`); and make a top-tested loop's
    /// counter the last parameter of its head (`translate::stmt`,
    /// `touch_registers`). SELL-8's step then addresses its lanes at `base +
    /// q·size + lane` with one `add` to the counter per step. Results are
    /// unchanged bit for bit; off for comparisons.
    pub strength_reduction: bool,
    /// Carry the vector partials of a loop's nested short sum across the
    /// loop (`translate::nested`): BSR 1×8's row adds each block's 8
    /// products into vectors that hold the row's earlier blocks, its lanes
    /// folded once per row rather than once per block. Regroups the sum as
    /// a `reduce` allows; off for comparisons.
    pub nested_sums: bool,
}

/// The default [`Options::short_loop`]: on CSR SpMV rows of random columns
/// (x in L2), rows of 2 entries took 0.64 of the time with one accumulator
/// that they took with four, rows of 4–8 entries 0.97–0.98, and from 16 on
/// the two were within noise (docs/performance.md, "Short rows").
pub const DEFAULT_SHORT_LOOP: u32 = 16;

/// A reassociable reduction loop of fewer iterations than this (and than
/// [`Options::short_loop`]), whose pre-header is harmless on an empty loop,
/// runs as straight copies of the body entered by a jump table on its count
/// (`translate::reduce`, `unrolled_short`); from it up to `short_loop`, the
/// one-accumulator loop of pairs. Straight copies lose to that loop on rows
/// of 10 entries streamed from memory (uniform_100k_d10 took 1.26× the
/// time with copies up to 15): each copy's load walks the stream a whole
/// row at a time, which the hardware prefetcher follows worse than the
/// loop's one load walking it entry by entry. In a C experiment the copies
/// matched the loop once the streams were prefetched in software, and when
/// they fit in cache (docs/performance.md, "shortrow").
pub const COPIES_BELOW: u32 = 8;

impl Default for Options {
    /// Four accumulators: enough independent chains to hide a float add's
    /// latency behind an SpMV's loads, for loops of 16 iterations or more
    /// ([`DEFAULT_SHORT_LOOP`]). Every check kept. Vector lanes on, fused
    /// multiply-adds off, row sums interchanged where that pays.
    fn default() -> Options {
        Options {
            accumulators: 4,
            trust_ranges: false,
            vectorize: true,
            fused_multiply_add: false,
            short_loop: DEFAULT_SHORT_LOOP,
            interchange: true,
            register_arrays: true,
            scalar_index_lanes: true,
            copies_below: COPIES_BELOW,

            fold_lane_loads: true,
            strength_reduction: true,
            nested_sums: true,
        }
    }
}

/// Compiles `prog` to native code for this machine.
///
/// The program is validated first; a malformed one is a
/// [`CodegenError::Invalid`], never a crash.
pub fn compile(prog: &LoopProgram) -> Result<CpuKernel, CodegenError> {
    jit::compile(prog, &Options::default())
}

/// [`compile`] with explicit [`Options`].
pub fn compile_with(prog: &LoopProgram, options: &Options) -> Result<CpuKernel, CodegenError> {
    jit::compile(prog, options)
}

/// The Cranelift IR of `prog`, as handed to Cranelift's optimiser (before
/// its e-graph pass and register allocation), for `heddle compile --target cpu`.
pub fn clif_text(prog: &LoopProgram) -> Result<String, CodegenError> {
    clif_text_with(prog, &Options::default())
}

/// [`clif_text`] with explicit [`Options`].
pub fn clif_text_with(prog: &LoopProgram, options: &Options) -> Result<String, CodegenError> {
    jit::clif_text(prog, options)
}

/// The machine code of `prog` after register allocation, as text (Cranelift's
/// VCode listing): what `heddle compile --target asm` prints and what tests
/// of the inner loops' instruction selection inspect.
pub fn disassembly(prog: &LoopProgram, options: &Options) -> Result<String, CodegenError> {
    jit::disassembly(prog, options)
}

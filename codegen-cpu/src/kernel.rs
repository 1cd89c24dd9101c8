//! A compiled kernel and how to call it.

use crate::status;
use heddle_ir::ScalarType;
use heddle_ir::loops::ArgKind;

/// The machine code and the memory that holds it. Dropping it frees the code.
pub(crate) struct CodeMemory(pub(crate) Option<cranelift_jit::JITModule>);

// SAFETY: after `finalize_definitions` the module is never used again until
// it is dropped: the code it holds is immutable and may run on any thread.
// Dropping needs `&mut self`, so no call through `&CpuKernel` is in flight.
unsafe impl Send for CodeMemory {}
// SAFETY: see `Send`: shared access only ever executes the finished code.
unsafe impl Sync for CodeMemory {}

impl Drop for CodeMemory {
    fn drop(&mut self) {
        if let Some(m) = self.0.take() {
            // SAFETY: the only pointer into this memory is `CpuKernel::entry`,
            // which is dropped with it and cannot be called any more.
            unsafe { m.free_memory() }
        }
    }
}

/// The entry point of every compiled kernel (see the crate docs).
pub(crate) type Entry = unsafe extern "C" fn(args: *const u64, lo: i64, hi: i64) -> u32;

/// One argument of a call, in [`LoopProgram::args`](heddle_ir::loops::LoopProgram::args) order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArgValue {
    /// A natural (`ArgKind::Nat`).
    Nat(i64),
    /// An integer scalar, as its value (the kernel keeps the low bits of
    /// the declared width; unsigned 64-bit values as their bit pattern).
    Int(i64),
    /// A float scalar (rounded to `f32` for an `f32` argument).
    Float(f64),
    /// A `bool` scalar.
    Bool(bool),
    /// The first byte of an input, host or output buffer.
    Buffer(*mut u8),
}

/// Why a call stopped early.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// `Check` number `id` (an index into `LoopProgram::checks`) failed.
    #[error("check #{0} failed")]
    Check(u32),
    /// An integer division or remainder by zero.
    #[error("integer division by zero")]
    DivisionByZero,
    /// A temporary buffer could not be allocated.
    #[error("out of memory for a temporary buffer")]
    OutOfMemory,
    /// A loop ran past the range of the 32-bit (or narrower) integer its
    /// index is converted to, such as a `generate` position of type `int`
    /// over more than 2^31 elements: the converted index would wrap.
    #[error("a loop index does not fit the integer type it is converted to")]
    IndexOverflow,
    /// The arguments do not match the kernel's parameters.
    #[error("bad kernel arguments: {0}")]
    BadArguments(String),
}

/// A kernel compiled to native code. It is `Send + Sync`: several threads
/// may call it at once on disjoint parts of the parallel range.
pub struct CpuKernel {
    pub(crate) code: CodeMemory,
    pub(crate) entry: Entry,
    pub(crate) params: Vec<ArgKind>,
    pub(crate) splittable: bool,
    pub(crate) clif: String,
    /// Checks left out because the program's input ranges imply them.
    pub(crate) trusted_checks: usize,
}

impl std::fmt::Debug for CpuKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuKernel")
            .field("params", &self.params)
            .field("splittable", &self.splittable)
            .finish_non_exhaustive()
    }
}

impl CpuKernel {
    /// Whether the body is one top-level `Parallel` loop (after `let`s and
    /// checks), so that calls over disjoint ranges that cover it do the work
    /// of one call over everything. When false, call once with
    /// `(i64::MIN, i64::MAX)`.
    pub fn splittable(&self) -> bool {
        self.splittable
    }

    /// Whether the code leaves out checks that the program's input ranges
    /// imply (compiled with `Options::trust_ranges`): only then must the
    /// inputs be validated against the ranges before it runs.
    pub fn relies_on_ranges(&self) -> bool {
        self.trusted_checks > 0
    }

    /// The Cranelift IR the kernel was compiled from.
    pub fn clif(&self) -> &str {
        &self.clif
    }

    /// Runs the kernel; its top-level `Parallel` loop runs over the part of
    /// its range inside `range.0 .. range.1` only (every other loop runs whole).
    ///
    /// # Safety
    ///
    /// Generated code does no bounds checks of its own beyond the program's
    /// `Check`s, so the caller guarantees, for these argument values:
    /// - every `Buffer` points to a live allocation aligned to its record
    ///   ([`record_layout`](heddle_ir::loops::record_layout); 8 bytes for host
    ///   buffers) that holds every record the program reads or writes: the
    ///   inputs are as long as their `len` and satisfy the validation the
    ///   runtime does before a launch (so every unchecked index is in bounds),
    ///   the output as long as its `len`;
    /// - inputs and host buffers are not written while the call runs, and
    ///   no buffer overlaps the output;
    /// - concurrent calls on the same output cover disjoint ranges of a
    ///   [`splittable`](CpuKernel::splittable) kernel (they then write
    ///   disjoint records).
    pub unsafe fn call(&self, args: &[ArgValue], range: (i64, i64)) -> Result<(), Fault> {
        let slots = self.slots(args)?;
        // SAFETY: the caller's contract is this function's.
        unsafe { self.call_with(&slots, range) }
    }

    /// [`call`](CpuKernel::call) with arguments already checked and packed by
    /// [`slots`](CpuKernel::slots): nothing is allocated, so a runtime can
    /// call it for every chunk of every launch.
    ///
    /// # Safety
    ///
    /// As for [`call`](CpuKernel::call), for the argument values `slots` was made from.
    pub unsafe fn call_with(&self, slots: &Slots, range: (i64, i64)) -> Result<(), Fault> {
        if slots.0.len() != self.params.len() {
            return Err(Fault::BadArguments(format!(
                "{} argument slots for {} parameters",
                slots.0.len(),
                self.params.len()
            )));
        }
        // SAFETY: the slots match the parameters (checked by `slots`); the
        // pointers in them are valid by this function's contract.
        let code = unsafe { (self.entry)(slots.0.as_ptr(), range.0, range.1) };
        let _ = &self.code;
        match code {
            status::OK => Ok(()),
            status::DIVISION_BY_ZERO => Err(Fault::DivisionByZero),
            status::OUT_OF_MEMORY => Err(Fault::OutOfMemory),
            status::INDEX_OVERFLOW => Err(Fault::IndexOverflow),
            id => Err(Fault::Check(id - 1)),
        }
    }

    /// The 8-byte argument slots for `args`, after checking they match the parameters.
    pub fn slots(&self, args: &[ArgValue]) -> Result<Slots, Fault> {
        if args.len() != self.params.len() {
            return Err(Fault::BadArguments(format!("{} arguments for {} parameters", args.len(), self.params.len())));
        }
        let mut slots = Vec::with_capacity(args.len());
        for (k, (a, p)) in args.iter().zip(&self.params).enumerate() {
            let slot = match (a, p) {
                // A natural is not negative: compiled loops over `0 .. n`
                // take no test of `n < 0` (`translate::simd`).
                (ArgValue::Nat(v), ArgKind::Nat) if *v >= 0 => *v as u64,
                (ArgValue::Int(v), ArgKind::Scalar(t)) if t.is_int() => *v as u64,
                // An f16 / bf16 is passed in an f32 (its value is exact there).
                (ArgValue::Float(v), ArgKind::Scalar(ScalarType::F32 | ScalarType::F16 | ScalarType::BF16)) => {
                    u64::from((*v as f32).to_bits())
                }
                (ArgValue::Float(v), ArgKind::Scalar(ScalarType::F64)) => v.to_bits(),
                (ArgValue::Bool(v), ArgKind::Scalar(ScalarType::Bool)) => u64::from(*v),
                (ArgValue::Buffer(p), ArgKind::Input { .. } | ArgKind::Host | ArgKind::Output { .. })
                    if !p.is_null() =>
                {
                    *p as u64
                }
                _ => return Err(Fault::BadArguments(format!("argument {k} is {a:?}, the parameter is {p:?}"))),
            };
            slots.push(slot);
        }
        Ok(Slots(slots))
    }
}

/// A call's arguments, checked against a kernel's parameters and packed
/// into the 8-byte slots the entry point reads (see the crate docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slots(Vec<u64>);

// SAFETY: the slots are plain integers (buffer addresses among them); what
// may be done with the memory they point to is `call_with`'s contract.
unsafe impl Send for Slots {}
// SAFETY: as for `Send`; the slots are never written after construction.
unsafe impl Sync for Slots {}

//! Scalar types and memory flags in Cranelift terms.

use cranelift_codegen::ir::{MemFlagsData, Type, types};
use heddle_ir::ScalarType;

/// The Cranelift type a scalar is held in. `bool` is an `i8` that is 0 or 1
/// (what Cranelift's comparisons produce and what a buffer stores). `f16`
/// and `bf16` are held in an `f32` (exactly) and stored as their 16 bits
/// ([`memory_type`]).
pub fn clif_type(t: ScalarType) -> Type {
    match t {
        ScalarType::F16 | ScalarType::BF16 => types::F32,
        ScalarType::Bool | ScalarType::I8 | ScalarType::U8 => types::I8,
        ScalarType::I16 | ScalarType::U16 => types::I16,
        ScalarType::I32 | ScalarType::U32 => types::I32,
        ScalarType::I64 | ScalarType::U64 => types::I64,
        ScalarType::F32 => types::F32,
        ScalarType::F64 => types::F64,
        // Lowering refuses complex numbers (`heddle_rewrite::lower::complex`):
        // no loop program holds one. The part type keeps this total.
        ScalarType::C32 => types::F32,
        ScalarType::C64 => types::F64,
    }
}

/// The Cranelift type a scalar is stored in, in a buffer.
pub fn memory_type(t: ScalarType) -> Type {
    if t.is_half() { types::I16 } else { clif_type(t) }
}

/// Flags for the argument-slot loads at entry: the slot array is read-only
/// for the call, 8-byte aligned and fully readable (the call's contract).
pub fn arg_slot() -> MemFlagsData {
    MemFlagsData::trusted().with_readonly()
}

/// Flags for an argument slot re-loaded in an inner loop's pre-header
/// (`translate::rebase`): not `readonly`, so that Cranelift does not merge
/// the load with the entry's, which would make it live across the kernel again.
pub fn arg_slot_reload() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Flags for accesses to a buffer.
///
/// `notrap` and `aligned` hold by the call's contract: every buffer is
/// aligned to its record, and every index the kernel uses is in bounds
/// (validated up front, or guarded by a `Check` that dominates the access).
/// Inputs and host buffers are also `readonly`: nothing writes them during
/// a call, which lets Cranelift merge repeated loads across stores to the
/// output. No access is `can_move`: an index's validity may rest on a
/// dominating check or loop guard that Cranelift cannot see.
pub fn buffer(readonly: bool) -> MemFlagsData {
    let f = MemFlagsData::trusted();
    if readonly { f.with_readonly() } else { f }
}

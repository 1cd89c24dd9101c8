//! The status codes a compiled kernel returns.
//!
//! `0` is success and `id + 1` means `Check` number `id` failed; the three
//! codes at the top of the range are faults that have no `Check` of their
//! own. [`CpuKernel::call`](crate::CpuKernel::call) turns them into a
//! [`Fault`](crate::Fault).

/// The kernel ran to the end.
pub const OK: u32 = 0;
/// An integer division or remainder by zero.
pub const DIVISION_BY_ZERO: u32 = u32::MAX;
/// A temporary buffer could not be allocated (or its size overflows).
pub const OUT_OF_MEMORY: u32 = u32::MAX - 1;
/// A loop index does not fit the narrow integer type it is converted to.
pub const INDEX_OVERFLOW: u32 = u32::MAX - 2;

/// The status for a failed `Check` with this id; `None` when the id would
/// collide with the fault codes (such a program is rejected at compile time).
pub fn check_failed(id: u32) -> Option<u32> {
    id.checked_add(1).filter(|s| *s < INDEX_OVERFLOW)
}

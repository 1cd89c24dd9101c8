//! Rust functions that generated code calls: the float remainder (Cranelift
//! has no `frem`) and the heap for temporaries too large for the stack.
//!
//! They are `extern "C"` with plain integer / float / pointer arguments so
//! that Cranelift can call them with the platform's C calling convention.

use std::alloc::Layout;

/// The name of [`fmod`] in generated code.
pub const FMOD: &str = "heddle_cpu_fmod";
/// The name of [`alloc`] in generated code.
pub const ALLOC: &str = "heddle_cpu_alloc";
/// The name of [`free`] in generated code.
pub const FREE: &str = "heddle_cpu_free";
/// The name of [`sort`] in generated code.
pub const SORT: &str = "heddle_cpu_sort";

/// Sorts `len` `i64`s at `ptr` in increasing order (the compress step of a
/// sparse workspace, `Stmt::Sort`). Nothing happens for `len <= 0`.
///
/// # Safety
/// `ptr` must point to `len` initialised, aligned `i64`s that nothing else
/// accesses during the call: generated code passes a range of one of its
/// own temporaries, after a `Check` that the range lies inside it.
pub unsafe extern "C" fn sort(ptr: *mut i64, len: i64) {
    if let Ok(n) = usize::try_from(len)
        && n > 1
        && !ptr.is_null()
    {
        // SAFETY: the caller guarantees `len` valid, exclusive elements at `ptr`.
        unsafe { std::slice::from_raw_parts_mut(ptr, n) }.sort_unstable();
    }
}

/// `x % y` for floats: C's `fmod`, Rust's `%`. (The result is exact, so an
/// `f32` remainder computed in `f64` and rounded back is the `f32` one.)
pub extern "C" fn fmod(x: f64, y: f64) -> f64 {
    x % y
}

/// The layout of `len` records of `size` bytes aligned to `align`, if it exists.
fn layout(len: i64, size: i64, align: i64) -> Option<Layout> {
    let len = usize::try_from(len).ok()?;
    let size = usize::try_from(size).ok()?;
    let align = usize::try_from(align).ok()?;
    let bytes = len.checked_mul(size)?;
    Layout::from_size_align(bytes, align).ok()
}

/// Zeroed memory for `len` records of `size` bytes, aligned to `align`; null
/// when `len` is negative, the size overflows or the allocator fails. An
/// empty buffer is a dangling, aligned, non-null pointer.
pub extern "C" fn alloc(len: i64, size: i64, align: i64) -> *mut u8 {
    match layout(len, size, align) {
        None => std::ptr::null_mut(),
        Some(l) if l.size() == 0 => l.align() as *mut u8,
        // SAFETY: the layout has a non-zero size (checked just above).
        Some(l) => unsafe { std::alloc::alloc_zeroed(l) },
    }
}

/// Frees what [`alloc`] returned for the same `len`, `size` and `align`.
pub extern "C" fn free(ptr: *mut u8, len: i64, size: i64, align: i64) {
    if let Some(l) = layout(len, size, align)
        && l.size() != 0
        && !ptr.is_null()
    {
        // SAFETY: generated code passes back exactly the pointer and the
        // arguments of one successful `alloc` call, once.
        unsafe { std::alloc::dealloc(ptr, l) }
    }
}

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

/// The name of [`f16_of_f64`] in generated code.
pub const F16_OF_F64: &str = "heddle_cpu_f16_of_f64";
/// The name of [`bf16_of_f64`] in generated code.
pub const BF16_OF_F64: &str = "heddle_cpu_bf16_of_f64";
/// The name of [`f16_of_i64`] in generated code.
pub const F16_OF_I64: &str = "heddle_cpu_f16_of_i64";
/// The name of [`bf16_of_i64`] in generated code.
pub const BF16_OF_I64: &str = "heddle_cpu_bf16_of_i64";
/// The name of [`f16_of_u64`] in generated code.
pub const F16_OF_U64: &str = "heddle_cpu_f16_of_u64";
/// The name of [`bf16_of_u64`] in generated code.
pub const BF16_OF_U64: &str = "heddle_cpu_bf16_of_u64";

/// `x` rounded once, to nearest even, to an `f16`, returned in an `f32`
/// (which holds every `f16` exactly). An `f32` operation's result widened
/// to `f64` rounds through here to the `f16` one.
pub extern "C" fn f16_of_f64(x: f64) -> f32 {
    heddle_ir::rounding::f16_of_f64(x).to_f32()
}

/// `x` rounded once, to nearest even, to a `bf16`, returned in an `f32`.
pub extern "C" fn bf16_of_f64(x: f64) -> f32 {
    heddle_ir::rounding::bf16_of_f64(x).to_f32()
}

use heddle_ir::rounding::f64_to_odd;

/// The `i64` `i` as an `f16` (in an `f32`), rounded once.
pub extern "C" fn f16_of_i64(i: i64) -> f32 {
    f16_of_f64(f64_to_odd(i128::from(i)))
}
/// The `i64` `i` as a `bf16` (in an `f32`), rounded once.
pub extern "C" fn bf16_of_i64(i: i64) -> f32 {
    bf16_of_f64(f64_to_odd(i128::from(i)))
}
/// The `u64` `i` as an `f16` (in an `f32`), rounded once.
pub extern "C" fn f16_of_u64(i: u64) -> f32 {
    f16_of_f64(f64_to_odd(i128::from(i)))
}
/// The `u64` `i` as a `bf16` (in an `f32`), rounded once.
pub extern "C" fn bf16_of_u64(i: u64) -> f32 {
    bf16_of_f64(f64_to_odd(i128::from(i)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_beyond_two_to_the_53_round_once() {
        // 2^60 + 2^52 + 1 lies just above the midpoint between two bf16s
        // around 2^60 (bf16 steps are 2^53 there): nearest is up. Rounding
        // to f64 first (to nearest) would land on the midpoint and tie to even, down.
        let i: i64 = (1 << 60) + (1 << 52) + 1;
        let exact = bf16_of_i64(i);
        assert_eq!(f64::from(exact), ((1i64 << 60) + (1 << 53)) as f64);
        assert_eq!(f16_of_i64(70000), f32::INFINITY);
        assert_eq!(f16_of_i64(-3), -3.0);
        assert_eq!(bf16_of_u64(u64::MAX), 2f32.powi(64));
    }
}

//! Unsigned integers of entry lines read eight digits at a time (SWAR: one
//! 64-bit load, a mask of the digit bytes, three multiplies), the
//! readers' fast path for coordinates: 1 to 7 digits and the byte after
//! them in one word. Anything else (8 digits or more, the last bytes of a
//! chunk) is read byte by byte as before, with its checks.
//!
//! A fast path for floats of the common form was tried here too (Clinger's
//! exact path, else the value rounded exactly in 128-bit integers): it was
//! correctly rounded but slower than `fast_float2` (about 59 against 48 ns a
//! value on the benchmark's 17-digit values, 2026-11-28), so values are
//! still read by `fast_float2` (docs/performance.md, "mtxparse").

/// The eight bytes at `s[i..]` as a little-endian word (`None` near the end).
#[inline(always)]
pub(crate) fn load8(s: &[u8], i: usize) -> Option<u64> {
    let b: &[u8; 8] = s.get(i..i + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(*b))
}

/// How many of the word's bytes, from the first, are ASCII digits (0–8).
#[inline(always)]
pub(crate) fn digit_run(x: u64) -> usize {
    let t = x ^ 0x3030_3030_3030_3030;
    // A byte's top bit: set where it is not a digit (t >= 10 adds to >= 0x80;
    // t >= 0x80 has it already). A carry out of a byte can only spoil the
    // bytes after the first non-digit, which are not counted.
    let m = (t.wrapping_add(0x7676_7676_7676_7676) | t) & 0x8080_8080_8080_8080;
    (m.trailing_zeros() / 8) as usize
}

/// The value of the word's first `n` bytes (`1..=8`), all ASCII digits.
#[inline(always)]
pub(crate) fn digits_value(x: u64, n: usize) -> u64 {
    debug_assert!((1..=8).contains(&n));
    // The digits to the top bytes; the zeros below them are leading zeros.
    let v = (x & 0x0F0F_0F0F_0F0F_0F0F) << (8 * (8 - n));
    let v = (v.wrapping_mul(10 << 8 | 1)) >> 8;
    let v = ((v & 0x00FF_00FF_00FF_00FF).wrapping_mul(100 << 16 | 1)) >> 16;
    ((v & 0x0000_FFFF_0000_FFFF).wrapping_mul(10000 << 32 | 1)) >> 32
}

//! Rounding once to `f16` and `bf16`, from a `double` or an integer: shared
//! by the interpreter, the runtime's readers and the CPU backend, so all
//! convert the same way (the OpenCL backend does the same in C).
//!
//! Rounding to nearest twice — `i as f64`, or a `double` to `f32`, then to
//! the half — can differ from rounding once (the first rounding may land
//! exactly between two halves, and the tie then goes to even). The `half`
//! crate's `from_f64` rounds through `f32` that way. Rounding to *odd*
//! first — truncate, then set the last bit when anything was cut — never
//! differs: a format with at least two more bits than the target keeps what
//! round-to-nearest-even needs. Its `from_f32` rounds once.

/// `i` rounded to an `f64` by rounding to odd (exact when `i` fits in 53
/// bits). Rounding the result to any float of at most 51 significant bits
/// gives `i` correctly rounded to that float.
pub fn f64_to_odd(i: i128) -> f64 {
    let f = i as f64;
    if f as i128 == i {
        return f;
    }
    // `as` rounds to nearest: step back toward zero if it went past `i`.
    let mut t = if (f as i128).unsigned_abs() > i.unsigned_abs() { f64::from_bits(f.to_bits() - 1) } else { f };
    if t as i128 != i {
        t = f64::from_bits(t.to_bits() | 1);
    }
    t
}

/// `x` rounded to an `f32` by rounding to odd (exact when `x` is an `f32`;
/// NaN stays NaN, beyond `f32`'s range gives its largest value, odd).
pub fn f32_to_odd(x: f64) -> f32 {
    let t = x as f32;
    if x.is_nan() || f64::from(t) == x {
        return t;
    }
    // Step back toward zero if rounding to nearest went past `x` (an
    // infinity steps back to the largest finite value).
    let t = if f64::from(t).abs() > x.abs() { f32::from_bits(t.to_bits() - 1) } else { t };
    f32::from_bits(t.to_bits() | 1)
}

/// `x` rounded once, to nearest even, to an `f16`.
pub fn f16_of_f64(x: f64) -> half::f16 {
    half::f16::from_f32(f32_to_odd(x))
}

/// `x` rounded once, to nearest even, to a `bf16`.
pub fn bf16_of_f64(x: f64) -> half::bf16 {
    half::bf16::from_f32(f32_to_odd(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_integers_are_themselves_and_others_are_odd() {
        for i in [0i128, 1, -1, 1 << 53, -(1 << 53), i128::from(i64::MAX) + 1] {
            assert_eq!(f64_to_odd(i) as i128, i);
        }
        let i = (1i128 << 60) + (1 << 52) + 1;
        let t = f64_to_odd(i);
        assert!(t > ((1i128 << 60) + (1 << 52)) as f64 && (t as i128) < i + 256);
        assert_eq!(t.to_bits() & 1, 1);
        let n = f64_to_odd(-i);
        assert_eq!(n, -t);
    }

    #[test]
    fn doubles_round_once_to_halves() {
        // Just above the midpoint between 1 and the next f16 (1 + 2^-10):
        // rounding to f32 first lands on the midpoint and ties down.
        let d = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(f16_of_f64(d).to_f64(), 1.0 + 2f64.powi(-10));
        assert_eq!(f16_of_f64(-d).to_f64(), -(1.0 + 2f64.powi(-10)));
        assert_eq!(bf16_of_f64(1.0 + 2f64.powi(-8) + 2f64.powi(-40)).to_f64(), 1.0 + 2f64.powi(-7));
        // Exact ties go to even; overflow is infinite; NaN stays NaN.
        assert_eq!(f16_of_f64(1.0 + 2f64.powi(-11)).to_f64(), 1.0);
        assert_eq!(f16_of_f64(65520.0).to_f64(), f64::INFINITY);
        assert_eq!(f16_of_f64(65519.99).to_f64(), 65504.0);
        assert_eq!(bf16_of_f64(f64::MAX).to_f64(), f64::INFINITY);
        assert_eq!(bf16_of_f64(-1e300).to_f64(), f64::NEG_INFINITY);
        assert!(f16_of_f64(f64::NAN).is_nan());
        assert_eq!(f16_of_f64(2f64.powi(-25)).to_f64(), 0.0);
        assert_eq!(f16_of_f64(2f64.powi(-25) + 2f64.powi(-60)).to_f64(), 2f64.powi(-24));
        assert_eq!(f16_of_f64(-0.0).to_bits(), 0x8000);
        // Below f32's smallest subnormal, still on the right side of zero.
        assert_eq!(bf16_of_f64(1e-300).to_f64(), 0.0);
        assert_eq!(f32_to_odd(1e-300).to_bits(), 1);
    }
}

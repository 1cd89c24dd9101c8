//! Numbers as text, the same way in every format heddle reads and writes
//! (Matrix Market, FROSTT, JSON inputs, storage and results): parsing is
//! correctly rounded, printing is the shortest text that reads back to the
//! same value, and infinities and NaN have one readable spelling.
//!
//! | value | written | also read |
//! |---|---|---|
//! | +∞ | `inf` | `+inf`, `infinity`, any case |
//! | −∞ | `-inf` | `-infinity`, any case |
//! | NaN | `nan` | `+nan`, `-nan`, `NaN`, any case |
//!
//! In JSON, where a number cannot be infinite, these are the strings
//! `"inf"`, `"-inf"` and `"nan"` (read back in any of the spellings above).
//! A `f32` value is printed as the shortest text that reads back to the same
//! `f32` (`0.1`, not `0.10000000149011612`), whether the reader rounds it
//! straight to `f32` or, as heddle's stored values do, to `f64` first (checked
//! for all 2^32 of them; see `tests/it/number_exhaustive.rs`).

use heddle_ir::ScalarType;
use std::fmt;

/// Parses a float from the whole of `tok`: a decimal number (correctly
/// rounded to the nearest `f64`, overflow giving ±∞) or one of the spellings
/// of ∞ and NaN in the module's table. `None` if anything is left over.
#[inline]
pub fn parse_float(tok: &[u8]) -> Option<f64> {
    match fast_float2::parse_partial::<f64, _>(tok) {
        Ok((v, used)) if used == tok.len() => Some(v),
        _ => None,
    }
}

/// As [`parse_float`], rounding straight to the nearest `f32`.
#[inline]
pub fn parse_f32(tok: &[u8]) -> Option<f32> {
    match fast_float2::parse_partial::<f32, _>(tok) {
        Ok((v, used)) if used == tok.len() => Some(v),
        _ => None,
    }
}

/// A float written as heddle writes every float: the shortest text that
/// reads back to the same value at the element type's width (`f16`, `bf16`,
/// `f32`; `f64` for any other type), `inf`, `-inf` or `nan`.
#[derive(Clone, Copy, Debug)]
pub struct Float {
    /// The value.
    pub value: f64,
    /// The precision it is printed at.
    pub elem: ScalarType,
}

/// `v` printed at the precision of `elem` (see [`Float`]).
pub fn float(v: f64, elem: ScalarType) -> Float {
    Float { value: v, elem }
}

impl fmt::Display for Float {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.value;
        if v.is_nan() {
            f.write_str("nan")
        } else if v.is_infinite() {
            f.write_str(if v > 0.0 { "inf" } else { "-inf" })
        } else if self.elem == ScalarType::F32 {
            f.write_str(&f32_text(v as f32))
        } else if self.elem.is_half() {
            f.write_str(&half_text(v, self.elem))
        } else {
            write!(f, "{v:?}")
        }
    }
}

/// The text of a finite `f32`: its shortest round-trip form (Rust's `Debug`,
/// with an exponent for very large or small magnitudes: `1e-45`, not 45
/// zeros), unless a reader that rounds the text to `f64` first and then to
/// `f32` would get a neighbour (the two roundings differ when the `f64` lands
/// exactly halfway between two `f32`s: `7.038531e-26`); then the shortest
/// longer form that reads back through `f64` too. Either way, any correct
/// reader, direct or through `f64`, gets the same `f32` back.
fn f32_text(x: f32) -> String {
    let shortest = format!("{x:?}");
    let through_f64 = |t: &str| parse_float(t.as_bytes()).is_some_and(|d| (d as f32).to_bits() == x.to_bits());
    if through_f64(&shortest) {
        return shortest;
    }
    (1..17)
        .map(|digits| format!("{x:.digits$e}"))
        .find(|t| through_f64(t))
        .unwrap_or_else(|| format!("{:?}", f64::from(x)))
}

/// The text of a finite `f16` or `bf16` value `v`: the fewest significant
/// digits that read back (through `f64`, as every heddle reader rounds) to
/// the same value: `0.1` for the `f16` nearest 0.1, not `0.0999755859375`.
fn half_text(v: f64, elem: ScalarType) -> String {
    let back = |t: &str| parse_float(t.as_bytes()).is_some_and(|d| crate::value::round_float(d, elem) == v);
    for digits in 0..17 {
        let t = format!("{v:.digits$e}");
        if back(&t) {
            // Plain notation where Rust's shortest form of that value is short.
            let plain = format!("{:?}", parse_float(t.as_bytes()).unwrap_or(v));
            return if plain.len() <= t.len() + 2 { plain } else { t };
        }
    }
    format!("{v:?}")
}

/// The JSON spelling of a non-finite float (`"inf"`, `"-inf"`, `"nan"`), or
/// `None` for a finite one.
pub fn non_finite_name(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("nan")
    } else if v.is_infinite() {
        Some(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        None
    }
}

/// A float as a JSON value: a number with the shortest text for `elem`'s
/// width, or the string `"inf"`, `"-inf"` or `"nan"`.
pub fn float_to_json(v: f64, elem: ScalarType) -> serde_json::Value {
    if let Some(name) = non_finite_name(v) {
        return serde_json::Value::String(name.into());
    }
    // serde_json prints an f64 in its shortest form. For an f32, print the
    // f64 nearest to the f32's shortest text, which serde_json then prints as
    // that text (it has at most 9 significant digits, so it is the f64's
    // shortest form too), and which reads back to the same f32.
    let shown = match elem {
        ScalarType::F32 => f32_text(v as f32).parse().unwrap_or(v),
        e if e.is_half() => half_text(v, e).parse().unwrap_or(v),
        _ => v,
    };
    serde_json::Number::from_f64(shown).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// A JSON value read as a float: a number (correctly rounded; serde_json's
/// `float_roundtrip` parser) or one of the strings of the module's table.
/// `None` for anything else.
pub fn float_from_json(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => non_finite_from_str(s),
        _ => None,
    }
}

/// ±∞ or NaN from one of their spellings (and nothing else: `"1.5"` is not a
/// number in JSON, it is a string).
pub fn non_finite_from_str(s: &str) -> Option<f64> {
    let v = parse_float(s.as_bytes())?;
    (!v.is_finite()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_infinity_and_nan() {
        for (text, want) in
            [("inf", f64::INFINITY), ("-inf", f64::NEG_INFINITY), ("+Infinity", f64::INFINITY), ("INF", f64::INFINITY)]
        {
            assert_eq!(parse_float(text.as_bytes()), Some(want), "{text}");
        }
        for text in ["nan", "NaN", "-nan", "+NAN"] {
            assert!(parse_float(text.as_bytes()).is_some_and(f64::is_nan), "{text}");
        }
        for text in ["", "in", "nana", "1.5x", "--1", "infinit"] {
            assert_eq!(parse_float(text.as_bytes()).map(f64::to_bits), None, "{text}");
        }
        assert_eq!(non_finite_from_str("1.5"), None);
    }

    #[test]
    fn shortest_text_reads_back() {
        let cases = [0.1, -0.9999999999999999, 0.9620693325996399, 5e-324, f64::MAX, f64::MIN_POSITIVE, -0.0, 1e300];
        for v in cases {
            let text = float(v, ScalarType::F64).to_string();
            assert_eq!(parse_float(text.as_bytes()).map(f64::to_bits), Some(v.to_bits()), "{v} as {text}");
        }
        assert_eq!(float(0.1f32 as f64, ScalarType::F32).to_string(), "0.1");
        assert_eq!(float(f64::NEG_INFINITY, ScalarType::F32).to_string(), "-inf");
        assert_eq!(float(f64::NAN, ScalarType::F64).to_string(), "nan");
        assert_eq!(float(1e-45f32 as f64, ScalarType::F32).to_string(), "1e-45");
        // Rounded to f64 and then to f32, "7.038531e-26" gives the f32 above this one.
        let x = f32::from_bits(0x15ae_43fd);
        assert_eq!(format!("{x:?}"), "7.038531e-26");
        assert_ne!(("7.038531e-26".parse::<f64>().unwrap() as f32).to_bits(), x.to_bits());
        let text = float(f64::from(x), ScalarType::F32).to_string();
        assert_eq!(text, "7.0385307e-26");
        assert_eq!((parse_float(text.as_bytes()).unwrap() as f32).to_bits(), x.to_bits(), "{text}");
        assert_eq!(parse_f32(text.as_bytes()).map(f32::to_bits), Some(x.to_bits()), "{text}");
    }

    #[test]
    fn json_forms() {
        assert_eq!(float_to_json(f64::INFINITY, ScalarType::F64), serde_json::json!("inf"));
        assert_eq!(float_to_json(f64::NAN, ScalarType::F32), serde_json::json!("nan"));
        assert_eq!(serde_json::to_string(&float_to_json(0.1f32 as f64, ScalarType::F32)).unwrap(), "0.1");
        assert!(float_from_json(&serde_json::json!("-inf")).is_some_and(|v| v == f64::NEG_INFINITY));
        assert_eq!(float_from_json(&serde_json::json!("0.5")), None);
        // serde_json's default parser is off by an ulp here; float_roundtrip is not.
        let v: serde_json::Value = serde_json::from_str("[-0.9999999999999999, 0.9620693325996399]").unwrap();
        assert_eq!(float_from_json(&v[0]), Some(-0.9999999999999999));
        assert_eq!(float_from_json(&v[1]), Some(0.9620693325996399));
    }
}

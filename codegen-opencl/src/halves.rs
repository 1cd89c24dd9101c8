//! `f16` and `bf16` in OpenCL C without `cl_khr_fp16`.
//!
//! Memory holds their bits in a `ushort`; a variable holds the value in a
//! `float` (every `f16` and `bf16` is exact there). A load widens with
//! `heddle_from_*`, a store narrows with `heddle_to_*`, and every arithmetic
//! result is rounded back with `heddle_round_*`: computing `+ - * /` in
//! `float` and rounding once more gives the correctly rounded half result,
//! because `float`'s 24 bits are at least twice the half's precision plus two.
//!
//! A conversion from a wider source rounds *once*, like the interpreter's:
//! the source is first rounded to `float` by rounding to odd (truncate, then
//! set the last bit if anything was cut), which never changes the final
//! round-to-nearest-even result (24 ≥ 11 + 2 bits). Nothing here needs
//! `double`: integer sources are truncated with `convert_float_rtz` and
//! checked by converting back.
//!
//! The conversions are plain bit arithmetic, so they behave the same on every
//! device (no reliance on `vload_half` rounding modes or denormal support).

use heddle_ir::ScalarType;
use std::collections::BTreeSet;

/// `f16` or `bf16`: the stem of the helpers' names.
pub(crate) fn stem(t: ScalarType) -> &'static str {
    match t {
        ScalarType::BF16 => "bf16",
        _ => "f16",
    }
}

/// Which helpers a kernel uses, so that only those are emitted.
#[derive(Default)]
pub(crate) struct Halves {
    /// `f16` / `bf16` conversions (load, store, rounding) are used.
    kinds: BTreeSet<&'static str>,
    /// Round-to-odd narrowing to `float` from these C types.
    odd_from: BTreeSet<&'static str>,
    /// Atomic adds into `f16` / `bf16` slots.
    atomics: BTreeSet<&'static str>,
}

impl Halves {
    /// `bits` (a `ushort` read from memory) as a `float`.
    pub(crate) fn load(&mut self, t: ScalarType, bits: &str) -> String {
        self.kinds.insert(stem(t));
        format!("heddle_from_{}({bits})", stem(t))
    }

    /// The bits to store of `v`, a `float` holding a value of type `t`.
    pub(crate) fn store(&mut self, t: ScalarType, v: &str) -> String {
        self.kinds.insert(stem(t));
        format!("heddle_to_{}({v})", stem(t))
    }

    /// `v` (a `float`) rounded to the precision of `t`.
    pub(crate) fn round(&mut self, t: ScalarType, v: &str) -> String {
        self.kinds.insert(stem(t));
        format!("heddle_round_{}({v})", stem(t))
    }

    /// `*place += v` atomically, for `place` a `__global` pointer to a slot
    /// of type `t` and `v` a `float` holding a `t`: a statement.
    pub(crate) fn atomic_add(&mut self, t: ScalarType, place: &str, v: &str) -> String {
        self.kinds.insert(stem(t));
        self.atomics.insert(stem(t));
        format!("heddle_atomic_add_{}((volatile __global ushort*){place}, {v});", stem(t))
    }

    /// `v`, of type `from`, converted to the half type `t` in one rounding.
    pub(crate) fn convert(&mut self, t: ScalarType, from: ScalarType, v: &str) -> String {
        let as_float = match from {
            ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 => v.to_string(),
            // Exact in a float.
            ScalarType::Bool | ScalarType::I8 | ScalarType::I16 | ScalarType::U8 | ScalarType::U16 => {
                format!("(float)({v})")
            }
            ScalarType::I32 | ScalarType::I64 | ScalarType::U32 | ScalarType::U64 | ScalarType::F64 => {
                let c = crate::ctype::scalar(from);
                self.odd_from.insert(c);
                format!("heddle_odd_of_{c}({v})")
            }
            // Never met: lowering refuses complex numbers (and no conversion takes one).
            ScalarType::C32 | ScalarType::C64 => format!("({v}).x"),
        };
        self.round(t, &as_float)
    }

    /// The helpers used, as OpenCL C (empty when none is).
    pub(crate) fn declarations(&self) -> String {
        let mut out = String::new();
        for c in &self.odd_from {
            // Truncate toward zero, then mark an inexact result in the last
            // bit: rounding to odd. A NaN or infinity converts exactly.
            let back = match *c {
                "double" => "(double)t".to_string(),
                c => format!("convert_{c}_sat_rtz(t)"),
            };
            out.push_str(&format!(
                "\nstatic float heddle_odd_of_{c}({c} v) {{ float t = convert_float_rtz(v); \
                 return ({back} != v && !isnan(t)) ? as_float(as_uint(t) | 1u) : t; }}\n"
            ));
        }
        if self.kinds.contains("f16") {
            out.push_str(F16_HELPERS);
        }
        if self.kinds.contains("bf16") {
            out.push_str(BF16_HELPERS);
        }
        for stem in &self.atomics {
            out.push_str(&ATOMIC_ADD.replace("STEM", stem));
        }
        out
    }
}

/// IEEE binary16 from and to `float`, rounding to nearest even.
const F16_HELPERS: &str = "
static float heddle_from_f16(ushort h) {
  const uint sign = (uint)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return as_float(sign | 0x7f800000u | (m << 13));
  if (e == 0u) { const float f = (float)m * 5.9604644775390625e-8f; return sign ? -f : f; }
  return as_float(sign | ((e + 112u) << 23) | (m << 13));
}
static ushort heddle_to_f16(float f) {
  const uint x = as_uint(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return (ushort)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (ushort)(sign | 0x7c00u);
  if (a >= 0x38800000u) { const uint r = a - 0x38000000u; return (ushort)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13)); }
  return (ushort)(sign | (uint)rint(as_float(a) * 16777216.0f));
}
static float heddle_round_f16(float f) { return heddle_from_f16(heddle_to_f16(f)); }
";

/// bfloat16 from and to `float`, rounding to nearest even (a NaN stays a quiet NaN).
const BF16_HELPERS: &str = "
static float heddle_from_bf16(ushort h) { return as_float((uint)h << 16); }
static ushort heddle_to_bf16(float f) {
  const uint x = as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
  return (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
static float heddle_round_bf16(float f) { return heddle_from_bf16(heddle_to_bf16(f)); }
";

/// `*p += v` for a half slot (`STEM` is `f16` or `bf16`): OpenCL 1.2 has no
/// 16-bit atomics, so the aligned 32-bit word holding the slot is exchanged
/// with `atomic_cmpxchg` until no other work-item changed it in between
/// (the other half of the word is put back as found). Every access to the
/// word is atomic; the first exchange guesses it holds 0.
const ATOMIC_ADD: &str = "
static void heddle_atomic_add_STEM(volatile __global ushort* p, float v) {
  volatile __global uint* w = (volatile __global uint*)((size_t)p & ~(size_t)3);
#ifdef __ENDIAN_LITTLE__
  const uint sh = ((size_t)p & 2) ? 16u : 0u;
#else
  const uint sh = ((size_t)p & 2) ? 0u : 16u;
#endif
  uint old = 0u;
  for (;;) {
    const float sum = heddle_from_STEM((ushort)(old >> sh)) + v;
    const uint next = (old & ~(0xffffu << sh)) | ((uint)heddle_to_STEM(sum) << sh);
    const uint seen = atomic_cmpxchg(w, old, next);
    if (seen == old) break;
    old = seen;
  }
}
";

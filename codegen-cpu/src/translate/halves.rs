//! `f16` and `bf16`: held in an `f32` register (every value of either is
//! exact there), stored as their 16 bits, and rounded back after every
//! operation. Computing `+ - * /` in `f32` and rounding the result once more
//! gives the correctly rounded half result: `f32`'s 24 bits are at least
//! twice the half's precision plus two. Conversions from wider types round
//! once (helpers in `crate::helpers`, shared with nothing but the tests).
//!
//! Loads, stores and rounding are a few integer instructions and selects,
//! with no call (`bf16` is `f32`'s upper half; `f16` rebiases the exponent
//! and handles subnormals in `f32` arithmetic, which is exact there).
//! Conversions from `f64` and integers call the helpers (round to odd, then
//! to the half).

use super::Translator;
use crate::error::CodegenError;
use crate::helpers;
use cranelift_codegen::ir::{
    condcodes::{FloatCC, IntCC},
    types as ct, InstBuilder, MemFlagsData, Value,
};
use heddle_ir::ScalarType;

impl Translator<'_, '_> {
    fn call1(&mut self, helper: &'static str, arg: Value) -> Result<Value, CodegenError> {
        let f = self.helper(helper)?;
        let call = self.b.ins().call(f, &[arg]);
        Ok(self.b.inst_results(call)[0])
    }

    /// The value of the 16 `bits` (an `i16` loaded from memory) of a `t`.
    pub(super) fn half_from_bits(&mut self, bits: Value, t: ScalarType) -> Result<Value, CodegenError> {
        let wide = self.b.ins().uextend(ct::I32, bits);
        if t == ScalarType::BF16 {
            let shifted = self.b.ins().ishl_imm_s(wide, 16);
            return Ok(self.b.ins().bitcast(ct::F32, MemFlagsData::new(), shifted));
        }
        Ok(self.f16_from_bits(wide))
    }

    /// The `f16` in the low 16 bits of the `i32` `h`, as an `f32`: normal
    /// numbers rebias the exponent (15 → 127) and widen the significand;
    /// infinities and NaNs keep theirs; subnormals (`m` × 2^-24) are exact
    /// in `f32` arithmetic.
    fn f16_from_bits(&mut self, h: Value) -> Value {
        let sign = self.b.ins().band_imm_s(h, 0x8000);
        let sign = self.b.ins().ishl_imm_s(sign, 16);
        let e = self.b.ins().ushr_imm_s(h, 10);
        let e = self.b.ins().band_imm_s(e, 0x1f);
        let m = self.b.ins().band_imm_s(h, 0x3ff);
        let m13 = self.b.ins().ishl_imm_s(m, 13);
        let body = self.b.ins().bor(m13, sign);
        let exp = self.b.ins().ishl_imm_s(e, 23);
        let exp = self.b.ins().iadd_imm_s(exp, 112 << 23);
        let normal = self.b.ins().bor(exp, body);
        let special = self.b.ins().bor_imm_s(body, 0x7f80_0000);
        let mf = self.b.ins().fcvt_from_uint(ct::F32, m);
        let scale = self.b.ins().f32const(2f32.powi(-24));
        let sub = self.b.ins().fmul(mf, scale);
        let sub = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), sub);
        let sub = self.b.ins().bor(sub, sign);
        let is_special = self.b.ins().icmp_imm_s(IntCC::Equal, e, 0x1f);
        let is_sub = self.b.ins().icmp_imm_s(IntCC::Equal, e, 0);
        let bits = self.b.ins().select(is_special, special, normal);
        let bits = self.b.ins().select(is_sub, sub, bits);
        self.b.ins().bitcast(ct::F32, MemFlagsData::new(), bits)
    }

    /// The `f16` nearest to the `f32` `v` (ties to even), its bits in the
    /// low 16 of an `i32`: NaN stays a quiet NaN, at least 65520 in
    /// magnitude overflows to infinity, normal results round the cut
    /// significand bits, subnormal ones are `v` × 2^24 rounded to an integer.
    fn f16_bits_of(&mut self, v: Value) -> Value {
        let x = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), v);
        let sign = self.b.ins().ushr_imm_s(x, 16);
        let sign = self.b.ins().band_imm_s(sign, 0x8000);
        let a = self.b.ins().band_imm_s(x, 0x7fff_ffff);
        let r = self.b.ins().iadd_imm_s(a, -0x3800_0000);
        let lsb = self.b.ins().ushr_imm_s(r, 13);
        let lsb = self.b.ins().band_imm_s(lsb, 1);
        let r = self.b.ins().iadd_imm_s(r, 0xfff);
        let r = self.b.ins().iadd(r, lsb);
        let normal = self.b.ins().ushr_imm_s(r, 13);
        let nan = self.b.ins().ushr_imm_s(a, 13);
        let nan = self.b.ins().band_imm_s(nan, 0x3ff);
        let nan = self.b.ins().bor_imm_s(nan, 0x7e00);
        let af = self.b.ins().bitcast(ct::F32, MemFlagsData::new(), a);
        let scale = self.b.ins().f32const(16_777_216.0);
        let scaled = self.b.ins().fmul(af, scale);
        let scaled = self.b.ins().nearest(scaled);
        let sub = self.b.ins().fcvt_to_uint_sat(ct::I32, scaled);
        let inf = self.b.ins().iconst(ct::I32, 0x7c00);
        let is_normal = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, a, 0x3880_0000);
        let overflows = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, a, 0x477f_f000);
        let is_nan = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, a, 0x7f80_0000);
        let bits = self.b.ins().select(is_normal, normal, sub);
        let bits = self.b.ins().select(overflows, inf, bits);
        let bits = self.b.ins().select(is_nan, nan, bits);
        self.b.ins().bor(bits, sign)
    }

    /// The 16 bits (an `i16`) to store of `v`, an `f32` holding a `t`.
    pub(super) fn half_to_bits(&mut self, v: Value, t: ScalarType) -> Result<Value, CodegenError> {
        let bits = if t == ScalarType::BF16 {
            // Exact: a bf16 value's low 16 bits in an f32 are zero.
            let x = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), v);
            self.b.ins().ushr_imm_s(x, 16)
        } else {
            self.f16_bits_of(v)
        };
        Ok(self.b.ins().ireduce(ct::I16, bits))
    }

    /// `v`, an `f32`, rounded once, to nearest even, to the precision of `t`.
    pub(super) fn round_half(&mut self, v: Value, t: ScalarType) -> Result<Value, CodegenError> {
        if t == ScalarType::BF16 {
            // Add half an ulp of the bf16 (less one, plus the kept lowest
            // bit: ties to even), then cut the low half. A NaN stays NaN.
            let x = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), v);
            let lsb = self.b.ins().ushr_imm_s(x, 16);
            let lsb = self.b.ins().band_imm_s(lsb, 1);
            let up = self.b.ins().iadd_imm_s(lsb, 0x7fff);
            let r = self.b.ins().iadd(x, up);
            let r = self.b.ins().band_imm_s(r, 0xffff_0000u32 as i32 as i64);
            let rounded = self.b.ins().bitcast(ct::F32, MemFlagsData::new(), r);
            let nan = self.b.ins().fcmp(FloatCC::Unordered, v, v);
            let quiet = self.b.ins().bor_imm_s(x, 0x0040_0000);
            let quiet = self.b.ins().band_imm_s(quiet, 0xffff_0000u32 as i32 as i64);
            let quiet = self.b.ins().bitcast(ct::F32, MemFlagsData::new(), quiet);
            return Ok(self.b.ins().select(nan, quiet, rounded));
        }
        let bits = self.f16_bits_of(v);
        Ok(self.f16_from_bits(bits))
    }

    /// `v` of type `from` converted to the half type `t`, in one rounding.
    pub(super) fn to_half(&mut self, v: Value, from: ScalarType, t: ScalarType) -> Result<Value, CodegenError> {
        let bf = t == ScalarType::BF16;
        match from {
            ScalarType::F32 | ScalarType::F16 | ScalarType::BF16 => self.round_half(v, t),
            ScalarType::F64 => self.call1(if bf { helpers::BF16_OF_F64 } else { helpers::F16_OF_F64 }, v),
            ScalarType::U64 => self.call1(if bf { helpers::BF16_OF_U64 } else { helpers::F16_OF_U64 }, v),
            _ => {
                let wide = match from {
                    ScalarType::I64 => v,
                    f if f.is_signed() => self.b.ins().sextend(ct::I64, v),
                    _ => self.b.ins().uextend(ct::I64, v),
                };
                self.call1(if bf { helpers::BF16_OF_I64 } else { helpers::F16_OF_I64 }, wide)
            }
        }
    }
}

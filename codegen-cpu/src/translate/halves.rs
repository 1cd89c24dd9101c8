//! `f16` and `bf16`: held in an `f32` register (every value of either is
//! exact there), stored as their 16 bits, and rounded back after every
//! operation. Computing `+ - * /` in `f32` and rounding the result once more
//! gives the correctly rounded half result: `f32`'s 24 bits are at least
//! twice the half's precision plus two.
//!
//! Loads, stores and rounding are a few integer instructions and selects,
//! with no call (`bf16` is `f32`'s upper half; `f16` rebiases the exponent
//! and handles subnormals in `f32` arithmetic, which is exact there).
//! Conversions from `f64` and integers call `crate::helpers`, which round
//! once through `heddle_ir::rounding` as the interpreter does.

use super::Translator;
use crate::error::CodegenError;
use crate::helpers;
use cranelift_codegen::ir::{
    InstBuilder, MemFlagsData, Value,
    condcodes::{FloatCC, IntCC},
    types as ct,
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

    /// The `f16` in the low 16 bits of the `i32` `h`, as an `f32`: the
    /// exponent and significand bits moved to `f32`'s places and the value
    /// scaled by 2^112 (rebiasing 15 to 127; exact, and right for subnormal
    /// halves too, which land on `f32` subnormals), except infinities and
    /// NaNs, whose exponent becomes all ones.
    fn f16_from_bits(&mut self, h: Value) -> Value {
        let magnitude = self.b.ins().band_imm_s(h, 0x7fff);
        let o = self.b.ins().ishl_imm_s(magnitude, 13);
        let of = self.b.ins().bitcast(ct::F32, MemFlagsData::new(), o);
        let scale = self.b.ins().f32const(2f32.powi(112));
        let scaled = self.b.ins().fmul(of, scale);
        let scaled = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), scaled);
        let special = self.b.ins().bor_imm_s(o, 0x7f80_0000);
        let is_special = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, o, 0x0f80_0000);
        let bits = self.b.ins().select(is_special, special, scaled);
        let sign = self.b.ins().band_imm_s(h, 0x8000);
        let sign = self.b.ins().ishl_imm_s(sign, 16);
        let bits = self.b.ins().bor(bits, sign);
        self.b.ins().bitcast(ct::F32, MemFlagsData::new(), bits)
    }

    /// The `f16` nearest to the `f32` `v` (ties to even), its bits in the
    /// low 16 of an `i32`: NaN stays a quiet NaN (its top payload bits
    /// kept), 65536 and beyond in magnitude is infinite (65520 up to it
    /// rounds there by itself), normal results round the 13 cut significand
    /// bits, and subnormal ones are rounded by adding 0.5, whose last bit is
    /// worth 2^-24, the f16 subnormal step.
    fn f16_bits_of(&mut self, v: Value) -> Value {
        let x = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), v);
        let sign = self.b.ins().ushr_imm_s(x, 16);
        let sign = self.b.ins().band_imm_s(sign, 0x8000);
        let a = self.b.ins().band_imm_s(x, 0x7fff_ffff);
        let lsb = self.b.ins().ushr_imm_s(a, 13);
        let lsb = self.b.ins().band_imm_s(lsb, 1);
        let r = self.b.ins().iadd_imm_s(a, -0x3800_0000 + 0xfff);
        let r = self.b.ins().iadd(r, lsb);
        let normal = self.b.ins().ushr_imm_s(r, 13);
        let af = self.b.ins().bitcast(ct::F32, MemFlagsData::new(), a);
        let half = self.b.ins().f32const(0.5);
        let sum = self.b.ins().fadd(af, half);
        let sum = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), sum);
        let sub = self.b.ins().iadd_imm_s(sum, -0x3f00_0000);
        let nan = self.b.ins().ushr_imm_s(a, 13);
        let nan = self.b.ins().band_imm_s(nan, 0x3ff);
        let nan = self.b.ins().bor_imm_s(nan, 0x7e00);
        let inf = self.b.ins().iconst(ct::I32, 0x7c00);
        let is_normal = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, a, 0x3880_0000);
        let overflows = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, a, 0x4780_0000);
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
    pub(super) fn half_of(&mut self, v: Value, from: ScalarType, t: ScalarType) -> Result<Value, CodegenError> {
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

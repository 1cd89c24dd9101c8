//! `f16` and `bf16`: held in an `f32` register (every value of either is
//! exact there), stored as their 16 bits, and rounded back after every
//! operation. Computing `+ - * /` in `f32` and rounding the result once more
//! gives the correctly rounded half result: `f32`'s 24 bits are at least
//! twice the half's precision plus two. Conversions from wider types round
//! once (helpers in `crate::helpers`, shared with nothing but the tests).
//!
//! `bf16` is `f32`'s upper half, so its loads, stores and rounding from an
//! `f32` are a few integer instructions here; `f16` calls the helpers.

use super::Translator;
use crate::error::CodegenError;
use crate::helpers;
use cranelift_codegen::ir::{condcodes::FloatCC, types as ct, InstBuilder, MemFlagsData, Value};
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
        self.call1(helpers::F16_FROM_BITS, wide)
    }

    /// The 16 bits (an `i16`) to store of `v`, an `f32` holding a `t`.
    pub(super) fn half_to_bits(&mut self, v: Value, t: ScalarType) -> Result<Value, CodegenError> {
        let bits = if t == ScalarType::BF16 {
            // Exact: a bf16 value's low 16 bits in an f32 are zero.
            let x = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), v);
            self.b.ins().ushr_imm_s(x, 16)
        } else {
            self.call1(helpers::F16_TO_BITS, v)?
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
        let wide = self.b.ins().fpromote(ct::F64, v);
        self.call1(helpers::F16_OF_F64, wide)
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

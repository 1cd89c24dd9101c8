//! `AddAtomic`: an indivisible `buf[index].field += value`, for the
//! iterations of a parallel loop that the runtime spreads over threads.
//!
//! Integers use one atomic read-modify-write. Floats have no atomic add, so
//! the slot is updated with a compare-and-swap loop on its bits: read, add,
//! and swap in the sum only if no other thread wrote the slot in between
//! (the swap returns what it found; on a mismatch that value is the next
//! guess). Buffers are aligned to their records (the call's contract), so
//! every field is naturally aligned, as atomics need.

use super::Translator;
use crate::error::CodegenError;
use crate::types;
use cranelift_codegen::ir::{AtomicRmwOp, InstBuilder, MemFlagsData, condcodes::IntCC, types as ct};
use heddle_ir::loops::Expr;
use heddle_ir::{Name, ScalarType};

impl Translator<'_, '_> {
    pub(super) fn add_atomic(
        &mut self,
        buf: &Name,
        index: &Expr,
        field: u32,
        value: &Expr,
    ) -> Result<(), CodegenError> {
        let (v, _) = self.expr(value)?;
        let (addr, offset, ty, _) = self.address(buf, index, field)?;
        let p = if offset == 0 { addr } else { self.b.ins().iadd_imm_s(addr, i64::from(offset)) };
        let flags = MemFlagsData::trusted();
        let bits = match ty {
            ScalarType::F32 => ct::I32,
            ScalarType::F64 => ct::I64,
            ScalarType::Bool => return Err(CodegenError::Unsupported("an atomic add of booleans".into())),
            // Held in an f32, stored in 16 bits: the loop below widens the
            // bits it finds, adds, rounds and narrows.
            t if t.is_half() => ct::I16,
            int => {
                self.b.ins().atomic_rmw(types::clif_type(int), flags, AtomicRmwOp::Add, p, v);
                return Ok(());
            }
        };
        let guess = self.b.declare_var(bits);
        let first = self.b.ins().load(bits, flags, p, 0);
        self.b.def_var(guess, first);
        let (retry, done) = (self.b.create_block(), self.b.create_block());
        self.b.ins().jump(retry, &[]);
        self.b.switch_to_block(retry);
        let old = self.b.use_var(guess);
        let new = if ty.is_half() {
            let old_value = self.half_from_bits(old, ty)?;
            let sum = self.float_op(heddle_ir::loops::BinOp::Add, old_value, v, ty)?;
            self.half_to_bits(sum, ty)?
        } else {
            let old_value = self.b.ins().bitcast(types::clif_type(ty), MemFlagsData::new(), old);
            let sum = self.b.ins().fadd(old_value, v);
            self.b.ins().bitcast(bits, MemFlagsData::new(), sum)
        };
        let found = self.b.ins().atomic_cas(flags, p, old, new);
        self.b.def_var(guess, found);
        let swapped = self.b.ins().icmp(IntCC::Equal, found, old);
        self.b.ins().brif(swapped, done, &[], retry, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }
}

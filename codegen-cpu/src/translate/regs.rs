//! Small arrays in registers: a temporary or workspace of a constant number
//! of scalars (at most [`REGISTER_BYTES`], a whole number of 16-byte vectors)
//! lives in Cranelift `Variable`s, one vector per 16 bytes, rather than in
//! memory, when every access to it is at a constant position: a vector step
//! at lanes `c .. c + W` with `c` a multiple of `W`, or one element. The
//! accumulator row of SELL-8's `reduce(rowsum, generate(8, 0))` is then
//! zeroed, updated and read out in registers: no store-to-load chain from
//! one step to the next, no zeroing or copying through memory.
//!
//! Whether every access is constant is known only once the body is
//! translated (a lane loop runs straight, with constant lane positions, or
//! as a loop, by decisions taken in [`super::simd`]). So the translation is
//! optimistic: such an array gets a *sentinel* base, a constant that no
//! access in registers uses; any other access (a position that is not a
//! constant, a gather, an atomic add, a sort, a straight-line lane group)
//! goes through the ordinary memory paths, which use the base. After the
//! translation, [`super::function`] looks for uses of each sentinel and
//! translates again with the arrays whose sentinel was used kept in memory.
//! The invariant: an array in registers is accessed by nothing but
//! [`Translator::register_lanes`] and [`Translator::register_element`], so
//! its variables hold exactly what its memory would (it has no address to
//! alias, and each variable is defined at the allocation, as zero).

use super::Translator;
use crate::error::CodegenError;
use cranelift_codegen::ir::{InstBuilder, InstructionData, Opcode, Type, Value, ValueDef};
use cranelift_frontend::Variable;
use heddle_ir::loops::Expr;
use heddle_ir::{Name, ScalarType};

/// The largest array kept in registers: four 16-byte vectors (8 `f64`,
/// 16 `f32`), so that a loop with a few other vectors live does not spill.
pub(super) const REGISTER_BYTES: u64 = 64;

/// Vector registers are 16 bytes.
const VECTOR_BYTES: u64 = 16;

/// An array held in registers.
#[derive(Clone)]
pub(super) struct Registers {
    /// One variable per `width` consecutive elements.
    chunks: Vec<Variable>,
    /// Elements per vector.
    width: usize,
    /// The vector type.
    vty: Type,
    ty: ScalarType,
}

impl Registers {
    /// The variables, one per vector.
    pub(super) fn variables(&self) -> &[Variable] {
        &self.chunks
    }
}

/// The element type and count of an allocation that may live in registers.
pub(super) fn candidate(fields: &[ScalarType], len: &Expr) -> Option<(ScalarType, u64)> {
    let [t] = fields else { return None };
    if !matches!(
        t,
        ScalarType::F32 | ScalarType::F64 | ScalarType::I32 | ScalarType::U32 | ScalarType::I64 | ScalarType::U64
    ) {
        return None;
    }
    let Expr::Int(n, _) = len else { return None };
    let n = u64::try_from(*n).ok()?;
    let bytes = n.checked_mul(t.size_bytes() as u64)?;
    (n > 0 && bytes <= REGISTER_BYTES && bytes % VECTOR_BYTES == 0).then_some((*t, n))
}

impl Translator<'_, '_> {
    /// The registers of `n` elements of `t`, zero (a workspace starts zeroed;
    /// a temporary's contents before its first store are unspecified).
    pub(super) fn new_registers(&mut self, t: ScalarType, n: u64) -> Registers {
        let width = (VECTOR_BYTES / t.size_bytes() as u64) as usize;
        let vty = crate::types::clif_type(t).by(width as u32).expect("a 16-byte vector type");
        let zero = if t.is_float() {
            let z = if t == ScalarType::F32 { self.b.ins().f32const(0.0) } else { self.b.ins().f64const(0.0) };
            self.b.ins().splat(vty, z)
        } else {
            let z = self.b.ins().iconst(crate::types::clif_type(t), 0);
            self.b.ins().splat(vty, z)
        };
        let chunks = (0..n / width as u64)
            .map(|_| {
                let x = self.b.declare_var(vty);
                self.b.def_var(x, zero);
                x
            })
            .collect();
        Registers { chunks, width, vty, ty: t }
    }

    fn registers(&self, buf: &Name) -> Option<Registers> {
        self.buffer(buf).ok()?.regs.clone()
    }

    /// `v` when Cranelift would fold it to a constant: `iconst` and sums,
    /// differences, products and extensions of constants.
    pub(super) fn constant_int(&self, v: Value) -> Option<i64> {
        let dfg = &self.b.func.dfg;
        let v = dfg.resolve_aliases(v);
        let ValueDef::Result(inst, 0) = dfg.value_def(v) else { return None };
        match dfg.insts[inst] {
            InstructionData::UnaryImm { opcode: Opcode::Iconst, imm } => {
                let bits = dfg.value_type(v).bits();
                let x = imm.bits();
                // Sign-extend from the value's width.
                Some(if bits < 64 { (x << (64 - bits)) >> (64 - bits) } else { x })
            }
            InstructionData::Binary { opcode, args: [x, y] } => {
                let (x, y) = (self.constant_int(x)?, self.constant_int(y)?);
                match opcode {
                    Opcode::Iadd => x.checked_add(y),
                    Opcode::Isub => x.checked_sub(y),
                    Opcode::Imul => x.checked_mul(y),
                    _ => None,
                }
            }
            InstructionData::Unary { opcode: Opcode::Sextend | Opcode::Ireduce, arg } => {
                let x = self.constant_int(arg)?;
                let bits = dfg.value_type(v).bits();
                // A reduction that changes the value is not folded here.
                (bits >= 64 || (x >> (bits - 1)) == 0 || (x >> (bits - 1)) == -1).then_some(x)
            }
            _ => None,
        }
    }

    /// The variable of a vector access to `buf` at lanes `i0 .. i0 + width`,
    /// when `buf` is in registers and `i0` is a constant multiple of `width`.
    pub(super) fn register_lanes(&self, buf: &Name, i0: Value, width: usize) -> Option<(Variable, Type)> {
        let r = self.registers(buf)?;
        let c = self.constant_int(i0)?;
        let w = r.width as i64;
        (width == r.width && c >= 0 && c % w == 0 && ((c / w) as usize) < r.chunks.len())
            .then(|| (r.chunks[(c / w) as usize], r.vty))
    }

    /// The variable and lane of element `index` of `buf`, when `buf` is in
    /// registers and `index` (already evaluated) a constant in range.
    fn register_element(&self, buf: &Name, index: Value) -> Option<(Variable, u8, ScalarType)> {
        let r = self.registers(buf)?;
        let c = self.constant_int(index)?;
        let w = r.width as i64;
        (c >= 0 && ((c / w) as usize) < r.chunks.len()).then(|| (r.chunks[(c / w) as usize], (c % w) as u8, r.ty))
    }

    /// `buf[index]` from registers, or `None` (then the memory path).
    pub(super) fn register_load(
        &mut self,
        buf: &Name,
        index: &Expr,
        field: u32,
    ) -> Result<Option<(Value, ScalarType)>, CodegenError> {
        if field != 0 || self.registers(buf).is_none() {
            return Ok(None);
        }
        let (i, _) = self.expr(index)?;
        let Some((x, lane, t)) = self.register_element(buf, i) else { return Ok(None) };
        let v = self.b.use_var(x);
        Ok(Some((self.b.ins().extractlane(v, lane), t)))
    }

    /// `buf[index] = v` in registers; false when that is not possible (then
    /// the memory path).
    pub(super) fn register_store(
        &mut self,
        buf: &Name,
        index: &Expr,
        field: u32,
        v: Value,
    ) -> Result<bool, CodegenError> {
        if field != 0 || self.registers(buf).is_none() {
            return Ok(false);
        }
        let (i, _) = self.expr(index)?;
        let Some((x, lane, _)) = self.register_element(buf, i) else { return Ok(false) };
        let cur = self.b.use_var(x);
        let next = self.b.ins().insertlane(cur, v, lane);
        self.b.def_var(x, next);
        Ok(true)
    }

    /// The sentinel base of an array in registers (see the module's notes).
    pub(super) fn register_sentinel(&mut self, buf: &Name) -> Value {
        let v = self.b.ins().iconst(self.ptr_ty, 0);
        self.sentinels.push((v, buf.clone()));
        v
    }
}

//! A row's start, read once per row (and optionally carried from the
//! previous row's end).
//!
//! A CSR row loop reads `pos[i]` (its start) in several forms: the bound of
//! the row's loop `pos[i + 1] - pos[i]` and the row's offset
//! `pos[idx] - pos[0]` with `idx = (i64) (int) i`. A loop whose body loads
//! `buf[i]` and `buf[i + 1]` from a read-only buffer unconditionally, before
//! anything that could stop it, loads `buf[i]` once at the head of each
//! iteration, and every read of it in the body (through `let`s and range-
//! checked conversions of `i`) is that one value. That is what lets
//! `address` see `(q - pos[i]) + (pos[i] - pos[0])` as `q - pos[0]` (the
//! same `pos[i]` twice) and a row's end `(pos[i + 1] - pos[i]) + pos[i]` as
//! `pos[i + 1]` (`reduce.rs`).
//!
//! With [`ACROSS_ITERATIONS`], `buf[i]` is instead a loop variable: loaded
//! at `lo` before the loop, then set at the end of each iteration to that
//! iteration's `buf[i + 1]`, loaded at the head (the body's load of it
//! merges with that one; after the row's store Cranelift would load it
//! again). The value is the same whatever the body does (the buffer is
//! never written), so either is only a choice of where to load.

use super::{Bound, Translator};
use crate::error::CodegenError;
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::Variable;
use heddle_ir::loops::{BinOp, Expr, Stmt};
use heddle_ir::{Name, ScalarType};

/// A load carried across iterations of the loop over `var`.
pub(super) struct Carried {
    pub(super) var: Name,
    pub(super) buf: Name,
    pub(super) field: u32,
    /// The value of `buf[var]`, as a loop variable (widened to `i64` for a
    /// narrow integer).
    pub(super) slot: Variable,
    /// Its value in the current iteration, read at the loop's head.
    pub(super) current: Option<Value>,
    /// `buf[var + 1]` in the current iteration, loaded at the loop's head.
    pub(super) next: Option<Value>,
    /// The field is a `u32` (its values, widened, lie in `0 .. 2^32`).
    pub(super) unsigned32: bool,
}

/// Whether `buf[i]` is carried from the previous iteration (its `buf[i + 1]`)
/// in a loop variable, or loaded once at the head of each iteration for all
/// of the body's reads of it. Carried, a CSR row loop has one load of `pos`
/// per row instead of two, but the variable costs a move on the loop's back
/// edge, in a block of its own (a jump more): one instruction more per row
/// (callgrind: 27 against 26 per row of 2 entries, docs/performance.md,
/// "rowloop2"). Loaded at the head, every read of `pos[i]` is one value,
/// which lets `address` cancel `(q - pos[i]) + (pos[i] - pos[0])`.
const ACROSS_ITERATIONS: bool = false;

/// The name every carried load's index is bound to while it is loaded.
const INDEX: &str = "carried index";

/// `e` as `var + c` (`Some(c)`), looking through `lets` (innermost last),
/// integer conversions of `var` itself (a loop variable whose range fits
/// them, which `narrow_ok` says) and additions of `i64` constants.
fn offset_of(e: &Expr, var: &Name, lets: &[(Name, Expr)], narrow_ok: bool, depth: usize) -> Option<i64> {
    if depth > 16 {
        return None;
    }
    match e {
        Expr::Var(n) if n == var => Some(0),
        Expr::Var(n) => {
            let (_, v) = lets.iter().rev().find(|(m, _)| m == n)?;
            offset_of(v, var, lets, narrow_ok, depth + 1)
        }
        // `(int) i`, `(i64) (int) i`: the value of `i` when its range fits.
        Expr::Cast(t, a) if t.is_int() && t.size_bytes() >= 4 => {
            let c = offset_of(a, var, lets, narrow_ok, depth + 1)?;
            (c == 0 && (*t == ScalarType::I64 || narrow_ok)).then_some(0)
        }
        Expr::Bin(BinOp::Add, a, b) => match (&**a, &**b) {
            (x, Expr::Int(c, ScalarType::I64)) | (Expr::Int(c, ScalarType::I64), x) => {
                offset_of(x, var, lets, narrow_ok, depth + 1)?.checked_add(*c)
            }
            _ => None,
        },
        _ => None,
    }
}

/// The loads `buf[index].field` that evaluating `e` always performs (not
/// those in the arms of a `select` or the right of `&&`, `||`).
fn loads<'e>(e: &'e Expr, out: &mut Vec<(&'e Name, &'e Expr, u32)>) {
    match e {
        Expr::Load { buf, index, field } => {
            out.push((buf, index, *field));
            loads(index, out);
        }
        Expr::Bin(BinOp::And | BinOp::Or, a, _) | Expr::Select(a, _, _) => loads(a, out),
        Expr::Bin(_, a, b) => {
            loads(a, out);
            loads(b, out);
        }
        Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => loads(a, out),
        Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => {}
    }
}

impl Translator<'_, '_> {
    /// The read-only buffer (and field) whose `buf[var]` and `buf[var + 1]`
    /// the body loads in its first statements, before any check, `if`,
    /// store or loop body: `let`s, and the bounds of a loop.
    fn carried_candidate(&self, var: &Name, body: &[Stmt]) -> Option<(Name, u32)> {
        let mut lets: Vec<(Name, Expr)> = Vec::new();
        let mut found: Vec<(Name, u32, i64)> = Vec::new();
        let mut scan = |e: &Expr, lets: &[(Name, Expr)]| {
            let mut ls = Vec::new();
            loads(e, &mut ls);
            for (buf, index, field) in ls {
                if let Some(c) = offset_of(index, var, lets, true, 0) {
                    found.push((buf.clone(), field, c));
                }
            }
        };
        for s in body {
            match s {
                Stmt::Let { var: n, value, .. } => {
                    scan(value, &lets);
                    lets.push((n.clone(), value.clone()));
                }
                Stmt::Var { init, .. } => scan(init, &lets),
                Stmt::For { lo, hi, .. } => {
                    scan(lo, &lets);
                    scan(hi, &lets);
                    break;
                }
                _ => break,
            }
        }
        found
            .iter()
            .find(|(b, f, c)| {
                *c == 0
                    && found.iter().any(|(b1, f1, c1)| b1 == b && f1 == f && *c1 == 1)
                    && self.buffer(b).is_ok_and(|x| x.readonly)
                    && !lets.iter().any(|(n, _)| n == b)
            })
            .map(|(b, f, _)| (b.clone(), *f))
    }

    /// `buf[index].field` for an `i64` value `index`, as `expr` loads it
    /// (a narrow integer widened to `i64`).
    fn load_at(&mut self, buf: &Name, field: u32, index: Value) -> Result<Value, CodegenError> {
        self.scope.push((Name::from(INDEX), Bound::Val(index, ScalarType::I64)));
        let e = Expr::Load { buf: buf.clone(), index: Box::new(Expr::Var(Name::from(INDEX))), field };
        let r = self.expr(&e);
        self.scope.pop();
        let (v, ty) = r?;
        Ok(self.widened_from(v, ty).unwrap_or(v))
    }

    /// In a loop's pre-header: the carried load of the loop over `var`
    /// from `lo_v` with this body, if it has one, loaded at `lo_v`.
    pub(super) fn start_carry(
        &mut self,
        var: &Name,
        lo_v: Value,
        body: &[Stmt],
    ) -> Result<Option<Carried>, CodegenError> {
        let Some((buf, field)) = self.carried_candidate(var, body) else { return Ok(None) };
        let ty = *self
            .buffer(&buf)?
            .fields
            .get(field as usize)
            .ok_or_else(|| CodegenError::Unsupported(format!("field {field} of `{buf}`")))?;
        let wide = if ty.is_int() && ty != ScalarType::Bool && ty.size_bytes() < 8 {
            cranelift_codegen::ir::types::I64
        } else {
            crate::types::clif_type(ty)
        };
        let slot = self.b.declare_var(wide);
        if ACROSS_ITERATIONS {
            let first = self.load_at(&buf, field, lo_v)?;
            self.b.def_var(slot, first);
        }
        let unsigned32 = self.buffer(&buf)?.fields.get(field as usize) == Some(&ScalarType::U32);
        Ok(Some(Carried { var: var.clone(), buf, field, slot, current: None, next: None, unsigned32 }))
    }

    /// At the loop's head (the loop variable `i` in scope): the carried
    /// value of this iteration, and the next one's, `buf[i + 1]`, loaded
    /// here (the body's load of it becomes the same load). Loaded after
    /// the body, it would be loaded again: Cranelift does not reuse a load
    /// across a store (the row's result).
    pub(super) fn enter_carry(&mut self, c: Option<Carried>) -> Result<(), CodegenError> {
        if let Some(mut c) = c {
            c.current = Some(if ACROSS_ITERATIONS {
                self.b.use_var(c.slot)
            } else {
                let (i, _) = self.expr(&Expr::Var(c.var.clone()))?;
                self.load_at(&c.buf.clone(), c.field, i)?
            });
            if !ACROSS_ITERATIONS {
                self.carried.push(c);
                return Ok(());
            }
            let next = Expr::Load {
                buf: c.buf.clone(),
                index: Box::new(Expr::Bin(
                    BinOp::Add,
                    Box::new(Expr::Var(c.var.clone())),
                    Box::new(Expr::Int(1, ScalarType::I64)),
                )),
                field: c.field,
            };
            let (v, ty) = self.expr(&next)?;
            c.next = Some(self.widened_from(v, ty).unwrap_or(v));
            self.carried.push(c);
        }
        Ok(())
    }

    /// At the end of an iteration: the next iteration's value is this
    /// one's `buf[i + 1]`; the carried load leaves scope.
    pub(super) fn end_carry(&mut self, var: &Name) {
        if let Some(pos) = self.carried.iter().rposition(|c| c.var == *var) {
            let c = self.carried.remove(pos);
            if let Some(next) = c.next {
                self.b.def_var(c.slot, next);
            }
        }
    }

    /// The carried value for the load `buf[index].field`, if `index` is
    /// its loop's variable.
    pub(super) fn carried_value(&mut self, buf: &Name, index: &Expr, field: u32) -> Option<(Value, ScalarType)> {
        let c = self.carried.iter().rev().find(|c| c.buf == *buf && c.field == field)?;
        let narrow_ok = self.narrow_safe.contains(&c.var);
        if offset_of(index, &c.var, &self.let_values, narrow_ok, 0) != Some(0) {
            return None;
        }
        let (w, var) = (c.current?, c.var.clone());
        // The loop variable is the one in scope (not a shadowing name).
        let pos = self.position(&var).ok()?;
        if !matches!(self.scope[pos].1, Bound::Var(..)) {
            return None;
        }
        let ty = *self.buffer(buf).ok()?.fields.get(field as usize)?;
        if ty.is_int() && ty != ScalarType::Bool && ty.size_bytes() < 8 {
            let narrow = self.b.ins().ireduce(crate::types::clif_type(ty), w);
            self.widened.insert((narrow, ty), w);
            return Some((narrow, ty));
        }
        Some((w, ty))
    }
}

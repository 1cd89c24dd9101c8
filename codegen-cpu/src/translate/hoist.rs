//! Loop-invariant load hoisting.
//!
//! Cranelift's optimiser hoists pure instructions out of loops but not
//! loads, unless they are marked `can_move`, which would also let it move
//! them above the checks and branches their validity rests on. This pass
//! does the safe part at translation time: a load from a read-only buffer
//! (an input or host buffer) whose index does not change within a loop and
//! that every iteration executes before anything that could stop or branch
//! (a check, an `if`, a nested loop's body) is loaded once in the loop's
//! pre-header, which runs only when the loop runs at least once. It
//! matters for indices such as `values[offset[i] + j]` in a loop over `j`.

use super::Translator;
use super::expr::may_fault;
use crate::error::CodegenError;
use heddle_ir::Name;
use heddle_ir::loops::{BinOp, Expr, Stmt};

/// The names a block assigns (`x = …`), nested blocks included.
pub(super) fn assigned(b: &[Stmt], out: &mut Vec<Name>) {
    for s in b {
        match s {
            Stmt::Assign { var, .. } if !out.contains(var) => out.push(var.clone()),
            Stmt::For { body, .. } => assigned(body, out),
            Stmt::If { then, els, .. } => {
                assigned(then, out);
                assigned(els, out);
            }
            _ => {}
        }
    }
}

/// The names a block declares, nested blocks included.
pub(super) fn declared(b: &[Stmt], out: &mut Vec<Name>) {
    for s in b {
        match s {
            Stmt::Let { var, .. } | Stmt::Var { var, .. } => out.push(var.clone()),
            Stmt::Alloc { buf, .. } => out.push(buf.clone()),
            Stmt::For { var, body, .. } => {
                out.push(var.clone());
                declared(body, out);
            }
            Stmt::If { then, els, .. } => {
                declared(then, out);
                declared(els, out);
            }
            _ => {}
        }
    }
}

impl Translator<'_, '_> {
    /// Whether `e` has the same value in every iteration of a loop whose
    /// body declares `inner` (a variable is invariant when declared outside,
    /// a load when its buffer is read-only and its index invariant).
    fn invariant(&self, e: &Expr, inner: &[Name]) -> bool {
        match e {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) => true,
            Expr::Var(n) => !inner.contains(n),
            Expr::Load { buf, index, .. } => {
                !inner.contains(buf) && self.buffer(buf).is_ok_and(|b| b.readonly) && self.invariant(index, inner)
            }
            // A division could fault; keep it where it is.
            Expr::Bin(BinOp::Div | BinOp::Rem, ..) => false,
            Expr::Bin(_, a, b) => self.invariant(a, inner) && self.invariant(b, inner),
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => self.invariant(a, inner),
            Expr::Select(c, a, b) => self.invariant(c, inner) && self.invariant(a, inner) && self.invariant(b, inner),
        }
    }

    /// The invariant loads that evaluating `e` always performs.
    fn collect(&self, e: &Expr, inner: &[Name], out: &mut Vec<Expr>) {
        match e {
            Expr::Load { index, .. } => {
                if self.invariant(e, inner) {
                    if !out.contains(e) {
                        out.push(e.clone());
                    }
                } else {
                    self.collect(index, inner, out);
                }
            }
            // Only the operands C always evaluates.
            Expr::Bin(BinOp::And | BinOp::Or, a, b) => {
                self.collect(a, inner, out);
                if !may_fault(b) {
                    self.collect(b, inner, out);
                }
            }
            Expr::Bin(_, a, b) => {
                self.collect(a, inner, out);
                self.collect(b, inner, out);
            }
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => self.collect(a, inner, out),
            Expr::Select(c, a, b) => {
                self.collect(c, inner, out);
                if !may_fault(a) && !may_fault(b) {
                    self.collect(a, inner, out);
                    self.collect(b, inner, out);
                }
            }
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => {}
        }
    }

    /// Emits, in the current (pre-header) block, the invariant loads the
    /// first iteration of a loop over `var` with this body performs before
    /// anything that could branch or stop, and records them for reuse.
    pub(super) fn hoist_invariant_loads(&mut self, var: &Name, body: &[Stmt]) -> Result<(), CodegenError> {
        for e in self.invariant_loads(var, body) {
            let (v, t) = self.expr(&e)?;
            self.hoisted.push((e, v, t));
        }
        Ok(())
    }

    /// The loads [`hoist_invariant_loads`](Self::hoist_invariant_loads)
    /// would emit for a loop over `var` with this body (none emitted here).
    pub(super) fn invariant_loads(&self, var: &Name, body: &[Stmt]) -> Vec<Expr> {
        let mut inner = vec![var.clone()];
        declared(body, &mut inner);
        // A variable assigned in the loop is not invariant either.
        assigned(body, &mut inner);
        let mut loads = Vec::new();
        for s in body {
            match s {
                Stmt::Let { value, .. } | Stmt::Var { init: value, .. } | Stmt::Assign { value, .. } => {
                    self.collect(value, &inner, &mut loads)
                }
                Stmt::Store { index, value, .. } | Stmt::AddAtomic { index, value, .. } => {
                    self.collect(value, &inner, &mut loads);
                    self.collect(index, &inner, &mut loads);
                }
                Stmt::Alloc { len, .. } => self.collect(len, &inner, &mut loads),
                Stmt::Barrier => {}
                Stmt::Sort { .. } => break,
                Stmt::For { lo, hi, .. } => {
                    self.collect(lo, &inner, &mut loads);
                    self.collect(hi, &inner, &mut loads);
                    break;
                }
                Stmt::If { cond, .. } | Stmt::Check { cond, .. } => {
                    self.collect(cond, &inner, &mut loads);
                    break;
                }
            }
        }
        loads
    }
}

//! Kernel arguments re-loaded in the pre-headers of inner loops.
//!
//! Every argument (a size such as MTTKRP's `J`, a scalar, a buffer's base)
//! is loaded once at entry ([`Translator::bind_args`]), so its value is live
//! across the whole kernel. In a deep nest that is more values than
//! registers: Cranelift's register allocator spills them and reloads each at
//! its use, inside the innermost loops (MTTKRP's `J` and `D`'s base, once
//! per nonzero, plus a spill store on the back edge). And the pure values
//! derived from one argument in several loops (the j loops' `J - J mod 8`,
//! `J mod 8`, …) are merged by Cranelift's GVN into one value, live across
//! the kernel too.
//!
//! So a sequential loop nested in two others whose body holds a loop
//! re-loads, in its pre-header, the arguments its body names, from the
//! argument block (read-only for the call: a load there is always valid).
//! The body sees only the fresh values, which live no longer than the loop;
//! a value derived from them is computed per entry of the loop (hoisted by
//! Cranelift to its pre-header) instead of once per kernel. Leaf loops do
//! not re-load: their pre-header runs once per iteration of the loop around
//! them. Nor do loops nested in one loop only: there the values the outer
//! loop needs are few enough for the registers, and a re-loaded copy would
//! be live beside the entry's (SpMM's column loop: 7 more instructions per
//! nonzero). A re-loaded value remembers the entry value it equals, so that
//! [`check_narrow_range`](Translator::check_narrow_range) still sees two
//! loops over `0 .. J` as the same bounds.

use super::{Bound, Buf, Translator};
use crate::error::CodegenError;
use crate::types;
use cranelift_codegen::ir::{InstBuilder, Value};
use heddle_ir::Name;
use heddle_ir::loops::{ArgKind, Expr, Stmt, record_layout};

/// What [`Translator::end_rebase`] restores: the scope and buffer lengths
/// before the re-loaded bindings.
pub(super) struct Rebased {
    scope: usize,
    bufs: usize,
}

/// Adds to `out` the names (variables and buffers) that `e` reads
/// (the walk is [`Expr::children`], as every such analysis's).
fn expr_names(e: &Expr, out: &mut Vec<Name>) {
    match e {
        Expr::Var(n) => push(out, n),
        Expr::Load { buf, .. } => push(out, buf),
        _ => {}
    }
    for c in e.children() {
        expr_names(c, out);
    }
}

fn push(out: &mut Vec<Name>, n: &Name) {
    if !out.contains(n) {
        out.push(n.clone());
    }
}

/// Adds to `out` the names (variables and buffers) that `b` reads or writes,
/// nested blocks included, except in the bodies of nested loops that hold a
/// loop: such a loop re-loads what its body names itself (a loop translated
/// otherwise sees the enclosing binding, the same value).
fn block_names(b: &[Stmt], out: &mut Vec<Name>) {
    for s in b {
        match s {
            Stmt::Let { value, .. } | Stmt::Var { init: value, .. } | Stmt::Assign { value, .. } => {
                expr_names(value, out)
            }
            Stmt::Store { buf, index, value, .. } | Stmt::AddAtomic { buf, index, value, .. } => {
                push(out, buf);
                expr_names(index, out);
                expr_names(value, out);
            }
            Stmt::For { lo, hi, body, .. } => {
                expr_names(lo, out);
                expr_names(hi, out);
                if !super::stmt::has_loop(body) {
                    block_names(body, out);
                }
            }
            Stmt::If { cond, then, els } => {
                expr_names(cond, out);
                block_names(then, out);
                block_names(els, out);
            }
            Stmt::Check { cond, .. } => expr_names(cond, out),
            Stmt::Alloc { len, .. } => expr_names(len, out),
            Stmt::Sort { buf, lo, len } => {
                push(out, buf);
                expr_names(lo, out);
                expr_names(len, out);
            }
            Stmt::Barrier => {}
        }
    }
}

impl Translator<'_, '_> {
    /// Whether a loop with this body, at the current depth, re-loads the
    /// arguments it names: nested in two loops or more, and not a leaf.
    pub(super) fn rebases(&self, body: &[Stmt]) -> bool {
        self.depth >= 2 && super::stmt::has_loop(body)
    }

    /// In the pre-header of a loop with this body: binds each kernel
    /// argument the body names, and that still means the argument here, to a
    /// fresh load from the argument block.
    pub(super) fn rebase(&mut self, body: &[Stmt]) -> Result<Rebased, CodegenError> {
        let marks = Rebased { scope: self.scope.len(), bufs: self.bufs.len() };
        let mut names = Vec::new();
        block_names(body, &mut names);
        // Loads that Cranelift must not merge with the entry's (nor with an
        // enclosing pre-header's): not `readonly`, so the stores between
        // them keep them apart.
        let flags = types::arg_slot_reload();
        for (k, a) in self.prog.args.iter().enumerate() {
            if !names.contains(&a.name) {
                continue;
            }
            let off = (8 * k) as i32;
            match &a.kind {
                ArgKind::Nat | ArgKind::Scalar(_) => {
                    let Ok(pos) = self.position(&a.name) else { continue };
                    let Bound::Val(old, t) = self.scope[pos].1 else { continue };
                    let Some(&entry) = self.arg_values.get(k) else { continue };
                    if self.canonical(old) != entry {
                        continue; // shadowed by a `let` of the same name
                    }
                    let v = self.b.ins().load(types::clif_type(t), flags, self.args_ptr, off);
                    self.reloaded.insert(v, entry);
                    self.scope.push((a.name.clone(), Bound::Val(v, t)));
                }
                ArgKind::Input { .. } | ArgKind::Output { .. } | ArgKind::Host => {
                    let Ok(buf) = self.buffer(&a.name) else { continue };
                    let Some(&entry) = self.arg_values.get(k) else { continue };
                    if self.canonical(buf.base) != entry {
                        continue; // shadowed by an allocation of the same name
                    }
                    let (fields, readonly) = (buf.fields.clone(), buf.readonly);
                    let base = self.b.ins().load(self.ptr_ty, flags, self.args_ptr, off);
                    self.reloaded.insert(base, entry);
                    let layout = record_layout(&fields);
                    self.bufs.push((a.name.clone(), Buf { base, fields, layout, readonly, regs: None }));
                }
            }
        }
        Ok(marks)
    }

    /// Ends the bindings of [`rebase`](Self::rebase) after the loop.
    pub(super) fn end_rebase(&mut self, marks: Rebased) {
        self.scope.truncate(marks.scope);
        self.bufs.truncate(marks.bufs);
    }

    /// Whether the name at scope position `pos` is bound to its argument's
    /// value (loaded at entry or re-loaded), not to a `let` that shadows it.
    pub(super) fn is_arg_value(&self, pos: usize) -> bool {
        let (name, Bound::Val(v, _)) = &self.scope[pos] else { return false };
        let k = self.prog.args.iter().position(|a| &a.name == name);
        k.and_then(|k| self.arg_values.get(k)).is_some_and(|&e| self.canonical(*v) == e)
    }

    /// The entry value `v` re-loads, or `v` itself.
    pub(super) fn canonical(&self, v: Value) -> Value {
        self.reloaded.get(&v).copied().unwrap_or(v)
    }
}

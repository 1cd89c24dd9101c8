//! Clean-up of a lowered loop program: bounds checks an index provably
//! satisfies are dropped, and loop-invariant `let`s are hoisted.
//!
//! Lowering is local: indexing a view emits `check 0 <= k < len` and binds a
//! sub-array's start wherever the element is reached, so the view of a tensor
//! parameter (`generate` over rows, `generate` over a row's entries) checks
//! every position it produced itself and recomputes a row's start for each
//! entry. Both are removed here, on the finished program, where the facts are
//! plain:
//!
//! - **Ranges.** A loop `for v in 0 .. hi` gives `0 <= v < hi` inside it. A
//!   `let` that renames a variable (`let A_i: int = (int) i`, `let idx: i64 =
//!   (i64) A_i`) has its range. A check `k >= 0 && k < len` is dropped when `k`
//!   has a range `0 .. hi` and `hi` and `len` are the same expression once the
//!   renamings are undone. Casts to 32-bit indices are taken as exact: a
//!   `generate` index is an `int`, so lengths beyond 2^31 are outside what the
//!   language's index type can express anyway.
//! - **Repeats.** A check whose condition, renamings undone, is the one of a
//!   check already made in an enclosing block (or earlier in the same one) is
//!   dropped: a failed check stops the kernel, so past it the condition holds.
//!   Conditions that mention a mutable local are never taken as repeated.
//! - **Hoisting.** A `let` at the head of a loop body (before any check, store
//!   or nested statement, so nothing inside the loop guards it) whose value
//!   uses only variables bound outside the loop, reads only buffers the kernel
//!   never writes, and cannot fault (no division) moves in front of the loop.
//!   Executing it when the loop runs zero times is harmless.

use heddle_ir::loops::{BinOp, Block, Expr as L, LoopProgram, Stmt};
use heddle_ir::{Name, ScalarType};
use std::collections::{HashMap, HashSet};

/// Drops provable checks and hoists invariant `let`s, in place.
pub fn tidy(prog: &mut LoopProgram) {
    let mut written = HashSet::new();
    stored_buffers(&prog.body, &mut written);
    let mut mutable = HashSet::new();
    mutated(&prog.body, &mut mutable);
    let mut cx = Tidy { aliases: HashMap::new(), ranges: HashMap::new(), written, mutable, checked: Vec::new() };
    let body = std::mem::take(&mut prog.body);
    prog.body = cx.block(body);
}

struct Tidy {
    /// `let x = v` or `let x = (t) v` for an integer `t`: x stands for v.
    aliases: HashMap<Name, L>,
    /// Loop variables: their exclusive upper bound (the lower bound is 0).
    ranges: HashMap<Name, L>,
    /// Buffers some statement stores to (outputs, temporaries).
    written: HashSet<Name>,
    /// Mutable locals (`var`s): a condition over one may change.
    mutable: HashSet<Name>,
    /// Conditions (renamings undone) of the checks in force here.
    checked: Vec<L>,
}

impl Tidy {
    fn block(&mut self, body: Block) -> Block {
        let in_force = self.checked.len();
        let out = self.block_inner(body);
        self.checked.truncate(in_force);
        out
    }

    fn block_inner(&mut self, body: Block) -> Block {
        let mut out = Block::with_capacity(body.len());
        for s in body {
            match s {
                Stmt::Let { var, ty, value } => {
                    if let Some(v) = renaming(&value, ty) {
                        self.aliases.insert(var.clone(), v);
                    }
                    out.push(Stmt::Let { var, ty, value });
                }
                Stmt::Check { cond, id } => {
                    let canon = self.canon(&cond);
                    let repeated = self.checked.contains(&canon);
                    if !repeated && !self.provable(&cond) {
                        if !mentions_any(&canon, &self.mutable) {
                            self.checked.push(canon);
                        }
                        out.push(Stmt::Check { cond, id });
                    }
                }
                Stmt::For { var, lo, hi, schedule, body } => {
                    if lo == L::index(0) {
                        self.ranges.insert(var.clone(), hi.clone());
                    }
                    let body = self.block(body);
                    let (hoisted, body) = self.hoist(&var, body);
                    out.extend(hoisted);
                    out.push(Stmt::For { var, lo, hi, schedule, body });
                }
                Stmt::If { cond, then, els } => {
                    let then = self.block(then);
                    let els = self.block(els);
                    out.push(Stmt::If { cond, then, els });
                }
                other => out.push(other),
            }
        }
        out
    }

    /// `e` with renamings undone (to compare bounds).
    fn canon(&self, e: &L) -> L {
        match e {
            L::Var(v) => match self.aliases.get(v) {
                Some(to) => self.canon(to),
                None => e.clone(),
            },
            L::Cast(t, a) if t.is_int() => {
                let a = self.canon(a);
                if matches!(a, L::Var(_)) { a } else { L::Cast(*t, Box::new(a)) }
            }
            L::Load { buf, index, field } => L::Load { buf: buf.clone(), index: Box::new(self.canon(index)), field: *field },
            L::Bin(op, a, b) => L::Bin(*op, Box::new(self.canon(a)), Box::new(self.canon(b))),
            L::Neg(a) => L::Neg(Box::new(self.canon(a))),
            L::Not(a) => L::Not(Box::new(self.canon(a))),
            L::Cast(t, a) => L::Cast(*t, Box::new(self.canon(a))),
            L::Select(c, a, b) => L::Select(Box::new(self.canon(c)), Box::new(self.canon(a)), Box::new(self.canon(b))),
            other => other.clone(),
        }
    }

    /// `k >= 0 && k < len` where `k` is a loop variable of `0 .. len`.
    fn provable(&self, cond: &L) -> bool {
        let L::Bin(BinOp::And, ge, lt) = cond else { return false };
        let (L::Bin(BinOp::Ge, k, zero), L::Bin(BinOp::Lt, k2, len)) = (&**ge, &**lt) else { return false };
        if **zero != L::index(0) || k != k2 {
            return false;
        }
        let L::Var(v) = self.canon(k) else { return false };
        self.ranges.get(&v).is_some_and(|hi| self.canon(hi) == self.canon(len))
    }

    /// Splits the `let`s of a loop body's head that can run before the loop.
    fn hoist(&self, var: &Name, body: Block) -> (Block, Block) {
        let mut inside: HashSet<Name> = HashSet::from([var.clone()]);
        assigned(&body, &mut inside);
        let (mut hoisted, mut kept) = (Block::new(), Block::new());
        let mut head = true;
        for s in body {
            head &= matches!(s, Stmt::Let { .. } | Stmt::Var { .. });
            match s {
                Stmt::Let { var, ty, value } if head && self.invariant(&value, &inside) => {
                    hoisted.push(Stmt::Let { var, ty, value });
                }
                s => {
                    if let Stmt::Let { var, .. } | Stmt::Var { var, .. } = &s {
                        inside.insert(var.clone());
                    }
                    kept.push(s);
                }
            }
        }
        (hoisted, kept)
    }

    fn invariant(&self, e: &L, inside: &HashSet<Name>) -> bool {
        match e {
            L::Var(v) => !inside.contains(v),
            L::Int(..) | L::Float(..) | L::Bool(_) => true,
            L::Load { buf, index, .. } => !self.written.contains(buf) && self.invariant(index, inside),
            L::Bin(BinOp::Div | BinOp::Rem, ..) => false,
            L::Bin(_, a, b) => self.invariant(a, inside) && self.invariant(b, inside),
            L::Neg(a) | L::Not(a) | L::Cast(_, a) => self.invariant(a, inside),
            L::Select(c, a, b) => self.invariant(c, inside) && self.invariant(a, inside) && self.invariant(b, inside),
        }
    }
}

/// `v` or `(t) v` for an index-wide integer type `t`.
fn renaming(value: &L, ty: ScalarType) -> Option<L> {
    let wide = matches!(ty, ScalarType::I32 | ScalarType::I64 | ScalarType::U32 | ScalarType::U64);
    match value {
        L::Var(_) if wide => Some(value.clone()),
        L::Cast(t, inner) if wide && *t == ty && matches!(**inner, L::Var(_)) => Some((**inner).clone()),
        _ => None,
    }
}

/// Variables mutated anywhere in a block (accumulators): never invariant.
fn assigned(body: &Block, out: &mut HashSet<Name>) {
    for s in body {
        match s {
            Stmt::Assign { var, .. } | Stmt::Var { var, .. } => {
                out.insert(var.clone());
            }
            Stmt::For { var, body, .. } => {
                out.insert(var.clone());
                assigned(body, out);
            }
            Stmt::If { then, els, .. } => {
                assigned(then, out);
                assigned(els, out);
            }
            _ => {}
        }
    }
}

/// Mutable locals: the targets of `var` and assignments.
fn mutated(body: &Block, out: &mut HashSet<Name>) {
    for s in body {
        match s {
            Stmt::Assign { var, .. } | Stmt::Var { var, .. } => {
                out.insert(var.clone());
            }
            Stmt::For { body, .. } => mutated(body, out),
            Stmt::If { then, els, .. } => {
                mutated(then, out);
                mutated(els, out);
            }
            _ => {}
        }
    }
}

fn mentions_any(e: &L, names: &HashSet<Name>) -> bool {
    match e {
        L::Var(v) => names.contains(v),
        L::Int(..) | L::Float(..) | L::Bool(_) => false,
        L::Load { index, .. } => mentions_any(index, names),
        L::Bin(_, a, b) => mentions_any(a, names) || mentions_any(b, names),
        L::Neg(a) | L::Not(a) | L::Cast(_, a) => mentions_any(a, names),
        L::Select(c, a, b) => mentions_any(c, names) || mentions_any(a, names) || mentions_any(b, names),
    }
}

fn stored_buffers(body: &Block, out: &mut HashSet<Name>) {
    for s in body {
        match s {
            Stmt::Store { buf, .. } | Stmt::AddAtomic { buf, .. } | Stmt::Alloc { buf, .. } => {
                out.insert(buf.clone());
            }
            Stmt::For { body, .. } => stored_buffers(body, out),
            Stmt::If { then, els, .. } => {
                stored_buffers(then, out);
                stored_buffers(els, out);
            }
            _ => {}
        }
    }
}

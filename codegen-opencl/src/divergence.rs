//! Which values differ between the work-items of a group (*varying*) and
//! which are the same on all of them (*uniform*): the emitter keeps every
//! barrier in uniform control flow with it.
//!
//! Varying are: the variables of `Local` / `Global` loops; whatever is
//! computed from a varying value; loads from per-item memory (private
//! buffers, workspaces) and loads at a varying index; the variable of a loop
//! whose bounds vary; and a mutable local assigned under a varying condition
//! or loop, or inside a per-item loop that runs a different number of times
//! on different items (one without a barrier; see `emit.rs`) while declared
//! outside it. `Workgroup` loop variables, naturals and scalar arguments are
//! uniform, and so are loads of shared memory at a uniform index: barriers
//! order every write to it before such a read. A failed `Check` does not
//! make what follows varying: the launch reports the failure and its results
//! are discarded, so items past a failed check only have to stay in bounds.

use crate::barriers::contains_barrier;
use heddle_ir::Name;
use heddle_ir::loops::{Block, Expr, Schedule, Space, Stmt};
use std::collections::{HashMap, HashSet};

/// The varying variables and per-item buffers of a program.
#[derive(Debug, Default)]
pub(crate) struct Divergence {
    varying: HashSet<Name>,
    per_item: HashSet<Name>,
}

impl Divergence {
    /// Analyses `body` (schedules explicit, barriers placed).
    pub(crate) fn of(body: &Block) -> Divergence {
        let mut d = Divergence::default();
        per_item_buffers(body, &mut d.per_item);
        // Variables can become varying after a use (loops feed values back): iterate.
        loop {
            let before = d.varying.len();
            let mut walk = Walk { d: &mut d, declared_at: HashMap::new(), items: Vec::new() };
            walk.block(body, false);
            if d.varying.len() == before {
                return d;
            }
        }
    }

    /// Is the variable varying?
    pub(crate) fn var(&self, v: &Name) -> bool {
        self.varying.contains(v)
    }

    /// Does `e` (possibly) differ between the items of a group?
    pub(crate) fn expr(&self, e: &Expr) -> bool {
        match e {
            Expr::Var(v) => self.varying.contains(v),
            Expr::Load { buf, index, .. } => self.per_item.contains(buf) || self.expr(index),
            Expr::Bin(_, a, b) => self.expr(a) || self.expr(b),
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => self.expr(a),
            Expr::Select(c, a, b) => self.expr(c) || self.expr(a) || self.expr(b),
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) => false,
        }
    }

    /// Is `s` a computation of uniform values only (no memory effects, no
    /// checks, no barriers)? Such statements run on every item, so that
    /// items outside a predicate still have the uniform values later loops need.
    pub(crate) fn uniform_stmt(&self, s: &Stmt) -> bool {
        match s {
            Stmt::Let { var, value, .. } | Stmt::Var { var, init: value, .. } | Stmt::Assign { var, value } => {
                !self.var(var) && !self.expr(value)
            }
            Stmt::For { var, lo, hi, schedule: Schedule::Seq | Schedule::Workgroup(_), body } => {
                !self.var(var) && !self.expr(lo) && !self.expr(hi) && body.iter().all(|s| self.uniform_stmt(s))
            }
            Stmt::If { cond, then, els } => !self.expr(cond) && then.iter().chain(els).all(|s| self.uniform_stmt(s)),
            _ => false,
        }
    }
}

struct Walk<'a> {
    d: &'a mut Divergence,
    /// How many per-item loops enclosed each mutable local's declaration.
    declared_at: HashMap<Name, usize>,
    /// The enclosing per-item loops: does each run in lock-step rounds (contain a barrier)?
    items: Vec<bool>,
}

impl Walk<'_> {
    fn mark(&mut self, v: &Name) {
        self.d.varying.insert(v.clone());
    }

    /// `control`: is this block reached by some items of a group and not others?
    fn block(&mut self, b: &Block, control: bool) {
        for s in b {
            match s {
                Stmt::Let { var, value, .. } => {
                    if self.d.expr(value) {
                        self.mark(var);
                    }
                }
                Stmt::Var { var, init, .. } => {
                    self.declared_at.insert(var.clone(), self.items.len());
                    if self.d.expr(init) {
                        self.mark(var);
                    }
                }
                Stmt::Assign { var, value } => {
                    let depth = self.declared_at.get(var).copied().unwrap_or(0);
                    // Inside a per-item loop without a barrier, an item assigns as
                    // often as it has iterations, which differs between items.
                    let uneven = self.items.get(depth..).is_some_and(|inner| inner.iter().any(|round| !round));
                    if control || uneven || self.d.expr(value) {
                        self.mark(var);
                    }
                }
                Stmt::For { var, lo, hi, schedule, body } => {
                    let bounds = self.d.expr(lo) || self.d.expr(hi);
                    let per_item = matches!(schedule, Schedule::Local(_) | Schedule::Global(_));
                    if bounds || per_item {
                        self.mark(var);
                    }
                    if per_item {
                        self.items.push(contains_barrier(body));
                    }
                    self.block(body, control || bounds);
                    if per_item {
                        self.items.pop();
                    }
                }
                Stmt::If { cond, then, els } => {
                    let c = control || self.d.expr(cond);
                    self.block(then, c);
                    self.block(els, c);
                }
                Stmt::Store { .. }
                | Stmt::AddAtomic { .. }
                | Stmt::Alloc { .. }
                | Stmt::Sort { .. }
                | Stmt::Barrier
                | Stmt::Check { .. } => {}
            }
        }
    }
}

/// Buffers whose contents belong to one work-item.
fn per_item_buffers(b: &Block, out: &mut HashSet<Name>) {
    for s in b {
        match s {
            Stmt::Alloc { buf, space: Space::Private | Space::Workspace, .. } => {
                out.insert(buf.clone());
            }
            Stmt::For { body, .. } => per_item_buffers(body, out),
            Stmt::If { then, els, .. } => {
                per_item_buffers(then, out);
                per_item_buffers(els, out);
            }
            _ => {}
        }
    }
}

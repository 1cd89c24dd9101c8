//! The second stage of a two-stage reduction: a tree in local memory.
//!
//! `mapLocal(d, f) :>> toLocal(id) :>> reduce(op, init)` (or a `reduce`
//! straight over a `mapLocal`, which is put in local memory for it) leaves
//! the group's partial results in a `__local` buffer. `reduce` may
//! reassociate (LANGUAGE.md §5), so instead of every item adding the `len`
//! partials one after another, the items of dimension `d` combine them
//! pairwise in `ceil(log2 len)` levels, in place:
//!
//! ```text
//! var span = len
//! for level in 0 .. levels(len):          // uniform: the same on every item
//!   let half = (span + 1) / 2
//!   for.local(d) w in 0 .. span - half:   // element w absorbs element w + half
//!     buf[off + w] = op(buf[off + w], buf[off + w + half])
//!   span = half
//! acc = len > 0 ? op(init, buf[off]) : init
//! ```
//!
//! Only the consumer of the buffer may destroy it, so the tree is used only
//! when the buffer was made for this `reduce` (its argument is the `toLocal`
//! or the `mapLocal` itself), holds scalars, and `len` is a formula over the
//! kernel's naturals: then every loop bound above is the same on all items
//! of a group, which the barriers between the levels (placed by the OpenCL
//! backend) require. `levels(len)` is computed once at the top of the kernel.
//! Otherwise the partials are added in order by every item. On the CPU the
//! same loops run sequentially.

use super::view::ViewKind;
use super::{Env, Lowerer, Val, View};
use heddle_ir::loops::{BinOp, Block, Expr as L, Schedule, Stmt};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType};
use heddle_typeck::TExpr;

impl Lowerer<'_> {
    /// The reduction of the local buffer `xs` by a tree, when it applies
    /// (see the module docs); `None` leaves it to the sequential loop.
    pub(super) fn tree_reduce(
        &mut self,
        op: &TExpr,
        init: &Val,
        xs: &View,
        env: &Env,
        body: &mut Block,
    ) -> Result<Option<Val>, Diagnostic> {
        let ViewKind::Buffer { buf, offset } = &xs.kind else { return Ok(None) };
        let Some(&dim) = self.local_producers.get(buf) else { return Ok(None) };
        let Val::Scalar(init_e, s) = init else { return Ok(None) };
        let elem = xs.elem_ty(&Nat::Lit(0));
        if elem.as_scalar() != Some(*s) {
            return Ok(None);
        }
        if self.loops.iter().any(|(_, sched, _)| *sched == Schedule::Local(dim)) {
            return Ok(None);
        }
        let mut sink = Block::new();
        let len = self.index_expr(&xs.len(), env, &mut sink)?;
        if !sink.is_empty() || !self.over_naturals(&len) {
            return Ok(None);
        }
        let off = self.index_expr(offset, env, body)?;
        let levels = self.tree_levels(&len);

        let span = self.fresh("span");
        body.push(Stmt::Var { var: span.clone(), ty: ScalarType::I64, init: len.clone() });
        let level = self.fresh("level");
        let half = self.fresh("half");
        let w = self.fresh("w");
        let at = |k: L| L::bin(BinOp::Add, off.clone(), k);
        let mut step = Block::new();
        let a = Val::Scalar(L::load(buf.clone(), at(L::var(w.clone())), 0), *s);
        let b =
            Val::Scalar(L::load(buf.clone(), at(L::bin(BinOp::Add, L::var(w.clone()), L::var(half.clone()))), 0), *s);
        let Val::Scalar(sum, _) = self.apply(op, vec![a, b], env, &mut step)? else { return Ok(None) };
        step.push(Stmt::Store { buf: buf.clone(), index: at(L::var(w.clone())), field: 0, value: sum });
        let halve = L::bin(BinOp::Div, L::bin(BinOp::Add, L::var(span.clone()), L::index(1)), L::index(2));
        body.push(Stmt::For {
            var: level,
            lo: L::index(0),
            hi: L::var(levels),
            schedule: Schedule::Seq,
            body: vec![
                Stmt::Let { var: half.clone(), ty: ScalarType::I64, value: halve },
                Stmt::For {
                    var: w.clone(),
                    lo: L::index(0),
                    hi: L::bin(BinOp::Sub, L::var(span.clone()), L::var(half.clone())),
                    schedule: Schedule::Local(dim),
                    body: step,
                },
                Stmt::Assign { var: span, value: L::var(half) },
            ],
        });

        let acc = self.fresh("acc");
        body.push(Stmt::Var { var: acc.clone(), ty: *s, init: init_e.clone() });
        let mut last = Block::new();
        let first = Val::Scalar(L::load(buf.clone(), off, 0), *s);
        let Val::Scalar(total, _) =
            self.apply(op, vec![Val::Scalar(L::var(acc.clone()), *s), first], env, &mut last)?
        else {
            return Ok(None);
        };
        last.push(Stmt::Assign { var: acc.clone(), value: total });
        body.push(Stmt::If { cond: L::bin(BinOp::Gt, len, L::index(0)), then: last, els: Vec::new() });
        Ok(Some(Val::Scalar(L::var(acc), *s)))
    }

    /// A variable holding `ceil(log2 len)` (0 for `len <= 1`), computed in
    /// the kernel's prologue once per distinct `len`.
    fn tree_levels(&mut self, len: &L) -> Name {
        if let Some((_, v)) = self.tree_levels.iter().find(|(l, _)| l == len) {
            return v.clone();
        }
        let levels = self.fresh("levels");
        let cover = self.fresh("cover");
        let t = self.fresh("t");
        // Doubling `cover` from 1 until it reaches `len` counts the levels; 62
        // doublings cover every positive i64.
        self.prologue.push(Stmt::Var { var: levels.clone(), ty: ScalarType::I64, init: L::index(0) });
        self.prologue.push(Stmt::Var { var: cover.clone(), ty: ScalarType::I64, init: L::index(1) });
        self.prologue.push(Stmt::For {
            var: t,
            lo: L::index(0),
            hi: L::index(62),
            schedule: Schedule::Seq,
            body: vec![Stmt::If {
                cond: L::bin(BinOp::Lt, L::var(cover.clone()), len.clone()),
                then: vec![
                    Stmt::Assign { var: cover.clone(), value: L::bin(BinOp::Mul, L::var(cover), L::index(2)) },
                    Stmt::Assign {
                        var: levels.clone(),
                        value: L::bin(BinOp::Add, L::var(levels.clone()), L::index(1)),
                    },
                ],
                els: Vec::new(),
            }],
        });
        self.tree_levels.push((len.clone(), levels.clone()));
        levels
    }
}

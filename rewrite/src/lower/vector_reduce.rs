//! `reduce` with an array accumulator: the sum of rows (MTTKRP's
//! `Σ_l B(i,k,l) · D(l,:)`, a row of a sparse-times-dense product).
//!
//! The accumulator is a workspace of the accumulator's length (one per
//! worker, see `Space::Workspace`), set to the initial value before the
//! loop. Each step computes the operator's result as a view over the
//! workspace and the element, and stores it back. When that view reads the
//! accumulator only at the position it writes (`zip(acc, row) :>> map(+)`:
//! maps and zips of it, functions that do not mention it) the store is in
//! place; otherwise the step goes through a second workspace. The
//! reduction's value is a view of the workspace, read by its consumer in the
//! same iteration of the enclosing loops (the next run of this code
//! overwrites it).

use super::view::ViewKind;
use super::{Env, Lowerer, Val, View, bug, unsupported};
use heddle_ir::loops::{Block, Expr as L, Schedule, Space, Stmt};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Span, Type};
use heddle_typeck::{TExpr, TKind};

/// Does the typed expression mention the name (anywhere, shadowing ignored:
/// a conservative answer)?
fn mentions(t: &TExpr, x: &Name) -> bool {
    match &t.kind {
        TKind::Var(v) => v == x,
        TKind::NatValue(n) => n.mentions(x),
        TKind::Lit(_) => false,
        TKind::Lambda { body, .. } => mentions(body, x),
        TKind::Prim { args, nats, .. } => args.iter().any(|a| mentions(a, x)) || nats.iter().any(|n| n.mentions(x)),
        TKind::Let { value, body, .. } => mentions(value, x) || mentions(body, x),
        TKind::Index { array, index } => mentions(array, x) || mentions(index, x),
        TKind::Proj { tuple, .. } => mentions(tuple, x),
        TKind::Tuple(items) => items.iter().any(|i| mentions(i, x)),
        TKind::Binary { lhs, rhs, .. } => mentions(lhs, x) || mentions(rhs, x),
        TKind::Unary { operand, .. } | TKind::Assemble { value: operand, .. } => mentions(operand, x),
        TKind::Select { cond, then, els } => mentions(cond, x) || mentions(then, x) || mentions(els, x),
    }
}

/// Does the environment bind a name to a view of `buf` that `f` mentions?
fn captures(f: &TExpr, env: &Env, buf: &Name) -> bool {
    env.values.iter().any(|(name, v)| reads(v, buf) && mentions(f, name))
}

fn reads(v: &Val, buf: &Name) -> bool {
    match v {
        Val::Scalar(..) => false,
        Val::Tuple(items) => items.iter().any(|x| reads(x, buf)),
        Val::Array(view) => view_reads(view, buf),
    }
}

/// Whether a view may read `buf` (yes for what is not looked into: a
/// function's captures, a gather's indices, …).
fn view_reads(v: &View, buf: &Name) -> bool {
    match &v.kind {
        ViewKind::Buffer { buf: b, .. } => b == buf,
        ViewKind::Zip(parts) => parts.iter().any(|p| view_reads(p, buf)),
        ViewKind::Proj(src, _) => view_reads(src, buf),
        _ => true,
    }
}

/// Element j of `v` reads the accumulator `acc` only at j.
fn pointwise(v: &View, acc: &Name) -> bool {
    match &v.kind {
        ViewKind::Buffer { buf, offset } => buf != acc || offset.const_value() == Some(0),
        ViewKind::Zip(parts) => parts.iter().all(|p| pointwise(p, acc)),
        ViewKind::Proj(src, _) => pointwise(src, acc),
        ViewKind::Map { f, env, src, .. } => pointwise(src, acc) && !captures(f, env, acc),
        ViewKind::Generate { f, env, .. } => !captures(f, env, acc),
        _ => !view_reads(v, acc),
    }
}

impl Lowerer<'_> {
    /// `reduce(op, init)(xs)` whose accumulator is an array of scalars.
    pub(super) fn reduce_array(
        &mut self,
        op: &TExpr,
        init: Val,
        xs: &View,
        acc_ty: &Type,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let Type::Array { elem, len, .. } = acc_ty else { return Err(bug(span, "a reduction with this accumulator")) };
        let Some(s) = elem.as_scalar() else {
            return Err(unsupported(
                span,
                &format!("a reduction whose accumulator is {acc_ty} (arrays of scalars only)"),
            ));
        };
        let mut sink = Block::new();
        let n = self.index_expr(len, &Env::default(), &mut sink)?;
        if !sink.is_empty() || !self.over_naturals(&n) {
            return Err(unsupported(
                span,
                &format!(
                    "a reduction whose accumulator's length {len} is not a natural parameter or a formula over them"
                ),
            ));
        }
        let acc = self.fresh("acc_row");
        self.workspaces.push(Stmt::Alloc {
            buf: acc.clone(),
            fields: vec![s],
            len: n.clone(),
            space: Space::Workspace,
        });
        let acc_ty = Type::Array { binder: None, elem: Box::new(Type::Scalar(s)), len: len.clone() };
        let acc_view = View::buffer(acc.clone(), Nat::Lit(0), acc_ty.clone());
        // acc = init
        let Val::Array(init) = init else { return Err(bug(span, "a reduction whose initial value is not an array")) };
        self.copy_row(&init, &acc, &n, s, span, body)?;
        // for each element: acc = op(acc, x)
        let k = self.fresh("k");
        let hi = self.index_expr(&xs.len(), env, body)?;
        let mut step = Block::new();
        self.loops.push((k.clone(), Schedule::Seq, hi.clone()));
        let done = (|| {
            let x = self.elem(xs, &Nat::Var(k.clone()), &mut step)?;
            let Val::Array(next) = self.apply(op, vec![Val::Array(acc_view.clone()), x], env, &mut step)? else {
                return Err(bug(span, "a reduction whose operator does not return an array"));
            };
            if pointwise(&next, &acc) {
                self.copy_row(&next, &acc, &n, s, span, &mut step)
            } else {
                let tmp = self.fresh("acc_next");
                self.workspaces.push(Stmt::Alloc {
                    buf: tmp.clone(),
                    fields: vec![s],
                    len: n.clone(),
                    space: Space::Workspace,
                });
                self.copy_row(&next, &tmp, &n, s, span, &mut step)?;
                let tmp_view = View::buffer(tmp, Nat::Lit(0), acc_ty.clone());
                self.copy_row(&tmp_view, &acc, &n, s, span, &mut step)
            }
        })();
        self.loops.pop();
        done?;
        body.push(Stmt::For { var: k, lo: L::index(0), hi, schedule: Schedule::Seq, body: step });
        Ok(Val::Array(acc_view))
    }

    /// `dst[j] = src[j]` for j in 0 .. n.
    fn copy_row(
        &mut self,
        src: &View,
        dst: &Name,
        n: &L,
        s: ScalarType,
        span: Span,
        body: &mut Block,
    ) -> Result<(), Diagnostic> {
        let j = self.fresh("j");
        let mut each = Block::new();
        self.loops.push((j.clone(), Schedule::Seq, n.clone()));
        let x = self.elem(src, &Nat::Var(j.clone()), &mut each);
        self.loops.pop();
        let Val::Scalar(e, es) = x? else { return Err(unsupported(span, "a reduction over rows of non-scalars")) };
        let e = if es == s { e } else { L::Cast(s, Box::new(e)) };
        each.push(Stmt::Store { buf: dst.clone(), index: L::var(j.clone()), field: 0, value: e });
        body.push(Stmt::For { var: j, lo: L::index(0), hi: n.clone(), schedule: Schedule::Seq, body: each });
        Ok(())
    }
}

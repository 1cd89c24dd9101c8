//! Reading and building the expressions the front door's rewrites match
//! and emit: a pipeline's stages, one-parameter lambdas, calls of
//! primitives. Shared by the SELL ([`super::sell`]) and BSR lane
//! ([`super::lanes`]) interchanges.

use super::view::names;
use heddle_ir::expr::{ExprKind, Literal, Param};
use heddle_ir::{Expr, Name, Span};
use std::collections::BTreeSet;

/// `e` as the stage `arg :>> prim(args)` (or `prim(args, arg)`) with `n` arguments besides the array.
pub(super) fn stage<'a>(e: &'a Expr, prim: &str, n: usize) -> Option<(&'a Expr, &'a [Expr])> {
    let is = |f: &Expr| matches!(&f.kind, ExprKind::Var(v) if v.as_str() == prim);
    match &e.kind {
        ExprKind::Pipe { arg, func } => match &func.kind {
            ExprKind::App { func, args } if is(func) && args.len() == n => Some((&**arg, args.as_slice())),
            ExprKind::Var(_) if n == 0 && is(func) => Some((&**arg, &[][..])),
            _ => None,
        },
        ExprKind::App { func, args } if is(func) && args.len() == n + 1 => Some((&args[n], &args[..n])),
        _ => None,
    }
}

/// `fun(x => body)` with one unannotated parameter.
pub(super) fn lambda1(e: &Expr) -> Option<(&Name, &Expr)> {
    match &e.kind {
        ExprKind::Fun { params, body } if params.len() == 1 && params[0].ty.is_none() => {
            Some((&params[0].name, &**body))
        }
        _ => None,
    }
}

/// The literal 0 or 0.0.
pub(super) fn is_zero(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Lit(Literal::Int(0))) || matches!(e.kind, ExprKind::Lit(Literal::Float(f)) if f.0 == 0.0)
}

pub(super) fn pipe(arg: Expr, func: Expr) -> Expr {
    Expr::synth(ExprKind::Pipe { arg: Box::new(arg), func: Box::new(func) })
}

pub(super) fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::synth(ExprKind::App { func: Box::new(Expr::var(name)), args })
}

pub(super) fn fun(params: &[&Name], body: Expr) -> Expr {
    let params = params.iter().map(|n| Param { name: (*n).clone(), ty: None, span: Span::DUMMY }).collect();
    Expr::synth(ExprKind::Fun { params, body: Box::new(body) })
}

/// Does `e` mention the name `x` (used or bound)?
pub(super) fn mentions(e: &Expr, x: &Name) -> bool {
    let mut all = BTreeSet::new();
    names(e, &mut all);
    all.contains(x.as_str())
}

/// `(a, b).1` as `a`, everywhere in `e`.
pub(super) fn project_tuples(e: &Expr) -> Expr {
    let mut out = e.clone();
    out.for_each_child_mut(&mut |c| *c = project_tuples(c));
    if let ExprKind::Proj { tuple, field } = &out.kind
        && let ExprKind::Tuple(parts) = &tuple.kind
        && let Some(part) = parts.get((*field as usize).wrapping_sub(1))
    {
        return part.clone();
    }
    out
}

/// `generate(count, f)`: the count and `f`.
pub(super) fn generate_of(e: &Expr) -> Option<(&Expr, &Expr)> {
    match &e.kind {
        ExprKind::App { func, args }
            if matches!(&func.kind, ExprKind::Var(v) if v.as_str() == "generate") && args.len() == 2 =>
        {
            Some((&args[0], &args[1]))
        }
        _ => None,
    }
}

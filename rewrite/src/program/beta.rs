//! Tidying extracted programs: rules such as map fusion build
//! `fun(y => g(f(y)))` from two lambdas, leaving redexes `fun(x => b)(y)`.
//! The type checker accepts them (as `let`s), but people read programs, so
//! a redex is reduced when that is plainly safe: the parameter has no
//! annotation, nothing in the body would capture the argument's names, no
//! type or natural in the body could mention the parameter, and the
//! argument is a variable or literal, or is used exactly once outside any
//! lambda (so nothing is computed more often than before).

use heddle_ir::Name;
use heddle_ir::expr::{Expr, ExprKind};
use std::collections::BTreeSet;

/// Reduces the safe redexes of `e`, innermost first.
pub fn tidy(e: &Expr) -> Expr {
    let mut kids = e.clone();
    kids.for_each_child_mut(&mut |c| *c = tidy(c));
    match &kids.kind {
        ExprKind::App { func, args } => match &func.kind {
            ExprKind::Fun { params, body } if !params.is_empty() && !args.is_empty() => {
                let (p, arg) = (&params[0], &args[0]);
                if p.ty.is_some() || !opaque_free(body) || !reducible(&p.name, body, arg) {
                    return kids;
                }
                let body = tidy(&subst(body, &p.name, arg));
                let rest_params = params[1..].to_vec();
                let inner = if rest_params.is_empty() {
                    body
                } else {
                    Expr::synth(ExprKind::Fun { params: rest_params, body: Box::new(body) })
                };
                if args.len() == 1 {
                    inner
                } else {
                    tidy(&Expr::synth(ExprKind::App { func: Box::new(inner), args: args[1..].to_vec() }))
                }
            }
            _ => kids,
        },
        _ => kids,
    }
}

fn reducible(x: &Name, body: &Expr, arg: &Expr) -> bool {
    let free = free_vars(arg);
    if binds_any(body, &free) {
        return false;
    }
    matches!(arg.kind, ExprKind::Var(_) | ExprKind::Lit(_)) || uses(x, body, false) == (1, 0)
}

/// (uses outside lambdas, uses inside lambdas) of `x` in `e`.
fn uses(x: &Name, e: &Expr, under: bool) -> (usize, usize) {
    match &e.kind {
        ExprKind::Var(v) if v == x => {
            if under {
                (0, 1)
            } else {
                (1, 0)
            }
        }
        ExprKind::Fun { params, .. } if params.iter().any(|p| &p.name == x) => (0, 0),
        ExprKind::Let { name, value, body } => {
            let a = uses(x, value, under);
            let b = if name == x { (0, 0) } else { uses(x, body, under) };
            (a.0 + b.0, a.1 + b.1)
        }
        _ => {
            let inner = under || matches!(e.kind, ExprKind::Fun { .. } | ExprKind::NFun { .. });
            let mut n = (0, 0);
            e.for_each_child(&mut |c| {
                let u = uses(x, c, inner);
                n = (n.0 + u.0, n.1 + u.1);
            });
            n
        }
    }
}

/// No annotations, naturals or `nFun`s, whose names this pass does not track.
fn opaque_free(e: &Expr) -> bool {
    let here = match &e.kind {
        ExprKind::Annot { .. } | ExprKind::NatValue(_) | ExprKind::NFun { .. } => false,
        ExprKind::Fun { params, .. } => params.iter().all(|p| p.ty.is_none()),
        _ => true,
    };
    let mut ok = here;
    e.for_each_child(&mut |c| ok &= opaque_free(c));
    ok
}

fn free_vars(e: &Expr) -> BTreeSet<Name> {
    let mut out = BTreeSet::new();
    collect_free(e, &mut Vec::new(), &mut out);
    out
}

fn collect_free(e: &Expr, bound: &mut Vec<Name>, out: &mut BTreeSet<Name>) {
    match &e.kind {
        ExprKind::Var(v) if !bound.contains(v) => {
            out.insert(v.clone());
        }
        ExprKind::Fun { params, body } => {
            let n = bound.len();
            bound.extend(params.iter().map(|p| p.name.clone()));
            collect_free(body, bound, out);
            bound.truncate(n);
        }
        ExprKind::Let { name, value, body } => {
            collect_free(value, bound, out);
            bound.push(name.clone());
            collect_free(body, bound, out);
            bound.pop();
        }
        _ => e.for_each_child(&mut |c| collect_free(c, bound, out)),
    }
}

fn binds_any(e: &Expr, names: &BTreeSet<Name>) -> bool {
    let here = match &e.kind {
        ExprKind::Fun { params, .. } => params.iter().any(|p| names.contains(&p.name)),
        ExprKind::Let { name, .. } | ExprKind::NFun { var: name, .. } => names.contains(name),
        _ => false,
    };
    let mut any = here;
    e.for_each_child(&mut |c| any |= binds_any(c, names));
    any
}

/// Substitution without capture (the caller checked `binds_any`).
fn subst(e: &Expr, x: &Name, v: &Expr) -> Expr {
    match &e.kind {
        ExprKind::Var(y) if y == x => v.clone(),
        ExprKind::Fun { params, .. } if params.iter().any(|p| &p.name == x) => e.clone(),
        ExprKind::Let { name, value, body } if name == x => {
            Expr::synth(ExprKind::Let { name: name.clone(), value: Box::new(subst(value, x, v)), body: body.clone() })
        }
        _ => {
            let mut out = e.clone();
            out.for_each_child_mut(&mut |c| *c = subst(c, x, v));
            out
        }
    }
}

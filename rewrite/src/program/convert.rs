//! Exact conversion between `ir`'s [`Expr`] and egg's `RecExpr<Prog>`.
//!
//! `expr_to_rec` followed by `rec_to_expr` gives back the same tree (spans
//! excepted; they never take part in equality): applications and lambdas
//! keep their spelling in the node (see [`super::lang`]).

use super::lang::{AppSpelling, LamSpelling, Prog};
use egg::{ENodeOrVar, Id, RecExpr, Symbol};
use heddle_ir::Name;
use heddle_ir::expr::{Expr, ExprKind, Param};

/// A pattern or program term under construction.
pub type Ast = RecExpr<ENodeOrVar<Prog>>;

/// How names are emitted. Programs emit them as they are; rule patterns
/// turn pattern variables and binders into egg variables
/// ([`super::pattern`]).
pub trait Names {
    /// Emits the use of a variable `x` (the expression `e`).
    fn var(&mut self, out: &mut Ast, e: &Expr, x: &Name) -> Result<Id, (heddle_ir::Span, String)>;
    /// Emits a parameter's name and annotation, bringing it into scope.
    fn bind(&mut self, out: &mut Ast, p: &Param) -> Result<(Id, Id), (heddle_ir::Span, String)>;
    /// Takes the innermost parameter out of scope.
    fn unbind(&mut self);
}

/// Emits names as they are (programs).
pub struct Plain;

impl Names for Plain {
    fn var(&mut self, out: &mut Ast, _: &Expr, x: &Name) -> Result<Id, (heddle_ir::Span, String)> {
        let s = node(out, Prog::Sym(Symbol::from(x.as_str())));
        Ok(node(out, Prog::Var([s])))
    }
    fn bind(&mut self, out: &mut Ast, p: &Param) -> Result<(Id, Id), (heddle_ir::Span, String)> {
        let s = node(out, Prog::Sym(Symbol::from(p.name.as_str())));
        let t = node(out, p.ty.clone().map_or(Prog::NoTy, Prog::Ty));
        Ok((s, t))
    }
    fn unbind(&mut self) {}
}

/// Adds an e-node.
pub fn node(out: &mut Ast, n: Prog) -> Id {
    out.add(ENodeOrVar::ENode(n))
}

/// Converts an expression into a `RecExpr` (the last node is the root).
pub fn expr_to_rec(e: &Expr) -> RecExpr<Prog> {
    let mut ast = Ast::default();
    // `Plain` never fails.
    let _ = add_expr(&mut ast, e, &mut Plain);
    let nodes: Vec<Prog> = ast
        .as_ref()
        .iter()
        .map(|n| match n {
            ENodeOrVar::ENode(n) => n.clone(),
            ENodeOrVar::Var(_) => Prog::NoTy,
        })
        .collect();
    RecExpr::from(nodes)
}

/// Adds `e` to `out` with names emitted by `names`; the error is a span and
/// a message. Recursion depth is the expression's depth, which the parser
/// bounds.
pub fn add_expr(out: &mut Ast, e: &Expr, names: &mut dyn Names) -> Result<Id, (heddle_ir::Span, String)> {
    let mut sub = |out: &mut Ast, c: &Expr| add_expr(out, c, names);
    Ok(match &e.kind {
        ExprKind::Var(x) => return names.var(out, e, x),
        ExprKind::Lit(l) => node(out, Prog::Lit(*l)),
        ExprKind::Section(op) => node(out, Prog::Section(*op)),
        ExprKind::NatValue(n) => node(out, Prog::NatValue(n.clone())),
        ExprKind::Fun { params, body } => {
            let mut binders = Vec::new();
            for p in params {
                binders.push(names.bind(out, p)?);
            }
            let mut id = add_expr(out, body, names)?;
            // Innermost parameter first: `fun(a, b => e)` is Lam(a, Lam(b, e)).
            for (i, (s, t)) in binders.into_iter().enumerate().rev() {
                names.unbind();
                let spelling = if i == 0 { LamSpelling::Head } else { LamSpelling::More };
                id = node(out, Prog::Lam(spelling, [s, t, id]));
            }
            id
        }
        ExprKind::NFun { var, body } => {
            let s = node(out, Prog::Sym(Symbol::from(var.as_str())));
            let b = sub(out, body)?;
            node(out, Prog::NLam([s, b]))
        }
        ExprKind::App { func, args } => {
            let mut id = sub(out, func)?;
            for (i, a) in args.iter().enumerate() {
                let spelling = if i == 0 { AppSpelling::Call } else { AppSpelling::More };
                let a = sub(out, a)?;
                id = node(out, Prog::App(spelling, [id, a]));
            }
            id
        }
        ExprKind::Pipe { arg, func } => {
            let a = sub(out, arg)?;
            let f = sub(out, func)?;
            node(out, Prog::App(AppSpelling::Pipe, [f, a]))
        }
        ExprKind::Index { array, index } => {
            let a = sub(out, array)?;
            let i = sub(out, index)?;
            node(out, Prog::Index([a, i]))
        }
        ExprKind::Proj { tuple, field } => {
            let t = sub(out, tuple)?;
            node(out, Prog::Proj(*field, [t]))
        }
        ExprKind::Tuple(es) => {
            let mut ids = Vec::new();
            for c in es {
                ids.push(sub(out, c)?);
            }
            node(out, Prog::Tuple(ids.into_boxed_slice()))
        }
        ExprKind::Annot { expr, ty } => {
            let x = sub(out, expr)?;
            let t = node(out, Prog::Ty(ty.clone()));
            node(out, Prog::Annot([x, t]))
        }
        ExprKind::Let { name, value, body } => {
            let v = sub(out, value)?;
            let param = Param { name: name.clone(), ty: None, span: e.span };
            let (s, _) = names.bind(out, &param)?;
            let b = add_expr(out, body, names)?;
            names.unbind();
            node(out, Prog::Let([s, v, b]))
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let l = sub(out, lhs)?;
            let r = sub(out, rhs)?;
            node(out, Prog::Binary(*op, [l, r]))
        }
        ExprKind::Unary { op, operand } => {
            let x = sub(out, operand)?;
            node(out, Prog::Unary(*op, [x]))
        }
        ExprKind::Select { cond, then, els } => {
            let c = sub(out, cond)?;
            let t = sub(out, then)?;
            let f = sub(out, els)?;
            node(out, Prog::Select([c, t, f]))
        }
    })
}

/// Why a `RecExpr` is not a well-formed program.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed program term: {0}")]
pub struct Malformed(pub String);

/// Converts a `RecExpr` (root last) back into an expression.
pub fn rec_to_expr(rec: &RecExpr<Prog>) -> Result<Expr, Malformed> {
    if rec.as_ref().is_empty() {
        return Err(Malformed("empty term".into()));
    }
    to_expr(rec, Id::from(rec.as_ref().len() - 1))
}

fn name_of(rec: &RecExpr<Prog>, id: Id) -> Result<Name, Malformed> {
    match &rec[id] {
        Prog::Sym(s) => Ok(Name::from(s.as_str())),
        other => Err(Malformed(format!("expected a name, found `{other}`"))),
    }
}

fn to_expr(rec: &RecExpr<Prog>, id: Id) -> Result<Expr, Malformed> {
    let sub = |i: Id| to_expr(rec, i).map(Box::new);
    let kind = match &rec[id] {
        Prog::Sym(s) => return Err(Malformed(format!("name `{s}` outside a binder or variable"))),
        Prog::Ty(_) | Prog::NoTy => return Err(Malformed("type outside an annotation".into())),
        Prog::Var([s]) => ExprKind::Var(name_of(rec, *s)?),
        Prog::Lit(l) => ExprKind::Lit(*l),
        Prog::Section(op) => ExprKind::Section(*op),
        Prog::NatValue(n) => ExprKind::NatValue(n.clone()),
        Prog::Lam(_, [s, t, body]) => {
            let ty = match &rec[*t] {
                Prog::Ty(t) => Some(t.clone()),
                Prog::NoTy => None,
                other => return Err(Malformed(format!("expected a parameter type, found `{other}`"))),
            };
            let mut params = vec![Param { name: name_of(rec, *s)?, ty, span: heddle_ir::Span::DUMMY }];
            // A body spelled as a continuation (`fun(a, b => …)`) folds into this `fun`.
            let body = to_expr(rec, *body)?;
            let body = match (&rec[body_id(rec, id)], body.kind) {
                (Prog::Lam(LamSpelling::More, _), ExprKind::Fun { params: more, body }) => {
                    params.extend(more);
                    body
                }
                (_, kind) => Box::new(Expr::synth(kind)),
            };
            ExprKind::Fun { params, body }
        }
        Prog::NLam([s, b]) => ExprKind::NFun { var: name_of(rec, *s)?, body: sub(*b)? },
        Prog::App(AppSpelling::Pipe, [f, a]) => ExprKind::Pipe { arg: sub(*a)?, func: sub(*f)? },
        Prog::App(spelling, [f, a]) => {
            let func = to_expr(rec, *f)?;
            let arg = to_expr(rec, *a)?;
            // `More` continues the argument list of a call spelled `Call`/`More`.
            let continues = *spelling == AppSpelling::More
                && matches!(rec[*f], Prog::App(AppSpelling::Call | AppSpelling::More, _));
            match func.kind {
                ExprKind::App { func, mut args } if continues => {
                    args.push(arg);
                    ExprKind::App { func, args }
                }
                kind => ExprKind::App { func: Box::new(Expr::synth(kind)), args: vec![arg] },
            }
        }
        Prog::Index([a, i]) => ExprKind::Index { array: sub(*a)?, index: sub(*i)? },
        Prog::Proj(k, [t]) => ExprKind::Proj { tuple: sub(*t)?, field: *k },
        Prog::Tuple(ids) => ExprKind::Tuple(ids.iter().map(|i| to_expr(rec, *i)).collect::<Result<_, _>>()?),
        Prog::Annot([x, t]) => match &rec[*t] {
            Prog::Ty(ty) => ExprKind::Annot { expr: sub(*x)?, ty: ty.clone() },
            other => return Err(Malformed(format!("expected a type, found `{other}`"))),
        },
        Prog::Let([s, v, b]) => ExprKind::Let { name: name_of(rec, *s)?, value: sub(*v)?, body: sub(*b)? },
        Prog::Binary(op, [l, r]) => ExprKind::Binary { op: *op, lhs: sub(*l)?, rhs: sub(*r)? },
        Prog::Unary(op, [x]) => ExprKind::Unary { op: *op, operand: sub(*x)? },
        Prog::Select([c, t, f]) => ExprKind::Select { cond: sub(*c)?, then: sub(*t)?, els: sub(*f)? },
    };
    Ok(Expr::synth(kind))
}

fn body_id(rec: &RecExpr<Prog>, lam: Id) -> Id {
    match &rec[lam] {
        Prog::Lam(_, [_, _, b]) => *b,
        _ => lam,
    }
}

//! Is a row's result zero when the row is absent? The side condition of the
//! law "a map over a compressed level visits only stored coordinates": for
//! `A :>> map(fun(row => body))` over a compressed outer level, skipping
//! the rows that are not stored is sound only if `body` gives 0 (the
//! implicit value, in every scalar) for an all-zero row — then
//! `scatterAdd` (which starts from 0) gives the same result.
//!
//! A small abstract interpretation over the dense body: the row is
//! [`Kind::Zero`]; `*` by zero is zero, `+` of zeros is zero, a `map` keeps
//! what its function gives, `reduce(+, 0)` of zeros is zero, `zip` pairs
//! kinds; everything else is [`Kind::Unknown`]. It answers "zero" only
//! when that is certain.

use heddle_ir::expr::{BinOp, ExprKind, Literal};
use heddle_ir::{Expr, Name};

/// What is known about a value when the row is absent.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Every scalar in it is 0.
    Zero,
    /// A pair (or array of pairs, elementwise) of known kinds.
    Pair(Box<Kind>, Box<Kind>),
    /// Nothing known.
    Unknown,
}

/// `e`'s head and arguments, with `a :>> f(b)`, `f(b)(a)` and `f(b, a)` all
/// read as `f` applied to `[b, a]`.
fn spine(e: &Expr) -> Option<(&Name, Vec<&Expr>)> {
    match &e.kind {
        ExprKind::Var(v) => Some((v, Vec::new())),
        ExprKind::App { func, args } => spine(func).map(|(h, mut a)| {
            a.extend(args.iter());
            (h, a)
        }),
        ExprKind::Pipe { arg, func } => spine(func).map(|(h, mut a)| {
            a.push(arg);
            (h, a)
        }),
        _ => None,
    }
}

fn is_zero_lit(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Lit(Literal::Int(0)))
        || matches!(&e.kind, ExprKind::Lit(Literal::Float(f)) if f.0 == 0.0)
}

fn is_plus(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Section(s) if s.symbol() == "+")
}

/// The kind of `e` under `env` (the kinds of bound names).
pub fn kind(e: &Expr, env: &mut Vec<(Name, Kind)>) -> Kind {
    if is_zero_lit(e) {
        return Kind::Zero;
    }
    match &e.kind {
        ExprKind::Var(v) => return env.iter().rev().find(|(n, _)| n == v).map_or(Kind::Unknown, |(_, k)| k.clone()),
        ExprKind::Proj { tuple, field } => {
            return match kind(tuple, env) {
                Kind::Zero => Kind::Zero,
                Kind::Pair(a, b) => {
                    if *field == 1 {
                        *a
                    } else {
                        *b
                    }
                }
                Kind::Unknown => Kind::Unknown,
            };
        }
        ExprKind::Binary { op: BinOp::Mul, lhs, rhs } => {
            let (a, b) = (kind(lhs, env), kind(rhs, env));
            return if a == Kind::Zero || b == Kind::Zero { Kind::Zero } else { Kind::Unknown };
        }
        ExprKind::Binary { op: BinOp::Add | BinOp::Sub, lhs, rhs } => {
            let (a, b) = (kind(lhs, env), kind(rhs, env));
            return if a == Kind::Zero && b == Kind::Zero { Kind::Zero } else { Kind::Unknown };
        }
        ExprKind::Tuple(es) if es.len() == 2 => {
            return Kind::Pair(Box::new(kind(&es[0], env)), Box::new(kind(&es[1], env)));
        }
        ExprKind::Index { array, .. } => return kind(array, env),
        _ => {}
    }
    let Some((head, args)) = spine(e) else { return Kind::Unknown };
    match (head.as_str(), args.as_slice()) {
        ("zip", [a, b]) => Kind::Pair(Box::new(kind(a, env)), Box::new(kind(b, env))),
        ("map" | "mapSeq" | "mapPar", [f, xs]) => {
            let elem = kind(xs, env);
            apply(f, elem, env)
        }
        ("reduce" | "reduceSeq", [op, init, xs]) if is_plus(op) => {
            let (i, x) = (kind(init, env), kind(xs, env));
            if i == Kind::Zero && x == Kind::Zero { Kind::Zero } else { Kind::Unknown }
        }
        ("transpose" | "join", [xs]) => kind(xs, env),
        _ => Kind::Unknown,
    }
}

/// The kind of `f(x)` for a lambda `f` and an argument of kind `arg`.
fn apply(f: &Expr, arg: Kind, env: &mut Vec<(Name, Kind)>) -> Kind {
    match &f.kind {
        ExprKind::Fun { params, body } if params.len() == 1 => {
            env.push((params[0].name.clone(), arg));
            let k = kind(body, env);
            env.pop();
            k
        }
        _ => Kind::Unknown,
    }
}

/// Whether `body` is 0 in every scalar when `row` is all zeros.
pub fn zero_when_absent(body: &Expr, row: &Name) -> bool {
    kind(body, &mut vec![(row.clone(), Kind::Zero)]) == Kind::Zero
}

//! Single terms (`RecExpr<Prog>`, root last) as trees: sub-terms by path,
//! equality up to the names of bound variables, and rule patterns matched
//! and instantiated on one term rather than on an e-graph. Explanations
//! are checked with these ([`super::explain::replay`]).

use super::lang::Prog;
use egg::{ENodeOrVar, Id, Language, PatternAst, RecExpr, Symbol, Var};
use std::collections::HashMap;

/// The root of a term.
pub fn root(t: &RecExpr<Prog>) -> Id {
    Id::from(t.as_ref().len().saturating_sub(1))
}

/// The root of a pattern.
pub fn root_of_pattern(p: &PatternAst<Prog>) -> Id {
    Id::from(p.as_ref().len().saturating_sub(1))
}

/// Copies the sub-term at `id` of `from` into `out`; its id there.
pub fn copy_into(from: &RecExpr<Prog>, id: Id, out: &mut RecExpr<Prog>) -> Id {
    let mut node = from[id].clone();
    for c in node.children_mut() {
        *c = copy_into(from, *c, out);
    }
    out.add(node)
}

/// The sub-term at `id` as a term of its own.
pub fn subterm(t: &RecExpr<Prog>, id: Id) -> RecExpr<Prog> {
    let mut out = RecExpr::default();
    copy_into(t, id, &mut out);
    out
}

/// The node reached from the root by following child indices; `None`
/// where the path leaves the term.
pub fn at_path(t: &RecExpr<Prog>, path: &[usize]) -> Option<Id> {
    if t.as_ref().is_empty() {
        return None;
    }
    let mut id = root(t);
    for &k in path {
        id = *t[id].children().get(k)?;
    }
    Some(id)
}

/// `t` with the sub-term at `path` replaced by `new` (whole term, root last).
pub fn replace_at(t: &RecExpr<Prog>, path: &[usize], new: &RecExpr<Prog>) -> Option<RecExpr<Prog>> {
    fn go(t: &RecExpr<Prog>, id: Id, path: &[usize], new: &RecExpr<Prog>, out: &mut RecExpr<Prog>) -> Option<Id> {
        let Some((&k, rest)) = path.split_first() else {
            return Some(copy_into(new, root(new), out));
        };
        let mut node = t[id].clone();
        if k >= node.children().len() {
            return None;
        }
        for (i, c) in node.children_mut().iter_mut().enumerate() {
            *c = if i == k { go(t, *c, rest, new, out)? } else { copy_into(t, *c, out) };
        }
        Some(out.add(node))
    }
    if t.as_ref().is_empty() || new.as_ref().is_empty() {
        return None;
    }
    let mut out = RecExpr::default();
    go(t, root(t), path, new, &mut out)?;
    Some(out)
}

/// The name a binder child (`Sym`) holds.
fn sym(t: &RecExpr<Prog>, id: Id) -> Option<Symbol> {
    match &t[id] {
        Prog::Sym(s) => Some(*s),
        _ => None,
    }
}

/// Are the sub-terms `a` of `ta` and `b` of `tb` equal up to the names of
/// the variables they bind (and the spelling of applications and lambdas,
/// which carries no meaning)? `env` pairs names bound around them
/// (innermost last); free names must be equal.
pub fn alpha_eq(ta: &RecExpr<Prog>, a: Id, tb: &RecExpr<Prog>, b: Id, env: &mut Vec<(Symbol, Symbol)>) -> bool {
    let (na, nb) = (&ta[a], &tb[b]);
    match (na, nb) {
        (Prog::Var([x]), Prog::Var([y])) => {
            let (Some(x), Some(y)) = (sym(ta, *x), sym(tb, *y)) else { return false };
            match env.iter().rev().find(|(p, q)| *p == x || *q == y) {
                Some((p, q)) => *p == x && *q == y,
                None => x == y,
            }
        }
        (Prog::Lam(_, [x, tx, bx]), Prog::Lam(_, [y, ty, by])) | (Prog::Let([x, tx, bx]), Prog::Let([y, ty, by])) => {
            let (Some(p), Some(q)) = (sym(ta, *x), sym(tb, *y)) else { return false };
            // A lambda's annotation and a let's value are outside the binder.
            if !alpha_eq(ta, *tx, tb, *ty, env) {
                return false;
            }
            env.push((p, q));
            let same = alpha_eq(ta, *bx, tb, *by, env);
            env.pop();
            same
        }
        _ => {
            na.matches(nb)
                && na.children().len() == nb.children().len()
                && na.children().iter().zip(nb.children()).all(|(c, d)| alpha_eq(ta, *c, tb, *d, env))
        }
    }
}

/// Pattern variables bound to sub-terms of one term.
pub type Bindings = HashMap<Var, Id>;

/// Matches the pattern node `p` against the term node `t` (spelling is
/// ignored, as in the e-graph); a variable seen twice must be bound to
/// equal sub-terms.
pub fn match_term(pat: &PatternAst<Prog>, p: Id, term: &RecExpr<Prog>, t: Id, b: &mut Bindings) -> bool {
    match &pat[p] {
        ENodeOrVar::Var(v) => match b.get(v) {
            Some(prev) => alpha_eq(term, *prev, term, t, &mut Vec::new()),
            None => {
                b.insert(*v, t);
                true
            }
        },
        ENodeOrVar::ENode(n) => {
            let m = &term[t];
            n.matches(m)
                && n.children().len() == m.children().len()
                && n.children().iter().zip(m.children()).all(|(pc, tc)| match_term(pat, *pc, term, *tc, b))
        }
    }
}

/// Instantiates the pattern `pat` into `out`: bound variables copy their
/// sub-term of `term`; `extra` supplies the rest (new binders' names,
/// computed naturals) as terms of their own.
pub fn instantiate(
    pat: &PatternAst<Prog>,
    p: Id,
    term: &RecExpr<Prog>,
    b: &Bindings,
    extra: &HashMap<Var, RecExpr<Prog>>,
    out: &mut RecExpr<Prog>,
) -> Option<Id> {
    Some(match &pat[p] {
        ENodeOrVar::Var(v) => match (b.get(v), extra.get(v)) {
            (Some(t), _) => copy_into(term, *t, out),
            (None, Some(e)) => copy_into(e, root(e), out),
            (None, None) => return None,
        },
        ENodeOrVar::ENode(n) => {
            let mut n = n.clone();
            for c in n.children_mut() {
                *c = instantiate(pat, *c, term, b, extra, out)?;
            }
            out.add(n)
        }
    })
}

/// Every name a term mentions (bound or free).
pub fn names(t: &RecExpr<Prog>) -> std::collections::BTreeSet<Symbol> {
    t.as_ref()
        .iter()
        .filter_map(|n| match n {
            Prog::Sym(s) => Some(*s),
            _ => None,
        })
        .collect()
}

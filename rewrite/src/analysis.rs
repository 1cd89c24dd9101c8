//! The e-class analysis: exact constants, free variables, Σ-freedom and a
//! canonical normal form of each class.
//!
//! Instead of letting associativity/commutativity rules enumerate every
//! bracketing of a sum (which blows e-graphs up), each class carries the
//! [`Ctx::refine`] normal form of one of its terms — a canonical polynomial
//! with exact rational coefficients (`ir`'s `Poly`) — and the `normal-form`
//! rule adds that term to the class. Ring identities are thereby decided by
//! the analysis; the raw AC rules remain available (bounded) in
//! [`crate::rules::ring_ac`].

use crate::facts::Facts;
use crate::nat_lang::{AtomTable, NatLang, nat_size};
use crate::refine::Ctx;
use egg::{Analysis, DidMerge, EGraph, Id, Symbol};
use heddle_ir::expr::{BinOp, ExprKind};
use heddle_ir::nat::poly::Poly;
use heddle_ir::nat::{CmpOp, NatCond, NatOp};
use heddle_ir::{Expr, Name, Nat};
use num_rational::BigRational;
use num_traits::ToPrimitive;
use std::collections::BTreeSet;

/// Normal forms larger than this are not kept (the analysis must stay cheap
/// on adversarial input); such classes simply have no normal form.
pub const MAX_NORM_SIZE: usize = 2_000;

/// The e-graph of naturals.
pub type NatEGraph = EGraph<NatLang, NatAnalysis>;

/// A representative of a class as an `ir` term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term {
    /// A natural-sorted class.
    Nat(Nat),
    /// A condition-sorted class.
    Cond(NatCond),
}

/// Per-class data.
#[derive(Clone, Debug)]
pub struct NatData {
    /// The exact value, when it is a constant (conditions: 1 true, 0 false).
    pub constant: Option<BigRational>,
    /// Variables the class may depend on (symbols; the intersection over its
    /// terms, since any one term's free variables bound the dependence).
    pub free: BTreeSet<Symbol>,
    /// Does the class contain a term without Σ?
    pub sum_free: bool,
    /// The normal form of one of its terms, if small enough.
    pub norm: Option<Term>,
}

/// The analysis: owns the atom table and the facts, which rules consult.
#[derive(Debug, Default)]
pub struct NatAnalysis {
    /// Opaque atoms of the e-graph.
    pub table: AtomTable,
    /// What rules may assume.
    pub facts: Facts,
}

impl NatAnalysis {
    /// An analysis with these facts.
    pub fn new(facts: Facts) -> NatAnalysis {
        NatAnalysis { table: AtomTable::default(), facts }
    }
}

/// The natural normal form of a class, if it has one.
pub fn nat_of(egraph: &NatEGraph, id: Id) -> Option<&Nat> {
    match &egraph[id].data.norm {
        Some(Term::Nat(n)) => Some(n),
        _ => None,
    }
}

/// The condition normal form of a class, if it has one.
pub fn cond_of(egraph: &NatEGraph, id: Id) -> Option<&NatCond> {
    match &egraph[id].data.norm {
        Some(Term::Cond(c)) => Some(c),
        _ => None,
    }
}

/// The variable a class stands for, if it is a plain variable (a Σ binder).
pub fn var_of(egraph: &NatEGraph, id: Id) -> Option<Name> {
    egraph[id].nodes.iter().find_map(|n| match n {
        NatLang::Symbol(s) if !s.as_str().starts_with('#') => Some(Name::from(s.as_str())),
        _ => None,
    })
}

/// Ranking of normal forms: fewer Σ, then fewer compound `toNat`s (so that a
/// split `toNat(a) - toNat(b)` wins over `toNat(a - b)`), then smaller.
fn rank(t: &Term) -> (usize, usize, usize) {
    match t {
        Term::Cond(_) => (0, 0, 0),
        Term::Nat(n) => {
            let (mut sums, mut compound) = (0, 0);
            count(n, &mut sums, &mut compound);
            (sums, compound, nat_size(n))
        }
    }
}

fn count(n: &Nat, sums: &mut usize, compound: &mut usize) {
    match n {
        Nat::Sum { .. } => *sums += 1,
        Nat::ToNat(e) if matches!(e.kind, ExprKind::Binary { .. }) => *compound += 1,
        _ => {}
    }
    n.for_each_child(&mut |c| count(c, sums, compound));
}

fn expr_side(n: &Nat) -> Expr {
    match n {
        Nat::ToNat(e) => (**e).clone(),
        n => Expr::from_nat(n),
    }
}

/// The raw (un-normalised) term of a node from its children's normal forms.
fn raw_term(egraph: &NatEGraph, node: &NatLang) -> Option<Term> {
    let nat = |i: &Id| nat_of(egraph, *i).cloned();
    let cond = |i: &Id| cond_of(egraph, *i).cloned();
    let bin = |op: NatOp, [a, b]: &[Id; 2]| Some(Term::Nat(Nat::bin(op, nat(a)?, nat(b)?)));
    let cmp = |op: CmpOp, [a, b]: &[Id; 2]| Some(Term::Cond(NatCond::Cmp(op, nat(a)?, nat(b)?)));
    match node {
        NatLang::Num(v) => Some(Term::Nat(Nat::Lit(*v))),
        NatLang::Symbol(s) => match egraph.analysis.table.get(*s) {
            Some(atom) => Some(Term::Nat(atom.clone())),
            None => Some(Term::Nat(Nat::Var(Name::from(s.as_str())))),
        },
        NatLang::Add(c) => bin(NatOp::Add, c),
        NatLang::Sub(c) => bin(NatOp::Sub, c),
        NatLang::Mul(c) => bin(NatOp::Mul, c),
        NatLang::Div(c) => bin(NatOp::Div, c),
        NatLang::Mod(c) => bin(NatOp::Mod, c),
        NatLang::Min(c) => bin(NatOp::Min, c),
        NatLang::Max(c) => bin(NatOp::Max, c),
        NatLang::Sum([v, lo, hi, body]) => Some(Term::Nat(Nat::Sum {
            var: var_of(egraph, *v)?,
            lo: Box::new(nat(lo)?),
            hi: Box::new(nat(hi)?),
            body: Box::new(nat(body)?),
        })),
        NatLang::If([c, a, b]) => Some(Term::Nat(Nat::Cond(Box::new(cond(c)?), Box::new(nat(a)?), Box::new(nat(b)?)))),
        NatLang::Eq(c) => cmp(CmpOp::Eq, c),
        NatLang::Ne(c) => cmp(CmpOp::Ne, c),
        NatLang::Lt(c) => cmp(CmpOp::Lt, c),
        NatLang::Le(c) => cmp(CmpOp::Le, c),
        NatLang::Gt(c) => cmp(CmpOp::Gt, c),
        NatLang::Ge(c) => cmp(CmpOp::Ge, c),
        NatLang::And([a, b]) => Some(Term::Cond(NatCond::And(Box::new(cond(a)?), Box::new(cond(b)?)))),
        NatLang::Or([a, b]) => Some(Term::Cond(NatCond::Or(Box::new(cond(a)?), Box::new(cond(b)?)))),
        NatLang::Not(a) => Some(Term::Cond(NatCond::Not(Box::new(cond(a)?)))),
        NatLang::Lookup([a, i]) => {
            let array = Expr::var(var_of(egraph, *a)?);
            let index = Expr::from_nat(&nat(i)?);
            Some(Term::Nat(Nat::ToNat(Box::new(Expr::synth(ExprKind::Index {
                array: Box::new(array),
                index: Box::new(index),
            })))))
        }
        NatLang::ToNatAdd([l, r]) | NatLang::ToNatSub([l, r]) => {
            let op = if matches!(node, NatLang::ToNatAdd(_)) { BinOp::Add } else { BinOp::Sub };
            let (l, r) = (nat(l)?, nat(r)?);
            Some(Term::Nat(Nat::ToNat(Box::new(Expr::synth(ExprKind::Binary {
                op,
                lhs: Box::new(expr_side(&l)),
                rhs: Box::new(expr_side(&r)),
            })))))
        }
    }
}

impl Analysis<NatLang> for NatAnalysis {
    type Data = NatData;

    fn make(egraph: &mut NatEGraph, enode: &NatLang, _id: Id) -> NatData {
        let ctx = Ctx::new(&egraph.analysis.facts);
        let norm = raw_term(egraph, enode).and_then(|t| match t {
            Term::Nat(n) if nat_size(&n) <= MAX_NORM_SIZE => Some(Term::Nat(ctx.refine(&n))),
            Term::Cond(c) => Some(Term::Cond(ctx.refine_cond(&c))),
            Term::Nat(_) => None,
        });
        let constant = match &norm {
            Some(Term::Nat(n)) => Poly::from_nat(n).as_constant(),
            Some(Term::Cond(c)) => ctx.decide(c).map(|b| BigRational::from_integer((b as i64).into())),
            None => None,
        };
        let mut free = BTreeSet::new();
        match enode {
            NatLang::Symbol(s) => match egraph.analysis.table.get(*s) {
                Some(atom) => free.extend(crate::refine::free_vars(atom).iter().map(|x| Symbol::from(x.as_str()))),
                None => {
                    free.insert(*s);
                }
            },
            NatLang::Sum([v, lo, hi, body]) => {
                free.extend(egraph[*lo].data.free.iter().copied());
                free.extend(egraph[*hi].data.free.iter().copied());
                let bound = var_of(egraph, *v).map(|n| Symbol::from(n.as_str()));
                free.extend(egraph[*body].data.free.iter().copied().filter(|s| Some(*s) != bound));
            }
            _ => {
                for c in egg::Language::children(enode) {
                    free.extend(egraph[*c].data.free.iter().copied());
                }
            }
        }
        let sum_free = !matches!(enode, NatLang::Sum(_)) && egg::Language::all(enode, |c| egraph[c].data.sum_free);
        NatData { constant, free, sum_free, norm }
    }

    fn merge(&mut self, a: &mut NatData, b: NatData) -> DidMerge {
        let mut a_changed = false;
        let mut b_changed = false;
        match (&a.constant, b.constant) {
            (None, Some(c)) => {
                a.constant = Some(c);
                a_changed = true;
            }
            (Some(_), None) => b_changed = true,
            _ => {}
        }
        let free: BTreeSet<Symbol> = a.free.intersection(&b.free).copied().collect();
        a_changed |= free.len() != a.free.len();
        b_changed |= free.len() != b.free.len();
        a.free = free;
        if b.sum_free && !a.sum_free {
            a.sum_free = true;
            a_changed = true;
        } else if a.sum_free && !b.sum_free {
            b_changed = true;
        }
        match (&a.norm, b.norm) {
            (None, Some(n)) => {
                a.norm = Some(n);
                a_changed = true;
            }
            (Some(x), Some(y)) if rank(&y) < rank(x) => {
                a.norm = Some(y);
                a_changed = true;
            }
            (Some(x), Some(y)) if *x != y => b_changed = true,
            (Some(_), None) => b_changed = true,
            _ => {}
        }
        DidMerge(a_changed, b_changed)
    }

    fn modify(egraph: &mut NatEGraph, id: Id) {
        // Constant folding: a class with an integer value gets the literal.
        let lit = match (&egraph[id].data.constant, &egraph[id].data.norm) {
            (Some(c), Some(Term::Nat(_))) if c.is_integer() => c.to_integer().to_i64(),
            _ => None,
        };
        if let Some(v) = lit {
            let l = egraph.add(NatLang::Num(v));
            egraph.union(id, l);
        }
    }
}

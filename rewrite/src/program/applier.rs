//! The applier of every rule: checks the side conditions and the scoping
//! of binders on each match, names new binders so they capture nothing,
//! then instantiates the right-hand side.

use super::analysis::{ProgAnalysis, ProgGraph};
use super::lang::Prog;
use super::pattern::NewBinder;
use egg::{Applier, Id, Pattern, PatternAst, Subst, Symbol, Var};
use heddle_ir::Nat;
use heddle_ir::expr::{Literal, SectionOp};
use heddle_ir::nat::{CmpOp, NatCond, NatOp};

/// A natural in a side condition.
#[derive(Clone, Debug, PartialEq)]
pub enum NatTerm {
    /// An integer.
    Lit(i64),
    /// The natural a pattern variable's class denotes (`?k`).
    Var(Var),
    /// The length of the array a pattern variable's class is, when its
    /// elements all have one type (`len(?x)`).
    Len(Var),
    /// The number of elements of the array a pattern variable's class is,
    /// position-dependent or not (`count(?x)`).
    Count(Var),
    /// Arithmetic.
    Bin(NatOp, Box<NatTerm>, Box<NatTerm>),
}

/// One conjunct of a side condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    /// `a op b` on naturals; holds only when it is *provable* from what the
    /// analysis knows (unknown lengths make it false).
    Cmp(CmpOp, NatTerm, NatTerm),
    /// `assoc(?op, ?init)`: `?op` is an associative and commutative
    /// operator section with `?init` its identity (`+` with 0, `*` with 1).
    Assoc(Var, Var),
    /// `known(n)`: the natural can be computed.
    Known(NatTerm),
    /// `not(a)`: `a` cannot be proved.
    Not(Box<Cond>),
    /// `input(?x)`: `?x` is an array parameter of the kernel or a zip of them.
    Input(Var),
}

impl NatTerm {
    /// The natural, from what the e-graph knows; `None` where unknown.
    pub fn eval(&self, egraph: &ProgGraph, subst: &Subst) -> Option<Nat> {
        Some(match self {
            NatTerm::Lit(v) => Nat::Lit(*v),
            NatTerm::Var(v) => egraph[*subst.get(*v)?].data.nat.clone()?,
            NatTerm::Len(v) => egraph[*subst.get(*v)?].data.shape.as_ref()?.first()?.clone(),
            NatTerm::Count(v) => egraph[*subst.get(*v)?].data.count.clone()?,
            NatTerm::Bin(op, a, b) => Nat::bin(*op, a.eval(egraph, subst)?, b.eval(egraph, subst)?),
        })
    }
}

impl Cond {
    /// Does the condition provably hold for this match?
    pub fn holds(&self, egraph: &ProgGraph, subst: &Subst) -> bool {
        match self {
            Cond::Cmp(op, a, b) => match (a.eval(egraph, subst), b.eval(egraph, subst)) {
                (Some(a), Some(b)) => {
                    // Known values of the kernel's naturals (from inputs) decide what symbols cannot.
                    let facts = &egraph.analysis.facts;
                    let a = facts.iter().fold(a, |n, (x, v)| n.subst(x, &Nat::Lit(*v)));
                    let b = facts.iter().fold(b, |n, (x, v)| n.subst(x, &Nat::Lit(*v)));
                    heddle_ir::nat::poly::decide(&NatCond::Cmp(*op, a, b)) == Some(true)
                }
                _ => false,
            },
            Cond::Known(n) => n.eval(egraph, subst).is_some(),
            Cond::Not(a) => !a.holds(egraph, subst),
            Cond::Input(v) => subst.get(*v).is_some_and(|c| egraph[*c].data.input),
            Cond::Assoc(op, init) => {
                let (Some(op), Some(init)) = (subst.get(*op), subst.get(*init)) else { return false };
                let is = |v: f64| match egraph[*init].data.lit {
                    Some(Literal::Int(i)) => i as f64 == v,
                    Some(Literal::Float(f)) => f.0 == v,
                    _ => false,
                };
                match egraph[*op].data.section {
                    Some(SectionOp::Add) => is(0.0),
                    Some(SectionOp::Mul) => is(1.0),
                    // max/min have no identity literal for every type.
                    _ => false,
                }
            }
        }
    }
}

/// Applies a rule's right-hand side when its conditions hold.
#[derive(Clone)]
pub struct RuleApplier {
    /// The right-hand side.
    pub rhs: Pattern<Prog>,
    /// Conjuncts that must all hold.
    pub conds: Vec<Cond>,
    /// `(v, b)`: the name matched by binder `b` must not be free in `v`.
    pub scope_checks: Vec<(Var, Var)>,
    /// Binders the right-hand side introduces.
    pub new_binders: Vec<NewBinder>,
    /// Naturals the right-hand side computes (`len(?x)`), each bound to a
    /// pattern variable of its own.
    pub computed: Vec<(Var, NatTerm)>,
}

impl RuleApplier {
    fn may_mention(egraph: &ProgGraph, class: Id, name: Symbol) -> bool {
        let d = &egraph[class].data;
        d.opaque || d.free.contains(&name)
    }

    /// Do the conditions and the binder scopes hold for this match?
    pub fn admits(&self, egraph: &ProgGraph, subst: &Subst) -> bool {
        if !self.conds.iter().all(|c| c.holds(egraph, subst)) {
            return false;
        }
        self.scope_checks.iter().all(|(v, b)| {
            let (Some(v), Some(b)) = (subst.get(*v), subst.get(*b)) else { return false };
            matches!(egraph[*b].data.sym, Some(name) if !Self::may_mention(egraph, *v, name))
        })
    }

    /// The computed naturals as program terms (a variable, a literal or
    /// arithmetic, as `Expr::from_nat` writes them); `None` when one is
    /// unknown for this match.
    pub fn computed_terms(&self, egraph: &ProgGraph, subst: &Subst) -> Option<Vec<(Var, egg::RecExpr<Prog>)>> {
        self.computed
            .iter()
            .map(|(v, t)| {
                let n = t.eval(egraph, subst)?.normalize();
                Some((*v, super::convert::expr_to_rec(&heddle_ir::Expr::from_nat(&n))))
            })
            .collect()
    }
}

impl Applier<Prog, ProgAnalysis> for RuleApplier {
    fn apply_one(
        &self,
        egraph: &mut ProgGraph,
        eclass: Id,
        subst: &Subst,
        searcher_ast: Option<&PatternAst<Prog>>,
        rule_name: Symbol,
    ) -> Vec<Id> {
        if !self.admits(egraph, subst) {
            return vec![];
        }
        let Some(computed) = self.computed_terms(egraph, subst) else { return vec![] };
        let mut subst = subst.clone();
        for (v, term) in computed {
            let id = egraph.add_expr(&term);
            subst.insert(v, id);
        }
        for nb in &self.new_binders {
            let clashes = |name: Symbol, egraph: &ProgGraph| {
                nb.under.iter().any(|v| subst.get(*v).is_some_and(|c| Self::may_mention(egraph, *c, name)))
            };
            // The first of `y`, `y1`, `y2`, … that captures nothing: the
            // same match always gets the same name (re-application adds no
            // new lambda), and lambdas built alike elsewhere get the same
            // names too, so alpha-equivalent terms mostly share e-classes
            // instead of multiplying them.
            // Opaque classes clash with every name: such matches are skipped.
            let candidates = std::iter::once(nb.base).chain((1..16).map(|k| Symbol::from(format!("{}{k}", nb.base))));
            let mut chosen = None;
            for name in candidates {
                if !clashes(name, egraph) {
                    chosen = Some(name);
                    break;
                }
            }
            let Some(name) = chosen else { return vec![] };
            let id = egraph.add(Prog::Sym(name));
            subst.insert(nb.var, id);
        }
        self.rhs.apply_one(egraph, eclass, &subst, searcher_ast, rule_name)
    }

    fn vars(&self) -> Vec<Var> {
        let fresh: Vec<Var> = self.new_binders.iter().map(|b| b.var).chain(self.computed.iter().map(|c| c.0)).collect();
        self.rhs.vars().into_iter().filter(|v| !fresh.contains(v)).collect()
    }
}

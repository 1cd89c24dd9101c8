//! The applier of every rule: checks the side conditions and the scoping
//! of binders on each match, names new binders so they capture nothing,
//! then instantiates the right-hand side.

use super::analysis::{ProgAnalysis, ProgGraph};
use super::lang::Prog;
use super::pattern::NewBinder;
use egg::{Applier, Id, Pattern, PatternAst, Subst, Symbol, Var};
use heddle_ir::expr::{Literal, SectionOp};
use heddle_ir::nat::{CmpOp, NatCond, NatOp};
use heddle_ir::Nat;

/// A natural in a side condition.
#[derive(Clone, Debug, PartialEq)]
pub enum NatTerm {
    /// An integer.
    Lit(i64),
    /// The natural a pattern variable's class denotes (`?k`).
    Var(Var),
    /// The length of the array a pattern variable's class is (`len(?x)`).
    Len(Var),
    /// Arithmetic.
    Bin(NatOp, Box<NatTerm>, Box<NatTerm>),
}

/// One conjunct of a side condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    /// `a op b` on naturals; holds only when it is *provable* from what the
    /// analysis knows (unknown lengths make it false).
    Cmp(CmpOp, NatTerm, NatTerm),
    /// `assoc(?op, ?init)`: `?op` is an associative operator section with
    /// `?init` its identity (`+` with 0, `*` with 1).
    Assoc(Var, Var),
}

impl NatTerm {
    fn eval(&self, egraph: &ProgGraph, subst: &Subst) -> Option<Nat> {
        Some(match self {
            NatTerm::Lit(v) => Nat::Lit(*v),
            NatTerm::Var(v) => egraph[*subst.get(*v)?].data.nat.clone()?,
            NatTerm::Len(v) => egraph[*subst.get(*v)?].data.shape.as_ref()?.first()?.clone(),
            NatTerm::Bin(op, a, b) => Nat::bin(*op, a.eval(egraph, subst)?, b.eval(egraph, subst)?),
        })
    }
}

impl Cond {
    /// Does the condition provably hold for this match?
    pub fn holds(&self, egraph: &ProgGraph, subst: &Subst) -> bool {
        match self {
            Cond::Cmp(op, a, b) => match (a.eval(egraph, subst), b.eval(egraph, subst)) {
                (Some(a), Some(b)) => heddle_ir::nat::poly::decide(&NatCond::Cmp(*op, a, b)) == Some(true),
                _ => false,
            },
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
pub struct RuleApplier {
    /// The right-hand side.
    pub rhs: Pattern<Prog>,
    /// Conjuncts that must all hold.
    pub conds: Vec<Cond>,
    /// `(v, b)`: the name matched by binder `b` must not be free in `v`.
    pub scope_checks: Vec<(Var, Var)>,
    /// Binders the right-hand side introduces.
    pub new_binders: Vec<NewBinder>,
}

impl RuleApplier {
    fn may_mention(egraph: &ProgGraph, class: Id, name: Symbol) -> bool {
        let d = &egraph[class].data;
        d.opaque || d.free.contains(&name)
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
        if !self.conds.iter().all(|c| c.holds(egraph, subst)) {
            return vec![];
        }
        for (v, b) in &self.scope_checks {
            let (Some(v), Some(b)) = (subst.get(*v), subst.get(*b)) else { return vec![] };
            match egraph[*b].data.sym {
                Some(name) if !Self::may_mention(egraph, *v, name) => {}
                _ => return vec![],
            }
        }
        let mut subst = subst.clone();
        for nb in &self.new_binders {
            let clashes = |name: Symbol, egraph: &ProgGraph| {
                nb.under.iter().any(|v| subst.get(*v).is_some_and(|c| Self::may_mention(egraph, *c, name)))
            };
            // Deterministic names (from the class id) keep re-application
            // from adding a new lambda every iteration.
            // Opaque classes clash with every name: such matches are skipped.
            let candidates = std::iter::once(nb.base)
                .chain((0..4).map(|k| Symbol::from(format!("{}_{}_{k}", nb.base, usize::from(eclass)))));
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
        let fresh: Vec<Var> = self.new_binders.iter().map(|b| b.var).collect();
        self.rhs.vars().into_iter().filter(|v| !fresh.contains(v)).collect()
    }
}

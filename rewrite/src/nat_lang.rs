//! The egg language of naturals, and the exact conversion `Nat` ↔ `RecExpr`.
//!
//! Every [`Nat`] constructor has a node. Two things need more than a
//! one-to-one mapping:
//!
//! * **`toNat` of program expressions.** Rules must see *inside* the
//!   expressions that matter for Σ elimination: a lookup `toNat(A@e)` into an
//!   array variable `A` at a natural index `e` becomes `(lookup A e)`, and
//!   `toNat(a + b)` / `toNat(a - b)` become `(tadd ..)` / `(tsub ..)` whose
//!   children are again `toNat` forms, so that the splitting rule can fire.
//!   Every other `toNat(e)` (and every [`Nat::Meta`]) is an opaque atom: a leaf
//!   `#n` naming entry `n` of an [`AtomTable`], which converts it back exactly.
//! * **Σ binders.** `(sum k lo hi body)` names its index with a leaf. Inside the
//!   e-graph every binder is spelled with a leading `%` (`%0`, `%1`, …), which
//!   no heddle identifier can start with: a bound index can never be confused
//!   with a free variable of the same spelling, and the analysis knows that a
//!   `%`-variable is *not* a (non-negative) free natural. See
//!   [`crate::refine::canonical_binders`].

use egg::{Id, Language, RecExpr, Symbol};
use heddle_ir::expr::{BinOp, ExprKind, Literal};
use heddle_ir::nat::{CmpOp, NatCond, NatOp};
use heddle_ir::{Expr, Name, Nat};
use std::collections::HashMap;

// egg's macro does not take documentation on variants; the enum's
// documentation lists them.
mod lang {
    #![allow(missing_docs)]
    use egg::{Id, Symbol, define_language};
    define_language! {
        /// Naturals as an egg language.
        ///
        /// Nat-sorted nodes: literals, symbols (variables and `#n` atoms),
        /// arithmetic, `sum`, `if`, `lookup`, `tadd`, `tsub`. Condition-sorted
        /// nodes: the comparisons and `and`/`or`/`not`; they only occur as the
        /// first child of `if`.
        pub enum NatLang {
            "+" = Add([Id; 2]),
            "-" = Sub([Id; 2]),
            "*" = Mul([Id; 2]),
            "/" = Div([Id; 2]),
            "%" = Mod([Id; 2]),
            "min" = Min([Id; 2]),
            "max" = Max([Id; 2]),
            // [binder, lo, hi, body]; inclusive bounds, 0 when hi < lo.
            "sum" = Sum([Id; 4]),
            // [condition, then, else]
            "if" = If([Id; 3]),
            "==" = Eq([Id; 2]),
            "!=" = Ne([Id; 2]),
            "<" = Lt([Id; 2]),
            "<=" = Le([Id; 2]),
            ">" = Gt([Id; 2]),
            ">=" = Ge([Id; 2]),
            "and" = And([Id; 2]),
            "or" = Or([Id; 2]),
            "not" = Not(Id),
            // toNat(A@e): [array name, index]
            "lookup" = Lookup([Id; 2]),
            // toNat(a + b) and toNat(a - b), children are toNat forms.
            "tadd" = ToNatAdd([Id; 2]),
            "tsub" = ToNatSub([Id; 2]),
            Num(i64),
            Symbol(Symbol),
        }
    }
}
pub use lang::NatLang;

/// Opaque atoms (`toNat` expressions the language does not model, unknowns),
/// numbered so that the leaf `#n` converts back to exactly the same [`Nat`].
#[derive(Clone, Debug, Default)]
pub struct AtomTable {
    atoms: Vec<Nat>,
    index: HashMap<Nat, usize>,
}

impl AtomTable {
    /// The leaf symbol for `atom`, registering it on first use.
    pub fn intern(&mut self, atom: &Nat) -> Symbol {
        let n = match self.index.get(atom) {
            Some(&n) => n,
            None => {
                self.atoms.push(atom.clone());
                self.index.insert(atom.clone(), self.atoms.len() - 1);
                self.atoms.len() - 1
            }
        };
        Symbol::from(format!("#{n}"))
    }
    /// The atom a leaf symbol stands for, if it is one of ours.
    pub fn get(&self, sym: Symbol) -> Option<&Nat> {
        let s = sym.as_str();
        let n: usize = s.strip_prefix('#')?.parse().ok()?;
        self.atoms.get(n)
    }
    /// Number of atoms.
    pub fn len(&self) -> usize {
        self.atoms.len()
    }
    /// No atoms yet?
    pub fn is_empty(&self) -> bool {
        self.atoms.is_empty()
    }
}

/// Why a `RecExpr` could not be read back as a natural.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// A condition node where a natural was expected, or the reverse.
    #[error("ill-sorted natural term at node `{0}`")]
    Sort(String),
    /// A `#n` leaf that the atom table does not know.
    #[error("unknown atom `{0}`")]
    UnknownAtom(String),
    /// An empty expression.
    #[error("empty expression")]
    Empty,
}

/// Is this symbol a Σ binder of the e-graph (spelled with a leading `%`)?
pub fn is_binder(sym: &str) -> bool {
    sym.starts_with('%')
}

/// Appends `n` to `out`, returning its id.
pub fn add_nat(n: &Nat, table: &mut AtomTable, out: &mut RecExpr<NatLang>) -> Id {
    match n {
        Nat::Var(x) => out.add(NatLang::Symbol(Symbol::from(x.as_str()))),
        Nat::Lit(v) => out.add(NatLang::Num(*v)),
        Nat::Meta(_) => {
            let s = table.intern(n);
            out.add(NatLang::Symbol(s))
        }
        Nat::ToNat(e) => add_tonat(e, n, table, out),
        Nat::Bin(op, a, b) => {
            let ids = [add_nat(a, table, out), add_nat(b, table, out)];
            out.add(match op {
                NatOp::Add => NatLang::Add(ids),
                NatOp::Sub => NatLang::Sub(ids),
                NatOp::Mul => NatLang::Mul(ids),
                NatOp::Div => NatLang::Div(ids),
                NatOp::Mod => NatLang::Mod(ids),
                NatOp::Min => NatLang::Min(ids),
                NatOp::Max => NatLang::Max(ids),
            })
        }
        Nat::Sum { var, lo, hi, body } => {
            let v = out.add(NatLang::Symbol(Symbol::from(var.as_str())));
            let lo = add_nat(lo, table, out);
            let hi = add_nat(hi, table, out);
            let body = add_nat(body, table, out);
            out.add(NatLang::Sum([v, lo, hi, body]))
        }
        Nat::Cond(c, a, b) => {
            let c = add_cond(c, table, out);
            let a = add_nat(a, table, out);
            let b = add_nat(b, table, out);
            out.add(NatLang::If([c, a, b]))
        }
    }
}

fn add_cond(c: &NatCond, table: &mut AtomTable, out: &mut RecExpr<NatLang>) -> Id {
    match c {
        NatCond::Cmp(op, a, b) => {
            let ids = [add_nat(a, table, out), add_nat(b, table, out)];
            out.add(match op {
                CmpOp::Eq => NatLang::Eq(ids),
                CmpOp::Ne => NatLang::Ne(ids),
                CmpOp::Lt => NatLang::Lt(ids),
                CmpOp::Le => NatLang::Le(ids),
                CmpOp::Gt => NatLang::Gt(ids),
                CmpOp::Ge => NatLang::Ge(ids),
            })
        }
        NatCond::And(a, b) => {
            let ids = [add_cond(a, table, out), add_cond(b, table, out)];
            out.add(NatLang::And(ids))
        }
        NatCond::Or(a, b) => {
            let ids = [add_cond(a, table, out), add_cond(b, table, out)];
            out.add(NatLang::Or(ids))
        }
        NatCond::Not(a) => {
            let id = add_cond(a, table, out);
            out.add(NatLang::Not(id))
        }
    }
}

/// The array name and natural index of `A@e`, if `e` is a natural.
pub fn as_lookup(e: &Expr) -> Option<(Name, Nat)> {
    match &e.kind {
        ExprKind::Index { array, index } => match &array.kind {
            ExprKind::Var(a) => Some((a.clone(), index_nat(index)?)),
            _ => None,
        },
        _ => None,
    }
}

/// A lookup's position as a natural. A position may itself read an array
/// (`A_pos2@(A_pos1@p0 + p1)` in a CSF tensor's innermost level): such a read
/// is the atom `toNat(A_pos1@p0)` (positions are never negative), so the outer
/// lookup is still recognised and its telescoping sums close.
fn index_nat(e: &Expr) -> Option<Nat> {
    use heddle_ir::nat::NatOp;
    if let Some(n) = e.as_nat() {
        return Some(n);
    }
    match &e.kind {
        ExprKind::Binary { op, lhs, rhs } => {
            let op = match op {
                BinOp::Add => NatOp::Add,
                BinOp::Sub => NatOp::Sub,
                BinOp::Mul => NatOp::Mul,
                _ => return None,
            };
            Some(Nat::Bin(op, Box::new(index_nat(lhs)?), Box::new(index_nat(rhs)?)))
        }
        ExprKind::Index { .. } if as_lookup(e).is_some() => Some(Nat::ToNat(Box::new(e.clone()))),
        _ => None,
    }
}

/// `toNat(e)`: lookups, sums and differences are modelled, the rest is an atom.
fn add_tonat(e: &Expr, whole: &Nat, table: &mut AtomTable, out: &mut RecExpr<NatLang>) -> Id {
    if let Some((a, idx)) = as_lookup(e) {
        let a = out.add(NatLang::Symbol(Symbol::from(a.as_str())));
        let i = add_nat(&idx, table, out);
        return out.add(NatLang::Lookup([a, i]));
    }
    match &e.kind {
        ExprKind::Binary { op: op @ (BinOp::Add | BinOp::Sub), lhs, rhs } => {
            let l = add_tonat(lhs, &Nat::ToNat(lhs.clone()), table, out);
            let r = add_tonat(rhs, &Nat::ToNat(rhs.clone()), table, out);
            out.add(if *op == BinOp::Add { NatLang::ToNatAdd([l, r]) } else { NatLang::ToNatSub([l, r]) })
        }
        // A non-negative integer literal is its own value.
        ExprKind::Lit(Literal::Int(v)) if *v >= 0 => out.add(NatLang::Num(*v)),
        _ => {
            let s = table.intern(whole);
            out.add(NatLang::Symbol(s))
        }
    }
}

/// Converts a natural to a `RecExpr`, registering opaque atoms in `table`.
pub fn nat_to_rec(n: &Nat, table: &mut AtomTable) -> RecExpr<NatLang> {
    let mut out = RecExpr::default();
    add_nat(n, table, &mut out);
    out
}

/// Converts a `RecExpr` (its last node is the root) back to a natural.
pub fn rec_to_nat(expr: &RecExpr<NatLang>, table: &AtomTable) -> Result<Nat, ConvertError> {
    let nodes = expr.as_ref();
    if nodes.is_empty() {
        return Err(ConvertError::Empty);
    }
    node_to_nat(nodes, Id::from(nodes.len() - 1), table)
}

fn node_to_nat(nodes: &[NatLang], id: Id, table: &AtomTable) -> Result<Nat, ConvertError> {
    let go = |i: Id| node_to_nat(nodes, i, table);
    let node = &nodes[usize::from(id)];
    let bin = |op: NatOp, [a, b]: [Id; 2]| -> Result<Nat, ConvertError> { Ok(Nat::bin(op, go(a)?, go(b)?)) };
    match node {
        NatLang::Num(v) => Ok(Nat::Lit(*v)),
        NatLang::Symbol(s) => {
            if s.as_str().starts_with('#') {
                table.get(*s).cloned().ok_or_else(|| ConvertError::UnknownAtom(s.to_string()))
            } else {
                Ok(Nat::Var(Name::from(s.as_str())))
            }
        }
        NatLang::Add(c) => bin(NatOp::Add, *c),
        NatLang::Sub(c) => bin(NatOp::Sub, *c),
        NatLang::Mul(c) => bin(NatOp::Mul, *c),
        NatLang::Div(c) => bin(NatOp::Div, *c),
        NatLang::Mod(c) => bin(NatOp::Mod, *c),
        NatLang::Min(c) => bin(NatOp::Min, *c),
        NatLang::Max(c) => bin(NatOp::Max, *c),
        NatLang::Sum([v, lo, hi, body]) => {
            let var = match &nodes[usize::from(*v)] {
                NatLang::Symbol(s) if !s.as_str().starts_with('#') => Name::from(s.as_str()),
                other => return Err(ConvertError::Sort(other.to_string())),
            };
            Ok(Nat::Sum { var, lo: Box::new(go(*lo)?), hi: Box::new(go(*hi)?), body: Box::new(go(*body)?) })
        }
        NatLang::If([c, a, b]) => {
            Ok(Nat::Cond(Box::new(node_to_cond(nodes, *c, table)?), Box::new(go(*a)?), Box::new(go(*b)?)))
        }
        NatLang::Lookup(_) | NatLang::ToNatAdd(_) | NatLang::ToNatSub(_) => {
            Ok(Nat::ToNat(Box::new(node_to_expr(nodes, id, table)?)))
        }
        other => Err(ConvertError::Sort(other.to_string())),
    }
}

/// The program expression of a `toNat` form.
fn node_to_expr(nodes: &[NatLang], id: Id, table: &AtomTable) -> Result<Expr, ConvertError> {
    match &nodes[usize::from(id)] {
        NatLang::Lookup([a, i]) => {
            let array = match &nodes[usize::from(*a)] {
                NatLang::Symbol(s) if !s.as_str().starts_with('#') => Expr::var(s.as_str()),
                other => return Err(ConvertError::Sort(other.to_string())),
            };
            let index = Expr::from_nat(&node_to_nat(nodes, *i, table)?);
            Ok(Expr::synth(ExprKind::Index { array: Box::new(array), index: Box::new(index) }))
        }
        NatLang::ToNatAdd([l, r]) | NatLang::ToNatSub([l, r]) => {
            let op = if matches!(nodes[usize::from(id)], NatLang::ToNatAdd(_)) { BinOp::Add } else { BinOp::Sub };
            Ok(Expr::synth(ExprKind::Binary {
                op,
                lhs: Box::new(node_to_expr(nodes, *l, table)?),
                rhs: Box::new(node_to_expr(nodes, *r, table)?),
            }))
        }
        // Any other natural inside a toNat form: its expression form
        // (`toNat(n)` of a natural `n` is `n`).
        _ => match node_to_nat(nodes, id, table)? {
            Nat::ToNat(e) => Ok(*e),
            n => Ok(Expr::from_nat(&n)),
        },
    }
}

fn node_to_cond(nodes: &[NatLang], id: Id, table: &AtomTable) -> Result<NatCond, ConvertError> {
    let nat = |i: Id| node_to_nat(nodes, i, table);
    let cond = |i: Id| node_to_cond(nodes, i, table);
    let cmp = |op: CmpOp, [a, b]: [Id; 2]| -> Result<NatCond, ConvertError> { Ok(NatCond::Cmp(op, nat(a)?, nat(b)?)) };
    match &nodes[usize::from(id)] {
        NatLang::Eq(c) => cmp(CmpOp::Eq, *c),
        NatLang::Ne(c) => cmp(CmpOp::Ne, *c),
        NatLang::Lt(c) => cmp(CmpOp::Lt, *c),
        NatLang::Le(c) => cmp(CmpOp::Le, *c),
        NatLang::Gt(c) => cmp(CmpOp::Gt, *c),
        NatLang::Ge(c) => cmp(CmpOp::Ge, *c),
        NatLang::And([a, b]) => Ok(NatCond::And(Box::new(cond(*a)?), Box::new(cond(*b)?))),
        NatLang::Or([a, b]) => Ok(NatCond::Or(Box::new(cond(*a)?), Box::new(cond(*b)?))),
        NatLang::Not(a) => Ok(NatCond::Not(Box::new(cond(*a)?))),
        other => Err(ConvertError::Sort(other.to_string())),
    }
}

/// Is this node condition-sorted?
pub fn is_cond_node(n: &NatLang) -> bool {
    matches!(
        n,
        NatLang::Eq(_)
            | NatLang::Ne(_)
            | NatLang::Lt(_)
            | NatLang::Le(_)
            | NatLang::Gt(_)
            | NatLang::Ge(_)
            | NatLang::And(_)
            | NatLang::Or(_)
            | NatLang::Not(_)
    )
}

/// Number of nodes of a natural (conditions and `toNat` expressions count as
/// one node each); used to bound work on user input.
pub fn nat_size(n: &Nat) -> usize {
    let mut size = 1;
    n.for_each_child(&mut |c| size += nat_size(c));
    size
}

#[allow(unused)]
fn _assert_language()
where
    NatLang: Language,
{
}

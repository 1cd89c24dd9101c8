//! Normal forms under facts: the canonical polynomial form of `ir`, plus what
//! it cannot see on its own — intervals (free naturals are ≥ 0, a Σ index
//! lies between its bounds), known array elements, normalised lookup indices
//! and canonical Σ binder names.
//!
//! [`Ctx::refine`] is the "polynomial form as analysis data" of the e-graph
//! (see [`crate::analysis`]) and the workhorse of the Σ rules that work on
//! whole formulas (see [`crate::rules`]).

use crate::facts::Facts;
use crate::nat_lang::{as_lookup, is_binder};
use heddle_ir::expr::{BinOp, ExprKind};
use heddle_ir::nat::poly::Poly;
use heddle_ir::nat::{CmpOp, NatCond, NatOp};
use heddle_ir::{Expr, Name, Nat};
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::Signed;
use std::collections::{BTreeSet, HashMap};

/// A closed integer interval; `None` is unbounded on that side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Lower bound.
    pub lo: Option<i128>,
    /// Upper bound.
    pub hi: Option<i128>,
}

impl Interval {
    /// No information.
    pub const TOP: Interval = Interval { lo: None, hi: None };
    /// A single value.
    pub fn point(v: i128) -> Interval {
        Interval { lo: Some(v), hi: Some(v) }
    }
    /// `[lo, ∞)`.
    pub fn at_least(lo: i128) -> Interval {
        Interval { lo: Some(lo), hi: None }
    }
    fn add(self, o: Interval) -> Interval {
        let f = |a: Option<i128>, b: Option<i128>| a?.checked_add(b?);
        Interval { lo: f(self.lo, o.lo), hi: f(self.hi, o.hi) }
    }
    fn neg(self) -> Interval {
        Interval { lo: self.hi.and_then(|v| v.checked_neg()), hi: self.lo.and_then(|v| v.checked_neg()) }
    }
    fn mul(self, o: Interval) -> Interval {
        // Exact only when all four corners are finite; otherwise keep the
        // signs we can be sure of.
        if let (Some(a), Some(b), Some(c), Some(d)) = (self.lo, self.hi, o.lo, o.hi) {
            let corners = [a.checked_mul(c), a.checked_mul(d), b.checked_mul(c), b.checked_mul(d)];
            if corners.iter().all(Option::is_some) {
                let vs: Vec<i128> = corners.iter().flatten().copied().collect();
                return Interval { lo: vs.iter().min().copied(), hi: vs.iter().max().copied() };
            }
        }
        let nonneg = |i: Interval| i.lo.is_some_and(|v| v >= 0);
        if nonneg(self) && nonneg(o) { Interval::at_least(0) } else { Interval::TOP }
    }
    fn hull(self, o: Interval) -> Interval {
        let lo = match (self.lo, o.lo) {
            (Some(a), Some(b)) => Some(a.min(b)),
            _ => None,
        };
        let hi = match (self.hi, o.hi) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        Interval { lo, hi }
    }
    /// The intersection (both intervals are sound, so is it).
    fn meet(self, o: Interval) -> Interval {
        let lo = match (self.lo, o.lo) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (x, None) | (None, x) => x,
        };
        let hi = match (self.hi, o.hi) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (x, None) | (None, x) => x,
        };
        Interval { lo, hi }
    }
    /// Is every value ≥ 0?
    pub fn nonneg(self) -> bool {
        self.lo.is_some_and(|v| v >= 0)
    }
}

/// Facts plus the ranges of Σ indices in scope.
#[derive(Clone, Debug)]
pub struct Ctx<'a> {
    /// Facts about arrays and free variables.
    pub facts: &'a Facts,
    /// Ranges of bound variables (Σ indices) in scope.
    pub ranges: HashMap<Name, Interval>,
}

impl<'a> Ctx<'a> {
    /// A context with no bound variables.
    pub fn new(facts: &'a Facts) -> Ctx<'a> {
        Ctx { facts, ranges: HashMap::new() }
    }
    /// This context with `var` ranging over `interval`.
    pub fn with_range(&self, var: &Name, interval: Interval) -> Ctx<'a> {
        let mut c = self.clone();
        c.ranges.insert(var.clone(), interval);
        c
    }

    /// An interval containing every value of `n` (sound, not tight).
    pub fn bounds(&self, n: &Nat) -> Interval {
        match n {
            Nat::Lit(v) => Interval::point(*v as i128),
            Nat::Var(x) => match self.ranges.get(x) {
                Some(i) => *i,
                None if is_binder(x.as_str()) => Interval::TOP,
                None if self.facts.free_vars_nonneg => Interval::at_least(0),
                None => Interval::TOP,
            },
            Nat::Meta(_) | Nat::ToNat(_) => Interval::TOP,
            Nat::Bin(op, a, b) => {
                let (ia, ib) = (self.bounds(a), self.bounds(b));
                match op {
                    NatOp::Add | NatOp::Sub => {
                        let plain = if *op == NatOp::Add { ia.add(ib) } else { ia.add(ib.neg()) };
                        match plain.lo {
                            Some(_) => plain,
                            None => self.monotone_pairs(n).map_or(plain, |paired| plain.meet(paired)),
                        }
                    }
                    NatOp::Mul => ia.mul(ib),
                    NatOp::Div => match b.as_lit() {
                        Some(c) if c > 0 => {
                            let c = c as i128;
                            Interval {
                                lo: ia.lo.map(|v| Integer::div_floor(&v, &c)),
                                hi: ia.hi.map(|v| Integer::div_floor(&v, &c)),
                            }
                        }
                        _ => Interval::TOP,
                    },
                    NatOp::Mod => match b.as_lit() {
                        Some(c) if c > 0 => Interval { lo: Some(0), hi: Some(c as i128 - 1) },
                        _ => Interval::TOP,
                    },
                    NatOp::Min => Interval {
                        lo: ia.lo.zip(ib.lo).map(|(x, y)| x.min(y)),
                        hi: match (ia.hi, ib.hi) {
                            (Some(x), Some(y)) => Some(x.min(y)),
                            (x, None) => x,
                            (None, y) => y,
                        },
                    },
                    NatOp::Max => Interval {
                        lo: match (ia.lo, ib.lo) {
                            (Some(x), Some(y)) => Some(x.max(y)),
                            (x, None) => x,
                            (None, y) => y,
                        },
                        hi: ia.hi.zip(ib.hi).map(|(x, y)| x.max(y)),
                    },
                }
            }
            Nat::Cond(c, a, b) => match self.decide(c) {
                Some(true) => self.bounds(a),
                Some(false) => self.bounds(b),
                None => self.bounds(a).hull(self.bounds(b)),
            },
            Nat::Sum { var, lo, hi, body } => {
                let range = Interval { lo: self.bounds(lo).lo, hi: self.bounds(hi).hi };
                if self.with_range(var, range).bounds(body).nonneg() { Interval::at_least(0) } else { Interval::TOP }
            }
        }
    }

    /// Bounds of a sum that pairs each `c * toNat(A@x)` with a
    /// `-c * toNat(A@y)` of the same non-decreasing array where `x ≥ y` is
    /// provable: each such pair is ≥ 0, so the sum is at least what the
    /// rest's bounds say (no upper bound). This is what makes a size split by
    /// `tonat-sub-monotone`, `toNat(A@(q+1)) - toNat(A@q)`, known to be
    /// non-negative again, so that the guard `count >= 0 ? … : 0` of a
    /// telescoped Σ over it goes away and an enclosing Σ telescopes in turn
    /// (a rank-4 CSF tensor's flat positions). `None` when nothing pairs.
    ///
    /// Sound where the fact is: `A` is non-decreasing on the positions its
    /// type reads it at (input binding checks every size `toNat(A@(q+1) -
    /// A@q)` ≥ 0, and a tensor's positions buffers are validated never to
    /// decrease), and `toNat` of an integer is that integer.
    fn monotone_pairs(&self, n: &Nat) -> Option<Interval> {
        if self.facts.non_decreasing.is_empty() {
            return None;
        }
        let poly = Poly::from_nat(n);
        // The linear terms `c * toNat(A@x)` of non-decreasing arrays.
        let mut lookups: Vec<(Name, Nat, Nat, BigRational)> = Vec::new();
        for (m, c) in poly.terms() {
            if let [(atom @ Nat::ToNat(e), 1)] = m.as_slice()
                && let Some((a, x)) = as_lookup(e)
                && self.facts.is_non_decreasing(a.as_str())
            {
                lookups.push((a, x, atom.clone(), c.clone()));
            }
        }
        let mut rest = poly.clone();
        let mut paired = false;
        for i in 0..lookups.len() {
            for j in 0..lookups.len() {
                let (hi, lo) = (&lookups[i], &lookups[j]);
                if hi.0 != lo.0 || !hi.3.is_positive() || !lo.3.is_negative() {
                    continue;
                }
                if !self.diff_bounds(&hi.1, &lo.1).nonneg() {
                    continue;
                }
                // `m * (toNat(A@x) - toNat(A@y))` with `m` what both have left.
                let m = hi.3.clone().min(-lo.3.clone());
                let pair = Poly::atom(hi.2.clone()).sub(&Poly::atom(lo.2.clone())).scale(&m);
                rest = rest.sub(&pair);
                lookups[i].3 -= &m;
                lookups[j].3 += &m;
                paired = true;
            }
        }
        if !paired {
            return None;
        }
        Some(Interval { lo: self.bounds(&rest.to_nat()).lo, hi: None })
    }

    /// Bounds of `a - b`, after normalising the difference (so that `i - i`
    /// is exactly 0).
    pub fn diff_bounds(&self, a: &Nat, b: &Nat) -> Interval {
        self.bounds(&Nat::sub(a.clone(), b.clone()).normalize())
    }

    /// Decides a condition from intervals, if it can.
    pub fn decide(&self, c: &NatCond) -> Option<bool> {
        match c {
            NatCond::Cmp(op, a, b) => {
                let d = self.diff_bounds(a, b);
                let (pos, neg, zero) =
                    (d.lo.is_some_and(|v| v > 0), d.hi.is_some_and(|v| v < 0), d == Interval::point(0));
                let nonneg = d.lo.is_some_and(|v| v >= 0);
                let nonpos = d.hi.is_some_and(|v| v <= 0);
                match op {
                    CmpOp::Eq if zero => Some(true),
                    CmpOp::Eq if pos || neg => Some(false),
                    CmpOp::Ne if zero => Some(false),
                    CmpOp::Ne if pos || neg => Some(true),
                    CmpOp::Lt if neg => Some(true),
                    CmpOp::Lt if nonneg => Some(false),
                    CmpOp::Le if nonpos => Some(true),
                    CmpOp::Le if pos => Some(false),
                    CmpOp::Gt if pos => Some(true),
                    CmpOp::Gt if nonpos => Some(false),
                    CmpOp::Ge if nonneg => Some(true),
                    CmpOp::Ge if neg => Some(false),
                    _ => None,
                }
            }
            NatCond::And(a, b) => match (self.decide(a), self.decide(b)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            NatCond::Or(a, b) => match (self.decide(a), self.decide(b)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            NatCond::Not(a) => self.decide(a).map(|v| !v),
        }
    }

    /// The normal form under these facts: lookups with normalised indices
    /// (known elements replaced by their values), the polynomial form,
    /// ternaries and min/max decided by intervals, canonical Σ binders.
    pub fn refine(&self, n: &Nat) -> Nat {
        let n = self.canon_tonat(n).normalize();
        let folded = self.fold(&n);
        let n = if folded != n { folded.normalize() } else { n };
        canonical_binders(&n)
    }

    /// `refine` for conditions.
    pub fn refine_cond(&self, c: &NatCond) -> NatCond {
        c.map_nats(&mut |n| self.refine(n))
    }

    fn canon_tonat(&self, n: &Nat) -> Nat {
        n.map_bottom_up(&mut |m| match m {
            Nat::ToNat(e) => self.canon_expr(&e),
            other => other,
        })
    }

    /// `toNat(e)` with lookup indices normalised and known elements folded.
    fn canon_expr(&self, e: &Expr) -> Nat {
        if let Some((a, idx)) = as_lookup(e) {
            let idx = self.canon_tonat(&idx).normalize();
            if let Some(v) = idx.as_lit().and_then(|i| self.facts.value_at(a.as_str(), i)) {
                return Nat::Lit(v);
            }
            let array = Expr::var(a);
            return Nat::ToNat(Box::new(Expr::synth(ExprKind::Index {
                array: Box::new(array),
                index: Box::new(Expr::from_nat(&idx)),
            })));
        }
        if let ExprKind::Binary { op: op @ (BinOp::Add | BinOp::Sub), lhs, rhs } = &e.kind {
            let l = self.canon_expr(lhs);
            let r = self.canon_expr(rhs);
            let side = |n: Nat| match n {
                Nat::ToNat(e) => *e,
                n => Expr::from_nat(&n),
            };
            return Nat::ToNat(Box::new(Expr::synth(ExprKind::Binary {
                op: *op,
                lhs: Box::new(side(l)),
                rhs: Box::new(side(r)),
            })));
        }
        Nat::ToNat(Box::new(e.clone()))
    }

    /// Decides ternaries and min/max by intervals, with Σ indices in range.
    fn fold(&self, n: &Nat) -> Nat {
        match n {
            Nat::Var(_) | Nat::Lit(_) | Nat::ToNat(_) | Nat::Meta(_) => n.clone(),
            Nat::Bin(op @ (NatOp::Min | NatOp::Max), a, b) => {
                let (a, b) = (self.fold(a), self.fold(b));
                let d = self.diff_bounds(&a, &b);
                let a_le = d.hi.is_some_and(|v| v <= 0);
                let a_ge = d.lo.is_some_and(|v| v >= 0);
                match (op, a_le, a_ge) {
                    (NatOp::Min, true, _) | (NatOp::Max, _, true) => a,
                    (NatOp::Min, _, true) | (NatOp::Max, true, _) => b,
                    _ => Nat::bin(*op, a, b),
                }
            }
            Nat::Bin(op, a, b) => Nat::bin(*op, self.fold(a), self.fold(b)),
            Nat::Cond(c, a, b) => match self.decide(c) {
                Some(true) => self.fold(a),
                Some(false) => self.fold(b),
                None => Nat::Cond(
                    Box::new(c.map_nats(&mut |m| self.fold(m))),
                    Box::new(self.fold(a)),
                    Box::new(self.fold(b)),
                ),
            },
            Nat::Sum { var, lo, hi, body } => {
                let (lo, hi) = (self.fold(lo), self.fold(hi));
                let range = Interval { lo: self.bounds(&lo).lo, hi: self.bounds(&hi).hi };
                let body = self.with_range(var, range).fold(body);
                Nat::Sum { var: var.clone(), lo: Box::new(lo), hi: Box::new(hi), body: Box::new(body) }
            }
        }
    }
}

/// Free variables of a natural, also inside `toNat` expressions (an
/// over-approximation there: every variable the expression names).
pub fn free_vars(n: &Nat) -> BTreeSet<Name> {
    let mut out = BTreeSet::new();
    collect_nat(n, &mut out);
    out
}

fn collect_nat(n: &Nat, out: &mut BTreeSet<Name>) {
    match n {
        Nat::Var(x) => {
            out.insert(x.clone());
        }
        Nat::ToNat(e) => collect_expr(e, out),
        Nat::Sum { var, lo, hi, body } => {
            collect_nat(lo, out);
            collect_nat(hi, out);
            let mut inner = BTreeSet::new();
            collect_nat(body, &mut inner);
            inner.remove(var);
            out.extend(inner);
        }
        _ => n.for_each_child(&mut |c| collect_nat(c, out)),
    }
}

fn collect_expr(e: &Expr, out: &mut BTreeSet<Name>) {
    match &e.kind {
        ExprKind::Var(x) => {
            out.insert(x.clone());
        }
        ExprKind::NatValue(n) => collect_nat(n, out),
        _ => e.for_each_child(&mut |c| collect_expr(c, out)),
    }
}

fn binder_level(x: &Name) -> Option<u32> {
    x.as_str().strip_prefix('%')?.parse().ok()
}

/// Renames every Σ index to `%m`, where `m` is one more than the largest
/// `%`-level free in its body (0 if none): a function of the body only, so
/// alpha-equivalent sums get the same spelling, and never a capture.
pub fn canonical_binders(n: &Nat) -> Nat {
    n.map_bottom_up(&mut |m| match m {
        Nat::Sum { var, lo, hi, body } => {
            let level =
                free_vars(&body).iter().filter(|x| **x != var).filter_map(binder_level).max().map_or(0, |l| l + 1);
            let name = Name::from(format!("%{level}"));
            let body = if name == var { *body } else { body.subst(&var, &Nat::Var(name.clone())) };
            Nat::Sum { var: name, lo, hi, body: Box::new(body) }
        }
        other => other,
    })
}

/// Renames the e-graph's `%` binders to readable names (`k`, `k1`, …) that
/// capture nothing.
pub fn friendly_binders(n: &Nat) -> Nat {
    n.map_bottom_up(&mut |m| match m {
        Nat::Sum { var, lo, hi, body } if is_binder(var.as_str()) => {
            let name = heddle_ir::nat::fresh_name(&Name::from("k"), |c| *c != var && body.mentions(c));
            let body = body.subst(&var, &Nat::Var(name.clone()));
            Nat::Sum { var: name, lo, hi, body: Box::new(body) }
        }
        other => other,
    })
}

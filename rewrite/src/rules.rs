//! The rule sets.
//!
//! Most rules are plain egg patterns, some with a [`Condition`] on the
//! analysis. The Σ rules that need substitution under the binder (index
//! shift, telescoping, splitting at a ternary, polynomial bodies) are
//! [`NatApplier`]s: they read the normal forms of the matched classes as
//! `ir` terms, compute the right-hand side with capture-avoiding
//! substitution ([`Nat::subst`]) and add it to the matched class. Every such
//! result is exact for all integer values, or guarded by a ternary / `max(0,·)`
//! where it holds only for non-empty ranges and the analysis cannot show that.

use crate::analysis::{NatAnalysis, NatEGraph, cond_of, nat_of, var_of};
use crate::nat_lang::{NatLang, nat_to_rec};
use crate::refine::{Ctx, Interval, free_vars};
use egg::{Applier, Id, PatternAst, Rewrite, Subst, Symbol, Var, rewrite};
use heddle_ir::nat::poly::Poly;
use heddle_ir::nat::{CmpOp, NatCond, NatOp};
use heddle_ir::{Name, Nat};
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};
use std::sync::Arc;

/// A rewrite of naturals.
pub type NatRewrite = Rewrite<NatLang, NatAnalysis>;

type NatFn = dyn Fn(&NatEGraph, Id, &Subst) -> Option<Nat> + Send + Sync;

/// An applier computing the right-hand side as an `ir` term; `None` means
/// "does not apply".
#[derive(Clone)]
pub struct NatApplier {
    f: Arc<NatFn>,
}

impl NatApplier {
    /// Wraps a function of (e-graph, matched class, substitution).
    pub fn new(f: impl Fn(&NatEGraph, Id, &Subst) -> Option<Nat> + Send + Sync + 'static) -> NatApplier {
        NatApplier { f: Arc::new(f) }
    }
}

impl Applier<NatLang, NatAnalysis> for NatApplier {
    fn apply_one(
        &self,
        egraph: &mut NatEGraph,
        eclass: Id,
        subst: &Subst,
        _ast: Option<&PatternAst<NatLang>>,
        _rule: Symbol,
    ) -> Vec<Id> {
        let Some(n) = (self.f)(egraph, eclass, subst) else { return vec![] };
        if crate::nat_lang::nat_size(&n) > crate::analysis::MAX_NORM_SIZE {
            return vec![];
        }
        let rec = nat_to_rec(&n, &mut egraph.analysis.table);
        let id = egraph.add_expr(&rec);
        if egraph.union(eclass, id) { vec![eclass] } else { vec![] }
    }
}

fn v(s: &str) -> Var {
    s.parse().expect("pattern variable names in this file are valid")
}

/// The matched class of a pattern variable.
fn class(subst: &Subst, name: &str) -> Id {
    subst[v(name)]
}

/// The binder name and the normal forms of `lo`, `hi`, `body` of a match of
/// `(sum ?k ?lo ?hi ?b)`.
fn sum_parts(eg: &NatEGraph, s: &Subst) -> Option<(Name, Nat, Nat, Nat)> {
    let k = var_of(eg, class(s, "?k"))?;
    Some((
        k,
        nat_of(eg, class(s, "?lo"))?.clone(),
        nat_of(eg, class(s, "?hi"))?.clone(),
        nat_of(eg, class(s, "?b"))?.clone(),
    ))
}

/// Is `hi ≥ lo - 1` (the range has ≥ 0 terms) provable?
fn count_nonneg(ctx: &Ctx, lo: &Nat, hi: &Nat) -> bool {
    ctx.bounds(&count(lo, hi).normalize()).nonneg()
}

/// `hi - lo + 1`.
fn count(lo: &Nat, hi: &Nat) -> Nat {
    Nat::add(Nat::sub(hi.clone(), lo.clone()), Nat::Lit(1))
}

/// `e` where the range may be empty: exact when `hi ≥ lo - 1` is provable,
/// otherwise guarded `hi - lo + 1 >= 0 ? e : 0`. (A range with `hi < lo - 1`
/// sums to 0, but closed forms such as Gauss' do not vanish there.)
fn guarded(ctx: &Ctx, lo: &Nat, hi: &Nat, e: Nat) -> Nat {
    if count_nonneg(ctx, lo, hi) {
        e
    } else {
        Nat::Cond(Box::new(NatCond::Cmp(CmpOp::Ge, count(lo, hi), Nat::Lit(0))), Box::new(e), Box::new(Nat::Lit(0)))
    }
}

/// The range of a Σ index: from the least `lo` to the greatest `hi`.
fn index_range(ctx: &Ctx, lo: &Nat, hi: &Nat) -> Interval {
    Interval { lo: ctx.bounds(lo).lo, hi: ctx.bounds(hi).hi }
}

fn sum_of(k: &Name, lo: Nat, hi: Nat, body: Nat) -> Nat {
    Nat::Sum { var: k.clone(), lo: Box::new(lo), hi: Box::new(hi), body: Box::new(body) }
}

/// Does `?c` not depend on the binder `?k`?
fn binder_free(eg: &NatEGraph, s: &Subst, c: &str) -> bool {
    match var_of(eg, class(s, "?k")) {
        Some(k) => {
            let k = Symbol::from(k.as_str());
            !eg[class(s, c)].data.free.contains(&k)
                || nat_of(eg, class(s, c)).is_some_and(|n| !n.mentions(&Name::from(k.as_str())))
        }
        None => false,
    }
}

/// Is the class's constant equal to `value`?
fn const_is(eg: &NatEGraph, id: Id, value: i64) -> bool {
    eg[id].data.constant.as_ref().is_some_and(|c| *c == num_rational::BigRational::from_integer(value.into()))
}

/// Is the class a non-zero integer constant?
fn nonzero_const(eg: &NatEGraph, id: Id) -> bool {
    eg[id].data.constant.as_ref().is_some_and(|c| c.is_integer() && !c.is_zero())
}

/// Ring identities that only shrink terms (safe to run to saturation), and
/// the `normal-form` rule that adds each class's canonical polynomial.
pub fn ring() -> Vec<NatRewrite> {
    vec![
        rewrite!("add-0"; "(+ ?a 0)" => "?a"),
        rewrite!("0-add"; "(+ 0 ?a)" => "?a"),
        rewrite!("sub-0"; "(- ?a 0)" => "?a"),
        rewrite!("mul-1"; "(* ?a 1)" => "?a"),
        rewrite!("1-mul"; "(* 1 ?a)" => "?a"),
        rewrite!("mul-0"; "(* ?a 0)" => "0"),
        rewrite!("0-mul"; "(* 0 ?a)" => "0"),
        rewrite!("sub-self"; "(- ?a ?a)" => "0"),
        rewrite!("add-sub-r"; "(- (+ ?a ?b) ?b)" => "?a"),
        rewrite!("add-sub-l"; "(- (+ ?a ?b) ?a)" => "?b"),
        rewrite!("sub-add"; "(+ (- ?a ?b) ?b)" => "?a"),
        rewrite!("normal-form"; "?x" => { NatApplier::new(|eg, id, _| {
            // Adds the canonical polynomial of the class (only natural-sorted
            // classes; a class already holding it gains nothing).
            nat_of(eg, id).cloned()
        }) }),
    ]
}

/// Commutativity, associativity and distributivity: complete for rings but
/// exponential; only for experiments and the blow-up test, always bounded by
/// [`crate::Limits`] and the backoff scheduler.
pub fn ring_ac() -> Vec<NatRewrite> {
    vec![
        rewrite!("comm-add"; "(+ ?a ?b)" => "(+ ?b ?a)"),
        rewrite!("comm-mul"; "(* ?a ?b)" => "(* ?b ?a)"),
        rewrite!("assoc-add"; "(+ ?a (+ ?b ?c))" => "(+ (+ ?a ?b) ?c)"),
        rewrite!("assoc-add-r"; "(+ (+ ?a ?b) ?c)" => "(+ ?a (+ ?b ?c))"),
        rewrite!("assoc-mul"; "(* ?a (* ?b ?c))" => "(* (* ?a ?b) ?c)"),
        rewrite!("distrib"; "(* ?a (+ ?b ?c))" => "(+ (* ?a ?b) (* ?a ?c))"),
        rewrite!("factor"; "(+ (* ?a ?b) (* ?a ?c))" => "(* ?a (+ ?b ?c))"),
    ]
}

/// Ternaries, min/max, floor division and remainder.
pub fn arith() -> Vec<NatRewrite> {
    vec![
        rewrite!("if-true"; "(if ?c ?a ?b)" => "?a" if |eg: &mut NatEGraph, _: Id, s: &Subst| const_is(eg, class(s, "?c"), 1)),
        rewrite!("if-false"; "(if ?c ?a ?b)" => "?b" if |eg: &mut NatEGraph, _: Id, s: &Subst| const_is(eg, class(s, "?c"), 0)),
        rewrite!("if-same"; "(if ?c ?a ?a)" => "?a"),
        // `x == c ? a : b` is `b` when `b` at `x = c` is `a` (the refined CSR
        // index `i == 0 ? 0 : toNat(offset@i)` with `offset@0 = 0`).
        rewrite!("if-eq-subst"; "(if ?c ?a ?b)" => { NatApplier::new(|eg, _, s| {
            let ctx = Ctx::new(&eg.analysis.facts);
            let (c, a, b) = (cond_of(eg, class(s, "?c"))?, nat_of(eg, class(s, "?a"))?, nat_of(eg, class(s, "?b"))?);
            let (x, e, then_eq, other) = match c {
                NatCond::Cmp(CmpOp::Eq, Nat::Var(x), e) | NatCond::Cmp(CmpOp::Eq, e, Nat::Var(x)) => (x, e, a, b),
                NatCond::Cmp(CmpOp::Ne, Nat::Var(x), e) | NatCond::Cmp(CmpOp::Ne, e, Nat::Var(x)) => (x, e, b, a),
                _ => return None,
            };
            (ctx.refine(&other.subst(x, e)) == *then_eq).then(|| other.clone())
        }) }),
        rewrite!("min-same"; "(min ?a ?a)" => "?a"),
        rewrite!("max-same"; "(max ?a ?a)" => "?a"),
        rewrite!("minmax-decide"; "?x" => { NatApplier::new(|eg, id, _| {
            // Decided by intervals on the difference of the operands.
            eg[id].nodes.iter().find_map(|node| {
                let (op, a, b) = match node {
                    NatLang::Min([a, b]) => (NatOp::Min, *a, *b),
                    NatLang::Max([a, b]) => (NatOp::Max, *a, *b),
                    _ => return None,
                };
                let ctx = Ctx::new(&eg.analysis.facts);
                let (na, nb) = (nat_of(eg, a)?, nat_of(eg, b)?);
                let d = ctx.diff_bounds(na, nb);
                let a_le = d.hi.is_some_and(|x| x <= 0);
                let a_ge = d.lo.is_some_and(|x| x >= 0);
                match (op, a_le, a_ge) {
                    (NatOp::Min, true, _) | (NatOp::Max, _, true) => Some(na.clone()),
                    (NatOp::Min, _, true) | (NatOp::Max, true, _) => Some(nb.clone()),
                    _ => None,
                }
            })
        }) }),
        rewrite!("div-1"; "(/ ?a 1)" => "?a"),
        rewrite!("mod-1"; "(% ?a 1)" => "0"),
        rewrite!("div-mul-r"; "(/ (* ?a ?c) ?c)" => "?a" if |eg: &mut NatEGraph, _: Id, s: &Subst| nonzero_const(eg, class(s, "?c"))),
        rewrite!("div-mul-l"; "(/ (* ?c ?a) ?c)" => "?a" if |eg: &mut NatEGraph, _: Id, s: &Subst| nonzero_const(eg, class(s, "?c"))),
        rewrite!("mod-mul-r"; "(% (* ?a ?c) ?c)" => "0" if |eg: &mut NatEGraph, _: Id, s: &Subst| nonzero_const(eg, class(s, "?c"))),
        rewrite!("mod-mul-l"; "(% (* ?c ?a) ?c)" => "0" if |eg: &mut NatEGraph, _: Id, s: &Subst| nonzero_const(eg, class(s, "?c"))),
    ]
}

/// `toNat` of sums and differences.
pub fn tonat() -> Vec<NatRewrite> {
    vec![
        rewrite!("tonat-add"; "(tadd ?a ?b)" => "(+ ?a ?b)"),
        // Only where the type says the array is non-decreasing, and the
        // minuend's position is not below the subtrahend's.
        rewrite!("tonat-sub-monotone"; "(tsub (lookup ?A ?x) (lookup ?A ?y))" => "(- (lookup ?A ?x) (lookup ?A ?y))"
        if |eg: &mut NatEGraph, _: Id, s: &Subst| {
            let Some(a) = var_of(eg, class(s, "?A")) else { return false };
            let (Some(x), Some(y)) = (nat_of(eg, class(s, "?x")), nat_of(eg, class(s, "?y"))) else { return false };
            eg.analysis.facts.is_non_decreasing(a.as_str()) && Ctx::new(&eg.analysis.facts).diff_bounds(x, y).nonneg()
        }),
    ]
}

/// Σ rules; every one holds for any lower bound.
pub fn sums() -> Vec<NatRewrite> {
    vec![
        rewrite!("sum-empty"; "(sum ?k ?lo ?hi ?b)" => { NatApplier::new(|eg, _, s| {
            let (_, lo, hi, _) = sum_parts(eg, s)?;
            let ctx = Ctx::new(&eg.analysis.facts);
            ctx.diff_bounds(&hi, &lo).hi.is_some_and(|d| d < 0).then_some(Nat::Lit(0))
        }) }),
        rewrite!("sum-const"; "(sum ?k ?lo ?hi ?b)" => { NatApplier::new(|eg, _, s| {
            if !binder_free(eg, s, "?b") { return None; }
            let (_, lo, hi, b) = sum_parts(eg, s)?;
            let ctx = Ctx::new(&eg.analysis.facts);
            let n = if count_nonneg(&ctx, &lo, &hi) { count(&lo, &hi) } else { Nat::bin(NatOp::Max, Nat::Lit(0), count(&lo, &hi)) };
            Some(Nat::mul(n, b))
        }) }),
        rewrite!("sum-add"; "(sum ?k ?lo ?hi (+ ?a ?b))" => "(+ (sum ?k ?lo ?hi ?a) (sum ?k ?lo ?hi ?b))"),
        rewrite!("sum-sub"; "(sum ?k ?lo ?hi (- ?a ?b))" => "(- (sum ?k ?lo ?hi ?a) (sum ?k ?lo ?hi ?b))"),
        rewrite!("sum-factor-l"; "(sum ?k ?lo ?hi (* ?c ?b))" => "(* ?c (sum ?k ?lo ?hi ?b))"
            if |eg: &mut NatEGraph, _: Id, s: &Subst| binder_free(eg, s, "?c")),
        rewrite!("sum-factor-r"; "(sum ?k ?lo ?hi (* ?b ?c))" => "(* (sum ?k ?lo ?hi ?b) ?c)"
            if |eg: &mut NatEGraph, _: Id, s: &Subst| binder_free(eg, s, "?c")),
        rewrite!("sum-gauss"; "(sum ?k ?lo ?hi ?k)" => { NatApplier::new(|eg, _, s| {
            let (lo, hi) = (nat_of(eg, class(s, "?lo"))?.clone(), nat_of(eg, class(s, "?hi"))?.clone());
            let ctx = Ctx::new(&eg.analysis.facts);
            Some(guarded(&ctx, &lo, &hi, power_sum(1, &lo, &hi)))
        }) }),
        rewrite!("sum-poly"; "(sum ?k ?lo ?hi ?b)" => { NatApplier::new(|eg, _, s| {
            let (k, lo, hi, b) = sum_parts(eg, s)?;
            let ctx = Ctx::new(&eg.analysis.facts);
            sum_polynomial(&k, &lo, &hi, &b).map(|e| guarded(&ctx, &lo, &hi, e))
        }) }),
        rewrite!("sum-shift"; "(sum ?k ?lo ?hi ?b)" => { NatApplier::new(|eg, _, s| {
            // sum(k = lo .. hi, b) = sum(k = 0 .. hi - lo, b[k := k + lo])
            let (k, lo, hi, b) = sum_parts(eg, s)?;
            if lo == Nat::Lit(0) { return None; }
            let body = b.subst(&k, &Nat::add(Nat::Var(k.clone()), lo.clone()));
            Some(sum_of(&k, Nat::Lit(0), Nat::sub(hi, lo), body))
        }) }),
        rewrite!("sum-telescope"; "(sum ?k ?lo ?hi ?b)" => { NatApplier::new(|eg, _, s| {
            let (k, lo, hi, b) = sum_parts(eg, s)?;
            let ctx = Ctx::new(&eg.analysis.facts);
            telescope(&ctx, &k, &lo, &hi, &b).map(|e| guarded(&ctx, &lo, &hi, e))
        }) }),
        rewrite!("sum-split-eq"; "(sum ?k ?lo ?hi ?b)" => { NatApplier::new(|eg, _, s| {
            let (k, lo, hi, b) = sum_parts(eg, s)?;
            split_at_eq(&k, &lo, &hi, &b)
        }) }),
    ]
}

/// Every rule of the default set: [`ring`], [`arith`], [`tonat`], [`sums`].
pub fn default_rules() -> Vec<NatRewrite> {
    let mut r = ring();
    r.extend(arith());
    r.extend(tonat());
    r.extend(sums());
    r
}

/// `Σ_{k=lo}^{hi} k^p` for `hi ≥ lo - 1`, as `S_p(hi) - S_p(lo - 1)` with
/// Faulhaber's polynomials (which satisfy `S_p(n) - S_p(n-1) = n^p` for every
/// integer `n`, so any lower bound works).
fn power_sum(p: u32, lo: &Nat, hi: &Nat) -> Nat {
    let s = |n: Nat| -> Nat {
        let n1 = Nat::add(n.clone(), Nat::Lit(1));
        match p {
            0 => n,
            1 => Nat::div(Nat::mul(n, n1), Nat::Lit(2)),
            2 => Nat::div(
                Nat::mul(Nat::mul(n.clone(), n1), Nat::add(Nat::mul(Nat::Lit(2), n), Nat::Lit(1))),
                Nat::Lit(6),
            ),
            _ => {
                let t = Nat::div(Nat::mul(n, n1), Nat::Lit(2));
                Nat::mul(t.clone(), t)
            }
        }
    };
    Nat::sub(s(hi.clone()), s(Nat::sub(lo.clone(), Nat::Lit(1))))
}

/// A body that is a polynomial in `k` of degree ≤ 3 with `k`-free
/// coefficients: the sum of its terms' power sums.
fn sum_polynomial(k: &Name, lo: &Nat, hi: &Nat, body: &Nat) -> Option<Nat> {
    let poly = Poly::from_nat(body);
    let kv = Nat::Var(k.clone());
    // One common denominator: the individual terms of an integer-valued
    // polynomial need not be integers (`k²/2 + k/2`), the whole sum is.
    let denom = poly.terms().fold(num_bigint::BigInt::from(1), |acc, (_, c)| acc.lcm(c.denom()));
    let mut total: Option<Nat> = None;
    for (mono, coef) in poly.terms() {
        let mut power = 0u32;
        let mut rest: Vec<Nat> = Vec::new();
        for (atom, p) in mono {
            if *atom == kv {
                power = *p;
            } else if atom.mentions(k) {
                return None;
            } else {
                for _ in 0..*p {
                    rest.push(atom.clone());
                }
            }
        }
        if power > 3 {
            return None;
        }
        let scaled = (coef * num_rational::BigRational::from_integer(denom.clone())).to_integer();
        let mut factor = Nat::Lit(scaled.abs().to_i64()?);
        for a in rest {
            factor = Nat::mul(factor, a);
        }
        let term = Nat::mul(factor, power_sum(power, lo, hi));
        total = Some(match (total, scaled.is_negative()) {
            (None, false) => term,
            (None, true) => Nat::sub(Nat::Lit(0), term),
            (Some(t), false) => Nat::add(t, term),
            (Some(t), true) => Nat::sub(t, term),
        });
    }
    let total = total.unwrap_or(Nat::Lit(0));
    let denom = denom.to_i64()?;
    Some(if denom == 1 { total } else { Nat::div(total, Nat::Lit(denom)) })
}

/// `Σ_{k=lo}^{hi} f(k+1) - f(k) = f(hi+1) - f(lo)` (and the mirrored
/// `f(k) - f(k+1)`), for `hi ≥ lo - 1`. The body's positive terms are taken
/// as `f(k+1)` and its negative terms as `-f(k)`; the match is checked by
/// comparing normal forms with `k` ranging over `lo..hi`, so that
/// `k + 1 == 0 ? 0 : toNat(A@(k+1))` is recognised as `toNat(A@(k+1))` when
/// `lo ≥ 0` (the refined CSR size).
fn telescope(ctx: &Ctx, k: &Name, lo: &Nat, hi: &Nat, body: &Nat) -> Option<Nat> {
    let poly = Poly::from_nat(body);
    let (mut pos, mut neg) = (Poly::zero(), Poly::zero());
    for (m, c) in poly.terms() {
        let mut t = Poly::constant(c.clone());
        for (a, p) in m {
            for _ in 0..*p {
                t = t.mul(&Poly::atom(a.clone()));
            }
        }
        if m.iter().all(|(a, _)| !a.mentions(k)) {
            return None; // a k-free part: linearity handles it first
        }
        if c.is_negative() { neg = neg.add(&t) } else { pos = pos.add(&t) }
    }
    if pos.is_zero() || neg.is_zero() {
        return None;
    }
    let f_plus = pos.to_nat();
    let f = Poly::zero().sub(&neg).to_nat();
    let inner = ctx.with_range(k, index_range(ctx, lo, hi));
    let kv = Nat::Var(k.clone());
    let shift = |n: &Nat| n.subst(k, &Nat::add(kv.clone(), Nat::Lit(1)));
    let at = |n: &Nat, e: Nat| n.subst(k, &e);
    let one = Nat::Lit(1);
    if inner.refine(&shift(&f)) == inner.refine(&f_plus) {
        // body = f(k+1) - f(k)
        return Some(Nat::sub(at(&f, Nat::add(hi.clone(), one)), at(&f, lo.clone())));
    }
    if inner.refine(&shift(&f_plus)) == inner.refine(&f) {
        // body = g(k) - g(k+1) with g = f_plus
        return Some(Nat::sub(at(&f_plus, lo.clone()), at(&f_plus, Nat::add(hi.clone(), one))));
    }
    None
}

/// Splits `Σ_{k=lo}^{hi} body` at `k == e` where the body has a ternary on
/// `k == e` (`e` free of `k`): the parts below and above `e` take the else
/// branch, the point `e` (when in range) the then branch. Always exact.
fn split_at_eq(k: &Name, lo: &Nat, hi: &Nat, body: &Nat) -> Option<Nat> {
    let mut found: Option<(Nat, NatCond)> = None;
    find_cond(body, k, &mut found);
    let (e, cond) = found?;
    let replace = |value: bool| -> Nat {
        body.map_bottom_up(&mut |m| match m {
            Nat::Cond(c, a, b) if *c == cond => {
                if value {
                    *a
                } else {
                    *b
                }
            }
            other => other,
        })
    };
    let (then_body, else_body) = match &cond {
        NatCond::Cmp(CmpOp::Eq, ..) => (replace(true), replace(false)),
        _ => (replace(false), replace(true)), // `!=`: branches swap roles
    };
    let one = Nat::Lit(1);
    let below =
        sum_of(k, lo.clone(), Nat::bin(NatOp::Min, hi.clone(), Nat::sub(e.clone(), one.clone())), else_body.clone());
    let above = sum_of(k, Nat::bin(NatOp::Max, lo.clone(), Nat::add(e.clone(), one)), hi.clone(), else_body);
    let in_range = NatCond::And(
        Box::new(NatCond::Cmp(CmpOp::Le, lo.clone(), e.clone())),
        Box::new(NatCond::Cmp(CmpOp::Le, e.clone(), hi.clone())),
    );
    let point = Nat::Cond(Box::new(in_range), Box::new(then_body.subst(k, &e)), Box::new(Nat::Lit(0)));
    Some(Nat::add(Nat::add(below, point), above))
}

fn find_cond(n: &Nat, k: &Name, found: &mut Option<(Nat, NatCond)>) {
    if found.is_some() {
        return;
    }
    if let Nat::Cond(c, _, _) = n
        && let NatCond::Cmp(CmpOp::Eq | CmpOp::Ne, a, b) = &**c
    {
        let kv = Nat::Var(k.clone());
        let other = if *a == kv {
            Some(b)
        } else if *b == kv {
            Some(a)
        } else {
            None
        };
        if let Some(e) = other.filter(|e| !free_vars(e).contains(k)) {
            *found = Some((e.clone(), (**c).clone()));
            return;
        }
    }
    if let Nat::Sum { var, .. } = n
        && var == k
    {
        return;
    }
    n.for_each_child(&mut |c| find_cond(c, k, found));
}

//! The canonical polynomial form of naturals.
//!
//! A natural is read as a polynomial with exact rational coefficients over
//! *atoms*: variables and every node that is not `+ - *` (a `toNat`, a Σ, a
//! floor division that is not exact, …), whose own children are normalised
//! first. Two naturals whose polynomials are equal are equal for all values.
//! Rational coefficients arise from exact divisions such as `n*(n+1)/2`; a
//! division is taken as exact only when the numerator is integer-valued after
//! dividing, which is decided on a finite grid (a polynomial of degree ≤ d in
//! each variable is integer-valued everywhere iff it is on {0..d}ⁿ).

use super::{Nat, NatCond, NatOp};
use crate::name::Name;
use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use std::collections::BTreeMap;

/// A product of atoms with positive powers, sorted; empty is the constant 1.
pub type Monomial = Vec<(Nat, u32)>;

/// A polynomial over atoms with rational coefficients; zero terms are never stored.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Poly {
    terms: BTreeMap<Monomial, BigRational>,
}

/// Grid points tried when deciding whether a division is exact.
const MAX_GRID_POINTS: usize = 4096;
/// Σs with constant bounds and at most this many terms are expanded.
const MAX_UNROLL: i64 = 16;
/// Terms all the Σs of one normalisation may expand to, together (nested
/// Σs of 16 terms each would otherwise multiply: six levels, 16^6 terms).
const MAX_UNROLL_TOTAL: i64 = 4096;
/// A product whose expansion would have more terms than this, or more
/// nodes than [`MAX_WEIGHT`] (atoms repeated in every term), is kept as an
/// atom (the product of its two normalised factors) instead: expanding a
/// product of 20 binomials took minutes and gigabytes. Equality of such
/// products is then decided structurally (sound, not complete).
pub const MAX_TERMS: usize = 256;
/// See [`MAX_TERMS`]: the most nodes the expansion of a product may have.
pub const MAX_WEIGHT: usize = 4096;

thread_local! {
    /// (nesting of `from_nat`, Σ terms still allowed to expand).
    static UNROLL: std::cell::Cell<(u32, i64)> = const { std::cell::Cell::new((0, 0)) };
}

fn rat(v: i64) -> BigRational {
    BigRational::from_integer(BigInt::from(v))
}

impl Poly {
    /// The zero polynomial.
    pub fn zero() -> Poly {
        Poly::default()
    }
    /// A constant.
    pub fn constant(c: BigRational) -> Poly {
        let mut p = Poly::zero();
        if !c.is_zero() {
            p.terms.insert(Vec::new(), c);
        }
        p
    }
    /// A single atom with coefficient 1.
    pub fn atom(n: Nat) -> Poly {
        let mut p = Poly::zero();
        p.terms.insert(vec![(n, 1)], BigRational::one());
        p
    }
    /// Nodes of its terms: one per term and per atom node (an atom that is
    /// a whole expression counts all of it).
    fn weight(&self) -> usize {
        self.terms.keys().map(|m| 1 + m.iter().map(|(a, _)| nat_nodes(a)).sum::<usize>()).sum()
    }
    /// Is it zero?
    pub fn is_zero(&self) -> bool {
        self.terms.is_empty()
    }
    /// The constant value, if the polynomial is constant.
    pub fn as_constant(&self) -> Option<BigRational> {
        match self.terms.len() {
            0 => Some(BigRational::zero()),
            1 => self.terms.get(&Vec::new()).cloned(),
            _ => None,
        }
    }
    /// The constant value, if it is an integer constant that fits in 64 bits.
    pub fn as_integer(&self) -> Option<i64> {
        let c = self.as_constant()?;
        if c.is_integer() { c.to_integer().to_i64() } else { None }
    }
    /// The terms: monomial and coefficient.
    pub fn terms(&self) -> impl Iterator<Item = (&Monomial, &BigRational)> {
        self.terms.iter()
    }

    fn add_term(&mut self, m: Monomial, c: BigRational) {
        let entry = self.terms.entry(m).or_insert_with(BigRational::zero);
        *entry += c;
        if entry.is_zero() {
            self.terms.retain(|_, v| !v.is_zero());
        }
    }
    /// `self + other`.
    pub fn add(&self, other: &Poly) -> Poly {
        let mut out = self.clone();
        for (m, c) in &other.terms {
            out.add_term(m.clone(), c.clone());
        }
        out
    }
    /// `self * c`.
    pub fn scale(&self, c: &BigRational) -> Poly {
        if c.is_zero() {
            return Poly::zero();
        }
        Poly { terms: self.terms.iter().map(|(m, v)| (m.clone(), v * c)).collect() }
    }
    /// `self - other`.
    pub fn sub(&self, other: &Poly) -> Poly {
        self.add(&other.scale(&rat(-1)))
    }
    /// `self * other`; an atom standing for the product when the expansion
    /// would exceed [`MAX_TERMS`] terms.
    pub fn mul(&self, other: &Poly) -> Poly {
        let weight = self
            .weight()
            .saturating_mul(other.terms.len())
            .saturating_add(other.weight().saturating_mul(self.terms.len()));
        if self.terms.len().saturating_mul(other.terms.len()) > MAX_TERMS || weight > MAX_WEIGHT {
            let (a, b) = (self.to_nat(), other.to_nat());
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            return Poly::atom(Nat::mul(a, b));
        }
        let mut out = Poly::zero();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &other.terms {
                out.add_term(mul_monomials(m1, m2), c1 * c2);
            }
        }
        out
    }

    /// Reads a natural.
    pub fn from_nat(n: &Nat) -> Poly {
        let (depth, budget) = UNROLL.get();
        UNROLL.set((depth + 1, if depth == 0 { MAX_UNROLL_TOTAL } else { budget }));
        let p = Poly::read(n);
        let (_, left) = UNROLL.get();
        UNROLL.set((depth, left));
        p
    }

    fn read(n: &Nat) -> Poly {
        match n {
            Nat::Lit(v) => Poly::constant(rat(*v)),
            Nat::Var(_) | Nat::Meta(_) | Nat::ToNat(_) => Poly::atom(n.clone()),
            Nat::Bin(op, a, b) => {
                let (pa, pb) = (Poly::from_nat(a), Poly::from_nat(b));
                match op {
                    NatOp::Add => pa.add(&pb),
                    NatOp::Sub => pa.sub(&pb),
                    NatOp::Mul => pa.mul(&pb),
                    NatOp::Div => divide(pa, pb),
                    NatOp::Mod => modulo(pa, pb),
                    NatOp::Min | NatOp::Max => min_max(*op, pa, pb),
                }
            }
            Nat::Cond(c, a, b) => {
                let c = normalize_cond(c);
                let (pa, pb) = (Poly::from_nat(a), Poly::from_nat(b));
                match decide(&c) {
                    Some(true) => pa,
                    Some(false) => pb,
                    None if pa == pb => pa,
                    None => Poly::atom(Nat::Cond(Box::new(c), Box::new(pa.to_nat()), Box::new(pb.to_nat()))),
                }
            }
            Nat::Sum { var, lo, hi, body } => sum(var, Poly::from_nat(lo), Poly::from_nat(hi), body),
        }
    }

    /// The canonical natural: positive terms first, each term's coefficient in
    /// front, the constant last; rational coefficients become one exact division.
    pub fn to_nat(&self) -> Nat {
        let denom = self.terms.values().fold(BigInt::one(), |acc, c| acc.lcm(c.denom()));
        let scaled = self.scale(&BigRational::from_integer(denom.clone()));
        let body = scaled.integer_to_nat();
        if denom.is_one() { body } else { Nat::div(body, big_to_nat(&denom)) }
    }

    fn integer_to_nat(&self) -> Nat {
        let mut ordered: Vec<(&Monomial, &BigRational)> = self.terms.iter().filter(|(m, _)| !m.is_empty()).collect();
        if let Some(c) = self.terms.get(&Vec::new()) {
            ordered.push((&EMPTY, c));
        }
        // Positive terms first so the result reads `a + b - c`.
        ordered.sort_by_key(|(_, c)| c.is_negative());
        let mut acc: Option<Nat> = None;
        for (m, c) in ordered {
            let magnitude = term_nat(m, &c.abs().to_integer());
            acc = Some(match (acc, c.is_negative()) {
                (None, false) => magnitude,
                (None, true) => Nat::sub(Nat::Lit(0), magnitude),
                (Some(a), false) => Nat::add(a, magnitude),
                (Some(a), true) => Nat::sub(a, magnitude),
            });
        }
        acc.unwrap_or(Nat::Lit(0))
    }

    /// Evaluates with rational values for atoms; `None` if an atom has none.
    fn eval_atoms(&self, value: &dyn Fn(&Nat) -> Option<BigRational>) -> Option<BigRational> {
        let mut total = BigRational::zero();
        for (m, c) in &self.terms {
            let mut t = c.clone();
            for (a, p) in m {
                let v = value(a)?;
                for _ in 0..*p {
                    t *= &v;
                }
            }
            total += t;
        }
        Some(total)
    }

    /// Is this polynomial integer-valued for all integer values of its atoms?
    /// Exact for polynomials (checked on the grid {0..deg}ⁿ); `false` when the
    /// grid would be too large.
    pub fn is_integer_valued(&self) -> bool {
        if self.terms.values().all(|c| c.is_integer()) {
            return true;
        }
        let mut degree: BTreeMap<&Nat, u32> = BTreeMap::new();
        for m in self.terms.keys() {
            for (a, p) in m {
                let d = degree.entry(a).or_insert(0);
                *d = (*d).max(*p);
            }
        }
        let atoms: Vec<(&Nat, u32)> = degree.into_iter().collect();
        let points: usize = atoms.iter().map(|(_, d)| *d as usize + 1).product();
        if points > MAX_GRID_POINTS {
            return false;
        }
        let mut counter = vec![0u32; atoms.len()];
        loop {
            let value = |n: &Nat| atoms.iter().position(|(a, _)| *a == n).map(|i| rat(counter[i] as i64));
            match self.eval_atoms(&value) {
                Some(v) if v.is_integer() => {}
                _ => return false,
            }
            // advance the mixed-radix counter
            let mut i = 0;
            loop {
                if i == atoms.len() {
                    return true;
                }
                counter[i] += 1;
                if counter[i] <= atoms[i].1 {
                    break;
                }
                counter[i] = 0;
                i += 1;
            }
        }
    }
}

static EMPTY: Monomial = Vec::new();

fn nat_nodes(n: &Nat) -> usize {
    let mut count = 1;
    n.for_each_child(&mut |c| count += nat_nodes(c));
    count
}

fn big_to_nat(b: &BigInt) -> Nat {
    match b.to_i64() {
        Some(v) => Nat::Lit(v),
        // Beyond 64 bits: keep it exact as a product; evaluation will report overflow.
        None => {
            let (q, r) = b.div_rem(&BigInt::from(1i64 << 32));
            Nat::add(Nat::mul(big_to_nat(&q), Nat::Lit(1 << 32)), big_to_nat(&r))
        }
    }
}

fn term_nat(m: &Monomial, coef: &BigInt) -> Nat {
    let mut factors: Vec<Nat> = Vec::new();
    if !coef.is_one() || m.is_empty() {
        factors.push(big_to_nat(coef));
    }
    for (a, p) in m {
        for _ in 0..*p {
            factors.push(a.clone());
        }
    }
    let mut it = factors.into_iter();
    let first = it.next().unwrap_or(Nat::Lit(1));
    it.fold(first, Nat::mul)
}

fn mul_monomials(a: &Monomial, b: &Monomial) -> Monomial {
    let mut map: BTreeMap<Nat, u32> = BTreeMap::new();
    for (n, p) in a.iter().chain(b.iter()) {
        *map.entry(n.clone()).or_insert(0) += p;
    }
    map.into_iter().collect()
}

fn divide(pa: Poly, pb: Poly) -> Poly {
    if let Some(c) = pb.as_constant() {
        if !c.is_zero() {
            if let Some(a) = pa.as_constant()
                && a.is_integer()
                && c.is_integer()
            {
                return Poly::constant(BigRational::from_integer(a.to_integer().div_floor(&c.to_integer())));
            }
            let q = pa.scale(&c.recip());
            if q.is_integer_valued() && c.is_integer() {
                return q;
            }
        }
    } else if pa == pb {
        // x / x is 1 wherever it is defined.
        return Poly::constant(BigRational::one());
    }
    Poly::atom(Nat::div(pa.to_nat(), pb.to_nat()))
}

fn modulo(pa: Poly, pb: Poly) -> Poly {
    if let Some(c) = pb.as_constant()
        && c.is_integer()
        && !c.is_zero()
    {
        let c = c.to_integer();
        // Terms with an integer coefficient divisible by c contribute nothing.
        let mut rest = Poly::zero();
        for (m, v) in pa.terms() {
            if !(v.is_integer() && (v.to_integer() % &c).is_zero()) {
                rest.add_term(m.clone(), v.clone());
            }
        }
        if let Some(a) = rest.as_constant()
            && a.is_integer()
        {
            return Poly::constant(BigRational::from_integer(a.to_integer().mod_floor(&c)));
        }
        let q = rest.scale(&BigRational::from_integer(c.clone()).recip());
        if q.is_integer_valued() {
            return Poly::zero();
        }
        return Poly::atom(Nat::bin(NatOp::Mod, rest.to_nat(), big_to_nat(&c)));
    }
    if pa == pb {
        return Poly::zero();
    }
    Poly::atom(Nat::bin(NatOp::Mod, pa.to_nat(), pb.to_nat()))
}

fn min_max(op: NatOp, pa: Poly, pb: Poly) -> Poly {
    if let Some(d) = pa.sub(&pb).as_constant() {
        let a_smaller = d.is_negative() || d.is_zero();
        return match (op, a_smaller) {
            (NatOp::Min, true) | (NatOp::Max, false) => pa,
            _ => pb,
        };
    }
    let (a, b) = (pa.to_nat(), pb.to_nat());
    // min and max are commutative: order the operands canonically.
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    Poly::atom(Nat::bin(op, a, b))
}

fn sum(var: &Name, lo: Poly, hi: Poly, body: &Nat) -> Poly {
    if let (Some(l), Some(h)) = (lo.as_integer(), hi.as_integer()) {
        if h < l {
            return Poly::zero();
        }
        let (depth, budget) = UNROLL.get();
        if let Some(d) = h.checked_sub(l).filter(|d| *d < MAX_UNROLL && *d < budget) {
            UNROLL.set((depth, budget - (d + 1)));
            let mut total = Poly::zero();
            for k in l..=h {
                total = total.add(&Poly::from_nat(&body.subst(var, &Nat::Lit(k))));
            }
            return total;
        }
    }
    // A summand free of the index over a range whose size is a polynomial with
    // non-negative coefficients (free variables are naturals, so the size is
    // ≥ 0): `count * body`. Other constant summands stay: the range may be empty.
    if !body.mentions(var) {
        let count = hi.sub(&lo).add(&Poly::constant(rat(1)));
        if count.terms().all(|(_, c)| !c.is_negative()) {
            return count.mul(&Poly::from_nat(body));
        }
    }
    // Rename the index canonically so that alpha-equivalent sums are equal. The
    // name is chosen against the *normalised* body: a name that only occurs in a
    // part that normalises away (`k % 1`) must not influence it, or normalising
    // twice would rename again.
    let normal = Poly::from_nat(body);
    if normal.is_zero() {
        return Poly::zero();
    }
    let normal = normal.to_nat();
    let canonical = super::fresh_name(&Name::from("k"), |n| n != var && normal.mentions(n));
    let renamed = if &canonical == var { normal } else { normal.subst(var, &Nat::Var(canonical.clone())) };
    let body = Poly::from_nat(&renamed);
    Poly::atom(Nat::Sum {
        var: canonical,
        lo: Box::new(lo.to_nat()),
        hi: Box::new(hi.to_nat()),
        body: Box::new(body.to_nat()),
    })
}

/// Normalises the naturals inside a condition.
pub fn normalize_cond(c: &NatCond) -> NatCond {
    c.map_nats(&mut |n| n.normalize())
}

/// Decides a condition whose comparisons have constant differences.
pub fn decide(c: &NatCond) -> Option<bool> {
    match c {
        NatCond::Cmp(op, a, b) => {
            let d = Poly::from_nat(a).sub(&Poly::from_nat(b)).as_constant()?;
            Some(op.holds(d, BigRational::zero()))
        }
        NatCond::And(a, b) => match (decide(a), decide(b)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        NatCond::Or(a, b) => match (decide(a), decide(b)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        NatCond::Not(a) => decide(a).map(|v| !v),
    }
}

//! Unknowns and unification.
//!
//! Type unknowns ([`Type::Meta`]) may carry a literal constraint: an integer
//! literal's type is any numeric type, a float literal's any float type; they
//! default to `int` and `float` when nothing else decides them. Natural
//! unknowns ([`Nat::Meta`]) are solved by matching lengths: a single unknown
//! that occurs linearly (`k * M = n`) is solved by division, exactly when the
//! normal form shows divisibility and otherwise with a run-time obligation.

use heddle_ir::nat::poly::Poly;
use heddle_ir::nat::{CmpOp, NatCond, NatOp};
use heddle_ir::{Name, Nat, ScalarType, Type};
use num_rational::BigRational;
use num_traits::{One, Zero};

/// What a type unknown may become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaKind {
    /// Anything.
    Any,
    /// Any numeric scalar (an integer literal).
    Numeric,
    /// Any float scalar (a float literal).
    Float,
    /// Any integer scalar (a natural used as a value).
    Integer,
    /// Any complex scalar (`complex(re, im)` of parts not yet known).
    Complex,
}

/// Why two types or naturals do not unify.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// The types differ.
    Types(Type, Type),
    /// Two lengths differ.
    Nats(Nat, Nat),
    /// A length equation has no solution in the naturals (`4 * M = 10`).
    NotMultiple {
        /// The chunk size.
        divisor: Nat,
        /// The length to divide.
        length: Nat,
    },
    /// A literal used where its kind of type does not fit.
    Literal(MetaKind, Type),
    /// A position-dependent array where a homogeneous one is needed.
    PositionDependent(Type),
}

/// A division that could not be shown exact: `length % divisor == 0` must hold at run time.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingDivisibility {
    /// The length divided.
    pub length: Nat,
    /// By what.
    pub divisor: Nat,
}

/// The unknowns of one checking run.
#[derive(Default)]
pub struct Metas {
    types: Vec<(MetaKind, Option<Type>)>,
    nats: Vec<Option<Nat>>,
    /// Divisions taken on trust, to become obligations.
    pub pending: Vec<PendingDivisibility>,
    /// `(part, whole)`: `whole` is the complex type with parts of type
    /// `part` (`complex(re, im)`), settled once either is known.
    complex_links: Vec<(Type, Type)>,
    /// Every division taken on trust so far. Its obligation is checked before
    /// the kernel runs, so everywhere in the kernel `length / divisor` is
    /// exact: `divisor * (length / divisor) = length` (`split(2)` then
    /// `join` gives back `n`).
    exact: Vec<PendingDivisibility>,
}

impl Metas {
    /// A fresh type unknown.
    pub fn fresh_type(&mut self, kind: MetaKind) -> Type {
        self.types.push((kind, None));
        Type::Meta(self.types.len() as u32 - 1)
    }
    /// A fresh natural unknown.
    pub fn fresh_nat(&mut self) -> Nat {
        self.nats.push(None);
        Nat::Meta(self.nats.len() as u32 - 1)
    }

    /// The type with every solved unknown replaced (unsolved ones stay).
    pub fn zonk(&self, t: &Type) -> Type {
        match t {
            Type::Meta(id) => match &self.types[*id as usize].1 {
                Some(s) => self.zonk(s),
                None => t.clone(),
            },
            Type::Scalar(_) | Type::Tensor(_) => t.clone(),
            Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| self.zonk(t)).collect()),
            Type::Array { binder, elem, len } => {
                let elem = self.zonk(elem);
                let len = self.zonk_nat(len);
                // A binder the solved element does not mention is dropped: `[i -> T]_N` with T free of i
                // is `[T]_N`. While the element is still unknown the binder stays: it may yet be needed.
                let binder = binder.clone().filter(|b| elem.mentions(b) || has_unsolved(&elem));
                Type::Array { binder, elem: Box::new(elem), len }
            }
            Type::Vector { elem, width } => {
                Type::Vector { elem: Box::new(self.zonk(elem)), width: self.zonk_nat(width) }
            }
            Type::Fun { param, from, to } => {
                Type::Fun { param: param.clone(), from: Box::new(self.zonk(from)), to: Box::new(self.zonk(to)) }
            }
            Type::NatFun { var, body } => Type::NatFun { var: var.clone(), body: Box::new(self.zonk(body)) },
        }
    }

    /// The natural with every solved unknown replaced.
    pub fn zonk_nat(&self, n: &Nat) -> Nat {
        if !n.has_meta() {
            return n.clone();
        }
        n.map_bottom_up(&mut |m| match m {
            Nat::Meta(id) => match &self.nats[id as usize] {
                Some(v) => self.zonk_nat(v),
                None => m,
            },
            other => other,
        })
    }

    /// Records that `whole` is the complex type whose parts have type `part`
    /// (a float unknown or `f32` / `f64`), settled when either becomes known
    /// ([`Metas::settle_complex`]).
    pub fn link_complex(&mut self, part: Type, whole: Type) {
        self.complex_links.push((part, whole));
    }

    /// Solves each linked part from its whole or the whole from its part,
    /// where one of them is known.
    pub fn settle_complex(&mut self) {
        // A link settled may settle another (`re(complex(a, b))`): one pass per link at most.
        for _ in 0..self.complex_links.len() {
            if !self.settle_complex_once() {
                break;
            }
        }
    }

    /// One pass of [`Metas::settle_complex`]: did it solve anything?
    fn settle_complex_once(&mut self) -> bool {
        let mut progress = false;
        for (part, whole) in self.complex_links.clone() {
            match (self.zonk(&part), self.zonk(&whole)) {
                (Type::Scalar(p), w @ Type::Meta(_)) => {
                    if let Some(c) = p.complex_of() {
                        progress |= self.unify(&w, &Type::Scalar(c), &mut || Name::from("_")).is_ok();
                    }
                }
                (p @ Type::Meta(_), Type::Scalar(w)) if w.is_complex() => {
                    progress |= self.unify(&p, &Type::Scalar(w.part()), &mut || Name::from("_")).is_ok();
                }
                _ => {}
            }
        }
        progress
    }

    /// Gives every unsolved literal unknown its default type (`int`, `float`;
    /// a complex one `complex<f32>`, as its float parts default to `float`).
    pub fn default_literals(&mut self) {
        self.settle_complex();
        for slot in &mut self.types {
            if slot.1.is_none() {
                slot.1 = match slot.0 {
                    MetaKind::Numeric | MetaKind::Integer => Some(Type::Scalar(ScalarType::I32)),
                    MetaKind::Float => Some(Type::Scalar(ScalarType::F32)),
                    MetaKind::Complex => Some(Type::Scalar(ScalarType::C32)),
                    MetaKind::Any => None,
                };
            }
        }
    }

    /// The constraint of an unsolved unknown.
    pub fn kind_of(&self, t: &Type) -> Option<MetaKind> {
        match self.zonk(t) {
            Type::Meta(id) => Some(self.types[id as usize].0),
            _ => None,
        }
    }

    /// Makes `expected` and `actual` equal, solving unknowns.
    pub fn unify(&mut self, expected: &Type, actual: &Type, fresh: &mut dyn FnMut() -> Name) -> Result<(), Mismatch> {
        let (e, a) = (self.zonk(expected), self.zonk(actual));
        match (&e, &a) {
            (Type::Meta(x), Type::Meta(y)) if x == y => Ok(()),
            (Type::Meta(x), _) => self.solve_type(*x, &a),
            (_, Type::Meta(y)) => self.solve_type(*y, &e),
            (Type::Scalar(s), Type::Scalar(t)) if s == t => Ok(()),
            (Type::Tuple(xs), Type::Tuple(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.unify(x, y, fresh).map_err(|m| self.widen(m, &e, &a))?;
                }
                Ok(())
            }
            (Type::Array { binder: b1, elem: e1, len: n1 }, Type::Array { binder: b2, elem: e2, len: n2 }) => {
                self.unify_nat(n1, n2)?;
                match (b1, b2) {
                    (Some(x), Some(y)) if x == y => self.unify(e1, e2, fresh),
                    (Some(x), Some(y)) if !e2.mentions(x) => {
                        self.unify(e1, &e2.subst_nat(y, &Nat::Var(x.clone())), fresh)
                    }
                    (Some(x), Some(y)) => {
                        let r = Nat::Var(fresh());
                        self.unify(&e1.subst_nat(x, &r), &e2.subst_nat(y, &r), fresh)
                    }
                    (Some(_), None) => self.unify(e1, e2, fresh),
                    (None, Some(y)) => {
                        if e2.mentions(y) {
                            return Err(Mismatch::PositionDependent(a.clone()));
                        }
                        self.unify(e1, e2, fresh)
                    }
                    (None, None) => self.unify(e1, e2, fresh),
                }
                .map_err(|m| self.widen(m, &e, &a))
            }
            (Type::Vector { elem: e1, width: w1 }, Type::Vector { elem: e2, width: w2 }) => {
                self.unify_nat(w1, w2)?;
                self.unify(e1, e2, fresh)
            }
            (Type::Tensor(x), Type::Tensor(y)) if x == y => Ok(()),
            _ => Err(Mismatch::Types(e, a)),
        }
    }

    /// A mismatch deep inside is reported with the whole types around it.
    fn widen(&self, m: Mismatch, e: &Type, a: &Type) -> Mismatch {
        match m {
            Mismatch::Types(..) => Mismatch::Types(self.zonk(e), self.zonk(a)),
            other => other,
        }
    }

    fn solve_type(&mut self, id: u32, t: &Type) -> Result<(), Mismatch> {
        let kind = self.types[id as usize].0;
        if let Type::Meta(other) = t {
            // Two unknowns: keep the stricter constraint.
            let okind = self.types[*other as usize].0;
            let merged = match (kind, okind) {
                (MetaKind::Any, k) | (k, MetaKind::Any) => k,
                (MetaKind::Float, MetaKind::Integer) | (MetaKind::Integer, MetaKind::Float) => {
                    return Err(Mismatch::Literal(kind, Type::Scalar(ScalarType::F32)));
                }
                (MetaKind::Complex, MetaKind::Integer) | (MetaKind::Integer, MetaKind::Complex) => {
                    return Err(Mismatch::Literal(MetaKind::Integer, Type::Scalar(ScalarType::C32)));
                }
                // A real literal where a complex number is expected is one (`z * 2.0`).
                (MetaKind::Complex, _) | (_, MetaKind::Complex) => MetaKind::Complex,
                (MetaKind::Float, _) | (_, MetaKind::Float) => MetaKind::Float,
                (MetaKind::Integer, _) | (_, MetaKind::Integer) => MetaKind::Integer,
                _ => MetaKind::Numeric,
            };
            self.types[*other as usize].0 = merged;
            self.types[id as usize].1 = Some(t.clone());
            return Ok(());
        }
        let fits = match (kind, t) {
            (MetaKind::Any, _) => true,
            (MetaKind::Numeric, Type::Scalar(s)) => *s != ScalarType::Bool,
            // A float literal is also a complex number (imaginary part 0).
            (MetaKind::Float, Type::Scalar(s)) => s.is_float() || s.is_complex(),
            (MetaKind::Complex, Type::Scalar(s)) => s.is_complex(),
            (MetaKind::Integer, Type::Scalar(s)) => s.is_int(),
            _ => false,
        };
        if !fits {
            return Err(Mismatch::Literal(kind, t.clone()));
        }
        if occurs(id, t) {
            return Err(Mismatch::Types(Type::Meta(id), t.clone()));
        }
        self.types[id as usize].1 = Some(t.clone());
        Ok(())
    }

    /// Makes two naturals equal, solving a linear unknown if there is one.
    pub fn unify_nat(&mut self, expected: &Nat, actual: &Nat) -> Result<(), Mismatch> {
        let (e, a) = (self.zonk_nat(expected), self.zonk_nat(actual));
        if let Nat::Meta(id) = e {
            if !a.has_meta() || a != e {
                self.nats[id as usize] = Some(a);
            }
            return Ok(());
        }
        if let Nat::Meta(id) = a {
            self.nats[id as usize] = Some(e);
            return Ok(());
        }
        let diff = Poly::from_nat(&Nat::sub(e.clone(), a.clone()));
        if diff.is_zero() || self.assume_exact(&diff).is_zero() {
            return Ok(());
        }
        match self.solve_linear(&diff) {
            Some(Ok(())) => Ok(()),
            Some(Err(m)) => Err(m),
            None => Err(Mismatch::Nats(e, a)),
        }
    }

    /// `p` with every atom `L / d` that a division taken on trust made exact
    /// (`L % d == 0` is an obligation) replaced by `L` times `1/d`.
    fn assume_exact(&self, p: &Poly) -> Poly {
        if self.exact.is_empty() {
            return p.clone();
        }
        let facts: Vec<(Poly, BigRational)> = self
            .exact
            .iter()
            .filter_map(|f| {
                let d = Poly::from_nat(&self.zonk_nat(&f.divisor)).as_constant().filter(|d| !d.is_zero())?;
                Some((Poly::from_nat(&self.zonk_nat(&f.length)), d))
            })
            .collect();
        let mut out = Poly::zero();
        for (mono, c) in p.terms() {
            let mut t = Poly::constant(c.clone());
            for (atom, power) in mono {
                let exact = match atom {
                    Nat::Bin(NatOp::Div, l, d) => {
                        let (l, d) = (Poly::from_nat(l), Poly::from_nat(d).as_constant());
                        facts
                            .iter()
                            .find(|(fl, fd)| *fl == l && Some(fd) == d.as_ref())
                            .map(|(fl, fd)| fl.scale(&fd.recip()))
                    }
                    _ => None,
                };
                let factor = exact.unwrap_or_else(|| Poly::atom(atom.clone()));
                for _ in 0..*power {
                    t = t.mul(&factor);
                }
            }
            out = out.add(&t);
        }
        out
    }

    /// Solves `diff = 0` for its one unknown when it occurs as `c * M`.
    fn solve_linear(&mut self, diff: &Poly) -> Option<Result<(), Mismatch>> {
        let mut unknown: Option<u32> = None;
        let mut coef = Poly::zero();
        let mut rest = Poly::zero();
        for (mono, c) in diff.terms() {
            let metas: Vec<&(Nat, u32)> = mono.iter().filter(|(a, _)| a.has_meta()).collect();
            match metas.as_slice() {
                [] => rest = rest.add(&term(mono, c)),
                [(Nat::Meta(id), 1)] if unknown.is_none_or(|u| u == *id) => {
                    unknown = Some(*id);
                    let others: Vec<(Nat, u32)> =
                        mono.iter().filter(|(a, _)| !matches!(a, Nat::Meta(_))).cloned().collect();
                    coef = coef.add(&term(&others, c));
                }
                _ => return None,
            }
        }
        let id = unknown?;
        // c * M + rest = 0  ⇒  M = (-rest) / c
        let length = rest.scale(&num_rational::BigRational::from_integer((-1).into()));
        let quotient = Poly::from_nat(&Nat::div(length.to_nat(), coef.to_nat()));
        let exact = quotient.mul(&coef).sub(&length).is_zero();
        if let (Some(l), Some(c)) = (length.as_constant(), coef.as_constant())
            && (c.is_zero() || !(l.clone() / c.clone()).is_integer() || (l / c) < Zero::zero())
        {
            return Some(Err(Mismatch::NotMultiple { divisor: coef.to_nat(), length: length.to_nat() }));
        }
        if !exact {
            if coef.as_constant().is_some_and(|c| c.is_one()) {
                // M = length exactly; `exact` can only fail through rational coefficients.
                self.nats[id as usize] = Some(length.to_nat());
                return Some(Ok(()));
            }
            let fact = PendingDivisibility { length: length.to_nat(), divisor: coef.to_nat() };
            self.exact.push(fact.clone());
            self.pending.push(fact);
        }
        self.nats[id as usize] = Some(quotient.to_nat());
        Some(Ok(()))
    }
}

fn term(mono: &[(Nat, u32)], c: &num_rational::BigRational) -> Poly {
    let mut p = Poly::constant(c.clone());
    for (a, k) in mono {
        for _ in 0..*k {
            p = p.mul(&Poly::atom(a.clone()));
        }
    }
    p
}

fn has_unsolved(t: &Type) -> bool {
    match t {
        Type::Meta(_) => true,
        Type::Scalar(_) | Type::Tensor(_) => false,
        Type::Tuple(ts) => ts.iter().any(has_unsolved),
        Type::Array { elem, .. } | Type::Vector { elem, .. } => has_unsolved(elem),
        Type::Fun { from, to, .. } => has_unsolved(from) || has_unsolved(to),
        Type::NatFun { body, .. } => has_unsolved(body),
    }
}

fn occurs(id: u32, t: &Type) -> bool {
    match t {
        Type::Meta(x) => *x == id,
        Type::Scalar(_) | Type::Tensor(_) => false,
        Type::Tuple(ts) => ts.iter().any(|t| occurs(id, t)),
        Type::Array { elem, .. } | Type::Vector { elem, .. } => occurs(id, elem),
        Type::Fun { from, to, .. } => occurs(id, from) || occurs(id, to),
        Type::NatFun { body, .. } => occurs(id, body),
    }
}

/// `length % divisor == 0`.
pub fn divisibility(length: &Nat, divisor: &Nat) -> NatCond {
    NatCond::Cmp(CmpOp::Eq, Nat::bin(NatOp::Mod, length.clone(), divisor.clone()), Nat::Lit(0))
}

//! Type-level naturals (LANGUAGE.md §3).
//!
//! A [`Nat`] is a syntax tree: variables, literals, `+ - * / %` (floor
//! division and its remainder), `min`/`max`, `toNat(expr)`, Σ with inclusive
//! bounds, and a ternary on a [`NatCond`]. Arithmetic is over the integers;
//! sizes are required to be ≥ 0 where they are used, which inputs are checked
//! against at run time.
//!
//! [`Nat::normalize`] puts the polynomial part into a canonical form with
//! exact rational coefficients (see [`poly`]), which decides equalities such as
//! `n + 1 = 1 + n`; the egg-based simplifier in `heddle-rewrite` goes further
//! (Σ elimination).

pub mod counted;
pub mod eval;
pub mod poly;

use crate::expr::Expr;
use crate::name::Name;

pub use eval::{NatEnv, NatEvalError};

/// A type-level natural.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Nat {
    /// A variable: an `nFun` parameter, a position binder, a Σ index.
    Var(Name),
    /// An integer literal (may be negative only in computed forms).
    Lit(i64),
    /// A binary operation.
    Bin(NatOp, Box<Nat>, Box<Nat>),
    /// `toNat(expr)`: an int-valued program expression lifted to the type level.
    ToNat(Box<Expr>),
    /// `sum(var = lo .. hi, body)`, inclusive; 0 when `hi < lo`.
    Sum {
        /// The index, bound in `body`.
        var: Name,
        /// First index.
        lo: Box<Nat>,
        /// Last index (inclusive).
        hi: Box<Nat>,
        /// The summand.
        body: Box<Nat>,
    },
    /// `cond ? a : b`.
    Cond(Box<NatCond>, Box<Nat>, Box<Nat>),
    /// An unknown solved by type inference; never produced by the parser.
    Meta(u32),
}

/// Binary operators on naturals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[allow(missing_docs)]
pub enum NatOp {
    Add,
    Sub,
    Mul,
    /// Floor division.
    Div,
    /// The remainder of floor division (same sign as the divisor).
    Mod,
    Min,
    Max,
}

impl NatOp {
    /// The infix spelling; `None` for `min`/`max`, which are written as calls.
    pub fn infix(self) -> Option<&'static str> {
        Some(match self {
            NatOp::Add => "+",
            NatOp::Sub => "-",
            NatOp::Mul => "*",
            NatOp::Div => "/",
            NatOp::Mod => "%",
            NatOp::Min | NatOp::Max => return None,
        })
    }
    /// Binding strength of the infix operators.
    pub fn precedence(self) -> u8 {
        match self {
            NatOp::Add | NatOp::Sub => 1,
            NatOp::Mul | NatOp::Div | NatOp::Mod => 2,
            NatOp::Min | NatOp::Max => 3,
        }
    }
}

/// Comparison operators in natural conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[allow(missing_docs)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// Its spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
    /// Applies the comparison.
    pub fn holds<T: Ord>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

/// A condition on naturals, for `cond ? a : b`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NatCond {
    /// `a op b`.
    Cmp(CmpOp, Nat, Nat),
    /// `a && b`.
    And(Box<NatCond>, Box<NatCond>),
    /// `a || b`.
    Or(Box<NatCond>, Box<NatCond>),
    /// `!a`.
    Not(Box<NatCond>),
}

#[allow(clippy::should_implement_trait)]
impl Nat {
    /// A variable.
    pub fn var(name: impl Into<Name>) -> Nat {
        Nat::Var(name.into())
    }
    /// `a op b`.
    pub fn bin(op: NatOp, a: Nat, b: Nat) -> Nat {
        Nat::Bin(op, Box::new(a), Box::new(b))
    }
    /// `a + b`.
    pub fn add(a: Nat, b: Nat) -> Nat {
        Nat::bin(NatOp::Add, a, b)
    }
    /// `a - b`.
    pub fn sub(a: Nat, b: Nat) -> Nat {
        Nat::bin(NatOp::Sub, a, b)
    }
    /// `a * b`.
    pub fn mul(a: Nat, b: Nat) -> Nat {
        Nat::bin(NatOp::Mul, a, b)
    }
    /// `a / b` (floor).
    pub fn div(a: Nat, b: Nat) -> Nat {
        Nat::bin(NatOp::Div, a, b)
    }
    /// `sum(var = lo .. hi, body)`.
    pub fn sum(var: impl Into<Name>, lo: Nat, hi: Nat, body: Nat) -> Nat {
        Nat::Sum { var: var.into(), lo: Box::new(lo), hi: Box::new(hi), body: Box::new(body) }
    }

    /// The literal's value, if this is a literal.
    pub fn as_lit(&self) -> Option<i64> {
        match self {
            Nat::Lit(v) => Some(*v),
            _ => None,
        }
    }

    /// Calls `f` on each direct child natural (conditions included; not inside `toNat`).
    pub fn for_each_child(&self, f: &mut dyn FnMut(&Nat)) {
        match self {
            Nat::Var(_) | Nat::Lit(_) | Nat::ToNat(_) | Nat::Meta(_) => {}
            Nat::Bin(_, a, b) => {
                f(a);
                f(b)
            }
            Nat::Sum { lo, hi, body, .. } => {
                f(lo);
                f(hi);
                f(body)
            }
            Nat::Cond(c, a, b) => {
                c.for_each_nat(f);
                f(a);
                f(b)
            }
        }
    }

    /// Does the name occur free (as a natural variable, or as a program
    /// variable inside a `toNat`)?
    pub fn mentions(&self, x: &Name) -> bool {
        match self {
            Nat::Var(v) => v == x,
            Nat::Lit(_) | Nat::Meta(_) => false,
            Nat::ToNat(e) => e.mentions(x),
            Nat::Sum { var, lo, hi, body } => lo.mentions(x) || hi.mentions(x) || (var != x && body.mentions(x)),
            _ => {
                let mut hit = false;
                self.for_each_child(&mut |c| hit |= c.mentions(x));
                hit
            }
        }
    }

    /// Does any unknown ([`Nat::Meta`]) occur?
    pub fn has_meta(&self) -> bool {
        match self {
            Nat::Meta(_) => true,
            _ => {
                let mut hit = false;
                self.for_each_child(&mut |c| hit |= c.has_meta());
                hit
            }
        }
    }

    /// Does a Σ occur anywhere (also inside `toNat` expressions' types)?
    pub fn has_sum(&self) -> bool {
        match self {
            Nat::Sum { .. } => true,
            _ => {
                let mut hit = false;
                self.for_each_child(&mut |c| hit |= c.has_sum());
                hit
            }
        }
    }

    /// Rebuilds this natural with `f` applied bottom-up to every node.
    pub fn map_bottom_up(&self, f: &mut dyn FnMut(Nat) -> Nat) -> Nat {
        let rebuilt = match self {
            Nat::Var(_) | Nat::Lit(_) | Nat::ToNat(_) | Nat::Meta(_) => self.clone(),
            Nat::Bin(op, a, b) => Nat::bin(*op, a.map_bottom_up(f), b.map_bottom_up(f)),
            Nat::Sum { var, lo, hi, body } => Nat::Sum {
                var: var.clone(),
                lo: Box::new(lo.map_bottom_up(f)),
                hi: Box::new(hi.map_bottom_up(f)),
                body: Box::new(body.map_bottom_up(f)),
            },
            Nat::Cond(c, a, b) => Nat::Cond(
                Box::new(c.map_nats(&mut |n| n.map_bottom_up(f))),
                Box::new(a.map_bottom_up(f)),
                Box::new(b.map_bottom_up(f)),
            ),
        };
        f(rebuilt)
    }

    /// Capture-avoiding substitution of `value` for the variable `x`, inside
    /// `toNat` expressions too.
    pub fn subst(&self, x: &Name, value: &Nat) -> Nat {
        match self {
            Nat::Var(v) if v == x => value.clone(),
            Nat::Var(_) | Nat::Lit(_) | Nat::Meta(_) => self.clone(),
            Nat::ToNat(e) => Nat::ToNat(Box::new(e.subst(x, &Expr::from_nat(value)))),
            Nat::Bin(op, a, b) => Nat::bin(*op, a.subst(x, value), b.subst(x, value)),
            Nat::Cond(c, a, b) => Nat::Cond(
                Box::new(c.map_nats(&mut |n| n.subst(x, value))),
                Box::new(a.subst(x, value)),
                Box::new(b.subst(x, value)),
            ),
            Nat::Sum { var, lo, hi, body } => {
                let lo = Box::new(lo.subst(x, value));
                let hi = Box::new(hi.subst(x, value));
                if var == x {
                    return Nat::Sum { var: var.clone(), lo, hi, body: body.clone() };
                }
                if value.mentions(var) {
                    let fresh = fresh_name(var, |n| value.mentions(n) || body.mentions(n) || n == x);
                    let body = body.subst(var, &Nat::Var(fresh.clone()));
                    return Nat::Sum { var: fresh, lo, hi, body: Box::new(body.subst(x, value)) };
                }
                Nat::Sum { var: var.clone(), lo, hi, body: Box::new(body.subst(x, value)) }
            }
        }
    }

    /// Substitutes a program expression for the program variable `x` inside
    /// `toNat` nodes (used when a kernel parameter is bound to an argument).
    pub fn subst_expr(&self, x: &Name, value: &Expr) -> Nat {
        match self {
            Nat::Var(_) | Nat::Lit(_) | Nat::Meta(_) => self.clone(),
            Nat::ToNat(e) => Nat::ToNat(Box::new(e.subst(x, value))),
            Nat::Bin(op, a, b) => Nat::bin(*op, a.subst_expr(x, value), b.subst_expr(x, value)),
            Nat::Cond(c, a, b) => Nat::Cond(
                Box::new(c.map_nats(&mut |n| n.subst_expr(x, value))),
                Box::new(a.subst_expr(x, value)),
                Box::new(b.subst_expr(x, value)),
            ),
            Nat::Sum { var, lo, hi, body } => Nat::Sum {
                var: var.clone(),
                lo: Box::new(lo.subst_expr(x, value)),
                hi: Box::new(hi.subst_expr(x, value)),
                body: Box::new(if var == x { (**body).clone() } else { body.subst_expr(x, value) }),
            },
        }
    }

    /// The canonical form: polynomial parts collected with exact rational
    /// coefficients, constants folded, children of other nodes normalised.
    pub fn normalize(&self) -> Nat {
        poly::Poly::from_nat(self).to_nat()
    }

    /// Are the two equal for every value of their variables, as far as the
    /// normal form can tell? (`false` means "not shown equal".)
    pub fn equiv(&self, other: &Nat) -> bool {
        poly::Poly::from_nat(&Nat::sub(self.clone(), other.clone())).is_zero()
    }

    /// The constant value, if the normal form is a constant.
    pub fn const_value(&self) -> Option<i64> {
        poly::Poly::from_nat(self).as_integer()
    }
}

impl NatCond {
    /// Calls `f` on each natural operand.
    pub fn for_each_nat(&self, f: &mut dyn FnMut(&Nat)) {
        match self {
            NatCond::Cmp(_, a, b) => {
                f(a);
                f(b)
            }
            NatCond::And(a, b) | NatCond::Or(a, b) => {
                a.for_each_nat(f);
                b.for_each_nat(f)
            }
            NatCond::Not(a) => a.for_each_nat(f),
        }
    }
    /// Rebuilds the condition with every natural operand mapped.
    pub fn map_nats(&self, f: &mut dyn FnMut(&Nat) -> Nat) -> NatCond {
        match self {
            NatCond::Cmp(op, a, b) => NatCond::Cmp(*op, f(a), f(b)),
            NatCond::And(a, b) => NatCond::And(Box::new(a.map_nats(f)), Box::new(b.map_nats(f))),
            NatCond::Or(a, b) => NatCond::Or(Box::new(a.map_nats(f)), Box::new(b.map_nats(f))),
            NatCond::Not(a) => NatCond::Not(Box::new(a.map_nats(f))),
        }
    }
}

/// `base`, or `base1`, `base2`, … : the first that `taken` rejects not.
pub fn fresh_name(base: &Name, taken: impl Fn(&Name) -> bool) -> Name {
    let stem = base.as_str().trim_end_matches(|c: char| c.is_ascii_digit());
    let stem = if stem.is_empty() { "k" } else { stem };
    let candidate = Name::from(stem);
    if !taken(&candidate) {
        return candidate;
    }
    (1..)
        .map(|i| Name::from(format!("{stem}{i}")))
        .find(|n| !taken(n))
        .expect("an unbounded range always yields a fresh name")
}

impl std::fmt::Display for Nat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::printer::print_nat(self))
    }
}
impl std::fmt::Display for NatCond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::printer::print_cond(self))
    }
}

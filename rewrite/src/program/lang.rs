//! [`Prog`]: the egg language of heddle programs.
//!
//! One e-node per expression form of LANGUAGE.md §4. Names are [`Prog::Sym`]
//! leaves; a use of a name is `Var(sym)` and a binder holds its name as a
//! child (egg's `tests/lambda.rs` layout), so a pattern can bind the name of
//! a lambda's parameter and refer to its uses with the same pattern variable.
//!
//! Spelling that does not change meaning — `f(a, b)` versus `f(a)(b)` versus
//! `b :>> f(a)`, and `fun(a, b => e)` versus `fun(a => fun(b => e))` — is kept
//! in the node so programs convert back exactly, but [`Language::matches`]
//! ignores it: a rule written with `:>>` matches a call spelled with
//! parentheses and vice versa.

use egg::{Id, Language, Symbol};
use heddle_ir::expr::{BinOp, Literal, SectionOp, UnOp};
use heddle_ir::{Nat, Type};
use std::fmt;

/// How an application was written; meaning is the same for all three.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AppSpelling {
    /// `f(a)`: the first argument of a parenthesised group.
    Call,
    /// The second or later argument of a group: the `b` of `f(a, b)`.
    More,
    /// `a :>> f`.
    Pipe,
}

/// How a lambda was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LamSpelling {
    /// The first parameter of a `fun(…)`.
    Head,
    /// A later parameter of the same `fun(a, b => …)`.
    More,
}

/// An e-node of a heddle program.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Prog {
    /// A name (of a variable, binder or primitive); not a use by itself.
    Sym(Symbol),
    /// A use of the name in the child [`Prog::Sym`] class.
    Var([Id; 1]),
    /// A literal.
    Lit(Literal),
    /// An operator section such as the `+` of `reduce(+, 0)`.
    Section(SectionOp),
    /// A type-level natural used as a value (opaque).
    NatValue(Nat),
    /// A type (parameter and `(e : T)` annotations; opaque).
    Ty(Type),
    /// A parameter without annotation.
    NoTy,
    /// `fun(x: T => body)`: children are the binder's name, its annotation
    /// ([`Prog::Ty`] or [`Prog::NoTy`]) and the body.
    Lam(LamSpelling, [Id; 3]),
    /// `nFun(n => body)`: the natural's name and the body.
    NLam([Id; 2]),
    /// Application: the function and the argument.
    App(AppSpelling, [Id; 2]),
    /// `array @ index`.
    Index([Id; 2]),
    /// `tuple.k`, 1-based.
    Proj(u32, [Id; 1]),
    /// `(a, b, …)`.
    Tuple(Box<[Id]>),
    /// `(e : T)`: the expression and a [`Prog::Ty`].
    Annot([Id; 2]),
    /// `let x = value in body`: the name, the value, the body.
    Let([Id; 3]),
    /// `lhs op rhs`.
    Binary(BinOp, [Id; 2]),
    /// `-e` or `!e`.
    Unary(UnOp, [Id; 1]),
    /// `select(c, a, b)`.
    Select([Id; 3]),
}

/// The discriminant of a [`Prog`] node: its variant, ignoring spelling and
/// payload (egg compares payloads with [`Language::matches`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProgKind(u8);

impl Prog {
    fn tag(&self) -> u8 {
        match self {
            Prog::Sym(_) => 0,
            Prog::Var(_) => 1,
            Prog::Lit(_) => 2,
            Prog::Section(_) => 3,
            Prog::NatValue(_) => 4,
            Prog::Ty(_) => 5,
            Prog::NoTy => 6,
            Prog::Lam(..) => 7,
            Prog::NLam(_) => 8,
            Prog::App(..) => 9,
            Prog::Index(_) => 10,
            Prog::Proj(..) => 11,
            Prog::Tuple(_) => 12,
            Prog::Annot(_) => 13,
            Prog::Let(_) => 14,
            Prog::Binary(..) => 15,
            Prog::Unary(..) => 16,
            Prog::Select(_) => 17,
        }
    }
}

impl Language for Prog {
    type Discriminant = ProgKind;

    fn discriminant(&self) -> ProgKind {
        ProgKind(self.tag())
    }

    fn matches(&self, other: &Prog) -> bool {
        // Spelling is deliberately not compared (see the module docs).
        match (self, other) {
            (Prog::Sym(a), Prog::Sym(b)) => a == b,
            (Prog::Lit(a), Prog::Lit(b)) => a == b,
            (Prog::Section(a), Prog::Section(b)) => a == b,
            (Prog::NatValue(a), Prog::NatValue(b)) => a == b,
            (Prog::Ty(a), Prog::Ty(b)) => a == b,
            (Prog::Proj(a, _), Prog::Proj(b, _)) => a == b,
            (Prog::Binary(a, _), Prog::Binary(b, _)) => a == b,
            (Prog::Unary(a, _), Prog::Unary(b, _)) => a == b,
            (Prog::Tuple(a), Prog::Tuple(b)) => a.len() == b.len(),
            _ => self.tag() == other.tag(),
        }
    }

    fn children(&self) -> &[Id] {
        match self {
            Prog::Sym(_) | Prog::Lit(_) | Prog::Section(_) | Prog::NatValue(_) | Prog::Ty(_) | Prog::NoTy => &[],
            Prog::Var(c) | Prog::Proj(_, c) | Prog::Unary(_, c) => c,
            Prog::NLam(c) | Prog::App(_, c) | Prog::Index(c) | Prog::Annot(c) | Prog::Binary(_, c) => c,
            Prog::Lam(_, c) | Prog::Let(c) | Prog::Select(c) => c,
            Prog::Tuple(c) => c,
        }
    }

    fn children_mut(&mut self) -> &mut [Id] {
        match self {
            Prog::Sym(_) | Prog::Lit(_) | Prog::Section(_) | Prog::NatValue(_) | Prog::Ty(_) | Prog::NoTy => &mut [],
            Prog::Var(c) | Prog::Proj(_, c) | Prog::Unary(_, c) => c,
            Prog::NLam(c) | Prog::App(_, c) | Prog::Index(c) | Prog::Annot(c) | Prog::Binary(_, c) => c,
            Prog::Lam(_, c) | Prog::Let(c) | Prog::Select(c) => c,
            Prog::Tuple(c) => c,
        }
    }
}

impl fmt::Display for Prog {
    /// The operator name, as egg prints it in s-expressions (debugging only).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prog::Sym(s) => write!(f, "{s}"),
            Prog::Var(_) => f.write_str("var"),
            Prog::Lit(Literal::Int(v)) => write!(f, "{v}"),
            Prog::Lit(Literal::Float(v)) => write!(f, "{:?}", v.0),
            Prog::Lit(Literal::Bool(b)) => write!(f, "{b}"),
            Prog::Section(op) => write!(f, "section{}", op.symbol()),
            Prog::NatValue(n) => write!(f, "nat[{n}]"),
            Prog::Ty(t) => write!(f, "type[{t}]"),
            Prog::NoTy => f.write_str("notype"),
            Prog::Lam(..) => f.write_str("fun"),
            Prog::NLam(_) => f.write_str("nfun"),
            Prog::App(..) => f.write_str("app"),
            Prog::Index(_) => f.write_str("@"),
            Prog::Proj(k, _) => write!(f, ".{k}"),
            Prog::Tuple(_) => f.write_str("tuple"),
            Prog::Annot(_) => f.write_str("annot"),
            Prog::Let(_) => f.write_str("let"),
            Prog::Binary(op, _) => f.write_str(op.symbol()),
            Prog::Unary(UnOp::Neg, _) => f.write_str("neg"),
            Prog::Unary(UnOp::Not, _) => f.write_str("!"),
            Prog::Select(_) => f.write_str("select"),
        }
    }
}

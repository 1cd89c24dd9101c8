//! Expressions and programs.

use crate::name::Name;
use crate::nat::Nat;
use crate::span::Span;
use crate::types::Type;
use std::cmp::Ordering;

/// An expression with its source span.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it came from.
    pub span: Span,
}

/// A function parameter: `x` or `x: T`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Param {
    /// The bound name.
    pub name: Name,
    /// The annotation, if any.
    pub ty: Option<Type>,
    /// Where the name is.
    pub span: Span,
}

/// The expression forms of LANGUAGE.md §4.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExprKind {
    /// A variable, a `def`, a natural in scope, or a primitive pattern (`map`, `zip`, …).
    Var(Name),
    /// A literal.
    Lit(Literal),
    /// `fun(a, b => body)`: parameters are curried, `fun(a => fun(b => body))`.
    Fun {
        /// One or more parameters.
        params: Vec<Param>,
        /// The body.
        body: Box<Expr>,
    },
    /// `nFun(n => body)`.
    NFun {
        /// The natural's name.
        var: Name,
        /// The body.
        body: Box<Expr>,
    },
    /// `f(a, b)` (curried: `f(a)(b)`).
    App {
        /// The function.
        func: Box<Expr>,
        /// One or more arguments.
        args: Vec<Expr>,
    },
    /// `arg :>> func`, that is `func(arg)`.
    Pipe {
        /// The value.
        arg: Box<Expr>,
        /// The function applied to it.
        func: Box<Expr>,
    },
    /// `array @ index`.
    Index {
        /// The array.
        array: Box<Expr>,
        /// The position.
        index: Box<Expr>,
    },
    /// `tuple.k`, 1-based.
    Proj {
        /// The tuple.
        tuple: Box<Expr>,
        /// Which component, from 1.
        field: u32,
    },
    /// `(a, b, …)`.
    Tuple(Vec<Expr>),
    /// `(e : T)`.
    Annot {
        /// The expression.
        expr: Box<Expr>,
        /// Its declared type.
        ty: Type,
    },
    /// `let x = value in body`.
    Let {
        /// The bound name.
        name: Name,
        /// Its value.
        value: Box<Expr>,
        /// Where it is in scope.
        body: Box<Expr>,
    },
    /// `lhs op rhs`.
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `-e` or `!e`.
    Unary {
        /// The operator.
        op: UnOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// `select(cond, a, b)`.
    Select {
        /// The condition.
        cond: Box<Expr>,
        /// Value when true.
        then: Box<Expr>,
        /// Value when false.
        els: Box<Expr>,
    },
    /// A binary operator used as a function: `reduce(+, 0)`.
    Section(SectionOp),
    /// A type-level natural used as a value; produced by substitution, never parsed.
    NatValue(Nat),
}

/// A literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Literal {
    /// An integer literal; its type comes from context.
    Int(i64),
    /// A float literal; its type comes from context.
    Float(FloatLit),
    /// `true` or `false`.
    Bool(bool),
}

/// A float literal, compared by bits so trees can be ordered and hashed.
#[derive(Clone, Copy, Debug)]
pub struct FloatLit(pub f64);

impl PartialEq for FloatLit {
    fn eq(&self, other: &FloatLit) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for FloatLit {}
impl PartialOrd for FloatLit {
    fn partial_cmp(&self, other: &FloatLit) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for FloatLit {
    fn cmp(&self, other: &FloatLit) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}
impl std::hash::Hash for FloatLit {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.to_bits().hash(h)
    }
}

/// Binary operators of expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    /// The larger operand; only from the `max` section, never infix.
    Max,
    /// The smaller operand; only from the `min` section, never infix.
    Min,
}

impl BinOp {
    /// Its spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::Max => "max",
            BinOp::Min => "min",
        }
    }
    /// Binding strength: larger binds tighter (`||` 1 … `* / %` 5).
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
            BinOp::Add | BinOp::Sub => 4,
            BinOp::Mul | BinOp::Div | BinOp::Rem | BinOp::Max | BinOp::Min => 5,
        }
    }
    /// Is this a comparison (result `bool`)?
    pub fn is_comparison(self) -> bool {
        self.precedence() == 3
    }
    /// Is this `&&` or `||`?
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum UnOp {
    /// Arithmetic negation.
    Neg,
    /// Logical not.
    Not,
}

/// Operators that may stand alone as binary functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[allow(missing_docs)]
pub enum SectionOp {
    Add,
    Mul,
    Max,
    Min,
}

impl SectionOp {
    /// Its spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            SectionOp::Add => "+",
            SectionOp::Mul => "*",
            SectionOp::Max => "max",
            SectionOp::Min => "min",
        }
    }
}

impl Expr {
    /// An expression at `span`.
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }
    /// A synthesised expression (no source location).
    pub fn synth(kind: ExprKind) -> Expr {
        Expr { kind, span: Span::DUMMY }
    }
    /// A variable reference.
    pub fn var(name: impl Into<Name>) -> Expr {
        Expr::synth(ExprKind::Var(name.into()))
    }

    /// The expression form of a natural: variables, literals and `+ - * / %`
    /// become ordinary expressions (so printed programs stay readable); any
    /// other natural is wrapped as [`ExprKind::NatValue`].
    pub fn from_nat(n: &Nat) -> Expr {
        use crate::nat::NatOp;
        match n {
            Nat::Var(x) => Expr::var(x.clone()),
            Nat::Lit(v) if *v >= 0 => Expr::synth(ExprKind::Lit(Literal::Int(*v))),
            Nat::Bin(op, a, b) => {
                let op = match op {
                    NatOp::Add => BinOp::Add,
                    NatOp::Sub => BinOp::Sub,
                    NatOp::Mul => BinOp::Mul,
                    NatOp::Div => BinOp::Div,
                    NatOp::Mod => BinOp::Rem,
                    _ => return Expr::synth(ExprKind::NatValue(n.clone())),
                };
                Expr::synth(ExprKind::Binary { op, lhs: Box::new(Expr::from_nat(a)), rhs: Box::new(Expr::from_nat(b)) })
            }
            Nat::ToNat(e) => (**e).clone(),
            _ => Expr::synth(ExprKind::NatValue(n.clone())),
        }
    }

    /// Does `x` occur free in this expression (also inside types and naturals)?
    pub fn mentions(&self, x: &Name) -> bool {
        let mut found = false;
        self.visit_free(x, &mut |_| found = true);
        found
    }

    fn visit_free(&self, x: &Name, hit: &mut dyn FnMut(&Expr)) {
        match &self.kind {
            ExprKind::Var(v) => {
                if v == x {
                    hit(self)
                }
            }
            ExprKind::Lit(_) | ExprKind::Section(_) => {}
            ExprKind::NatValue(n) => {
                if n.mentions(x) {
                    hit(self)
                }
            }
            ExprKind::Fun { params, body } => {
                for p in params {
                    if p.ty.as_ref().is_some_and(|t| t.mentions(x)) {
                        hit(self);
                    }
                    if &p.name == x {
                        return;
                    }
                }
                body.visit_free(x, hit)
            }
            ExprKind::NFun { var, body } => {
                if var != x {
                    body.visit_free(x, hit)
                }
            }
            ExprKind::Let { name, value, body } => {
                value.visit_free(x, hit);
                if name != x {
                    body.visit_free(x, hit)
                }
            }
            ExprKind::Annot { expr, ty } => {
                if ty.mentions(x) {
                    hit(self)
                }
                expr.visit_free(x, hit)
            }
            _ => self.for_each_child(&mut |c| c.visit_free(x, hit)),
        }
    }

    /// Calls `f` on each direct sub-expression, mutably (not inside types).
    pub fn for_each_child_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        match &mut self.kind {
            ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Section(_) | ExprKind::NatValue(_) => {}
            ExprKind::Fun { body, .. } | ExprKind::NFun { body, .. } => f(body),
            ExprKind::App { func, args } => {
                f(func);
                args.iter_mut().for_each(f);
            }
            ExprKind::Pipe { arg, func } => {
                f(arg);
                f(func)
            }
            ExprKind::Index { array, index } => {
                f(array);
                f(index)
            }
            ExprKind::Proj { tuple, .. } => f(tuple),
            ExprKind::Tuple(es) => es.iter_mut().for_each(f),
            ExprKind::Annot { expr, .. } => f(expr),
            ExprKind::Let { value, body, .. } => {
                f(value);
                f(body)
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                f(lhs);
                f(rhs)
            }
            ExprKind::Unary { operand, .. } => f(operand),
            ExprKind::Select { cond, then, els } => {
                f(cond);
                f(then);
                f(els)
            }
        }
    }

    /// Calls `f` on each direct sub-expression (not inside types).
    pub fn for_each_child(&self, f: &mut dyn FnMut(&Expr)) {
        match &self.kind {
            ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Section(_) | ExprKind::NatValue(_) => {}
            ExprKind::Fun { body, .. } | ExprKind::NFun { body, .. } => f(body),
            ExprKind::App { func, args } => {
                f(func);
                args.iter().for_each(f);
            }
            ExprKind::Pipe { arg, func } => {
                f(arg);
                f(func)
            }
            ExprKind::Index { array, index } => {
                f(array);
                f(index)
            }
            ExprKind::Proj { tuple, .. } => f(tuple),
            ExprKind::Tuple(es) => es.iter().for_each(f),
            ExprKind::Annot { expr, .. } => f(expr),
            ExprKind::Let { value, body, .. } => {
                f(value);
                f(body)
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                f(lhs);
                f(rhs)
            }
            ExprKind::Unary { operand, .. } => f(operand),
            ExprKind::Select { cond, then, els } => {
                f(cond);
                f(then);
                f(els)
            }
        }
    }

    /// Replaces free occurrences of the variable `x` by `value`; types and
    /// naturals inside are substituted too. Binders that would capture a free
    /// variable of `value` are not renamed: such programs are rejected earlier
    /// by scoping (a `toNat` may only use names in scope where it stands).
    pub fn subst(&self, x: &Name, value: &Expr) -> Expr {
        let nat_value = value.as_nat();
        let sub_nat = |n: &Nat| match &nat_value {
            Some(v) => n.subst(x, v),
            None => n.subst_expr(x, value),
        };
        let sub_ty = |t: &Type| t.map_nats(&mut |n| sub_nat(n));
        let kind = match &self.kind {
            ExprKind::Var(v) if v == x => return Expr { kind: value.kind.clone(), span: self.span },
            ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Section(_) => return self.clone(),
            ExprKind::NatValue(n) => ExprKind::NatValue(sub_nat(n)),
            ExprKind::Fun { params, body } => {
                let mut out = Vec::new();
                let mut shadowed = false;
                for p in params {
                    out.push(Param {
                        name: p.name.clone(),
                        ty: if shadowed { p.ty.clone() } else { p.ty.as_ref().map(sub_ty) },
                        span: p.span,
                    });
                    shadowed |= &p.name == x;
                }
                let body = if shadowed { (**body).clone() } else { body.subst(x, value) };
                ExprKind::Fun { params: out, body: Box::new(body) }
            }
            ExprKind::NFun { var, body } => {
                if var == x {
                    return self.clone();
                }
                ExprKind::NFun { var: var.clone(), body: Box::new(body.subst(x, value)) }
            }
            ExprKind::Let { name, value: v, body } => ExprKind::Let {
                name: name.clone(),
                value: Box::new(v.subst(x, value)),
                body: Box::new(if name == x { (**body).clone() } else { body.subst(x, value) }),
            },
            ExprKind::Annot { expr, ty } => ExprKind::Annot { expr: Box::new(expr.subst(x, value)), ty: sub_ty(ty) },
            ExprKind::App { func, args } => ExprKind::App {
                func: Box::new(func.subst(x, value)),
                args: args.iter().map(|a| a.subst(x, value)).collect(),
            },
            ExprKind::Pipe { arg, func } => {
                ExprKind::Pipe { arg: Box::new(arg.subst(x, value)), func: Box::new(func.subst(x, value)) }
            }
            ExprKind::Index { array, index } => {
                ExprKind::Index { array: Box::new(array.subst(x, value)), index: Box::new(index.subst(x, value)) }
            }
            ExprKind::Proj { tuple, field } => ExprKind::Proj { tuple: Box::new(tuple.subst(x, value)), field: *field },
            ExprKind::Tuple(es) => ExprKind::Tuple(es.iter().map(|e| e.subst(x, value)).collect()),
            ExprKind::Binary { op, lhs, rhs } => {
                ExprKind::Binary { op: *op, lhs: Box::new(lhs.subst(x, value)), rhs: Box::new(rhs.subst(x, value)) }
            }
            ExprKind::Unary { op, operand } => ExprKind::Unary { op: *op, operand: Box::new(operand.subst(x, value)) },
            ExprKind::Select { cond, then, els } => ExprKind::Select {
                cond: Box::new(cond.subst(x, value)),
                then: Box::new(then.subst(x, value)),
                els: Box::new(els.subst(x, value)),
            },
        };
        Expr { kind, span: self.span }
    }

    /// A binary operator applied as a function, `max(a, b)` or `+(a)(b)`: the
    /// operator and the operands (how a `toNat` holds `max(len@i, 1)`).
    pub fn as_operator_call(&self) -> Option<(BinOp, &Expr, &Expr)> {
        let ExprKind::App { func, args } = &self.kind else { return None };
        let (op, a, b) = match (&func.kind, args.as_slice()) {
            (ExprKind::Section(op), [a, b]) => (*op, a, b),
            (ExprKind::App { func, args: first }, [b]) => match (&func.kind, first.as_slice()) {
                (ExprKind::Section(op), [a]) => (*op, a, b),
                _ => return None,
            },
            _ => return None,
        };
        let op = match op {
            SectionOp::Add => BinOp::Add,
            SectionOp::Mul => BinOp::Mul,
            SectionOp::Max => BinOp::Max,
            SectionOp::Min => BinOp::Min,
        };
        Some((op, a, b))
    }

    /// This expression read as a natural, if it is one: variables, non-negative
    /// integer literals, `+ - * / %` of such, and embedded naturals.
    pub fn as_nat(&self) -> Option<Nat> {
        use crate::nat::NatOp;
        match &self.kind {
            ExprKind::Var(x) => Some(Nat::Var(x.clone())),
            ExprKind::Lit(Literal::Int(v)) if *v >= 0 => Some(Nat::Lit(*v)),
            ExprKind::NatValue(n) => Some(n.clone()),
            ExprKind::Binary { op, lhs, rhs } => {
                let op = match op {
                    BinOp::Add => NatOp::Add,
                    BinOp::Sub => NatOp::Sub,
                    BinOp::Mul => NatOp::Mul,
                    BinOp::Div => NatOp::Div,
                    BinOp::Rem => NatOp::Mod,
                    _ => return None,
                };
                Some(Nat::Bin(op, Box::new(lhs.as_nat()?), Box::new(rhs.as_nat()?)))
            }
            _ => None,
        }
    }
}

/// `def NAME = expr;`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Def {
    /// The defined name.
    pub name: Name,
    /// Its value.
    pub value: Expr,
    /// The name's location.
    pub span: Span,
}

/// `#NAME = #sparse_tensor.encoding<{ ... }>`: a named sparse encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodingDef {
    /// The name without `#`.
    pub name: Name,
    /// The encoding.
    pub encoding: crate::tensor::EncodingText,
    /// The name's location.
    pub span: Span,
}

/// A source file: named encodings, definitions, then the kernel expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// `#NAME = …` lines, in order.
    pub encodings: Vec<EncodingDef>,
    /// `def` lines, in order.
    pub defs: Vec<Def>,
    /// The kernel.
    pub kernel: Expr,
}

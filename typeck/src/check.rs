//! Inference for expressions.
//!
//! Checking is bidirectional in the way Lift programs need: data flows first
//! (`xs :>> map(f)` types `xs`, then checks `f` at the element type), so a
//! function is always checked against known argument types and lambdas need
//! no annotations. Function-valued names (`def`s, `let`s of functions,
//! function arguments) are checked afresh at each use.

use crate::metas::{MetaKind, Metas, Mismatch};
use crate::scope::{Binding, Scope};
use crate::typed::{Obligation, TExpr, TKind, TLit};
use heddle_ir::expr::{BinOp, ExprKind, Literal, SectionOp, UnOp};
use heddle_ir::{Diagnostic, Expr, Name, Nat, ScalarType, Span, Type};
use std::collections::HashSet;
use std::rc::Rc;

/// An argument on its way into a function.
#[derive(Clone)]
pub enum Arg<'e> {
    /// Not yet checked, with the scope it was written in.
    Expr(ExprRef<'e>, Scope),
    /// Already checked (a lambda parameter supplied by a pattern).
    Typed(TExpr),
}

/// An argument's expression: borrowed from the tree being checked, or
/// shared with a scope (a definition's body). Never a copy: copying each
/// argument of a pipeline made checking `xs :>> f :>> f :>> …` quadratic
/// in time and memory (10 000 stages: gigabytes).
#[derive(Clone)]
pub enum ExprRef<'e> {
    /// Part of the tree being checked.
    Borrowed(&'e Expr),
    /// Held by a scope.
    Shared(Rc<Expr>),
}

impl std::ops::Deref for ExprRef<'_> {
    type Target = Expr;
    fn deref(&self) -> &Expr {
        match self {
            ExprRef::Borrowed(e) => e,
            ExprRef::Shared(e) => e,
        }
    }
}

impl ExprRef<'_> {
    /// The expression as a scope holds it (a copy only if it was borrowed).
    pub fn to_rc(&self) -> Rc<Expr> {
        match self {
            ExprRef::Borrowed(e) => Rc::new((*e).clone()),
            ExprRef::Shared(e) => e.clone(),
        }
    }
}

impl Arg<'_> {
    /// The source expression, if the argument has one.
    pub fn expr(&self) -> Option<&Expr> {
        match self {
            Arg::Expr(e, _) => Some(e),
            Arg::Typed(_) => None,
        }
    }
    /// Where it is.
    pub fn span(&self) -> Span {
        match self {
            Arg::Expr(e, _) => e.span,
            Arg::Typed(t) => t.span,
        }
    }
}

/// Nesting deeper than this is refused (programs that inline without end).
pub const MAX_DEPTH: u32 = 2000;

/// Checking steps (expressions checked, definitions inlined at each use
/// counted afresh) beyond this are refused: forty definitions that each
/// use the previous one twice would inline to 2^40 expressions.
pub const MAX_WORK: u64 = 500_000;

/// The state of one checking run.
pub struct Checker {
    /// Unknowns.
    pub metas: Metas,
    /// Names that generated names must avoid.
    pub used: HashSet<Name>,
    /// Run-time conditions found so far.
    pub obligations: Vec<Obligation>,
    depth: u32,
    /// Checking steps so far (see [`MAX_WORK`]).
    work: u64,
    /// Count arrays handed out so far (see `heddle_ir::nat::counted`).
    counts: u32,
    /// The program's `#NAME = …` encodings, for `tensor<…, #NAME>` annotations.
    pub encodings: Vec<heddle_ir::expr::EncodingDef>,
}

pub(crate) type CResult<T> = Result<T, Diagnostic>;

impl Checker {
    /// A checker whose generated names avoid `used`.
    pub fn new(used: HashSet<Name>) -> Checker {
        Checker {
            metas: Metas::default(),
            used,
            obligations: Vec::new(),
            depth: 0,
            work: 0,
            counts: 0,
            encodings: Vec::new(),
        }
    }

    /// The length of a fresh count array: `toNat(count#k)`.
    pub fn fresh_count(&mut self) -> Nat {
        self.counts += 1;
        heddle_ir::nat::counted::counted(Name::from(format!(
            "{}{}",
            heddle_ir::nat::counted::COUNT_PREFIX,
            self.counts
        )))
    }

    /// A name not used anywhere yet.
    pub fn fresh(&mut self, base: &str) -> Name {
        let name = heddle_ir::nat::fresh_name(&Name::from(base), |n| self.used.contains(n));
        self.used.insert(name.clone());
        name
    }

    pub(crate) fn unify_at(&mut self, expected: &Type, actual: &Type, span: Span, context: &str) -> CResult<()> {
        let mut fresh_names: Vec<Name> = Vec::new();
        let mut counter = 0;
        let used = &mut self.used;
        let mut fresh = || {
            let n = heddle_ir::nat::fresh_name(&Name::from("r"), |n| used.contains(n) || fresh_names.contains(n));
            counter += 1;
            fresh_names.push(n.clone());
            n
        };
        let r = self.metas.unify(expected, actual, &mut fresh);
        let _ = counter;
        r.map_err(|m| self.mismatch(m, span, context))
    }

    /// The diagnostic for a failed unification.
    pub fn mismatch(&self, m: Mismatch, span: Span, context: &str) -> Diagnostic {
        let ctx = if context.is_empty() { String::new() } else { format!(" {context}") };
        match m {
            Mismatch::Types(e, a) => {
                let (e, a) = (self.metas.zonk(&e), self.metas.zonk(&a));
                Diagnostic::new(span, format!("type mismatch{ctx}: expected {}, found {}", show(&e), show(&a)))
                    .with_label(format!("this has type {}", show(&a)))
            }
            Mismatch::Nats(e, a) => {
                let (e, a) = (self.metas.zonk_nat(&e), self.metas.zonk_nat(&a));
                Diagnostic::new(span, format!("length mismatch{ctx}: expected length {e}, found length {a}"))
                    .with_label(format!("{a} is not {e}"))
            }
            Mismatch::NotMultiple { divisor, length } => {
                Diagnostic::new(span, format!("length mismatch{ctx}: {length} is not a multiple of {divisor}"))
                    .with_label(format!("an array of length {length} cannot be split into chunks of {divisor}"))
            }
            Mismatch::Literal(kind, t) => {
                let (wanted, found) = (kind, show(&t));
                let msg = match wanted {
                    MetaKind::Float => format!("type mismatch{ctx}: a float literal cannot have type {found}"),
                    MetaKind::Integer => format!("type mismatch{ctx}: expected an integer, found {found}"),
                    MetaKind::Complex => format!("type mismatch{ctx}: expected a complex number, found {found}"),
                    _ => format!("type mismatch{ctx}: a number literal cannot have type {found}"),
                };
                Diagnostic::new(span, msg).with_label(format!("this has type {found}"))
            }
            Mismatch::PositionDependent(t) => Diagnostic::new(
                span,
                format!(
                    "type mismatch{ctx}: expected an array whose elements all have the same type, found {}",
                    show(&t)
                ),
            )
            .with_label("this array's element type depends on the position"),
        }
    }

    /// One more step of checking at `span`: refused beyond [`MAX_DEPTH`]
    /// levels of nesting or [`MAX_WORK`] steps in all.
    fn step_in(&mut self, span: Span) -> CResult<()> {
        self.work += 1;
        if self.work > MAX_WORK {
            return Err(Diagnostic::new(span, format!("the program is too large to check: more than {MAX_WORK} expressions once its definitions are inlined"))
                .with_label("while checking this")
                .with_note("each use of a definition (or of a function argument) is checked afresh at its types, so a definition that uses the previous one twice doubles the size"));
        }
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return Err(
                Diagnostic::new(span, "the program nests too deeply to check").with_label("while checking this")
            );
        }
        Ok(())
    }

    /// The type of an expression that is data (not a function).
    pub fn infer(&mut self, e: &Expr, scope: &Scope) -> CResult<TExpr> {
        self.step_in(e.span)?;
        let r = self.infer_inner(e, scope);
        self.depth -= 1;
        r
    }

    fn infer_inner(&mut self, e: &Expr, scope: &Scope) -> CResult<TExpr> {
        let span = e.span;
        let mk = |kind: TKind, ty: Type| Ok(TExpr { kind, ty, span });
        match &e.kind {
            ExprKind::Var(x) => match scope.lookup(x) {
                Some(Binding::Value(t)) => mk(TKind::Var(x.clone()), t.clone()),
                Some(Binding::Nat) => {
                    let t = self.metas.fresh_type(MetaKind::Integer);
                    mk(TKind::NatValue(Nat::Var(x.clone())), t)
                }
                Some(Binding::Macro(body, s)) => {
                    let (body, s) = (body.clone(), s.clone());
                    if self.arity(&body, &s) > 0 {
                        return Err(Diagnostic::new(span, format!("`{x}` is a function; it must be applied here"))
                            .with_label("expected data, found a function"));
                    }
                    let mut t = self.infer(&body, &s)?;
                    t.span = span;
                    Ok(t)
                }
                None if heddle_ir::prims::lookup(x.as_str()).is_some() => {
                    let sig = heddle_ir::prims::lookup(x.as_str()).map(|s| s.text.clone()).unwrap_or_default();
                    Err(Diagnostic::new(span, format!("the pattern `{x}` needs its arguments here"))
                        .with_label("expected data, found a pattern")
                        .with_note(format!("{x} : {sig}")))
                }
                None => Err(unbound(x, span, [])),
            },
            ExprKind::Lit(Literal::Int(v)) => {
                let t = self.metas.fresh_type(MetaKind::Numeric);
                mk(TKind::Lit(TLit::Int(*v)), t)
            }
            ExprKind::Lit(Literal::Float(f)) => {
                let t = self.metas.fresh_type(MetaKind::Float);
                mk(TKind::Lit(TLit::Float(f.0)), t)
            }
            ExprKind::Lit(Literal::Bool(b)) => mk(TKind::Lit(TLit::Bool(*b)), Type::Scalar(ScalarType::Bool)),
            ExprKind::NatValue(n) => {
                let t = self.metas.fresh_type(MetaKind::Integer);
                mk(TKind::NatValue(n.clone()), t)
            }
            ExprKind::Fun { .. } | ExprKind::NFun { .. } => {
                Err(Diagnostic::new(span, "cannot type this function here")
                    .with_label("apply it, or pass it to a pattern such as map")
                    .with_note(
                        "only the kernel's outermost functions may stand alone, and their parameters need types",
                    ))
            }
            ExprKind::Section(op) => Err(Diagnostic::new(span, format!("`{}` is a binary function here", op.symbol()))
                .with_label("pass it to a pattern, e.g. reduce(+, 0)")),
            ExprKind::App { func, args } => {
                let args = args.iter().map(|a| Arg::Expr(ExprRef::Borrowed(a), scope.clone())).collect();
                self.check_app(func, scope, args, span)
            }
            ExprKind::Pipe { arg, func } => {
                let args = vec![Arg::Expr(ExprRef::Borrowed(arg), scope.clone())];
                self.check_app(func, scope, args, span)
            }
            ExprKind::Index { array, index } => self.index(array, index, scope, span),
            ExprKind::Proj { tuple, field } => {
                let t = self.infer(tuple, scope)?;
                match self.metas.zonk(&t.ty) {
                    Type::Tuple(ts) => {
                        let k = *field as usize;
                        if k == 0 || k > ts.len() {
                            return Err(Diagnostic::new(
                                span,
                                format!("this tuple has {} components, so `.{field}` does not exist", ts.len()),
                            )
                            .with_label(format!("the tuple's type is {}", show(&Type::Tuple(ts.clone())))));
                        }
                        let ty = ts[k - 1].clone();
                        mk(TKind::Proj { tuple: Box::new(t), index: k - 1 }, ty)
                    }
                    other => Err(Diagnostic::new(
                        span,
                        format!("projection `.{field}` needs a tuple, found {}", show(&other)),
                    )
                    .with_label(format!("this has type {}", show(&other)))),
                }
            }
            ExprKind::Tuple(es) => {
                let items = es.iter().map(|x| self.infer(x, scope)).collect::<CResult<Vec<_>>>()?;
                let ty = Type::Tuple(items.iter().map(|t| t.ty.clone()).collect());
                mk(TKind::Tuple(items), ty)
            }
            ExprKind::Annot { expr, ty: Type::Tensor(tt) } => self.store_as_tensor(expr, tt, scope, span),
            ExprKind::Annot { expr, ty } => {
                self.well_formed(ty, scope, span)?;
                let mut t = self.infer(expr, scope)?;
                self.unify_at(ty, &t.ty, expr.span, "against the annotation")?;
                t.ty = ty.clone();
                Ok(t)
            }
            ExprKind::Let { name, value, body } => {
                if self.arity(value, scope) > 0 {
                    let inner = scope.with(name.clone(), Binding::Macro(Rc::new((**value).clone()), scope.clone()));
                    return self.infer(body, &inner);
                }
                let v = self.infer(value, scope)?;
                let inner = scope.with(name.clone(), Binding::Value(v.ty.clone()));
                let b = self.infer(body, &inner)?;
                let ty = b.ty.clone();
                mk(TKind::Let { name: name.clone(), value: Box::new(v), body: Box::new(b) }, ty)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.infer(lhs, scope)?;
                let r = self.infer(rhs, scope)?;
                self.binary(*op, l, r, span)
            }
            ExprKind::Unary { op, operand } => {
                let o = self.infer(operand, scope)?;
                let ty = o.ty.clone();
                match op {
                    UnOp::Neg => self.require_numeric(&ty, operand.span, "`-`")?,
                    UnOp::Not => {
                        self.unify_at(&Type::Scalar(ScalarType::Bool), &ty, operand.span, "in the operand of `!`")?
                    }
                }
                mk(TKind::Unary { op: *op, operand: Box::new(o) }, ty)
            }
            ExprKind::Select { cond, then, els } => {
                let c = self.infer(cond, scope)?;
                self.unify_at(&Type::Scalar(ScalarType::Bool), &c.ty, cond.span, "in the condition of `select`")?;
                let a = self.infer(then, scope)?;
                let b = self.infer(els, scope)?;
                self.unify_at(&a.ty, &b.ty, els.span, "between the branches of `select`")?;
                let ty = a.ty.clone();
                mk(TKind::Select { cond: Box::new(c), then: Box::new(a), els: Box::new(b) }, ty)
            }
        }
    }

    fn index(&mut self, array: &Expr, index: &Expr, scope: &Scope, span: Span) -> CResult<TExpr> {
        let a = self.infer(array, scope)?;
        let i = self.infer(index, scope)?;
        let int = self.metas.fresh_type(MetaKind::Integer);
        self.unify_at(&int, &i.ty, index.span, "in the index of `@`")?;
        match self.metas.zonk(&a.ty) {
            Type::Array { binder, elem, .. } => {
                let ty = match binder {
                    Some(b) => elem.subst_nat(&b, &self.expr_as_nat(index, scope)),
                    None => *elem,
                };
                Ok(TExpr { kind: TKind::Index { array: Box::new(a), index: Box::new(i) }, ty, span })
            }
            other => {
                Err(Diagnostic::new(array.span, format!("indexing with `@` needs an array, found {}", show(&other)))
                    .with_label(format!("this has type {}", show(&other))))
            }
        }
    }

    /// An integer expression as a natural: itself when it uses only naturals,
    /// otherwise `toNat(e)`.
    pub fn expr_as_nat(&self, e: &Expr, scope: &Scope) -> Nat {
        if only_nats(e, scope)
            && let Some(n) = e.as_nat()
        {
            return n;
        }
        Nat::ToNat(Box::new(e.clone()))
    }

    pub(crate) fn require_numeric(&mut self, t: &Type, span: Span, what: &str) -> CResult<()> {
        match self.metas.zonk(t) {
            Type::Scalar(s) if s != ScalarType::Bool => Ok(()),
            Type::Vector { .. } => Ok(()),
            Type::Meta(_) => {
                let num = self.metas.fresh_type(MetaKind::Numeric);
                self.unify_at(&num, t, span, &format!("in the operands of {what}"))
            }
            other => Err(Diagnostic::new(span, format!("{what} needs numbers, found {}", show(&other)))
                .with_label(format!("this has type {}", show(&other)))),
        }
    }

    /// Complex numbers have `+ - * /`, `==` and `!=`: no order, remainder,
    /// `min` or `max`.
    fn complex_operator(&mut self, op: BinOp, operand: &Type, span: Span) -> CResult<()> {
        if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Eq | BinOp::Ne) {
            return Ok(());
        }
        let t = self.metas.zonk(operand);
        let complex = match &t {
            Type::Scalar(s) => s.is_complex(),
            Type::Meta(_) => self.metas.kind_of(&t) == Some(MetaKind::Complex),
            _ => false,
        };
        if complex {
            return Err(Diagnostic::new(span, format!("`{}` is not defined on complex numbers", op.symbol()))
                .with_label(format!("the operands have type {}", show(&t)))
                .with_note("complex numbers have + - * /, == and !=; compare parts with re(z), im(z)"));
        }
        Ok(())
    }

    pub(crate) fn binary(&mut self, op: BinOp, l: TExpr, r: TExpr, span: Span) -> CResult<TExpr> {
        let sym = format!("`{}`", op.symbol());
        if op.is_logical() {
            let b = Type::Scalar(ScalarType::Bool);
            self.unify_at(&b, &l.ty, l.span, &format!("in the left operand of {sym}"))?;
            self.unify_at(&b, &r.ty, r.span, &format!("in the right operand of {sym}"))?;
        } else {
            self.unify_at(&l.ty, &r.ty, r.span, &format!("between the operands of {sym}"))?;
            if !matches!(op, BinOp::Eq | BinOp::Ne) {
                self.require_numeric(&l.ty, l.span, &sym)?;
            }
            self.complex_operator(op, &l.ty, span)?;
        }
        let ty = if op.is_comparison() { Type::Scalar(ScalarType::Bool) } else { l.ty.clone() };
        Ok(TExpr { kind: TKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) }, ty, span })
    }

    /// How many more arguments `e` takes before it is data (0 for data).
    pub fn arity(&self, e: &Expr, scope: &Scope) -> usize {
        match &e.kind {
            ExprKind::Fun { params, body } => {
                let inner = params
                    .iter()
                    .fold(scope.clone(), |s, p| s.with(p.name.clone(), Binding::Value(Type::Meta(u32::MAX))));
                params.len() + self.arity(body, &inner)
            }
            ExprKind::NFun { var, body } => 1 + self.arity(body, &scope.with(var.clone(), Binding::Nat)),
            ExprKind::Section(_) => 2,
            ExprKind::Var(x) => match scope.lookup(x) {
                Some(Binding::Macro(body, s)) => self.arity(body, s),
                Some(_) => 0,
                None => heddle_ir::prims::lookup(x.as_str()).map_or(0, |sig| sig.arity() - sig.optional_count()),
            },
            ExprKind::App { .. } => {
                let (head, args) = spine(e);
                let base = match &head.kind {
                    ExprKind::Var(x) if scope.lookup(x).is_none() => match heddle_ir::prims::lookup(x.as_str()) {
                        Some(_) => {
                            let first = args.first().map(|a| Arg::Expr(ExprRef::Borrowed(a), scope.clone()));
                            let sig = self.prim_form(x.as_str(), first.as_ref()).expect("looked up above");
                            let with_dim = sig.optional_count() > 0
                                && matches!(args.first().map(|a| &a.kind), Some(ExprKind::Lit(Literal::Int(_))));
                            if with_dim { sig.arity() } else { sig.arity() - sig.optional_count() }
                        }
                        None => 0,
                    },
                    _ => self.arity(head, scope),
                };
                base.saturating_sub(args.len())
            }
            // `f :>> g` with `f` a function is their composition: it takes what `f` takes.
            ExprKind::Pipe { arg, func } => match self.arity(arg, scope) {
                0 => self.arity(func, scope).saturating_sub(1),
                n => n,
            },
            ExprKind::Let { name, value, body } => {
                let b = if self.arity(value, scope) > 0 {
                    Binding::Macro(Rc::new((**value).clone()), scope.clone())
                } else {
                    Binding::Value(Type::Meta(u32::MAX))
                };
                self.arity(body, &scope.with(name.clone(), b))
            }
            _ => 0,
        }
    }

    /// Applies `head` (written in `hscope`) to `args`.
    pub fn check_app<'e>(&mut self, head: &'e Expr, hscope: &Scope, args: Vec<Arg<'e>>, span: Span) -> CResult<TExpr> {
        if args.is_empty() {
            return self.infer(head, hscope);
        }
        self.step_in(span)?;
        let r = self.check_app_inner(head, hscope, args, span);
        self.depth -= 1;
        r
    }

    fn check_app_inner<'e>(
        &mut self,
        head: &'e Expr,
        hscope: &Scope,
        args: Vec<Arg<'e>>,
        span: Span,
    ) -> CResult<TExpr> {
        match &head.kind {
            ExprKind::App { func, args: inner } => {
                let mut all: Vec<Arg> = inner.iter().map(|a| Arg::Expr(ExprRef::Borrowed(a), hscope.clone())).collect();
                all.extend(args);
                self.check_app(func, hscope, all, span)
            }
            ExprKind::Var(x) => match hscope.lookup(x) {
                Some(Binding::Macro(body, s)) => {
                    let (body, s) = (body.clone(), s.clone());
                    self.check_app(&body, &s, args, span)
                }
                Some(Binding::Value(t)) => {
                    let t = self.metas.zonk(t);
                    Err(Diagnostic::new(head.span, format!("`{x}` is not a function; it has type {}", show(&t)))
                        .with_label(format!("{} argument(s) given to a value", args.len())))
                }
                Some(Binding::Nat) => Err(Diagnostic::new(head.span, format!("`{x}` is a natural, not a function"))
                    .with_label("cannot be applied")),
                None => match heddle_ir::prims::lookup(x.as_str()) {
                    Some(_) => {
                        let sig = self.prim_form(x.as_str(), args.first()).expect("looked up above");
                        self.check_prim(sig, head.span, args, span)
                    }
                    None => Err(unbound(x, head.span, [])),
                },
            },
            ExprKind::Fun { params, body } => self.apply_lambda(params, body, hscope, args, span),
            // `(f :>> g)(x)` is `g(f(x))`: a pipeline of functions is their composition
            // (Listing 7: `mapLocal(map(f) :>> reduce(+, 0))`).
            ExprKind::Pipe { arg, func } if self.arity(arg, hscope) > 0 => {
                let inner = self.check_app(arg, hscope, args, span)?;
                self.check_app(func, hscope, vec![Arg::Typed(inner)], span)
            }
            ExprKind::NFun { var, body } => {
                let mut args = args.into_iter();
                let first = args.next().expect("check_app is called with at least one argument");
                let n = match &first {
                    Arg::Expr(e, s) if only_nats(e, s) && e.as_nat().is_some() => e.as_nat().expect("checked"),
                    Arg::Expr(e, s) if self.arity(e, s) == 0 => {
                        let t = self.infer(e, s)?;
                        let int = self.metas.fresh_type(MetaKind::Integer);
                        self.unify_at(
                            &int,
                            &t.ty,
                            e.span,
                            &format!("in the natural argument of `nFun({var} => ...)`"),
                        )?;
                        Nat::ToNat(Box::new((**e).clone()))
                    }
                    other => {
                        return Err(Diagnostic::new(
                            other.span(),
                            format!("`nFun({var} => ...)` needs a natural argument"),
                        )
                        .with_label("expected a natural such as 4 or n"));
                    }
                };
                let body = body.subst(var, &Expr::synth(ExprKind::NatValue(n)));
                self.check_app(&body, hscope, args.collect(), span)
            }
            ExprKind::Section(op) => {
                if args.len() != 2 {
                    return Err(Diagnostic::new(
                        span,
                        format!("`{}` takes 2 arguments, found {}", op.symbol(), args.len()),
                    )
                    .with_label("wrong number of arguments"));
                }
                let mut it = args.into_iter();
                let l = self.force(it.next().expect("two args"))?;
                let r = self.force(it.next().expect("two args"))?;
                let op = match op {
                    SectionOp::Add => BinOp::Add,
                    SectionOp::Mul => BinOp::Mul,
                    SectionOp::Max => BinOp::Max,
                    SectionOp::Min => BinOp::Min,
                };
                self.binary(op, l, r, span)
            }
            ExprKind::Let { name, value, body } => {
                if self.arity(value, hscope) > 0 {
                    let inner = hscope.with(name.clone(), Binding::Macro(Rc::new((**value).clone()), hscope.clone()));
                    return self.check_app(body, &inner, args, span);
                }
                let v = self.infer(value, hscope)?;
                let inner = hscope.with(name.clone(), Binding::Value(v.ty.clone()));
                let b = self.check_app(body, &inner, args, span)?;
                let ty = b.ty.clone();
                Ok(TExpr { kind: TKind::Let { name: name.clone(), value: Box::new(v), body: Box::new(b) }, ty, span })
            }
            _ => {
                let t = self.infer(head, hscope)?;
                let ty = self.metas.zonk(&t.ty);
                Err(Diagnostic::new(head.span, format!("this is not a function; it has type {}", show(&ty)))
                    .with_label(format!("given {} argument(s)", args.len())))
            }
        }
    }

    fn apply_lambda<'e>(
        &mut self,
        params: &[heddle_ir::expr::Param],
        body: &'e Expr,
        hscope: &Scope,
        args: Vec<Arg<'e>>,
        span: Span,
    ) -> CResult<TExpr> {
        let mut scope = hscope.clone();
        let mut lets: Vec<(Name, TExpr)> = Vec::new();
        let mut aliases: Vec<(Name, Expr)> = Vec::new();
        let given = args.len();
        let mut args = args.into_iter();
        for (k, p) in params.iter().enumerate() {
            let Some(arg) = args.next() else {
                return Err(Diagnostic::new(
                    span,
                    format!("this function takes {} arguments, but {given} were given", params.len()),
                )
                .with_label(format!("missing an argument for `{}`", params[k].name)));
            };
            if let Arg::Expr(e, s) = &arg
                && self.arity(e, s) > 0
            {
                if p.ty.is_some() {
                    return Err(Diagnostic::new(
                        e.span,
                        format!("`{}` is declared as data, but a function was given", p.name),
                    )
                    .with_label("expected data"));
                }
                scope = scope.with(p.name.clone(), Binding::Macro(e.to_rc(), s.clone()));
                continue;
            }
            let arg_span = arg.span();
            // Only a variable argument is remembered (as an alias in later annotations).
            let arg_expr = arg.expr().filter(|e| matches!(e.kind, ExprKind::Var(_))).cloned();
            let te = self.force(arg)?;
            if let Some(ann) = &p.ty {
                let mut ann = ann.clone();
                for (from, to) in &aliases {
                    ann = ann.map_nats(&mut |n| n.subst_expr(from, to));
                }
                self.well_formed(&ann, &scope, p.span)?;
                self.unify_at(&ann, &te.ty, arg_span, &format!("in the argument for `{}`", p.name))?;
            }
            if let Some(e) = arg_expr
                && matches!(e.kind, ExprKind::Var(_))
            {
                aliases.push((p.name.clone(), e));
            }
            scope = scope.with(p.name.clone(), Binding::Value(te.ty.clone()));
            if te.kind != TKind::Var(p.name.clone()) {
                lets.push((p.name.clone(), te));
            }
        }
        let rest: Vec<Arg> = args.collect();
        let mut out = self.check_app(body, &scope, rest, span)?;
        for (name, value) in lets.into_iter().rev() {
            let ty = out.ty.clone();
            out = TExpr { kind: TKind::Let { name, value: Box::new(value), body: Box::new(out) }, ty, span };
        }
        Ok(out)
    }

    /// Checks an argument.
    pub fn force(&mut self, arg: Arg) -> CResult<TExpr> {
        match arg {
            Arg::Expr(e, s) => self.infer(&e, &s),
            Arg::Typed(t) => Ok(t),
        }
    }

    /// The form of the primitive `name` that its first argument selects
    /// (`reduce(x => x.1 + x.2)`: the form without an initial value).
    pub(crate) fn prim_form(&self, name: &str, first: Option<&Arg>) -> Option<&'static heddle_ir::prims::PrimSig> {
        let params = match first {
            Some(Arg::Expr(e, s)) => Some(self.arity(e, s)).filter(|&n| n > 0),
            _ => None,
        };
        heddle_ir::prims::form(name, params)
    }

    /// Checks `f` as a function of the given parameter types: the lambda it denotes.
    pub fn check_fn(&mut self, f: &Expr, fscope: &Scope, param_tys: &[Type], span: Span) -> CResult<TExpr> {
        let names: Vec<Name> = match &f.kind {
            ExprKind::Fun { params, .. } if params.len() == param_tys.len() => {
                params.iter().map(|p| p.name.clone()).collect()
            }
            _ => (0..param_tys.len()).map(|_| self.fresh("x")).collect(),
        };
        for n in &names {
            self.used.insert(n.clone());
        }
        let args: Vec<Arg> = names
            .iter()
            .zip(param_tys)
            .map(|(n, t)| Arg::Typed(TExpr { kind: TKind::Var(n.clone()), ty: t.clone(), span: f.span }))
            .collect();
        let body = self.check_app(f, fscope, args, span)?;
        let params: Vec<(Name, Type)> = names.into_iter().zip(param_tys.iter().cloned()).collect();
        let ty = params.iter().rev().fold(body.ty.clone(), |acc, (_, t)| Type::Fun {
            param: None,
            from: Box::new(t.clone()),
            to: Box::new(acc),
        });
        Ok(TExpr { kind: TKind::Lambda { params, body: Box::new(body) }, ty, span: f.span })
    }
}

/// The head and all arguments of a curried application.
pub fn spine(e: &Expr) -> (&Expr, Vec<&Expr>) {
    match &e.kind {
        ExprKind::App { func, args } => {
            let (h, mut a) = spine(func);
            a.extend(args.iter());
            (h, a)
        }
        _ => (e, Vec::new()),
    }
}

/// Does the expression use only naturals (so it can be read as one)?
pub fn only_nats(e: &Expr, scope: &Scope) -> bool {
    match &e.kind {
        ExprKind::Var(x) => scope.is_nat(x),
        ExprKind::Lit(Literal::Int(v)) => *v >= 0,
        ExprKind::NatValue(_) => true,
        ExprKind::Binary { op: BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem, lhs, rhs } => {
            only_nats(lhs, scope) && only_nats(rhs, scope)
        }
        _ => false,
    }
}

/// "unbound variable", with the closest of `in_scope`, the patterns and the
/// keywords as a suggestion.
pub fn unbound<'a>(x: &Name, span: Span, in_scope: impl IntoIterator<Item = &'a str>) -> Diagnostic {
    let d = Diagnostic::new(span, format!("unbound variable `{x}`")).with_label("not defined here");
    let prims = heddle_ir::prims::signatures().iter().map(|s| s.name);
    let keywords = ["fun", "nFun", "let", "select", "true", "false", "max", "min"];
    let candidates = in_scope.into_iter().chain(prims).chain(keywords);
    match heddle_ir::suggest::closest(x.as_str(), candidates) {
        Some(s) if heddle_ir::prims::lookup(s).is_some() => d.with_note(format!(
            "did you mean the pattern `{s}`? ({s} : {})",
            heddle_ir::prims::lookup(s).map(|p| p.text.as_str()).unwrap_or_default()
        )),
        Some(s) => d.with_note(format!("did you mean `{s}`?")),
        None => d,
    }
}

/// A type for messages: unknowns get letters in order of appearance
/// (`?T3` → `T`, `?N5` → `K`), as in the signatures.
pub fn show(t: &Type) -> String {
    let text = heddle_ir::printer::print_type(t);
    let mut out = String::new();
    let mut seen: Vec<(String, char)> = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((k, c)) = chars.next() {
        let is_meta = c == '?' && matches!(text[k + 1..].chars().next(), Some('T' | 'N'));
        if !is_meta {
            out.push(c);
            continue;
        }
        let mut token = String::from(c);
        if let Some((_, kind)) = chars.next() {
            token.push(kind);
        }
        while let Some((_, d)) = chars.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
            token.push(d);
            chars.next();
        }
        let letter = match seen.iter().find(|(t, _)| *t == token) {
            Some((_, l)) => *l,
            None => {
                let pool: &[char] = if token.starts_with("?T") {
                    &['T', 'U', 'V', 'W', 'X', 'Y']
                } else {
                    &['K', 'M', 'L', 'P', 'Q', 'R']
                };
                let used = seen.iter().filter(|(t, _)| t[..2] == token[..2]).count();
                let l = pool.get(used).copied().unwrap_or('_');
                seen.push((token.clone(), l));
                l
            }
        };
        out.push(letter);
    }
    out
}

//! Complex numbers (`complex<f32>`, `complex<f64>`) in compiled code.
//!
//! Lowering sees a complex number as the pair of its parts. Before a kernel
//! is lowered ([`with_pairs`]), every complex type in it becomes the tuple
//! `(T, T)` of its part type `T` (real part first, as complex numbers are
//! stored: an array of them is an array of two-field records, the bytes of
//! numpy's `complex64` / `complex128`), and every operation that means
//! something else on a complex number than on a tuple is rewritten into
//! float arithmetic on the parts:
//!
//! - `complex(a, b)` is the pair `(a, b)`; `re(z)`, `im(z)` its components;
//!   `conj(z)` is `(re, -im)`, `-z` is `(-re, -im)`;
//! - `+`, `-` part by part; `*` and `/` the textbook formulas of the
//!   interpreter (`heddle_runtime::launch::complex_bin`), each real
//!   operation in the same order at the part type, so every backend rounds
//!   as the interpreter does (OpenCL with `FP_CONTRACT OFF`: no fused
//!   multiply-add);
//! - `==` is `re == re' && im == im'`, `!=` is `re != re' || im != im'`;
//! - a real literal of a complex type is `(x, 0.0)`.
//!
//! Operands are bound to `let`s first, so each is computed once. The result
//! is read back by the runtime through the kernel's own type, where a
//! complex number is two consecutive fields of its record; a stored
//! tensor's complex values are two fields of the values buffer
//! ([`fields_of`]). So no loop program ever holds a complex scalar.
//!
//! A vector of `w` complex numbers (`<complex<f64>>4`) is `w` pairs: this
//! pass runs after [`vectors::with_lanes`](super::vectors::with_lanes), which
//! has made each vector the tuple of its lanes, so a vector of complex
//! numbers arrives here as a tuple of complex scalars and leaves as a tuple
//! of pairs, the layout of the complex array it was grouped from (`asVector`
//! gathers `w` consecutive two-field records; `asScalar` picks one pair).
//! Arithmetic between such tuples (`+ - * /`, unary `-`) can only be a
//! vector's lane-by-lane arithmetic (the checker refuses it on tuples), and
//! is rewritten lane by lane with the scalar formulas; `==` / `!=` on
//! vectors stay as they are, for lowering to refuse as on real vectors.

use super::unsupported;
use heddle_ir::expr::{BinOp, UnOp};
use heddle_ir::{Diagnostic, Name, ScalarType, Span, Type};
use heddle_typeck::{Kernel, KernelParam, TExpr, TKind, TLit};
use std::collections::HashSet;

/// The complex scalar type `ty` holds anywhere (in a tuple, an array, a
/// tensor's elements, a function's types), if any.
fn complex_in(ty: &Type) -> Option<ScalarType> {
    match ty {
        Type::Scalar(s) => s.is_complex().then_some(*s),
        Type::Tensor(t) => t.elem.is_complex().then_some(t.elem),
        Type::Tuple(ts) => ts.iter().find_map(complex_in),
        Type::Array { elem, .. } | Type::Vector { elem, .. } => complex_in(elem),
        Type::Fun { from, to, .. } => complex_in(from).or_else(|| complex_in(to)),
        Type::NatFun { body, .. } => complex_in(body),
        Type::Meta(_) => None,
    }
}

/// `t` with every complex scalar replaced by the pair of its parts (a
/// tensor type keeps its element type: its values buffer is a parameter
/// of its own, relabelled as an array).
pub fn pairs_type(t: &Type) -> Type {
    match t {
        Type::Scalar(s) if s.is_complex() => Type::Tuple(vec![Type::Scalar(s.part()); 2]),
        Type::Array { binder, elem, len } => {
            Type::Array { binder: binder.clone(), elem: Box::new(pairs_type(elem)), len: len.clone() }
        }
        Type::Vector { elem, width } => Type::Vector { elem: Box::new(pairs_type(elem)), width: width.clone() },
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(pairs_type).collect()),
        Type::Fun { param, from, to } => {
            Type::Fun { param: param.clone(), from: Box::new(pairs_type(from)), to: Box::new(pairs_type(to)) }
        }
        Type::NatFun { var, body } => Type::NatFun { var: var.clone(), body: Box::new(pairs_type(body)) },
        Type::Scalar(_) | Type::Tensor(_) | Type::Meta(_) => t.clone(),
    }
}

/// The record fields a scalar of type `s` takes in a buffer: one, or a
/// complex number's two parts.
pub fn fields_of(s: ScalarType) -> Vec<ScalarType> {
    if s.is_complex() { vec![s.part(); 2] } else { vec![s] }
}

fn mentions_complex(e: &TExpr) -> bool {
    let mut found = complex_in(&e.ty).is_some();
    if let TKind::Lambda { params, .. } = &e.kind {
        found |= params.iter().any(|(_, t)| complex_in(t).is_some());
    }
    e.for_each_child(&mut |c| found |= mentions_complex(c));
    found
}

/// The kernel as lowering sees it: `None` when it has no complex numbers,
/// else a copy with each complex type replaced by the pair of its parts and
/// each complex operation by float arithmetic on them. Runs after
/// `vectors::with_lanes` (a vector is already the tuple of its lanes).
pub fn with_pairs(kernel: &Kernel) -> Result<Option<Kernel>, Diagnostic> {
    let params_mention = kernel.params.iter().any(|p| match p {
        KernelParam::Value { ty, .. } | KernelParam::Tensor { ty, .. } => complex_in(ty).is_some(),
        KernelParam::Nat(_) => false,
    });
    if !params_mention && !mentions_complex(&kernel.body) {
        return Ok(None);
    }
    let mut expander = Expander { used: HashSet::new() };
    expander.collect_names(kernel);
    let mut k = kernel.clone();
    for p in &mut k.params {
        match p {
            KernelParam::Value { ty, .. } => *ty = pairs_type(ty),
            KernelParam::Tensor { view, .. } => *view = pairs_type(view),
            KernelParam::Nat(_) => {}
        }
    }
    k.body = expander.expand(&kernel.body)?;
    k.ty = pairs_type(&k.ty);
    Ok(Some(k))
}

/// Rewrites complex operations; knows the names the kernel uses, so the
/// `let`s it adds are fresh.
struct Expander {
    used: HashSet<Name>,
}

/// The part type of a complex type.
fn part_of(ty: &Type) -> Option<ScalarType> {
    ty.as_scalar().filter(|s| s.is_complex()).map(ScalarType::part)
}

/// The part type and width of a vector of complex numbers as
/// `vectors::with_lanes` left it: a tuple of `w` complex scalars of one type.
fn complex_lanes(ty: &Type) -> Option<(ScalarType, usize)> {
    let Type::Tuple(lanes) = ty else { return None };
    let part = part_of(lanes.first()?)?;
    lanes.iter().all(|t| part_of(t) == Some(part)).then_some((part, lanes.len()))
}

fn node(kind: TKind, ty: Type, span: Span) -> TExpr {
    TExpr { kind, ty, span }
}

impl Expander {
    fn collect_names(&mut self, kernel: &Kernel) {
        fn referenced(t: &TExpr, used: &mut HashSet<Name>) {
            if let TKind::Var(x) = &t.kind {
                used.insert(x.clone());
            }
            t.for_each_child(&mut |c| referenced(c, used));
        }
        self.used.extend(kernel.params.iter().map(|p| p.name().clone()));
        super::bound_names(&kernel.body, &mut self.used);
        referenced(&kernel.body, &mut self.used);
    }

    fn fresh(&mut self) -> Name {
        let n = heddle_ir::nat::fresh_name(&Name::from("cplx"), |n| self.used.contains(n));
        self.used.insert(n.clone());
        n
    }

    /// `e` with complex types as pairs and complex operations as float arithmetic.
    fn expand(&mut self, e: &TExpr) -> Result<TExpr, Diagnostic> {
        let span = e.span;
        match &e.kind {
            TKind::Lit(l) if let Some(part) = part_of(&e.ty) => {
                let re = match l {
                    TLit::Int(v) => *v as f64,
                    TLit::Float(v) => *v,
                    TLit::Bool(_) => return Err(super::bug(span, "a boolean literal of a complex type")),
                };
                Ok(pair(float(re, part, span), float(0.0, part, span), part, span))
            }
            TKind::Binary { op, lhs, rhs } if let Some(part) = part_of(&lhs.ty) => {
                if part_of(&rhs.ty) != Some(part) {
                    return Err(super::bug(span, &format!("`{}` between {} and {}", op.symbol(), lhs.ty, rhs.ty)));
                }
                let (a, b) = (self.expand(lhs)?, self.expand(rhs)?);
                self.bind(a, |cx, x| {
                    cx.bind(b, |cx, y| cx.arithmetic(*op, (parts(&x, part, span), parts(&y, part, span)), part, span))
                })
            }
            TKind::Binary { op: op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), lhs, rhs }
                if let Some((part, w)) = complex_lanes(&lhs.ty) =>
            {
                if complex_lanes(&rhs.ty) != Some((part, w)) {
                    return Err(super::bug(span, &format!("`{}` between {} and {}", op.symbol(), lhs.ty, rhs.ty)));
                }
                let (a, b) = (self.expand(lhs)?, self.expand(rhs)?);
                self.bind(a, |cx, x| {
                    cx.bind(b, |cx, y| {
                        let lanes = (0..w)
                            .map(|k| {
                                let (xk, yk) = (lane(&x, k, part, span), lane(&y, k, part, span));
                                cx.arithmetic(*op, (parts(&xk, part, span), parts(&yk, part, span)), part, span)
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok(lanes_of(lanes, span))
                    })
                })
            }
            TKind::Unary { op: UnOp::Neg, operand } if let Some((part, w)) = complex_lanes(&operand.ty) => {
                let v = self.expand(operand)?;
                self.bind(v, |_, v| {
                    let lanes = (0..w)
                        .map(|k| {
                            let (re, im) = parts(&lane(&v, k, part, span), part, span);
                            pair(neg(re, part), neg(im, part), part, span)
                        })
                        .collect();
                    Ok(lanes_of(lanes, span))
                })
            }
            TKind::Unary { op: UnOp::Neg, operand } if let Some(part) = part_of(&operand.ty) => {
                let z = self.expand(operand)?;
                self.bind(z, |_, z| {
                    let (re, im) = parts(&z, part, span);
                    Ok(pair(neg(re, part), neg(im, part), part, span))
                })
            }
            TKind::Prim { name: "complex", args, .. } if args.len() == 2 => {
                let part = args[0]
                    .ty
                    .as_scalar()
                    .ok_or_else(|| super::bug(span, "`complex` of parts that are not scalars"))?;
                Ok(pair(self.expand(&args[0])?, self.expand(&args[1])?, part, span))
            }
            TKind::Prim { name: name @ ("re" | "im" | "conj"), args, .. } if args.len() == 1 => {
                let part =
                    part_of(&args[0].ty).ok_or_else(|| super::bug(span, &format!("`{name}` of {}", args[0].ty)))?;
                let z = self.expand(&args[0])?;
                match *name {
                    "re" => Ok(proj(z, 0, part, span)),
                    "im" => Ok(proj(z, 1, part, span)),
                    _ => self.bind(z, |_, z| {
                        let (re, im) = parts(&z, part, span);
                        Ok(pair(re, neg(im, part), part, span))
                    }),
                }
            }
            _ => {
                let mut out = e.clone();
                out.ty = pairs_type(&e.ty);
                if let TKind::Lambda { params, .. } = &mut out.kind {
                    for (_, t) in params.iter_mut() {
                        *t = pairs_type(t);
                    }
                }
                let mut failure = None;
                out.for_each_child_mut(&mut |c| {
                    if failure.is_none() {
                        match self.expand(c) {
                            Ok(x) => *c = x,
                            Err(d) => failure = Some(d),
                        }
                    }
                });
                failure.map_or(Ok(out), Err)
            }
        }
    }

    /// `let x = value in body(x)`, or `body(value)` when `value` is a
    /// variable (nothing to compute twice).
    fn bind(
        &mut self,
        value: TExpr,
        body: impl FnOnce(&mut Self, TExpr) -> Result<TExpr, Diagnostic>,
    ) -> Result<TExpr, Diagnostic> {
        if matches!(value.kind, TKind::Var(_)) {
            return body(self, value);
        }
        let name = self.fresh();
        let var = node(TKind::Var(name.clone()), value.ty.clone(), value.span);
        let inner = body(self, var)?;
        let (ty, span) = (inner.ty.clone(), inner.span);
        Ok(node(TKind::Let { name, value: Box::new(value), body: Box::new(inner) }, ty, span))
    }

    /// `x op y` on complex numbers given as their parts, with the
    /// interpreter's formulas (`launch::complex_bin`).
    fn arithmetic(
        &mut self,
        op: BinOp,
        ((a, b), (c, d)): ((TExpr, TExpr), (TExpr, TExpr)),
        part: ScalarType,
        span: Span,
    ) -> Result<TExpr, Diagnostic> {
        let f = |op, x: &TExpr, y: &TExpr| bin(op, x.clone(), y.clone(), part, span);
        Ok(match op {
            BinOp::Add | BinOp::Sub => pair(f(op, &a, &c), f(op, &b, &d), part, span),
            BinOp::Mul => {
                let re = f(BinOp::Sub, &f(BinOp::Mul, &a, &c), &f(BinOp::Mul, &b, &d));
                let im = f(BinOp::Add, &f(BinOp::Mul, &a, &d), &f(BinOp::Mul, &b, &c));
                pair(re, im, part, span)
            }
            BinOp::Div => {
                let denominator = f(BinOp::Add, &f(BinOp::Mul, &c, &c), &f(BinOp::Mul, &d, &d));
                self.bind(denominator, |_, den| {
                    let re = f(BinOp::Add, &f(BinOp::Mul, &a, &c), &f(BinOp::Mul, &b, &d));
                    let im = f(BinOp::Sub, &f(BinOp::Mul, &b, &c), &f(BinOp::Mul, &a, &d));
                    Ok(pair(f(BinOp::Div, &re, &den), f(BinOp::Div, &im, &den), part, span))
                })?
            }
            BinOp::Eq | BinOp::Ne => {
                let (each, both) = if op == BinOp::Eq { (BinOp::Eq, BinOp::And) } else { (BinOp::Ne, BinOp::Or) };
                let boolean = Type::Scalar(ScalarType::Bool);
                let x = node(TKind::Binary { op: each, lhs: Box::new(a), rhs: Box::new(c) }, boolean.clone(), span);
                let y = node(TKind::Binary { op: each, lhs: Box::new(b), rhs: Box::new(d) }, boolean.clone(), span);
                node(TKind::Binary { op: both, lhs: Box::new(x), rhs: Box::new(y) }, boolean, span)
            }
            other => return Err(unsupported(span, &format!("`{}` on complex numbers", other.symbol()))),
        })
    }
}

fn float(v: f64, part: ScalarType, span: Span) -> TExpr {
    node(TKind::Lit(TLit::Float(v)), Type::Scalar(part), span)
}

fn pair(re: TExpr, im: TExpr, part: ScalarType, span: Span) -> TExpr {
    node(TKind::Tuple(vec![re, im]), Type::Tuple(vec![Type::Scalar(part); 2]), span)
}

fn proj(z: TExpr, index: usize, part: ScalarType, span: Span) -> TExpr {
    node(TKind::Proj { tuple: Box::new(z), index }, Type::Scalar(part), span)
}

/// The real and imaginary parts of the pair `z` (a variable).
fn parts(z: &TExpr, part: ScalarType, span: Span) -> (TExpr, TExpr) {
    (proj(z.clone(), 0, part, span), proj(z.clone(), 1, part, span))
}

/// Lane `k` of the vector `v` (a variable holding a tuple of pairs).
fn lane(v: &TExpr, k: usize, part: ScalarType, span: Span) -> TExpr {
    node(TKind::Proj { tuple: Box::new(v.clone()), index: k }, Type::Tuple(vec![Type::Scalar(part); 2]), span)
}

/// The vector of the given lanes (pairs): a tuple, as `with_lanes` sees vectors.
fn lanes_of(lanes: Vec<TExpr>, span: Span) -> TExpr {
    let ty = Type::Tuple(lanes.iter().map(|l| l.ty.clone()).collect());
    node(TKind::Tuple(lanes), ty, span)
}

fn neg(x: TExpr, part: ScalarType) -> TExpr {
    let span = x.span;
    node(TKind::Unary { op: UnOp::Neg, operand: Box::new(x) }, Type::Scalar(part), span)
}

fn bin(op: BinOp, x: TExpr, y: TExpr, part: ScalarType, span: Span) -> TExpr {
    node(TKind::Binary { op, lhs: Box::new(x), rhs: Box::new(y) }, Type::Scalar(part), span)
}

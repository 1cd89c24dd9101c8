//! The kernel header, well-formed types, and the whole-program entry point.

use crate::check::{CResult, Checker, show, unbound};
use crate::metas::MetaKind;
use crate::scope::{Binding, Scope};
use crate::typed::{Kernel, KernelParam, TExpr, TKind};
use heddle_ir::encoding::{Encoding, Named, named, parse_encoding, storage_layout};
use heddle_ir::expr::{ExprKind, Program};
use heddle_ir::tensor::{EncodingRef, TensorType};
use heddle_ir::{Diagnostic, Expr, Name, Nat, Span, Type};
use std::collections::HashSet;
use std::rc::Rc;

impl Checker {
    /// Checks that a written type only uses naturals in scope, and that each
    /// `toNat` holds an integer expression over names in scope.
    pub fn well_formed(&mut self, t: &Type, scope: &Scope, span: Span) -> CResult<()> {
        match t {
            Type::Scalar(_) | Type::Meta(_) => Ok(()),
            Type::Tuple(ts) => ts.iter().try_for_each(|x| self.well_formed(x, scope, span)),
            Type::Array { binder, elem, len } => {
                self.nat_well_formed(len, scope, span)?;
                let inner = match binder {
                    Some(b) => scope.with(b.clone(), Binding::Nat),
                    None => scope.clone(),
                };
                self.well_formed(elem, &inner, span)
            }
            Type::Vector { elem, width } => {
                self.nat_well_formed(width, scope, span)?;
                self.well_formed(elem, scope, span)
            }
            Type::Tensor(_) => Err(Diagnostic::new(span, "a tensor type can only be the type of a kernel parameter")
                .with_label("inside the program a tensor is its view (nested position-dependent arrays)")),
            Type::Fun { from, to, .. } => {
                self.well_formed(from, scope, span)?;
                self.well_formed(to, scope, span)
            }
            Type::NatFun { var, body } => self.well_formed(body, &scope.with(var.clone(), Binding::Nat), span),
        }
    }

    pub(crate) fn nat_well_formed(&mut self, n: &Nat, scope: &Scope, span: Span) -> CResult<()> {
        match n {
            Nat::Var(x) => match scope.lookup(x) {
                Some(Binding::Nat) => Ok(()),
                Some(_) => {
                    Err(Diagnostic::new(span, format!("`{x}` is not a natural, so it cannot be used as a size"))
                        .with_label(format!("`{x}` is a value here; wrap a value in toNat(...)"))
                        .with_note(format!("focus:{x}")))
                }
                None => Err(Diagnostic::new(span, format!("unbound natural `{x}` in this type"))
                    .with_label(format!("`{x}` is not in scope here"))
                    .with_note(format!("focus:{x}"))),
            },
            Nat::Lit(_) | Nat::Meta(_) => Ok(()),
            Nat::ToNat(e) => {
                let t = self.infer(e, scope).map_err(|d| {
                    if d.message.starts_with("unbound variable") {
                        Diagnostic::new(
                            d.span,
                            format!("{} (a toNat may only use names in scope where it stands)", d.message),
                        )
                        .with_label(d.label)
                    } else {
                        d
                    }
                })?;
                let int = self.metas.fresh_type(MetaKind::Integer);
                self.unify_at(&int, &t.ty, e.span, "inside toNat (it lifts an integer expression)")
            }
            Nat::Sum { var, lo, hi, body } => {
                self.nat_well_formed(lo, scope, span)?;
                self.nat_well_formed(hi, scope, span)?;
                self.nat_well_formed(body, &scope.with(var.clone(), Binding::Nat), span)
            }
            Nat::Cond(c, a, b) => {
                let mut r = Ok(());
                c.for_each_nat(&mut |n| {
                    if r.is_ok() {
                        r = self.nat_well_formed(n, scope, span);
                    }
                });
                r?;
                self.nat_well_formed(a, scope, span)?;
                self.nat_well_formed(b, scope, span)
            }
            Nat::Bin(_, a, b) => {
                self.nat_well_formed(a, scope, span)?;
                self.nat_well_formed(b, scope, span)
            }
        }
    }

    /// Replaces solved unknowns in every type of a typed tree; fails on one left unsolved.
    pub fn zonk_tree(&self, t: &mut TExpr) -> CResult<()> {
        // Inferred lengths are shown and compared in normal form (`(n + 2 - 3) / 1 + 1` is `n`).
        t.ty = self.metas.zonk(&t.ty).map_nats(&mut |n| if n.has_meta() { n.clone() } else { n.normalize() });
        if has_type_meta(&t.ty) {
            return Err(Diagnostic::new(t.span, "cannot infer the type of this expression")
                .with_label(format!("its type is only known to be {}", show(&t.ty)))
                .with_note("add a type annotation `(e : T)`"));
        }
        let mut nat_meta = false;
        t.ty.for_each_nat(&mut |n| nat_meta |= n.has_meta());
        if nat_meta {
            return Err(Diagnostic::new(t.span, "cannot infer a length in the type of this expression")
                .with_label(format!("its type is {}", show(&t.ty))));
        }
        self.replan(t)?;
        match &mut t.kind {
            TKind::Lambda { params, .. } => {
                for (_, ty) in params.iter_mut() {
                    *ty = self.metas.zonk(ty);
                }
            }
            TKind::Prim { nats, .. } => {
                for n in nats.iter_mut() {
                    *n = self.metas.zonk_nat(n);
                }
            }
            _ => {}
        }
        let mut result = Ok(());
        t.for_each_child_mut(&mut |c| {
            if result.is_ok() {
                result = self.zonk_tree(c);
            }
        });
        result
    }
}

fn has_type_meta(t: &Type) -> bool {
    match t {
        Type::Meta(_) => true,
        Type::Scalar(_) | Type::Tensor(_) => false,
        Type::Tuple(ts) => ts.iter().any(has_type_meta),
        Type::Array { elem, .. } | Type::Vector { elem, .. } => has_type_meta(elem),
        Type::Fun { from, to, .. } => has_type_meta(from) || has_type_meta(to),
        Type::NatFun { body, .. } => has_type_meta(body),
    }
}

/// Type-checks a program: resolves every name, then checks the kernel with
/// the definitions inlined at their uses.
pub fn check_program(p: &Program) -> Result<Kernel, Vec<Diagnostic>> {
    let errors = resolve(p);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut checker = Checker::new(all_names(p));
    checker.encodings = p.encodings.clone();
    let mut scope = Scope::default();
    for d in &p.defs {
        scope = scope.with(d.name.clone(), Binding::Macro(Rc::new(d.value.clone()), scope.clone()));
    }
    check_kernel(&mut checker, p, scope).map_err(|d| vec![d])
}

/// The encoding of a tensor type: `#NAME` (defined in the file, else one of
/// the built-in names: `#CSR`, …), written in place (an MLIR attribute or a
/// name form: `CSR`, `BSR(2, 3)`, `ds:1,0`), or none (a dense tensor, stored
/// row-major).
pub(crate) fn tensor_encoding(defs: &[heddle_ir::expr::EncodingDef], tt: &TensorType, span: Span) -> CResult<Encoding> {
    let rank = Some(tt.dims.len());
    match &tt.encoding {
        Some(EncodingRef::Named(n, at)) => match defs.iter().rev().find(|d| &d.name == n) {
            Some(def) => named::resolve(&def.encoding.text, def.encoding.span.start as usize, rank),
            None if matches!(Named::parse(n.as_str()), Some(Ok(_))) => {
                named::resolve(n.as_str(), at.start as usize + 1, rank)
            }
            None => {
                let defined: Vec<String> = defs.iter().map(|d| format!("#{}", d.name)).collect();
                let mut d = Diagnostic::new(*at, format!("unknown encoding `#{n}`"))
                    .with_label("define it with `#NAME = #sparse_tensor.encoding<{...}>`")
                    .with_note(format!(
                        "built-in names: {}; or TACO's level letters (`ds`, `ds:1,0`)",
                        named::NAMES.join(", ")
                    ));
                let candidates =
                    defined.iter().map(String::as_str).chain(["#CSR", "#CSC", "#COO", "#DCSR", "#DCSC", "#CSF"]);
                if let Some(s) = heddle_ir::suggest::closest(&format!("#{n}"), candidates) {
                    d = d.with_note(format!("did you mean `{s}`?"));
                }
                Err(d)
            }
        },
        Some(EncodingRef::Inline(text)) => named::resolve(&text.text, text.span.start as usize, rank),
        None => {
            let dims: Vec<String> = (0..tt.dims.len()).map(|d| format!("d{d}")).collect();
            let levels: Vec<String> = dims.iter().map(|d| format!("{d} : dense")).collect();
            let text = format!("#sparse_tensor.encoding<{{ map = ({}) -> ({}) }}>", dims.join(", "), levels.join(", "));
            parse_encoding(&text, 0).map_err(|d| Diagnostic::new(span, d.message))
        }
    }
}

fn check_kernel(c: &mut Checker, program: &Program, mut scope: Scope) -> CResult<Kernel> {
    let e = &program.kernel;
    let mut params = Vec::new();
    let mut views: Vec<(Name, Expr, Type)> = Vec::new();
    let mut cur = e;
    loop {
        match &cur.kind {
            ExprKind::NFun { var, body } => {
                params.push(KernelParam::Nat(var.clone()));
                scope = scope.with(var.clone(), Binding::Nat);
                cur = body;
            }
            ExprKind::Fun { params: ps, body } => {
                for p in ps {
                    let Some(ty) = &p.ty else {
                        return Err(Diagnostic::new(
                            p.span,
                            format!("kernel parameter `{}` needs a type annotation", p.name),
                        )
                        .with_label(format!("write `{}: T`, e.g. `{}: [float]_n`", p.name, p.name)));
                    };
                    if let Type::Tensor(tt) = ty {
                        let enc = tensor_encoding(&program.encodings, tt, p.span)?;
                        let dims = tt.static_dims().map_err(|n| {
                            Diagnostic::new(
                                p.span,
                                format!("a tensor parameter's sizes are `?` or numbers, not `{{{n}}}`"),
                            )
                            .with_label("its sizes become naturals of their own (`A_dim0`, …)")
                        })?;
                        let layout = storage_layout(&enc, &dims, tt.elem, p.name.as_str())?;
                        for n in &layout.nat_vars {
                            params.push(KernelParam::Nat(n.clone()));
                            scope = scope.with(n.clone(), Binding::Nat);
                        }
                        for b in &layout.buffers {
                            params.push(KernelParam::Value { name: b.name.clone(), ty: b.ty.clone(), span: p.span });
                            scope = scope.with(b.name.clone(), Binding::Value(b.ty.clone()));
                        }
                        c.well_formed(&layout.view, &scope, p.span)?;
                        params.push(KernelParam::Tensor {
                            name: p.name.clone(),
                            ty: ty.clone(),
                            view: layout.view.clone(),
                            encoding: enc.clone(),
                            span: p.span,
                        });
                        // `A` is bound to the view built from the storage buffers (see
                        // `tensor.rs`), but the body sees it at the declared, position-dependent
                        // view type: `generate` cannot state that an element's type depends on
                        // its index, so the expression's own type would name the generate's
                        // parameter out of its scope. A tensor the runtime cannot view yet
                        // still type-checks against the declared view.
                        if let Ok(view) = crate::tensor::view_expr(&enc, &layout, &p.name, p.span) {
                            views.push((p.name.clone(), view, layout.view.clone()));
                        }
                        scope = scope.with(p.name.clone(), Binding::Value(layout.view));
                        continue;
                    }
                    c.well_formed(ty, &scope, p.span)?;
                    params.push(KernelParam::Value { name: p.name.clone(), ty: ty.clone(), span: p.span });
                    scope = scope.with(p.name.clone(), Binding::Value(ty.clone()));
                }
                cur = body;
            }
            _ => break,
        }
    }
    // `let A = view in body` for each tensor parameter, innermost last; the
    // let's value is the view expression, typed as the declared view.
    let mut body = c.infer(cur, &scope)?;
    for (name, view, declared) in views.into_iter().rev() {
        let mut value = c.infer(&view, &scope)?;
        value.ty = declared;
        let (ty, span) = (body.ty.clone(), cur.span);
        body =
            crate::TExpr { kind: crate::TKind::Let { name, value: Box::new(value), body: Box::new(body) }, ty, span };
    }
    c.metas.default_literals();
    c.zonk_tree(&mut body)?;
    let ty = params.iter().rev().fold(body.ty.clone(), |acc, p| match p {
        KernelParam::Nat(n) => Type::NatFun { var: n.clone(), body: Box::new(acc) },
        KernelParam::Value { name, ty, .. } | KernelParam::Tensor { name, ty, .. } => {
            let later_mention = acc.mentions(name);
            Type::Fun { param: later_mention.then(|| name.clone()), from: Box::new(ty.clone()), to: Box::new(acc) }
        }
    });
    // An obligation over the parameters alone is checked before the kernel runs;
    // one that mentions names bound inside it (a row's length `toNat(offsets@(i + 1) - …)`
    // inside a map over rows, a lambda's parameter) cannot be, and the pattern
    // checks it where it runs instead (`split`: a located run-time error).
    let param_names: HashSet<Name> = params
        .iter()
        .map(|p| match p {
            KernelParam::Nat(n) => n.clone(),
            KernelParam::Value { name, .. } | KernelParam::Tensor { name, .. } => name.clone(),
        })
        .collect();
    let obligations = std::mem::take(&mut c.obligations)
        .into_iter()
        .map(|mut o| {
            o.cond = o.cond.map_nats(&mut |n| c.metas.zonk_nat(n));
            o
        })
        .filter(|o| {
            let mut names = Vec::new();
            o.cond.for_each_nat(&mut |n| free_names(n, &mut Vec::new(), &mut names));
            names.iter().all(|x| param_names.contains(x))
        })
        .collect();
    Ok(Kernel { params, body, ty, obligations })
}

/// The names a natural mentions (variables and names inside `toNat`), Σ indices excluded.
fn free_names(n: &Nat, bound: &mut Vec<Name>, out: &mut Vec<Name>) {
    fn expr(e: &Expr, bound: &mut Vec<Name>, out: &mut Vec<Name>) {
        match &e.kind {
            ExprKind::Var(x) if !bound.contains(x) => out.push(x.clone()),
            ExprKind::NatValue(n) => free_names(n, bound, out),
            _ => e.for_each_child(&mut |c| expr(c, bound, out)),
        }
    }
    match n {
        Nat::Var(x) if !bound.contains(x) => out.push(x.clone()),
        Nat::Sum { var, lo, hi, body } => {
            free_names(lo, bound, out);
            free_names(hi, bound, out);
            bound.push(var.clone());
            free_names(body, bound, out);
            bound.pop();
        }
        Nat::ToNat(e) => expr(e, bound, out),
        _ => n.for_each_child(&mut |c| free_names(c, bound, out)),
    }
}

/// Reports every unbound name in the program (also in unused definitions).
pub fn resolve(p: &Program) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    // A set: files of many definitions must not take time quadratic in their number.
    let mut globals: HashSet<Name> = HashSet::new();
    for d in &p.defs {
        resolve_expr(&d.value, &mut Vec::new(), &globals, &mut errors);
        if !globals.insert(d.name.clone()) {
            errors.push(
                Diagnostic::new(d.span, format!("`{}` is defined twice", d.name)).with_label("second definition"),
            );
        }
    }
    resolve_expr(&p.kernel, &mut Vec::new(), &globals, &mut errors);
    errors
}

/// Walks `e` with the names bound around it: `scope` (innermost last) and
/// the definitions before it.
fn resolve_expr(e: &Expr, scope: &mut Vec<Name>, globals: &HashSet<Name>, errors: &mut Vec<Diagnostic>) {
    match &e.kind {
        ExprKind::Var(x) => {
            if !scope.contains(x) && !globals.contains(x) && heddle_ir::prims::lookup(x.as_str()).is_none() {
                errors.push(unbound(x, e.span, scope.iter().chain(globals.iter()).map(|n| n.as_str())));
            }
        }
        ExprKind::Fun { params, body } => {
            let n = scope.len();
            scope.extend(params.iter().map(|p| p.name.clone()));
            // A tensor parameter brings its dimensions and storage buffers into
            // scope (`A_dim0`, `A_pos1`, …); which buffers depends on the
            // encoding, so this pass admits the parameter's prefix and leaves
            // the exact names to the type checker, which reports them located.
            let tensors: Vec<String> = params
                .iter()
                .filter(|p| matches!(p.ty, Some(Type::Tensor(_))))
                .map(|p| format!("{}_", p.name))
                .collect();
            if !tensors.is_empty() {
                let mut errs = Vec::new();
                resolve_expr(body, scope, globals, &mut errs);
                errors.extend(
                    errs.into_iter()
                        .filter(|d| !tensors.iter().any(|t| d.message.starts_with(&format!("unbound variable `{t}")))),
                );
                scope.truncate(n);
                return;
            }
            resolve_expr(body, scope, globals, errors);
            scope.truncate(n);
        }
        ExprKind::NFun { var, body } => {
            scope.push(var.clone());
            resolve_expr(body, scope, globals, errors);
            scope.pop();
        }
        ExprKind::Let { name, value, body } => {
            resolve_expr(value, scope, globals, errors);
            scope.push(name.clone());
            resolve_expr(body, scope, globals, errors);
            scope.pop();
        }
        _ => e.for_each_child(&mut |c| resolve_expr(c, scope, globals, errors)),
    }
}

fn all_names(p: &Program) -> HashSet<Name> {
    fn walk(e: &Expr, out: &mut HashSet<Name>) {
        match &e.kind {
            ExprKind::Var(x) => {
                out.insert(x.clone());
            }
            ExprKind::Fun { params, .. } => {
                for p in params {
                    out.insert(p.name.clone());
                    if let Some(t) = &p.ty {
                        type_names(t, out);
                    }
                }
            }
            ExprKind::NFun { var, .. } | ExprKind::Let { name: var, .. } => {
                out.insert(var.clone());
            }
            ExprKind::Annot { ty, .. } => type_names(ty, out),
            _ => {}
        }
        e.for_each_child(&mut |c| walk(c, out));
    }
    fn type_names(t: &Type, out: &mut HashSet<Name>) {
        if let Type::Array { binder: Some(b), .. } = t {
            out.insert(b.clone());
        }
        match t {
            Type::Tuple(ts) => ts.iter().for_each(|t| type_names(t, out)),
            Type::Array { elem, .. } => type_names(elem, out),
            _ => {}
        }
        t.for_each_nat(&mut |n| nat_names(n, out));
    }
    fn nat_names(n: &Nat, out: &mut HashSet<Name>) {
        match n {
            Nat::Var(x) => {
                out.insert(x.clone());
            }
            Nat::Sum { var, .. } => {
                out.insert(var.clone());
            }
            Nat::ToNat(e) => walk(e, out),
            _ => {}
        }
        n.for_each_child(&mut |c| nat_names(c, out));
    }
    let mut out = HashSet::new();
    for d in &p.defs {
        out.insert(d.name.clone());
        walk(&d.value, &mut out);
    }
    walk(&p.kernel, &mut out);
    out
}

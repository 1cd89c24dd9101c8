//! Lowering expressions, primitives, and writing results to buffers.

use super::numbers;
use super::view::ViewKind;
use super::{Env, Lowerer, Val, View, bug, unsupported};
use heddle_ir::expr::UnOp;
use heddle_ir::loops::{BinOp, Block, Expr as L, Schedule, Space, Stmt};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Span, Type};
use heddle_typeck::{TExpr, TKind, TLit};

/// The record fields of an array's leaf elements: a scalar, or a tuple of
/// scalars and tuples (nested tuples are laid out flat, leaves in order).
pub fn leaf_fields(ty: &Type, span: Span) -> Result<Vec<ScalarType>, Diagnostic> {
    fn leaves(t: &Type, out: &mut Vec<ScalarType>) -> bool {
        match t {
            Type::Scalar(s) => {
                out.push(*s);
                true
            }
            Type::Tuple(ts) => ts.iter().all(|t| leaves(t, out)),
            _ => false,
        }
    }
    let leaf = match ty {
        Type::Array { elem, .. } => return leaf_fields(elem, span),
        t => t,
    };
    let mut out = Vec::new();
    if leaves(leaf, &mut out) { Ok(out) } else { Err(unsupported(span, &format!("buffers of {leaf}"))) }
}

/// The output buffer's record fields and record count for a result type.
pub fn output_shape(ty: &Type, facts: &crate::Facts, span: Span) -> Result<(Vec<ScalarType>, Nat), Diagnostic> {
    let fields = leaf_fields(ty, span)?;
    let count = match ty {
        Type::Array { .. } => {
            crate::flat_size(ty).map_err(|e| unsupported(span, &format!("the layout of the result: {e}")))?
        }
        _ => Nat::Lit(1),
    };
    let count = crate::simplify(&count, facts, &crate::Limits::from_env()).nat;
    Ok((fields, count))
}

impl Lowerer<'_> {
    /// Lowers a typed expression to a value, emitting the work it needs into `body`.
    pub(super) fn expr(&mut self, t: &TExpr, env: &Env, body: &mut Block) -> Result<Val, Diagnostic> {
        let ty = self.program_values_in_type(&env.subst_type(&t.ty), env);
        match &t.kind {
            TKind::Var(x) => env.value(x).cloned().ok_or_else(|| bug(t.span, &format!("the variable `{x}` here"))),
            TKind::NatValue(n) => {
                let s = ty.as_scalar().unwrap_or(ScalarType::I64);
                let e = self.index_expr(n, env, body)?;
                Ok(Val::Scalar(numbers::convert(e, ScalarType::I64, s), s))
            }
            TKind::Lit(l) => {
                let s = ty.as_scalar().unwrap_or(ScalarType::I32);
                Ok(Val::Scalar(
                    match l {
                        TLit::Int(v) if s.is_float() => L::Float(*v as f64, s),
                        TLit::Int(v) => L::Int(*v, s),
                        TLit::Float(v) => L::Float(*v, s),
                        TLit::Bool(b) => L::Bool(*b),
                    },
                    s,
                ))
            }
            TKind::Lambda { .. } => Err(unsupported(t.span, "a function used as data")),
            TKind::Let { name, value, body: inner } => {
                let v = self.expr(value, env, body)?;
                let v = self.share(v, name.as_str(), body);
                self.expr(inner, &env.with(name.clone(), v), body)
            }
            TKind::Index { array, index } => {
                let Val::Array(a) = self.expr(array, env, body)? else {
                    return Err(bug(t.span, "indexing a non-array"));
                };
                let Val::Scalar(i, s) = self.expr(index, env, body)? else {
                    return Err(bug(index.span, "a non-scalar index"));
                };
                let k = self.bind_index(super::nats::widen(i, s), "idx", body);
                let what = match &array.kind {
                    TKind::Var(x) => format!("`{x}`"),
                    _ => "an array".to_string(),
                };
                if super::stream::is_stream(&a) {
                    // Its length is counted only by walking it (`stream.rs`).
                    return self.index_stream(&a, &k, &t.ty, &what, env, t.span, body);
                }
                // `concat` with a stream among its parts: the streams stored first
                // (with their counts), so the parts can be indexed.
                let a = match appended_parts(&a) {
                    Some((x, y)) if super::scatter::walked(&a) => {
                        let mut known = Vec::new();
                        let x = self.settle(x, env, array.span, body, &mut known)?;
                        let y = self.settle(y, env, array.span, body, &mut known)?;
                        View {
                            ty: with_counts_known(&a.ty, &known),
                            kind: ViewKind::Appended { a: Box::new(x), b: Box::new(y) },
                        }
                    }
                    _ => a,
                };
                self.bounds_check(&k, &a.len(), &what, t.span, body)?;
                self.elem(&a, &k, body)
            }
            TKind::Proj { tuple, index } => match self.expr(tuple, env, body)? {
                Val::Tuple(mut items) if *index < items.len() => Ok(items.swap_remove(*index)),
                _ => Err(bug(t.span, "a projection of a non-tuple")),
            },
            TKind::Tuple(items) => {
                Ok(Val::Tuple(items.iter().map(|x| self.expr(x, env, body)).collect::<Result<_, _>>()?))
            }
            TKind::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs, t.span, env, body),
            TKind::Unary { op, operand } => {
                let unary = |a: L, s: ScalarType, declared: Option<ScalarType>| match op {
                    UnOp::Neg => match numbers::wrapped_at(s, declared) {
                        // Negated whole, then wrapped at the checker's type (as the interpreter does).
                        Some(d) => Val::Scalar(
                            numbers::convert(
                                L::Neg(Box::new(numbers::convert(a, s, ScalarType::I64))),
                                ScalarType::I64,
                                d,
                            ),
                            d,
                        ),
                        // The program's own `i64` negation wraps (`numbers`).
                        None if s == ScalarType::I64
                            && declared == Some(ScalarType::I64)
                            && self.options.wrapping_i64 =>
                        {
                            Val::Scalar(numbers::wrapping_neg(a), s)
                        }
                        None => Val::Scalar(L::Neg(Box::new(a)), s),
                    },
                    UnOp::Not => Val::Scalar(L::Not(Box::new(a)), s),
                };
                match self.expr(operand, env, body)? {
                    Val::Scalar(a, s) => Ok(unary(a, s, operand.ty.as_scalar())),
                    // A vector (the tuple of its lanes, `vectors.rs`): lane by lane.
                    Val::Tuple(lanes) if matches!(&operand.ty, Type::Tuple(ts) if ts.iter().all(|t| t.as_scalar().is_some())) =>
                    {
                        let Type::Tuple(ts) = &operand.ty else { unreachable!("matched above") };
                        let mut out = Vec::new();
                        for (x, t) in lanes.into_iter().zip(ts) {
                            let Val::Scalar(a, s) = x else {
                                return Err(bug(operand.span, "a vector lane that is not a scalar"));
                            };
                            out.push(unary(a, s, t.as_scalar()));
                        }
                        Ok(Val::Tuple(out))
                    }
                    _ => Err(unsupported(t.span, "a unary operator on a non-scalar")),
                }
            }
            TKind::Select { cond, then, els } => {
                let Val::Scalar(c, _) = self.expr(cond, env, body)? else {
                    return Err(bug(cond.span, "`select` on a non-boolean"));
                };
                self.select(c, then, els, env, t.span, body)
            }
            TKind::Prim { name, nats, args, binder } => {
                self.prim(name, nats, args, binder.as_ref(), &ty, env, t.span, body)
            }
            // A stored tensor is assembled by the host after the kernel (see assemble.rs).
            TKind::Assemble { .. } => Err(unsupported(
                t.span,
                "a stored tensor used inside the kernel (it can be the kernel's result or a component of it)",
            )),
        }
    }

    /// Types may mention program values inside `toNat` (`values@i` has length
    /// `toNat(offset@(toNat(i) + 1) - …)` for a lambda parameter `i`): those
    /// names are replaced by the `let`s that hold the values here.
    pub(super) fn program_values_in_type(&self, ty: &Type, env: &Env) -> Type {
        // The names are replaced simultaneously: each first by a placeholder no
        // program can spell, then the placeholders by the lets. (One after the
        // other, a let named like an outer parameter — `i2` held by the let `i1`
        // while the parameter `i1` is held by `i` — would be replaced again.)
        let mut ty = ty.clone();
        let mut lets: Vec<(Name, Name)> = Vec::new();
        let placeholder = |local: &Name, lets: &mut Vec<(Name, Name)>| {
            let p = Name::from(format!("\u{1}{}", lets.len()));
            lets.push((p.clone(), local.clone()));
            p
        };
        for (name, v) in env.values.iter().rev() {
            if !ty.mentions(name) {
                continue;
            }
            match v {
                Val::Scalar(L::Var(local), _) if local != name => {
                    let to = heddle_ir::Expr::var(placeholder(local, &mut lets));
                    ty = ty.map_nats(&mut |n| n.subst_expr(name, &to));
                }
                // A tuple's components (`a.1` in `B@a.1`'s length) by the lets that hold them.
                Val::Tuple(items) => {
                    let items: Vec<Val> = items
                        .iter()
                        .map(|x| match x {
                            Val::Scalar(L::Var(local), s) => Val::Scalar(L::Var(placeholder(local, &mut lets)), *s),
                            other => other.clone(),
                        })
                        .collect();
                    ty = ty.map_nats(&mut |n| {
                        n.map_bottom_up(&mut |m| match m {
                            Nat::ToNat(mut e) => {
                                replace_projections(&mut e, name, &items);
                                Nat::ToNat(e)
                            }
                            other => other,
                        })
                    });
                }
                _ => {}
            }
        }
        for (p, local) in &lets {
            if ty.mentions(p) {
                let to = heddle_ir::Expr::var(local.clone());
                ty = ty.map_nats(&mut |n| n.subst_expr(p, &to));
            }
        }
        ty
    }

    /// Binds a computed scalar to a `let` so it is computed once.
    pub(super) fn share(&mut self, v: Val, base: &str, body: &mut Block) -> Val {
        match v {
            Val::Scalar(e @ (L::Var(_) | L::Int(..) | L::Float(..) | L::Bool(_)), s) => Val::Scalar(e, s),
            Val::Scalar(e, s) => {
                let var = self.fresh(base);
                self.var_types.push((var.clone(), s));
                body.push(Stmt::Let { var: var.clone(), ty: s, value: e });
                Val::Scalar(L::Var(var), s)
            }
            Val::Tuple(items) => Val::Tuple(items.into_iter().map(|x| self.share(x, base, body)).collect()),
            array => array,
        }
    }

    /// Applies a lambda to values.
    pub(super) fn apply(&mut self, f: &TExpr, args: Vec<Val>, env: &Env, body: &mut Block) -> Result<Val, Diagnostic> {
        let TKind::Lambda { params, body: fbody } = &f.kind else {
            return Err(bug(f.span, "applying a non-function"));
        };
        let mut inner = env.clone();
        for ((name, _), v) in params.iter().zip(args) {
            let v = match v {
                // An integer parameter gets its own `let` (a plain variable may be a
                // loop variable of another type, or shadowed), so types can name it.
                Val::Scalar(e @ L::Var(_), s) if s.is_int() => {
                    let var = self.fresh(name.as_str());
                    self.var_types.push((var.clone(), s));
                    body.push(Stmt::Let { var: var.clone(), ty: s, value: e });
                    Val::Scalar(L::Var(var), s)
                }
                other => self.share(other, name.as_str(), body),
            };
            inner = inner.with(name.clone(), v);
        }
        self.expr(fbody, &inner, body)
    }

    fn prim(
        &mut self,
        name: &'static str,
        nats: &[Nat],
        args: &[TExpr],
        binder: Option<&Name>,
        ty: &Type,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        // Counted lengths of streams stored here (`settle`), and their counts.
        let mut known: Vec<(Nat, Nat)> = Vec::new();
        let view =
            |kind: ViewKind, known: &[(Nat, Nat)]| Ok(Val::Array(View { ty: with_counts_known(ty, known), kind }));
        let nat = |k: usize| env.subst_nat(&nats[k]);
        if let Some(to) = heddle_ir::prims::conversion(name) {
            // `float(x)`: a cast from the operand's machine type (`numbers.rs`).
            let Val::Scalar(e, from) = self.expr(&args[0], env, body)? else {
                return Err(unsupported(span, &format!("`{name}` of a non-scalar")));
            };
            return Ok(Val::Scalar(numbers::convert(e, from, to), to));
        }
        match name {
            "map" | "mapSeq" | "mapPar" | "mapGlobal" | "mapWorkgroup" | "mapLocal" => {
                let src = self.array(&args[1], env, body)?;
                let dim = nats.first().and_then(|d| d.const_value()).unwrap_or(0) as u32;
                let ty = with_known_len(ty, &src.len());
                let kind = ViewKind::Map {
                    f: Box::new(args[0].clone()),
                    env: env.clone(),
                    src: Box::new(src),
                    binder: binder.cloned(),
                    prim: name,
                    dim,
                };
                Ok(Val::Array(View { ty, kind }))
            }
            "reduce" | "reduceSeq" if args.len() == 2 => {
                self.reduce_from_first(&args[0], &args[1], name, env, span, body)
            }
            "reduce" | "reduceSeq" => self.reduce(&args[0], &args[1], &args[2], name == "reduce", env, span, body),
            "zip" => {
                // A stream among the parts is stored first (with its count): the
                // parts are read in step, by position. One stream zipped with
                // itself (`zip(u, u)`) is stored once.
                let mut known = Vec::new();
                let mut stored: Vec<(String, View)> = Vec::new();
                let mut parts = Vec::new();
                for a in args {
                    let v = self.array(a, env, body)?;
                    if !super::stream::is_stream(&v) {
                        parts.push(v);
                        continue;
                    }
                    let key = format!("{:?}", v.kind);
                    let part = match stored.iter().find(|(k, _)| *k == key) {
                        Some((_, s)) => s.clone(),
                        None => {
                            let s = self.settle(v, env, a.span, body, &mut known)?;
                            stored.push((key, s.clone()));
                            s
                        }
                    };
                    parts.push(part);
                }
                let ty = with_counts_known(ty, &known);
                let ty = match parts.first() {
                    Some(first) => with_known_len(&ty, &first.len()),
                    None => ty,
                };
                Ok(Val::Array(View { ty, kind: ViewKind::Zip(parts) }))
            }
            "unzip" => {
                let src = self.array(&args[0], env, body)?;
                let Type::Tuple(ts) = ty else { return Err(bug(span, "unzip")) };
                let parts = (0..ts.len())
                    .map(|k| Val::Array(View { ty: ts[k].clone(), kind: ViewKind::Proj(Box::new(src.clone()), k) }))
                    .collect();
                Ok(Val::Tuple(parts))
            }
            "split" => {
                let src = self.settled(&args[0], env, body, &mut known)?;
                self.check_split(&src.len(), &nat(0), &nats[0], env, span, body)?;
                view(ViewKind::Split { src: Box::new(src), k: nat(0) }, &known)
            }
            "slide" => {
                let src = self.settled(&args[0], env, body, &mut known)?;
                view(ViewKind::Slide { src: Box::new(src), step: nat(1) }, &known)
            }
            "interleave" => {
                let src = self.settled(&args[0], env, body, &mut known)?;
                view(ViewKind::Interleave { src: Box::new(src), k: nat(0) }, &known)
            }
            "join" => {
                // Rows of one length of a stream: stored first (with the count), then
                // joined as any array (rows of different lengths are walked in order).
                let src = self.array(&args[0], env, body)?;
                let one_length = matches!(&src.ty, Type::Array { binder: None, elem, .. } if matches!(&**elem, Type::Array { binder: None, .. }));
                let src = if one_length { self.settle(src, env, args[0].span, body, &mut known)? } else { src };
                if let ViewKind::Buffer { buf, offset } = &src.kind {
                    // Nested arrays are stored contiguously: joining is reading the same records flat.
                    return view(ViewKind::Buffer { buf: buf.clone(), offset: offset.clone() }, &known);
                }
                match &src.ty {
                    Type::Array { binder: None, elem, .. } => match &**elem {
                        Type::Array { binder: None, len: k, .. } => {
                            let k = k.clone();
                            view(ViewKind::Join { src: Box::new(src), k }, &known)
                        }
                        // Rows of different lengths: walkable in order (by `scatterAdd`), not indexable.
                        _ => view(ViewKind::Concat(Box::new(src)), &known),
                    },
                    _ => view(ViewKind::Concat(Box::new(src)), &known),
                }
            }
            "asVector" => {
                let src = self.settled(&args[0], env, body, &mut known)?;
                let w = super::vectors::width(ty, span)?;
                view(ViewKind::Lanes { src: Box::new(src), w }, &known)
            }
            "asScalar" => {
                let src = self.settled(&args[0], env, body, &mut known)?;
                let w = super::vectors::width(&src.ty, span)?;
                view(ViewKind::Unlanes { src: Box::new(src), w }, &known)
            }
            "transpose" => {
                let src = self.settled(&args[0], env, body, &mut known)?;
                view(ViewKind::Transpose(Box::new(src)), &known)
            }
            "scatterAdd" => self.scatter_add(&nat(0), &args[0], ty, env, span, body),
            "scatter" => self.scatter(&args[0], &args[1], ty, env, span, body),
            "generate" => view(ViewKind::Generate { f: Box::new(args[0].clone()), env: env.clone(), span }, &[]),
            "union" => {
                let za = self.expr(&args[0], env, body)?;
                let zb = self.expr(&args[1], env, body)?;
                let a = self.coiteration_operand(&args[2], env, body)?;
                let b = self.coiteration_operand(&args[3], env, body)?;
                view(ViewKind::Merge { a: Box::new(a), b: Box::new(b), defaults: Some(Box::new((za, zb))), span }, &[])
            }
            "intersect" => {
                let a = self.coiteration_operand(&args[0], env, body)?;
                let b = self.coiteration_operand(&args[1], env, body)?;
                view(ViewKind::Merge { a: Box::new(a), b: Box::new(b), defaults: None, span }, &[])
            }
            "filter" => {
                let src = self.array(&args[1], env, body)?;
                view(ViewKind::Filter { p: Box::new(args[0].clone()), env: env.clone(), src: Box::new(src), span }, &[])
            }
            "sortBy" => {
                let sorted = self.sort_by(&args[0], &args[1], ty, env, span, body)?;
                Ok(Val::Array(sorted))
            }
            "compressAdd" | "compressLast" => {
                let src = self.array(&args[0], env, body)?;
                view(ViewKind::Compress { src: Box::new(src), n: nat(0), last: name == "compressLast", span }, &[])
            }
            "concat" => {
                let a = self.array(&args[0], env, body)?;
                let b = self.array(&args[1], env, body)?;
                view(ViewKind::Appended { a: Box::new(a), b: Box::new(b) }, &[])
            }
            "pad" => {
                let value = self.expr(&args[0], env, body)?;
                let src = self.settled(&args[1], env, body, &mut known)?;
                view(ViewKind::Pad { src: Box::new(src), l: nat(0), value: Box::new(value) }, &known)
            }
            "gather" => {
                let idx = self.settled(&args[0], env, body, &mut known)?;
                let src = self.settled(&args[1], env, body, &mut known)?;
                view(ViewKind::Gather { idx: Box::new(idx), src: Box::new(src), span }, &known)
            }
            "toLocal" | "toPrivate" | "toGlobal" => {
                let x = self.expr(&args[1], env, body)?;
                let y = self.apply(&args[0], vec![x], env, body)?;
                let space = match name {
                    "toLocal" => Space::Local,
                    "toPrivate" => Space::Private,
                    _ => Space::Global,
                };
                self.materialize(y, ty, space, env, span, body)
            }
            other => Err(unsupported(span, &format!("the pattern `{other}`"))),
        }
    }

    pub(super) fn array(&mut self, t: &TExpr, env: &Env, body: &mut Block) -> Result<View, Diagnostic> {
        match self.expr(t, env, body)? {
            Val::Array(v) => Ok(v),
            _ => Err(bug(t.span, "a pattern applied to a non-array")),
        }
    }

    /// Computes an array into a temporary buffer in `space`.
    pub(super) fn materialize(
        &mut self,
        v: Val,
        ty: &Type,
        space: Space,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let Val::Array(view) = &v else { return Ok(self.share(v, "tmp", body)) };
        if let Type::Array { binder, elem, len } = ty
            && super::stream::is_stream(view)
            && heddle_ir::nat::counted::mentions_count(len)
        {
            if elem.mentions_count() {
                return Err(unsupported(span, "a temporary of streams of streams"));
            }
            // A stream bounded over the naturals (`stream_capacity`) gets that many
            // records, allocated before the launch, and is written in one pass
            // that counts it; its length is the count.
            if let Some(capacity) = self.stream_capacity(view) {
                let room = Type::Array { binder: binder.clone(), elem: elem.clone(), len: capacity };
                let base = super::stream::temporary_name(view);
                let (buf, offset, _) = self.temporary(&room, space, base, env, span, body)?;
                let written = self.write_stream(view, &buf, offset.clone(), env, body)?;
                let n = self.fresh("counted");
                self.var_types.push((n.clone(), ScalarType::I64));
                body.push(Stmt::Let { var: n.clone(), ty: ScalarType::I64, value: L::var(written) });
                let ty = Type::Array { binder: binder.clone(), elem: elem.clone(), len: Nat::Var(n) };
                return Ok(Val::Array(View::buffer(buf, offset, ty)));
            }
            // Otherwise it is counted first; the temporary then has that many
            // records and is written in order (OpenCL, which allocates nothing
            // inside a kernel, refuses it).
            let n = self.stream_len(view, env, body)?;
            let n = self.bind_index(n, "counted", body);
            let ty = Type::Array { binder: binder.clone(), elem: elem.clone(), len: n };
            let view = View { ty: ty.clone(), kind: view.kind.clone() };
            return self.materialize(Val::Array(view), &ty, space, env, span, body);
        }
        // A stream's temporary is named after its pattern (`union_tmp`), for
        // the refusals that can name only the buffer (OpenCL's).
        let base = if super::stream::is_stream(view) { super::stream::temporary_name(view) } else { "tmp" };
        // A local temporary whose length only the data gives (a row of a nested
        // parameter, or a part of one) has room for the longest such row, a
        // natural the host computes before the launch (`length_bound`): OpenCL
        // sizes local memory at the launch, one length for every group and item.
        let room = match ty {
            Type::Array { binder: None, elem, len } if space == Space::Local && !self.len_over_naturals(len) => {
                self.length_bound(view).map(|n| Type::Array { binder: None, elem: elem.clone(), len: n })
            }
            _ => None,
        };
        let (buf, offset, per_worker) = self.temporary(room.as_ref().unwrap_or(ty), space, base, env, span, body)?;
        if !per_worker
            && let (Space::Local, Val::Array(view)) = (space, &v)
            && let Schedule::Local(d) = self.schedule_of(view)
        {
            self.local_producers.insert(buf.clone(), d);
        }
        self.write(&v, ty, &buf, offset.clone(), env, body, false)?;
        // The OpenCL backend places the barriers local memory needs (codegen-opencl/src/barriers.rs).
        Ok(Val::Array(View::buffer(buf, offset, ty.clone())))
    }

    /// Is `len` a length over the natural parameters alone (known before the launch)?
    fn len_over_naturals(&mut self, len: &Nat) -> bool {
        let mut sink = Block::new();
        self.index_expr(len, &Env::default(), &mut sink).is_ok_and(|e| sink.is_empty() && self.over_naturals(&e))
    }

    /// Allocates a temporary for a value of type `ty` in `space` (or the
    /// space this position needs, below): the buffer, the record it starts
    /// at, and whether it is a per-worker workspace.
    pub(super) fn temporary(
        &mut self,
        ty: &Type,
        space: Space,
        base: &str,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<(Name, Nat, bool), Diagnostic> {
        let fields = leaf_fields(ty, span)?;
        let count = crate::flat_size(ty).map_err(|e| unsupported(span, &format!("the layout of a temporary: {e}")))?;
        let len = self.index_expr(&count, env, body)?;
        let buf = self.fresh(base);
        // Local memory belongs to the work-group: inside per-item (local) loops the
        // buffer is allocated once at the work-group loop, one slice per item.
        let group = self.loops.iter().rposition(|(_, s, _)| matches!(s, Schedule::Workgroup(_)));
        // A local or global temporary inside a parallel loop with no work-group
        // around it (`toLocal` under `map`): there is no group to share it with and
        // no launch-wide buffer per iteration, so every worker gets its own — a
        // workspace, allocated once per worker at the top of the kernel — when its
        // length is known before the launch. Each iteration writes it whole
        // before reading it, as it would a buffer of its own.
        // A private temporary whose length is not a constant (OpenCL's private
        // arrays have constant sizes) is made a workspace in the same way inside
        // a parallel loop, and a global temporary outside every one (where
        // parallel loops may fill it: per-worker storage would split it).
        let per_item = group.is_none() && self.loops.iter().any(|(_, s, _)| *s != Schedule::Seq);
        let dynamic_private = space == Space::Private && !matches!(len, L::Int(..));
        let space = if dynamic_private && !per_item && self.loops.is_empty() { Space::Global } else { space };
        if per_item && (matches!(space, Space::Local | Space::Global) || dynamic_private) {
            let mut sink = Block::new();
            let whole = self
                .index_expr(&count, &Env::default(), &mut sink)
                .ok()
                .filter(|_| sink.iter().all(|s| matches!(s, Stmt::Let { .. })));
            if let Some(n) = whole.map(|e| inline_lets(e, &sink)).filter(|e| self.over_naturals(e)) {
                self.workspaces.push(Stmt::Alloc { buf: buf.clone(), fields, len: n, space: Space::Workspace });
                return Ok((buf, Nat::Lit(0), true));
            }
        }
        let items: Vec<(Name, L)> = match group {
            Some(g) if space == Space::Local => self.loops[g + 1..]
                .iter()
                .filter(|(_, s, _)| matches!(s, Schedule::Local(_)))
                .map(|(v, _, hi)| (v.clone(), hi.clone()))
                .collect(),
            _ => Vec::new(),
        };
        let offset = match group {
            // One buffer for the group, a slice per item, when the items'
            // slices have one length the group knows (a length that depends on
            // an item's data gets a buffer of the item's own, below: OpenCL
            // refuses that, local arrays having a size fixed at the launch).
            Some(g) if space == Space::Local && !items.is_empty() && self.over_naturals(&len) => {
                let (mut total, mut slot) = (len.clone(), L::index(0));
                for (v, hi) in &items {
                    total = L::bin(BinOp::Mul, total, hi.clone());
                    slot = L::bin(BinOp::Add, L::bin(BinOp::Mul, slot, hi.clone()), L::var(v.clone()));
                }
                self.hoisted.push((g, Stmt::Alloc { buf: buf.clone(), fields, len: total, space }));
                let at = L::bin(BinOp::Mul, slot, len);
                self.bind_index(at, "slot", body)
            }
            _ => {
                body.push(Stmt::Alloc { buf: buf.clone(), fields, len, space });
                Nat::Lit(0)
            }
        };
        // Outside every parallel loop, the temporary is read, after it is written, by
        // code that all workers run: OpenCL has no barrier across work-groups, so it
        // is written by one sequential loop, and later top-level loops stay
        // sequential too (as after a top-level `scatterAdd`, see scatter.rs).
        if !self.in_parallel && self.loops.iter().all(|(_, s, _)| *s == Schedule::Seq) {
            self.sequential = true;
        }
        Ok((buf, offset, false))
    }

    /// `v` where an array that can be indexed is needed (`zip`, `pad`,
    /// `split`, …): a stream (`stream.rs`) is stored in a temporary first,
    /// with its count (`materialize`); `known` gets its counted length and
    /// the count, for the types that mention it ([`with_counts_known`]).
    pub(super) fn settle(
        &mut self,
        v: View,
        env: &Env,
        span: Span,
        body: &mut Block,
        known: &mut Vec<(Nat, Nat)>,
    ) -> Result<View, Diagnostic> {
        if !super::stream::is_stream(&v) {
            // `concat` with a stream among its parts: each part settled (the
            // streams stored with their counts), so the whole can be indexed.
            if let Some((a, b)) = appended_parts(&v)
                && super::scatter::walked(&v)
            {
                let a = self.settle(a, env, span, body, known)?;
                let b = self.settle(b, env, span, body, known)?;
                return Ok(View {
                    ty: with_counts_known(&v.ty, known),
                    kind: ViewKind::Appended { a: Box::new(a), b: Box::new(b) },
                });
            }
            return Ok(v);
        }
        let counted = v.len();
        let ty = v.ty.clone();
        let Val::Array(stored) = self.materialize(Val::Array(v), &ty, Space::Global, env, span, body)? else {
            return Err(bug(span, "a stream stored as something other than an array"));
        };
        known.push((counted, stored.len()));
        Ok(stored)
    }

    /// An operand of `union` or `intersect`: a stream is walked by a cursor of
    /// the fused loop (`coiter.rs`), except a `select` between streams, which
    /// has none and is stored first.
    fn coiteration_operand(&mut self, t: &TExpr, env: &Env, body: &mut Block) -> Result<View, Diagnostic> {
        let v = self.array(t, env, body)?;
        if matches!(v.kind, ViewKind::Choice { .. }) {
            return self.settle(v, env, t.span, body, &mut Vec::new());
        }
        Ok(v)
    }

    /// [`settle`](Self::settle) of the array `t`.
    fn settled(
        &mut self,
        t: &TExpr,
        env: &Env,
        body: &mut Block,
        known: &mut Vec<(Nat, Nat)>,
    ) -> Result<View, Diagnostic> {
        let v = self.array(t, env, body)?;
        self.settle(v, env, t.span, body, known)
    }

    /// The array a reduction reads: a `mapLocal`'s results are computed by
    /// the group's items in parallel and kept in local memory for it (fused
    /// into the reduction's sequential loop, the map would run on one item at
    /// a time); any other array as it is.
    fn reduction_operand(&mut self, xs: View, env: &Env, span: Span, body: &mut Block) -> Result<View, Diagnostic> {
        if let ViewKind::Map { prim: "mapLocal", .. } = &xs.kind
            && self.counting.is_none()
        {
            let ty = xs.ty.clone();
            if let Val::Array(local) = self.materialize(Val::Array(xs.clone()), &ty, Space::Local, env, span, body)? {
                return Ok(local);
            }
        }
        Ok(xs)
    }

    /// `reduce(op, init)(xs)` (`reassociate`: its accumulators may be
    /// reassociated, see `LoopProgram::reassociable`) or `reduceSeq`.
    fn reduce(
        &mut self,
        op: &TExpr,
        init: &TExpr,
        xs_expr: &TExpr,
        reassociate: bool,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let init_ty = self.program_values_in_type(&env.subst_type(&init.ty), env);
        let init = self.expr(init, env, body)?;
        let xs = self.array(xs_expr, env, body)?;
        let xs = self.reduction_operand(xs, env, span, body)?;
        // The reduction may destroy a local buffer made for it alone.
        let own = matches!(&xs_expr.kind, TKind::Prim { name: "toLocal" | "mapLocal", .. });
        if reassociate
            && own
            && self.counting.is_none()
            && let Some(v) = self.tree_reduce(op, &init, &xs, env, body)?
        {
            return Ok(v);
        }
        if matches!(init, Val::Array(_)) && !super::stream::is_stream(&xs) {
            return self.reduce_array(op, init, &xs, &init_ty, env, span, body);
        }
        let (accs, acc_val) = self.accumulators(&init, span, body)?;
        if super::stream::is_stream(&xs) {
            // A stream (co-iteration, a workspace row) is folded as it is produced.
            let (op, env_c, accs_c, acc_c) = (op.clone(), env.clone(), accs.clone(), acc_val.clone());
            self.each_stream(&xs, env, body, &mut |cx, x, inner| {
                let next = cx.apply(&op, vec![acc_c.clone(), x], &env_c, inner)?;
                update(cx, &accs_c, &next, span, inner)
            })?;
            let mut results = accs.iter().map(|(a, s)| Val::Scalar(L::Var(a.clone()), *s));
            return Ok(rebuild(&init, &mut results));
        }
        if super::scatter::walked(&xs) {
            // A join of rows of different lengths: folded row by row, never indexed.
            let (op, env_c, accs_c, acc_c) = (op.clone(), env.clone(), accs.clone(), acc_val.clone());
            self.each(&xs, env, Schedule::Seq, body, &mut |cx, x, inner| {
                let next = cx.apply(&op, vec![acc_c.clone(), x], &env_c, inner)?;
                update(cx, &accs_c, &next, span, inner)
            })?;
            let mut results = accs.iter().map(|(a, s)| Val::Scalar(L::Var(a.clone()), *s));
            return Ok(rebuild(&init, &mut results));
        }
        let k = self.fresh("k");
        if let ViewKind::Unlanes { src, w } = &xs.kind
            && !matches!(src.kind, ViewKind::Lanes { .. })
        {
            // `asScalar` of computed vectors: each vector once, then its lanes
            // in order (the same order of operations as scalar by scalar).
            let hi = self.index_expr(&src.len(), env, body)?;
            let mut inner = Block::new();
            let Val::Tuple(lanes) = self.elem(src, &Nat::Var(k.clone()), &mut inner)? else {
                return Err(bug(span, "asScalar of something that is not vectors"));
            };
            debug_assert_eq!(lanes.len(), *w);
            for x in lanes {
                let next = self.apply(op, vec![acc_val.clone(), x], env, &mut inner)?;
                update(self, &accs, &next, span, &mut inner)?;
            }
            if reassociate {
                self.reassociable.extend(accs.iter().map(|(a, _)| a.clone()));
            }
            body.push(Stmt::For { var: k, lo: L::index(0), hi, schedule: Schedule::Seq, body: inner });
            let mut results = accs.iter().map(|(a, s)| Val::Scalar(L::Var(a.clone()), *s));
            return Ok(rebuild(&init, &mut results));
        }
        let hi = self.index_expr(&xs.len(), env, body)?;
        let mut inner = Block::new();
        let x = self.elem(&xs, &Nat::Var(k.clone()), &mut inner)?;
        let next = self.apply(op, vec![acc_val, x], env, &mut inner)?;
        update(self, &accs, &next, span, &mut inner)?;
        if reassociate {
            self.reassociable.extend(accs.iter().map(|(a, _)| a.clone()));
        }
        body.push(Stmt::For { var: k, lo: L::index(0), hi, schedule: Schedule::Seq, body: inner });
        // Read the accumulators once, after the loop.
        let mut results = accs.iter().map(|(a, s)| Val::Scalar(L::Var(a.clone()), *s));
        Ok(rebuild(&init, &mut results))
    }

    /// `split(k)` of an array of length `len`: a run-time check that `k` divides
    /// `len` where the kernel's obligations do not cover it (a length or `k`
    /// that mentions names bound inside the kernel: a row's `toNat` length, a
    /// position), as the interpreter checks every split. A row of length 0 is
    /// 0 chunks.
    fn check_split(
        &mut self,
        len: &Nat,
        k: &Nat,
        written: &Nat,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<(), Diagnostic> {
        let params: Vec<&Name> = self.kernel.params.iter().map(|p| p.name()).collect();
        let mut names = super::nats::free_names(len);
        names.extend(super::nats::free_names(k));
        let over_params = names.iter().all(|x| params.contains(&x));
        // An obligation of the kernel (`n % R == 0`, checked before it runs) covers it.
        // (Spans never compare equal or unequal with `==`: compare their bytes.)
        let obligation = self.kernel.obligations.iter().any(|o| (o.span.start, o.span.end) == (span.start, span.end));
        let positive = k.const_value().is_some_and(|v| v > 0);
        let divides = Nat::bin(heddle_ir::nat::NatOp::Mod, len.clone(), k.clone()).const_value() == Some(0);
        let covered = over_params && obligation;
        if positive && (divides || covered) {
            return Ok(());
        }
        let k_e = self.index_expr(k, env, body)?;
        if !(positive || covered) {
            // `split(n)` of n elements (exact, so no obligation) with n = 0.
            let id = self.check(split_empty_chunks(written), span);
            body.push(Stmt::Check { cond: L::bin(BinOp::Gt, k_e.clone(), L::index(0)), id });
        }
        if divides || covered {
            return Ok(());
        }
        let message = format!(
            "`split({written})`: the array's length is not a multiple of {written}, so it cannot be split into chunks"
        );
        let len_e = self.index_expr(len, env, body)?;
        let id = self.check(message, span);
        body.push(Stmt::Check { cond: L::bin(BinOp::Eq, L::bin(BinOp::Rem, len_e, k_e), L::index(0)), id });
        Ok(())
    }

    /// `reduce(op)(xs)` without an initial value: a located run-time error on an
    /// empty array (the interpreter's), else the first element starts the
    /// accumulator and `op` takes the pair (accumulator, element) for the rest,
    /// left to right (so not listed as reassociable).
    fn reduce_from_first(
        &mut self,
        op: &TExpr,
        xs_expr: &TExpr,
        name: &str,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let xs = self.array(xs_expr, env, body)?;
        let xs = self.reduction_operand(xs, env, span, body)?;
        // A stream (or `concat` with one among its parts) is stored first, with
        // its count: the first element starts the accumulator.
        let mut known = Vec::new();
        let xs = match appended_parts(&xs) {
            Some((a, b)) if super::scatter::walked(&xs) => {
                let a = self.settle(a, env, span, body, &mut known)?;
                let b = self.settle(b, env, span, body, &mut known)?;
                View {
                    ty: with_counts_known(&xs.ty, &known),
                    kind: ViewKind::Appended { a: Box::new(a), b: Box::new(b) },
                }
            }
            _ => self.settle(xs, env, span, body, &mut known)?,
        };
        if super::stream::is_stream(&xs) || super::scatter::walked(&xs) {
            return Err(unsupported(span, &format!("`{name}` without an initial value of an array produced in order")));
        }
        let hi = self.index_expr(&xs.len(), env, body)?;
        let hi = self.bind_index(hi, "len", body);
        let hi = self.nat_to_expr(&hi, env, body)?;
        let id = self.check(
            format!("`{name}`: an empty array has no first element to start from (without an initial value)"),
            span,
        );
        body.push(Stmt::Check { cond: L::bin(BinOp::Gt, hi.clone(), L::index(0)), id });
        let first = self.elem(&xs, &Nat::Lit(0), body)?;
        let (accs, acc_val) = self.accumulators(&first, span, body)?;
        let k = self.fresh("k");
        let mut inner = Block::new();
        let x = self.elem(&xs, &Nat::Var(k.clone()), &mut inner)?;
        let next = self.apply(op, vec![Val::Tuple(vec![acc_val, x])], env, &mut inner)?;
        update(self, &accs, &next, span, &mut inner)?;
        body.push(Stmt::For { var: k, lo: L::index(1), hi, schedule: Schedule::Seq, body: inner });
        let mut results = accs.iter().map(|(a, s)| Val::Scalar(L::Var(a.clone()), *s));
        Ok(rebuild(&first, &mut results))
    }

    /// Mutable locals for a reduction's accumulator (scalars or tuples of them).
    fn accumulators(
        &mut self,
        init: &Val,
        span: Span,
        body: &mut Block,
    ) -> Result<(Vec<(Name, ScalarType)>, Val), Diagnostic> {
        let mut scalars = Vec::new();
        collect_typed(init, &mut scalars, span)?;
        let mut accs = Vec::new();
        for (e, s) in scalars {
            let var = self.fresh("acc");
            body.push(Stmt::Var { var: var.clone(), ty: s, init: e });
            accs.push((var, s));
        }
        let mut vals = accs.iter().map(|(a, s)| Val::Scalar(L::Var(a.clone()), *s));
        let acc_val = rebuild(init, &mut vals);
        Ok((accs, acc_val))
    }

    /// Writes a value of type `ty` to `buf` starting at record `offset`.
    pub(super) fn write(
        &mut self,
        v: &Val,
        ty: &Type,
        buf: &Name,
        offset: Nat,
        env: &Env,
        body: &mut Block,
        top: bool,
    ) -> Result<(), Diagnostic> {
        let span = self.kernel.body.span;
        if self.counting.is_some() {
            return self.write_count(v, ty, buf, offset, env, body, top);
        }
        match v {
            Val::Array(view) if super::stream::is_stream(view) => {
                self.write_stream(view, buf, offset, env, body).map(|_| ())
            }
            // `concat` with a stream among its parts: the parts one after the other.
            Val::Array(view) if super::scatter::walked(view) && appended_parts(view).is_some() => {
                self.write_walked(view, buf, offset, env, body).map(|_| ())
            }
            Val::Scalar(e, s) => {
                let index = self.index_expr(&offset, env, body)?;
                let field = self.stored_fields(buf, ty, span).first().copied().unwrap_or(*s);
                body.push(Stmt::Store {
                    buf: buf.clone(),
                    index,
                    field: 0,
                    value: numbers::convert(e.clone(), *s, field),
                });
                Ok(())
            }
            Val::Tuple(_) => {
                let index = self.index_expr(&offset, env, body)?;
                let index = self.bind_index(index, "at", body);
                let index = self.nat_to_expr(&index, env, body)?;
                // Nested tuples are stored flat: leaf k in field k.
                let mut values = Vec::new();
                collect_typed(v, &mut values, span)
                    .map_err(|_| unsupported(span, &format!("writing {ty}: a tuple holding an array")))?;
                let fields = self.stored_fields(buf, ty, span);
                for (k, (e, s)) in values.into_iter().enumerate() {
                    let field = fields.get(k).copied().unwrap_or(s);
                    body.push(Stmt::Store {
                        buf: buf.clone(),
                        index: index.clone(),
                        field: k as u32,
                        value: numbers::convert(e, s, field),
                    });
                }
                Ok(())
            }
            Val::Array(unlaned @ View { kind: ViewKind::Unlanes { src, w }, .. })
                if !matches!(src.kind, ViewKind::Lanes { .. }) =>
            {
                // `asScalar` of computed vectors: each vector once, its lanes
                // stored at w·k … w·k + w − 1 (not each scalar choosing its
                // lane at run time); a backend may store them as one vector.
                let lane_ty = unlaned.elem_ty(&Nat::Lit(0));
                let k = self.fresh("k");
                let width = *w;
                self.write_each(src, &k, env, body, top, &mut |cx, vector, inner| {
                    let Val::Tuple(lanes) = vector else {
                        return Err(bug(span, "asScalar of something that is not vectors"));
                    };
                    for (j, lane) in lanes.iter().enumerate() {
                        let at = Nat::add(
                            offset.clone(),
                            Nat::add(Nat::mul(Nat::Lit(width as i64), Nat::Var(k.clone())), Nat::Lit(j as i64)),
                        );
                        cx.write(lane, &lane_ty, buf, at, env, inner, false)?;
                    }
                    Ok(())
                })
            }
            Val::Array(View { kind: ViewKind::Join { src, .. } | ViewKind::Concat(src), .. }) => {
                // A joined array is laid out like the nested one (rows of different
                // lengths too): write the nested structure so the schedules of its maps are kept.
                let nested = Val::Array((**src).clone());
                self.write(&nested, &src.ty, buf, offset, env, body, top)
            }
            Val::Array(view) => {
                let name = self.element_var(view);
                let i = Nat::Var(name.clone());
                let at = crate::flat_index(&view.ty, std::slice::from_ref(&i))
                    .map_err(|e| unsupported(span, &format!("writing the result: {e}")))?;
                let elem_ty = view.elem_ty(&i);
                self.write_each(view, &name, env, body, top, &mut |cx, x, inner| {
                    let mut start = Nat::add(offset.clone(), at.clone());
                    if start.has_sum() {
                        // Rows of different lengths (LIL-like, or counted): the row's start is a
                        // prefix sum over the rows before it, computed once per row.
                        let e = cx.index_expr_bounded(&start, env, Some(&view.len()), inner)?;
                        start = cx.bind_index(e, "row_start", inner);
                    }
                    cx.write(x, &elem_ty, buf, start, env, inner, false)
                })
            }
        }
    }

    /// A loop over the elements of `view` (its map's schedule), variable `var`,
    /// that hands each element to `f` to write: the loop structure `write`
    /// gives an array, for layouts other than one element per record. A
    /// parallel loop at the top records its work as one per element's size.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn write_each(
        &mut self,
        view: &View,
        var: &Name,
        env: &Env,
        body: &mut Block,
        top: bool,
        f: &mut dyn FnMut(&mut Self, &Val, &mut Block) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let schedule = self.element_loop(view, var, env, body, f)?;
        if top && schedule == Schedule::Parallel {
            let work_ty = source_elem_ty(view, &Nat::Var(var.clone()));
            self.parallel_work = Some(self.work_estimate(var, &work_ty, env));
        }
        Ok(())
    }

    /// The loop of every writer (results, counting phases, stored tensors'
    /// dense levels): `for var in 0 .. len(view)` on the view's schedule, with
    /// `f` given each element and the loop's body, and the local memory hoisted
    /// to this depth placed first in it. Returns the schedule; the caller
    /// decides what a parallel loop's work is.
    #[allow(clippy::type_complexity)]
    pub(super) fn element_loop(
        &mut self,
        view: &View,
        var: &Name,
        env: &Env,
        body: &mut Block,
        f: &mut dyn FnMut(&mut Self, &Val, &mut Block) -> Result<(), Diagnostic>,
    ) -> Result<Schedule, Diagnostic> {
        let schedule = self.schedule_of(view);
        let hi = self.index_expr(&view.len(), env, body)?;
        let i = Nat::Var(var.clone());
        let was_parallel = self.in_parallel;
        if schedule == Schedule::Parallel {
            self.in_parallel = true;
        }
        let mut inner = Block::new();
        let depth = self.loops.len();
        self.loops.push((var.clone(), schedule, hi.clone()));
        let written = self.elem(view, &i, &mut inner).and_then(|x| f(self, &x, &mut inner));
        self.loops.pop();
        self.in_parallel = was_parallel;
        written?;
        let (mine, rest): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.hoisted).into_iter().partition(|(d, _)| *d == depth);
        self.hoisted = rest;
        if !mine.is_empty() {
            inner.splice(0..0, mine.into_iter().map(|(_, s)| s));
        }
        body.push(Stmt::For { var: var.clone(), lo: L::index(0), hi, schedule, body: inner });
        Ok(schedule)
    }

    /// The variable of a loop over `view`'s elements: the array's binder where
    /// no loop uses it yet (the loop text then reads like the program), else
    /// a fresh `i`.
    pub(super) fn element_var(&mut self, view: &View) -> Name {
        match &view.ty {
            Type::Array { binder: Some(b), .. } if !self.used.contains(b) => {
                self.used.insert(b.clone());
                b.clone()
            }
            _ => self.fresh("i"),
        }
    }

    /// The record fields `buf` holds: the output's declared fields (the
    /// result type's, where a value may carry its storage's type: a CSR
    /// row's coordinate loads as `i64` but is an `int`), else those of `ty`.
    fn stored_fields(&self, buf: &Name, ty: &Type, span: Span) -> Vec<ScalarType> {
        match self.args.iter().find(|a| a.name == *buf).map(|a| &a.kind) {
            Some(heddle_ir::loops::ArgKind::Output { fields, .. }) => fields.clone(),
            _ => leaf_fields(ty, span).unwrap_or_default(),
        }
    }

    /// Writes the stream `view` in order from record `offset`, each element
    /// at the next record; the variable that holds how many it wrote.
    pub(super) fn write_stream(
        &mut self,
        view: &View,
        buf: &Name,
        offset: Nat,
        env: &Env,
        body: &mut Block,
    ) -> Result<Name, Diagnostic> {
        let k = self.fresh("next");
        body.push(Stmt::Var { var: k.clone(), ty: ScalarType::I64, init: L::index(0) });
        let start = self.index_expr(&offset, env, body)?;
        let start = self.bind_index(start, "row_start", body);
        let elem_ty = view.elem_ty(&Nat::Var(k.clone()));
        // Elements that are arrays (of one length: rows of a `join`) take that many records each.
        let records = match &elem_ty {
            Type::Array { .. } => {
                let n = crate::flat_size(&elem_ty)
                    .ok()
                    .filter(|n| !heddle_ir::nat::counted::mentions_count(n) && !n.mentions(&k));
                Some(n.ok_or_else(|| unsupported(self.kernel.body.span, "storing the result of `union`, `intersect`, `compressAdd` or `filter` whose elements are arrays of different lengths"))?)
            }
            _ => None,
        };
        let (buf, env_c, k_c) = (buf.clone(), env.clone(), k.clone());
        self.each_stream(view, env, body, &mut |cx, x, inner| {
            let at = match &records {
                Some(n) => Nat::add(start.clone(), Nat::mul(Nat::Var(k_c.clone()), n.clone())),
                None => Nat::add(start.clone(), Nat::Var(k_c.clone())),
            };
            cx.write(&x, &elem_ty, &buf, at, &env_c, inner, false)?;
            inner.push(Stmt::Assign { var: k_c.clone(), value: L::bin(BinOp::Add, L::var(k_c.clone()), L::index(1)) });
            Ok(())
        })?;
        Ok(k)
    }

    /// Writes `concat(a, b)` (or a map over it) with a stream among its parts
    /// from record `offset`: `a`, then `b` after as many records as `a` took
    /// (a stream's count, as it is written); how many records that is.
    fn write_walked(
        &mut self,
        view: &View,
        buf: &Name,
        offset: Nat,
        env: &Env,
        body: &mut Block,
    ) -> Result<Nat, Diagnostic> {
        let span = self.kernel.body.span;
        let Some((a, b)) = appended_parts(view) else {
            return Err(bug(span, "writing a walked array that is not a `concat`"));
        };
        let mut at = offset;
        let mut total = Nat::Lit(0);
        for part in [a, b] {
            // A part's length counts its records only where each element is one.
            if matches!(part.elem_ty(&Nat::Lit(0)), Type::Array { .. }) {
                return Err(unsupported(span, "writing `concat` of a stream and arrays of arrays"));
            }
            let n = if super::stream::is_stream(&part) {
                Nat::Var(self.write_stream(&part, buf, at.clone(), env, body)?)
            } else if super::scatter::walked(&part) && appended_parts(&part).is_some() {
                self.write_walked(&part, buf, at.clone(), env, body)?
            } else {
                let ty = part.ty.clone();
                self.write(&Val::Array(part.clone()), &ty, buf, at.clone(), env, body, false)?;
                let n = self.index_expr(&part.len(), env, body)?;
                self.bind_index(n, "part_len", body)
            };
            // A stream's counter goes on changing while the next part is written: copy it.
            let n = match n {
                Nat::Var(v) => {
                    let copy = self.fresh("written");
                    self.var_types.push((copy.clone(), ScalarType::I64));
                    body.push(Stmt::Let { var: copy.clone(), ty: ScalarType::I64, value: L::var(v) });
                    Nat::Var(copy)
                }
                other => other,
            };
            at = Nat::add(at, n.clone());
            total = Nat::add(total, n);
        }
        Ok(total)
    }

    /// Writing in a counting phase: the lengths of the counted arrays in
    /// `v`, in row-major order of the arrays around them; nothing else.
    /// `ty` is the value's type as the program writes it: a stream stored
    /// in a temporary (`settle`) has its count as its view's length, where
    /// the type still names the count array this phase fills.
    pub(super) fn write_count(
        &mut self,
        v: &Val,
        ty: &Type,
        buf: &Name,
        offset: Nat,
        env: &Env,
        body: &mut Block,
        top: bool,
    ) -> Result<(), Diagnostic> {
        let Val::Array(view) = v else { return Ok(()) };
        let Type::Array { len, .. } = ty else { return Ok(()) };
        if heddle_ir::nat::counted::mentions_count(len) {
            // The length is a count array's element, or a sum of lengths with
            // one per count array (`concat` of a stream): this phase's array
            // is counted, at most once.
            if let Some(n) = self.count_of_phase(view, len, env, body)? {
                let index = self.index_expr(&offset, env, body)?;
                body.push(Stmt::Store { buf: buf.clone(), index, field: 0, value: n });
            }
            return Ok(());
        }
        let name = self.fresh("i");
        let i = Nat::Var(name.clone());
        let mut bound = None;
        let schedule = self.element_loop(view, &name, env, body, &mut |cx, x, inner| {
            if let Val::Array(row) = x
                && let Some(n) = super::stream::stream_bound(row)
            {
                bound = cx.walked_per_row(&n, &name, env, inner);
            }
            let at = Nat::add(Nat::mul(offset.clone(), view.len()), i.clone());
            let elem_ty = match ty {
                Type::Array { binder: Some(b), elem, .. } => elem.subst_nat(b, &i),
                Type::Array { elem, .. } => (**elem).clone(),
                other => other.clone(),
            };
            cx.write_count(x, &elem_ty, buf, at, env, inner, false)
        })?;
        let work_ty = source_elem_ty(view, &i);
        if top && schedule == Schedule::Parallel {
            if !work_ty.mentions_count() {
                self.parallel_work = Some(self.work_estimate(&name, &work_ty, env));
            } else if let (Some(items), false) = (bound, self.bounding) {
                // (A bound phase reads O(1) per row: equal lengths balance it.)
                // A counted length is what this phase computes: the work is what
                // counting it walks (a merge's two lists), so rows split by it.
                self.parallel_work = Some(heddle_ir::loops::ParallelWork { var: name.clone(), items, before: None });
            }
        }
        Ok(())
    }

    /// The element of this counting phase's count array in the length `len`
    /// of `view` (a counted length, or a sum with one counted term per
    /// part of a `concat`), counted; `None` where `len` counts for
    /// another array only.
    fn count_of_phase(&mut self, view: &View, len: &Nat, env: &Env, body: &mut Block) -> Result<Option<L>, Diagnostic> {
        let span = self.kernel.body.span;
        let Some((array, _)) = self.counting.clone() else {
            return Err(bug(span, "counting outside a counting phase"));
        };
        if self.bounding {
            // A bound phase: the entries the row's co-iteration walks, which
            // no merge can exceed (each step takes at least one of them and
            // yields at most one element), where the length is this array's
            // count alone and the row a stream of merges; else the program
            // is lowered with exact counts (see `lower_bounded`).
            return match heddle_ir::nat::counted::as_counted(len) {
                Some((counted, _)) if counted != array => Ok(None),
                Some(_) if super::stream::is_stream(view) => match super::stream::stream_bound(view) {
                    Some(n) => self.index_expr(&n, env, body).map(Some),
                    None => {
                        self.bound_missing = true;
                        Ok(None)
                    }
                },
                _ => {
                    self.bound_missing = true;
                    Ok(None)
                }
            };
        }
        if let Some((counted, _)) = heddle_ir::nat::counted::as_counted(len) {
            if counted != array {
                return Ok(None);
            }
            // A stream counts itself; a stream stored in a temporary has its count.
            return Ok(Some(if heddle_ir::nat::counted::mentions_count(&view.len()) {
                self.stream_len(view, env, body)?
            } else {
                self.index_expr(&view.len(), env, body)?
            }));
        }
        if !heddle_ir::nat::counted::mentions_count(&view.len()) {
            // A stream stored first (`settle`: `pad` of a stream): the view's length
            // is the static one, `k · count + rest`, with the count in its place.
            let mut terms = Vec::new();
            super::sum_terms(len, &mut terms);
            let (mut k, mut rest) = (0, Nat::Lit(0));
            for t in terms {
                match super::counted_term(&t) {
                    Some((c, (times, _))) if c == array => k += times,
                    Some(_) => return Ok(None),
                    None => rest = Nat::add(rest, t),
                }
            }
            if k == 0 || heddle_ir::nat::counted::mentions_count(&rest) {
                return Ok(None);
            }
            let whole = self.index_expr(&view.len(), env, body)?;
            let rest = self.index_expr(&rest, env, body)?;
            let count = L::bin(BinOp::Sub, whole, rest);
            return Ok(Some(if k == 1 { count } else { L::bin(BinOp::Div, count, L::index(k)) }));
        }
        match appended_parts(view) {
            Some((a, b)) => {
                for part in [a, b] {
                    let len = part.len();
                    if heddle_ir::nat::counted::mentions_count(&len)
                        && let Some(n) = self.count_of_phase(&part, &len, env, body)?
                    {
                        return Ok(Some(n));
                    }
                }
                Ok(None)
            }
            None => Err(unsupported(
                span,
                &format!("a result of length {len}, which counts something other than the parts of `concat`"),
            )),
        }
    }

    /// The entries a counting phase's row walks (`n`, a co-iteration's lists'
    /// lengths), as an expression over the arguments and the loop variable
    /// `var` alone: the row's `let`s (`row`) substituted, and zero unless the
    /// checks the row makes before them hold, so evaluating it reads only
    /// what the row itself reads.
    fn walked_per_row(&mut self, n: &Nat, var: &Name, env: &Env, row: &Block) -> Option<L> {
        let mut sink = Block::new();
        let e = self.index_expr(n, env, &mut sink).ok()?;
        if !sink.iter().all(|s| matches!(s, Stmt::Let { .. })) {
            return None;
        }
        let lets: Vec<Stmt> = row.iter().chain(&sink).cloned().collect();
        let mut guard: Option<L> = None;
        for s in row {
            match s {
                Stmt::Let { .. } => {}
                Stmt::Check { cond, .. } => {
                    let c = inline_lets(cond.clone(), &lets);
                    guard = Some(match guard {
                        Some(g) => L::bin(BinOp::And, g, c),
                        None => c,
                    });
                }
                _ => return None,
            }
        }
        let e = inline_lets(e, &lets);
        let e = match guard {
            Some(g) => L::Select(Box::new(g), Box::new(e), Box::new(L::index(0))),
            None => e,
        };
        let known = |v: &Name| v == var || self.args.iter().any(|a| &a.name == v);
        (!e.any(&mut |x| matches!(x, L::Var(v) if !known(v)))).then_some(e)
    }

    pub(super) fn schedule_of(&self, v: &View) -> Schedule {
        match &v.kind {
            ViewKind::Map { prim, dim, .. } => match *prim {
                "mapSeq" => Schedule::Seq,
                // A kernel that reads what it computed runs on one worker (see `materialize`).
                _ if self.sequential => Schedule::Seq,
                "mapGlobal" => Schedule::Global(*dim),
                "mapWorkgroup" => Schedule::Workgroup(*dim),
                "mapLocal" => Schedule::Local(*dim),
                _ if self.in_parallel || self.sequential => Schedule::Seq,
                _ => Schedule::Parallel,
            },
            // `generate`'s elements are as independent as a `map`'s.
            ViewKind::Generate { .. } if !(self.in_parallel || self.sequential) => Schedule::Parallel,
            _ => Schedule::Seq,
        }
    }
}

/// The element type of the array a view ultimately reads (through maps and
/// zips): what one iteration of a loop over the view works through.
pub(super) fn source_elem_ty(v: &View, i: &Nat) -> Type {
    match &v.kind {
        ViewKind::Map { src, .. } => source_elem_ty(src, i),
        ViewKind::Zip(parts) if !parts.is_empty() => source_elem_ty(&parts[0], i),
        _ => v.elem_ty(i),
    }
}

/// Substitutes `let`s into an expression (for the work estimate, which must stand alone).
pub(super) fn inline_lets(e: L, lets: &[Stmt]) -> L {
    fn go(e: L, lets: &[Stmt]) -> L {
        match e {
            L::Var(v) => match lets.iter().rev().find_map(|s| match s {
                Stmt::Let { var, value, .. } if *var == v => Some(value.clone()),
                _ => None,
            }) {
                Some(value) => go(value, lets),
                None => L::Var(v),
            },
            L::Load { buf, index, field } => L::Load { buf, index: Box::new(go(*index, lets)), field },
            L::Bin(op, a, b) => L::Bin(op, Box::new(go(*a, lets)), Box::new(go(*b, lets))),
            L::Neg(a) => L::Neg(Box::new(go(*a, lets))),
            L::Not(a) => L::Not(Box::new(go(*a, lets))),
            L::Cast(t, a) => L::Cast(t, Box::new(go(*a, lets))),
            L::Select(c, a, b) => L::Select(Box::new(go(*c, lets)), Box::new(go(*a, lets)), Box::new(go(*b, lets))),
            other => other,
        }
    }
    go(e, lets)
}

/// Replaces `name.k` by the variable holding component k of the tuple `items`.
fn replace_projections(e: &mut heddle_ir::Expr, name: &Name, items: &[Val]) {
    use heddle_ir::ExprKind;
    if let ExprKind::Proj { tuple, field } = &e.kind
        && matches!(&tuple.kind, ExprKind::Var(x) if x == name)
        && let Some(Val::Scalar(L::Var(local), _)) = items.get((*field as usize).wrapping_sub(1))
    {
        *e = heddle_ir::Expr::var(local.clone());
        return;
    }
    if let ExprKind::NatValue(n) = &mut e.kind {
        *n = n.map_bottom_up(&mut |m| match m {
            Nat::ToNat(mut inner) => {
                replace_projections(&mut inner, name, items);
                Nat::ToNat(inner)
            }
            other => other,
        });
        return;
    }
    e.for_each_child_mut(&mut |c| replace_projections(c, name, items));
}

fn collect_typed(v: &Val, out: &mut Vec<(L, ScalarType)>, span: Span) -> Result<(), Diagnostic> {
    match v {
        Val::Scalar(e, s) => {
            out.push((e.clone(), *s));
            Ok(())
        }
        Val::Tuple(items) => items.iter().try_for_each(|x| collect_typed(x, out, span)),
        Val::Array(_) => Err(unsupported(span, "a reduction with an array accumulator")),
    }
}

/// `acc = next` for each accumulator, converted to the accumulator's type.
fn update(
    cx: &mut Lowerer<'_>,
    accs: &[(Name, ScalarType)],
    next: &Val,
    span: Span,
    body: &mut Block,
) -> Result<(), Diagnostic> {
    let mut scalars = Vec::new();
    collect_typed(next, &mut scalars, span)
        .map_err(|_| unsupported(span, "a reduction whose result is not scalars"))?;
    if scalars.len() != accs.len() {
        return Err(unsupported(span, "a reduction whose result is not scalars"));
    }
    // The accumulators are updated at once: where one's new value reads
    // another (a complex product, a swap), every new value is computed into
    // a `let` before the first assignment.
    let reads_another = scalars
        .iter()
        .enumerate()
        .any(|(k, (e, _))| accs.iter().enumerate().any(|(j, (a, _))| j != k && e.reads_var(a)));
    let values: Vec<(L, ScalarType)> = if reads_another {
        scalars
            .into_iter()
            .map(|(e, s)| {
                let var = cx.fresh("next");
                body.push(Stmt::Let { var: var.clone(), ty: s, value: e });
                (L::Var(var), s)
            })
            .collect()
    } else {
        scalars
    };
    for ((acc, t), (e, s)) in accs.iter().zip(values) {
        body.push(Stmt::Assign { var: acc.clone(), value: numbers::convert(e, s, *t) });
    }
    Ok(())
}

/// A value of the same shape as `like`, with scalars taken from `values`.
fn rebuild(like: &Val, values: &mut dyn Iterator<Item = Val>) -> Val {
    match like {
        Val::Tuple(items) => Val::Tuple(items.iter().map(|x| rebuild(x, values)).collect()),
        _ => values.next().unwrap_or_else(|| like.clone()),
    }
}

/// The error of `split(k)` with `k` = 0 (the interpreter's too).
pub fn split_empty_chunks(written: &Nat) -> String {
    format!("`split({written})` needs {written} to be at least 1: chunks of no elements")
}

/// `ty` with the length `known` of the array it is computed from, where its
/// own length is counted and `known` is not: a stream stored in a temporary
/// (`materialize`) has its count in a variable, and a map or zip of it is as
/// long — the count array its type names exists only for a stream's result.
fn with_known_len(ty: &Type, known: &Nat) -> Type {
    match ty {
        Type::Array { binder, elem, len }
            if heddle_ir::nat::counted::mentions_count(len) && !heddle_ir::nat::counted::mentions_count(known) =>
        {
            Type::Array { binder: binder.clone(), elem: elem.clone(), len: known.clone() }
        }
        other => other.clone(),
    }
}

/// The two parts of `concat(a, b)`, through the maps over it (each part
/// mapped the same way), where the map's function does not read its position.
fn appended_parts(v: &View) -> Option<(View, View)> {
    match &v.kind {
        ViewKind::Appended { a, b } => Some(((**a).clone(), (**b).clone())),
        ViewKind::Map { f, env, src, binder: None, prim, dim } => {
            let (a, b) = appended_parts(src)?;
            let elem = match &v.ty {
                Type::Array { elem, .. } => (**elem).clone(),
                _ => return None,
            };
            let mapped = |x: View| View {
                ty: Type::Array { binder: None, elem: Box::new(elem.clone()), len: x.len() },
                kind: ViewKind::Map { f: f.clone(), env: env.clone(), src: Box::new(x), binder: None, prim, dim: *dim },
            };
            Some((mapped(a), mapped(b)))
        }
        _ => None,
    }
}

/// `ty` with the counted lengths in `known` replaced by their counts (a
/// stream stored in a temporary, [`Lowerer::settle`]).
pub(super) fn with_counts_known(ty: &Type, known: &[(Nat, Nat)]) -> Type {
    if known.is_empty() {
        return ty.clone();
    }
    ty.map_nats(&mut |n| {
        n.map_bottom_up(&mut |m| match known.iter().find(|(from, _)| *from == m) {
            Some((_, to)) => to.clone(),
            None => m,
        })
    })
}

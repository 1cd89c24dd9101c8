//! Applying a primitive: instantiate its signature from `prims.sig`, check
//! the data first, then the functions at the types the data gives them.

use crate::check::{Arg, CResult, Checker, show};
use crate::metas::{MetaKind, divisibility};
use crate::typed::{Obligation, TExpr, TKind};
use heddle_ir::expr::{ExprKind, Literal};
use heddle_ir::prims::{PrimSig, Slot};
use heddle_ir::{Diagnostic, Name, Nat, Span, Type};
use std::collections::HashMap;

/// The fresh unknowns and given naturals of one use of a signature.
struct Instance {
    types: HashMap<u32, Type>,
    nats: HashMap<u32, Nat>,
    named: HashMap<Name, Nat>,
    binders: HashMap<Name, Name>,
}

impl Instance {
    fn ty(&mut self, c: &mut Checker, t: &Type) -> Type {
        match t {
            Type::Meta(letter) => {
                if let Some(x) = self.types.get(letter) {
                    return x.clone();
                }
                let m = c.metas.fresh_type(MetaKind::Any);
                self.types.insert(*letter, m.clone());
                m
            }
            Type::Scalar(_) | Type::Tensor(_) => t.clone(),
            Type::Tuple(ts) => Type::Tuple(ts.iter().map(|x| self.ty(c, x)).collect()),
            Type::Array { binder, elem, len } => {
                let binder = binder.as_ref().map(|b| {
                    if let Some(r) = self.binders.get(b) {
                        return r.clone();
                    }
                    let r = c.fresh(b.as_str());
                    self.binders.insert(b.clone(), r.clone());
                    r
                });
                let len = self.nat(c, len);
                Type::Array { binder, elem: Box::new(self.ty(c, elem)), len }
            }
            Type::Vector { elem, width } => {
                Type::Vector { elem: Box::new(self.ty(c, elem)), width: self.nat(c, width) }
            }
            Type::Fun { param, from, to } => {
                Type::Fun { param: param.clone(), from: Box::new(self.ty(c, from)), to: Box::new(self.ty(c, to)) }
            }
            Type::NatFun { var, body } => Type::NatFun { var: var.clone(), body: Box::new(self.ty(c, body)) },
        }
    }

    fn nat(&mut self, c: &mut Checker, n: &Nat) -> Nat {
        n.map_bottom_up(&mut |x| match x {
            Nat::Meta(letter) => {
                if let Some(v) = self.nats.get(&letter) {
                    return v.clone();
                }
                let m = c.metas.fresh_nat();
                self.nats.insert(letter, m.clone());
                m
            }
            Nat::Var(ref v) if v.as_str() == heddle_ir::nat::counted::COUNTED => c.fresh_count(),
            Nat::Var(ref v) => {
                if let Some(given) = self.named.get(v) {
                    given.clone()
                } else if let Some(r) = self.binders.get(v) {
                    Nat::Var(r.clone())
                } else {
                    x
                }
            }
            Nat::Sum { var, lo, hi, body } => {
                // The Σ index of a signature (`join`) is the binder instantiated above.
                let r = self.binders.get(&var).cloned().unwrap_or(var);
                Nat::Sum { var: r, lo, hi, body }
            }
            other => other,
        })
    }
}

impl Checker {
    /// Checks `name(args…)` for the primitive with signature `sig`.
    pub fn check_prim(
        &mut self,
        sig: &'static PrimSig,
        head_span: Span,
        args: Vec<Arg<'_>>,
        span: Span,
    ) -> CResult<TExpr> {
        let name = sig.name;
        let with_optional = sig.optional_count() > 0
            && matches!(args.first().and_then(|a| a.expr()).map(|e| &e.kind), Some(ExprKind::Lit(Literal::Int(_))));
        let expected = if with_optional { sig.arity() } else { sig.arity() - sig.optional_count() };
        let slot_names: Vec<String> = sig
            .slots
            .iter()
            .filter(|s| with_optional || !matches!(s, Slot::Nat { optional: true, .. }))
            .map(|s| match s {
                Slot::Nat { name, .. } | Slot::Fun { name, .. } | Slot::Value { name, .. } => name.to_string(),
                Slot::Input(_) => "data".to_string(),
            })
            .collect();
        if args.len() != expected {
            let msg = if args.len() < expected {
                format!("`{name}` expects {expected} arguments ({}), found {}", slot_names.join(", "), args.len())
            } else {
                format!(
                    "`{name}` takes {expected} arguments ({}), but {} were given",
                    slot_names.join(", "),
                    args.len()
                )
            };
            let d = Diagnostic::new(span, msg)
                .with_label("wrong number of arguments")
                .with_note(format!("{name} : {}", sig.text));
            return Err(match heddle_ir::prims::second_form(name) {
                Some(other) if heddle_ir::prims::is_reduce(name) => d.with_note(format!(
                    "{name} : {} — without an initial value, the operator takes one pair: `{name}(x => x.1 + x.2)`",
                    other.text
                )),
                _ => d,
            });
        }
        if name == "iterate" {
            return self.check_iterate(args, span);
        }

        let mut inst =
            Instance { types: HashMap::new(), nats: HashMap::new(), named: HashMap::new(), binders: HashMap::new() };
        // Pair slots with arguments, the optional dimension defaulting to 0.
        let mut pairs: Vec<(&Slot, Option<Arg>)> = Vec::new();
        let mut it = args.into_iter();
        for slot in &sig.slots {
            if let Slot::Nat { optional: true, .. } = slot
                && !with_optional
            {
                pairs.push((slot, None));
                continue;
            }
            pairs.push((slot, it.next()));
        }
        // Naturals first: later slot types mention them.
        let mut nats = Vec::new();
        for (slot, arg) in &pairs {
            if let Slot::Nat { name: slot_name, .. } = slot {
                let n = match arg {
                    None => Nat::Lit(0),
                    Some(a) => self.nat_argument(name, slot_name, a)?,
                };
                inst.named.insert(slot_name.clone(), n.clone());
                nats.push(n);
            }
        }
        // `split(k)` of a position-dependent array: chunks that keep each element's type.
        if name == "split"
            && let Some(k_data) = pairs.iter().position(|(s, _)| matches!(s, Slot::Input(_)))
            && let Some(data) = pairs[k_data].1.take()
        {
            let te = self.force(data)?;
            if let Type::Array { binder: Some(b), elem, len } = self.metas.zonk(&te.ty)
                && elem.mentions(&b)
            {
                return self.split_position_dependent(&nats[0], te, &b, &elem, &len, span);
            }
            pairs[k_data].1 = Some(Arg::Typed(te));
        }
        // `concat` of position-dependent arrays (the rows of two CSR matrices):
        // element `i` has the first array's type below its length, the second's after.
        if name == "concat"
            && let [(_, Some(a)), (_, Some(b))] = &mut pairs[..]
        {
            let (a, b) = (self.force(a.clone())?, self.force(b.clone())?);
            let dependent = |t: &Type| matches!(t, Type::Array { binder: Some(x), elem, .. } if elem.mentions(x));
            if dependent(&self.metas.zonk(&a.ty)) || dependent(&self.metas.zonk(&b.ty)) {
                return self.concat_position_dependent(a, b, span);
            }
            pairs[0].1 = Some(Arg::Typed(a));
            pairs[1].1 = Some(Arg::Typed(b));
        }
        // Data and values next, then functions at the types now known.
        let mut checked: Vec<Option<TExpr>> = vec![None; pairs.len()];
        for (k, (slot, arg)) in pairs.iter().enumerate() {
            let (want, what) = match slot {
                Slot::Input(t) => (t, "data".to_string()),
                Slot::Value { name: n, ty } => (ty, format!("`{n}`")),
                _ => continue,
            };
            let Some(arg) = arg.clone() else { continue };
            if let Arg::Expr(e, s) = &arg
                && self.arity(e, s) > 0
            {
                return Err(Diagnostic::new(e.span, format!("`{name}` expects {what} here, found a function"))
                    .with_label("expected data")
                    .with_note(format!("{name} : {}", sig.text)));
            }
            let want = inst.ty(self, want);
            let te = self.force(arg)?;
            let ctx = format!("in the {what} argument of `{name}`");
            self.unify_at(&want, &te.ty, te.span, &ctx).map_err(|d| d.with_note(format!("{name} : {}", sig.text)))?;
            checked[k] = Some(te);
        }
        let mut binder = None;
        // A function whose result type mentions its parameter (`fun(a => B@a.1)`).
        let mut escaping: Option<(Name, Span)> = None;
        for (k, (slot, arg)) in pairs.iter().enumerate() {
            let Slot::Fun { name: fname, params, result } = slot else { continue };
            let Some(arg) = arg.clone() else { continue };
            let (f, fscope) = match arg {
                Arg::Expr(e, s) => (e, s),
                Arg::Typed(t) => {
                    return Err(Diagnostic::new(
                        t.span,
                        format!("`{name}` expects a function for `{fname}`, found data"),
                    )
                    .with_label("expected a function"));
                }
            };
            let raw: Vec<Type> = params.iter().map(|p| inst.ty(self, p)).collect();
            let ptys: Vec<Type> = raw.iter().map(|t| self.metas.zonk(t)).collect();
            let want_result = inst.ty(self, result);
            let pair_operator = heddle_ir::prims::is_reduce(name) && sig.arity() == 2;
            let lam = self.check_fn(&f, &fscope, &ptys, span).map_err(|d| {
                if pair_operator {
                    d.with_note(format!("without an initial value, `{name}`'s operator takes one pair: `x.1` the elements so far combined, `x.2` the next (`{name}(x => x.1 + x.2)`)"))
                } else {
                    d
                }
            })?;
            let TKind::Lambda { body, .. } = &lam.kind else { unreachable!("check_fn returns a lambda") };
            let ctx = format!("in the result of the function given to `{name}`");
            self.unify_at(&want_result, &body.ty, f.span, &ctx)
                .map_err(|d| d.with_note(format!("{name} : {}", sig.text)))?;
            if heddle_ir::prims::is_map(name) {
                binder = inst.binders.values().find(|b| ptys.iter().any(|t| self.metas.zonk(t).mentions(b))).cloned();
            }
            if let TKind::Lambda { params, body } = &lam.kind
                && let Some((p, _)) = params.first()
                && self.metas.zonk(&body.ty).mentions(p)
            {
                escaping = Some((p.clone(), f.span));
            }
            checked[k] = Some(lam);
        }
        let result = inst.ty(self, &sig.result);
        let result = self.metas.zonk(&result);
        let result = match escaping {
            Some((p, fspan)) => self.position_dependent(name, result, &p, fspan, &checked)?,
            None => result,
        };
        let result = lift_counts(name, result, self);
        self.post_checks(name, &inst, &result, head_span)?;
        if heddle_ir::prims::is_reduce(name) && sig.arity() == 2 {
            // Without an initial value the array must have an element to start from.
            let n = inst.nats.get(&('N' as u32)).map(|n| self.metas.zonk_nat(n));
            if let Some(n) = n.filter(|n| n.const_value() == Some(0)) {
                return Err(Diagnostic::new(
                    span,
                    format!("`{name}` without an initial value needs a non-empty array, but this one has length {n}"),
                )
                .with_label("reduces an empty array")
                .with_note(format!("give an initial value, the result for an empty array: `{name}(op, init)`")));
            }
        }
        self.take_pending(name, span);
        let args: Vec<TExpr> = checked.into_iter().flatten().collect();
        Ok(TExpr { kind: TKind::Prim { name, nats, args, binder }, ty: result, span })
    }

    /// Turns the divisions taken on trust by the last pattern into obligations.
    fn take_pending(&mut self, name: &str, span: Span) {
        for p in std::mem::take(&mut self.metas.pending) {
            self.obligations.push(Obligation {
                cond: divisibility(&self.metas.zonk_nat(&p.length), &self.metas.zonk_nat(&p.divisor)),
                span,
                reason: format!("`{name}` needs the length {} to be a multiple of {}", p.length, p.divisor),
            });
        }
    }

    /// `split(k)` of `[b -> T(b)]_len`: `[c -> [j -> T(c * k + j)]_k]_{len / k}`
    /// (chunk `c` holds elements `c * k ..`). Divisibility as for any split: exact
    /// when the normal form shows it, refused when both are constants that do not
    /// divide, else checked at run time.
    fn split_position_dependent(
        &mut self,
        k: &Nat,
        data: TExpr,
        b: &Name,
        elem: &Type,
        len: &Nat,
        span: Span,
    ) -> CResult<TExpr> {
        let m = self.metas.fresh_nat();
        if let Err(e) = self.metas.unify_nat(&Nat::mul(k.clone(), m.clone()), len) {
            let d = self.mismatch(e, data.span, "in the data argument of `split`");
            return Err(
                d.with_note(format!("split : {}", heddle_ir::prims::lookup("split").map_or("", |s| s.text.as_str())))
            );
        }
        self.take_pending("split", span);
        let (c, j) = (self.fresh("c"), self.fresh("j"));
        let at = Nat::add(Nat::mul(Nat::Var(c.clone()), k.clone()), Nat::Var(j.clone()));
        let chunk_elem = elem.subst_nat(b, &at);
        let chunk = Type::Array { binder: Some(j), elem: Box::new(chunk_elem), len: k.clone() };
        let ty = Type::Array { binder: Some(c), elem: Box::new(chunk), len: self.metas.zonk_nat(&m) };
        Ok(TExpr {
            kind: TKind::Prim { name: "split", nats: vec![k.clone()], args: vec![data], binder: None },
            ty,
            span,
        })
    }

    /// `concat(a, b)` where an element type depends on its position:
    /// `[i -> T(i)]_N` and `[j -> U(j)]_M` give `[i -> T ∨ U]_{N + M}`, where
    /// `T ∨ U` has the shape both share and, wherever their lengths differ,
    /// `i < N ? len_T(i) : len_U(i - N)`.
    fn concat_position_dependent(&mut self, a: TExpr, b: TExpr, span: Span) -> CResult<TExpr> {
        let not_array = |t: &TExpr| {
            Diagnostic::new(t.span, "`concat` expects arrays").with_label(format!("this has type {}", show(&t.ty)))
        };
        let (Type::Array { binder: ba, elem: ea, len: na }, Type::Array { binder: bb, elem: eb, len: nb }) =
            (self.metas.zonk(&a.ty), self.metas.zonk(&b.ty))
        else {
            return Err(if matches!(self.metas.zonk(&a.ty), Type::Array { .. }) {
                not_array(&b)
            } else {
                not_array(&a)
            });
        };
        let i = self.fresh("i");
        let at = Nat::Var(i.clone());
        let ea = match &ba {
            Some(x) => ea.subst_nat(x, &at),
            None => *ea,
        };
        let eb = match &bb {
            Some(x) => eb.subst_nat(x, &Nat::sub(at.clone(), na.clone())),
            None => *eb,
        };
        let first = heddle_ir::nat::NatCond::Cmp(heddle_ir::nat::CmpOp::Lt, at, na.clone());
        let elem = self.either(&ea, &eb, &first, b.span).map_err(|d| {
            d.with_note(format!("the first array's elements: {}; the second's: {}", show(&ea), show(&eb)))
                .with_note("concat : [T]_N -> [T]_M -> [T]_{N + M}")
        })?;
        let binder = elem.mentions(&i).then_some(i);
        let ty = Type::Array { binder, elem: Box::new(elem), len: Nat::add(na, nb) };
        Ok(TExpr { kind: TKind::Prim { name: "concat", nats: vec![], args: vec![a, b], binder: None }, ty, span })
    }

    /// The type of an element that is `a` where `first` holds and `b` where
    /// not: their shared shape, with a conditional length where theirs differ.
    fn either(&mut self, a: &Type, b: &Type, first: &heddle_ir::nat::NatCond, span: Span) -> CResult<Type> {
        match (self.metas.zonk(a), self.metas.zonk(b)) {
            (Type::Array { binder: xa, elem: ea, len: la }, Type::Array { binder: xb, elem: eb, len: lb }) => {
                // One binder for both element types.
                let x = xa.clone().or(xb.clone()).unwrap_or_else(|| self.fresh("k"));
                let ea = match &xa {
                    Some(v) if *v != x => ea.subst_nat(v, &Nat::Var(x.clone())),
                    _ => *ea,
                };
                let eb = match &xb {
                    Some(v) if *v != x => eb.subst_nat(v, &Nat::Var(x.clone())),
                    _ => *eb,
                };
                let elem = self.either(&ea, &eb, first, span)?;
                let len = if self.metas.zonk_nat(&la) == self.metas.zonk_nat(&lb) {
                    la
                } else {
                    Nat::Cond(Box::new(first.clone()), Box::new(la), Box::new(lb))
                };
                let binder = elem.mentions(&x).then_some(x);
                Ok(Type::Array { binder, elem: Box::new(elem), len })
            }
            (Type::Tuple(xs), Type::Tuple(ys)) if xs.len() == ys.len() => {
                let parts =
                    xs.iter().zip(&ys).map(|(x, y)| self.either(x, y, first, span)).collect::<CResult<Vec<_>>>()?;
                Ok(Type::Tuple(parts))
            }
            (x, y) => {
                self.unify_at(
                    &x,
                    &y,
                    span,
                    "in the elements of `concat`'s second array (the first array's elements are expected)",
                )?;
                Ok(self.metas.zonk(&x))
            }
        }
    }

    /// The result of `map(fun(a => …))` over `xs` (or `generate(n, fun(i => …))`)
    /// whose element type mentions the parameter: element `p` has that type
    /// with `a` replaced by `xs@p` (`i` by `p`), so the result is a
    /// position-dependent array and the parameter does not escape its scope.
    fn position_dependent(
        &mut self,
        prim: &str,
        result: Type,
        param: &Name,
        span: Span,
        checked: &[Option<TExpr>],
    ) -> CResult<Type> {
        let Type::Array { binder, elem, len } = result else { return Ok(result) };
        if !heddle_ir::prims::is_map(prim) && prim != "generate" {
            return Ok(Type::Array { binder, elem, len });
        }
        let b = binder.unwrap_or_else(|| self.fresh("i"));
        let position = heddle_ir::Expr::var(b.clone());
        let replacement = if heddle_ir::prims::is_map(prim) {
            let data = checked.iter().flatten().find(|t| !matches!(t.kind, TKind::Lambda { .. }));
            match data.map(|t| &t.kind) {
                Some(TKind::Var(xs)) => heddle_ir::Expr::synth(ExprKind::Index {
                    array: Box::new(heddle_ir::Expr::var(xs.clone())),
                    index: Box::new(position),
                }),
                _ => {
                    return Err(Diagnostic::new(span, format!("the type of this function's result depends on its argument `{param}`"))
                        .with_label(format!("its result type mentions `{param}`"))
                        .with_note(format!("name the array `{prim}` goes over (`let xs = … in xs :>> {prim}(…)`), so the result's type can say which element each length comes from")));
                }
            }
        } else {
            position
        };
        let elem = elem.map_nats(&mut |n| n.subst_expr(param, &replacement));
        let binder = elem.mentions(&b).then_some(b);
        Ok(Type::Array { binder, elem: Box::new(elem), len })
    }

    fn nat_argument(&mut self, prim: &str, slot: &Name, arg: &Arg) -> CResult<Nat> {
        match arg {
            Arg::Expr(e, s) if crate::check::only_nats(e, s) => {
                let n = e.as_nat().expect("only_nats implies a natural");
                Ok(n)
            }
            Arg::Expr(e, s) => {
                // A name that is not a natural, or some other expression.
                let found = match &e.kind {
                    ExprKind::Var(x) if s.lookup(x).is_none() && heddle_ir::prims::lookup(x.as_str()).is_none() => {
                        return Err(crate::check::unbound(x, e.span, []));
                    }
                    _ => "an expression that is not a natural",
                };
                Err(Diagnostic::new(e.span, format!("`{prim}` expects a natural number for `{slot}`, found {found}"))
                    .with_label("expected a natural such as 4, n or n * 2"))
            }
            Arg::Typed(t) => Err(Diagnostic::new(t.span, format!("`{prim}` expects a natural number for `{slot}`"))
                .with_label("expected a natural")),
        }
    }

    /// The rules `prims.sig` cannot state (see `heddle_ir::prims::note`).
    fn post_checks(&mut self, name: &str, inst: &Instance, result: &Type, span: Span) -> CResult<()> {
        match name {
            "scatterAdd" => {
                // The first component of each pair is where its value goes: an integer of any width.
                if let Some(index) = inst.types.get(&('I' as u32)).cloned() {
                    let int = self.metas.fresh_type(MetaKind::Integer);
                    self.unify_at(
                        &int,
                        &index,
                        span,
                        "in the first component of each `scatterAdd` pair (the index its value is added at)",
                    )?;
                }
                // The values are summed: numbers, or tuples and arrays of them.
                if let Some(value) = inst.types.get(&('T' as u32)).map(|t| self.metas.zonk(t))
                    && mentions_bool(&value)
                {
                    return Err(Diagnostic::new(span, "`scatterAdd` sums its values, and booleans cannot be added")
                        .with_label(format!("the values have type {}", show(&value))));
                }
            }
            "union" | "intersect" | "compressAdd" | "compressLast" => {
                // Coordinates are compared (and, for compressAdd, index the workspace): integers of any width.
                if let Some(index) = inst.types.get(&('I' as u32)).cloned() {
                    let int = self.metas.fresh_type(MetaKind::Integer);
                    self.unify_at(
                        &int,
                        &index,
                        span,
                        &format!("in the coordinates given to `{name}` (the first component of each pair)"),
                    )?;
                }
                if name == "compressAdd"
                    && let Some(value) = inst.types.get(&('T' as u32)).map(|t| self.metas.zonk(t))
                {
                    self.require_numeric(&value, span, "`compressAdd` (it sums its values)")?;
                }
            }
            "sortBy" => {
                // Keys are compared: scalars with an order, or tuples of them (lexicographic).
                if let Some(key) = inst.types.get(&('U' as u32)).map(|t| self.metas.zonk(t))
                    && let Some(why) = unordered(&key)
                {
                    return Err(Diagnostic::new(span, format!("`sortBy` compares its keys, and {why}"))
                            .with_label(format!("the key has type {}", show(&key)))
                            .with_note("a key is a scalar (not complex) or a tuple of such scalars: `sortBy(e => e.1)`, `sortBy(e => (e.2, e.1))`"));
                }
            }
            "join" => {
                if let Type::Array { elem, .. } = result
                    && let Some(b) = inst.binders.values().find(|b| elem.mentions(b))
                {
                    return Err(Diagnostic::new(
                        span,
                        "`join` needs inner arrays whose elements do not depend on the position",
                    )
                    .with_label(format!("the element type {} depends on {b}", show(elem))));
                }
            }
            "complex" => {
                let part = inst.types.get(&('T' as u32)).cloned().unwrap_or(Type::Meta(u32::MAX));
                let whole = inst.types.get(&('C' as u32)).cloned().unwrap_or(Type::Meta(u32::MAX));
                if !matches!(self.metas.zonk(&part), Type::Scalar(_)) {
                    let float = self.metas.fresh_type(MetaKind::Float);
                    self.unify_at(&float, &part, span, "in the parts given to `complex`")?;
                }
                match self.metas.zonk(&part) {
                    Type::Scalar(p) => match p.complex_of() {
                        Some(c) => self.unify_at(&Type::Scalar(c), &whole, span, "in the result of `complex`")?,
                        None => {
                            return Err(Diagnostic::new(
                                span,
                                format!("`complex` takes parts of type f32 or f64, found {p}"),
                            )
                            .with_label(format!("the parts have type {p}"))
                            .with_note("convert them first: `complex(double(a), double(b))`"));
                        }
                    },
                    _ => {
                        let c = self.metas.fresh_type(MetaKind::Complex);
                        self.unify_at(&c, &whole, span, "in the result of `complex`")?;
                        self.metas.link_complex(part, whole);
                    }
                }
            }
            "re" | "im" | "conj" => {
                let whole = inst.types.get(&('C' as u32)).cloned().unwrap_or(Type::Meta(u32::MAX));
                let c = self.metas.fresh_type(MetaKind::Complex);
                self.unify_at(&c, &whole, span, &format!("in the argument of `{name}`")).map_err(|d| {
                    d.with_note(format!("`{name}` takes a complex number (complex<f32> or complex<f64>)"))
                })?;
                if let Some(part) = inst.types.get(&('T' as u32)).cloned() {
                    let float = self.metas.fresh_type(MetaKind::Float);
                    self.unify_at(&float, &part, span, &format!("in the result of `{name}`"))?;
                    self.metas.link_complex(part, whole);
                }
                self.metas.settle_complex();
            }
            conv if heddle_ir::prims::conversion(conv).is_some() => {
                let arg = inst.types.get(&('T' as u32)).map(|t| self.metas.zonk(t));
                match arg {
                    Some(Type::Scalar(s)) if s.is_complex() => {
                        return Err(Diagnostic::new(span, format!("`{conv}` converts a real number, found {s}"))
                            .with_label(format!("this has type {s}"))
                            .with_note("take a part first: `re(z)`, `im(z)`"));
                    }
                    Some(Type::Scalar(_)) => {}
                    // An unknown (a literal): any number converts.
                    Some(t @ Type::Meta(_)) => self.require_numeric(&t, span, &format!("`{conv}`"))?,
                    other => {
                        let found = other.map_or("?".into(), |t| show(&t));
                        return Err(Diagnostic::new(span, format!("`{conv}` converts a scalar, found {found}"))
                            .with_label(format!("this has type {found}"))
                            .with_note(format!("to convert every element of an array, map it: `xs :>> map({conv})`")));
                    }
                }
            }
            "asVector" | "asScalar" => {
                let w = inst.named.get(&Name::from("w")).and_then(|w| w.const_value());
                if name == "asVector" && !w.is_some_and(|w| [2, 3, 4, 8, 16].contains(&w)) {
                    return Err(Diagnostic::new(span, "`asVector` needs a constant width of 2, 3, 4, 8 or 16")
                        .with_label("vector width"));
                }
                let elem = inst.types.values().next().map(|t| self.metas.zonk(t));
                // An unknown that can only become a scalar (a literal's type,
                // `generate(n, fun(i => 0.0))`) is one: it is defaulted later.
                let scalar_unknown = elem.as_ref().and_then(|t| self.metas.kind_of(t)).is_some_and(|k| {
                    matches!(k, MetaKind::Numeric | MetaKind::Float | MetaKind::Integer | MetaKind::Complex)
                });
                if !matches!(elem, Some(Type::Scalar(_))) && !scalar_unknown {
                    return Err(Diagnostic::new(span, format!("`{name}` needs an array of scalars"))
                        .with_label(format!("found elements of type {}", elem.map_or("?".into(), |t| show(&t)))));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `iterate(k, f)(x)` is `f(f(…f(x)))`: each application is checked at its own type.
    fn check_iterate(&mut self, args: Vec<Arg<'_>>, span: Span) -> CResult<TExpr> {
        const MAX_ITERATIONS: i64 = 64;
        let mut it = args.into_iter();
        let (k_arg, f_arg, x_arg) = (it.next(), it.next(), it.next());
        let (Some(k_arg), Some(Arg::Expr(f, fscope)), Some(x_arg)) = (k_arg, f_arg, x_arg) else {
            return Err(Diagnostic::new(span, "`iterate` expects (k, f, data)").with_label("here"));
        };
        let k = self.nat_argument("iterate", &Name::from("k"), &k_arg)?;
        let Some(k) = k.const_value().filter(|k| (0..=MAX_ITERATIONS).contains(k)) else {
            return Err(Diagnostic::new(
                k_arg.span(),
                format!("`iterate` needs a constant count between 0 and {MAX_ITERATIONS}"),
            )
            .with_label("the number of iterations"));
        };
        let mut cur = self.force(x_arg)?;
        for _ in 0..k {
            let ty = self.metas.zonk(&cur.ty);
            let lam = self.check_fn(&f, &fscope, std::slice::from_ref(&ty), span)?;
            let TKind::Lambda { mut params, body } = lam.kind else { unreachable!("check_fn returns a lambda") };
            let (p, _) = params.remove(0);
            let ty = body.ty.clone();
            cur = TExpr { kind: TKind::Let { name: p, value: Box::new(cur), body }, ty, span };
        }
        Ok(cur)
    }
}

/// A map (or `generate`) whose function returns something of counted length
/// returns one such length per position: `toNat(count#k)` in the function's
/// result becomes `toNat(count#k@i)` (see `heddle_ir::nat::counted`).
fn lift_counts(name: &str, result: Type, c: &mut Checker) -> Type {
    match result {
        Type::Array { binder, elem, len }
            if (heddle_ir::prims::is_map(name) || name == "generate") && elem.mentions_count() =>
        {
            let b = binder.unwrap_or_else(|| c.fresh("i"));
            let elem = elem.lift_counts(&b);
            Type::Array { binder: Some(b), elem: Box::new(elem), len }
        }
        other => other,
    }
}

/// Does a type contain `bool` anywhere (a value `+` cannot add)?
/// Why values of type `t` cannot be compared as a `sortBy` key, if they cannot:
/// keys are scalars other than complex numbers, or tuples of keys. An
/// unsolved type (a literal's) is a number, which can.
fn unordered(t: &Type) -> Option<String> {
    match t {
        Type::Scalar(s) if s.is_complex() => Some(format!("{s} has no order")),
        Type::Scalar(_) | Type::Meta(_) => None,
        Type::Tuple(ts) => ts.iter().find_map(unordered),
        Type::Array { .. } => Some("an array is not a key".to_string()),
        Type::Vector { .. } => Some("a vector is not a key".to_string()),
        other => Some(format!("{} is not a key", show(other))),
    }
}

fn mentions_bool(t: &Type) -> bool {
    match t {
        Type::Scalar(s) => *s == heddle_ir::ScalarType::Bool,
        Type::Tuple(ts) => ts.iter().any(mentions_bool),
        Type::Array { elem, .. } | Type::Vector { elem, .. } => mentions_bool(elem),
        _ => false,
    }
}

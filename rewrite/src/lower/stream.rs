//! Streams: arrays that a pattern produces in order and that cannot be
//! indexed — the result of co-iteration (`union`, `intersect`) and of the
//! expand/compress workspace (`compressAdd`), and maps over them.
//!
//! Their lengths are *counted* (see `heddle_ir::nat::counted`). A stream is
//! consumed three ways: [`Lowerer::each_stream`] visits its elements in
//! order (a reduction over it, or writing it to the next free records of
//! the output); [`Lowerer::stream_len`] counts them with the cheapest loop
//! that can (coordinates only, no values), which is what a counting phase
//! stores; [`Lowerer::index_stream`] takes element `k` of one (`u@k`) by
//! walking it to the end, which also counts it for the bounds check. A
//! pattern that reads it by position stores it first (`emit.rs`, `settle`),
//! in a temporary with room for [`Lowerer::stream_capacity`] records where
//! the inputs bound it over the naturals, or over the longest row of a
//! nested input that the host computes before the launch (written in one
//! pass that counts), else of the length counted first. A `select` between a stream and a map
//! of it (`ViewKind::Choice`) is a stream too: the chosen one is walked.
//!
//! - **Co-iteration** walks the two sorted coordinate lists with one cursor
//!   each, in a loop of at most `na + nb` steps (each step advances at least
//!   one cursor): where both have the coordinate, both values; in a union,
//!   where only one has it, that value and the other list's default. The
//!   count is `matches` for an intersection and `na + nb - matches` for a
//!   union, so counting never loads a value.
//! - **The workspace** (Gustavson's SpMSpM, MLIR's expand/compress) keeps,
//!   per worker, a dense row of sums, a mask of the coordinates filled and
//!   the list of them. Each (coordinate, value) pair is checked in
//!   `0 .. n`, added in, and its coordinate listed the first time; the list
//!   is sorted (`Stmt::Sort`) — or, for a row filled more than 1/8, rebuilt
//!   in order from the mask, which is cheaper then — and walked, and each visited entry is reset to
//!   zero, so the workspace is clean for the worker's next row without an
//!   O(n) clear. Counting uses the mask and the list alone.

use super::view::ViewKind;
use super::{Env, Lowerer, Val, View, unsupported};
use heddle_ir::loops::{BinOp, Block, Expr as L, Schedule, Space, Stmt};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Span, Type};

/// A `compressAdd`'s workspace after its expand step (see `expand`).
#[derive(Clone)]
pub(super) struct Expanded {
    /// Which coordinates got a value (`bool` per coordinate).
    pub mask: Name,
    /// The coordinates that got one, `count` of them, in the order they came (sorted by `order_list`).
    pub list: Name,
    /// The sums per coordinate (when values are wanted).
    pub sums: Option<Name>,
    /// How many coordinates got a value.
    pub count: Name,
    /// The workspace length.
    pub n_e: L,
    /// The values' type.
    pub value_ty: ScalarType,
    /// `compressLast`: each coordinate's value is stored, not added, so the
    /// sums need no reset to zero (and may be booleans).
    pub last: bool,
}

/// Resets coordinate `k` of the workspace for the worker's next row.
pub(super) fn reset(x: &Expanded, k: &L) -> Vec<Stmt> {
    let mut out = Vec::new();
    if let Some(sums) = &x.sums
        && !x.last
    {
        let zero = if x.value_ty.is_float() { L::Float(0.0, x.value_ty) } else { L::Int(0, x.value_ty) };
        out.push(Stmt::Store { buf: sums.clone(), index: k.clone(), field: 0, value: zero });
    }
    out.push(Stmt::Store { buf: x.mask.clone(), index: k.clone(), field: 0, value: L::Bool(false) });
    out
}

/// What to do with each element of a stream.
pub(super) type Visit<'a, 'k> = &'a mut dyn FnMut(&mut Lowerer<'k>, Val, &mut Block) -> Result<(), Diagnostic>;

/// Is `v` (or what it maps) a stream?
pub(super) fn is_stream(v: &View) -> bool {
    match &v.kind {
        ViewKind::Merge { .. } | ViewKind::Compress { .. } | ViewKind::Filter { .. } => true,
        ViewKind::Map { src, .. } => is_stream(src),
        // `select` between a stream and an array of its length: the chosen one walked.
        ViewKind::Choice { a, b, .. } => is_stream(a) || is_stream(b),
        _ => false,
    }
}

/// The coordinate type of a stream's elements (the first tuple component).
fn coordinate_type(v: &View) -> ScalarType {
    match &v.ty {
        Type::Array { elem, .. } => match &**elem {
            Type::Tuple(ts) => ts.first().and_then(Type::as_scalar).unwrap_or(ScalarType::I64),
            _ => ScalarType::I64,
        },
        _ => ScalarType::I64,
    }
}

fn cast(e: L, from: ScalarType, to: ScalarType) -> L {
    if from == to { e } else { L::Cast(to, Box::new(e)) }
}

fn incr(var: &Name) -> Stmt {
    Stmt::Assign { var: var.clone(), value: L::bin(BinOp::Add, L::var(var.clone()), L::index(1)) }
}

/// How many entries counting the stream `v` walks, where its lists are
/// indexable: a co-iteration's, the sum of its operands' (for a counting
/// phase's work estimate; `None` for a workspace or a filter).
pub(super) fn stream_bound(v: &View) -> Option<Nat> {
    let walked = |x: &View| if is_stream(x) { stream_bound(x) } else { Some(x.len()) };
    match &v.kind {
        ViewKind::Map { src, .. } if is_stream(src) => stream_bound(src),
        ViewKind::Merge { a, b, .. } => Some(Nat::add(walked(a)?, walked(b)?)),
        _ => None,
    }
}

impl<'k> Lowerer<'k> {
    /// Emits a visit of every element of the stream `v`, in order.
    pub(super) fn each_stream(
        &mut self,
        v: &View,
        env: &Env,
        body: &mut Block,
        f: Visit<'_, 'k>,
    ) -> Result<(), Diagnostic> {
        let span = self.kernel.body.span;
        match &v.kind {
            ViewKind::Map { f: g, env: genv, src, .. } => {
                let (g, genv) = ((**g).clone(), genv.clone());
                self.each_stream(src, env, body, &mut |cx, x, inner| {
                    let y = cx.apply(&g, vec![x], &genv, inner)?;
                    f(cx, y, inner)
                })
            }
            ViewKind::Merge { .. } if super::coiter::nested(v) => self.coiterate(v, env, body, Some(f)).map(|_| ()),
            ViewKind::Merge { a, b, defaults, span } => {
                let coord = coordinate_type(v);
                self.merge(a, b, defaults.as_deref(), coord, env, *span, body, Some(f)).map(|_| ())
            }
            ViewKind::Compress { src, n, last, span } => {
                self.compress(src, n, *last, coordinate_type(v), env, *span, body, Some(f)).map(|_| ())
            }
            ViewKind::Choice { cond, a, b, .. } => {
                // Only the chosen array is walked (its checks made), as the interpreter evaluates only it.
                let (mut then, mut els) = (Block::new(), Block::new());
                self.each(a, env, Schedule::Seq, &mut then, &mut *f)?;
                self.each(b, env, Schedule::Seq, &mut els, &mut *f)?;
                body.push(Stmt::If { cond: cond.clone(), then, els });
                Ok(())
            }
            ViewKind::Filter { p, env: penv, src, .. } => {
                let (p, penv) = ((**p).clone(), penv.clone());
                self.each(src, env, Schedule::Seq, body, &mut |cx, x, inner| {
                    // The element is read once: the predicate and the visit share it.
                    let x = cx.share(x, "kept", inner);
                    let Val::Scalar(keep, _) = cx.apply(&p, vec![x.clone()], &penv, inner)? else {
                        return Err(super::bug(span, "a `filter` predicate that is not a boolean"));
                    };
                    let mut then = Block::new();
                    f(cx, x, &mut then)?;
                    inner.push(Stmt::If { cond: keep, then, els: Block::new() });
                    Ok(())
                })
            }
            _ => Err(unsupported(span, "visiting an array that is not a stream")),
        }
    }

    /// Element `k` of the stream `v` (`u@k`), whose elements have type
    /// `ty` (scalars or tuples of them): the stream is walked once, element
    /// `k` kept as it passes, and `k` checked below the number walked —
    /// an index past the end is the run-time error indexing always gives.
    pub(super) fn index_stream(
        &mut self,
        v: &View,
        k: &Nat,
        ty: &Type,
        what: &str,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let mut declared = Vec::new();
        super::operators::declared_leaves(ty, &mut declared);
        let Some(types) = declared.into_iter().collect::<Option<Vec<ScalarType>>>() else {
            return Err(unsupported(
                span,
                "indexing the result of `union`, `intersect`, `compressAdd` or `filter` whose elements hold arrays",
            ));
        };
        let kept: Vec<Name> = types.iter().map(|_| self.fresh("kept")).collect();
        for (var, t) in kept.iter().zip(&types) {
            let zero = if t.is_float() {
                L::Float(0.0, *t)
            } else if *t == ScalarType::Bool {
                L::Bool(false)
            } else {
                L::Int(0, *t)
            };
            body.push(Stmt::Var { var: var.clone(), ty: *t, init: zero });
        }
        let walked = self.fresh("walked");
        body.push(Stmt::Var { var: walked.clone(), ty: ScalarType::I64, init: L::index(0) });
        let ke = self.index_expr(k, &Env::default(), body)?;
        let (vars, leaf_types, counter) = (kept.clone(), types.clone(), walked.clone());
        self.each_stream(v, env, body, &mut |_, x, inner| {
            let mut xs = Vec::new();
            if !super::operators::leaves(&x, &mut xs) || xs.len() != vars.len() {
                return Err(super::bug(span, "a stream element whose shape differs from its type"));
            }
            let then: Vec<Stmt> = vars
                .iter()
                .zip(xs)
                .zip(&leaf_types)
                .map(|((var, (e, s)), t)| Stmt::Assign { var: var.clone(), value: super::numbers::convert(e, s, *t) })
                .collect();
            inner.push(Stmt::If {
                cond: L::bin(BinOp::Eq, L::var(counter.clone()), ke.clone()),
                then,
                els: Block::new(),
            });
            inner.push(incr(&counter));
            Ok(())
        })?;
        let id = self
            .check(format!("index out of bounds: an index into {what} is not below the number of its elements"), span);
        let ke = self.index_expr(k, &Env::default(), body)?;
        let cond =
            L::bin(BinOp::And, L::bin(BinOp::Ge, ke.clone(), L::index(0)), L::bin(BinOp::Lt, ke, L::var(walked)));
        body.push(Stmt::Check { cond, id });
        fn shaped(ty: &Type, from: &mut impl Iterator<Item = Val>) -> Val {
            match ty {
                Type::Tuple(ts) => Val::Tuple(ts.iter().map(|t| shaped(t, from)).collect()),
                _ => from.next().expect("one kept variable per leaf of the type"),
            }
        }
        let mut values = kept.into_iter().zip(types).map(|(var, t)| Val::Scalar(L::var(var), t));
        Ok(shaped(ty, &mut values))
    }

    /// The number of elements of `v` as an `i64` expression; a stream's is
    /// counted by a loop emitted into `body`.
    pub(super) fn stream_len(&mut self, v: &View, env: &Env, body: &mut Block) -> Result<L, Diagnostic> {
        match &v.kind {
            ViewKind::Map { src, .. } if is_stream(src) => self.stream_len(src, env, body),
            ViewKind::Merge { .. } if super::coiter::nested(v) => self.coiterate(v, env, body, None),
            ViewKind::Merge { a, b, defaults, span } => {
                self.merge(a, b, defaults.as_deref(), coordinate_type(v), env, *span, body, None)
            }
            ViewKind::Compress { src, n, last, span } => {
                self.compress(src, n, *last, coordinate_type(v), env, *span, body, None)
            }
            ViewKind::Choice { cond, a, b, .. } if is_stream(v) => {
                let n = self.fresh("chosen_len");
                body.push(Stmt::Var { var: n.clone(), ty: ScalarType::I64, init: L::index(0) });
                let (mut then, mut els) = (Block::new(), Block::new());
                let na = self.stream_len(a, env, &mut then)?;
                then.push(Stmt::Assign { var: n.clone(), value: na });
                let nb = self.stream_len(b, env, &mut els)?;
                els.push(Stmt::Assign { var: n.clone(), value: nb });
                body.push(Stmt::If { cond: cond.clone(), then, els });
                Ok(L::var(n))
            }
            ViewKind::Filter { p, env: penv, src, .. } => {
                let span = self.kernel.body.span;
                let kept = self.fresh("kept");
                body.push(Stmt::Var { var: kept.clone(), ty: ScalarType::I64, init: L::index(0) });
                let (p, penv, counter) = ((**p).clone(), penv.clone(), kept.clone());
                self.each(src, env, Schedule::Seq, body, &mut |cx, x, inner| {
                    let Val::Scalar(keep, _) = cx.apply(&p, vec![x], &penv, inner)? else {
                        return Err(super::bug(span, "a `filter` predicate that is not a boolean"));
                    };
                    inner.push(Stmt::If { cond: keep, then: vec![incr(&counter)], els: Block::new() });
                    Ok(())
                })?;
                Ok(L::var(kept))
            }
            _ => self.index_expr(&v.len(), env, body),
        }
    }

    /// Co-iterates `a` and `b`. With `visit`, calls it on every element of
    /// the union (`defaults` given) or intersection and returns 0; without,
    /// returns how many elements that is, counting only the coordinates the
    /// two lists share (|a ∪ b| = |a| + |b| - |a ∩ b|).
    fn merge(
        &mut self,
        a: &View,
        b: &View,
        defaults: Option<&(Val, Val)>,
        coord: ScalarType,
        env: &Env,
        span: Span,
        body: &mut Block,
        visit: Option<Visit<'_, 'k>>,
    ) -> Result<L, Diagnostic> {
        let outermost = self.merge_depth == 0;
        self.merge_depth += 1;
        let r = self.merge_steps(a, b, defaults, coord, env, span, body, visit, outermost);
        self.merge_depth -= 1;
        r
    }

    /// A coordinate a two-list merge visits: strictly increasing over the
    /// merge, since it checks both lists sorted (or binding has) and takes
    /// the smaller coordinate each step. Noted for the outermost merge only
    /// (a merge inside the visit is another sequence).
    fn note_merged(&mut self, outermost: bool, c: &L) {
        if outermost {
            self.merged_coordinates.push(c.clone());
        }
    }

    fn merge_steps(
        &mut self,
        a: &View,
        b: &View,
        defaults: Option<&(Val, Val)>,
        coord: ScalarType,
        env: &Env,
        span: Span,
        body: &mut Block,
        mut visit: Option<Visit<'_, 'k>>,
        outermost: bool,
    ) -> Result<L, Diagnostic> {
        let na = self.index_expr(&a.len(), env, body)?;
        let na = self.bind_index(na, "na", body);
        let nb = self.index_expr(&b.len(), env, body)?;
        let nb = self.bind_index(nb, "nb", body);
        let (na, nb) = (self.nat_to_expr(&na, env, body)?, self.nat_to_expr(&nb, env, body)?);
        let (ia, ib) = (self.fresh("ia"), self.fresh("ib"));
        body.push(Stmt::Var { var: ia.clone(), ty: ScalarType::I64, init: L::index(0) });
        body.push(Stmt::Var { var: ib.clone(), ty: ScalarType::I64, init: L::index(0) });
        let matches = self.fresh("matches");
        if visit.is_none() {
            body.push(Stmt::Var { var: matches.clone(), ty: ScalarType::I64, init: L::index(0) });
        }
        // One entry of a list: its coordinate (as i64 and as given) and value.
        let entry =
            |cx: &mut Self, v: &View, at: &Name, inner: &mut Block| -> Result<(L, L, ScalarType, Val), Diagnostic> {
                match cx.elem(v, &Nat::Var(at.clone()), inner)? {
                    Val::Tuple(mut items) if items.len() == 2 => {
                        let value = items.pop().unwrap_or(Val::Tuple(vec![]));
                        match items.pop() {
                            Some(Val::Scalar(c, s)) if s.is_int() => {
                                let wide =
                                    cx.share(Val::Scalar(cast(c, s, ScalarType::I64), ScalarType::I64), "crd", inner);
                                let Val::Scalar(wide, _) = wide else { unreachable!("share keeps scalars") };
                                Ok((wide.clone(), cast(wide, ScalarType::I64, coord), coord, value))
                            }
                            _ => Err(unsupported(span, "co-iteration over lists whose coordinates are not integers")),
                        }
                    }
                    _ => Err(unsupported(span, "co-iteration over lists that are not (coordinate, value) pairs")),
                }
            };
        let lt = |x: L, y: L| L::bin(BinOp::Lt, x, y);
        let both_left = L::bin(BinOp::And, lt(L::var(ia.clone()), na.clone()), lt(L::var(ib.clone()), nb.clone()));
        // Each list must be sorted by strictly increasing coordinate (a
        // `nonordered` or `nonunique` level need not be): checked as each entry
        // is consumed, so the merge is never silently wrong. One parent's entries
        // of a tensor parameter's ordered, unique level are sorted already (input
        // binding checks every tensor's storage: see `sorted_coordinates`), so
        // such a list goes unchecked.
        let what = if defaults.is_some() { "union" } else { "intersect" };
        let (last_a, last_b) = (self.fresh("last_a"), self.fresh("last_b"));
        let (sorted_a, sorted_b) = (self.sorted_leaf(a), self.sorted_leaf(b));
        if !sorted_a {
            body.push(Stmt::Var { var: last_a.clone(), ty: ScalarType::I64, init: L::index(0) });
        }
        if !sorted_b {
            body.push(Stmt::Var { var: last_b.clone(), ty: ScalarType::I64, init: L::index(0) });
        }
        let unsorted = |cx: &mut Self, which: &str| {
            cx.check(format!("`{what}`: the {which} list is not sorted by strictly increasing coordinate"), span)
        };
        let check_a = if sorted_a { None } else { Some(unsorted(self, "first")) };
        let check_b = if sorted_b { None } else { Some(unsorted(self, "second")) };
        let ordered = |c: &L, at: &Name, last: &Name, id: Option<u32>| match id {
            None => vec![],
            Some(id) => {
                let first = L::bin(BinOp::Eq, L::var(at.clone()), L::index(0));
                vec![
                    Stmt::Check {
                        cond: L::bin(BinOp::Or, first, L::bin(BinOp::Gt, c.clone(), L::var(last.clone()))),
                        id,
                    },
                    Stmt::Assign { var: last.clone(), value: c.clone() },
                ]
            }
        };
        // The same, for an entry taken only where `taken` holds (no branch).
        let ordered_if = |c: &L, taken: &L, at: &Name, last: &Name, id: Option<u32>| match id {
            None => vec![],
            Some(id) => {
                let first = L::bin(BinOp::Eq, L::var(at.clone()), L::index(0));
                let fine = L::bin(
                    BinOp::Or,
                    L::Not(Box::new(taken.clone())),
                    L::bin(BinOp::Or, first, L::bin(BinOp::Gt, c.clone(), L::var(last.clone()))),
                );
                vec![
                    Stmt::Check { cond: fine, id },
                    Stmt::Assign {
                        var: last.clone(),
                        value: L::Select(Box::new(taken.clone()), Box::new(c.clone()), Box::new(L::var(last.clone()))),
                    },
                ]
            }
        };
        let one_if = |c: &L| L::Select(Box::new(c.clone()), Box::new(L::index(1)), Box::new(L::index(0)));
        let grow =
            |var: &Name, by: L| Stmt::Assign { var: var.clone(), value: L::bin(BinOp::Add, L::var(var.clone()), by) };

        // While both lists have entries, a step takes the smaller coordinate
        // (both where they are equal) without a branch: which list moves is
        // data, and a mispredicted branch per entry is what a merge costs. In
        // a union whose values are scalars the element is chosen the same way
        // and visited once; an intersection visits only equal coordinates.
        let mut both = Block::new();
        let (ca, ca_out, _, va) = entry(self, a, &ia, &mut both)?;
        let (cb, cb_out, _, vb) = entry(self, b, &ib, &mut both)?;
        let take = |cx: &mut Self, x: &L, y: &L, name: &str, inner: &mut Block| match cx.share(
            Val::Scalar(L::bin(BinOp::Le, x.clone(), y.clone()), ScalarType::Bool),
            name,
            inner,
        ) {
            Val::Scalar(e, _) => e,
            _ => unreachable!("share keeps scalars"),
        };
        let scalar = |v: &Val| matches!(v, Val::Scalar(..));
        // Counting reads no value; a union visits a chosen value only where values are scalars.
        let chosen = match (&visit, defaults) {
            (Some(_), Some((za, zb))) => scalar(&va) && scalar(&vb) && scalar(za) && scalar(zb),
            _ => true,
        };
        if chosen {
            let ta = take(self, &ca, &cb, "take_a", &mut both);
            let tb = take(self, &cb, &ca, "take_b", &mut both);
            both.extend(ordered_if(&ca, &ta, &ia, &last_a, check_a));
            both.extend(ordered_if(&cb, &tb, &ib, &last_b, check_b));
            match (visit.as_mut(), defaults) {
                (Some(f), Some((za, zb))) => {
                    // Both values read (each list has an entry here), then chosen.
                    let (va, vb) = (self.share(va.clone(), "va", &mut both), self.share(vb.clone(), "vb", &mut both));
                    let pick = |c: &L, x: &Val, z: &Val| match (x, z) {
                        (Val::Scalar(x, s), Val::Scalar(z, _)) => {
                            Val::Scalar(L::Select(Box::new(c.clone()), Box::new(x.clone()), Box::new(z.clone())), *s)
                        }
                        _ => unreachable!("checked scalar above"),
                    };
                    let crd = L::Select(Box::new(ta.clone()), Box::new(ca_out.clone()), Box::new(cb_out.clone()));
                    let crd = self.share(Val::Scalar(crd, coord), "crd", &mut both);
                    if let Val::Scalar(c, _) = &crd {
                        self.note_merged(outermost, c);
                    }
                    let (x, y) = (pick(&ta, &va, za), pick(&tb, &vb, zb));
                    let (x, y) = (self.share(x, "x", &mut both), self.share(y, "y", &mut both));
                    f(self, Val::Tuple(vec![crd, x, y]), &mut both)?;
                }
                (Some(f), None) => {
                    let mut same = Block::new();
                    let c = self.share(Val::Scalar(ca_out.clone(), coord), "crd", &mut same);
                    if let Val::Scalar(e, _) = &c {
                        self.note_merged(outermost, e);
                    }
                    f(self, Val::Tuple(vec![c, va.clone(), vb.clone()]), &mut same)?;
                    both.push(Stmt::If { cond: L::bin(BinOp::Eq, ca.clone(), cb.clone()), then: same, els: vec![] });
                }
                (None, _) => both.push(grow(&matches, one_if(&L::bin(BinOp::And, ta.clone(), tb.clone())))),
            }
            both.push(grow(&ia, one_if(&ta)));
            both.push(grow(&ib, one_if(&tb)));
        } else {
            let (mut same, mut a_first, mut b_first) = (Block::new(), Block::new(), Block::new());
            same.extend(ordered(&ca, &ia, &last_a, check_a));
            same.extend(ordered(&cb, &ib, &last_b, check_b));
            a_first.extend(ordered(&ca, &ia, &last_a, check_a));
            b_first.extend(ordered(&cb, &ib, &last_b, check_b));
            // (A union visiting values that are not scalars: arrays, tuples.)
            if visit.is_some() {
                self.note_merged(outermost, &ca_out);
                self.note_merged(outermost, &cb_out);
            }
            match (visit.as_mut(), defaults) {
                (Some(f), Some((za, zb))) => {
                    f(self, Val::Tuple(vec![Val::Scalar(ca_out.clone(), coord), va.clone(), vb.clone()]), &mut same)?;
                    f(
                        self,
                        Val::Tuple(vec![Val::Scalar(ca_out.clone(), coord), va.clone(), zb.clone()]),
                        &mut a_first,
                    )?;
                    f(
                        self,
                        Val::Tuple(vec![Val::Scalar(cb_out.clone(), coord), za.clone(), vb.clone()]),
                        &mut b_first,
                    )?;
                }
                (Some(f), None) => {
                    f(self, Val::Tuple(vec![Val::Scalar(ca_out.clone(), coord), va.clone(), vb.clone()]), &mut same)?
                }
                (None, _) => same.push(incr(&matches)),
            }
            same.extend([incr(&ia), incr(&ib)]);
            a_first.push(incr(&ia));
            b_first.push(incr(&ib));
            let lower = vec![Stmt::If { cond: lt(ca.clone(), cb.clone()), then: a_first, els: b_first }];
            both.push(Stmt::If { cond: L::bin(BinOp::Eq, ca, cb), then: same, els: lower });
        }

        // In a union, the rest of whichever list is left over.
        let mut rest = Block::new();
        if let (Some(f), Some((za, zb))) = (visit.as_mut(), defaults) {
            let mut only_a = Block::new();
            let (ca, ca_out, _, va) = entry(self, a, &ia, &mut only_a)?;
            only_a.extend(ordered(&ca, &ia, &last_a, check_a));
            // Named once, so that what the visit stores is the noted coordinate itself.
            let ca_out = self.share(Val::Scalar(ca_out, coord), "crd", &mut only_a);
            if let Val::Scalar(c, _) = &ca_out {
                self.note_merged(outermost, c);
            }
            f(self, Val::Tuple(vec![ca_out, va, zb.clone()]), &mut only_a)?;
            only_a.push(incr(&ia));
            let mut only_b = Block::new();
            let (cb, cb_out, _, vb) = entry(self, b, &ib, &mut only_b)?;
            only_b.extend(ordered(&cb, &ib, &last_b, check_b));
            let cb_out = self.share(Val::Scalar(cb_out, coord), "crd", &mut only_b);
            if let Val::Scalar(c, _) = &cb_out {
                self.note_merged(outermost, c);
            }
            f(self, Val::Tuple(vec![cb_out, za.clone(), vb]), &mut only_b)?;
            only_b.push(incr(&ib));
            let b_left = vec![Stmt::If { cond: lt(L::var(ib.clone()), nb.clone()), then: only_b, els: vec![] }];
            rest.push(Stmt::If { cond: lt(L::var(ia.clone()), na.clone()), then: only_a, els: b_left });
        } else if check_a.is_some() || check_b.is_some() {
            // Nothing more to visit, but the interpreter checks every entry of
            // both lists: the rest of the longer one is taken and checked sorted.
            let mut only_a = Block::new();
            let (ca, _, _, _) = entry(self, a, &ia, &mut only_a)?;
            only_a.extend(ordered(&ca, &ia, &last_a, check_a));
            only_a.push(incr(&ia));
            let mut only_b = Block::new();
            let (cb, _, _, _) = entry(self, b, &ib, &mut only_b)?;
            only_b.extend(ordered(&cb, &ib, &last_b, check_b));
            only_b.push(incr(&ib));
            let b_left = vec![Stmt::If { cond: lt(L::var(ib.clone()), nb.clone()), then: only_b, els: vec![] }];
            rest.push(Stmt::If { cond: lt(L::var(ia.clone()), na.clone()), then: only_a, els: b_left });
        }
        let step = self.fresh("step");
        let steps = L::bin(BinOp::Add, na.clone(), nb.clone());
        body.push(Stmt::For {
            var: step,
            lo: L::index(0),
            hi: steps,
            schedule: Schedule::Seq,
            body: vec![Stmt::If { cond: both_left, then: both, els: rest }],
        });
        Ok(match (&visit, defaults) {
            (Some(_), _) => L::index(0),
            (None, Some(_)) => L::bin(BinOp::Sub, L::bin(BinOp::Add, na, nb), L::var(matches)),
            (None, None) => L::var(matches),
        })
    }

    /// The workspace buffers of a `compressAdd(n)`: allocated once per
    /// worker at the top of the kernel (see `Space::Workspace`).
    fn workspace(&mut self, base: &str, field: ScalarType, n: &L) -> Name {
        let buf = self.fresh(base);
        self.workspaces.push(Stmt::Alloc {
            buf: buf.clone(),
            fields: vec![field],
            len: n.clone(),
            space: Space::Workspace,
        });
        buf
    }

    /// `src :>> compressAdd(n)` (`compressLast(n)` where `last`). With
    /// `visit`, calls it on every (coordinate, sum) in increasing coordinate
    /// order and returns 0; without, returns how many coordinates received a
    /// value.
    fn compress(
        &mut self,
        src: &View,
        n: &Nat,
        last: bool,
        coord: ScalarType,
        env: &Env,
        span: Span,
        body: &mut Block,
        visit: Option<Visit<'_, 'k>>,
    ) -> Result<L, Diagnostic> {
        let x = self.expand(src, n, env, span, body, visit.is_some(), last)?;
        let Expanded { list, sums, count, value_ty, .. } = x.clone();
        // Compress: the filled coordinates in order, each reset for the next row.
        let t = self.fresh("t");
        let mut each = Block::new();
        let k = self.fresh("col");
        self.var_types.push((k.clone(), ScalarType::I64));
        each.push(Stmt::Let {
            var: k.clone(),
            ty: ScalarType::I64,
            value: L::load(list.clone(), L::var(t.clone()), 0),
        });
        let k_e = L::var(k.clone());
        match (visit, &sums) {
            (Some(f), Some(sums)) => {
                self.order_list(&x, body);
                let sum = self.fresh("sum");
                each.push(Stmt::Let { var: sum.clone(), ty: value_ty, value: L::load(sums.clone(), k_e.clone(), 0) });
                each.extend(reset(&x, &k_e));
                f(
                    self,
                    Val::Tuple(vec![
                        Val::Scalar(cast(k_e, ScalarType::I64, coord), coord),
                        Val::Scalar(L::var(sum), value_ty),
                    ]),
                    &mut each,
                )?;
            }
            _ => each.extend(reset(&x, &k_e)),
        }
        body.push(Stmt::For {
            var: t,
            lo: L::index(0),
            hi: L::var(count.clone()),
            schedule: Schedule::Seq,
            body: each,
        });
        Ok(if sums.is_some() { L::index(0) } else { L::var(count) })
    }

    /// The expand step of `src :>> compressAdd(n)`: every pair added into the
    /// workspace (the sums only `with_sums`; a pair's value replaces the
    /// earlier one where `last`, `compressLast`), its coordinates listed
    /// unsorted.
    pub(super) fn expand(
        &mut self,
        src: &View,
        n: &Nat,
        env: &Env,
        span: Span,
        body: &mut Block,
        with_sums: bool,
        last: bool,
    ) -> Result<Expanded, Diagnostic> {
        let value_ty = match &src.ty {
            Type::Array { elem, .. } => match &**elem {
                Type::Tuple(ts) if ts.len() == 2 => ts[1].as_scalar(),
                _ => None,
            },
            _ => None,
        };
        let Some(value_ty) = value_ty else {
            return Err(unsupported(span, "`compressAdd` of values that are not numbers"));
        };
        // The workspace is sized before any loop runs: its length must be a kernel-level natural.
        let mut sink = Block::new();
        let n_e = self.index_expr(n, &Env::default(), &mut sink)?;
        if !sink.is_empty() || !self.over_naturals(&n_e) {
            return Err(unsupported(
                span,
                &format!("`compressAdd({n})`: the workspace length must be a natural parameter or a formula over them"),
            ));
        }
        let mask = self.workspace("filled", ScalarType::Bool, &n_e);
        let list = self.workspace("added", ScalarType::I64, &n_e);
        let sums = if with_sums { Some(self.workspace("sums", value_ty, &n_e)) } else { None };
        let count = self.fresh("added_len");
        body.push(Stmt::Var { var: count.clone(), ty: ScalarType::I64, init: L::index(0) });

        // Expand: every pair into the workspace.
        let (mask_c, list_c, sums_c, count_c) = (mask.clone(), list.clone(), sums.clone(), count.clone());
        let n_nat = n.clone();
        self.each(src, env, Schedule::Seq, body, &mut |cx, pair, inner| {
            let Val::Tuple(mut items) = pair else {
                return Err(unsupported(span, "`compressAdd` of something other than pairs"));
            };
            let (Some(value), Some(Val::Scalar(i, is))) = (items.pop(), items.pop()) else {
                return Err(unsupported(span, "`compressAdd` of something other than pairs"));
            };
            let k = cx.bind_index(cast(i, is, ScalarType::I64), "slot", inner);
            cx.bounds_check(&k, &n_nat, "the workspace of `compressAdd`", span, inner)?;
            let k = cx.nat_to_expr(&k, &Env::default(), inner)?;
            let first = vec![
                Stmt::Store { buf: mask_c.clone(), index: k.clone(), field: 0, value: L::Bool(true) },
                Stmt::Store { buf: list_c.clone(), index: L::var(count_c.clone()), field: 0, value: k.clone() },
                incr(&count_c),
            ];
            inner.push(Stmt::If {
                cond: L::Not(Box::new(L::load(mask_c.clone(), k.clone(), 0))),
                then: first,
                els: vec![],
            });
            if let Some(sums) = &sums_c {
                let Val::Scalar(v, vs) = value else {
                    return Err(unsupported(span, "`compressAdd` of values that are not numbers"));
                };
                let value = cast(v, vs, value_ty);
                let sum = if last { value } else { L::bin(BinOp::Add, L::load(sums.clone(), k.clone(), 0), value) };
                inner.push(Stmt::Store { buf: sums.clone(), index: k, field: 0, value: sum });
            }
            Ok(())
        })?;
        Ok(Expanded { mask, list, sums, count, n_e, value_ty, last })
    }

    /// Sorts the expanded coordinates' list. Sorting m coordinates costs
    /// about m log m; reading the mask in order costs n, so a row filled more
    /// than 1/8 is listed from the mask instead.
    pub(super) fn order_list(&mut self, x: &Expanded, body: &mut Block) {
        let (mask, list, count, n_e) = (&x.mask, &x.list, &x.count, &x.n_e);
        let c = self.fresh("c");
        let relist = vec![
            Stmt::Store { buf: list.clone(), index: L::var(count.clone()), field: 0, value: L::var(c.clone()) },
            incr(count),
        ];
        let scan = vec![
            Stmt::Assign { var: count.clone(), value: L::index(0) },
            Stmt::For {
                var: c.clone(),
                lo: L::index(0),
                hi: n_e.clone(),
                schedule: Schedule::Seq,
                body: vec![Stmt::If { cond: L::load(mask.clone(), L::var(c), 0), then: relist, els: vec![] }],
            },
        ];
        let sort = vec![Stmt::Sort { buf: list.clone(), lo: L::index(0), len: L::var(count.clone()) }];
        let dense = L::bin(BinOp::Gt, L::bin(BinOp::Mul, L::var(count.clone()), L::index(8)), n_e.clone());
        body.push(Stmt::If { cond: dense, then: scan, els: sort });
    }

    /// Does `e` use only literals and natural arguments (so the host knows it before the launch)?
    pub(super) fn over_naturals(&self, e: &L) -> bool {
        match e {
            L::Int(..) => true,
            L::Var(v) => self.args.iter().any(|a| &a.name == v && matches!(a.kind, heddle_ir::loops::ArgKind::Nat)),
            L::Bin(_, a, b) => self.over_naturals(a) && self.over_naturals(b),
            L::Cast(_, a) | L::Neg(a) => self.over_naturals(a),
            _ => false,
        }
    }
}

impl Lowerer<'_> {
    /// An upper bound on the number of elements of the stream `v` over the
    /// natural parameters alone, so known before the launch, where the
    /// inputs give one: a union has at most the entries of both lists, an
    /// intersection at most those of the shorter, `compressAdd(n)` at most
    /// `n` coordinates and `filter` at most its array's elements; a list is
    /// bounded by its length where that is a formula over the naturals, or,
    /// where it is one parent's entries of a tensor parameter's ordered,
    /// unique level, by the level's size (its coordinates are distinct and
    /// below it: input binding checks both), or, where it is a row of a
    /// nested array parameter, by the longest row, a natural the host
    /// computes before the launch ([`largest_row`](Self::largest_row)). A stream stored in a temporary
    /// is given this many records (`materialize`), so the temporary can be
    /// allocated before the launch (a per-worker workspace, or a global
    /// buffer at the top of the kernel) and is written in one pass.
    pub(super) fn stream_capacity(&mut self, v: &View) -> Option<Nat> {
        match &v.kind {
            ViewKind::Map { src, .. } if is_stream(src) => self.stream_capacity(src),
            ViewKind::Merge { a, b, defaults: Some(_), .. } => {
                Some(Nat::add(self.list_capacity(a)?, self.list_capacity(b)?))
            }
            ViewKind::Merge { a, b, defaults: None, .. } => match (self.list_capacity(a), self.list_capacity(b)) {
                (Some(x), Some(y)) => Some(Nat::bin(heddle_ir::nat::NatOp::Min, x, y)),
                (x, y) => x.or(y),
            },
            ViewKind::Compress { n, .. } => Some(n.clone()),
            ViewKind::Filter { src, .. } => self.list_capacity(src),
            ViewKind::Choice { a, b, .. } => {
                Some(Nat::bin(heddle_ir::nat::NatOp::Max, self.list_capacity(a)?, self.list_capacity(b)?))
            }
            _ => None,
        }
    }

    /// An upper bound over the naturals on the length of `x`, an array that
    /// is not a stream, looking through the views no longer than the array
    /// they read (a map, a part of `interleave`, a slice, a zip, `unzip`):
    /// the room of a local temporary whose length only the data gives
    /// (`materialize`), which OpenCL sizes at the launch.
    pub(super) fn length_bound(&mut self, x: &View) -> Option<Nat> {
        if is_stream(x) {
            return None;
        }
        self.list_capacity(x).or_else(|| match &x.kind {
            ViewKind::Map { src, .. }
            | ViewKind::Strided { src, .. }
            | ViewKind::Slice { src, .. }
            | ViewKind::Proj(src, _) => self.length_bound(src),
            ViewKind::Zip(parts) => parts.iter().find_map(|p| self.length_bound(p)),
            _ => None,
        })
    }

    /// An upper bound over the naturals on the length of `x`, an operand of a stream.
    fn list_capacity(&mut self, x: &View) -> Option<Nat> {
        if is_stream(x) {
            return self.stream_capacity(x);
        }
        let len = x.len();
        if heddle_ir::nat::counted::mentions_count(&len) {
            return None;
        }
        let mut sink = Block::new();
        if let Ok(e) = self.index_expr(&len, &Env::default(), &mut sink)
            && sink.is_empty()
            && self.over_naturals(&e)
        {
            return Some(len);
        }
        self.sorted_leaf_bound(x).or_else(|| self.largest_row(x))
    }

    /// A bound the host computes before the launch on the length of `x`, a
    /// row of a nested array parameter whose row lengths only the data gives
    /// (`v@i` of `v: [i -> [T]_{toNat(o@(i + 1) - o@i)}]_n`): the longest
    /// row's length, a natural argument of the kernel that the launch fills
    /// from the inputs (`HostKind::Largest`), so a temporary sized by it is
    /// allocated before the launch like one sized over the naturals.
    fn largest_row(&mut self, x: &View) -> Option<Nat> {
        let buf = match &x.kind {
            ViewKind::Buffer { buf, .. } => buf,
            ViewKind::Map { src, .. } if !is_stream(src) => return self.largest_row(src),
            _ => return None,
        };
        let Type::Array { elem: row_elem, .. } = &x.ty else { return None };
        if matches!(**row_elem, Type::Array { .. }) {
            return None;
        }
        let ty = self.kernel.params.iter().find_map(|p| match p {
            heddle_typeck::KernelParam::Value { name, ty, .. } if name == buf => Some(ty.clone()),
            _ => None,
        })?;
        // The levels above the rows, outermost first: each binder with its level's length.
        let mut ranges: Vec<(Name, Nat)> = Vec::new();
        let mut level = &ty;
        let row_len = loop {
            let Type::Array { binder, elem, len } = level else { return None };
            if !matches!(**elem, Type::Array { .. }) {
                break len.clone();
            }
            let var = binder.clone().unwrap_or_else(|| self.fresh("row"));
            ranges.push((var, len.clone()));
            level = elem;
        };
        // Over the parameters and the binders alone, so the host can evaluate it.
        let known = |n: &Nat, upto: usize| {
            super::nats::free_names(n)
                .iter()
                .all(|v| ranges[..upto].iter().any(|(b, _)| b == v) || self.kernel.params.iter().any(|p| p.name() == v))
        };
        if ranges.is_empty()
            || !known(&row_len, ranges.len())
            || !ranges.iter().enumerate().all(|(k, (_, n))| known(n, k))
        {
            return None;
        }
        // `x` must be one row, its length the row length at some positions,
        // not a view of several (`join(v)`, `join(v@i)`, which are longer).
        let binders: Vec<Name> = ranges.iter().map(|(b, _)| b.clone()).collect();
        if !instance_of(&row_len.to_string(), &binders, &x.len().to_string()) {
            return None;
        }
        let kind = heddle_ir::loops::HostKind::Largest { ranges, body: row_len };
        if let Some(h) = self.host.iter().find(|h| h.kind == kind) {
            return Some(Nat::Var(h.name.clone()));
        }
        let name = self.fresh("longest_row");
        self.args.push(heddle_ir::loops::Arg { name: name.clone(), kind: heddle_ir::loops::ArgKind::Nat });
        self.host.push(heddle_ir::loops::HostBuffer { name: name.clone(), kind });
        Some(Nat::Var(name))
    }
}

/// Does `text` read as `pattern` with each of the `binders` standing for
/// one atom (a name, a literal, a lookup, a parenthesised or called form:
/// nothing with an operator outside brackets, so precedence cannot differ),
/// every occurrence of a binder for the same one? Both are printed naturals:
/// a row's length in its array's type, and a view's length at positions.
fn instance_of(pattern: &str, binders: &[Name], text: &str) -> bool {
    enum Piece<'a> {
        Text(&'a str),
        Hole(usize),
    }
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut pieces = Vec::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        let word = rest.find(|c: char| !is_name(c)).unwrap_or(rest.len());
        let (head, tail) =
            if word > 0 { rest.split_at(word) } else { rest.split_at(rest.chars().next().map_or(1, char::len_utf8)) };
        match binders.iter().position(|b| word > 0 && b.as_str() == head) {
            Some(k) => pieces.push(Piece::Hole(k)),
            None => pieces.push(Piece::Text(head)),
        }
        rest = tail;
    }
    fn atom(s: &str) -> bool {
        let mut depth = 0i32;
        for c in s.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                ' ' if depth == 0 => return false,
                _ => {}
            }
            if depth < 0 {
                return false;
            }
        }
        depth == 0 && !s.is_empty()
    }
    fn matches<'t>(pieces: &[Piece<'_>], text: &'t str, bound: &mut Vec<Option<&'t str>>) -> bool {
        let Some((first, rest)) = pieces.split_first() else { return text.is_empty() };
        match first {
            Piece::Text(t) => text.strip_prefix(t).is_some_and(|after| matches(rest, after, bound)),
            Piece::Hole(k) => {
                if let Some(v) = bound[*k] {
                    return text.strip_prefix(v).is_some_and(|after| matches(rest, after, bound));
                }
                for (end, _) in text.char_indices().skip(1).chain([(text.len(), ' ')]) {
                    let candidate = &text[..end];
                    if atom(candidate) {
                        bound[*k] = Some(candidate);
                        if matches(rest, &text[end..], bound) {
                            return true;
                        }
                        bound[*k] = None;
                    }
                }
                false
            }
        }
    }
    matches(&pieces, text, &mut vec![None; binders.len()])
}

/// The base name of the temporary a stream is stored in: its pattern's
/// (`union_tmp`), so that a refusal naming only the buffer (OpenCL's)
/// names the construct too.
pub(super) fn temporary_name(v: &View) -> &'static str {
    match &v.kind {
        ViewKind::Map { src, .. } => temporary_name(src),
        ViewKind::Merge { defaults: Some(_), .. } => "union_tmp",
        ViewKind::Merge { defaults: None, .. } => "intersect_tmp",
        ViewKind::Compress { .. } => "compressAdd_tmp",
        ViewKind::Filter { .. } => "filter_tmp",
        ViewKind::Choice { a, b, .. } => {
            if is_stream(a) {
                temporary_name(a)
            } else {
                temporary_name(b)
            }
        }
        _ => "tmp",
    }
}

#[cfg(test)]
mod tests {
    use super::instance_of;
    use heddle_ir::Name;

    #[test]
    fn a_row_length_at_positions_is_an_instance_and_a_join_is_not() {
        let i = [Name::from("i")];
        let row = "toNat(o@(i + 1) - o@i)";
        assert!(instance_of(row, &i, "toNat(o@(idx + 1) - o@idx)"));
        assert!(instance_of(row, &i, "toNat(o@(len@k + 1) - o@len@k)"));
        // The same binder stands for one atom everywhere, and never for an operation.
        assert!(!instance_of(row, &i, "toNat(o@(idx + 1) - o@idx1)"));
        assert!(!instance_of("i * 2", &i, "a + b * 2"));
        assert!(!instance_of(row, &i, "sum(k = 0 .. n - 1, toNat(o@(k + 1) - o@k))"));
        let ij = [Name::from("i"), Name::from("j")];
        assert!(instance_of("toNat(len@i@j)", &ij, "toNat(len@p@q)"));
        assert!(!instance_of("toNat(len@i@j)", &ij, "sum(k = 0 .. toNat(cnt@p) - 1, toNat(len@p@k))"));
    }
}

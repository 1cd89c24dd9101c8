//! N-way co-iteration: a `union` or `intersect` one of whose lists is itself
//! a stream — the result of another co-iteration, mapped back to (coordinate,
//! value) pairs, as in `(A + B) ∘ C` per row:
//! `intersect(union(0, 0, A@i, B@i) :>> map(…), C@i)`.
//!
//! The whole tree of co-iterations is fused into one loop, with no
//! workspace: every list is a *cursor*. A leaf (an indexable list) is a
//! position; a mapped stream is its source's cursor with the map applied to
//! the current element; a co-iteration is the pair of its operands' cursors.
//! Each step of the loop first *refreshes* every cursor bottom-up into `let`s
//! and variables of that step — `done` (no element left), `ready` (the
//! current element is one of the list's) and the element's scalars — then
//! either visits the root's element and *advances* past it (each operand
//! whose coordinate it is: both in an intersection), or, when the root is not
//! ready, *skips*: an intersection whose operands' coordinates differ
//! advances the smaller one. Every step advances at least one leaf, so the
//! loop runs at most the sum of the leaves' lengths.
//!
//! As in the interpreter, which builds every operand list whole and checks
//! it, an intersection consumes the rest of one operand after the other runs
//! out (without visiting anything), so every list is checked sorted by
//! strictly increasing coordinate as its entries are taken — a computed list
//! too (a map may change coordinates) — and an unsorted list is the same
//! run-time error on every backend. (One parent's entries of a tensor
//! parameter's ordered, unique level are not checked: input binding has.)
//! Two-list co-iteration over plain lists
//! keeps `stream.rs`'s loop. A `compressAdd` operand is expanded and sorted
//! in its workspace before the loop and walked like a list, each entry reset
//! as it is taken. A `filter` operand is its source's cursor whose element
//! is ready only when the predicate holds for it; skipping passes a source
//! element the predicate rejects.

use super::emit::leaf_fields;
use super::stream::{Expanded, Visit, reset};
use super::view::ViewKind;
use super::{Env, Lowerer, Val, View, numbers, unsupported};
use heddle_ir::loops::{BinOp, Block, Expr as L, Schedule, Stmt};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Type};
use heddle_typeck::TExpr;

/// Is `v` a co-iteration one of whose operands is a stream?
pub(super) fn nested(v: &View) -> bool {
    match &v.kind {
        ViewKind::Merge { a, b, .. } => super::stream::is_stream(a) || super::stream::is_stream(b),
        _ => false,
    }
}

/// A list being walked: what it is, and the names of its current step.
struct Cursor {
    kind: Kind,
    /// No element left (a `let` of the step).
    done: Name,
    /// The current element is one of the list's (a `let` of the step).
    ready: Name,
    /// The current element's scalars, coordinate first (valid when `ready`).
    elem: Vec<(Name, ScalarType)>,
    /// The element's type (a pair, or a co-iteration's triple).
    ty: Type,
}

enum Kind {
    /// An indexable list at position `at` of `len`.
    Leaf { view: View, at: Name, len: L },
    /// The sorted workspace of a `compressAdd`, at position `at` of its list.
    Compressed { x: Expanded, at: Name },
    /// A map over a stream.
    Map { f: TExpr, env: Env, src: Box<Cursor> },
    /// `filter(p)` of a list or stream: its source's elements for which `p`
    /// holds (`keep`, a variable of the step, set when the source is ready).
    Filter { p: TExpr, env: Env, src: Box<Cursor>, keep: Name },
    /// `union` (with the defaults) or `intersect`, with each operand's order
    /// check (none for a tensor level's entries, sorted already).
    Merge { a: Box<Cursor>, b: Box<Cursor>, defaults: Option<Box<(Val, Val)>>, order: [Option<Order>; 2] },
}

/// The last coordinate taken from an operand, for its sortedness check.
struct Order {
    last: Name,
    first: Name,
    check: u32,
}

fn not(e: L) -> L {
    L::Not(Box::new(e))
}
fn and(a: L, b: L) -> L {
    L::bin(BinOp::And, a, b)
}
fn or(a: L, b: L) -> L {
    L::bin(BinOp::Or, a, b)
}
fn when(cond: L, then: Block, els: Block) -> Stmt {
    Stmt::If { cond, then, els }
}

fn zero(t: ScalarType) -> L {
    match t {
        ScalarType::Bool => L::Bool(false),
        t if t.is_float() => L::Float(0.0, t),
        t => L::Int(0, t),
    }
}

/// A value of type `ty` whose scalars are the variables `vars`.
fn from_vars(ty: &Type, vars: &mut std::slice::Iter<'_, (Name, ScalarType)>) -> Val {
    match ty {
        Type::Tuple(ts) => Val::Tuple(ts.iter().map(|t| from_vars(t, vars)).collect()),
        _ => match vars.next() {
            Some((n, s)) => Val::Scalar(L::var(n.clone()), *s),
            None => Val::Tuple(vec![]),
        },
    }
}

/// The scalars of a value, in order; `false` if it holds an array.
fn scalars(v: &Val, out: &mut Vec<(L, ScalarType)>) -> bool {
    match v {
        Val::Scalar(e, s) => {
            out.push((e.clone(), *s));
            true
        }
        Val::Tuple(items) => items.iter().all(|x| scalars(x, out)),
        Val::Array(_) => false,
    }
}

impl Cursor {
    fn value(&self) -> Val {
        from_vars(&self.ty, &mut self.elem.iter())
    }
    /// The second component of a (coordinate, value) element.
    fn pair_value(&self) -> Val {
        match self.value() {
            Val::Tuple(mut items) if items.len() == 2 => items.pop().unwrap_or(Val::Tuple(vec![])),
            other => other,
        }
    }
    /// The current coordinate as an `i64`.
    fn coord(&self) -> L {
        let (n, s) = &self.elem[0];
        numbers::convert(L::var(n.clone()), *s, ScalarType::I64)
    }
    fn done(&self) -> L {
        L::var(self.done.clone())
    }
    fn ready(&self) -> L {
        L::var(self.ready.clone())
    }
}

impl<'k> Lowerer<'k> {
    /// Visits (with `visit`) or counts (without; the count is returned) the
    /// elements of the co-iteration `v`, whose operands may be streams.
    pub(super) fn coiterate(
        &mut self,
        v: &View,
        env: &Env,
        body: &mut Block,
        mut visit: Option<Visit<'_, 'k>>,
    ) -> Result<L, Diagnostic> {
        let mut lens = Vec::new();
        let root = self.cursor(v, env, &mut lens, body)?;
        let count = self.fresh("matches");
        if visit.is_none() {
            body.push(Stmt::Var { var: count.clone(), ty: ScalarType::I64, init: L::index(0) });
        }
        let mut step = Block::new();
        self.refresh(&root, &mut step)?;
        let mut take = Block::new();
        match visit.as_mut() {
            Some(f) => f(self, root.value(), &mut take)?,
            None => take.push(Stmt::Assign {
                var: count.clone(),
                value: L::bin(BinOp::Add, L::var(count.clone()), L::index(1)),
            }),
        }
        advance(&root, &mut take);
        let mut skipping = Block::new();
        skip(&root, &mut skipping);
        step.push(when(root.ready(), take, vec![when(not(root.done()), skipping, vec![])]));
        let steps = lens.into_iter().reduce(|a, b| L::bin(BinOp::Add, a, b)).unwrap_or(L::index(0));
        let var = self.fresh("step");
        body.push(Stmt::For { var, lo: L::index(0), hi: steps, schedule: Schedule::Seq, body: step });
        Ok(if visit.is_some() { L::index(0) } else { L::var(count) })
    }

    /// The cursor of the list `v`, its state declared in `body` (before the
    /// loop); `lens` collects the leaves' lengths.
    fn cursor(&mut self, v: &View, env: &Env, lens: &mut Vec<L>, body: &mut Block) -> Result<Cursor, Diagnostic> {
        let span = self.kernel.body.span;
        let ty = match &v.ty {
            Type::Array { elem, .. } => (**elem).clone(),
            t => t.clone(),
        };
        let fields = leaf_fields(&ty, span)
            .map_err(|_| unsupported(span, "co-iteration of more than two lists whose values hold arrays"))?;
        if !fields.first().is_some_and(|s| s.is_int()) {
            return Err(unsupported(span, "co-iteration over lists whose coordinates are not integers"));
        }
        let kind = match &v.kind {
            ViewKind::Map { f, env: fenv, src, .. } if super::stream::is_stream(src) => {
                Kind::Map { f: (**f).clone(), env: fenv.clone(), src: Box::new(self.cursor(src, env, lens, body)?) }
            }
            ViewKind::Merge { a, b, defaults, span } => {
                let span = *span;
                let what = if defaults.is_some() { "union" } else { "intersect" };
                let mut operand = |cx: &mut Self,
                                   x: &View,
                                   which: &str,
                                   body: &mut Block|
                 -> Result<(Cursor, Option<Order>), Diagnostic> {
                    if !matches!(&x.ty, Type::Array { elem, .. } if matches!(&**elem, Type::Tuple(ts) if ts.len() == 2))
                    {
                        return Err(unsupported(
                            span,
                            "co-iteration over lists that are not (coordinate, value) pairs",
                        ));
                    }
                    let c = cx.cursor(x, env, lens, body)?;
                    // One parent's entries of a tensor's ordered, unique level: checked by input binding.
                    if matches!(c.kind, Kind::Leaf { .. }) && cx.sorted_leaf(x) {
                        return Ok((c, None));
                    }
                    let (last, first) = (cx.fresh("last"), cx.fresh("first"));
                    body.push(Stmt::Var { var: last.clone(), ty: ScalarType::I64, init: L::index(0) });
                    body.push(Stmt::Var { var: first.clone(), ty: ScalarType::Bool, init: L::Bool(true) });
                    let check = cx.check(
                        format!("`{what}`: the {which} list is not sorted by strictly increasing coordinate"),
                        span,
                    );
                    Ok((c, Some(Order { last, first, check })))
                };
                let (a, oa) = operand(self, a, "first", body)?;
                let (b, ob) = operand(self, b, "second", body)?;
                Kind::Merge { a: Box::new(a), b: Box::new(b), defaults: defaults.clone(), order: [oa, ob] }
            }
            ViewKind::Filter { p, env: fenv, src, .. } => Kind::Filter {
                p: (**p).clone(),
                env: fenv.clone(),
                src: Box::new(self.cursor(src, env, lens, body)?),
                keep: self.fresh("keep"),
            },
            ViewKind::Compress { src, n, last, span } => {
                // Expanded and sorted before the loop; each entry is reset as it
                // is taken, and every entry is taken (an intersection takes the
                // rest), so the workspace is clean for the worker's next row.
                let x = self.expand(src, n, env, *span, body, true, *last)?;
                self.order_list(&x, body);
                lens.push(L::var(x.count.clone()));
                let at = self.fresh("at");
                body.push(Stmt::Var { var: at.clone(), ty: ScalarType::I64, init: L::index(0) });
                Kind::Compressed { x, at }
            }
            _ => {
                let n = self.index_expr(&v.len(), env, body)?;
                let n = self.bind_index(n, "n", body);
                let len = self.nat_to_expr(&n, env, body)?;
                lens.push(len.clone());
                let at = self.fresh("at");
                body.push(Stmt::Var { var: at.clone(), ty: ScalarType::I64, init: L::index(0) });
                Kind::Leaf { view: v.clone(), at, len }
            }
        };
        let elem = fields.iter().map(|s| (self.fresh("cur"), *s)).collect();
        Ok(Cursor { kind, done: self.fresh("done"), ready: self.fresh("ready"), elem, ty })
    }

    /// Emits the step's `done`, `ready` and current element of `c` (its operands first).
    fn refresh(&mut self, c: &Cursor, step: &mut Block) -> Result<(), Diagnostic> {
        let span = self.kernel.body.span;
        let (done, ready, mut fill) = match &c.kind {
            Kind::Leaf { view, at, len } => {
                let left = L::bin(BinOp::Lt, L::var(at.clone()), len.clone());
                let mut fill = Block::new();
                let x = self.elem(view, &Nat::Var(at.clone()), &mut fill)?;
                (not(left.clone()), left, (fill, x))
            }
            Kind::Compressed { x, at } => {
                let left = L::bin(BinOp::Lt, L::var(at.clone()), L::var(x.count.clone()));
                let (k, sums) =
                    (L::load(x.list.clone(), L::var(at.clone()), 0), x.sums.clone().unwrap_or_else(|| x.list.clone()));
                let pair = Val::Tuple(vec![
                    Val::Scalar(k.clone(), ScalarType::I64),
                    Val::Scalar(L::load(sums, k, 0), x.value_ty),
                ]);
                (not(left.clone()), left, (Block::new(), pair))
            }
            Kind::Map { f, env, src } => {
                self.refresh(src, step)?;
                let mut fill = Block::new();
                let y = self.apply(f, vec![src.value()], env, &mut fill)?;
                (src.done(), src.ready(), (fill, y))
            }
            Kind::Filter { p, env, src, keep } => {
                self.refresh(src, step)?;
                // The predicate reads the source's element only when there is one.
                let mut test = Block::new();
                let Val::Scalar(holds, _) = self.apply(p, vec![src.value()], env, &mut test)? else {
                    return Err(super::bug(span, "a `filter` predicate that is not a boolean"));
                };
                test.push(Stmt::Assign { var: keep.clone(), value: holds });
                self.var_types.push((keep.clone(), ScalarType::Bool));
                step.push(Stmt::Var { var: keep.clone(), ty: ScalarType::Bool, init: L::Bool(false) });
                step.push(when(src.ready(), test, vec![]));
                (src.done(), and(src.ready(), L::var(keep.clone())), (Block::new(), src.value()))
            }
            Kind::Merge { a, b, defaults, .. } => {
                self.refresh(a, step)?;
                self.refresh(b, step)?;
                let (ca, cb) = (a.coord(), b.coord());
                let same = and(and(a.ready(), b.ready()), L::bin(BinOp::Eq, ca.clone(), cb.clone()));
                let done = and(a.done(), b.done());
                let triple = |c: &Cursor, x: Val, y: Val| {
                    let (n, s) = &c.elem[0];
                    Val::Tuple(vec![Val::Scalar(L::var(n.clone()), *s), x, y])
                };
                match defaults {
                    None => (done, same, (Block::new(), triple(a, a.pair_value(), b.pair_value()))),
                    Some(d) => {
                        let (za, zb) = &**d;
                        // The element is chosen among three; each is assigned in its branch.
                        let ready = and(not(done.clone()), and(or(a.done(), a.ready()), or(b.done(), b.ready())));
                        let mut branches = Vec::new();
                        for x in [
                            triple(a, a.pair_value(), b.pair_value()),
                            triple(a, a.pair_value(), zb.clone()),
                            triple(b, za.clone(), b.pair_value()),
                        ] {
                            let mut block = Block::new();
                            self.assign(c, &x, &mut block)?;
                            branches.push(block);
                        }
                        let b_first = branches.pop().unwrap_or_default();
                        let a_first = branches.pop().unwrap_or_default();
                        let both = branches.pop().unwrap_or_default();
                        let a_only = and(a.ready(), or(b.done(), L::bin(BinOp::Lt, ca, cb)));
                        let fill = vec![when(same, both, vec![when(a_only, a_first, b_first)])];
                        self.declare(c, done, ready, step);
                        step.push(when(c.ready(), fill, vec![]));
                        return Ok(());
                    }
                }
            }
        };
        let (mut block, x) = (std::mem::take(&mut fill.0), fill.1);
        self.assign(c, &x, &mut block).map_err(|_| {
            unsupported(span, "co-iteration over a mapped list whose elements are not the pairs of its type")
        })?;
        self.declare(c, done, ready, step);
        step.push(when(c.ready(), block, vec![]));
        Ok(())
    }

    /// The step's `done` and `ready` lets and the element's variables.
    fn declare(&mut self, c: &Cursor, done: L, ready: L, step: &mut Block) {
        step.push(Stmt::Let { var: c.done.clone(), ty: ScalarType::Bool, value: done });
        step.push(Stmt::Let { var: c.ready.clone(), ty: ScalarType::Bool, value: ready });
        for (n, s) in &c.elem {
            self.var_types.push((n.clone(), *s));
            step.push(Stmt::Var { var: n.clone(), ty: *s, init: zero(*s) });
        }
    }

    /// Assigns `x` to the element variables of `c`.
    fn assign(&mut self, c: &Cursor, x: &Val, block: &mut Block) -> Result<(), Diagnostic> {
        let span = self.kernel.body.span;
        let mut xs = Vec::new();
        if !scalars(x, &mut xs) || xs.len() != c.elem.len() {
            return Err(unsupported(span, "co-iteration of more than two lists whose values hold arrays"));
        }
        for ((n, t), (e, s)) in c.elem.iter().zip(xs) {
            block.push(Stmt::Assign { var: n.clone(), value: numbers::convert(e, s, *t) });
        }
        Ok(())
    }
}

/// Moves `c`, which is ready, past its current element.
fn advance(c: &Cursor, out: &mut Block) {
    match &c.kind {
        Kind::Leaf { at, .. } => {
            out.push(Stmt::Assign { var: at.clone(), value: L::bin(BinOp::Add, L::var(at.clone()), L::index(1)) })
        }
        Kind::Compressed { x, at } => {
            out.extend(reset(x, &L::load(x.list.clone(), L::var(at.clone()), 0)));
            out.push(Stmt::Assign { var: at.clone(), value: L::bin(BinOp::Add, L::var(at.clone()), L::index(1)) });
        }
        Kind::Map { src, .. } | Kind::Filter { src, .. } => advance(src, out),
        Kind::Merge { a, b, defaults: Some(_), order } => {
            let (ca, cb) = (a.coord(), b.coord());
            let mut ta = Block::new();
            take(a, &order[0], &mut ta);
            let mut tb = Block::new();
            take(b, &order[1], &mut tb);
            out.push(when(and(a.ready(), or(b.done(), L::bin(BinOp::Le, ca.clone(), cb.clone()))), ta, vec![]));
            out.push(when(and(b.ready(), or(a.done(), L::bin(BinOp::Le, cb, ca))), tb, vec![]));
        }
        Kind::Merge { a, b, defaults: None, order } => {
            take(a, &order[0], out);
            take(b, &order[1], out);
        }
    }
}

/// Takes the current element of the operand `c` (ready): checks it comes
/// after the last one taken (unless the list is sorted already), then advances.
fn take(c: &Cursor, order: &Option<Order>, out: &mut Block) {
    if let Some(order) = order {
        let after = L::bin(BinOp::Gt, c.coord(), L::var(order.last.clone()));
        out.push(Stmt::Check { cond: or(L::var(order.first.clone()), after), id: order.check });
        out.push(Stmt::Assign { var: order.last.clone(), value: c.coord() });
        out.push(Stmt::Assign { var: order.first.clone(), value: L::Bool(false) });
    }
    advance(c, out);
}

/// Moves `c`, which is neither done nor ready, towards its next element.
fn skip(c: &Cursor, out: &mut Block) {
    match &c.kind {
        Kind::Leaf { .. } | Kind::Compressed { .. } => {}
        Kind::Map { src, .. } => skip(src, out),
        Kind::Filter { src, .. } => {
            // The source's element is not kept: pass it; else the source
            // itself is neither done nor ready.
            let mut pass = Block::new();
            advance(src, &mut pass);
            let mut towards = Block::new();
            skip(src, &mut towards);
            out.push(when(src.ready(), pass, vec![when(not(src.done()), towards, vec![])]));
        }
        Kind::Merge { a, b, defaults: Some(_), .. } => {
            let (mut sa, mut sb) = (Block::new(), Block::new());
            skip(a, &mut sa);
            skip(b, &mut sb);
            out.push(when(and(not(a.done()), not(a.ready())), sa, vec![]));
            out.push(when(and(not(b.done()), not(b.ready())), sb, vec![]));
        }
        Kind::Merge { a, b, defaults: None, order } => {
            let (mut sa, mut sb) = (Block::new(), Block::new());
            skip(a, &mut sa);
            skip(b, &mut sb);
            let (mut ta, mut tb) = (Block::new(), Block::new());
            take(a, &order[0], &mut ta);
            take(b, &order[1], &mut tb);
            // Both operands are done or ready, and not at one coordinate: take
            // the smaller (or what is left of one after the other ran out).
            let smaller = when(
                a.done(),
                tb.clone(),
                vec![when(b.done(), ta.clone(), vec![when(L::bin(BinOp::Lt, a.coord(), b.coord()), ta, tb)])],
            );
            let b_pending = when(and(not(b.done()), not(b.ready())), sb, vec![smaller]);
            out.push(when(and(not(a.done()), not(a.ready())), sa, vec![b_pending]));
        }
    }
}

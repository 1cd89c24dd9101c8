//! Accumulation by coordinate, `scatterAdd(n)`, and the permutation
//! `scatter(idx)` (see `prims.sig`).
//!
//! `scatterAdd`: every value is added into its slot after a `Check` that the
//! index is in `0 .. n` (an index outside is the run-time error the
//! interpreter reports). Three lowerings:
//!
//! - **The kernel's result** ([`Lowerer::result`]): the values are added
//!   straight into the output, which the runtime zeroes before every launch,
//!   by a *parallel* loop over the pairs' outermost array with atomic adds
//!   (`Stmt::AddAtomic`: an atomic read-modify-write for integers, a
//!   compare-and-swap loop for floats on both backends). Float sums then
//!   arrive in any order, so they may differ from the interpreter's in the
//!   last bits.
//! - **Inside a loop** (batched COO SpMV: one dense row per batch): into a
//!   per-worker workspace (`Space::Workspace`, sized by a kernel-level
//!   natural), cleared where the row is made and read in the same iteration.
//! - **Anywhere else** (the top level, not the result): a zero-initialised
//!   scratch buffer and one sequential loop. The kernel is one launch and
//!   OpenCL has no barrier across work-groups, so nothing could safely read a
//!   buffer filled in parallel; for the same reason the loops that read the
//!   result stay sequential too.
//!
//! `scatter(idx)(xs)` puts `xs@k` at position `idx@k`; the interpreter
//! requires a permutation. It is lowered to its inverse, a buffer `inv` of
//! `n` positions (a scratch buffer at the top level, a workspace in a loop,
//! as above): cleared to -1, then for each k, checked (`idx@k` in `0 .. n`,
//! its slot still -1: no two elements scattered to one position) and set to
//! k, then checked complete (no -1 left). The result is a view,
//! `xs@(inv@j)` ([`ViewKind::Permuted`]), so a map over `xs` still fuses.
//!
//! The pairs may come from `join` of rows of different lengths (a CSC matrix's
//! columns, a CSF tensor's fibres): such a join is never indexed, only walked
//! here, row by row ([`ViewKind::Concat`]).

use super::view::ViewKind;
use super::{Env, Lowerer, Val, View, bug, unsupported};
use heddle_ir::loops::{BinOp, Block, Expr as L, Schedule, Space, Stmt};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Span, Type};
use heddle_typeck::{TExpr, TKind};

impl Lowerer<'_> {
    /// Lowers `src :>> scatterAdd(n)` whose type is `ty` (`[T]_n`).
    pub(super) fn scatter_add(
        &mut self,
        n: &Nat,
        src: &TExpr,
        ty: &Type,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        // T is a scalar, a tuple of scalars (sums and counts), or a row of K scalars
        // (MTTKRP adds rows of a dense result).
        let (fields, width) = element(ty).ok_or_else(|| {
            unsupported(
                span,
                &format!(
                    "`scatterAdd` producing {ty} (arrays of numbers, of tuples of numbers, or of rows of numbers)"
                ),
            )
        })?;
        let xs = match self.expr(src, env, body)? {
            Val::Array(v) => v,
            _ => return Err(bug(src.span, "`scatterAdd` of a non-array")),
        };
        let rows = self.index_expr(n, env, body)?;
        let row_len = match &width {
            Some(w) => Some(self.index_expr(w, env, body)?),
            None => None,
        };
        let len = match &row_len {
            Some(w) => L::bin(BinOp::Mul, rows, w.clone()),
            None => rows,
        };
        let buf = self.scratch("scatter", &fields, &len, &format!("`scatterAdd({n})`"), span, body)?;
        let z = self.fresh("z");
        let init = fields
            .iter()
            .enumerate()
            .map(|(f, s)| {
                let zero = if s.is_float() { L::Float(0.0, *s) } else { L::Int(0, *s) };
                Stmt::Store { buf: buf.clone(), index: L::var(z.clone()), field: f as u32, value: zero }
            })
            .collect();
        body.push(Stmt::For { var: z, lo: L::index(0), hi: len, schedule: Schedule::Seq, body: init });
        self.accumulate(&xs, n, &fields, row_len.as_ref(), &buf, false, env, span, body)?;
        Ok(Val::Array(View::buffer(buf, Nat::Lit(0), ty.clone())))
    }

    /// A buffer of `len` records of `s` that this iteration fills and then
    /// reads: a per-worker workspace inside a loop (its length must be known
    /// before the kernel runs), a scratch buffer at the top level (after which
    /// the kernel stays sequential, see the module docs).
    fn scratch(
        &mut self,
        base: &str,
        fields: &[ScalarType],
        len: &L,
        what: &str,
        span: Span,
        body: &mut Block,
    ) -> Result<Name, Diagnostic> {
        let buf = self.fresh(base);
        if self.loops.is_empty() && !self.in_parallel {
            body.push(Stmt::Alloc {
                buf: buf.clone(),
                fields: fields.to_vec(),
                len: len.clone(),
                space: Space::Global,
            });
            self.sequential = true;
        } else {
            if !self.over_naturals(len) {
                return Err(unsupported(
                    span,
                    &format!(
                        "{what} inside a loop with a length that is not a natural parameter or a formula over them"
                    ),
                ));
            }
            self.workspaces.push(Stmt::Alloc {
                buf: buf.clone(),
                fields: fields.to_vec(),
                len: len.clone(),
                space: Space::Workspace,
            });
        }
        Ok(buf)
    }

    /// Lowers `xs :>> scatter(idx)` whose type is `ty` (`[T]_n`).
    pub(super) fn scatter(
        &mut self,
        idx: &TExpr,
        xs: &TExpr,
        ty: &Type,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let Val::Array(idx) = self.expr(idx, env, body)? else {
            return Err(bug(span, "`scatter` with non-array indices"));
        };
        let Val::Array(xs) = self.expr(xs, env, body)? else { return Err(bug(span, "`scatter` of a non-array")) };
        // Streams are read by position here: stored first, with their counts.
        let mut known = Vec::new();
        let idx = self.settle(idx, env, span, body, &mut known)?;
        let xs = self.settle(xs, env, span, body, &mut known)?;
        let ty = &super::emit::with_counts_known(ty, &known);
        let n = xs.len();
        let n_e = self.index_expr(&n, env, body)?;
        let inv = self.scratch("inverse", &[ScalarType::I64], &n_e, "`scatter`", span, body)?;
        let j = self.fresh("j");
        let clear = vec![Stmt::Store { buf: inv.clone(), index: L::var(j.clone()), field: 0, value: L::index(-1) }];
        body.push(Stmt::For { var: j, lo: L::index(0), hi: n_e.clone(), schedule: Schedule::Seq, body: clear });
        let out_of_bounds = self.check(
            format!("index out of bounds: an index given to `scatter` is not below the array's length {n}"),
            span,
        );
        let twice = self.check("`scatter`: two elements are scattered to one position".into(), span);
        let k = self.fresh("k");
        let hi = self.index_expr(&idx.len(), env, body)?;
        let mut fill = Block::new();
        self.loops.push((k.clone(), Schedule::Seq, hi.clone()));
        let to = self.elem(&idx, &Nat::Var(k.clone()), &mut fill);
        self.loops.pop();
        let Val::Scalar(to, ts) = to? else { return Err(bug(span, "`scatter` with non-scalar indices")) };
        let to = self.bind_index(super::nats::widen(to, ts), "to", &mut fill);
        let to = self.index_expr(&to, &Env::default(), &mut fill)?;
        let in_range =
            L::bin(BinOp::And, L::bin(BinOp::Ge, to.clone(), L::index(0)), L::bin(BinOp::Lt, to.clone(), n_e.clone()));
        fill.push(Stmt::Check { cond: in_range, id: out_of_bounds });
        fill.push(Stmt::Check {
            cond: L::bin(BinOp::Eq, L::load(inv.clone(), to.clone(), 0), L::index(-1)),
            id: twice,
        });
        fill.push(Stmt::Store { buf: inv.clone(), index: to, field: 0, value: L::var(k.clone()) });
        body.push(Stmt::For { var: k, lo: L::index(0), hi, schedule: Schedule::Seq, body: fill });
        let hole = self.check("`scatter`: no element is scattered to some position".into(), span);
        let j = self.fresh("j");
        let complete = vec![Stmt::Check {
            cond: L::bin(BinOp::Ne, L::load(inv.clone(), L::var(j.clone()), 0), L::index(-1)),
            id: hole,
        }];
        body.push(Stmt::For { var: j, lo: L::index(0), hi: n_e, schedule: Schedule::Seq, body: complete });
        Ok(Val::Array(View {
            ty: ty.clone(),
            kind: ViewKind::Permuted { inv, at: Nat::Lit(0), field: 0, src: Box::new(xs) },
        }))
    }

    /// Lowers the kernel's body `t`: `None` when it was a `scatterAdd` that
    /// has been added into the output `out` in parallel, else its value and
    /// the environment of the `let`s around it, for the caller to write.
    pub(super) fn result(
        &mut self,
        t: &TExpr,
        env: &Env,
        out: &Name,
        body: &mut Block,
    ) -> Result<Option<(Val, Env)>, Diagnostic> {
        match &t.kind {
            TKind::Let { name, value, body: inner } => {
                let v = self.expr(value, env, body)?;
                let v = self.share(v, name.as_str(), body);
                self.result(inner, &env.with(name.clone(), v), out, body)
            }
            TKind::Prim { name: "scatterAdd", nats, args, .. } => {
                let ty = self.program_values_in_type(&env.subst_type(&t.ty), env);
                let n = env.subst_nat(&nats[0]);
                let (fields, width) = element(&ty).ok_or_else(|| unsupported(t.span, &format!("`scatterAdd` producing {ty} (arrays of numbers, of tuples of numbers, or of rows of numbers)")))?;
                let xs = match self.expr(&args[0], env, body)? {
                    Val::Array(v) => v,
                    _ => return Err(bug(args[0].span, "`scatterAdd` of a non-array")),
                };
                let row_len = match &width {
                    Some(w) => Some(self.index_expr(w, env, body)?),
                    None => None,
                };
                // After a top-level temporary (another `scatterAdd`, a `scatter`)
                // the kernel stays sequential (see the module docs): the adds are
                // then plain, into an output zeroed here, at every launch.
                let parallel = !self.sequential;
                if !parallel {
                    let rows = self.index_expr(&n, env, body)?;
                    let len = match &row_len {
                        Some(w) => L::bin(BinOp::Mul, rows, w.clone()),
                        None => rows,
                    };
                    let z = self.fresh("z");
                    let init = fields
                        .iter()
                        .enumerate()
                        .map(|(f, s)| {
                            let zero = if s.is_float() { L::Float(0.0, *s) } else { L::Int(0, *s) };
                            Stmt::Store { buf: out.clone(), index: L::var(z.clone()), field: f as u32, value: zero }
                        })
                        .collect();
                    body.push(Stmt::For { var: z, lo: L::index(0), hi: len, schedule: Schedule::Seq, body: init });
                }
                self.accumulate(&xs, &n, &fields, row_len.as_ref(), out, parallel, env, t.span, body)?;
                Ok(None)
            }
            _ => Ok(Some((self.expr(t, env, body)?, env.clone()))),
        }
    }

    /// Adds every pair of `xs` into `buf` (rows of `row_len` records when given);
    /// `parallel`: the outermost loop is parallel and the adds atomic.
    fn accumulate(
        &mut self,
        xs: &View,
        n: &Nat,
        fields: &[ScalarType],
        row_len: Option<&L>,
        buf: &Name,
        parallel: bool,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<(), Diagnostic> {
        let out = buf.clone();
        let was_parallel = self.in_parallel;
        self.in_parallel |= parallel;
        let schedule = if parallel { Schedule::Parallel } else { Schedule::Seq };
        let done = self.each(xs, env, schedule, body, &mut |cx, pair, inner| {
            let Val::Tuple(mut items) = pair else {
                return Err(bug(span, "`scatterAdd` of something other than pairs"));
            };
            let (Some(value), Some(Val::Scalar(i, is))) = (items.pop(), items.pop()) else {
                return Err(bug(span, "`scatterAdd` of something other than pairs"));
            };
            let i = if is == ScalarType::I64 { i } else { L::Cast(ScalarType::I64, Box::new(i)) };
            let k = cx.bind_index(i, "slot", inner);
            cx.bounds_check(&k, n, "the result of `scatterAdd`", span, inner)?;
            let k = cx.index_expr(&k, &Env::default(), inner)?;
            let add = |at: L, field: u32, v: L, vs: ScalarType, inner: &mut Block| {
                let v = super::numbers::convert(v, vs, fields[field as usize]);
                if parallel {
                    inner.push(Stmt::AddAtomic { buf: out.clone(), index: at, field, value: v });
                } else {
                    let sum = L::bin(BinOp::Add, L::load(out.clone(), at.clone(), field), v);
                    inner.push(Stmt::Store { buf: out.clone(), index: at, field, value: sum });
                }
            };
            match (value, row_len) {
                (Val::Scalar(v, vs), None) => add(k, 0, v, vs, inner),
                (Val::Tuple(parts), None) if parts.len() == fields.len() => {
                    for (f, part) in parts.into_iter().enumerate() {
                        let Val::Scalar(v, vs) = part else {
                            return Err(unsupported(span, "`scatterAdd` of tuples that hold arrays"));
                        };
                        add(k.clone(), f as u32, v, vs, inner);
                    }
                }
                (Val::Array(row), Some(w)) => {
                    // Row k starts at record k * K; add the pair's row element by element.
                    let c = cx.fresh("c");
                    let mut each = Block::new();
                    let Val::Scalar(v, vs) = cx.elem(&row, &Nat::Var(c.clone()), &mut each)? else {
                        return Err(unsupported(span, "`scatterAdd` of rows that are not scalars"));
                    };
                    let at = L::bin(BinOp::Add, L::bin(BinOp::Mul, k, w.clone()), L::var(c.clone()));
                    add(at, 0, v, vs, &mut each);
                    inner.push(Stmt::For {
                        var: c,
                        lo: L::index(0),
                        hi: w.clone(),
                        schedule: Schedule::Seq,
                        body: each,
                    });
                }
                _ => return Err(bug(span, "`scatterAdd` of values that do not match its result type")),
            }
            Ok(())
        });
        self.in_parallel = was_parallel;
        done
    }

    /// Emits a loop nest (its outermost loop with `schedule`, the rest sequential) that visits every element of `v` in order
    /// and runs `f` on it; a [`ViewKind::Concat`] is walked row by row.
    #[allow(clippy::type_complexity)]
    pub(super) fn each(
        &mut self,
        v: &View,
        env: &Env,
        schedule: Schedule,
        body: &mut Block,
        f: &mut dyn FnMut(&mut Self, Val, &mut Block) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        if super::stream::is_stream(v) {
            return self.each_stream(v, env, body, f);
        }
        if let ViewKind::Appended { a, b } = &v.kind
            && walked(v)
        {
            self.each(a, env, Schedule::Seq, body, f)?;
            return self.each(b, env, Schedule::Seq, body, f);
        }
        if let ViewKind::Concat(rows) = &v.kind {
            return self.each(rows, env, schedule, body, &mut |cx, row, inner| match row {
                Val::Array(row) => cx.each(&row, env, Schedule::Seq, inner, f),
                _ => Err(bug(cx.kernel.body.span, "`join` of something that is not nested arrays")),
            });
        }
        if let ViewKind::Map { f: g, env: genv, src, binder, .. } = &v.kind
            && walked(src)
            && (binder.is_none() || schedule == Schedule::Seq)
        {
            // A map over a ragged join: applied to each element as the join is walked;
            // its position binder is a counter of the elements visited.
            let position = binder.as_ref().map(|b| (b.clone(), self.fresh("at")));
            if let Some((_, at)) = &position {
                body.push(Stmt::Var { var: at.clone(), ty: ScalarType::I64, init: L::index(0) });
            }
            let (g, genv) = ((**g).clone(), genv.clone());
            return self.each(src, env, schedule, body, &mut |cx, x, inner| {
                let genv = match &position {
                    Some((b, at)) => {
                        // A copy: the counter moves on after this element.
                        let now = cx.fresh("pos");
                        cx.var_types.push((now.clone(), ScalarType::I64));
                        inner.push(Stmt::Let { var: now.clone(), ty: ScalarType::I64, value: L::var(at.clone()) });
                        genv.with_nat(b.clone(), Nat::Var(now))
                    }
                    None => genv.clone(),
                };
                let y = cx.apply(&g, vec![x], &genv, inner)?;
                f(cx, y, inner)?;
                if let Some((_, at)) = &position {
                    inner.push(Stmt::Assign {
                        var: at.clone(),
                        value: L::bin(BinOp::Add, L::var(at.clone()), L::index(1)),
                    });
                }
                Ok(())
            });
        }
        let k = self.fresh("k");
        let hi = self.index_expr(&v.len(), env, body)?;
        if schedule == Schedule::Parallel && self.parallel_work.is_none() {
            // The runtime splits this loop by its elements' sizes where they
            // are arrays (a DCSR row, a CSF slice's fibres): without them it
            // would weigh each element as an empty row. Elements without
            // one (COO's entries) leave the loop unweighed, so that
            // `coalesce_atomic_runs` may chunk it.
            let work = self.work_estimate(&k, &super::emit::source_elem_ty(v, &Nat::Var(k.clone())), env);
            if !matches!(&work.items, L::Int(0, _)) {
                self.parallel_work = Some(work);
            }
        }
        let mut inner = Block::new();
        self.loops.push((k.clone(), schedule, hi.clone()));
        let visited = self.elem(v, &Nat::Var(k.clone()), &mut inner).and_then(|x| f(self, x, &mut inner));
        self.loops.pop();
        visited?;
        body.push(Stmt::For { var: k, lo: L::index(0), hi, schedule, body: inner });
        Ok(())
    }
}

/// Is `v` a join of rows of different lengths (or a map over one), which
/// [`Lowerer::each`] walks row by row rather than indexes?
pub(super) fn walked(v: &View) -> bool {
    match &v.kind {
        ViewKind::Concat(_) => true,
        ViewKind::Map { src, .. } => walked(src),
        // `concat` of a stream: its parts walked one after the other.
        ViewKind::Appended { a, b } => [a, b].iter().any(|x| super::stream::is_stream(x) || walked(x)),
        _ => false,
    }
}

/// The record fields of a `scatterAdd` result's elements (a number or a
/// tuple of numbers), and the row length when they are rows of numbers.
fn element(ty: &Type) -> Option<(Vec<ScalarType>, Option<Nat>)> {
    match ty {
        Type::Array { elem, .. } => match &**elem {
            Type::Scalar(s) => Some((vec![*s], None)),
            Type::Tuple(ts) => Some((ts.iter().map(Type::as_scalar).collect::<Option<_>>()?, None)),
            Type::Array { binder: None, elem, len } => Some((vec![elem.as_scalar()?], Some(len.clone()))),
            _ => None,
        },
        _ => None,
    }
}

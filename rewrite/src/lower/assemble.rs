//! The kernel's result: its outputs, and stored tensors.
//!
//! [`Lowerer::emit_result`] lowers the kernel's body to its output buffers:
//! one per array (a tuple of arrays has one per component), and for a value
//! stored in an encoding (`(e : tensor<…, #ENC>)`, see
//! `heddle_ir::encoding::result`) the buffers that hold its entries. What it
//! returns ([`ResultLayout`]) tells the host how to read the result back.
//!
//! A stored tensor's value has dense levels, then one list of (coordinate,
//! …) pairs, then pairs and dense blocks. Its storage is built in three steps
//! (count → allocate → fill, the attribute query of Chou et al.):
//!
//! 1. the list's length at each dense position: counted by a counting phase
//!    when it is only known by running the pattern (`union`, `intersect`,
//!    `compressAdd`), else a formula the host evaluates;
//! 2. the host: every level's positions and the coordinates of dense levels
//!    stored compressed (DCSR's non-empty rows) from those lengths alone
//!    (`heddle_runtime::sparse::result`), and the entries' offsets — the
//!    prefix sum of the lengths over the dense positions in row-major order,
//!    which is each entry's position in storage order, since the positions
//!    that no entry falls under contribute nothing;
//! 3. the fill kernel (parallel over the outermost dense level): each list
//!    element at its row's offset plus its rank — the coordinates of the
//!    levels stored per entry (the list's, the pairs', a COO region's dense
//!    indices) at the encoding's `crdWidth`, and the values. Each coordinate
//!    is checked against its level's size and the previous one in the list.
//!
//! Where every counted list is a stream of co-iterations (`union`,
//! `intersect`), step 1 is a *bound phase* instead (`lower_bounded` in
//! `mod.rs`): each list's count array holds the entries its merges walk, an
//! upper bound read in O(1) per row, step 2 makes room for the bounds, and
//! the fill merges each list once into its room and writes its true length
//! (`lengths`); the host reads each list's entries from its room
//! (`BoundedLists`). The merge then runs once, not twice (count, fill).

use super::{Env, Lowerer, Val, View, bug, unsupported};
use heddle_ir::encoding::Width;
use heddle_ir::encoding::result::{Order, ResultPlan, Source};
use heddle_ir::loops::{
    Arg, ArgKind, BinOp, Block, BoundedLists, Expr as L, ResultLayout, Schedule, Stmt, TensorLayout,
};
use heddle_ir::nat::NatOp;
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Span, Type};
use heddle_typeck::{TExpr, TKind};

/// Is `t` a scalar or a tuple of scalars (one record)?
pub(super) fn scalars_only(t: &Type) -> bool {
    match t {
        Type::Scalar(_) => true,
        Type::Tuple(ts) => ts.iter().all(|t| t.as_scalar().is_some()),
        _ => false,
    }
}

/// The scalar type of a coordinates buffer at `width`.
fn width_type(w: Width) -> ScalarType {
    match w {
        Width::Native => ScalarType::I64,
        Width::W8 => ScalarType::U8,
        Width::W16 => ScalarType::U16,
        Width::W32 => ScalarType::U32,
        Width::W64 => ScalarType::U64,
    }
}

/// What the fill of one stored tensor writes where.
struct Fill<'p> {
    plan: &'p ResultPlan,
    /// The list's level.
    list: usize,
    /// Per entry level: (level, output, field).
    coordinates: Vec<(usize, Name, u32)>,
    crd_ty: ScalarType,
    values: Name,
    block: Nat,
    /// The host prefix sum of the list lengths over the dense positions (none without dense levels).
    offsets: Option<Name>,
    /// Where the count array holds upper bounds (a bound phase): the output
    /// each list's true length is written to, the list being filled into
    /// the room its bound leaves at `offsets`.
    lengths: Option<Name>,
    span: Span,
}

impl Lowerer<'_> {
    /// Lowers the kernel's body `t` into output buffers (see the module docs).
    pub(super) fn emit_result(&mut self, t: &TExpr, env: &Env, body: &mut Block) -> Result<ResultLayout, Diagnostic> {
        if let Some((array, shape)) = self.counting.clone() {
            return self.emit_counts(t, env, &array, &shape, body).map(|_| ResultLayout::Tuple(Vec::new()));
        }
        match &t.kind {
            TKind::Let { name, value, body: inner } => {
                let v = self.expr(value, env, body)?;
                let v = self.share(v, name.as_str(), body);
                self.emit_result(inner, &env.with(name.clone(), v), body)
            }
            TKind::Tuple(items) if !scalars_only(&t.ty) => {
                let parts = items.iter().map(|item| self.emit_result(item, env, body)).collect::<Result<_, _>>()?;
                Ok(ResultLayout::Tuple(parts))
            }
            TKind::Assemble { value, plan } => self.assemble(value, plan, env, t.span, body),
            _ => {
                let ty = self.program_values_in_type(&env.subst_type(&t.ty), env);
                let (fields, count) = super::emit::output_shape(&ty, &self.facts, t.span)?;
                let out = self.fresh("out");
                self.args.push(Arg { name: out.clone(), kind: ArgKind::Output { fields, len: count } });
                // A `scatterAdd` result is added into the output directly (see scatter.rs).
                if let Some((value, env)) = self.result(t, env, &out, body)? {
                    self.write(&value, &ty, &out, Nat::Lit(0), &env, body, true)?;
                }
                Ok(ResultLayout::Flat { buf: out, ty: t.ty.clone() })
            }
        }
    }

    /// A counting phase: the counts of `array` into the one output.
    fn emit_counts(
        &mut self,
        t: &TExpr,
        env: &Env,
        array: &Name,
        shape: &[Nat],
        body: &mut Block,
    ) -> Result<(), Diagnostic> {
        let mentions = |ty: &Type| {
            let mut hit = false;
            ty.for_each_nat(&mut |n| {
                hit |= heddle_ir::nat::counted::as_counted(n).is_some_and(|(a, _)| &a == array) || n.mentions(array)
            });
            hit
        };
        match &t.kind {
            TKind::Let { name, value, body: inner } => {
                let v = self.expr(value, env, body)?;
                let v = self.share(v, name.as_str(), body);
                self.emit_counts(inner, &env.with(name.clone(), v), array, shape, body)
            }
            TKind::Tuple(items) if !scalars_only(&t.ty) => {
                match items.iter().find(|i| value_type(i).is_some_and(&mentions)) {
                    Some(item) => self.emit_counts(item, env, array, shape, body),
                    None => Ok(()),
                }
            }
            _ => {
                let value = match &t.kind {
                    TKind::Assemble { value, .. } => value,
                    _ => t,
                };
                let len = shape.iter().cloned().reduce(Nat::mul).unwrap_or(Nat::Lit(1));
                let out = self.fresh("out");
                self.args.push(Arg { name: out.clone(), kind: ArgKind::Output { fields: vec![ScalarType::I64], len } });
                let v = self.expr(value, env, body)?;
                let ty = self.program_values_in_type(&env.subst_type(&value.ty), env);
                self.write_count(&v, &ty, &out, Nat::Lit(0), env, body, true)
            }
        }
    }

    /// `(value : tensor<…>)` stored as `plan` says: the fill of its entries.
    fn assemble(
        &mut self,
        value: &TExpr,
        plan: &ResultPlan,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<ResultLayout, Diagnostic> {
        let v = self.expr(value, env, body)?;
        let vty = self.program_values_in_type(&env.subst_type(&value.ty), env);
        let Some(list) = plan.list_level() else {
            // A dense tensor: the value's flat buffer is the values buffer.
            let (_, count) = super::emit::output_shape(&vty, &self.facts, span)?;
            let out = self.fresh("values");
            self.args.push(Arg {
                name: out.clone(),
                kind: ArgKind::Output { fields: super::complex::fields_of(plan.elem), len: count },
            });
            self.write(&v, &vty, &out, Nat::Lit(0), env, body, true)?;
            return Ok(ResultLayout::Tensor(Box::new(TensorLayout {
                plan: plan.clone(),
                list_len: None,
                coordinates: Vec::new(),
                values: out,
                bounded: None,
                span,
            })));
        };
        let enc = &plan.encoding;
        let Source::List { len: list_len, .. } = &plan.levels[list].source else {
            return Err(unsupported(span, "a stored tensor without its list"));
        };
        let dense = plan.dense_prefix();
        // The list's length must be known on the host before the fill runs.
        let binders: Vec<Name> = dense.iter().filter_map(|(_, b)| b.clone()).collect();
        let known = super::nats::free_names(list_len).iter().all(|x| {
            binders.contains(x)
                || heddle_ir::nat::counted::is_count_name(x)
                || self.kernel.params.iter().any(|p| p.name() == x)
        });
        if !known {
            return Err(unsupported(
                span,
                &format!("a stored tensor whose lists' length {list_len} depends on values inside the kernel"),
            ));
        }
        // The dense position f as each dense level's index (row-major digits).
        let f = self.fresh("f");
        let mut stride = Nat::Lit(1);
        let mut digits = vec![Nat::Lit(0); dense.len()];
        for (l, (n, _)) in dense.iter().enumerate().rev() {
            let q = if stride.as_lit() == Some(1) {
                Nat::Var(f.clone())
            } else {
                Nat::div(Nat::Var(f.clone()), stride.clone())
            };
            digits[l] = if l == 0 { q } else { Nat::bin(NatOp::Mod, q, n.clone()) };
            stride = Nat::mul(stride, n.clone()).normalize();
        }
        let mut len_at_f = list_len.clone();
        for ((_, b), d) in dense.iter().zip(&digits) {
            if let Some(b) = b {
                len_at_f = len_at_f.subst(b, d);
            }
        }
        let positions = stride.normalize();
        let len_at_f = len_at_f.normalize();
        let entries = if dense.is_empty() {
            list_len.clone()
        } else {
            Nat::Sum {
                var: f.clone(),
                lo: Box::new(Nat::Lit(0)),
                hi: Box::new(Nat::sub(positions.clone(), Nat::Lit(1))),
                body: Box::new(len_at_f.clone()),
            }
        };
        let offsets = (!dense.is_empty()).then(|| self.prefix_sum(&f, &len_at_f, &positions, Vec::new()));
        // A count array holding bounds (see `lower_bounded`): the offsets and
        // the outputs' lengths are room; the fill writes the true lengths.
        let room = match heddle_ir::nat::counted::as_counted(list_len) {
            Some((array, _)) if offsets.is_some() && self.bounded_counts.contains(&array) => Some(array),
            _ => None,
        };
        let lengths = room.as_ref().map(|_| {
            let out = self.fresh("lengths");
            self.args.push(Arg {
                name: out.clone(),
                kind: ArgKind::Output { fields: vec![ScalarType::I64], len: positions.clone() },
            });
            out
        });
        // Outputs: the coordinates of the per-entry levels (an AoS run in one), the values.
        let crd_ty = width_type(enc.crd_width);
        let mut coordinates = Vec::new();
        let mut layout_crd = Vec::new();
        for l in plan.entry_levels() {
            let (buf, field) = if enc.in_aos_buffer(l) {
                let head = (0..l).rev().find(|&h| enc.aos_run(h).is_some_and(|r| r.contains(&l))).unwrap_or(l);
                let (_, buf, _) = coordinates
                    .iter()
                    .find(|(h, _, _)| *h == head)
                    .cloned()
                    .ok_or_else(|| unsupported(span, "an array-of-structs run without its first level"))?;
                (buf, (l - head) as u32)
            } else {
                let width = enc.aos_run(l).map_or(1, |r| r.len());
                let buf = self.fresh(&format!("crd{l}"));
                self.args.push(Arg {
                    name: buf.clone(),
                    kind: ArgKind::Output { fields: vec![crd_ty; width], len: entries.clone() },
                });
                (buf, 0)
            };
            coordinates.push((l, buf.clone(), field));
            layout_crd.push((buf, field));
        }
        let block = plan.block_len().normalize();
        let values = self.fresh("values");
        self.args.push(Arg {
            name: values.clone(),
            kind: ArgKind::Output {
                fields: super::complex::fields_of(plan.elem),
                len: if block.as_lit() == Some(1) { entries } else { Nat::mul(entries, block.clone()) },
            },
        });
        let bounded = offsets.clone().zip(lengths.clone()).map(|(offsets, lengths)| BoundedLists { offsets, lengths });
        let fill = Fill { plan, list, coordinates, crd_ty, values: values.clone(), block, offsets, lengths, span };
        let Val::Array(view) = v else { return Err(unsupported(span, "storing a value that is not an array")) };
        self.fill_dense(&view, 0, L::index(0), &mut Vec::new(), &fill, env, body, true)?;
        if let Some(array) = room {
            self.bounded_filled.push(array);
        }
        Ok(ResultLayout::Tensor(Box::new(TensorLayout {
            plan: plan.clone(),
            list_len: Some(list_len.clone()),
            coordinates: layout_crd,
            values,
            bounded,
            span,
        })))
    }

    /// Level `l` (a dense one) of the value: a loop over its elements.
    fn fill_dense(
        &mut self,
        view: &View,
        l: usize,
        f: L,
        path: &mut Vec<L>,
        fill: &Fill<'_>,
        env: &Env,
        body: &mut Block,
        top: bool,
    ) -> Result<(), Diagnostic> {
        if l == fill.list {
            return self.fill_list(view, f, path, fill, env, body);
        }
        let name = self.element_var(view);
        let schedule = self.element_loop(view, &name, env, body, &mut |cx, x, inner| {
            let Val::Array(child) = x else {
                return Err(unsupported(fill.span, "a stored value whose dense level holds no arrays"));
            };
            let hi = cx
                .loops
                .last()
                .map(|(_, _, hi)| hi.clone())
                .ok_or_else(|| bug(fill.span, "a dense level outside its loop"))?;
            let here = match &f {
                L::Int(0, _) => L::var(name.clone()),
                _ => L::bin(BinOp::Add, L::bin(BinOp::Mul, f.clone(), hi), L::var(name.clone())),
            };
            let at = cx.bind_index(here, "pos", inner);
            let at = cx.nat_to_expr(&at, env, inner)?;
            path.push(L::var(name.clone()));
            let r = cx.fill_dense(child, l + 1, at, path, fill, env, inner, false);
            path.pop();
            r
        })?;
        if top && schedule == Schedule::Parallel {
            let work_ty = super::emit::source_elem_ty(view, &Nat::Var(name.clone()));
            self.parallel_work = Some(self.work_estimate(&name, &work_ty, env));
        }
        Ok(())
    }

    /// The list at dense position `f`: every element stored at its row's offset plus its rank.
    fn fill_list(
        &mut self,
        view: &View,
        f: L,
        path: &[L],
        fill: &Fill<'_>,
        env: &Env,
        body: &mut Block,
    ) -> Result<(), Diagnostic> {
        let start = match &fill.offsets {
            Some(p) => L::load(p.clone(), f.clone(), 0),
            None => L::index(0),
        };
        let start = self.bind_index(start, "row_start", body);
        let start = self.nat_to_expr(&start, env, body)?;
        let (next, last) = (self.fresh("next"), self.fresh("last"));
        body.push(Stmt::Var { var: next.clone(), ty: ScalarType::I64, init: L::index(0) });
        let order = fill.plan.order(fill.list);
        if order != Order::Any {
            body.push(Stmt::Var { var: last.clone(), ty: ScalarType::I64, init: L::index(-1) });
        }
        let path = path.to_vec();
        // A row that is one two-list merge (mapped) visits its coordinates in
        // strictly increasing order (the merge checks its lists sorted, or
        // binding has): where the stored coordinate is the merge's own, the
        // order check cannot fail and is left out.
        let merged_row = fill.lengths.is_some() && one_merge(view);
        let mut visit = |cx: &mut Self, x: Val, inner: &mut Block| -> Result<(), Diagnostic> {
            let at = cx.bind_index(L::bin(BinOp::Add, start.clone(), L::var(next.clone())), "entry", inner);
            let at = cx.nat_to_expr(&at, env, inner)?;
            let increasing = merged_row
                && matches!(&x, Val::Tuple(items) if matches!(items.first(), Some(Val::Scalar(c, _)) if cx.merged_coordinates.contains(c)));
            // The list's coordinate, in range and in order.
            let (c, mut child) = cx.coordinate(x, fill.list, fill, inner)?;
            if order != Order::Any && !increasing {
                let op = if order == Order::Increasing { BinOp::Gt } else { BinOp::Ge };
                let id = cx.check(fill.plan.order_message(fill.list), fill.span);
                inner.push(Stmt::Check { cond: L::bin(op, c.clone(), L::var(last.clone())), id });
                inner.push(Stmt::Assign { var: last.clone(), value: c.clone() });
            }
            let mut crds: Vec<(usize, L)> = path.iter().cloned().enumerate().collect();
            crds.push((fill.list, c));
            // Pairs below the list: one coordinate each.
            for l in fill.list + 1..fill.plan.levels.len() {
                let (c, rest) = cx.coordinate(child, l, fill, inner)?;
                crds.push((l, c));
                child = rest;
            }
            for (l, buf, field) in &fill.coordinates {
                let Some((_, c)) = crds.iter().find(|(k, _)| k == l) else { continue };
                inner.push(Stmt::Store {
                    buf: buf.clone(),
                    index: at.clone(),
                    field: *field,
                    value: L::Cast(fill.crd_ty, Box::new(c.clone())),
                });
            }
            // The entry's values (a block for trailing dense levels).
            let offset = match fill.block.as_lit() {
                Some(1) => cx.bind_index(at, "value_at", inner),
                _ => {
                    let block = cx.index_expr(&fill.block, env, inner)?;
                    cx.bind_index(L::bin(BinOp::Mul, at, block), "value_at", inner)
                }
            };
            let child_ty = match &child {
                Val::Array(v) => v.ty.clone(),
                _ => super::complex::pairs_type(&Type::Scalar(fill.plan.elem)),
            };
            cx.write(&child, &child_ty, &fill.values, offset, env, inner, false)?;
            inner
                .push(Stmt::Assign { var: next.clone(), value: L::bin(BinOp::Add, L::var(next.clone()), L::index(1)) });
            Ok(())
        };
        // An n:m level's block holds at most n entries (the host pads it to
        // n), checked on the entries written (a bound may exceed the length).
        let at_most = fill.plan.n_out_of_m().map(|(l, n, m)| {
            let id = self.check(fill.plan.block_message(l, n, m), fill.span);
            Stmt::Check { cond: L::bin(BinOp::Le, L::var(next.clone()), L::index(i64::from(n))), id }
        });
        if let Some(lengths) = &fill.lengths {
            // Filled into the room of its bound: the stream the bound phase
            // bounded (the entries its merges walk), visited once.
            if !super::stream::is_stream(view) || super::stream::stream_bound(view).is_none() {
                self.bound_missing = true;
            }
            self.each(view, env, Schedule::Seq, body, &mut visit)?;
            body.extend(at_most);
            body.push(Stmt::Store { buf: lengths.clone(), index: f, field: 0, value: L::var(next) });
            return Ok(());
        }
        if super::stream::is_stream(view) || super::scatter::walked(view) {
            // Produced in order (a stream, or `concat` with one among its parts).
            self.each(view, env, Schedule::Seq, body, &mut visit)?;
            body.extend(at_most);
            return Ok(());
        }
        let k = self.fresh("k");
        let hi = self.index_expr(&view.len(), env, body)?;
        let mut inner = Block::new();
        let x = self.elem(view, &Nat::Var(k.clone()), &mut inner)?;
        visit(self, x, &mut inner)?;
        body.push(Stmt::For { var: k, lo: L::index(0), hi, schedule: Schedule::Seq, body: inner });
        body.extend(at_most);
        Ok(())
    }

    /// A (coordinate, child) pair at level `l`: the coordinate as `i64`,
    /// checked within the level's size, and the child.
    fn coordinate(&mut self, x: Val, l: usize, fill: &Fill<'_>, body: &mut Block) -> Result<(L, Val), Diagnostic> {
        let Val::Tuple(mut items) = x else {
            return Err(unsupported(fill.span, "a stored list element that is not a (coordinate, …) pair"));
        };
        let (Some(child), Some(Val::Scalar(c, s))) = (items.pop(), items.pop()) else {
            return Err(unsupported(fill.span, "a stored list element that is not a (coordinate, …) pair"));
        };
        let c = self.bind_index(super::nats::widen(c, s), "crd", body);
        let c = self.nat_to_expr(&c, &Env::default(), body)?;
        let size = self.index_expr(&fill.plan.lvl_sizes[l], &Env::default(), body)?;
        let id = self.check(fill.plan.range_message(l), fill.span);
        let cond = L::bin(BinOp::And, L::bin(BinOp::Ge, c.clone(), L::index(0)), L::bin(BinOp::Lt, c.clone(), size));
        body.push(Stmt::Check { cond, id });
        Ok((c, child))
    }
}

/// Is the stream `v` one two-list merge, mapped (not an N-way co-iteration,
/// whose cursors are not `stream.rs`'s merge)?
fn one_merge(v: &View) -> bool {
    match &v.kind {
        super::view::ViewKind::Map { src, .. } if super::stream::is_stream(src) => one_merge(src),
        super::view::ViewKind::Merge { .. } => !super::coiter::nested(v),
        _ => false,
    }
}

/// The type of the value a result component writes (a stored tensor's value).
fn value_type(t: &TExpr) -> Option<&Type> {
    match &t.kind {
        TKind::Assemble { value, .. } => Some(&value.ty),
        TKind::Let { body, .. } => value_type(body),
        _ => Some(&t.ty),
    }
}

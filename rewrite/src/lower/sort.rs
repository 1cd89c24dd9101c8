//! `sortBy(key)`: the array is stored in a temporary with each element's key
//! beside it (the key computed once per element), and the temporary is
//! sorted in place by a bottom-up merge sort written in loop code, so every
//! backend runs the same stable sort with nothing of its own: on the CPU it
//! is compiled as any loop, in OpenCL each work-item sorts its own
//! temporary (with a second one, the merge's scratch, in its arena or global
//! memory). The result reads the sorted records' elements (`ViewKind::Proj`).
//!
//! Keys are compared lexicographically, leaf by leaf, as the interpreter
//! compares them (`runtime::interp::sort`): integers by value, `false <
//! true`, floats by value with `-0.0 == 0.0` and every NaN after every number.
//!
//! The merge sort takes ⌈log₂ n⌉ passes, each merging runs of `width`
//! records pairwise from one temporary into the other: n log n comparisons
//! and as many record moves (plus n where the passes end in the scratch),
//! no recursion and no stack, which OpenCL C does not have.

use super::emit::leaf_fields;
use super::view::{Val, View, ViewKind};
use super::{Env, Lowerer, bug, unsupported};
use heddle_ir::loops::{BinOp, Block, Expr as L, Schedule, Space, Stmt};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Span, Type};
use heddle_typeck::{TExpr, TKind};

/// More passes than any array that fits in memory needs (each doubles the
/// runs' width, from 1).
const MAX_PASSES: i64 = 63;

impl Lowerer<'_> {
    /// `sortBy(key)(xs)` of type `ty`: the sorted array, stored.
    pub(super) fn sort_by(
        &mut self,
        key: &TExpr,
        xs: &TExpr,
        ty: &Type,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<View, Diagnostic> {
        let src = self.array(xs, env, body)?;
        let src = self.settle(src, env, xs.span, body, &mut Vec::new()).map_err(naming_sort_by)?;
        let TKind::Lambda { body: key_body, .. } = &key.kind else {
            return Err(bug(key.span, "a `sortBy` key that is not a function"));
        };
        let key_ty = key_body.ty.clone();
        let (elem, n) = match &src.ty {
            Type::Array { binder: None, elem, len } => ((**elem).clone(), len.clone()),
            _ => return Err(unsupported(span, "`sortBy` of an array whose elements' types depend on their positions")),
        };
        let key_fields = leaf_fields(&key_ty, span)?;
        if !is_record(&elem) {
            return self.sort_positions(key, src, key_ty, &key_fields, ty, env, span, body);
        }
        // The records sorted: (key, element), stored flat, the key's leaves first.
        let record = Type::Tuple(vec![key_ty.clone(), elem]);
        let pairs_ty = Type::Array { binder: None, elem: Box::new(record), len: n.clone() };
        let keys = keys_of(key, &src, key_ty, &n, env);
        let pairs = View { ty: pairs_ty.clone(), kind: ViewKind::Zip(vec![keys, src]) };
        let Val::Array(stored) =
            self.materialize(Val::Array(pairs), &pairs_ty, Space::Global, env, span, body).map_err(naming_sort_by)?
        else {
            return Err(bug(span, "a `sortBy` temporary that is not an array"));
        };
        let ViewKind::Buffer { buf, offset } = &stored.kind else {
            return Err(bug(span, "a `sortBy` temporary that is not a buffer"));
        };
        let (scratch, scratch_offset, _) = self.temporary(&pairs_ty, Space::Global, "sort_scratch", env, span, body)?;
        let fields = leaf_fields(&pairs_ty, span)?;
        let len = self.index_expr(&stored.len(), env, body)?;
        let at = self.index_expr(offset, env, body)?;
        let scratch_at = self.index_expr(&scratch_offset, env, body)?;
        let sorted = Region { buf: buf.clone(), at };
        let spare = Region { buf: scratch, at: scratch_at };
        self.merge_sort(&sorted, &spare, len, &fields, &key_fields, body);
        let result_ty = match ty {
            Type::Array { elem, .. } => Type::Array { binder: None, elem: elem.clone(), len: stored.len() },
            _ => return Err(bug(span, "`sortBy` with a type that is not an array")),
        };
        Ok(View { ty: result_ty, kind: ViewKind::Proj(Box::new(stored), 1) })
    }

    /// `sortBy` of elements that are not records (rows): the records sorted
    /// are each element's key and its position, and the result reads the
    /// array at the sorted positions (`ViewKind::Permuted`), so an element
    /// is never moved, whatever its type. The merge sort is stable, so equal
    /// keys keep their elements' order, as the interpreter's sort does.
    #[allow(clippy::too_many_arguments)]
    fn sort_positions(
        &mut self,
        key: &TExpr,
        src: View,
        key_ty: Type,
        key_fields: &[ScalarType],
        ty: &Type,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<View, Diagnostic> {
        let n = src.len();
        let record = Type::Tuple(vec![key_ty.clone(), Type::Scalar(ScalarType::I64)]);
        let pairs_ty = Type::Array { binder: None, elem: Box::new(record.clone()), len: n.clone() };
        let keys = keys_of(key, &src, key_ty, &n, env);
        let (buf, offset, _) =
            self.temporary(&pairs_ty, Space::Global, "sort_positions", env, span, body).map_err(naming_sort_by)?;
        let i = self.fresh("i");
        let (buf_c, offset_c, i_c) = (buf.clone(), offset.clone(), i.clone());
        self.element_loop(&keys, &i, env, body, &mut |cx, k, inner| {
            let pair = Val::Tuple(vec![k.clone(), Val::Scalar(L::var(i_c.clone()), ScalarType::I64)]);
            cx.write(&pair, &record, &buf_c, Nat::add(offset_c.clone(), Nat::Var(i_c.clone())), env, inner, false)
        })
        .map_err(naming_sort_by)?;
        let (scratch, scratch_offset, _) = self.temporary(&pairs_ty, Space::Global, "sort_scratch", env, span, body)?;
        let fields = leaf_fields(&pairs_ty, span)?;
        let len = self.index_expr(&n, env, body)?;
        let at = self.index_expr(&offset, env, body)?;
        let scratch_at = self.index_expr(&scratch_offset, env, body)?;
        let sorted = Region { buf: buf.clone(), at };
        let spare = Region { buf: scratch, at: scratch_at };
        self.merge_sort(&sorted, &spare, len, &fields, key_fields, body);
        let result_ty = match ty {
            Type::Array { elem, .. } => Type::Array { binder: None, elem: elem.clone(), len: n },
            _ => return Err(bug(span, "`sortBy` with a type that is not an array")),
        };
        let field = key_fields.len() as u32;
        Ok(View { ty: result_ty, kind: ViewKind::Permuted { inv: buf, at: offset, field, src: Box::new(src) } })
    }

    fn let_index(&mut self, base: &str, value: L, body: &mut Block) -> Name {
        let var = self.fresh(base);
        self.var_types.push((var.clone(), ScalarType::I64));
        body.push(Stmt::Let { var: var.clone(), ty: ScalarType::I64, value });
        var
    }

    fn var_of(&mut self, base: &str, ty: ScalarType, init: L, body: &mut Block) -> Name {
        let var = self.fresh(base);
        self.var_types.push((var.clone(), ty));
        body.push(Stmt::Var { var: var.clone(), ty, init });
        var
    }

    /// Sorts records `0 .. len` of `data` (records `fields`, the first
    /// `key_fields.len()` of them the key) stably by key, with `scratch` as
    /// room for as many records. Passes merge from one buffer into the other
    /// in turn (the records are in `scratch` after an odd number of passes,
    /// and copied back once at the end).
    fn merge_sort(
        &mut self,
        data: &Region,
        scratch: &Region,
        len: L,
        fields: &[ScalarType],
        key_fields: &[ScalarType],
        body: &mut Block,
    ) {
        let n = self.let_index("sort_n", len, body);
        let width = self.var_of("sort_width", ScalarType::I64, L::index(1), body);
        let in_scratch = self.var_of("sort_in_scratch", ScalarType::Bool, L::Bool(false), body);
        let (pass, copy) = (self.fresh("sort_pass"), self.fresh("sort_copy"));
        let forth = self.merge_pass(data, scratch, &n, &width, fields, key_fields);
        let back = self.merge_pass(scratch, data, &n, &width, fields, key_fields);
        let passes = vec![
            Stmt::If { cond: L::var(in_scratch.clone()), then: back, els: forth },
            assign(&in_scratch, L::Not(Box::new(L::var(in_scratch.clone())))),
            assign(&width, L::bin(BinOp::Mul, L::var(width.clone()), L::index(2))),
        ];
        let pass_body =
            vec![Stmt::If { cond: L::bin(BinOp::Lt, L::var(width), L::var(n.clone())), then: passes, els: vec![] }];
        let copy_back = copy_record(scratch, &L::var(copy.clone()), data, &L::var(copy.clone()), fields);
        let sort = vec![
            seq(&pass, L::index(0), L::index(MAX_PASSES), pass_body),
            Stmt::If {
                cond: L::var(in_scratch),
                then: vec![seq(&copy, L::index(0), L::var(n.clone()), copy_back)],
                els: vec![],
            },
        ];
        // Rows of no or one element (many, in a sparse matrix) skip the pass loop.
        body.push(Stmt::If { cond: L::bin(BinOp::Gt, L::var(n), L::index(1)), then: sort, els: vec![] });
    }

    /// The key leaves of `record` of `region`, bound to `let`s as they are compared ([`leaf`]).
    fn key_leaves(
        &mut self,
        region: &Region,
        record: &L,
        key_fields: &[ScalarType],
        base: &str,
        body: &mut Block,
    ) -> Vec<L> {
        let mut out = Vec::with_capacity(key_fields.len());
        for (f, s) in key_fields.iter().enumerate() {
            let (value, ty) = leaf(region.load(record, f as u32), *s);
            let var = self.fresh(base);
            self.var_types.push((var.clone(), ty));
            body.push(Stmt::Let { var: var.clone(), ty, value });
            out.push(L::var(var));
        }
        out
    }

    /// One pass: the runs of `width` records of `from` merged pairwise into `to`.
    fn merge_pass(
        &mut self,
        from: &Region,
        to: &Region,
        n: &Name,
        width: &Name,
        fields: &[ScalarType],
        key_fields: &[ScalarType],
    ) -> Block {
        let (run, k) = (self.fresh("sort_run"), self.fresh("sort_k"));
        let mut pass = Block::new();
        let span2 = self.let_index("sort_span", L::bin(BinOp::Mul, L::var(width.clone()), L::index(2)), &mut pass);
        // ⌈n / span⌉ pairs of runs; span < 2n, so nothing overflows.
        let runs = L::bin(
            BinOp::Div,
            L::bin(BinOp::Sub, L::bin(BinOp::Add, L::var(n.clone()), L::var(span2.clone())), L::index(1)),
            L::var(span2.clone()),
        );
        let mut merge = Block::new();
        let lo = self.let_index("sort_lo", L::bin(BinOp::Mul, L::var(run.clone()), L::var(span2.clone())), &mut merge);
        let min_n = |e: L| L::bin(BinOp::Min, e, L::var(n.clone()));
        let mid = self.let_index(
            "sort_mid",
            min_n(L::bin(BinOp::Add, L::var(lo.clone()), L::var(width.clone()))),
            &mut merge,
        );
        let hi =
            self.let_index("sort_hi", min_n(L::bin(BinOp::Add, L::var(lo.clone()), L::var(span2.clone()))), &mut merge);
        let left = self.var_of("sort_i", ScalarType::I64, L::var(lo.clone()), &mut merge);
        let right = self.var_of("sort_j", ScalarType::I64, L::var(mid.clone()), &mut merge);
        // Each output record: the left run's next one unless the right run's
        // next one is strictly smaller (equal keys: the left, earlier, one).
        let mut step = Block::new();
        let take_left = self.var_of("sort_take_left", ScalarType::Bool, L::Bool(false), &mut step);
        let lt = |a: &L, b: &L| L::bin(BinOp::Lt, a.clone(), b.clone());
        // The two keys are loaded once each (a float leaf is read four times by the comparison).
        let mut compare = Block::new();
        let right_key = self.key_leaves(from, &L::var(right.clone()), key_fields, "sort_right_key", &mut compare);
        let left_key = self.key_leaves(from, &L::var(left.clone()), key_fields, "sort_left_key", &mut compare);
        compare.push(assign(&take_left, L::Not(Box::new(less(&right_key, &left_key, key_fields)))));
        step.push(Stmt::If {
            cond: lt(&L::var(left.clone()), &L::var(mid.clone())),
            then: vec![Stmt::If {
                cond: lt(&L::var(right.clone()), &L::var(hi.clone())),
                then: compare,
                els: vec![assign(&take_left, L::Bool(true))],
            }],
            els: vec![],
        });
        let mut from_left = copy_record(from, &L::var(left.clone()), to, &L::var(k.clone()), fields);
        from_left.push(assign(&left, L::bin(BinOp::Add, L::var(left.clone()), L::index(1))));
        let mut from_right = copy_record(from, &L::var(right.clone()), to, &L::var(k.clone()), fields);
        from_right.push(assign(&right, L::bin(BinOp::Add, L::var(right.clone()), L::index(1))));
        step.push(Stmt::If { cond: L::var(take_left), then: from_left, els: from_right });
        merge.push(seq(&k, L::var(lo), L::var(hi), step));
        pass.push(seq(&run, L::index(0), runs, merge));
        pass
    }
}

/// A refusal met while storing the array to sort, saying so: what is
/// refused may be a pattern inside it (`concat` of a stream and an array,
/// whose length only walking it gives).
fn naming_sort_by(mut d: Diagnostic) -> Diagnostic {
    const REFUSED: &str = " cannot be compiled yet";
    if let Some(what) = d.message.strip_suffix(REFUSED) {
        d.message = format!("{what} (in the array `sortBy` sorts){REFUSED}");
    }
    d
}

/// Is `t` a record that a buffer holds: a scalar or nested tuples of scalars?
fn is_record(t: &Type) -> bool {
    match t {
        Type::Scalar(_) => true,
        Type::Tuple(ts) => ts.iter().all(is_record),
        _ => false,
    }
}

/// Records of a buffer from record `at` on.
struct Region {
    buf: Name,
    at: L,
}

impl Region {
    fn load(&self, record: &L, field: u32) -> L {
        L::load(self.buf.clone(), L::bin(BinOp::Add, self.at.clone(), record.clone()), field)
    }
}

fn seq(var: &Name, lo: L, hi: L, body: Block) -> Stmt {
    Stmt::For { var: var.clone(), lo, hi, schedule: Schedule::Seq, body }
}

fn assign(var: &Name, value: L) -> Stmt {
    Stmt::Assign { var: var.clone(), value }
}

fn copy_record(from: &Region, i: &L, to: &Region, k: &L, fields: &[ScalarType]) -> Block {
    (0..fields.len() as u32)
        .map(|f| Stmt::Store {
            buf: to.buf.clone(),
            index: L::bin(BinOp::Add, to.at.clone(), k.clone()),
            field: f,
            value: from.load(i, f),
        })
        .collect()
}

/// Is key `a` strictly below key `b` (their leaves, lexicographically)?
fn less(a: &[L], b: &[L], key_fields: &[ScalarType]) -> L {
    // Built from the last leaf outwards: lt₀ || (eq₀ && (lt₁ || (eq₁ && …))).
    let mut acc: Option<L> = None;
    for ((x, y), s) in a.iter().zip(b).zip(key_fields).rev() {
        let lt = leaf_less(x, y, *s);
        acc = Some(match acc {
            None => lt,
            Some(rest) => L::bin(BinOp::Or, lt, L::bin(BinOp::And, leaf_equal(x, y, *s), rest)),
        });
    }
    acc.unwrap_or(L::Bool(false))
}

/// A key leaf as it is compared, with its type: a bool as 0 or 1, a half
/// float widened (exactly) to `f32`.
fn leaf(e: L, s: ScalarType) -> (L, ScalarType) {
    match s {
        ScalarType::Bool => (L::Cast(ScalarType::I64, Box::new(e)), ScalarType::I64),
        s if s.is_half() => (L::Cast(ScalarType::F32, Box::new(e)), ScalarType::F32),
        _ => (e, s),
    }
}

fn is_nan(x: &L) -> L {
    L::bin(BinOp::Ne, x.clone(), x.clone())
}

/// `x < y`, every NaN after every number.
fn leaf_less(x: &L, y: &L, s: ScalarType) -> L {
    let lt = L::bin(BinOp::Lt, x.clone(), y.clone());
    if !s.is_float() {
        return lt;
    }
    L::bin(BinOp::Or, lt, L::bin(BinOp::And, L::Not(Box::new(is_nan(x))), is_nan(y)))
}

/// `x == y`, NaNs equal to each other.
fn leaf_equal(x: &L, y: &L, s: ScalarType) -> L {
    let eq = L::bin(BinOp::Eq, x.clone(), y.clone());
    if !s.is_float() {
        return eq;
    }
    L::bin(BinOp::Or, eq, L::bin(BinOp::And, is_nan(x), is_nan(y)))
}

/// The keys of `src`'s elements, `mapSeq(key)(src)`, as a view of `n` keys of `key_ty`.
fn keys_of(key: &TExpr, src: &View, key_ty: Type, n: &Nat, env: &Env) -> View {
    View {
        ty: Type::Array { binder: None, elem: Box::new(key_ty), len: n.clone() },
        kind: ViewKind::Map {
            f: Box::new(key.clone()),
            env: env.clone(),
            src: Box::new(src.clone()),
            binder: None,
            prim: "mapSeq",
            dim: 0,
        },
    }
}

//! Accumulation by coordinate: `scatterAdd(n)` (see `prims.sig`).
//!
//! `xs :>> scatterAdd(n)` becomes a zero-initialised scratch buffer of `n`
//! records and one sequential loop over the pairs that adds each value into
//! its slot, after a `Check` that the index is in `0 .. n` (an index outside
//! is the run-time error the interpreter reports). The loops are sequential:
//! a parallel accumulation needs per-thread copies or atomics, which the loop
//! IR does not have yet. For the same reason, once a top-level scatter has run,
//! the loops that read its result stay sequential too: OpenCL has no barrier
//! across work-groups, so a `Global` loop could read slots another work-item
//! has not finished writing.
//!
//! The pairs may come from `join` of rows of different lengths (a CSC matrix's
//! columns, a CSF tensor's fibres): such a join is never indexed, only walked
//! here, row by row ([`ViewKind::Concat`]).

use super::view::ViewKind;
use super::{unsupported, Env, Lowerer, Val, View};
use heddle_ir::loops::{BinOp, Block, Expr as L, Schedule, Space, Stmt};
use heddle_ir::{Diagnostic, Nat, ScalarType, Span, Type};
use heddle_typeck::TExpr;

impl Lowerer<'_> {
    /// Lowers `src :>> scatterAdd(n)` whose type is `ty` (`[T]_n`).
    pub(super) fn scatter_add(&mut self, n: &Nat, src: &TExpr, ty: &Type, env: &Env, span: Span, body: &mut Block) -> Result<Val, Diagnostic> {
        // T is a scalar, or a row of K scalars (MTTKRP adds rows of a dense result).
        let (s, width) = match ty {
            Type::Array { elem, .. } => match &**elem {
                Type::Scalar(s) => (Some(*s), None),
                Type::Array { binder: None, elem, len } => (elem.as_scalar(), Some(len.clone())),
                _ => (None, None),
            },
            _ => (None, None),
        };
        let s = s.ok_or_else(|| unsupported(span, &format!("`scatterAdd` producing {ty} (only arrays of scalars or of rows of scalars)")))?;
        if !self.loops.is_empty() || self.in_parallel {
            // A scratch buffer per enclosing iteration is not expressible in OpenCL 1.2
            // without a bound known at compile time; the interpreter runs it.
            return Err(unsupported(span, "`scatterAdd` inside a loop"));
        }
        let xs = match self.expr(src, env, body)? {
            Val::Array(v) => v,
            _ => return Err(unsupported(src.span, "`scatterAdd` of a non-array")),
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
        let buf = self.fresh("scatter");
        body.push(Stmt::Alloc { buf: buf.clone(), fields: vec![s], len: len.clone(), space: Space::Global });
        let z = self.fresh("z");
        let zero = if s.is_float() { L::Float(0.0, s) } else { L::Int(0, s) };
        let mut init = Block::new();
        init.push(Stmt::Store { buf: buf.clone(), index: L::var(z.clone()), field: 0, value: zero });
        body.push(Stmt::For { var: z, lo: L::index(0), hi: len, schedule: Schedule::Seq, body: init });
        let out = buf.clone();
        self.each(&xs, env, body, &mut |cx, pair, inner| {
            let Val::Tuple(mut items) = pair else { return Err(unsupported(span, "`scatterAdd` of something other than pairs")) };
            let (Some(value), Some(Val::Scalar(i, is))) = (items.pop(), items.pop()) else {
                return Err(unsupported(span, "`scatterAdd` of something other than pairs"));
            };
            let i = if is == ScalarType::I64 { i } else { L::Cast(ScalarType::I64, Box::new(i)) };
            let k = cx.bind_index(i, "slot", inner);
            cx.bounds_check(&k, n, "the result of `scatterAdd`", span, inner)?;
            let k = cx.index_expr(&k, &Env::default(), inner)?;
            let add = |at: L, v: L, vs: ScalarType, inner: &mut Block| {
                let v = if vs == s { v } else { L::Cast(s, Box::new(v)) };
                let sum = L::bin(BinOp::Add, L::load(out.clone(), at.clone(), 0), v);
                inner.push(Stmt::Store { buf: out.clone(), index: at, field: 0, value: sum });
            };
            match (value, &row_len) {
                (Val::Scalar(v, vs), None) => add(k, v, vs, inner),
                (Val::Array(row), Some(w)) => {
                    // Row k starts at record k * K; add the pair's row element by element.
                    let c = cx.fresh("c");
                    let mut each = Block::new();
                    let Val::Scalar(v, vs) = cx.elem(&row, &Nat::Var(c.clone()), &mut each)? else {
                        return Err(unsupported(span, "`scatterAdd` of rows that are not scalars"));
                    };
                    let at = L::bin(BinOp::Add, L::bin(BinOp::Mul, k, w.clone()), L::var(c.clone()));
                    add(at, v, vs, &mut each);
                    inner.push(Stmt::For { var: c, lo: L::index(0), hi: w.clone(), schedule: Schedule::Seq, body: each });
                }
                _ => return Err(unsupported(span, "`scatterAdd` of values that do not match its result type")),
            }
            Ok(())
        })?;
        self.sequential = true;
        Ok(Val::Array(View::buffer(buf, Nat::Lit(0), ty.clone())))
    }

    /// Emits a sequential loop nest that visits every element of `v` in order
    /// and runs `f` on it; a [`ViewKind::Concat`] is walked row by row.
    fn each(&mut self, v: &View, env: &Env, body: &mut Block, f: &mut dyn FnMut(&mut Self, Val, &mut Block) -> Result<(), Diagnostic>) -> Result<(), Diagnostic> {
        if let ViewKind::Concat(rows) = &v.kind {
            return self.each(rows, env, body, &mut |cx, row, inner| match row {
                Val::Array(row) => cx.each(&row, env, inner, f),
                _ => Err(unsupported(cx.kernel.body.span, "`join` of something that is not nested arrays")),
            });
        }
        let k = self.fresh("k");
        let hi = self.index_expr(&v.len(), env, body)?;
        let mut inner = Block::new();
        self.loops.push((k.clone(), Schedule::Seq, hi.clone()));
        let visited = self.elem(v, &Nat::Var(k.clone()), &mut inner).and_then(|x| f(self, x, &mut inner));
        self.loops.pop();
        visited?;
        body.push(Stmt::For { var: k, lo: L::index(0), hi, schedule: Schedule::Seq, body: inner });
        Ok(())
    }
}

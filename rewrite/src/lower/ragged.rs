//! Indexing a `join` of rows of different lengths ([`ViewKind::Concat`]).
//!
//! Element `p` of `join(rows)` is element `p - start(r)` of row `r`, the last
//! row whose start `start(r) = Σ_{k < r} len(k)` is at most `p`. The starts
//! are the ordinary Σ elimination of the rows' type: a closed form (CSR's
//! offsets) or a host prefix sum (LIL's lengths). `r` is found by binary
//! search over them, in a loop of at most 64 guarded halvings (the range of
//! an `i64`), so an access costs O(log rows); walking a join in order (a
//! `reduce`, writing it, `scatterAdd`) never searches (see `Lowerer::each`).
//!
//! [`ViewKind::Concat`]: super::view::ViewKind::Concat

use super::{Env, Lowerer, Val, View, bug};
use heddle_ir::loops::{BinOp, Block, Expr as L, Schedule, Stmt};
use heddle_ir::{Diagnostic, Nat, ScalarType, Type};

impl Lowerer<'_> {
    /// Element `p` of `join(rows)`, where `rows` have different lengths.
    pub(super) fn concat_elem(&mut self, rows: &View, p: &Nat, body: &mut Block) -> Result<Val, Diagnostic> {
        let span = self.kernel.body.span;
        let n = rows.len();
        let k = self.fresh("k");
        let Type::Array { len: row_len, .. } = rows.elem_ty(&Nat::Var(k.clone())) else {
            return Err(bug(span, "`join` of something that is not nested arrays"));
        };
        let start = |r: Nat| Nat::Sum {
            var: k.clone(),
            lo: Box::new(Nat::Lit(0)),
            hi: Box::new(Nat::sub(r, Nat::Lit(1))),
            body: Box::new(row_len.clone()),
        };
        let p = self.index_expr(p, &Env::default(), body)?;
        let p = self.bind_index(p, "flat", body);
        let p = self.nat_to_expr(&p, &Env::default(), body)?;
        let rows_e = self.index_expr(&n, &Env::default(), body)?;
        let (lo, hi) = (self.fresh("lo"), self.fresh("hi"));
        body.push(Stmt::Var { var: lo.clone(), ty: ScalarType::I64, init: L::index(0) });
        body.push(Stmt::Var { var: hi.clone(), ty: ScalarType::I64, init: rows_e.clone() });
        // Invariant: start(lo) <= p, and the row sought is below hi.
        let mid = self.fresh("mid");
        self.var_types.push((mid.clone(), ScalarType::I64));
        let mut halve = vec![Stmt::Let {
            var: mid.clone(),
            ty: ScalarType::I64,
            value: L::bin(BinOp::Div, L::bin(BinOp::Add, L::var(lo.clone()), L::var(hi.clone())), L::index(2)),
        }];
        let at_mid = self.index_expr_bounded(&start(Nat::Var(mid.clone())), &Env::default(), Some(&n), &mut halve)?;
        halve.push(Stmt::If {
            cond: L::bin(BinOp::Le, at_mid, p.clone()),
            then: vec![Stmt::Assign { var: lo.clone(), value: L::var(mid.clone()) }],
            els: vec![Stmt::Assign { var: hi.clone(), value: L::var(mid) }],
        });
        let more = L::bin(BinOp::Gt, L::bin(BinOp::Sub, L::var(hi.clone()), L::var(lo.clone())), L::index(1));
        let t = self.fresh("t");
        body.push(Stmt::For {
            var: t,
            lo: L::index(0),
            hi: L::index(64),
            schedule: Schedule::Seq,
            body: vec![Stmt::If { cond: more, then: halve, els: Block::new() }],
        });
        let r = self.fresh("row");
        self.var_types.push((r.clone(), ScalarType::I64));
        body.push(Stmt::Let { var: r.clone(), ty: ScalarType::I64, value: L::var(lo) });
        let row_start = self.index_expr_bounded(&start(Nat::Var(r.clone())), &Env::default(), Some(&n), body)?;
        let j = self.bind_index(L::bin(BinOp::Sub, p, row_start), "in_row", body);
        match self.elem(rows, &Nat::Var(r), body)? {
            Val::Array(row) => self.elem(&row, &j, body),
            _ => Err(bug(span, "`join` of something that is not nested arrays")),
        }
    }
}

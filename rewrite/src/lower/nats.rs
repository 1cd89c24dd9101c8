//! Naturals in loop code: Σ elimination, then `i64` expressions.

use super::{Env, Lowerer, Val, bug, unsupported};
use heddle_ir::expr::{BinOp as SrcOp, ExprKind, Literal, UnOp};
use heddle_ir::loops::{ArgKind, BinOp, Block, Expr as L, Stmt};
use heddle_ir::nat::{CmpOp, NatCond, NatOp};
use heddle_ir::{Diagnostic, Expr, Name, Nat, ScalarType};

impl Lowerer<'_> {
    /// The loop expression of a natural (a length, a record index): Σ removed
    /// by closed form or host precomputation, `toNat` inlined as loads.
    pub(super) fn index_expr(&mut self, n: &Nat, env: &Env, body: &mut Block) -> Result<L, Diagnostic> {
        self.index_expr_bounded(n, env, None, body)
    }

    /// As [`index_expr`](Self::index_expr); `bound` is how many terms a host
    /// prefix sum for a residual Σ must cover (the length of the array the Σ
    /// indexes into).
    pub(super) fn index_expr_bounded(
        &mut self,
        n: &Nat,
        env: &Env,
        bound: Option<&Nat>,
        body: &mut Block,
    ) -> Result<L, Diagnostic> {
        let n = env.subst_nat(n);
        let n = if n.has_sum() || matches!(n, Nat::ToNat(_)) {
            let s = crate::simplify(&n, &self.facts, &self.options.limits);
            let mut out = s.nat;
            if out.has_sum() {
                out = self.remove_sums(&out, bound, env, body)?;
            }
            out
        } else {
            n.normalize()
        };
        self.nat_to_expr(&n, env, body)
    }

    /// A Σ-free natural as an `i64` expression.
    pub(super) fn nat_to_expr(&mut self, n: &Nat, env: &Env, body: &mut Block) -> Result<L, Diagnostic> {
        let span = self.kernel.body.span;
        Ok(match n {
            Nat::Var(x) => match self.lookup_value(x, env) {
                Some(Val::Scalar(e, s)) => widen(e, s),
                _ => match self.var_types.iter().rev().find(|(n, _)| n == x) {
                    Some((_, s)) => widen(L::Var(x.clone()), *s),
                    None => L::Var(x.clone()),
                },
            },
            Nat::Lit(v) => L::index(*v),
            Nat::Bin(op, a, b) => {
                let (a, b) = (self.nat_to_expr(a, env, body)?, self.nat_to_expr(b, env, body)?);
                let op = match op {
                    NatOp::Add => BinOp::Add,
                    NatOp::Sub => BinOp::Sub,
                    NatOp::Mul => BinOp::Mul,
                    // Index arithmetic is over non-negative values, where floor and truncation agree.
                    NatOp::Div => BinOp::Div,
                    NatOp::Mod => BinOp::Rem,
                    NatOp::Min => BinOp::Min,
                    NatOp::Max => BinOp::Max,
                };
                L::bin(op, a, b)
            }
            Nat::Cond(c, a, b) => {
                let c = self.cond_to_expr(c, env, body)?;
                let (a, b) = (self.nat_to_expr(a, env, body)?, self.nat_to_expr(b, env, body)?);
                L::Select(Box::new(c), Box::new(a), Box::new(b))
            }
            Nat::ToNat(e) => self.int_expr(e, env, body)?,
            Nat::Sum { .. } => return Err(bug(span, &format!("the Σ in {n}"))),
            Nat::Meta(_) => return Err(bug(span, "an unsolved length")),
        })
    }

    fn cond_to_expr(&mut self, c: &NatCond, env: &Env, body: &mut Block) -> Result<L, Diagnostic> {
        Ok(match c {
            NatCond::Cmp(op, a, b) => {
                let op = match op {
                    CmpOp::Eq => BinOp::Eq,
                    CmpOp::Ne => BinOp::Ne,
                    CmpOp::Lt => BinOp::Lt,
                    CmpOp::Le => BinOp::Le,
                    CmpOp::Gt => BinOp::Gt,
                    CmpOp::Ge => BinOp::Ge,
                };
                L::bin(op, self.nat_to_expr(a, env, body)?, self.nat_to_expr(b, env, body)?)
            }
            NatCond::And(a, b) => {
                L::bin(BinOp::And, self.cond_to_expr(a, env, body)?, self.cond_to_expr(b, env, body)?)
            }
            NatCond::Or(a, b) => L::bin(BinOp::Or, self.cond_to_expr(a, env, body)?, self.cond_to_expr(b, env, body)?),
            NatCond::Not(a) => L::Not(Box::new(self.cond_to_expr(a, env, body)?)),
        })
    }

    fn lookup_value(&self, x: &Name, env: &Env) -> Option<Val> {
        env.value(x).or_else(|| self.globals.value(x)).cloned()
    }

    /// The integer expression inside a `toNat`, as `i64`.
    fn int_expr(&mut self, e: &Expr, env: &Env, body: &mut Block) -> Result<L, Diagnostic> {
        let span = if e.span.end > 0 { e.span } else { self.kernel.body.span };
        Ok(match &e.kind {
            ExprKind::Var(x) => match self.lookup_value(x, env) {
                Some(Val::Scalar(v, s)) => widen(v, s),
                // A tuple's component replaced by the `let` holding it
                // (`program_values_in_type`) may have the tuple's own name.
                Some(_) => match self.var_types.iter().rev().find(|(n, _)| n == x) {
                    Some((_, s)) => widen(L::Var(x.clone()), *s),
                    None => return Err(unsupported(span, &format!("toNat of the array `{x}`"))),
                },
                None => match env.nats.iter().rev().find(|(n, _)| n == x) {
                    Some((_, v)) => {
                        let v = v.clone();
                        self.nat_to_expr(&v, env, body)?
                    }
                    None => match self.var_types.iter().rev().find(|(n, _)| n == x) {
                        Some((_, s)) => widen(L::Var(x.clone()), *s),
                        None if heddle_ir::nat::counted::is_count_name(x) => return Err(self.counted_elsewhere()),
                        None => L::Var(x.clone()),
                    },
                },
            },
            ExprKind::Lit(Literal::Int(v)) => L::index(*v),
            ExprKind::NatValue(n) => self.nat_to_expr(n, env, body)?,
            ExprKind::Index { .. } | ExprKind::Proj { .. } => match self.lookup_val(e, env, body)? {
                Val::Scalar(v, s) => widen(v, s),
                _ => return Err(unsupported(span, &format!("toNat of {e}, which is not an integer"))),
            },
            ExprKind::Binary { op, lhs, rhs } => self.int_binary(*op, lhs, rhs, env, body)?,
            // `max(a, b)`: the operator section applied.
            ExprKind::App { .. } if e.as_operator_call().is_some() => {
                let (op, lhs, rhs) = e.as_operator_call().expect("checked");
                self.int_binary(op, lhs, rhs, env, body)?
            }
            ExprKind::Unary { op: UnOp::Not, operand } => L::Not(Box::new(self.int_expr(operand, env, body)?)),
            ExprKind::Select { cond, then, els } => {
                let c = self.int_expr(cond, env, body)?;
                let (mut a_block, mut b_block) = (Block::new(), Block::new());
                let a = self.int_expr(then, env, &mut a_block)?;
                let b = self.int_expr(els, env, &mut b_block)?;
                if a_block.is_empty() && b_block.is_empty() {
                    L::Select(Box::new(c), Box::new(a), Box::new(b))
                } else {
                    // Only the chosen branch's lookups are made (and checked).
                    let picked = self.fresh("picked");
                    body.push(Stmt::Var { var: picked.clone(), ty: ScalarType::I64, init: L::index(0) });
                    a_block.push(Stmt::Assign { var: picked.clone(), value: a });
                    b_block.push(Stmt::Assign { var: picked.clone(), value: b });
                    body.push(Stmt::If { cond: c, then: a_block, els: b_block });
                    L::var(picked)
                }
            }
            ExprKind::Annot { expr, .. } => self.int_expr(expr, env, body)?,
            ExprKind::Unary { op: UnOp::Neg, operand } => L::Neg(Box::new(self.int_expr(operand, env, body)?)),
            _ => return Err(unsupported(span, &format!("toNat({e})"))),
        })
    }
}

impl Lowerer<'_> {
    /// The value a lookup or projection inside a `toNat` reads
    /// (`len@b@r`, `A@i.1`): a scalar, or a row, tuple or array on the way.
    fn lookup_val(&mut self, e: &Expr, env: &Env, body: &mut Block) -> Result<Val, Diagnostic> {
        let span = if e.span.end > 0 { e.span } else { self.kernel.body.span };
        match &e.kind {
            ExprKind::Var(x) if heddle_ir::nat::counted::is_count_name(x) && self.lookup_value(x, env).is_none() => {
                Err(self.counted_elsewhere())
            }
            ExprKind::Var(x) => self.lookup_value(x, env).ok_or_else(|| bug(span, &format!("toNat of `{x}` here"))),
            ExprKind::Index { array, index } => {
                let at = match index.as_nat() {
                    // Positions resolve through this environment (map binders); an index that
                    // mentions a program value (`2 * p` for a lambda parameter p) is computed instead.
                    Some(n) if free_names(&n).iter().all(|x| self.lookup_value(x, env).is_none()) => env.subst_nat(&n),
                    _ => {
                        let ie = self.int_expr(index, env, body)?;
                        self.bind_index(ie, "k", body)
                    }
                };
                if let ExprKind::Var(a) = &array.kind
                    && matches!(self.args.iter().find(|x| &x.name == a).map(|x| &x.kind), Some(ArgKind::Host))
                {
                    let at = self.nat_to_expr(&at, env, body)?;
                    return Ok(Val::Scalar(L::load(a.clone(), at, 0), ScalarType::I64));
                }
                match self.lookup_val(array, env, body)? {
                    Val::Array(view) => self.elem(&view, &at, body),
                    _ => Err(bug(span, &format!("the lookup {e} inside toNat, of something that is not an array"))),
                }
            }
            ExprKind::Proj { tuple, field } => match self.lookup_val(tuple, env, body)? {
                Val::Tuple(mut items) if (*field as usize) >= 1 && (*field as usize) <= items.len() => {
                    Ok(items.swap_remove(*field as usize - 1))
                }
                _ => Err(bug(span, &format!("toNat of {e}, a projection of something that is not a tuple"))),
            },
            _ => Ok(Val::Scalar(self.int_expr(e, env, body)?, ScalarType::I64)),
        }
    }

    /// The refusal of a counted length (`toNat(count#k)`) where no count
    /// array holds it: only a stream consumed in order, a result's counting
    /// phase or a materialised stream (`materialize`) knows its length.
    fn counted_elsewhere(&self) -> Diagnostic {
        unsupported(
            self.kernel.body.span,
            "using the length of the result of `union`, `intersect`, `compressAdd` or `filter` here (it is known only by walking it: store it with `toGlobal` first, or map, reduce, zip, pad, index or return it)",
        )
    }

    /// `lhs op rhs` inside a `toNat`, on `i64` (comparisons give `bool`).
    fn int_binary(&mut self, op: SrcOp, lhs: &Expr, rhs: &Expr, env: &Env, body: &mut Block) -> Result<L, Diagnostic> {
        Ok(L::bin(super::operators::bin_op(op), self.int_expr(lhs, env, body)?, self.int_expr(rhs, env, body)?))
    }
}

/// An integer expression as `i64`.
pub(super) fn widen(e: L, s: ScalarType) -> L {
    if s == ScalarType::I64 { e } else { L::Cast(ScalarType::I64, Box::new(e)) }
}

/// Free names of a natural (variables and names inside `toNat`), Σ indices excluded.
pub(super) fn free_names(n: &Nat) -> Vec<Name> {
    fn nat(n: &Nat, bound: &mut Vec<Name>, out: &mut Vec<Name>) {
        match n {
            Nat::Var(x) if !bound.contains(x) => out.push(x.clone()),
            Nat::Sum { var, lo, hi, body } => {
                nat(lo, bound, out);
                nat(hi, bound, out);
                bound.push(var.clone());
                nat(body, bound, out);
                bound.pop();
            }
            Nat::ToNat(e) => expr(e, bound, out),
            _ => n.for_each_child(&mut |c| nat(c, bound, out)),
        }
    }
    fn expr(e: &Expr, bound: &mut Vec<Name>, out: &mut Vec<Name>) {
        match &e.kind {
            ExprKind::Var(x) if !bound.contains(x) => out.push(x.clone()),
            ExprKind::NatValue(n) => nat(n, bound, out),
            _ => e.for_each_child(&mut |c| expr(c, bound, out)),
        }
    }
    let mut out = Vec::new();
    nat(n, &mut Vec::new(), &mut out);
    out
}

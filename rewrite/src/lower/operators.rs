//! Scalar operators and `select`.
//!
//! Operands meet at a common machine type ([`super::numbers`]). Evaluation
//! follows the interpreter's order where it is observable: `&&` and `||`
//! evaluate their right operand only when it decides the result, and
//! `select` evaluates only the chosen branch — so `select(k > 0, xs@(k - 1),
//! 0.0)` or `d != 0 && n / d > 2` never report an out-of-bounds index or a
//! division by zero the interpreter does not. An integer division or
//! remainder checks its divisor (a `Check`: the interpreter's error, located;
//! in OpenCL C the operation would be undefined). An operand or branch that
//! lowers to a plain expression that cannot fail (no statements: no bounds
//! check, no loop; no integer division) is computed unconditionally (a
//! `select` expression, no branch); otherwise it gets its own block under
//! an `if`, its value carried out in a mutable local.

use super::numbers::{convert, meet, wrapped_at, wrapping, wrapping_neg};
use super::{Env, Lowerer, Val, unsupported};
use heddle_ir::expr::BinOp as SrcOp;
use heddle_ir::loops::{BinOp, Block, Expr as L, Stmt};
use heddle_ir::{Diagnostic, Name, ScalarType, Span};
use heddle_typeck::TExpr;

pub(super) fn bin_op(op: SrcOp) -> BinOp {
    match op {
        SrcOp::Add => BinOp::Add,
        SrcOp::Sub => BinOp::Sub,
        SrcOp::Mul => BinOp::Mul,
        SrcOp::Div => BinOp::Div,
        SrcOp::Rem => BinOp::Rem,
        SrcOp::Eq => BinOp::Eq,
        SrcOp::Ne => BinOp::Ne,
        SrcOp::Lt => BinOp::Lt,
        SrcOp::Le => BinOp::Le,
        SrcOp::Gt => BinOp::Gt,
        SrcOp::Ge => BinOp::Ge,
        SrcOp::And => BinOp::And,
        SrcOp::Or => BinOp::Or,
        SrcOp::Max => BinOp::Max,
        SrcOp::Min => BinOp::Min,
    }
}

/// Can `e` be evaluated whether or not its value is used: no integer
/// division or remainder by something that may be zero? (Loads in a plain
/// expression are in bounds by construction: data-dependent ones come with
/// a `Check` statement, which makes the block non-empty.)
fn cannot_fail(e: &L, types: &dyn Fn(&L) -> Option<ScalarType>) -> bool {
    match e {
        L::Bin(BinOp::Div | BinOp::Rem, a, b) => {
            let nonzero_literal = matches!(**b, L::Int(v, _) if v != 0);
            let float = types(a).is_some_and(|t| t.is_float());
            (nonzero_literal || float) && cannot_fail(a, types) && cannot_fail(b, types)
        }
        L::Bin(_, a, b) => cannot_fail(a, types) && cannot_fail(b, types),
        L::Load { index, .. } => cannot_fail(index, types),
        L::Neg(a) | L::Not(a) | L::Cast(_, a) => cannot_fail(a, types),
        L::Select(c, a, b) => cannot_fail(c, types) && cannot_fail(a, types) && cannot_fail(b, types),
        L::Int(..) | L::Float(..) | L::Bool(_) | L::Var(_) => true,
    }
}

/// Does `e` read memory?
fn has_load(e: &L) -> bool {
    match e {
        L::Load { .. } => true,
        L::Bin(_, a, b) => has_load(a) || has_load(b),
        L::Neg(a) | L::Not(a) | L::Cast(_, a) => has_load(a),
        L::Select(c, a, b) => has_load(c) || has_load(a) || has_load(b),
        L::Int(..) | L::Float(..) | L::Bool(_) | L::Var(_) => false,
    }
}

/// The scalars of a value, with their types (`None` for a value holding an array).
pub(super) fn leaves(v: &Val, out: &mut Vec<(L, ScalarType)>) -> bool {
    match v {
        Val::Scalar(e, s) => {
            out.push((e.clone(), *s));
            true
        }
        Val::Tuple(items) => items.iter().all(|x| leaves(x, out)),
        Val::Array(_) => false,
    }
}

/// The scalar types of a tuple type's leaves, in order (`None` where unknown).
pub(super) fn declared_leaves(t: &heddle_ir::Type, out: &mut Vec<Option<ScalarType>>) {
    match t {
        heddle_ir::Type::Tuple(ts) => ts.iter().for_each(|t| declared_leaves(t, out)),
        t => out.push(t.as_scalar()),
    }
}

/// A value of the shape of `like`, its scalars taken from `from` in order.
fn rebuild(like: &Val, from: &mut impl Iterator<Item = Val>) -> Val {
    match like {
        Val::Tuple(items) => Val::Tuple(items.iter().map(|x| rebuild(x, from)).collect()),
        other => from.next().unwrap_or_else(|| other.clone()),
    }
}

impl Lowerer<'_> {
    /// Lowers `t` into a block of its own: its value and the statements it needs.
    fn expr_apart(&mut self, t: &TExpr, env: &Env) -> Result<(Val, Block), Diagnostic> {
        let mut block = Block::new();
        let v = self.expr(t, env, &mut block)?;
        Ok((v, block))
    }

    /// Is a value lowered into `block` safe to compute unconditionally?
    fn speculable(&self, v: &[(L, ScalarType)], block: &Block) -> bool {
        let types = |e: &L| self.machine_type(e);
        block.is_empty() && v.iter().all(|(e, _)| cannot_fail(e, &types))
    }

    /// The machine type of an expression built by lowering, where it can tell
    /// (for [`cannot_fail`]'s float test).
    fn machine_type(&self, e: &L) -> Option<ScalarType> {
        match e {
            L::Int(_, t) | L::Float(_, t) | L::Cast(t, _) => Some(*t),
            L::Var(v) => self.var_types.iter().rev().find(|(n, _)| n == v).map(|(_, t)| *t),
            L::Bin(_, a, _) | L::Neg(a) => self.machine_type(a),
            _ => None,
        }
    }

    /// `lhs op rhs`.
    pub(super) fn binary(
        &mut self,
        op: SrcOp,
        lhs: &TExpr,
        rhs: &TExpr,
        span: Span,
        env: &Env,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let not_scalars = || unsupported(span, &format!("`{}` on non-scalars", op.symbol()));
        let (a, sa) = match self.expr(lhs, env, body)? {
            Val::Scalar(a, sa) => (a, sa),
            Val::Tuple(lanes) => return self.lanes_binary(op, lhs, lanes, rhs, span, env, body),
            Val::Array(_) => return Err(not_scalars()),
        };
        if op.is_logical() {
            let (b, block) = self.expr_apart(rhs, env)?;
            let Val::Scalar(b, _) = b else { return Err(not_scalars()) };
            if self.speculable(&[(b.clone(), ScalarType::Bool)], &block) {
                return Ok(Val::Scalar(L::bin(bin_op(op), a, b), ScalarType::Bool));
            }
            // `a && b` is `a ? b : false`; `a || b` is `a ? true : b`.
            let r = self.fresh("cond");
            body.push(Stmt::Var { var: r.clone(), ty: ScalarType::Bool, init: a.clone() });
            let mut then = block;
            then.push(Stmt::Assign { var: r.clone(), value: b });
            let cond = if op == SrcOp::And { L::var(r.clone()) } else { L::Not(Box::new(L::var(r.clone()))) };
            body.push(Stmt::If { cond, then, els: Block::new() });
            return Ok(Val::Scalar(L::var(r), ScalarType::Bool));
        }
        let Val::Scalar(b, sb) = self.expr(rhs, env, body)? else { return Err(not_scalars()) };
        self.scalar_binary(op, (a, sa), (b, sb), lhs.ty.as_scalar(), span, body)
    }

    /// `lhs op rhs` on vectors (tuples of lanes, `vectors.rs`): lane by lane.
    fn lanes_binary(
        &mut self,
        op: SrcOp,
        lhs: &TExpr,
        a: Vec<Val>,
        rhs: &TExpr,
        span: Span,
        env: &Env,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let not_vectors = || unsupported(span, &format!("`{}` on values that are not scalars or vectors", op.symbol()));
        if op.is_logical() || op.is_comparison() {
            return Err(unsupported(span, &format!("`{}` on vectors", op.symbol())));
        }
        let heddle_ir::Type::Tuple(lane_types) = &lhs.ty else { return Err(not_vectors()) };
        let Val::Tuple(b) = self.expr(rhs, env, body)? else { return Err(not_vectors()) };
        if a.len() != b.len() || a.len() != lane_types.len() {
            return Err(not_vectors());
        }
        let mut out = Vec::new();
        for ((x, y), t) in a.into_iter().zip(b).zip(lane_types) {
            let (Val::Scalar(x, sx), Val::Scalar(y, sy)) = (x, y) else { return Err(not_vectors()) };
            out.push(self.scalar_binary(op, (x, sx), (y, sy), t.as_scalar(), span, body)?);
        }
        Ok(Val::Tuple(out))
    }

    /// `a op b` on scalars of machine types `sa` and `sb`, where the checker
    /// gave the left operand the type `declared`.
    fn scalar_binary(
        &mut self,
        op: SrcOp,
        (a, sa): (L, ScalarType),
        (b, sb): (L, ScalarType),
        declared: Option<ScalarType>,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let m = meet(sa, sb, declared);
        let (a, mut b) = (convert(a, sa, m), convert(b, sb, m));
        if matches!(op, SrcOp::Div | SrcOp::Rem) && m.is_int() && !matches!(b, L::Int(v, _) if v != 0) {
            // The interpreter's error, located, on every backend (in OpenCL C it is undefined).
            let Val::Scalar(d, _) = self.share(Val::Scalar(b, m), "divisor", body) else {
                unreachable!("share keeps a scalar")
            };
            let id = self.check(format!("integer division by zero: the right operand of `{}` is 0", op.symbol()), span);
            body.push(Stmt::Check { cond: L::bin(BinOp::Ne, d.clone(), L::Int(0, m)), id });
            b = d;
        }
        // The program's own `i64` arithmetic wraps (`numbers`): `+ - *` at
        // `u64` where the backend asks for it, and a division by -1 apart
        // (`i64::MIN / -1` overflows: undefined in C, a trap on x86).
        let user_i64 = m == ScalarType::I64 && declared == Some(ScalarType::I64);
        // `1 * x` and `x * 1` are `x` exactly, for floats in IEEE arithmetic
        // too (not so for any other constant): an iso-valued tensor's entries
        // (`explicitVal = 1.0`, a graph's adjacency matrix) are this literal,
        // and its SpMV then reads `x` without a multiply.
        let one = |e: &L| match e {
            L::Float(v, _) => v.to_bits() == 1f64.to_bits(),
            L::Int(v, _) => *v == 1,
            _ => false,
        };
        if op == SrcOp::Mul && (m.is_float() || m.is_int()) && (one(&a) || one(&b)) {
            let e = if one(&a) { b } else { a };
            return Ok(match wrapped_at(m, declared) {
                Some(d) => Val::Scalar(convert(e, m, d), d),
                None => Val::Scalar(e, m),
            });
        }
        let e = match op {
            SrcOp::Add | SrcOp::Sub | SrcOp::Mul if user_i64 && self.options.wrapping_i64 => wrapping(bin_op(op), a, b),
            SrcOp::Div | SrcOp::Rem if user_i64 && !matches!(b, L::Int(v, _) if v != -1) => {
                self.division_by_minus_one(op, a, b, body)
            }
            _ => L::bin(bin_op(op), a, b),
        };
        if op.is_comparison() {
            return Ok(Val::Scalar(e, ScalarType::Bool));
        }
        if matches!(op, SrcOp::Min | SrcOp::Max) {
            // One of the operands, unchanged (the interpreter keeps it whole).
            return Ok(Val::Scalar(e, m));
        }
        Ok(match wrapped_at(m, declared) {
            Some(d) => Val::Scalar(convert(e, m, d), d),
            None => Val::Scalar(e, m),
        })
    }

    /// `a / b` or `a % b` on `i64` values where `b` may be -1: `i64::MIN / -1`
    /// overflows (undefined in OpenCL C, a trap on x86), and the interpreter
    /// wraps (Rust's `wrapping_div`, `wrapping_rem`): `a / -1` is `-a`
    /// wrapping and `a % -1` is 0. The operation divides by 1 instead of -1,
    /// and a quotient by -1 is negated after. (`b` is a variable or a literal:
    /// the check for a zero divisor shared it.)
    fn division_by_minus_one(&mut self, op: SrcOp, a: L, b: L, body: &mut Block) -> L {
        let minus_one = L::Int(-1, ScalarType::I64);
        if b == minus_one {
            return if op == SrcOp::Div { wrapping_neg(a) } else { L::Int(0, ScalarType::I64) };
        }
        let is_minus_one = L::bin(BinOp::Eq, b.clone(), minus_one);
        let divisor = L::Select(Box::new(is_minus_one.clone()), Box::new(L::Int(1, ScalarType::I64)), Box::new(b));
        if op == SrcOp::Rem {
            return L::bin(BinOp::Rem, a, divisor);
        }
        let Val::Scalar(a, _) = self.share(Val::Scalar(a, ScalarType::I64), "dividend", body) else {
            unreachable!("share keeps a scalar")
        };
        let quotient = L::bin(BinOp::Div, a.clone(), divisor);
        L::Select(Box::new(is_minus_one), Box::new(wrapping_neg(a)), Box::new(quotient))
    }

    /// `select(c, then, els)`: only the chosen branch is evaluated.
    pub(super) fn select(
        &mut self,
        c: L,
        then: &TExpr,
        els: &TExpr,
        env: &Env,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        let a = self.expr_apart(then, env)?;
        let b = self.expr_apart(els, env)?;
        self.choose(c, a, b, &then.ty, span, body)
    }

    /// The value `a` or `b` (each with the statements that compute it) as `c`
    /// says, of the checker's type `ty`. Scalars and tuples are chosen by a
    /// `select` expression or under an `if`; two arrays become a view that
    /// chooses element by element ([`ViewKind::Choice`](super::view::ViewKind::Choice)).
    pub(super) fn choose(
        &mut self,
        c: L,
        a: (Val, Block),
        b: (Val, Block),
        ty: &heddle_ir::Type,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        self.choose_with(c, a, b, ty, span, body, true)
    }

    /// [`choose`](Self::choose) where `b` may be read only when `c` fails,
    /// even when it is a plain load (`pad`'s element, out of range outside).
    pub(super) fn choose_strictly(
        &mut self,
        c: L,
        a: (Val, Block),
        b: (Val, Block),
        ty: &heddle_ir::Type,
        span: Span,
        body: &mut Block,
    ) -> Result<Val, Diagnostic> {
        self.choose_with(c, a, b, ty, span, body, false)
    }

    fn choose_with(
        &mut self,
        c: L,
        (a, a_block): (Val, Block),
        (b, b_block): (Val, Block),
        ty: &heddle_ir::Type,
        span: Span,
        body: &mut Block,
        speculate: bool,
    ) -> Result<Val, Diagnostic> {
        if let (Val::Array(va), Val::Array(vb)) = (&a, &b) {
            // The arrays' own statements (their rows' starts) run either way; a
            // check among them could fail for the branch not taken. Strictly (`pad`
            // of rows, where the row outside is out of range), not a load either:
            // each element is then read on its own side only (`strict`).
            let reachable = |s: &Stmt| match s {
                Stmt::Let { value, .. } => speculate || !has_load(value),
                _ => false,
            };
            if !a_block.iter().chain(&b_block).all(reachable) {
                return Err(unsupported(
                    span,
                    if speculate {
                        "`select` between arrays that need run-time checks to be reached"
                    } else {
                        "`pad` of arrays of arrays whose rows are found by reading memory"
                    },
                ));
            }
            body.extend(a_block);
            body.extend(b_block);
            let Val::Scalar(c, _) = self.share(Val::Scalar(c, ScalarType::Bool), "cond", body) else {
                unreachable!("share keeps a scalar")
            };
            let kind = super::view::ViewKind::Choice {
                cond: c,
                a: Box::new(va.clone()),
                b: Box::new(vb.clone()),
                strict: !speculate,
            };
            return Ok(Val::Array(super::View { ty: ty.clone(), kind }));
        }
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        if !leaves(&a, &mut xs) || !leaves(&b, &mut ys) || xs.len() != ys.len() {
            return Err(unsupported(span, "`select` between tuples that hold arrays"));
        }
        let mut declared = Vec::new();
        declared_leaves(ty, &mut declared);
        let types: Vec<ScalarType> = xs
            .iter()
            .zip(&ys)
            .enumerate()
            .map(|(k, ((_, s), (_, t)))| meet(*s, *t, declared.get(k).copied().flatten()))
            .collect();
        let pick = |v: Vec<(L, ScalarType)>| -> Vec<L> {
            v.into_iter().zip(&types).map(|((e, s), m)| convert(e, s, *m)).collect()
        };
        let both_speculable = speculate && self.speculable(&xs, &a_block) && self.speculable(&ys, &b_block);
        let (xs, ys) = (pick(xs), pick(ys));
        let results: Vec<Val> = if both_speculable {
            // One condition for every component of a tuple.
            let c = match (&c, xs.len()) {
                (L::Var(_) | L::Bool(_), _) | (_, 1) => c,
                _ => {
                    let Val::Scalar(c, _) = self.share(Val::Scalar(c, ScalarType::Bool), "cond", body) else {
                        unreachable!("share keeps a scalar")
                    };
                    c
                }
            };
            xs.into_iter()
                .zip(ys)
                .zip(&types)
                .map(|((x, y), t)| Val::Scalar(L::Select(Box::new(c.clone()), Box::new(x), Box::new(y)), *t))
                .collect()
        } else {
            let vars: Vec<Name> = types.iter().map(|_| self.fresh("picked")).collect();
            for (v, t) in vars.iter().zip(&types) {
                let zero = if t.is_float() {
                    L::Float(0.0, *t)
                } else if *t == ScalarType::Bool {
                    L::Bool(false)
                } else {
                    L::Int(0, *t)
                };
                body.push(Stmt::Var { var: v.clone(), ty: *t, init: zero });
            }
            let assign = |mut block: Block, values: Vec<L>| {
                block.extend(vars.iter().zip(values).map(|(v, e)| Stmt::Assign { var: v.clone(), value: e }));
                block
            };
            body.push(Stmt::If { cond: c, then: assign(a_block, xs), els: assign(b_block, ys) });
            vars.iter().zip(&types).map(|(v, t)| Val::Scalar(L::var(v.clone()), *t)).collect()
        };
        Ok(rebuild(&a, &mut results.into_iter()))
    }
}

//! Strength reduction of a loop's counter: counting `q = a·k + b` instead of `k`.
//!
//! A sequential loop over `k` whose body reads `k` only inside sums of the
//! form `a·k + …` (one constant `a` for all of them) is run over the scaled
//! counter `q = a·k + b` instead, `b` the loop-invariant terms of the first
//! such sum: the counter starts at `a·lo + b`, steps by `a` and stops at
//! `a·hi + b`, and each sum `a·k + t` of the body reads `q + t - b` (the
//! terms common to `t` and `b` cancel). SELL-8's step
//! (`examples/sparse/spmv_sell8.hdl`) computes `let start2 = 8 * k1 +
//! start` and reads `cols[l + start2]`, `vals[l + start2]`: counted as `q =
//! 8·k1 + start`, `start2` is the counter itself, and each lane's address
//! is `base + q·4 + 4·l`, one x86 addressing mode, with no `lea`/`shl` per
//! step (docs/performance.md, "sellstep"). It applies to any loop whose
//! sums are affine in its counter (`buf[8·k + c]` loses its scaling
//! multiply); a scale of 1 pays only where a sum is computed on its own (a
//! `let`), not where it is a load's whole index, which `expr.rs`'s
//! `address` already splits into an invariant base and the counter. A sum
//! computed on its own that would keep invariant terms beside `q` (two
//! `let`s `3·i + s2`, `3·i + s5`) saves nothing and costs a register, so
//! such a loop keeps its counter.
//!
//! **Exact.** Integer arithmetic wraps, so `q + t - b` is `a·k + t` for
//! every `k`, whatever overflows. The loop tests `q != a·hi + b`, which
//! stops after exactly `n = hi - lo` steps (the loop runs only when `lo <
//! hi`) when `a·j ≢ a·n (mod 2⁶⁴)` for `0 < j < n`, i.e. when `n < 2^(64 -
//! v)` with `2^v` the largest power of two dividing `a`: always for an odd
//! `a`; otherwise the bounds' magnitudes must show it (`Translator::magnitude`: SELL's
//! `(i64) soff[s + 1] - (i64) soff[s]` is below 2³²). A loop whose body
//! reads `k` in any other way (a comparison, a conversion, a product with a
//! variable) keeps its counter.

use super::Translator;
use super::expr::{flatten_sum, may_fault};
use heddle_ir::loops::{BinOp, Expr, Stmt};
use heddle_ir::{Name, ScalarType};

/// A loop counted as `q = scale · k + offset`.
pub(super) struct Induction {
    /// The counter's name, `k×` (no identifier can be it, so it is fresh).
    pub(super) var: Name,
    /// `a`, at least 1.
    pub(super) scale: i64,
    /// `b`: invariant terms, with no load (evaluated before the loop).
    pub(super) offset: Vec<(bool, Expr)>,
    /// The body reading `q` where it read `a·k + t`.
    pub(super) body: Vec<Stmt>,
}

/// The rewriting of a body's sums, the scale and offset fixed by the first.
struct Rewrite<'n> {
    var: &'n Name,
    counter: Name,
    /// `(a, b)` once the first sum is seen.
    chosen: Option<(i64, Vec<(bool, Expr)>)>,
    /// Whether a sum is not a load's or store's whole index (computed on
    /// its own, so counting it saves an add even with a scale of 1).
    computed: bool,
    /// Whether a sum computed on its own keeps invariant terms beside `q`
    /// (`3·i + s5` after `b = s2`: `q + (s5 - s2)`, an add per iteration
    /// as before and one more value live across the loop): then counting
    /// `q` saves nothing there and costs registers (BSR addition's 2 × 3
    /// blocks spilled more), so the loop keeps its counter.
    residue: bool,
}

/// Whether `e` reads `var`.
fn mentions(e: &Expr, var: &Name) -> bool {
    super::lazy::mentions(e, var)
}

/// `a` when `t` is `a·var`, `var·a` or `var` (`a` = 1).
fn scale_of(t: &Expr, var: &Name) -> Option<i64> {
    match t {
        Expr::Var(n) if n == var => Some(1),
        Expr::Bin(BinOp::Mul, x, y) => match (&**x, &**y) {
            (Expr::Int(a, ScalarType::I64), Expr::Var(n)) | (Expr::Var(n), Expr::Int(a, ScalarType::I64))
                if n == var =>
            {
                Some(*a)
            }
            _ => None,
        },
        _ => None,
    }
}

/// `terms` as one sum after `first` (`None`: nothing to add).
fn sum(first: Option<Expr>, terms: &[(bool, Expr)], constant: i64) -> Expr {
    let mut acc = first;
    for (plus, t) in terms {
        acc = Some(match (acc, plus) {
            (None, true) => t.clone(),
            (None, false) => Expr::Neg(Box::new(t.clone())),
            (Some(a), true) => Expr::Bin(BinOp::Add, Box::new(a), Box::new(t.clone())),
            (Some(a), false) => Expr::Bin(BinOp::Sub, Box::new(a), Box::new(t.clone())),
        });
    }
    let c = Expr::Int(constant, ScalarType::I64);
    match acc {
        None => c,
        Some(a) if constant == 0 => a,
        Some(a) => Expr::Bin(BinOp::Add, Box::new(a), Box::new(c)),
    }
}

impl Rewrite<'_> {
    /// `e` with its sums of the counter rewritten; `None` when `e` reads the
    /// counter otherwise. `index`: `e` is a load's or store's whole index.
    fn expr(&mut self, t: &Translator<'_, '_>, inner: &[Name], e: &Expr, index: bool) -> Option<Expr> {
        if !mentions(e, self.var) {
            return Some(e.clone());
        }
        // `k` alone only as a whole index: a conversion `(int) k` is where
        // the loop checks that its range fits (`narrow_casts`), which needs
        // `k` itself.
        if (matches!(e, Expr::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul, ..)) || index)
            && let Some(r) = self.sum(t, inner, e, index)
        {
            return Some(r);
        }
        let mut sub = |x: &Expr, index: bool| self.expr(t, inner, x, index).map(Box::new);
        Some(match e {
            Expr::Var(_) => return None,
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) => e.clone(),
            Expr::Load { buf, index, field } => {
                Expr::Load { buf: buf.clone(), index: sub(index, true)?, field: *field }
            }
            Expr::Bin(op, a, b) => Expr::Bin(*op, sub(a, false)?, sub(b, false)?),
            Expr::Neg(a) => Expr::Neg(sub(a, false)?),
            Expr::Not(a) => Expr::Not(sub(a, false)?),
            Expr::Cast(ty, a) => Expr::Cast(*ty, sub(a, false)?),
            Expr::Select(c, a, b) => Expr::Select(sub(c, false)?, sub(a, false)?, sub(b, false)?),
        })
    }

    /// `e`, a sum with exactly one term `a·k` (plus sign) and no other
    /// mention of `k`, as `q + t - b`; `None` when it is not one or its `a`
    /// differs from the loop's.
    fn sum(&mut self, t: &Translator<'_, '_>, inner: &[Name], e: &Expr, index: bool) -> Option<Expr> {
        let mut terms = Vec::new();
        let mut constant = 0i64;
        flatten_sum(e, true, &mut terms, &mut constant);
        let mut scale = None;
        let mut rest: Vec<(bool, Expr)> = Vec::new();
        for (plus, term) in terms {
            if !mentions(term, self.var) {
                rest.push((plus, term.clone()));
                continue;
            }
            let a = scale_of(term, self.var).filter(|a| plus && *a >= 1 && scale.is_none())?;
            scale = Some(a);
        }
        let a = scale?;
        let (chosen, b) = self.chosen.get_or_insert_with(|| {
            // `b`: the invariant terms that cannot fault (evaluated before
            // the loop runs, where a load might not be valid yet).
            let b = rest.iter().filter(|(_, x)| t.invariant_in(x, inner) && !may_fault(x)).cloned().collect();
            (a, b)
        });
        if *chosen != a {
            return None;
        }
        // `t - b`, the terms common to both cancelled.
        let mut minus: Vec<(bool, Expr)> = Vec::new();
        for (plus, x) in b.iter() {
            match rest.iter().position(|(p, y)| p == plus && y == x) {
                Some(i) => {
                    rest.remove(i);
                }
                None => minus.push((!plus, x.clone())),
            }
        }
        rest.extend(minus);
        self.computed |= !index;
        self.residue |= !index && rest.iter().any(|(_, x)| t.invariant_in(x, inner));
        Some(sum(Some(Expr::Var(self.counter.clone())), &rest, constant))
    }

    fn block(&mut self, t: &Translator<'_, '_>, inner: &[Name], body: &[Stmt]) -> Option<Vec<Stmt>> {
        body.iter().map(|s| self.stmt(t, inner, s)).collect()
    }

    fn stmt(&mut self, t: &Translator<'_, '_>, inner: &[Name], s: &Stmt) -> Option<Stmt> {
        Some(match s {
            Stmt::Let { var, ty, value } => {
                Stmt::Let { var: var.clone(), ty: *ty, value: self.expr(t, inner, value, false)? }
            }
            Stmt::Var { var, ty, init } => {
                Stmt::Var { var: var.clone(), ty: *ty, init: self.expr(t, inner, init, false)? }
            }
            Stmt::Assign { var, value } => Stmt::Assign { var: var.clone(), value: self.expr(t, inner, value, false)? },
            Stmt::Store { buf, index, field, value } => Stmt::Store {
                buf: buf.clone(),
                index: self.expr(t, inner, index, true)?,
                field: *field,
                value: self.expr(t, inner, value, false)?,
            },
            Stmt::AddAtomic { buf, index, field, value } => Stmt::AddAtomic {
                buf: buf.clone(),
                index: self.expr(t, inner, index, true)?,
                field: *field,
                value: self.expr(t, inner, value, false)?,
            },
            Stmt::For { var, lo, hi, schedule, body } => Stmt::For {
                var: var.clone(),
                lo: self.expr(t, inner, lo, false)?,
                hi: self.expr(t, inner, hi, false)?,
                schedule: *schedule,
                body: self.block(t, inner, body)?,
            },
            Stmt::If { cond, then, els } => Stmt::If {
                cond: self.expr(t, inner, cond, false)?,
                then: self.block(t, inner, then)?,
                els: self.block(t, inner, els)?,
            },
            Stmt::Alloc { buf, fields, len, space } => Stmt::Alloc {
                buf: buf.clone(),
                fields: fields.clone(),
                len: self.expr(t, inner, len, false)?,
                space: *space,
            },
            Stmt::Sort { buf, lo, len } => Stmt::Sort {
                buf: buf.clone(),
                lo: self.expr(t, inner, lo, false)?,
                len: self.expr(t, inner, len, false)?,
            },
            Stmt::Barrier => Stmt::Barrier,
            Stmt::Check { cond, id } => Stmt::Check { cond: self.expr(t, inner, cond, false)?, id: *id },
        })
    }
}

impl Translator<'_, '_> {
    /// How to count the sequential loop `for var in lo .. hi { body }`, when
    /// counting `a·var + b` pays and is exact (the module's documentation).
    pub(super) fn induction(&self, var: &Name, lo: &Expr, hi: &Expr, body: &[Stmt]) -> Option<Induction> {
        if !self.options.strength_reduction {
            return None;
        }
        let mut inner = vec![var.clone()];
        super::hoist::declared(body, &mut inner);
        super::hoist::assigned(body, &mut inner);
        // A name the body binds again (`var` shadowed) would be rewritten wrongly.
        if inner[1..].contains(var) {
            return None;
        }
        let counter = Name::from(format!("{var}×"));
        if inner.contains(&counter) || self.position(&counter).is_ok() {
            return None;
        }
        let mut rw = Rewrite { var, counter: counter.clone(), chosen: None, computed: false, residue: false };
        let body = rw.block(self, &inner, body)?;
        let (scale, offset) = rw.chosen?;
        if rw.residue {
            return None;
        }
        if scale == 1 && (offset.is_empty() || !rw.computed) {
            return None;
        }
        // The trip count `n <= |lo| + |hi|` below 2^(64 - v) (module documentation).
        let v = scale.trailing_zeros();
        if v > 0 {
            let n = self.magnitude(lo, 0)?.checked_add(self.magnitude(hi, 0)?)?;
            if n >= 1u128 << (64 - v) {
                return None;
            }
        }
        Some(Induction { var: counter, scale, offset, body })
    }

    /// An upper bound of `|e|` for an `i64` expression, when its parts show
    /// one: constants, integers narrower than 64 bits (loaded, converted,
    /// or named), and sums, differences and products of those.
    fn magnitude(&self, e: &Expr, depth: usize) -> Option<u128> {
        let narrow = |t: ScalarType| (t.is_int() && t.size_bytes() < 8).then(|| 1u128 << (8 * t.size_bytes()));
        if depth > 16 {
            return None;
        }
        match e {
            Expr::Int(c, _) => Some(u128::from(c.unsigned_abs())),
            Expr::Cast(to, a) => narrow(*to).or_else(|| if to.is_int() { self.magnitude(a, depth + 1) } else { None }),
            Expr::Load { buf, field, .. } => narrow(*self.buffer(buf).ok()?.fields.get(*field as usize)?),
            Expr::Var(n) => {
                let ty = match self.scope[self.position(n).ok()?].1 {
                    super::Bound::Val(_, t) | super::Bound::Var(_, t) => Some(t),
                    _ => None,
                };
                ty.and_then(narrow).or_else(|| {
                    let (_, value) = self.let_values.iter().rev().find(|(m, _)| m == n)?;
                    self.magnitude(value, depth + 1)
                })
            }
            Expr::Bin(BinOp::Add | BinOp::Sub, a, b) => {
                self.magnitude(a, depth + 1)?.checked_add(self.magnitude(b, depth + 1)?)
            }
            Expr::Bin(BinOp::Mul, a, b) => self.magnitude(a, depth + 1)?.checked_mul(self.magnitude(b, depth + 1)?),
            Expr::Neg(a) => self.magnitude(a, depth + 1),
            _ => None,
        }
    }
}

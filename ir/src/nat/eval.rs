//! Evaluating naturals to integers.

use super::{Nat, NatCond, NatOp};
use crate::expr::Expr;
use crate::name::Name;
use num_integer::Integer;
use std::collections::HashMap;

/// Why a natural could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NatEvalError {
    /// A variable without a value.
    #[error("the natural `{0}` has no value")]
    Unbound(Name),
    /// Out of the 64-bit range.
    #[error("natural arithmetic overflowed")]
    Overflow,
    /// `/` or `%` by zero.
    #[error("division by zero in a natural")]
    DivByZero,
    /// An unsolved unknown.
    #[error("an unsolved type-level unknown")]
    Unknown,
    /// A Σ whose range is too large to add up term by term.
    #[error("a sum over {0} terms is too large to evaluate")]
    SumTooLong(i128),
    /// Evaluating the expression of a `toNat` failed.
    #[error("{0}")]
    ToNat(String),
}

/// Values for the free variables of a natural, and the evaluator of `toNat`.
pub trait NatEnv {
    /// The value of a natural variable, if known.
    fn nat_var(&self, name: &Name) -> Option<i64>;
    /// Evaluates the expression of `toNat(e)`; `bound` holds the Σ indices
    /// (and other binders) in scope at that point, innermost last.
    fn to_nat(&self, e: &Expr, bound: &[(Name, i64)]) -> Result<i64, NatEvalError>;
    /// `sum(var = lo .. hi, toNat(e))` at once, where the environment can
    /// read the terms faster than one evaluation each (a lookup `X@var` into
    /// a flat buffer); `None` to evaluate term by term. Only called where
    /// `var` is not shadowed by an outer binder that `e` could mean instead
    /// (`var` is the innermost binder).
    fn sum_to_nat(&self, _e: &Expr, _var: &Name, _lo: i64, _hi: i64) -> Option<Result<i64, NatEvalError>> {
        None
    }
}

impl NatEnv for HashMap<Name, i64> {
    fn nat_var(&self, name: &Name) -> Option<i64> {
        self.get(name).copied()
    }
    fn to_nat(&self, e: &Expr, bound: &[(Name, i64)]) -> Result<i64, NatEvalError> {
        // Without a program interpreter only `toNat(n)` of naturals can be evaluated.
        let n = e.as_nat().ok_or_else(|| NatEvalError::ToNat("toNat needs the program's values".into()))?;
        n.eval_with(self, &mut bound.to_vec())
    }
}

/// Σ ranges longer than this are refused rather than looped over.
pub const MAX_SUM_TERMS: i128 = 1 << 32;

impl Nat {
    /// Evaluates with the variables and `toNat`s of `env`.
    pub fn eval(&self, env: &dyn NatEnv) -> Result<i64, NatEvalError> {
        self.eval_with(env, &mut Vec::new())
    }

    /// Evaluates with extra bound variables (innermost last), which shadow `env`.
    pub fn eval_with(&self, env: &dyn NatEnv, bound: &mut Vec<(Name, i64)>) -> Result<i64, NatEvalError> {
        match self {
            Nat::Var(x) => bound
                .iter()
                .rev()
                .find(|(n, _)| n == x)
                .map(|(_, v)| *v)
                .or_else(|| env.nat_var(x))
                .ok_or_else(|| NatEvalError::Unbound(x.clone())),
            Nat::Lit(v) => Ok(*v),
            Nat::Meta(_) => Err(NatEvalError::Unknown),
            Nat::ToNat(e) => env.to_nat(e, bound),
            Nat::Bin(op, a, b) => {
                let a = a.eval_with(env, bound)?;
                let b = b.eval_with(env, bound)?;
                apply(*op, a, b)
            }
            Nat::Cond(c, a, b) => {
                if c.eval_with(env, bound)? {
                    a.eval_with(env, bound)
                } else {
                    b.eval_with(env, bound)
                }
            }
            Nat::Sum { var, lo, hi, body } => {
                let lo = lo.eval_with(env, bound)?;
                let hi = hi.eval_with(env, bound)?;
                if hi < lo {
                    return Ok(0);
                }
                let terms = hi as i128 - lo as i128 + 1;
                if terms > MAX_SUM_TERMS {
                    return Err(NatEvalError::SumTooLong(terms));
                }
                // The array `e` reads must not be a binder of the enclosing Σs.
                if let Nat::ToNat(e) = &**body
                    && !bound.iter().any(|(n, _)| e.mentions(n) && n != var)
                    && let Some(total) = env.sum_to_nat(e, var, lo, hi)
                {
                    return total;
                }
                let mut total: i64 = 0;
                for k in lo..=hi {
                    bound.push((var.clone(), k));
                    let term = body.eval_with(env, bound);
                    bound.pop();
                    total = total.checked_add(term?).ok_or(NatEvalError::Overflow)?;
                }
                Ok(total)
            }
        }
    }
}

/// One arithmetic step, checked.
pub fn apply(op: NatOp, a: i64, b: i64) -> Result<i64, NatEvalError> {
    match op {
        NatOp::Add => a.checked_add(b).ok_or(NatEvalError::Overflow),
        NatOp::Sub => a.checked_sub(b).ok_or(NatEvalError::Overflow),
        NatOp::Mul => a.checked_mul(b).ok_or(NatEvalError::Overflow),
        NatOp::Div if b == 0 => Err(NatEvalError::DivByZero),
        NatOp::Mod if b == 0 => Err(NatEvalError::DivByZero),
        NatOp::Div => {
            if a == i64::MIN && b == -1 {
                return Err(NatEvalError::Overflow);
            }
            Ok(Integer::div_floor(&a, &b))
        }
        NatOp::Mod => {
            if b == -1 {
                return Ok(0);
            }
            Ok(Integer::mod_floor(&a, &b))
        }
        NatOp::Min => Ok(a.min(b)),
        NatOp::Max => Ok(a.max(b)),
    }
}

impl NatCond {
    /// Evaluates the condition.
    pub fn eval_with(&self, env: &dyn NatEnv, bound: &mut Vec<(Name, i64)>) -> Result<bool, NatEvalError> {
        Ok(match self {
            NatCond::Cmp(op, a, b) => op.holds(a.eval_with(env, bound)?, b.eval_with(env, bound)?),
            NatCond::And(a, b) => a.eval_with(env, bound)? && b.eval_with(env, bound)?,
            NatCond::Or(a, b) => a.eval_with(env, bound)? || b.eval_with(env, bound)?,
            NatCond::Not(a) => !a.eval_with(env, bound)?,
        })
    }
}

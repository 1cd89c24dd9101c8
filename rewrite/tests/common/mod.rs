//! Shared test helpers: an environment with arrays, for `Nat::eval`.
#![allow(dead_code)]

use heddle_ir::expr::{BinOp, ExprKind, Literal};
use heddle_ir::nat::{NatEnv, NatEvalError};
use heddle_ir::{Expr, Name, Nat};
use std::collections::HashMap;

/// Variables and arrays. An array is a total function on the integers:
/// below 0 it repeats element 0, past the end the last element (so a
/// non-decreasing array stays non-decreasing everywhere).
#[derive(Clone, Debug, Default)]
pub struct ArrayEnv {
    pub vars: HashMap<Name, i64>,
    pub arrays: HashMap<Name, Vec<i64>>,
}

impl ArrayEnv {
    fn expr(&self, e: &Expr, bound: &[(Name, i64)]) -> Result<i64, NatEvalError> {
        match &e.kind {
            ExprKind::Index { array, index } => {
                let ExprKind::Var(a) = &array.kind else { return Err(NatEvalError::ToNat("not an array".into())) };
                let xs = self.arrays.get(a).ok_or_else(|| NatEvalError::ToNat(format!("no array {a}")))?;
                let i = self.expr(index, bound)?;
                let i = i.clamp(0, xs.len() as i64 - 1) as usize;
                Ok(xs[i])
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.expr(lhs, bound)?, self.expr(rhs, bound)?);
                let op = match op {
                    BinOp::Add => heddle_ir::nat::NatOp::Add,
                    BinOp::Sub => heddle_ir::nat::NatOp::Sub,
                    BinOp::Mul => heddle_ir::nat::NatOp::Mul,
                    BinOp::Div => heddle_ir::nat::NatOp::Div,
                    BinOp::Rem => heddle_ir::nat::NatOp::Mod,
                    _ => return Err(NatEvalError::ToNat("operator".into())),
                };
                heddle_ir::nat::eval::apply(op, a, b)
            }
            ExprKind::Lit(Literal::Int(v)) => Ok(*v),
            ExprKind::Var(x) => Nat::Var(x.clone()).eval_with(self, &mut bound.to_vec()),
            ExprKind::NatValue(n) => n.eval_with(self, &mut bound.to_vec()),
            _ => Err(NatEvalError::ToNat("unsupported expression".into())),
        }
    }
}

impl NatEnv for ArrayEnv {
    fn nat_var(&self, name: &Name) -> Option<i64> {
        self.vars.get(name).copied()
    }
    fn to_nat(&self, e: &Expr, bound: &[(Name, i64)]) -> Result<i64, NatEvalError> {
        self.expr(e, bound)
    }
}

pub fn nat(s: &str) -> Nat {
    heddle_ir::parser::parse_nat(s).unwrap_or_else(|d| panic!("bad test natural {s}: {d:?}"))
}

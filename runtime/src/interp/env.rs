//! The interpreter's environment: values and naturals in scope.

use crate::launch::Buffer;
use crate::value::Value;
use heddle_ir::expr::{BinOp, ExprKind, Literal, UnOp};
use heddle_ir::nat::{NatEnv, NatEvalError};
use heddle_ir::{Expr, Name};
use std::rc::Rc;

#[derive(Debug)]
enum Bound {
    Value(Value),
    Nat(i64),
    /// An input bound for the compiled backends as the flat buffer the
    /// kernel reads (`bind_inputs_flat`), never as per-element values.
    Buffer(Buffer),
}

#[derive(Debug)]
struct Node {
    name: Name,
    bound: Bound,
    next: Env,
}

/// A persistent environment: extending it never disturbs the original.
#[derive(Clone, Debug, Default)]
pub struct Env(Option<Rc<Node>>);

impl Env {
    /// This environment with a value bound.
    pub fn with_value(&self, name: Name, v: Value) -> Env {
        Env(Some(Rc::new(Node { name, bound: Bound::Value(v), next: self.clone() })))
    }
    /// This environment with an input bound as its flat buffer of records
    /// (for the compiled backends; the interpreter cannot read it).
    pub fn with_buffer(&self, name: Name, b: Buffer) -> Env {
        Env(Some(Rc::new(Node { name, bound: Bound::Buffer(b), next: self.clone() })))
    }
    /// The flat buffer bound to `name`.
    pub fn buffer(&self, name: &Name) -> Option<&Buffer> {
        match self.find(name) {
            Some(Bound::Buffer(b)) => Some(b),
            _ => None,
        }
    }
    /// The `i64` records that `e` reads as `var` runs over them: for `e` =
    /// `X@var` with `X` a flat buffer of one `i64` field (a count array, an
    /// offsets input). Lets sums and prefix sums over `toNat(X@var)` read the
    /// buffer instead of evaluating a term per index.
    pub fn lookups(&self, e: &Expr, var: &Name) -> Option<&[i64]> {
        let ExprKind::Index { array, index } = &e.kind else { return None };
        let (ExprKind::Var(x), ExprKind::Var(v)) = (&array.kind, &index.kind) else { return None };
        if v != var {
            return None;
        }
        self.buffer(x)?.as_i64s()
    }
    /// Whether any input is bound as a flat buffer (so the interpreter, which
    /// reads values, cannot run in this environment).
    pub fn has_buffers(&self) -> bool {
        let mut cur = &self.0;
        while let Some(n) = cur {
            if matches!(n.bound, Bound::Buffer(_)) {
                return true;
            }
            cur = &n.next.0;
        }
        false
    }
    /// This environment with a natural bound.
    pub fn with_nat(&self, name: Name, v: i64) -> Env {
        Env(Some(Rc::new(Node { name, bound: Bound::Nat(v), next: self.clone() })))
    }
    fn find(&self, name: &Name) -> Option<&Bound> {
        let mut cur = &self.0;
        while let Some(n) = cur {
            if &n.name == name {
                return Some(&n.bound);
            }
            cur = &n.next.0;
        }
        None
    }
    /// The value bound to `name`.
    pub fn value(&self, name: &Name) -> Option<&Value> {
        match self.find(name) {
            Some(Bound::Value(v)) => Some(v),
            _ => None,
        }
    }
    /// The natural bound to `name`.
    pub fn nat(&self, name: &Name) -> Option<i64> {
        match self.find(name) {
            Some(Bound::Nat(v)) => Some(*v),
            _ => None,
        }
    }
}

impl NatEnv for Env {
    fn nat_var(&self, name: &Name) -> Option<i64> {
        self.nat(name)
    }
    fn sum_to_nat(&self, e: &Expr, var: &Name, lo: i64, hi: i64) -> Option<Result<i64, NatEvalError>> {
        let xs = self.lookups(e, var)?;
        let terms = xs.get(usize::try_from(lo).ok()?..=usize::try_from(hi).ok()?)?;
        Some(terms.iter().try_fold(0i64, |a, &t| a.checked_add(t)).ok_or(NatEvalError::Overflow))
    }
    fn to_nat(&self, e: &Expr, bound: &[(Name, i64)]) -> Result<i64, NatEvalError> {
        let env = bound.iter().fold(self.clone(), |env, (n, v)| env.with_nat(n.clone(), *v));
        match eval_int_expr(e, &env)? {
            Value::Int(v) => Ok(v),
            other => Err(NatEvalError::ToNat(format!("toNat of a non-integer value {other}"))),
        }
    }
}

/// Evaluates the integer expression of a `toNat` (lookups, arithmetic,
/// projections) with bounds checks.
pub fn eval_int_expr(e: &Expr, env: &Env) -> Result<Value, NatEvalError> {
    let err = |m: String| NatEvalError::ToNat(m);
    match &e.kind {
        ExprKind::Var(x) => match env.find(x) {
            Some(Bound::Value(v)) => Ok(v.clone()),
            Some(Bound::Nat(v)) => Ok(Value::Int(*v)),
            Some(Bound::Buffer(b)) => Ok(Value::array(b.to_values())),
            None => Err(NatEvalError::Unbound(x.clone())),
        },
        ExprKind::Lit(Literal::Int(v)) => Ok(Value::Int(*v)),
        ExprKind::NatValue(n) => Ok(Value::Int(n.eval(env)?)),
        ExprKind::Index { array, index } => {
            // A flat input buffer is read in place (sizes index offsets arrays per row).
            if let ExprKind::Var(x) = &array.kind
                && let Some(Bound::Buffer(b)) = env.find(x)
            {
                let i = eval_int_expr(index, env)?.as_int().ok_or_else(|| err("a non-integer index".into()))?;
                return match usize::try_from(i).ok().filter(|&k| k < b.len()) {
                    Some(k) if b.fields.len() == 1 => Ok(b.read(k, 0)),
                    Some(k) => Ok(Value::tuple((0..b.fields.len()).map(|f| b.read(k, f)).collect())),
                    None => Err(err(format!("{array}@{i} is out of bounds (length {})", b.len()))),
                };
            }
            let a = eval_int_expr(array, env)?;
            let i = eval_int_expr(index, env)?.as_int().ok_or_else(|| err("a non-integer index".into()))?;
            let items = a.as_array().ok_or_else(|| err(format!("`{array}` is not an array")))?;
            usize::try_from(i)
                .ok()
                .and_then(|k| items.get(k))
                .cloned()
                .ok_or_else(|| err(format!("{array}@{i} is out of bounds (length {})", items.len())))
        }
        ExprKind::Proj { tuple, field } => match eval_int_expr(tuple, env)? {
            Value::Tuple(items) => items.get(*field as usize - 1).cloned().ok_or_else(|| err("bad projection".into())),
            _ => Err(err("projection of a non-tuple".into())),
        },
        ExprKind::Unary { op: UnOp::Neg, operand } => {
            let v = eval_int_expr(operand, env)?.as_int().ok_or_else(|| err("negation of a non-integer".into()))?;
            Ok(Value::Int(v.checked_neg().ok_or(NatEvalError::Overflow)?))
        }
        ExprKind::Binary { op: BinOp::And, lhs, rhs } => Ok(Value::Bool(truth(lhs, env)? && truth(rhs, env)?)),
        ExprKind::Binary { op: BinOp::Or, lhs, rhs } => Ok(Value::Bool(truth(lhs, env)? || truth(rhs, env)?)),
        ExprKind::Binary { op, lhs, rhs } => binary(*op, lhs, rhs, env),
        // `max(a, b)`: the operator section applied.
        ExprKind::App { .. } if e.as_operator_call().is_some() => {
            let (op, lhs, rhs) = e.as_operator_call().expect("checked");
            binary(op, lhs, rhs, env)
        }
        ExprKind::Unary { op: UnOp::Not, operand } => Ok(Value::Bool(!truth(operand, env)?)),
        ExprKind::Select { cond, then, els } => eval_int_expr(if truth(cond, env)? { then } else { els }, env),
        ExprKind::Annot { expr, .. } => eval_int_expr(expr, env),
        _ => Err(err(format!("`{e}` cannot be evaluated inside toNat"))),
    }
}

/// A condition inside a `toNat` (of a `select`).
fn truth(e: &Expr, env: &Env) -> Result<bool, NatEvalError> {
    match eval_int_expr(e, env)? {
        Value::Bool(b) => Ok(b),
        other => Err(NatEvalError::ToNat(format!("`{e}` is {other}, not a condition"))),
    }
}

/// `lhs op rhs` inside a `toNat`: exact integer arithmetic (an overflow is an
/// error, not a wrap) and comparisons.
fn binary(op: BinOp, lhs: &Expr, rhs: &Expr, env: &Env) -> Result<Value, NatEvalError> {
    let int = |e: &Expr| -> Result<i64, NatEvalError> {
        eval_int_expr(e, env)?.as_int().ok_or_else(|| NatEvalError::ToNat(format!("`{e}` is not an integer")))
    };
    let (a, b) = (int(lhs)?, int(rhs)?);
    let r = match op {
        BinOp::Add => a.checked_add(b),
        BinOp::Sub => a.checked_sub(b),
        BinOp::Mul => a.checked_mul(b),
        BinOp::Div | BinOp::Rem if b == 0 => return Err(NatEvalError::DivByZero),
        BinOp::Div => a.checked_div(b),
        BinOp::Rem => a.checked_rem(b),
        BinOp::Max => Some(a.max(b)),
        BinOp::Min => Some(a.min(b)),
        BinOp::Eq => return Ok(Value::Bool(a == b)),
        BinOp::Ne => return Ok(Value::Bool(a != b)),
        BinOp::Lt => return Ok(Value::Bool(a < b)),
        BinOp::Le => return Ok(Value::Bool(a <= b)),
        BinOp::Gt => return Ok(Value::Bool(a > b)),
        BinOp::Ge => return Ok(Value::Bool(a >= b)),
        BinOp::And | BinOp::Or => unreachable!("handled by the caller"),
    };
    r.map(Value::Int).ok_or(NatEvalError::Overflow)
}

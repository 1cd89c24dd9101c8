//! The reference interpreter.
//!
//! It runs the type checker's elaborated program directly on [`Value`]s, with
//! every index bounds-checked and every natural evaluated exactly. It is the
//! oracle the compiled backends are tested against, so it favours clarity
//! over speed.

mod env;
mod prims;

pub use env::{eval_int_expr, Env};

use crate::value::{round_float, scalar_of, wrap_int, Value};
use heddle_ir::expr::{BinOp, UnOp};
use heddle_ir::{Diagnostic, Name, ScalarType, Span, Type};
use heddle_typeck::{Kernel, KernelParam, TExpr, TKind, TLit};

/// Runs a kernel: `nats` gives every natural parameter, `inputs` every value
/// parameter, both by name. Inputs are assumed validated against their
/// types (see [`crate::io::bind`]).
pub fn run_kernel(kernel: &Kernel, env: &Env) -> Result<Value, Diagnostic> {
    check_obligations(kernel, env)?;
    eval(&kernel.body, env)
}

/// Checks the run-time conditions the type checker left (e.g. divisibility for `split`).
pub fn check_obligations(kernel: &Kernel, env: &Env) -> Result<(), Diagnostic> {
    for o in &kernel.obligations {
        let holds = o.cond.eval_with(env, &mut Vec::new()).map_err(|e| {
            Diagnostic::new(o.span, format!("cannot check a requirement of the kernel: {e}")).with_label(o.reason.clone())
        })?;
        if !holds {
            let values: Vec<String> = kernel
                .params
                .iter()
                .filter_map(|p| match p {
                    KernelParam::Nat(n) => env.nat(n).map(|v| format!("{n} = {v}")),
                    _ => None,
                })
                .collect();
            return Err(Diagnostic::new(o.span, format!("the inputs break a requirement of the kernel: {}", o.cond))
                .with_label(o.reason.clone())
                .with_note(format!("with {}", values.join(", "))));
        }
    }
    Ok(())
}

/// Evaluates a typed expression.
pub fn eval(t: &TExpr, env: &Env) -> Result<Value, Diagnostic> {
    match &t.kind {
        TKind::Var(x) => env
            .value(x)
            .cloned()
            .ok_or_else(|| internal(t.span, &format!("`{x}` has no value"))),
        TKind::NatValue(n) => {
            let v = n.eval(env).map_err(|e| Diagnostic::new(t.span, format!("cannot evaluate the natural {n}: {e}")))?;
            Ok(Value::Int(wrap_int(v, scalar_of(&t.ty).unwrap_or(ScalarType::I64))))
        }
        TKind::Lit(l) => Ok(match (l, scalar_of(&t.ty)) {
            (TLit::Int(v), Some(s)) if s.is_float() => Value::Float(round_float(*v as f64, s)),
            (TLit::Int(v), s) => Value::Int(wrap_int(*v, s.unwrap_or(ScalarType::I64))),
            (TLit::Float(v), s) => Value::Float(round_float(*v, s.unwrap_or(ScalarType::F64))),
            (TLit::Bool(b), _) => Value::Bool(*b),
        }),
        TKind::Lambda { .. } => Err(internal(t.span, "a function where data was expected")),
        TKind::Let { name, value, body } => {
            let v = eval(value, env)?;
            eval(body, &env.with_value(name.clone(), v))
        }
        TKind::Index { array, index } => {
            let a = eval(array, env)?;
            let i = eval(index, env)?;
            let items = a.as_array().ok_or_else(|| internal(array.span, "indexing a non-array"))?;
            let i = i.as_int().ok_or_else(|| internal(index.span, "a non-integer index"))?;
            match usize::try_from(i).ok().and_then(|k| items.get(k)) {
                Some(v) => Ok(v.clone()),
                None => {
                    let what = match &array.kind {
                        TKind::Var(x) => format!("`{x}`"),
                        _ => "the array".to_string(),
                    };
                    Err(Diagnostic::new(t.span, format!("index {i} is out of bounds: {what} has length {}", items.len()))
                        .with_label(format!("valid positions are 0 to {}", items.len() as i64 - 1)))
                }
            }
        }
        TKind::Proj { tuple, index } => match eval(tuple, env)? {
            Value::Tuple(items) => items.get(*index).cloned().ok_or_else(|| internal(t.span, "bad projection")),
            _ => Err(internal(t.span, "projection of a non-tuple")),
        },
        TKind::Tuple(items) => Ok(Value::tuple(items.iter().map(|x| eval(x, env)).collect::<Result<_, _>>()?)),
        TKind::Binary { op: BinOp::And, lhs, rhs } => match eval(lhs, env)? {
            Value::Bool(false) => Ok(Value::Bool(false)),
            _ => eval(rhs, env),
        },
        TKind::Binary { op: BinOp::Or, lhs, rhs } => match eval(lhs, env)? {
            Value::Bool(true) => Ok(Value::Bool(true)),
            _ => eval(rhs, env),
        },
        TKind::Binary { op, lhs, rhs } => {
            let a = eval(lhs, env)?;
            let b = eval(rhs, env)?;
            let s = scalar_of(&lhs.ty).unwrap_or(ScalarType::I64);
            binary(*op, &a, &b, s).map_err(|m| Diagnostic::new(t.span, m).with_label("here"))
        }
        TKind::Unary { op, operand } => {
            let v = eval(operand, env)?;
            let s = scalar_of(&operand.ty).unwrap_or(ScalarType::I64);
            unary(*op, &v, s).map_err(|m| Diagnostic::new(t.span, m))
        }
        TKind::Select { cond, then, els } => match eval(cond, env)? {
            Value::Bool(true) => eval(then, env),
            _ => eval(els, env),
        },
        TKind::Prim { name, nats, args, binder } => prims::eval_prim(name, nats, args, binder.as_ref(), t, env),
    }
}

/// Applies a lambda to arguments; `position` binds a `map`'s binder.
pub(crate) fn apply(f: &TExpr, args: Vec<Value>, env: &Env, position: Option<(&Name, i64)>) -> Result<Value, Diagnostic> {
    let TKind::Lambda { params, body } = &f.kind else {
        return Err(internal(f.span, "applying a non-function"));
    };
    let mut env = match position {
        Some((b, k)) => env.with_nat(b.clone(), k),
        None => env.clone(),
    };
    for ((name, _), v) in params.iter().zip(args) {
        env = env.with_value(name.clone(), v);
    }
    eval(body, &env)
}

fn binary(op: BinOp, a: &Value, b: &Value, s: ScalarType) -> Result<Value, String> {
    Ok(match (a, b) {
        (Value::Array(xs), Value::Array(ys)) => {
            // Vectors from asVector: element-wise.
            let items = xs.iter().zip(ys.iter()).map(|(x, y)| binary(op, x, y, s)).collect::<Result<_, _>>()?;
            Value::array(items)
        }
        (Value::Int(x), Value::Int(y)) => int_binary(op, *x, *y, s)?,
        (Value::Float(x), Value::Float(y)) => {
            let (x, y) = (*x, *y);
            match op {
                BinOp::Add => Value::Float(round_float(x + y, s)),
                BinOp::Sub => Value::Float(round_float(x - y, s)),
                BinOp::Mul => Value::Float(round_float(x * y, s)),
                BinOp::Div => Value::Float(round_float(x / y, s)),
                BinOp::Rem => Value::Float(round_float(x % y, s)),
                BinOp::Max => Value::Float(x.max(y)),
                BinOp::Min => Value::Float(x.min(y)),
                BinOp::Eq => Value::Bool(x == y),
                BinOp::Ne => Value::Bool(x != y),
                BinOp::Lt => Value::Bool(x < y),
                BinOp::Le => Value::Bool(x <= y),
                BinOp::Gt => Value::Bool(x > y),
                BinOp::Ge => Value::Bool(x >= y),
                BinOp::And | BinOp::Or => return Err("logical operator on floats".into()),
            }
        }
        (Value::Bool(x), Value::Bool(y)) => match op {
            BinOp::Eq => Value::Bool(x == y),
            BinOp::Ne => Value::Bool(x != y),
            BinOp::And => Value::Bool(*x && *y),
            BinOp::Or => Value::Bool(*x || *y),
            _ => return Err(format!("`{}` on booleans", op.symbol())),
        },
        _ => return Err(format!("`{}` on mismatched values {a} and {b}", op.symbol())),
    })
}

/// Integer arithmetic with the generated code's semantics: wrapping at the
/// type's width, division truncating toward zero, division by zero an error.
fn int_binary(op: BinOp, x: i64, y: i64, s: ScalarType) -> Result<Value, String> {
    let unsigned = !s.is_signed();
    let cmp = |o: std::cmp::Ordering| -> std::cmp::Ordering { o };
    let order = if unsigned { cmp((x as u64).cmp(&(y as u64))) } else { cmp(x.cmp(&y)) };
    Ok(match op {
        BinOp::Add => Value::Int(wrap_int(x.wrapping_add(y), s)),
        BinOp::Sub => Value::Int(wrap_int(x.wrapping_sub(y), s)),
        BinOp::Mul => Value::Int(wrap_int(x.wrapping_mul(y), s)),
        BinOp::Div | BinOp::Rem if y == 0 => return Err("integer division by zero".into()),
        BinOp::Div if unsigned => Value::Int(wrap_int(((x as u64) / (y as u64)) as i64, s)),
        BinOp::Rem if unsigned => Value::Int(wrap_int(((x as u64) % (y as u64)) as i64, s)),
        BinOp::Div => Value::Int(wrap_int(x.wrapping_div(y), s)),
        BinOp::Rem => Value::Int(wrap_int(x.wrapping_rem(y), s)),
        BinOp::Max => Value::Int(if order.is_ge() { x } else { y }),
        BinOp::Min => Value::Int(if order.is_le() { x } else { y }),
        BinOp::Eq => Value::Bool(x == y),
        BinOp::Ne => Value::Bool(x != y),
        BinOp::Lt => Value::Bool(order.is_lt()),
        BinOp::Le => Value::Bool(order.is_le()),
        BinOp::Gt => Value::Bool(order.is_gt()),
        BinOp::Ge => Value::Bool(order.is_ge()),
        BinOp::And | BinOp::Or => return Err("logical operator on integers".into()),
    })
}

fn unary(op: UnOp, v: &Value, s: ScalarType) -> Result<Value, String> {
    Ok(match (op, v) {
        (UnOp::Neg, Value::Int(x)) => Value::Int(wrap_int(x.wrapping_neg(), s)),
        (UnOp::Neg, Value::Float(x)) => Value::Float(-x),
        (UnOp::Neg, Value::Array(xs)) => Value::array(xs.iter().map(|x| unary(op, x, s)).collect::<Result<_, _>>()?),
        (UnOp::Not, Value::Bool(b)) => Value::Bool(!b),
        _ => return Err(format!("cannot apply the operator to {v}")),
    })
}

/// An error that well-typed programs never meet.
pub(crate) fn internal(span: Span, what: &str) -> Diagnostic {
    Diagnostic::new(span, format!("internal error in the interpreter: {what}"))
        .with_note("this is a bug in heddle; please report it with the program")
}

/// Is the type one whose values are arrays?
pub fn is_array(t: &Type) -> bool {
    matches!(t, Type::Array { .. })
}

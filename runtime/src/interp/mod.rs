//! The reference interpreter.
//!
//! It runs the type checker's elaborated program directly on [`Value`]s, with
//! every index bounds-checked and every natural evaluated exactly. It is the
//! oracle the compiled backends are tested against, so it favours clarity
//! over speed.

mod env;
mod merge;
mod prims;
mod sort;
mod store;

pub use env::{Env, eval_int_expr};

use crate::value::{Value, round_float, scalar_of, wrap_int};
use heddle_ir::expr::{BinOp, UnOp};
use heddle_ir::{Diagnostic, Name, ScalarType, Span, Type};
use heddle_typeck::{Kernel, KernelParam, TExpr, TKind, TLit};

/// Runs a kernel: `nats` gives every natural parameter, `inputs` every value
/// parameter, both by name. Inputs are assumed validated against their
/// types (see [`crate::io::bind`]).
pub fn run_kernel(kernel: &Kernel, env: &Env) -> Result<Value, Diagnostic> {
    if env.has_buffers() {
        // `bind_inputs_flat` is for the compiled backends; a caller mixed them up.
        return Err(Diagnostic::new(
            kernel.body.span,
            "internal error: the interpreter was given inputs bound as flat buffers (bind them with `bind_inputs`)",
        ));
    }
    check_obligations(kernel, env)?;
    eval(&kernel.body, env)
}

/// Checks the run-time conditions the type checker left (e.g. divisibility for `split`).
pub fn check_obligations(kernel: &Kernel, env: &Env) -> Result<(), Diagnostic> {
    for o in &kernel.obligations {
        let holds = o.cond.eval_with(env, &mut Vec::new()).map_err(|e| {
            Diagnostic::new(o.span, format!("cannot check a requirement of the kernel: {e}"))
                .with_label(o.reason.clone())
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
        TKind::Var(x) => env.value(x).cloned().ok_or_else(|| internal(t.span, &format!("`{x}` has no value"))),
        TKind::NatValue(n) => {
            let v =
                n.eval(env).map_err(|e| Diagnostic::new(t.span, format!("cannot evaluate the natural {n}: {e}")))?;
            Ok(Value::Int(wrap_int(v, scalar_of(&t.ty).unwrap_or(ScalarType::I64))))
        }
        TKind::Lit(l) => Ok(match (l, scalar_of(&t.ty)) {
            // A real literal of a complex type: imaginary part 0.
            (TLit::Int(v), Some(s)) if s.is_complex() => Value::complex(round_float(*v as f64, s.part()), 0.0),
            (TLit::Float(v), Some(s)) if s.is_complex() => Value::complex(round_float(*v, s.part()), 0.0),
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
                    Err(Diagnostic::new(
                        t.span,
                        format!("index {i} is out of bounds: {what} has length {}", items.len()),
                    )
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
        TKind::Assemble { value, plan } => store::store(plan, &eval(value, env)?, env, t.span),
    }
}

/// Applies a lambda to arguments; `position` binds a `map`'s binder.
pub(crate) fn apply(
    f: &TExpr,
    args: Vec<Value>,
    env: &Env,
    position: Option<(&Name, i64)>,
) -> Result<Value, Diagnostic> {
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

/// Scalar (and element-wise vector) arithmetic: the same semantics as the
/// compiled code's, shared with the loop-IR evaluator ([`crate::launch::bin`]).
fn binary(op: BinOp, a: &Value, b: &Value, s: ScalarType) -> Result<Value, String> {
    use heddle_ir::loops::BinOp as L;
    if let (Value::Array(xs), Value::Array(ys)) = (a, b) {
        // Vectors from asVector: element-wise.
        let items = xs.iter().zip(ys.iter()).map(|(x, y)| binary(op, x, y, s)).collect::<Result<_, _>>()?;
        return Ok(Value::array(items));
    }
    let op = match op {
        BinOp::Add => L::Add,
        BinOp::Sub => L::Sub,
        BinOp::Mul => L::Mul,
        BinOp::Div => L::Div,
        BinOp::Rem => L::Rem,
        BinOp::Eq => L::Eq,
        BinOp::Ne => L::Ne,
        BinOp::Lt => L::Lt,
        BinOp::Le => L::Le,
        BinOp::Gt => L::Gt,
        BinOp::Ge => L::Ge,
        BinOp::And => L::And,
        BinOp::Or => L::Or,
        BinOp::Max => L::Max,
        BinOp::Min => L::Min,
    };
    crate::launch::bin(op, a.clone(), b.clone(), s)
}

fn unary(op: UnOp, v: &Value, s: ScalarType) -> Result<Value, String> {
    Ok(match (op, v) {
        (UnOp::Neg, Value::Int(x)) => Value::Int(wrap_int(x.wrapping_neg(), s)),
        (UnOp::Neg, Value::Float(x)) => Value::Float(-x),
        (UnOp::Neg, Value::Complex(z)) => Value::complex(-z.re, -z.im),
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

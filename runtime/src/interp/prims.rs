//! The primitives' meaning, one function each.

use super::{Env, apply, eval, internal};
use crate::value::Value;
use heddle_ir::{Diagnostic, Name, Nat, Span};
use heddle_typeck::TExpr;

fn nat(n: &Nat, env: &Env, span: Span) -> Result<i64, Diagnostic> {
    n.eval(env).map_err(|e| Diagnostic::new(span, format!("cannot evaluate {n}: {e}")))
}

fn array(v: Value, span: Span) -> Result<std::rc::Rc<Vec<Value>>, Diagnostic> {
    match v {
        Value::Array(items) => Ok(items),
        other => Err(internal(span, &format!("expected an array, found {other}"))),
    }
}

/// A length the program asks for, as a `usize`, if an array of that many
/// values fits the memory limit ([`crate::limits`]); negative lengths are 0.
fn length(n: i64, span: Span, prim: &str) -> Result<usize, Diagnostic> {
    crate::limits::check_values(&format!("an array of `{prim}`"), n.max(0), std::mem::size_of::<Value>())
        .map_err(|m| Diagnostic::new(span, m).with_label("while running this"))
}

/// Checks the whole of an array `prim` is about to build, nested arrays
/// included, where the type gives its lengths without evaluating any
/// element: `generate(n, i => generate(n, …))` holds n·n values, and on a
/// machine whose memory admits the outer array of n inner ones the inner
/// arrays alone would run on for ever (each within the limit, their sum
/// far beyond it).
fn whole_length(ty: &heddle_ir::Type, env: &Env, span: Span, prim: &str) -> Result<(), Diagnostic> {
    /// Values in a value of type `ty`; `None` where a length depends on a
    /// position or cannot be evaluated here, saturating past `u128`.
    fn values_in(ty: &heddle_ir::Type, env: &Env) -> Option<u128> {
        use heddle_ir::Type;
        match ty {
            Type::Array { binder: Some(_), .. } => None,
            Type::Array { binder: None, elem, len } => {
                let n = u128::try_from(len.eval(env).ok()?.max(0)).ok()?;
                // Each array is a value too, besides the values it holds.
                Some(n.saturating_mul(values_in(elem, env)?).saturating_add(1))
            }
            Type::Tuple(parts) => parts.iter().try_fold(1u128, |acc, p| Some(acc.saturating_add(values_in(p, env)?))),
            _ => Some(1),
        }
    }
    let Some(values) = values_in(ty, env) else { return Ok(()) };
    let what = format!("an array of `{prim}`, with the arrays it holds,");
    let values = u64::try_from(values).unwrap_or(u64::MAX);
    crate::limits::check_records(&what, values, std::mem::size_of::<Value>() as u64)
        .map(|_| ())
        .map_err(|m| Diagnostic::new(span, m).with_label("while running this"))
}

fn size_error(span: Span, prim: &str, msg: String) -> Diagnostic {
    Diagnostic::new(span, format!("`{prim}`: {msg}")).with_label("while running this")
}

pub(super) fn eval_prim(
    name: &str,
    nats: &[Nat],
    args: &[TExpr],
    binder: Option<&Name>,
    t: &TExpr,
    env: &Env,
) -> Result<Value, Diagnostic> {
    let span = t.span;
    let arg = |k: usize| args.get(k).ok_or_else(|| internal(span, "missing argument"));
    if let Some(to) = heddle_ir::prims::conversion(name) {
        let a = arg(0)?;
        let from = crate::value::scalar_of(&a.ty).ok_or_else(|| internal(span, "a conversion of a non-scalar"))?;
        return Ok(crate::value::convert(eval(a, env)?, from, to));
    }
    match name {
        "map" | "mapSeq" | "mapPar" | "mapGlobal" | "mapWorkgroup" | "mapLocal" => {
            let xs = array(eval(arg(1)?, env)?, span)?;
            let f = arg(0)?;
            let out = xs
                .iter()
                .enumerate()
                .map(|(k, x)| apply(f, vec![x.clone()], env, binder.map(|b| (b, k as i64))))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Value::array(out))
        }
        "reduce" | "reduceSeq" if args.len() == 2 => {
            // Without an initial value: the first element starts, `op` takes (acc, x) as one pair.
            let xs = array(eval(arg(1)?, env)?, span)?;
            let Some((first, rest)) = xs.split_first() else {
                return Err(size_error(
                    span,
                    name,
                    "an empty array has no first element to start from (without an initial value)".into(),
                ));
            };
            let mut acc = first.clone();
            for x in rest {
                acc = apply(arg(0)?, vec![Value::tuple(vec![acc, x.clone()])], env, None)?;
            }
            Ok(acc)
        }
        "reduce" | "reduceSeq" => {
            let mut acc = eval(arg(1)?, env)?;
            let xs = array(eval(arg(2)?, env)?, span)?;
            for x in xs.iter() {
                acc = apply(arg(0)?, vec![acc, x.clone()], env, None)?;
            }
            Ok(acc)
        }
        "zip" => {
            let a = array(eval(arg(0)?, env)?, span)?;
            let b = array(eval(arg(1)?, env)?, span)?;
            if a.len() != b.len() {
                return Err(size_error(span, name, format!("the arrays have lengths {} and {}", a.len(), b.len())));
            }
            Ok(Value::array(a.iter().zip(b.iter()).map(|(x, y)| Value::tuple(vec![x.clone(), y.clone()])).collect()))
        }
        "unzip" => {
            let xs = array(eval(arg(0)?, env)?, span)?;
            let mut firsts = Vec::with_capacity(xs.len());
            let mut seconds = Vec::with_capacity(xs.len());
            for x in xs.iter() {
                match x {
                    Value::Tuple(p) if p.len() == 2 => {
                        firsts.push(p[0].clone());
                        seconds.push(p[1].clone());
                    }
                    _ => return Err(internal(span, "unzip of non-pairs")),
                }
            }
            Ok(Value::tuple(vec![Value::array(firsts), Value::array(seconds)]))
        }
        "split" => {
            let k = nat(&nats[0], env, span)?;
            let xs = array(eval(arg(0)?, env)?, span)?;
            let written = &nats[0];
            if k <= 0 {
                return Err(Diagnostic::new(
                    span,
                    format!("`split({written})` needs {written} to be at least 1: chunks of no elements"),
                )
                .with_label(format!("{written} = {k}")));
            }
            if xs.len() as i64 % k != 0 {
                let named = if written.as_lit().is_some() { String::new() } else { format!(" ({written} = {k})") };
                return Err(Diagnostic::new(span, format!("`split({written})`: the array's length is not a multiple of {written}, so it cannot be split into chunks"))
                    .with_label(format!("an array of length {} cannot be split into chunks of {k}{named}", xs.len())));
            }
            Ok(Value::array(xs.chunks(k as usize).map(|c| Value::array(c.to_vec())).collect()))
        }
        "interleave" => {
            // Part w holds elements w, w + k, w + 2k, …: k work-items reading
            // a row this way touch k consecutive elements at each step.
            let k = nat(&nats[0], env, span)?;
            let xs = array(eval(arg(0)?, env)?, span)?;
            if k <= 0 {
                return Err(size_error(span, name, format!("cannot interleave into {k} parts")));
            }
            length(k, span, name)?;
            let parts = (0..k as usize).map(|w| Value::array(xs.iter().skip(w).step_by(k as usize).cloned().collect()));
            Ok(Value::array(parts.collect()))
        }
        "join" => {
            let xs = array(eval(arg(0)?, env)?, span)?;
            let mut out = Vec::new();
            for x in xs.iter() {
                out.extend(array(x.clone(), span)?.iter().cloned());
            }
            Ok(Value::array(out))
        }
        "transpose" => {
            let rows = array(eval(arg(0)?, env)?, span)?;
            let rows: Vec<std::rc::Rc<Vec<Value>>> =
                rows.iter().map(|r| array(r.clone(), span)).collect::<Result<_, _>>()?;
            let width = rows.first().map_or(0, |r| r.len());
            if rows.iter().any(|r| r.len() != width) {
                return Err(size_error(span, name, "rows of different lengths".into()));
            }
            let cols = if rows.is_empty() {
                // [[T]_N]_0 transposes to N empty rows; N comes from the type.
                let n = match &t.ty {
                    heddle_ir::Type::Array { len, .. } => nat(len, env, span)?,
                    _ => 0,
                };
                length(n, span, name)?;
                (0..n).map(|_| Value::array(Vec::new())).collect()
            } else {
                (0..width).map(|j| Value::array(rows.iter().map(|r| r[j].clone()).collect())).collect()
            };
            Ok(Value::array(cols))
        }
        "slide" => {
            let (size, step) = (nat(&nats[0], env, span)?, nat(&nats[1], env, span)?);
            let xs = array(eval(arg(0)?, env)?, span)?;
            if size <= 0 || step <= 0 || (xs.len() as i64) < size {
                return Err(size_error(
                    span,
                    name,
                    format!("cannot slide a window of {size} by {step} over {} elements", xs.len()),
                ));
            }
            let count = (xs.len() as i64 - size) / step + 1;
            Ok(Value::array(
                (0..count)
                    .map(|w| Value::array(xs[(w * step) as usize..(w * step + size) as usize].to_vec()))
                    .collect(),
            ))
        }
        "concat" => {
            let a = array(eval(arg(0)?, env)?, span)?;
            let b = array(eval(arg(1)?, env)?, span)?;
            let mut out = Vec::with_capacity(a.len() + b.len());
            out.extend(a.iter().cloned());
            out.extend(b.iter().cloned());
            Ok(Value::array(out))
        }
        "pad" => {
            let (l, r) = (nat(&nats[0], env, span)?, nat(&nats[1], env, span)?);
            if l < 0 || r < 0 {
                return Err(size_error(span, name, format!("negative padding {l}, {r}")));
            }
            let v = eval(arg(0)?, env)?;
            let xs = array(eval(arg(1)?, env)?, span)?;
            let total = l.checked_add(r).and_then(|lr| lr.checked_add(xs.len() as i64)).unwrap_or(i64::MAX);
            length(total, span, name)?;
            let mut out = vec![v.clone(); l as usize];
            out.extend(xs.iter().cloned());
            out.extend(std::iter::repeat_n(v, r as usize));
            Ok(Value::array(out))
        }
        "gather" => {
            let idx = array(eval(arg(0)?, env)?, span)?;
            let xs = array(eval(arg(1)?, env)?, span)?;
            let out = idx
                .iter()
                .map(|i| {
                    let i = i.as_int().unwrap_or(-1);
                    usize::try_from(i).ok().and_then(|k| xs.get(k)).cloned().ok_or_else(|| {
                        size_error(
                            span,
                            name,
                            format!("index {i} is out of bounds for an array of length {}", xs.len()),
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            Ok(Value::array(out))
        }
        "scatter" => {
            let idx = array(eval(arg(0)?, env)?, span)?;
            let xs = array(eval(arg(1)?, env)?, span)?;
            let mut out: Vec<Option<Value>> = vec![None; xs.len()];
            for (x, i) in xs.iter().zip(idx.iter()) {
                let i = i.as_int().unwrap_or(-1);
                let slot = usize::try_from(i).ok().and_then(|k| out.get_mut(k)).ok_or_else(|| {
                    size_error(span, name, format!("index {i} is out of bounds for an array of length {}", xs.len()))
                })?;
                if slot.is_some() {
                    return Err(size_error(span, name, format!("two elements are scattered to position {i}")));
                }
                *slot = Some(x.clone());
            }
            let out = out.into_iter().enumerate().map(|(k, v)| {
                v.ok_or_else(|| size_error(span, name, format!("no element is scattered to position {k}")))
            });
            Ok(Value::array(out.collect::<Result<_, _>>()?))
        }
        "scatterAdd" => {
            // Element k is 0 plus every value paired with k, in input order
            // (the order compiled code accumulates in, so f32 sums agree).
            let n = nat(&nats[0], env, span)?;
            let elem_ty = match &t.ty {
                heddle_ir::Type::Array { elem, .. } => (**elem).clone(),
                _ => return Err(internal(span, "scatterAdd without an array type")),
            };
            let zero = zero_of(&elem_ty, env, span)?;
            let pairs = array(eval(arg(0)?, env)?, span)?;
            let mut out = vec![zero; length(n, span, name)?];
            for p in pairs.iter() {
                let (i, v) = match p {
                    Value::Tuple(p) if p.len() == 2 => (p[0].as_int(), &p[1]),
                    _ => return Err(internal(span, "scatterAdd of non-pairs")),
                };
                let i = i.ok_or_else(|| internal(span, "scatterAdd with a non-integer index"))?;
                let slot = usize::try_from(i).ok().and_then(|k| out.get_mut(k)).ok_or_else(|| {
                    size_error(span, name, format!("index {i} is out of bounds for the result's length {n}"))
                })?;
                *slot = add(slot, v, &elem_ty).map_err(|m| internal(span, &m))?;
            }
            Ok(Value::array(out))
        }
        "union" => {
            let (za, zb) = (eval(arg(0)?, env)?, eval(arg(1)?, env)?);
            let a = array(eval(arg(2)?, env)?, span)?;
            let b = array(eval(arg(3)?, env)?, span)?;
            super::merge::merge(&a, &b, Some((&za, &zb)), name, span)
        }
        "intersect" => {
            let a = array(eval(arg(0)?, env)?, span)?;
            let b = array(eval(arg(1)?, env)?, span)?;
            super::merge::merge(&a, &b, None, name, span)
        }
        "filter" => {
            let xs = array(eval(arg(1)?, env)?, span)?;
            let p = arg(0)?;
            let mut kept = Vec::new();
            for x in xs.iter() {
                match apply(p, vec![x.clone()], env, None)? {
                    Value::Bool(true) => kept.push(x.clone()),
                    Value::Bool(false) => {}
                    other => return Err(internal(span, &format!("a `filter` predicate gave {other}"))),
                }
            }
            Ok(Value::array(kept))
        }
        "sortBy" => {
            let key = arg(0)?;
            let xs = array(eval(arg(1)?, env)?, span)?;
            let keys = xs.iter().map(|x| apply(key, vec![x.clone()], env, None)).collect::<Result<Vec<_>, _>>()?;
            let key_ty = match &key.kind {
                heddle_typeck::TKind::Lambda { body, .. } => body.ty.clone(),
                _ => return Err(internal(span, "a `sortBy` key that is not a function")),
            };
            let order = super::sort::stable_order(&keys, &key_ty).map_err(|m| internal(span, &m))?;
            Ok(Value::array(order.into_iter().map(|k| xs[k].clone()).collect()))
        }
        "compressAdd" | "compressLast" => {
            let n = nat(&nats[0], env, span)?;
            let pairs = array(eval(arg(0)?, env)?, span)?;
            let elem_ty = match &t.ty {
                heddle_ir::Type::Array { elem, .. } => (**elem).clone(),
                _ => return Err(internal(span, "compressAdd without an array type")),
            };
            super::merge::compress(&pairs, n, &elem_ty, name == "compressLast", span)
        }
        "generate" => {
            let n = nat(&nats[0], env, span)?;
            length(n, span, name)?;
            whole_length(&t.ty, env, span, name)?;
            let f = arg(0)?;
            let out = (0..n.max(0)).map(|k| apply(f, vec![Value::Int(k)], env, None)).collect::<Result<_, _>>()?;
            Ok(Value::array(out))
        }
        "toLocal" | "toPrivate" | "toGlobal" => {
            let x = eval(arg(1)?, env)?;
            apply(arg(0)?, vec![x], env, None)
        }
        "asVector" => {
            let w = nat(&nats[0], env, span)?;
            let xs = array(eval(arg(0)?, env)?, span)?;
            if w <= 0 || xs.len() as i64 % w != 0 {
                return Err(size_error(span, name, format!("{} elements do not form vectors of {w}", xs.len())));
            }
            Ok(Value::array(xs.chunks(w as usize).map(|c| Value::array(c.to_vec())).collect()))
        }
        "complex" => match (eval(arg(0)?, env)?, eval(arg(1)?, env)?) {
            (Value::Float(re), Value::Float(im)) => Ok(Value::complex(re, im)),
            _ => Err(internal(span, "`complex` of parts that are not floats")),
        },
        "re" | "im" | "conj" => match eval(arg(0)?, env)?.as_complex() {
            Some((re, _)) if name == "re" => Ok(Value::Float(re)),
            Some((_, im)) if name == "im" => Ok(Value::Float(im)),
            Some((re, im)) => Ok(Value::complex(re, -im)),
            None => Err(internal(span, &format!("`{name}` of a value that is not complex"))),
        },
        "asScalar" => {
            let xs = array(eval(arg(0)?, env)?, span)?;
            let mut out = Vec::new();
            for x in xs.iter() {
                out.extend(array(x.clone(), span)?.iter().cloned());
            }
            Ok(Value::array(out))
        }
        other => Err(internal(span, &format!("no meaning for the primitive `{other}`"))),
    }
}

/// The zero of a scatterAdd element type: 0 in every scalar.
fn zero_of(ty: &heddle_ir::Type, env: &Env, span: Span) -> Result<Value, Diagnostic> {
    use heddle_ir::Type;
    match ty {
        Type::Scalar(s) if s.is_float() => Ok(Value::Float(0.0)),
        Type::Scalar(s) if s.is_complex() => Ok(Value::complex(0.0, 0.0)),
        Type::Scalar(heddle_ir::ScalarType::Bool) => Ok(Value::Bool(false)),
        Type::Scalar(_) => Ok(Value::Int(0)),
        Type::Tuple(ts) => Ok(Value::tuple(ts.iter().map(|t| zero_of(t, env, span)).collect::<Result<_, _>>()?)),
        Type::Array { elem, len, .. } => {
            let z = zero_of(elem, env, span)?;
            Ok(Value::array(vec![z; length(nat(len, env, span)?, span, "scatterAdd")?]))
        }
        other => Err(Diagnostic::new(span, format!("`scatterAdd` cannot sum values of type {other}"))
            .with_label("while running this")),
    }
}

/// `a + b` at type `ty`, component-wise through tuples and arrays.
fn add(a: &Value, b: &Value, ty: &heddle_ir::Type) -> Result<Value, String> {
    use heddle_ir::Type;
    match (a, b, ty) {
        (Value::Tuple(xs), Value::Tuple(ys), Type::Tuple(ts)) => Ok(Value::tuple(
            xs.iter().zip(ys.iter()).zip(ts).map(|((x, y), t)| add(x, y, t)).collect::<Result<_, _>>()?,
        )),
        (Value::Array(xs), Value::Array(ys), Type::Array { elem, .. }) if xs.len() == ys.len() => {
            Ok(Value::array(xs.iter().zip(ys.iter()).map(|(x, y)| add(x, y, elem)).collect::<Result<_, _>>()?))
        }
        (_, _, Type::Scalar(s)) => super::binary(heddle_ir::expr::BinOp::Add, a, b, *s),
        _ => Err(format!("scatterAdd cannot add {a} and {b}")),
    }
}

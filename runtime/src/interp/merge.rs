//! Co-iteration (`union`, `intersect`) and the expand/compress workspace
//! (`compressAdd`): the patterns whose result length is counted (see
//! `heddle_ir::nat::counted`). Here they simply run; the results are what
//! compiled code's count-then-fill phases must reproduce.

use super::internal;
use crate::value::Value;
use heddle_ir::{Diagnostic, Span, Type};

/// A list's (coordinate, value) pairs, checked sorted by strictly increasing
/// coordinate (`which` names the list in the error).
fn sorted_pairs<'v>(xs: &'v [Value], prim: &str, which: &str, span: Span) -> Result<Vec<(i64, &'v Value)>, Diagnostic> {
    let mut out: Vec<(i64, &Value)> = Vec::with_capacity(xs.len());
    for (k, x) in xs.iter().enumerate() {
        let Value::Tuple(p) = x else { return Err(internal(span, "co-iteration over non-pairs")) };
        let (Some(c), Some(v)) = (p.first().and_then(Value::as_int), p.get(1)) else {
            return Err(internal(span, "co-iteration over non-pairs"));
        };
        if let Some(&(prev, _)) = out.last()
            && prev >= c
        {
            return Err(Diagnostic::new(span, format!(
                    "`{prim}`: the {which} list is not sorted by strictly increasing coordinate: entry {k} has coordinate {c} after {prev}"
                ))
                .with_label("while running this")
                .with_note("co-iteration needs each list's coordinates sorted and free of duplicates (an ordered, unique level)"));
        }
        out.push((c, v));
    }
    Ok(out)
}

/// `union(za, zb)(a, b)` or `intersect(a, b)` (when `defaults` is `None`):
/// `(coordinate, value of a, value of b)` for each coordinate in either
/// (both) lists, in increasing order. Coordinates keep the first list's
/// representation (an `Int`).
pub(super) fn merge(
    a: &[Value],
    b: &[Value],
    defaults: Option<(&Value, &Value)>,
    prim: &str,
    span: Span,
) -> Result<Value, Diagnostic> {
    let a = sorted_pairs(a, prim, "first", span)?;
    let b = sorted_pairs(b, prim, "second", span)?;
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    let triple = |c: i64, x: &Value, y: &Value| Value::tuple(vec![Value::Int(c), x.clone(), y.clone()]);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(&(ca, va)), Some(&(cb, vb))) if ca == cb => {
                out.push(triple(ca, va, vb));
                i += 1;
                j += 1;
            }
            (Some(&(ca, va)), Some(&(cb, _))) if ca < cb => {
                if let Some((_, zb)) = defaults {
                    out.push(triple(ca, va, zb));
                }
                i += 1;
            }
            (Some(&(ca, va)), None) => {
                match defaults {
                    Some((_, zb)) => out.push(triple(ca, va, zb)),
                    None => break,
                }
                i += 1;
            }
            (_, Some(&(cb, vb))) => {
                match defaults {
                    Some((za, _)) => out.push(triple(cb, za, vb)),
                    None if i >= a.len() => break,
                    None => {}
                }
                j += 1;
            }
            (None, None) => break,
        }
    }
    Ok(Value::array(out))
}

/// `compressAdd(n)`: the values summed by index, for the indices that got
/// any, in increasing order; `compressLast(n)` (`last`): each index's last
/// value. `elem_ty` is the result's element type `(I, T)`.
pub(super) fn compress(pairs: &[Value], n: i64, elem_ty: &Type, last: bool, span: Span) -> Result<Value, Diagnostic> {
    let name = if last { "compressLast" } else { "compressAdd" };
    let Type::Tuple(parts) = elem_ty else { return Err(internal(span, "compressAdd without a pair type")) };
    let Some(Type::Scalar(s)) = parts.get(1) else { return Err(internal(span, "compressAdd of non-scalar values")) };
    let mut sums: std::collections::BTreeMap<i64, Value> = std::collections::BTreeMap::new();
    for p in pairs {
        let Value::Tuple(p) = p else { return Err(internal(span, "compressAdd of non-pairs")) };
        let (Some(k), Some(v)) = (p.first().and_then(Value::as_int), p.get(1)) else {
            return Err(internal(span, "compressAdd of non-pairs"));
        };
        if !(0..n).contains(&k) {
            return Err(Diagnostic::new(
                span,
                format!("`{name}`: index {k} is out of bounds for the workspace's length {n}"),
            )
            .with_label("while running this"));
        }
        // In input order, so float sums round as compiled code's do.
        let next = match sums.get(&k) {
            Some(_) if last => v.clone(),
            Some(acc) => super::binary(heddle_ir::expr::BinOp::Add, acc, v, *s).map_err(|m| internal(span, &m))?,
            None => v.clone(),
        };
        sums.insert(k, next);
    }
    Ok(Value::array(sums.into_iter().map(|(k, v)| Value::tuple(vec![Value::Int(k), v])).collect()))
}

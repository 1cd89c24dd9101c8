//! `sortBy`'s order: keys compared lexicographically, leaf by leaf, in the
//! order compiled code compares them (`rewrite::lower::sort`).

use crate::value::Value;
use heddle_ir::{ScalarType, Type};
use std::cmp::Ordering;

/// The positions of `keys` in increasing key order, equal keys in their
/// original order (a stable sort). `key_ty` is the keys' type: a scalar or
/// nested tuples of scalars.
pub(crate) fn stable_order(keys: &[Value], key_ty: &Type) -> Result<Vec<usize>, String> {
    let mut leaf_types = Vec::new();
    leaves_of_type(key_ty, &mut leaf_types)?;
    let flat: Vec<Vec<Value>> = keys
        .iter()
        .map(|k| {
            let mut out = Vec::with_capacity(leaf_types.len());
            leaves(k, &mut out);
            out
        })
        .collect();
    if let Some(bad) = flat.iter().find(|k| k.len() != leaf_types.len()) {
        return Err(format!("a `sortBy` key with {} scalars where its type has {}", bad.len(), leaf_types.len()));
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    // `sort_by` is stable: equal keys keep their positions' order.
    order.sort_by(|&a, &b| {
        flat[a]
            .iter()
            .zip(&flat[b])
            .zip(&leaf_types)
            .map(|((x, y), s)| compare(x, y, *s))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    });
    Ok(order)
}

/// The scalar types of a key's leaves, in order.
fn leaves_of_type(t: &Type, out: &mut Vec<ScalarType>) -> Result<(), String> {
    match t {
        Type::Scalar(s) if !s.is_complex() => out.push(*s),
        Type::Tuple(ts) => ts.iter().try_for_each(|t| leaves_of_type(t, out))?,
        other => return Err(format!("a `sortBy` key of type {other}")),
    }
    Ok(())
}

fn leaves(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Tuple(items) => items.iter().for_each(|v| leaves(v, out)),
        other => out.push(other.clone()),
    }
}

/// One leaf's order: integers by value (`u64` as unsigned), `false < true`,
/// floats by value with `-0.0 == 0.0` and every NaN after every number (and
/// equal to every other NaN), numpy's `sort` order.
fn compare(a: &Value, b: &Value, s: ScalarType) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) if s == ScalarType::U64 => (*x as u64).cmp(&(*y as u64)),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        },
        _ => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_put_nan_last_and_keep_equal_keys_in_order() {
        let keys: Vec<Value> =
            [2.0, f64::NAN, -0.0, 1.0, 0.0, f64::NAN, -1.0].iter().map(|&x| Value::Float(x)).collect();
        let order = stable_order(&keys, &Type::Scalar(ScalarType::F64)).unwrap();
        assert_eq!(order, vec![6, 2, 4, 3, 0, 1, 5]);
    }

    #[test]
    fn tuples_compare_lexicographically_and_u64_unsigned() {
        let key = |a: i64, b: i64| Value::tuple(vec![Value::Int(a), Value::Int(b)]);
        let keys = vec![key(1, -1), key(0, 5), key(1, 3), key(0, 5), key(-1, 0)];
        let ty = Type::Tuple(vec![Type::Scalar(ScalarType::U64), Type::Scalar(ScalarType::I32)]);
        // -1 as u64 is the largest key.
        assert_eq!(stable_order(&keys, &ty).unwrap(), vec![1, 3, 0, 2, 4]);
    }
}

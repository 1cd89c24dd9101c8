//! Writing results: `.npy` (the flat buffer; tuples as a structured dtype)
//! and JSON (a flat list; tuples as lists).

use crate::value::Value;
use heddle_ir::{ScalarType, Type};
use std::io::Write;
use std::path::Path;

/// The innermost element type of a (nested) array type.
pub fn leaf_type(t: &Type) -> &Type {
    match t {
        Type::Array { elem, .. } => leaf_type(elem),
        other => other,
    }
}

fn json_scalar(v: &Value, s: Option<ScalarType>) -> serde_json::Value {
    match v {
        Value::Int(x) if s == Some(ScalarType::U64) => serde_json::Value::from(*x as u64),
        Value::Int(x) => serde_json::Value::from(*x),
        Value::Bool(b) => serde_json::Value::from(*b),
        // Shortest text at the result's width; "inf", "-inf", "nan" (see `number`).
        Value::Float(x) => super::number::float_to_json(*x, s.unwrap_or(ScalarType::F64)),
        // A complex number is the pair [re, im], each part at the part type's width.
        Value::Complex(z) => {
            let part = s.unwrap_or(ScalarType::C64).part();
            serde_json::Value::Array(vec![
                super::number::float_to_json(z.re, part),
                super::number::float_to_json(z.im, part),
            ])
        }
        Value::Tuple(items) | Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(|x| json_scalar(x, s)).collect())
        }
        Value::Tensor(t) => crate::sparse::json::storage_to_json(t),
    }
}

/// `v` of type `ty` as JSON, each scalar at its own type: a `u64` in a
/// tuple in a tuple is still unsigned (it printed as a negative number when
/// only the outer tuple's fields were typed).
fn json_typed(v: &Value, ty: &Type) -> serde_json::Value {
    match (ty, v) {
        (Type::Tuple(ts), Value::Tuple(items)) if ts.len() == items.len() => {
            serde_json::Value::Array(items.iter().zip(ts).map(|(x, t)| json_typed(x, t)).collect())
        }
        (Type::Array { elem, .. }, Value::Array(items)) => {
            serde_json::Value::Array(items.iter().map(|x| json_typed(x, elem)).collect())
        }
        (t, x) => json_scalar(x, t.as_scalar()),
    }
}

/// The result as JSON: a scalar, or the flat buffer of an array.
pub fn to_json(v: &Value, ty: &Type) -> serde_json::Value {
    let leaf = leaf_type(ty);
    let item = |x: &Value| json_typed(x, leaf);
    match v {
        Value::Array(_) => {
            let mut flat = Vec::new();
            v.flatten_into(&mut flat);
            serde_json::Value::Array(flat.iter().map(item).collect())
        }
        other => item(other),
    }
}

fn push_scalar(out: &mut Vec<u8>, v: &Value, s: ScalarType) {
    match (v, s) {
        // A bf16 is written as a float32 (see npy::file_type), exactly.
        (Value::Float(x), ScalarType::F32 | ScalarType::BF16) => out.extend_from_slice(&(*x as f32).to_le_bytes()),
        (Value::Float(x), ScalarType::F16) => out.extend_from_slice(&heddle_ir::rounding::f16_of_f64(*x).to_le_bytes()),
        (Value::Float(x), _) => out.extend_from_slice(&x.to_le_bytes()),
        (Value::Complex(z), ScalarType::C32) => {
            out.extend_from_slice(&(z.re as f32).to_le_bytes());
            out.extend_from_slice(&(z.im as f32).to_le_bytes());
        }
        (Value::Complex(z), _) => {
            out.extend_from_slice(&z.re.to_le_bytes());
            out.extend_from_slice(&z.im.to_le_bytes());
        }
        (Value::Bool(b), _) => out.push(*b as u8),
        (Value::Int(x), s) => out.extend_from_slice(&x.to_le_bytes()[..s.size_bytes()]),
        _ => {}
    }
}

/// The n-D shape of a result whose type nests n dense arrays (no position
/// binder: `[[T]_m]_n` is `(n, m)`), taken from the value, which has those
/// lengths at every level. `None` for a scalar, a flat array, or a result
/// with a position-dependent level (written as its flat buffer).
fn npy_shape(v: &Value, ty: &Type) -> Option<Vec<usize>> {
    let mut dims = Vec::new();
    let (mut t, mut cur) = (ty, Some(v));
    while let Type::Array { binder: None, elem, .. } = t {
        let items = cur?.as_array()?;
        dims.push(items.len());
        // Every level is as long as the type says, so the first element stands
        // for all (an empty level ends the walk: its elements have no value).
        cur = items.first();
        t = elem;
        if cur.is_none() {
            break;
        }
    }
    // Only the outer dense levels are shaped; a position-dependent level
    // below them keeps the result flat.
    let fully = !matches!(t, Type::Array { .. }) || (cur.is_none() && !contains_binder(t));
    (dims.len() >= 2 && fully).then_some(dims)
}

fn contains_binder(t: &Type) -> bool {
    match t {
        Type::Array { binder, elem, .. } => binder.is_some() || contains_binder(elem),
        _ => false,
    }
}

/// Writes the result as a `.npy` file: shaped for nested dense arrays
/// (`[[T]_m]_n` is an `(n, m)` array), else the flat buffer.
pub fn write_npy(path: &Path, v: &Value, ty: &Type) -> Result<(), String> {
    let leaf = leaf_type(ty);
    let (descr_text, fields): (String, Vec<ScalarType>) = match leaf {
        Type::Scalar(s) => (format!("'{}'", super::npy::descr(*s)), vec![*s]),
        Type::Tuple(ts) => {
            let fs: Option<Vec<ScalarType>> = ts.iter().map(|t| t.as_scalar()).collect();
            let fs = fs.ok_or("tuples of non-scalars cannot be written to .npy; use .json")?;
            let d: Vec<String> =
                fs.iter().enumerate().map(|(k, s)| format!("('f{k}', '{}')", super::npy::descr(*s))).collect();
            (format!("[{}]", d.join(", ")), fs)
        }
        other => return Err(format!("a result of type {other} cannot be written to .npy")),
    };
    let mut flat = Vec::new();
    v.flatten_into(&mut flat);
    let mut body = Vec::new();
    for item in &flat {
        match item {
            Value::Tuple(items) => items.iter().zip(&fields).for_each(|(x, s)| push_scalar(&mut body, x, *s)),
            x => push_scalar(&mut body, x, fields[0]),
        }
    }
    let dims = npy_shape(v, ty).unwrap_or_else(|| vec![flat.len()]);
    let dims: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
    let mut out = Vec::with_capacity(128 + body.len());
    super::npy::write_header(&mut out, &descr_text, &dims)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    out.extend_from_slice(&body);
    let mut f = std::fs::File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(&out).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A result that is rows of (column, value) pairs — a CSR matrix's
/// coordinate hierarchy, such as a sparse product's counted rows — as a
/// coordinate list for Matrix Market: `(rows, columns)` are `dims`, or the
/// result's row count and its largest column + 1. The error says why the
/// result is not such a matrix, or which entry lies outside `dims`.
pub fn sparse_rows(
    v: &Value,
    ty: &Type,
    dims: Option<(u64, u64)>,
) -> Result<(crate::sparse::coo::Coo, ScalarType), String> {
    let shape = "a matrix needs a result of rows of (column, value) pairs, [i -> [(int, T)]_L]_n";
    let Type::Array { elem: row_ty, .. } = ty else { return Err(format!("{shape}; this result has type {ty}")) };
    let Type::Array { elem: entry_ty, .. } = &**row_ty else {
        return Err(format!("{shape}; this result has type {ty}"));
    };
    let value_ty = match &**entry_ty {
        Type::Tuple(ts) if ts.len() == 2 && ts[0].as_scalar().is_some_and(|s| s.is_int()) => ts[1].as_scalar(),
        _ => None,
    };
    let Some(value_ty) = value_ty.filter(|s| *s != ScalarType::Bool) else {
        return Err(format!("{shape}; this result has type {ty}"));
    };
    let Value::Array(rows) = v else { return Err("the result is not an array".into()) };
    let mut coords = Vec::new();
    let mut values = crate::scalars::ScalarVec::new(value_ty);
    let mut width = 0u64;
    for (i, row) in rows.iter().enumerate() {
        let Value::Array(entries) = row else { return Err(format!("row {i} is not an array")) };
        for e in entries.iter() {
            let (Value::Tuple(p), true) = (e, true) else { return Err(format!("row {i} holds a non-pair")) };
            let c = p.first().and_then(Value::as_int).ok_or_else(|| format!("row {i} holds a non-integer column"))?;
            let c = u64::try_from(c).map_err(|_| format!("row {i} has the negative column {c}"))?;
            let x = p.get(1).and_then(|x| crate::scalars::Num::of_value(x, value_ty));
            if !x.is_some_and(|x| values.push_num(x)) {
                return Err(format!("row {i} holds a non-numeric value"));
            }
            width = width.max(c + 1);
            coords.extend([i as u64, c]);
        }
    }
    let (m, n) = match dims {
        Some((m, n)) => {
            if m != rows.len() as u64 {
                return Err(format!("--output-dims says {m} rows, the result has {}", rows.len()));
            }
            if width > n {
                return Err(format!("--output-dims says {n} columns, the result has an entry in column {}", width - 1));
            }
            (m, n)
        }
        None => (rows.len() as u64, width),
    };
    Ok((crate::sparse::coo::Coo { dims: vec![m, n], coords, values }, value_ty))
}

#[cfg(test)]
mod tests {
    use super::to_json;
    use crate::value::Value;
    use heddle_ir::{ScalarType as S, Type};

    #[test]
    fn unsigned_values_in_nested_tuples_print_unsigned() {
        let ty = Type::Tuple(vec![Type::Tuple(vec![Type::scalar(S::U64), Type::scalar(S::I64)]), Type::scalar(S::U64)]);
        let v =
            Value::Tuple(vec![Value::Tuple(vec![Value::Int(-1), Value::Int(-1)].into()), Value::Int(i64::MIN)].into());
        assert_eq!(to_json(&v, &ty), serde_json::json!([[u64::MAX, -1], 9223372036854775808u64]));
    }
}

//! The `.json` forms: a stored tensor's storage (LANGUAGE.md §7, as MLIR's
//! `sparse_tensor.print` shows it) and a dense tensor as nested lists.

use super::assemble::{Buffers, assemble, disassemble};
use super::dense::DenseTensor;
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use crate::io::number;
use heddle_ir::ScalarType;
use heddle_ir::encoding::{parse_encoding, print_encoding};
use serde_json::{Value, json};

/// A stored value: an integer for integer element types, else a float in
/// its shortest form (`"inf"`, `"-inf"`, `"nan"` for the non-finite ones,
/// see [`crate::io::number`]).
fn num(v: f64, elem: ScalarType) -> Value {
    if !elem.is_float() && v.fract() == 0.0 && v.abs() <= super::text::EXACT_INT as f64 {
        json!(v as i64)
    } else {
        number::float_to_json(v, elem)
    }
}

/// A value read back: a number, or the string form of ±∞ and NaN. Integers
/// beyond ±2^53 are refused: values are held as `f64`, which would change them.
fn read_num(x: &Value) -> std::result::Result<f64, String> {
    let exact = |n: &serde_json::Number| match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => i.unsigned_abs() <= super::text::EXACT_INT as u64,
        (None, Some(u)) => u <= super::text::EXACT_INT as u64,
        _ => true,
    };
    match x {
        Value::Number(n) if !exact(n) => Err(format!("{x} is an integer beyond ±2^53, which values are held exactly up to")),
        _ => number::float_from_json(x).ok_or_else(|| format!("{x} is not a number (nor \"inf\", \"-inf\" or \"nan\")")),
    }
}

/// `{"encoding", "dim_sizes", "lvl_sizes", "nse", "positions", "coordinates", "values"}`:
/// every buffer exactly as stored, `null` for a level without one.
pub fn storage_to_json(t: &SparseTensor) -> Value {
    let b = disassemble(t);
    let opt = |v: &Option<Vec<u64>>| v.as_ref().map_or(Value::Null, |x| json!(x));
    json!({
        "encoding": print_encoding(&t.encoding),
        "dim_sizes": t.dim_sizes,
        "lvl_sizes": t.lvl_sizes,
        "nse": t.nse(),
        "positions": b.positions.iter().map(opt).collect::<Vec<_>>(),
        "coordinates": b.coordinates.iter().map(opt).collect::<Vec<_>>(),
        "values": t.values.iter().map(|&v| num(v, t.elem)).collect::<Vec<_>>(),
    })
}

/// Reads the storage form back, validating it (see [`assemble`]). Values are `f64`.
pub fn storage_from_json(v: &Value) -> Result<SparseTensor> {
    let field = |k: &str| v.get(k).ok_or_else(|| SparseError::Json(format!("the storage object has no `{k}` field")));
    let text = field("encoding")?.as_str().ok_or_else(|| SparseError::Json("`encoding` must be a string".into()))?;
    let enc = parse_encoding(text, 0).map_err(SparseError::Encoding)?;
    let ints = |x: &Value, what: &str| -> Result<Vec<u64>> {
        let arr = x.as_array().ok_or_else(|| SparseError::Json(format!("`{what}` must be a list")))?;
        arr.iter()
            .enumerate()
            .map(|(i, e)| {
                e.as_u64().ok_or_else(|| SparseError::buffer(what, i, format!("{e} is not a non-negative integer")))
            })
            .collect()
    };
    let per_level = |k: &str| -> Result<Vec<Option<Vec<u64>>>> {
        let arr = field(k)?
            .as_array()
            .ok_or_else(|| SparseError::Json(format!("`{k}` must be a list with one entry per level")))?;
        arr.iter()
            .enumerate()
            .map(|(l, x)| if x.is_null() { Ok(None) } else { ints(x, &format!("{k}[{l}]")).map(Some) })
            .collect()
    };
    let dim_sizes = ints(field("dim_sizes")?, "dim_sizes")?;
    let values = field("values")?
        .as_array()
        .ok_or_else(|| SparseError::Json("`values` must be a list".into()))?
        .iter()
        .enumerate()
        .map(|(i, x)| read_num(x).map_err(|m| SparseError::buffer("values", i, m)))
        .collect::<Result<Vec<f64>>>()?;
    let b = Buffers { positions: per_level("positions")?, coordinates: per_level("coordinates")?, values };
    let t = assemble(&enc, ScalarType::F64, dim_sizes, b)?;
    if let Some(l) = v.get("lvl_sizes") {
        let given = ints(l, "lvl_sizes")?;
        if given != t.lvl_sizes {
            return Err(SparseError::Json(format!(
                "`lvl_sizes` is {given:?}, but the encoding gives {:?} for these dimensions",
                t.lvl_sizes
            )));
        }
    }
    Ok(t)
}

/// Nested lists → a dense tensor; ragged or non-numeric lists are errors naming the element.
pub fn dense_from_json(v: &Value) -> Result<DenseTensor> {
    let mut dims = Vec::new();
    let mut cur = v;
    while let Value::Array(a) = cur {
        dims.push(a.len() as u64);
        match a.first() {
            Some(x) => cur = x,
            None => break,
        }
    }
    let mut values = Vec::new();
    fn walk(v: &Value, dims: &[u64], path: &mut Vec<usize>, out: &mut Vec<f64>) -> Result<()> {
        let at = || path.iter().map(|i| format!("[{i}]")).collect::<String>();
        match (dims.split_first(), v) {
            (None, x) => {
                let n = match x.as_bool() {
                    Some(b) => Ok(f64::from(u8::from(b))),
                    None => read_num(x),
                };
                out.push(n.map_err(|m| SparseError::Json(format!("element {}: {m}", at())))?);
            }
            (Some((&n, rest)), Value::Array(a)) if a.len() as u64 == n => {
                for (i, x) in a.iter().enumerate() {
                    path.push(i);
                    walk(x, rest, path, out)?;
                    path.pop();
                }
            }
            (Some((&n, _)), x) => {
                let found = x.as_array().map_or_else(|| x.to_string(), |a| format!("a list of {}", a.len()));
                return Err(SparseError::Json(format!("element {} should be a list of {n}, found {found}", at())));
            }
        }
        Ok(())
    }
    walk(v, &dims, &mut Vec::new(), &mut values)?;
    Ok(DenseTensor { dims, values })
}

/// A dense tensor as nested lists.
pub fn dense_to_json(d: &DenseTensor, elem: ScalarType) -> Value {
    fn build(vals: &[f64], dims: &[u64], elem: ScalarType) -> Value {
        match dims.split_first() {
            None => vals.first().map_or(Value::Null, |&v| num(v, elem)),
            Some((&n, rest)) => {
                let stride: usize = rest.iter().map(|&x| x as usize).product();
                Value::Array((0..n as usize).map(|i| build(&vals[i * stride..(i + 1) * stride], rest, elem)).collect())
            }
        }
    }
    build(&d.values, &d.dims, elem)
}

//! The `.json` forms: a stored tensor's storage (LANGUAGE.md §7, as MLIR's
//! `sparse_tensor.print` shows it) and a dense tensor as nested lists.

use super::assemble::{Buffers, assemble, disassemble};
use super::dense::DenseTensor;
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use crate::io::number;
use crate::scalars::{Num, ScalarVec};
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, parse_encoding, print_encoding};
use serde_json::{Value, json};

/// A stored value: an integer (exactly, at any width; booleans as 1 and 0)
/// for integer element types, else a float in its shortest form at the
/// element's width (`"inf"`, `"-inf"`, `"nan"` for the non-finite ones, see
/// [`crate::io::number`]).
fn num(v: Num, elem: ScalarType) -> Value {
    match v {
        Num::Int(i) => match (i64::try_from(i), u64::try_from(i)) {
            (Ok(x), _) => json!(x),
            (_, Ok(x)) => json!(x),
            _ => unreachable!("stored values are at most 64 bits"),
        },
        Num::Bool(b) => json!(u8::from(b)),
        Num::Float(x) => number::float_to_json(x, elem),
        // A complex number is the pair [re, im].
        Num::Complex(re, im) => json!([number::float_to_json(re, elem.part()), number::float_to_json(im, elem.part())]),
    }
}

/// JSON values read as scalars of type `dest`, each straight from its text
/// (an integer exactly, a float rounded once to `dest`'s width), or, without
/// a `dest`, of the type the text says: integers (no fraction or exponent)
/// as `i64` (`u64` when one is beyond `i64` and none is negative), anything
/// else as `f64`. The error gives the position and what is wrong.
pub(crate) fn scalars_from_json<'a>(
    items: impl ExactSizeIterator<Item = &'a Value> + Clone,
    dest: Option<ScalarType>,
) -> std::result::Result<ScalarVec, (usize, String)> {
    let dest = dest.unwrap_or_else(|| {
        let text_ints = items.clone().all(|x| matches!(x, Value::Number(n) if is_integer_text(&n.to_string())));
        // Pairs [re, im] are complex numbers.
        if items.len() > 0 && items.clone().all(|x| matches!(x, Value::Array(p) if p.len() == 2)) {
            ScalarType::C64
        } else if !text_ints || items.len() == 0 {
            ScalarType::F64
        } else if items.clone().all(|x| x.as_i64().is_some()) {
            ScalarType::I64
        } else {
            ScalarType::U64
        }
    });
    let mut out = ScalarVec::with_capacity(dest, items.len());
    for (k, x) in items.enumerate() {
        let n = json_num(x, dest).map_err(|m| (k, m))?;
        if !out.push_num(n) {
            return Err((k, format!("{x} does not fit in {dest}")));
        }
    }
    Ok(out)
}

/// Is `t` an integer literal (no fraction, no exponent)?
fn is_integer_text(t: &str) -> bool {
    !t.contains(['.', 'e', 'E'])
}

/// One JSON value as a scalar for `dest`: integers exactly, floats rounded
/// once from the text (straight to `f32` for `f32`), the strings of ±∞ and
/// NaN, booleans.
fn json_num(x: &Value, dest: ScalarType) -> std::result::Result<Num, String> {
    match x {
        // A complex number is the pair [re, im].
        Value::Array(parts) if dest.is_complex() => match parts.as_slice() {
            [re, im] => match (json_num(re, dest.part())?, json_num(im, dest.part())?) {
                (Num::Float(re), Num::Float(im)) => Ok(Num::Complex(re, im)),
                _ => Err(format!("{x} is not a pair of numbers [re, im]")),
            },
            _ => Err(format!("{x} is not a complex number: expected a pair [re, im]")),
        },
        Value::Number(n) => {
            let text = n.to_string();
            if is_integer_text(&text) && !dest.is_float() {
                return text.parse::<i128>().map(Num::Int).map_err(|_| format!("{text} does not fit in {dest}"));
            }
            let v = if dest == ScalarType::F32 {
                number::parse_f32(text.as_bytes()).map(f64::from)
            } else {
                number::parse_float(text.as_bytes())
            };
            v.map(Num::Float).ok_or_else(|| format!("{text} is not a number"))
        }
        Value::Bool(b) => Ok(Num::Bool(*b)),
        _ => number::float_from_json(x)
            .map(Num::Float)
            .ok_or_else(|| format!("{x} is not a number (nor \"inf\", \"-inf\" or \"nan\")")),
    }
}

/// `{"encoding", "dim_sizes", "lvl_sizes", "nse", "positions", "coordinates", "values"}`:
/// every buffer exactly as stored, `null` for a level without one.
pub fn storage_to_json(t: &SparseTensor) -> Value {
    let b = disassemble(t);
    // A batched tensor's buffers nest one list per batch level (see `batch`).
    let shape = super::batch::row_shape(t);
    let opt =
        |v: &Option<Vec<u64>>| v.as_ref().map_or(Value::Null, |x| nest(x.iter().map(|&c| json!(c)).collect(), &shape));
    // A difference level's offsets are signed.
    let crd = |(l, v): (usize, &Option<Vec<u64>>)| match v {
        Some(x) if t.encoding.signed_level(l) => nest(x.iter().map(|&c| json!(c as i64)).collect(), &shape),
        _ => opt(v),
    };
    let batches = shape.iter().product::<u64>().max(1) as usize;
    json!({
        "encoding": print_encoding(&t.encoding),
        "dim_sizes": t.dim_sizes,
        "lvl_sizes": t.lvl_sizes,
        // Per batch, as MLIR's `sparse_tensor.print` counts them: the values' row length.
        "nse": if shape.is_empty() { t.nse() } else { t.nse() / batches },
        "positions": b.positions.iter().map(opt).collect::<Vec<_>>(),
        "coordinates": b.coordinates.iter().enumerate().map(crd).collect::<Vec<_>>(),
        "values": nest((0..t.values.len()).map(|k| num(t.values.num(k), t.elem)).collect(), &shape),
    })
}

/// `items` as nested lists: one level per entry of `shape` (the batch
/// levels' sizes), the last holding equal rows; flat when `shape` is empty.
fn nest(items: Vec<Value>, shape: &[u64]) -> Value {
    let Some((&n, rest)) = shape.split_first() else { return Value::Array(items) };
    let n = n as usize;
    let row = items.len().checked_div(n).unwrap_or(0);
    let mut it = items.into_iter();
    Value::Array((0..n).map(|_| nest(it.by_ref().take(row).collect(), rest)).collect())
}

/// The leaves of a batched buffer given as nested lists (`shape`: the batch
/// levels' sizes; every innermost row of one length), in order. An error
/// names the buffer and says where the nesting differs.
fn flatten<'a>(x: &'a Value, shape: &[u64], what: &str) -> Result<Vec<&'a Value>> {
    fn walk<'a>(
        x: &'a Value,
        shape: &[u64],
        what: &str,
        at: &mut Vec<usize>,
        row: &mut Option<usize>,
        out: &mut Vec<&'a Value>,
    ) -> Result<()> {
        let here = || {
            if at.is_empty() {
                format!("`{what}`")
            } else {
                format!("`{what}`{}", at.iter().map(|i| format!("[{i}]")).collect::<String>())
            }
        };
        let arr = x.as_array().ok_or_else(|| SparseError::Json(format!("{} must be a list", here())))?;
        let Some((&n, rest)) = shape.split_first() else {
            match *row {
                Some(r) if r != arr.len() => {
                    return Err(SparseError::Json(format!(
                        "{} has {} entries but the rows before it {r}: a batched buffer has rows of one length (a memref<B x ? x T>)",
                        here(),
                        arr.len()
                    )));
                }
                _ => *row = Some(arr.len()),
            }
            out.extend(arr.iter());
            return Ok(());
        };
        if arr.len() as u64 != n {
            return Err(SparseError::Json(format!(
                "{} has {} entries but batch level {} has size {n}: a batched buffer nests one list per batch",
                here(),
                arr.len(),
                at.len()
            )));
        }
        for (i, e) in arr.iter().enumerate() {
            at.push(i);
            walk(e, rest, what, at, row, out)?;
            at.pop();
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(x, shape, what, &mut Vec::new(), &mut None, &mut out)?;
    Ok(out)
}

/// Reads the storage form back, validating it (see [`assemble`]). Values
/// are of type `dest`, each read straight from its text, or without one of
/// the type the text says (see [`scalars_from_json`]). A sliced encoding's
/// object holds its window (see [`window_storage_from_json`]): that is the
/// tensor read.
pub fn storage_from_json(v: &Value, dest: Option<ScalarType>) -> Result<SparseTensor> {
    window_storage_from_json(v, dest).map(|(t, _)| t)
}

/// [`storage_from_json`], with the sliced encoding whose window the object
/// holds where its encoding has slices (what `heddle convert --to SLICED
/// -o W.json` writes: the window's sizes and storage, in the encoding
/// without its slices, which the tensor read has).
pub fn window_storage_from_json(v: &Value, dest: Option<ScalarType>) -> Result<(SparseTensor, Option<Encoding>)> {
    let field = |k: &str| v.get(k).ok_or_else(|| SparseError::Json(format!("the storage object has no `{k}` field")));
    let text = field("encoding")?.as_str().ok_or_else(|| SparseError::Json("`encoding` must be a string".into()))?;
    let (enc, sliced) = unsliced(parse_encoding(text, 0).map_err(SparseError::Encoding)?);
    let plain_ints = |x: &Value, what: &str| -> Result<Vec<u64>> {
        let arr = x.as_array().ok_or_else(|| SparseError::Json(format!("`{what}` must be a list")))?;
        arr.iter()
            .enumerate()
            .map(|(i, e)| {
                e.as_u64().ok_or_else(|| SparseError::buffer(what, i, format!("{e} is not a non-negative integer")))
            })
            .collect()
    };
    let dim_sizes = plain_ints(field("dim_sizes")?, "dim_sizes")?;
    check_window(sliced.as_ref(), &dim_sizes)?;
    // A batched tensor's buffers nest one list per batch level (see `batch`).
    let shape: Vec<u64> = match super::batch::Batching::of(&enc)? {
        Some(bt) if bt.batch_dims.iter().all(|&d| d < dim_sizes.len()) => bt.sizes(&dim_sizes),
        _ => Vec::new(),
    };
    let leaves = |x: &'_ Value, what: &str| -> Result<Vec<Value>> {
        if shape.is_empty() {
            let arr = x.as_array().ok_or_else(|| SparseError::Json(format!("`{what}` must be a list")))?;
            return Ok(arr.clone());
        }
        Ok(flatten(x, &shape, what)?.into_iter().cloned().collect())
    };
    let ints = |x: &Value, what: &str| -> Result<Vec<u64>> {
        let arr = leaves(x, what)?;
        arr.iter()
            .enumerate()
            .map(|(i, e)| {
                e.as_u64().ok_or_else(|| SparseError::buffer(what, i, format!("{e} is not a non-negative integer")))
            })
            .collect()
    };
    // A difference level's coordinates (DIA's offsets) may be negative: kept
    // as their 64-bit two's complement (see `Buffers`).
    let signed_ints = |x: &Value, what: &str| -> Result<Vec<u64>> {
        let arr = leaves(x, what)?;
        arr.iter()
            .enumerate()
            .map(|(i, e)| {
                e.as_i64()
                    .map(|v| v as u64)
                    .ok_or_else(|| SparseError::buffer(what, i, format!("{e} is not a 64-bit integer")))
            })
            .collect()
    };
    let per_level = |k: &str| -> Result<Vec<Option<Vec<u64>>>> {
        let arr = field(k)?
            .as_array()
            .ok_or_else(|| SparseError::Json(format!("`{k}` must be a list with one entry per level")))?;
        arr.iter()
            .enumerate()
            .map(|(l, x)| {
                if x.is_null() {
                    Ok(None)
                } else if l < shape.len() {
                    Err(SparseError::buffer(
                        format!("{k}[{l}]"),
                        0,
                        format!("unexpected: level {l} (batch) has no such buffer; give null"),
                    ))
                } else if k == "coordinates" && enc.signed_level(l) {
                    signed_ints(x, &format!("{k}[{l}]")).map(Some)
                } else {
                    ints(x, &format!("{k}[{l}]")).map(Some)
                }
            })
            .collect()
    };
    let items = leaves(field("values")?, "values")?;
    let values = scalars_from_json(items.iter(), dest).map_err(|(i, m)| SparseError::buffer("values", i, m))?;
    let elem = values.elem();
    let b = Buffers { positions: per_level("positions")?, coordinates: per_level("coordinates")?, values };
    let t = assemble(&enc, elem, dim_sizes, b)?;
    if let Some(l) = v.get("lvl_sizes") {
        let given = plain_ints(l, "lvl_sizes")?;
        if given != t.lvl_sizes {
            return Err(SparseError::Json(format!(
                "`lvl_sizes` is {given:?}, but the encoding gives {:?} for these dimensions",
                t.lvl_sizes
            )));
        }
    }
    Ok((t, sliced))
}

/// An encoding without its slices, and the sliced one where it had any.
fn unsliced(enc: Encoding) -> (Encoding, Option<Encoding>) {
    if enc.dims.iter().all(|d| d.slice.is_none()) {
        return (enc, None);
    }
    let mut base = enc.clone();
    for d in &mut base.dims {
        d.slice = None;
    }
    (base, Some(enc))
}

/// A sliced encoding's storage object holds its window: its `dim_sizes`
/// are the slices' sizes.
fn check_window(sliced: Option<&Encoding>, dim_sizes: &[u64]) -> Result<()> {
    let Some(enc) = sliced else { return Ok(()) };
    for (d, (dim, &size)) in enc.dims.iter().zip(dim_sizes).enumerate() {
        if let Some(sl) = dim.slice
            && sl.size != Some(size)
        {
            let want = sl.size.map_or("`?`".to_string(), |s| s.to_string());
            return Err(SparseError::Json(format!(
                "`dim_sizes` gives dimension {d} the size {size}, but the encoding's slice there selects {want}: the storage of a sliced encoding holds its window"
            )));
        }
    }
    Ok(())
}

/// The storage object as written, for [`storage_from_slice`]: buffers as
/// integers, the values as their text.
#[derive(serde::Deserialize)]
struct StorageText<'a> {
    encoding: String,
    dim_sizes: Vec<u64>,
    lvl_sizes: Option<Vec<u64>>,
    positions: Vec<Option<Vec<u64>>>,
    coordinates: Vec<Option<Vec<u64>>>,
    #[serde(borrow)]
    values: &'a serde_json::value::RawValue,
}

/// [`storage_from_json`] straight from the file's bytes, without a JSON
/// tree (a large tensor's values are millions of numbers): the buffers are
/// read as integers and the values scanned from their text, each rounded
/// once to `dest`. `None` when the object is not of that plain form (a wrong
/// type, a stray value, invalid JSON): read it as a tree then, whose errors
/// say exactly what is wrong.
pub fn storage_from_slice(bytes: &[u8], dest: Option<ScalarType>) -> Option<Result<(SparseTensor, Option<Encoding>)>> {
    let s = serde_json::from_slice::<StorageText>(bytes).ok()?;
    let values = scan_values(s.values.get(), dest)?;
    Some(storage_from_text(s, values))
}

fn storage_from_text(s: StorageText, values: ScalarVec) -> Result<(SparseTensor, Option<Encoding>)> {
    let (enc, sliced) = unsliced(parse_encoding(&s.encoding, 0).map_err(SparseError::Encoding)?);
    check_window(sliced.as_ref(), &s.dim_sizes)?;
    let elem = values.elem();
    let t = assemble(&enc, elem, s.dim_sizes, Buffers { positions: s.positions, coordinates: s.coordinates, values })?;
    if let Some(given) = s.lvl_sizes
        && given != t.lvl_sizes
    {
        return Err(SparseError::Json(format!(
            "`lvl_sizes` is {given:?}, but the encoding gives {:?} for these dimensions",
            t.lvl_sizes
        )));
    }
    Ok((t, sliced))
}

/// The values of a JSON list of numbers (and the strings of ±∞ and NaN)
/// from its text, at `dest` or at the type the text says (see
/// [`scalars_from_json`]); `None` for anything else, or a value that does
/// not fit.
fn scan_values(list: &str, dest: Option<ScalarType>) -> Option<ScalarVec> {
    // Complex values are pairs: read through serde_json (`scalars_from_json`).
    if dest.is_some_and(|d| d.is_complex()) {
        return None;
    }
    let inner = list.trim().strip_prefix('[')?.strip_suffix(']')?;
    let tokens: Vec<&str> =
        if inner.trim().is_empty() { Vec::new() } else { inner.split(',').map(str::trim).collect() };
    let dest = dest.unwrap_or_else(|| {
        let ints = tokens.iter().all(|t| !t.starts_with('"') && is_integer_text(t));
        if !ints || tokens.is_empty() {
            ScalarType::F64
        } else if tokens.iter().all(|t| t.parse::<i64>().is_ok()) {
            ScalarType::I64
        } else {
            ScalarType::U64
        }
    });
    let mut out = ScalarVec::with_capacity(dest, tokens.len());
    for t in tokens {
        let n = if let Some(name) = t.strip_prefix('"') {
            Num::Float(number::non_finite_from_str(name.strip_suffix('"')?)?)
        } else if is_integer_text(t) && !dest.is_float() {
            Num::Int(t.parse::<i128>().ok()?)
        } else if dest == ScalarType::F32 {
            Num::Float(f64::from(number::parse_f32(t.as_bytes())?))
        } else {
            Num::Float(number::parse_float(t.as_bytes())?)
        };
        if !out.push_num(n) {
            return None;
        }
    }
    Some(out)
}

/// Nested lists → a dense tensor, values of type `dest` or of the type the
/// text says (see [`scalars_from_json`]); ragged or non-numeric lists are
/// errors naming the element.
pub fn dense_from_json(v: &Value, dest: Option<ScalarType>) -> Result<DenseTensor> {
    let mut dims = Vec::new();
    let mut cur = v;
    while let Value::Array(a) = cur {
        dims.push(a.len() as u64);
        match a.first() {
            Some(x) => cur = x,
            None => break,
        }
    }
    let mut leaves = Vec::new();
    let mut paths = Vec::new();
    fn walk<'a>(
        v: &'a Value,
        dims: &[u64],
        path: &mut Vec<usize>,
        out: &mut Vec<&'a Value>,
        paths: &mut Vec<Vec<usize>>,
    ) -> Result<()> {
        let at = |path: &[usize]| path.iter().map(|i| format!("[{i}]")).collect::<String>();
        match (dims.split_first(), v) {
            (None, Value::Array(a)) => {
                return Err(SparseError::Json(format!(
                    "element {} should be a number, found a list of {}",
                    at(path),
                    a.len()
                )));
            }
            (None, x) => {
                out.push(x);
                paths.push(path.clone());
            }
            (Some((&n, rest)), Value::Array(a)) if a.len() as u64 == n => {
                for (i, x) in a.iter().enumerate() {
                    path.push(i);
                    walk(x, rest, path, out, paths)?;
                    path.pop();
                }
            }
            (Some((&n, _)), x) => {
                let found = x.as_array().map_or_else(|| x.to_string(), |a| format!("a list of {}", a.len()));
                return Err(SparseError::Json(format!("element {} should be a list of {n}, found {found}", at(path))));
            }
        }
        Ok(())
    }
    walk(v, &dims, &mut Vec::new(), &mut leaves, &mut paths)?;
    // Booleans in a list of numbers are 1 and 0 (an all-boolean list is booleans).
    let dest =
        dest.or_else(|| (!leaves.is_empty() && leaves.iter().all(|x| x.is_boolean())).then_some(ScalarType::Bool));
    let values = scalars_from_json(leaves.iter().copied(), dest).map_err(|(k, m)| {
        let at = paths[k].iter().map(|i| format!("[{i}]")).collect::<String>();
        SparseError::Json(format!("element {at}: {m}"))
    })?;
    Ok(DenseTensor { dims, values })
}

/// A dense tensor as nested lists.
pub fn dense_to_json(d: &DenseTensor, elem: ScalarType) -> Value {
    fn build(vals: &ScalarVec, from: usize, dims: &[u64], elem: ScalarType) -> Value {
        match dims.split_first() {
            None => {
                if from < vals.len() {
                    num(vals.num(from), elem)
                } else {
                    Value::Null
                }
            }
            Some((&n, rest)) => {
                let stride: usize = rest.iter().map(|&x| x as usize).product();
                Value::Array((0..n as usize).map(|i| build(vals, from + i * stride, rest, elem)).collect())
            }
        }
    }
    build(&d.values, 0, &d.dims, elem)
}

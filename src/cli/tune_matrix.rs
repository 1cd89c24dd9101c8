//! `heddle tune --matrix NAME=FILE`: one matrix file bound to every variant's
//! tensor parameter `NAME`, stored in that variant's own encoding (as `heddle
//! run --matrix` stores it), before anything is timed.
//!
//! A variant whose encoding does not suit the matrix is skipped with the
//! reason, never allocated: its storage is estimated first
//! ([`heddle_runtime::sparse::estimate`]) and refused beyond
//! [`SIZE_LIMIT`] times the matrix's plain CSR bytes (DIA over many
//! diagonals, ELL with many slices, BSR over scattered entries); a matrix
//! the encoding cannot hold (a dimension not a multiple of a block size, an
//! ELL row longer than its slices, a coordinate past a 16-bit `crdWidth`)
//! skips the variant with the reason.

use super::Failure;
use heddle_ir::ScalarType;
use heddle_runtime::io::Loaded;
use heddle_runtime::io::read::ScalarKind;
use heddle_runtime::sparse::coo::Coo;
use heddle_runtime::sparse::estimate;
use heddle_runtime::sparse::file::{Contents, read_tensor};
use heddle_runtime::value::Value;
use heddle_typeck::{Kernel, KernelParam};
use std::collections::HashMap;
use std::path::Path;

/// A size the estimate counted with saturating arithmetic, as text: `u64::MAX`
/// stands for any count past it (a dimension of 2^64 - 1 in a file's size line).
pub fn at_least(n: u64) -> String {
    if n == u64::MAX { "more than 2^64 - 1".to_string() } else { n.to_string() }
}

/// A variant's storage may take at most this many times the bytes of the
/// matrix as plain CSR (64-bit positions and coordinates, the variant's values).
pub const SIZE_LIMIT: u64 = 3;

/// One case's inputs for one variant, or why the variant is skipped on it.
pub struct Bound {
    pub inputs: Vec<(String, Loaded)>,
    /// The tensors' dimension naturals (`A_dim0`, …).
    pub nats: Vec<(String, i64)>,
    /// Why the variant does not run on this case (its storage would be too
    /// large, or the matrix does not fit the encoding).
    pub skipped: Option<String>,
}

/// Groups `--matrix` flags into cases: a case takes flags until a name
/// repeats (`--matrix A=m1.mtx --matrix A=m2.mtx` is two cases; `--matrix
/// A=a.mtx --matrix B=b.mtx` one case of two tensors).
pub fn cases(matrices: &[(String, String)]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = Vec::new();
    for (name, path) in matrices {
        match out.last_mut() {
            Some(case) if !case.iter().any(|(n, _)| n == name) => case.push((name.clone(), path.clone())),
            _ => out.push(vec![(name.clone(), path.clone())]),
        }
    }
    out
}

/// The name a case is reported by: its first matrix file's stem.
pub fn case_name(case: &[(String, String)]) -> String {
    let path = case.first().map_or("matrix", |(_, p)| p.as_str());
    Path::new(path).file_stem().and_then(|s| s.to_str()).unwrap_or(path).to_string()
}

/// Files read once per value type, shared by the variants.
#[derive(Default)]
pub struct Reader {
    files: HashMap<(String, ScalarType), (Contents, Coo)>,
}

impl Reader {
    /// The file at `path` read with values of type `elem` (once), and its entries.
    pub fn get(&mut self, path: &str, elem: ScalarType) -> Result<&(Contents, Coo), Failure> {
        let key = (path.to_string(), elem);
        if !self.files.contains_key(&key) {
            let contents =
                read_tensor(Path::new(path), elem).map_err(|e| Failure::Input(format!("--matrix {path}: {e}")))?;
            let coo = match &contents {
                Contents::Entries(c, _) | Contents::Pattern(c, _) => c.clone(),
                Contents::Columns(c, _) => c.clone().into_coo(),
                Contents::Stored(t) | Contents::Scipy(t) | Contents::Window(t, _) => t.to_coo(),
            };
            self.files.insert(key.clone(), (contents, coo));
        }
        Ok(&self.files[&key])
    }
}

fn copy(c: &Contents) -> Contents {
    match c {
        Contents::Entries(coo, e) => Contents::Entries(coo.clone(), *e),
        Contents::Pattern(coo, e) => Contents::Pattern(coo.clone(), *e),
        Contents::Columns(cols, e) => Contents::Columns(cols.clone(), *e),
        Contents::Stored(t) => Contents::Stored(t.clone()),
        Contents::Scipy(t) => Contents::Scipy(t.clone()),
        Contents::Window(t, e) => Contents::Window(t.clone(), e.clone()),
    }
}

/// The structural inspector's first ranked format the front door takes (an
/// encoding, or a SELL form such as `SELL(8, crdWidth = 16)`) for a case's first matrix (what `--encoding
/// A=auto` would try first), with
/// its reason: printed beside the measured best as a calibration check.
pub fn inspector_pick(
    kernel: &Kernel,
    case: &[(String, String)],
    reader: &mut Reader,
) -> Result<Option<(String, String)>, Failure> {
    let Some((name, path)) = case.first() else { return Ok(None) };
    let Ok((_, elem)) = heddle_runtime::io::bind::tensor_param(kernel, name) else { return Ok(None) };
    let (_, coo) = reader.get(path, elem)?;
    if coo.rank() != 2 {
        return Ok(None);
    }
    let (_, ranking) = super::auto::inspect_ranked(coo, elem, path)?;
    Ok(ranking.candidates.into_iter().find(|c| c.encoding.is_some()).map(|c| (c.name, c.reason)))
}

/// Binds a case's matrices to `kernel`'s tensor parameters, each stored in
/// the parameter's encoding; the vector `xs` (or `x`), unless `shared` (the
/// `--input` files) gives it, is generated with the last matrix
/// dimension's length, of small exact values so that float sums depend
/// little on their order.
pub fn bind(
    kernel: &Kernel,
    case: &[(String, String)],
    shared: &[(String, Loaded)],
    reader: &mut Reader,
) -> Result<Bound, Failure> {
    let mut bound = Bound { inputs: Vec::new(), nats: Vec::new(), skipped: None };
    let mut cols = 0u64;
    for (name, path) in case {
        let (encoding, elem) = heddle_runtime::io::bind::tensor_param(kernel, name)?;
        let (contents, coo) = reader.get(path, elem)?;
        cols = coo.dims.last().copied().unwrap_or(0);
        // A matrix whose shape the encoding cannot hold (a dimension that is
        // not a multiple of a block size, another rank) rules out this
        // variant on this case, not the whole search.
        let size = match estimate::storage_size(coo, encoding, elem) {
            Ok(size) => size,
            Err(e) => {
                bound.skipped = Some(format!("skipped: `{name}` does not fit this encoding: {e}"));
                return Ok(bound);
            }
        };
        let plain = estimate::plain_size(coo, elem);
        if size.bytes > SIZE_LIMIT.saturating_mul(plain) {
            bound.skipped = Some(format!(
                "skipped: `{name}` in this encoding would take {} bytes ({} stored values for {} entries), over {SIZE_LIMIT}x its {} bytes as CSR",
                at_least(size.bytes),
                at_least(size.values),
                coo.len(),
                plain
            ));
            return Ok(bound);
        }
        let stored = match copy(contents).into_encoding(encoding) {
            Ok(t) => t,
            Err(e) => {
                bound.skipped = Some(format!("skipped: `{name}` does not fit this encoding: {e}"));
                return Ok(bound);
            }
        };
        let (dims, buffers) = heddle_runtime::io::bind::stored_tensor_inputs(kernel, name, stored)?;
        bound.nats.extend(dims);
        bound.inputs.extend(buffers);
    }
    bound.inputs.extend(shared.iter().filter(|(k, _)| kernel.params.iter().any(|p| p.name().as_str() == k)).cloned());
    for p in &kernel.params {
        let KernelParam::Value { name, .. } = p else { continue };
        let generated = matches!(name.as_str(), "xs" | "x") && !bound.inputs.iter().any(|(k, _)| k == name.as_str());
        if generated {
            let items: Vec<Value> = (0..cols).map(|j| Value::Float(1.0 + (j % 5) as f64 * 0.25)).collect();
            let loaded = Loaded::Flat {
                shape: vec![items.len() as u64],
                items,
                dtype: "float64".into(),
                kinds: vec![ScalarKind::Float],
            };
            bound.inputs.push((name.to_string(), loaded));
        }
    }
    Ok(bound)
}

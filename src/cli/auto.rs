//! `--encoding NAME=auto`: the storage format of a matrix operand chosen by
//! the structural inspector ([`heddle_runtime::sparse::inspect`]) from the
//! matrix file bound to it, without timing (as MKL's `mkl_sparse_optimize`
//! chooses). The inspector ranks formats; the choice is the first ranked
//! one the front door ([`super::sparsify::front_door`]) accepts for this
//! kernel, so a format the front door learns is picked without a change
//! here. `heddle run` and the spmv_peers bench (its "heddle auto" rows) go
//! through [`sparsify_auto`].

use super::Failure;
use super::sparsify::{Spec, front_door, parse_spec};
use heddle::source::SourceFile;
use heddle_ir::{Program, ScalarType, Type};
use heddle_runtime::sparse::coo::Coo;
use heddle_runtime::sparse::file::{Contents, read_tensor};
use heddle_runtime::sparse::inspect::{self, Inspection, Ranking};
use heddle_typeck::Kernel;
use serde::Serialize;
use std::path::Path;

/// The `--encoding` value that asks for the inspector's choice.
pub const AUTO: &str = "auto";

/// Is this `--encoding` value `auto`?
pub fn is_auto(enc: &str) -> bool {
    enc.trim() == AUTO
}

/// A ranked format the choice passed over, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    /// The format's name.
    pub encoding: String,
    /// Why: no encoding expresses it, or the front door's refusal.
    pub reason: String,
}

/// What `auto` chose for one operand.
#[derive(Clone, Debug, Serialize)]
pub struct Choice {
    /// The operand.
    #[serde(skip)]
    pub operand: String,
    /// The chosen format's name (`DIA`, `BSR(1, 8)`, `BSR(8, 1)`, `SELL-8c16`, `SELL-8`, `CSR32`, `CSR`).
    pub encoding: String,
    /// The `--encoding` text it stands for.
    pub encoding_text: String,
    /// The inspector's reason for it.
    pub reason: String,
    /// Formats ranked above it that were passed over.
    pub skipped: Vec<Skipped>,
    /// The matrix's statistics.
    pub inspection: Inspection,
}

impl Choice {
    /// The one stderr line: `auto: DIA for matrix (…); skipped …`.
    pub fn line(&self) -> String {
        let mut line = format!("auto: {} for {} ({})", self.encoding, self.operand, self.reason);
        if !self.skipped.is_empty() {
            let skipped: Vec<String> = self.skipped.iter().map(|s| format!("{} ({})", s.encoding, s.reason)).collect();
            line += &format!("; skipped {}", skipped.join(", "));
        }
        line
    }
}

/// What [`sparsify_auto`] produced.
pub struct Picked {
    /// The sparse program's text (as the front door names it).
    pub file: SourceFile,
    /// The checked sparse kernel.
    pub kernel: Kernel,
    /// The chosen encoding, resolved: the spec the front door took.
    pub spec: Spec,
    /// What was chosen and why.
    pub choice: Choice,
}

/// The element type of the kernel's dense matrix parameter `operand`
/// (`[[float]_m]_n` gives f32), or a usage error when it is not one.
pub fn matrix_elem(program: &Program, operand: &str) -> Result<ScalarType, Failure> {
    let not = |what: &str| {
        Failure::usage(
            "--encoding",
            format!(
                "--encoding {operand}=auto: {what}; auto chooses the storage of a kernel parameter of type [[T]_m]_n"
            ),
        )
    };
    let Some(p) = super::sparsify::kernel_param(program, operand) else {
        return Err(not(&format!("the kernel has no parameter `{operand}`")));
    };
    match p.ty.as_ref() {
        Some(Type::Array { elem, .. }) => match elem.as_ref() {
            Type::Array { elem, .. } => match elem.as_ref() {
                Type::Scalar(s) => Ok(*s),
                _ => Err(not(&format!("`{operand}` is not a matrix of scalars"))),
            },
            _ => Err(not(&format!("`{operand}` is not a matrix (it has one array level)"))),
        },
        _ => Err(not(&format!("`{operand}` is not an array parameter"))),
    }
}

/// Reads a matrix file (values at `elem`) once: the inspector reads its
/// entries ([`entries_of`]), then it is stored in the chosen encoding
/// (`Contents::into_encoding`, as `--matrix` stores a file).
pub fn read_matrix(path: &str, elem: ScalarType, flag: &str) -> Result<Contents, Failure> {
    read_tensor(Path::new(path), elem).map_err(|e| Failure::Input(format!("{flag}{path}: {e}")))
}

/// A file's entries, borrowed where the file held them as a list.
pub fn entries_of(c: &Contents) -> std::borrow::Cow<'_, Coo> {
    match c {
        Contents::Entries(coo, _) | Contents::Pattern(coo, _) => std::borrow::Cow::Borrowed(coo),
        Contents::Columns(cols, _) => std::borrow::Cow::Owned(cols.clone().into_coo()),
        Contents::Stored(t) | Contents::Scipy(t) | Contents::Window(t, _) => std::borrow::Cow::Owned(t.to_coo()),
    }
}

/// The statistics and ranking of a matrix, or an input error (not a matrix).
pub fn inspect_ranked(coo: &Coo, elem: ScalarType, what: &str) -> Result<(Inspection, Ranking), Failure> {
    let s = inspect::inspect(coo).map_err(|e| Failure::Input(format!("{what}: {e}")))?;
    let r = inspect::rank(&s, elem);
    Ok((s, r))
}

/// Chooses `operand`'s encoding for the matrix `coo` and sparsifies the
/// kernel for it, together with the other operands' `specs` (already
/// chosen): the first format of the inspector's ranking that the front
/// door accepts and `backend` can compile (`backend` returns why not, e.g.
/// a lowering refusal).
pub fn sparsify_auto(
    file: &SourceFile,
    program: &Program,
    operand: &str,
    coo: &Coo,
    specs: &[Spec],
    backend: &dyn Fn(&Kernel) -> Result<(), String>,
) -> Result<Picked, Failure> {
    let elem = matrix_elem(program, operand)?;
    let (inspection, ranking) = inspect_ranked(coo, elem, &format!("--matrix {operand}"))?;
    let mut skipped = Vec::new();
    let mut last = None;
    // The first format the front door accepted but the backend refused: if
    // every format is refused so, it runs, and the backend's located error
    // says why, as it would for that encoding given by name.
    let mut refused_by_backend = None;
    for c in &ranking.candidates {
        let Some(text) = &c.encoding else {
            skipped.push(Skipped { encoding: c.name.clone(), reason: "no storage encoding expresses it yet".into() });
            continue;
        };
        let spec = parse_spec(&(operand.to_string(), text.clone()), None, program)?;
        let mut all = specs.to_vec();
        all.push(spec.clone());
        match front_door(file, program, &all) {
            Ok(sparse) => {
                let refusal = backend(&sparse.kernel).err();
                let choice = Choice {
                    operand: operand.to_string(),
                    encoding: c.name.clone(),
                    encoding_text: text.clone(),
                    reason: c.reason.clone(),
                    skipped: skipped.clone(),
                    inspection: inspection.clone(),
                };
                let picked = Picked { file: sparse.file, kernel: sparse.kernel, spec, choice };
                match refusal {
                    None => {
                        let mut picked = picked;
                        picked.choice.skipped = skipped;
                        return Ok(picked);
                    }
                    Some(why) => {
                        skipped.push(Skipped { encoding: c.name.clone(), reason: why });
                        refused_by_backend.get_or_insert(picked);
                    }
                }
            }
            Err(f) => {
                skipped.push(Skipped { encoding: c.name.clone(), reason: format!("the front door: {}", f.message()) });
                last = Some(f);
            }
        }
    }
    if let Some(mut picked) = refused_by_backend {
        picked.choice.skipped = skipped;
        return Ok(picked);
    }
    // CSR is always ranked: the front door refusing it refuses the kernel itself; say why.
    Err(last.unwrap_or_else(|| Failure::Input(format!("--encoding {operand}=auto: no format to choose"))))
}

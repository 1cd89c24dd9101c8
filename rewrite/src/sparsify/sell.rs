//! SELL-C-σ for the front door: `--encoding A=SELL(C)`, `SELL(C, sigma = S)`.
//!
//! SELL-C (Kreutzer et al., SIAM J. Sci. Comput. 2014; σ = 1, rows not
//! sorted) is heddle's own layout, not an MLIR encoding: its storage is
//! three ordinary arrays (`heddle_runtime::sparse::sell`), position-dependent
//! types making it an ordinary heddle type (`examples/sparse/spmv_sell8.hdl`):
//!
//! ```text
//! A_soff: [int]_{A_slices + 1}                                          slice s spans steps soff@s .. soff@(s + 1)
//! A_cols: [s -> [[int]_C]_{toNat(A_soff@(s + 1) - A_soff@s)}]_A_slices  A_cols@s@k@l: column of step k of lane l
//!                                                                       ([[u16]_C] with `crdWidth = 16`)
//! A_vals: [s -> [[T]_C]_{toNat(A_soff@(s + 1) - A_soff@s)}]_A_slices    its value (padding: 0 at a valid column)
//! ```
//!
//! Row `s·C + l` of the matrix is lane `l` of slice `s`; rows past the
//! matrix's last pad the last slice and are all padding.
//!
//! The columns are 32-bit (`int`) by default; `SELL(C, crdWidth = 16)`
//! ([`SellSpec::crd_width`], spelt as MLIR's encodings spell a coordinate
//! width) stores them as `u16`, for matrices of at most 65 536 columns: an
//! SpMV streams a value and a column per stored entry, so at f64 that is 10
//! bytes instead of 12, at f32 6 instead of 8. Nothing else changes; the
//! kernel widens each column as it loads it.
//!
//! [`sparsify_sell`] rewrites the dense kernel in three steps:
//!
//! 1. **Structure**: the operand parameter becomes the three arrays (its
//!    size naturals `A_dim0`, `A_dim1`, plus `A_slices`; `A_dim0` stays a
//!    parameter only where the kernel uses it beyond the operand's type:
//!    nothing in the arrays gives it), and the row map
//!    `A :>> map(fun(row => body))` becomes the map over slices, each a
//!    `generate(C, fun(l => …))` of its lanes, `join`ed; lane `l`'s row is
//!    `densify` of its `(column, value)` pairs over the slice's steps. A
//!    padding pair is value 0 at a valid column: adding it adds 0, so the
//!    pairs stand for the row as CSR's entries do.
//! 2. **The laws** (`laws.rules`), as for CSR: a row's dot product with a
//!    dense vector becomes the sum over its pairs of `value * x@column`.
//! 3. **The lane interchange**: per slice, `generate(C, fun(l => steps :>>
//!    map(pair of lane l) :>> map(f) :>> reduce(+, 0)))` (per lane, the sum
//!    over the steps) becomes `steps :>> map(fun(k => generate(C, fun(l =>
//!    f(pair of lane l at k))))) :>> reduce(rowsum, generate(C, fun(l =>
//!    0)))` (per step, the C lanes' terms as a row; the rows summed lane by
//!    lane from a row of zeros), the shape the CPU backend runs in vector
//!    lanes. It regroups each lane's sum (one lane's terms are still added in
//!    step order, but from a row of zeros reduced with `rowsum`); LANGUAGE.md
//!    §5 allows it for `reduce`, and only `reduce(+, 0)` is rewritten (the
//!    laws keep a `reduceSeq`'s row dense, which is then refused).
//!
//! The result has `C · A_slices` elements: `y`, then 0 for each padding row
//! up to a whole slice. `heddle run` gives the first `A_dim0` (`y`).
//!
//! **σ > 1** (`SELL(C, sigma = S)`, Kreutzer et al.'s SELL-C-σ): the kernel
//! is the same; the packer (`heddle_runtime::sparse::sell::from_csr`) sorts
//! the rows by length, longest first, within windows of σ rows before
//! slicing them, so that a slice's rows have nearly one length and pad
//! little (on a power-law matrix SELL-8 with σ = 1 pads to several times
//! CSR's entries). The result is then in *sliced order*: position `s·C + l`
//! holds the row in lane `l` of slice `s`, and `heddle run` puts it back in
//! row order with the packer's permutation after the kernel
//! (`Sell::unpermute_into`, timed with it under `--reps`). Only a kernel
//! whose result is the row map itself may be run so (see
//! [`results_in_sliced_order`]); σ is 1 or a multiple of C, so windows hold
//! whole slices.
//!
//! **Iso-valued SELL** (`SELL(C, explicitVal = V)`): every entry holds `V`
//! (a graph's ones), so no values are stored and a slot is 4 bytes of
//! column (2 with `crdWidth = 16`), not 12 (f64) or 8 (f32). Padding can no
//! longer be a stored 0, so each lane masks it: the arrays are
//!
//! ```text
//! A_soff, A_cols                                              as above
//! A_step: [s -> [int]_{toNat(A_soff@(s + 1) - A_soff@s)}]_A_slices   each step's index in its slice
//! A_len:  [[int]_C]_A_slices                                        each lane's row length
//! ```
//!
//! and lane `l`'s pairs are `(k.1@l, (V : T))` over `zip(sl.1.1, sl.1.2)` —
//! the constant, as an iso tensor's view has it (`storage_types::iso_value`
//! decides whether `V` holds at `T`, by the literal's CSR encoding). After
//! the laws the interchange wraps each lane's term as `let t = term in
//! select(k.2 < sl.2@l, t, 0)`: a padding step (at or past the lane's
//! length) adds 0. The term is bound first because a `select` evaluates
//! only its branch, and a load inside one becomes a branch around it per
//! lane; bound outside, the load runs (its padding column is valid: the
//! row's last, or 0) and the select is a compare and a choice. The mask
//! could also be a per-step count of full lanes (`l < cnt@k`, no lengths),
//! but that needs the lanes sorted by length within every slice, which σ = 1
//! does not give; measured on rmat it was no faster (docs/performance.md,
//! "Iso-valued SELL-8-σ"). A zero in an `x` padding column would need a copy
//! of x per launch.
//!
//! Refused, each located: an operand that is not a matrix of scalars, a
//! use of it other than as the rows of a map, a row used other than in a
//! `reduce(+, 0)` of products with a dense vector (the lane form needs the
//! row's sum), and a kernel already using one of the new names.

use super::exprs::{call, fun, generate_of, is_zero, lambda1, mentions, pipe, project_tuples, stage};
use super::view::{chain, dense_shape, map_children, marker, names, refuse, row_lambda};
use super::{Sparsified, apply_laws};
use heddle_ir::encoding::Encoding;
use heddle_ir::encoding::storage_types::{IsoValue, iso_value};
use heddle_ir::expr::{ExprKind, Param, SectionOp};
use heddle_ir::{Diagnostic, Expr, Name, Nat, Program, ScalarType, Span, Type};
use std::collections::BTreeSet;

/// The most lanes a slice may have: C sums live in registers per slice
/// (the CPU backend keeps a row of up to 64 bytes there), and a wider slice
/// only pads more.
pub const MAX_LANES: u64 = 64;

/// The largest sorting window `sigma = S` takes: rows are sorted within
/// windows of σ, and a window larger than any matrix's rows sorts the whole
/// matrix (2^31, the rows 32-bit slice offsets can address at most).
pub const MAX_SIGMA: u64 = 1 << 31;

/// How a SELL operand is stored: `SELL(C)`, with the fields `crdWidth = W`,
/// `sigma = S` and `explicitVal = V` in any order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SellSpec {
    /// Rows per slice, 1 to [`MAX_LANES`].
    pub lanes: u64,
    /// Bits of a column coordinate: 32 (`int`, the default) or 16 (`u16`).
    pub crd_width: u32,
    /// SELL-C-σ's sorting window in rows: 1 (the default: rows in their
    /// order) or a multiple of `lanes` up to [`MAX_SIGMA`]. With σ > 1 the
    /// rows are sorted by length, longest first, within windows of σ rows,
    /// and the kernel's result is in that *sliced order*; the permutation
    /// that puts it back is the packer's (`heddle run` applies it).
    pub sigma: u64,
    /// `explicitVal = V` (MLIR's field, as a tensor encoding spells it):
    /// every entry holds `V`, so no values are stored and each lane reads
    /// the constant, its padding masked by the lane's length (see the
    /// module documentation, "Iso-valued SELL").
    pub explicit_val: Option<heddle_ir::encoding::Literal>,
}

impl SellSpec {
    /// `SELL(C)`: 32-bit columns, σ = 1, values stored.
    pub fn new(lanes: u64) -> SellSpec {
        SellSpec { lanes, crd_width: 32, sigma: 1, explicit_val: None }
    }

    /// The constant every entry holds at element type `elem`, when the spec
    /// says `explicitVal = V`: `Ok(None)` without it, an error saying why
    /// when `V` does not hold exactly at `elem` (NaN, `2.5` for `int`,
    /// `0.1` for `f32`) — the rules of an iso-valued tensor encoding
    /// (`storage_types::iso_value`), applied to the literal as CSR's would be.
    pub fn iso_value(&self, elem: ScalarType) -> Result<Option<IsoValue>, String> {
        let Some(lit) = &self.explicit_val else { return Ok(None) };
        let csr = Encoding {
            explicit_val: Some(lit.clone()),
            ..heddle_ir::encoding::named::resolve("CSR", 0, Some(2)).map_err(|d| d.message)?
        };
        iso_value(&csr, elem).map(Some).ok_or_else(|| {
            format!(
                "`explicitVal = {}` is no value of the matrix's element type {elem} (exactly, and not NaN)",
                lit.text
            )
        })
    }

    /// The heddle scalar type of a column: `int` or `u16`.
    pub fn column_type(&self) -> &'static str {
        if self.crd_width == 16 { "u16" } else { "int" }
    }
}

impl std::fmt::Display for SellSpec {
    /// The text `--encoding A=…` takes for it (`SELL(8)`, `SELL(8, crdWidth = 16)`,
    /// `SELL(8, sigma = 4096)`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SELL({}", self.lanes)?;
        if self.crd_width != 32 {
            write!(f, ", crdWidth = {}", self.crd_width)?;
        }
        if self.sigma != 1 {
            write!(f, ", sigma = {}", self.sigma)?;
        }
        if let Some(v) = &self.explicit_val {
            write!(f, ", explicitVal = {}", v.text)?;
            if let Some(t) = &v.ty {
                write!(f, " : {t}")?;
            }
        }
        write!(f, ")")
    }
}

/// The names that stand for operand `A` stored as SELL-C: its three arrays
/// and its three naturals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SellNames {
    /// `A_soff`: the slices' offsets in steps.
    pub soff: String,
    /// `A_cols`: the columns, per slice, per step, per lane.
    pub cols: String,
    /// `A_vals`: the values, laid out as the columns (none when iso-valued).
    pub vals: String,
    /// `A_step`: iso-valued only, each step's index within its slice.
    pub step: String,
    /// `A_len`: iso-valued only, each slice's lanes' row lengths.
    pub len: String,
    /// `A_slices`: the number of slices.
    pub slices: String,
    /// `A_dim0`: the matrix's rows (a literal row count stays a literal).
    pub rows: String,
    /// `A_dim1`: the matrix's columns (likewise).
    pub cols_dim: String,
}

impl SellNames {
    /// The names for operand `operand`.
    pub fn of(operand: &str) -> SellNames {
        SellNames {
            soff: format!("{operand}_soff"),
            cols: format!("{operand}_cols"),
            vals: format!("{operand}_vals"),
            step: format!("{operand}_step"),
            len: format!("{operand}_len"),
            slices: format!("{operand}_slices"),
            rows: format!("{operand}_dim0"),
            cols_dim: format!("{operand}_dim1"),
        }
    }
}

/// Rewrites the dense kernel of `program` so that parameter `operand` is
/// stored as SELL-C with `spec.lanes` lanes and `spec.crd_width`-bit
/// columns (see the module documentation).
///
/// Errors are located in `program`'s source: the operand's parameter, the
/// use the front door cannot handle, or the row no law sparsifies.
pub fn sparsify_sell(program: &Program, operand: &str, spec: &SellSpec) -> Result<Sparsified, Diagnostic> {
    let c = spec.lanes;
    let kernel = &program.kernel;
    let ch = chain(kernel);
    let param = ch.param(kernel, operand)?;
    if c == 0 || c > MAX_LANES {
        return Err(refuse(
            param.span,
            format!("SELL({c}): a slice has 1 to {MAX_LANES} rows"),
            "write SELL(C) with C rows per slice, e.g. SELL(8)",
        ));
    }
    if ![16, 32].contains(&spec.crd_width) {
        return Err(refuse(
            param.span,
            format!("SELL({c}, crdWidth = {}): columns are 16 or 32 bits", spec.crd_width),
            "write SELL(C) for 32-bit columns or SELL(C, crdWidth = 16)",
        ));
    }
    if spec.sigma != 1 && (spec.sigma == 0 || spec.sigma > MAX_SIGMA || !spec.sigma.is_multiple_of(c)) {
        return Err(refuse(
            param.span,
            format!("{spec}: σ is 1 or a multiple of C = {c} up to {MAX_SIGMA}"),
            "write SELL(C, sigma = S) with S a multiple of C, e.g. SELL(8, sigma = 4096)",
        ));
    }
    if spec.sigma > 1 {
        results_in_sliced_order(kernel, operand, spec)?;
    }
    let ty = param.ty.as_ref().map(heddle_ir::printer::print_type).unwrap_or_default();
    let (lens, scalar) = match param.ty.as_ref().and_then(dense_shape) {
        Some((lens, scalar)) if lens.len() == 2 => (lens, scalar),
        _ => {
            return Err(refuse(
                param.span,
                format!("SELL({c}) stores a matrix, and `{operand}` has type {ty}"),
                "the front door stores a parameter written as a dense matrix such as `[[float]_m]_n` as SELL",
            ));
        }
    };
    let new = SellNames::of(operand);
    let mut used = BTreeSet::new();
    names(kernel, &mut used);
    for p in &program.defs {
        used.insert(p.name.to_string());
    }
    for taken in [&new.soff, &new.cols, &new.vals, &new.slices] {
        if used.contains(taken.as_str()) {
            return Err(refuse(
                param.span,
                format!("SELL({c}) stores `{operand}` as `{taken}` and others, but the kernel already uses `{taken}`"),
                "rename the kernel's own name",
            ));
        }
    }
    // The matrix's sizes: a nat parameter of the kernel becomes `A_dim0` /
    // `A_dim1`, a literal stays. The rows' binder is dropped where only the
    // operand's type used it (`rebuild`); where the kernel uses it elsewhere
    // it stays, and the caller supplies it (nothing the arrays hold gives it).
    let mut renames: Vec<(Name, Name)> = Vec::new();
    for (k, len) in lens.iter().enumerate() {
        if len.as_lit().is_some_and(|v| v >= 0) {
            continue;
        }
        match len {
            Nat::Var(v) if ch.nats.iter().any(|(n, _)| *n == v) => {
                let to = Name::from(if k == 0 { new.rows.as_str() } else { new.cols_dim.as_str() });
                if !renames.iter().any(|(n, _)| n == v) {
                    if *v != to && used.contains(to.as_str()) {
                        return Err(refuse(
                            param.span,
                            format!(
                                "SELL({c}) names `{operand}`'s dimension {k} `{to}`, but the kernel already uses `{to}`"
                            ),
                            "rename the kernel's own name",
                        ));
                    }
                    renames.push((v.clone(), to));
                }
            }
            _ => {
                return Err(refuse(
                    param.span,
                    format!(
                        "dimension {k} of `{operand}` has length {}, neither a kernel's nat parameter nor a literal",
                        heddle_ir::printer::print_nat(len)
                    ),
                    "write the dense operand's lengths as nFun parameters or numbers",
                ));
            }
        }
    }
    let iso = spec
        .iso_value(scalar)
        .map_err(|m| refuse(param.span, format!("{spec}: {m}"), "write the value as the element type holds it"))?
        .map(|v| v.expr(scalar));
    let mut fresh = Fresh { used };
    let mut rows = Vec::new();
    let mut lanes = Vec::new();
    let ctx = Ctx {
        a: Name::from(operand),
        c,
        new: &new,
        scalar_ty: heddle_ir::printer::print_type(&Type::Scalar(scalar)),
        column_ty: spec.column_type(),
        iso,
    };
    let rebuilt = rebuild(kernel, &ctx, &renames, &mut fresh, &mut rows, &mut lanes)?;
    let (swept, rules_applied) = apply_laws(&rebuilt, &rows, param.span, operand)?;
    let mut done = BTreeSet::new();
    let kernel = interchange(&swept, &lanes, &mut fresh, &mut done)?;
    if let Some(Lane { at, .. }) = lanes.iter().find(|lane| !done.contains(&lane.l)) {
        return Err(Diagnostic::new(*at, format!("SELL({c}): a row of `{operand}` is not summed")).with_label("this row").with_note(
            "the SELL form runs each slice's rows in lanes, each the sum `reduce(+, 0)` of the row's products with a dense vector; this row's sum is used in another way (or it is not summed)",
        ));
    }
    Ok(Sparsified { program: Program { kernel, ..program.clone() }, rules_applied })
}

/// With σ > 1 the rows run sorted by length within windows of σ rows, so
/// the row map's result comes out in *sliced order* and is put back in row
/// order after the kernel (`heddle run` applies the packer's permutation).
/// That is sound only where the row map's result is the kernel's result
/// itself: anything combining it inside the kernel with an array in row
/// order (`zip` with a dense vector, an index) would pair the wrong rows.
/// Refused, located at the kernel's body, otherwise.
fn results_in_sliced_order(kernel: &Expr, operand: &str, spec: &SellSpec) -> Result<(), Diagnostic> {
    let mut body = kernel;
    loop {
        match &body.kind {
            ExprKind::NFun { body: b, .. } => body = b,
            ExprKind::Fun { params, body: b } if params.iter().all(|p| p.ty.is_some()) => body = b,
            _ => break,
        }
    }
    let is_a = |x: &Expr| matches!(&x.kind, ExprKind::Var(v) if v.as_str() == operand);
    let is_map = |x: &Expr| matches!(&x.kind, ExprKind::Var(v) if v.as_str() == "map");
    let row_map = match &body.kind {
        ExprKind::Pipe { arg, func } if is_a(arg) => matches!(
            &func.kind,
            ExprKind::App { func: m, args } if is_map(m) && args.len() == 1 && row_lambda(&args[0]).is_some()
        ),
        ExprKind::App { func: m, args } => {
            is_map(m) && args.len() == 2 && is_a(&args[1]) && row_lambda(&args[0]).is_some()
        }
        _ => false,
    };
    if row_map {
        return Ok(());
    }
    Err(Diagnostic::new(body.span, format!("{spec} computes `{operand}`'s rows sorted by length, and this kernel's result is not its row map"))
        .with_label("the kernel's result")
        .with_note(format!(
            "with σ > 1 the rows' results come out in sorted order and are put back in row order after the kernel, so the kernel must be `{operand} :>> map(fun(row => …))` itself, nothing combining its rows' results with arrays in row order"
        )))
}

/// Names not bound or used anywhere in the kernel.
struct Fresh {
    used: BTreeSet<String>,
}

impl Fresh {
    fn name(&mut self, base: &str) -> Name {
        let mut n = base.to_string();
        let mut k = 1;
        while self.used.contains(&n) {
            n = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(n.clone());
        Name::from(n)
    }
}

/// What the structural step needs to know.
struct Ctx<'a> {
    a: Name,
    c: u64,
    new: &'a SellNames,
    scalar_ty: String,
    /// `int` or `u16` ([`SellSpec::column_type`]).
    column_ty: &'static str,
    /// Iso-valued (`explicitVal`): the constant `(v : T)` every entry holds.
    iso: Option<Expr>,
}

/// A lane the structural step made, for the interchange: its binder `l`,
/// the row it stands for, and with iso values the slice's binder `sl`
/// (`sl.2@l` is the lane's length, which masks its padding).
struct Lane {
    l: Name,
    at: Span,
    slice: Option<Name>,
}

fn parsed(text: &str, at: Span) -> Result<Expr, Diagnostic> {
    heddle_ir::parser::parse_expr(text)
        .map_err(|d| Diagnostic::new(at, format!("internal: the front door built `{text}`: {}", d.message)))
}

fn parsed_type(text: &str, at: Span) -> Result<Type, Diagnostic> {
    heddle_ir::parser::parse_type(text)
        .map_err(|d| Diagnostic::new(at, format!("internal: the front door built the type `{text}`: {}", d.message)))
}

/// Rebuilds the parameter chain (the operand's size binders renamed, the
/// operand replaced by the three arrays under a new `nFun` for the slice
/// count) and rewrites the body's uses of the operand.
fn rebuild(
    e: &Expr,
    ctx: &Ctx,
    renames: &[(Name, Name)],
    fresh: &mut Fresh,
    rows: &mut Vec<Span>,
    lanes: &mut Vec<Lane>,
) -> Result<Expr, Diagnostic> {
    match &e.kind {
        ExprKind::NFun { var, body } => {
            let (var, body) = match renames.iter().find(|(n, _)| n == var) {
                Some((_, to)) if to != var => {
                    (to.clone(), body.subst(var, &Expr::synth(ExprKind::NatValue(Nat::Var(to.clone())))))
                }
                _ => (var.clone(), (**body).clone()),
            };
            let body = rebuild(&body, ctx, renames, fresh, rows, lanes)?;
            // The row count, once only the operand's type used it, is no parameter of the sparse kernel.
            let rows_only = renames.first().is_some_and(|(_, to)| *to == var && var.as_str() == ctx.new.rows);
            if rows_only && !body.mentions(&var) {
                return Ok(body);
            }
            Ok(Expr::new(ExprKind::NFun { var, body: Box::new(body) }, e.span))
        }
        ExprKind::Fun { params, body } if params.iter().all(|p| p.ty.is_some()) => {
            let body = rebuild(body, ctx, renames, fresh, rows, lanes)?;
            let Some(at) = params.iter().position(|p| p.name == ctx.a) else {
                return Ok(Expr::new(ExprKind::Fun { params: params.clone(), body: Box::new(body) }, e.span));
            };
            let span = params[at].span;
            let n = ctx.new;
            let steps = format!("toNat({soff}@(s + 1) - {soff}@s)", soff = n.soff);
            let mut arrays = vec![
                (&n.soff, format!("[int]_{{{} + 1}}", n.slices)),
                (
                    &n.cols,
                    format!("[s -> [[{t}]_{c}]_{{{steps}}}]_{slices}", t = ctx.column_ty, c = ctx.c, slices = n.slices),
                ),
            ];
            if ctx.iso.is_some() {
                // No values: each step's index and each lane's length mask the padding.
                arrays.push((&n.step, format!("[s -> [int]_{{{steps}}}]_{slices}", slices = n.slices)));
                arrays.push((&n.len, format!("[[int]_{c}]_{slices}", c = ctx.c, slices = n.slices)));
            } else {
                arrays.push((
                    &n.vals,
                    format!("[s -> [[{t}]_{c}]_{{{steps}}}]_{slices}", t = ctx.scalar_ty, c = ctx.c, slices = n.slices),
                ));
            }
            let mut new_params = params[..at].to_vec();
            for (name, ty) in arrays {
                new_params.push(Param { name: Name::from(name.as_str()), ty: Some(parsed_type(&ty, span)?), span });
            }
            new_params.extend(params[at + 1..].iter().cloned());
            let fun = Expr::new(ExprKind::Fun { params: new_params, body: Box::new(body) }, e.span);
            Ok(Expr::new(ExprKind::NFun { var: Name::from(n.slices.as_str()), body: Box::new(fun) }, e.span))
        }
        _ => uses(e, ctx, fresh, rows, lanes),
    }
}

/// Rewrites every use of the operand in `e`: the rows of a map, nothing else.
fn uses(
    e: &Expr,
    ctx: &Ctx,
    fresh: &mut Fresh,
    rows: &mut Vec<Span>,
    lanes: &mut Vec<Lane>,
) -> Result<Expr, Diagnostic> {
    let a = &ctx.a;
    let is_a = |x: &Expr| matches!(&x.kind, ExprKind::Var(v) if v == a);
    let is_map = |x: &Expr| matches!(&x.kind, ExprKind::Var(v) if v.as_str() == "map");
    match &e.kind {
        ExprKind::Var(v) if v == a => {
            Err(Diagnostic::new(e.span, format!("`{a}` is used here other than as the rows of a map"))
                .with_label("this use")
                .with_note(format!(
                    "stored as SELL(C), `{a}` is used as `{a} :>> map(fun(row => …))`: the rows run in lanes of C"
                )))
        }
        ExprKind::Pipe { arg, func } if is_a(arg) => match &func.kind {
            ExprKind::App { func: m, args } if is_map(m) && args.len() == 1 && row_lambda(&args[0]).is_some() => {
                slices(&args[0], ctx, fresh, rows, lanes)
            }
            _ => uses(arg, ctx, fresh, rows, lanes),
        },
        ExprKind::App { func: m, args }
            if is_map(m) && args.len() == 2 && is_a(&args[1]) && row_lambda(&args[0]).is_some() =>
        {
            slices(&args[0], ctx, fresh, rows, lanes)
        }
        _ => map_children(e, &mut |x| uses(x, ctx, fresh, rows, lanes)),
    }
}

/// The row map `A :>> map(fun(row => body))` over the slices:
/// `zip(A_cols, A_vals) :>> map(fun(sl => generate(C, fun(l => body[row :=
/// densify(zip(sl.1, sl.2) :>> map(fun(k => (k.1@l, k.2@l))))])))) :>> join`.
fn slices(
    f: &Expr,
    ctx: &Ctx,
    fresh: &mut Fresh,
    rows: &mut Vec<Span>,
    lanes: &mut Vec<Lane>,
) -> Result<Expr, Diagnostic> {
    let Some((p, body)) = row_lambda(f) else { return uses(f, ctx, fresh, rows, lanes) };
    let body = uses(body, ctx, fresh, rows, lanes)?;
    rows.push(p.span);
    let (sl, l, k, hole) = (fresh.name("sl"), fresh.name("l"), fresh.name("k"), fresh.name("ROW"));
    let n = ctx.new;
    let (outer, pairs) = match &ctx.iso {
        None => (
            format!(
                "zip({}, {}) :>> map(fun({sl} => generate({}, fun({l} => {hole})))) :>> join",
                n.cols, n.vals, ctx.c
            ),
            format!("zip({sl}.1, {sl}.2) :>> map(fun({k} => ({k}.1@{l}, {k}.2@{l})))"),
        ),
        // Iso-valued: slice `sl` is ((columns, step indices), lane lengths);
        // every pair holds the constant, padding included (the interchange
        // masks it: a padding step of lane l is one at or past its length).
        Some(v) => (
            format!(
                "zip(zip({}, {}), {}) :>> map(fun({sl} => generate({}, fun({l} => {hole})))) :>> join",
                n.cols, n.step, n.len, ctx.c
            ),
            format!("zip({sl}.1.1, {sl}.1.2) :>> map(fun({k} => ({k}.1@{l}, {})))", heddle_ir::printer::print_expr(v)),
        ),
    };
    lanes.push(Lane { l: l.clone(), at: p.span, slice: ctx.iso.as_ref().map(|_| sl.clone()) });
    let (outer, pairs) = (parsed(&outer, p.span)?, parsed(&pairs, p.span)?);
    Ok(outer.subst(&hole, &body.subst(&p.name, &marker(pairs))))
}

/// Step 3 of the module documentation, at every lane `generate` the
/// structural step made (its lane binder is one of `lanes`).
fn interchange(e: &Expr, lanes: &[Lane], fresh: &mut Fresh, done: &mut BTreeSet<Name>) -> Result<Expr, Diagnostic> {
    let out = map_children(e, &mut |x| interchange(x, lanes, fresh, done))?;
    if let Some((count, f)) = generate_of(&out)
        && let Some((l, x)) = lambda1(f)
        && let Some(lane) = lanes.iter().find(|lane| lane.l == *l)
        && let Some((summed, [op, init])) = stage(x, "reduce", 2)
        && matches!(op.kind, ExprKind::Section(SectionOp::Add))
        && is_zero(init)
        && let Some((paired, [term])) = stage(summed, "map", 1)
        && let Some((e_name, v)) = lambda1(term)
        && let Some((steps, [pair])) = stage(paired, "map", 1)
        && let Some((k, pair_of_lane)) = lambda1(pair)
        && !mentions(steps, l)
    {
        // Per step k, the lanes' terms as a row; the rows summed lane by lane.
        let mut term_at = project_tuples(&v.subst(e_name, pair_of_lane));
        if let Some(sl) = &lane.slice {
            // Iso-valued: the lane's padding steps (k's index at or past the
            // lane's length) add 0. The term is computed first and then
            // chosen (a `select` evaluates only its branch, and a load in a
            // branch would be a branch per lane, not a vector blend); its
            // padding column is valid, so computing it is harmless.
            let (t, hole) = (fresh.name("t"), fresh.name("TERM"));
            let masked = parsed(
                &format!(
                    "let {t} = {hole} in select({k}.2 < {sl}.2@{l}, {t}, {})",
                    heddle_ir::printer::print_expr(init)
                ),
                Span::DUMMY,
            )?;
            term_at = masked.subst(&hole, &term_at);
        }
        let lanes_row = call("generate", vec![count.clone(), fun(&[l], term_at)]);
        let (acc, r, q, z) = (fresh.name("acc"), fresh.name("r"), fresh.name("q"), fresh.name("l"));
        let rowsum = fun(
            &[&acc, &r],
            pipe(
                call("zip", vec![Expr::var(acc.clone()), Expr::var(r.clone())]),
                call("map", vec![fun(&[&q], parsed(&format!("{q}.1 + {q}.2"), Span::DUMMY)?)]),
            ),
        );
        let zeros = call("generate", vec![count.clone(), fun(&[&z], init.clone())]);
        done.insert(l.clone());
        return Ok(pipe(
            pipe(steps.clone(), call("map", vec![fun(&[k], lanes_row)])),
            call("reduce", vec![rowsum, zeros]),
        ));
    }
    Ok(out)
}

/// Reads `SELL(C)` with the optional fields `crdWidth = W` (16 or 32;
/// `indexBitWidth` is taken for `crdWidth`, as in MLIR's encodings) and
/// `sigma = S` (1, or a multiple of C up to [`MAX_SIGMA`]; `σ` is taken for
/// `sigma`), each at most once, in any order: `None` when `text` is not that
/// form (an MLIR attribute, another name), the spec, or why it is written
/// wrongly.
pub fn parse_name(text: &str) -> Option<Result<SellSpec, String>> {
    let t = text.trim();
    if !t.to_ascii_uppercase().starts_with("SELL") {
        return None;
    }
    let usage = || {
        format!(
            "write SELL(C) with C rows per slice, 1 to {MAX_LANES} (e.g. SELL(8)), optionally with `crdWidth = 16` \
             for 16-bit columns, `sigma = S` to sort rows by length within windows of S rows \
             (e.g. SELL(8, sigma = 4096)) and `explicitVal = V` when every entry is V (no values stored)"
        )
    };
    if !t.starts_with("SELL") {
        return Some(Err(format!("encoding names are upper case: {}", usage())));
    }
    let Some(inner) = t[4..].trim().strip_prefix('(').and_then(|a| a.strip_suffix(')')) else {
        return Some(Err(usage()));
    };
    let mut parts = inner.split(',');
    let lanes = match parts.next().map(|c| c.trim().parse::<u64>()) {
        Some(Ok(c)) if (1..=MAX_LANES).contains(&c) => c,
        _ => return Some(Err(usage())),
    };
    let (mut crd_width, mut sigma, mut explicit_val) = (None, None, None);
    for field in parts {
        let Some((key, value)) = field.split_once('=') else { return Some(Err(usage())) };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "crdWidth" | "indexBitWidth" => {
                if crd_width.is_some() {
                    return Some(Err(format!("SELL's `crdWidth` is given twice: {}", usage())));
                }
                match value.parse::<u32>() {
                    Ok(w @ (16 | 32)) => crd_width = Some(w),
                    _ => return Some(Err(format!("SELL's columns are 16 or 32 bits, not `{value}`: {}", usage()))),
                }
            }
            "sigma" | "σ" => {
                if sigma.is_some() {
                    return Some(Err(format!("SELL's `sigma` is given twice: {}", usage())));
                }
                match value.parse::<u64>() {
                    Ok(s) if s == 1 || (s > 1 && s <= MAX_SIGMA && s.is_multiple_of(lanes)) => sigma = Some(s),
                    _ => {
                        return Some(Err(format!(
                            "`sigma = {value}`: σ, the rows sorted together, is 1 or a multiple of C = {lanes} \
                             up to {MAX_SIGMA} (whole slices sorted together), e.g. sigma = {}",
                            lanes * 512
                        )));
                    }
                }
            }
            "explicitVal" => {
                if explicit_val.is_some() {
                    return Some(Err(format!("SELL's `explicitVal` is given twice: {}", usage())));
                }
                // `1.0` or `1.0 : f64`, as a tensor encoding writes it.
                let (text, ty) = match value.split_once(':') {
                    Some((v, t)) => (v.trim(), Some(t.trim().to_string())),
                    None => (value, None),
                };
                if text.parse::<f64>().is_err() || ty.as_ref().is_some_and(|t| ScalarType::from_keyword(t).is_none()) {
                    return Some(Err(format!(
                        "`explicitVal = {value}`: the value every entry holds is a number, optionally with its type \
                         (explicitVal = 1.0 : f64)"
                    )));
                }
                explicit_val = Some(heddle_ir::encoding::Literal { text: text.to_string(), ty });
            }
            _ => {
                return Some(Err(format!(
                    "SELL takes the fields `crdWidth`, `sigma` and `explicitVal`, not `{key}`: {}",
                    usage()
                )));
            }
        }
    }
    Some(Ok(SellSpec { lanes, crd_width: crd_width.unwrap_or(32), sigma: sigma.unwrap_or(1), explicit_val }))
}

//! Encodings as position-dependent types: the bridge between MLIR's sparse
//! dialect and Lift's `[i ↦ T]_N` arrays (LANGUAGE.md §6).
//!
//! # Conventions
//!
//! For a kernel parameter `A : tensor<d0 x d1 x ... x T, #ENC>`:
//!
//! - a dimension written `?` has size `A_dim{d}` (a natural variable solved from
//!   the inputs); a static one is its literal;
//! - level `l` has positions `A_pos{l}` (compressed: `P + 1` entries, where `P`
//!   is the number of positions of level `l - 1`; loose_compressed: `2 * P`,
//!   a `lo, hi` pair per parent) and coordinates `A_crd{l}`; the values are
//!   `A_values`;
//! - buffer element types follow the widths: `posWidth`/`crdWidth` 8, 16, 32,
//!   64 give `u8`, `u16`, `u32`, `u64`; 0 (native) gives `i64`; the
//!   coordinates of a difference level (DIA's offsets `j - i`) are signed:
//!   `i8`, `i16`, `i32`, `i64` (native `i64`), in two's complement;
//! - coordinates and values are typed as nested position-dependent arrays,
//!   one layer per level that adds one (singletons add none): a dense level of
//!   size `N` is `[c -> ...]_N`, whose child position is `q * N + c` for parent
//!   position `q`; a compressed level is `[p -> ...]_{toNat(A_pos@(q+1) - A_pos@q)}`
//!   with child position `A_pos@q + p`; an n:m level is `[p -> ...]_n` with
//!   child position `q * n + p`.
//!   So CSR's values are `[i -> [T]_{toNat(A_pos1@(i + 1) - A_pos1@i)}]_{A_dim0}`,
//!   whose flat form (LANGUAGE.md §5) is exactly MLIR's values buffer;
//! - a loose_compressed level's children of parent `q` are the positions
//!   `A_pos@(2q) .. A_pos@(2q + 1)` of buffers that may have unused room (gaps
//!   between parents, slack at the end), so its coordinates buffer has a length
//!   of its own, `A_crd{l}_len`, and no nested type whose flat positions are
//!   sums of the row lengths describes it. Below a loose level the buffers
//!   restart flat: one layer `[p -> ...]_{A_crd{l}_len}` over the absolute
//!   position `p` (then the inner levels' layers as above). Loose CSR's values
//!   are `[T]_{A_crd1_len}`; the view reaches element `p` of parent `q` at
//!   `A_pos1@(2q) + p` (see [`LevelAccess::loose_lo`]), a data-dependent
//!   index that binding validates (`lo <= hi <= A_crd1_len`), so compiled
//!   code need not check it per entry;
//! - a COO region in MLIR's default array-of-structs layout (a
//!   (loose_)compressed level followed by singletons without `soa`) keeps all
//!   its coordinates in the compressed level's buffer as tuples, one
//!   component per level; the singletons then have no buffer;
//! - the *view* (what a kernel indexes) is the coordinate hierarchy: dense →
//!   `[T]_N` indexed by coordinate, compressed → `[p -> (int, T)]_{len}`
//!   (coordinate, child), loose_compressed → `[p -> (int, T)]_{toNat(A_pos@(2q + 1) - A_pos@(2q))}`,
//!   singleton → `(int, T)`, n:m → `[p -> (int, T)]_n`, leaf = the value's
//!   scalar type;
//! - leading `batch` levels are stored as MLIR stores them (its buffers are
//!   `memref<B0 x … x ? x T>`): every buffer is an array over the batches,
//!   `[b -> row]_{A_dim0}`, each row holding one batch stored on its own
//!   (positions from 0). Rows are rectangular, so a batch's (loose_)compressed
//!   level restarts its storage flat like a loose level: its coordinates and
//!   values rows are `[p -> ...]_{A_crd{l}_len}` (room past a batch's last
//!   position is padding) and the view reaches child `p` of parent `q` in
//!   batch `b` at `A_pos{l}@b@q + p`. Batched CSR's positions are
//!   `[b -> [i64]_{A_dim1 + 1}]_{A_dim0}` and its values
//!   `[b -> [T]_{A_crd2_len}]_{A_dim0}`; its view is the array over the
//!   batches of each batch's CSR view.
//!
//! - heddle's `banded` (skyline) level is laid out as a compressed one
//!   without a coordinates buffer: its coordinates are implicit (the view
//!   computes child `p` of row `i` as column `i + 1 - len + p`).
//!
//! Binder names: a dense level storing dimension `i` whole binds `i`; any
//! other dense level binds `c{l}`; a level iterated by position binds `p{l}`.

use super::map;
use super::{Encoding, LevelFormat, LvlExpr, Width, err};
use crate::expr::{BinOp, Expr, ExprKind, Literal};
use crate::name::Name;
use crate::nat::Nat;
use crate::span::Diagnostic;
use crate::types::{ScalarType, Type};

/// Which buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferKind {
    /// A level's positions.
    Positions,
    /// A level's coordinates (for an AoS COO region, tuples of several levels').
    Coordinates,
    /// The values.
    Values,
}

/// One storage buffer and its heddle type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// `A_pos1`, `A_crd1`, `A_values`.
    pub name: Name,
    /// What it holds.
    pub kind: BufferKind,
    /// Its level (`None` for values).
    pub level: Option<usize>,
    /// Its type: flat for positions, nested per level for coordinates and values.
    pub ty: Type,
    /// Its length as a flat buffer.
    pub len: Nat,
    /// Its shape as MLIR's memref: the batch levels' sizes, then the row
    /// length (just the length without batch levels).
    pub shape: Vec<Nat>,
}

/// How the view reaches one level's storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelAccess {
    /// The view's array layer for this level: its binder and its length, a
    /// natural over the binders of the outer levels' view layers; `None` for a
    /// singleton, which adds no layer.
    pub layer: Option<(Name, Nat)>,
    /// `None` when the storage buffers nest this level as the view does (an
    /// element is reached by indexing with the layer's binder). For a
    /// loose_compressed level, whose children the buffers hold flat: where
    /// the parent's `lo` bound is in `A_pos{l}`, `2q` over the view binders.
    /// Child `p` is at the absolute position `A_pos{l}@(2q) + p`, the index
    /// into the buffers below, which starts a new path.
    pub loose_lo: Option<Nat>,
}

/// The storage and view of one tensor parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageLayout {
    /// The parameter's name (`A`).
    pub param: Name,
    /// Dimension sizes.
    pub dim_sizes: Vec<Nat>,
    /// Level sizes.
    pub lvl_sizes: Vec<Nat>,
    /// Positions and coordinates buffers in level order, then the values
    /// (none for an iso-valued tensor, [`iso_value`]).
    pub buffers: Vec<Buffer>,
    /// The number of stored entries (the values buffer's flat length, where
    /// there is one).
    pub nse: Nat,
    /// The tensor as the program sees it.
    pub view: Type,
    /// How the view reaches each level's storage, one entry per level.
    pub levels: Vec<LevelAccess>,
    /// The natural variables the types use that the program must bind
    /// (`A_dim0`, `A_crd1_len`, ...).
    pub nat_vars: Vec<Name>,
    /// The number of leading batch levels: every buffer's first indices.
    pub batch_levels: usize,
    /// The value of every stored entry when the storage keeps no values
    /// buffer ([`iso_value`]): the view's leaf is this constant.
    pub iso: Option<IsoValue>,
}

/// The one value of every stored entry of an *iso-valued* tensor (MLIR's
/// `explicitVal`, SuiteSparse:GraphBLAS's iso matrices), at the element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsoValue {
    /// A float element's value (exactly representable in the element type),
    /// compared by bits (`-0.0` is not `0.0`).
    Float(crate::expr::FloatLit),
    /// An integer element's value (within the element type's range).
    Int(i64),
}

impl IsoValue {
    /// The value as a literal annotated with the element type (`(2.5 : f32)`),
    /// the leaf of the tensor's view.
    pub fn expr(self, elem: ScalarType) -> Expr {
        let lit = match self {
            IsoValue::Float(v) => Literal::Float(v),
            IsoValue::Int(v) => Literal::Int(v),
        };
        Expr::synth(ExprKind::Annot { expr: Box::new(Expr::synth(ExprKind::Lit(lit))), ty: Type::Scalar(elem) })
    }
}

impl std::fmt::Display for IsoValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IsoValue::Float(v) => write!(f, "{:?}", v.0),
            IsoValue::Int(v) => write!(f, "{v}"),
        }
    }
}

/// The value of every stored entry when a tensor of `enc` with elements of
/// type `elem` needs no values buffer: `explicitVal` is set, holds exactly at
/// `elem` (not NaN: no stored value would equal it; a float, integer or
/// unsigned type up to 64 bits; `f16`, `bf16`, complex and `bool` keep their
/// buffer), and every slot of the values buffer is an entry. That is MLIR's
/// reading ("instead of storing the values array"), and it holds where the
/// levels after the first non-dense one are all compressed, loose_compressed
/// or singleton (CSR, CSC, DCSR, COO, CSF): a dense level below a sparse one
/// (BSR's blocks, DIA's rows), an n:m group, a banded run or an all-dense
/// tensor store padding, the `implicitVal`, in slots the view reads, so
/// those keep the buffer.
pub fn iso_value(enc: &Encoding, elem: ScalarType) -> Option<IsoValue> {
    let lit = enc.explicit_val.as_ref()?;
    let first = enc.levels.iter().position(|l| !l.format.is_dense_like())?;
    let entries_only = enc.levels[first..]
        .iter()
        .all(|l| matches!(l.format, LevelFormat::Compressed | LevelFormat::LooseCompressed | LevelFormat::Singleton));
    if !entries_only {
        return None;
    }
    match elem {
        ScalarType::F64 => lit.value().filter(|v| !v.is_nan()).map(|v| IsoValue::Float(crate::expr::FloatLit(v))),
        ScalarType::F32 => lit
            .value()
            .filter(|v| !v.is_nan() && f64::from(*v as f32) == *v)
            .map(|v| IsoValue::Float(crate::expr::FloatLit(v))),
        ScalarType::I8
        | ScalarType::I16
        | ScalarType::I32
        | ScalarType::I64
        | ScalarType::U8
        | ScalarType::U16
        | ScalarType::U32
        | ScalarType::U64 => {
            // `3`, or a float's text that is a whole number (`1.0`).
            let v: i128 = match lit.text.parse::<i128>() {
                Ok(v) => v,
                Err(_) => {
                    let f = lit.value().filter(|f| f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18)?;
                    f as i128
                }
            };
            let (lo, hi): (i128, i128) = match elem {
                ScalarType::I8 => (i8::MIN.into(), i8::MAX.into()),
                ScalarType::I16 => (i16::MIN.into(), i16::MAX.into()),
                ScalarType::I32 => (i32::MIN.into(), i32::MAX.into()),
                ScalarType::U8 => (0, u8::MAX.into()),
                ScalarType::U16 => (0, u16::MAX.into()),
                ScalarType::U32 => (0, u32::MAX.into()),
                // `u64` values past `i64` keep their buffer (the literal is an `i64`).
                ScalarType::U64 => (0, i64::MAX.into()),
                _ => (i64::MIN.into(), i64::MAX.into()),
            };
            (lo..=hi).contains(&v).then_some(IsoValue::Int(v as i64))
        }
        _ => None,
    }
}

fn lit(v: i64) -> Expr {
    Expr::synth(ExprKind::Lit(Literal::Int(v)))
}
fn as_lit(e: &Expr) -> Option<i64> {
    match e.kind {
        ExprKind::Lit(Literal::Int(v)) => Some(v),
        _ => None,
    }
}
fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::synth(ExprKind::Binary { op, lhs: Box::new(a), rhs: Box::new(b) })
}
/// `a + b`, folding literals so the printed types stay short.
fn add(a: Expr, b: Expr) -> Expr {
    match (as_lit(&a), as_lit(&b)) {
        (Some(x), Some(y)) => lit(x + y),
        (Some(0), _) => b,
        (_, Some(0)) => a,
        _ => bin(BinOp::Add, a, b),
    }
}
fn sub(a: Expr, b: Expr) -> Expr {
    if as_lit(&b) == Some(0) { a } else { bin(BinOp::Sub, a, b) }
}
fn mul(a: Expr, b: Expr) -> Expr {
    match (as_lit(&a), as_lit(&b)) {
        (Some(x), Some(y)) => lit(x * y),
        (Some(0), _) | (_, Some(0)) => lit(0),
        (Some(1), _) => b,
        (_, Some(1)) => a,
        _ => bin(BinOp::Mul, a, b),
    }
}
fn at(buf: &Name, i: Expr) -> Expr {
    Expr::synth(ExprKind::Index { array: Box::new(Expr::var(buf.clone())), index: Box::new(i) })
}
/// `buf@b0@…@i`: element `i` of the row of batch `b0, …` (no batch: `buf@i`).
fn at_row(buf: &Name, batch: &[Expr], i: Expr) -> Expr {
    batch.iter().chain(std::iter::once(&i)).fold(Expr::var(buf.clone()), |e, k| {
        Expr::synth(ExprKind::Index { array: Box::new(e), index: Box::new(k.clone()) })
    })
}
fn to_nat(e: Expr) -> Nat {
    match as_lit(&e) {
        Some(v) => Nat::Lit(v),
        None => Nat::ToNat(Box::new(e)),
    }
}
/// `a * b`, folded when both are literals; a product of literals beyond 64
/// bits stays a product (its evaluation reports the overflow) instead of
/// wrapping.
fn nat_mul(a: Nat, b: Nat) -> Nat {
    match (a.as_lit(), b.as_lit()) {
        (Some(x), Some(y)) if x.checked_mul(y).is_some() => Nat::Lit(x * y),
        (Some(1), _) => b,
        (_, Some(1)) => a,
        _ => Nat::mul(a, b),
    }
}
fn width_type(w: Width) -> ScalarType {
    match w {
        Width::Native => ScalarType::I64,
        Width::W8 => ScalarType::U8,
        Width::W16 => ScalarType::U16,
        Width::W32 => ScalarType::U32,
        Width::W64 => ScalarType::U64,
    }
}

/// The signed type of a difference level's coordinates (DIA's offsets) at
/// `crdWidth`: two's complement of the same width.
pub fn signed_width_type(w: Width) -> ScalarType {
    match w {
        Width::W8 => ScalarType::I8,
        Width::W16 => ScalarType::I16,
        Width::W32 => ScalarType::I32,
        Width::Native | Width::W64 => ScalarType::I64,
    }
}

/// One array layer of the nested types: `[binder -> _]_len`.
struct Layer {
    binder: Name,
    len: Nat,
}

fn wrap(layers: &[Layer], elem: Type) -> Type {
    layers.iter().rev().fold(elem, |t, l| {
        let binder = t.mentions(&l.binder).then(|| l.binder.clone());
        Type::Array { binder, elem: Box::new(t), len: l.len.clone() }
    })
}

/// The storage buffers and the view of parameter `param` of type
/// `tensor<dims x elem, enc>`. Fails (at the encoding's span) when the
/// number of dimensions differs from the encoding's or a static dimension
/// does not divide into its blocks.
pub fn storage_layout(
    enc: &Encoding,
    dims: &[Option<u64>],
    elem: ScalarType,
    param: &str,
) -> Result<StorageLayout, Diagnostic> {
    if dims.len() != enc.dim_rank() {
        return Err(err(
            enc.span,
            format!("the encoding has {} dimensions but the tensor type has {}", enc.dim_rank(), dims.len()),
            "dimension count mismatch",
        ));
    }
    if let Some((d, v)) =
        dims.iter().enumerate().find_map(|(d, s)| s.filter(|v| i64::try_from(*v).is_err()).map(|v| (d, v)))
    {
        return Err(err(
            enc.span,
            format!("dimension {d} has size {v}, more than the largest size, 2^63 - 1"),
            "too large for this tensor type",
        ));
    }
    let pname = |s: String| Name::from(format!("{param}_{s}"));
    let mut nat_vars = Vec::new();
    let dim_sizes: Vec<Nat> = dims
        .iter()
        .enumerate()
        .map(|(d, s)| match s {
            Some(v) => Nat::Lit(*v as i64),
            None => {
                let n = pname(format!("dim{d}"));
                nat_vars.push(n.clone());
                Nat::Var(n)
            }
        })
        .collect();
    if dims.iter().all(Option::is_some) {
        let concrete: Vec<u64> = dims.iter().flatten().copied().collect();
        let sizes = map::lvl_sizes(enc, &concrete).map_err(|m| err(enc.span, m, "does not fit this tensor type"))?;
        // A difference level counts `size_a + size_b - 1` offsets: past 2^63 - 1
        // for two dimensions near the limit (it wrapped to a negative size).
        if let Some((l, v)) = sizes.iter().enumerate().find(|(_, v)| i64::try_from(**v).is_err()) {
            return Err(err(
                enc.span,
                format!("level {l} would have size {v}, more than the largest size, 2^63 - 1"),
                "too large for this tensor type",
            ));
        }
    }
    let lvl_sizes: Vec<Nat> = enc
        .levels
        .iter()
        .map(|l| match l.expr {
            LvlExpr::Dim(d) => dim_sizes[d].clone(),
            LvlExpr::FloorDiv(d, k) => match dim_sizes[d].as_lit() {
                Some(v) => Nat::Lit(v / k as i64),
                None => Nat::div(dim_sizes[d].clone(), Nat::Lit(k as i64)),
            },
            LvlExpr::Mod(_, k) | LvlExpr::Counter { slices: k, .. } => Nat::Lit(k as i64),
            // The number of offsets (they run from `-(size_b - 1)` to `size_a - 1`).
            LvlExpr::Diff { plus, minus } => match (dim_sizes[plus].as_lit(), dim_sizes[minus].as_lit()) {
                (Some(a), Some(b)) => Nat::Lit(map::diff_size(a as u64, b as u64) as i64),
                _ => Nat::sub(Nat::add(dim_sizes[plus].clone(), dim_sizes[minus].clone()), Nat::Lit(1)),
            },
        })
        .collect();

    let taken: Vec<Name> = enc.dims.iter().map(|d| d.name.clone()).collect();
    // The storage's array layers (reset below a loose_compressed level, whose
    // children the buffers hold flat) and, per level, the view's.
    let mut layers: Vec<Layer> = Vec::new();
    let mut levels: Vec<LevelAccess> = Vec::new();
    let mut buffers = Vec::new();
    // The parent position of a generic element, over the storage binders (`q`)
    // and over the view binders (`qv`); they differ only below a loose level,
    // where the storage binder is the absolute position.
    let mut q = lit(0);
    let mut qv = lit(0);
    let mut count = Nat::Lit(1); // positions at the current depth (within a batch)
    // Leading batch levels: their layers start every buffer, their binders
    // every index into one, and the batches multiply every flat length.
    let batch_levels = enc.levels.iter().take_while(|l| l.format == LevelFormat::Batch).count();
    let mut batch_layers: Vec<Layer> = Vec::new();
    let mut batch_path: Vec<Expr> = Vec::new();
    let mut batches = Nat::Lit(1);
    let pos_ty = Type::Scalar(width_type(enc.pos_width));
    let crd_ty = Type::Scalar(width_type(enc.crd_width));
    for (l, lv) in enc.levels.iter().enumerate() {
        let pos = pname(format!("pos{l}"));
        let crd = pname(format!("crd{l}"));
        let pbind = Name::from(format!("p{l}"));
        match lv.format {
            LevelFormat::Dense | LevelFormat::Batch => {
                let binder = match lv.expr {
                    LvlExpr::Dim(d)
                        if !(0..enc.lvl_rank())
                            .any(|k| [format!("p{k}"), format!("c{k}")].contains(&taken[d].to_string())) =>
                    {
                        taken[d].clone()
                    }
                    _ => Name::from(format!("c{l}")),
                };
                let n = lvl_sizes[l].clone();
                if lv.format == LevelFormat::Batch {
                    // Positions restart at 0 in every batch: `q` and `count` are within one.
                    batches = nat_mul(batches, n.clone());
                    batch_path.push(Expr::var(binder.clone()));
                    batch_layers.push(Layer { binder: binder.clone(), len: n.clone() });
                    levels.push(LevelAccess { layer: Some((binder.clone(), n.clone())), loose_lo: None });
                    layers.push(Layer { binder, len: n });
                    continue;
                }
                q = add(mul(q, Expr::from_nat(&n)), Expr::var(binder.clone()));
                qv = add(mul(qv, Expr::from_nat(&n)), Expr::var(binder.clone()));
                count = nat_mul(count, n.clone());
                levels.push(LevelAccess { layer: Some((binder.clone(), n.clone())), loose_lo: None });
                layers.push(Layer { binder, len: n });
            }
            LevelFormat::Compressed | LevelFormat::LooseCompressed if batch_levels > 0 => {
                // In a batch: parent q's children are `A_pos@b@q .. A_pos@b@(q + 1)`
                // (loose: `@(2q)`, `@(2q + 1)`) of a row that may end in padding, so,
                // as below a loose level, the view indexes the rows at `lo + p` and
                // the storage restarts flat over the row's length.
                let loose = lv.format == LevelFormat::LooseCompressed;
                let (lo_at, hi_at, row) = if loose {
                    (
                        mul(lit(2), qv.clone()),
                        add(mul(lit(2), qv.clone()), lit(1)),
                        nat_mul(Nat::Lit(2), count.clone()).normalize(),
                    )
                } else {
                    (qv.clone(), add(qv.clone(), lit(1)), Nat::add(count.clone(), Nat::Lit(1)).normalize())
                };
                let lo = at_row(&pos, &batch_path, lo_at.clone());
                let hi = at_row(&pos, &batch_path, hi_at);
                buffers.push(Buffer {
                    name: pos.clone(),
                    kind: BufferKind::Positions,
                    level: Some(l),
                    ty: wrap(&batch_layers, Type::array(pos_ty.clone(), row.clone())),
                    len: nat_mul(batches.clone(), row.clone()),
                    shape: batch_layers.iter().map(|b| b.len.clone()).chain([row]).collect(),
                });
                let v = pname(format!("crd{l}_len"));
                nat_vars.push(v.clone());
                count = Nat::Var(v);
                levels.push(LevelAccess {
                    layer: Some((pbind.clone(), to_nat(sub(hi, lo.clone())))),
                    loose_lo: Some(to_nat(lo_at)),
                });
                layers = batch_layers.iter().map(|b| Layer { binder: b.binder.clone(), len: b.len.clone() }).collect();
                layers.push(Layer { binder: pbind.clone(), len: count.clone() });
                q = Expr::var(pbind.clone());
                qv = add(lo, Expr::var(pbind));
            }
            LevelFormat::Compressed | LevelFormat::Banded => {
                // A compressed level's first position is 0 (assembly checks it), which
                // keeps the outermost sizes short: `toNat(A_pos0@1)`.
                let lo_at = |q: &Expr| if as_lit(q) == Some(0) { lit(0) } else { at(&pos, q.clone()) };
                let len_at = |q: &Expr| to_nat(sub(at(&pos, add(q.clone(), lit(1))), lo_at(q)));
                let pos_len = Nat::add(count.clone(), Nat::Lit(1)).normalize();
                buffers.push(Buffer {
                    name: pos.clone(),
                    kind: BufferKind::Positions,
                    level: Some(l),
                    ty: Type::array(pos_ty.clone(), pos_len.clone()),
                    len: pos_len.clone(),
                    shape: vec![pos_len],
                });
                count = to_nat(at(&pos, Expr::from_nat(&count)));
                levels.push(LevelAccess { layer: Some((pbind.clone(), len_at(&qv))), loose_lo: None });
                layers.push(Layer { binder: pbind.clone(), len: len_at(&q) });
                q = add(lo_at(&q), Expr::var(pbind.clone()));
                qv = add(lo_at(&qv), Expr::var(pbind));
            }
            LevelFormat::LooseCompressed => {
                // Parent q's children are `A_pos@(2q) .. A_pos@(2q + 1)` of a buffer
                // with unused room: no nested type states that, so the view indexes
                // the flat buffers at `A_pos@(2q) + p` and the storage restarts flat.
                let lo = at(&pos, mul(lit(2), qv.clone()));
                let hi = at(&pos, add(mul(lit(2), qv.clone()), lit(1)));
                let pos_len = nat_mul(Nat::Lit(2), count.clone()).normalize();
                buffers.push(Buffer {
                    name: pos.clone(),
                    kind: BufferKind::Positions,
                    level: Some(l),
                    ty: Type::array(pos_ty.clone(), pos_len.clone()),
                    len: pos_len.clone(),
                    shape: vec![pos_len],
                });
                let v = pname(format!("crd{l}_len"));
                nat_vars.push(v.clone());
                count = Nat::Var(v);
                levels.push(LevelAccess {
                    layer: Some((pbind.clone(), to_nat(sub(hi, lo.clone())))),
                    loose_lo: Some(to_nat(mul(lit(2), qv.clone()))),
                });
                layers = vec![Layer { binder: pbind.clone(), len: count.clone() }];
                q = Expr::var(pbind.clone());
                qv = add(lo, Expr::var(pbind));
            }
            LevelFormat::Singleton => levels.push(LevelAccess { layer: None, loose_lo: None }),
            LevelFormat::NOutOfM { n, .. } => {
                let n = Nat::Lit(i64::from(n));
                q = add(mul(q, Expr::from_nat(&n)), Expr::var(pbind.clone()));
                qv = add(mul(qv, Expr::from_nat(&n)), Expr::var(pbind.clone()));
                count = nat_mul(count, n.clone());
                levels.push(LevelAccess { layer: Some((pbind.clone(), n.clone())), loose_lo: None });
                layers.push(Layer { binder: pbind, len: n });
            }
        }
        // Coordinates: own buffer, AoS tuple buffer, or none.
        if lv.format.has_coordinates() && !enc.in_aos_buffer(l) {
            let elem = match enc.aos_run(l) {
                Some(run) => Type::Tuple(vec![crd_ty.clone(); run.len()]),
                // DIA's offsets are signed (never in an AoS region: `verify`).
                None if lv.expr.is_signed() => Type::Scalar(signed_width_type(enc.crd_width)),
                None => crd_ty.clone(),
            };
            let ty = wrap(&layers, elem);
            let shape = batch_layers.iter().map(|b| b.len.clone()).chain([count.clone()]).collect();
            buffers.push(Buffer {
                name: crd,
                kind: BufferKind::Coordinates,
                level: Some(l),
                ty,
                len: nat_mul(batches.clone(), count.clone()),
                shape,
            });
        }
    }
    // An iso-valued tensor's entries are all one constant: no values buffer.
    let iso = iso_value(enc, elem);
    if iso.is_none() {
        buffers.push(Buffer {
            name: pname("values".into()),
            kind: BufferKind::Values,
            level: None,
            ty: wrap(&layers, Type::Scalar(elem)),
            len: nat_mul(batches.clone(), count.clone()),
            shape: batch_layers.iter().map(|b| b.len.clone()).chain([count.clone()]).collect(),
        });
    }

    // The view, built from the leaf outwards over the levels' view layers.
    let mut view = Type::Scalar(elem);
    for (lv, access) in enc.levels.iter().zip(&levels).rev() {
        view = match (&access.layer, lv.format.is_dense_like()) {
            (None, _) => Type::Tuple(vec![Type::Scalar(ScalarType::I32), view]),
            (Some((binder, len)), dense) => {
                let inner = if dense { view } else { Type::Tuple(vec![Type::Scalar(ScalarType::I32), view]) };
                let binder = inner.mentions(binder).then(|| binder.clone());
                Type::Array { binder, elem: Box::new(inner), len: len.clone() }
            }
        };
    }
    let nse = nat_mul(batches, count);
    Ok(StorageLayout {
        param: Name::from(param),
        dim_sizes,
        lvl_sizes,
        buffers,
        nse,
        view,
        levels,
        nat_vars,
        batch_levels,
        iso,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::parse_encoding;

    fn iso(levels: &str, explicit: &str, elem: ScalarType) -> Option<IsoValue> {
        let text = format!("#sparse_tensor.encoding<{{ map = {levels}, explicitVal = {explicit} }}>");
        iso_value(&parse_encoding(&text, 0).unwrap(), elem)
    }

    const CSR: &str = "(i, j) -> (i : dense, j : compressed)";

    #[test]
    fn explicit_values_that_hold_at_the_element_type_on_entry_only_storage_are_iso() {
        let f = |v: f64| Some(IsoValue::Float(crate::expr::FloatLit(v)));
        assert_eq!(iso(CSR, "1.0 : f64", ScalarType::F64), f(1.0));
        assert_eq!(iso(CSR, "-0.0 : f64", ScalarType::F32), f(-0.0));
        assert_ne!(iso(CSR, "-0.0 : f64", ScalarType::F64), f(0.0));
        assert_eq!(iso(CSR, "2.5 : f32", ScalarType::F32), f(2.5));
        assert_eq!(iso(CSR, "3 : i32", ScalarType::U8), Some(IsoValue::Int(3)));
        assert_eq!(iso(CSR, "1.0 : f64", ScalarType::I64), Some(IsoValue::Int(1)));
        // COO (compressed, nonunique, then singleton) and DCSR.
        let coo = "(i, j) -> (i : compressed(nonunique), j : singleton)";
        assert_eq!(iso(coo, "1.0", ScalarType::F64), f(1.0));
        assert_eq!(iso("(i, j) -> (i : compressed, j : compressed)", "1.0", ScalarType::F64), f(1.0));
        // The layout drops the values buffer and keeps the view.
        let enc = parse_encoding(&format!("#sparse_tensor.encoding<{{ map = {CSR}, explicitVal = 1.0 }}>"), 0).unwrap();
        let plain = parse_encoding(&format!("#sparse_tensor.encoding<{{ map = {CSR} }}>"), 0).unwrap();
        let (a, b) = (
            storage_layout(&enc, &[None, None], ScalarType::F64, "A").unwrap(),
            storage_layout(&plain, &[None, None], ScalarType::F64, "A").unwrap(),
        );
        assert!(a.buffers.iter().all(|b| b.kind != BufferKind::Values));
        assert_eq!(b.buffers.iter().filter(|b| b.kind == BufferKind::Values).count(), 1);
        assert_eq!((a.view, a.nse, a.iso.is_some()), (b.view, b.nse, true));
    }

    #[test]
    fn padded_storage_inexact_values_and_nans_keep_the_values_buffer() {
        // A dense level below a sparse one (BSR's blocks, DIA's rows), all-dense, n:m.
        let bsr = "(i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)";
        let dia = "(i, j) -> (j - i : compressed, i : dense)";
        for levels in [
            bsr,
            dia,
            "(i, j) -> (i : dense, j : dense)",
            "(i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4])",
        ] {
            assert_eq!(iso(levels, "1.0", ScalarType::F64), None, "{levels}");
        }
        // Not exact at the element type, or NaN (no stored value equals it), or out of range.
        assert_eq!(iso(CSR, "0.1 : f64", ScalarType::F32), None);
        assert_eq!(iso(CSR, "2.5", ScalarType::I32), None);
        assert_eq!(iso(CSR, "300", ScalarType::I8), None);
        assert_eq!(iso(CSR, "-1", ScalarType::U64), None);
        assert_eq!(iso(CSR, "1.0", ScalarType::F16), None);
        assert_eq!(iso(CSR, "1.0", ScalarType::C64), None);
        let nan = parse_encoding(&format!("#sparse_tensor.encoding<{{ map = {CSR} }}>"), 0).unwrap();
        let nan = Encoding { explicit_val: Some(super::super::Literal { text: "NaN".into(), ty: None }), ..nan };
        assert_eq!(iso_value(&nan, ScalarType::F64), None);
    }
}

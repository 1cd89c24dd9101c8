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
//!   64 give `u8`, `u16`, `u32`, `u64`; 0 (native) gives `i64`;
//! - coordinates and values are typed as nested position-dependent arrays,
//!   one layer per level that adds one (singletons add none): a dense level of
//!   size `N` is `[c -> ...]_N`, whose child position is `q * N + c` for parent
//!   position `q`; a compressed level is `[p -> ...]_{toNat(A_pos@(q+1) - A_pos@q)}`
//!   with child position `A_pos@q + p`; an n:m level is `[p -> ...]_n` with
//!   child position `q * n + p`; a loose_compressed level uses its lo/hi pair.
//!   So CSR's values are `[i -> [T]_{toNat(A_pos1@(i + 1) - A_pos1@i)}]_{A_dim0}`,
//!   whose flat form (LANGUAGE.md §5) is exactly MLIR's values buffer;
//! - a COO region in MLIR's default array-of-structs layout (a
//!   (loose_)compressed level followed by singletons without `soa`) keeps all
//!   its coordinates in the compressed level's buffer as tuples, one
//!   component per level; the singletons then have no buffer;
//! - a loose_compressed level's coordinates buffer may have unused room, so
//!   its length is a natural of its own, `A_crd{l}_len`;
//! - the *view* (what a kernel indexes) is the coordinate hierarchy: dense →
//!   `[T]_N` indexed by coordinate, compressed → `[p -> (int, T)]_{len}`
//!   (coordinate, child), singleton → `(int, T)`, n:m → `[p -> (int, T)]_n`,
//!   leaf = the value's scalar type.
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
    /// Positions and coordinates buffers in level order, then the values.
    pub buffers: Vec<Buffer>,
    /// The number of stored entries (the values buffer's flat length).
    pub nse: Nat,
    /// The tensor as the program sees it.
    pub view: Type,
    /// The natural variables the types use that the program must bind
    /// (`A_dim0`, `A_crd1_len`, ...).
    pub nat_vars: Vec<Name>,
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
fn to_nat(e: Expr) -> Nat {
    match as_lit(&e) {
        Some(v) => Nat::Lit(v),
        None => Nat::ToNat(Box::new(e)),
    }
}
fn nat_mul(a: Nat, b: Nat) -> Nat {
    match (a.as_lit(), b.as_lit()) {
        (Some(x), Some(y)) => Nat::Lit(x * y),
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
        map::lvl_sizes(enc, &concrete).map_err(|m| err(enc.span, m, "does not fit this tensor type"))?;
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
        })
        .collect();

    let taken: Vec<Name> = enc.dims.iter().map(|d| d.name.clone()).collect();
    let mut layers: Vec<Layer> = Vec::new();
    // One entry per level: the number of layers in place after it.
    let mut depth_after: Vec<usize> = Vec::new();
    let mut buffers = Vec::new();
    let mut q = lit(0); // parent position of a generic element
    let mut count = Nat::Lit(1); // positions at the current depth
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
                q = add(mul(q, Expr::from_nat(&n)), Expr::var(binder.clone()));
                count = nat_mul(count, n.clone());
                layers.push(Layer { binder, len: n });
            }
            LevelFormat::Compressed | LevelFormat::LooseCompressed => {
                let loose = lv.format == LevelFormat::LooseCompressed;
                let (lo, hi) = if loose {
                    (mul(lit(2), q.clone()), add(mul(lit(2), q.clone()), lit(1)))
                } else {
                    (q.clone(), add(q.clone(), lit(1)))
                };
                // A compressed level's first position is 0 (assembly checks it), which
                // keeps the outermost sizes short: `toNat(A_pos0@1)`.
                let lo_at = if !loose && as_lit(&lo) == Some(0) { lit(0) } else { at(&pos, lo.clone()) };
                let len = to_nat(sub(at(&pos, hi), lo_at.clone()));
                let pos_len =
                    if loose { nat_mul(Nat::Lit(2), count.clone()) } else { Nat::add(count.clone(), Nat::Lit(1)) };
                let pos_len = pos_len.normalize();
                buffers.push(Buffer {
                    name: pos.clone(),
                    kind: BufferKind::Positions,
                    level: Some(l),
                    ty: Type::array(pos_ty.clone(), pos_len.clone()),
                    len: pos_len,
                });
                count = if loose {
                    let v = pname(format!("crd{l}_len"));
                    nat_vars.push(v.clone());
                    Nat::Var(v)
                } else {
                    to_nat(at(&pos, Expr::from_nat(&count)))
                };
                q = add(lo_at, Expr::var(pbind.clone()));
                layers.push(Layer { binder: pbind, len });
            }
            LevelFormat::Singleton => {}
            LevelFormat::NOutOfM { n, .. } => {
                let n = Nat::Lit(i64::from(n));
                q = add(mul(q, Expr::from_nat(&n)), Expr::var(pbind.clone()));
                count = nat_mul(count, n.clone());
                layers.push(Layer { binder: pbind, len: n });
            }
        }
        depth_after.push(layers.len());
        // Coordinates: own buffer, AoS tuple buffer, or none.
        if lv.format.has_coordinates() && !enc.in_aos_buffer(l) {
            let elem = match enc.aos_run(l) {
                Some(run) => Type::Tuple(vec![crd_ty.clone(); run.len()]),
                None => crd_ty.clone(),
            };
            let ty = wrap(&layers, elem);
            buffers.push(Buffer { name: crd, kind: BufferKind::Coordinates, level: Some(l), ty, len: count.clone() });
        }
    }
    let values = Buffer {
        name: pname("values".into()),
        kind: BufferKind::Values,
        level: None,
        ty: wrap(&layers, Type::Scalar(elem)),
        len: count.clone(),
    };
    buffers.push(values);

    // The view, built from the leaf outwards over the same layers.
    let mut view = Type::Scalar(elem);
    for (l, lv) in enc.levels.iter().enumerate().rev() {
        let layer = depth_after[l].checked_sub(1).and_then(|k| layers.get(k));
        view = match (lv.format, layer) {
            (LevelFormat::Singleton, _) | (_, None) => Type::Tuple(vec![Type::Scalar(ScalarType::I32), view]),
            (LevelFormat::Dense | LevelFormat::Batch, Some(layer)) => {
                let binder = view.mentions(&layer.binder).then(|| layer.binder.clone());
                Type::Array { binder, elem: Box::new(view), len: layer.len.clone() }
            }
            (_, Some(layer)) => {
                let inner = Type::Tuple(vec![Type::Scalar(ScalarType::I32), view]);
                let binder = inner.mentions(&layer.binder).then(|| layer.binder.clone());
                Type::Array { binder, elem: Box::new(inner), len: layer.len.clone() }
            }
        };
    }
    Ok(StorageLayout { param: Name::from(param), dim_sizes, lvl_sizes, buffers, nse: count, view, nat_vars })
}

//! Tensor parameters: the coordinate-hierarchy view as an expression over
//! the storage buffers.
//!
//! For `A : tensor<?x?xf32, #CSR>` the program sees
//! `[i -> [(crd, f32)]_{toNat(A_pos1@(i+1) - A_pos1@i)}]_A_dim0` (LANGUAGE.md
//! §6). Rather than teach every pass about encodings, the view is built as
//! an ordinary expression over the storage buffers (which are kernel
//! parameters with nested position-dependent types):
//!
//! ```text
//! generate(A_dim0, fun(A_i => generate(toNat(A_pos1@(A_i+1) - A_pos1@A_i), fun(A_p1 =>
//!     (A_crd1@A_i@A_p1, A_values@A_i@A_p1)))))
//! ```
//!
//! A dense (or batch) level is a `generate` over its size (the element *is*
//! the child, indexed by coordinate); a compressed, n:m or loose level is a
//! `generate` over its row length whose elements pair the stored coordinate
//! with the child; a singleton pairs a coordinate without a new layer;
//! trailing dense levels stay plain arrays inside the leaf values. (A lambda
//! parameter is named after its level's binder in the view type: `A_i`,
//! `A_c0`, `A_p1`.) The interpreter, lowering and the backends see
//! only `generate`, `let`, indexing and tuples, so lowering turns the view
//! into direct loads (the `generate`s fuse with the maps over them).
//! Coordinates keep their storage type (`i64` for native width, `u32` for
//! `crdWidth = 32`, …); any integer indexes an array.
//!
//! Below a loose_compressed level the buffers are flat (see
//! `heddle_ir::encoding::storage_types`), so the path of indices restarts at
//! the child's absolute position, computed from plain variables:
//!
//! ```text
//! generate(A_dim0, fun(A_i => let A_lo1 = A_pos1@((2 * A_i : i64)) in
//!   generate(toNat(A_pos1@(2*A_i+1) - A_pos1@(2*A_i)), fun(A_p1 =>
//!     let A_q1 = (toNat(A_lo1) + toNat(A_p1) : i64) in (A_crd1@A_q1, A_values@A_q1)))))
//! ```
//!
//! `A_q1` is data-dependent; indexing checks it against the buffers' length
//! (`A_crd1_len`), and lowering's tidying drops that check because input
//! binding has checked `0 <= lo <= hi <= A_crd1_len` (`bounded_positions`).
//!
//! Leading batch levels are `generate`s like dense ones, and every buffer is
//! indexed by their parameters first: a batch's (loose_)compressed level
//! reads its parent's start in the batch's row of positions and restarts the
//! path at the child's position in the batch's rows (batched CSR:
//! `let A_lo2 = A_pos2@A_b@(A_i : i64) in … (A_crd2@A_b@A_q2, A_values@A_b@A_q2)`).

use heddle_ir::encoding::Encoding;
use heddle_ir::encoding::storage_types::{BufferKind, StorageLayout};
use heddle_ir::expr::{ExprKind, Param};
use heddle_ir::{Diagnostic, Expr, Name, Nat, ScalarType, Span, Type};

fn indexed(buf: &Name, path: &[Expr]) -> Expr {
    path.iter().fold(Expr::var(buf.clone()), |e, i| {
        Expr::synth(ExprKind::Index { array: Box::new(e), index: Box::new(i.clone()) })
    })
}
/// `generate(len, fun(param => body))`, located at the tensor parameter
/// `span` (where a level's positions past `int`'s range are reported).
fn generate(len: Nat, param: Name, body: Expr, span: Span) -> Expr {
    let f = Expr::synth(ExprKind::Fun {
        params: vec![Param { name: param, ty: None, span: Span::DUMMY }],
        body: Box::new(body),
    });
    Expr {
        kind: ExprKind::App {
            func: Box::new(Expr::var("generate")),
            args: vec![Expr::synth(ExprKind::NatValue(len)), f],
        },
        span,
    }
}
fn let_in(name: Name, value: Expr, body: Expr) -> Expr {
    Expr::synth(ExprKind::Let { name, value: Box::new(value), body: Box::new(body) })
}
/// `(n : i64)`: a natural as a value of index width.
fn i64_nat(n: Nat) -> Expr {
    let e = Expr::synth(ExprKind::NatValue(n));
    Expr::synth(ExprKind::Annot { expr: Box::new(e), ty: Type::Scalar(ScalarType::I64) })
}
fn pair(a: Expr, b: Expr) -> Expr {
    Expr::synth(ExprKind::Tuple(vec![a, b]))
}
fn proj(e: Expr, k: u32) -> Expr {
    Expr::synth(ExprKind::Proj { tuple: Box::new(e), field: k })
}

/// The scalar type at the leaf of a view (arrays and tuples down to the last field).
fn leaf_scalar(view: &Type) -> Option<ScalarType> {
    match view {
        Type::Scalar(s) => Some(*s),
        Type::Array { elem, .. } => leaf_scalar(elem),
        Type::Tuple(ts) => ts.last().and_then(leaf_scalar),
        _ => None,
    }
}

/// A loose_compressed level's lets: its parent's start and its child's position.
struct Loose {
    lo: Name,
    lo_value: Expr,
    q: Name,
    q_value: Expr,
}

/// The view of tensor parameter `param` as an expression over its storage.
pub fn view_expr(enc: &Encoding, layout: &StorageLayout, param: &Name, span: Span) -> Result<Expr, Diagnostic> {
    let unsupported = |what: &str| {
        Diagnostic::new(span, format!("running kernels over {what} levels is not supported yet"))
            .with_label("this tensor parameter")
            .with_note("the kernel type-checks; heddle cannot build its view for execution")
    };
    let buffer = |kind: BufferKind, level: Option<usize>| {
        layout.buffers.iter().find(|b| b.kind == kind && b.level == level).map(|b| b.name.clone())
    };
    // An iso-valued tensor (`explicitVal`, `storage_types::iso_value`) has no
    // values buffer: every entry of its view is the constant, so lowering sees
    // a literal and no backend ever binds, packs or transfers values.
    let leaf_elem = leaf_scalar(&layout.view);
    let values = match (layout.iso, leaf_elem) {
        (Some(_), Some(_)) => None,
        _ => Some(buffer(BufferKind::Values, None).ok_or_else(|| unsupported("value-less"))?),
    };
    // Levels after the last non-dense one stay inside the leaf, as plain arrays.
    let levels = &enc.levels;
    let walked = levels.iter().rposition(|l| !l.format.is_dense_like()).map_or(0, |k| k + 1);
    // View binder -> lambda parameter, for the lengths and flat positions.
    let mut binders: Vec<(Name, Name)> = Vec::new();
    let lambdas = |n: &Nat, binders: &[(Name, Name)]| {
        binders.iter().fold(n.clone(), |n, (b, p)| n.subst(b, &Nat::ToNat(Box::new(Expr::var(p.clone())))))
    };
    // The indices into the buffers below the current level: the lambda
    // parameters of nested levels; below a loose level, its flat position first.
    let mut path: Vec<Expr> = Vec::new();
    // Build from the leaf outwards: first collect the structure, then fold.
    enum Step {
        Layer { param: Name, len: Nat, crd: Option<Expr>, loose: Option<Box<Loose>> },
        Singleton { crd: Expr },
    }
    let mut steps = Vec::new();
    let mut aos_start: Option<(usize, Name)> = None;
    for (l, level) in levels.iter().enumerate().take(walked) {
        let crd_of = |path: &[Expr], aos: &Option<(usize, Name)>| -> Result<Expr, Diagnostic> {
            if let Some((start, buf)) = aos
                && enc.aos_run(*start).is_some_and(|r| r.contains(&l))
            {
                return Ok(proj(indexed(buf, path), (l - start + 1) as u32));
            }
            let crd = buffer(BufferKind::Coordinates, Some(l)).ok_or_else(|| unsupported("coordinate-less"))?;
            Ok(indexed(&crd, path))
        };
        let access = layout.levels.get(l).ok_or_else(|| unsupported("these"))?;
        let Some((binder, len)) = &access.layer else {
            steps.push(Step::Singleton { crd: crd_of(&path, &aos_start)? });
            continue;
        };
        let lambda = Name::from(format!("{param}_{binder}"));
        // The length mentions outer view binders as naturals; here they are lambda parameters.
        let len = lambdas(len, &binders);
        binders.push((binder.clone(), lambda.clone()));
        let mut loose = None;
        match &access.loose_lo {
            Some(lo_at) => {
                // `let A_lo{l} = A_pos{l}@(2q) in generate(len, fun(A_p{l} =>
                //    let A_q{l} = A_lo{l} + A_p{l} in …))`: the start is read once per
                // parent, the child's position computed once per child, both from plain
                // variables; positions at index width (`i64`), not `int`.
                let pos = buffer(BufferKind::Positions, Some(l)).ok_or_else(|| unsupported("position-less"))?;
                let (lo, q) = (Name::from(format!("{param}_lo{l}")), Name::from(format!("{param}_q{l}")));
                // In a batch, the batch's row of positions first.
                let batch: Vec<Expr> =
                    binders.iter().take(layout.batch_levels).map(|(_, p)| Expr::var(p.clone())).collect();
                let lo_value = Expr::synth(ExprKind::Index {
                    array: Box::new(indexed(&pos, &batch)),
                    index: Box::new(i64_nat(lambdas(lo_at, &binders))),
                });
                let child = Nat::add(
                    Nat::ToNat(Box::new(Expr::var(lo.clone()))),
                    Nat::ToNat(Box::new(Expr::var(lambda.clone()))),
                );
                loose = Some(Box::new(Loose { lo, lo_value, q: q.clone(), q_value: i64_nat(child) }));
                path = batch;
                path.push(Expr::var(q));
            }
            None => path.push(Expr::var(lambda.clone())),
        }
        if enc.aos_run(l).is_some()
            && let Some(crd) = buffer(BufferKind::Coordinates, Some(l))
        {
            aos_start = Some((l, crd));
        }
        let crd = if level.format.is_dense_like() {
            None
        } else if level.format == heddle_ir::encoding::LevelFormat::Banded {
            // heddle's skyline: no coordinates stored; child p of row i (of
            // len children, the last on the diagonal) is column i + 1 - len + p.
            let row = binders.first().map(|(_, r)| r.clone()).ok_or_else(|| unsupported("row-less banded"))?;
            let var = |x: &Name| Nat::ToNat(Box::new(Expr::var(x.clone())));
            Some(i64_nat(Nat::sub(Nat::add(Nat::add(var(&row), Nat::Lit(1)), var(&lambda)), len.clone())))
        } else {
            Some(crd_of(&path, &aos_start)?)
        };
        steps.push(Step::Layer { param: lambda, len, crd, loose });
    }
    let mut body = match (&values, layout.iso, leaf_elem) {
        (Some(values), ..) => indexed(values, &path),
        (None, Some(iso), Some(elem)) => iso.expr(elem),
        (None, ..) => return Err(unsupported("value-less")),
    };
    for step in steps.into_iter().rev() {
        body = match step {
            Step::Singleton { crd } => pair(crd, body),
            Step::Layer { param, len, crd, loose } => {
                let element = match crd {
                    Some(c) => pair(c, body),
                    None => body,
                };
                match loose {
                    None => generate(len, param, element, span),
                    Some(l) => {
                        let Loose { lo, lo_value, q, q_value } = *l;
                        let_in(lo, lo_value, generate(len, param, let_in(q, q_value, element), span))
                    }
                }
            }
        };
    }
    Ok(body)
}

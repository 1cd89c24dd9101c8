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
//! A dense level is a `generate` over its size (the element *is* the child,
//! indexed by coordinate); a compressed, n:m or loose level is a `generate`
//! over its row length whose elements pair the stored coordinate with the
//! child; a singleton pairs a coordinate without a new layer; trailing dense
//! levels stay plain arrays inside the leaf values. The interpreter, lowering
//! and the backends see only `generate`, indexing and tuples, so lowering turns
//! the view into direct loads (the `generate`s fuse with the maps over them).
//! Coordinates keep their storage type (`i64` for native width, `u32` for
//! `crdWidth = 32`, …); any integer indexes an array.

use heddle_ir::encoding::storage_types::{BufferKind, StorageLayout};
use heddle_ir::encoding::{Encoding, LevelFormat};
use heddle_ir::expr::{ExprKind, Param};
use heddle_ir::{Diagnostic, Expr, Name, Nat, Span, Type};

fn index(e: Expr, i: &Name) -> Expr {
    Expr::synth(ExprKind::Index { array: Box::new(e), index: Box::new(Expr::var(i.clone())) })
}
fn indexed(buf: &Name, path: &[Name]) -> Expr {
    path.iter().fold(Expr::var(buf.clone()), index)
}
fn generate(len: Nat, param: Name, body: Expr) -> Expr {
    let f = Expr::synth(ExprKind::Fun { params: vec![Param { name: param, ty: None, span: Span::DUMMY }], body: Box::new(body) });
    Expr::synth(ExprKind::App { func: Box::new(Expr::var("generate")), args: vec![Expr::synth(ExprKind::NatValue(len)), f] })
}
fn pair(a: Expr, b: Expr) -> Expr {
    Expr::synth(ExprKind::Tuple(vec![a, b]))
}
fn proj(e: Expr, k: u32) -> Expr {
    Expr::synth(ExprKind::Proj { tuple: Box::new(e), field: k })
}

/// The view of tensor parameter `param` as an expression over its storage.
pub fn view_expr(enc: &Encoding, layout: &StorageLayout, param: &Name, span: Span) -> Result<Expr, Diagnostic> {
    let unsupported = |what: &str| {
        Diagnostic::new(span, format!("running kernels over {what} levels is not supported yet"))
            .with_label("this tensor parameter")
            .with_note("the kernel type-checks; heddle cannot build its view for execution")
    };
    let buffer = |kind: BufferKind, level: Option<usize>| {
        layout.buffers.iter().find(|b| b.kind == kind && b.level == level).map(|b| (b.name.clone(), b.ty.clone()))
    };
    let (values, values_ty) = buffer(BufferKind::Values, None).ok_or_else(|| unsupported("value-less"))?;
    // The layers of the values buffer: one per level that adds one, outermost first.
    let mut layers: Vec<(Option<Name>, Nat)> = Vec::new();
    let mut cur = &values_ty;
    while let Type::Array { binder, elem, len } = cur {
        layers.push((binder.clone(), len.clone()));
        cur = elem;
    }
    // Levels after the last non-dense one stay inside the leaf, as plain arrays.
    let levels = &enc.levels;
    let walked = levels.iter().rposition(|l| !l.format.is_dense_like()).map_or(0, |k| k + 1);
    let mut binders: Vec<(Name, Name)> = Vec::new(); // storage binder -> lambda parameter
    let mut path: Vec<Name> = Vec::new();
    // Build from the leaf outwards: first collect the structure, then fold.
    enum Step {
        Layer { param: Name, len: Nat, crd: Option<Expr> },
        Singleton { crd: Expr },
    }
    let mut steps = Vec::new();
    let mut layer = 0;
    let mut aos_start: Option<(usize, Name)> = None;
    for (l, level) in levels.iter().enumerate().take(walked) {
        let crd_of = |path: &[Name], aos: &Option<(usize, Name)>| -> Result<Expr, Diagnostic> {
            if let Some((start, buf)) = aos
                && enc.aos_run(*start).is_some_and(|r| r.contains(&l)) {
                    return Ok(proj(indexed(buf, path), (l - start + 1) as u32));
                }
            let (crd, _) = buffer(BufferKind::Coordinates, Some(l)).ok_or_else(|| unsupported("coordinate-less"))?;
            Ok(indexed(&crd, path))
        };
        match level.format {
            LevelFormat::Singleton => {
                steps.push(Step::Singleton { crd: crd_of(&path, &aos_start)? });
            }
            LevelFormat::LooseCompressed => return Err(unsupported("loose_compressed")),
            LevelFormat::Batch => return Err(unsupported("batch")),
            format => {
                let (storage_binder, len) = layers.get(layer).cloned().ok_or_else(|| unsupported("these"))?;
                layer += 1;
                let lambda = Name::from(format!("{param}_{}", storage_binder.as_ref().map_or(format!("l{l}"), |b| b.to_string())));
                // The length mentions outer storage binders as naturals; here they are lambda parameters.
                let len = binders.iter().fold(len, |n, (b, p)| n.subst(b, &Nat::ToNat(Box::new(Expr::var(p.clone())))));
                if let Some(b) = storage_binder {
                    binders.push((b, lambda.clone()));
                }
                path.push(lambda.clone());
                if enc.aos_run(l).is_some()
                    && let Some((crd, _)) = buffer(BufferKind::Coordinates, Some(l)) {
                        aos_start = Some((l, crd));
                    }
                let crd = if format.is_dense_like() { None } else { Some(crd_of(&path, &aos_start)?) };
                steps.push(Step::Layer { param: lambda, len, crd });
            }
        }
    }
    let mut body = indexed(&values, &path);
    for step in steps.into_iter().rev() {
        body = match step {
            Step::Singleton { crd } => pair(crd, body),
            Step::Layer { param, len, crd } => {
                let element = match crd {
                    Some(c) => pair(c, body),
                    None => body,
                };
                generate(len, param, element)
            }
        };
    }
    Ok(body)
}

//! Vectors `<T>w` in compiled code.
//!
//! Lowering sees a vector as the tuple of its `w` lanes. Before a kernel is
//! lowered, every vector type in it becomes the tuple `(T, …, T)`
//! ([`with_lanes`]), so records, buffers, `select`, `let` and writing results
//! handle vectors as they handle tuples, and code generation sees only
//! scalars. Three things are the vector's own:
//!
//! - `asVector(w)` is a view whose element `k` gathers elements
//!   `w·k … w·k + w − 1` of its array (`ViewKind::Lanes`);
//! - `asScalar` is a view whose element `k` is lane `k mod w` of vector
//!   `k / w` (`ViewKind::Unlanes`);
//! - arithmetic on vectors is lane by lane (`operators.rs`).
//!
//! The result's values are read back by the runtime through the kernel's own
//! type, where a vector is `w` consecutive fields of its record.
//!
//! This pass runs before `complex::with_pairs`: a vector of complex numbers
//! becomes a tuple of `w` complex lanes here, then a tuple of `w` pairs
//! there (the layout of the complex array it groups), and its lane-by-lane
//! arithmetic is rewritten there; a lane is then a pair, not a scalar, which
//! `asScalar`'s run-time lane choice selects field by field.

use super::{bug, unsupported};
use heddle_ir::loops::ResultLayout;
use heddle_ir::{Diagnostic, Span, Type};
use heddle_typeck::{Kernel, KernelParam, TExpr, TKind};

/// `t` with every vector of a known width replaced by the tuple of its lanes.
pub fn lanes_type(t: &Type) -> Type {
    match t {
        Type::Vector { elem, width } => match width.const_value().filter(|w| (2..=16).contains(w)) {
            Some(w) => Type::Tuple(vec![lanes_type(elem); w as usize]),
            None => t.clone(),
        },
        Type::Array { binder, elem, len } => {
            Type::Array { binder: binder.clone(), elem: Box::new(lanes_type(elem)), len: len.clone() }
        }
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(lanes_type).collect()),
        Type::Fun { param, from, to } => {
            Type::Fun { param: param.clone(), from: Box::new(lanes_type(from)), to: Box::new(lanes_type(to)) }
        }
        Type::NatFun { var, body } => Type::NatFun { var: var.clone(), body: Box::new(lanes_type(body)) },
        Type::Scalar(_) | Type::Tensor(_) | Type::Meta(_) => t.clone(),
    }
}

fn mentions_vector(t: &Type) -> bool {
    match t {
        Type::Vector { .. } => true,
        Type::Array { elem, .. } => mentions_vector(elem),
        Type::Tuple(ts) => ts.iter().any(mentions_vector),
        Type::Fun { from, to, .. } => mentions_vector(from) || mentions_vector(to),
        Type::NatFun { body, .. } => mentions_vector(body),
        Type::Scalar(_) | Type::Tensor(_) | Type::Meta(_) => false,
    }
}

fn expr_mentions_vector(e: &TExpr) -> bool {
    let mut found = mentions_vector(&e.ty);
    if let TKind::Lambda { params, .. } = &e.kind {
        found |= params.iter().any(|(_, t)| mentions_vector(t));
    }
    e.for_each_child(&mut |c| found |= expr_mentions_vector(c));
    found
}

fn relabel(e: &mut TExpr) {
    e.ty = lanes_type(&e.ty);
    if let TKind::Lambda { params, .. } = &mut e.kind {
        for (_, t) in params.iter_mut() {
            *t = lanes_type(t);
        }
    }
    e.for_each_child_mut(&mut relabel);
}

/// The kernel as lowering sees it: `None` when it has no vectors, else a
/// copy with each vector type replaced by the tuple of its lanes. A kernel
/// parameter of a vector type is refused (its data would be laid out as
/// nested arrays; pass scalars and use `asVector`).
pub fn with_lanes(kernel: &Kernel) -> Result<Option<Kernel>, Diagnostic> {
    for p in &kernel.params {
        if let KernelParam::Value { name, ty, span } = p
            && mentions_vector(ty)
        {
            // Not `unsupported`: the interpreter takes no vector input either.
            return Err(Diagnostic::new(
                *span,
                format!("a kernel parameter of vector type (`{name}`: {ty}) cannot be compiled yet"),
            )
            .with_label("no backend takes a vector as an input")
            .with_note("pass an array of scalars and group it in the kernel with `asVector(w)`"));
        }
    }
    if !expr_mentions_vector(&kernel.body) {
        return Ok(None);
    }
    let mut k = kernel.clone();
    relabel(&mut k.body);
    k.ty = lanes_type(&k.ty);
    Ok(Some(k))
}

/// Gives the result's layout back the kernel's own types, where lowering
/// saw tuples of lanes (and pairs of parts, `complex.rs`): the runtime reads
/// a vector back as a vector, a complex number as a complex number.
pub fn restore_result_types(layout: &mut ResultLayout, own: &Type) {
    match (layout, own) {
        (ResultLayout::Flat { ty, .. }, own) if *ty == super::complex::pairs_type(&lanes_type(own)) => {
            *ty = own.clone()
        }
        (ResultLayout::Tuple(parts), Type::Tuple(owns)) if parts.len() == owns.len() => {
            for (p, o) in parts.iter_mut().zip(owns) {
                restore_result_types(p, o);
            }
        }
        _ => {}
    }
}

/// The width of the vectors of an array of vectors as lowering sees it (an
/// array of tuples of lanes).
pub fn width(ty: &Type, span: Span) -> Result<usize, Diagnostic> {
    match ty {
        Type::Array { elem, .. } => match &**elem {
            Type::Tuple(lanes) => Ok(lanes.len()),
            other => Err(unsupported(span, &format!("vectors of type {other}"))),
        },
        _ => Err(bug(span, "an array of vectors that is not an array")),
    }
}

//! Complex numbers (`complex<f32>`, `complex<f64>`) are not compiled yet: the
//! reference interpreter runs them. Lowering refuses a kernel that mentions
//! one, at the first parameter or expression that does, before any backend
//! sees it (so neither Cranelift nor OpenCL ever meets a complex scalar).

use super::unsupported;
use heddle_ir::{Diagnostic, ScalarType, Span, Type};
use heddle_typeck::{Kernel, KernelParam, TExpr};

/// The complex scalar type `ty` holds anywhere (in a tuple, an array, a
/// tensor's elements, a function's types), if any.
fn complex_in(ty: &Type) -> Option<ScalarType> {
    match ty {
        Type::Scalar(s) => s.is_complex().then_some(*s),
        Type::Tensor(t) => t.elem.is_complex().then_some(t.elem),
        Type::Tuple(ts) => ts.iter().find_map(complex_in),
        Type::Array { elem, .. } | Type::Vector { elem, .. } => complex_in(elem),
        Type::Fun { from, to, .. } => complex_in(from).or_else(|| complex_in(to)),
        Type::NatFun { body, .. } => complex_in(body),
        Type::Meta(_) => None,
    }
}

/// The innermost expression of `t` whose type is or holds a complex number.
fn innermost_complex(t: &TExpr) -> Option<(Span, ScalarType)> {
    let mut found = None;
    t.for_each_child(&mut |c| {
        if found.is_none() {
            found = innermost_complex(c);
        }
    });
    found.or_else(|| complex_in(&t.ty).map(|s| (t.span, s)))
}

/// Refuses a kernel that uses complex numbers, with the place that does.
pub(super) fn refuse_complex(kernel: &Kernel) -> Result<(), Diagnostic> {
    for p in &kernel.params {
        if let KernelParam::Value { ty, span, .. } | KernelParam::Tensor { ty, span, .. } = p
            && let Some(s) = complex_in(ty)
        {
            return Err(unsupported(*span, &format!("a parameter holding {s} values (complex numbers)")));
        }
    }
    match innermost_complex(&kernel.body) {
        Some((span, s)) => Err(unsupported(span, &format!("arithmetic on {s} (complex numbers)"))),
        None => Ok(()),
    }
}

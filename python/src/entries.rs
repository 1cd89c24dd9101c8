//! Which tensor parameters a kernel reads only as a sum of products of
//! their entries, so that its result does not depend on the order of the
//! entries in a row or on whether a coordinate is repeated.
//!
//! The fast path ([`crate::fast`]) validates a scipy array's coordinates
//! (in range, strictly increasing in each row) before the kernel reads them
//! in place: that is what the general path requires of an array it takes
//! as it is, and it sorts and sums any other first. The sweep costs about
//! 6 µs of a 20 000-nonzero SpMV's call (docs/performance.md, issue 18).
//! For a kernel that computes, per row, `Σ_e v_e · F(c_e)`, with `F` not
//! depending on the entry otherwise, the unsorted entries give the same sum
//! (reassociated) and entries repeated at one coordinate give
//! `(v₁ + v₂) · F(c)` as `v₁·F(c) + v₂·F(c)` (distributed): the general
//! path's result up to float rounding, as `reduce` may already reassociate.
//! Such a kernel needs no sortedness sweep; its coordinates still reach
//! memory only through `xs@e.1`, which the checked code range-checks at
//! every use, and a failed check sends the call to the general path, which
//! reports the bad coordinate as before.
//!
//! Recognised, in the elaborated program (definitions inlined, every
//! primitive applied to all its arguments), with `A` the tensor parameter,
//! `E` a product of `e.2` and a factor that reads the entry only through
//! `X@e.1` (`X` an array parameter exactly as long as the compressed
//! level's size, so that its range check is the coordinate's), and `0` a
//! literal zero:
//!
//! - rows summed (CSR SpMV):
//!   `A :>> map(fun(row => row :>> map(fun(e => E)) :>> reduce(+, 0)))`;
//! - columns scattered (CSC SpMV):
//!   `zip(A, X) :>> map(fun(c => c.1 :>> map(fun(e => (e.1, E))))) :>> join :>> scatterAdd(n)`,
//!   where `E` may read `c.2` but not `c.1`.
//!
//! Anything else keeps the sweep. The test is syntactic and conservative:
//! it goes by names, so a body that binds a parameter's name again (in a
//! `fun` or `let`) keeps the sweep, and a name counts as used wherever it
//! occurs.

use heddle_ir::expr::BinOp;
use heddle_ir::{Name, Nat, Type};
use heddle_typeck::{Kernel, KernelParam, TExpr, TKind, TLit};

/// Whether `kernel` reads tensor parameter `tensor` only in one of the
/// forms above: its result then does not depend on the order of a row's
/// entries or on repeated coordinates, up to float rounding.
pub fn sum_of_entries(kernel: &Kernel, tensor: &str) -> bool {
    // The compressed level's size: what every coordinate must lie below.
    let Some(compressed) = kernel.params.iter().find_map(|p| match p {
        KernelParam::Tensor { name, encoding, .. } if name.as_str() == tensor => {
            heddle_runtime::sparse::csr::csr_like(encoding).map(|(_, inner)| inner)
        }
        _ => None,
    }) else {
        return false;
    };
    let bound = Nat::var(format!("{tensor}_dim{compressed}"));
    // Array parameters exactly that long: indexing one by a coordinate is
    // checked against that size, as the general path checks the coordinate.
    let names: Vec<&Name> = kernel.params.iter().map(KernelParam::name).collect();
    let arrays: Vec<&Name> = kernel
        .params
        .iter()
        .filter_map(|p| match p {
            KernelParam::Value { name, ty: Type::Array { binder: None, len, .. }, .. } if *len == bound => Some(name),
            _ => None,
        })
        .collect();
    let is_array = |e: &TExpr| matches!(&e.kind, TKind::Var(x) if arrays.contains(&x));
    // The checker binds each tensor's view (built from its buffers) around the body.
    let mut body = &kernel.body;
    while let TKind::Let { name, body: inner, .. } = &body.kind
        && kernel.params.iter().any(|p| matches!(p, KernelParam::Tensor { name: t, .. } if t == name))
    {
        body = inner;
    }
    // No binder inside the body may take a parameter's name: a name then
    // always means the parameter (the test below goes by names).
    if binds_any(body, &names) {
        return false;
    }
    rows_summed(body, tensor, &is_array) || columns_scattered(body, tensor, &names, &is_array)
}

/// `A :>> map(fun(row => row :>> map(fun(e => E)) :>> reduce(+, 0)))`.
fn rows_summed(body: &TExpr, tensor: &str, is_array: &dyn Fn(&TExpr) -> bool) -> bool {
    let Some((row, per_row, over)) = mapped(body) else { return false };
    if !is_var(over, tensor) {
        return false;
    }
    let Some(summed) = sum(per_row) else { return false };
    let Some((e, entry, over)) = mapped(summed) else { return false };
    // Neither the row nor the tensor may be read again inside `E`.
    is_var(over, row) && linear_in_value(entry, e, is_array, &[(row, NOWHERE), (tensor, NOWHERE)])
}

/// `zip(A, X) :>> map(fun(c => c.1 :>> map(fun(e => (e.1, E))))) :>> join :>> scatterAdd(n)`.
fn columns_scattered(body: &TExpr, tensor: &str, names: &[&Name], is_array: &dyn Fn(&TExpr) -> bool) -> bool {
    let TKind::Prim { name: "scatterAdd", nats, args, .. } = &body.kind else { return false };
    // Scattered into exactly the compressed level's size (the rows of a CSC tensor).
    let [joined] = args.as_slice() else { return false };
    if !matches!(nats.as_slice(), [Nat::Var(n)] if n.as_str() == format!("{tensor}_dim0")) {
        return false;
    }
    let TKind::Prim { name: "join", args, .. } = &joined.kind else { return false };
    let [columns] = args.as_slice() else { return false };
    let Some((c, per_column, over)) = mapped(columns) else { return false };
    let TKind::Prim { name: "zip", args, .. } = &over.kind else { return false };
    // `X` any array parameter (`zip` gives it the columns' count).
    let [a, x] = args.as_slice() else { return false };
    if !is_var(a, tensor)
        || !matches!(&x.ty, Type::Array { .. })
        || !matches!(&x.kind, TKind::Var(n) if names.contains(&n))
    {
        return false;
    }
    let Some((e, pair, over)) = mapped(per_column) else { return false };
    if !is_proj(over, c, 0) {
        return false;
    }
    let TKind::Tuple(parts) = &pair.kind else { return false };
    let [index, value] = parts.as_slice() else { return false };
    // `c.2` (the vector's element) may scale the entry; `c.1` (the column) may not.
    is_proj(index, e, 0) && linear_in_value(value, e, is_array, &[(c, 1), (tensor, NOWHERE)])
}

/// A component no tuple has: a name listed with it may not occur at all.
const NOWHERE: usize = usize::MAX;

/// `f(elem)` mapped over `over` by a `map` of any kind: (the element's
/// name, the body, `over`).
fn mapped(e: &TExpr) -> Option<(&str, &TExpr, &TExpr)> {
    let TKind::Prim { name, args, .. } = &e.kind else { return None };
    if !matches!(*name, "map" | "mapSeq" | "mapPar" | "mapGlobal" | "mapWorkgroup" | "mapLocal") {
        return None;
    }
    let [f, over] = args.as_slice() else { return None };
    let TKind::Lambda { params, body } = &f.kind else { return None };
    let [(elem, _)] = params.as_slice() else { return None };
    Some((elem.as_str(), body, over))
}

/// The array `reduce(+, 0)` sums (`reduce`, not `reduceSeq`: the order is
/// free already).
fn sum(e: &TExpr) -> Option<&TExpr> {
    let TKind::Prim { name: "reduce", args, .. } = &e.kind else { return None };
    let [op, init, over] = args.as_slice() else { return None };
    let TKind::Lambda { params, body } = &op.kind else { return None };
    let [(a, _), (b, _)] = params.as_slice() else { return None };
    let TKind::Binary { op: BinOp::Add, lhs, rhs } = &body.kind else { return None };
    let (a, b) = (a.as_str(), b.as_str());
    let adds = is_var(lhs, a) && is_var(rhs, b) || is_var(lhs, b) && is_var(rhs, a);
    let zero =
        matches!(init.kind, TKind::Lit(TLit::Int(0))) || matches!(init.kind, TKind::Lit(TLit::Float(z)) if z == 0.0);
    (adds && zero).then_some(over)
}

/// `e.2`, `e.2 * F` or `F * e.2`, where `F` reads `e` only as `X@e.1`
/// (`X` a parameter) and every name in `allowed` only as its given
/// component (0-based; [`NOWHERE`]: not at all).
fn linear_in_value(body: &TExpr, e: &str, is_array: &dyn Fn(&TExpr) -> bool, allowed: &[(&str, usize)]) -> bool {
    if is_proj(body, e, 1) {
        return true;
    }
    let TKind::Binary { op: BinOp::Mul, lhs, rhs } = &body.kind else { return false };
    let factor = if is_proj(lhs, e, 1) {
        rhs
    } else if is_proj(rhs, e, 1) {
        lhs
    } else {
        return false;
    };
    uses_only(factor, e, is_array, allowed)
}

/// Whether `f` reads `e` only as `X@e.1` and each name of `allowed` only as
/// its given component (`c.2`, 0-based 1).
fn uses_only(f: &TExpr, e: &str, is_array: &dyn Fn(&TExpr) -> bool, allowed: &[(&str, usize)]) -> bool {
    if let TKind::Index { array, index } = &f.kind
        && is_proj(index, e, 0)
    {
        return is_array(array);
    }
    if allowed.iter().any(|&(name, k)| is_proj(f, name, k)) {
        return true;
    }
    if let TKind::Var(x) = &f.kind
        && (x.as_str() == e || allowed.iter().any(|&(name, _)| name == x.as_str()))
    {
        return false;
    }
    let mut ok = true;
    f.for_each_child(&mut |child| ok = ok && uses_only(child, e, is_array, allowed));
    ok
}

/// Whether a `fun` or `let` inside `e` binds one of `names`.
fn binds_any(e: &TExpr, names: &[&Name]) -> bool {
    let binds = match &e.kind {
        TKind::Lambda { params, .. } => params.iter().any(|(p, _)| names.contains(&p)),
        TKind::Let { name, .. } => names.contains(&name),
        _ => false,
    };
    let mut found = binds;
    e.for_each_child(&mut |child| found = found || binds_any(child, names));
    found
}

fn is_var(e: &TExpr, name: &str) -> bool {
    matches!(&e.kind, TKind::Var(x) if x.as_str() == name)
}

/// `tuple.k` (0-based) of the variable `name`.
fn is_proj(e: &TExpr, name: &str, k: usize) -> bool {
    matches!(&e.kind, TKind::Proj { tuple, index } if *index == k && is_var(tuple, name))
}

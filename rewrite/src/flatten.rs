//! Access flattening: the position of a nested array element in the one
//! contiguous buffer that stores it (§5.1 of the paper).

use heddle_ir::nat::fresh_name;
use heddle_ir::{Name, Nat, Type};

/// Why an index could not be flattened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FlattenError {
    /// More indices than array levels.
    #[error("index {position} goes into `{ty}`, which is not an array")]
    NotAnArray {
        /// Which index (from 0).
        position: usize,
        /// The type it would index.
        ty: String,
    },
    /// A type with no flat layout (functions, tensors, unknowns).
    #[error("`{0}` has no flat layout")]
    NoLayout(String),
}

/// The number of scalar slots a value of `ty` occupies. Tuples are one
/// element of an array of structs; vectors occupy their width.
pub fn flat_size(ty: &Type) -> Result<Nat, FlattenError> {
    match ty {
        Type::Scalar(_) | Type::Tuple(_) => Ok(Nat::Lit(1)),
        Type::Vector { width, .. } => Ok(width.clone()),
        Type::Array { binder: None, elem, len } => Ok(mul(len.clone(), flat_size(elem)?)),
        Type::Array { binder: Some(i), elem, len } => {
            // Σ over the positions of the sizes of the elements at each position.
            let k = fresh_name(&Name::from("k"), |n| elem.mentions(n) || len.mentions(n));
            let body = flat_size(&elem.subst_nat(i, &Nat::Var(k.clone())))?;
            Ok(Nat::sum(k, Nat::Lit(0), Nat::sub(len.clone(), Nat::Lit(1)), body))
        }
        other => Err(FlattenError::NoLayout(other.to_string())),
    }
}

/// The flat position of element `indices` of a value of type `ty`, counted in
/// scalar slots: for `[T]_N` at `(i, …)` it is `i * size(T) + …`, for a
/// position-dependent `[i ↦ T(i)]_N` it is
/// `sum(k = 0 .. i-1, size(T(k))) + …` where `…` indexes into `T(i)`.
/// Fewer indices than levels address a whole sub-array (its first slot).
pub fn flat_index(ty: &Type, indices: &[Nat]) -> Result<Nat, FlattenError> {
    flat_at(ty, indices, 0)
}

fn flat_at(ty: &Type, indices: &[Nat], position: usize) -> Result<Nat, FlattenError> {
    let Some((i, rest)) = indices.split_first() else { return Ok(Nat::Lit(0)) };
    match ty {
        Type::Array { binder: None, elem, .. } => {
            Ok(add(mul(i.clone(), flat_size(elem)?), flat_at(elem, rest, position + 1)?))
        }
        Type::Array { binder: Some(b), elem, .. } => {
            let k = fresh_name(&Name::from("k"), |n| elem.mentions(n) || i.mentions(n));
            let before = flat_size(&elem.subst_nat(b, &Nat::Var(k.clone())))?;
            let prefix = Nat::sum(k, Nat::Lit(0), Nat::sub(i.clone(), Nat::Lit(1)), before);
            Ok(add(prefix, flat_at(&elem.subst_nat(b, i), rest, position + 1)?))
        }
        other => Err(FlattenError::NotAnArray { position, ty: other.to_string() }),
    }
}

// Light-weight smart constructors: keep the formula readable (no `* 1`,
// no `+ 0`) without normalising it, so that it reads like the paper's.
fn mul(a: Nat, b: Nat) -> Nat {
    match (&a, &b) {
        (_, Nat::Lit(1)) => a,
        (Nat::Lit(1), _) => b,
        _ => Nat::mul(a, b),
    }
}
fn add(a: Nat, b: Nat) -> Nat {
    match (&a, &b) {
        (_, Nat::Lit(0)) => a,
        (Nat::Lit(0), _) => b,
        _ => Nat::add(a, b),
    }
}

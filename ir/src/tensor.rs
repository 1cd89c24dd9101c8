//! `tensor<...>` types and the text of sparse encodings.
//!
//! The encoding attribute itself (`#sparse_tensor.encoding<{ ... }>`) is kept
//! as its source text plus span here; [`crate::encoding`] parses and verifies it.

use crate::name::Name;
use crate::nat::Nat;
use crate::span::Span;
use crate::types::ScalarType;

/// `tensor<?x8xf32, #ENC>`, or `tensor<?x{n}xf32, #ENC>` with a size given as a natural.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TensorType {
    /// Dimension sizes; `None` is `?`, a number is a literal. A kernel
    /// parameter's sizes are `?` or numbers; an annotation's may be any
    /// natural in scope (`{B_dim1}`), and after type checking every size of
    /// an annotated value is known (inferred where it was `?`).
    pub dims: Vec<Option<Nat>>,
    /// Element type.
    pub elem: ScalarType,
    /// The encoding, if any (a tensor without one is dense).
    pub encoding: Option<EncodingRef>,
}

/// Where a tensor type's encoding comes from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EncodingRef {
    /// `#CSR`, defined by a `#CSR = ...` line.
    Named(Name, Span),
    /// The attribute written in place.
    Inline(EncodingText),
}

/// The verbatim text of `#sparse_tensor.encoding<{ ... }>` and where it is.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EncodingText {
    /// The whole attribute, `#sparse_tensor.encoding<{` to `}>` inclusive.
    pub text: String,
    /// Its location in the source.
    pub span: Span,
}

impl TensorType {
    /// The static sizes (`?` as `None`), or the first size that is neither
    /// `?` nor a number.
    pub fn static_dims(&self) -> Result<Vec<Option<u64>>, &Nat> {
        self.dims
            .iter()
            .map(|d| match d {
                None => Ok(None),
                Some(n) => n.as_lit().and_then(|v| u64::try_from(v).ok()).map(Some).ok_or(n),
            })
            .collect()
    }
}

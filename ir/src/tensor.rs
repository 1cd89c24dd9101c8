//! `tensor<...>` types and the text of sparse encodings.
//!
//! The encoding attribute itself (`#sparse_tensor.encoding<{ ... }>`) is kept
//! as its source text plus span here; [`crate::encoding`] parses and verifies it.

use crate::name::Name;
use crate::span::Span;
use crate::types::ScalarType;

/// `tensor<?x8xf32, #ENC>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TensorType {
    /// Dimension sizes; `None` is `?`.
    pub dims: Vec<Option<u64>>,
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

//! `convert`: any encoding to any encoding, dense included.
//!
//! The general path reads the source's entries as dimension coordinates and
//! assembles the target ([`super::build::pack`]): a sort in the target's
//! level order, then level-by-level assembly. Targets shaped like CSR or CSC
//! take the counting-sort path instead, which also makes CSR ↔ CSC a
//! transpose without comparisons, and dense → CSR a single scan (the dense
//! tensor's nonzeros arrive already in row order).

use super::build::pack;
use super::dense::DenseTensor;
use super::error::Result;
use super::tensor::SparseTensor;
use heddle_ir::ScalarType;
use heddle_ir::encoding::Encoding;

/// Stores the tensor `src` denotes in `target`.
pub fn convert(src: &SparseTensor, target: &Encoding) -> Result<SparseTensor> {
    pack(&src.to_coo(), target, src.elem)
}

/// Stores a dense tensor in `target` (its zeros are not stored, except where
/// the target's dense levels or n:m blocks require them).
pub fn from_dense(d: &DenseTensor, target: &Encoding, elem: ScalarType) -> Result<SparseTensor> {
    pack(&d.to_coo(), target, elem)
}

/// The dense tensor `src` denotes.
pub fn to_dense(src: &SparseTensor) -> Result<DenseTensor> {
    DenseTensor::from_coo(&src.to_coo())
}

//! Sparse tensor storage, Matrix Market / FROSTT I/O and format conversion:
//! the run-time side of MLIR's sparse tensor dialect (`new`, `out`,
//! `convert`, `assemble` / `disassemble`).
//!
//! A [`SparseTensor`] holds exactly the buffers its [`Encoding`] prescribes
//! (per level: positions and coordinates at the declared widths; the values),
//! in the layout MLIR uses, so its `.json` form ([`json`]) is what
//! `sparse_tensor.print` shows. Conversion follows Chou et al.'s three phases
//! (coordinate remapping, attribute queries that size the output once,
//! level-by-level assembly), see [`build`] and [`mod@convert`].
//!
//! Values are kept as `f64`, which represents every `f32` and every integer up
//! to 2^53 exactly; the tensor's element type decides how they are written.
//!
//! [`Encoding`]: heddle_ir::encoding::Encoding

pub mod assemble;
pub mod batch;
mod blocked;
pub mod buffer;
pub mod build;
pub mod convert;
pub mod coo;
mod counting;
pub mod csr;
pub mod dense;
mod ell;
pub mod error;
pub mod estimate;
mod fastnum;
pub mod file;
pub mod inspect;
pub mod json;
pub mod mtx;
pub mod npz;
mod partition;
pub mod result;
pub mod sell;
pub mod stats;
pub mod tensor;
pub(crate) mod text;
pub mod tns;
pub mod write;

pub use buffer::IndexBuf;
pub use convert::convert;
pub use coo::Coo;
pub use dense::DenseTensor;
pub use error::SparseError;
pub use tensor::SparseTensor;

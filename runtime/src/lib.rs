//! # heddle-runtime
//!
//! Run-time values ([`value`]), the reference interpreter ([`interp`]), and
//! the inputs and outputs of `heddle run` ([`io`]): reading `.npy` / `.json`
//! files, solving natural parameters from input lengths, validating every
//! input against its type before anything runs, and writing results.
#![warn(missing_docs)]

#[cfg(feature = "cpu")]
pub mod cpu;
pub mod interp;
pub mod io;
pub mod launch;
pub mod limits;
pub mod loops_interp;
pub mod oclgrind;
pub mod opencl;
pub mod pages;
pub mod profile;
pub mod scalars;
pub mod sparse;
pub mod value;

//! # heddle
//!
//! A compiler for a functional pattern IR with dependent types, in the Lift
//! style: array lengths are type-level naturals, position-dependent arrays
//! `[i -> T]_N` and `toNat(expr)` make sparse formats ordinary types.
//!
//! This crate is the command-line tool and a thin facade over the member
//! crates: [`ir`] (syntax), [`typeck`] (dependent type checking), [`runtime`]
//! (values, I/O, the reference interpreter).
//!
//! ```
//! let src = "nFun(n => fun(xs: [float]_n => xs :>> reduce(+, 0)))";
//! let file = heddle::source::SourceFile::new("sum.hdl", src);
//! let (_, kernel) = heddle::check_source(&file).unwrap();
//! assert_eq!(kernel.ty.to_string(), "(n: nat) -> [float]_n -> float");
//! ```
#![warn(missing_docs)]

pub mod cpu;
pub mod opencl;
pub mod source;

pub use heddle_ir as ir;
pub use heddle_runtime as runtime;
pub use heddle_typeck as typeck;

use heddle_ir::{Diagnostic, Program};
use heddle_typeck::Kernel;

/// Parses and type-checks a source file.
pub fn check_source(file: &source::SourceFile) -> Result<(Program, Kernel), Vec<Diagnostic>> {
    let program = heddle_ir::parser::parse_program(&file.text)?;
    let kernel = heddle_typeck::check_program(&program)?;
    Ok((program, kernel))
}

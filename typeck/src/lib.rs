//! # heddle-typeck
//!
//! Dependent type checking for heddle programs: array lengths are naturals
//! ([`heddle_ir::Nat`]) compared by their normal form; position-dependent
//! arrays bring their binder into scope for the element type; `toNat(e)` may
//! only use names in scope where it stands; every primitive is typed by
//! instantiating its signature from `prims.sig`.
//!
//! The result, a [`typed::Kernel`], is the elaborated program every later
//! pass works on.
//!
//! ```
//! let src = "nFun(n => fun(xs: [float]_n => xs :>> map(fun(x => x * 2)) :>> reduce(+, 0)))";
//! let program = heddle_ir::parser::parse_program(src).unwrap();
//! let kernel = heddle_typeck::check_program(&program).unwrap();
//! assert_eq!(kernel.ty.to_string(), "(n: nat) -> [float]_n -> float");
//! ```
#![warn(missing_docs)]

pub mod check;
mod kernel;
pub mod metas;
mod prim;
pub mod scope;
mod store;
pub mod tensor;
pub mod typed;

pub use kernel::{check_program, resolve};
pub use typed::{Kernel, KernelParam, Obligation, TExpr, TKind, TLit};

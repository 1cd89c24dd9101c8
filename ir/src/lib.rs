//! # heddle-ir
//!
//! The syntax of heddle's functional pattern IR: source [`span`]s and
//! [`span::Diagnostic`]s, type-level naturals ([`nat`]), data types
//! ([`types`]), expressions and programs ([`expr`]), the primitive patterns and
//! their signatures, declared once ([`prims`]), the [`lexer`], [`parser`] and
//! [`printer`].
//!
//! ```
//! let p = heddle_ir::parser::parse_program("nFun(n => fun(xs: [float]_n => xs :>> map(fun(x => x * 2.0))))").unwrap();
//! let text = heddle_ir::printer::print_program(&p);
//! assert_eq!(heddle_ir::parser::parse_program(&text).unwrap(), p);
//! ```
#![warn(missing_docs)]

pub mod encoding;
pub mod expr;
pub mod lexer;
pub mod loops;
pub mod name;
pub mod nat;
pub mod parser;
pub mod prims;
pub mod printer;
pub mod rounding;
pub mod span;
pub mod suggest;
pub mod tensor;
pub mod types;

pub use expr::{Expr, ExprKind, Program};
pub use name::Name;
pub use nat::Nat;
pub use span::{Diagnostic, ErrorKind, Span};
pub use types::{ScalarType, Type};

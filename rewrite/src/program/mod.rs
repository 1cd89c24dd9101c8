//! # Program rewriting: Lift's rules over an e-graph
//!
//! [`explore`] puts a kernel into an e-graph ([`lang::Prog`]), applies
//! rules read from rule files ([`rulefile`], the built-in set in
//! `builtin.rules`) under limits, extracts the cheapest program under a cost
//! model ([`costs`]: `size`, `depth`, or a table of per-primitive costs such
//! as the built-in `parallel.costs`) and has it type-checked. Along the way
//! it records what each rule and iteration did ([`stats`]), can explain the
//! result as a chain of rule applications ([`explain`]) and keep the
//! e-graph for export ([`export`]).
//!
//! ```
//! use heddle_rewrite::program::{explore, rulefile, Checked, CostKind, Options};
//!
//! let src = "nFun(n => fun(xs: [float]_n => xs :>> map(fun(x => x + 1.0)) :>> map(fun(y => y * 2.0))))";
//! let program = heddle_ir::parser::parse_program(src).unwrap();
//! let rules = rulefile::parse_rules("fuse.rules",
//!     "fuse: ?x :>> map(?f) :>> map(?g) => ?x :>> map(fun(z => ?g(?f(z))))").unwrap();
//! // The caller type-checks (heddle-typeck, in the CLI); here every program passes.
//! let check = |_: &heddle_ir::Program| Ok(Checked { ty: "t".into(), obligations: vec![], kernel_ty: None });
//! let out = explore(&program, &rules, &Options { cost: CostKind::Parallel.into(), ..Options::default() }, &check).unwrap();
//! assert_eq!(out.rules_applied["fuse"], 1);
//! assert!(out.text.contains("xs :>> map(fun(z => (z + 1.0) * 2.0))"), "{}", out.text);
//! ```
//!
//! ## What is guaranteed about types
//!
//! * Built-in rules relate terms of the same type whenever their side
//!   conditions hold; conditions are checked on every match against facts
//!   the e-graph knows (array lengths from the kernel's parameter types, the
//!   literal a class is), and an unknown fact makes a condition false.
//! * Binders are capture-free: a right-hand side's new lambda is renamed
//!   when its name is free in what it would enclose, and a pattern variable
//!   matched under a lambda is not moved out of it if it uses the parameter.
//! * Whatever the rules (user rules may be wrong), the extracted program is
//!   printed, parsed and type-checked by the caller's checker; it must have
//!   the original's type and no run-time obligation the original lacked.
//!   Otherwise the original program is returned, with the reason in
//!   [`Outcome::fallback`].
//!
//! Reduction splitting reassociates `+`/`*`: exact on integers, and on
//! floats as exact as any parallel reduction (the usual Lift assumption).

pub mod analysis;
pub mod applier;
pub mod beta;
pub mod candidates;
pub mod cond;
pub mod convert;
pub mod costs;
pub mod explain;
pub mod export;
pub mod extract;
pub mod kbest;
pub mod lang;
pub mod pattern;
pub mod rulefile;
mod run;
pub mod sketch;
pub mod stats;
pub mod term;

pub use costs::CostModel;
pub use egg::Id;
pub use extract::CostKind;
pub use rulefile::{Rule, RuleError, parse_rules};
pub use run::{
    Checked, ExploreError, Limits, Options, Outcome, Saturated, Stats, StopReason, explore, explore_with, saturate,
    verify,
};

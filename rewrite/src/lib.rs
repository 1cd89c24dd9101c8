//! # heddle-rewrite: simplifying type-level naturals and eliminating Σ
//!
//! Accessing element `(i, j)` of a position-dependent array
//! `values : [i ↦ [float]_{f(i)}]_n` reads slot `sum(k = 0 .. i-1, f(k)) + j`
//! of one flat buffer ([`flatten`]). Generated code must not loop to evaluate
//! that Σ: [`simplify`] finds a closed form with an egg e-graph, or reports
//! the Σ that remain so lowering can precompute them on the host.
//!
//! ```
//! use heddle_ir::parser::{parse_nat, parse_type};
//! use heddle_rewrite::{Facts, Limits, flat_index, simplify};
//!
//! // CSR (Listing 4): the row length is the difference of two offsets.
//! let ty = parse_type("[i -> [float]_{toNat(offset@(i+1) - offset@i)}]_n").unwrap();
//! let index = flat_index(&ty, &[parse_nat("i").unwrap(), parse_nat("j").unwrap()]).unwrap();
//! assert_eq!(index.to_string(), "sum(k = 0 .. i - 1, toNat(offset@(k + 1) - offset@k)) + j");
//!
//! // The type says `offset` is non-decreasing, which licenses splitting the
//! // toNat; the Σ then telescopes.
//! let facts = Facts::from_type(&ty);
//! let s = simplify(&index, &facts, &Limits::default());
//! assert!(s.residual_sums.is_empty());
//! assert!(s.nat.equiv(&parse_nat("toNat(offset@i) - toNat(offset@0) + j").unwrap()));
//!
//! // LIL (Listing 3): no closed form; the Σ is reported for precomputation.
//! let lil = parse_nat("sum(k = 0 .. i - 1, toNat(row_length@k)) + j").unwrap();
//! let s = simplify(&lil, &Facts::new(), &Limits::default());
//! assert_eq!(s.residual_sums.len(), 1);
//! ```
//!
//! ## How it works
//!
//! * [`nat_lang`] — the egg language [`NatLang`] and the exact conversion
//!   between `ir`'s [`heddle_ir::Nat`] and `RecExpr<NatLang>`: lookups
//!   `toNat(A@e)` are `(lookup A e)` nodes, `toNat(a ± b)` are `tadd`/`tsub`
//!   nodes, other `toNat`s are atoms of an [`AtomTable`]; Σ binders are
//!   spelled `%0`, `%1`, … inside the e-graph.
//! * [`analysis`] — per e-class: exact rational constant, free variables,
//!   Σ-freedom and a canonical polynomial normal form ([`refine`]), which
//!   replaces most associativity/commutativity rules.
//! * [`facts`] — what the type system tells us: arrays that are
//!   non-decreasing (from sizes `toNat(A@(i+1) - A@i)`), known elements.
//! * [`rules`] — ring identities, ternary/min/max/div/mod folding, `toNat`
//!   splitting, and Σ rules for any lower bound: empty range, constant body,
//!   linearity, Gauss and polynomial bodies, index shift, splitting at a
//!   ternary on the index, telescoping.
//! * [`extract`] — extraction where a Σ costs more than any Σ-free term.
//! * [`simplify`](mod@simplify) — the entry point, limits from the
//!   environment, and the *true* stop reason of each run.
//!
//! ## Semantics assumed
//!
//! Naturals are integers (`-` does not truncate, `/` floors), `toNat(e)` is
//! the integer value of `e`, and free variables are ≥ 0 unless
//! [`Facts::free_vars_nonneg`] is cleared. Every rewrite is exact under these
//! assumptions; results that hold only for non-empty Σ ranges are guarded by
//! a ternary unless the range is provably non-empty-or-exactly-empty.
#![warn(missing_docs)]

pub mod analysis;
pub mod extract;
pub mod facts;
pub mod flatten;
pub mod lower;
pub mod nat_lang;
pub mod program;
pub mod refine;
pub mod rules;
pub mod simplify;
pub mod sparsify;

pub use facts::Facts;
pub use flatten::{FlattenError, flat_index, flat_size};
pub use nat_lang::{AtomTable, NatLang, nat_to_rec, rec_to_nat};
pub use simplify::{Limits, RunStats, Simplified, StopReason, simplify, simplify_with};

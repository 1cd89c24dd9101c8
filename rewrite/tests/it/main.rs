//! The integration tests of this crate, in one test binary (one link instead
//! of one per file). Each file here is a module named after it: `cargo test
//! -p PACKAGE --test it NAME::` runs tests/it/NAME.rs alone. A new test file
//! tests/it/NAME.rs needs one line below, `mod NAME;`; its insta snapshots
//! live in tests/it/snapshots/, named `it__NAME__*.snap`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../program_common/mod.rs"]
mod program_common;

mod formulas;
mod lower_examples;
mod program_candidates;
mod program_explain;
mod program_export;
mod program_limits;
mod program_roundtrip;
mod program_rules;
mod program_schedule;
mod program_semantics;
mod rules;
mod soundness;
mod static_sizes;

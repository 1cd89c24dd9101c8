//! The integration tests of this crate, in one test binary (one link instead
//! of one per file). Each file here is a module named after it: `cargo test
//! -p PACKAGE --test it NAME::` runs tests/it/NAME.rs alone. A new test file
//! tests/it/NAME.rs needs one line below, `mod NAME;`; its insta snapshots
//! live in tests/it/snapshots/, named `it__NAME__*.snap`.

#[path = "../common/mod.rs"]
mod common;

mod codegen;
mod induction;
mod inner_loops;
mod lanes;
mod nested_sums;
mod straight_lanes;
mod vector_lanes;

//! The integration tests of this crate, in one test binary (one link instead
//! of one per file). Each file here is a module named after it: `cargo test
//! -p PACKAGE --test it NAME::` runs tests/it/NAME.rs alone. A new test file
//! tests/it/NAME.rs needs one line below, `mod NAME;`; its insta snapshots
//! live in tests/it/snapshots/, named `it__NAME__*.snap`.

mod encoding_types;
mod encoding_verify;
mod nat_normal_form;
mod parsing;
mod roundtrip_smoke;

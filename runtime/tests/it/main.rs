//! The integration tests of this crate, in one test binary (one link instead
//! of one per file). Each file here is a module named after it: `cargo test
//! -p PACKAGE --test it NAME::` runs tests/it/NAME.rs alone. A new test file
//! tests/it/NAME.rs needs one line below, `mod NAME;`; its insta snapshots
//! live in tests/it/snapshots/, named `it__NAME__*.snap`.

mod counted_differential;
mod dia;
mod direct_conversions;
mod exact_values;
mod fill_values;
mod lowering_differential;
mod mtx_numbers;
mod mtx_stream;
mod npz;
mod number_exhaustive;
mod reader_limits;
mod slices;
mod sparse_errors;
mod sparse_io_chunks;
mod sparse_roundtrip;
mod sparse_seeds;
mod sparse_storage;

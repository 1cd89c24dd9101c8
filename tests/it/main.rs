//! The integration tests, in one test binary (one link of the compiler
//! instead of one per file). Each file here is a module named after it:
//! `cargo test --test it front_end::` runs tests/it/front_end.rs alone.
//! A new test file tests/it/NAME.rs needs one line below, `mod NAME;`;
//! `use crate::common;` gives it the shared helpers of tests/common/.
//! Its insta snapshots live in tests/it/snapshots/, named `it__NAME__*.snap`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../progen/mod.rs"]
mod progen;

mod atomic_runs;
mod auto_encoding;
mod batch_levels;
mod bsr_front_door;
mod bsr_lanes;
mod cli;
mod cli_cpu;
mod cli_errors;
mod cli_rewrite;
mod cli_rewrite_search;
mod cli_simplify;
mod cli_sparse;
mod compile_coverage;
mod complex_numbers;
mod conversions;
mod cpu_differential;
mod cpu_simd;
mod dia_interchange;
mod docs;
mod ell_interchange;
mod exact_values;
mod examples_interp;
mod fill_values;
mod flat_binding;
mod fmt;
mod front_door;
mod front_end;
mod half_floats;
mod iso_values;
mod json_schemas;
mod listing7;
mod nested_levels;
mod nested_results;
mod no_panics;
mod npy_shapes;
mod opencl;
mod opencl_bench;
mod opencl_host;
mod push_back;
mod random_programs;
mod reassociation;
mod robustness;
mod scipy_interop;
mod search_formats;
mod sell;
mod sell_export;
mod sell_front_door;
mod sell_iso;
mod sell_sigma;
mod skyline;
mod slices;
mod sort_by;
mod sparse_kernels;
mod sparse_ops;
mod sparse_outputs;
mod sparse_results;
mod sparse_results_prop;
mod stream_lengths;
mod structured_results;
mod tensor_params;
mod tune_matrix;
mod vector_lanes;
mod vectors;

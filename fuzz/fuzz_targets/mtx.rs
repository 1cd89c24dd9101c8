//! Matrix Market files: a matrix or an error, never a panic, and never an
//! allocation far beyond what the bytes hold (libFuzzer's -rss_limit_mb and
//! -malloc_limit_mb catch those).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = heddle_runtime::sparse::mtx::parse_mtx(data, std::path::Path::new("fuzz.mtx"));
});

//! FROSTT `.tns` files: a tensor or an error, never a panic, never an
//! allocation beyond what the bytes hold.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = heddle_runtime::sparse::tns::parse_tns(data, std::path::Path::new("fuzz.tns"));
});

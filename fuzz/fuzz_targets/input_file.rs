//! `--input NAME=FILE` readers: `.npy` (the header checks, then npyz),
//! `.json` nested lists, and a `.npz` archive's array `xs`. The first byte
//! picks the format.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, bytes)) = data.split_first() else { return };
    let ext = ["npy", "json", "npz"][kind as usize % 3];
    let path = heddle_fuzz::scratch_file(bytes, ext);
    let _ = heddle_runtime::io::read_input_for(&path, "xs");
});

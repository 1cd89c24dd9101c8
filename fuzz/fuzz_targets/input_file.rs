//! `--input NAME=FILE` readers: `.npy` (the header checks, then npyz) and
//! `.json` nested lists. The first byte picks the format.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, bytes)) = data.split_first() else { return };
    let ext = if kind % 2 == 0 { "npy" } else { "json" };
    let path = heddle_fuzz::scratch_file(bytes, ext);
    let _ = heddle_runtime::io::read_input(&path);
});

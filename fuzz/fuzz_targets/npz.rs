//! scipy `.npz` archives (`--matrix A=F.npz`, `--csr …=F.npz`, `convert`):
//! the first byte picks an encoding, the rest is the archive. Reading gives
//! a tensor or an error; a tensor read is stored in the encoding (or refused
//! with an error), and what is stored writes back to a `.npz` that reads
//! again. Never a panic, never an allocation beyond what the bytes hold
//! (sizes the shape claims are bounded by HEDDLE_MAX_MEMORY, set to 256 MiB
//! here, below libFuzzer's limits).
#![no_main]

use heddle_ir::encoding::parse_encoding;
use heddle_runtime::sparse::{file, npz};
use libfuzzer_sys::fuzz_target;

const MATRIX: &[&str] = &[
    "(i, j) -> (i : dense, j : compressed)",
    "(i, j) -> (j : dense, i : compressed)",
    "(i, j) -> (i : compressed(nonunique), j : singleton)",
    "(i, j) -> (i : compressed, j : compressed)",
    "(i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)",
];

fuzz_target!(|data: &[u8]| {
    static LIMIT: std::sync::Once = std::sync::Once::new();
    // SAFETY: set once, before any thread of this process reads the environment.
    LIMIT.call_once(|| unsafe { std::env::set_var(heddle_runtime::limits::ENV, "256M") });
    let Some((&pick, bytes)) = data.split_first() else { return };
    let path = heddle_fuzz::scratch_file(bytes, "npz");
    let Ok(contents) = file::read_as_written(&path) else { return };
    let rank = contents.rank();
    let map = if rank == 2 {
        MATRIX[usize::from(pick) % MATRIX.len()].to_string()
    } else if (1..=8).contains(&rank) {
        let dims: Vec<String> = (0..rank).map(|d| format!("d{d}")).collect();
        let levels: Vec<String> = dims.iter().map(|d| format!("{d} : compressed")).collect();
        format!("({}) -> ({})", dims.join(", "), levels.join(", "))
    } else {
        return;
    };
    let enc = parse_encoding(&format!("#sparse_tensor.encoding<{{ map = {map} }}>"), 0).expect("the target's encodings parse");
    let Ok(t) = contents.into_encoding(&enc) else { return };
    let out = heddle_fuzz::scratch_file(b"", "out.npz");
    if npz::write_npz(&t, &out).is_ok() {
        if let Err(e) = npz::read_npz(&out) {
            panic!("a written .npz does not read back: {e}");
        }
    }
});

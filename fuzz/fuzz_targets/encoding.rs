//! MLIR sparse encodings: the parser (which runs the verifier), the printer
//! (whose text parses back to the same encoding), and the storage layout
//! for dimensions taken from the input's first bytes (what `heddle type
//! ENC --dims …` does).
#![no_main]

use heddle_ir::encoding::{parse_encoding, print_encoding, storage_layout};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (dims, rest) = data.split_at(data.len().min(4));
    let Some(src) = heddle_fuzz::text(rest) else { return };
    let Ok(enc) = parse_encoding(src, 0) else { return };
    let printed = print_encoding(&enc);
    let again = parse_encoding(&printed, 0).unwrap_or_else(|e| panic!("the printed encoding does not parse: {}\ninput: {src:?}\nprinted: {printed}", e.message));
    assert_eq!(print_encoding(&again), printed, "printing is not stable\ninput: {src:?}");
    // Static sizes from the first bytes (a byte of 0 stands for `?`), one per dimension.
    let sizes: Vec<Option<u64>> =
        (0..enc.dims.len()).map(|d| dims.get(d).and_then(|b| (*b != 0).then(|| u64::from(*b).saturating_pow(1 + u32::from(*b % 4) * 6)))).collect();
    for elem in [heddle_ir::ScalarType::F32, heddle_ir::ScalarType::I8] {
        let _ = storage_layout(&enc, &sizes, elem, "A");
    }
});

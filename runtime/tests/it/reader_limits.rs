//! Hostile file headers (issue 16's findings): sizes a header promises are
//! checked against what the file holds before anything is allocated or
//! walked; each case gets a clear error (or, when the promise is harmless,
//! the right empty result) within a few seconds, never a panic, a hang or a
//! huge allocation.

use heddle_ir::encoding::parse_encoding;
use heddle_runtime::io::read_input;
use heddle_runtime::sparse::build::pack;
use heddle_runtime::sparse::mtx::parse_mtx;
use heddle_runtime::sparse::tns::parse_tns;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on a thread; fails the test if it takes more than `secs` (a hang)
/// or panics.
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()).ok());
    rx.recv_timeout(Duration::from_secs(secs)).unwrap_or_else(|e| panic!("{what}: no answer after {secs} s ({e})"))
}

/// A file of `bytes` in a directory of its own, removed when the guard is dropped.
fn tempfile(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new().prefix("heddle-limits-").tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    (dir, p)
}

#[test]
fn mtx_array_symmetric_of_size_2_64_is_an_error() {
    let text = "%%MatrixMarket matrix array real symmetric\n18446744073709551615 18446744073709551615\n1.0\n";
    let e =
        within(10, "symmetric array", move || parse_mtx(text.as_bytes(), Path::new("s.mtx")).map(|_| ()).unwrap_err());
    assert!(e.to_string().contains("s.mtx:2") && e.to_string().contains("more than any file can"), "{e}");
    // Sizes whose count wraps to exactly the values given (2^64 ≡ 0) cannot pass either.
    let text = "%%MatrixMarket matrix array real general\n4294967296 4294967296\n";
    let e = within(10, "wrapping general array", move || {
        parse_mtx(text.as_bytes(), Path::new("g.mtx")).map(|_| ()).unwrap_err()
    });
    assert!(e.to_string().contains("more than any file can"), "{e}");
}

#[test]
fn mtx_array_with_no_rows_and_2_64_columns_is_empty_at_once() {
    let text = "%%MatrixMarket matrix array real general\n0 18446744073709551615\n";
    let (coo, _) = within(10, "0 x 2^64-1 array", move || parse_mtx(text.as_bytes(), Path::new("e.mtx")).unwrap());
    assert_eq!((coo.dims.clone(), coo.len()), (vec![0, u64::MAX], 0));
}

#[test]
fn npy_header_of_nested_braces_is_refused_before_parsing() {
    let mut header = "{".repeat(16);
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    let (_dir, p) = tempfile("braces.npy", &bytes);
    let e = within(10, "16 braces", move || read_input(&p).unwrap_err());
    assert!(e.contains("nests brackets more than 8 deep"), "{e}");
}

#[test]
fn npy_of_an_empty_struct_dtype_claiming_10_12_items_is_refused() {
    let header = "{'descr': [], 'fortran_order': False, 'shape': (1000000000000,), }";
    let mut h = header.to_string();
    h.push_str(&" ".repeat(63 - (10 + header.len()) % 64));
    h.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(h.as_bytes());
    let (_dir, p) = tempfile("empty_struct.npy", &bytes);
    let e = within(10, "empty struct dtype", move || read_input(&p).unwrap_err());
    // Refused by the stream reader's header check, before any data is read.
    assert!(e.contains("has no fixed size") && e.contains("empty records"), "{e}");
}

/// A one-entry tensor with many dimensions stored all-dense: the positions
/// over all levels are capped together, before any level is built.
#[test]
fn all_dense_storage_of_many_dimensions_is_capped_in_total() {
    // 32 levels is the most an encoding may have (more is refused when it is parsed).
    for (rank, size) in [(32usize, 2u64), (32, 4), (32, 1 << 40)] {
        let dims: Vec<String> = (0..rank).map(|_| size.to_string()).collect();
        let ones: Vec<&str> = (0..rank).map(|_| "1").collect();
        let text = format!("{rank} 1\n{}\n{} 1.5\n", dims.join(" "), ones.join(" "));
        let coo = parse_tns(text.as_bytes(), Path::new("t.tns")).unwrap();
        let vars: Vec<String> = (0..rank).map(|d| format!("d{d}")).collect();
        let levels: Vec<String> = vars.iter().map(|v| format!("{v} : dense")).collect();
        let enc = format!("#sparse_tensor.encoding<{{ map = ({}) -> ({}) }}>", vars.join(", "), levels.join(", "));
        let enc = parse_encoding(&enc, 0).unwrap();
        let e = within(10, "all-dense", move || pack(&coo, &enc, heddle_ir::ScalarType::F64).map(|_| ()).unwrap_err());
        assert!(e.to_string().contains("positions across its levels"), "rank {rank}: {e}");
    }
}

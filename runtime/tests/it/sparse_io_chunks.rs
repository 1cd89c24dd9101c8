//! The parallel reader on inputs larger than one chunk (1 MiB): entries in
//! order, blank and comment lines skipped wherever they fall, and line
//! numbers in errors counted across chunks.

use heddle_runtime::sparse::mtx::parse_mtx;
use std::fmt::Write;
use std::path::Path;

/// A 1000x1000 matrix of `n` entries, with a comment or blank line every 7th line.
fn text(n: usize) -> (String, Vec<(u64, u64, f64)>) {
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n1000 1000 {n}\n");
    let mut want = Vec::new();
    for k in 0..n {
        if k % 7 == 3 {
            s.push_str(if k % 2 == 0 { "% a comment line\n" } else { "   \n" });
        }
        let (i, j, v) = ((k * 7919) % 1000, (k * 104_729) % 1000, k as f64 * 0.5);
        writeln!(s, "{} {} {v:e}", i + 1, j + 1).unwrap();
        want.push((i as u64, j as u64, v));
    }
    (s, want)
}

#[test]
fn multi_chunk_files_parse_in_order() {
    let (s, want) = text(250_000);
    assert!(s.len() > 3 << 20, "the input spans several chunks");
    let (coo, _) = parse_mtx(s.as_bytes(), Path::new("big.mtx")).unwrap();
    assert_eq!(coo.len(), want.len());
    for (k, (i, j, v)) in want.iter().enumerate() {
        assert_eq!((coo.entry(k)[0], coo.entry(k)[1], coo.values.f64(k)), (*i, *j, *v), "entry {k}");
    }
}

#[test]
fn errors_in_late_chunks_name_the_right_line() {
    let (mut s, _) = text(250_000);
    // Break the entry on the last line: count the lines before it.
    let last_start = s[..s.len() - 1].rfind('\n').map_or(0, |p| p + 1);
    let line = s[..last_start].matches('\n').count() + 1;
    s.truncate(last_start);
    s.push_str("5 5 five\n");
    let e = parse_mtx(s.as_bytes(), Path::new("big.mtx")).unwrap_err();
    assert_eq!(e.to_string(), format!("big.mtx:{line}: value `five` is not a number (nor `inf`, `-inf` or `nan`)"));
}

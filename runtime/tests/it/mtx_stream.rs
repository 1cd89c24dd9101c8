//! The streaming Matrix Market reader (`mtx::read_mtx_columns`, behind
//! `file::read_*` for `coordinate` files with real, integer or complex
//! values): the same entries, in the same order, with the same values as
//! the whole-file reader (`mtx::parse_mtx_for`), kept as 32-bit columns; CSR
//! packed from them equal to an independent dense reference (a `BTreeMap`
//! summing duplicates, mirroring symmetric files); and every malformed file
//! reported as the whole-file reader reports it, with its line, also past
//! the first round (8 MiB) of the stream.

use heddle_ir::ScalarType;
use heddle_runtime::scalars::Num;
use heddle_runtime::sparse::IndexBuf;
use heddle_runtime::sparse::coo::{Coo, CooColumns};
use heddle_runtime::sparse::csr::csr_encoding;
use heddle_runtime::sparse::file::{self, Contents};
use heddle_runtime::sparse::mtx::parse_mtx_for;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// Writes `text` to a file of its own in the temporary directory.
fn put(name: &str, text: &str) -> crate::ScratchFile {
    crate::ScratchFile::new("mtx-stream", &format!("{name}.mtx"), text)
}

/// The file as the streaming reader reads it (it must take it).
fn streamed(path: &Path) -> CooColumns {
    match file::read_as_written(path).unwrap() {
        Contents::Columns(c, _) => c,
        _ => panic!("{}: not read by the streaming reader", path.display()),
    }
}

/// The file as the whole-file reader reads it.
fn whole(path: &Path, dest: ScalarType) -> Coo {
    parse_mtx_for(&std::fs::read(path).unwrap(), path, dest).unwrap().0
}

/// Streamed and whole-file entries agree (order, coordinates, values, type),
/// and the coordinates are 32-bit.
fn agree(path: &Path) -> CooColumns {
    let cols = streamed(path);
    assert!(matches!(cols.column(0), IndexBuf::U32(_)) && matches!(cols.column(1), IndexBuf::U32(_)), "32-bit columns");
    assert_eq!(cols.clone().into_coo(), whole(path, ScalarType::F64), "{}", path.display());
    cols
}

/// The file's header, size line and entry lines.
fn mtx(field: &str, symmetry: &str, (rows, cols): (u64, u64), entries: &[(u64, u64, String)]) -> String {
    let mut s =
        format!("%%MatrixMarket matrix coordinate {field} {symmetry}\n% a comment\n{rows} {cols} {}\n", entries.len());
    for (i, j, v) in entries {
        writeln!(s, "{} {} {v}", i + 1, j + 1).unwrap();
    }
    s
}

/// CSR packed from the file (through the streaming reader) as row-major
/// (row, column, value) triples.
fn csr_triples(path: &Path) -> Vec<(u64, u64, Num)> {
    let t = file::read_into(path, &csr_encoding()).unwrap();
    let coo = t.to_coo();
    (0..coo.len()).map(|k| (coo.entry(k)[0], coo.entry(k)[1], coo.values.num(k))).collect()
}

/// The dense reference: duplicates summed, a symmetric file's entries off
/// the diagonal mirrored (negated when skew).
fn reference(entries: &[(u64, u64, f64)], symmetry: &str) -> Vec<(u64, u64, Num)> {
    let mut m: BTreeMap<(u64, u64), f64> = BTreeMap::new();
    for &(i, j, v) in entries {
        *m.entry((i, j)).or_default() += v;
        if symmetry != "general" && i != j {
            *m.entry((j, i)).or_default() += if symmetry == "skew-symmetric" { -v } else { v };
        }
    }
    m.into_iter().map(|((i, j), v)| (i, j, Num::Float(v))).collect()
}

/// Pseudo-random numbers below `m` (xorshift).
fn below(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |m| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    }
}

fn as_text(e: &[(u64, u64, f64)]) -> Vec<(u64, u64, String)> {
    e.iter().map(|&(i, j, v)| (i, j, format!("{v:e}"))).collect()
}

#[test]
fn out_of_order_entries_with_duplicates_across_rounds() {
    // About 11 MB: more than one round, lines cut at round and chunk ends.
    let mut next = below(0x2545_f491_4f6c_dd1d);
    let (rows, cols) = (5000u64, 3000u64);
    let e: Vec<(u64, u64, f64)> = (0..800_000)
        .map(|k| (next(rows), if k % 9 == 0 { 7 } else { next(cols) }, (next(1000) + 1) as f64 * 0.25))
        .collect();
    let text = mtx("real", "general", (rows, cols), &as_text(&e));
    assert!(text.len() > 9 << 20, "spans rounds");
    let path = put("shuffled", &text);
    let c = agree(&path);
    assert_eq!(c.len(), e.len());
    assert_eq!(csr_triples(&path), reference(&e, "general"));
    std::fs::remove_file(path).unwrap();
}

#[test]
fn row_ordered_files_with_one_fault_at_a_block_edge() {
    // The packing checks order, ranges and clean rows in blocks of 2^16
    // entries: a single fault between the last entry of a block and the
    // first of the next (or just inside either) must still be seen. Rows of
    // 4 entries; every column distinct within its row but for the fault.
    let n = 3 << 16;
    let clean: Vec<(u64, u64, f64)> =
        (0..n).map(|k| ((k / 4) as u64, (k % 4) as u64 * 2, (k % 7) as f64 + 0.5)).collect();
    let (rows, cols) = ((n / 4) as u64, 9u64);
    for at in [(1 << 16) - 1, 1 << 16, (1 << 16) + 1, 2 << 16] {
        // A duplicate of the previous entry's column (rows stay ordered),
        // a column out of order within its row, and a row out of order.
        let mut dup = clean.clone();
        dup[at].0 = dup[at - 1].0;
        dup[at].1 = dup[at - 1].1;
        let mut unsorted = clean.clone();
        unsorted[at].0 = unsorted[at - 1].0;
        unsorted[at].1 = 0;
        unsorted[at - 1].1 = 8;
        let mut row_back = clean.clone();
        row_back[at].0 = row_back[at - 1].0 - 1;
        for (name, e) in [("dup", &dup), ("unsorted", &unsorted), ("row_back", &row_back)] {
            let path = put(&format!("edge_{name}_{at}"), &mtx("real", "general", (rows, cols), &as_text(e)));
            assert_eq!(csr_triples(&path), reference(e, "general"), "{name} at {at}");
            std::fs::remove_file(path).unwrap();
        }
    }
}

#[test]
fn row_ordered_file_with_unsorted_columns_and_duplicates() {
    // Rows in order (the packing's grouped path), columns within a row not.
    let e: Vec<(u64, u64, f64)> = vec![
        (0, 3, 1.0),
        (0, 1, 2.0),
        (0, 3, 4.0),
        (2, 2, 8.0),
        (2, 0, 16.0),
        (3, 1, 32.0),
        (3, 0, 64.0),
        (3, 1, 128.0),
    ];
    let path = put("row_ordered", &mtx("real", "general", (4, 4), &as_text(&e)));
    agree(&path);
    assert_eq!(csr_triples(&path), reference(&e, "general"));
    // Sorted rows and columns: kept as read.
    let sorted: Vec<(u64, u64, f64)> = vec![(0, 1, 1.0), (0, 3, 2.0), (1, 0, 3.0), (3, 3, 4.0)];
    let path2 = put("sorted", &mtx("real", "general", (4, 4), &as_text(&sorted)));
    agree(&path2);
    assert_eq!(csr_triples(&path2), reference(&sorted, "general"));
    std::fs::remove_file(path).unwrap();
    std::fs::remove_file(path2).unwrap();
}

#[test]
fn symmetric_files_are_mirrored() {
    let e: Vec<(u64, u64, f64)> = vec![(0, 0, 1.0), (2, 0, 2.0), (1, 1, 3.0), (2, 1, 4.0), (2, 0, 8.0), (3, 2, 16.0)];
    let path = put("symmetric", &mtx("real", "symmetric", (4, 4), &as_text(&e)));
    let c = agree(&path);
    assert_eq!(c.len(), e.len() + 4, "four entries off the diagonal mirrored");
    assert_eq!(csr_triples(&path), reference(&e, "symmetric"));
    let skew: Vec<(u64, u64, f64)> = vec![(2, 0, 2.0), (3, 1, 4.0), (1, 0, 8.0)];
    let path2 = put("skew", &mtx("real", "skew-symmetric", (4, 4), &as_text(&skew)));
    agree(&path2);
    assert_eq!(csr_triples(&path2), reference(&skew, "skew-symmetric"));
    let ints = put(
        "int_sym",
        "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n1 1 -5\n3 1 9223372036854775807\n2 1 7\n",
    );
    let c = agree(&ints);
    assert_eq!(c.elem(), ScalarType::I64);
    let herm = put("herm", "%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 2.5 0\n2 1 1.5 -3\n");
    let c = agree(&herm);
    assert_eq!(c.elem(), ScalarType::C64);
    assert_eq!((c.entry(2), c.values.num(2)), (vec![0, 1], Num::Complex(1.5, 3.0)), "the mirror is the conjugate");
    // Pattern files (values 1, the skew mirror -1) stream too, kept as pattern entries.
    let pat = put("pattern", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n3 3 2\n3 1\n2 1\n");
    let Contents::Pattern(coo, _) = file::read_as_written(&pat).unwrap() else { panic!("pattern") };
    assert_eq!(coo, whole(&pat, ScalarType::F64));
    assert_eq!(coo.values.num(2), Num::Float(-1.0));
    assert!(
        heddle_runtime::sparse::mtx::read_mtx_columns(&pat, ScalarType::F64).unwrap().is_some_and(|r| r.2),
        "streamed"
    );
    for p in [path, path2, ints, herm, pat] {
        std::fs::remove_file(p).unwrap();
    }
}

#[test]
fn empty_files_and_the_size_limits() {
    let path = put("empty", "%%MatrixMarket matrix coordinate real general\n3 4 0\n");
    let c = agree(&path);
    assert_eq!((c.dims.clone(), c.len()), (vec![3, 4], 0));
    let t = file::read_into(&path, &csr_encoding()).unwrap();
    assert_eq!((t.nse(), t.positions[1].as_ref().unwrap().to_u64()), (0, vec![0; 4]));
    // 2^32 rows and columns: the last coordinate is u32::MAX.
    let big = 1u64 << 32;
    let e = vec![(big - 1, big - 1, "1.5".to_string()), (0, 0, "2".to_string()), (big - 1, 0, "3".into())];
    let edge = put("edge", &mtx("real", "general", (big, big), &e));
    let c = agree(&edge);
    assert_eq!(c.entry(0), vec![big - 1, big - 1]);
    // One more: beyond 32 bits, read whole (the same entries, 64-bit).
    let beyond = put("beyond", &mtx("real", "general", (big + 1, 2), &[(big, 1, "4".into())]));
    let Contents::Entries(coo, _) = file::read_as_written(&beyond).unwrap() else { panic!("read whole") };
    assert_eq!(coo, whole(&beyond, ScalarType::F64));
    assert_eq!(coo.entry(0), &[big, 1]);
    for p in [path, edge, beyond] {
        std::fs::remove_file(p).unwrap();
    }
}

#[test]
fn f32_values_round_once_crlf_and_comment_lines() {
    let text = "%%MatrixMarket matrix coordinate real general\r\n%c\r\n3 3 4\r\n1 1 0.1\r\n\r\n% inside\r\n2 3 1e-46\r\n3 2 inf\r\n 3  3\t-inf";
    let path = put("crlf", text);
    agree(&path);
    let Contents::Columns(c, elem) = file::read_tensor(&path, ScalarType::F32).unwrap() else { panic!("streamed") };
    let w = parse_mtx_for(text.as_bytes(), &path, ScalarType::F32).unwrap().0;
    assert_eq!(elem, ScalarType::F32);
    assert_eq!(c.values, w.values.convert(ScalarType::F32).unwrap());
    std::fs::remove_file(path).unwrap();
}

/// A file of about `bytes` bytes of entry lines (strictly below the
/// diagonal when `symmetry` is not general), with comment and blank lines
/// among them (one line in four or so: every chunk of every round has
/// lines without entries, so every window but the first moves down), CRLF
/// or not, no newline after the last line. Returns the text and the entries
/// (a pattern file's values 1).
fn gappy(field: &str, symmetry: &str, bytes: usize, crlf: bool, seed: u64) -> (String, Vec<(u64, u64, f64)>) {
    let mut next = below(seed);
    let nl = if crlf { "\r\n" } else { "\n" };
    let n = 4000u64;
    let (mut body, mut e) = (String::new(), Vec::new());
    while body.len() < bytes {
        match next(8) {
            0 => write!(body, "% comment {}{nl}", next(1000)).unwrap(),
            1 => body.push_str(nl),
            2 => write!(body, " \t{nl}").unwrap(),
            _ => {
                let i = next(n - 1) + 1;
                let j = if symmetry == "general" { next(n) } else { next(i) };
                let v = match field {
                    "pattern" => 1.0,
                    "integer" => next(2001) as f64 - 1000.0,
                    _ => (next(4001) as f64 - 2000.0) * 0.125,
                };
                match field {
                    "pattern" => write!(body, "{} {}{nl}", i + 1, j + 1).unwrap(),
                    "integer" => write!(body, "{} {} {}{nl}", i + 1, j + 1, v as i64).unwrap(),
                    _ => write!(body, "{} {} {v:e}{nl}", i + 1, j + 1).unwrap(),
                }
                e.push((i, j, v));
            }
        }
    }
    // Ends with an entry line, without its newline.
    let last = e.len() - 1;
    let (i, j, v) = e[last];
    write!(body, "{} {}{}", i + 1, j + 1, if field == "pattern" { String::new() } else { format!(" {}", v as i64) })
        .unwrap();
    let v = if field == "pattern" { 1.0 } else { v.trunc() };
    e.push((i, j, v));
    (format!("%%MatrixMarket matrix coordinate {field} {symmetry}{nl}% head{nl}{n} {n} {}{nl}{body}", e.len()), e)
}

#[test]
fn comment_and_blank_lines_in_every_chunk_across_rounds() {
    // Several rounds (8 MiB) of 1 MiB chunks; one within a round's chunks.
    let cases = [
        ("real", "general", 17 << 20, false),
        ("real", "symmetric", 9 << 20, true),
        ("pattern", "skew-symmetric", 9 << 20, false),
        ("integer", "general", 3 << 20, true),
    ];
    for (k, &(field, symmetry, bytes, crlf)) in cases.iter().enumerate() {
        let (text, e) = gappy(field, symmetry, bytes, crlf, 0x9e37_79b9_7f4a_7c15 + k as u64);
        let path = put(&format!("gappy_{k}"), &text);
        let (cols, _, pattern) =
            heddle_runtime::sparse::mtx::read_mtx_columns(&path, ScalarType::F64).unwrap().expect("streamed");
        assert_eq!(pattern, field == "pattern");
        let mirrored = e.iter().filter(|x| symmetry != "general" && x.0 != x.1).count();
        assert_eq!(cols.len(), e.len() + mirrored, "{field} {symmetry}");
        assert_eq!(cols.into_coo(), whole(&path, ScalarType::F64), "{field} {symmetry}: streamed as read whole");
        if field != "integer" {
            assert_eq!(csr_triples(&path), reference(&e, symmetry), "{field} {symmetry}");
        }
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn errors_at_chunk_and_round_edges() {
    // A bad line as the first of the second chunk, the last of the first
    // round and the first of the second: reported as read whole.
    let (text, _) = gappy("real", "general", 9 << 20, false, 5);
    let body = text.match_indices('\n').nth(2).unwrap().0 + 1;
    let after = |at: usize| body + at + text[body + at..].find('\n').unwrap() + 1;
    let second_chunk = after(1 << 20);
    let second_round = after(8 << 20);
    let last_of_first = text[..second_round - 1].rfind('\n').unwrap() + 1;
    for (name, at) in [("chunk", second_chunk), ("round_end", last_of_first), ("round", second_round)] {
        let end = at + text[at..].find('\n').unwrap();
        let line = text[..at].matches('\n').count() + 1;
        let bad = format!("{}7 7 x{}", &text[..at], &text[end..]);
        let msg = same_error(&format!("edge_{name}"), &bad);
        assert!(msg.contains(&format!(":{line}: ")), "{name}: {msg}");
    }
}

/// A malformed file: the streaming path's error is the whole-file reader's.
fn same_error(name: &str, text: &str) -> String {
    let path = put(name, text);
    let streamed = file::read_as_written(&path).err().unwrap_or_else(|| panic!("{name}: accepted")).to_string();
    let whole = parse_mtx_for(text.as_bytes(), &path, ScalarType::F64).err().unwrap().to_string();
    std::fs::remove_file(path).unwrap();
    assert_eq!(streamed, whole, "{name}");
    streamed
}

#[test]
fn malformed_files_keep_their_lines_past_the_first_round() {
    let mut next = below(7);
    let e: Vec<(u64, u64, f64)> =
        (0..500_000).map(|_| (next(1000), next(1000), (next(99) as f64 + 0.5) / 3.0)).collect();
    let good = mtx("real", "general", (1000, 1000), &as_text(&e));
    let lines = good.lines().count();
    assert!(good.len() > 9 << 20, "spans rounds");
    // The last entry's value broken.
    let at = good[..good.len() - 1].rfind('\n').unwrap() + 1;
    let bad = format!("{}5 5 five\n", &good[..at]);
    let msg = same_error("late_value", &bad);
    assert!(msg.ends_with(&format!(":{lines}: value `five` is not a number (nor `inf`, `-inf` or `nan`)")), "{msg}");
    // A row beyond the size, past the first round.
    let mid = good[..good.len() / 4 * 3].rfind('\n').unwrap() + 1;
    let line = good[..mid].matches('\n').count() + 1;
    let bad = format!("{}1001 1 1.0\n{}", &good[..mid], &good[good[mid..].find('\n').unwrap() + mid + 1..]);
    let msg = same_error("late_row", &bad);
    assert!(msg.contains(&format!(":{line}: row index 1001 is beyond the size 1000")), "{msg}");
    // Fewer and more entries than declared.
    same_error("truncated", &good[..at]);
    same_error("extra", &format!("{good}1 1 1\n"));
    same_error("skew_diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 2\n2 1 1\n2 2 1\n");
    same_error("hermitian_diagonal", "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n1 1 1 2\n");
    same_error("zero_index", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n0 1 1\n");
    same_error("three_numbers", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1\n");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Random entries (any order, duplicates), blank and comment lines, CRLF
    /// or not, a last newline or not: streamed as read whole, CSR as the reference.
    #[test]
    fn random_files_round_trip(
        entries in prop::collection::vec((0u64..6, 0u64..5, -8i32..8, 0u8..8), 0..40),
        crlf in any::<bool>(),
        last_newline in any::<bool>(),
    ) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let mut s = format!("%%MatrixMarket matrix coordinate real general{nl}6 5 {}{nl}", entries.len());
        for &(i, j, v, extra) in &entries {
            match extra {
                0 => s.push_str(&format!("% c{nl}")),
                1 => s.push_str(&format!("  {nl}")),
                _ => {}
            }
            s.push_str(&format!("{} {} {}{nl}", i + 1, j + 1, f64::from(v) * 0.5));
        }
        if !last_newline && !entries.is_empty() {
            s.truncate(s.len() - nl.len());
        }
        let path = put(&format!("prop{}", entries.len()), &s);
        agree(&path);
        let e: Vec<(u64, u64, f64)> = entries.iter().map(|&(i, j, v, _)| (i, j, f64::from(v) * 0.5)).collect();
        prop_assert_eq!(csr_triples(&path), reference(&e, "general"));
        std::fs::remove_file(path).unwrap();
    }
}

//! `--encoding A=SELL(C, sigma = S)`: SELL-C-σ through the front door. The
//! kernel is SELL-C's (`heddle_rewrite::sparsify::sell`); the packer sorts
//! the rows by length within windows of σ rows (`heddle::cli::sell::pack`),
//! and `heddle run` puts the result back in row order
//! (`heddle::cli::sell::Restore`). On every backend y equals the dense
//! kernel's and a plain dense product, in the rows' own order.

use crate::common;

use common::{Entries, heddle};

const MV: &str = "examples/dense_mv.hdl";

/// Row `i` has `lengths[i % lengths.len()]` entries (at most `cols`), at
/// pseudo-random columns, values exact in f32.
pub(crate) fn entries(seed: u64, rows: u64, cols: u64, lengths: &[u64]) -> Entries {
    let mut rng = common::Rng(seed);
    let mut e = Vec::new();
    for i in 0..rows {
        let n = lengths[i as usize % lengths.len()].min(cols);
        let mut js: Vec<u64> = (0..n).map(|_| rng.below(cols)).collect();
        js.sort();
        js.dedup();
        e.extend(js.into_iter().map(|j| (i, j, (rng.below(255) as f64 - 127.0) / 8.0)));
    }
    e
}

/// Runs dense_mv at `ty` with `matrix=ENCODING` on every backend (with
/// `--reps 2`, `sell_front_door::check_as`): y in the rows' own order, the
/// padding rows gone, and its type says so (also for a multiple of 8 rows:
/// the result is put back into `rows` elements).
fn check(encoding: &str, name: &str, ty: &str, rows: u64, cols: u64, e: &Entries) {
    for v in crate::sell_front_door::check_as(encoding, name, ty, rows, cols, e) {
        assert_eq!(v["type"], format!("[{ty}]_{rows}"), "{name} ({encoding}): {v}");
    }
}

/// Rows of growing lengths: sorted longest first, every window's rows move,
/// so a result left in sliced order could not pass.
fn growing(rows: u64, cols: u64) -> Entries {
    let lengths: Vec<u64> = (0..23).collect();
    entries(0x5195, rows, cols, &lengths)
}

#[test]
fn sell_sigma_spmv_equals_the_dense_kernel_in_row_order() {
    for ty in ["float", "double"] {
        // 45 rows: a multiple of neither C = 8 nor σ = 16; the last window is short.
        check("SELL(8, sigma = 16)", "growing", ty, 45, 33, &growing(45, 33));
        // σ over the whole matrix, and past it.
        check("SELL(8, sigma = 48)", "whole", ty, 45, 33, &growing(45, 33));
        check("SELL(8, sigma = 4096)", "past", ty, 45, 33, &growing(45, 33));
        // Empty rows among others, with 16-bit columns.
        check("SELL(8, crdWidth = 16, sigma = 16)", "holes", ty, 70, 40, &entries(0x5196, 70, 40, &[0, 0, 3, 1, 7]));
        // Every row empty; one row; no rows.
        check("SELL(8, sigma = 16)", "empty", ty, 13, 9, &Vec::new());
        check("SELL(4, sigma = 8)", "one", ty, 1, 1, &vec![(0, 0, 2.5)]);
        check("SELL(8, sigma = 16)", "no_rows", ty, 0, 4, &Vec::new());
    }
    // One very long row among short ones: sorted to the front of its window.
    let mut long = entries(0x5197, 37, 300, &[1, 2]);
    long.retain(|&(i, _, _)| i != 29);
    long.extend((0..300).map(|j| (29, j, (j % 17) as f64 - 8.0)));
    long.sort_by_key(|&(i, j, _)| (i, j));
    check("SELL(8, sigma = 32)", "long_row", "double", 37, 300, &long);
    // C = 4, σ = C: sorting within each slice only.
    check("SELL(4, sigma = 4)", "c4", "float", 30, 20, &growing(30, 20));
}

#[test]
fn sell_sigma_is_the_sell_kernel_and_only_for_a_row_map_result() {
    let dir = tempfile::tempdir().unwrap();
    let dense = crate::sell_front_door::dense_source(dir.path(), "float");
    let dense = dense.to_str().unwrap();
    let sparsify = |enc: &str| heddle(&["sparsify", dense, "--encoding", &format!("matrix={enc}")]);
    // The kernel is SELL(8)'s: only the packing, and the order put back after it, differ.
    let (code, plain, err) = sparsify("SELL(8)");
    assert_eq!(code, 0, "{err}");
    let (code, sorted, err) = sparsify("SELL(8, sigma = 4096)");
    assert_eq!(code, 0, "{err}");
    assert_eq!(plain, sorted);
    // A kernel that adds a vector in row order to the rows' sums: refused
    // with σ > 1 (the sums come out sorted), located at the kernel's result.
    let plus = common::write(
        dir.path(),
        "plus.hdl",
        "nFun(n => nFun(m => fun(a: [[float]_m]_n => fun(xs: [float]_m => fun(b: [float]_n =>\n  zip(a :>> map(fun(row => zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduce(+, 0))), b) :>> map(fun(t => t.1 + t.2)))))))",
    );
    let (code, _, err) = heddle(&["sparsify", plus.to_str().unwrap(), "--encoding", "a=SELL(8, sigma = 64)"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("plus.hdl:2:3") && err.contains("sorted by length"), "{err}");
}

#[test]
fn sell_sigma_written_wrongly_is_a_usage_error() {
    for (bad, says) in [
        ("SELL(8, sigma = 0)", "multiple of C = 8"),
        ("SELL(8, sigma = 12)", "multiple of C = 8"),
        ("SELL(8, sigma = -8)", "multiple of C = 8"),
        ("SELL(8, sigma = 4294967296)", "multiple of C = 8"),
        ("SELL(8, sigma = 64, sigma = 64)", "given twice"),
        ("SELL(8, sigma)", "sigma = S"),
        ("SELL(8, window = 64)", "`crdWidth`, `sigma` and `explicitVal`"),
        ("SELL(8, explicitVal = one)", "is a number"),
        ("SELL(8, explicitVal = 1.0 : f65)", "is a number"),
        ("SELL(8, explicitVal = 1, explicitVal = 1)", "given twice"),
    ] {
        for cmd in ["sparsify", "run"] {
            let (code, _, err) = heddle(&[cmd, MV, "--encoding", &format!("matrix={bad}")]);
            assert_eq!(code, 2, "{cmd} {bad}: {err}");
            assert!(err.contains(says), "{cmd} {bad}: {err}");
        }
    }
}

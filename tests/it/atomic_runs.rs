//! `scatterAdd` as a kernel's result runs in chunks that add each run of one
//! slot once (`heddle_ir::loops::coalesce_atomic_runs`): a COO SpMV's row
//! costs one atomic add per chunk it spans, not one per entry.
//!
//! Checked on every backend against sums computed here: runs that start and
//! end at and across chunk boundaries (lengths around the chunk of 32), one
//! long row among short ones (a power-law row), keys in random order (runs of
//! one), empty inputs, integer sums (exact) and tuples of sums (several
//! fields added at one slot); and in the lowered loop program, that the adds
//! happen once per run.
//!
//! On OpenCL the chunks of a work-group then combine their boundary runs in
//! `__local` memory before adding them (`heddle_ir::loops::group_atomic_runs`):
//! rows spanning several work-groups, entries in any order, duplicates and
//! sizes that are no multiple of a group's entries check that combination
//! (and, under Oclgrind, its barriers).

use crate::common;

use common::{Rng, backends, flatten, heddle, oclgrind, write};
use heddle_ir::loops::{RUN_CHUNK, RUN_GROUP};

/// `heddle run FILE` on `backend` with `args`; the result's numbers.
fn run(file: &str, backend: &str, args: &[String]) -> Vec<f64> {
    let mut all: Vec<&str> = vec!["run", file, "--backend", backend];
    all.extend(args.iter().map(String::as_str));
    let (code, out, err) = heddle(&all);
    assert_eq!(code, 0, "{file} on {backend}: {err}");
    let mut flat = Vec::new();
    flatten(&serde_json::from_str(&out).unwrap_or_else(|e| panic!("{file} on {backend}: {e}: {out}")), &mut flat);
    flat
}

/// Row lengths that put run boundaries at, before and after chunk edges, a
/// long row, and empty rows.
fn row_lengths(rng: &mut Rng, case: u64) -> Vec<usize> {
    let c = RUN_CHUNK as usize;
    match case {
        0 => vec![],
        1 => vec![1],
        2 => vec![c - 1, c, c + 1, 0, 2 * c, 2 * c + 1, 1],
        3 => {
            // One long row among short and empty ones.
            let mut lens: Vec<usize> = (0..40).map(|_| rng.below(3) as usize).collect();
            lens[rng.below(40) as usize] = 20 * c + 7;
            lens
        }
        _ => (0..1 + rng.below(30) as usize).map(|_| rng.below(2 * c as u64 + 3) as usize).collect(),
    }
}

/// The cases `0 .. n`; in the Oclgrind pass (slow: one case) case 2, whose
/// runs meet chunk boundaries in every way.
fn cases(n: u64) -> Vec<u64> {
    if oclgrind() { vec![2] } else { (0..n).collect() }
}

#[test]
fn coo_spmv_sums_each_row_once_per_chunk_and_equals_a_dense_product() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xC0A1E5CE);
    for case in cases(8) {
        let lens = row_lengths(&mut rng, case);
        let rows = lens.len().max(1);
        let cols = 1 + rng.below(50) as usize;
        let mut lines = Vec::new();
        let mut y = vec![0.0f64; rows];
        let xs: Vec<f64> = (0..cols).map(|_| rng.value()).collect();
        for (i, &len) in lens.iter().enumerate() {
            for _ in 0..len {
                // Repeated coordinates are allowed: COO sums them.
                let (j, v) = (rng.below(cols as u64) as usize, rng.value());
                lines.push(format!("{} {} {v}", i + 1, j + 1));
                y[i] += v * xs[j];
            }
        }
        let mtx = format!(
            "%%MatrixMarket matrix coordinate real general\n{rows} {cols} {}\n{}\n",
            lines.len(),
            lines.join("\n")
        );
        let a = write(dir.path(), &format!("a{case}.mtx"), &mtx);
        let x = write(dir.path(), &format!("x{case}.json"), &serde_json::to_string(&xs).unwrap());
        let args =
            vec!["--matrix".into(), format!("A={}", a.display()), "--input".into(), format!("xs={}", x.display())];
        for b in backends() {
            let got = run("examples/sparse/spmv_coo.hdl", b, &args);
            assert_eq!(got.len(), rows, "case {case} on {b}");
            for (i, (g, w)) in got.iter().zip(&y).enumerate() {
                let scale = 1.0 + lens.get(i).copied().unwrap_or(0) as f64;
                assert!((g - w).abs() <= 1e-5 * scale, "case {case} on {b}: row {i}: {g} != {w} (lengths {lens:?})");
            }
        }
    }
}

/// A histogram with keys in any order and a count beside each sum: integer
/// sums are exact whatever the order of the adds, and both fields of a slot
/// are added by one run.
const HISTOGRAM: &str = "nFun(N => nFun(M =>
fun(keys: [int]_N =>
fun(weights: [int]_N =>
  zip(keys, weights) :>> map(fun(p => (p.1, (p.2, 1)))) :>> scatterAdd(M)))))
";

#[test]
fn integer_sums_and_counts_of_unordered_keys_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "histogram.hdl", HISTOGRAM);
    let mut rng = Rng(0x5107ED);
    for case in cases(6) {
        let m = 1 + rng.below(9) as usize;
        let n = match case {
            0 => 0,
            1 => 1,
            _ => rng.below(4 * RUN_CHUNK as u64) as usize,
        };
        // Sorted keys in even cases (long runs), random ones in odd cases (runs of one or two).
        let mut keys: Vec<i64> = (0..n).map(|_| rng.below(m as u64) as i64).collect();
        if case % 2 == 0 {
            keys.sort();
        }
        let weights: Vec<i64> = (0..n).map(|_| rng.below(2001) as i64 - 1000).collect();
        let mut want = vec![0.0f64; 2 * m];
        for (k, w) in keys.iter().zip(&weights) {
            want[2 * *k as usize] += *w as f64;
            want[2 * *k as usize + 1] += 1.0;
        }
        let k = write(dir.path(), &format!("k{case}.json"), &serde_json::to_string(&keys).unwrap());
        let w = write(dir.path(), &format!("w{case}.json"), &serde_json::to_string(&weights).unwrap());
        let args = vec![
            "--param".into(),
            format!("N={n}"),
            "--param".into(),
            format!("M={m}"),
            "--input".into(),
            format!("keys={}", k.display()),
            "--input".into(),
            format!("weights={}", w.display()),
        ];
        for b in backends() {
            assert_eq!(run(file.to_str().unwrap(), b, &args), want, "case {case} on {b}: keys {keys:?}");
        }
    }
}

#[test]
fn the_lowered_coo_spmv_adds_once_per_run() {
    let (code, out, err) = heddle(&["compile", "examples/sparse/spmv_coo.hdl", "--target", "loops"]);
    assert_eq!(code, 0, "{err}");
    // One add at the end of a run inside the chunk's loop, one after it for the last run.
    assert_eq!(out.matches("atomic").count(), 2, "{out}");
    assert!(out.contains(&format!("* {RUN_CHUNK}")), "the loop should run in chunks of {RUN_CHUNK}:\n{out}");
}

/// Entries one work-group's chunks cover on OpenCL.
const GROUP_ENTRIES: usize = (RUN_GROUP * RUN_CHUNK) as usize;

/// COO entries `(row, column, value)` given as buffers (`--input`), so that
/// their order is exactly the one made here (a `.mtx` file is sorted when read).
fn coo_args(
    dir: &std::path::Path,
    tag: &str,
    rows: usize,
    cols: usize,
    entries: &[(usize, usize, f64)],
) -> Vec<String> {
    let crd: Vec<[usize; 2]> = entries.iter().map(|&(i, j, _)| [i, j]).collect();
    let vals: Vec<f64> = entries.iter().map(|e| e.2).collect();
    let file = |name: &str, v: String| write(dir, &format!("{tag}_{name}.json"), &v).display().to_string();
    let pos = file("pos", format!("[0, {}]", entries.len()));
    let crd = file("crd", serde_json::to_string(&crd).unwrap());
    let vals = file("vals", serde_json::to_string(&vals).unwrap());
    let mut args = Vec::new();
    for (k, v) in [("A_dim0", rows.to_string()), ("A_dim1", cols.to_string())] {
        args.extend(["--param".to_string(), format!("{k}={v}")]);
    }
    for (k, v) in [("A_pos0", pos), ("A_crd0", crd), ("A_values", vals)] {
        args.extend(["--input".to_string(), format!("{k}={v}")]);
    }
    args
}

/// A COO entry: (row, column, value).
type Entry = (usize, usize, f64);

/// Rows whose runs meet across work-groups: one row longer than two groups'
/// entries among short ones (sorted), the same entries shuffled (runs of one),
/// one row made of one entry repeated (duplicates), a size that is no
/// multiple of a group or a chunk, and no entries at all; each against sums
/// computed here, on every backend.
#[test]
fn coo_rows_across_work_groups_equal_a_dense_product() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x6A0C_5E65);
    let cols = 13;
    let xs: Vec<f64> = (0..cols).map(|_| rng.value()).collect();
    let x = write(dir.path(), "x.json", &serde_json::to_string(&xs).unwrap());
    // (rows, entries) per case; Oclgrind runs the first three (one kernel, small launches).
    let mut cases: Vec<(&str, usize, Vec<Entry>)> = Vec::new();
    let long = 2 * GROUP_ENTRIES + GROUP_ENTRIES / 2 + 7;
    let mut sorted = Vec::new();
    for (i, len) in [3, 0, long, 1, 2 * RUN_CHUNK as usize + 1, 0, 5].into_iter().enumerate() {
        for _ in 0..len {
            sorted.push((i, rng.below(cols as u64) as usize, rng.value()));
        }
    }
    cases.push(("sorted", 7, sorted.clone()));
    let mut shuffled = sorted.clone();
    for k in (1..shuffled.len()).rev() {
        shuffled.swap(k, rng.below(k as u64 + 1) as usize);
    }
    cases.push(("shuffled", 7, shuffled));
    cases.push(("empty", 4, Vec::new()));
    cases.push(("duplicates", 2, vec![(1, 4, 0.75); GROUP_ENTRIES + 3]));
    // Rows of random lengths up to a group's entries, in order, some longer than a chunk.
    let mut many = Vec::new();
    let rows = 40;
    for i in 0..rows {
        for _ in 0..rng.below(if i % 7 == 0 { GROUP_ENTRIES as u64 } else { 40 }) {
            many.push((i, rng.below(cols as u64) as usize, rng.value()));
        }
    }
    cases.push(("many", rows, many));
    if oclgrind() {
        cases.truncate(3);
    }
    for (tag, rows, entries) in &cases {
        let mut want = vec![0.0f64; *rows];
        let mut lens = vec![0usize; *rows];
        for &(i, j, v) in entries {
            want[i] += v * xs[j];
            lens[i] += 1;
        }
        let mut args = coo_args(dir.path(), tag, *rows, cols, entries);
        args.extend(["--input".to_string(), format!("xs={}", x.display())]);
        for b in backends() {
            let got = run("examples/sparse/spmv_coo.hdl", b, &args);
            assert_eq!(got.len(), *rows, "{tag} on {b}");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                // f32 sums of multiples of 1/4 in another order: the tests' reassociation tolerance.
                let scale = 1.0 + lens[i] as f64;
                assert!((g - w).abs() <= 1e-5 * scale, "{tag} on {b}: row {i}: {g} != {w}");
            }
        }
    }
}

/// Integer sums and counts over keys of a few long runs spanning work-groups
/// (sorted) and over the same keys shuffled: exact on every backend.
#[test]
fn integer_runs_across_work_groups_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "histogram.hdl", HISTOGRAM);
    let mut rng = Rng(0x1D_6A0C);
    let n = GROUP_ENTRIES + GROUP_ENTRIES / 3 + 5;
    let m = 3;
    let mut keys: Vec<i64> = (0..n).map(|_| rng.below(m) as i64).collect();
    keys.sort();
    let weights: Vec<i64> = (0..n).map(|_| rng.below(2001) as i64 - 1000).collect();
    let mut orders = vec![("sorted", keys.clone())];
    if !oclgrind() {
        let mut shuffled = keys.clone();
        for k in (1..n).rev() {
            shuffled.swap(k, rng.below(k as u64 + 1) as usize);
        }
        orders.push(("shuffled", shuffled));
    }
    for (tag, keys) in orders {
        let mut want = vec![0.0f64; 2 * m as usize];
        for (k, w) in keys.iter().zip(&weights) {
            want[2 * *k as usize] += *w as f64;
            want[2 * *k as usize + 1] += 1.0;
        }
        let k = write(dir.path(), &format!("k_{tag}.json"), &serde_json::to_string(&keys).unwrap());
        let w = write(dir.path(), "w.json", &serde_json::to_string(&weights).unwrap());
        let args = vec![
            "--param".into(),
            format!("N={n}"),
            "--param".into(),
            format!("M={m}"),
            "--input".into(),
            format!("keys={}", k.display()),
            "--input".into(),
            format!("weights={}", w.display()),
        ];
        for b in backends() {
            assert_eq!(run(file.to_str().unwrap(), b, &args), want, "{tag} on {b}");
        }
    }
}

/// The OpenCL kernel of COO SpMV: work-groups of `RUN_GROUP` items, each
/// chunk's first and last run kept in `__local` memory, combined with
/// barriers between the steps, and one atomic add per segment's first entry.
#[test]
fn the_opencl_coo_spmv_combines_a_work_groups_boundary_runs() {
    let (code, out, err) = heddle(&["compile", "examples/sparse/spmv_coo.hdl", "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("local = [{RUN_GROUP}]")), "{out}");
    assert!(out.contains("__local") && out.contains("barrier(CLK_LOCAL_MEM_FENCE)"), "{out}");
    // Interior runs inside the chunk's loop, and the two boundary entries of an item.
    assert_eq!(out.matches("atomic_cmpxchg(heddle_p").count(), 3, "{out}");
    insta::assert_snapshot!("opencl_spmv_coo", out);
}

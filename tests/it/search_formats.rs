//! `heddle search-formats`: every encoding of the operand is listed (run or
//! skipped with a reason), the results agree, the table is sorted by time,
//! and bad operands are errors with exit status 1.

use crate::common;

use common::heddle;

const MTX: &str = "matrix=examples/data/spmv8/matrix.mtx";
const XS: &str = "xs=examples/data/spmv8/xs.json";

/// 2 level orders × 16 level-type pairs; widths ×4 except all-dense; then
/// DIA, BSR(1, 8), BSR(2, 2), BSR(4, 4), BSR(8, 1) at native and 32-bit widths.
const RANK2_VARIANTS: usize = 2 * (15 * 4 + 1) + 5 * 2;

fn search(extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "search-formats",
        "examples/dense_mv.hdl",
        "--operand",
        "matrix",
        "--matrix",
        MTX,
        "--input",
        XS,
        "--reps",
        "2",
    ];
    args.extend_from_slice(extra);
    heddle(&args)
}

#[test]
fn json_lists_every_variant_sorted_by_time() {
    for backend in ["interp", "cpu"] {
        let (code, out, err) = search(&["--backend", backend, "--json"]);
        assert_eq!(code, 0, "{backend}: {err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        let ran = j["variants"].as_array().unwrap();
        let skipped = j["skipped"].as_array().unwrap();
        assert_eq!(ran.len() + skipped.len(), RANK2_VARIANTS, "{j}");
        let times: Vec<f64> = ran.iter().map(|v| v["seconds"].as_f64().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "not sorted: {times:?}");
        let encs: Vec<&str> = ran.iter().map(|v| v["encoding"].as_str().unwrap()).collect();
        for want in [
            "(i : dense, j : compressed) }>",
            "(i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>",
            "(i : dense, j : dense) }>",
            "(j : dense, i : dense) }>",
            // DCSR and CDR: stored rows, scattered into the result.
            "(i : compressed, j : compressed) }>",
            "(i : compressed, j : dense) }>",
            // CSC: the columns-dot law.
            "(j : dense, i : compressed) }>",
            // DIA, BSR(2, 2) and BSR(8, 1) (the matrix is 8 × 6).
            "(j - i : compressed, i : dense) }>",
            "(i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense), posWidth = 32, crdWidth = 32 }>",
            "(i floordiv 8 : dense, j floordiv 1 : compressed, i mod 8 : dense, j mod 1 : dense) }>",
        ] {
            assert!(encs.iter().any(|e| e.ends_with(want)), "{backend}: `{want}` did not run: {j}");
        }
        for s in skipped {
            let why = s["reason"].as_str().unwrap();
            assert!(!why.is_empty() && !why.contains("panicked"), "{s}");
        }
        // 6 columns do not divide into BSR(1, 8)'s blocks: skipped with the reason.
        assert!(
            skipped.iter().any(|s| s["encoding"].as_str().unwrap().contains("j floordiv 8")
                && s["reason"].as_str().unwrap().contains("not a multiple of its block size 8")),
            "{j}"
        );
        // MLIR's verifier rejects a singleton level after a dense one.
        assert!(
            skipped.iter().any(|s| s["encoding"].as_str().unwrap().contains("(i : dense, j : singleton)")
                && s["reason"].as_str().unwrap().contains("verifier")),
            "{j}"
        );
    }
}

#[test]
fn the_table_is_sorted_and_names_skipped_variants() {
    let (code, out, err) = search(&["--backend", "cpu"]);
    assert_eq!(code, 0, "{err}");
    let times: Vec<f64> = out
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // Table rows: rank, time, ratio, encoding.
            (cols.len() > 3 && cols[0].parse::<usize>().is_ok() && cols[3] == "map")
                .then(|| cols[1].parse::<f64>().unwrap())
        })
        .collect();
    assert!(times.len() >= 4, "{out}");
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{out}");
    assert!(
        out.contains("skipped:") && out.contains("(j : compressed, i : compressed): levels in order (j, i)"),
        "{out}"
    );
}

#[test]
fn bad_operands_are_errors() {
    let base = ["search-formats", "examples/dense_mv.hdl"];
    // (extra args, what stderr must say)
    let cases: [(&[&str], &str); 3] = [
        (&["--operand", "nosuch", "--matrix", "nosuch=examples/data/spmv8/matrix.mtx"], "examples/dense_mv.hdl:"),
        // xs is a vector: its encodings are enumerated, but a matrix file fits none.
        (
            &["--operand", "xs", "--matrix", "xs=examples/data/spmv8/matrix.mtx", "--matrix", MTX],
            "no encoding of `xs` could run",
        ),
        (&["--operand", "matrix", "--input", XS], "--matrix matrix=FILE"),
    ];
    for (extra, says) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let (code, _, err) = heddle(&args);
        assert_eq!(code, 1, "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: expected `{says}` in {err}");
    }
    // An operand that is already a tensor is not a dense array.
    let (code, _, err) = heddle(&[
        "search-formats",
        "examples/sparse/spmv_csr.hdl",
        "--operand",
        "A",
        "--matrix",
        "A=examples/data/spmv8/matrix.mtx",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not a dense array") && err.contains("spmv_csr.hdl:"), "{err}");
    // A missing data file is an error, not a run of zero variants.
    let (code, _, err) = heddle(&[
        "search-formats",
        "examples/dense_mv.hdl",
        "--operand",
        "matrix",
        "--matrix",
        "matrix=nosuch.mtx",
        "--input",
        XS,
    ]);
    assert_eq!(code, 1, "{err}");
}

#[test]
fn filter_keeps_the_matching_variants_and_counts_the_rest() {
    let (code, out, err) = search(&["--backend", "cpu", "--json", "--filter", "(i : dense, j : compressed)"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ran = j["variants"].as_array().unwrap();
    assert_eq!(ran.len(), 4, "{j}");
    assert!(ran.iter().all(|v| v["encoding"].as_str().unwrap().contains("(i : dense, j : compressed)")), "{j}");
    assert_eq!(j["filtered_out"].as_u64().unwrap() as usize, RANK2_VARIANTS - 4, "{j}");
}

#[test]
fn opencl_variants_agree_when_a_platform_exists() {
    let (code, out, err) = search(&[
        "--backend",
        "opencl",
        "--json",
        "--filter",
        "(i : dense, j : compressed)",
        "--filter",
        "(i : compressed, j : dense)",
    ]);
    if code == 1 && err.contains("no OpenCL platform") && std::env::var("CI").is_err() {
        eprintln!("SKIPPED: no OpenCL platform: {err}");
        return;
    }
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["variants"].as_array().unwrap().len(), 8, "{j}");
}

#[test]
fn spmm_variants_agree_and_name_the_operand() {
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("b.json");
    std::fs::write(&b, "[[1.0, 2.0], [0.5, -1.0], [3.0, 0.0], [1.0, 1.0], [2.0, -2.0], [0.0, 4.0]]").unwrap();
    let b = format!("B={}", b.display());
    let (code, out, err) = heddle(&[
        "search-formats",
        "examples/dense/dense_mm.hdl",
        "--operand",
        "A",
        "--matrix",
        "A=examples/data/spmv8/matrix.mtx",
        "--input",
        &b,
        "--reps",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("{RANK2_VARIANTS} variants of `A` on cpu:")), "{out}");
    assert!(
        out.contains("(i : dense, j : compressed)\n") && out.contains("(i : compressed, j : compressed)\n"),
        "{out}"
    );
}

/// DIA over a matrix with many diagonals would store far more than CSR:
/// skipped with its sizes (tune --matrix's 3x limit), never allocated; on a
/// banded matrix it runs.
#[test]
fn dia_over_scattered_entries_is_skipped_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    // 40 × 40, one entry per row at column 7·i mod 40: ~40 diagonals of 40 rows for 40 entries.
    let n: usize = 40;
    let scattered: Vec<String> = (0..n).map(|i| format!("{} {} 1.5", i + 1, (7 * i) % n + 1)).collect();
    // The same size, tridiagonal.
    let mut band = Vec::new();
    for i in 0..n {
        for j in i.saturating_sub(1)..(i + 2).min(n) {
            band.push(format!("{} {} {}", i + 1, j + 1, (i + j) as f64 * 0.25));
        }
    }
    let xs = dir.path().join("xs.json");
    std::fs::write(&xs, serde_json::json!((0..n).map(|j| j as f64 * 0.5).collect::<Vec<_>>()).to_string()).unwrap();
    for (name, entries, runs) in [("scattered", scattered, false), ("band", band, true)] {
        let mtx = dir.path().join(format!("{name}.mtx"));
        let text = format!(
            "%%MatrixMarket matrix coordinate real general\n{n} {n} {}\n{}\n",
            entries.len(),
            entries.join("\n")
        );
        std::fs::write(&mtx, text).unwrap();
        let (code, out, err) = heddle(&[
            "search-formats",
            "examples/dense_mv.hdl",
            "--operand",
            "matrix",
            "--matrix",
            &format!("matrix={}", mtx.display()),
            "--input",
            &format!("xs={}", xs.display()),
            "--reps",
            "1",
            "--json",
            "--filter",
            "j - i",
            "--filter",
            "(i : dense, j : compressed) }>",
        ]);
        assert_eq!(code, 0, "{name}: {err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        let dia_ran =
            j["variants"].as_array().unwrap().iter().any(|v| v["encoding"].as_str().unwrap().contains("j - i"));
        assert_eq!(dia_ran, runs, "{name}: {j}");
        if !runs {
            let skipped = j["skipped"].as_array().unwrap();
            assert!(skipped.iter().all(|s| s["reason"].as_str().unwrap().contains("over 3x its")), "{name}: {j}");
            assert_eq!(skipped.len(), 2, "{j}");
        }
    }
}

/// Every data file is read once, whatever the number of variants (and of
/// DIA size checks): given as named pipes, which can be read only once
/// (reading one again waits for a writer that never comes), the search
/// runs every variant and finishes.
#[cfg(unix)]
#[test]
fn each_data_file_is_read_once() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = common::scratch_dir("search-formats-fifo");
    let (mtx, xs) = (dir.path().join("m.mtx"), dir.path().join("xs.json"));
    for (pipe, source) in [(&mtx, "examples/data/spmv8/matrix.mtx"), (&xs, "examples/data/spmv8/xs.json")] {
        let made = Command::new("mkfifo").arg(pipe).status().expect("run mkfifo");
        assert!(made.success(), "mkfifo {}", pipe.display());
        let (pipe, text) = (pipe.clone(), std::fs::read(common::root().join(source)).unwrap());
        // One writer per pipe, writing the file once (opening blocks until heddle opens it to read).
        std::thread::spawn(move || {
            if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&pipe) {
                let _ = f.write_all(&text);
            }
        });
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_heddle"))
        .current_dir(common::root())
        .args(["search-formats", "examples/dense_mv.hdl", "--operand", "matrix", "--reps", "1", "--json"])
        .arg(format!("--matrix=matrix={}", mtx.display()))
        .arg(format!("--input=xs={}", xs.display()))
        // Two CSR variants and the DIA ones, whose size check read the file once more each.
        .args(["--filter", "(i : dense, j : compressed) }>", "--filter", "j - i", "--filter", "crdWidth = 32 }>"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run heddle");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("search-formats still waits after 120 s: it opened a data file twice");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let ran = j["variants"].as_array().unwrap();
    assert!(ran.len() >= 3, "{j}");
    assert!(ran.iter().any(|v| v["encoding"].as_str().unwrap().contains("j - i")), "DIA ran: {j}");
}

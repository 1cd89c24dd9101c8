//! The CPU backend through the command line: `heddle run --backend cpu`
//! (bad data fails cleanly, exactly as on the interpreter), `--threads`,
//! Matrix Market inputs, and `heddle compile --target loops|cpu` with
//! snapshots of the lowered listings and of one kernel's Cranelift IR.

use crate::common;

use common::{assert_input_error, heddle};
use heddle_ir::{Nat, ScalarType, Type};
use heddle_runtime::io::write::write_npy;
use heddle_runtime::value::Value;
use std::path::Path;

fn npy(dir: &Path, name: &str, values: Vec<Value>, s: ScalarType) -> String {
    let path = dir.join(format!("{name}.npy"));
    let ty = Type::array(Type::Scalar(s), Nat::Lit(values.len() as i64));
    write_npy(&path, &Value::array(values), &ty).unwrap();
    path.to_str().unwrap().to_string()
}
fn ints(v: &[i64]) -> Vec<Value> {
    v.iter().map(|x| Value::Int(*x)).collect()
}
fn floats(v: &[f64]) -> Vec<Value> {
    v.iter().map(|x| Value::Float(*x)).collect()
}

/// `examples/csr_unpacked_spmv.hdl` on `--backend cpu` with the 3×3 matrix of
/// tests/it/cli.rs, some inputs replaced.
fn run_cpu(replace: &[(&str, Vec<Value>, ScalarType)], extra: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = vec![
        ("offset", ints(&[0, 2, 2, 3]), ScalarType::I32),
        ("col_indices", ints(&[0, 2, 1]), ScalarType::I32),
        ("values", floats(&[1.5, 2.0, -1.0]), ScalarType::F32),
        ("xs", floats(&[1.0, 2.0, 3.0]), ScalarType::F32),
    ];
    for (k, v, s) in replace {
        let slot = inputs.iter_mut().find(|(n, ..)| n == k).unwrap();
        *slot = (slot.0, v.clone(), *s);
    }
    let mut args: Vec<String> =
        vec!["run".into(), "examples/csr_unpacked_spmv.hdl".into(), "--backend".into(), "cpu".into()];
    for (k, v, s) in inputs.into_iter().filter(|(_, v, _)| !v.is_empty()) {
        args.push("--input".into());
        args.push(format!("{k}={}", npy(dir.path(), k, v, s)));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    heddle(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn cpu_backend_runs_and_reports_itself() {
    let (code, out, err) = run_cpu(&[], &[]);
    assert_eq!((code, out.trim()), (0, "[7.5,0.0,-2.0]"), "{err}");
    for threads in ["1", "2", "5"] {
        let (code, out, err) = run_cpu(&[], &["--threads", threads, "--json"]);
        assert_eq!(code, 0, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(j["backend"], "cpu");
        assert_eq!(j["result"], serde_json::json!([7.5, 0.0, -2.0]));
    }
    assert_eq!(run_cpu(&[], &["--threads", "0"]).0, 2, "zero threads is a usage error");
}

#[test]
fn bad_data_fails_cleanly_on_the_cpu_backend() {
    let i32t = ScalarType::I32;
    assert_input_error(run_cpu(&[("offset", ints(&[0, 2, 1, 3]), i32t)], &[]), "offset", "negative");
    assert_input_error(run_cpu(&[("col_indices", ints(&[0, 3, 1]), i32t)], &[]), "xs", "out of bounds");
    assert_input_error(
        run_cpu(&[("col_indices", ints(&[0, -1, 1]), i32t)], &["--threads", "2"]),
        "xs",
        "out of bounds",
    );
    assert_input_error(run_cpu(&[("values", floats(&[1.5, 2.0]), ScalarType::F32)], &[]), "values", "needs 3 elements");
    assert_input_error(
        run_cpu(&[("offset", floats(&[0.0, 2.0, 2.0, 3.0]), ScalarType::F32)], &[]),
        "offset",
        "expected integer data",
    );
    assert_input_error(run_cpu(&[("xs", vec![], ScalarType::F32)], &[]), "xs", "no input given");
    assert_input_error(run_cpu(&[], &["--param", "n=5"]), "offset", "needs 6 elements");
    // An offsets array that ends past the buffers.
    assert_input_error(run_cpu(&[("offset", ints(&[0, 2, 2, 9]), i32t)], &[]), "col_indices", "elements");
}

const MTX: &str = "%%MatrixMarket matrix coordinate real general
% a 3x3 matrix, 1-based, with a duplicate that is summed
3 3 4
1 1 1.5
1 3 1.0
3 2 -1.0
1 3 1.0
";

fn mtx_file(dir: &Path, text: &str) -> String {
    let p = dir.join("a.mtx");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn matrix_market_inputs_in_every_storage() {
    let dir = tempfile::tempdir().unwrap();
    let a = mtx_file(dir.path(), MTX);
    let xs = npy(dir.path(), "xs", floats(&[1.0, 2.0, 3.0]), ScalarType::F32);
    let xs = format!("xs={xs}");
    let cases = [
        ("csr_unpacked_spmv", "--csr", "offset,col_indices,values"),
        ("lil_spmv", "--lil", "row_length,col_indices,values"),
        ("csr_packed_spmv", "--csr-packed", "offset,values"),
        ("csr_refined_spmv", "--csr-packed", "offset,values"),
        ("dense_mv", "--dense", "matrix"),
    ];
    // The same matrix in every tensor file heddle reads.
    let mut files = vec![a.clone()];
    for (ext, to) in [("npz", "CSR"), ("tns", "COO"), ("json", "CSC")] {
        let path = dir.path().join(format!("a.{ext}")).to_str().unwrap().to_string();
        let (code, _, err) = heddle(&["convert", &a, "--to", to, "-o", &path]);
        assert_eq!(code, 0, "{err}");
        files.push(path);
    }
    for file_path in &files {
        for (example, flag, names) in cases {
            for backend in ["interp", "cpu"] {
                let file = format!("examples/{example}.hdl");
                let spec = format!("{names}={file_path}");
                let (code, out, err) = heddle(&["run", &file, "--backend", backend, flag, &spec, "--input", &xs]);
                assert_eq!((code, out.trim()), (0, "[7.5,0.0,-2.0]"), "{example} on {backend} from {file_path}: {err}");
            }
        }
    }
    // Another file type is a usage error that lists the ones read.
    let (code, _, err) = heddle(&["run", "examples/csr_unpacked_spmv.hdl", "--csr", "offset,col_indices,values=a.txt"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".mtx") && err.contains(".npz"), "{err}");
}

#[test]
fn matrix_market_errors_are_located_and_clean() {
    let dir = tempfile::tempdir().unwrap();
    let bad = mtx_file(dir.path(), "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 x 2.0\n");
    let spec = format!("offset,col_indices,values={bad}");
    let (code, _, err) = heddle(&["run", "examples/csr_unpacked_spmv.hdl", "--backend", "cpu", "--csr", &spec]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("line 3") || err.contains(":3"), "the error should give the line: {err}");
    // A malformed flag value is a usage error, found before any work.
    let (code, _, err) = heddle(&["run", "examples/csr_unpacked_spmv.hdl", "--csr", "offset,values=x.mtx"]);
    assert_eq!(code, 2);
    assert!(err.contains("expected 3 buffer name(s)") && err.contains("OFFSETS,COL_INDICES,VALUES=FILE"), "{err}");
}

/// The kernel lines of a lowered program (host lines may hold a Σ: they run once, on the host).
fn kernel_lines(text: &str) -> Vec<&str> {
    text.lines().skip_while(|l| !l.starts_with("kernel ")).skip(1).collect()
}

#[test]
fn lowered_listings_have_no_sum_loop() {
    for example in ["lil_spmv", "csr_unpacked_spmv", "csr_packed_spmv", "csr_row_sums"] {
        let (code, out, err) = heddle(&["compile", &format!("examples/{example}.hdl"), "--target", "loops"]);
        assert_eq!(code, 0, "{err}");
        for line in kernel_lines(&out) {
            assert!(!line.contains("sum("), "{example}: a Σ is left in the kernel: {line}");
        }
        insta::assert_snapshot!(format!("loops_{example}"), out);
    }
    // LIL's row starts are precomputed on the host, as CSR's offsets.
    let (_, out, _) = heddle(&["compile", "examples/lil_spmv.hdl", "--target", "loops"]);
    assert!(out.starts_with("host "), "{out}");
}

#[test]
fn cranelift_ir_of_a_kernel() {
    let (code, out, err) = heddle(&["compile", "examples/csr_row_sums.hdl", "--target", "cpu"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("readonly"), "input loads are read-only");
    insta::assert_snapshot!("clif_csr_row_sums", out);
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("k.clif");
    let (code, out, _) =
        heddle(&["compile", "examples/csr_row_sums.hdl", "--target", "cpu", "-o", o.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"target\": \"cpu\""), "{out}");
    assert!(std::fs::read_to_string(&o).unwrap().starts_with("function"));
    assert_eq!(heddle(&["compile", "examples/csr_row_sums.hdl", "--target", "nosuch"]).0, 2);
}

/// `heddle compile --target asm` of a kernel whose inputs have ranges (a
/// tensor's coordinates) lists both codes a run may use: without the bounds
/// checks the ranges imply (inputs validated once) and with them; a kernel
/// without ranges has one listing and no headings.
#[test]
fn machine_code_lists_the_code_for_validated_inputs() {
    let (code, out, err) = heddle(&["compile", "examples/sparse/spmv_csr.hdl", "--target", "asm"]);
    assert_eq!(code, 0, "{err}");
    // After the line that says which code for short rows this is (below).
    let out = out
        .split_once('\n')
        .filter(|(first, _)| first.starts_with("; short reduction loops"))
        .map_or(&*out, |(_, rest)| rest);
    let (trusted, checked) = out.split_once("; for any other inputs:\n").expect("two listings");
    assert!(
        trusted.starts_with("; for inputs inside the ranges (A_crd1 < A_dim1), checked once before the launch:\n"),
        "{out}"
    );
    // The checked code compares every coordinate with the bound; the other
    // code leaves those compare-and-branch pairs out.
    let branches = |s: &str| s.lines().filter(|l| l.trim_start().starts_with('j')).count();
    assert!(branches(trusted) < branches(checked), "trusted:\n{trusted}\nchecked:\n{checked}");
    let (code, out, err) = heddle(&["compile", "examples/dense_mv.hdl", "--target", "asm"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("; for"), "{out}");
    assert!(out.contains("ret"), "{out}");
}

/// `heddle run` compiles short reduction loops (an SpMV's short rows) as
/// straight copies for a launch whose inputs fit in cache, as loops for a
/// larger one (`heddle_runtime::cpu::STRAIGHT_COPIES_MAX_BYTES`): `heddle
/// compile --target cpu|asm` says on a comment line which of the two it
/// shows, and `--large-inputs` shows the other. Code without such a loop
/// is the same either way and has no such line.
#[test]
fn compile_says_which_code_for_short_rows_it_shows() {
    let limit = heddle_runtime::cpu::STRAIGHT_COPIES_MAX_BYTES;
    for target in ["cpu", "asm"] {
        let compile = |extra: &[&str]| {
            let (code, out, err) =
                heddle(&[&["compile", "examples/sparse/spmv_csr.hdl", "--target", target][..], extra].concat());
            assert_eq!(code, 0, "{target} {extra:?}: {err}");
            out
        };
        let (small, large) = (compile(&[]), compile(&["--large-inputs"]));
        let first = |s: &str| s.lines().next().unwrap_or_default().to_string();
        assert!(
            first(&small).starts_with("; short reduction loops (under 8 iterations) as straight copies")
                && first(&small).contains(&format!("inputs take at most 4 MiB ({limit} bytes)")),
            "{target}: {small}"
        );
        assert!(
            first(&large).starts_with("; short reduction loops as loops")
                && first(&large).contains(&format!("inputs take over 4 MiB ({limit} bytes)")),
            "{target}: {large}"
        );
        assert_ne!(small.lines().skip(1).collect::<Vec<_>>(), large.lines().skip(1).collect::<Vec<_>>(), "{target}");
        if target == "cpu" {
            // The straight copies are entered by a jump table on the row's length.
            assert!(small.contains("br_table") && !large.contains("br_table"), "{small}\n{large}");
        }
    }
    // No reduction loop: one code, no line.
    let dir = common::scratch_dir("compile-no-copies");
    let scale =
        common::write(dir.path(), "scale.hdl", "nFun(n => fun(xs: [double]_n => xs :>> map(fun(x => x * 2.0))))\n");
    for extra in [&[][..], &["--large-inputs"]] {
        let (code, out, err) = heddle(&[&["compile", scale.to_str().unwrap(), "--target", "asm"][..], extra].concat());
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains("; short reduction loops"), "{out}");
    }
    let (code, _, err) = heddle(&["compile", "examples/sparse/spmv_csr.hdl", "--target", "loops", "--large-inputs"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("--large-inputs applies to --target cpu and asm"), "{err}");
}

/// `heddle compile --accumulators N` shows the code `heddle run
/// --accumulators N` runs: one accumulator adds in one chain, four keep four
/// partials (and the one-chain loop for short rows), so the four-partial code
/// has more float adds. Out of range is a usage error; a target the setting
/// does not reach warns.
#[test]
fn compile_shows_the_code_of_a_given_accumulator_count() {
    let fadds = |accs: &str| {
        let (code, out, err) =
            heddle(&["compile", "examples/sparse/spmv_csr.hdl", "--target", "cpu", "--accumulators", accs]);
        assert_eq!(code, 0, "{err}");
        out.lines().filter(|l| l.contains("= fadd")).count()
    };
    let (one, four) = (fadds("1"), fadds("4"));
    assert!(one >= 1 && one < four, "fadds: {one} with 1 accumulator, {four} with 4");
    let (code, default, _) = heddle(&["compile", "examples/sparse/spmv_csr.hdl", "--target", "cpu"]);
    assert_eq!(code, 0);
    assert_eq!(default.lines().filter(|l| l.contains("= fadd")).count(), four, "the default is 4 accumulators");
    for bad in ["0", "17", "x"] {
        assert_eq!(
            heddle(&["compile", "examples/sparse/spmv_csr.hdl", "--target", "asm", "--accumulators", bad]).0,
            2,
            "--accumulators {bad}"
        );
    }
    let (code, _, err) =
        heddle(&["compile", "examples/sparse/spmv_csr.hdl", "--target", "loops", "--accumulators", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("--accumulators applies to --target cpu and asm"), "{err}");
}

/// `heddle run … --reps N` (LANGUAGE.md §7): with `--json`, `compile_seconds`
/// and `kernel_seconds {median, min, max, p10, p90, reps}` (min ≤ p10 ≤
/// median ≤ p90 ≤ max; one run gives one value everywhere); without it, one
/// stderr line.
#[test]
fn reps_report_kernel_times_on_every_backend() {
    for backend in common::backends() {
        let file = "examples/sparse/spmv_csr.hdl";
        let args = [
            "run",
            file,
            "--backend",
            backend,
            "--matrix",
            "A=tests/data/sparse/m4x8.mtx",
            "--input",
            "xs=examples/data/sparse/x8.json",
        ];
        let (code, out, err) = heddle(&[&args[..], &["--reps", "5", "--json"]].concat());
        assert_eq!(code, 0, "{backend}: {err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        let k = &j["kernel_seconds"];
        assert_eq!(k["reps"], 5, "{backend}: {j}");
        let stats = |k: &serde_json::Value| {
            ["min", "p10", "median", "p90", "max"].map(|s| k[s].as_f64().unwrap_or_else(|| panic!("{s} in {k}")))
        };
        let [min, p10, median, p90, max] = stats(k);
        assert!(0.0 <= min && min <= p10 && p10 <= median && median <= p90 && p90 <= max, "{backend}: {k}");
        // One run: its time is every statistic.
        let (code, out, err) = heddle(&[&args[..], &["--reps", "1", "--json"]].concat());
        assert_eq!(code, 0, "{backend}: {err}");
        let j1: serde_json::Value = serde_json::from_str(&out).unwrap();
        let one = stats(&j1["kernel_seconds"]);
        assert!(one.iter().all(|&t| t == one[0]), "{backend}: {j1}");
        assert_eq!(j1["kernel_seconds"]["reps"], 1, "{backend}: {j1}");
        assert!(j["compile_seconds"].as_f64().is_some_and(|c| c >= 0.0), "{backend}: {j}");
        // Without --json: the result on stdout, one timing line on stderr.
        let (code, out, err) = heddle(&[&args[..], &["--reps", "3"]].concat());
        assert_eq!(code, 0, "{backend}: {err}");
        assert!(out.trim_start().starts_with('['), "{backend}: {out}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("kernel: median")).collect();
        assert_eq!(lines.len(), 1, "{backend}: {err}");
        assert!(lines[0].contains("over 3 runs") && lines[0].contains("compile"), "{backend}: {err}");
        assert!(lines[0].contains(", p10 ") && lines[0].contains(", p90 "), "{backend}: {err}");
        // No timing without --reps.
        let (_, out, err) = heddle(&[&args[..], &["--json"]].concat());
        assert!(!out.contains("kernel_seconds") && !err.contains("kernel: median"), "{backend}: {out}{err}");
    }
    assert_eq!(run_cpu(&[], &["--reps", "0"]).0, 2, "zero repetitions is a usage error");
}

/// `HEDDLE_THREADS` takes the values `--threads` takes, and nothing else.
#[test]
fn heddle_threads_is_capped_like_threads() {
    let run = |value: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_heddle"))
            .args([
                "run",
                "examples/sparse/spmv_csr.hdl",
                "--backend",
                "cpu",
                "--matrix",
                "A=tests/data/sparse/m4x8.mtx",
                "--input",
                "xs=examples/data/sparse/x8.json",
            ])
            .env("HEDDLE_THREADS", value)
            .current_dir(common::root())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for ok in ["1", "3", "1024"] {
        assert_eq!(run(ok).0, Some(0), "HEDDLE_THREADS={ok}: {}", run(ok).1);
    }
    for bad in ["0", "1025", "100000000", "two"] {
        let (code, err) = run(bad);
        assert_eq!(code, Some(1), "HEDDLE_THREADS={bad}");
        assert!(err.contains("HEDDLE_THREADS") && err.contains("1 to 1024"), "{err}");
    }
}

/// Valid tensor coordinates let the CPU backend run code without the checks
/// their ranges imply (`xs@e.1` in an SpMV); storage buffers given one by
/// one bypass the readers' validation, and one coordinate outside its level
/// then runs the checked code, which reports the access where it is.
#[test]
fn tensor_coordinates_outside_their_level_fail_the_located_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str, text: &str| common::write(dir.path(), name, text).to_str().unwrap().to_string();
    let (pos, vals, xs) =
        (path("pos.json", "[0, 2, 3]"), path("vals.json", "[1.0, 2.0, 3.0]"), path("xs.json", "[1, 2, 3]"));
    let run = |crd: &str| {
        let crd = path("crd.json", crd);
        heddle(&[
            "run",
            "examples/sparse/spmv_csr.hdl",
            "--backend",
            "cpu",
            "--param",
            "A_dim0=2",
            "--param",
            "A_dim1=3",
            "--input",
            &format!("A_pos1={pos}"),
            "--input",
            &format!("A_crd1={crd}"),
            "--input",
            &format!("A_values={vals}"),
            "--input",
            &format!("xs={xs}"),
        ])
    };
    let (code, out, err) = run("[0, 2, 1]");
    assert_eq!((code, out.trim()), (0, "[7.0,6.0]"), "{err}");
    let (code, _, err) = run("[0, 7, 1]");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("an index into `xs`") && err.contains("spmv_csr.hdl:6:"), "{err}");
}

/// `heddle tune --backend cpu`: variants and thread counts are
/// configurations, each verified against the interpreter and timed; a thread
/// count shows in each outcome and in the single best.
#[test]
fn tune_on_the_cpu_over_variants_and_threads() {
    let (code, out, err) = heddle(&[
        "tune",
        "examples/csr_unpacked_spmv.hdl",
        "examples/csr_spmv_row_per_item.hdl",
        "--backend",
        "cpu",
        "--threads",
        "1,2",
        "--csr",
        "examples/data/spmv8/matrix.mtx",
        "--reps",
        "3",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(v["backend"], "cpu");
    assert!(v.get("device").is_none(), "{out}");
    let variants = v["cases"][0]["variants"].as_array().unwrap();
    let seen: Vec<(String, u64)> =
        variants.iter().map(|x| (x["kernel"].as_str().unwrap().to_string(), x["threads"].as_u64().unwrap())).collect();
    assert_eq!(
        seen,
        [
            ("csr_unpacked_spmv".to_string(), 1),
            ("csr_unpacked_spmv".to_string(), 2),
            ("csr_spmv_row_per_item".to_string(), 1),
            ("csr_spmv_row_per_item".to_string(), 2)
        ]
    );
    assert!(variants.iter().all(|x| x["seconds"].as_f64().is_some_and(|s| s > 0.0)), "{out}");
    assert!(v["single_best"]["threads"].is_u64(), "{out}");
    // A scipy .npz is a case as the .mtx is (the GPU benchmark skips the
    // Matrix Market text): the same matrix, so the same case name and the
    // same verified variants.
    let dir = tempfile::tempdir().unwrap();
    let npz = dir.path().join("matrix.npz").to_str().unwrap().to_string();
    let (code, _, err) = heddle(&["convert", "examples/data/spmv8/matrix.mtx", "--to", "CSR", "-o", &npz]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = heddle(&[
        "tune",
        "examples/csr_unpacked_spmv.hdl",
        "--backend",
        "cpu",
        "--threads",
        "1",
        "--csr",
        &npz,
        "--reps",
        "2",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(v["cases"][0]["case"], "matrix", "{out}");
    assert!(v["cases"][0]["variants"].as_array().unwrap().iter().all(|x| x["error"].is_null()), "{out}");
    // Nothing to tune on is an input error, not an empty report.
    let (code, _, err) = heddle(&["tune", "examples/csr_unpacked_spmv.hdl", "--backend", "cpu"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("nothing to tune on"), "{err}");
}

/// `--accumulators N` and `--chunks-per-thread N` (`heddle run --backend
/// cpu`): any valid value gives the same result; a value out of range or not
/// a number is a usage error (exit status 2) naming the flag.
#[test]
fn accumulators_and_chunks_per_thread_are_validated() {
    for (accs, chunks, threads) in [("1", "1", "2"), ("3", "64", "3"), ("8", "8", "1"), ("16", "2", "4")] {
        let (code, out, err) =
            run_cpu(&[], &["--accumulators", accs, "--chunks-per-thread", chunks, "--threads", threads]);
        assert_eq!((code, out.trim()), (0, "[7.5,0.0,-2.0]"), "{accs} {chunks} {threads}: {err}");
    }
    for bad in [
        ["--accumulators", "0"],
        ["--accumulators", "17"],
        ["--accumulators", "two"],
        ["--chunks-per-thread", "0"],
        ["--chunks-per-thread", "65"],
    ] {
        let (code, out, err) = run_cpu(&[], &bad);
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert!(out.is_empty() && err.contains(bad[0]) && !err.contains("panicked"), "{bad:?}: {err}");
    }
    insta::assert_snapshot!("usage_accumulators_out_of_range", run_cpu(&[], &["--accumulators", "0"]).2);
}

/// `heddle tune --backend cpu --accumulators … --chunks-per-thread …`:
/// every combination is a configuration, verified and timed, and each
/// outcome and the single best name their settings (text and JSON).
#[test]
fn tune_on_the_cpu_searches_accumulators_and_chunking() {
    let args = [
        "tune",
        "examples/csr_unpacked_spmv.hdl",
        "--backend",
        "cpu",
        "--threads",
        "2",
        "--accumulators",
        "1,2,4,8",
        "--chunks-per-thread",
        "1,8",
        "--csr",
        "examples/data/spmv8/matrix.mtx",
        "--reps",
        "2",
    ];
    let (code, out, err) = heddle(&[&args[..], &["--json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    common::assert_schema(&v, "tune --accumulators");
    let variants = v["cases"][0]["variants"].as_array().unwrap();
    let seen: Vec<(u64, u64)> = variants
        .iter()
        .map(|x| (x["accumulators"].as_u64().unwrap(), x["chunks_per_thread"].as_u64().unwrap()))
        .collect();
    assert_eq!(seen, [(1, 1), (1, 8), (2, 1), (2, 8), (4, 1), (4, 8), (8, 1), (8, 8)], "{out}");
    assert!(variants.iter().all(|x| x["seconds"].as_f64().is_some_and(|s| s > 0.0) && x["error"].is_null()), "{out}");
    let single = &v["single_best"];
    assert!(
        single["accumulators"].is_u64() && single["chunks_per_thread"].is_u64() && single["threads"] == 2,
        "{single}"
    );
    let (code, out, err) = heddle(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("threads=2 accumulators=1 chunks/thread=1")
            && out.contains("threads=2 accumulators=8 chunks/thread=8"),
        "{out}"
    );
    // Without the flags: the defaults, one configuration, named.
    let (code, out, err) = heddle(&[
        "tune",
        "examples/csr_unpacked_spmv.hdl",
        "--backend",
        "cpu",
        "--threads",
        "1",
        "--csr",
        "examples/data/spmv8/matrix.mtx",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let variants = v["cases"][0]["variants"].as_array().unwrap();
    assert_eq!(
        (variants.len(), &variants[0]["accumulators"], &variants[0]["chunks_per_thread"]),
        (1, &serde_json::json!(4), &serde_json::json!(8)),
        "{out}"
    );
    let (code, _, err) = heddle(&[
        "tune",
        "examples/csr_unpacked_spmv.hdl",
        "--backend",
        "cpu",
        "--accumulators",
        "1,0",
        "--csr",
        "examples/data/spmv8/matrix.mtx",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--accumulators"), "{err}");
}

/// A parallel loop over a compressed level's entries (DCSR's stored rows, a
/// CSF tensor's slices) is weighed by each entry's child (the row, the
/// slice's fibres), so the runtime splits it by work. Before, such a loop
/// had no weight: every stored row counted as an empty row, and a DCSR SpMV
/// of 600 rows of 100 nonzeros, or an MTTKRP of a few hundred slices, stayed
/// on one thread. COO's entries have no child: its loop stays unweighed,
/// chunked by `coalesce_atomic_runs`. The results still equal the
/// interpreter's.
#[test]
fn stored_rows_and_slices_are_split_by_their_work() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, cols, per_row) = (600u64, 400u64, 100u64);
    let mut mtx = format!("%%MatrixMarket matrix coordinate real general\n{rows} {cols} {}\n", rows * per_row);
    for i in 0..rows {
        for k in 0..per_row {
            mtx.push_str(&format!("{} {} {}\n", i + 1, (i * 7 + k * 3) % cols + 1, (i + k) % 5));
        }
    }
    let a = common::write(dir.path(), "a.mtx", &mtx);
    let xs: Vec<f64> = (0..cols).map(|j| (j % 9) as f64 - 4.0).collect();
    let x = common::write(dir.path(), "x.json", &serde_json::to_string(&xs).unwrap());
    let chunks = |kernel: &str, backend: &str, threads: &str| {
        let args = [
            "run",
            kernel,
            "--backend",
            backend,
            "--threads",
            threads,
            "--matrix",
            &format!("A={}", a.display()),
            "--input",
            &format!("xs={}", x.display()),
        ];
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_heddle"))
            .args(args)
            .env("HEDDLE_PROFILE", "1")
            .current_dir(common::root())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{kernel}: {err}");
        let split = err.lines().find_map(|l| {
            l.split_once("plan the split (").map(|(_, r)| r.split(' ').next().unwrap().parse::<usize>().unwrap())
        });
        (String::from_utf8_lossy(&out.stdout).into_owned(), split)
    };
    let (want, _) = chunks("examples/sparse/spmv_dcsr.hdl", "interp", "1");
    let (got, split) = chunks("examples/sparse/spmv_dcsr.hdl", "cpu", "2");
    assert!(split.is_some_and(|c| c >= 2), "DCSR SpMV: {split:?} chunks");
    let parse = |s: &str| serde_json::from_str::<Vec<f64>>(s).unwrap();
    common::assert_close(&parse(&got), &parse(&want), "DCSR SpMV on 2 threads");
    for (file, weighed) in [
        ("examples/sparse/spmv_dcsr.hdl", true),
        ("examples/sparse/mttkrp_csf.hdl", true),
        ("examples/sparse/spmv_coo.hdl", false),
    ] {
        let (code, text, err) = heddle(&["compile", file, "--target", "loops"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(text.lines().any(|l| l.starts_with("balance ")), weighed, "{file}:\n{text}");
        assert_eq!(
            text.contains("_chunk in"),
            !weighed,
            "{file}: chunked by coalesce_atomic_runs iff unweighed:\n{text}"
        );
    }
}

/// A result of 2 MiB or more is a buffer on transparent huge pages
/// (`runtime/src/pages.rs`, Linux); `HEDDLE_HUGEPAGES=0` keeps it on the
/// heap. Either way the SpMV of 600 000 rows equals the product computed
/// here (small integers: exact in `f32`).
#[test]
fn large_results_are_the_same_with_and_without_huge_pages() {
    let dir = tempfile::tempdir().unwrap();
    let n = 600_000u64;
    let col = |i: u64| (i * 7919 + 13) % n;
    let mut mtx = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} {n}\n");
    for i in 0..n {
        mtx.push_str(&format!("{} {} {}\n", i + 1, col(i) + 1, i % 5 + 1));
    }
    let a = common::write(dir.path(), "a.mtx", &mtx);
    let xs: Vec<f64> = (0..n).map(|j| (j % 9) as f64 - 4.0).collect();
    let x = common::write(dir.path(), "x.json", &serde_json::to_string(&xs).unwrap());
    let want: Vec<f64> = (0..n).map(|i| (i % 5 + 1) as f64 * xs[col(i) as usize]).collect();
    for setting in ["0", "1"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_heddle"))
            .args([
                "run",
                "examples/sparse/spmv_csr.hdl",
                "--backend",
                "cpu",
                "--matrix",
                &format!("A={}", a.display()),
                "--input",
                &format!("xs={}", x.display()),
            ])
            .env("HEDDLE_HUGEPAGES", setting)
            .current_dir(common::root())
            .output()
            .unwrap();
        assert!(out.status.success(), "HEDDLE_HUGEPAGES={setting}: {}", String::from_utf8_lossy(&out.stderr));
        let got: Vec<f64> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(got, want, "HEDDLE_HUGEPAGES={setting}");
    }
}

//! Hostile and careless input at the command line (issue 16): sizes that
//! wrap or that no machine holds, output that cannot be written, programs
//! that were refused or miscompiled. Each is a clear error (exit status 1),
//! a quiet end or the right answer on every backend; never a crash, an
//! abort or a kernel writing past its buffer.

use crate::common;

use common::{backends, root, write};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs heddle with extra environment variables; (exit code, stdout,
/// stderr). A run that takes more than two minutes is killed and fails the
/// test: these inputs used to hang.
fn heddle_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_heddle"));
    cmd.args(args).current_dir(root());
    cmd.stdout(std::fs::File::create(&out_path).unwrap()).stderr(std::fs::File::create(&err_path).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("run heddle");
    let status = wait_or_kill(child, 120, || format!("heddle {args:?} with {env:?} ran for more than two minutes"));
    let read = |p: &std::path::Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (status.code().unwrap_or(-1), read(&out_path), read(&err_path))
}

/// Waits for `child`, killing it and failing the test with `late()`'s
/// message once `secs` seconds have passed.
fn wait_or_kill(mut child: std::process::Child, secs: u64, late: impl Fn() -> String) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{}", late());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn no_crash(stderr: &str) {
    assert!(!stderr.contains("panicked") && !stderr.contains("memory allocation"), "crashed: {stderr}");
}

const GENERATE: &str = "nFun(n => generate(n, fun(i => 1.0f)))\n";
const NESTED: &str = "nFun(n => generate(n, fun(i => generate(n, fun(j => 2.0f)))))\n";

#[test]
fn a_result_whose_byte_size_wraps_is_refused_on_every_backend() {
    // 2^62 records of 4 bytes are 2^64 bytes, 0 after wrapping: the output
    // buffer was tiny and the kernel wrote past it (a segfault).
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "gen.hdl", GENERATE);
    let nested = write(dir.path(), "nested.hdl", NESTED);
    for backend in backends() {
        for (f, n) in [(&file, "4611686018427387904"), (&nested, "2147483648")] {
            let (code, _, err) =
                heddle_env(&["run", f.to_str().unwrap(), "--backend", backend, "--param", &format!("n={n}")], &[]);
            no_crash(&err);
            assert_eq!(code, 1, "{backend} n={n}: {err}");
            assert!(err.contains("overflows") || err.contains("more than the limit"), "{backend} n={n}: {err}");
        }
        // On a machine with memory enough for the outer array of 2^31 inner
        // arrays (a 128 GiB GPU machine), the interpreter built inner arrays of
        // 2^31 values one after the other, each within the limit, for hours.
        let (code, _, err) = heddle_env(
            &["run", nested.to_str().unwrap(), "--backend", backend, "--param", "n=2147483648"],
            &[("HEDDLE_MAX_MEMORY", "1T")],
        );
        no_crash(&err);
        assert_eq!(code, 1, "{backend} with 1 TiB: {err}");
        assert!(err.contains("overflows"), "{backend} with 1 TiB: {err}");
        let (code, _, err) = heddle_env(
            &["run", nested.to_str().unwrap(), "--backend", backend, "--param", "n=100000"],
            &[("HEDDLE_MAX_MEMORY", "16G")],
        );
        assert_eq!(code, 1, "{backend} n=100000 with 16 GiB: {err}");
        assert!(err.contains("more than the limit of 16.0 GiB"), "{backend} n=100000 with 16 GiB: {err}");
    }
}

#[test]
fn a_result_beyond_the_memory_limit_is_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "gen.hdl", GENERATE);
    let file = file.to_str().unwrap();
    for backend in backends() {
        // 2^40 floats are 4 TiB: an abort on allocation failure before.
        let (code, _, err) = heddle_env(&["run", file, "--backend", backend, "--param", "n=1099511627776"], &[]);
        no_crash(&err);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains(" TiB (") && err.contains("more than the limit"), "{backend}: {err}");
        // The limit can be set, and a result under it runs.
        let (code, _, err) =
            heddle_env(&["run", file, "--backend", backend, "--param", "n=1000"], &[("HEDDLE_MAX_MEMORY", "2K")]);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("more than the limit of 2.0 KiB (set by HEDDLE_MAX_MEMORY)"), "{backend}: {err}");
        let (code, out, err) =
            heddle_env(&["run", file, "--backend", backend, "--param", "n=100"], &[("HEDDLE_MAX_MEMORY", "2K")]);
        assert_eq!((code, out.matches("1.0").count()), (0, 100), "{backend}: {err}");
    }
    let (code, _, err) = heddle_env(&["run", file, "--param", "n=4"], &[("HEDDLE_MAX_MEMORY", "lots")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("HEDDLE_MAX_MEMORY=\"lots\" is not a size"), "{err}");
}

#[test]
fn a_double_negation_stays_a_negation_in_opencl_c() {
    // `-(-e)` was printed `--e`, C's pre-decrement: 9 instead of 10.
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "neg.hdl", "nFun(n => fun(xs: [float]_n => -(-(xs :>> reduce(+, 0)))))\n");
    let lit = write(dir.path(), "lit.hdl", "nFun(n => fun(xs: [int]_n => xs :>> map(fun(x => -(-3) * x - -x))))\n");
    let xs = write(dir.path(), "xs.json", "[1, 2, 3, 4]");
    for backend in backends() {
        let (code, out, err) = heddle_env(
            &["run", file.to_str().unwrap(), "--backend", backend, "--input", &format!("xs={}", xs.display())],
            &[],
        );
        assert_eq!((code, out.trim()), (0, "10.0"), "{backend}: {err}");
        let (code, out, err) = heddle_env(
            &["run", lit.to_str().unwrap(), "--backend", backend, "--input", &format!("xs={}", xs.display())],
            &[],
        );
        assert_eq!((code, out.trim()), (0, "[4,8,12,16]"), "{backend}: {err}");
    }
}

#[test]
fn output_to_a_full_disk_is_an_error() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("SKIPPED: no /dev/full on this system");
        return;
    }
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_heddle"))
        .args([
            "run",
            "examples/dense_mv.hdl",
            "--input",
            "matrix=examples/data/dense_mv/matrix.json",
            "--input",
            "xs=examples/data/dense_mv/xs.json",
        ])
        .current_dir(root())
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    no_crash(&err);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write the output") && err.contains("No space left"), "{err}");
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    // `heddle run … --json | head -c 1`: more output than a pipe holds, and
    // the reader closes its end after one byte.
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "gen.hdl", GENERATE);
    let mut child = Command::new(env!("CARGO_BIN_EXE_heddle"))
        .args(["run", file.to_str().unwrap(), "--param", "n=200000", "--json"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(&first, b"{");
    assert!(err.is_empty(), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
}

#[test]
fn split_then_join_gives_back_the_length_it_split() {
    // "sum(i = 0 .. n/2 - 1, 2) is not n": the Σ of a constant is 2 * (n/2),
    // which is n because `split(2)` made `n % 2 == 0` an obligation.
    let file = "tests/typing/split_join_zip.hdl";
    let dir = tempfile::tempdir().unwrap();
    let even = write(dir.path(), "even.json", "[1, 2, 3, 4]");
    let odd = write(dir.path(), "odd.json", "[1, 2, 3]");
    for backend in backends() {
        let (code, out, err) =
            heddle_env(&["run", file, "--backend", backend, "--input", &format!("xs={}", even.display())], &[]);
        assert_eq!((code, out.trim()), (0, "[[1.0,1.0],[2.0,2.0],[3.0,3.0],[4.0,4.0]]"), "{backend}: {err}");
        let (code, _, err) =
            heddle_env(&["run", file, "--backend", backend, "--input", &format!("xs={}", odd.display())], &[]);
        assert!(code == 1 && err.contains("n % 2 == 0"), "{backend}: {err}");
    }
}

/// `heddle check` of `text`, which must end at once with a located refusal
/// saying `says`.
fn refused(name: &str, text: &str, says: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), name, text);
    let (code, _, err) = heddle_env(&["check", file.to_str().unwrap()], &[]);
    no_crash(&err);
    assert_eq!(code, 1, "{name}: {err}");
    assert!(err.contains(says), "{name}: {err}");
}

#[test]
fn deep_and_huge_programs_are_refused_at_once() {
    // 10^4 pipeline stages: 280 KB of text, gigabytes in the type checker.
    let stages = " :>> map(fun(x => x + 1.0f))".repeat(10_000);
    refused("stages.hdl", &format!("nFun(n => fun(xs: [float]_n => xs{stages}))\n"), "levels deep");
    // A long chain of operators, and of applications.
    refused("sum.hdl", &format!("nFun(n => fun(xs: [float]_n => xs@0{}))\n", " + xs@0".repeat(50_000)), "levels deep");
    // More text than any kernel (the finding was 100 MB on one line).
    refused("long.hdl", &format!("fun(x: float => x{})\n", " + x".repeat(1_500_000)), "heddle reads at most");
    // An endless file (a FIFO, /dev/zero): read up to the limit, not until memory runs out
    // (it was read whole: 5 GB in 30 s).
    if std::path::Path::new("/dev/zero").exists() {
        let dir = tempfile::tempdir().unwrap();
        let zero = dir.path().join("zero.hdl");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for args in [vec!["check", zero.to_str().unwrap()], vec!["type", "#A", "--defs", zero.to_str().unwrap()]] {
            let (code, _, err) = heddle_env(&args, &[]);
            no_crash(&err);
            assert_eq!(code, 1, "{args:?}: {err}");
            assert!(err.contains("heddle reads at most 4194304 bytes"), "{args:?}: {err}");
        }
    }
    // 40 definitions, each using the previous one twice: 2^40 once inlined.
    let mut defs = String::from("def f0 = fun(x => x + 1.0f);\n");
    for k in 1..40 {
        defs.push_str(&format!("def f{k} = fun(x => f{}(f{}(x)));\n", k - 1, k - 1));
    }
    refused("defs.hdl", &format!("{defs}fun(x: float => f39(x))\n"), "too large to check");
    // Many definitions are read in time linear in their number.
    let many: String = (0..100_000).map(|k| format!("def d{k} = 1.0f;\n")).collect();
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "many.hdl", &format!("{many}fun(x: float => x + d99999)\n"));
    let (code, _, err) = heddle_env(&["check", file.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn nested_parentheses_in_sizes_parse_at_once() {
    let open = "(".repeat(40);
    let close = ")".repeat(40);
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "size.hdl", &format!("nFun(n => fun(xs: [float]_{open}n{close} => xs))\n"));
    let (code, _, err) = heddle_env(&["check", file.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = heddle_env(&["simplify", "--nat", &format!("{open}n + 1{close} * 2")], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 * n + 2"), "{out}");
    // The normal form of a product of 20 binomials is bounded (34 s or 3.8 GB before).
    let product: Vec<String> = (0..20).map(|k| format!("(a{k} + b{k})")).collect();
    let (code, _, err) = heddle_env(&["simplify", "--nat", &product.join(" * ")], &[]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn encodings_and_dimensions_beyond_reason_are_refused() {
    // A size past 2^63 - 1 was printed wrapped.
    let csr = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";
    let (code, out, err) = heddle_env(&["type", csr, "--dims", "9223372036854775808x4"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("more than the largest size"), "{err}");
    let dense = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>";
    let (code, out, err) = heddle_env(&["type", dense, "--dims", "9223372036854775807x4"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("stored entries: 9223372036854775807 * 4\n"), "{out}");
    // DIA's offsets level counts rows + columns - 1 offsets: past 2^63 - 1 it
    // was printed wrapped (`level sizes: [0 - 3, …]`).
    let (code, out, err) = heddle_env(&["type", "DIA", "--dims", "9223372036854775807x9223372036854775807"], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("level 0 would have size 18446744073709551613, more than the largest size"), "{err}");
    let (code, out, err) = heddle_env(&["type", "DIA", "--dims", "4611686018427387904x4611686018427387904"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("level sizes: [9223372036854775807, 4611686018427387904]\n"), "{out}");
    // 400 levels: memory grew with the cube of the level count.
    let dims: Vec<String> = (0..400).map(|k| format!("d{k}")).collect();
    let levels: Vec<String> = dims.iter().map(|d| format!("{d} : compressed")).collect();
    let deep = format!("#sparse_tensor.encoding<{{ map = ({}) -> ({}) }}>", dims.join(", "), levels.join(", "));
    let (code, _, err) = heddle_env(&["type", &deep], &[]);
    no_crash(&err);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("levels"), "{err}");
}

#[test]
fn a_hypersparse_matrix_with_a_dense_result_is_refused_before_allocating() {
    // 10^12 rows stored as DCSR hold one entry; the dense result would be 4 TB.
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n1000000000000 4 1\n1 1 1.0\n");
    let args = |backend: &'static str| {
        vec![
            "run".to_string(),
            "examples/sparse/spmv_dcsr.hdl".into(),
            "--backend".into(),
            backend.into(),
            "--matrix".into(),
            format!("A={}", m.display()),
            "--input".into(),
            format!("xs={}", write(dir.path(), "x.json", "[1, 2, 3, 4]").display()),
        ]
    };
    for backend in backends() {
        let a = args(backend);
        let (code, _, err) = heddle_env(&a.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
        no_crash(&err);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("more than the limit"), "{backend}: {err}");
    }
}

#[test]
fn the_deepest_programs_the_parser_accepts_run_on_every_backend() {
    // The parser bounds depth; every later pass recurses within that bound
    // on the CLI's stack: no stack overflow anywhere up to it.
    let dir = tempfile::tempdir().unwrap();
    let xs = write(dir.path(), "xs.json", "[1, 2, 3]");
    let stages = " :>> map(fun(x => x + 1.0f))".repeat(480);
    let pipeline = write(dir.path(), "pipeline.hdl", &format!("nFun(n => fun(xs: [float]_n => xs{stages}))\n"));
    let nested = format!(
        "nFun(n => fun(xs: [float]_n => xs :>> map(fun(x => {}x{}))))\n",
        "(1.0f + ".repeat(240),
        ")".repeat(240)
    );
    let nested = write(dir.path(), "nested.hdl", &nested);
    for backend in backends() {
        for (file, want) in [(&pipeline, "[481.0,482.0,483.0]"), (&nested, "[241.0,242.0,243.0]")] {
            let (code, out, err) = heddle_env(
                &["run", file.to_str().unwrap(), "--backend", backend, "--input", &format!("xs={}", xs.display())],
                &[],
            );
            no_crash(&err);
            assert_eq!((code, out.trim()), (0, want), "{backend} {}: {err}", file.display());
        }
    }
}

/// A version 1.0 `.npy` file with the given header fields and data.
fn npy_bytes(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}\n");
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// A `.npz` archive of the given members (`NAME` becomes `NAME.npy`), stored.
fn npz_file(path: &std::path::Path, members: &[(&str, Vec<u8>)]) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in members {
        z.start_file(format!("{name}.npy"), opts).unwrap();
        std::io::Write::write_all(&mut z, bytes).unwrap();
    }
    z.finish().unwrap();
}

#[test]
fn npy_shapes_whose_products_wrap_and_npz_sizes_at_the_limit_are_refused() {
    // Found by hand while adding the `npz` fuzz target: npyz multiplies a
    // shape's dimensions unchecked (its strides), so `(0, 2**32, 2**32)`,
    // which holds nothing, overflowed (a panic where overflow is checked);
    // and a csr shape of 2^64 - 1 rows overflowed the message about
    // `indptr`'s length.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let i64s = |xs: &[i64]| {
        npy_bytes("<i8", &format!("({},)", xs.len()), &xs.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
    };
    let format = |f: &str| npy_bytes(&format!("|S{}", f.len()), "()", f.as_bytes());
    for shape in ["(0, 4294967296, 4294967296)", "(4294967296, 4294967296, 0)", "(1099511627776, 1099511627776)"] {
        let x = d.join("x.npy");
        std::fs::write(&x, npy_bytes("<f4", shape, &[0; 16])).unwrap();
        let (code, _, err) =
            heddle_env(&["run", "examples/dense_mv.hdl", "--input", &format!("xs={}", x.display())], &[]);
        no_crash(&err);
        assert_eq!(code, 1, "{shape}: {err}");
        assert!(err.contains("more elements than 64 bits count"), "{shape}: {err}");
    }
    let bsr = d.join("bsr.npz");
    npz_file(
        &bsr,
        &[
            ("format", format("bsr")),
            ("shape", i64s(&[1 << 32, 1 << 32])),
            ("data", npy_bytes("<f8", "(0, 4294967296, 4294967296)", &[])),
            ("indices", i64s(&[])),
            ("indptr", i64s(&[0, 0])),
        ],
    );
    let csr = d.join("csr.npz");
    npz_file(
        &csr,
        &[
            ("format", format("csr")),
            ("shape", npy_bytes("<u8", "(2,)", &[u64::MAX.to_le_bytes(), 3u64.to_le_bytes()].concat())),
            ("data", npy_bytes("<f8", "(0,)", &[])),
            ("indices", i64s(&[])),
            ("indptr", i64s(&[0, 0])),
        ],
    );
    for (file, says) in [(&bsr, "more elements than 64 bits count"), (&csr, "18446744073709551616")] {
        let out = d.join("out.json");
        let (code, _, err) =
            heddle_env(&["convert", file.to_str().unwrap(), "--to", "CSR", "-o", out.to_str().unwrap()], &[]);
        no_crash(&err);
        assert_eq!(code, 1, "{}: {err}", file.display());
        assert!(err.contains(says), "{}: {err}", file.display());
    }
}

/// Runs heddle with its address space bounded (8 GiB, `ulimit -v`) and
/// killed after `secs` seconds: a reader that reads an endless file whole
/// fails the test (an allocation failure, or the time) instead of filling
/// the machine's memory or hanging. (exit code, stderr.)
fn heddle_bounded(args: &[&str], secs: u64) -> (i32, String) {
    heddle_bounded_env(args, secs, &[])
}

/// [`heddle_bounded`] with extra environment variables.
fn heddle_bounded_env(args: &[&str], secs: u64, env: &[(&str, &str)]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let err_path = dir.path().join("stderr");
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg("ulimit -v 8388608; exec \"$0\" \"$@\"").arg(env!("CARGO_BIN_EXE_heddle")).args(args);
    cmd.current_dir(root()).stdout(Stdio::null()).stderr(std::fs::File::create(&err_path).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("run heddle under bash");
    let status = wait_or_kill(child, secs, || format!("heddle {args:?} ran for more than {secs} seconds"));
    (status.code().unwrap_or(-1), String::from_utf8_lossy(&std::fs::read(&err_path).unwrap()).into_owned())
}

/// The ways a data file reaches a reader: `run --input` (`.npy`, `.json`),
/// `run --matrix` and `--csr` (`.mtx`, `.tns`, `.npz`, `.json`) and
/// `convert`, each with `file` as the data.
fn data_commands(file: &std::path::Path, out: &std::path::Path) -> Vec<Vec<String>> {
    let f = file.to_str().unwrap().to_string();
    let ext = file.extension().unwrap().to_str().unwrap();
    let mut cmds = Vec::new();
    if matches!(ext, "npy" | "json") {
        cmds.push(vec!["run".into(), "examples/dense_mv.hdl".into(), "--input".into(), format!("xs={f}")]);
    }
    if matches!(ext, "mtx" | "tns" | "npz" | "json") {
        cmds.push(vec!["run".into(), "examples/sparse/reduce_matrix.hdl".into(), "--matrix".into(), format!("A={f}")]);
        cmds.push(vec![
            "run".into(),
            "examples/csr_spmv_parallel.hdl".into(),
            "--csr".into(),
            format!("offset,col_indices,values={f}"),
        ]);
        cmds.push(vec![
            "convert".into(),
            f.clone(),
            "--to".into(),
            "CSR".into(),
            "-o".into(),
            out.display().to_string(),
        ]);
    }
    cmds
}

#[test]
fn data_files_that_never_end_fail_at_their_first_bytes() {
    // Each reader read its file whole before looking at it: a link to
    // /dev/zero filled memory. Now each looks at the first bytes (the
    // magic string, the banner, the first JSON byte; a NUL byte in a
    // text file) and stops there, with the file and line.
    if !std::path::Path::new("/dev/zero").exists() {
        eprintln!("SKIPPED: no /dev/zero on this machine");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for ext in ["json", "npy", "mtx", "tns", "npz"] {
        let link = dir.path().join(format!("zero.{ext}"));
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        for cmd in data_commands(&link, &dir.path().join("out.json")) {
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let (code, err) = heddle_bounded(&args, 60);
            no_crash(&err);
            assert_eq!(code, 1, "{args:?}: {err}");
            assert!(err.contains(&format!("zero.{ext}")), "{args:?} names the file: {err}");
            let located = match ext {
                "npy" => "no \\x93NUMPY magic string",
                "npz" => "not a .npz (zip) archive",
                "json" => "line 1 column 1",
                _ => ":1: byte 0 is NUL",
            };
            assert!(err.contains(located), "{args:?}: {err}");
        }
    }
}

#[test]
fn an_endless_fifo_of_text_fails_at_its_first_lines() {
    // A FIFO fed `y` lines for ever (`yes`): not the start of any format
    // heddle reads, so each reader stops after its first bytes. The writer
    // is killed afterwards; the reader's exit closes the FIFO for it.
    let have = |c: &str| {
        Command::new("sh").arg("-c").arg(format!("command -v {c}")).output().is_ok_and(|o| o.status.success())
    };
    if !have("mkfifo") || !have("yes") {
        eprintln!("SKIPPED: no mkfifo or yes on this machine");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("json", "not valid JSON: expected value at line 1 column 1"),
        ("npy", "no \\x93NUMPY magic string"),
        ("mtx", ":1: bad header"),
        ("tns", ":1: `y` is not a number"),
    ];
    for (ext, says) in cases {
        let fifo = dir.path().join(format!("endless.{ext}"));
        for cmd in data_commands(&fifo, &dir.path().join("out.json")) {
            let _ = std::fs::remove_file(&fifo);
            assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
            let mut writer =
                Command::new("sh").arg("-c").arg("exec yes > \"$0\"").arg(&fifo).stderr(Stdio::null()).spawn().unwrap();
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let (code, err) = heddle_bounded(&args, 60);
            let _ = writer.kill();
            let _ = writer.wait();
            no_crash(&err);
            assert_eq!(code, 1, "{args:?}: {err}");
            assert!(err.contains(&format!("endless.{ext}")) && err.contains(says), "{args:?}: {err}");
        }
    }
}

#[test]
fn a_header_that_promises_more_than_the_file_holds_allocates_only_the_file() {
    // Under an 8 GiB address space, a header promising 2^34 values
    // (64 GiB, within a memory limit of 1 TiB) fails as truncated, reading
    // what is there, never by allocating the claim; one promising 2^40
    // (4 TiB) is refused before reading, at the default limit.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let npy = d.join("big.npy");
    let arg = format!("xs={}", npy.display());
    let args = ["run", "examples/dense_mv.hdl", "--input", &arg];
    std::fs::write(&npy, npy_bytes("<f4", "(17179869184,)", &[0; 16])).unwrap();
    let (code, err) = heddle_bounded_env(&args, 60, &[("HEDDLE_MAX_MEMORY", "1T")]);
    no_crash(&err);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("big.npy") && err.contains("truncated") && err.contains("holds 16 bytes"), "{err}");
    std::fs::write(&npy, npy_bytes("<f4", "(1099511627776,)", &[0; 16])).unwrap();
    let (code, err) = heddle_bounded(&args, 60);
    no_crash(&err);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("big.npy") && err.contains("the header promises 4398046511104 bytes"), "{err}");
    let mtx = write(d, "big.mtx", "%%MatrixMarket matrix coordinate real general\n4294967296 4 4294967296\n1 1 1.5\n");
    for cmd in data_commands(&mtx, &d.join("out.json")) {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let (code, err) = heddle_bounded(&args, 60);
        no_crash(&err);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("big.mtx:") && err.contains("the file ends after 1 of the 4294967296 entries"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn an_input_given_for_a_tensor_parameter_points_to_matrix() {
    // `--encoding matrix=CSR` makes `matrix` a tensor parameter: its
    // storage comes from `--matrix`, and `--input` said only that the
    // kernel has no input of this name.
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "m.json", "[[1.0, 0.0], [0.0, 2.0]]\n");
    let x = write(dir.path(), "x.json", "[1.0, 1.0]\n");
    let (code, err) = heddle_bounded(
        &[
            "run",
            "examples/dense_mv.hdl",
            "--encoding",
            "matrix=CSR",
            "--input",
            &format!("matrix={}", m.display()),
            "--input",
            &format!("xs={}", x.display()),
        ],
        60,
    );
    no_crash(&err);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is a tensor parameter") && err.contains("--matrix matrix=FILE"), "{err}");
}

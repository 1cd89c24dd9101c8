//! Hostile and careless input at the command line (issue 16): sizes that
//! wrap or that no machine holds, output that cannot be written, programs
//! that were refused or miscompiled. Each is a clear error (exit status 1),
//! a quiet end or the right answer on every backend; never a crash, an
//! abort or a kernel writing past its buffer.

mod common;

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
    let mut child = cmd.spawn().expect("run heddle");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("heddle {args:?} with {env:?} ran for more than two minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |p: &std::path::Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (status.code().unwrap_or(-1), read(&out_path), read(&err_path))
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
            let (code, _, err) = heddle_env(&["run", f.to_str().unwrap(), "--backend", backend, "--param", &format!("n={n}")], &[]);
            no_crash(&err);
            assert_eq!(code, 1, "{backend} n={n}: {err}");
            assert!(err.contains("overflows") || err.contains("more than the limit"), "{backend} n={n}: {err}");
        }
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
        let (code, _, err) = heddle_env(&["run", file, "--backend", backend, "--param", "n=1000"], &[("HEDDLE_MAX_MEMORY", "2K")]);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("more than the limit of 2.0 KiB (set by HEDDLE_MAX_MEMORY)"), "{backend}: {err}");
        let (code, out, err) = heddle_env(&["run", file, "--backend", backend, "--param", "n=100"], &[("HEDDLE_MAX_MEMORY", "2K")]);
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
        let (code, out, err) = heddle_env(&["run", file.to_str().unwrap(), "--backend", backend, "--input", &format!("xs={}", xs.display())], &[]);
        assert_eq!((code, out.trim()), (0, "10.0"), "{backend}: {err}");
        let (code, out, err) = heddle_env(&["run", lit.to_str().unwrap(), "--backend", backend, "--input", &format!("xs={}", xs.display())], &[]);
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
        .args(["run", "examples/dense_mv.hdl", "--input", "matrix=examples/data/dense_mv/matrix.json", "--input", "xs=examples/data/dense_mv/xs.json"])
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
        let (code, out, err) = heddle_env(&["run", file, "--backend", backend, "--input", &format!("xs={}", even.display())], &[]);
        assert_eq!((code, out.trim()), (0, "[[1.0,1.0],[2.0,2.0],[3.0,3.0],[4.0,4.0]]"), "{backend}: {err}");
        let (code, _, err) = heddle_env(&["run", file, "--backend", backend, "--input", &format!("xs={}", odd.display())], &[]);
        assert!(code == 1 && err.contains("n % 2 == 0"), "{backend}: {err}");
    }
}

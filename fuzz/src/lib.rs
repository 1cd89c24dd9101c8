//! What the fuzz targets share: the property each pipeline stage must keep
//! (a result or a located diagnostic, never a panic, never an "internal
//! error") and scratch files for the readers that take a path.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The input as program text: libFuzzer's bytes when they are UTF-8 (the
/// CLI refuses other bytes before the lexer sees them).
pub fn text(data: &[u8]) -> Option<&str> {
    selftest(data);
    std::str::from_utf8(data).ok()
}

/// The input that crashes every target reading text, but only while
/// `HEDDLE_FUZZ_SELFTEST` is set: `scripts/fuzz.sh --selftest` feeds it to
/// prove that a crash fails the run. Without the variable it is an
/// ordinary input.
pub const SELFTEST_MARKER: &[u8] = b"heddle-fuzz-selftest";

fn selftest(data: &[u8]) {
    static ON: OnceLock<bool> = OnceLock::new();
    if data == SELFTEST_MARKER && *ON.get_or_init(|| std::env::var_os("HEDDLE_FUZZ_SELFTEST").is_some()) {
        panic!("fuzz self-test crash (HEDDLE_FUZZ_SELFTEST is set)");
    }
}

/// Fails the run (a crash to libFuzzer) when a diagnostic reports a bug
/// instead of bad input.
pub fn no_internal_error(stage: &str, message: &str, input: &str) {
    assert!(!message.contains("internal error"), "{stage} reported an internal error: {message}\ninput: {input:?}");
}

/// A scratch file holding `bytes`, named with `ext`, private to this
/// process (several fuzzing jobs may share the directory).
pub fn scratch_file(bytes: &[u8], ext: &str) -> PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let path = dir.join(format!("heddle-fuzz-{}.{ext}", std::process::id()));
    std::fs::write(&path, bytes).expect("write the scratch file");
    path
}

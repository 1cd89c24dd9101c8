//! What the fuzz targets share: the property each pipeline stage must keep
//! (a result or a located diagnostic, never a panic, never an "internal
//! error") and scratch files for the readers that take a path.

use std::path::PathBuf;

/// The input as program text: libFuzzer's bytes when they are UTF-8 (the
/// CLI refuses other bytes before the lexer sees them).
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
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

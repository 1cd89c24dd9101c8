//! Oclgrind, the OpenCL device simulator, as a checking device.
//!
//! Oclgrind runs kernels on a simulated device and reports data races
//! (`OCLGRIND_DATA_RACES=1`, `--data-races`), uses of uninitialised values
//! (`OCLGRIND_UNINITIALIZED=1`) and invalid API calls
//! (`OCLGRIND_CHECK_API=1`) — but only as text in a log; a kernel with a
//! race still "succeeds". heddle therefore reads that log after every launch
//! on an Oclgrind device and turns anything written to it into an error of
//! the launch, with the report: on Oclgrind, a race is a failure like a
//! failed bounds check.
//!
//! Oclgrind writes to the file named by `OCLGRIND_LOG` (to stderr without
//! it, where heddle cannot see it; then launches are not checked). Each
//! OpenCL context of a process truncates that file when it is created, so a
//! process keeps one Oclgrind context (see `opencl.rs`), and processes need
//! their own files: the `heddle` binary replaces `%p` in `OCLGRIND_LOG` by
//! its process id before anything else runs ([`expand_log_pattern`]), as
//! valgrind does for `--log-file`. `scripts/oclgrind.sh` runs the test suite
//! this way.

use heddle_ir::{Diagnostic, Span};
use std::io::{Read, Seek, SeekFrom};
use std::sync::{Mutex, MutexGuard};

/// The name Oclgrind's platform reports.
pub const PLATFORM: &str = "Oclgrind";

/// The environment variable that names Oclgrind's log file.
pub const LOG_VAR: &str = "OCLGRIND_LOG";

/// How far this process has read the log. Launches on Oclgrind hold the lock
/// from enqueueing to reading the log, so a report is charged to the launch
/// that caused it.
static READ: Mutex<u64> = Mutex::new(0);

/// Is this platform Oclgrind?
pub fn is_oclgrind(platform: &str) -> bool {
    platform.trim() == PLATFORM
}

/// Replaces `%p` in `OCLGRIND_LOG` by this process's id.
///
/// # Safety
/// Changes the environment: call it before the process starts a thread or
/// anything that may read the environment concurrently (the first thing in `main`).
pub unsafe fn expand_log_pattern() {
    if let Some(path) = std::env::var_os(LOG_VAR).and_then(|p| p.into_string().ok())
        && path.contains("%p")
    {
        let mine = path.replace("%p", &std::process::id().to_string());
        // SAFETY: the caller guarantees no other thread exists yet.
        unsafe { std::env::set_var(LOG_VAR, mine) };
    }
}

/// Serialises launches on Oclgrind (see [`READ`]).
pub(crate) fn lock() -> MutexGuard<'static, u64> {
    READ.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whatever Oclgrind logged since the last call, as an error of `what`.
pub(crate) fn reports(read: &mut u64, what: &str) -> Result<(), Diagnostic> {
    let Some(path) = std::env::var_os(LOG_VAR) else { return Ok(()) };
    let Ok(mut file) = std::fs::File::open(&path) else { return Ok(()) };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len < *read {
        // The file was started again (a new context): read it from the start.
        *read = 0;
    }
    let mut text = String::new();
    if file.seek(SeekFrom::Start(*read)).is_err() || file.read_to_string(&mut text).is_err() {
        return Ok(());
    }
    *read += text.len() as u64;
    let text = text.replace('\0', "");
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    const LINES: usize = 60;
    let mut shown: Vec<&str> = text.lines().take(LINES).collect();
    let more = text.lines().count().saturating_sub(LINES);
    if more > 0 {
        shown.push("…");
    }
    let mut d =
        Diagnostic::new(Span::DUMMY, format!("Oclgrind reports a problem while running {what}:\n{}", shown.join("\n")))
            .with_label("while checking the kernel with Oclgrind");
    if more > 0 {
        d = d.with_note(format!("{more} more lines in {}", path.to_string_lossy()));
    }
    Err(d)
}

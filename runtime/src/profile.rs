//! Where the time of a command goes, from the environment: with
//! `HEDDLE_PROFILE=1`, every [`phase`] prints its wall-clock time to stderr
//! when it ends (`heddle: profile: read --matrix A 0.412 s`), nested phases
//! indented. Without the variable a phase costs one relaxed atomic load.

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

/// 0: not read yet, 1: off, 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Whether `HEDDLE_PROFILE` is set (to anything but `0` or empty).
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var("HEDDLE_PROFILE").is_ok_and(|v| !v.is_empty() && v != "0");
            STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        s => s == 2,
    }
}

/// A running phase; prints its time when dropped (if profiling is on).
pub struct Phase {
    started: Option<(Instant, String)>,
}

/// Starts timing the phase `name` (`name` is only built when profiling is on).
pub fn phase(name: impl FnOnce() -> String) -> Phase {
    if !enabled() {
        return Phase { started: None };
    }
    DEPTH.with(|d| d.set(d.get() + 1));
    Phase { started: Some((Instant::now(), name())) }
}

impl Phase {
    /// Renames the phase, to say what it found (`name` is only built when
    /// profiling is on).
    pub fn rename(&mut self, name: impl FnOnce() -> String) {
        if let Some((_, n)) = &mut self.started {
            *n = name();
        }
    }
}

/// What a phase that checks the inputs against a program's ranges found.
pub fn ranges_outcome(valid: bool) -> String {
    let what = if valid { "valid: the code without the checks they imply" } else { "not all valid: the checked code" };
    format!("check the inputs' ranges ({what})")
}

impl Drop for Phase {
    fn drop(&mut self) {
        if let Some((start, name)) = self.started.take() {
            let depth = DEPTH.with(|d| {
                let v = d.get().saturating_sub(1);
                d.set(v);
                v
            });
            eprintln!("heddle: profile: {}{name} {:.6} s", "  ".repeat(depth), start.elapsed().as_secs_f64());
        }
    }
}

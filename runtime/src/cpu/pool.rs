//! The thread runtime for compiled kernels: persistent workers that a launch
//! wakes, with the calling thread taking a share of the work.
//!
//! Why not rayon: dispatching to a rayon pool from a thread outside it costs
//! ~20 µs per launch (a job is boxed, injected, and the caller blocks on a
//! latch), more than a whole SpMV of a 20 000-nonzero matrix. Here a launch
//! allocates nothing: the job lives on the caller's stack, each worker is
//! handed a pointer to it through its own mailbox, and after a job workers
//! spin briefly before parking, so back-to-back launches (a solver's
//! iterations, `--reps`) find them awake.
//!
//! Chunks are dealt out in contiguous *home* runs, one per participant
//! (chunk order is loop order, so a thread touches the same rows launch
//! after launch and finds them in its own cache); a participant that
//! finishes its run steals chunks from the back of the others' runs, so a
//! thread slowed down by another process on a shared machine, or a work
//! estimate that was off, does not hold everyone up.
//!
//! When the caller has taken the last chunk, workers that have not picked
//! the job up yet are cancelled (the job is taken back out of their
//! mailboxes), so a launch never waits for a thread the OS has not run: on
//! a busy machine a launch degrades to the caller's own speed, not to a
//! scheduler tick.
//!
//! A failing chunk stops the launch at the first failure *in chunk order*
//! (chunks after it are skipped, chunks before it still run), which is the
//! failure a sequential run reports.
//!
//! Each worker says whether it is parked ([`helpers`]): a small launch is
//! worth splitting only when its helpers are awake (see `split.rs`). The
//! hand-over costs, measured by `handover_costs` below (`cargo test -p
//! heddle-runtime --release --lib handover_costs -- --ignored --nocapture`;
//! the 2-vCPU VM shared with builds, load 2–6; docs/performance.md,
//! "wake"): from a launch's start to an awake (spinning) helper's first
//! chunk p10 0.85 µs, median 2.7 µs; to a parked one's p10 5.0 µs, median
//! 6.4 µs, and waking it costs the launching thread itself about 4 µs (the
//! `unpark` system call: a launch of 2–16 µs of work split for a parked
//! helper takes 3.9–4.4 µs longer than on one thread).

use heddle_codegen_cpu::Fault;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The most threads a launch may use: `--threads` and `HEDDLE_THREADS` share it.
pub const MAX_THREADS: usize = 1024;

/// How long a worker spins for the next job before it parks (and how long
/// a launcher spins for its workers before it does). Long enough for the gap
/// between two launches of a loop that times or iterates a kernel (`--reps`:
/// a few µs; a solver's vector updates between two SpMVs: tens of µs);
/// short enough not to matter to other processes, or to a caller that goes
/// on with long single-threaded work on the same core (it loses at most
/// this much of it). A worker woken without a job (see [`helpers`]) spins
/// this long too, then parks again.
const SPIN: Duration = Duration::from_micros(200);

/// The number of threads to use when none is asked for: `HEDDLE_THREADS` if
/// it is set to a valid count (see [`threads_from_env`]), else the machine's
/// available parallelism (at most [`MAX_THREADS`]).
pub fn default_threads() -> usize {
    match threads_from_env() {
        Ok(Some(n)) => n,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS),
    }
}

/// `HEDDLE_THREADS`: `None` when unset, the count when it is valid (see
/// [`parse_threads`]), otherwise an error saying why.
pub fn threads_from_env() -> Result<Option<usize>, String> {
    let Some(raw) = std::env::var_os("HEDDLE_THREADS") else { return Ok(None) };
    let text = raw.to_string_lossy();
    parse_threads(&text).map(Some).map_err(|e| format!("HEDDLE_THREADS={text}: {e}"))
}

/// A thread count as `--threads` and `HEDDLE_THREADS` accept it: a whole
/// number from 1 to [`MAX_THREADS`].
pub fn parse_threads(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        _ => Err(format!("expected a number of threads from 1 to {MAX_THREADS}")),
    }
}

/// The chunk function of a launch.
pub type ChunkFn<'a> = dyn Fn((i64, i64)) -> Result<(), Fault> + Sync + 'a;

/// A participant's home run of chunks, `front .. back`, packed into one
/// word so that the owner (popping the front) and thieves (popping the
/// back) agree through one compare-and-swap.
#[derive(Default)]
struct Run(AtomicU64);

impl Run {
    fn set(&self, front: usize, back: usize) {
        self.0.store(((back as u64) << 32) | front as u64, Ordering::Relaxed);
    }

    /// Takes the chunk at the front (`own`) or the back (a thief).
    fn pop(&self, own: bool) -> Option<usize> {
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            let (front, back) = (cur & 0xffff_ffff, cur >> 32);
            if front >= back {
                return None;
            }
            let (taken, next) = if own { (front, cur + 1) } else { (back - 1, ((back - 1) << 32) | front) };
            match self.0.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(taken as usize),
                Err(seen) => cur = seen,
            }
        }
    }
}

/// One launch, on the caller's stack while workers use it.
struct Job<'a> {
    f: &'a ChunkFn<'a>,
    chunks: &'a [(i64, i64)],
    runs: &'a [Run],
    /// The first failing chunk (in chunk order) and its fault.
    failure: Mutex<Option<(usize, Fault)>>,
    /// Chunks from this index on need not run (a chunk before them failed).
    stop: AtomicUsize,
    /// Workers that have not finished with the job yet.
    pending: AtomicUsize,
    caller: Thread,
}

impl Job<'_> {
    /// Runs chunks as participant `me` until none is left anywhere.
    fn participate(&self, me: usize) {
        let n = self.runs.len();
        loop {
            // Its own run first; then steal from the back of the others', nearest first.
            let next = self.runs[me].pop(true).or_else(|| (1..n).find_map(|d| self.runs[(me + d) % n].pop(false)));
            let Some(k) = next else { return };
            if k >= self.stop.load(Ordering::Relaxed) {
                continue;
            }
            if let Err(fault) = (self.f)(self.chunks[k]) {
                let mut first = self.failure.lock().unwrap_or_else(|e| e.into_inner());
                if first.as_ref().is_none_or(|(j, _)| k < *j) {
                    *first = Some((k, fault));
                    self.stop.fetch_min(k, Ordering::Relaxed);
                }
            }
        }
    }
}

/// A worker's mailbox: the job it is to help with (a type-erased `*const
/// Job`), or null. The launcher puts a job in, and takes it back out if the
/// worker has not taken it by the time every chunk is gone; a launch ends
/// only after every worker that took its job has finished with it, so every
/// mailbox is empty when a launch starts. Each sits on its own cache line,
/// since its worker spins on it.
#[repr(align(64))]
#[derive(Default)]
struct Mailbox {
    job: AtomicPtr<()>,
    /// Whether the worker is parked (or about to park): a job handed to it
    /// waits for the OS to wake it. False while it spins or works.
    parked: AtomicBool,
}

impl Mailbox {
    /// Puts `job` in, and wakes the worker if it is parked. (Sequentially
    /// consistent with the worker's `parked` then `job` in [`worker_loop`]:
    /// either this sees it parked and unparks it, or it sees the job before
    /// it parks. A spinning worker is not unparked, so that it is not left a
    /// wake-up token that would cut its next park short.)
    fn post(&self, job: *mut (), thread: &Thread) {
        self.job.store(job, Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) {
            thread.unpark();
        }
    }
}

/// A worker thread.
struct Worker {
    thread: Thread,
    mailbox: Arc<Mailbox>,
}

/// The workers, and the per-participant runs every launch reuses.
struct Pool {
    workers: Vec<Worker>,
    runs: Vec<Run>,
    /// When [`helpers`] was last asked: launches that follow each other
    /// within [`SPIN`] are a loop whose next launch would find woken
    /// workers still awake.
    last_asked: Option<Instant>,
}

/// The state of the workers a split launch would hand chunks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Helpers {
    /// Every one of them exists and is spinning for its next job (it
    /// finished a launch, or was woken, under [`SPIN`] ago): it starts on a
    /// launch within about a microsecond.
    Awake,
    /// One of them is parked (or does not exist yet): the OS must wake it,
    /// which takes tens of microseconds.
    Parked,
}

/// The state of the workers a launch on `threads` threads would use. When
/// one is parked and launches come in quick succession (the previous call
/// was under [`SPIN`] ago), they are woken (created, the first time)
/// without a job, so that the next launch of the loop finds them awake; a
/// launch on its own wakes nobody. Allocates nothing once the workers exist.
pub fn helpers(threads: usize) -> Helpers {
    let helpers = threads.clamp(1, MAX_THREADS) - 1;
    let mut guard = pool();
    let p = &mut *guard;
    let awake =
        p.workers.len() >= helpers && p.workers[..helpers].iter().all(|w| !w.mailbox.parked.load(Ordering::Relaxed));
    let now = Instant::now();
    let in_a_loop = p.last_asked.is_some_and(|t| now.duration_since(t) < SPIN);
    p.last_asked = Some(now);
    if awake {
        return Helpers::Awake;
    }
    if in_a_loop {
        ensure_workers(p, helpers);
        for w in &p.workers[..helpers.min(p.workers.len())] {
            if w.mailbox.parked.load(Ordering::Relaxed) {
                w.thread.unpark();
            }
        }
    }
    Helpers::Parked
}

/// The pool, locked for one launch at a time (concurrent launches from
/// different threads take turns; each is parallel inside).
fn pool() -> MutexGuard<'static, Pool> {
    static POOL: OnceLock<Mutex<Pool>> = OnceLock::new();
    POOL.get_or_init(|| Mutex::new(Pool { workers: Vec::new(), runs: Vec::new(), last_asked: None }))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The body of worker `index` (participant `index + 1` of the jobs it helps
/// with): wait for a job in the mailbox, help, report, repeat.
fn worker_loop(index: usize, mailbox: Arc<Mailbox>) {
    loop {
        let mut spin_until = Instant::now() + SPIN;
        let mut spins = 0u32;
        let job = loop {
            let j = mailbox.job.swap(std::ptr::null_mut(), Ordering::Acquire);
            if !j.is_null() {
                break j as *const Job<'static>;
            }
            spins = spins.wrapping_add(1);
            if !spins.is_multiple_of(64) || Instant::now() < spin_until {
                std::hint::spin_loop();
            } else {
                // Say so, then look once more (see `Mailbox::post`).
                mailbox.parked.store(true, Ordering::SeqCst);
                if mailbox.job.load(Ordering::SeqCst).is_null() {
                    // Woken by a launcher's `unpark`, by `helpers`, or
                    // spuriously: look again, and spin a while first.
                    std::thread::park();
                }
                mailbox.parked.store(false, Ordering::SeqCst);
                spin_until = Instant::now() + SPIN;
            }
        };
        // SAFETY: the launcher put the job in this mailbox and does not return
        // (so the job stays alive) until `pending`, which counts this worker,
        // is zero; this worker decrements it as its last use of the job.
        let job = unsafe { &*job };
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.participate(index + 1)));
        if caught.is_err() {
            // Kernels report faults as values; a panic here is a bug. The
            // launch still finishes, and says so.
            let mut first = job.failure.lock().unwrap_or_else(|e| e.into_inner());
            *first = Some((0, Fault::BadArguments("a worker thread panicked".into())));
        }
        let caller = job.caller.clone();
        if job.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            caller.unpark();
        }
    }
}

/// Makes sure at least `n` workers exist; fewer if the OS refuses threads.
fn ensure_workers(p: &mut Pool, n: usize) {
    while p.workers.len() < n {
        let index = p.workers.len();
        let mailbox = Arc::new(Mailbox::default());
        let theirs = mailbox.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("heddle-cpu-{index}"))
            // Generated code keeps its stack temporaries under 64 KiB.
            .stack_size(2 << 20)
            .spawn(move || worker_loop(index, theirs));
        match spawned {
            Ok(h) => p.workers.push(Worker { thread: h.thread().clone(), mailbox }),
            Err(_) => break,
        }
    }
}

/// Calls `f` on every chunk using up to `threads` threads (the calling
/// thread is one of them). `Ok` when every chunk succeeded, otherwise the
/// fault of the first failing chunk in chunk order.
pub fn run_chunks(chunks: &[(i64, i64)], threads: usize, f: &ChunkFn<'_>) -> Result<(), Fault> {
    let threads = threads.clamp(1, MAX_THREADS).min(chunks.len());
    if threads <= 1 {
        return chunks.iter().try_for_each(|c| f(*c));
    }
    let mut guard = pool();
    let p = &mut *guard;
    ensure_workers(p, threads - 1);
    let helpers = p.workers.len().min(threads - 1);
    if helpers == 0 {
        // The OS refused threads: the same work, sequentially.
        return chunks.iter().try_for_each(|c| f(*c));
    }
    let participants = helpers + 1;
    if p.runs.len() < participants {
        p.runs.resize_with(participants, Run::default);
    }
    let runs = &p.runs[..participants];
    let n = chunks.len();
    for (t, r) in runs.iter().enumerate() {
        r.set(n * t / participants, n * (t + 1) / participants);
    }
    let job = Job {
        f,
        chunks,
        runs,
        failure: Mutex::new(None),
        stop: AtomicUsize::new(usize::MAX),
        pending: AtomicUsize::new(helpers),
        caller: std::thread::current(),
    };
    for w in &p.workers[..helpers] {
        w.mailbox.post(&job as *const Job<'_> as *mut (), &w.thread);
    }
    // The caller takes the first home run: it starts before any worker wakes.
    let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.participate(0)));
    // Every chunk is taken. A worker that has not picked the job up yet (on a
    // busy machine the OS may not have run it) has nothing left to do: take
    // the job back out of its mailbox rather than wait for it to wake.
    for w in &p.workers[..helpers] {
        if !w.mailbox.job.swap(std::ptr::null_mut(), Ordering::AcqRel).is_null() {
            job.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
    let spin_until = Instant::now() + SPIN;
    while job.pending.load(Ordering::Acquire) != 0 {
        if Instant::now() < spin_until {
            std::hint::spin_loop();
        } else {
            std::thread::park();
        }
    }
    // Every worker is done with `job`; it may now go out of scope.
    let failure = job.failure.into_inner().unwrap_or_else(|e| e.into_inner());
    drop(guard);
    if let Err(panic) = mine {
        std::panic::resume_unwind(panic);
    }
    match failure {
        None => Ok(()),
        Some((_, fault)) => Err(fault),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI64;

    #[test]
    fn every_chunk_runs_once_on_any_thread_count() {
        let chunks: Vec<(i64, i64)> = (0..97).map(|k| (k * 10, k * 10 + 10)).collect();
        for threads in 1..=5 {
            let sum = AtomicI64::new(0);
            let count = AtomicUsize::new(0);
            run_chunks(&chunks, threads, &|(lo, hi)| {
                sum.fetch_add((lo..hi).sum::<i64>(), Ordering::Relaxed);
                count.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
            assert_eq!(sum.into_inner(), (0..970).sum::<i64>(), "{threads} threads");
            assert_eq!(count.into_inner(), 97, "{threads} threads");
        }
    }

    #[test]
    fn the_first_failure_in_chunk_order_is_reported() {
        let chunks: Vec<(i64, i64)> = (0..64).map(|k| (k, k + 1)).collect();
        for threads in 1..=4 {
            let r = run_chunks(&chunks, threads, &|(lo, _)| {
                if lo % 10 == 7 { Err(Fault::Check(lo as u32)) } else { Ok(()) }
            });
            assert_eq!(r, Err(Fault::Check(7)), "{threads} threads");
        }
    }

    #[test]
    fn a_slow_participant_has_its_chunks_stolen() {
        // Chunk 0 (the caller's first) blocks until every other chunk ran:
        // only stealing lets that happen with two participants.
        let chunks: Vec<(i64, i64)> = (0..8).map(|k| (k, k + 1)).collect();
        let done = AtomicUsize::new(0);
        run_chunks(&chunks, 2, &|(lo, _)| {
            if lo == 0 {
                let start = Instant::now();
                while done.load(Ordering::Acquire) < 7 {
                    assert!(start.elapsed() < Duration::from_secs(20), "the other chunks were not stolen");
                    std::thread::yield_now();
                }
            } else {
                done.fetch_add(1, Ordering::AcqRel);
            }
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn a_launch_does_not_wait_for_a_worker_that_never_woke() {
        // Two chunks on 3 threads: whichever participants come late find
        // nothing; many launches in a row must all finish.
        let chunks = [(0, 1), (1, 2)];
        for _ in 0..2000 {
            let total = AtomicI64::new(0);
            run_chunks(&chunks, 3, &|(lo, _)| {
                total.fetch_add(lo + 1, Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
            assert_eq!(total.into_inner(), 3);
        }
    }

    #[test]
    fn launches_from_several_threads_take_turns() {
        let chunks: Vec<(i64, i64)> = (0..40).map(|k| (k, k + 1)).collect();
        std::thread::scope(|s| {
            for t in 0..4 {
                let chunks = &chunks;
                s.spawn(move || {
                    for _ in 0..50 {
                        let total = AtomicI64::new(0);
                        run_chunks(chunks, 2 + t % 2, &|(lo, _)| {
                            total.fetch_add(lo, Ordering::Relaxed);
                            Ok(())
                        })
                        .unwrap();
                        assert_eq!(total.into_inner(), (0..40).sum::<i64>());
                    }
                });
            }
        });
    }

    /// Waits (up to 20 s) until worker 0's `parked` is `want`.
    fn wait_until_parked_is(want: bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if pool().workers.first().is_some_and(|w| w.mailbox.parked.load(Ordering::SeqCst) == want) {
                return true;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        false
    }

    #[test]
    fn an_idle_worker_parks_and_a_loop_of_launches_wakes_it() {
        // Other tests' launches may wake worker 0 at any time, so each step
        // waits for the state it needs rather than assuming it.
        run_chunks(&[(0, 1), (1, 2)], 2, &|_| Ok(())).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(wait_until_parked_is(true), "worker 0 never parked after its launch");
            // Asked long after any launch of this test: it says so, and wakes nobody.
            std::thread::sleep(SPIN * 2);
            if helpers(2) == Helpers::Parked {
                break;
            }
            assert!(Instant::now() < deadline, "helpers() never saw worker 0 parked");
        }
        // Two asks within SPIN of each other (a loop of launches) wake it;
        // retried, as the OS may hold this thread longer than SPIN between them.
        // A woken worker is awake for only SPIN before it parks again, so it
        // is watched without sleeping (a sleep under load can outlast that
        // window, and then nothing wakes it again), and a missed window is
        // retried with two more asks.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            helpers(2);
            helpers(2);
            let watch = Instant::now() + Duration::from_millis(50);
            let mut woke = false;
            while !woke && Instant::now() < watch {
                woke = pool().workers.first().is_some_and(|w| !w.mailbox.parked.load(Ordering::SeqCst));
                std::hint::spin_loop();
            }
            if woke && helpers(2) == Helpers::Awake {
                break;
            }
            assert!(Instant::now() < deadline, "helpers() in a loop never woke worker 0");
        }
        // One thread needs no helper.
        assert_eq!(helpers(1), Helpers::Awake);
    }

    /// Not a check but a measurement (`cargo test -p heddle-runtime --release
    /// --lib handover_costs -- --ignored --nocapture`): what handing a launch
    /// to an awake and to a parked worker costs, the figures the thresholds
    /// of `split.rs` are derived from.
    #[test]
    #[ignore = "a measurement: run it alone, with --release --ignored --nocapture"]
    fn handover_costs() {
        fn busy(d: Duration) {
            let t = Instant::now();
            while t.elapsed() < d {
                std::hint::spin_loop();
            }
        }
        fn quantiles(mut v: Vec<f64>) -> String {
            v.sort_by(f64::total_cmp);
            let q = |f: f64| v.get(((v.len() - 1) as f64 * f) as usize).copied().unwrap_or(f64::NAN);
            format!("p10 {:6.2}  median {:6.2}  p90 {:6.2} µs ({} samples)", q(0.1), q(0.5), q(0.9), v.len())
        }
        // Launch start to the helper's first chunk: 8 chunks of 25 µs, so a
        // parked helper still finds work when it wakes.
        let chunks: Vec<(i64, i64)> = (0..8).map(|k| (k, k + 1)).collect();
        for (state, gap) in [("awake", Duration::ZERO), ("parked", Duration::from_millis(2))] {
            let mut latency = Vec::new();
            for _ in 0..1000 {
                std::thread::sleep(gap);
                let caller = std::thread::current().id();
                let first = Mutex::new(None::<f64>);
                let start = Instant::now();
                run_chunks(&chunks, 2, &|_| {
                    if std::thread::current().id() != caller {
                        let mut f = first.lock().unwrap();
                        f.get_or_insert(start.elapsed().as_secs_f64() * 1e6);
                    }
                    busy(Duration::from_micros(25));
                    Ok(())
                })
                .unwrap();
                latency.extend(first.into_inner().unwrap());
            }
            println!("{state:6} helper, launch start to its first chunk: {}", quantiles(latency));
        }
        // Where two threads pay: a launch of `w` µs of work in 8 chunks on one
        // thread, and on two with the helper awake (launches back to back)
        // and parked (2 ms apart).
        for w in [2u64, 4, 8, 16, 32, 64] {
            let chunk = Duration::from_nanos(w * 1000 / 8);
            let mut row = format!("{w:3} µs of work, median (p10) launch:");
            for (label, threads, gap) in
                [("1T", 1, Duration::ZERO), ("2T awake", 2, Duration::ZERO), ("2T parked", 2, Duration::from_millis(2))]
            {
                let mut times = Vec::new();
                for _ in 0..if gap.is_zero() { 3000 } else { 200 } {
                    std::thread::sleep(gap);
                    let start = Instant::now();
                    run_chunks(&chunks, threads, &|_| {
                        busy(chunk);
                        Ok(())
                    })
                    .unwrap();
                    times.push(start.elapsed().as_secs_f64() * 1e6);
                }
                times.sort_by(f64::total_cmp);
                row += &format!("  {label} {:.1} ({:.1})", times[times.len() / 2], times[times.len() / 10]);
            }
            println!("{row} µs");
        }
    }

    #[test]
    fn thread_counts_outside_the_cap_are_refused() {
        for (text, want) in [
            ("1", Some(1)),
            (" 4 ", Some(4)),
            ("1024", Some(1024)),
            ("0", None),
            ("1025", None),
            ("many", None),
            ("-2", None),
        ] {
            assert_eq!(parse_threads(text).ok(), want, "{text}");
        }
    }
}

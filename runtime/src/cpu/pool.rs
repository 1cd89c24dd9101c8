//! Threads.

use heddle_codegen_cpu::Fault;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The number of threads to use when none is asked for: `HEDDLE_THREADS` if
/// set to a positive number, else the machine's available parallelism.
pub fn default_threads() -> usize {
    std::env::var("HEDDLE_THREADS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A rayon pool with `threads` threads, built once per thread count.
fn pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = pools.get(&threads) {
        return Some(p.clone());
    }
    let p = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(threads).build().ok()?);
    pools.insert(threads, p.clone());
    Some(p)
}

/// Calls `f` on every chunk, on `threads` threads; the results in chunk order.
pub fn run_chunks(chunks: &[(i64, i64)], threads: usize, f: &(dyn Fn((i64, i64)) -> Result<(), Fault> + Sync)) -> Vec<Result<(), Fault>> {
    if threads <= 1 || chunks.len() <= 1 {
        return chunks.iter().map(|c| f(*c)).collect();
    }
    match pool(threads) {
        Some(p) => p.install(|| chunks.par_iter().with_max_len(1).map(|c| f(*c)).collect()),
        // No pool (the OS refused threads): the same work, sequentially.
        None => chunks.iter().map(|c| f(*c)).collect(),
    }
}

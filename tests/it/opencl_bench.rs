//! SpMV throughput of the OpenCL backend on POCL (the CPU as an OpenCL
//! device) against the Cranelift CPU backend, on the same generated CSR
//! matrices. Ignored by default; docs/performance.md has the figures:
//!
//! ```sh
//! cargo test --release --test it opencl_bench:: -- --ignored --nocapture
//! ```
//!
//! Kernel time only: OpenCL profiling events for POCL, the JIT'd kernel's
//! wall time (after a warm-up that compiles it) for the CPU backend; the
//! median of `HEDDLE_BENCH_REPS` (default 20) runs. GB/s counts the bytes
//! each SpMV must read and write once (offsets, column indices, values, x, y).

use crate::common;
use crate::opencl::samples;

use heddle::source::SourceFile;
use heddle_runtime::interp::Env;
use heddle_runtime::io::read::ScalarKind;
use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_runtime::value::Value;
use std::time::Instant;

struct Csr {
    name: &'static str,
    n: usize,
    m: usize,
    offsets: Vec<i64>,
    cols: Vec<i64>,
}

/// A small deterministic generator (no dependency, same matrices every run).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn build(name: &'static str, n: usize, m: usize, row: impl Fn(usize, &mut Lcg) -> Vec<i64>) -> Csr {
    let mut rng = Lcg(42);
    let mut offsets = vec![0i64];
    let mut cols = Vec::new();
    for i in 0..n {
        let mut r = row(i, &mut rng);
        r.sort_unstable();
        r.dedup();
        cols.extend(r);
        offsets.push(cols.len() as i64);
    }
    Csr { name, n, m, offsets, cols }
}

fn matrices() -> Vec<Csr> {
    let n = 200_000;
    vec![
        build("uniform (16/row)", n, n, |_, g| (0..16).map(|_| (g.next() % n as u64) as i64).collect()),
        // Row lengths ~ 1/rank: a few rows with thousands of entries, most with a handful.
        build("power-law", n, n, |i, g| {
            let len = (40_000 / (i + 1)).clamp(2, 5000) + (g.next() % 8) as usize;
            (0..len).map(|_| (g.next() % n as u64) as i64).collect()
        }),
        build("banded (width 21)", n, n, |i, _| (i.saturating_sub(10)..(i + 11).min(n)).map(|c| c as i64).collect()),
    ]
}

fn flat(items: Vec<Value>, kind: ScalarKind) -> Loaded {
    Loaded::Flat { shape: vec![items.len() as u64], items, dtype: "generated".into(), kinds: vec![kind] }
}

fn env_for(kernel: &heddle_typeck::Kernel, a: &Csr, nats: &[(String, i64)]) -> Env {
    let ints = |v: &[i64]| flat(v.iter().map(|x| Value::Int(*x)).collect(), ScalarKind::Int);
    let vals = flat((0..a.cols.len()).map(|k| Value::Float(1.0 + (k % 7) as f64 * 0.125)).collect(), ScalarKind::Float);
    let xs = flat((0..a.m).map(|j| Value::Float(1.0 + (j % 5) as f64 * 0.25)).collect(), ScalarKind::Float);
    let inputs = vec![
        ("offset".into(), ints(&a.offsets)),
        ("col_indices".into(), ints(&a.cols)),
        ("values".into(), vals),
        ("xs".into(), xs),
    ];
    bind_inputs(kernel, nats, inputs).unwrap()
}

fn kernel_of(example: &str) -> heddle_typeck::Kernel {
    let file =
        SourceFile::read(common::root().join("examples").join(format!("{example}.hdl")).to_str().unwrap()).unwrap();
    heddle::check_source(&file).unwrap().1
}

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

#[test]
#[ignore = "a benchmark: run with --ignored --nocapture"]
fn spmv_pocl_vs_cpu() {
    let reps: usize = std::env::var("HEDDLE_BENCH_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let cl = heddle_runtime::opencl::OpenCl::new(None).expect("an OpenCL platform");
    println!("OpenCL device: {} ({})", cl.device().name, cl.device().platform);
    let row_item = kernel_of("csr_spmv_row_per_item");
    let row_item_cl = heddle::opencl::compile(&row_item, "csr_spmv_row_per_item").unwrap();
    let unpacked = kernel_of("csr_unpacked_spmv");
    let cpu_prog = heddle::cpu::lower(&unpacked, "csr_unpacked_spmv").unwrap();
    let parallel = kernel_of("csr_spmv_parallel");
    let l7 = samples::listing7();
    let l7_cl = heddle_codegen_opencl::compile(&l7).unwrap();
    let threads = heddle_runtime::cpu::default_threads();
    println!(
        "| matrix | rows | nonzeros | CPU backend ({threads} threads) | POCL, row per work-item | POCL, Listing 7 R=8 W=1 | POCL, Listing 7 R=2 W=4 |"
    );
    println!("|---|---|---|---|---|---|---|");
    for a in matrices() {
        let nnz = a.cols.len();
        let bytes = (4 * (a.n + 1) + 8 * nnz + 4 * a.m + 4 * a.n) as f64;
        let gbps = |s: f64| format!("{:.2} GB/s ({:.2} ms)", bytes / s * 1e-9, s * 1e3);

        let env = env_for(&unpacked, &a, &[]);
        let mut launch = heddle_runtime::launch::prepare(&cpu_prog, &env).unwrap();
        heddle_runtime::cpu::run(&cpu_prog, &mut launch, threads).unwrap();
        let cpu = median(
            (0..reps)
                .map(|_| {
                    let t = Instant::now();
                    heddle_runtime::cpu::run(&cpu_prog, &mut launch, threads).unwrap();
                    t.elapsed().as_secs_f64()
                })
                .collect(),
        );

        let env = env_for(&row_item, &a, &[]);
        let (_, timing) = heddle::opencl::run(&cl, &row_item, &row_item_cl, &env, reps).unwrap();
        let pocl_row = median(timing.kernel_seconds);

        let mut l7_time = Vec::new();
        for (r, w) in [(8, 1), (2, 4)] {
            let env = env_for(&parallel, &a, &[("R".into(), r), ("W".into(), w)]);
            let mut launch = heddle_runtime::launch::prepare(&l7, &env).unwrap();
            let timing = cl.run(&l7, &l7_cl, &mut launch, reps).unwrap();
            l7_time.push(median(timing.kernel_seconds));
        }
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            a.name,
            a.n,
            nnz,
            gbps(cpu),
            gbps(pocl_row),
            gbps(l7_time[0]),
            gbps(l7_time[1])
        );
    }
}

//! SpMSpM with a CSR result (the MLIR sparse compiler paper's Table 2): C =
//! A * B for n x n uniformly random matrices of density 0.01, heddle's
//! `examples/sparse/spgemm_csr.hdl` (count phase, host prefix sum, fill) on
//! the CPU backend (1 and 2 threads) and OpenCL, against a hand-written
//! Gustavson loop in Rust (1 thread) and, when `python3` has scipy, scipy's
//! `A @ B` on the same files (and with `sort_indices()` after it: scipy's
//! rows come out unsorted, heddle's, MLIR's and TACO's sorted), all in one run. Every result is checked equal
//! to the hand-written one before it is timed.
//!
//! `cargo bench -p heddle --bench spgemm [-- quick]`
//!
//! Times are medians of 5 runs (3 with `quick`) in ms. heddle's "kernels"
//! time is the counting kernel plus the filling kernel (on OpenCL, from
//! profiling events); "+ host" adds what
//! the host does between and around them for each launch (laying out the
//! inputs, the prefix sum of the counts, allocating the result), which a
//! caller whose data is already in place would not pay again.

use heddle_runtime::interp::Env;
use heddle_runtime::launch::{output_value, prepare, run_counts};
use std::path::Path;
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// CSR with f32 values.
struct Csr {
    n: usize,
    offsets: Vec<usize>,
    cols: Vec<usize>,
    vals: Vec<f32>,
}

fn random(n: usize, density: f64, seed: u64) -> Csr {
    let mut g = Rng(seed);
    let (mut offsets, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for _ in 0..n {
        for j in 0..n {
            if g.unit() < density {
                cols.push(j);
                vals.push(((g.next() % 16) as f32 - 7.5) / 4.0);
            }
        }
        offsets.push(cols.len());
    }
    Csr { n, offsets, cols, vals }
}

fn write_mtx(a: &Csr, path: &Path) {
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{} {} {}\n", a.n, a.n, a.vals.len());
    for i in 0..a.n {
        for p in a.offsets[i]..a.offsets[i + 1] {
            s.push_str(&format!("{} {} {}\n", i + 1, a.cols[p] + 1, a.vals[p]));
        }
    }
    std::fs::write(path, s).unwrap();
}

/// Gustavson with a dense accumulator, sorted rows: the hand-written peer.
fn gustavson(a: &Csr, b: &Csr) -> Csr {
    let n = b.n;
    let (mut sums, mut filled, mut list) = (vec![0f32; n], vec![false; n], Vec::with_capacity(n));
    let (mut offsets, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for i in 0..a.n {
        for p in a.offsets[i]..a.offsets[i + 1] {
            let (k, av) = (a.cols[p], a.vals[p]);
            for q in b.offsets[k]..b.offsets[k + 1] {
                let j = b.cols[q];
                if !filled[j] {
                    filled[j] = true;
                    list.push(j);
                }
                sums[j] += av * b.vals[q];
            }
        }
        list.sort_unstable();
        for &j in &list {
            cols.push(j);
            vals.push(sums[j]);
            sums[j] = 0.0;
            filled[j] = false;
        }
        list.clear();
        offsets.push(cols.len());
    }
    Csr { n, offsets, cols, vals }
}

fn median(mut xs: Vec<Duration>) -> f64 {
    xs.sort();
    xs[xs.len() / 2].as_secs_f64() * 1e3
}

/// The (column, value) pairs of a heddle result, row after row.
fn pairs(v: &heddle_runtime::value::Value, out: &mut Vec<(i64, f64)>) {
    use heddle_runtime::value::Value;
    match v {
        Value::Array(items) => items.iter().for_each(|x| pairs(x, out)),
        Value::Tuple(p) => out.push((
            p[0].as_int().unwrap(),
            match &p[1] {
                Value::Float(f) => *f,
                other => panic!("{other}"),
            },
        )),
        other => panic!("unexpected {other}"),
    }
}

fn same(got: &[(i64, f64)], want: &Csr, what: &str) {
    assert_eq!(got.len(), want.vals.len(), "{what}: number of stored entries");
    for (k, (&(c, v), (&wc, &wv))) in got.iter().zip(want.cols.iter().zip(&want.vals)).enumerate() {
        assert!(
            c as usize == wc && (v - wv as f64).abs() <= 1e-3 * (wv.abs() as f64).max(1.0),
            "{what}: entry {k}: ({c}, {v}) vs ({wc}, {wv})"
        );
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let reps = if quick { 3 } else { 5 };
    let sizes: &[usize] = if quick { &[1024] } else { &[1024, 2048, 4096] };
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string("examples/sparse/spgemm_csr.hdl").unwrap();
    let file = heddle::source::SourceFile::new("spgemm_csr.hdl", &src);
    let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|_| panic!("spgemm_csr.hdl does not check"));
    let program = heddle::cpu::lower(&kernel, "spgemm_csr").unwrap();
    let cl = heddle_runtime::opencl::OpenCl::new(None).ok();
    let compiled = cl.as_ref().map(|_| heddle::opencl::compile(&kernel, "spgemm_csr").unwrap());
    println!(
        "| n | nnz(A) | nnz(C) | density(C) | hand-written Gustavson | heddle cpu 1 thr: kernels (+ host) | heddle cpu 2 thr: kernels (+ host) | heddle OpenCL (POCL): kernels (+ host) | scipy `A @ B` (unsorted rows) | scipy, then `sort_indices()` |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &n in sizes {
        let a = random(n, 0.01, 0x9e37_79b9 ^ n as u64);
        let b = random(n, 0.01, 0x7f4a_7c15 ^ n as u64);
        let (pa, pb) = (dir.path().join(format!("a{n}.mtx")), dir.path().join(format!("b{n}.mtx")));
        write_mtx(&a, &pa);
        write_mtx(&b, &pb);
        // The hand-written peer.
        let want = gustavson(&a, &b);
        let hand = median(
            (0..reps)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(gustavson(&a, &b));
                    t.elapsed()
                })
                .collect(),
        );
        // heddle: bind once, then count + fill per run.
        let mut nats = Vec::new();
        let mut inputs = Vec::new();
        for (name, path) in [("A", &pa), ("B", &pb)] {
            let (d, bufs) = heddle_runtime::io::bind::tensor_inputs(&kernel, name, path).unwrap();
            nats.extend(d);
            inputs.extend(bufs);
        }
        let env: Env = heddle_runtime::io::bind::bind_inputs(&kernel, &nats, inputs).unwrap();
        let cpu = |threads: usize| -> (f64, f64) {
            let (mut kernels, mut total) = (Vec::new(), Vec::new());
            for rep in 0..reps {
                let t0 = Instant::now();
                let mut in_kernels = Duration::ZERO;
                let env2 = run_counts(&program, &env, &mut |_, phase, launch| {
                    let t = Instant::now();
                    let r = heddle_runtime::cpu::run(phase, launch, threads);
                    in_kernels += t.elapsed();
                    r
                })
                .unwrap();
                let mut launch = prepare(&program, &env2).unwrap();
                let t = Instant::now();
                heddle_runtime::cpu::run(&program, &mut launch, threads).unwrap();
                in_kernels += t.elapsed();
                total.push(t0.elapsed());
                kernels.push(in_kernels);
                if rep == 0 {
                    let mut got = Vec::new();
                    pairs(&output_value(&program, &launch, &kernel.body.ty, &env2).unwrap(), &mut got);
                    same(&got, &want, &format!("heddle cpu, {threads} threads, n = {n}"));
                }
            }
            (median(kernels), median(total))
        };
        let (k1, t1) = cpu(1);
        let (k2, t2) = cpu(2);
        let ocl = match (&cl, &compiled) {
            (Some(cl), Some(c)) => {
                // As on the CPU: the two kernels (profiling events), and the wall time of
                // everything up to the filled result on the host (transfers included,
                // turning it into a heddle value not).
                let (mut kernels, mut walls) = (Vec::new(), Vec::new());
                for rep in 0..reps {
                    let t0 = Instant::now();
                    let mut in_kernels = 0.0;
                    let env2 = run_counts(&c.program, &env, &mut |k, phase, launch| {
                        let timing = cl.run(phase, &c.counts[k], launch, 1)?;
                        in_kernels += timing.kernel_seconds.iter().sum::<f64>();
                        Ok(())
                    })
                    .unwrap();
                    let mut launch = prepare(&c.program, &env2).unwrap();
                    let timing = cl.run(&c.program, &c.kernel, &mut launch, 1).unwrap();
                    in_kernels += timing.kernel_seconds.iter().sum::<f64>();
                    walls.push(t0.elapsed());
                    kernels.push(Duration::from_secs_f64(in_kernels.max(0.0)));
                    if rep == 0 {
                        let mut got = Vec::new();
                        pairs(&output_value(&c.program, &launch, &kernel.body.ty, &env2).unwrap(), &mut got);
                        same(&got, &want, &format!("heddle OpenCL, n = {n}"));
                    }
                }
                format!("{:.2} ({:.2})", median(kernels), median(walls))
            }
            _ => "(no OpenCL platform)".into(),
        };
        let scipy = std::process::Command::new("python3")
            .args(["benches/spgemm_scipy.py", pa.to_str().unwrap(), pb.to_str().unwrap(), &reps.to_string()])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let fields: Vec<&str> = scipy.as_deref().map(|s| s.split_whitespace().collect()).unwrap_or_default();
        let (scipy_ms, scipy_nnz, scipy_sorted) = match fields[..] {
            [ms, nnz, sorted] => (ms.parse::<f64>().ok(), nnz.parse::<usize>().ok(), sorted.parse::<f64>().ok()),
            _ => (None, None, None),
        };
        if let Some(z) = scipy_nnz {
            // scipy also drops the sums that cancel to exactly 0 (the values are
            // multiples of 1/4, so some do); Gustavson keeps every reached column.
            let cancelled = want.vals.iter().filter(|v| **v == 0.0).count();
            assert_eq!(z, want.vals.len() - cancelled, "scipy's nnz(C) differs from Gustavson's without its zero sums");
        }
        let ratio = |ms: f64| scipy_ms.map_or(String::new(), |s| format!(" ({:.2}x scipy)", ms / s));
        println!(
            "| {n} | {} | {} | {:.4} | {hand:.2}{} | {k1:.2} ({t1:.2}){} | {k2:.2} ({t2:.2}){} | {ocl} | {} | {} |",
            a.vals.len(),
            want.vals.len(),
            want.vals.len() as f64 / (n * n) as f64,
            ratio(hand),
            ratio(k1),
            ratio(k2),
            scipy_ms.map_or("(no scipy)".to_string(), |s| format!("{s:.2}")),
            scipy_sorted.map_or(String::new(), |s| format!("{s:.2}")),
        );
    }
}

//! CSR SpMV on the CPU backend against a hand-written Rust loop and `sprs`,
//! plus the paper's Figures 5–7 on the CPU. Not a timed test: it prints a
//! table (see docs/performance.md for the command and the figures).
//!
//! `cargo bench -p heddle --bench cpu_spmv [-- quick]`
//!
//! Each time is the median of several runs of the kernel alone (inputs laid
//! out and the work split computed beforehand, as a repeated launch would
//! reuse them). GFLOP/s counts 2 flops per nonzero; effective GB/s counts
//! every byte the CSR kernel must touch once: offsets, columns, values,
//! `xs` (at most once per nonzero) and the result.

use heddle_ir::loops::{ArgKind, LoopProgram};
use heddle_runtime::cpu::{compile_cached, execute, plan};
use heddle_runtime::launch::{Buffer, Launch, Slot};
use heddle_runtime::value::Value;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// A CSR matrix.
struct Csr {
    n: usize,
    m: usize,
    offsets: Vec<i32>,
    cols: Vec<i32>,
    vals: Vec<f64>,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Rows with `len(r)` entries each, columns from `col(r, k)`, sorted.
fn build(
    n: usize,
    m: usize,
    mut len: impl FnMut(usize, &mut Rng) -> usize,
    mut col: impl FnMut(usize, usize, &mut Rng) -> usize,
) -> Csr {
    let mut g = Rng(0x9e3779b97f4a7c15);
    let (mut offsets, mut cols, mut vals) = (vec![0i32], Vec::new(), Vec::new());
    for r in 0..n {
        let k = len(r, &mut g).min(m);
        // Sorted, without duplicates (as `sprs` requires).
        let mut row: Vec<i32> = (0..k).map(|j| col(r, j, &mut g).min(m - 1) as i32).collect();
        row.sort_unstable();
        row.dedup();
        for c in row {
            cols.push(c);
            vals.push(g.unit() - 0.5);
        }
        offsets.push(cols.len() as i32);
    }
    Csr { n, m, offsets, cols, vals }
}

fn matrices(scale: usize) -> Vec<(&'static str, Csr)> {
    let nnz = 5_000_000 / scale;
    let n = 500_000 / scale;
    vec![
        ("uniform", build(n, n, |_, _| nnz / n, |_, _, g| g.below(n))),
        (
            "power-law",
            build(n, n, |_, g| ((nnz / n) as f64 * 0.3 / g.unit().max(1e-6).powf(0.7)) as usize, |_, _, g| g.below(n)),
        ),
        ("banded", build(n, n, |_, _| nnz / n, |r, j, _| (r + j).saturating_sub(nnz / n / 2))),
        (
            "row-band",
            build(
                n,
                5000,
                |r, g| if r < 1000 { 5000 } else { g.below(2 * (nnz - 1000 * 5000 / scale).max(n) / n) },
                |r, j, g| if r < 1000 { j } else { g.below(5000) },
            ),
        ),
    ]
}

fn median(mut f: impl FnMut(), reps: usize) -> Duration {
    f();
    let mut t: Vec<Duration> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[reps / 2]
}

/// The lowered program of an example (or of source text).
fn lowered(src: &str, name: &str, naive: bool) -> LoopProgram {
    let file = heddle::source::SourceFile::new(name, src);
    let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d)));
    let opts = heddle_rewrite::lower::LowerOptions { naive_sums: naive, ..Default::default() };
    heddle_rewrite::lower::lower_kernel_with(&kernel, name, &opts).unwrap_or_else(|d| panic!("{}", file.render(&[d])))
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!("{}/examples/{name}.hdl", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// A launch of `prog` on `a` and `xs`, arguments matched by name.
fn launch(prog: &LoopProgram, a: &Csr, xs: &[f64]) -> Launch {
    let mut slots = Vec::new();
    for arg in &prog.args {
        let name = arg.name.as_str();
        slots.push(match &arg.kind {
            ArgKind::Nat => Slot::Nat(if name == "n" { a.n as i64 } else { a.m as i64 }),
            ArgKind::Input { fields, .. } => {
                let ints = |v: &mut dyn Iterator<Item = i64>, b: &mut Buffer, f: usize| {
                    v.enumerate().for_each(|(k, x)| b.write(k, f, &Value::Int(x)))
                };
                let mut b;
                match name {
                    "offset" => {
                        b = Buffer::zeroed(fields.clone(), a.n + 1);
                        ints(&mut a.offsets.iter().map(|x| *x as i64), &mut b, 0);
                    }
                    "row_length" => {
                        b = Buffer::zeroed(fields.clone(), a.n);
                        ints(&mut a.offsets.windows(2).map(|w| (w[1] - w[0]) as i64), &mut b, 0);
                    }
                    "col_indices" => {
                        b = Buffer::zeroed(fields.clone(), a.cols.len());
                        ints(&mut a.cols.iter().map(|x| *x as i64), &mut b, 0);
                    }
                    "values" => {
                        b = Buffer::zeroed(fields.clone(), a.vals.len());
                        let f = fields.len() - 1;
                        if f == 1 {
                            ints(&mut a.cols.iter().map(|x| *x as i64), &mut b, 0);
                        }
                        a.vals.iter().enumerate().for_each(|(k, v)| b.write(k, f, &Value::Float(*v)));
                    }
                    _ => {
                        b = Buffer::zeroed(fields.clone(), xs.len());
                        xs.iter().enumerate().for_each(|(k, v)| b.write(k, 0, &Value::Float(*v)));
                    }
                }
                Slot::Buffer(b)
            }
            ArgKind::Host => Slot::Buffer(host_prefix(a)),
            ArgKind::Output { fields, .. } => Slot::Buffer(Buffer::zeroed(fields.clone(), a.n)),
            ArgKind::Scalar(_) => panic!("no scalar arguments here"),
        });
    }
    Launch { slots }
}

/// The host's prefix sum of LIL row lengths (what `launch::prepare` computes).
fn host_prefix(a: &Csr) -> Buffer {
    let mut b = Buffer::zeroed(vec![heddle_ir::ScalarType::I64], a.n + 1);
    let mut t = 0i64;
    for (r, w) in a.offsets.windows(2).enumerate() {
        t += (w[1] - w[0]) as i64;
        b.write(r + 1, 0, &Value::Int(t));
    }
    b
}

/// Time of one kernel run with `threads` threads (split computed once).
fn time_jit(prog: &LoopProgram, l: &mut Launch, threads: usize, reps: usize) -> Duration {
    let k = compile_cached(prog).unwrap();
    let p = plan(prog, &k, l, threads);
    median(|| execute(prog, &k, l, &p).unwrap(), reps)
}

fn hand_f32(o: &[i32], c: &[i32], v: &[f32], x: &[f32], y: &mut [f32]) {
    for i in 0..y.len() {
        let mut acc = 0.0f32;
        for k in o[i] as usize..o[i + 1] as usize {
            acc += v[k] * x[c[k] as usize];
        }
        y[i] = acc;
    }
}

fn hand_f64(o: &[i32], c: &[i32], v: &[f64], x: &[f64], y: &mut [f64]) {
    for i in 0..y.len() {
        let mut acc = 0.0f64;
        for k in o[i] as usize..o[i + 1] as usize {
            acc += v[k] * x[c[k] as usize];
        }
        y[i] = acc;
    }
}

const F64_SRC: &str = "nFun(n => nFun(m =>
fun(offset: [int]_{n+1} =>
fun(col_indices: [i -> [int]_{toNat(offset@(i+1) - offset@i)}]_n =>
fun(values: [i -> [double]_{toNat(offset@(i+1) - offset@i)}]_n =>
fun(xs: [double]_m =>
  zip(col_indices, values) :>> map(fun(row =>
    zip(row.1, row.2) :>> map(fun(x => x.2 * (xs@x.1))) :>> reduce(+, 0)))))))))";

fn spmv_table(scale: usize, reps: usize) {
    println!("## CSR SpMV (median of {reps} runs)\n");
    println!(
        "| matrix | type | nnz | hand 1T ms | sprs 1T ms | JIT 1T ms | JIT 2T ms | JIT 1T GFLOP/s | JIT 1T GB/s | JIT/hand 1T | JIT 2T speedup |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let p32 = lowered(&example("csr_unpacked_spmv"), "csr_unpacked_spmv", false);
    let p64 = lowered(F64_SRC, "csr_unpacked_spmv_f64", false);
    for (name, a) in matrices(scale) {
        let nnz = a.vals.len();
        let xs: Vec<f64> = (0..a.m).map(|k| (k % 7) as f64 * 0.25).collect();
        let csr = sprs::CsMatI::<f64, i32>::new((a.n, a.m), a.offsets.clone(), a.cols.clone(), a.vals.clone());
        for (ty, prog) in [("f32", &p32), ("f64", &p64)] {
            let wide = ty == "f64";
            let vsize = if wide { 8 } else { 4 };
            let bytes = (a.n + 1) * 4 + nnz * (4 + vsize) + a.m.min(nnz) * vsize + a.n * vsize;
            let hand = if wide {
                let mut y = vec![0.0; a.n];
                median(|| hand_f64(&a.offsets, &a.cols, &a.vals, &xs, black_box(&mut y)), reps)
            } else {
                let (v, x): (Vec<f32>, Vec<f32>) =
                    (a.vals.iter().map(|v| *v as f32).collect(), xs.iter().map(|v| *v as f32).collect());
                let mut y = vec![0.0f32; a.n];
                median(|| hand_f32(&a.offsets, &a.cols, &v, &x, black_box(&mut y)), reps)
            };
            let sp = if wide {
                let mut y = vec![0.0; a.n];
                median(
                    || {
                        y.iter_mut().for_each(|v| *v = 0.0);
                        sprs::prod::mul_acc_mat_vec_csr(csr.view(), &xs[..], black_box(&mut y[..]))
                    },
                    reps,
                )
            } else {
                let c32 = sprs::CsMatI::<f32, i32>::new(
                    (a.n, a.m),
                    a.offsets.clone(),
                    a.cols.clone(),
                    a.vals.iter().map(|v| *v as f32).collect(),
                );
                let x: Vec<f32> = xs.iter().map(|v| *v as f32).collect();
                let mut y = vec![0.0f32; a.n];
                median(
                    || {
                        y.iter_mut().for_each(|v| *v = 0.0);
                        sprs::prod::mul_acc_mat_vec_csr(c32.view(), &x[..], black_box(&mut y[..]))
                    },
                    reps,
                )
            };
            let mut l = launch(prog, &a, &xs);
            let j1 = time_jit(prog, &mut l, 1, reps);
            let j2 = time_jit(prog, &mut l, 2, reps);
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            println!(
                "| {name} | {ty} | {nnz} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                ms(hand),
                ms(sp),
                ms(j1),
                ms(j2),
                2.0 * nnz as f64 / j1.as_secs_f64() / 1e9,
                bytes as f64 / j1.as_secs_f64() / 1e9,
                hand.as_secs_f64() / j1.as_secs_f64(),
                j1.as_secs_f64() / j2.as_secs_f64()
            );
        }
    }
}

/// Figure 5: LIL with the Σ of row starts as a naive loop in the kernel vs the
/// host prefix sum (and CSR's closed form), by rows (10 nonzeros per row).
fn figure5(reps: usize, rows: &[usize]) {
    println!("\n## Figure 5: Σ naive loop vs precomputed vs closed form (1 thread, ms)\n");
    println!("| rows | LIL naive Σ | LIL host prefix (kernel + prefix) | CSR closed form | naive / closed |");
    println!("|---|---|---|---|---|");
    let naive = lowered(&example("lil_spmv"), "lil_naive", true);
    let lil = lowered(&example("lil_spmv"), "lil_spmv", false);
    let csr = lowered(&example("csr_unpacked_spmv"), "csr_unpacked_spmv", false);
    for &n in rows {
        let a = build(n, n, |_, _| 10, |_, _, g| g.below(n));
        let xs = vec![1.0; n];
        let tn = time_jit(&naive, &mut launch(&naive, &a, &xs), 1, reps.min(3));
        let prefix = median(|| drop(black_box(host_prefix(&a))), reps);
        let tl = time_jit(&lil, &mut launch(&lil, &a, &xs), 1, reps) + prefix;
        let tc = time_jit(&csr, &mut launch(&csr, &a, &xs), 1, reps);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "| {n} | {:.3} | {:.3} | {:.3} | {:.0}× |",
            ms(tn),
            ms(tl),
            ms(tc),
            tn.as_secs_f64() / tc.as_secs_f64()
        );
    }
}

/// Figures 6 and 7: packed vs unpacked CSR, CSR vs LIL (+ host prefix), f32.
fn figures6_7(scale: usize, reps: usize) {
    println!("\n## Figures 6 and 7 (f32, ms, 1 thread / 2 threads)\n");
    println!("| matrix | CSR unpacked | CSR packed | LIL (kernel) | LIL host prefix |");
    println!("|---|---|---|---|---|");
    let progs = ["csr_unpacked_spmv", "csr_packed_spmv", "lil_spmv"].map(|e| lowered(&example(e), e, false));
    for (name, a) in matrices(scale).into_iter().take(2) {
        let xs: Vec<f64> = (0..a.m).map(|k| (k % 7) as f64 * 0.25).collect();
        let mut cells = Vec::new();
        for p in &progs {
            let mut l = launch(p, &a, &xs);
            let (t1, t2) = (time_jit(p, &mut l, 1, reps), time_jit(p, &mut l, 2, reps));
            cells.push(format!("{:.2} / {:.2}", t1.as_secs_f64() * 1e3, t2.as_secs_f64() * 1e3));
        }
        let prefix = median(|| drop(black_box(host_prefix(&a))), reps);
        println!("| {name} | {} | {} | {} | {:.2} |", cells[0], cells[1], cells[2], prefix.as_secs_f64() * 1e3);
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let (scale, reps) = if quick { (10, 3) } else { (1, 9) };
    println!("threads available: {}\n", heddle_runtime::cpu::default_threads());
    spmv_table(scale, reps);
    figure5(reps, if quick { &[1000, 2000] } else { &[1000, 2000, 4000, 8000] });
    figures6_7(scale, reps);
}

//! SDDMM over CSR and MTTKRP over a 3-D CSF tensor (the MLIR sparse compiler
//! paper's tables, issue 7): heddle's CPU backend on 1 and 2 threads and its
//! OpenCL backend (POCL on this CPU) against hand-written Rust loops and, when
//! python3 has numpy and scipy, vectorised numpy / scipy formulations, all in
//! one run on the same generated files. Not a timed test: it prints tables
//! (see docs/performance.md for the command and the figures).
//!
//! ```text
//! cargo bench -p heddle --bench sddmm_mttkrp            # add '-- quick' for a small run
//! HEDDLE_BENCH_CASES=mttkrp cargo bench -p heddle --bench sddmm_mttkrp   # one case (sddmm32, sddmm128, mttkrp)
//! ```
//!
//! The inputs are written once by `scripts/sddmm_mttkrp_data.py` (python3,
//! standard library, fixed seeds) under `target/sparse-bench/` and kept out of
//! git. The kernels are `examples/sparse/sddmm_csr.hdl` and
//! `examples/sparse/mttkrp_csf.hdl`, read into their encodings by the same code
//! as `heddle run --matrix` (native 64-bit positions and coordinates); the
//! hand-written loops run over those very arrays.
//!
//! Every variant's result is checked against a float64 reference computed from
//! the same (float32) inputs before it is timed: each entry must satisfy
//! `|got - ref| <= 1e-5 * sum |terms|`, the sum of the absolute values of the
//! products that make up the entry. Sequential float32 summation of n terms
//! is within about n * 2^-24 of that in the worst case, so 1e-5 covers
//! SDDMM's k <= 128 terms outright; for MTTKRP's thousands of terms per entry
//! it relies on rounding errors not all going one way (the worst seen is
//! 2.1e-7 * sum |terms|), while one missing or extra term of a typical size
//! still fails. A failure stops the bench; the table prints
//! each variant's worst `|got - ref| / sum |terms|`.
//!
//! Times are medians of `HEDDLE_BENCH_REPS` (default 7) runs of the kernel
//! alone, after the checked run. The Rust-side variants (hand-written loops,
//! heddle CPU, heddle OpenCL) are timed in interleaved rounds, one run of each
//! per round, so that load from other processes on a shared machine falls on
//! all of them alike; numpy / scipy run in their own process just before.
//! heddle's inputs are laid out and the work split computed once, as
//! `heddle search-formats --reps` and benches/cpu_spmv.rs do; a kernel that
//! adds into its result (MTTKRP's `scatterAdd`) has it zeroed inside the timed
//! call, and the hand-written MTTKRP loops zero theirs inside it too. OpenCL
//! times are POCL's profiling events of the kernel (buffers are uploaded
//! before each launch, not timed).

use heddle_ir::loops::LoopProgram;
use heddle_runtime::cpu::{compile_cached, execute, plan};
use heddle_runtime::interp::Env;
use heddle_runtime::io::{Loaded, bind_inputs, read_input};
use heddle_runtime::launch::{Launch, prepare};
use heddle_runtime::value::Value;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the generator unless `dir` already holds its files.
fn generate(dir: &Path, files: &[&str], args: &[String]) {
    if files.iter().all(|f| dir.join(f).exists()) {
        return;
    }
    let script = root().join("scripts/sddmm_mttkrp_data.py");
    eprintln!("generating {} (python3 {} {})", dir.display(), script.display(), args.join(" "));
    let status = Command::new("python3").arg(&script).args(args).arg(dir).status().expect("python3 runs the generator");
    assert!(status.success(), "the generator failed");
}

/// Seconds `f` takes.
fn timed(f: impl FnOnce()) -> f64 {
    let s = Instant::now();
    f();
    s.elapsed().as_secs_f64()
}

fn median(t: &[f64]) -> f64 {
    let mut t = t.to_vec();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or_else(|_| "?".into(), |l| l.split_whitespace().next().unwrap_or("?").to_string())
}

/// A variant whose result has been checked: one call of `run` is one timed
/// run, returning its seconds (`None` for numpy / scipy, timed by python).
struct Variant<'a> {
    label: String,
    threads: &'static str,
    err: f64,
    run: Option<Box<dyn FnMut() -> f64 + 'a>>,
    times: Vec<f64>,
}

impl<'a> Variant<'a> {
    fn new(label: impl Into<String>, threads: &'static str, err: f64, run: impl FnMut() -> f64 + 'a) -> Variant<'a> {
        Variant { label: label.into(), threads, err, run: Some(Box::new(run)), times: Vec::new() }
    }
}

/// `reps` rounds, each running every variant once.
fn measure(variants: &mut [Variant], reps: usize) {
    for _ in 0..reps.max(1) {
        for v in variants.iter_mut() {
            if let Some(run) = &mut v.run {
                v.times.push(run());
            }
        }
    }
}

fn ints(l: &Loaded) -> Vec<i64> {
    match l.clone().into_values() {
        Loaded::Flat { items, .. } => items
            .iter()
            .map(|v| match v {
                Value::Int(x) => *x,
                v => panic!("not an integer: {v:?}"),
            })
            .collect(),
        _ => panic!("expected a flat buffer"),
    }
}

fn floats(l: &Loaded) -> Vec<f32> {
    match l.clone().into_values() {
        Loaded::Flat { items, .. } => items
            .iter()
            .map(|v| match v {
                Value::Float(x) => *x as f32,
                Value::Int(x) => *x as f32,
                v => panic!("not a number: {v:?}"),
            })
            .collect(),
        _ => panic!("expected a flat buffer"),
    }
}

/// The float64 reference and, per entry, the sum of the absolute values of its terms.
struct Reference {
    want: Vec<f64>,
    scale: Vec<f64>,
}

impl Reference {
    /// The largest `|got - ref| / sum |terms|` (0 where both are 0); panics past 1e-5.
    fn check(&self, label: &str, got: &[f32]) -> f64 {
        assert_eq!(got.len(), self.want.len(), "{label}: {} entries, the reference has {}", got.len(), self.want.len());
        let mut worst = 0.0f64;
        for (e, ((g, w), s)) in got.iter().zip(&self.want).zip(&self.scale).enumerate() {
            let err = (*g as f64 - w).abs();
            assert!(err <= 1e-5 * s, "{label}: entry {e} is {g}, the reference {w} (sum of |terms| {s})");
            if err > 0.0 {
                worst = worst.max(err / s);
            }
        }
        worst
    }
}

/// A kernel with its inputs, bound and laid out once.
struct Heddle {
    kernel: heddle_typeck::Kernel,
    env: Env,
    program: LoopProgram,
    /// The tensor's storage arrays by name (`S_pos1`, …) and the dense inputs.
    arrays: Vec<(String, Loaded)>,
}

impl Heddle {
    fn new(example: &str, tensor: (&str, &Path), dense: &[(&str, PathBuf)]) -> Heddle {
        let path = root().join(format!("examples/sparse/{example}.hdl"));
        let file = heddle::source::SourceFile::new(example, std::fs::read_to_string(&path).expect("read the example"));
        let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d)));
        let t = Instant::now();
        let (nats, mut inputs) =
            heddle_runtime::io::bind::tensor_inputs(&kernel, tensor.0, tensor.1).expect("read the tensor");
        eprintln!("read and packed {} in {:.2} s", tensor.1.display(), t.elapsed().as_secs_f64());
        for (name, p) in dense {
            inputs.push((name.to_string(), read_input(p).expect("read a dense input")));
        }
        let arrays = inputs.clone();
        let env = bind_inputs(&kernel, &nats, inputs).expect("bind the inputs");
        heddle_runtime::interp::check_obligations(&kernel, &env).expect("obligations");
        let program = heddle::cpu::lower(&kernel, example).unwrap_or_else(|d| panic!("{}", file.render(&[d])));
        Heddle { kernel, env, program, arrays }
    }

    fn array(&self, name: &str) -> &Loaded {
        &self.arrays.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no array {name}")).1
    }

    fn output(&self, program: &LoopProgram, launch: &Launch) -> Vec<f32> {
        let b = launch.output(program).expect("an output buffer");
        (0..b.len())
            .map(|r| match b.read(r, 0) {
                Value::Float(x) => x as f32,
                v => panic!("not a float: {v:?}"),
            })
            .collect()
    }

    /// The CPU backend on `threads` threads, checked.
    fn cpu(&self, threads: usize, reference: &Reference) -> Variant<'_> {
        let k = compile_cached(&self.program).expect("JIT");
        let mut launch = prepare(&self.program, &self.env).expect("prepare");
        let p = plan(&self.program, &k, &mut launch, threads);
        if threads > 1 {
            // One chunk means the launch could not be split (see runtime/src/cpu/split.rs).
            eprintln!("{}: {} chunks on {} threads", self.program.name, p.chunks.len(), p.threads);
        }
        execute(&self.program, &k, &mut launch, &p).expect("run");
        let label = format!("heddle CPU (Cranelift), {threads} thread{}", if threads == 1 { "" } else { "s" });
        let err = reference.check(&label, &self.output(&self.program, &launch));
        let run = move || timed(|| execute(&self.program, &k, &mut launch, &p).expect("run"));
        Variant::new(label, if threads == 1 { "1" } else { "2" }, err, run)
    }

    /// The OpenCL backend on the first device (POCL's CPU device here), checked.
    fn opencl(&self, name: &str, reference: &Reference) -> Option<Variant<'_>> {
        let cl = match heddle_runtime::opencl::OpenCl::new(None) {
            Ok(cl) => cl,
            Err(d) => {
                eprintln!("no OpenCL: {}", d.message);
                return None;
            }
        };
        let compiled = heddle::opencl::compile(&self.kernel, name).expect("OpenCL C");
        let mut launch = prepare(&compiled.program, &self.env).expect("prepare");
        cl.run(&compiled.program, &compiled.kernel, &mut launch, 1).expect("OpenCL run");
        let d = cl.device().clone();
        eprintln!("OpenCL device: {} ({}{})", d.name, d.platform, if d.gpu { ", a GPU" } else { "" });
        let label = format!("heddle OpenCL ({})", if d.gpu { "GPU" } else { "CPU device" });
        let err = reference.check(&label, &self.output(&compiled.program, &launch));
        let run = move || {
            let t = cl.run(&compiled.program, &compiled.kernel, &mut launch, 1).expect("OpenCL run");
            t.kernel_seconds[0]
        };
        Some(Variant::new(label, if d.gpu { "GPU" } else { "2 (POCL)" }, err, run))
    }
}

/// A hand-written loop writing into its own result, checked.
fn hand<'a>(
    label: &str,
    threads: &'static str,
    reference: &Reference,
    len: usize,
    zero: bool,
    f: impl Fn(&mut [f32]) + 'a,
) -> Variant<'a> {
    let mut out = vec![if zero { 0.0 } else { f32::NAN }; len];
    f(&mut out);
    let err = reference.check(label, &out);
    let run = move || {
        timed(|| {
            if zero {
                out.fill(0.0);
            }
            f(black_box(&mut out))
        })
    };
    Variant::new(label, threads, err, run)
}

/// Runs the numpy / scipy side (median of `reps` runs each); its variants, checked.
fn python(kernel: &str, dir: &Path, reps: usize, reference: &Reference) -> Vec<Variant<'static>> {
    let out = dir.join("python-results");
    let o = Command::new("python3")
        .arg(root().join("benches/sddmm_mttkrp_compare.py"))
        .args([kernel, &dir.display().to_string(), &reps.to_string(), &out.display().to_string()])
        .output();
    let report: serde_json::Value = match o {
        Ok(o) if o.status.success() => serde_json::from_slice(&o.stdout).expect("the comparison's JSON"),
        Ok(o) => {
            eprintln!("numpy/scipy comparison left out: {}", String::from_utf8_lossy(&o.stderr).trim());
            return Vec::new();
        }
        Err(e) => {
            eprintln!("numpy/scipy comparison left out: no python3 ({e})");
            return Vec::new();
        }
    };
    eprintln!("numpy {}, scipy {}", report["numpy"], report["scipy"]);
    let mut rows = Vec::new();
    for v in report["variants"].as_array().expect("variants") {
        let label = v["name"].as_str().expect("name").to_string();
        let got = floats(&read_input(Path::new(v["result"].as_str().expect("result"))).expect("read the result"));
        let err = reference.check(&label, &got);
        let seconds = v["seconds"].as_f64().expect("seconds");
        rows.push(Variant { label, threads: "1", err, run: None, times: vec![seconds] });
    }
    rows
}

fn table(title: &str, rows: &[Variant], flops: f64, load: (String, String)) {
    let t: Vec<f64> = rows.iter().map(|r| median(&r.times)).collect();
    // The peer: the fastest single-thread variant that is not heddle.
    let peer = (0..rows.len())
        .filter(|&i| rows[i].threads == "1" && !rows[i].label.starts_with("heddle"))
        .min_by(|&a, &b| t[a].total_cmp(&t[b]))
        .expect("a peer");
    println!("\n### {title}\n");
    println!(
        "Load average (1 min) {} before, {} after. Peer: {} ({:.3} ms).",
        load.0,
        load.1,
        rows[peer].label,
        t[peer] * 1e3
    );
    println!("Ratio = time / the peer's time in this run (> 1: slower than the peer).\n");
    println!("| variant | threads | ms | GFLOP/s | ratio to peer | max err / Σ abs(terms) |");
    println!("|---|---|---|---|---|---|");
    for (r, s) in rows.iter().zip(&t) {
        println!(
            "| {} | {} | {:.3} | {:.2} | {:.2} | {:.1e} |",
            r.label,
            r.threads,
            s * 1e3,
            flops / s / 1e9,
            s / t[peer],
            r.err
        );
    }
}

// ---------------------------------------------------------------- SDDMM

struct CsrArrays {
    pos: Vec<i64>,
    crd: Vec<i64>,
    vals: Vec<f32>,
    u: Vec<f32>,
    v: Vec<f32>,
    k: usize,
}

/// The loop TACO or MLIR's sparsifier emits without vectorisation: one
/// sequential dot product per stored entry.
fn sddmm_plain(a: &CsrArrays, rows: std::ops::Range<usize>, out: &mut [f32]) {
    let k = a.k;
    let base = a.pos[rows.start] as usize;
    for i in rows {
        let u = &a.u[i * k..(i + 1) * k];
        for p in a.pos[i] as usize..a.pos[i + 1] as usize {
            let j = a.crd[p] as usize;
            let v = &a.v[j * k..(j + 1) * k];
            let mut acc = 0.0f32;
            for (x, y) in u.iter().zip(v) {
                acc += x * y;
            }
            out[p - base] = a.vals[p] * acc;
        }
    }
}

/// The same with the dot product in 8 independent lanes (what a vectoriser
/// allowed to reassociate emits; LLVM turns the lanes into SIMD registers).
fn sddmm_lanes(a: &CsrArrays, rows: std::ops::Range<usize>, out: &mut [f32]) {
    let k = a.k;
    let base = a.pos[rows.start] as usize;
    for i in rows {
        let u = &a.u[i * k..(i + 1) * k];
        for p in a.pos[i] as usize..a.pos[i + 1] as usize {
            let j = a.crd[p] as usize;
            let v = &a.v[j * k..(j + 1) * k];
            let (uc, ur) = u.as_chunks::<8>();
            let (vc, vr) = v.as_chunks::<8>();
            let mut lanes = [0.0f32; 8];
            for (x, y) in uc.iter().zip(vc) {
                for l in 0..8 {
                    lanes[l] += x[l] * y[l];
                }
            }
            let mut acc =
                ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
            for (x, y) in ur.iter().zip(vr) {
                acc += x * y;
            }
            out[p - base] = a.vals[p] * acc;
        }
    }
}

/// Rows split in two at the middle nonzero, one scoped thread each.
fn sddmm_2t(a: &CsrArrays, out: &mut [f32], f: fn(&CsrArrays, std::ops::Range<usize>, &mut [f32])) {
    let n = a.pos.len() - 1;
    let mid = a.pos.partition_point(|&p| p < a.pos[n] / 2).min(n);
    let (lo, hi) = out.split_at_mut(a.pos[mid] as usize);
    std::thread::scope(|s| {
        s.spawn(|| f(a, 0..mid, lo));
        f(a, mid..n, hi);
    });
}

fn sddmm_case(n: usize, nnz: usize, k: usize, reps: usize) {
    let dir = root().join(format!("target/sparse-bench/sddmm_{n}_{nnz}_k{k}"));
    generate(&dir, &["S.mtx", "U.npy", "V.npy"], &["sddmm".into(), n.to_string(), nnz.to_string(), k.to_string()]);
    let h = Heddle::new("sddmm_csr", ("S", &dir.join("S.mtx")), &[("U", dir.join("U.npy")), ("V", dir.join("V.npy"))]);
    let a = CsrArrays {
        pos: ints(h.array("S_pos1")),
        crd: ints(h.array("S_crd1")),
        vals: floats(h.array("S_values")),
        u: floats(h.array("U")),
        v: floats(h.array("V")),
        k,
    };
    assert_eq!(a.u.len(), n * k);
    let stored = a.vals.len();
    let mut r = Reference { want: vec![0.0; stored], scale: vec![0.0; stored] };
    for i in 0..n {
        for p in a.pos[i] as usize..a.pos[i + 1] as usize {
            let j = a.crd[p] as usize;
            for t in 0..k {
                let term = a.vals[p] as f64 * a.u[i * k + t] as f64 * a.v[j * k + t] as f64;
                r.want[p] += term;
                r.scale[p] += term.abs();
            }
        }
    }
    let before = load_average();
    let mut rows = python("sddmm", &dir, reps, &r);
    let mut rust = vec![
        hand("hand-written Rust, sequential dot (TACO-style)", "1", &r, stored, false, |o| sddmm_plain(&a, 0..n, o)),
        hand("hand-written Rust, 8-lane dot", "1", &r, stored, false, |o| sddmm_lanes(&a, 0..n, o)),
        hand("hand-written Rust, 8-lane dot", "2", &r, stored, false, |o| sddmm_2t(&a, o, sddmm_lanes)),
        h.cpu(1, &r),
        h.cpu(2, &r),
    ];
    rust.extend(h.opencl("sddmm_csr", &r));
    measure(&mut rust, reps);
    rows.splice(0..0, rust);
    let title = format!("SDDMM, S {n} × {n} with {stored} nonzeros (CSR), U and V {n} × {k} (float32)");
    table(&title, &rows, 2.0 * (k as f64) * stored as f64, (before, load_average()));
}

// ---------------------------------------------------------------- MTTKRP

struct CsfArrays {
    crd0: Vec<i64>,
    pos1: Vec<i64>,
    crd1: Vec<i64>,
    pos2: Vec<i64>,
    crd2: Vec<i64>,
    vals: Vec<f32>,
    c: Vec<f32>,
    d: Vec<f32>,
    j: usize,
}

/// TACO's / MLIR's CSF MTTKRP: the column loop j innermost (dense,
/// element-wise, so LLVM vectorises it), a row of J partial sums per fibre.
/// Writes rows `crd0[slices]` of `out`, whose first row is `row0`.
fn mttkrp_taco(b: &CsfArrays, slices: std::ops::Range<usize>, row0: usize, out: &mut [f32]) {
    let nj = b.j;
    let mut t = vec![0.0f32; nj];
    for p0 in slices {
        let i = b.crd0[p0] as usize - row0;
        let a = &mut out[i * nj..(i + 1) * nj];
        for p1 in b.pos1[p0] as usize..b.pos1[p0 + 1] as usize {
            t.fill(0.0);
            for p2 in b.pos2[p1] as usize..b.pos2[p1 + 1] as usize {
                let l = b.crd2[p2] as usize;
                let v = b.vals[p2];
                for (x, y) in t.iter_mut().zip(&b.d[l * nj..(l + 1) * nj]) {
                    *x += v * y;
                }
            }
            let k = b.crd1[p1] as usize;
            for ((x, y), z) in a.iter_mut().zip(&t).zip(&b.c[k * nj..(k + 1) * nj]) {
                *x += y * z;
            }
        }
    }
}

/// The j-outermost order (`generate(J, …)` outside the sums, as `mttkrp_csf.hdl`
/// was first written): for each slice, for each column j, walk the whole slice.
fn mttkrp_j_outer(b: &CsfArrays, slices: std::ops::Range<usize>, row0: usize, out: &mut [f32]) {
    let nj = b.j;
    for p0 in slices {
        let i = b.crd0[p0] as usize - row0;
        for j in 0..nj {
            let mut acc = 0.0f32;
            for p1 in b.pos1[p0] as usize..b.pos1[p0 + 1] as usize {
                let mut acc1 = 0.0f32;
                for p2 in b.pos2[p1] as usize..b.pos2[p1 + 1] as usize {
                    acc1 += b.vals[p2] * b.d[b.crd2[p2] as usize * nj + j];
                }
                acc += acc1 * b.c[b.crd1[p1] as usize * nj + j];
            }
            out[i * nj + j] += acc;
        }
    }
}

/// Slices split in two at the middle nonzero; the halves write disjoint rows.
fn mttkrp_2t(b: &CsfArrays, out: &mut [f32], f: fn(&CsfArrays, std::ops::Range<usize>, usize, &mut [f32])) {
    let ns = b.crd0.len();
    let nnz = b.vals.len() as i64;
    let mid = (0..ns).find(|&p| b.pos2[b.pos1[p] as usize] >= nnz / 2).unwrap_or(ns);
    let row = if mid < ns { b.crd0[mid] as usize } else { out.len() / b.j };
    let (lo, hi) = out.split_at_mut(row * b.j);
    std::thread::scope(|s| {
        s.spawn(|| f(b, 0..mid, 0, lo));
        f(b, mid..ns, row, hi);
    });
}

fn mttkrp_case(dims: [usize; 3], nnz: usize, nj: usize, reps: usize) {
    let [ni, nk, nl] = dims;
    let dir = root().join(format!("target/sparse-bench/mttkrp_{ni}x{nk}x{nl}_{nnz}_j{nj}"));
    let args: Vec<String> =
        ["mttkrp".to_string()].into_iter().chain([ni, nk, nl, nnz, nj].map(|x| x.to_string())).collect();
    generate(&dir, &["B.tns", "C.npy", "D.npy"], &args);
    let h = Heddle::new("mttkrp_csf", ("B", &dir.join("B.tns")), &[("C", dir.join("C.npy")), ("D", dir.join("D.npy"))]);
    let b = CsfArrays {
        crd0: ints(h.array("B_crd0")),
        pos1: ints(h.array("B_pos1")),
        crd1: ints(h.array("B_crd1")),
        pos2: ints(h.array("B_pos2")),
        crd2: ints(h.array("B_crd2")),
        vals: floats(h.array("B_values")),
        c: floats(h.array("C")),
        d: floats(h.array("D")),
        j: nj,
    };
    assert_eq!(ints(h.array("B_pos0")), vec![0, b.crd0.len() as i64]);
    assert_eq!((b.c.len(), b.d.len()), (nk * nj, nl * nj));
    let mut r = Reference { want: vec![0.0; ni * nj], scale: vec![0.0; ni * nj] };
    for (p0, &i) in b.crd0.iter().enumerate() {
        for p1 in b.pos1[p0] as usize..b.pos1[p0 + 1] as usize {
            let k = b.crd1[p1] as usize;
            for p2 in b.pos2[p1] as usize..b.pos2[p1 + 1] as usize {
                let l = b.crd2[p2] as usize;
                for j in 0..nj {
                    let term = b.vals[p2] as f64 * b.c[k * nj + j] as f64 * b.d[l * nj + j] as f64;
                    r.want[i as usize * nj + j] += term;
                    r.scale[i as usize * nj + j] += term.abs();
                }
            }
        }
    }
    let fibres = b.crd1.len();
    let before = load_average();
    let mut rows = python("mttkrp", &dir, reps, &r);
    let (ns, len, b) = (b.crd0.len(), ni * nj, &b);
    let mut rust = vec![
        hand("hand-written Rust CSF, j innermost (TACO-style)", "1", &r, len, true, move |o| {
            mttkrp_taco(b, 0..ns, 0, o)
        }),
        hand("hand-written Rust CSF, j outermost", "1", &r, len, true, move |o| mttkrp_j_outer(b, 0..ns, 0, o)),
        hand("hand-written Rust CSF, j innermost (TACO-style)", "2", &r, len, true, move |o| {
            mttkrp_2t(b, o, mttkrp_taco)
        }),
        hand("hand-written Rust CSF, j outermost", "2", &r, len, true, move |o| mttkrp_2t(b, o, mttkrp_j_outer)),
        h.cpu(1, &r),
        h.cpu(2, &r),
    ];
    rust.extend(h.opencl("mttkrp_csf", &r));
    measure(&mut rust, reps);
    rows.splice(0..0, rust);
    let title = format!(
        "MTTKRP, B {ni} × {nk} × {nl} with {} nonzeros in {fibres} fibres and {} slices (CSF), J = {nj} (float32)",
        b.vals.len(),
        b.crd0.len()
    );
    table(&title, &rows, 2.0 * (nj as f64) * (b.vals.len() + fibres) as f64, (before, load_average()));
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let reps = env_usize("HEDDLE_BENCH_REPS", if quick { 3 } else { 7 });
    println!("threads available: {}; median of {reps} runs per variant", heddle_runtime::cpu::default_threads());
    // HEDDLE_BENCH_CASES=sddmm32,sddmm128,mttkrp picks cases (default: all).
    let cases = std::env::var("HEDDLE_BENCH_CASES").unwrap_or_default();
    let on = |c: &str| cases.is_empty() || cases.split(',').any(|x| x.trim() == c);
    let scale = if quick { 8 } else { 1 };
    for k in [32, 128] {
        if on(&format!("sddmm{k}")) {
            sddmm_case(8192 / scale, 655_360 / scale / scale, k, reps);
        }
    }
    if on("mttkrp") {
        let side = 1000 / scale;
        mttkrp_case([side, side, side], 5_000_000 / scale / scale, 32, reps);
    }
}

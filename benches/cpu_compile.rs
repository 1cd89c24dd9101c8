//! End-to-end compile time of every example on the CPU backend (parse →
//! type check → lower with Σ simplification → Cranelift JIT), and Matrix
//! Market read + pack into CSR on a generated 5M-nonzero file.
//!
//! `cargo bench -p heddle --bench cpu_compile`

use std::io::Write;
use std::time::{Duration, Instant};

fn median(mut f: impl FnMut() -> Duration, reps: usize) -> Duration {
    let mut t: Vec<Duration> = (0..reps).map(|_| f()).collect();
    t.sort();
    t[reps / 2]
}

fn compile_times() {
    println!("## Compile time per example (median of 5, ms)\n");
    println!("| example | parse + check | lower | JIT | total |");
    println!("|---|---|---|---|---|");
    let dir = format!("{}/examples", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hdl"))
        .collect();
    files.sort();
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut stages = [Duration::ZERO; 3];
        let mut ok = true;
        let total = median(
            || {
                let t0 = Instant::now();
                let file = heddle::source::SourceFile::new(&name, &text);
                let (_, kernel) = heddle::check_source(&file).unwrap();
                let t1 = Instant::now();
                let Ok(prog) = heddle::cpu::lower(&kernel, &name) else {
                    ok = false;
                    return Duration::ZERO;
                };
                let t2 = Instant::now();
                let k = heddle_codegen_cpu::compile(&prog).unwrap();
                std::hint::black_box(&k);
                let t3 = Instant::now();
                stages = [t1 - t0, t2 - t1, t3 - t2];
                t3 - t0
            },
            5,
        );
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        if ok {
            println!(
                "| {name} | {:.2} | {:.2} | {:.2} | {:.2} |",
                ms(stages[0]),
                ms(stages[1]),
                ms(stages[2]),
                ms(total)
            );
        } else {
            println!("| {name} | (lowering does not support it yet) | | | |");
        }
    }
}

fn mtx_read() {
    let nnz = 5_000_000usize;
    let n = 500_000usize;
    let path = std::env::temp_dir().join(format!("heddle_bench_{}.mtx", std::process::id()));
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        writeln!(w, "%%MatrixMarket matrix coordinate real general\n{n} {n} {nnz}").unwrap();
        let mut s = 0x2545f4914f6cdd1du64;
        for _ in 0..nnz {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let (r, c) = (s % n as u64 + 1, (s >> 20) % n as u64 + 1);
            writeln!(w, "{r} {c} {:.6e}", (s >> 40) as f64 / 1e6).unwrap();
        }
    }
    let bytes = std::fs::metadata(&path).unwrap().len();
    let t = median(
        || {
            let s = Instant::now();
            let (coo, _) = heddle_runtime::sparse::mtx::read_mtx(&path).unwrap();
            let csr = heddle_runtime::sparse::csr::coo_to_csr_i32(&coo).unwrap();
            std::hint::black_box(&csr);
            s.elapsed()
        },
        3,
    );
    let _ = std::fs::remove_file(&path);
    println!("\n## Matrix Market read + pack into CSR (5M nonzeros, {:.0} MB file, median of 3)\n", bytes as f64 / 1e6);
    println!(
        "{:.3} s, {:.1} M nonzeros/s, {:.0} MB/s",
        t.as_secs_f64(),
        nnz as f64 / t.as_secs_f64() / 1e6,
        bytes as f64 / t.as_secs_f64() / 1e6
    );
}

fn main() {
    compile_times();
    mtx_read();
}

//! Property test of stored results (issue 11): random A and B (random
//! shapes, densities and row-major input encodings), `A + B`, `A ∘ B` and
//! `A * B` (SpMSpM) stored in a random encoding, on the interpreter, the CPU
//! backend and OpenCL, each equal — entry by entry, explicit zeros included —
//! to the dense computation written here. The cases run in process (one
//! compile per kernel text) so that they stay cheap; under `CI=true` the
//! seed is fixed.

use crate::common;

use heddle::source::SourceFile;
use heddle_runtime::sparse::SparseTensor;
use heddle_runtime::value::Value;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use std::collections::BTreeMap;

type Entries = BTreeMap<(u64, u64), f64>;

/// Row-major encodings an operand may have (its rows are indexed by `A@i`).
const INPUTS: &[&str] = &[
    "map = (i, j) -> (i : dense, j : compressed)",
    "map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16",
    "map = (i, j) -> (i : dense, j : loose_compressed)",
    "map = (i, j) -> (i : batch, j : compressed), crdWidth = 8",
];

/// Encodings the result may be stored in.
const OUTPUTS: &[&str] = &[
    "map = (i, j) -> (i : dense, j : compressed)",
    "map = (i, j) -> (i : compressed, j : compressed)",
    "map = (i, j) -> (i : compressed, j : compressed), posWidth = 8, crdWidth = 8",
    "map = (i, j) -> (i : compressed(nonunique), j : singleton)",
    "map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)), crdWidth = 16",
    "map = (i, j) -> (i : dense, j : loose_compressed)",
    "map = (i, j) -> (i : compressed, j : loose_compressed), posWidth = 16",
    "map = (i, j) -> (i : dense, j : compressed(nonunique))",
];

#[derive(Clone, Copy, Debug)]
enum Op {
    Add,
    Mul,
    Product,
}

fn kernel(op: Op, a: &str, b: &str, out: &str) -> String {
    let body = match op {
        Op::Add => {
            "(generate(A_dim0, fun(i => union(0, 0, A@i, B@i) :>> map(fun(e => (e.1, e.2 + e.3))))) : tensor<?x{A_dim1}xf32, #OUT>)"
        }
        Op::Mul => {
            "(generate(A_dim0, fun(i => intersect(A@i, B@i) :>> map(fun(e => (e.1, e.2 * e.3))))) : tensor<?x{A_dim1}xf32, #OUT>)"
        }
        Op::Product => {
            "(A :>> map(fun(row => row :>> map(fun(a => B@a.1 :>> map(fun(b => (b.1, a.2 * b.2))))) :>> join :>> compressAdd(B_dim1))) : tensor<?x{B_dim1}xf32, #OUT>)"
        }
    };
    format!(
        "#EA = #sparse_tensor.encoding<{{ {a} }}>\n#EB = #sparse_tensor.encoding<{{ {b} }}>\n#OUT = #sparse_tensor.encoding<{{ {out} }}>\n\
         fun(A: tensor<?x?xf32, #EA> => fun(B: tensor<?x?xf32, #EB> =>\n  {body}))\n"
    )
}

fn mtx(rows: usize, cols: usize, e: &Entries) -> String {
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{rows} {cols} {}\n", e.len());
    for ((i, j), v) in e {
        s.push_str(&format!("{} {} {v}\n", i + 1, j + 1));
    }
    s
}

fn expected(op: Op, a: &Entries, b: &Entries) -> Entries {
    match op {
        Op::Add => {
            let mut out = a.clone();
            for (c, v) in b {
                *out.entry(*c).or_insert(0.0) += v;
            }
            out
        }
        Op::Mul => a.iter().filter_map(|(c, v)| b.get(c).map(|w| (*c, v * w))).collect(),
        Op::Product => {
            let mut out = Entries::new();
            for (&(i, k), va) in a {
                for (&(_, j), vb) in b.range((k, 0)..(k + 1, 0)) {
                    *out.entry((i, j)).or_insert(0.0) += va * vb;
                }
            }
            out
        }
    }
}

fn entries_of(t: &SparseTensor) -> Entries {
    let coo = t.to_coo();
    let mut out = Entries::new();
    for k in 0..coo.len() {
        let c = coo.entry(k);
        assert!(out.insert((c[0], c[1]), coo.values.f64(k)).is_none(), "({}, {}) stored twice", c[0], c[1]);
    }
    out
}

/// Runs the case on every backend; each result's entries.
fn run_everywhere(
    src: &str,
    files: &[(&str, std::path::PathBuf)],
) -> Vec<(&'static str, Result<SparseTensor, String>)> {
    let file = SourceFile::new("case.hdl", src);
    let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{src}: {d:?}"));
    let mut nats = Vec::new();
    let mut inputs = Vec::new();
    for (name, path) in files {
        let (d, bufs) = heddle_runtime::io::bind::tensor_inputs(&kernel, name, path).unwrap();
        nats.extend(d);
        inputs.extend(bufs);
    }
    let env = heddle_runtime::io::bind_inputs(&kernel, &nats, inputs).unwrap();
    let tensor = |v: Result<Value, heddle_ir::Diagnostic>| match v {
        Ok(Value::Tensor(t)) => Ok((*t).clone()),
        Ok(other) => Err(format!("not a tensor: {other}")),
        Err(d) => Err(d.message),
    };
    let mut out = vec![("interp", tensor(heddle_runtime::interp::run_kernel(&kernel, &env)))];
    let program = heddle::cpu::lower(&kernel, "case").unwrap_or_else(|d| panic!("{src}: {}", d.message));
    out.push(("cpu", tensor(heddle::cpu::run(&kernel, &program, &env, 2))));
    if let Some(cl) = common::opencl_platform() {
        let compiled = heddle::opencl::compile(&kernel, "case").unwrap();
        out.push(("opencl", tensor(heddle::opencl::run(cl, &kernel, &compiled, &env, 1).map(|(v, _)| v))));
    }
    out
}

/// MLIR's canonical storage: a stored node of a compressed level has an
/// entry below it, so every segment under it is non-empty (DCSR keeps no empty rows).
fn no_empty_stored_nodes(t: &SparseTensor) -> Result<(), String> {
    use heddle_ir::encoding::LevelFormat;
    let levels = &t.encoding.levels;
    for l in 1..levels.len() {
        if !matches!(levels[l - 1].format, LevelFormat::Compressed | LevelFormat::LooseCompressed) {
            continue;
        }
        let Some(pos) = &t.positions[l] else { continue };
        let pos = pos.to_u64();
        let segments: Vec<(u64, u64)> = match levels[l].format {
            LevelFormat::LooseCompressed => pos.chunks(2).map(|c| (c[0], c[1])).collect(),
            _ => pos.windows(2).map(|w| (w[0], w[1])).collect(),
        };
        if let Some(q) = segments.iter().position(|(lo, hi)| lo >= hi) {
            return Err(format!("stored node {q} of level {} has nothing below it: {:?}", l - 1, t.positions));
        }
    }
    Ok(())
}

fn matrix(rows: usize, cols: usize, percent: u32, cells: &[(u8, i8)]) -> Entries {
    let mut e = Entries::new();
    for i in 0..rows {
        for j in 0..cols {
            let (roll, value) = cells[(i * cols + j) % cells.len()];
            if u32::from(roll) % 100 < percent {
                // Non-zero multiples of 1/4: sums and products stay exact in f32.
                let v = if value == 0 { 1 } else { value };
                e.insert((i as u64, j as u64), f64::from(v) / 4.0);
            }
        }
    }
    e
}

fn config() -> ProptestConfig {
    let mut c = ProptestConfig::with_cases(20);
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        c.cases = 12;
        c.rng_seed = RngSeed::Fixed(0x005e_ed11);
    }
    c
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn stored_results_in_random_encodings_equal_dense_computation(
        (m, k, n) in (0usize..6, 1usize..7, 1usize..6),
        (pa, pb) in (0u32..100, 0u32..100),
        cells_a in prop::collection::vec((any::<u8>(), -8i8..9), 48),
        cells_b in prop::collection::vec((any::<u8>(), -8i8..9), 48),
        op in prop_oneof![Just(Op::Add), Just(Op::Mul), Just(Op::Product)],
        (ea, eb, eo) in (0..INPUTS.len(), 0..INPUTS.len(), 0..OUTPUTS.len()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let a = matrix(m, k, pa, &cells_a);
        // B is m x k for the element-wise operations, k x n for the product.
        let (br, bc) = match op { Op::Product => (k, n), _ => (m, k) };
        let b = matrix(br, bc, pb, &cells_b);
        let fa = common::write(dir.path(), "a.mtx", &mtx(m, k, &a));
        let fb = common::write(dir.path(), "b.mtx", &mtx(br, bc, &b));
        let src = kernel(op, INPUTS[ea], INPUTS[eb], OUTPUTS[eo]);
        let want = expected(op, &a, &b);
        let dims = vec![m as u64, if matches!(op, Op::Product) { n as u64 } else { k as u64 }];
        let mut reference: Option<SparseTensor> = None;
        for (backend, got) in run_everywhere(&src, &[("A", fa), ("B", fb)]) {
            let t = got.unwrap_or_else(|e| panic!("{backend}: {e}\n{src}"));
            prop_assert_eq!(&t.dim_sizes, &dims, "{} {}", backend, src);
            prop_assert!(no_empty_stored_nodes(&t).is_ok(), "{} {:?}\n{}", backend, no_empty_stored_nodes(&t), src);
            let got = entries_of(&t);
            prop_assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{} {}", backend, src);
            for (c, v) in &got {
                prop_assert!((v - want[c]).abs() <= 1e-6 * want[c].abs().max(1.0), "{} at {:?}: {} vs {}\n{}", backend, c, v, want[c], src);
            }
            // The same buffers on every backend.
            match &reference {
                None => reference = Some(t),
                Some(r) => prop_assert_eq!(&t, r, "{} {}", backend, src),
            }
        }
    }
}

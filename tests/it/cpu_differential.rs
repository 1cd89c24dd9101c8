//! `--backend cpu` against the reference interpreter: every example in
//! `examples/`, on generated matrices of every awkward size (no rows, one
//! row, odd counts, more rows than one thread's share, empty rows, one very
//! long row), single- and multi-threaded. Integers must agree exactly,
//! floats to a relative 1e-5.

use crate::common;

use heddle::source::SourceFile;
use heddle_runtime::cpu::Parallelism;
use heddle_runtime::interp::Env;
use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_runtime::value::Value;
use heddle_typeck::{Kernel, KernelParam};
use serde_json::json;

/// A sparse matrix as rows of (column, value).
#[derive(Clone, Debug)]
struct Sparse {
    rows: Vec<Vec<(usize, f64)>>,
    cols: usize,
}

/// A small deterministic generator (xorshift), so a failure is reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
    fn value(&mut self) -> f64 {
        (self.below(2001) as f64 - 1000.0) / 256.0
    }
}

/// `n` rows over `cols` columns, row `r` with `len(r)` entries at random columns.
fn sparse(n: usize, cols: usize, seed: u64, len: impl Fn(usize, &mut Rng) -> usize) -> Sparse {
    let mut rng = Rng(seed);
    let rows = (0..n)
        .map(|r| {
            let k = len(r, &mut rng);
            let mut row: Vec<(usize, f64)> = (0..k).map(|_| (rng.below(cols), rng.value())).collect();
            row.sort_by_key(|e| e.0);
            row
        })
        .collect();
    Sparse { rows, cols }
}

fn cases() -> Vec<(&'static str, Sparse)> {
    vec![
        ("no rows", sparse(0, 3, 1, |_, _| 0)),
        ("one row", sparse(1, 1, 2, |_, _| 1)),
        ("one empty row", sparse(1, 4, 3, |_, _| 0)),
        ("odd, with empty rows", sparse(7, 5, 4, |r, g| if r % 3 == 0 { 0 } else { 1 + g.below(5) })),
        ("more rows than a thread's share", sparse(2001, 50, 5, |_, g| g.below(12))),
        ("one very long row among empty ones", sparse(9, 4000, 6, |r, _| if r == 4 { 20_000 } else { 0 })),
        ("power-law rows", sparse(301, 300, 7, |r, g| if r % 50 == 0 { 200 + g.below(100) } else { g.below(3) })),
    ]
}

/// The inputs an example's parameters get, by name.
fn inputs(kernel: &Kernel, a: &Sparse) -> Vec<(String, Loaded)> {
    let xs: Vec<f64> = (0..a.cols).map(|k| ((k % 17) as f64 - 8.0) / 4.0).collect();
    let mut offsets = vec![0usize];
    for r in &a.rows {
        offsets.push(offsets.last().unwrap() + r.len());
    }
    let flat = || a.rows.iter().flatten();
    let mut out = Vec::new();
    for p in &kernel.params {
        let KernelParam::Value { name, ty, .. } = p else { continue };
        let v = match name.as_str() {
            "offset" | "offsets" => json!(offsets),
            "row_length" => json!(a.rows.iter().map(Vec::len).collect::<Vec<_>>()),
            "col_indices" => json!(flat().map(|e| e.0).collect::<Vec<_>>()),
            "values" if ty.to_string().contains("(int, float)") => {
                json!(flat().map(|(c, v)| json!([c, v])).collect::<Vec<_>>())
            }
            "values" => json!(flat().map(|e| e.1).collect::<Vec<_>>()),
            "xs" => json!(xs),
            "matrix" => {
                let dense: Vec<Vec<f64>> = a
                    .rows
                    .iter()
                    .map(|row| {
                        let mut d = vec![0.0; a.cols];
                        row.iter().for_each(|(c, v)| d[*c] += v);
                        d
                    })
                    .collect();
                json!(dense)
            }
            other => panic!("no generator for the parameter `{other}`: teach tests/it/cpu_differential.rs about it"),
        };
        out.push((name.to_string(), Loaded::Json(v)));
    }
    out
}

/// Naturals that input lengths do not determine (tunables of the parallel
/// examples): the smallest values every size allows.
fn free_nats(kernel: &Kernel) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for p in &kernel.params {
        if let KernelParam::Nat(n) = p
            && !matches!(n.as_str(), "n" | "m")
        {
            out.push((n.to_string(), 1));
        }
    }
    out
}

fn agree(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x == y || (x - y).abs() <= 1e-5 * x.abs().max(y.abs()),
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys.iter()).all(|(x, y)| agree(x, y))
        }
        (Value::Tuple(xs), Value::Tuple(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys.iter()).all(|(x, y)| agree(x, y))
        }
        _ => a == b,
    }
}

fn load(path: &std::path::Path) -> (SourceFile, Kernel) {
    let file = SourceFile::read(path.to_str().unwrap()).unwrap();
    let (_, kernel) = heddle::check_source(&file).unwrap();
    (file, kernel)
}

fn bind(kernel: &Kernel, a: &Sparse) -> Env {
    bind_inputs(kernel, &free_nats(kernel), inputs(kernel, a)).unwrap_or_else(|e| panic!("{e}"))
}

/// The paper's listings, which every backend must run.
const LISTINGS: [&str; 6] =
    ["dense_mv", "lil_spmv", "csr_unpacked_spmv", "csr_packed_spmv", "csr_refined_spmv", "csr_row_sums"];

#[test]
fn every_example_agrees_with_the_interpreter() {
    let examples = common::hdl_files("examples");
    assert!(examples.len() >= 6, "the paper's listings are missing from examples/");
    for path in examples {
        let name = common::stem(&path);
        let (file, kernel) = load(&path);
        let program = match heddle::cpu::lower(&kernel, &name) {
            Ok(p) => p,
            // A pattern lowering does not handle yet is lowering's business;
            // the paper's listings must lower.
            Err(d) if !LISTINGS.contains(&name.as_str()) && d.message.contains("cannot be compiled yet") => {
                eprintln!("skipping {name}: {}", d.message);
                continue;
            }
            Err(d) => panic!("{name}: {}", file.render(&[d])),
        };
        for (case, a) in cases() {
            let env = bind(&kernel, &a);
            let want = match heddle_runtime::interp::run_kernel(&kernel, &env) {
                Ok(v) => v,
                // A run-time error (Listing 7's `split(n)` of no rows): the CPU stops with the same one.
                Err(d) => {
                    for threads in 1..=4 {
                        match heddle::cpu::run(&kernel, &program, &env, Parallelism::always(threads)) {
                            Err(e) => assert_eq!(e.message, d.message, "{name}, {case}, {threads} threads"),
                            Ok(v) => panic!(
                                "{name}, {case}, {threads} threads: cpu {v}, but the interpreter stops: {}",
                                file.render(std::slice::from_ref(&d))
                            ),
                        }
                    }
                    continue;
                }
            };
            // Every launch split, however small, so that 2–4 threads really run.
            for threads in 1..=4 {
                let got = heddle::cpu::run(&kernel, &program, &env, Parallelism::always(threads))
                    .unwrap_or_else(|d| panic!("{name}, {case}, {threads} threads: {}", file.render(&[d])));
                assert!(agree(&got, &want), "{name}, {case}, {threads} threads: cpu {got} != interp {want}");
            }
        }
    }
}

#[test]
fn a_bad_column_fails_the_same_check_on_every_thread_count() {
    let path = common::root().join("examples/csr_unpacked_spmv.hdl");
    let (file, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "csr_unpacked_spmv").unwrap();
    let mut a = sparse(500, 10, 9, |_, g| 1 + g.below(4));
    a.rows[333][0].0 = 10; // one past the last column
    let env = bind(&kernel, &a);
    let interp = heddle_runtime::interp::run_kernel(&kernel, &env).unwrap_err();
    for threads in 1..=4 {
        let d = heddle::cpu::run(&kernel, &program, &env, Parallelism::always(threads)).unwrap_err();
        let text = file.render(&[d]);
        assert!(text.contains("xs"), "{threads} threads: {text}");
        assert!(!interp.message.is_empty());
    }
}

#[test]
fn work_balanced_split_gives_a_long_row_its_own_chunk() {
    // Row 0 holds almost all nonzeros: a split by rows would give one thread
    // everything; a split by work puts the cut right after row 0.
    let path = common::root().join("examples/csr_packed_spmv.hdl");
    let (_, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "csr_packed_spmv").unwrap();
    let a = sparse(1000, 100, 10, |r, _| if r == 0 { 100_000 } else { 1 });
    let env = bind(&kernel, &a);
    let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
    let compiled = heddle_runtime::cpu::compile_cached(&program).unwrap();
    let plan = heddle_runtime::cpu::plan(&program, &compiled, &mut launch, 2);
    assert_eq!(plan.chunks.first(), Some(&(0, 1)), "{plan:?}");
    assert_eq!(plan.chunks.last().map(|c| c.1), Some(1000));
    let by_rows = heddle_runtime::cpu::plan(&program, &compiled, &mut launch, 1);
    assert_eq!(by_rows, heddle_runtime::cpu::Plan::whole());
}

#[test]
fn repeated_runs_reuse_the_compiled_kernel() {
    let path = common::root().join("examples/csr_row_sums.hdl");
    let (_, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "csr_row_sums").unwrap();
    let first = heddle_runtime::cpu::compile_cached(&program).unwrap();
    let again = heddle_runtime::cpu::compile_cached(&program.clone()).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again));
}

#[test]
fn the_split_weighs_empty_rows_as_well_as_nonzeros() {
    // Ten dense rows, then 20 000 empty ones: by nonzeros alone the first
    // chunks would take only dense rows and the last one every empty row.
    // The cost model (ROW_COST per row + ITEM_COST per nonzero) balances
    // rows and nonzeros together.
    use heddle_runtime::cpu::{ITEM_COST, ROW_COST, plan_with};
    let path = common::root().join("examples/csr_unpacked_spmv.hdl");
    let (_, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "csr_unpacked_spmv").unwrap();
    let a = sparse(20_010, 1000, 11, |r, _| if r < 10 { 1000 } else { 0 });
    let env = bind(&kernel, &a);
    let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
    let compiled = heddle_runtime::cpu::compile_cached(&program).unwrap();
    let plan = plan_with(&program, &compiled, &mut launch, 2, 0);
    let cost = |(lo, hi): (i64, i64)| -> u64 {
        (lo..hi).map(|r| ROW_COST + ITEM_COST * a.rows[r as usize].len() as u64).sum()
    };
    let costs: Vec<u64> = plan.chunks.iter().map(|c| cost(*c)).collect();
    let total: u64 = costs.iter().sum();
    let fair = total / costs.len() as u64;
    assert!(plan.chunks.len() > 2, "{plan:?}");
    // Every chunk within one dense row (the unit the cut cannot split) of its share.
    for (c, k) in plan.chunks.iter().zip(&costs) {
        assert!(
            k.abs_diff(fair) <= ROW_COST + 1000 * ITEM_COST,
            "chunk {c:?} costs {k}, a fair share is {fair}: {plan:?}"
        );
    }
    assert_eq!(plan.chunks.first().map(|c| c.0), Some(0));
    assert_eq!(plan.chunks.last().map(|c| c.1), Some(20_010));
    assert!(plan.chunks.windows(2).all(|w| w[0].1 == w[1].0), "{plan:?}");
}

#[test]
fn small_launches_stay_on_one_thread() {
    let path = common::root().join("examples/csr_unpacked_spmv.hdl");
    let (_, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "csr_unpacked_spmv").unwrap();
    let small = sparse(100, 100, 12, |_, g| g.below(5));
    let env = bind(&kernel, &small);
    let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
    let compiled = heddle_runtime::cpu::compile_cached(&program).unwrap();
    assert_eq!(heddle_runtime::cpu::plan(&program, &compiled, &mut launch, 4), heddle_runtime::cpu::Plan::whole());
    let large = sparse(20_000, 100, 13, |_, _| 3);
    let env = bind(&kernel, &large);
    let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
    let plan = heddle_runtime::cpu::plan(&program, &compiled, &mut launch, 4);
    assert!(plan.threads == 4 && plan.chunks.len() >= 4, "{plan:?}");
}

#[test]
fn every_thread_gets_the_same_number_of_chunks() {
    // 5 000 rows of 4 nonzeros cost 45 000: five chunks of the minimum cost,
    // which would leave one of two threads running a third chunk alone.
    let path = common::root().join("examples/csr_unpacked_spmv.hdl");
    let (_, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "csr_unpacked_spmv").unwrap();
    let a = sparse(5000, 5000, 14, |_, _| 4);
    let env = bind(&kernel, &a);
    let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
    let compiled = heddle_runtime::cpu::compile_cached(&program).unwrap();
    for threads in [2, 3, 4] {
        let plan = heddle_runtime::cpu::plan(&program, &compiled, &mut launch, threads);
        assert_eq!(plan.threads, threads, "{plan:?}");
        assert_eq!(plan.chunks.len() % threads, 0, "{threads} threads: {plan:?}");
        assert_eq!((plan.chunks[0].0, plan.chunks.last().unwrap().1), (0, 5000), "{plan:?}");
    }
}

#[test]
fn chunks_per_thread_caps_the_split() {
    // 20 000 rows of 10 nonzeros cost 300 000: 37 chunks of the minimum
    // cost, more than 8 per thread on 2 threads; `--chunks-per-thread N`
    // caps them at N per thread, still a whole number per thread, covering
    // every row in order.
    let path = common::root().join("examples/csr_unpacked_spmv.hdl");
    let (_, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "csr_unpacked_spmv").unwrap();
    let a = sparse(20_000, 20_000, 15, |_, _| 10);
    let env = bind(&kernel, &a);
    let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
    let compiled = heddle_runtime::cpu::compile_cached(&program).unwrap();
    for (threads, per_thread, want) in [(2, 1, 2), (2, 3, 6), (2, 8, 16), (3, 1, 3), (4, 2, 8)] {
        let plan = heddle_runtime::cpu::plan_tuned(&program, &compiled, &mut launch, threads, 0, per_thread);
        assert_eq!(
            (plan.threads, plan.chunks.len()),
            (threads, want),
            "{threads} threads, {per_thread} per thread: {plan:?}"
        );
        assert_eq!((plan.chunks[0].0, plan.chunks.last().unwrap().1), (0, 20_000), "{plan:?}");
        assert!(plan.chunks.windows(2).all(|w| w[0].1 == w[1].0), "{plan:?}");
    }
}

#[test]
fn valid_tensor_coordinates_run_without_their_checks() {
    let path = common::root().join("examples/sparse/spmv_csr.hdl");
    let (file, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "spmv_csr").unwrap();
    assert_eq!(program.ranges.len(), 1, "{program}");
    let (nats, mut inputs) =
        heddle_runtime::io::bind::tensor_inputs(&kernel, "A", &common::root().join("tests/data/sparse/m4x8.mtx"))
            .unwrap();
    inputs.push(("xs".into(), Loaded::Json(json!([1, 2, 3, 4, 5, 6, 7, 8]))));
    let env = bind_inputs(&kernel, &nats, inputs).unwrap();
    let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
    let ready = heddle_runtime::cpu::Ready::new(&program, &mut launch, 2).unwrap();
    assert!(ready.ranges_trusted());
    drop(ready);
    // One coordinate past A_dim1 = 8: the checked kernel runs and reports it.
    let crd = program.args.iter().position(|a| a.name.as_str() == "A_crd1").unwrap();
    let heddle_runtime::launch::Slot::Buffer(b) = &mut launch.slots[crd] else { panic!("A_crd1 is a buffer") };
    b.write(0, 0, &Value::Int(8));
    let mut ready = heddle_runtime::cpu::Ready::new(&program, &mut launch, 2).unwrap();
    assert!(!ready.ranges_trusted());
    let d = ready.run().unwrap_err();
    assert!(file.render(&[d]).contains("an index into `xs`"));
}

#[test]
fn launches_whose_inputs_exceed_the_cache_bound_run_short_rows_without_straight_copies() {
    // Straight copies of a short row's body gain in cache and lose when the
    // rows gather from memory (`cpu::STRAIGHT_COPIES_MAX_BYTES`): a small
    // launch keeps them, a large one gets the loop of pairs, and both add
    // each row in order (bit for bit a sequential f32 sum), on 1 and 3 threads.
    use heddle_runtime::cpu::{Ready, STRAIGHT_COPIES_MAX_BYTES};
    let path = common::root().join("examples/csr_unpacked_spmv.hdl");
    let (_, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "csr_unpacked_spmv").unwrap();
    let default = heddle_codegen_cpu::Options::default().copies_below;
    assert!(default > 0);
    for (rows, want_copies) in [(2_000, default), (400_000, 0)] {
        let a = sparse(rows, 5000, 16, |_, g| g.below(8));
        let env = bind(&kernel, &a);
        let xs: Vec<f64> = (0..a.cols).map(|k| ((k % 17) as f64 - 8.0) / 4.0).collect();
        let want: Vec<u32> = a
            .rows
            .iter()
            .map(|row| row.iter().fold(0f32, |s, &(c, v)| s + v as f32 * xs[c] as f32).to_bits())
            .collect();
        for threads in [1, 3] {
            let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
            let input_bytes: usize = launch
                .slots
                .iter()
                .zip(&program.args)
                .map(|(s, arg)| match (s, &arg.kind) {
                    (heddle_runtime::launch::Slot::Buffer(b), heddle_ir::loops::ArgKind::Input { .. }) => b.byte_len(),
                    _ => 0,
                })
                .sum();
            assert_eq!(input_bytes > STRAIGHT_COPIES_MAX_BYTES, want_copies == 0, "{rows} rows: {input_bytes} bytes");
            let mut ready = Ready::new(&program, &mut launch, Parallelism::always(threads)).unwrap();
            assert_eq!(ready.options().copies_below, want_copies, "{rows} rows, {threads} threads");
            ready.run().unwrap();
            drop(ready);
            let got = heddle_runtime::launch::output_value(&program, &launch, &kernel.body.ty, &env).unwrap();
            let Value::Array(got) = got else { panic!("an array: {got:?}") };
            assert_eq!(got.len(), rows);
            for (r, (g, w)) in got.iter().zip(&want).enumerate() {
                let Value::Float(g) = g else { panic!("a float: {g:?}") };
                assert_eq!(
                    (*g as f32).to_bits(),
                    *w,
                    "row {r} of {rows} ({} entries), {threads} threads",
                    a.rows[r].len()
                );
            }
        }
    }
}

/// `a` in SELL-8 (σ = 1) as `examples/sparse/spmv_sell8.hdl` takes it:
/// slices of 8 rows padded to their longest (padding: value 0 at column 0).
fn sell8_inputs(a: &Sparse) -> Vec<(String, Loaded)> {
    let slices = a.rows.len().div_ceil(8);
    let (mut soff, mut cols, mut vals) = (vec![0usize], Vec::new(), Vec::new());
    for s in 0..slices {
        let lane = |l: usize| a.rows.get(8 * s + l).map_or(&[][..], Vec::as_slice);
        let width = (0..8).map(|l| lane(l).len()).max().unwrap_or(0);
        let step = |k: usize, f: &dyn Fn(&(usize, f64)) -> serde_json::Value, pad: serde_json::Value| {
            (0..8).map(|l| lane(l).get(k).map_or(pad.clone(), f)).collect::<Vec<_>>()
        };
        cols.push((0..width).map(|k| step(k, &|e| json!(e.0), json!(0))).collect::<Vec<_>>());
        vals.push((0..width).map(|k| step(k, &|e| json!(e.1), json!(0.0))).collect::<Vec<_>>());
        soff.push(soff[s] + width);
    }
    let xs: Vec<f64> = (0..a.cols).map(|k| ((k % 17) as f64 - 8.0) / 4.0).collect();
    [("soff", json!(soff)), ("cols", json!(cols)), ("vals", json!(vals)), ("xs", json!(xs))]
        .into_iter()
        .map(|(n, v)| (n.to_string(), Loaded::Json(v)))
        .collect()
}

/// SELL-8 on 5 000 rows of 4 entries (the shape of the bench's
/// uniform_5k_d4): its work counts the 8 lanes of a step, 625 slices ×
/// ROW_COST + 2 500 steps × 8 lanes × ITEM_COST = 23 125 (without them 5 625,
/// an eighth of CSR's nonzeros), which lies between the awake and the parked
/// thresholds: at 2 threads the launch is split when the workers are awake
/// and is one call on the caller's thread when they are parked, and a loop
/// of such launches gives the interpreter's result whichever it runs.
#[test]
fn a_small_sell8_launch_splits_only_when_the_workers_are_awake() {
    use heddle_runtime::cpu::{
        AWAKE_THRESHOLD, Helpers, ITEM_COST, PARALLEL_THRESHOLD, ROW_COST, SplitWhen, Thresholds, plan_with,
    };
    let path = common::root().join("examples/sparse/spmv_sell8.hdl");
    let (_, kernel) = load(&path);
    let program = heddle::cpu::lower(&kernel, "spmv_sell8").unwrap();
    let a = sparse(5000, 5000, 17, |_, _| 4);
    let env = bind_inputs(&kernel, &[], sell8_inputs(&a)).unwrap_or_else(|e| panic!("{e}"));
    let mut launch = heddle_runtime::launch::prepare(&program, &env).unwrap();
    let compiled = heddle_runtime::cpu::compile_cached(&program).unwrap();
    let cost = 625 * ROW_COST + 2500 * 8 * ITEM_COST;
    assert!((AWAKE_THRESHOLD..PARALLEL_THRESHOLD).contains(&cost), "{cost}");
    // The estimate is exactly that: a uniform threshold at it splits, one above does not.
    assert_eq!(plan_with(&program, &compiled, &mut launch, 2, cost).when, SplitWhen::Always);
    assert_eq!(plan_with(&program, &compiled, &mut launch, 2, cost + 1), heddle_runtime::cpu::Plan::whole());

    let plan = heddle_runtime::cpu::plan(&program, &compiled, &mut launch, 2);
    assert_eq!((plan.threads, plan.when), (2, SplitWhen::HelpersAwake), "{plan:?}");
    assert!(plan.chunks.len() >= 2 && plan.chunks.len().is_multiple_of(2), "{plan:?}");
    assert_eq!(plan.now(|_| Helpers::Awake), (&plan.chunks[..], 2));
    assert_eq!(plan.now(|_| Helpers::Parked), (&heddle_runtime::cpu::Plan::whole().chunks[..], 1));
    // One thread, or a parked threshold at or below the cost: no question to ask.
    assert_eq!(heddle_runtime::cpu::plan(&program, &compiled, &mut launch, 1), heddle_runtime::cpu::Plan::whole());
    let eager = Thresholds { parked: cost, awake: AWAKE_THRESHOLD };
    let always = plan_with(&program, &compiled, &mut launch, 2, eager);
    assert_eq!(always.now(|_| panic!("an Always plan asks nothing")), (&always.chunks[..], 2));

    let want = heddle_runtime::interp::run_kernel(&kernel, &env).unwrap();
    let threads = Parallelism { threads: 2, threshold: Thresholds::default(), tuning: Default::default() };
    for _ in 0..50 {
        let got = heddle::cpu::run(&kernel, &program, &env, threads).unwrap();
        assert!(agree(&got, &want), "{got:?}");
    }
}

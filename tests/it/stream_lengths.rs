//! Streams whose lengths are used (issue 11): the results of `filter`,
//! `union`, `intersect` and `compressAdd` zipped, padded, split, indexed
//! through `concat` or concatenated into a result, which lowering stores
//! first with their count (`rewrite/src/lower/emit.rs`, `settle`) or counts
//! part by part. The compile-coverage kernels that do so run here on random
//! inputs — empty arrays, matrices without rows, empty rows and dense ones
//! included — on the interpreter, the CPU backend and OpenCL: every compiled
//! result equals the interpreter's (floats within a relative 1e-4), or both
//! stop with a run-time error. OpenCL may refuse only a file that says so
//! (`// refused on opencl: TEXT`, as in the corpus).
//!
//! The kernels over plain lists of rows (`Inputs::Lists`) store a stream whose
//! room no natural parameter bounds: the host computes the longest row before
//! the launch (`HostKind::Largest`). Their rows are drawn mixed, all empty, or
//! with one row far longer than the rest, so the bound is exercised where it
//! is 0 and where a single row sets it. The kernels over one list of rows
//! (`Inputs::Rows`) keep a row's products in local memory, whose room is that
//! same bound on OpenCL (`length_bound` in `rewrite/src/lower/stream.rs`).

use crate::common;

use common::Rng;
use heddle::source::SourceFile;
use heddle_runtime::interp::Env;
use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_typeck::Kernel;
use serde_json::{Value as J, json};
use std::path::Path;

/// What a kernel reads, so what to draw for it.
#[derive(Clone, Copy)]
enum Inputs {
    /// `xs: [float]_n`.
    Dense,
    /// Two CSR matrices `A` and `B` of one shape.
    SameShape,
    /// Two square CSR matrices `A` and `B` of one size (`A * B`).
    Square,
    /// Two lists of sorted (coordinate, value) rows, `v` and `w`, with their offsets `o` and `q`, over `m` columns.
    Lists,
    /// One list of (coordinate, value) rows, `values` with its `offset`, and `xs: [float]_m`.
    Rows,
}

/// How the rows of a random list are drawn.
#[derive(Clone, Copy, Debug)]
enum Rows {
    /// Each row empty, about a third full, or full.
    Mixed,
    /// Every row empty (a longest row of 0).
    AllEmpty,
    /// One row holding every column, the others at most one entry.
    OneLong,
}

/// The corpus kernels, with what they read.
const KERNELS: &[(&str, Inputs)] = &[
    ("filter_zip_mapped", Inputs::Dense),
    ("filter_pad_length", Inputs::Dense),
    ("filter_concat_index", Inputs::Dense),
    ("filter_concat_result", Inputs::Dense),
    ("filter_split_length", Inputs::Dense),
    ("filter_pad_result", Inputs::Dense),
    ("filter_zip_result", Inputs::Dense),
    ("filter_concat_self", Inputs::Dense),
    ("filter_concat_mapped_index", Inputs::Dense),
    ("filter_select_streams", Inputs::Dense),
    ("tensor_union_pad_rows", Inputs::SameShape),
    ("filter_reduce_first", Inputs::Dense),
    ("filter_join_rows", Inputs::Dense),
    ("filter_scatter_fails", Inputs::Dense),
    ("tensor_select_stream_in_union", Inputs::SameShape),
    ("tensor_coiter_zip_stream", Inputs::SameShape),
    ("tensor_coiter_temporary_zip", Inputs::SameShape),
    ("tensor_coiter_private_zip", Inputs::SameShape),
    ("tensor_intersect_zip_result", Inputs::SameShape),
    ("concat_stream_stored", Inputs::SameShape),
    ("concat_stream_reduce", Inputs::SameShape),
    ("tensor_compress_zip", Inputs::Square),
    ("stream_temporary_unbounded", Inputs::Lists),
    ("stream_temporary_unbounded_intersect", Inputs::Lists),
    ("stream_temporary_unbounded_filter", Inputs::Lists),
    ("sort_by_concat_stream", Inputs::Dense),
    ("concat_stream_pad_split", Inputs::Dense),
    // Local temporaries as long as a row, which only the data gives: OpenCL
    // gives them room for the longest row (`length_bound`), 0 where every row is empty.
    ("pd_map_local_row_reduce", Inputs::Rows),
    ("pd_nested_map_local_reduce", Inputs::Rows),
    ("pd_interleave_to_local_in_map_local", Inputs::Rows),
    ("pd_nested_map_local_interleave_to_local", Inputs::Rows),
];

/// A Matrix Market file of a random m x n matrix (about `percent`% stored).
fn mtx(rng: &mut Rng, m: u64, n: u64, percent: u64) -> String {
    let e = common::random_entries(rng, m, n, percent);
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{m} {n} {}\n", e.len());
    for ((i, j), v) in &e {
        s.push_str(&format!("{} {} {v}\n", i + 1, j + 1));
    }
    s
}

/// `n` rows of sorted, distinct coordinates below `m` with values, drawn as
/// `shape` says, and their offsets.
fn lists(rng: &mut Rng, n: u64, m: u64, shape: Rows) -> (J, J) {
    let long = rng.below(n.max(1));
    let (mut offsets, mut rows) = (vec![0u64], Vec::new());
    for r in 0..n {
        let percent = match shape {
            Rows::Mixed => [0, 30, 100][rng.below(3) as usize],
            Rows::AllEmpty => 0,
            Rows::OneLong if r == long => 100,
            Rows::OneLong => 0,
        };
        let mut row = Vec::new();
        for c in 0..m {
            if rng.below(100) < percent {
                row.push(json!([c, rng.value()]));
            }
        }
        if matches!(shape, Rows::OneLong) && r != long && rng.below(2) == 0 {
            row.push(json!([rng.below(m), rng.value()]));
        }
        offsets.push(offsets.last().copied().unwrap_or(0) + row.len() as u64);
        rows.push(J::Array(row));
    }
    // JSON input is bound by its records: rows that are all empty are no
    // records at all, `[]` (`[[], []]` would be read as two records).
    if offsets.last() == Some(&0) {
        rows.clear();
    }
    (json!(offsets), J::Array(rows))
}

/// Binds one random input of the kind `inputs` (case `case` of its kernel); a description of it for failures.
fn draw(kernel: &Kernel, inputs: Inputs, case: u64, rng: &mut Rng, dir: &Path) -> (Env, String) {
    let mut nats: Vec<(String, i64)> = Vec::new();
    let mut values: Vec<(String, Loaded)> = Vec::new();
    let mut said = String::new();
    let percent = |rng: &mut Rng| [0, 25, 60, 100][rng.below(4) as usize];
    let shape = match inputs {
        Inputs::SameShape => Some((rng.below(6), 1 + rng.below(8))),
        Inputs::Square => Some((rng.below(6), 0)).map(|(k, _)| (k, k)),
        _ => None,
    };
    if let Some((m, n)) = shape {
        for name in ["A", "B"] {
            let p = percent(rng);
            let text = mtx(rng, m, n, p);
            let path = common::write(dir, &format!("{name}.mtx"), &text);
            let (dims, buffers) =
                heddle_runtime::io::bind::tensor_inputs(kernel, name, &path).expect("a random matrix binds");
            nats.extend(dims);
            values.extend(buffers);
            said.push_str(&format!("{name} =\n{text}"));
        }
    }
    match inputs {
        Inputs::Dense => {
            let xs: Vec<f64> = (0..rng.below(10)).map(|_| rng.value()).collect();
            said = format!("xs = {xs:?}");
            values.push(("xs".into(), Loaded::Json(json!(xs))));
        }
        Inputs::Lists => {
            // Every pair of shapes in the first nine cases (the first three,
            // the Oclgrind pass's, give each shape to `v` once).
            let shapes = [Rows::OneLong, Rows::AllEmpty, Rows::Mixed];
            let (a, b) = (shapes[(case % 3) as usize], shapes[((case + case / 3) % 3) as usize]);
            let long = matches!(a, Rows::OneLong) || matches!(b, Rows::OneLong);
            let (n, m) = if long { (1 + rng.below(8), 8 + rng.below(33)) } else { (rng.below(5), 1 + rng.below(6)) };
            let ((o, v), (q, w)) = (lists(rng, n, m, a), lists(rng, n, m, b));
            said = format!("rows {a:?} and {b:?}: m = {m}, o = {o}, v = {v}, q = {q}, w = {w}");
            nats.push(("m".into(), m as i64));
            values.extend([("o", o), ("v", v), ("q", q), ("w", w)].map(|(k, j)| (k.to_string(), Loaded::Json(j))));
        }
        Inputs::Rows => {
            let shape = [Rows::OneLong, Rows::AllEmpty, Rows::Mixed][(case % 3) as usize];
            let (n, m) = if matches!(shape, Rows::OneLong) {
                (1 + rng.below(8), 8 + rng.below(33))
            } else {
                (rng.below(9), 1 + rng.below(6))
            };
            let (offset, rows) = lists(rng, n, m, shape);
            let xs: Vec<f64> = (0..m).map(|_| rng.value()).collect();
            said = format!("rows {shape:?}: offset = {offset}, values = {rows}, xs = {xs:?}");
            nats.push(("m".into(), m as i64));
            values.extend(
                [("offset", offset), ("values", rows), ("xs", json!(xs))]
                    .map(|(k, j)| (k.to_string(), Loaded::Json(j))),
            );
        }
        Inputs::SameShape | Inputs::Square => {}
    }
    let env = bind_inputs(kernel, &nats, values).unwrap_or_else(|e| panic!("random inputs do not bind: {e:?}\n{said}"));
    (env, said)
}

#[test]
fn used_stream_lengths_agree_with_the_interpreter_on_random_inputs() {
    let cases = common::cases(12);
    let dir = tempfile::tempdir().expect("a scratch directory");
    let mut problems = Vec::new();
    let mut compared = 0;
    for (k, (stem, inputs)) in KERNELS.iter().enumerate() {
        let path = common::root().join(format!("tests/compile_coverage/{stem}.hdl"));
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let opencl_refusal =
            src.lines().find_map(|l| l.trim().strip_prefix("// refused on opencl:")).map(|t| t.trim().to_string());
        let file = SourceFile::new(format!("{stem}.hdl"), src.clone());
        let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{stem}: {}", file.render(&d)));
        let cpu = heddle::cpu::lower(&kernel, stem)
            .unwrap_or_else(|d| panic!("{stem}: the CPU backend refuses it: {}", d.message));
        let cl = common::opencl_platform().map(|platform| (platform, heddle::opencl::compile(&kernel, stem)));
        if let Some((_, Err(d))) = &cl {
            let expected = opencl_refusal.as_ref().is_some_and(|want| d.message.contains(want.as_str()));
            assert!(expected, "{stem}: OpenCL refuses it: {}", d.message);
        }
        let mut rng = Rng(0x5eed_0000 + k as u64 * 7919);
        // The row shapes of the lists cycle over the cases: three at least (see `draw`).
        let cases = if matches!(inputs, Inputs::Lists | Inputs::Rows) { cases.max(3) } else { cases };
        for case in 0..cases {
            let (env, said) = draw(&kernel, *inputs, case, &mut rng, dir.path());
            let want = heddle_runtime::interp::run_kernel(&kernel, &env)
                .map(|v| heddle_runtime::io::write::to_json(&v, &kernel.body.ty));
            let mut got = vec![("cpu", heddle::cpu::run(&kernel, &cpu, &env, 2))];
            if let Some((platform, Ok(compiled))) = &cl {
                got.push(("opencl", heddle::opencl::run(platform, &kernel, compiled, &env, 1).map(|(v, _)| v)));
            }
            for (backend, r) in got {
                let r = r.map(|v| heddle_runtime::io::write::to_json(&v, &kernel.body.ty));
                let fine = match (&want, &r) {
                    (Ok(a), Ok(b)) => common::json_agree(a, b),
                    (Err(_), Err(d)) => !d.message.contains("internal error"),
                    _ => false,
                };
                compared += 1;
                if !fine {
                    let show = |r: &Result<J, heddle_ir::Diagnostic>| match r {
                        Ok(v) => v.to_string(),
                        Err(d) => format!("error: {}", d.message),
                    };
                    problems.push(format!(
                        "{stem} case {case} on {backend}: {} but the interpreter gives {}\ninputs: {said}",
                        show(&r),
                        show(&want)
                    ));
                }
            }
        }
    }
    eprintln!("{compared} compiled results compared with the interpreter's");
    assert!(compared >= KERNELS.len(), "nothing was compared");
    assert!(problems.is_empty(), "{} disagreement(s):\n\n{}", problems.len(), problems.join("\n\n"));
}

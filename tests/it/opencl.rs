//! The OpenCL backend on a real OpenCL implementation (POCL in CI): every
//! example and the parallel SpMV variants across tunable values equal the
//! reference interpreter; every generated kernel builds; no platform is an
//! error with exit status 1.
//!
//! Under CI (`CI=true`) a missing OpenCL platform fails these tests; on a
//! developer machine without a driver they print why they are skipped.

use crate::common;
#[path = "../../codegen-opencl/tests/samples/mod.rs"]
pub(crate) mod samples;

use heddle::source::SourceFile;
use heddle_runtime::interp::Env;
use heddle_runtime::io::{bind_inputs, read_input};
use heddle_runtime::opencl::OpenCl;
use heddle_runtime::value::Value;

/// One device for the whole test binary, so POCL builds each distinct kernel once.
fn platform() -> Option<&'static OpenCl> {
    common::opencl_platform()
}

fn kernel_of(example: &str) -> (SourceFile, heddle_typeck::Kernel) {
    let path = common::root().join("examples").join(format!("{example}.hdl"));
    let file = SourceFile::read(path.to_str().unwrap()).unwrap();
    let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{example}: {}", file.render(&d)));
    (file, kernel)
}

/// Binds `NAME=FILE` inputs from a data directory under examples/data.
fn bind(kernel: &heddle_typeck::Kernel, dir: &str, inputs: &[(&str, &str)], nats: &[(&str, i64)]) -> Env {
    let loaded = inputs
        .iter()
        .map(|(name, file)| {
            (name.to_string(), read_input(&common::root().join("examples/data").join(dir).join(file)).unwrap())
        })
        .collect();
    let nats: Vec<(String, i64)> = nats.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    bind_inputs(kernel, &nats, loaded).unwrap_or_else(|e| panic!("{dir}: {e}"))
}

fn floats(v: &Value) -> Vec<f64> {
    let mut items = Vec::new();
    v.flatten_into(&mut items);
    items
        .iter()
        .map(|x| match x {
            Value::Float(f) => *f,
            Value::Int(i) => *i as f64,
            other => panic!("not a number: {other}"),
        })
        .collect()
}

fn assert_close(got: &Value, want: &Value, what: &str) {
    let (g, w) = (floats(got), floats(want));
    assert_eq!(g.len(), w.len(), "{what}: lengths differ: {got} vs {want}");
    for (k, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= 1e-4 * a.abs().max(b.abs()).max(1.0),
            "{what}: element {k}: OpenCL {a}, interpreter {b}"
        );
    }
}

/// Each example with the inputs it runs on: (example, data dir, inputs, nats).
type Case = (&'static str, &'static str, &'static [(&'static str, &'static str)], &'static [(&'static str, i64)]);
const CSR: &[(&str, &str)] =
    &[("offset", "offset.json"), ("col_indices", "col_indices.json"), ("values", "values.json"), ("xs", "xs.json")];
const PACKED: &[(&str, &str)] = &[("offset", "offset.json"), ("values", "values_packed.json"), ("xs", "xs.json")];
const LIL: &[(&str, &str)] = &[
    ("row_length", "row_length.json"),
    ("col_indices", "col_indices.json"),
    ("values", "values.json"),
    ("xs", "xs.json"),
];
const EXAMPLES: &[Case] = &[
    ("dense_mv", "dense_mv", &[("matrix", "matrix.json"), ("xs", "xs.json")], &[]),
    ("csr_packed_spmv", "spmv8", PACKED, &[]),
    ("csr_refined_spmv", "spmv8", PACKED, &[]),
    ("csr_unpacked_spmv", "spmv8", CSR, &[]),
    ("csr_row_sums", "spmv8", &[("offset", "offset.json"), ("values", "values.json")], &[]),
    ("lil_spmv", "spmv8", LIL, &[]),
    ("csr_spmv_row_per_item", "spmv8", CSR, &[]),
    ("lil_spmv_parallel", "spmv8", LIL, &[]),
    ("csr_spmv_parallel", "spmv8", CSR, &[("R", 2), ("W", 4)]),
    // Listing 7 names its offsets `offsets`; NUM_SPLITS = 1 divides every row of spmv8.
    (
        "listing7",
        "spmv8",
        &[
            ("offsets", "offset.json"),
            ("col_indices", "col_indices.json"),
            ("values", "values.json"),
            ("xs", "xs.json"),
        ],
        &[("ROWS_PER_WKGP", 2), ("NUM_SPLITS", 1)],
    ),
];

#[test]
fn every_example_has_a_case() {
    for path in common::hdl_files("examples") {
        let stem = common::stem(&path);
        assert!(EXAMPLES.iter().any(|c| c.0 == stem), "examples/{stem}.hdl has no OpenCL differential case");
    }
}

#[test]
fn every_example_on_opencl_equals_the_interpreter() {
    let Some(cl) = platform() else { return };
    for (example, dir, inputs, nats) in EXAMPLES {
        let (file, kernel) = kernel_of(example);
        let env = bind(&kernel, dir, inputs, nats);
        let want = heddle_runtime::interp::run_kernel(&kernel, &env).unwrap();
        let compiled =
            heddle::opencl::compile(&kernel, example).unwrap_or_else(|d| panic!("{example}: {}", file.render(&[d])));
        let (got, _) = heddle::opencl::run(cl, &kernel, &compiled, &env, 1)
            .unwrap_or_else(|d| panic!("{example}: {}", file.render(&[d])));
        assert_close(&got, &want, example);
    }
}

/// A hand-written Listing-7-style loop program (kept as a fixed reference for
/// the code generator, independent of lowering) across rows per work-group R
/// and work-items per row W: one kernel build, sixteen launch shapes.
#[test]
fn listing7_variants_across_tunables_equal_the_interpreter() {
    let Some(cl) = platform() else { return };
    let (_, kernel) = kernel_of("csr_spmv_parallel");
    let prog = samples::listing7();
    let generated = heddle_codegen_opencl::compile(&prog).unwrap();
    for r in [1, 2, 4, 8] {
        for w in [1, 2, 4, 8] {
            let env = bind(&kernel, "spmv8", CSR, &[("R", r), ("W", w)]);
            let want = heddle_runtime::interp::run_kernel(&kernel, &env).unwrap();
            let mut launch = heddle_runtime::launch::prepare(&prog, &env).unwrap();
            let timing =
                cl.run(&prog, &generated, &mut launch, 1).unwrap_or_else(|d| panic!("R={r} W={w}: {}", d.message));
            assert_eq!(timing.sizes.local, Some(vec![w as usize, r as usize]), "R={r} W={w}");
            let got = heddle_runtime::launch::output_value(&prog, &launch, &kernel.body.ty, &env).unwrap();
            assert_close(&got, &want, &format!("R={r} W={w}"));
        }
    }
}

/// The Listing-7-style example as lowered from its source, across tunables
/// (one kernel build; R and W are kernel arguments).
#[test]
fn parallel_spmv_example_across_tunables() {
    let Some(cl) = platform() else { return };
    let (file, kernel) = kernel_of("csr_spmv_parallel");
    let compiled =
        heddle::opencl::compile(&kernel, "csr_spmv_parallel").unwrap_or_else(|d| panic!("{}", file.render(&[d])));
    for (r, w) in [(1, 1), (1, 8), (2, 4), (4, 2), (8, 1), (8, 8)] {
        let env = bind(&kernel, "spmv8", CSR, &[("R", r), ("W", w)]);
        let want = heddle_runtime::interp::run_kernel(&kernel, &env).unwrap();
        let (got, _) =
            heddle::opencl::run(cl, &kernel, &compiled, &env, 1).unwrap_or_else(|d| panic!("{}", file.render(&[d])));
        assert_close(&got, &want, &format!("R={r} W={w}"));
    }
}

#[test]
fn listing5_hand_written_equals_the_interpreter() {
    let Some(cl) = platform() else { return };
    let (_, kernel) = kernel_of("csr_packed_spmv");
    let env = bind(&kernel, "spmv8", PACKED, &[]);
    let prog = samples::listing5();
    let generated = heddle_codegen_opencl::compile(&prog).unwrap();
    let mut launch = heddle_runtime::launch::prepare(&prog, &env).unwrap();
    cl.run(&prog, &generated, &mut launch, 1).unwrap();
    let got = heddle_runtime::launch::output_value(&prog, &launch, &kernel.body.ty, &env).unwrap();
    assert_close(&got, &heddle_runtime::interp::run_kernel(&kernel, &env).unwrap(), "listing 5");
}

#[test]
fn failed_check_is_the_checks_diagnostic() {
    let Some(cl) = platform() else { return };
    let (_, kernel) = kernel_of("csr_packed_spmv");
    let env = bind(&kernel, "spmv8", PACKED, &[]);
    // Shrink m in the launch only: column 5 is now out of bounds for xs.
    let prog = samples::listing5();
    let generated = heddle_codegen_opencl::compile(&prog).unwrap();
    let mut launch = heddle_runtime::launch::prepare(&prog, &env).unwrap();
    launch.slots[1] = heddle_runtime::launch::Slot::Nat(2);
    let err = cl.run(&prog, &generated, &mut launch, 1).expect_err("the bounds check fails");
    assert_eq!(err.message, prog.checks[0].message);
}

#[test]
fn every_snapshot_kernel_builds() {
    let Some(cl) = platform() else { return };
    for prog in [samples::listing5(), samples::listing7(), samples::scalar_mix()] {
        let k = heddle_codegen_opencl::compile(&prog).unwrap();
        cl.build(&k).unwrap_or_else(|d| panic!("{}: {}\n{}", prog.name, d.message, k.source));
    }
}

#[test]
fn work_groups_larger_than_the_device_allows_are_an_error() {
    let Some(cl) = platform() else { return };
    let (_, kernel) = kernel_of("csr_spmv_parallel");
    let env = bind(&kernel, "spmv8", CSR, &[("R", 8), ("W", 1 << 20)]);
    let prog = samples::listing7();
    let generated = heddle_codegen_opencl::compile(&prog).unwrap();
    let mut launch = heddle_runtime::launch::prepare(&prog, &env).unwrap();
    let err = cl.run(&prog, &generated, &mut launch, 1).expect_err("too large");
    assert!(err.message.contains("exceed"), "{}", err.message);
}

/// A local buffer sized by the data (here a row's entries, room for the
/// longest row) that does not fit the device's local memory is a clear error
/// before the launch, exit status 1, not a driver abort (POCL asserts).
#[test]
fn local_buffers_beyond_the_device_local_memory_are_an_error() {
    if platform().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // One row of 200 000 (int, float) entries: 3.2 MB of local memory for its
    // work-group, beyond POCL's 1 MiB, Oclgrind's and any GPU's.
    let long = 200_000;
    let offset: Vec<usize> = std::iter::once(0).chain(std::iter::repeat_n(long, 8)).collect();
    let values: Vec<serde_json::Value> = (0..long).map(|k| serde_json::json!([k % 5, 1.0])).collect();
    let write = |name: &str, v: serde_json::Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, v.to_string()).unwrap();
        path.display().to_string()
    };
    let offset = write("offset.json", serde_json::json!(offset));
    let values = write("values.json", serde_json::json!(values));
    let xs = write("xs.json", serde_json::json!([1.0, 2.0, -1.0, 0.5, 4.0]));
    let (code, _, err) = common::heddle(&[
        "run",
        "tests/compile_coverage/pd_nested_map_local_reduce.hdl",
        "--backend",
        "opencl",
        "--input",
        &format!("offset={offset}"),
        "--input",
        &format!("values={values}"),
        "--input",
        &format!("xs={xs}"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("bytes of local memory per work-group"), "{err}");
    assert!(err.contains("3200000 for local buffers"), "{err}");
}

#[test]
fn run_backend_opencl_prints_the_result() {
    if platform().is_none() {
        return;
    }
    let d = "examples/data/spmv8";
    let (code, out, err) = common::heddle(&[
        "run",
        "examples/csr_spmv_row_per_item.hdl",
        "--backend",
        "opencl",
        "--input",
        &format!("offset={d}/offset.json"),
        "--input",
        &format!("col_indices={d}/col_indices.json"),
        "--input",
        &format!("values={d}/values.json"),
        "--input",
        &format!("xs={d}/xs.json"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "[6.5,0.0,-7.4375,0.375,-1.4375,0.125,0.0,4.0]");
}

/// A `generate` index is an `int`: past 2^31 elements OpenCL C's conversion
/// of the loop variable would wrap (this kernel then counted 10 negative
/// indices, exit 0). Each backend checks the loop's range once before it,
/// so the run stops with the same error on OpenCL as on the CPU, at once,
/// located at the `generate`.
#[test]
fn a_loop_past_two_to_the_31_stops_instead_of_wrapping_its_int_index() {
    if platform().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("negative_indices.hdl");
    std::fs::write(&file, "nFun(n =>\n  generate(n, fun(i => select(i < 0, 1, 0))) :>> reduce(+, 0))\n").unwrap();
    let file = file.to_str().unwrap();
    for backend in ["opencl", "cpu"] {
        let (code, out, err) = common::heddle(&["run", file, "--backend", backend, "--param", "n=2147483658"]);
        assert_eq!(code, 1, "{backend}: {out}{err}");
        assert!(err.contains("a loop index does not fit the integer type it is converted to"), "{backend}: {err}");
        // Located at the `generate` whose positions overflow, not at the file's start.
        assert!(err.contains("negative_indices.hdl:2:3"), "{backend}: {err}");
        assert!(err.contains("positions counted as `int` here"), "{backend}: {err}");
    }
    // Within range the check passes (a range of exactly 2^31 would take seconds here).
    let (code, out, err) = common::heddle(&["run", file, "--backend", "opencl", "--param", "n=1000"]);
    assert_eq!((code, out.trim()), (0, "0"), "{err}");
}

#[test]
fn tune_reports_every_variant_and_the_best() {
    if platform().is_none() {
        return;
    }
    let (code, out, err) = common::heddle(&[
        "tune",
        "examples/csr_spmv_parallel.hdl",
        "--csr",
        "offset,col_indices,values=examples/data/spmv8/matrix.mtx",
        "--param-range",
        "R=1..8",
        "--param-range",
        "W=1..4",
        "--reps",
        "2",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(code, 0, "{err}");
    let variants = v["cases"][0]["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 4 * 3, "R in 1,2,4,8 and W in 1,2,4");
    assert!(variants.iter().all(|x| x["seconds"].is_number()), "{out}");
    assert!(v["single_best"]["params"].is_array(), "{out}");
}

#[test]
fn no_platform_is_an_error_with_exit_status_1() {
    let empty = tempfile::tempdir().unwrap();
    let d = "examples/data/spmv8";
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_heddle"))
        .args(["run", "examples/csr_spmv_row_per_item.hdl", "--backend", "opencl"])
        .args(["--input", &format!("offset={d}/offset.json"), "--input", &format!("col_indices={d}/col_indices.json")])
        .args(["--input", &format!("values={d}/values.json"), "--input", &format!("xs={d}/xs.json")])
        .env("OCL_ICD_VENDORS", empty.path())
        .env_remove("OCL_ICD_FILENAMES")
        .current_dir(common::root())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no OpenCL platform"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// The generated OpenCL of the paper's Listing 5 as lowered from the source.
#[test]
fn compile_target_opencl_listing5() {
    let (code, out, err) = common::heddle(&["compile", "examples/csr_packed_spmv.hdl", "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
}

/// The generated OpenCL of the Listing-7-style kernel as lowered from its
/// source: work-groups over row groups, local ids over rows and over each
/// row's interleaved parts, the partial sums in local memory.
#[test]
fn compile_target_opencl_listing7() {
    let (code, out, err) = common::heddle(&["compile", "examples/csr_spmv_parallel.hdl", "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("__local") && out.contains("get_local_id(1)") && out.contains("get_group_id(0)"), "{out}");
    insta::assert_snapshot!(out);
}

/// The program's own `long` arithmetic wraps, as the interpreter's does: it
/// is computed in `ulong` (a `long` overflow is undefined in C, and POCL
/// folded `x + 1 > x` to true for `LONG_MAX`), while index arithmetic, the
/// same `long` type in the loop program, stays plain `long`: a kernel
/// without `i64` values has no `ulong` (`compile_coverage/long_overflow_wraps.hdl`
/// runs the edge values).
#[test]
fn compile_target_opencl_wraps_user_long_arithmetic_alone() {
    let dir = common::scratch_dir("long");
    let user = common::write(
        dir.path(),
        "user.hdl",
        "nFun(n => fun(ls: [i64]_n => ls :>> map(fun(x => (x + i64(1) > x, -x, x * x - x)))))",
    );
    let (code, out, err) = common::heddle(&["compile", user.to_str().unwrap(), "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(long)((ulong)") && out.contains("0UL - (ulong)"), "{out}");
    let (code, cpu, err) = common::heddle(&["compile", user.to_str().unwrap(), "--target", "loops"]);
    assert_eq!(code, 0, "{err}");
    assert!(!cpu.contains("u64"), "the CPU's lowering keeps i64 arithmetic plain (Cranelift wraps):\n{cpu}");
    let (code, out, err) = common::heddle(&["compile", "examples/csr_packed_spmv.hdl", "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("long") && !out.contains("ulong"), "{out}");
}

/// The generated OpenCL of a bfloat16 SpMV: `ushort` buffers, `float`
/// variables, each product and sum rounded by the bit-arithmetic helpers,
/// which are emitted once and only when used.
#[test]
fn compile_target_opencl_bf16_spmv() {
    let (code, out, err) = common::heddle(&["compile", "examples/sparse/spmv_csr_bf16.hdl", "--target", "opencl"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("static ushort heddle_to_bf16").count(), 1, "{out}");
    assert!(!out.contains("heddle_to_f16") && !out.contains("cl_khr_fp16"), "{out}");
    insta::assert_snapshot!(out);
}

/// `--csr M.mtx` binds the matrix to the kernel's CSR parameters by name
/// (the form docs/performance.md shows): unpacked `values` of a
/// position-dependent type are floats, not (column, value) pairs. When no
/// configuration runs at all, tuning fails with exit status 1.
#[test]
fn tune_binds_a_matrix_by_name_and_fails_when_nothing_ran() {
    if platform().is_none() {
        return;
    }
    let (code, out, err) = common::heddle(&[
        "tune",
        "examples/csr_spmv_parallel.hdl",
        "--csr",
        "examples/data/spmv8/matrix.mtx",
        "--param-range",
        "R=1..2",
        "--param-range",
        "W=1..2",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let variants = v["cases"][0]["variants"].as_array().unwrap();
    assert!(variants.iter().all(|x| x["seconds"].is_number()), "{out}");
    // R = 3 does not divide the 8 rows: every configuration fails.
    let (code, _, err) = common::heddle(&[
        "tune",
        "examples/csr_spmv_parallel.hdl",
        "--csr",
        "examples/data/spmv8/matrix.mtx",
        "--param-range",
        "R=3..3",
        "--param-range",
        "W=1..1",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no configuration ran"), "{err}");
}

/// Several files are variants of one kernel, tuned together: every
/// variant's configurations run on every matrix (a range applies only to the
/// variants with that natural), each matrix has its best, and the single best
/// names its variant. A variant that computes something else is flagged
/// wrong, not timed.
#[test]
fn tune_searches_kernel_variants_per_matrix() {
    if platform().is_none() {
        return;
    }
    let (code, out, err) = common::heddle(&[
        "tune",
        "examples/csr_spmv_row_per_item.hdl",
        "examples/csr_spmv_parallel.hdl",
        "--csr",
        "examples/data/spmv8/matrix.mtx",
        "--csr",
        "tests/data/sparse/m4x8.mtx",
        "--param-range",
        "R=1..2",
        "--param-range",
        "W=1..2",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(v["backend"], "opencl");
    let names: Vec<&str> = v["kernels"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["csr_spmv_row_per_item", "csr_spmv_parallel"]);
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.iter().map(|c| c["case"].as_str().unwrap()).collect::<Vec<_>>(), ["matrix", "m4x8"]);
    for case in cases {
        let variants = case["variants"].as_array().unwrap();
        // One configuration of the variant without tunables, four of the other.
        assert_eq!(variants.len(), 1 + 4, "{case:#}");
        assert_eq!(variants[0]["kernel"], "csr_spmv_row_per_item");
        assert_eq!(variants[0]["params"], serde_json::json!([]));
        assert!(
            variants[1..]
                .iter()
                .all(|x| x["kernel"] == "csr_spmv_parallel" && x["params"].as_array().unwrap().len() == 2),
            "{case:#}"
        );
        assert!(variants.iter().all(|x| x["seconds"].is_number()), "{case:#}");
        assert!(names.contains(&case["best"]["kernel"].as_str().unwrap()), "{case:#}");
    }
    assert!(names.contains(&v["single_best"]["kernel"].as_str().unwrap()), "{out}");
    assert!(v["single_best"]["geomean_slowdown"].as_f64().unwrap() >= 1.0, "{out}");

    // Row sums take the same CSR buffers but compute something else.
    let (code, out, err) = common::heddle(&[
        "tune",
        "examples/csr_spmv_row_per_item.hdl",
        "examples/csr_row_sums.hdl",
        "--csr",
        "examples/data/spmv8/matrix.mtx",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let variants = v["cases"][0]["variants"].as_array().unwrap();
    assert!(variants[0]["seconds"].is_number(), "{out}");
    assert!(variants[1]["error"].as_str().unwrap().contains("wrong result"), "{out}");
    assert_eq!(v["single_best"]["kernel"], "csr_spmv_row_per_item", "{out}");
}

#[test]
fn tune_refuses_an_unknown_tunable() {
    let (code, _, err) = common::heddle(&[
        "tune",
        "examples/csr_spmv_row_per_item.hdl",
        "--csr",
        "examples/data/spmv8/matrix.mtx",
        "--param-range",
        "R=1..4",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no kernel has a natural of this name"), "{err}");
}

/// What the Oclgrind pass (`scripts/oclgrind.sh`) must catch: these kernels
/// are wrong on purpose, and each launch must fail with Oclgrind's report.
/// Elsewhere (POCL runs them as if in lock-step) they are skipped.
fn oclgrind_only() -> Option<&'static OpenCl> {
    if !common::oclgrind() {
        eprintln!("SKIPPED: a deliberately wrong kernel, checked in the Oclgrind pass (scripts/oclgrind.sh)");
        return None;
    }
    platform()
}

/// The parallel SpMV as generated, with its barriers removed: the race the
/// example had before barriers were placed (every item reads the row's
/// partial sums while the others still write them).
#[test]
fn oclgrind_reports_the_race_of_the_parallel_spmv_without_barriers() {
    let Some(cl) = oclgrind_only() else { return };
    let (_, kernel) = kernel_of("csr_spmv_parallel");
    let mut compiled = heddle::opencl::compile(&kernel, "csr_spmv_parallel").unwrap();
    let barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
    assert!(compiled.kernel.source.contains(barrier), "{}", compiled.kernel.source);
    compiled.kernel.source = compiled.kernel.source.replace(barrier, "");
    let env = bind(&kernel, "spmv8", CSR, &[("R", 2), ("W", 4)]);
    let err = heddle::opencl::run(cl, &kernel, &compiled, &env, 1).expect_err("Oclgrind reports the race");
    // Oclgrind runs a group's items one after another up to a barrier, so the
    // first report is often the partial sums read before they were written.
    assert!(err.message.contains("data race") || err.message.contains("Uninitialized value"), "{}", err.message);
}

/// A hand-written kernel whose work-items all store their own index into the
/// same element (a write-write race in global memory), and one that stores a
/// `__local` value no item ever wrote.
#[test]
fn oclgrind_reports_a_global_race_and_an_uninitialised_value() {
    use heddle_ir::ScalarType::{F32, I64};
    use heddle_ir::loops::{Arg, ArgKind, Expr, LoopProgram, Schedule, Space, Stmt};
    let Some(cl) = oclgrind_only() else { return };
    let program = |name: &str, body| LoopProgram {
        name: name.into(),
        args: vec![
            Arg { name: "n".into(), kind: ArgKind::Nat },
            Arg { name: "out".into(), kind: ArgKind::Output { fields: vec![I64], len: heddle_ir::Nat::Lit(4) } },
        ],
        host: vec![],
        body,
        checks: vec![],
        parallel_work: None,
        counts: vec![],
        result: None,
        index_overflow_at: None,
        reassociable: vec![],
        ranges: vec![],
    };
    let racy = program(
        "racy",
        vec![Stmt::For {
            var: "i".into(),
            lo: Expr::index(0),
            hi: Expr::var("n"),
            schedule: Schedule::Global(0),
            body: vec![Stmt::Store { buf: "out".into(), index: Expr::index(0), field: 0, value: Expr::var("i") }],
        }],
    );
    let unwritten = program(
        "unwritten",
        vec![Stmt::For {
            var: "g".into(),
            lo: Expr::index(0),
            hi: Expr::var("n"),
            schedule: Schedule::Workgroup(0),
            body: vec![
                Stmt::Alloc { buf: "tmp".into(), fields: vec![F32], len: Expr::index(4), space: Space::Local },
                Stmt::Store {
                    buf: "out".into(),
                    index: Expr::bin(heddle_ir::loops::BinOp::Rem, Expr::var("g"), Expr::index(4)),
                    field: 0,
                    value: Expr::Cast(I64, Box::new(Expr::load("tmp", Expr::index(1), 0))),
                },
            ],
        }],
    );
    // Oclgrind words it "Uninitialized value written …" or "Controlflow depends on uninitialized value".
    for (prog, report) in [(racy, "data race"), (unwritten, "uninitialized value")] {
        let generated = heddle_codegen_opencl::compile(&prog).unwrap();
        let mut launch = heddle_runtime::launch::prepare(&prog, &Env::default().with_nat("n".into(), 64)).unwrap();
        let err = cl.run(&prog, &generated, &mut launch, 1).expect_err(&prog.name);
        assert!(err.message.to_lowercase().contains(report), "{}: {}", prog.name, err.message);
    }
}

/// CSR buffers for `row_lengths`, random columns below `m` and values that
/// are multiples of 1/4 (sums stay exact in f32 whatever the order), written
/// as JSON inputs for the parallel SpMV; returns the bound environment.
fn csr_inputs(
    kernel: &heddle_typeck::Kernel,
    dir: &std::path::Path,
    row_lengths: &[usize],
    m: usize,
    nats: &[(&str, i64)],
) -> Result<Env, String> {
    let mut rng = common::Rng(0x5eed_0013 ^ row_lengths.len() as u64);
    let mut offset = vec![0usize];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for &len in row_lengths {
        for _ in 0..len {
            cols.push(rng.below(m as u64));
            vals.push(rng.value());
        }
        offset.push(cols.len());
    }
    let xs: Vec<f64> = (0..m).map(|_| rng.value()).collect();
    let write = |name: &str, v: serde_json::Value| {
        (name.to_string(), read_input(&common::write(dir, &format!("{name}.json"), &v.to_string())).unwrap())
    };
    let loaded = vec![
        write("offset", serde_json::json!(offset)),
        write("col_indices", serde_json::json!(cols)),
        write("values", serde_json::json!(vals)),
        write("xs", serde_json::json!(xs)),
    ];
    let nats: Vec<(String, i64)> = nats.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    bind_inputs(kernel, &nats, loaded).map_err(|e| e.to_string())
}

/// The parallel SpMV (local memory, barriers, the tree) against the
/// interpreter over a grid of tunables: rows per group R from 1 to all rows,
/// items per row W from 1 to more than any row has entries, on a matrix with
/// empty rows and one row of 10 000 entries; R that does not divide the rows
/// is refused with the requirement it breaks. (Fewer tunables on Oclgrind.)
#[test]
fn parallel_spmv_over_a_grid_of_tunables_matches_the_interpreter() {
    let Some(cl) = platform() else { return };
    let (file, kernel) = kernel_of("csr_spmv_parallel");
    let compiled =
        heddle::opencl::compile(&kernel, "csr_spmv_parallel").unwrap_or_else(|d| panic!("{}", file.render(&[d])));
    let dir = tempfile::tempdir().unwrap();
    // 12 rows: empty ones, short ones, and (first matrix only) a long one.
    let short = [0, 3, 1, 0, 7, 2, 0, 5, 1, 4, 0, 6];
    let mut long = short;
    long[4] = 10_000;
    let full = !common::oclgrind();
    let rs: &[i64] = if full { &[1, 2, 3, 4, 6, 12] } else { &[3] };
    let ws: &[i64] = if full { &[1, 2, 3, 8, 32, 64] } else { &[3, 16] };
    for (rows, what) in [(&short[..], "rows of at most 7 entries"), (&long[..], "a row of 10 000 entries")] {
        let bound = csr_inputs(&kernel, dir.path(), rows, 10_000, &[("R", 1), ("W", 1)]).unwrap();
        for &r in rs {
            for &w in ws {
                let env = bound.with_nat("R".into(), r).with_nat("W".into(), w);
                let want = heddle_runtime::interp::run_kernel(&kernel, &env).unwrap();
                let (got, _) = heddle::opencl::run(cl, &kernel, &compiled, &env, 1)
                    .unwrap_or_else(|d| panic!("{what}, R={r} W={w}: {}", file.render(&[d])));
                assert_close(&got, &want, &format!("{what}, R={r} W={w}"));
            }
        }
    }
    let env = csr_inputs(&kernel, dir.path(), &short, 8, &[("R", 5), ("W", 4)]).unwrap();
    let err = heddle::opencl::run(cl, &kernel, &compiled, &env, 1).expect_err("12 rows are not groups of 5");
    assert!(err.message.contains("n % R == 0"), "{}", err.message);
}

/// The hand-written hand-offs of codegen-opencl/tests/samples: reading
/// another item's element (a barrier), one's own (none), and the hand-off
/// inside a per-item loop (rounds, a predicate), each against values
/// computed here.
#[test]
fn local_memory_hand_offs_compute_what_they_should() {
    use heddle_ir::loops::{BinOp, Expr};
    use heddle_runtime::launch::{output_value, prepare};
    let Some(cl) = platform() else { return };
    let (n, w) = (5i64, 6i64);
    let xs: Vec<f64> = (0..n * w).map(|k| k as f64).collect();
    let env = Env::default()
        .with_nat("n".into(), n)
        .with_nat("W".into(), w)
        .with_value("xs".into(), Value::array(xs.iter().map(|&x| Value::Float(x)).collect()));
    let ty = heddle_ir::parser::parse_type("[float]_{n * W}").unwrap();
    let reversed = Expr::bin(BinOp::Sub, Expr::bin(BinOp::Sub, Expr::var("W"), Expr::index(1)), Expr::var("j"));
    for (read, expect) in [(reversed, true), (Expr::var("j"), false)] {
        let prog = samples::hand_off(read);
        let k = heddle_codegen_opencl::compile(&prog).unwrap();
        let mut launch = prepare(&prog, &env).unwrap();
        cl.run(&prog, &k, &mut launch, 1).unwrap_or_else(|d| panic!("{}", d.message));
        let got = floats(&output_value(&prog, &launch, &ty, &env).unwrap());
        for g in 0..n {
            for j in 0..w {
                let from = if expect { w - 1 - j } else { j };
                assert_eq!(got[(g * w + j) as usize], xs[(g * w + from) as usize], "g={g} j={j}");
            }
        }
    }
    let prog = samples::nested_hand_off();
    let k = heddle_codegen_opencl::compile(&prog).unwrap();
    let ty = heddle_ir::parser::parse_type("[float]_n").unwrap();
    for (rows, r, w) in [(12i64, 3i64, 4i64), (8, 8, 1), (6, 2, 16)] {
        let env = Env::default().with_nat("n".into(), rows).with_nat("R".into(), r).with_nat("W".into(), w);
        let mut launch = prepare(&prog, &env).unwrap();
        cl.run(&prog, &k, &mut launch, 1).unwrap_or_else(|d| panic!("{}", d.message));
        let got = floats(&output_value(&prog, &launch, &ty, &env).unwrap());
        let want: Vec<f64> = (0..rows).map(|row| (w * row + w * (w - 1) / 2) as f64).collect();
        assert_eq!(got, want, "n={rows} R={r} W={w}");
    }
}

/// Valid tensor coordinates let OpenCL run the kernel without the checks
/// their ranges imply (the column check of every nonzero in an SpMV), as the
/// CPU backend does: the host validates the inputs once before the launch.
/// Storage buffers given one by one bypass the readers' validation; one
/// coordinate outside its level then runs the checked kernel, which reports
/// the access where it is.
#[test]
fn valid_coordinates_run_the_kernel_without_their_checks_and_invalid_ones_the_checked_kernel() {
    let (_, kernel) = kernel_of("sparse/spmv_csr");
    let compiled = heddle::opencl::compile(&kernel, "spmv_csr").unwrap();
    let trusted = compiled.trusted.as_ref().expect("the column check is implied by A_crd1's range");
    let column_check = |source: &str| source.lines().any(|l| l.contains("e1 < A_dim1") && l.contains("heddle_error"));
    assert!(column_check(&compiled.kernel.source), "{}", compiled.kernel.source);
    assert!(!column_check(&trusted.source), "{}", trusted.source);
    // Both report failures by the same codes.
    assert_eq!(trusted.interface.errors, compiled.kernel.interface.errors);

    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str, text: &str| common::write(dir.path(), name, text).to_str().unwrap().to_string();
    let (pos, vals, xs) =
        (path("pos.json", "[0, 2, 3]"), path("vals.json", "[1.0, 2.0, 3.0]"), path("xs.json", "[1, 2, 3]"));
    // Which kernel a launch gets: the trusted one only for valid coordinates.
    let launched = |crd: &str| {
        let crd = path("crd.json", crd);
        let inputs = [("A_pos1", &pos), ("A_crd1", &crd), ("A_values", &vals), ("xs", &xs)];
        let loaded = inputs
            .iter()
            .map(|(n, p)| (n.to_string(), read_input(std::path::Path::new(p.as_str())).unwrap()))
            .collect();
        let env = bind_inputs(&kernel, &[("A_dim0".into(), 2), ("A_dim1".into(), 3)], loaded).unwrap();
        let launch = heddle_runtime::launch::prepare(&compiled.program, &env).unwrap();
        compiled.kernel_for(&launch).source == trusted.source
    };
    assert!(launched("[0, 2, 1]"), "valid coordinates run the trusted kernel");
    assert!(!launched("[0, 7, 1]"), "a column past A_dim1 runs the checked kernel");

    if platform().is_none() {
        return;
    }
    let run = |crd: &str| {
        let crd = path("crd.json", crd);
        common::heddle(&[
            "run",
            "examples/sparse/spmv_csr.hdl",
            "--backend",
            "opencl",
            "--param",
            "A_dim0=2",
            "--param",
            "A_dim1=3",
            "--input",
            &format!("A_pos1={pos}"),
            "--input",
            &format!("A_crd1={crd}"),
            "--input",
            &format!("A_values={vals}"),
            "--input",
            &format!("xs={xs}"),
        ])
    };
    let (code, out, err) = run("[0, 2, 1]");
    assert_eq!((code, out.trim()), (0, "[7.0,6.0]"), "{err}");
    for bad in ["[0, 7, 1]", "[-1, 2, 1]"] {
        let (code, _, err) = run(bad);
        assert_eq!(code, 1, "{bad}: {err}");
        assert!(err.contains("an index into `xs`") && err.contains("spmv_csr.hdl:6:"), "{bad}: {err}");
    }
}

/// COO's (row, column) pairs, stored as one array of records, have ranges
/// too (`A_crd0 < A_dim0`, `A_crd0.1 < A_dim1`): valid pairs run both
/// backends without the two checks per nonzero, and a pair outside either
/// range runs the checked code, which reports the access it would make.
#[test]
fn coo_pairs_in_range_drop_their_checks_and_pairs_outside_fail_located() {
    let (_, kernel) = kernel_of("sparse/spmv_coo");
    let compiled = heddle::opencl::compile(&kernel, "spmv_coo").unwrap();
    let ranges: Vec<String> = compiled
        .program
        .ranges
        .iter()
        .map(|r| format!("{}.{} < {}", r.buf, r.field, heddle_ir::loops::expr_text(&r.below)))
        .collect();
    assert_eq!(ranges, ["A_crd0.0 < A_dim0", "A_crd0.1 < A_dim1"]);
    let trusted = compiled.trusted.as_ref().expect("both checks are implied");
    assert!(
        !trusted.source.contains("heddle_error, 0, 4)") && !trusted.source.contains("heddle_error, 0, 5)"),
        "{}",
        trusted.source
    );

    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str, text: &str| common::write(dir.path(), name, text).to_str().unwrap().to_string();
    let (pos, vals, xs) =
        (path("pos.json", "[0, 3]"), path("vals.json", "[1.0, 2.0, 3.0]"), path("xs.json", "[1, 2, 3]"));
    let mut backends = vec!["cpu"];
    if platform().is_some() {
        backends.push("opencl");
    }
    for backend in backends {
        let run = |crd: &str| {
            let crd = path("crd.json", crd);
            common::heddle(&[
                "run",
                "examples/sparse/spmv_coo.hdl",
                "--backend",
                backend,
                "--param",
                "A_dim0=2",
                "--param",
                "A_dim1=3",
                "--input",
                &format!("A_pos0={pos}"),
                "--input",
                &format!("A_crd0={crd}"),
                "--input",
                &format!("A_values={vals}"),
                "--input",
                &format!("xs={xs}"),
            ])
        };
        let (code, out, err) = run("[[0, 1], [1, 0], [1, 2]]");
        assert_eq!((code, out.trim()), (0, "[2.0,11.0]"), "{backend}: {err}");
        let (code, _, err) = run("[[0, 1], [1, 0], [1, 5]]");
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("an index into `xs`") && err.contains("spmv_coo.hdl:7:"), "{backend}: {err}");
        let (code, _, err) = run("[[0, 1], [4, 0], [1, 2]]");
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(err.contains("an index into the result of `scatterAdd`"), "{backend}: {err}");
    }
}

//! `--encoding A=SELL(C)`: the front door rewrites the dense SpMV into the
//! lane form of `examples/sparse/spmv_sell8.hdl`
//! (`heddle_rewrite::sparsify::sell`), `heddle run --matrix` packs the matrix
//! as its three arrays (`heddle::cli::sell`), and the result is y: on every
//! backend equal to the dense kernel and to a plain dense product, the
//! padding rows of the last slice dropped.

use crate::common;

use common::{Entries, assert_close, assert_schema, backends, dense_product, floats, heddle, heddle_json, write_mtx};
use heddle::source::SourceFile;
use std::path::{Path, PathBuf};

const MV: &str = "examples/dense_mv.hdl";

/// Rows of pseudo-random lengths from `lengths`, at pseudo-random columns
/// (values exact in f32).
fn entries(seed: u64, rows: u64, cols: u64, lengths: &[u64]) -> Entries {
    let mut rng = common::Rng(seed);
    let mut e = Vec::new();
    for i in 0..rows {
        let n = lengths[rng.below(lengths.len() as u64) as usize].min(cols);
        let mut js: Vec<u64> = (0..n).map(|_| rng.below(cols)).collect();
        js.sort();
        js.dedup();
        e.extend(js.into_iter().map(|j| (i, j, (rng.below(255) as f64 - 127.0) / 8.0)));
    }
    e
}

/// The sparsified program's text (`heddle sparsify`), for `ty` (`float` or `double`).
fn sparsified(ty: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let dense = dense_source(dir.path(), ty);
    let (code, out, err) = heddle(&["sparsify", dense.to_str().unwrap(), "--encoding", "matrix=SELL(8)"]);
    assert_eq!(code, 0, "{err}");
    out
}

/// `examples/dense_mv.hdl` at element type `ty`, written into `dir`.
pub(crate) fn dense_source(dir: &Path, ty: &str) -> PathBuf {
    let text = std::fs::read_to_string(common::root().join(MV)).unwrap().replace("[float]", &format!("[{ty}]"));
    common::write(dir, &format!("dense_mv_{ty}.hdl"), &text)
}

#[test]
fn dense_mv_becomes_the_sell8_lane_form() {
    let out = sparsified("float");
    insta::assert_snapshot!("sell8_dense_mv", out);
    // The shape of spmv_sell8.hdl: per slice, steps zipped, each a row of 8
    // lanes, summed lane by lane from a row of zeros; the slices joined.
    for part in [
        "zip(matrix_cols, matrix_vals)",
        "generate(8, fun(l => k.2@l * xs@(k.1@l)))",
        ":>> reduce(",
        "fun(acc, r => zip(acc, r) :>> map(fun(q => q.1 + q.2)))",
        "generate(8, fun(l_1 => 0))",
        ":>> join",
    ] {
        assert!(out.contains(part), "{part}: {out}");
    }
    // Parse, print, parse: the same tree.
    let p = heddle_ir::parser::parse_program(&out).unwrap();
    let again = heddle_ir::parser::parse_program(&heddle_ir::printer::print_program(&p)).unwrap();
    assert_eq!(p, again);
    // And it type-checks, for f64 too.
    for ty in ["float", "double"] {
        let text = sparsified(ty);
        heddle::check_source(&SourceFile::new("s", &text)).unwrap_or_else(|d| panic!("{ty}: {d:?}"));
    }
}

/// The sparsified kernel's trusted CPU code, disassembled: the block of
/// its loop over a slice's steps that gathers x's lanes, as mnemonics.
fn gather_mnemonics(
    kernel: &heddle_typeck::Kernel,
    ranges: impl Fn(&mut heddle_ir::loops::LoopProgram),
) -> Vec<String> {
    let mut program = heddle::cpu::lower(kernel, "sell").unwrap();
    ranges(&mut program);
    let options = heddle_runtime::cpu::Tuning::default().options(true);
    let asm = heddle_codegen_cpu::disassembly(&program, &options).unwrap();
    let mut blocks = vec![String::new()];
    for l in asm.lines() {
        if l.starts_with("block") {
            blocks.push(String::new());
        }
        blocks.last_mut().unwrap().push_str(l);
        blocks.last_mut().unwrap().push('\n');
    }
    let gathers: Vec<_> =
        blocks.into_iter().filter(|b| ["vinsertps", "vpinsrq", "vmovlhps"].iter().any(|i| b.contains(i))).collect();
    assert_eq!(gathers.len(), 1, "one block gathers: {asm}");
    if std::env::var("SELL_ASM").is_ok() {
        eprintln!("{}", gathers[0]);
    }
    gathers[0].lines().filter_map(|l| l.split_whitespace().next().map(str::to_string)).collect()
}

#[test]
fn the_sparsified_kernel_compiles_to_the_hand_written_vector_lanes() {
    for ty in ["float", "double"] {
        let text = sparsified(ty);
        let (_, kernel) = heddle::check_source(&SourceFile::new("s", &text)).unwrap();
        let front = gather_mnemonics(&kernel, |p| heddle::cli::sell::trust_columns(&kernel, p));
        let hand = include_str!("../../examples/sparse/spmv_sell8.hdl").replace("[float]", &format!("[{ty}]"));
        let (_, hand_kernel) = heddle::check_source(&SourceFile::new("spmv_sell8.hdl", &hand)).unwrap();
        let written = gather_mnemonics(&hand_kernel, |p| {
            p.ranges.push(heddle_ir::loops::InputRange {
                buf: "cols".into(),
                field: 0,
                below: heddle_ir::loops::Expr::var("m"),
            })
        });
        // The step's instructions, one for one: x's lanes loaded in their
        // inserts, one vector multiply and add per 16 bytes, nothing spilled.
        assert_eq!(front, written, "{ty}");
        assert!(!front.is_empty());
    }
}

/// Runs dense_mv at `ty` with `matrix=SELL(8)` on every backend and checks y
/// against the dense kernel and a plain product.
fn check(name: &str, ty: &str, rows: u64, cols: u64, e: &Entries) {
    check_as("SELL(8)", name, ty, rows, cols, e);
}

/// [`check`] with `matrix=ENCODING` (a SELL form, σ > 1 too): y on every
/// backend (run with `--reps 2`: each rep's time positive) against the
/// dense kernel and a plain dense product; each backend's output, for more
/// checks.
pub(crate) fn check_as(
    encoding: &str,
    name: &str,
    ty: &str,
    rows: u64,
    cols: u64,
    e: &Entries,
) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let m = write_mtx(dir.path(), name, rows, cols, e);
    let x: Vec<f64> = (0..cols).map(|j| 1.0 + (j % 13) as f64 * 0.125).collect();
    let x_path = common::write(dir.path(), "xs.json", &serde_json::to_string(&x).unwrap());
    let src = dense_source(dir.path(), ty);
    let (src, m, x_path) = (src.to_str().unwrap(), m.to_str().unwrap(), x_path.to_str().unwrap());
    let want = dense_product(rows, e, &x);
    let what = format!("{name} ({rows} x {cols}, {ty}, {encoding})");
    if rows > 0 {
        let (code, dense) =
            heddle_json(&["run", src, "--dense", &format!("matrix={m}"), "--input", &format!("xs={x_path}")]);
        assert_eq!(code, 0, "{what}: {dense}");
        assert_close(&floats(&dense["result"]), &want, &format!("{what}: the dense kernel"));
    }
    let mut outputs = Vec::new();
    for backend in backends() {
        let (code, v) = heddle_json(&[
            "run",
            src,
            "--backend",
            backend,
            "--matrix",
            &format!("matrix={m}"),
            "--encoding",
            &format!("matrix={encoding}"),
            "--input",
            &format!("xs={x_path}"),
            "--reps",
            "2",
        ]);
        assert_eq!(code, 0, "{what} {backend}: {v}");
        assert_schema(&v, &format!("{what} {backend}"));
        // y itself: the padding rows of the last slice are dropped, and the type says so.
        assert_close(&floats(&v["result"]), &want, &format!("{what} {backend}"));
        if !rows.is_multiple_of(8) {
            assert_eq!(v["type"], format!("[{ty}]_{rows}"), "{what} {backend}");
        }
        let t = &v["kernel_seconds"];
        assert_eq!(t["reps"], 2, "{what} {backend}: {v}");
        assert!(t["min"].as_f64().unwrap() > 0.0, "{what} {backend}: {v}");
        outputs.push(v);
    }
    outputs
}

#[test]
fn sell8_spmv_equals_the_dense_kernel_and_a_dense_product() {
    for ty in ["float", "double"] {
        // Rows a multiple of 8, and not; rows of mixed lengths with empty ones.
        check("mixed", ty, 64, 40, &entries(0x5e11, 64, 40, &[0, 1, 3, 4, 7]));
        check("ragged", ty, 45, 33, &entries(0x5e12, 45, 33, &[0, 2, 5, 9]));
        // Every row empty.
        check("empty", ty, 13, 9, &Vec::new());
        // One long row among short ones: its slice is that row's length wide.
        let mut long = entries(0x5e13, 20, 300, &[1]);
        long.retain(|&(i, _, _)| i != 11);
        long.extend((0..300).map(|j| (11, j, (j % 17) as f64 - 8.0)));
        long.sort_by_key(|&(i, j, _)| (i, j));
        check("long_row", ty, 20, 300, &long);
        // 1 x 1, and a matrix of no rows.
        check("one", ty, 1, 1, &vec![(0, 0, 2.5)]);
        check("no_rows", ty, 0, 4, &Vec::new());
    }
}

const C16: &str = "SELL(8, crdWidth = 16)";

#[test]
fn sell8_with_16_bit_columns_equals_the_dense_kernel_and_a_dense_product() {
    for ty in ["float", "double"] {
        check_as(C16, "mixed", ty, 64, 40, &entries(0x5e21, 64, 40, &[0, 1, 3, 4, 7]));
        check_as(C16, "ragged", ty, 45, 33, &entries(0x5e22, 45, 33, &[0, 2, 5, 9]));
        check_as(C16, "empty", ty, 13, 9, &Vec::new());
        let mut long = entries(0x5e23, 20, 300, &[1]);
        long.retain(|&(i, _, _)| i != 11);
        long.extend((0..300).map(|j| (11, j, (j % 17) as f64 - 8.0)));
        long.sort_by_key(|&(i, j, _)| (i, j));
        check_as(C16, "long_row", ty, 20, 300, &long);
        check_as(C16, "one", ty, 1, 1, &vec![(0, 0, 2.5)]);
        check_as(C16, "no_rows", ty, 0, 4, &Vec::new());
    }
    // The boundary: columns 65 535 (the largest 16 bits hold) and 0, in
    // 65 535 and 65 536 columns; a wrong widening (signed, or a truncated
    // load) would read x elsewhere.
    for cols in [65535u64, 65536] {
        let mut e: Entries = Vec::new();
        for i in 0..11u64 {
            e.push((i, i, 1.0 + i as f64));
            e.push((i, cols - 1 - 3 * i, 0.5 - i as f64));
        }
        e.push((11, 32767, 3.0));
        e.push((11, 32768, -2.0));
        e.push((11, cols - 1, 4.0));
        e.sort_by_key(|&(i, j, _)| (i, j));
        e.dedup_by_key(|x| (x.0, x.1));
        check_as(C16, &format!("edge_{cols}"), "double", 12, cols, &e);
    }
}

/// `dense_mv`'s SELL(8) run over `m` with `--encoding matrix=ENCODING`: (exit code, JSON).
fn run_sell(dir: &Path, encoding: &str, m: &Path, cols: u64) -> (i32, serde_json::Value) {
    let x: Vec<f64> = (0..cols).map(|j| (j % 7) as f64).collect();
    let x_path = common::write(dir, "x.json", &serde_json::to_string(&x).unwrap());
    let src = dense_source(dir, "double");
    heddle_json(&common::strs(&common::encoded_run(&src, "cpu", m, encoding, &x_path)))
}

#[test]
fn a_column_past_16_bits_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // Column 65 536 (in 70 000): exit 1, naming the entry, its column and the width.
    let e: Entries = vec![(0, 3, 1.0), (2, 65535, 2.0), (4, 65536, 3.0), (5, 69999, 1.0)];
    let m = write_mtx(dir.path(), "wide", 9, 70000, &e);
    let (code, v) = run_sell(dir.path(), C16, &m, 70000);
    assert_eq!(code, 1, "{v}");
    let message = v["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("row 4, column 65536") && message.contains("16-bit"), "{v}");
    assert!(message.contains("parameter `matrix`") && message.contains("wide.mtx"), "{v}");
    // The same matrix with 32-bit columns runs.
    let (code, v) = run_sell(dir.path(), "SELL(8)", &m, 70000);
    assert_eq!(code, 0, "{v}");
    assert_close(
        &floats(&v["result"]),
        &dense_product(9, &e, &(0..70000).map(|j| (j % 7) as f64).collect::<Vec<_>>()),
        "32-bit",
    );
    // 100 000 columns whose entries all lie below 65 536 fit: only the entries count.
    let e: Entries = vec![(0, 0, 1.0), (1, 65535, 2.0)];
    let m = write_mtx(dir.path(), "narrow_entries", 2, 100_000, &e);
    let (code, v) = run_sell(dir.path(), C16, &m, 100_000);
    assert_eq!(code, 0, "{v}");
    assert_eq!(floats(&v["result"]), vec![0.0, 2.0 * (65535 % 7) as f64]);
    // Widths SELL does not take: usage errors naming the field.
    let (code, _, err) = heddle(&["sparsify", MV, "--encoding", "matrix=SELL(8, crdWidth = 8)"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("16 or 32 bits"), "{err}");
    let (code, _, err) = heddle(&["sparsify", MV, "--encoding", "matrix=SELL(8, posWidth = 16)"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`crdWidth`"), "{err}");
}

/// SELL's values array has the kernel's element type and the file's values
/// are converted to it as binding converts them: a 64-bit integer past 2^53
/// keeps every bit (it used to pass through `f64`), a value that does not fit
/// (300 in `u8`, a complex number in `double`) is refused naming its entry
/// and the file, on every backend and with σ > 1 too.
#[test]
fn sell_values_keep_their_type_and_refuse_what_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let big = (1i64 << 60) + 1;
    let mtx = common::write(
        dir.path(),
        "ints.mtx",
        &format!("%%MatrixMarket matrix coordinate integer general\n3 2 3\n1 1 {big}\n2 2 -3\n3 1 7\n"),
    );
    let x = common::write(dir.path(), "x.json", "[1, 2]");
    let run = |ty: &str, encoding: &str, backend: &str, m: &Path| {
        let text = std::fs::read_to_string(common::root().join(MV)).unwrap().replace("[float]", &format!("[{ty}]"));
        let src = common::write(dir.path(), &format!("mv_{ty}.hdl"), &text);
        heddle_json(&[
            "run",
            src.to_str().unwrap(),
            "--backend",
            backend,
            "--matrix",
            &format!("matrix={}", m.display()),
            "--encoding",
            &format!("matrix={encoding}"),
            "--input",
            &format!("xs={}", x.display()),
        ])
    };
    for backend in backends() {
        for encoding in ["SELL(8)", "SELL(4, sigma = 4)", C16] {
            let (code, v) = run("i64", encoding, backend, &mtx);
            assert_eq!(code, 0, "{encoding} on {backend}: {v}");
            assert_eq!(v["result"], serde_json::json!([big, -6, 7]), "{encoding} on {backend}");
            let (code, v) = run("u8", encoding, backend, &mtx);
            assert_eq!(code, 1, "{encoding} on {backend}: {v}");
            let message = v["errors"][0]["message"].as_str().unwrap();
            assert!(message.contains("ints.mtx") && message.contains("row 0, column 0"), "{v}");
            assert!(message.contains("does not fit in u8"), "{v}");
        }
    }
    let complex = common::write(
        dir.path(),
        "complex.mtx",
        "%%MatrixMarket matrix coordinate complex general\n2 2 2\n1 1 1 0.5\n2 2 0 1\n",
    );
    let (code, v) = run("double", "SELL(8)", "cpu", &complex);
    assert_eq!(code, 1, "{v}");
    let message = v["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("complex.mtx") && message.contains("row 0, column 0"), "{v}");
    assert!(message.contains("does not fit in double"), "{v}");
}

/// The trusted code's gather step of `dense_mv` at `ty` sparsified with `encoding`, as mnemonics.
fn front_door_step(ty: &str, encoding: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let dense = dense_source(dir.path(), ty);
    let (code, text, err) = heddle(&["sparsify", dense.to_str().unwrap(), "--encoding", &format!("matrix={encoding}")]);
    assert_eq!(code, 0, "{err}");
    let (_, kernel) = heddle::check_source(&SourceFile::new("s", &text)).unwrap();
    gather_mnemonics(&kernel, |p| heddle::cli::sell::trust_columns(&kernel, p))
}

#[test]
fn sixteen_bit_columns_load_widened_in_the_32_bit_step() {
    for ty in ["float", "double"] {
        let wide = front_door_step(ty, "SELL(8)");
        let narrow = front_door_step(ty, C16);
        // The same step, instruction for instruction, each column loaded
        // zero-extended from 16 bits (`movzwq`, its memory operand folded)
        // where the 32-bit step sign-extends (`movslq`): no extra widening,
        // no per-lane address arithmetic, the same scaled counter.
        let widened: Vec<String> =
            wide.iter().map(|m| if m == "movslq" { "movzwq".to_string() } else { m.clone() }).collect();
        assert_eq!(narrow, widened, "{ty}");
        assert_eq!(narrow.iter().filter(|m| *m == "movzwq").count(), 8, "{ty}: {narrow:?}");
        // And the hand-written spmv_sell8c16.hdl compiles to the same step.
        let hand = include_str!("../../examples/sparse/spmv_sell8c16.hdl").replace("[float]", &format!("[{ty}]"));
        let (_, hand_kernel) = heddle::check_source(&SourceFile::new("spmv_sell8c16.hdl", &hand)).unwrap();
        let written = gather_mnemonics(&hand_kernel, |p| {
            p.ranges.push(heddle_ir::loops::InputRange {
                buf: "cols".into(),
                field: 0,
                below: heddle_ir::loops::Expr::var("m"),
            })
        });
        assert_eq!(written, narrow, "{ty}");
    }
}

#[test]
fn sell_refusals_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let sparsify = |name: &str, src: &str, enc: &str| {
        let f = common::write(dir.path(), name, src);
        heddle(&["sparsify", f.to_str().unwrap(), "--encoding", enc])
    };
    // A row not summed: a max over it.
    let (code, _, err) = sparsify(
        "max.hdl",
        "nFun(n => nFun(m => fun(a: [[float]_m]_n => fun(xs: [float]_m =>\n  a :>> map(fun(row => zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduce(max, 0.0)))))))",
        "a=SELL(8)",
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("max.hdl") && err.contains(":2:") && err.contains("row"), "{err}");
    // A row summed in order (`reduceSeq`): not regrouped.
    let (code, _, err) = sparsify(
        "seq.hdl",
        "nFun(n => nFun(m => fun(a: [[float]_m]_n => fun(xs: [float]_m =>\n  a :>> map(fun(row => zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduceSeq(+, 0)))))))",
        "a=SELL(8)",
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("seq.hdl") && err.contains(":2:"), "{err}");
    // A row's sum used in another way than as the row's result.
    let (code, _, err) = sparsify(
        "scaled.hdl",
        "nFun(n => nFun(m => fun(a: [[float]_m]_n => fun(xs: [float]_m =>\n  a :>> map(fun(row => 2.0 * (zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduce(+, 0))))))))",
        "a=SELL(8)",
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not summed") && err.contains("scaled.hdl:2:"), "{err}");
    // Not a matrix.
    let (code, _, err) = sparsify("vec.hdl", "nFun(n => fun(v: [float]_n => v :>> reduce(+, 0)))", "v=SELL(8)");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("stores a matrix") && err.contains("vec.hdl:1:"), "{err}");
    // Used other than as the rows of a map.
    let (code, _, err) = sparsify(
        "whole.hdl",
        "nFun(n => nFun(m => fun(a: [[float]_m]_n =>\n  a :>> join :>> reduce(+, 0))))",
        "a=SELL(8)",
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("other than as the rows of a map") && err.contains("whole.hdl:2:"), "{err}");
    // Written wrongly: usage errors.
    for bad in ["a=SELL(0)", "a=SELL(65)", "a=SELL", "a=sell(8)", "a=SELL(8, 2)"] {
        let (code, _, err) = sparsify("mv.hdl", "nFun(n => fun(a: [[float]_n]_n => a))", bad);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("SELL(C)"), "{bad}: {err}");
    }
    // Literal sizes: the SELL kernel's rows are whole slices, so the file's shape is checked by run.
    let literal = common::write(
        dir.path(),
        "literal.hdl",
        "fun(a: [[float]_4]_3 => fun(xs: [float]_4 =>\n  a :>> map(fun(row => zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduce(+, 0)))))",
    );
    let xs = common::write(dir.path(), "x4.json", "[1, 2, 3, 4]");
    let run = |m: &Path| {
        heddle_json(&[
            "run",
            literal.to_str().unwrap(),
            "--encoding",
            "a=SELL(8)",
            "--matrix",
            &format!("a={}", m.display()),
            "--input",
            &format!("xs={}", xs.display()),
        ])
    };
    let fits = write_mtx(dir.path(), "fits", 3, 4, &vec![(0, 1, 2.0), (2, 3, 1.0)]);
    let (code, v) = run(&fits);
    assert_eq!(code, 0, "{v}");
    assert_eq!(floats(&v["result"]), vec![4.0, 0.0, 4.0]);
    let taller = write_mtx(dir.path(), "taller", 4, 4, &vec![(0, 1, 2.0)]);
    let (code, v) = run(&taller);
    assert_eq!(code, 1, "{v}");
    assert!(v["errors"][0]["message"].as_str().unwrap().contains("4 rows, but `a` is declared with 3"), "{v}");
    // SELL is no tensor encoding: `type` refuses it, and `convert` writes
    // it only as an archive of its arrays (tests/it/sell_export.rs), saying so.
    let m = write_mtx(dir.path(), "m", 4, 4, &vec![(0, 0, 1.0)]);
    let out = dir.path().join("o.json");
    let (code, _, err) = heddle(&["convert", m.to_str().unwrap(), "--to", "SELL(8)", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no tensor encoding") && err.contains(".npz"), "{err}");
    // (`type`'s ENCODING is its input, not a flag: exit 1, as for any text that is no encoding.)
    let (code, _, err) = heddle(&["type", "SELL(8)"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not a sparse tensor encoding"), "{err}");
}

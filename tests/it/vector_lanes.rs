//! `asVector(w)` lanes as Cranelift vectors on the CPU backend
//! (`codegen-cpu/src/translate/slp.rs`): for w = 2, 4, 8 and f32, f64, i32,
//! i64, and n = 0, 1, 5, 1000 vectors, the CPU backend computes what the
//! interpreter and a dense computation here compute; the Cranelift IR of
//! those kernels loads and stores whole vectors where the lanes fill
//! 128-bit parts, and an index out of range still fails with its located
//! error.

use crate::common;

use common::{Rng, heddle};

const TYPES: [(&str, bool, usize); 4] = [("f32", true, 4), ("f64", true, 8), ("i32", false, 4), ("i64", false, 8)];
const WIDTHS: [usize; 3] = [2, 4, 8];

/// The kernels, by name: source for element type `t` and width `w`, and the
/// dense result from `xs` and `ys`.
fn kernel(name: &str, t: &str, w: usize) -> String {
    let two = format!(
        "nFun(n =>\nfun(xs: [{t}]_{{{w} * n}} =>\nfun(ys: [{t}]_{{{w} * n}} =>\n  zip(xs :>> asVector({w}), ys :>> asVector({w}))"
    );
    match name {
        "add" => format!("{two} :>> map(fun(p => p.1 + p.2)) :>> asScalar)))\n"),
        "mul" => format!("{two} :>> map(fun(p => p.1 * p.2)) :>> asScalar)))\n"),
        // a vector scaled lane by lane by another and shifted: a tree of ops.
        "map" => format!("{two} :>> map(fun(p => p.1 * p.2 - (p.1 + p.1))) :>> asScalar)))\n"),
        "dot" => format!("{two} :>> map(fun(p => p.1 * p.2)) :>> asScalar :>> reduce(+, {}))))\n", zero(t)),
        _ => unreachable!(),
    }
}

fn zero(t: &str) -> &'static str {
    if t.starts_with('f') { "0.0" } else { "0" }
}

fn dense(name: &str, xs: &[f64], ys: &[f64]) -> Vec<f64> {
    let each = xs.iter().zip(ys);
    match name {
        "add" => each.map(|(x, y)| x + y).collect(),
        "mul" => each.map(|(x, y)| x * y).collect(),
        "map" => each.map(|(x, y)| x * y - (x + x)).collect(),
        "dot" => vec![each.map(|(x, y)| x * y).sum()],
        _ => unreachable!(),
    }
}

fn numbers(out: &str) -> Vec<f64> {
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let mut xs = Vec::new();
    common::flatten(&v, &mut xs);
    xs
}

fn clif(path: &std::path::Path) -> String {
    let (code, out, err) = heddle(&["compile", path.to_str().unwrap(), "--target", "cpu"]);
    assert_eq!(code, 0, "{err}");
    out
}

/// Small integers (exact in every type, and every sum of 8000 products
/// exact in f32, so any order of the dot product's adds agrees).
fn values(rng: &mut Rng, len: usize) -> Vec<f64> {
    (0..len).map(|_| rng.below(41) as f64 - 20.0).collect()
}

fn json_list(xs: &[f64], float: bool) -> String {
    let items: Vec<String> =
        xs.iter().map(|x| if float { format!("{x:?}") } else { format!("{}", *x as i64) }).collect();
    format!("[{}]", items.join(", "))
}

#[test]
fn vector_kernels_equal_the_interpreter_and_a_dense_computation() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0511);
    for (t, float, _) in TYPES {
        for w in WIDTHS {
            for name in ["add", "mul", "map", "dot"] {
                let src = common::write(dir.path(), &format!("{name}_{t}_{w}.hdl"), &kernel(name, t, w));
                for n in [0usize, 1, 5, 1000] {
                    let xs = values(&mut rng, w * n);
                    let ys = values(&mut rng, w * n);
                    let x = common::write(dir.path(), "xs.json", &json_list(&xs, float));
                    let y = common::write(dir.path(), "ys.json", &json_list(&ys, float));
                    let what = format!("{name} over {t} with w = {w}, n = {n}");
                    let mut results = Vec::new();
                    for backend in ["interp", "cpu"] {
                        let (code, out, err) = heddle(&[
                            "run",
                            src.to_str().unwrap(),
                            "--backend",
                            backend,
                            "--input",
                            &format!("xs={}", x.display()),
                            "--input",
                            &format!("ys={}", y.display()),
                        ]);
                        assert_eq!(code, 0, "{what}, {backend}: {err}");
                        results.push(numbers(&out));
                    }
                    assert_eq!(results[1], results[0], "{what}: cpu against the interpreter");
                    assert_eq!(results[1], dense(name, &xs, &ys), "{what}: cpu against the dense computation");
                }
            }
        }
    }
}

/// Where `w` lanes of the type fill whole 128-bit parts (and the operation
/// has a vector form: no 64-bit integer product), each operand is one
/// vector load per part and the result one vector store per part; where
/// they do not (`f32`/`i32` with w = 2), no vector appears.
#[test]
fn lanes_that_fill_vectors_are_loaded_computed_and_stored_as_vectors() {
    let dir = tempfile::tempdir().unwrap();
    for (t, _, size) in TYPES {
        for w in WIDTHS {
            for name in ["add", "mul", "map"] {
                let src = common::write(dir.path(), &format!("{name}_{t}_{w}.hdl"), &kernel(name, t, w));
                let ir = clif(&src);
                let per = 16 / size;
                let vt = format!("{t}x{per}");
                let fits = (w * size) % 16 == 0 && !(t == "i64" && name != "add");
                let parts = if fits { w / per } else { 0 };
                assert_eq!(ir.matches(&format!("load.{vt} ")).count(), 2 * parts, "{name} over {t}, w = {w}:\n{ir}");
                let stores =
                    ir.lines().filter(|l| l.trim_start().starts_with("store ") && !l.contains("aligned")).count();
                assert_eq!(stores, parts, "{name} over {t}, w = {w}:\n{ir}");
                if !fits {
                    assert!(
                        !ir.contains(&format!("x{per}")),
                        "{name} over {t}, w = {w}: a vector where lanes stay scalar:\n{ir}"
                    );
                }
            }
        }
    }
}

/// A dot product through vectors (`asScalar :>> reduce(+)`): the loop
/// multiplies whole vectors and adds them into vector partials (one per
/// 128-bit part, carried by the loop), whose lanes are added after it; no
/// lane is extracted inside the loop. A 64-bit integer product has no
/// vector form: its lanes stay scalar.
#[test]
fn a_dot_product_adds_whole_vectors_into_vector_partials() {
    let dir = tempfile::tempdir().unwrap();
    for (t, _, size) in TYPES {
        for w in WIDTHS {
            let src = common::write(dir.path(), &format!("dot_{t}_{w}.hdl"), &kernel("dot", t, w));
            let ir = clif(&src);
            let per = 16 / size;
            let vt = format!("{t}x{per}");
            let fits = (w * size) % 16 == 0 && t != "i64";
            let parts = if fits { w / per } else { 0 };
            let what = format!("dot over {t}, w = {w}");
            assert_eq!(ir.matches(&format!("load.{vt} ")).count(), 2 * parts, "{what}:\n{ir}");
            // The loop's block (the one that branches back to itself) takes
            // the index and the partials.
            let loop_block = ir
                .split("\nblock")
                .map(|b| format!("block{b}"))
                .find(|b| {
                    let (head, body) = b.split_once('\n').unwrap_or((b, ""));
                    head.split_once('(').is_some_and(|(name, _)| body.contains(&format!("{name}(")))
                })
                .unwrap_or_else(|| panic!("{what}: no loop:\n{ir}"));
            let (head, loop_body) = loop_block.split_once('\n').unwrap();
            assert_eq!(head.matches(&format!(": {vt}")).count(), parts, "{what}: {head}\n{ir}");
            assert!(!loop_body.contains("extractlane"), "{what}: lanes extracted in the loop:\n{ir}");
        }
    }
}

/// Rows gathered by an index: each row's lanes are consecutive (one vector
/// load after the row's check), and an index out of range fails that check
/// with the same located error as the interpreter, exit status 1.
const GATHER: &str = "nFun(n => nFun(m =>
fun(idx: [index]_m =>
fun(xs: [float]_{4 * n} =>
  idx :>> map(fun(i => (xs :>> asVector(4))@i)) :>> map(fun(v => v + v)) :>> asScalar))))
";

#[test]
fn gathered_rows_of_vectors_keep_their_checks() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::write(dir.path(), "gather.hdl", GATHER);
    let ir = clif(&src);
    assert_eq!(ir.matches("load.f32x4 ").count(), 1, "{ir}");
    let x = common::write(dir.path(), "xs.json", "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]");
    let good = common::write(dir.path(), "good.json", "[1, 0, 1]");
    let bad = common::write(dir.path(), "bad.json", "[1, 2, 0]");
    let run = |backend: &str, idx: &std::path::Path| {
        heddle(&[
            "run",
            src.to_str().unwrap(),
            "--backend",
            backend,
            "--input",
            &format!("idx={}", idx.display()),
            "--input",
            &format!("xs={}", x.display()),
        ])
    };
    let (code, out, err) = run("cpu", &good);
    assert_eq!(code, 0, "{err}");
    assert_eq!(numbers(&out), [10.0, 12.0, 14.0, 16.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]);
    // The message the scalar code gave before this pass (the interpreter
    // words its own differently); both fail with status 1 at the access.
    let (icode, _, ierr) = run("interp", &bad);
    let (code, out, err) = run("cpu", &bad);
    assert_eq!((code, icode), (1, 1), "{out}\n{err}\n{ierr}");
    assert!(err.starts_with("error: index out of bounds: an index into an array is not below its length n\n"), "{err}");
    assert!(err.contains("gather.hdl:4:25") && ierr.contains("gather.hdl:4:25"), "{err}\n{ierr}");
}

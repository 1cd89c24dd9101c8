//! Lowering every example: the loop programs are valid, contain no Σ loop, and
//! show the closed-form or precomputed indices (insta snapshots).

use heddle_ir::loops::{Block, Expr, HostKind, LoopProgram, Stmt};

fn examples() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hdl"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    out.sort();
    out
}

fn lower(src: &str, name: &str) -> LoopProgram {
    let program = heddle_ir::parser::parse_program(src).unwrap();
    let kernel = heddle_typeck::check_program(&program).unwrap();
    heddle_rewrite::lower::lower_kernel(&kernel, name).unwrap_or_else(|d| panic!("{name}: {d:?}"))
}

/// Loops in the lowered program: (loop variable, schedule) pairs, nested in order.
fn loop_count(b: &Block) -> usize {
    b.iter()
        .map(|s| match s {
            Stmt::For { body, .. } => 1 + loop_count(body),
            Stmt::If { then, els, .. } => loop_count(then) + loop_count(els),
            _ => 0,
        })
        .sum()
}

#[test]
fn lowered_examples() {
    for (name, src) in examples() {
        let p = lower(&src, &name);
        let text = p.to_string();
        // The loop IR has no Σ node; what must not appear is a loop evaluating one.
        assert!(!text.contains("sigma"), "{name}: a Σ loop reached the kernel body:\n{text}");
        insta::assert_snapshot!(format!("lowered_{name}"), text);
    }
}

#[test]
fn csr_needs_no_precomputation_and_lil_gets_csr_offsets() {
    let all = examples();
    let src = |n: &str| all.iter().find(|(x, _)| x == n).unwrap().1.clone();
    for csr in ["csr_unpacked_spmv", "csr_packed_spmv", "csr_refined_spmv", "csr_row_sums"] {
        let p = lower(&src(csr), csr);
        assert!(p.host.is_empty(), "{csr}: the Σ should have a closed form:\n{p}");
        assert_eq!(loop_count(&p.body), 2, "{csr}: one loop over rows, one over a row's entries:\n{p}");
    }
    let p = lower(&src("lil_spmv"), "lil_spmv");
    assert_eq!(p.host.len(), 1, "LIL's col_indices and values share one prefix sum:\n{p}");
    let HostKind::PrefixSum { body, .. } = &p.host[0].kind else { panic!("LIL's Σ should be a prefix sum:\n{p}") };
    assert_eq!(body.to_string(), "toNat(row_length@k)");
}

#[test]
fn naive_sums_are_loops() {
    let all = examples();
    let lil = &all.iter().find(|(x, _)| x == "lil_spmv").unwrap().1;
    let program = heddle_ir::parser::parse_program(lil).unwrap();
    let kernel = heddle_typeck::check_program(&program).unwrap();
    let opts = heddle_rewrite::lower::LowerOptions { naive_sums: true, ..Default::default() };
    let p = heddle_rewrite::lower::lower_kernel_with(&kernel, "lil", &opts).unwrap();
    assert!(p.host.is_empty());
    assert!(loop_count(&p.body) > 2, "the naive variant evaluates the Σ with a loop:\n{p}");
}

/// The merge loops of a CSR + CSR sum (`examples/sparse/spadd_csr.hdl`):
/// each row's starts are read once, before the loop (not in every branch of
/// every step), and the rows of the CSR inputs, whose ordered, unique level
/// input binding checks sorted, are merged without a sortedness check. A
/// list of plain arrays, whose order nobody checked, and a `nonordered`
/// level keep theirs.
#[test]
fn merges_of_tensor_rows_read_row_starts_once_and_skip_the_order_check() {
    fn merge_loops<'a>(b: &'a Block, out: &mut Vec<&'a Block>) {
        for s in b {
            match s {
                Stmt::For { var, body, .. } if var.as_str().starts_with("step") => out.push(body),
                Stmt::For { body, .. } => merge_loops(body, out),
                Stmt::If { then, els, .. } => {
                    merge_loops(then, out);
                    merge_loops(els, out);
                }
                _ => {}
            }
        }
    }
    fn loads(e: &Expr, suffix: &str) -> bool {
        match e {
            Expr::Load { buf, index, .. } => buf.as_str().ends_with(suffix) || loads(index, suffix),
            Expr::Bin(_, a, b) => loads(a, suffix) || loads(b, suffix),
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => loads(a, suffix),
            Expr::Select(c, a, b) => loads(c, suffix) || loads(a, suffix) || loads(b, suffix),
            _ => false,
        }
    }
    // Whether a statement of `b` loads a buffer named `…suffix`.
    fn reads(b: &Block, suffix: &str) -> bool {
        b.iter().any(|s| match s {
            Stmt::Let { value, .. } | Stmt::Assign { value, .. } | Stmt::Var { init: value, .. } => {
                loads(value, suffix)
            }
            Stmt::Check { cond, .. } => loads(cond, suffix),
            Stmt::Store { index, value, .. } => loads(index, suffix) || loads(value, suffix),
            Stmt::If { cond, then, els } => loads(cond, suffix) || reads(then, suffix) || reads(els, suffix),
            Stmt::For { lo, hi, body, .. } => loads(lo, suffix) || loads(hi, suffix) || reads(body, suffix),
            _ => false,
        })
    }
    let unsorted_checks = |p: &LoopProgram| p.checks.iter().filter(|c| c.message.contains("not sorted")).count();
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sparse/spadd_csr.hdl")).unwrap();
    let fill = lower(&src, "spadd_csr");
    // A stored union's phase bounds each row by its lists' lengths: no merge, no entry read.
    let bound = &fill.counts[0];
    assert!(bound.bound, "{fill}");
    let mut none = Vec::new();
    merge_loops(&bound.program.body, &mut none);
    assert!(none.is_empty() && !reads(&bound.program.body, "_crd1"), "a bound phase merges nothing:\n{fill}");
    // The same union returned unstored keeps its exact counting phase, which merges.
    let unstored = src.replace(") : tensor<?x{A_dim1}xf32, #CSR>)))", ")))").replacen("(generate(", "generate(", 1);
    let plain_rows = lower(&unstored, "spadd_rows");
    assert!(!plain_rows.counts[0].bound, "{plain_rows}");
    let count = &plain_rows.counts[0].program;
    for p in [&fill, &**count] {
        let mut loops = Vec::new();
        merge_loops(&p.body, &mut loops);
        assert_eq!(loops.len(), 1, "{p}");
        assert!(!reads(loops[0], "_pos1"), "a row start read inside the merge loop:\n{p}");
        assert_eq!(unsorted_checks(p), 0, "CSR rows are sorted already:\n{p}");
    }
    let plain = "nFun(n => nFun(m =>\nfun(xc: [int]_n => fun(xv: [float]_n => fun(yc: [int]_m => fun(yv: [float]_m =>\n  union(0, 0, zip(xc, xv), zip(yc, yv)) :>> map(fun(e => e.2 + e.3)) :>> reduce(+, 0)))))))\n";
    assert_eq!(unsorted_checks(&lower(plain, "plain")), 2, "plain arrays are checked");
    let nonordered = src.replace("j : compressed", "j : compressed(nonordered)");
    assert!(unsorted_checks(&lower(&nonordered, "nonordered")) >= 2, "a nonordered level is checked");
}

/// Run-time checks in a block, nested ones included.
fn check_count(b: &Block) -> usize {
    b.iter()
        .map(|s| match s {
            Stmt::Check { .. } => 1,
            Stmt::For { body, .. } => check_count(body),
            Stmt::If { then, els, .. } => check_count(then) + check_count(els),
            _ => 0,
        })
        .sum()
}

#[test]
fn checks_of_constants_are_left_out() {
    // `w@0`, `w@1`, `w@2` of a window of 3: each index is a `let` of a
    // constant, so its check always passes (and NVIDIA's OpenCL compiler
    // warned about `idx >= 0L && idx < 3L` with `idx = 0`).
    let p = lower(
        "nFun(n => fun(xs: [float]_n => xs :>> slide(3, 1) :>> map(fun(w => w@0 - 2.0 * w@1 + w@2))))",
        "stencil",
    );
    assert_eq!(check_count(&p.body), 0, "{p}");
    // An index past the window is still checked (it fails at run time).
    let p = lower("nFun(n => fun(xs: [float]_n => xs :>> slide(3, 1) :>> map(fun(w => w@3))))", "past");
    assert_eq!(check_count(&p.body), 1, "{p}");
}

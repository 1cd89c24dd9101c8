//! Lowering every example: the loop programs are valid, contain no Σ loop, and
//! show the closed-form or precomputed indices (insta snapshots).

use heddle_ir::loops::{Block, HostKind, LoopProgram, Stmt};

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
    let HostKind::PrefixSum { body, .. } = &p.host[0].kind;
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

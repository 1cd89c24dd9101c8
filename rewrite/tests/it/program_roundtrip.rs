//! Expr → RecExpr → Expr gives back the same tree, for every example and
//! for spellings the examples do not use.

use crate::program_common;

use heddle_rewrite::program::convert::{expr_to_rec, rec_to_expr};
use program_common::*;

fn round_trip(src: &str) {
    let e = heddle_ir::parser::parse_expr(src).unwrap_or_else(|d| panic!("{src}: {d:?}"));
    let back = rec_to_expr(&expr_to_rec(&e)).unwrap();
    assert_eq!(back, e, "{src}");
    assert_eq!(heddle_ir::printer::print_expr(&back), heddle_ir::printer::print_expr(&e));
}

#[test]
fn every_example_round_trips() {
    let files = hdl_files(root().join("examples"));
    assert!(files.len() >= 6);
    for f in files {
        let p = parse_file(&f);
        let back = rec_to_expr(&expr_to_rec(&p.kernel)).unwrap();
        assert_eq!(back, p.kernel, "{}", f.display());
    }
}

#[test]
fn spellings_are_kept() {
    for src in [
        "f(a)(b)",
        "f(a, b)(c)",
        "f(a)(b, c)",
        "xs :>> map(f)",
        "map(f)(xs)",
        "map(f, xs)",
        "fun(a, b => a + b)",
        "fun(a => fun(b => a + b))",
        "fun(a: int, b => fun(c, d => a))",
        "nFun(n => fun(xs: [float]_n => xs))",
        "let y = x + 1 in y * y",
        "select(a < b, (a, b).1, -a)",
        "(xs : [float]_4) @ 2",
        "reduce(max, 0.5e3)",
        "!(p.2) || true",
        "(a, b, c).3",
        "fun(x => x)(y)",
    ] {
        round_trip(src);
    }
}

#[test]
fn malformed_terms_are_errors_not_panics() {
    use egg::RecExpr;
    use heddle_rewrite::program::lang::Prog;
    assert!(rec_to_expr(&RecExpr::<Prog>::default()).is_err());
    let lone: RecExpr<Prog> = vec![Prog::Sym("x".into())].into();
    assert!(rec_to_expr(&lone).is_err());
}

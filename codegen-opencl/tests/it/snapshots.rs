//! The generated OpenCL for hand-written loop programs (Listing 5 and a
//! Listing-7-style kernel), and the programs the backend must refuse.

use crate::samples;

use heddle_codegen_opencl::{Dim, compile, launch::eval};
use heddle_ir::loops::{Expr, Stmt};

#[test]
fn listing5_opencl() {
    let k = compile(&samples::listing5()).expect("compiles");
    insta::assert_snapshot!(k.to_string());
}

#[test]
fn listing7_opencl() {
    let k = compile(&samples::listing7()).expect("compiles");
    insta::assert_snapshot!(k.to_string());
}

#[test]
fn scalar_mix_opencl() {
    let k = compile(&samples::scalar_mix()).expect("compiles");
    assert!(k.source.contains("cl_khr_fp64"), "double needs the extension");
    insta::assert_snapshot!(k.to_string());
}

#[test]
fn listing7_launch_sizes() {
    let k = compile(&samples::listing7()).expect("compiles");
    let nats = |n: &heddle_ir::Name| match n.as_str() {
        "n" => Some(1000),
        "R" => Some(4),
        "W" => Some(8),
        _ => None,
    };
    let sizes = k.launch.sizes(&nats).expect("evaluates");
    assert_eq!(sizes.global, vec![250 * 8, 4]);
    assert_eq!(sizes.local, Some(vec![8, 4]));
}

#[test]
fn listing5_launches_one_item_per_row() {
    let k = compile(&samples::listing5()).expect("compiles");
    assert!(matches!(&k.launch.dims[..], [Dim::Global { items: Expr::Var(n) }] if n.as_str() == "n"));
    let sizes = k.launch.sizes(&|_| Some(0)).expect("evaluates");
    assert_eq!(sizes.global, vec![1], "an empty range still launches one work-item");
}

#[test]
fn invalid_programs_are_diagnosed_not_panics() {
    let mut p = samples::listing5();
    p.body.push(Stmt::Assign { var: "nope".into(), value: Expr::index(1) });
    assert!(compile(&p).is_err());
}

#[test]
fn size_evaluation_reports_division_by_zero_and_overflow() {
    let e = Expr::bin(heddle_ir::loops::BinOp::Div, Expr::var("n"), Expr::var("R"));
    assert!(eval(&e, &|_| Some(0)).unwrap_err().contains("division by zero"));
    let e = Expr::bin(heddle_ir::loops::BinOp::Mul, Expr::var("n"), Expr::var("n"));
    assert!(eval(&e, &|_| Some(i64::MAX)).unwrap_err().contains("overflow"));
}

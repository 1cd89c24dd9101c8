//! Builders for hand-written loop programs and typed buffers for calls.
#![allow(dead_code)]

use heddle_codegen_cpu::{ArgValue, CpuKernel, Fault};
use heddle_ir::loops::{Arg, ArgKind, BinOp, Check, Expr, LoopProgram, Schedule, Stmt};
use heddle_ir::parser::parse_nat;
use heddle_ir::{Nat, ScalarType, Span};

pub const I32: ScalarType = ScalarType::I32;
pub const I64: ScalarType = ScalarType::I64;
pub const F32: ScalarType = ScalarType::F32;
pub const F64: ScalarType = ScalarType::F64;

pub fn nat(s: &str) -> Nat {
    parse_nat(s).expect("a valid natural")
}
pub fn arg(name: &str, kind: ArgKind) -> Arg {
    Arg { name: name.into(), kind }
}
pub fn input(name: &str, fields: &[ScalarType], len: &str) -> Arg {
    arg(name, ArgKind::Input { fields: fields.to_vec(), len: nat(len) })
}
pub fn output(name: &str, fields: &[ScalarType], len: &str) -> Arg {
    arg(name, ArgKind::Output { fields: fields.to_vec(), len: nat(len) })
}
pub fn v(n: &str) -> Expr {
    Expr::var(n)
}
pub fn i(k: i64) -> Expr {
    Expr::index(k)
}
pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::bin(op, a, b)
}
pub fn load(buf: &str, index: Expr, field: u32) -> Expr {
    Expr::load(buf, index, field)
}
pub fn cast(t: ScalarType, e: Expr) -> Expr {
    Expr::Cast(t, Box::new(e))
}
pub fn let_(var: &str, ty: ScalarType, value: Expr) -> Stmt {
    Stmt::Let { var: var.into(), ty, value }
}
pub fn var_(var: &str, ty: ScalarType, init: Expr) -> Stmt {
    Stmt::Var { var: var.into(), ty, init }
}
pub fn assign(var: &str, value: Expr) -> Stmt {
    Stmt::Assign { var: var.into(), value }
}
pub fn store(buf: &str, index: Expr, field: u32, value: Expr) -> Stmt {
    Stmt::Store { buf: buf.into(), index, field, value }
}
pub fn for_(var: &str, lo: Expr, hi: Expr, schedule: Schedule, body: Vec<Stmt>) -> Stmt {
    Stmt::For { var: var.into(), lo, hi, schedule, body }
}
pub fn checks(n: usize) -> Vec<Check> {
    (0..n).map(|k| Check { message: format!("check {k}"), span: Span::default() }).collect()
}
pub fn program(name: &str, args: Vec<Arg>, body: Vec<Stmt>, nchecks: usize) -> LoopProgram {
    LoopProgram {
        name: name.into(),
        args,
        host: vec![],
        body,
        checks: checks(nchecks),
        parallel_work: None,
        reassociable: vec![],
        ranges: vec![],
        counts: vec![],
        result: None,
        index_overflow_at: None,
    }
}

/// A buffer argument from a slice (the kernel may write it: pass outputs only
/// from buffers the test owns mutably).
pub fn buf<T>(xs: &mut [T]) -> ArgValue {
    ArgValue::Buffer(xs.as_mut_ptr().cast())
}

/// Calls over the whole range.
pub fn call(k: &CpuKernel, args: &[ArgValue]) -> Result<(), Fault> {
    // SAFETY: the tests pass buffers as long as the programs index them.
    unsafe { k.call(args, (i64::MIN, i64::MAX)) }
}

/// Listing 5: packed CSR SpMV, `values` records are (column: i32, value: f32).
pub fn csr_packed() -> LoopProgram {
    let body = vec![for_(
        "i",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![
            let_("start", I64, cast(I64, load("offset", v("i"), 0))),
            let_("end", I64, cast(I64, load("offset", bin(BinOp::Add, v("i"), i(1)), 0))),
            var_("acc", F32, Expr::Float(0.0, F32)),
            for_(
                "j",
                v("start"),
                v("end"),
                Schedule::Seq,
                vec![
                    let_("col", I64, cast(I64, load("values", v("j"), 0))),
                    Stmt::Check {
                        cond: bin(BinOp::And, bin(BinOp::Ge, v("col"), i(0)), bin(BinOp::Lt, v("col"), v("m"))),
                        id: 0,
                    },
                    assign(
                        "acc",
                        bin(BinOp::Add, v("acc"), bin(BinOp::Mul, load("values", v("j"), 1), load("xs", v("col"), 0))),
                    ),
                ],
            ),
            store("out", v("i"), 0, v("acc")),
        ],
    )];
    program(
        "csr_packed_spmv",
        vec![
            arg("n", ArgKind::Nat),
            arg("m", ArgKind::Nat),
            input("offset", &[I32], "n + 1"),
            input("values", &[I32, F32], "toNat(offset@n)"),
            input("xs", &[F32], "m"),
            output("out", &[F32], "n"),
        ],
        body,
        1,
    )
}

/// A packed CSR record: C layout of (i32, f32).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub col: i32,
    pub val: f32,
}

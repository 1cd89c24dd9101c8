//! Hand-written loop programs in the shape lowering produces: the paper's
//! Listing 5 (packed CSR SpMV, one row per work-item) and a Listing-7-style
//! parallel CSR SpMV (R rows per work-group, W work-items per row, partial
//! sums in local memory, a second reduction stage). Shared by the snapshot
//! tests here and the POCL tests of the `heddle` package.
#![allow(dead_code)]

use heddle_ir::loops::{Arg, ArgKind, BinOp, Check, Expr, LoopProgram, Schedule, Space, Stmt};
use heddle_ir::parser::parse_nat;
use heddle_ir::{Nat, ScalarType, Span};

const I32: ScalarType = ScalarType::I32;
const I64: ScalarType = ScalarType::I64;
const F32: ScalarType = ScalarType::F32;

fn nat(s: &str) -> Nat {
    parse_nat(s).expect("a valid natural")
}
fn arg(name: &str, kind: ArgKind) -> Arg {
    Arg { name: name.into(), kind }
}
fn v(n: &str) -> Expr {
    Expr::var(n)
}
fn i(k: i64) -> Expr {
    Expr::index(k)
}
fn add(a: Expr, b: Expr) -> Expr {
    Expr::bin(BinOp::Add, a, b)
}
fn sub(a: Expr, b: Expr) -> Expr {
    Expr::bin(BinOp::Sub, a, b)
}
fn mul(a: Expr, b: Expr) -> Expr {
    Expr::bin(BinOp::Mul, a, b)
}
fn div(a: Expr, b: Expr) -> Expr {
    Expr::bin(BinOp::Div, a, b)
}
fn widen(e: Expr) -> Expr {
    Expr::Cast(I64, Box::new(e))
}
fn let_(var: &str, value: Expr) -> Stmt {
    Stmt::Let { var: var.into(), ty: I64, value }
}
fn for_(var: &str, lo: Expr, hi: Expr, schedule: Schedule, body: Vec<Stmt>) -> Stmt {
    Stmt::For { var: var.into(), lo, hi, schedule, body }
}
/// `check 0 <= col < m`.
fn col_check(col: &str) -> Stmt {
    let cond = Expr::bin(BinOp::And, Expr::bin(BinOp::Ge, v(col), i(0)), Expr::bin(BinOp::Lt, v(col), v("m")));
    Stmt::Check { cond, id: 0 }
}
fn xs_check() -> Vec<Check> {
    vec![Check { message: "xs@x.1: index out of bounds for xs of length m".into(), span: Span::default() }]
}

/// Listing 5: `values :>> map(row => row :>> map(x => x.2 * xs@x.1) :>> reduce(+, 0))`.
pub fn listing5() -> LoopProgram {
    let body = vec![for_(
        "i",
        i(0),
        v("n"),
        Schedule::Parallel,
        vec![
            let_("start", widen(Expr::load("offset", v("i"), 0))),
            let_("end", widen(Expr::load("offset", add(v("i"), i(1)), 0))),
            Stmt::Var { var: "acc".into(), ty: F32, init: Expr::Float(0.0, F32) },
            for_(
                "j",
                v("start"),
                v("end"),
                Schedule::Seq,
                vec![
                    let_("col", widen(Expr::load("values", v("j"), 0))),
                    col_check("col"),
                    Stmt::Assign {
                        var: "acc".into(),
                        value: add(v("acc"), mul(Expr::load("values", v("j"), 1), Expr::load("xs", v("col"), 0))),
                    },
                ],
            ),
            Stmt::Store { buf: "out".into(), index: v("i"), field: 0, value: v("acc") },
        ],
    )];
    LoopProgram {
        name: "csr_packed_spmv".into(),
        args: vec![
            arg("n", ArgKind::Nat),
            arg("m", ArgKind::Nat),
            arg("offset", ArgKind::Input { fields: vec![I32], len: nat("n + 1") }),
            arg("values", ArgKind::Input { fields: vec![I32, F32], len: nat("toNat(offset@n)") }),
            arg("xs", ArgKind::Input { fields: vec![F32], len: nat("m") }),
            arg("out", ArgKind::Output { fields: vec![F32], len: nat("n") }),
        ],
        host: vec![],
        body,
        checks: xs_check(),
        parallel_work: None,
        reassociable: vec![],
        ranges: vec![],
        counts: vec![],
        result: None,
        index_overflow_at: None,
    }
}

/// Listing-7 style: work-group `g` takes rows `g*R .. g*R + R`; in it, local
/// id (w, r) takes row r's entries w, w + W, w + 2W, … (interleaved, so the
/// W items of a row read consecutive entries) into `partial[r*W + w]`; then
/// one item per row adds the row's W partial sums.
pub fn listing7() -> LoopProgram {
    let row_part = vec![
        Stmt::Var { var: "acc".into(), ty: F32, init: Expr::Float(0.0, F32) },
        for_(
            "j",
            i(0),
            div(add(sub(v("len"), v("w")), sub(v("W"), i(1))), v("W")),
            Schedule::Seq,
            vec![
                let_("k", add(v("start"), add(mul(v("j"), v("W")), v("w")))),
                let_("col", widen(Expr::load("col_indices", v("k"), 0))),
                col_check("col"),
                Stmt::Assign {
                    var: "acc".into(),
                    value: add(v("acc"), mul(Expr::load("values", v("k"), 0), Expr::load("xs", v("col"), 0))),
                },
            ],
        ),
        Stmt::Store { buf: "partial".into(), index: add(mul(v("r"), v("W")), v("w")), field: 0, value: v("acc") },
    ];
    let first = for_(
        "r",
        i(0),
        v("R"),
        Schedule::Local(1),
        vec![
            let_("row", add(mul(v("g"), v("R")), v("r"))),
            let_("start", widen(Expr::load("offset", v("row"), 0))),
            let_("len", sub(widen(Expr::load("offset", add(v("row"), i(1)), 0)), v("start"))),
            for_("w", i(0), v("W"), Schedule::Local(0), row_part),
        ],
    );
    let second = for_(
        "r2",
        i(0),
        v("R"),
        Schedule::Local(1),
        vec![for_(
            "lead",
            i(0),
            i(1),
            Schedule::Local(0),
            vec![
                Stmt::Var { var: "sum".into(), ty: F32, init: Expr::Float(0.0, F32) },
                for_(
                    "p",
                    i(0),
                    v("W"),
                    Schedule::Seq,
                    vec![Stmt::Assign {
                        var: "sum".into(),
                        value: add(v("sum"), Expr::load("partial", add(mul(v("r2"), v("W")), v("p")), 0)),
                    }],
                ),
                Stmt::Store { buf: "out".into(), index: add(mul(v("g"), v("R")), v("r2")), field: 0, value: v("sum") },
            ],
        )],
    );
    let body = vec![for_(
        "g",
        i(0),
        div(v("n"), v("R")),
        Schedule::Workgroup(0),
        vec![
            Stmt::Alloc { buf: "partial".into(), fields: vec![F32], len: mul(v("R"), v("W")), space: Space::Local },
            first,
            second,
        ],
    )];
    LoopProgram {
        name: "csr_spmv_parallel".into(),
        args: vec![
            arg("n", ArgKind::Nat),
            arg("m", ArgKind::Nat),
            arg("R", ArgKind::Nat),
            arg("W", ArgKind::Nat),
            arg("offset", ArgKind::Input { fields: vec![I32], len: nat("n + 1") }),
            arg("col_indices", ArgKind::Input { fields: vec![I32], len: nat("toNat(offset@n)") }),
            arg("values", ArgKind::Input { fields: vec![F32], len: nat("toNat(offset@n)") }),
            arg("xs", ArgKind::Input { fields: vec![F32], len: nat("m") }),
            arg("out", ArgKind::Output { fields: vec![F32], len: nat("n") }),
        ],
        host: vec![],
        body,
        checks: xs_check(),
        parallel_work: None,
        reassociable: vec![],
        ranges: vec![],
        counts: vec![],
        result: None,
        index_overflow_at: None,
    }
}

/// A top-level sequential sum in `double` over an input of (bool, i8) records:
/// exercises f64, bool storage, narrow wrapping arithmetic and the
/// single-work-item launch.
pub fn scalar_mix() -> LoopProgram {
    let body = vec![
        Stmt::Var { var: "acc".into(), ty: ScalarType::F64, init: Expr::Float(0.5, ScalarType::F64) },
        Stmt::Var { var: "small".into(), ty: ScalarType::I8, init: Expr::Int(-128, ScalarType::I8) },
        for_(
            "k",
            i(0),
            v("n"),
            Schedule::Seq,
            vec![Stmt::If {
                cond: Expr::load("flags", v("k"), 0),
                then: vec![
                    Stmt::Assign {
                        var: "acc".into(),
                        value: add(v("acc"), Expr::Cast(ScalarType::F64, Box::new(Expr::load("flags", v("k"), 1)))),
                    },
                    Stmt::Assign { var: "small".into(), value: add(v("small"), Expr::load("flags", v("k"), 1)) },
                ],
                els: vec![],
            }],
        ),
        Stmt::Store { buf: "out".into(), index: i(0), field: 0, value: v("acc") },
        Stmt::Store { buf: "out".into(), index: i(0), field: 1, value: v("small") },
        Stmt::Store {
            buf: "out".into(),
            index: i(0),
            field: 2,
            value: Expr::bin(BinOp::Lt, v("acc"), Expr::Float(f64::INFINITY, ScalarType::F64)),
        },
    ];
    LoopProgram {
        name: "scalar-mix".into(),
        args: vec![
            arg("n", ArgKind::Nat),
            arg("flags", ArgKind::Input { fields: vec![ScalarType::Bool, ScalarType::I8], len: nat("n") }),
            arg(
                "out",
                ArgKind::Output { fields: vec![ScalarType::F64, ScalarType::I8, ScalarType::Bool], len: nat("1") },
            ),
        ],
        host: vec![],
        body,
        checks: vec![],
        parallel_work: None,
        reassociable: vec![],
        ranges: vec![],
        counts: vec![],
        result: None,
        index_overflow_at: None,
    }
}

/// A work-group hand-off through local memory: work-group `g` fills
/// `tmp[w] = xs[g * W + w]` with one item per element, then each item `j`
/// stores `tmp[read(j)]`. `read` decides whether items read their own
/// element (`j`) or another's (`W - 1 - j`).
pub fn hand_off(read: Expr) -> LoopProgram {
    let fill = for_(
        "w",
        i(0),
        v("W"),
        Schedule::Local(0),
        vec![Stmt::Store {
            buf: "tmp".into(),
            index: v("w"),
            field: 0,
            value: Expr::load("xs", add(mul(v("g"), v("W")), v("w")), 0),
        }],
    );
    let drain = for_(
        "j",
        i(0),
        v("W"),
        Schedule::Local(0),
        vec![Stmt::Store {
            buf: "out".into(),
            index: add(mul(v("g"), v("W")), v("j")),
            field: 0,
            value: Expr::load("tmp", read, 0),
        }],
    );
    let body = vec![for_(
        "g",
        i(0),
        v("n"),
        Schedule::Workgroup(0),
        vec![Stmt::Alloc { buf: "tmp".into(), fields: vec![F32], len: v("W"), space: Space::Local }, fill, drain],
    )];
    LoopProgram {
        name: "hand_off".into(),
        args: vec![
            arg("n", ArgKind::Nat),
            arg("W", ArgKind::Nat),
            arg("xs", ArgKind::Input { fields: vec![F32], len: nat("n * W") }),
            arg("out", ArgKind::Output { fields: vec![F32], len: nat("n * W") }),
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
    }
}

/// Rows of a group handled by items of dimension 1, each row's entries by
/// items of dimension 0 (the shape lowering gives `mapLocal(1, … mapLocal(0,
/// …) :>> toLocal :>> reduce)`): the hand-off is inside the dimension-1
/// loop, after a check on the row that differs between items.
pub fn nested_hand_off() -> LoopProgram {
    let part = for_(
        "w",
        i(0),
        v("W"),
        Schedule::Local(0),
        vec![Stmt::Store {
            buf: "tmp".into(),
            index: add(v("slot"), v("w")),
            field: 0,
            value: Expr::Cast(F32, Box::new(add(v("row"), v("w")))),
        }],
    );
    let sum = vec![
        Stmt::Var { var: "acc".into(), ty: F32, init: Expr::Float(0.0, F32) },
        for_(
            "k",
            i(0),
            v("W"),
            Schedule::Seq,
            vec![Stmt::Assign {
                var: "acc".into(),
                value: add(v("acc"), Expr::load("tmp", add(v("slot"), v("k")), 0)),
            }],
        ),
        Stmt::Store { buf: "out".into(), index: v("row"), field: 0, value: v("acc") },
    ];
    let mut row_body = vec![
        let_("row", add(mul(v("g"), v("R")), v("r"))),
        Stmt::Check { cond: Expr::bin(BinOp::Lt, v("row"), v("n")), id: 0 },
        let_("slot", mul(v("r"), v("W"))),
        part,
    ];
    row_body.extend(sum);
    let body = vec![for_(
        "g",
        i(0),
        div(add(v("n"), sub(v("R"), i(1))), v("R")),
        Schedule::Workgroup(0),
        vec![
            Stmt::Alloc { buf: "tmp".into(), fields: vec![F32], len: mul(v("R"), v("W")), space: Space::Local },
            for_("r", i(0), v("R"), Schedule::Local(1), row_body),
        ],
    )];
    LoopProgram {
        name: "nested_hand_off".into(),
        args: vec![
            arg("n", ArgKind::Nat),
            arg("R", ArgKind::Nat),
            arg("W", ArgKind::Nat),
            arg("out", ArgKind::Output { fields: vec![F32], len: nat("n") }),
        ],
        host: vec![],
        body,
        checks: vec![Check { message: "row out of range".into(), span: Span::default() }],
        parallel_work: None,
        counts: vec![],
        result: None,
        index_overflow_at: None,
        reassociable: vec![],
        ranges: vec![],
    }
}

//! Checks that validated inputs make unnecessary.
//!
//! A program's [`InputRange`]s say what a valid tensor's coordinates satisfy
//! (`A_crd1 < A_dim1`). A runtime that validates the inputs against them once
//! before a launch may run code without the per-access checks they imply:
//! the check `e >= 0 && e < A_dim1` of a column `e` loaded from `A_crd1`.
//! [`implied_by_ranges`] recognises such a check (each backend asks it while
//! generating code); [`trusting_ranges`] is the program without them.

use super::{BinOp, Block, Expr, InputRange, LoopProgram, Stmt};
use crate::{Name, ScalarType};

/// Whether `cond` (a check's condition) holds for every input inside
/// `ranges`: `x >= 0 && x < bound` or `x < bound` where `x` is a load of a
/// ranged input field (through `let`s, whose values `let_value` gives, and
/// conversions to `i64`) and `bound` its range's bound.
pub fn implied_by_ranges<'e>(
    cond: &'e Expr,
    ranges: &[InputRange],
    let_value: &dyn Fn(&Name) -> Option<&'e Expr>,
) -> bool {
    let (x, bound) = match cond {
        Expr::Bin(BinOp::And, a, b) => match (&**a, &**b) {
            (Expr::Bin(BinOp::Ge, x, zero), Expr::Bin(BinOp::Lt, x2, bound))
                if x == x2 && matches!(**zero, Expr::Int(0, _)) =>
            {
                (x, bound)
            }
            _ => return false,
        },
        Expr::Bin(BinOp::Lt, x, bound) => (x, bound),
        _ => return false,
    };
    let Some((buf, field)) = loaded_input(x, let_value, 0) else { return false };
    ranges.iter().any(|r| r.buf == *buf && r.field == field && r.below == **bound)
}

/// The input field `e` is a load of, looking through `let`s and conversions
/// to `i64`.
fn loaded_input<'e>(
    e: &'e Expr,
    let_value: &dyn Fn(&Name) -> Option<&'e Expr>,
    depth: usize,
) -> Option<(&'e Name, u32)> {
    if depth > 16 {
        return None;
    }
    match e {
        Expr::Load { buf, field, .. } => Some((buf, *field)),
        Expr::Cast(ScalarType::I64, a) => loaded_input(a, let_value, depth + 1),
        Expr::Var(n) => loaded_input(let_value(n)?, let_value, depth + 1),
        _ => None,
    }
}

/// `prog` without the checks its ranges imply (see the module docs), and how
/// many it left out; `None` when it leaves out none. The check ids and
/// messages are unchanged, so the result reports the remaining failures as
/// `prog` does.
pub fn trusting_ranges(prog: &LoopProgram) -> Option<(LoopProgram, usize)> {
    if prog.ranges.is_empty() {
        return None;
    }
    let mut lets: Vec<(Name, Expr)> = Vec::new();
    let mut dropped = 0;
    let body = without_implied(&prog.body, &prog.ranges, &mut lets, &mut dropped);
    (dropped > 0).then(|| (LoopProgram { body, ..prog.clone() }, dropped))
}

fn without_implied(b: &Block, ranges: &[InputRange], lets: &mut Vec<(Name, Expr)>, dropped: &mut usize) -> Block {
    let mark = lets.len();
    let mut out = Block::new();
    for s in b {
        let kept = match s {
            Stmt::Check { cond, .. } => {
                let scope: &[(Name, Expr)] = lets;
                if implied_by_ranges(cond, ranges, &|n| scope.iter().rev().find(|(m, _)| m == n).map(|(_, v)| v)) {
                    *dropped += 1;
                    continue;
                }
                s.clone()
            }
            Stmt::Let { var, value, .. } => {
                lets.push((var.clone(), value.clone()));
                s.clone()
            }
            Stmt::For { var, lo, hi, schedule, body } => Stmt::For {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                schedule: *schedule,
                body: without_implied(body, ranges, lets, dropped),
            },
            Stmt::If { cond, then, els } => Stmt::If {
                cond: cond.clone(),
                then: without_implied(then, ranges, lets, dropped),
                els: without_implied(els, ranges, lets, dropped),
            },
            _ => s.clone(),
        };
        out.push(kept);
    }
    lets.truncate(mark);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::{Arg, ArgKind, Schedule};
    use crate::nat::Nat;

    fn program(bound: Expr) -> LoopProgram {
        let col = Expr::Load { buf: "crd".into(), index: Box::new(Expr::var("k")), field: 0 };
        let in_range = Expr::bin(
            BinOp::And,
            Expr::bin(BinOp::Ge, Expr::var("c"), Expr::index(0)),
            Expr::bin(BinOp::Lt, Expr::var("c"), bound),
        );
        let body = vec![Stmt::For {
            var: "k".into(),
            lo: Expr::index(0),
            hi: Expr::var("n"),
            schedule: Schedule::Seq,
            body: vec![
                Stmt::Let { var: "c".into(), ty: ScalarType::I64, value: col },
                Stmt::Check { cond: in_range, id: 0 },
                Stmt::Store { buf: "out".into(), index: Expr::var("k"), field: 0, value: Expr::var("c") },
            ],
        }];
        LoopProgram {
            name: "t".into(),
            args: vec![
                Arg { name: "n".into(), kind: ArgKind::Nat },
                Arg { name: "m".into(), kind: ArgKind::Nat },
                Arg {
                    name: "crd".into(),
                    kind: ArgKind::Input { fields: vec![ScalarType::I64], len: Nat::Var("n".into()) },
                },
                Arg {
                    name: "out".into(),
                    kind: ArgKind::Output { fields: vec![ScalarType::I64], len: Nat::Var("n".into()) },
                },
            ],
            host: vec![],
            body,
            checks: vec![super::super::Check { message: "column".into(), span: crate::Span::DUMMY }],
            parallel_work: None,
            reassociable: vec![],
            ranges: vec![InputRange { buf: "crd".into(), field: 0, below: Expr::var("m") }],
            counts: vec![],
            result: None,
            index_overflow_at: None,
        }
    }

    #[test]
    fn a_check_of_a_ranged_load_against_its_bound_is_left_out() {
        let (trusted, dropped) = trusting_ranges(&program(Expr::var("m"))).expect("one check is implied");
        assert_eq!(dropped, 1);
        let Stmt::For { body, .. } = &trusted.body[0] else { panic!("{trusted}") };
        assert!(!body.iter().any(|s| matches!(s, Stmt::Check { .. })), "{trusted}");
        assert_eq!(body.len(), 2);
    }

    #[test]
    fn a_check_against_another_bound_stays() {
        assert!(trusting_ranges(&program(Expr::var("n"))).is_none());
    }
}

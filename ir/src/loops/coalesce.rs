//! Atomic adds of consecutive iterations into one slot, made once.
//!
//! `scatterAdd` as a kernel's result is a parallel loop whose iterations
//! each end by adding a value into one slot of the output with an atomic
//! read-modify-write (`Stmt::AddAtomic`). When consecutive iterations add
//! into the same slot — a COO SpMV's entries of one row, a histogram of
//! sorted keys — every one of them contends for that slot: on a GPU a
//! power-law row of 200 000 entries becomes 200 000 serialised
//! compare-and-swap loops on one word, on a CPU a locked instruction per
//! entry.
//!
//! [`coalesce_atomic_runs`] splits such a loop into chunks of [`RUN_CHUNK`]
//! consecutive iterations, each chunk one parallel iteration that runs its
//! iterations in order and keeps the sum of a *run* of equal slots in a
//! local, adding it into the slot once, when the slot changes and at the
//! chunk's end. Any order of keys stays correct (a run may be one
//! iteration long); sorted keys make a chunk cost one atomic add per slot
//! it touches. Floats are then added in a different order than one atomic
//! per iteration, which the contract allows: the adds of a parallel
//! `scatterAdd` arrive in any order already (`Stmt::AddAtomic`).
//!
//! The loop qualifies when its body ends with its only writes to the
//! buffer, one or more `AddAtomic`s of distinct fields at one index
//! expression, and nothing before them reads the buffer, waits at a barrier
//! or runs a loop in parallel. A check that fails stops the kernel, so a
//! run's pending sum never reaches a result anyone reads.

use super::{BinOp, Block, Expr, LoopProgram, Schedule, Stmt};
use crate::{Name, ScalarType};
use std::collections::HashSet;

/// Iterations per chunk: enough that a row of a sorted COO matrix costs
/// about one atomic add per chunk it spans, few enough that a loop of
/// thousands of iterations still spreads over a GPU's work-items.
pub const RUN_CHUNK: i64 = 32;

/// `prog` with each qualifying parallel loop of atomic adds (see the
/// module documentation) run in chunks that add each run of one slot once;
/// its counting phases too. The loop's iterations, checks and their order
/// within a chunk are unchanged.
pub fn coalesce_atomic_runs(prog: &mut LoopProgram) {
    for phase in &mut prog.counts {
        coalesce_atomic_runs(&mut phase.program);
    }
    let mut taken = HashSet::new();
    for a in &prog.args {
        taken.insert(a.name.clone());
    }
    names_in_block(&prog.body, &mut taken);
    let outputs: Vec<(Name, Vec<ScalarType>)> = prog
        .args
        .iter()
        .filter_map(|a| match &a.kind {
            super::ArgKind::Output { fields, .. } => Some((a.name.clone(), fields.clone())),
            _ => None,
        })
        .collect();
    let fields_of = |buf: &Name| outputs.iter().find(|(n, _)| n == buf).map(|(_, f)| f.clone());
    let weighed = prog.parallel_work.as_ref().map(|w| w.var.clone());
    let mut fresh = Fresh { taken };
    let body = std::mem::take(&mut prog.body);
    prog.body = rewrite_block(body, &fields_of, weighed.as_ref(), &mut fresh);
}

fn rewrite_block(
    block: Block,
    fields_of: &dyn Fn(&Name) -> Option<Vec<ScalarType>>,
    weighed: Option<&Name>,
    fresh: &mut Fresh,
) -> Block {
    block
        .into_iter()
        .map(|s| match s {
            Stmt::For { var, lo, hi, schedule: Schedule::Parallel, body } if Some(&var) != weighed => {
                match qualifies(&body, fields_of) {
                    Some(run) => chunked(var, lo, hi, body, run, fresh),
                    None => Stmt::For { var, lo, hi, schedule: Schedule::Parallel, body },
                }
            }
            Stmt::If { cond, then, els } => Stmt::If {
                cond,
                then: rewrite_block(then, fields_of, weighed, fresh),
                els: rewrite_block(els, fields_of, weighed, fresh),
            },
            other => other,
        })
        .collect()
}

/// The adds a qualifying loop body ends with.
struct Run {
    buf: Name,
    index: Expr,
    /// (field, its type) of each add, in order.
    fields: Vec<(u32, ScalarType)>,
    /// How many statements precede the adds.
    prefix: usize,
}

fn qualifies(body: &Block, fields_of: &dyn Fn(&Name) -> Option<Vec<ScalarType>>) -> Option<Run> {
    let adds = body.iter().rev().take_while(|s| matches!(s, Stmt::AddAtomic { .. })).count();
    if adds == 0 {
        return None;
    }
    let prefix = body.len() - adds;
    let Stmt::AddAtomic { buf, index, .. } = &body[prefix] else { return None };
    let types = fields_of(buf)?;
    let mut fields = Vec::new();
    for s in &body[prefix..] {
        let Stmt::AddAtomic { buf: b, index: i, field, .. } = s else { return None };
        if b != buf || i != index || fields.iter().any(|(f, _)| f == field) {
            return None;
        }
        fields.push((*field, *types.get(*field as usize)?));
    }
    if !body[..prefix].iter().all(|s| safe_before(s, buf)) {
        return None;
    }
    Some(Run { buf: buf.clone(), index: index.clone(), fields, prefix })
}

/// Whether `s` may run before a chunk's pending adds into `buf`: it does
/// not touch `buf`, wait at a barrier, or run a loop in parallel.
fn safe_before(s: &Stmt, buf: &Name) -> bool {
    let mut names = HashSet::new();
    names_in_block(std::slice::from_ref(s), &mut names);
    if names.contains(buf) {
        return false;
    }
    fn sequential(b: &[Stmt]) -> bool {
        b.iter().all(|s| match s {
            Stmt::Barrier => false,
            Stmt::For { schedule, body, .. } => *schedule == Schedule::Seq && sequential(body),
            Stmt::If { then, els, .. } => sequential(then) && sequential(els),
            _ => true,
        })
    }
    sequential(std::slice::from_ref(s))
}

fn chunked(var: Name, lo: Expr, hi: Expr, mut body: Block, run: Run, fresh: &mut Fresh) -> Stmt {
    let chunk = fresh.name(&format!("{var}_chunk"));
    let start = fresh.name(&format!("{var}_start"));
    let have = fresh.name("run_open");
    let slot = fresh.name("run_slot");
    let sums: Vec<Name> = run.fields.iter().map(|_| fresh.name("run_sum")).collect();
    let values: Vec<Expr> = body
        .drain(run.prefix..)
        .map(|s| match s {
            Stmt::AddAtomic { value, .. } => value,
            _ => unreachable!("`qualifies` saw only adds after the prefix"),
        })
        .collect();
    let flush = |sums: &[Name]| -> Block {
        run.fields
            .iter()
            .zip(sums)
            .map(|((field, _), sum)| Stmt::AddAtomic {
                buf: run.buf.clone(),
                index: Expr::var(slot.clone()),
                field: *field,
                value: Expr::var(sum.clone()),
            })
            .collect()
    };
    // Same slot as the open run: add to its sums. Otherwise flush the open
    // run (if any) and open one at this slot with this iteration's values.
    let same = Expr::bin(
        BinOp::And,
        Expr::var(have.clone()),
        Expr::bin(BinOp::Eq, run.index.clone(), Expr::var(slot.clone())),
    );
    let extend = sums
        .iter()
        .zip(&values)
        .map(|(sum, v)| Stmt::Assign {
            var: sum.clone(),
            value: Expr::bin(BinOp::Add, Expr::var(sum.clone()), v.clone()),
        })
        .collect();
    let mut open = vec![Stmt::If { cond: Expr::var(have.clone()), then: flush(&sums), els: Block::new() }];
    open.push(Stmt::Assign { var: slot.clone(), value: run.index.clone() });
    open.extend(sums.iter().zip(&values).map(|(sum, v)| Stmt::Assign { var: sum.clone(), value: v.clone() }));
    open.push(Stmt::Assign { var: have.clone(), value: Expr::Bool(true) });
    body.push(Stmt::If { cond: same, then: extend, els: open });

    let c = || Expr::index(RUN_CHUNK);
    let is_zero = matches!(lo, Expr::Int(0, _));
    let offset = Expr::bin(BinOp::Mul, Expr::var(chunk.clone()), c());
    let first = if is_zero { offset } else { Expr::bin(BinOp::Add, lo.clone(), offset) };
    let mut outer = vec![
        Stmt::Let { var: start.clone(), ty: ScalarType::I64, value: first },
        Stmt::Var { var: have.clone(), ty: ScalarType::Bool, init: Expr::Bool(false) },
        Stmt::Var { var: slot.clone(), ty: ScalarType::I64, init: Expr::index(0) },
    ];
    for (sum, (_, ty)) in sums.iter().zip(&run.fields) {
        outer.push(Stmt::Var { var: sum.clone(), ty: *ty, init: zero(*ty) });
    }
    let end = Expr::bin(BinOp::Min, hi.clone(), Expr::bin(BinOp::Add, Expr::var(start.clone()), c()));
    outer.push(Stmt::For { var, lo: Expr::var(start), hi: end, schedule: Schedule::Seq, body });
    outer.push(Stmt::If { cond: Expr::var(have), then: flush(&sums), els: Block::new() });
    // ceil((hi - lo) / C) chunks, none for an empty range.
    let span = Expr::bin(BinOp::Max, if is_zero { hi } else { Expr::bin(BinOp::Sub, hi, lo) }, Expr::index(0));
    let chunks = Expr::bin(BinOp::Div, Expr::bin(BinOp::Add, span, Expr::index(RUN_CHUNK - 1)), c());
    Stmt::For { var: chunk, lo: Expr::index(0), hi: chunks, schedule: Schedule::Parallel, body: outer }
}

fn zero(ty: ScalarType) -> Expr {
    if ty.is_float() { Expr::Float(0.0, ty) } else { Expr::Int(0, ty) }
}

/// Names not used anywhere in the program.
struct Fresh {
    taken: HashSet<Name>,
}

impl Fresh {
    fn name(&mut self, base: &str) -> Name {
        let mut n = 0;
        loop {
            let candidate = Name::from(if n == 0 { base.to_string() } else { format!("{base}{n}") });
            if self.taken.insert(candidate.clone()) {
                return candidate;
            }
            n += 1;
        }
    }
}

/// Every name `b` declares, binds, reads or writes.
fn names_in_block(b: &[Stmt], out: &mut HashSet<Name>) {
    for s in b {
        match s {
            Stmt::Let { var, value, .. } | Stmt::Var { var, init: value, .. } | Stmt::Assign { var, value } => {
                out.insert(var.clone());
                value.collect_names(out);
            }
            Stmt::Store { buf, index, value, .. } | Stmt::AddAtomic { buf, index, value, .. } => {
                out.insert(buf.clone());
                index.collect_names(out);
                value.collect_names(out);
            }
            Stmt::For { var, lo, hi, body, .. } => {
                out.insert(var.clone());
                lo.collect_names(out);
                hi.collect_names(out);
                names_in_block(body, out);
            }
            Stmt::If { cond, then, els } => {
                cond.collect_names(out);
                names_in_block(then, out);
                names_in_block(els, out);
            }
            Stmt::Alloc { buf, len, .. } => {
                out.insert(buf.clone());
                len.collect_names(out);
            }
            Stmt::Sort { buf, lo, len } => {
                out.insert(buf.clone());
                lo.collect_names(out);
                len.collect_names(out);
            }
            Stmt::Check { cond, .. } => cond.collect_names(out),
            Stmt::Barrier => {}
        }
    }
}

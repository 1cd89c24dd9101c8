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

/// Work-items per work-group of a loop [`group_atomic_runs`] rewrites:
/// 8 192 consecutive iterations (`RUN_GROUP × RUN_CHUNK`) per group, so a
/// row of 231 680 entries costs about 29 atomic adds, and a size every
/// OpenCL GPU runs (8 warps on NVIDIA, 4 wavefronts on AMD). Its `__local`
/// buffers take `RUN_GROUP × (16 + 4 × record)` bytes, within the 32 KiB
/// OpenCL guarantees for up to [`RUN_GROUP_FIELDS`] fields of 8 bytes.
pub const RUN_GROUP: i64 = 256;

/// At most this many fields per add: more would need more `__local` memory
/// than every device has; such loops keep their per-chunk atomic adds.
pub const RUN_GROUP_FIELDS: usize = 2;

/// `prog` with a chunked loop of atomic adds ([`coalesce_atomic_runs`]) run
/// by work-groups of [`RUN_GROUP`] items that combine their chunks' boundary
/// runs before adding them: for the OpenCL backend.
///
/// In a chunk only its first and last run can share a slot with other
/// chunks; the runs between are whole and are added as before. Each item
/// keeps its chunk's first run `(slot, sum)` and last run (a chunk of one
/// run keeps it first and `(slot, 0)` last; an item past the end keeps
/// slot -1 twice) in `__local` memory, entries `2 item` and `2 item + 1` in
/// order. A segmented suffix sum over the `2 RUN_GROUP` entries (log2 steps,
/// segments being maximal stretches of one slot) gives each segment's first
/// entry the segment's total, which it adds with one atomic add: one per
/// distinct slot per group for sorted keys (a long row: one per 8 192
/// entries, not one per 32). Unsorted keys find little to merge and stay
/// correct, each run's sum being added exactly once.
///
/// Applies only where the program's one parallel loop is such a chunked
/// loop at its top level, with no temporaries (an arena temporary is
/// refused in a kernel with barriers) and at most [`RUN_GROUP_FIELDS`]
/// fields; anything else is left as it is.
pub fn group_atomic_runs(prog: &mut LoopProgram) {
    let loops = parallel_loops(&prog.body);
    if loops != 1 {
        return;
    }
    let Some(at) = prog.body.iter().position(|s| chunked_parts(s).is_some()) else { return };
    let mut taken = HashSet::new();
    for a in &prog.args {
        taken.insert(a.name.clone());
    }
    names_in_block(&prog.body, &mut taken);
    let mut fresh = Fresh { taken };
    let stmt = prog.body.remove(at);
    let grouped = grouped(stmt, &mut fresh);
    prog.body.splice(at..at, grouped);
}

/// Non-sequential loops in `b`, at any depth.
fn parallel_loops(b: &[Stmt]) -> usize {
    b.iter()
        .map(|s| match s {
            Stmt::For { schedule, body, .. } => usize::from(*schedule != Schedule::Seq) + parallel_loops(body),
            Stmt::If { then, els, .. } => parallel_loops(then) + parallel_loops(els),
            _ => 0,
        })
        .sum()
}

/// What [`chunked`] made, recognised.
struct Parts {
    have: Name,
    slot: Name,
    sums: Vec<(Name, ScalarType)>,
    buf: Name,
    fields: Vec<u32>,
}

fn chunked_parts(s: &Stmt) -> Option<Parts> {
    let Stmt::For { var: chunk, lo: Expr::Int(0, _), schedule: Schedule::Parallel, body, .. } = s else { return None };
    let [
        Stmt::Let { value: start, .. },
        Stmt::Var { var: have, ty: ScalarType::Bool, .. },
        Stmt::Var { var: slot, ty: ScalarType::I64, .. },
        rest @ ..,
    ] = &body[..]
    else {
        return None;
    };
    if !start.reads_var(chunk) {
        return None;
    }
    let n = rest.len().checked_sub(2)?;
    if n == 0 || n > RUN_GROUP_FIELDS {
        return None;
    }
    let mut sums = Vec::new();
    for v in &rest[..n] {
        let Stmt::Var { var, ty, .. } = v else { return None };
        sums.push((var.clone(), *ty));
    }
    let Stmt::For { schedule: Schedule::Seq, body: seq, .. } = &rest[n] else { return None };
    let Stmt::If { cond: Expr::Var(h), then: flush, els } = &rest[n + 1] else { return None };
    if h != have || !els.is_empty() || flush.len() != n {
        return None;
    }
    let mut buf = None;
    let mut fields = Vec::new();
    for (s, (sum, _)) in flush.iter().zip(&sums) {
        let Stmt::AddAtomic { buf: b, index: Expr::Var(i), field, value: Expr::Var(v) } = s else { return None };
        if i != slot || v != sum || buf.is_some_and(|x: &Name| x != b) {
            return None;
        }
        buf = Some(b);
        fields.push(*field);
    }
    // The loop's last statement extends the open run or opens one, adding
    // the open run first where there is one.
    let Some(Stmt::If { els: open, .. }) = seq.last() else { return None };
    let Some(Stmt::If { cond: Expr::Var(h), then: f, .. }) = open.first() else { return None };
    if h != have || f != flush {
        return None;
    }
    if has_alloc(seq) {
        return None;
    }
    Some(Parts { have: have.clone(), slot: slot.clone(), sums, buf: buf?.clone(), fields })
}

fn has_alloc(b: &[Stmt]) -> bool {
    b.iter().any(|s| match s {
        Stmt::Alloc { .. } | Stmt::Sort { .. } | Stmt::Barrier => true,
        Stmt::For { body, .. } => has_alloc(body),
        Stmt::If { then, els, .. } => has_alloc(then) || has_alloc(els),
        _ => false,
    })
}

fn grouped(stmt: Stmt, fresh: &mut Fresh) -> Block {
    let parts = chunked_parts(&stmt).expect("checked by the caller");
    let Stmt::For { var: chunk, hi: chunks, body, .. } = stmt else { unreachable!() };
    let n = parts.sums.len();
    let group = fresh.name("run_group");
    let item = fresh.name("run_item");
    let kept = fresh.name("run_kept");
    let first_slot_var = fresh.name("run_first_slot");
    let first_sum_vars: Vec<Name> = (0..n).map(|_| fresh.name("run_first_sum")).collect();
    // __local buffers: the slots of the first and last runs (read-only
    // once written), their sums with a `stop` flag in field 0 (the entry's
    // segment ends within the stretch its sum covers), and what a step adds.
    let slots_first = fresh.name("runs_first_slot");
    let slots_last = fresh.name("runs_last_slot");
    let first = fresh.name("runs_first");
    let last = fresh.name("runs_last");
    let first_add = fresh.name("runs_first_add");
    let last_add = fresh.name("runs_last_add");
    let tys: Vec<ScalarType> = parts.sums.iter().map(|(_, t)| *t).collect();
    let mut rec = vec![ScalarType::I32];
    rec.extend(&tys);
    let g = || Expr::index(RUN_GROUP);
    let v = |n: &Name| Expr::var(n.clone());
    let it = || Expr::var(item.clone());
    let at = |d: i64| if d == 0 { it() } else { Expr::bin(BinOp::Add, it(), Expr::index(d)) };
    let i32c = |x: i64| Expr::Int(x, ScalarType::I32);
    let ld = |b: &Name, i: Expr, f: u32| Expr::load(b.clone(), i, f);
    let sel = |c: Expr, a: Expr, b: Expr| Expr::Select(Box::new(c), Box::new(a), Box::new(b));
    let store = |b: &Name, i: Expr, f: u32, value: Expr| Stmt::Store { buf: b.clone(), index: i, field: f, value };
    let local_for =
        |body: Block| Stmt::For { var: item.clone(), lo: Expr::index(0), hi: g(), schedule: Schedule::Local(0), body };

    let mut allocs = Vec::new();
    for b in [&slots_first, &slots_last] {
        allocs.push(Stmt::Alloc {
            buf: b.clone(),
            fields: vec![ScalarType::I64],
            len: g(),
            space: super::Space::Local,
        });
    }
    for b in [&first, &last, &first_add, &last_add] {
        allocs.push(Stmt::Alloc { buf: b.clone(), fields: rec.clone(), len: g(), space: super::Space::Local });
    }

    // 1. Each item runs its chunk, keeping the first run instead of adding it.
    let mut body = body;
    let final_flush = body.pop();
    debug_assert!(matches!(final_flush, Some(Stmt::If { .. })));
    let Some(Stmt::For { body: seq, .. }) = body.last_mut() else { unreachable!() };
    let Some(Stmt::If { els: open, .. }) = seq.last_mut() else { unreachable!() };
    let Some(Stmt::If { then: flush, .. }) = open.first_mut() else { unreachable!() };
    let add = std::mem::take(flush);
    let mut keep: Block = vec![Stmt::Assign { var: first_slot_var.clone(), value: v(&parts.slot) }];
    for (f, (s, _)) in first_sum_vars.iter().zip(&parts.sums) {
        keep.push(Stmt::Assign { var: f.clone(), value: v(s) });
    }
    keep.push(Stmt::Assign { var: kept.clone(), value: Expr::Bool(true) });
    *flush = vec![Stmt::If { cond: v(&kept), then: add, els: keep }];
    let start = body.remove(0);
    let seq_loop = body.pop().expect("the chunk's loop");
    let mut chunk_body = vec![
        Stmt::Let {
            var: chunk.clone(),
            ty: ScalarType::I64,
            value: Expr::bin(BinOp::Add, Expr::bin(BinOp::Mul, v(&group), g()), it()),
        },
        Stmt::Var { var: kept.clone(), ty: ScalarType::Bool, init: Expr::Bool(false) },
        Stmt::Var { var: first_slot_var.clone(), ty: ScalarType::I64, init: Expr::index(-1) },
    ];
    for (f, ty) in first_sum_vars.iter().zip(&tys) {
        chunk_body.push(Stmt::Var { var: f.clone(), ty: *ty, init: zero(*ty) });
    }
    chunk_body.extend(body); // have, slot, the sums
    chunk_body.push(Stmt::If {
        cond: Expr::bin(BinOp::Lt, v(&chunk), chunks.clone()),
        then: vec![start, seq_loop],
        els: Block::new(),
    });
    let have = || v(&parts.have);
    chunk_body.push(store(
        &slots_first,
        it(),
        0,
        sel(v(&kept), v(&first_slot_var), sel(have(), v(&parts.slot), Expr::index(-1))),
    ));
    chunk_body.push(store(&slots_last, it(), 0, sel(have(), v(&parts.slot), Expr::index(-1))));
    for (k, ((s, ty), f)) in parts.sums.iter().zip(&first_sum_vars).enumerate() {
        let k = k as u32 + 1;
        chunk_body.push(store(&first, it(), k, sel(v(&kept), v(f), v(s))));
        chunk_body.push(store(&last, it(), k, sel(v(&kept), v(s), zero(*ty))));
    }
    let mut per_group = vec![local_for(chunk_body)];

    // 2. Entry p's segment ends at p when the next entry's slot differs.
    let differs = |a: Expr, b: Expr| sel(Expr::bin(BinOp::Ne, a, b), i32c(1), i32c(0));
    per_group.push(local_for(vec![
        store(&first, it(), 0, differs(ld(&slots_first, it(), 0), ld(&slots_last, it(), 0))),
        store(
            &last,
            it(),
            0,
            sel(
                Expr::bin(
                    BinOp::Or,
                    Expr::bin(BinOp::Ge, at(1), g()),
                    Expr::bin(BinOp::Ne, ld(&slots_last, it(), 0), ld(&slots_first, at(1), 0)),
                ),
                i32c(1),
                i32c(0),
            ),
        ),
    ]));

    // 3. Segmented suffix sums, entry p adding entry p + w where its segment
    // goes on past the stretch of w entries it covers: w = 1, 2, 4, …
    let mut w = 1;
    while w < 2 * RUN_GROUP {
        // (entry, its step buffer, the entry w after it and its item's offset)
        let pairs: [(&Name, &Name, &Name, i64); 2] = if w == 1 {
            [(&first, &first_add, &last, 0), (&last, &last_add, &first, 1)]
        } else {
            [(&first, &first_add, &first, w / 2), (&last, &last_add, &last, w / 2)]
        };
        let mut read = Block::new();
        let mut update = Block::new();
        for (entry, add, next, d) in pairs {
            let goes_on = Expr::bin(BinOp::Eq, ld(entry, it(), 0), i32c(0));
            let cond = if d == 0 { goes_on } else { Expr::bin(BinOp::And, Expr::bin(BinOp::Lt, at(d), g()), goes_on) };
            let mut then = vec![store(add, it(), 0, ld(next, at(d), 0))];
            let mut els = vec![store(add, it(), 0, i32c(0))];
            for (k, ty) in tys.iter().enumerate() {
                let k = k as u32 + 1;
                then.push(store(add, it(), k, ld(next, at(d), k)));
                els.push(store(add, it(), k, zero(*ty)));
            }
            read.push(Stmt::If { cond, then, els });
            update.push(store(entry, it(), 0, Expr::bin(BinOp::Max, ld(entry, it(), 0), ld(add, it(), 0))));
            for k in 1..=n as u32 {
                update.push(store(entry, it(), k, Expr::bin(BinOp::Add, ld(entry, it(), k), ld(add, it(), k))));
            }
        }
        per_group.push(local_for(read));
        per_group.push(local_for(update));
        w *= 2;
    }

    // 4. The first entry of each segment adds the segment's sum.
    let head_first = fresh.name("run_head");
    let head_last = fresh.name("run_head");
    let adds = |entry: &Name, slot: &Name| -> Block {
        parts
            .fields
            .iter()
            .enumerate()
            .map(|(k, field)| Stmt::AddAtomic {
                buf: parts.buf.clone(),
                index: v(slot),
                field: *field,
                value: ld(entry, it(), k as u32 + 1),
            })
            .collect()
    };
    let nonneg = |s: &Name| Expr::bin(BinOp::Ge, v(s), Expr::index(0));
    per_group.push(local_for(vec![
        Stmt::Let { var: head_first.clone(), ty: ScalarType::I64, value: ld(&slots_first, it(), 0) },
        Stmt::If {
            cond: Expr::bin(
                BinOp::And,
                nonneg(&head_first),
                Expr::bin(
                    BinOp::Or,
                    Expr::bin(BinOp::Eq, it(), Expr::index(0)),
                    Expr::bin(
                        BinOp::Ne,
                        ld(&slots_last, Expr::bin(BinOp::Sub, it(), Expr::index(1)), 0),
                        v(&head_first),
                    ),
                ),
            ),
            then: adds(&first, &head_first),
            els: Block::new(),
        },
        Stmt::Let { var: head_last.clone(), ty: ScalarType::I64, value: ld(&slots_last, it(), 0) },
        Stmt::If {
            cond: Expr::bin(
                BinOp::And,
                nonneg(&head_last),
                Expr::bin(BinOp::Ne, ld(&slots_first, it(), 0), v(&head_last)),
            ),
            then: adds(&last, &head_last),
            els: Block::new(),
        },
    ]));

    let groups = Expr::bin(BinOp::Div, Expr::bin(BinOp::Add, chunks, Expr::index(RUN_GROUP - 1)), g());
    allocs.push(Stmt::For {
        var: group,
        lo: Expr::index(0),
        hi: groups,
        schedule: Schedule::Workgroup(0),
        body: per_group,
    });
    allocs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::{Arg, ArgKind, Space};
    use crate::nat::Nat;

    /// `for i in 0 .. n parallel { out[keys[i]] += vals[i] (atomic) }` with
    /// `fields` fields added, coalesced into chunks; `extra` adds a second
    /// parallel loop.
    fn program(fields: usize, extra: bool) -> LoopProgram {
        let f = vec![ScalarType::F32; fields];
        let arg = |name: &str, kind| Arg { name: name.into(), kind };
        let adds = (0..fields as u32).map(|k| Stmt::AddAtomic {
            buf: "out".into(),
            index: Expr::load("keys", Expr::var("i"), 0),
            field: k,
            value: Expr::load("vals", Expr::var("i"), 0),
        });
        let lp = |var: &str, body| Stmt::For {
            var: var.into(),
            lo: Expr::index(0),
            hi: Expr::var("n"),
            schedule: Schedule::Parallel,
            body,
        };
        let mut body = vec![lp("i", adds.collect())];
        if extra {
            body.push(lp("j", vec![]));
        }
        let mut p = LoopProgram {
            name: "adds".into(),
            args: vec![
                arg("n", ArgKind::Nat),
                arg("keys", ArgKind::Input { fields: vec![ScalarType::I64], len: Nat::var("n") }),
                arg("vals", ArgKind::Input { fields: vec![ScalarType::F32], len: Nat::var("n") }),
                arg("out", ArgKind::Output { fields: f, len: Nat::var("n") }),
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
        };
        coalesce_atomic_runs(&mut p);
        p
    }

    fn count(b: &[Stmt], pred: &dyn Fn(&Stmt) -> bool) -> usize {
        b.iter()
            .map(|s| {
                usize::from(pred(s))
                    + match s {
                        Stmt::For { body, .. } => count(body, pred),
                        Stmt::If { then, els, .. } => count(then, pred) + count(els, pred),
                        _ => 0,
                    }
            })
            .sum()
    }

    #[test]
    fn a_chunked_loop_runs_in_work_groups_that_combine_boundary_runs() {
        for fields in 1..=RUN_GROUP_FIELDS {
            let mut p = program(fields, false);
            group_atomic_runs(&mut p);
            p.validate().unwrap_or_else(|e| panic!("{e}: {:?}", p.body));
            let local = count(&p.body, &|s| matches!(s, Stmt::Alloc { space: Space::Local, .. }));
            assert_eq!(local, 6, "{:?}", p.body);
            let groups = count(&p.body, &|s| matches!(s, Stmt::For { schedule: Schedule::Workgroup(0), .. }));
            assert_eq!(groups, 1);
            // Interior runs in the chunk's loop; the two boundary entries of an item.
            let adds = count(&p.body, &|s| matches!(s, Stmt::AddAtomic { .. }));
            assert_eq!(adds, 3 * fields);
            // The suffix sum's steps: w = 1, 2, … up to RUN_GROUP over 2 RUN_GROUP entries.
            let steps = RUN_GROUP.trailing_zeros() as usize + 1;
            let items = count(&p.body, &|s| matches!(s, Stmt::For { schedule: Schedule::Local(0), .. }));
            assert_eq!(items, 3 + 2 * steps);
        }
    }

    #[test]
    fn other_loops_and_too_many_fields_keep_their_chunks() {
        for (fields, extra) in [(1, true), (RUN_GROUP_FIELDS + 1, false)] {
            let before = program(fields, extra);
            let mut p = before.clone();
            group_atomic_runs(&mut p);
            assert_eq!(p, before, "{fields} fields, another loop: {extra}");
        }
    }
}

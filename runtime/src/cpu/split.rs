//! Splitting the top-level parallel loop into chunks of equal work.
//!
//! Rows of a sparse matrix differ wildly in length (power-law row lengths,
//! a band of dense rows), so equal *numbers* of rows are not equal work.
//! Lowering states the work of one iteration in `parallel_work` (for CSR,
//! the row's nonzeros plus one); the work of every iteration is computed by
//! a small JIT-compiled kernel (`work[i - lo] = max(work(i), 0)`, itself
//! split by rows), summed into a prefix, and cut at equal fractions of the
//! total. Without `parallel_work` the range is cut into equal lengths.

use super::{arguments, compile_cached, pool, Args};
use crate::launch::{eval_index_expr, Launch};
use heddle_codegen_cpu::{ArgValue, CpuKernel};
use heddle_ir::loops::{Arg, ArgKind, BinOp, Expr, LoopProgram, Schedule, Stmt};
use heddle_ir::{Name, Nat, ScalarType};

/// Chunks per thread: more than one, so that a thread slowed down by
/// another process on a shared machine does not hold the others up.
const CHUNKS_PER_THREAD: usize = 4;

/// How one launch is split: disjoint ranges of the top-level parallel loop
/// (or one call over everything) and the threads to run them on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The ranges, in loop order.
    pub chunks: Vec<(i64, i64)>,
    /// Threads to use.
    pub threads: usize,
}

impl Plan {
    /// One call over the whole range.
    pub fn whole() -> Plan {
        Plan { chunks: vec![(i64::MIN, i64::MAX)], threads: 1 }
    }
}

/// Splits the launch of `kernel` (compiled from `prog`) for `threads` threads.
/// Anything that prevents a split (a kernel that is not one parallel loop,
/// bounds that cannot be evaluated on the host) gives [`Plan::whole`].
pub fn plan(prog: &LoopProgram, kernel: &CpuKernel, launch: &mut Launch, threads: usize) -> Plan {
    if threads <= 1 || !kernel.splittable() {
        return Plan::whole();
    }
    let Some((var, lo_e, hi_e)) = prog.body.iter().find_map(|s| match s {
        Stmt::For { var, lo, hi, schedule: Schedule::Parallel, .. } => Some((var, lo, hi)),
        _ => None,
    }) else {
        return Plan::whole();
    };
    let (Ok(lo), Ok(hi)) = (eval_index_expr(prog, launch, lo_e, &[]), eval_index_expr(prog, launch, hi_e, &[])) else {
        return Plan::whole();
    };
    if hi <= lo {
        return Plan::whole();
    }
    let n = (hi - lo) as u64;
    let count = (threads * CHUNKS_PER_THREAD).min(usize::try_from(n).unwrap_or(usize::MAX)).max(1);
    let work = match &prog.parallel_work {
        Some((wvar, work)) if wvar == var => work_prefix(prog, launch, var, lo_e, hi_e, work, (lo, hi), threads),
        _ => None,
    };
    let cuts: Vec<i64> = match work {
        Some(prefix) => {
            let total = u128::from(*prefix.last().unwrap_or(&0));
            (1..count)
                .map(|c| {
                    let target = total * c as u128 / count as u128;
                    lo + prefix.partition_point(|p| u128::from(*p) < target) as i64
                })
                .collect()
        }
        None => (1..count).map(|c| lo + (u128::from(n) * c as u128 / count as u128) as i64).collect(),
    };
    let mut chunks = Vec::with_capacity(count);
    let mut start = lo;
    for c in cuts.into_iter().chain([hi]) {
        let c = c.clamp(start, hi);
        if c > start {
            chunks.push((start, c));
            start = c;
        }
    }
    Plan { chunks, threads }
}

/// `prefix[k]` = the work of iterations `lo .. lo + k`, for `k` in `0 ..= hi - lo`,
/// by a compiled kernel; `None` if it cannot be compiled or run.
#[allow(clippy::too_many_arguments)]
fn work_prefix(prog: &LoopProgram, launch: &mut Launch, var: &Name, lo_e: &Expr, hi_e: &Expr, work: &Expr, (lo, hi): (i64, i64), threads: usize) -> Option<Vec<u64>> {
    let wprog = work_program(prog, var, lo_e, hi_e, work);
    let kernel = compile_cached(&wprog).ok()?;
    let n = usize::try_from(hi - lo).ok()?;
    let mut w = vec![0i64; n];
    let Args(mut args) = arguments(prog, launch).ok()?;
    args.push(ArgValue::Buffer(w.as_mut_ptr().cast()));
    let args = Args(args);
    let count = (threads * CHUNKS_PER_THREAD).min(n);
    let chunks: Vec<(i64, i64)> = (0..count).map(|c| (lo + (n * c / count) as i64, lo + (n * (c + 1) / count) as i64)).collect();
    let call = |r: (i64, i64)| {
        // SAFETY: the arguments are the launch's (see `super::execute`) plus
        // `w`, which has one i64 per iteration of `lo .. hi` and is written at
        // `i - lo` by disjoint chunks; the work expression reads what the
        // kernel's own loop bounds read for the same iterations.
        unsafe { kernel.call(args.values(), r) }
    };
    if pool::run_chunks(&chunks, threads, &call).iter().any(Result::is_err) {
        return None;
    }
    let mut prefix = Vec::with_capacity(n + 1);
    let mut total: u64 = 0;
    prefix.push(0);
    for x in w {
        total = total.saturating_add(x as u64);
        prefix.push(total);
    }
    Some(prefix)
}

/// `parallel for var in lo .. hi { work[var - lo] = max(work(var), 0) }` over
/// the program's arguments and one more output, `work`.
fn work_program(prog: &LoopProgram, var: &Name, lo: &Expr, hi: &Expr, work: &Expr) -> LoopProgram {
    let mut name = String::from("work");
    while prog.args.iter().any(|a| a.name.as_str() == name) || name == var.as_str() {
        name.push('_');
    }
    let out: Name = name.into();
    let mut args = prog.args.clone();
    args.push(Arg { name: out.clone(), kind: ArgKind::Output { fields: vec![ScalarType::I64], len: Nat::Lit(0) } });
    let value = Expr::bin(BinOp::Max, work.clone(), Expr::index(0));
    let body = vec![Stmt::For {
        var: var.clone(),
        lo: lo.clone(),
        hi: hi.clone(),
        schedule: Schedule::Parallel,
        body: vec![Stmt::Store { buf: out, index: Expr::bin(BinOp::Sub, Expr::var(var.clone()), lo.clone()), field: 0, value }],
    }];
    LoopProgram { name: format!("{}_work", prog.name), args, host: vec![], body, checks: vec![], parallel_work: None, counts: vec![], result: None }
}

//! Splitting the top-level parallel loop into chunks of equal work.
//!
//! Rows of a sparse matrix differ wildly in length (power-law row lengths,
//! a band of dense rows), so equal *numbers* of rows are not equal work.
//! Lowering states the work of an iteration in `parallel_work`: how many
//! inner elements it goes through (a CSR row's nonzeros) and, when it has a
//! closed form, the sum of that over the iterations before it. The runtime
//! weighs an iteration with a cost model measured on this backend
//! ([`ROW_COST`] + [`ITEM_COST`] per element): an empty row is not free —
//! it costs about as much as several nonzeros — so a band of dense rows
//! followed by half a million nearly empty ones must not be cut by
//! nonzeros alone.
//!
//! With a closed-form sum the cuts are found by bisection, evaluating it at
//! a few dozen rows; without one a small JIT-compiled kernel writes every
//! iteration's count, and the cuts come from its prefix sum.
//!
//! A launch too small to pay for handing work to other threads runs on the
//! calling thread alone. What it pays depends on the workers' state when it
//! starts ([`pool::helpers`]): spinning after a recent launch, a worker takes
//! a job within about a microsecond; parked, the OS needs tens of
//! microseconds to wake it. So a plan has two thresholds ([`Thresholds`]):
//! below [`AWAKE_THRESHOLD`] it is one call on the caller's thread; from
//! there to [`PARALLEL_THRESHOLD`] it is split only if the helpers are
//! awake when it runs ([`SplitWhen::HelpersAwake`], decided per launch by
//! [`Plan::now`], since one plan serves a loop of launches); above, it is
//! always split. A loop of small launches (`--reps`, a solver's
//! iterations) thus runs on several threads once its workers are awake,
//! and a small launch on its own does not wait for the OS to wake anyone.

use super::{Args, arguments, compile_cached, pool};
use crate::launch::{Buffer, Launch, Slot};
use heddle_codegen_cpu::{ArgValue, CpuKernel};
use heddle_ir::loops::{Arg, ArgKind, BinOp, Expr, LoopProgram, Schedule, Stmt};
use heddle_ir::{Name, Nat, ScalarType};
use pool::Helpers;

/// The cost of one iteration of the parallel loop, apart from its inner
/// elements, in units of about a nanosecond on the machine it was measured
/// on (`cargo bench --bench cpu_runtime`, see docs/performance.md): an
/// empty CSR row (two offset loads, a store, the loop's overhead and a
/// mispredicted exit from an inner loop that does not run).
pub const ROW_COST: u64 = 5;

/// The cost of one inner element (a nonzero of SpMV), in the same units.
pub const ITEM_COST: u64 = 1;

/// Below this total cost a launch runs on one thread unless its helpers
/// are awake. Waking a parked helper costs the launching thread about
/// `W` = 4 µs and the helper joins `L` = 6.4 µs (median) after the start
/// (`pool.rs`, `handover_costs`), so a launch of `C` on one thread takes
/// about `W + (C + L) / 2` on two: 3/4 of `C` or less from `C = 4W + 2L`,
/// about 30 µs. At about a nanosecond per unit that is 30 000–40 000; the
/// model overestimates the small in-cache SpMVs (uniform_5k_d4 in CSR32:
/// 45 000 units, 10 µs on one thread), which errs towards one thread.
pub const PARALLEL_THRESHOLD: u64 = 40_000;

/// Below this total cost a launch runs on one thread whatever the state of
/// the workers. An awake helper needs no wake-up call (the job is a store to
/// the mailbox it spins on) and joins `L` = 2.7 µs (median; p10 0.85 µs)
/// after the start, so two threads take about `(C + L) / 2`: 3/4 of `C` or
/// less from `C = 2L`, about 5 µs, 5 000 units. With the lanes counted
/// (SELL-8 on uniform_5k_d4: 23 125 units) the small SpMVs a solver
/// iterates lie between this and [`PARALLEL_THRESHOLD`].
pub const AWAKE_THRESHOLD: u64 = 5_000;

/// The costs below which a launch stays on one thread, by the state of the
/// workers it would hand chunks to. `HEDDLE_PARALLEL_THRESHOLD` sets both
/// to one value ([`Thresholds::uniform`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// When the helpers are parked ([`PARALLEL_THRESHOLD`] by default).
    pub parked: u64,
    /// When they are awake ([`AWAKE_THRESHOLD`] by default; at most `parked`).
    pub awake: u64,
}

impl Thresholds {
    /// One threshold whatever the workers' state (0: split every launch, as
    /// tests of the split itself want).
    pub fn uniform(threshold: u64) -> Thresholds {
        Thresholds { parked: threshold, awake: threshold }
    }
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds { parked: PARALLEL_THRESHOLD, awake: AWAKE_THRESHOLD }
    }
}

impl From<u64> for Thresholds {
    /// [`Thresholds::uniform`].
    fn from(threshold: u64) -> Thresholds {
        Thresholds::uniform(threshold)
    }
}

/// Chunks aim at no less than this cost, so that a launch just over the
/// threshold is not cut into slivers whose hand-over costs more than them.
const MIN_CHUNK_COST: u64 = 8_000;

/// At most this many chunks per thread: enough for a thread to steal from
/// one that fell behind, few enough that taking a chunk stays cheap.
/// (The default of [`super::Tuning::chunks_per_thread`].)
pub const CHUNKS_PER_THREAD: usize = 8;

/// How one launch is split: disjoint ranges of the top-level parallel loop
/// (or one call over everything) and the threads to run them on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The ranges, in loop order.
    pub chunks: Vec<(i64, i64)>,
    /// Threads to use.
    pub threads: usize,
    /// Whether the split stands whatever the workers' state.
    pub when: SplitWhen,
}

/// When a plan's split is used rather than one call on the caller's thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitWhen {
    /// Always (a launch large enough to pay for waking parked workers).
    Always,
    /// Only when the workers it would use are awake ([`pool::helpers`]).
    HelpersAwake,
}

/// The one range of a call over everything (the kernel clamps it to its loop's bounds).
const WHOLE: [(i64, i64); 1] = [(i64::MIN, i64::MAX)];

impl Plan {
    /// One call over the whole range.
    pub fn whole() -> Plan {
        Plan { chunks: WHOLE.to_vec(), threads: 1, when: SplitWhen::Always }
    }

    /// The ranges to run now and the threads to run them on: the split, or
    /// for a [`SplitWhen::HelpersAwake`] plan whose helpers are parked, one
    /// call on the caller's thread. `helpers` is asked only for such a plan.
    pub fn now(&self, helpers: impl FnOnce(usize) -> Helpers) -> (&[(i64, i64)], usize) {
        match self.when {
            SplitWhen::HelpersAwake if self.threads > 1 && helpers(self.threads) != Helpers::Awake => (&WHOLE, 1),
            _ => (&self.chunks, self.threads),
        }
    }
}

/// Splits the launch of `kernel` (compiled from `prog`) for `threads` threads.
/// Anything that prevents a split (a kernel that is not one parallel loop,
/// bounds that cannot be evaluated on the host) gives [`Plan::whole`], as
/// does a launch too small to pay for a second thread.
pub fn plan(prog: &LoopProgram, kernel: &CpuKernel, launch: &mut Launch, threads: usize) -> Plan {
    plan_with(prog, kernel, launch, threads, Thresholds::default())
}

/// [`plan`] with the costs below which a launch stays on one thread (a
/// number: one threshold whatever the workers' state; 0 splits whatever the
/// size, for tests of the split itself).
pub fn plan_with(
    prog: &LoopProgram,
    kernel: &CpuKernel,
    launch: &mut Launch,
    threads: usize,
    threshold: impl Into<Thresholds>,
) -> Plan {
    plan_tuned(prog, kernel, launch, threads, threshold, CHUNKS_PER_THREAD)
}

/// [`plan_with`] with at most `chunks_per_thread` chunks per thread (at
/// least 1; still a whole number of chunks per thread).
pub fn plan_tuned(
    prog: &LoopProgram,
    kernel: &CpuKernel,
    launch: &mut Launch,
    threads: usize,
    threshold: impl Into<Thresholds>,
    chunks_per_thread: usize,
) -> Plan {
    let threshold: Thresholds = threshold.into();
    let chunks_per_thread = chunks_per_thread.max(1);
    if threads <= 1 || !kernel.splittable() {
        return Plan::whole();
    }
    let Some((var, lo_e, hi_e)) = prog.body.iter().find_map(|s| match s {
        Stmt::For { var, lo, hi, schedule: Schedule::Parallel, .. } => Some((var, lo, hi)),
        _ => None,
    }) else {
        return Plan::whole();
    };
    let (lo, hi) = {
        let ev = Evaluator { prog, launch };
        match (ev.eval(lo_e, var, 0), ev.eval(hi_e, var, 0)) {
            (Some(lo), Some(hi)) if lo < hi => (lo, hi),
            _ => return Plan::whole(),
        }
    };
    let work = prog.parallel_work.as_ref().filter(|w| &w.var == var);
    let closed_form = |ev: &Evaluator| -> Option<u64> {
        let before = work?.before.as_ref()?;
        Cost::Closed { ev, var, before, lo, base: ev.eval(before, var, lo) }.at(hi)
    };
    // Without a closed form (or one that cannot be evaluated), visit every iteration.
    let prefix = match closed_form(&Evaluator { prog, launch }) {
        Some(_) => None,
        None => work.and_then(|w| item_prefix(prog, launch, var, lo_e, hi_e, &w.items, (lo, hi), threads)),
    };
    let ev = Evaluator { prog, launch };
    let cost = match (work.and_then(|w| w.before.as_ref()), prefix) {
        (_, Some(prefix)) => Cost::Prefix { prefix, lo },
        (Some(before), None) if work.is_some() => {
            Cost::Closed { ev: &ev, var, before, lo, base: ev.eval(before, var, lo) }
        }
        _ => Cost::Rows { lo },
    };
    let Some(total) = cost.at(hi) else { return Plan::whole() };
    let when = match total {
        t if t < threshold.awake.min(threshold.parked) => return Plan::whole(),
        t if t < threshold.parked => SplitWhen::HelpersAwake,
        _ => SplitWhen::Always,
    };
    let n = (hi - lo) as u64;
    let count = (total / MIN_CHUNK_COST).clamp(threads as u64, (threads * chunks_per_thread) as u64);
    // A whole number of chunks per thread: 5 equal chunks on 2 threads end
    // with one thread running its third while the other waits (a fifth of
    // the launch, the most of a small one's time lost).
    let count = count.div_ceil(threads as u64) * threads as u64;
    let count = count.min(n).max(1) as usize;
    let mut chunks = Vec::with_capacity(count);
    let mut start = lo;
    for c in 1..=count {
        let end = if c == count {
            hi
        } else {
            let target = (u128::from(total) * c as u128 / count as u128) as u64;
            match cost.first_reaching(target, start, hi) {
                Some(e) => e,
                None => return Plan::whole(),
            }
        };
        if end > start {
            chunks.push((start, end));
            start = end;
        }
    }
    Plan { chunks, threads, when }
}

/// The cost of the iterations `lo .. i`, as a function of `i`.
enum Cost<'a> {
    /// From the closed form of the items before an iteration.
    Closed { ev: &'a Evaluator<'a>, var: &'a Name, before: &'a Expr, lo: i64, base: Option<i64> },
    /// From every iteration's items, summed (`prefix[k]`: iterations `lo .. lo + k`).
    Prefix { prefix: Vec<u64>, lo: i64 },
    /// Every iteration alike.
    Rows { lo: i64 },
}

impl Cost<'_> {
    /// The cost of iterations `lo .. i` (`None` if it cannot be evaluated).
    fn at(&self, i: i64) -> Option<u64> {
        match self {
            Cost::Closed { ev, var, before, lo, base } => {
                let items = ev.eval(before, var, i)?.checked_sub((*base)?)?;
                let rows = u64::try_from(i - lo).ok()?;
                rows.checked_mul(ROW_COST)?.checked_add(u64::try_from(items).ok()?.checked_mul(ITEM_COST)?)
            }
            Cost::Prefix { prefix, lo } => {
                let k = usize::try_from(i - lo).ok()?;
                Some((k as u64).saturating_mul(ROW_COST).saturating_add(prefix.get(k)?.saturating_mul(ITEM_COST)))
            }
            Cost::Rows { lo } => u64::try_from(i - lo).ok()?.checked_mul(ROW_COST),
        }
    }

    /// The first `i` in `from ..= hi` whose cost up to it reaches `target`
    /// (the cost is non-decreasing in `i`), by bisection.
    fn first_reaching(&self, target: u64, from: i64, hi: i64) -> Option<i64> {
        let (mut a, mut b) = (from, hi);
        while a < b {
            let mid = a + (b - a) / 2;
            if self.at(mid)? < target { a = mid + 1 } else { b = mid }
        }
        Some(a)
    }
}

/// Evaluates the `i64` expressions of `parallel_work` and loop bounds over a
/// launch's arguments, with the loop variable bound: integer arithmetic at
/// the expression's types (loads and casts wrap as the kernel would).
pub(super) struct Evaluator<'a> {
    pub(super) prog: &'a LoopProgram,
    pub(super) launch: &'a Launch,
}

impl Evaluator<'_> {
    pub(super) fn eval(&self, e: &Expr, var: &Name, value: i64) -> Option<i64> {
        Some(self.typed(e, var, value)?.0)
    }

    /// An expression over the arguments alone.
    pub(super) fn eval_closed(&self, e: &Expr) -> Option<i64> {
        // No variable is named by the empty string.
        self.eval(e, &Name::from(""), 0)
    }

    /// The value and its type.
    fn typed(&self, e: &Expr, var: &Name, value: i64) -> Option<(i64, ScalarType)> {
        Some(match e {
            Expr::Int(v, t) => (wrap(*v, *t), *t),
            Expr::Var(v) if v == var => (value, ScalarType::I64),
            Expr::Var(v) => match self.slot(v)? {
                Slot::Nat(x) => (*x, ScalarType::I64),
                Slot::Int(x, t) => (*x, *t),
                _ => return None,
            },
            Expr::Load { buf, index, field } => {
                let Slot::Buffer(b) = self.slot(buf)? else { return None };
                let i = usize::try_from(self.eval(index, var, value)?).ok()?;
                read_int(b, i, *field as usize)?
            }
            Expr::Cast(t, a) if t.is_int() => {
                let (x, _) = self.typed(a, var, value)?;
                (wrap(x, *t), *t)
            }
            Expr::Neg(a) => {
                let (x, t) = self.typed(a, var, value)?;
                (wrap(x.wrapping_neg(), t), t)
            }
            Expr::Bin(op, a, b) => {
                let ((x, t), (y, _)) = (self.typed(a, var, value)?, self.typed(b, var, value)?);
                let r = match op {
                    BinOp::Add => x.wrapping_add(y),
                    BinOp::Sub => x.wrapping_sub(y),
                    BinOp::Mul => x.wrapping_mul(y),
                    BinOp::Div if y != 0 => x.wrapping_div(y),
                    BinOp::Rem if y != 0 => x.wrapping_rem(y),
                    BinOp::Min => x.min(y),
                    BinOp::Max => x.max(y),
                    _ => return None,
                };
                (wrap(r, t), t)
            }
            Expr::Select(c, a, b) => {
                let Expr::Bin(op, x, y) = &**c else { return None };
                let (x, y) = (self.eval(x, var, value)?, self.eval(y, var, value)?);
                let holds = match op {
                    BinOp::Eq => x == y,
                    BinOp::Ne => x != y,
                    BinOp::Lt => x < y,
                    BinOp::Le => x <= y,
                    BinOp::Gt => x > y,
                    BinOp::Ge => x >= y,
                    _ => return None,
                };
                self.typed(if holds { a } else { b }, var, value)?
            }
            _ => return None,
        })
    }

    fn slot(&self, name: &Name) -> Option<&Slot> {
        let k = self.prog.args.iter().position(|a| &a.name == name)?;
        self.launch.slots.get(k)
    }
}

/// `v` wrapped to the integer type `t` (signed types sign-extend, unsigned zero-extend).
fn wrap(v: i64, t: ScalarType) -> i64 {
    let bits = 8 * t.size_bytes() as u32;
    if bits >= 64 || !t.is_int() {
        return v;
    }
    let shift = 64 - bits;
    if t.is_signed() { (v << shift) >> shift } else { ((v as u64) << shift >> shift) as i64 }
}

/// Integer field `field` of record `i`, without going through a `Value`.
fn read_int(b: &Buffer, i: usize, field: usize) -> Option<(i64, ScalarType)> {
    if i >= b.len() {
        return None;
    }
    let t = *b.fields.get(field)?;
    if !t.is_int() {
        return None;
    }
    let at = i * b.layout.size + b.layout.offsets[field];
    let bytes = b.bytes().get(at..at + t.size_bytes())?;
    let mut raw = [0u8; 8];
    raw[..bytes.len()].copy_from_slice(bytes);
    Some((wrap(i64::from_le_bytes(raw), t), t))
}

/// Iterations whose work [`item_prefix`] evaluates on the calling thread alone.
const ITEMS_ON_ONE_THREAD: usize = 1 << 16;

/// `prefix[k]` = the items of iterations `lo .. lo + k`, for `k` in `0 ..= hi - lo`,
/// by a compiled kernel; `None` if it cannot be compiled or run.
fn item_prefix(
    prog: &LoopProgram,
    launch: &mut Launch,
    var: &Name,
    lo_e: &Expr,
    hi_e: &Expr,
    items: &Expr,
    (lo, hi): (i64, i64),
    threads: usize,
) -> Option<Vec<u64>> {
    let wprog = items_program(prog, var, lo_e, hi_e, items);
    let kernel = compile_cached(&wprog).ok()?;
    let n = usize::try_from(hi - lo).ok()?;
    let mut w = vec![0i64; n];
    let Args(mut args) = arguments(prog, launch).ok()?;
    args.push(ArgValue::Buffer(w.as_mut_ptr().cast()));
    let slots = kernel.slots(&args).ok()?;
    // A few thousand rows take microseconds on one thread: less than waking
    // a parked worker, which a launch below the threshold would pay for nothing.
    let threads = if n < ITEMS_ON_ONE_THREAD { 1 } else { threads };
    let count = (threads * CHUNKS_PER_THREAD).min(n).max(1);
    let chunks: Vec<(i64, i64)> =
        (0..count).map(|c| (lo + (n * c / count) as i64, lo + (n * (c + 1) / count) as i64)).collect();
    let call = |r: (i64, i64)| {
        // SAFETY: the arguments are the launch's (see `super::execute`) plus
        // `w`, which has one i64 per iteration of `lo .. hi` and is written at
        // `i - lo` by disjoint chunks; the items expression reads what the
        // kernel's own loop bounds read for the same iterations.
        unsafe { kernel.call_with(&slots, r) }
    };
    pool::run_chunks(&chunks, threads, &call).ok()?;
    let mut prefix = Vec::with_capacity(n + 1);
    let mut total: u64 = 0;
    prefix.push(0);
    for x in w {
        total = total.saturating_add(x as u64);
        prefix.push(total);
    }
    Some(prefix)
}

/// `parallel for var in lo .. hi { items[var - lo] = max(items(var), 0) }` over
/// the program's arguments and one more output, `items`.
fn items_program(prog: &LoopProgram, var: &Name, lo: &Expr, hi: &Expr, items: &Expr) -> LoopProgram {
    let mut name = String::from("items");
    while prog.args.iter().any(|a| a.name.as_str() == name) || name == var.as_str() {
        name.push('_');
    }
    let out: Name = name.into();
    let mut args = prog.args.clone();
    args.push(Arg { name: out.clone(), kind: ArgKind::Output { fields: vec![ScalarType::I64], len: Nat::Lit(0) } });
    let value = Expr::bin(BinOp::Max, items.clone(), Expr::index(0));
    let body = vec![Stmt::For {
        var: var.clone(),
        lo: lo.clone(),
        hi: hi.clone(),
        schedule: Schedule::Parallel,
        body: vec![Stmt::Store {
            buf: out,
            index: Expr::bin(BinOp::Sub, Expr::var(var.clone()), lo.clone()),
            field: 0,
            value,
        }],
    }];
    LoopProgram {
        name: format!("{}_items", prog.name),
        args,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(when: SplitWhen, threads: usize) -> Plan {
        Plan { chunks: vec![(0, 10), (10, 20), (20, 30), (30, 40)], threads, when }
    }

    #[test]
    fn a_plan_for_awake_helpers_splits_only_when_they_are() {
        let p = plan(SplitWhen::HelpersAwake, 2);
        assert_eq!(p.now(|_| Helpers::Awake), (&p.chunks[..], 2));
        assert_eq!(p.now(|_| Helpers::Parked), (&WHOLE[..], 1));
        // The question names the threads the split would use.
        let p = plan(SplitWhen::HelpersAwake, 4);
        assert_eq!(p.now(|t| if t == 4 { Helpers::Awake } else { Helpers::Parked }), (&p.chunks[..], 4));
    }

    #[test]
    fn an_unconditional_plan_asks_nothing() {
        let p = plan(SplitWhen::Always, 2);
        assert_eq!(p.now(|_| panic!("asked")), (&p.chunks[..], 2));
        let whole = Plan::whole();
        assert_eq!(whole.now(|_| panic!("asked")), (&WHOLE[..], 1));
    }

    #[test]
    fn one_threshold_stands_for_both_states() {
        assert_eq!(Thresholds::from(7), Thresholds { parked: 7, awake: 7 });
        let d = Thresholds::default();
        assert!(d.awake < d.parked, "{d:?}");
    }
}

//! Lowering: the typed functional program → the imperative loop IR
//! ([`heddle_ir::loops`]), shared by every backend.
//!
//! Values are lowered lazily as [`Val`]s: scalars are loop-IR expressions,
//! arrays are *views* ([`view::View`]) — an input buffer region, a `zip`, a
//! `split`, a `map` not yet computed, … — so the data-layout patterns become
//! index arithmetic and no copies. Work happens where a value is consumed:
//! `reduce` emits a loop with an accumulator, and the kernel's result is
//! written to the output buffer by loops whose schedules come from the maps
//! that produced it.
//!
//! Every flattened index is a natural (the position of a record in its flat
//! buffer) and goes through [`crate::simplify`]: a Σ with a closed form is
//! replaced by it (CSR's telescoping sum becomes one lookup); a Σ without one
//! becomes a host-computed prefix-sum buffer passed as an extra argument
//! (LIL's row lengths become exactly CSR's offsets). No loop that evaluates a
//! Σ is ever generated; `toNat` nodes become inlined loads.

mod assemble;
mod coiter;
mod complex;
mod emit;
mod nats;
mod numbers;
mod operators;
mod ragged;
mod ranges;
mod scatter;
mod sort;
mod stream;
mod sums;
mod tidy;
mod tree;
mod vector_reduce;
mod vectors;
mod view;
mod work;

use crate::Facts;
use heddle_ir::loops::{Arg, ArgKind, Block, Check, CountPhase, HostBuffer, LoopProgram};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Span, Type};
use heddle_typeck::{Kernel, KernelParam, TExpr, TKind};
use std::collections::HashSet;
pub use view::{Val, View};

/// Options of lowering.
#[derive(Clone, Debug)]
pub struct LowerOptions {
    /// Leave a Σ without closed form as a sequential loop instead of a host
    /// prefix sum. Only for measuring what precomputation saves (the paper's
    /// Figure 5/7 baselines); never the default.
    pub naive_sums: bool,
    /// Limits of the natural simplifier.
    pub limits: crate::Limits,
    /// Compute the program's own `i64` arithmetic (`+ - *`, negation) at
    /// `u64`, where it wraps on every backend, so that the loop program's
    /// signed 64-bit arithmetic is index arithmetic alone, which never
    /// overflows: for a backend that compiles it as arithmetic whose overflow
    /// is undefined (OpenCL C's `long`; see `heddle_ir::loops`). Without
    /// it, `i64` arithmetic is plain, for a backend where it wraps anyway
    /// (Cranelift), whose reductions and vector lanes recognise it.
    pub wrapping_i64: bool,
}

impl Default for LowerOptions {
    fn default() -> LowerOptions {
        LowerOptions { naive_sums: false, limits: crate::Limits::from_env(), wrapping_i64: false }
    }
}

/// Lowers a checked kernel to a loop program named `name`.
pub fn lower_kernel(kernel: &Kernel, name: &str) -> Result<LoopProgram, Diagnostic> {
    lower_kernel_with(kernel, name, &LowerOptions::default())
}

/// [`lower_kernel`] with options.
pub fn lower_kernel_with(kernel: &Kernel, name: &str, options: &LowerOptions) -> Result<LoopProgram, Diagnostic> {
    let own = kernel;
    if let Some(span) = nested_list_result(&kernel.body) {
        return Err(unsupported(
            span,
            "storing a value with lists of (coordinate, …) pairs inside lists (CSF from its fibres' lists)",
        ));
    }
    // Vectors become tuples of lanes first, so that a vector of complex
    // numbers reaches `with_pairs` as a tuple of complex lanes (`complex.rs`).
    let lanes = vectors::with_lanes(kernel)?;
    let kernel = lanes.as_ref().unwrap_or(kernel);
    let pairs = complex::with_pairs(kernel)?;
    let kernel = pairs.as_ref().unwrap_or(kernel);
    let counted = result_counts(&kernel.body)?;
    let mut program = match lower_bounded(kernel, name, options, &counted) {
        Some(program) => program,
        None => {
            let mut counts = Vec::new();
            for (array, shape) in &counted {
                let (program, _) =
                    lower_phase(kernel, &phase_name(name, array), options, &[], Some((array, shape)), false)?;
                counts.push(CountPhase {
                    name: array.clone(),
                    shape: shape.clone(),
                    program: Box::new(program),
                    bound: false,
                });
            }
            let (mut program, _) = lower_phase(kernel, name, options, &counted, None, false)?;
            program.counts = counts;
            program
        }
    };
    if let (Some(layout), true) = (program.result.as_mut(), lanes.is_some() || pairs.is_some()) {
        vectors::restore_result_types(layout, &own.body.ty);
    }
    program.validate().map_err(|e| {
        Diagnostic::new(kernel.body.span, format!("internal error in lowering: {e}")).with_note(program.to_string())
    })?;
    Ok(program)
}

/// The name of the counting phase of `array` in kernel `name`.
fn phase_name(name: &str, array: &Name) -> String {
    format!("{name}_{}", array.as_str().replace('#', ""))
}

/// The kernel with every count array filled by a bound phase (see
/// [`CountPhase::bound`]): each counted list is a stream of co-iterations
/// stored in a tensor (`(… : tensor<…>)`), so the fill merges it once into
/// room for the entries its lists hold, writes its true length, and the
/// host reads the entries back from their rooms; `None` where any count
/// cannot be bounded so, or the fill reads a count as a length (then the
/// exact counting phases run, merging every list twice).
fn lower_bounded(
    kernel: &Kernel,
    name: &str,
    options: &LowerOptions,
    counted: &[(Name, Vec<Nat>)],
) -> Option<LoopProgram> {
    if counted.is_empty() {
        return None;
    }
    let mut counts = Vec::new();
    for (array, shape) in counted {
        let (program, bounded) =
            lower_phase(kernel, &phase_name(name, array), options, &[], Some((array, shape)), true).ok()?;
        if !bounded {
            return None;
        }
        counts.push(CountPhase { name: array.clone(), shape: shape.clone(), program: Box::new(program), bound: true });
    }
    let (mut program, bounded) = lower_phase(kernel, name, options, counted, None, true).ok()?;
    if !bounded {
        return None;
    }
    program.counts = counts;
    Some(program)
}

/// Does `block` load from any of `bufs`?
fn loads_any(block: &Block, bufs: &[Name]) -> bool {
    use heddle_ir::loops::{Expr as L, Stmt};
    let expr = |e: &L, bufs: &[Name]| e.loads_from(&mut |b| bufs.contains(b));
    block.iter().any(|s| match s {
        Stmt::Let { value, .. } | Stmt::Assign { value, .. } => expr(value, bufs),
        Stmt::Var { init, .. } => expr(init, bufs),
        Stmt::Store { buf, index, value, .. } | Stmt::AddAtomic { buf, index, value, .. } => {
            bufs.contains(buf) || expr(index, bufs) || expr(value, bufs)
        }
        Stmt::For { lo, hi, body, .. } => expr(lo, bufs) || expr(hi, bufs) || loads_any(body, bufs),
        Stmt::If { cond, then, els } => expr(cond, bufs) || loads_any(then, bufs) || loads_any(els, bufs),
        Stmt::Alloc { len, .. } => expr(len, bufs),
        Stmt::Sort { buf, lo, len } => bufs.contains(buf) || expr(lo, bufs) || expr(len, bufs),
        Stmt::Barrier => false,
        Stmt::Check { cond, .. } => expr(cond, bufs),
    })
}

/// The count arrays of the kernel's result, with their shapes: those of its
/// type, or of each component of a tuple, or of the value a stored tensor is
/// assembled from (through the `let`s around them).
fn result_counts(t: &TExpr) -> Result<Vec<(Name, Vec<Nat>)>, Diagnostic> {
    let mut out = Vec::new();
    match &t.kind {
        TKind::Let { body, .. } => return result_counts(body),
        TKind::Tuple(items) if !assemble::scalars_only(&t.ty) => {
            for item in items {
                out.extend(result_counts(item)?);
            }
        }
        TKind::Assemble { value, .. } => out = count_arrays(&value.ty).map_err(|m| unsupported(t.span, &m))?,
        _ => out = count_arrays(&t.ty).map_err(|m| unsupported(t.span, &m))?,
    }
    Ok(out)
}

/// The count arrays of counted lengths in a result type, with their shapes
/// (the lengths of the arrays around them), or why compiled code cannot
/// produce it.
fn count_arrays(ty: &Type) -> Result<Vec<(Name, Vec<Nat>)>, String> {
    fn walk(ty: &Type, outer: &mut Vec<(Option<Name>, Nat)>, out: &mut Vec<(Name, Vec<Nat>)>) -> Result<(), String> {
        match ty {
            Type::Array { binder, elem, len } => {
                // A counted length, or a sum of lengths with counted terms
                // (`concat` of a stream and an array): one count array per term.
                let mut terms = Vec::new();
                sum_terms(len, &mut terms);
                let counted: Vec<_> = terms
                    .iter()
                    .filter_map(counted_term)
                    .filter_map(|(_, c)| heddle_ir::nat::counted::as_counted(&c.1))
                    .collect();
                if !counted.is_empty() {
                    if terms.iter().any(|t| counted_term(t).is_none() && heddle_ir::nat::counted::mentions_count(t)) {
                        return Err(format!("a result of length {len}"));
                    }
                    for (array, path) in counted {
                        let positions: Vec<Option<Name>> = path
                            .iter()
                            .map(|e| match &e.kind {
                                heddle_ir::ExprKind::Var(v) => Some(v.clone()),
                                _ => None,
                            })
                            .collect();
                        let around: Vec<Option<Name>> = outer.iter().map(|(b, _)| b.clone()).collect();
                        if positions != around || outer.iter().any(|(_, n)| heddle_ir::nat::counted::mentions_count(n))
                        {
                            return Err(format!(
                                "a result whose length {len} is counted inside arrays of counted length"
                            ));
                        }
                        if !out.iter().any(|(a, _)| *a == array) {
                            out.push((array, outer.iter().map(|(_, n)| n.clone()).collect()));
                        }
                    }
                    if elem.mentions_count() {
                        return Err("a counted array of counted arrays".into());
                    }
                    return Ok(());
                }
                if heddle_ir::nat::counted::mentions_count(len) {
                    return Err(format!("a result of length {len}"));
                }
                outer.push((binder.clone(), len.clone()));
                let r = walk(elem, outer, out);
                outer.pop();
                r
            }
            Type::Tuple(ts) => ts.iter().try_for_each(|t| walk(t, outer, out)),
            _ => Ok(()),
        }
    }
    let mut out = Vec::new();
    walk(ty, &mut Vec::new(), &mut out)?;
    Ok(out)
}

/// A term `k · toNat(count#…)` of a length (`concat(u, u)` has `2 · count`):
/// the count array, and `k` with the counted natural.
pub(crate) fn counted_term(t: &Nat) -> Option<(Name, (i64, Nat))> {
    let (k, c) = match t {
        Nat::Bin(heddle_ir::nat::NatOp::Mul, a, b) => match (a.as_lit(), b.as_lit()) {
            (Some(k), _) => (k, (**b).clone()),
            (_, Some(k)) => (k, (**a).clone()),
            _ => return None,
        },
        other => (1, other.clone()),
    };
    let (array, _) = heddle_ir::nat::counted::as_counted(&c)?;
    (k > 0).then_some((array, (k, c)))
}

/// The terms of a sum of naturals (`n` itself when it is no sum).
pub(crate) fn sum_terms(n: &Nat, out: &mut Vec<Nat>) {
    match n {
        Nat::Bin(heddle_ir::nat::NatOp::Add, a, b) => {
            sum_terms(a, out);
            sum_terms(b, out);
        }
        other => out.push(other.clone()),
    }
}

/// One kernel: the counting phase of one count array (its output is the
/// counts), or the main one, which reads the count arrays `counted` as inputs.
/// With `bounds`, a counting phase writes upper bounds and the main one
/// fills the counted lists into room for them (see [`lower_bounded`]); the
/// flag says whether every count was so.
fn lower_phase(
    kernel: &Kernel,
    name: &str,
    options: &LowerOptions,
    counted: &[(Name, Vec<Nat>)],
    counting: Option<(&Name, &Vec<Nat>)>,
    bounds: bool,
) -> Result<(LoopProgram, bool), Diagnostic> {
    let mut cx = Lowerer::new(kernel, options);
    cx.counting = counting.map(|(a, shape)| (a.clone(), shape.clone()));
    cx.bounding = bounds && counting.is_some();
    if bounds && counting.is_none() {
        cx.bounded_counts = counted.iter().map(|(a, _)| a.clone()).collect();
    }
    let mut env = Env::default();
    for p in &kernel.params {
        match p {
            KernelParam::Nat(n) => cx.args.push(Arg { name: n.clone(), kind: ArgKind::Nat }),
            KernelParam::Value { name, ty, span } => {
                let val = cx.param(name, ty, *span)?;
                env.values.push((name.clone(), val.clone()));
                cx.globals.values.push((name.clone(), val));
            }
            // The body binds a tensor parameter to its view over the storage
            // buffers, which are parameters of their own.
            KernelParam::Tensor { .. } => {}
        }
    }
    for (array, shape) in counted {
        // A count array is an input like any other (offsets, work estimates).
        let ty = shape.iter().rev().fold(Type::Scalar(ScalarType::I64), |t, n| Type::array(t, n.clone()));
        cx.used.insert(array.clone());
        let val = cx.param(array, &ty, kernel.body.span)?;
        cx.globals.values.push((array.clone(), val));
    }
    let mut body = Block::new();
    let layout = cx.emit_result(&kernel.body, &env, &mut body)?;
    if !cx.prologue.is_empty() {
        body.splice(0..0, std::mem::take(&mut cx.prologue));
    }
    if !cx.workspaces.is_empty() {
        body.splice(0..0, std::mem::take(&mut cx.workspaces));
    }
    let ranges = cx.coordinate_ranges();
    let bounded = cx.bounded_positions();
    let filled_into_room = match (bounds, counting) {
        (false, _) => false,
        (true, Some(_)) => !cx.bound_missing,
        (true, None) => !cx.bound_missing && cx.bounded_counts.iter().all(|a| cx.bounded_filled.contains(a)),
    };
    let room_arrays = std::mem::take(&mut cx.bounded_counts);
    let mut program = LoopProgram {
        name: name.to_string(),
        args: cx.args,
        host: cx.host,
        body,
        checks: cx.checks,
        parallel_work: cx.parallel_work,
        reassociable: cx.reassociable,
        ranges,
        counts: Vec::new(),
        result: if counting.is_some() { None } else { Some(layout) },
        index_overflow_at: cx.index_overflow_at,
    };
    tidy::tidy(&mut program, &bounded);
    heddle_ir::loops::coalesce_atomic_runs(&mut program);
    program.validate().map_err(|e| {
        Diagnostic::new(kernel.body.span, format!("internal error in lowering: {e}")).with_note(program.to_string())
    })?;
    // The fill reads a count array holding bounds only as room (its prefix sum, its balance).
    let filled_into_room = filled_into_room && !loads_any(&program.body, &room_arrays);
    Ok((program, filled_into_room))
}

/// What names mean while lowering: values and naturals (map positions).
#[derive(Clone, Debug, Default)]
pub struct Env {
    values: Vec<(Name, Val)>,
    nats: Vec<(Name, Nat)>,
}

impl Env {
    fn value(&self, n: &Name) -> Option<&Val> {
        self.values.iter().rev().find(|(x, _)| x == n).map(|(_, v)| v)
    }
    fn with(&self, n: Name, v: Val) -> Env {
        let mut e = self.clone();
        e.values.push((n, v));
        e
    }
}

/// The state of one lowering.
pub struct Lowerer<'k> {
    kernel: &'k Kernel,
    options: &'k LowerOptions,
    args: Vec<Arg>,
    host: Vec<HostBuffer>,
    checks: Vec<Check>,
    parallel_work: Option<heddle_ir::loops::ParallelWork>,
    /// Accumulators of `reduce` (not `reduceSeq`): see `LoopProgram::reassociable`.
    reassociable: Vec<Name>,
    used: HashSet<Name>,
    facts: Facts,
    /// Inside a loop that already runs in parallel (nested maps run sequentially).
    in_parallel: bool,
    /// A top-level `scatterAdd` has filled a scratch buffer: later top-level
    /// loops stay sequential (see `scatter.rs`).
    sequential: bool,
    /// The kernel's parameters as values (for `toNat` lookups in types).
    globals: Env,
    /// Types of the `let`s lowering introduced (for `toNat` of program values).
    var_types: Vec<(Name, ScalarType)>,
    /// The loops being built, outermost first: variable, schedule, trip count.
    loops: Vec<(Name, heddle_ir::loops::Schedule, heddle_ir::loops::Expr)>,
    /// Local-memory allocations hoisted to the work-group loop at this depth of `loops`.
    hoisted: Vec<(usize, heddle_ir::loops::Stmt)>,
    /// Workspaces, allocated at the top of the kernel (see `stream.rs`).
    workspaces: Vec<heddle_ir::loops::Stmt>,
    /// Lowering the counting phase of this count array (and shape): `write`
    /// stores counted lengths only.
    counting: Option<(Name, Vec<Nat>)>,
    /// A counting phase that writes upper bounds on the counts (see
    /// [`CountPhase::bound`]).
    bounding: bool,
    /// A bound phase met a count it cannot bound, or the fill a list it
    /// cannot fill into room for its bound: lower with exact counts instead.
    bound_missing: bool,
    /// The fill: count arrays whose phase writes bounds.
    bounded_counts: Vec<Name>,
    /// The fill: those of `bounded_counts` a stored tensor's lists were
    /// filled into room for (see `assemble.rs`).
    bounded_filled: Vec<Name>,
    /// How many two-list merges are being lowered, one inside another's visit.
    merge_depth: usize,
    /// The coordinates outermost two-list merges visit, each strictly
    /// increasing over its merge (see `stream.rs`, `note_merged`).
    merged_coordinates: Vec<heddle_ir::loops::Expr>,
    /// Local buffers written by a `Local(d)` loop, with `d` (see `tree.rs`).
    local_producers: std::collections::HashMap<Name, u32>,
    /// Scalar computations over the naturals, run once at the top of the kernel.
    prologue: Vec<heddle_ir::loops::Stmt>,
    /// The prologue's `ceil(log2 len)` variables, by `len` (see `tree.rs`).
    tree_levels: Vec<(heddle_ir::loops::Expr, Name)>,
    /// The first `generate` whose position is converted to `int` (see
    /// [`LoopProgram::index_overflow_at`]).
    index_overflow_at: Option<Span>,
}

impl<'k> Lowerer<'k> {
    fn new(kernel: &'k Kernel, options: &'k LowerOptions) -> Lowerer<'k> {
        // Names bound in the program (lambda parameters, `let`s, binders) are
        // never a generated name: lowering looks program names up by name, so a
        // `let` named like a parameter in scope would be read as the parameter.
        let mut used = HashSet::new();
        bound_names(&kernel.body, &mut used);
        let mut facts = Facts::new();
        for p in &kernel.params {
            used.insert(p.name().clone());
            if let KernelParam::Value { ty, .. } = p {
                facts.add_type(ty);
            }
        }
        Lowerer {
            kernel,
            options,
            args: Vec::new(),
            host: Vec::new(),
            checks: Vec::new(),
            parallel_work: None,
            reassociable: Vec::new(),
            used,
            facts,
            in_parallel: false,
            sequential: false,
            globals: Env::default(),
            var_types: Vec::new(),
            loops: Vec::new(),
            hoisted: Vec::new(),
            workspaces: Vec::new(),
            counting: None,
            bounding: false,
            bound_missing: false,
            bounded_counts: Vec::new(),
            bounded_filled: Vec::new(),
            merge_depth: 0,
            merged_coordinates: Vec::new(),
            local_producers: std::collections::HashMap::new(),
            prologue: Vec::new(),
            tree_levels: Vec::new(),
            index_overflow_at: None,
        }
    }

    /// A name used nowhere else in the program.
    fn fresh(&mut self, base: &str) -> Name {
        let n = heddle_ir::nat::fresh_name(&Name::from(base), |n| self.used.contains(n));
        self.used.insert(n.clone());
        n
    }

    fn check(&mut self, message: String, span: Span) -> u32 {
        self.checks.push(Check { message, span });
        self.checks.len() as u32 - 1
    }

    /// A kernel parameter: a scalar argument or an input buffer viewed through its type.
    fn param(&mut self, name: &Name, ty: &Type, span: Span) -> Result<Val, Diagnostic> {
        match ty {
            Type::Scalar(s) => {
                self.args.push(Arg { name: name.clone(), kind: ArgKind::Scalar(*s) });
                Ok(Val::Scalar(heddle_ir::loops::Expr::Var(name.clone()), *s))
            }
            Type::Array { .. } => {
                let fields = emit::leaf_fields(ty, span)?;
                let len =
                    crate::flat_size(ty).map_err(|e| unsupported(span, &format!("the layout of `{name}`: {e}")))?;
                // The host evaluates lengths; a closed form saves it a pass.
                let len = crate::simplify(&len, &self.facts, &self.options.limits).nat;
                self.args.push(Arg { name: name.clone(), kind: ArgKind::Input { fields, len } });
                Ok(Val::Array(View::buffer(name.clone(), Nat::Lit(0), ty.clone())))
            }
            // A tuple of scalars (nested too: a complex number is a pair, `complex.rs`).
            Type::Tuple(ts) if ts.iter().all(|t| t.as_scalar().is_some() || matches!(t, Type::Tuple(_))) => {
                let mut parts = Vec::new();
                for (k, t) in ts.iter().enumerate() {
                    let n = Name::from(format!("{name}_{}", k + 1));
                    self.used.insert(n.clone());
                    parts.push(self.param(&n, t, span)?);
                }
                Ok(Val::Tuple(parts))
            }
            other => Err(unsupported(span, &format!("kernel parameters of type {other}"))),
        }
    }
}

/// A state that lowering never reaches for a well-typed kernel: reported as
/// an internal error, a bug in heddle (the compile-coverage corpus and the
/// random program generator fail on it).
pub(crate) fn bug(span: Span, what: &str) -> Diagnostic {
    Diagnostic::new(span, format!("internal error in lowering: {what}"))
        .with_note("this is a bug in heddle; please report it with the program")
}

/// Where `t` stores a value with lists inside lists
/// ([`heddle_ir::encoding::result::ResultPlan::nested_lists`]): its
/// positions at every list level are prefix sums of lengths only the value
/// gives, which the fill kernel's one list offset does not express; the
/// interpreter stores it.
fn nested_list_result(t: &TExpr) -> Option<Span> {
    if let TKind::Assemble { plan, .. } = &t.kind
        && plan.nested_lists()
    {
        return Some(t.span);
    }
    let mut found = None;
    t.for_each_child(&mut |c| {
        if found.is_none() {
            found = nested_list_result(c);
        }
    });
    found
}

/// "not supported by the compiled backends yet", located: one of the
/// refusals ARCHITECTURE.md lists, with its reason.
pub fn unsupported(span: Span, what: &str) -> Diagnostic {
    Diagnostic::new(span, format!("{what} cannot be compiled yet"))
        .with_label("not supported by the compiled backends")
        .with_note("the reference interpreter (--backend interp) runs it")
}

/// The names `t` binds: lambda parameters, `let`s, position binders.
pub(super) fn bound_names(t: &TExpr, used: &mut HashSet<Name>) {
    match &t.kind {
        TKind::Lambda { params, .. } => used.extend(params.iter().map(|(n, _)| n.clone())),
        TKind::Let { name, .. } => {
            used.insert(name.clone());
        }
        TKind::Prim { binder: Some(b), .. } => {
            used.insert(b.clone());
        }
        _ => {}
    }
    t.for_each_child(&mut |c| bound_names(c, used));
}

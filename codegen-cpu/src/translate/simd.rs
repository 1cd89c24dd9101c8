//! Vectorised inner loops: several iterations at once in 128-bit vectors
//! (`f32x4`, `f64x2`, `i32x4`, `i64x2`).
//!
//! Two kinds of innermost sequential loop run in *lanes*, `W` consecutive
//! iterations per step (`W` = 16 bytes / the data's size), then one at a
//! time for the rest:
//!
//! - a **reduction** whose accumulators may be reassociated (see
//!   [`super::reduce`]): each accumulator becomes vectors of partial sums
//!   (two, so that two chains of vector adds overlap), reduced across lanes
//!   after the loop — SDDMM's dot products, SpMV's rows;
//! - a **map**: iterations that store to `buf[k + c]` and read a written
//!   buffer only at the element they store (MTTKRP's and SpMM's row
//!   updates `acc[j] = acc[j] + v · D[l·J + j]`), so no iteration sees
//!   another's store.
//!
//! A value in lanes ([`Lanes`]) is the same in every lane, an integer
//! affine in the loop variable (`k + start`: its lanes are consecutive, so a
//! load through it is one vector load), one scalar per lane (a gather:
//! `xs[crd[k]]`), or a vector. Before anything is emitted, [`Translator::lane_plan`]
//! walks the body with the same rules on *kinds* and says whether every
//! statement has a lane form and a vector pays (some load or store is
//! contiguous, and no load is a gather, which x86 builds lane by lane at
//! the cost of the scalar code); otherwise the loop is left to the scalar
//! paths.
//!
//! Checks keep their order: the lanes' conditions are evaluated together
//! (all of a step's checks come before its stores), and if any lane fails,
//! the loop continues one iteration at a time from the step's first lane,
//! where the sequential code meets the very failure a sequential run meets.

use super::reduce::Accumulator;
use super::{Bound, Translator};
use crate::error::CodegenError;
use crate::types;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Type, Value, condcodes::IntCC, types as ct};
use cranelift_frontend::Variable;
use heddle_ir::loops::{BinOp, Expr, Schedule, Stmt};
use heddle_ir::{Name, ScalarType};

/// Vector registers are 16 bytes.
pub(super) const VECTOR_BYTES: usize = 16;

/// Vector accumulators per reduction accumulator.
pub(super) const VECTOR_CHAINS: i64 = 2;

/// Vector steps per iteration of a map loop's main loop (unrolled: half the
/// index updates, compares and branches). One more single step follows when
/// a whole vector is left, so rows of one to two vectors stay in lanes.
const MAP_CHAINS: i64 = 2;

/// The most vector steps a loop of a constant trip count runs unrolled,
/// with no loop around them (see [`straight_steps`]).
pub(super) const STRAIGHT_STEPS: i64 = 2;

/// What a value is across the lanes of one step (at the type level, for planning).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Uniform,
    /// Lane `l` is lane 0's value plus `l · stride`.
    Affine(i64),
    Each,
    Vector,
}

/// A value across the lanes of one step.
#[derive(Clone, Debug)]
enum Lanes {
    Uniform(Value),
    Affine(Value, i64),
    Each(Vec<Value>),
    Vector(Value),
}

/// Which of the two loop shapes, and its data type.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Reduction,
    Map,
}

/// A planned lane translation: the lane count and the kinds of the body's `let`s.
pub(super) struct LanePlan {
    width: usize,
    shape: Shape,
}

pub(super) fn vector_type(t: ScalarType, width: usize) -> Option<Type> {
    (t.size_bytes() * width == VECTOR_BYTES && !matches!(t, ScalarType::Bool))
        .then(|| types::clif_type(t).by(width as u32))
        .flatten()
}

/// Whether `op` on vectors of `t` has a lane form with the loop IR's
/// semantics (float `min`/`max` ignore NaN, unlike vector instructions;
/// integer division may fault).
pub(super) fn vector_op(op: BinOp, t: ScalarType) -> bool {
    match op {
        BinOp::Add | BinOp::Sub => t.is_int() || t.is_float(),
        BinOp::Mul => {
            t.is_float() || matches!(t, ScalarType::I32 | ScalarType::U32 | ScalarType::I16 | ScalarType::U16)
        }
        BinOp::Div => t.is_float(),
        _ => false,
    }
}

/// Flags for a vector access: not `aligned` (a vector spans records).
fn vector_flags(readonly: bool) -> MemFlagsData {
    let f = MemFlagsData::new().with_notrap();
    if readonly { f.with_readonly() } else { f }
}

/// The number of steps of `step` lanes a loop from `lo` to `hi` runs when it
/// can run them straight, with no loop: a constant trip count, a multiple of
/// `step`, of at most [`STRAIGHT_STEPS`] steps, and a body without checks
/// (a failing check resumes in the scalar loop, which this form has not).
/// BSR 1×8's dot product over a block (8 `f64`: two steps of two vectors)
/// then costs no counter, compare or branch, and no test for a rest.
fn straight_steps(lo: &Expr, hi: &Expr, checked: bool, step: i64) -> Option<i64> {
    let (Expr::Int(lo, _), Expr::Int(hi, _)) = (lo, hi) else { return None };
    let n = hi.checked_sub(*lo)?;
    (n > 0 && n % step == 0 && n / step <= STRAIGHT_STEPS && !checked).then_some(n / step)
}

impl Translator<'_, '_> {
    // ---------------------------------------------------------------- planning

    /// The lane plan of `for var … { body }` if it is a reduction over
    /// `accs` (or, with `accs` empty, a map loop) that vectorises and pays.
    /// `trip` is the loop's trip count when it is a constant.
    ///
    /// A gather pays in one case: a map loop of a constant trip count that
    /// is a multiple of the lane count (SELL-C-σ's C rows of a slice,
    /// `acc_next[l] = acc[l] + vals[k·C + l] · xs[cols[k·C + l]]`): there is
    /// no rest to run one at a time, and the vector loads of the values and
    /// columns, the vector multiply, add and store replace C scalar ones
    /// each, while the lanes of `xs` cost what scalar loads cost.
    pub(super) fn lane_plan(
        &self,
        var: &Name,
        body: &[Stmt],
        accs: &[Accumulator],
        trip: Option<i64>,
    ) -> Option<LanePlan> {
        if !self.options.vectorize || accs.iter().any(|a| a.ty.is_half()) || self.mentions_half(body) {
            return None;
        }
        let shape = if accs.is_empty() { Shape::Map } else { Shape::Reduction };
        // The data type: the accumulators' or the stored values'.
        let mut data: Option<ScalarType> = None;
        let mut agree = |t: ScalarType| match data {
            None => {
                data = Some(t);
                true
            }
            Some(d) => d.size_bytes() == t.size_bytes() && d.is_float() == t.is_float(),
        };
        for a in accs {
            let ok = match a.op {
                BinOp::Add | BinOp::Mul => vector_op(a.op, a.ty),
                _ => false,
            };
            if !ok || !agree(a.ty) {
                return None;
            }
        }
        let mut written: Vec<(Name, Expr)> = Vec::new();
        if shape == Shape::Map {
            for s in body {
                match s {
                    Stmt::Store { buf, index, field: 0, value } => {
                        let b = self.buffer(buf).ok()?;
                        if b.readonly || b.fields.len() != 1 || !agree(b.fields[0]) {
                            return None;
                        }
                        if written.iter().any(|(w, i)| w == buf && i != index) {
                            return None;
                        }
                        written.push((buf.clone(), index.clone()));
                        let _ = value;
                    }
                    Stmt::Let { .. } | Stmt::Check { .. } => {}
                    _ => return None,
                }
            }
            if written.is_empty() {
                return None;
            }
        }
        let width = VECTOR_BYTES / data?.size_bytes();
        if width < 2 {
            return None;
        }
        let mut kinds: Vec<(Name, Kind, ScalarType)> = vec![(var.clone(), Kind::Affine(1), ScalarType::I64)];
        let mut pays = false;
        let mut gathers = false;
        let mut stored = false;
        for s in body {
            match s {
                Stmt::Let { var: v, ty, value } => {
                    let k = self.kind_of(value, &kinds, &written, width, &mut pays, &mut gathers)?;
                    kinds.push((v.clone(), k, *ty));
                }
                Stmt::Check { cond, .. } => {
                    if stored {
                        return None;
                    }
                    self.kind_of(cond, &kinds, &written, width, &mut pays, &mut gathers)?;
                }
                Stmt::Assign { value: Expr::Bin(_, a, b), .. } if shape == Shape::Reduction => {
                    // `acc op e` or `e op acc`: plan `e`.
                    let e = if matches!(&**a, Expr::Var(x) if accs.iter().any(|c| &c.name == x)) { b } else { a };
                    self.kind_of(e, &kinds, &written, width, &mut pays, &mut gathers)?;
                }
                Stmt::Store { index, value, .. } if shape == Shape::Map => {
                    if self.kind_of(index, &kinds, &written, width, &mut pays, &mut gathers)? != Kind::Affine(1) {
                        return None;
                    }
                    self.kind_of(value, &kinds, &written, width, &mut pays, &mut gathers)?;
                    pays = true;
                    stored = true;
                }
                _ => return None,
            }
        }
        let gathers_pay = shape == Shape::Map && trip.is_some_and(|n| n > 0 && n % width as i64 == 0);
        (pays && (!gathers || gathers_pay)).then_some(LanePlan { width, shape })
    }

    /// Whether `body` has a check that is emitted: not one the inputs'
    /// ranges imply under `trust_ranges`.
    fn live_checks(&self, body: &[Stmt]) -> bool {
        let mut lets: Vec<(Name, Expr)> = Vec::new();
        body.iter().any(|s| match s {
            Stmt::Let { var, value, .. } => {
                lets.push((var.clone(), value.clone()));
                false
            }
            Stmt::Check { cond, .. } => !(self.options.trust_ranges && self.implied_by_ranges_after(cond, &lets)),
            _ => false,
        })
    }

    /// The kind of `e` in lanes, or `None` if it has no lane form here.
    #[allow(clippy::too_many_arguments)]
    fn kind_of(
        &self,
        e: &Expr,
        kinds: &[(Name, Kind, ScalarType)],
        written: &[(Name, Expr)],
        width: usize,
        pays: &mut bool,
        gathers: &mut bool,
    ) -> Option<Kind> {
        let ty = |e: &Expr| self.type_in_lanes(e, kinds);
        Some(match e {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) => Kind::Uniform,
            Expr::Var(n) => match kinds.iter().rev().find(|(m, ..)| m == n) {
                Some((_, k, _)) => *k,
                None => Kind::Uniform,
            },
            Expr::Load { buf, index, field } => {
                let b = self.buffer(buf).ok()?;
                let t = *b.fields.get(*field as usize)?;
                if let Some((_, w)) = written.iter().find(|(w, _)| w == buf) {
                    // A written buffer is read only where it is written.
                    if w != &**index {
                        return None;
                    }
                }
                match self.kind_of(index, kinds, written, width, pays, gathers)? {
                    Kind::Uniform => Kind::Uniform,
                    Kind::Affine(1) if b.fields.len() == 1 && vector_type(t, width).is_some() => {
                        *pays = true;
                        Kind::Vector
                    }
                    _ => {
                        // A gather builds its vector lane by lane: as many
                        // instructions as scalar code, and slower; a loop with one
                        // is better unrolled (SpMV's `xs[crd[k]]`).
                        *gathers = true;
                        Kind::Each
                    }
                }
            }
            Expr::Bin(op, a, b) => {
                let (ka, kb) = (
                    self.kind_of(a, kinds, written, width, pays, gathers)?,
                    self.kind_of(b, kinds, written, width, pays, gathers)?,
                );
                let t = ty(a)?;
                if matches!(op, BinOp::Div | BinOp::Rem) && t.is_int() && (ka, kb) != (Kind::Uniform, Kind::Uniform) {
                    // A division by zero must fault in the lane where it happens.
                    return None;
                }
                match (ka, kb) {
                    (Kind::Uniform, Kind::Uniform) => Kind::Uniform,
                    _ if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) => Kind::Each,
                    (Kind::Affine(s), Kind::Uniform) if matches!(op, BinOp::Add | BinOp::Sub) => Kind::Affine(s),
                    (Kind::Uniform, Kind::Affine(s)) if *op == BinOp::Add => Kind::Affine(s),
                    (Kind::Uniform, Kind::Affine(s)) if *op == BinOp::Sub => Kind::Affine(-s),
                    (Kind::Affine(s), Kind::Affine(r)) if *op == BinOp::Add => Kind::Affine(s + r),
                    (Kind::Affine(s), Kind::Affine(r)) if *op == BinOp::Sub => Kind::Affine(s - r),
                    (Kind::Affine(s), Kind::Uniform) if *op == BinOp::Mul && matches!(**b, Expr::Int(..)) => match &**b
                    {
                        Expr::Int(c, _) => Kind::Affine(s.checked_mul(*c)?),
                        _ => unreachable!(),
                    },
                    (Kind::Vector, _) | (_, Kind::Vector) if vector_op(*op, t) && vector_type(t, width).is_some() => {
                        Kind::Vector
                    }
                    _ => Kind::Each,
                }
            }
            Expr::Neg(a) => match self.kind_of(a, kinds, written, width, pays, gathers)? {
                Kind::Affine(s) => Kind::Affine(-s),
                Kind::Vector if ty(a)?.is_float() => Kind::Vector,
                Kind::Uniform => Kind::Uniform,
                _ => Kind::Each,
            },
            Expr::Not(a) => match self.kind_of(a, kinds, written, width, pays, gathers)? {
                Kind::Uniform => Kind::Uniform,
                _ => Kind::Each,
            },
            Expr::Cast(t, a) => {
                let from = ty(a)?;
                match self.kind_of(a, kinds, written, width, pays, gathers)? {
                    Kind::Uniform => Kind::Uniform,
                    // Only value-keeping conversions of affine integers stay affine.
                    Kind::Affine(s) if t.is_int() && from.is_int() && self.affine_cast_keeps(a, from, *t, kinds) => {
                        Kind::Affine(s)
                    }
                    _ => Kind::Each,
                }
            }
            Expr::Select(c, a, b) => {
                if super::expr::may_fault(a) || super::expr::may_fault(b) {
                    return None;
                }
                let ks = [c, a, b].map(|x| self.kind_of(x, kinds, written, width, pays, gathers));
                if ks.iter().all(|k| *k == Some(Kind::Uniform)) {
                    Kind::Uniform
                } else if ks.iter().all(Option::is_some) {
                    Kind::Each
                } else {
                    return None;
                }
            }
        })
    }

    /// Whether converting the affine integer `a` (of type `from`) to `to`
    /// keeps every lane's value: widening, or narrowing the lane loop's own
    /// variable (`kinds[0]`). The latter is always range-checked: such a
    /// cast is in [`heddle_ir::loops::narrow_casts`] of the loop, and
    /// [`lane_loop`](Self::lane_loop) enters the loop through
    /// [`enter_loop`](Self::enter_loop), which checks that the whole range
    /// fits before the first step (`Fault::IndexOverflow` otherwise, see
    /// [`super::lazy`]). The plan is made before that check is emitted, so
    /// `narrow_safe` does not list the variable yet (`generate`'s
    /// `(int) j` in MTTKRP's row update was planned as a gather).
    fn affine_cast_keeps(
        &self,
        a: &Expr,
        from: ScalarType,
        to: ScalarType,
        kinds: &[(Name, Kind, ScalarType)],
    ) -> bool {
        if to.size_bytes() >= from.size_bytes() && (to.is_signed() || !from.is_signed()) && to == ScalarType::I64 {
            return true;
        }
        // `(int) k` of the loop variable: checked on entry to the lane loop.
        matches!(a, Expr::Var(n) if kinds.first().is_some_and(|(v, ..)| v == n) && to.is_int() && to.size_bytes() < 8)
    }

    /// The scalar type of `e` inside the body.
    fn type_in_lanes(&self, e: &Expr, kinds: &[(Name, Kind, ScalarType)]) -> Option<ScalarType> {
        Some(match e {
            Expr::Int(_, t) | Expr::Float(_, t) | Expr::Cast(t, _) => *t,
            Expr::Bool(_) => ScalarType::Bool,
            Expr::Var(n) => match kinds.iter().rev().find(|(m, ..)| m == n) {
                Some((.., t)) => *t,
                None => match self.scope.iter().rev().find(|(m, _)| m == n)?.1 {
                    Bound::Val(_, t) | Bound::Var(_, t) => t,
                    Bound::Lazy(k) => self.lazies[k].1,
                    Bound::Lane(g, _) => self.lane_groups[g].ty,
                },
            },
            Expr::Load { buf, field, .. } => *self.buffer(buf).ok()?.fields.get(*field as usize)?,
            Expr::Bin(op, a, _) if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) => ScalarType::Bool,
            Expr::Bin(_, a, _) | Expr::Neg(a) => self.type_in_lanes(a, kinds)?,
            Expr::Not(_) => ScalarType::Bool,
            Expr::Select(_, a, _) => self.type_in_lanes(a, kinds)?,
        })
    }
}

/// The names a step binds, with their lane values and types.
type LaneScope = Vec<(Name, Lanes, ScalarType)>;

impl Translator<'_, '_> {
    // ---------------------------------------------------------------- emission

    /// Translates `for var in lo .. hi { body }` in lanes per `plan` (from
    /// [`lane_plan`](Self::lane_plan) with the same `accs`), then one
    /// iteration at a time for what is left.
    pub(super) fn lane_loop(
        &mut self,
        var: &Name,
        lo: &Expr,
        hi: &Expr,
        body: &[Stmt],
        accs: &[Accumulator],
        plan: LanePlan,
    ) -> Result<(), CodegenError> {
        let w = plan.width as i64;
        let chains = if plan.shape == Shape::Reduction { VECTOR_CHAINS } else { MAP_CHAINS };
        let step = w * chains;
        // Checks the inputs' ranges imply (under `trust_ranges`) are left
        // out of the lanes, as of the scalar code: SELL's column checks.
        let checked = self.live_checks(body);
        if let Some(steps) = straight_steps(lo, hi, checked, step) {
            return self.lane_steps_straight(var, lo, hi, body, accs, plan, chains, steps);
        }
        let (lo_v, hi_v) = self.loop_bounds(lo, hi, Schedule::Seq)?;
        let (pre, main, combine, rest_pre, rest, exit) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        // A map loop without checks (whose tail, below, starts at `main_hi`)
        // needs no entry test when the pre-header has nothing that
        // must not run for an empty loop: no invariant loads, and no narrow
        // range check or one that passes whenever `hi <= lo` (`lo` a
        // constant in the range, as `reduce.rs`'s unguarded loop). Then
        // `n = max(hi - lo, 0)` (`n = hi` when `lo` is 0 and `hi` a natural)
        // makes an empty loop run no step. It saves MTTKRP a test of `0 < J`
        // per nonzero.
        let no_checks = plan.shape == Shape::Map && chains > 1 && !checked;
        let narrow = heddle_ir::loops::narrow_casts(var, body);
        let (min, max) = heddle_ir::loops::fitting_range(&narrow);
        let fitting_lo = matches!(lo, Expr::Int(v, _) if *v >= min && max.checked_add(1).is_some_and(|m| *v <= m));
        let unguarded = no_checks && (narrow.is_empty() || fitting_lo) && self.invariant_loads(var, body).is_empty();
        if unguarded {
            self.b.ins().jump(pre, &[]);
        } else {
            let runs = self.b.ins().icmp(IntCC::SignedLessThan, lo_v, hi_v);
            self.b.ins().brif(runs, pre, &[], exit, &[]);
        }

        self.b.switch_to_block(pre);
        let marks = self.enter_loop(var, lo_v, hi_v, body)?;
        let n = self.b.ins().isub(hi_v, lo_v);
        let (n, hi_v) = if unguarded && !self.counts_from_zero_to_nat(lo, hi) {
            let zero = self.b.ins().iconst(ct::I64, 0);
            let n = self.b.ins().smax(n, zero);
            (n, self.b.ins().iadd(lo_v, n))
        } else {
            (n, hi_v)
        };
        // `main_hi = hi - n mod step` (`step` is a power of two), not
        // `lo + (n & -step)`: Cranelift recomputes an and with a constant at
        // each use, in the loop (as `reduce.rs` found), not a difference.
        debug_assert!((step as u64).is_power_of_two());
        let left_over = self.b.ins().band_imm_s(n, step - 1);
        let main_hi = self.b.ins().isub(hi_v, left_over);
        // A map loop without checks leaves its main loop at `main_hi` (also
        // when it does not run: `n < step` makes `main_hi = lo`), so what
        // follows it depends on the bounds alone: computed here, where
        // Cranelift can hoist it out of enclosing loops whose bounds it does
        // not depend on (MTTKRP's j loops, once per nonzero: `J`'s), rather
        // than from the counter after the loop.
        // Only `main_hi < hi` is tested on the way out (both are live
        // through the loop anyway); what is left is measured from the
        // counter, which Cranelift cannot hoist, so no value derived from
        // the bounds (`hi - main_hi`, …) is live across enclosing loops,
        // where such values cost MTTKRP registers and spills per nonzero.
        let tail = no_checks;
        let vaccs = self.vector_accumulators(accs, &plan, chains)?;
        let iv = self.b.declare_var(ct::I64);
        self.b.def_var(iv, lo_v);
        let any = self.b.ins().icmp(IntCC::SignedLessThan, lo_v, main_hi);
        self.b.ins().brif(any, main, &[], combine, &[]);

        self.b.switch_to_block(main);
        let k = self.b.use_var(iv);
        for c in 0..chains {
            let lane0 = if c == 0 { k } else { self.b.ins().iadd_imm_s(k, c * w) };
            let mine: Vec<Variable> = vaccs.iter().map(|v| v[c as usize]).collect();
            self.lane_step(var, lane0, body, accs, &mine, &plan, iv, combine)?;
        }
        let k = self.b.use_var(iv);
        let next = self.b.ins().iadd_imm_s(k, step);
        self.b.def_var(iv, next);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, next, main_hi);
        self.b.ins().brif(more, main, &[], combine, &[]);

        self.b.switch_to_block(combine);
        if tail {
            // `iv = main_hi` here; if anything is left, one vector step if
            // a whole one is, then the rest one at a time.
            let (left_over, single) = (self.b.create_block(), self.b.create_block());
            let left = self.b.ins().icmp(IntCC::SignedLessThan, main_hi, hi_v);
            self.b.ins().brif(left, left_over, &[], exit, &[]);
            self.b.switch_to_block(left_over);
            let at = self.b.use_var(iv);
            let room = self.b.ins().isub(hi_v, at);
            let fits = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, room, w);
            self.b.ins().brif(fits, single, &[], rest_pre, &[]);
            self.b.switch_to_block(single);
            self.lane_step(var, at, body, &[], &[], &plan, iv, exit)?;
            let next = self.b.ins().iadd_imm_s(at, w);
            self.b.def_var(iv, next);
            let more = self.b.ins().icmp(IntCC::SignedLessThan, next, hi_v);
            self.b.ins().brif(more, rest_pre, &[], exit, &[]);
        } else if plan.shape == Shape::Map && chains > 1 {
            // A single vector step if a whole one is left. (A step of the main
            // loop whose checks failed comes here too: this step fails the same
            // checks before any store and leaves for the scalar loop.)
            let (single, after) = (self.b.create_block(), self.b.create_block());
            let at = self.b.use_var(iv);
            let room = self.b.ins().isub(hi_v, at);
            let fits = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, room, w);
            self.b.ins().brif(fits, single, &[], after, &[]);
            self.b.switch_to_block(single);
            let at = self.b.use_var(iv);
            self.lane_step(var, at, body, &[], &[], &plan, iv, after)?;
            let next = self.b.ins().iadd_imm_s(at, w);
            self.b.def_var(iv, next);
            self.b.ins().jump(after, &[]);
            self.b.switch_to_block(after);
        }
        self.fold_lanes(accs, &vaccs, &plan)?;
        if !tail {
            let at = self.b.use_var(iv);
            let left = self.b.ins().icmp(IntCC::SignedLessThan, at, hi_v);
            self.b.ins().brif(left, rest_pre, &[], exit, &[]);
        }

        // The rest, one iteration at a time (also where a failing step resumes).
        self.b.switch_to_block(rest_pre);
        self.b.ins().jump(rest, &[]);
        self.b.switch_to_block(rest);
        self.scope.push((var.clone(), Bound::Var(iv, ScalarType::I64)));
        self.depth += 1;
        self.block(body)?;
        self.depth -= 1;
        self.scope.pop();
        let k = self.b.use_var(iv);
        let next = self.b.ins().iadd_imm_s(k, 1);
        self.b.def_var(iv, next);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, next, hi_v);
        self.b.ins().brif(more, rest, &[], exit, &[]);

        self.b.switch_to_block(exit);
        self.leave_loop(marks);
        Ok(())
    }

    /// [`lane_loop`](Self::lane_loop)'s form for a loop [`straight_steps`]
    /// accepts: its `steps` steps one after another, then the lanes folded.
    #[allow(clippy::too_many_arguments)]
    fn lane_steps_straight(
        &mut self,
        var: &Name,
        lo: &Expr,
        hi: &Expr,
        body: &[Stmt],
        accs: &[Accumulator],
        plan: LanePlan,
        chains: i64,
        steps: i64,
    ) -> Result<(), CodegenError> {
        let (lo_v, hi_v) = self.loop_bounds(lo, hi, Schedule::Seq)?;
        let Expr::Int(first, _) = lo else { return Err(lane_mismatch("a constant bound")) };
        let w = plan.width as i64;
        let marks = self.enter_loop(var, lo_v, hi_v, body)?;
        // An enclosing loop's nested sum carries one vector per step across
        // its iterations (`nested`): each step adds into its own, no fold here.
        let nested = self.nested_partials(accs, (steps * chains) as usize, plan.width);
        let vaccs = match &nested {
            Some(parts) => vec![parts.clone()],
            None => self.vector_accumulators(accs, &plan, chains)?,
        };
        // `lane_step` resumes there only after a failing check; there are none.
        let (iv, unused) =
            (self.b.declare_var(ct::I64), self.b.current_block().ok_or_else(|| lane_mismatch("a block"))?);
        self.b.def_var(iv, lo_v);
        for s in 0..steps {
            for c in 0..chains {
                let lane0 = self.b.ins().iconst(ct::I64, first + (s * chains + c) * w);
                let at = if nested.is_some() { s * chains + c } else { c };
                let mine: Vec<Variable> = vaccs.iter().map(|v| v[at as usize]).collect();
                self.lane_step(var, lane0, body, accs, &mine, &plan, iv, unused)?;
            }
        }
        if nested.is_none() {
            self.fold_lanes(accs, &vaccs, &plan)?;
        }
        self.leave_loop(marks);
        Ok(())
    }

    /// Per accumulator, `chains` vectors of partial results, from the identity.
    fn vector_accumulators(
        &mut self,
        accs: &[Accumulator],
        plan: &LanePlan,
        chains: i64,
    ) -> Result<Vec<Vec<Variable>>, CodegenError> {
        let mut vaccs: Vec<Vec<Variable>> = Vec::new();
        for a in accs {
            let vt = vector_type(a.ty, plan.width).ok_or_else(|| lane_mismatch("an accumulator type"))?;
            let id = self.identity(a.op, a.ty);
            let splat = self.b.ins().splat(vt, id);
            let vars = (0..chains)
                .map(|_| {
                    let x = self.b.declare_var(vt);
                    self.b.def_var(x, splat);
                    x
                })
                .collect();
            vaccs.push(vars);
        }
        Ok(vaccs)
    }

    /// Lanes, then chains, folded into each accumulator.
    fn fold_lanes(
        &mut self,
        accs: &[Accumulator],
        vaccs: &[Vec<Variable>],
        plan: &LanePlan,
    ) -> Result<(), CodegenError> {
        for (a, vars) in accs.iter().zip(vaccs) {
            let mut v = self.b.use_var(vars[0]);
            for x in &vars[1..] {
                let y = self.b.use_var(*x);
                v = self.vector_binary(a.op, a.ty, v, y)?;
            }
            let mut lanes: Vec<Value> = (0..plan.width).map(|l| self.b.ins().extractlane(v, l as u8)).collect();
            while lanes.len() > 1 {
                let mut folded = Vec::with_capacity(lanes.len() / 2);
                for pair in lanes.chunks(2) {
                    folded.push(if pair.len() == 2 { self.combine(a.op, a.ty, pair[0], pair[1])? } else { pair[0] });
                }
                lanes = folded;
            }
            let acc = self.b.use_var(a.var);
            let total = self.combine(a.op, a.ty, acc, lanes[0])?;
            self.b.def_var(a.var, total);
        }
        Ok(())
    }

    /// Whether a loop over `lo .. hi` counts from 0 to a natural argument:
    /// it runs `hi` times, never a negative count (a natural is not
    /// negative: [`Kernel::slots`](crate::Kernel::slots) refuses one).
    fn counts_from_zero_to_nat(&self, lo: &Expr, hi: &Expr) -> bool {
        let nat = match hi {
            Expr::Var(v) => {
                self.prog.arg(v).is_some_and(|a| matches!(a.kind, heddle_ir::loops::ArgKind::Nat))
                    && self.position(v).is_ok_and(|p| self.is_arg_value(p))
            }
            _ => false,
        };
        matches!(lo, Expr::Int(0, _)) && nat
    }

    /// One step: the body over lanes `lane0 .. lane0 + W`, accumulating into
    /// `vaccs`; a failing check sets `iv` to `lane0` and leaves for `resume`.
    #[allow(clippy::too_many_arguments)]
    fn lane_step(
        &mut self,
        var: &Name,
        lane0: Value,
        body: &[Stmt],
        accs: &[Accumulator],
        vaccs: &[Variable],
        plan: &LanePlan,
        iv: Variable,
        resume: cranelift_codegen::ir::Block,
    ) -> Result<(), CodegenError> {
        let (scope_mark, lets_mark) = (self.scope.len(), self.let_values.len());
        let no_checks = !self.live_checks(body);
        let loads_moved = std::mem::replace(&mut self.lane_loads_move, no_checks);
        let mut lanes: LaneScope = vec![(var.clone(), Lanes::Affine(lane0, 1), ScalarType::I64)];
        let mut bail: Option<cranelift_codegen::ir::Block> = None;
        let mut body_lets: Vec<(Name, Expr)> = Vec::new();
        for s in body {
            match s {
                Stmt::Let { var: v, ty, value } => {
                    body_lets.push((v.clone(), value.clone()));
                    let x = self.lane_value(value, &lanes, plan.width)?;
                    if let Lanes::Uniform(u) = x {
                        // Uniform values are ordinary names for the scalar code.
                        self.scope.push((v.clone(), Bound::Val(u, *ty)));
                        self.let_values.push((v.clone(), value.clone()));
                    }
                    lanes.push((v.clone(), x, *ty));
                }
                Stmt::Check { cond, .. }
                    if self.options.trust_ranges && self.implied_by_ranges_after(cond, &body_lets) =>
                {
                    self.trusted_checks += 1;
                }
                Stmt::Check { cond, .. } => {
                    let c = self.lane_value(cond, &lanes, plan.width)?;
                    let each = self.lane_values(c, ScalarType::Bool, plan.width);
                    let all = each
                        .into_iter()
                        .reduce(|a, b| self.b.ins().band(a, b))
                        .ok_or_else(|| lane_mismatch("a check"))?;
                    let target = *bail.get_or_insert_with(|| self.b.create_block());
                    let cont = self.b.create_block();
                    self.b.ins().brif(all, cont, &[], target, &[]);
                    self.b.switch_to_block(cont);
                }
                Stmt::Assign { var: acc, value: Expr::Bin(op, a, b) } => {
                    let k = accs.iter().position(|c| &c.name == acc).ok_or_else(|| lane_mismatch("an assignment"))?;
                    let e = if matches!(&**a, Expr::Var(x) if x == acc) { b } else { a };
                    let t = accs[k].ty;
                    let x = self.lane_value(e, &lanes, plan.width)?;
                    let xv = self.vector_value(x, t, plan.width)?;
                    let cur = self.b.use_var(vaccs[k]);
                    // A sum of products fuses as in the scalar loop (`reduce.rs`'s `fused_update`).
                    let product = (self.fma && *op == BinOp::Add && matches!(t, ScalarType::F32 | ScalarType::F64))
                        .then(|| self.product_operands(xv))
                        .flatten()
                        .filter(|(x, _)| self.b.func.dfg.value_type(*x) == self.b.func.dfg.value_type(cur));
                    let next = match product {
                        Some((x, y)) => self.b.ins().fma(x, y, cur),
                        None => self.vector_binary(*op, t, cur, xv)?,
                    };
                    self.b.def_var(vaccs[k], next);
                }
                Stmt::Store { buf, index, field, value } => {
                    let Lanes::Affine(i0, 1) = self.lane_value(index, &lanes, plan.width)? else {
                        return Err(lane_mismatch("a store's index"));
                    };
                    if let Some((x, vt)) = self.register_lanes(buf, i0, plan.width) {
                        let t = self.buffer(buf)?.fields[*field as usize];
                        let v = self.lane_value(value, &lanes, plan.width)?;
                        let xv = self.vector_value(v, t, plan.width)?;
                        if self.b.func.dfg.value_type(xv) == vt {
                            self.b.def_var(x, xv);
                            continue;
                        }
                        // Otherwise the memory path, which sends the array to memory.
                    }
                    let b = self.buffer(buf)?;
                    let (base, size, offset, t) = (
                        b.base,
                        b.layout.size as i64,
                        b.layout.offsets[*field as usize] as i32,
                        b.fields[*field as usize],
                    );
                    let x = self.lane_value(value, &lanes, plan.width)?;
                    let xv = self.vector_value(x, t, plan.width)?;
                    let (addr, offset) = self.lane_address(base, size, offset, i0, lane0);
                    self.b.ins().store(vector_flags(false), xv, addr, offset);
                }
                _ => return Err(lane_mismatch("a statement")),
            }
        }
        self.scope.truncate(scope_mark);
        self.let_values.truncate(lets_mark);
        self.lane_loads_move = loads_moved;
        if let Some(target) = bail {
            // Resume one iteration at a time from this step's first lane.
            let cont = self.b.create_block();
            self.b.ins().jump(cont, &[]);
            self.b.switch_to_block(target);
            self.b.def_var(iv, lane0);
            self.b.ins().jump(resume, &[]);
            self.b.switch_to_block(cont);
        }
        Ok(())
    }

    /// The address of lane 0 of a contiguous access at index `i0` (lanes
    /// `i0 + l`) of a buffer at `base` with records of `size` bytes and the
    /// field at `offset`, built as the scalar code builds one (`expr.rs`'s
    /// `address`): `(base + u·size) + k·size` with displacement
    /// `offset + c·size`, when `i0` is the step's first-lane loop variable
    /// `lane0 = k + c` (`c` the chain's constant offset), plus at most one
    /// other term `u`. Cranelift hoists `base + u·size` out of the loop
    /// when `u` is invariant, and the rest is one x86 addressing mode, so a
    /// vector load or store costs no address arithmetic of its own.
    /// Otherwise `base + i0·size`.
    fn lane_address(&mut self, base: Value, size: i64, offset: i32, i0: Value, lane0: Value) -> (Value, i32) {
        use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
        // A straight step's first lane is a constant: all of it goes in the
        // displacement, so every step of the loop (and every lane) shares
        // one address `base + u·size` (not `(base + u·size) + 4·size`, which
        // x64 lowering computes into a register of its own per step).
        let constant = match self.b.func.dfg.value_def(lane0) {
            ValueDef::Result(inst, 0) if self.options.strength_reduction => match self.b.func.dfg.insts[inst] {
                InstructionData::UnaryImm { opcode: Opcode::Iconst, imm } => Some(imm.bits()),
                _ => None,
            },
            _ => None,
        };
        let (counter, c) = match constant {
            Some(c) => (None, c),
            None => {
                let (counter, c) = self.constant_addend(lane0);
                (Some(counter), c)
            }
        };
        let other = if i0 == lane0 {
            Some(None)
        } else {
            match self.b.func.dfg.value_def(i0) {
                ValueDef::Result(inst, 0) => match self.b.func.dfg.insts[inst] {
                    InstructionData::Binary { opcode: Opcode::Iadd, args: [x, y] } if x == lane0 => Some(Some(y)),
                    InstructionData::Binary { opcode: Opcode::Iadd, args: [x, y] } if y == lane0 => Some(Some(x)),
                    _ => None,
                },
                _ => None,
            }
        };
        let displacement = c.checked_mul(size).and_then(|d| i32::try_from(d).ok()).and_then(|d| offset.checked_add(d));
        match (other, displacement) {
            (Some(other), Some(displacement)) => {
                let mut addr = base;
                if let Some(u) = other {
                    let scaled = self.scaled(u, size);
                    addr = self.b.ins().iadd(addr, scaled);
                }
                match counter {
                    Some(counter) => {
                        let scaled = self.scaled(counter, size);
                        (self.b.ins().iadd(addr, scaled), displacement)
                    }
                    None => (addr, displacement),
                }
            }
            _ => {
                let scaled = self.scaled(i0, size);
                (self.b.ins().iadd(base, scaled), offset)
            }
        }
    }

    /// Whether `e` reads nothing that differs between lanes.
    fn uniform(e: &Expr, lanes: &LaneScope) -> bool {
        match e {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) => true,
            Expr::Var(n) => {
                lanes.iter().rev().find(|(m, ..)| m == n).is_none_or(|(_, x, _)| matches!(x, Lanes::Uniform(_)))
            }
            Expr::Load { index, .. } => Self::uniform(index, lanes),
            Expr::Bin(_, a, b) => Self::uniform(a, lanes) && Self::uniform(b, lanes),
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => Self::uniform(a, lanes),
            Expr::Select(c, a, b) => Self::uniform(c, lanes) && Self::uniform(a, lanes) && Self::uniform(b, lanes),
        }
    }

    /// `e` across the lanes of a step.
    fn lane_value(&mut self, e: &Expr, lanes: &LaneScope, width: usize) -> Result<Lanes, CodegenError> {
        if Self::uniform(e, lanes) {
            return Ok(Lanes::Uniform(self.expr(e)?.0));
        }
        let kinds: Vec<(Name, Kind, ScalarType)> = Vec::new();
        let ty_of = |t: &Translator<'_, '_>, e: &Expr| -> Result<ScalarType, CodegenError> {
            let scope: Vec<(Name, Kind, ScalarType)> =
                lanes.iter().map(|(n, _, t)| (n.clone(), Kind::Each, *t)).collect();
            t.type_in_lanes(e, &scope).ok_or_else(|| lane_mismatch("a type"))
        };
        let _ = kinds;
        Ok(match e {
            Expr::Var(n) => lanes
                .iter()
                .rev()
                .find(|(m, ..)| m == n)
                .map(|(_, x, _)| x.clone())
                .ok_or_else(|| lane_mismatch("a name"))?,
            Expr::Load { buf, index, field } => {
                let idx = self.lane_value(index, lanes, width)?;
                if let Lanes::Affine(i0, 1) = idx
                    && let Some((x, _)) = self.register_lanes(buf, i0, width)
                {
                    return Ok(Lanes::Vector(self.b.use_var(x)));
                }
                let b = self.buffer(buf)?;
                let (base, size, offset, t, single, readonly) = (
                    b.base,
                    b.layout.size as i64,
                    b.layout.offsets[*field as usize] as i32,
                    b.fields[*field as usize],
                    b.fields.len() == 1,
                    b.readonly,
                );
                match idx {
                    Lanes::Affine(i0, 1) if single && vector_type(t, width).is_some() => {
                        let vt = vector_type(t, width).ok_or_else(|| lane_mismatch("a vector type"))?;
                        let lane0 = match lanes.first() {
                            Some((_, Lanes::Affine(v, 1), _)) => *v,
                            _ => return Err(lane_mismatch("the loop variable")),
                        };
                        let (addr, offset) = self.lane_address(base, size, offset, i0, lane0);
                        let flags = self.lane_load_flags(vector_flags(readonly), index);
                        Lanes::Vector(self.b.ins().load(vt, flags, addr, offset))
                    }
                    other => {
                        let flags = self.lane_load_flags(types::buffer(readonly), index);
                        let each = self.lane_values(other, ScalarType::I64, width);
                        Lanes::Each(
                            each.into_iter()
                                .map(|i| {
                                    let scaled = self.b.ins().imul_imm_s(i, size);
                                    let addr = self.b.ins().iadd(base, scaled);
                                    let v = self.b.ins().load(types::clif_type(t), flags, addr, offset);
                                    if t == ScalarType::Bool {
                                        self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0)
                                    } else {
                                        v
                                    }
                                })
                                .collect(),
                        )
                    }
                }
            }
            Expr::Bin(op, a, b) => {
                let t = ty_of(self, a)?;
                let (x, y) = (self.lane_value(a, lanes, width)?, self.lane_value(b, lanes, width)?);
                let vector = vector_op(*op, t) && vector_type(t, width).is_some();
                match (x, y) {
                    (Lanes::Affine(p, s), Lanes::Uniform(u)) if *op == BinOp::Add => {
                        Lanes::Affine(self.b.ins().iadd(p, u), s)
                    }
                    (Lanes::Affine(p, s), Lanes::Uniform(u)) if *op == BinOp::Sub => {
                        Lanes::Affine(self.b.ins().isub(p, u), s)
                    }
                    (Lanes::Uniform(u), Lanes::Affine(p, s)) if *op == BinOp::Add => {
                        Lanes::Affine(self.b.ins().iadd(u, p), s)
                    }
                    (Lanes::Uniform(u), Lanes::Affine(p, s)) if *op == BinOp::Sub => {
                        Lanes::Affine(self.b.ins().isub(u, p), -s)
                    }
                    (Lanes::Affine(p, s), Lanes::Affine(q, r)) if *op == BinOp::Add => {
                        Lanes::Affine(self.b.ins().iadd(p, q), s + r)
                    }
                    (Lanes::Affine(p, s), Lanes::Affine(q, r)) if *op == BinOp::Sub => {
                        Lanes::Affine(self.b.ins().isub(p, q), s - r)
                    }
                    (Lanes::Affine(p, s), Lanes::Uniform(u)) if *op == BinOp::Mul && matches!(**b, Expr::Int(..)) => {
                        let Expr::Int(c, _) = **b else { unreachable!() };
                        Lanes::Affine(self.b.ins().imul(p, u), s * c)
                    }
                    (x @ Lanes::Vector(_), y) | (x, y @ Lanes::Vector(_)) if vector && !op.is_comparison() => {
                        // A vector of values loaded is the first operand, so
                        // Cranelift places its load before x's lanes (not
                        // folded into the multiply: issued late, behind the
                        // gather, it was slower on a 1000000² f32 matrix,
                        // docs/performance.md, "sellx").
                        let (xv, yv) = (self.vector_value(x, t, width)?, self.vector_value(y, t, width)?);
                        Lanes::Vector(self.vector_binary(*op, t, xv, yv)?)
                    }
                    (x, y) => {
                        let (xs, ys) = (self.lane_values(x, t, width), self.lane_values(y, t, width));
                        let mut out = Vec::with_capacity(width);
                        for (p, q) in xs.into_iter().zip(ys) {
                            out.push(self.scalar_binary(*op, t, p, q)?);
                        }
                        Lanes::Each(out)
                    }
                }
            }
            Expr::Neg(a) => {
                let t = ty_of(self, a)?;
                match self.lane_value(a, lanes, width)? {
                    Lanes::Affine(p, s) => Lanes::Affine(self.b.ins().ineg(p), -s),
                    Lanes::Vector(v) if t.is_float() => Lanes::Vector(self.b.ins().fneg(v)),
                    x => {
                        let each = self.lane_values(x, t, width);
                        Lanes::Each(
                            each.into_iter()
                                .map(|v| {
                                    if t.is_float() {
                                        self.b.ins().fneg(v)
                                    } else if t == ScalarType::Bool {
                                        v
                                    } else {
                                        self.b.ins().ineg(v)
                                    }
                                })
                                .collect(),
                        )
                    }
                }
            }
            Expr::Not(a) => {
                let t = ty_of(self, a)?;
                let x = self.lane_value(a, lanes, width)?;
                let each = self.lane_values(x, t, width);
                Lanes::Each(each.into_iter().map(|v| self.is_zero(v, t)).collect())
            }
            Expr::Cast(to, a) => {
                let from = ty_of(self, a)?;
                if *to == ScalarType::I64
                    && let Expr::Load { buf, index, field } = &**a
                    && self.options.scalar_index_lanes
                    && let Some(each) = self.widened_lanes(buf, index, *field, lanes, width)?
                {
                    return Ok(Lanes::Each(each));
                }
                match self.lane_value(a, lanes, width)? {
                    Lanes::Affine(p, s) if to.is_int() && from.is_int() && to.size_bytes() < from.size_bytes() => {
                        Lanes::Affine(self.narrow_index(p, *to), s)
                    }
                    Lanes::Affine(p, s) if *to == ScalarType::I64 && from.is_int() => {
                        match self.widened_from(p, from) {
                            Some(wide) => Lanes::Affine(wide, s),
                            None => Lanes::Affine(self.cast(p, from, *to)?, s),
                        }
                    }
                    x => {
                        let each = self.lane_values(x, from, width);
                        Lanes::Each(each.into_iter().map(|v| self.cast(v, from, *to)).collect::<Result<_, _>>()?)
                    }
                }
            }
            Expr::Select(c, a, b) => {
                let t = ty_of(self, a)?;
                let (cs, xs, ys) = (
                    self.lane_value(c, lanes, width)?,
                    self.lane_value(a, lanes, width)?,
                    self.lane_value(b, lanes, width)?,
                );
                let (cs, xs, ys) = (
                    self.lane_values(cs, ScalarType::Bool, width),
                    self.lane_values(xs, t, width),
                    self.lane_values(ys, t, width),
                );
                Lanes::Each((0..width).map(|l| self.b.ins().select(cs[l], xs[l], ys[l])).collect())
            }
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) => unreachable!("constants are uniform"),
        })
    }

    /// A contiguous 32- or 16-bit integer load widened to `i64` in each lane
    /// (a column index, SELL's `(i64) cols[8k + l]`, `u16` with `crdWidth =
    /// 16`), loaded lane by lane straight to 64 bits (`movslq`/`movzwq` on
    /// x64, a load port each) rather than as one vector whose lanes are then
    /// extracted one by one (`pextrd`, the shuffle port, which the gather's
    /// `insertps` needs too). `None` for any other load.
    fn widened_lanes(
        &mut self,
        buf: &Name,
        index: &Expr,
        field: u32,
        lanes: &LaneScope,
        width: usize,
    ) -> Result<Option<Vec<Value>>, CodegenError> {
        let b = self.buffer(buf)?;
        let (base, size, offset, single, readonly, in_regs) = (
            b.base,
            b.layout.size as i64,
            b.layout.offsets[field as usize] as i32,
            b.fields.len() == 1,
            b.readonly,
            b.regs.is_some(),
        );
        let t = b.fields[field as usize];
        let narrow = match t {
            ScalarType::I32 | ScalarType::U32 => ct::I32,
            ScalarType::I16 | ScalarType::U16 => ct::I16,
            _ => return Ok(None),
        };
        if !single || in_regs {
            return Ok(None);
        }
        let Lanes::Affine(i0, 1) = self.lane_value(index, lanes, width)? else { return Ok(None) };
        let lane0 = match lanes.first() {
            Some((_, Lanes::Affine(v, 1), _)) => *v,
            _ => return Ok(None),
        };
        let (addr, disp) = self.lane_address(base, size, offset, i0, lane0);
        let flags = self.lane_load_flags(types::buffer(readonly), index);
        let mut each = Vec::with_capacity(width);
        for l in 0..width as i64 {
            let Some(d) = l.checked_mul(size).and_then(|d| i32::try_from(d).ok()).and_then(|d| disp.checked_add(d))
            else {
                return Ok(None);
            };
            each.push(if flags.can_move() {
                // A `load` (Cranelift's only load it may place next to its
                // use), extended by the `movslq`/`movl`/`movzwq` it folds into.
                let n = self.b.ins().load(narrow, flags, addr, d);
                if t.is_signed() { self.b.ins().sextend(ct::I64, n) } else { self.b.ins().uextend(ct::I64, n) }
            } else {
                match t {
                    ScalarType::I32 => self.b.ins().sload32(flags, addr, d),
                    ScalarType::U32 => self.b.ins().uload32(flags, addr, d),
                    ScalarType::I16 => self.b.ins().sload16(ct::I64, flags, addr, d),
                    _ => self.b.ins().uload16(ct::I64, flags, addr, d),
                }
            });
        }
        Ok(Some(each))
    }

    /// `flags` (of a load from a buffer, at `index`, in a lane step), made
    /// `can_move` when the load is valid wherever its operands are: a
    /// read-only buffer, a step with no emitted check (in trusted code, the
    /// checks the inputs' ranges imply are left out: x's lanes rest on the
    /// validated columns), under no `if` of the innermost loop, at an index
    /// that changes in that loop (so the load cannot leave it). Cranelift
    /// then places each such load right before its one use, where it folds:
    /// a gathered lane into `insertps`/`pinsrq` from memory (lane 0 into the
    /// `movss`/`movsd` that starts the vector), a column into its `movslq`.
    /// A load whose validity rests on a check in the
    /// step keeps its place after the check.
    fn lane_load_flags(&self, flags: MemFlagsData, index: &Expr) -> MemFlagsData {
        let inner = self.loop_names.last().map(|v| v.as_slice()).unwrap_or(&[]);
        let movable = self.options.fold_lane_loads
            && flags.readonly()
            && self.lane_loads_move
            && matches!(self.loop_var, Some((_, 0)))
            && !self.invariant_in(index, inner);
        if movable { flags.with_can_move() } else { flags }
    }

    /// One scalar per lane.
    fn lane_values(&mut self, x: Lanes, t: ScalarType, width: usize) -> Vec<Value> {
        match x {
            Lanes::Uniform(v) => vec![v; width],
            Lanes::Affine(p, s) => {
                (0..width as i64).map(|l| if l == 0 { p } else { self.b.ins().iadd_imm_s(p, l * s) }).collect()
            }
            Lanes::Each(vs) => vs,
            Lanes::Vector(v) => {
                let _ = t;
                (0..width).map(|l| self.b.ins().extractlane(v, l as u8)).collect()
            }
        }
    }

    /// A vector of `t`.
    fn vector_value(&mut self, x: Lanes, t: ScalarType, width: usize) -> Result<Value, CodegenError> {
        let vt = vector_type(t, width).ok_or_else(|| lane_mismatch("a vector type"))?;
        Ok(match x {
            Lanes::Vector(v) => v,
            Lanes::Uniform(v) => self.b.ins().splat(vt, v),
            other => {
                let each = self.lane_values(other, t, width);
                if let Some(v) = self.f64_pair_of_loads(&each) {
                    return Ok(v);
                }
                // Cranelift 0.135's x64 backend has no `scalar_to_vector`
                // from an 8-bit integer (no rule for `bitcast_gpr_to_xmm`
                // at that width: it panics); a splat of lane 0 starts the
                // vector as well, the other lanes overwritten below.
                let mut v = if t.size_bytes() == 1 {
                    self.b.ins().splat(vt, each[0])
                } else {
                    self.b.ins().scalar_to_vector(vt, each[0])
                };
                for (l, x) in each.iter().enumerate().skip(1) {
                    v = self.b.ins().insertlane(v, *x, l as u8);
                }
                v
            }
        })
    }

    /// Two `f64` lanes that are `can_move` loads, as an `f64x2` built from
    /// the same memory as `i64`s: `movsd` for lane 0 and `pinsrq` from
    /// memory for lane 1, two instructions. (An `f64x2`'s lane 1 has no
    /// insert from memory in Cranelift 0.135, `movlhps` takes a register:
    /// two loads, a zeroing and two moves.) The `f64` loads, then unused,
    /// are dropped, being pure. `None` for other lanes.
    fn f64_pair_of_loads(&mut self, each: &[Value]) -> Option<Value> {
        use cranelift_codegen::ir::{Endianness, InstructionData, Opcode, ValueDef};
        if each.len() != 2 || each.iter().any(|v| self.b.func.dfg.value_type(*v) != ct::F64) {
            return None;
        }
        let mut parts = Vec::with_capacity(2);
        for v in each {
            let ValueDef::Result(inst, 0) = self.b.func.dfg.value_def(*v) else { return None };
            let InstructionData::Load { opcode: Opcode::Load, arg, flags, offset } = self.b.func.dfg.insts[inst] else {
                return None;
            };
            let flags = self.b.func.dfg.mem_flags[flags];
            if !flags.can_move() {
                return None;
            }
            parts.push((arg, flags, i32::from(offset)));
        }
        let (a0, f0, o0) = parts[0];
        let (a1, f1, o1) = parts[1];
        let lo = self.b.ins().load(ct::I64, f0, a0, o0);
        let v = self.b.ins().scalar_to_vector(ct::I64X2, lo);
        let hi = self.b.ins().load(ct::I64, f1, a1, o1);
        let v = self.b.ins().insertlane(v, hi, 1);
        Some(self.b.ins().bitcast(ct::F64X2, MemFlagsData::new().with_endianness(Endianness::Little), v))
    }

    /// `a op b` on vectors of `t` (an op [`vector_op`] accepts).
    pub(super) fn vector_binary(
        &mut self,
        op: BinOp,
        t: ScalarType,
        a: Value,
        b: Value,
    ) -> Result<Value, CodegenError> {
        Ok(match (op, t.is_float()) {
            (BinOp::Add, true) => self.b.ins().fadd(a, b),
            (BinOp::Sub, true) => self.b.ins().fsub(a, b),
            (BinOp::Mul, true) => self.b.ins().fmul(a, b),
            (BinOp::Div, true) => self.b.ins().fdiv(a, b),
            (BinOp::Add, false) => self.b.ins().iadd(a, b),
            (BinOp::Sub, false) => self.b.ins().isub(a, b),
            (BinOp::Mul, false) => self.b.ins().imul(a, b),
            _ => return Err(lane_mismatch("a vector operator")),
        })
    }

    /// `a op b` on scalars of `t` (the operands' type), with the loop IR's semantics.
    fn scalar_binary(&mut self, op: BinOp, t: ScalarType, a: Value, b: Value) -> Result<Value, CodegenError> {
        if op.is_comparison() {
            return Ok(if t.is_float() {
                self.b.ins().fcmp(super::arith::float_cc(op), a, b)
            } else {
                self.b.ins().icmp(super::arith::int_cc(op, t.is_signed()), a, b)
            });
        }
        match op {
            BinOp::And => Ok(self.b.ins().band(a, b)),
            BinOp::Or => Ok(self.b.ins().bor(a, b)),
            _ if t.is_float() => self.float_op(op, a, b, t),
            _ => self.int_op(op, a, b, t.is_signed()),
        }
    }
}

fn lane_mismatch(what: &str) -> CodegenError {
    CodegenError::Unsupported(format!("{what} in a vectorised loop (the lane plan and its translation disagree)"))
}

impl Translator<'_, '_> {
    /// Does `body` compute with `f16` or `bf16` anywhere (a buffer field, a
    /// `let`, a literal, a conversion)? Such loops are not vectorised: their
    /// values are held in `f32` lanes but stored in 16 bits, and every
    /// operation rounds.
    fn mentions_half(&self, body: &[Stmt]) -> bool {
        fn expr(e: &Expr) -> bool {
            match e {
                Expr::Float(_, t) | Expr::Int(_, t) => t.is_half(),
                Expr::Cast(t, a) => t.is_half() || expr(a),
                Expr::Bin(_, a, b) => expr(a) || expr(b),
                Expr::Neg(a) | Expr::Not(a) => expr(a),
                Expr::Select(c, a, b) => expr(c) || expr(a) || expr(b),
                Expr::Load { index, .. } => expr(index),
                Expr::Bool(_) | Expr::Var(_) => false,
            }
        }
        let buffer_half = |b: &Name| self.buffer(b).map(|b| b.fields.iter().any(|f| f.is_half())).unwrap_or(false);
        fn loads(e: &Expr, f: &mut dyn FnMut(&Name)) {
            match e {
                Expr::Load { buf, index, .. } => {
                    f(buf);
                    loads(index, f)
                }
                Expr::Cast(_, a) | Expr::Neg(a) | Expr::Not(a) => loads(a, f),
                Expr::Bin(_, a, b) => {
                    loads(a, f);
                    loads(b, f)
                }
                Expr::Select(c, a, b) => {
                    loads(c, f);
                    loads(a, f);
                    loads(b, f)
                }
                _ => {}
            }
        }
        let mut found = false;
        let mut visit_expr = |e: &Expr, found: &mut bool| {
            *found |= expr(e);
            loads(e, &mut |b| *found |= buffer_half(b));
        };
        fn walk(b: &[Stmt], v: &mut dyn FnMut(&Expr, &mut bool), found: &mut bool) {
            for s in b {
                match s {
                    Stmt::Let { ty, value, .. } | Stmt::Var { ty, init: value, .. } => {
                        *found |= ty.is_half();
                        v(value, found)
                    }
                    Stmt::Assign { value, .. } => v(value, found),
                    Stmt::Store { index, value, .. } | Stmt::AddAtomic { index, value, .. } => {
                        v(index, found);
                        v(value, found)
                    }
                    Stmt::For { lo, hi, body, .. } => {
                        v(lo, found);
                        v(hi, found);
                        walk(body, v, found)
                    }
                    Stmt::If { cond, then, els } => {
                        v(cond, found);
                        walk(then, v, found);
                        walk(els, v, found)
                    }
                    Stmt::Alloc { fields, .. } => *found |= fields.iter().any(|f| f.is_half()),
                    Stmt::Check { cond, .. } => v(cond, found),
                    Stmt::Barrier | Stmt::Sort { .. } => {}
                }
            }
        }
        walk(body, &mut visit_expr, &mut found);
        // Stores to a half buffer.
        fn stores(b: &[Stmt], f: &mut dyn FnMut(&Name)) {
            for s in b {
                match s {
                    Stmt::Store { buf, .. } | Stmt::AddAtomic { buf, .. } => f(buf),
                    Stmt::For { body, .. } => stores(body, f),
                    Stmt::If { then, els, .. } => {
                        stores(then, f);
                        stores(els, f)
                    }
                    _ => {}
                }
            }
        }
        stores(body, &mut |b| found |= buffer_half(b));
        found
    }
}

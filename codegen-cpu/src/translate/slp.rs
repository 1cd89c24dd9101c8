//! Straight-line vector lanes: the lane groups of `asVector(w)` as
//! Cranelift vectors (an SLP pass over one block).
//!
//! Lowering scalarises a vector `<T>w` into `w` lane scalars (LANGUAGE.md
//! §4, ARCHITECTURE.md "vectors"): `asVector(4)` becomes four `let`s
//! `p₀ = xs[4·k]`, …, `p₃ = xs[4·k + 3]`, a lane-wise product four `let`s
//! or stores `out[4·k + c] = p_c · q_c`. Before a block is translated,
//! [`Translator::slp_plan`] finds, by the statements' shapes alone:
//!
//! - **load groups**: `w` `let`s of one read-only, single-field buffer at
//!   `J + 0 .. J + w-1` (the same index expression `J`), in lane order, with
//!   no check, branch or loop between the first and the last (so every lane
//!   is as safe to load at the first `let` as the scalar code's loads are:
//!   lowering places every check a load needs before its `let`);
//! - **op groups**: `w` `let`s whose values are the same tree of `+ - * /`,
//!   integer `min`/`max` and negation over lane `c` of other groups (lane
//!   `c` in the `c`-th `let`) and lane-free leaves that are equal in every
//!   lane (constants, names that the block neither assigns nor declares
//!   after their use): broadcast with `splat`;
//! - **store groups**: `w` adjacent stores to one written, single-field
//!   buffer at `J + 0 .. J + w-1` whose values form such a tree.
//!
//! A group's type must be a 4- or 8-byte number (`f32`, `f64`, `i32`,
//! `u32`, `i64`, `u64`) and `w` times its size a multiple of 16 bytes, at
//! most 64: the vector is held in one to four 128-bit parts (`f32` with
//! `w = 8` in two halves, `f64` with `w = 4` in two). Integer products are
//! vectorised for 32-bit integers only and float `min`/`max` never (they
//! ignore NaN, vector instructions do not); anything else — other types or
//! widths, gathers, mixed lanes — stays scalar, translated as before. A load
//! group with no vector consumer (an op or store group) is dropped: vector
//! loads pay only when the arithmetic or the store is a vector too.
//!
//! Translation binds each member to [`Bound::Lane`]: the group's vector is
//! computed at its first member (one vector load per part, or the vector
//! ops), a store group is one vector store per part, and a scalar use of a
//! lane (a gather's index, a sequential fold) extracts it.
//!
//! **Lane sums.** `asScalar :>> reduce(+)` over vectors lowers to a loop
//! whose body updates one reassociable accumulator `w` times, `acc = acc +
//! x₀; …; acc = acc + x_{w-1}`, with `x_c` lane `c` of a group (a dot
//! product through vectors). [`Translator::lane_sum_loop`] gives such an
//! accumulator vector partials, one per part, carried by the loop: the body
//! adds the group's vector into them (one vector add per part, no lane
//! extracted), and after the loop their lanes are added into `acc`. That
//! regroups the sum, which `reduce` allows (LANGUAGE.md §5; never
//! `reduceSeq`, whose accumulator is not reassociable); integer sums are
//! exact in any order. Every other lane
//! computes exactly what the scalar code computes (the operations are lane
//! by lane, with no reassociation), so results are bit-identical. Memory
//! accesses touch exactly the addresses the scalar accesses touch, so no
//! fault or check changes.

use super::{Bound, Translator};
use crate::error::CodegenError;
use crate::types;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Type, Value};
use heddle_ir::loops::{BinOp, Expr, Stmt};
use heddle_ir::{Name, ScalarType};
use std::collections::HashMap;

/// Vector registers are 16 bytes.
const PART_BYTES: usize = 16;

/// At most this many 128-bit parts per group.
const MAX_PARTS: usize = 4;

/// What the statement at one index of the block becomes.
#[derive(Clone, Debug)]
pub(super) enum Action {
    /// Lane `lane` of planned group `group` (a `let`).
    Member { group: usize, lane: usize },
    /// The first of `width` adjacent stores, stored as one vector.
    Store { width: usize, ty: ScalarType },
    /// The first of `width` updates `acc = acc + e_c` of a lane sum (see
    /// [`Translator::lane_sum_loop`]): one vector add into its partials.
    LaneSum { acc: Name, width: usize, ty: ScalarType },
    /// A later update of a lane sum, added with the first.
    Skip,
}

/// A planned group of `let`s.
#[derive(Clone, Debug)]
struct Group {
    ty: ScalarType,
    width: usize,
    /// Statement indices, lane by lane.
    members: Vec<usize>,
    load: bool,
}

/// The SLP plan of one block.
#[derive(Default, Debug)]
pub(super) struct SlpPlan {
    actions: HashMap<usize, Action>,
    groups: usize,
}

impl SlpPlan {
    pub(super) fn action(&self, i: usize) -> Option<&Action> {
        self.actions.get(&i)
    }
}

/// A group's values at translation: its 128-bit parts.
#[derive(Clone, Debug)]
pub(super) struct LaneGroup {
    pub(super) parts: Vec<Value>,
    pub(super) ty: ScalarType,
}

/// A lane sum's accumulator and its vector partials, one per 128-bit part.
pub(super) struct LaneSum {
    pub(super) name: Name,
    parts: Vec<cranelift_frontend::Variable>,
}

/// The types whose lane groups become vectors.
fn lane_type(t: ScalarType) -> bool {
    matches!(
        t,
        ScalarType::F32 | ScalarType::F64 | ScalarType::I32 | ScalarType::U32 | ScalarType::I64 | ScalarType::U64
    )
}

/// What [`Shape::walk`] finds of one lane's expression: a string key equal
/// for isomorphic lanes, the lane it reads (None: lane-free) and the
/// groups' width.
type LaneShape = (String, Option<usize>, Option<usize>);

/// A run of loads by buffer, field and the index `J` of lane 0.
type LoadKey = (Name, u32, Expr);

/// Lanes of `t` per 128-bit part, when `width` lanes fill whole parts.
fn lanes_per_part(t: ScalarType, width: usize) -> Option<usize> {
    let per = PART_BYTES / t.size_bytes();
    (lane_type(t) && width >= 2 && width.is_multiple_of(per) && width / per <= MAX_PARTS).then_some(per)
}

fn part_type(t: ScalarType) -> Type {
    let per = PART_BYTES / t.size_bytes();
    types::clif_type(t).by(per as u32).expect("a 128-bit vector type")
}

/// Whether `op` on vectors of `t` computes what the scalar op computes lane
/// by lane (float `min`/`max` ignore NaN; integer division may fault; x86
/// has no 64-bit vector multiply before AVX-512).
fn slp_op(op: BinOp, t: ScalarType) -> bool {
    match op {
        BinOp::Add | BinOp::Sub => true,
        BinOp::Mul => t.is_float() || t.size_bytes() == 4,
        BinOp::Div => t.is_float(),
        BinOp::Min | BinOp::Max => t.is_int() && t.size_bytes() == 4,
        _ => false,
    }
}

/// `J + c` as `(J, c)`; any other index as `(index, 0)`.
fn split_offset(index: &Expr) -> (&Expr, i64) {
    match index {
        Expr::Bin(BinOp::Add, j, c) => match **c {
            Expr::Int(c, ScalarType::I64) => (j, c),
            _ => (index, 0),
        },
        _ => (index, 0),
    }
}

/// Flags for a vector access: not `aligned` (a vector need not be).
fn vector_flags(readonly: bool) -> MemFlagsData {
    let f = MemFlagsData::new().with_notrap();
    if readonly { f.with_readonly() } else { f }
}

/// The facts about the block the planner consults.
struct BlockFacts {
    /// Names the block (at any depth) assigns.
    assigned: Vec<Name>,
    /// Names the block's own `let`s and `var`s declare, with their index.
    declared: Vec<(Name, usize)>,
}

impl BlockFacts {
    /// Whether the name `n`, read by statement `at`, is the same value in
    /// every statement of the block from `at` on: not assigned, and not
    /// declared at or after `at` (shadowing).
    fn steady(&self, n: &Name, at: usize) -> bool {
        !self.assigned.contains(n) && self.declared.iter().all(|(m, i)| m != n || *i < at)
    }
}

/// The lane shape of one expression: a string key equal for isomorphic
/// lanes, the lane it reads (None: lane-free) and the groups' width.
struct Shape<'p> {
    members: &'p HashMap<Name, (usize, usize)>,
    groups: &'p [Group],
    facts: &'p BlockFacts,
    at: usize,
    ty: ScalarType,
    lane: Option<usize>,
    width: Option<usize>,
    key: String,
}

impl Shape<'_> {
    fn walk(&mut self, e: &Expr) -> bool {
        match e {
            Expr::Var(n) => {
                if let Some(&(g, c)) = self.members.get(n) {
                    let grp = &self.groups[g];
                    if grp.ty != self.ty
                        || self.lane.is_some_and(|l| l != c)
                        || self.width.is_some_and(|w| w != grp.width)
                    {
                        return false;
                    }
                    self.lane = Some(c);
                    self.width = Some(grp.width);
                    self.key.push_str(&format!("g{g} "));
                    true
                } else if self.facts.steady(n, self.at) {
                    self.key.push_str(&format!("v:{n} "));
                    true
                } else {
                    false
                }
            }
            Expr::Int(_, t) | Expr::Float(_, t) if *t == self.ty => {
                self.key.push_str(&format!("{e:?} "));
                true
            }
            Expr::Bin(op, a, b) if slp_op(*op, self.ty) => {
                self.key.push_str(&format!("({op:?} "));
                let ok = self.walk(a) && self.walk(b);
                self.key.push_str(") ");
                ok
            }
            Expr::Neg(a) => {
                self.key.push_str("(neg ");
                let ok = self.walk(a);
                self.key.push_str(") ");
                ok
            }
            _ => false,
        }
    }
}

/// Whether `e` (a load group's `J`) is pure arithmetic of steady names.
fn steady_index(e: &Expr, facts: &BlockFacts, at: usize) -> bool {
    match e {
        Expr::Int(..) => true,
        Expr::Var(n) => facts.steady(n, at),
        Expr::Bin(BinOp::Div | BinOp::Rem, a, b) => {
            matches!(**b, Expr::Int(d, _) if d != 0) && steady_index(a, facts, at)
        }
        Expr::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
            steady_index(a, facts, at) && steady_index(b, facts, at)
        }
        Expr::Cast(ScalarType::I64, a) => steady_index(a, facts, at),
        _ => false,
    }
}

impl Translator<'_, '_> {
    // ---------------------------------------------------------------- planning

    /// The plan of block `b`, or `None` when nothing in it forms a vector.
    pub(super) fn slp_plan(&self, b: &[Stmt]) -> Option<SlpPlan> {
        let sums: Vec<Name> = self.lane_sums.iter().map(|s| s.name.clone()).collect();
        self.slp_plan_with(b, &sums)
    }

    /// The plan of `b` where the accumulators `sums` may be lane sums.
    fn slp_plan_with(&self, b: &[Stmt], sums: &[Name]) -> Option<SlpPlan> {
        if !self.options.vectorize || b.len() < 3 {
            return None;
        }
        let mut facts = BlockFacts { assigned: Vec::new(), declared: Vec::new() };
        super::hoist::assigned(b, &mut facts.assigned);
        for (i, s) in b.iter().enumerate() {
            if let Stmt::Let { var, .. } | Stmt::Var { var, .. } = s {
                facts.declared.push((var.clone(), i));
            }
        }
        // A name declared twice in the block: its lanes are ambiguous.
        let names: std::collections::HashSet<&Name> = facts.declared.iter().map(|(n, _)| n).collect();
        if names.len() != facts.declared.len() {
            return None;
        }
        let mut groups: Vec<Group> = Vec::new();
        let mut members: HashMap<Name, (usize, usize)> = HashMap::new();
        self.load_groups(b, &facts, &mut groups, &mut members);
        if groups.is_empty() {
            return None;
        }
        // Op groups, until no more form (a group may read one formed later
        // in the scan).
        let mut used = vec![false; groups.len()];
        loop {
            let before = groups.len();
            let mut pending: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, s) in b.iter().enumerate() {
                let Stmt::Let { var, ty, value } = s else { continue };
                if members.contains_key(var) || !lane_type(*ty) {
                    continue;
                }
                let mut sh = Shape {
                    members: &members,
                    groups: &groups,
                    facts: &facts,
                    at: i,
                    ty: *ty,
                    lane: None,
                    width: None,
                    key: String::new(),
                };
                if !sh.walk(value) {
                    continue;
                }
                let (Some(c), Some(w)) = (sh.lane, sh.width) else { continue };
                let key = format!("{ty:?} {w} {}", sh.key);
                let run = pending.entry(key).or_default();
                if c == 0 {
                    run.clear();
                }
                if run.len() != c {
                    run.clear();
                    continue;
                }
                run.push(i);
                if run.len() == w {
                    let g = groups.len();
                    for (lane, &m) in run.iter().enumerate() {
                        if let Stmt::Let { var, .. } = &b[m] {
                            members.insert(var.clone(), (g, lane));
                        }
                    }
                    groups.push(Group { ty: *ty, width: w, members: std::mem::take(run), load: false });
                }
            }
            if groups.len() == before {
                break;
            }
        }
        used.resize(groups.len(), false);
        for (g, grp) in groups.iter().enumerate() {
            if !grp.load {
                used[g] = true;
                for &m in &grp.members {
                    if let Stmt::Let { value, .. } = &b[m] {
                        mark_used(value, &members, &mut used);
                    }
                }
            }
        }
        let stores = self.store_groups(b, &facts, &groups, &members, &mut used);
        let lane_sums = lane_sum_updates(b, sums, &facts, &groups, &members, &mut used, |n| self.sum_type(n));
        let mut plan = SlpPlan::default();
        for (g, grp) in groups.iter().enumerate() {
            if used[g] {
                plan.groups += 1;
                for (lane, &m) in grp.members.iter().enumerate() {
                    plan.actions.insert(m, Action::Member { group: g, lane });
                }
            }
        }
        for (i, width, ty) in stores {
            plan.actions.insert(i, Action::Store { width, ty });
        }
        for (acc, ty, at) in lane_sums {
            plan.actions.insert(at[0], Action::LaneSum { acc, width: at.len(), ty });
            for &i in &at[1..] {
                plan.actions.insert(i, Action::Skip);
            }
        }
        (!plan.actions.is_empty()).then_some(plan)
    }

    /// The load groups of `b`: maximal runs, lane by lane, of `let`s loading
    /// `J + c` of one buffer.
    fn load_groups(
        &self,
        b: &[Stmt],
        facts: &BlockFacts,
        groups: &mut Vec<Group>,
        members: &mut HashMap<Name, (usize, usize)>,
    ) {
        // Open runs by (buffer, field, J): statement indices, lane by lane.
        let mut open: Vec<(LoadKey, Vec<usize>, ScalarType)> = Vec::new();
        let mut runs: Vec<(Vec<usize>, ScalarType)> = Vec::new();
        for (i, s) in b.iter().enumerate() {
            match s {
                Stmt::Let { ty, value: Expr::Load { buf, index, field }, .. } => {
                    let Ok(bf) = self.buffer(buf) else { continue };
                    if !bf.readonly || bf.fields.len() != 1 || bf.fields[0] != *ty || !lane_type(*ty) {
                        continue;
                    }
                    let (j, c) = split_offset(index);
                    if !steady_index(j, facts, i) {
                        continue;
                    }
                    let key = (buf.clone(), *field, j.clone());
                    match open.iter_mut().find(|(k, ..)| *k == key) {
                        Some((_, run, _)) if run.len() as i64 == c => run.push(i),
                        Some(entry) => {
                            let (_, run, t) = std::mem::replace(entry, (key, Vec::new(), *ty));
                            runs.push((run, t));
                            if c == 0 {
                                entry.1.push(i);
                            }
                        }
                        None if c == 0 => open.push((key, vec![i], *ty)),
                        None => {}
                    }
                }
                Stmt::Let { .. } | Stmt::Var { .. } | Stmt::Assign { .. } | Stmt::Store { .. } => {}
                // No vector load spans a check, a branch, a loop or an allocation.
                _ => runs.extend(open.drain(..).map(|(_, r, t)| (r, t))),
            }
        }
        runs.extend(open.drain(..).map(|(_, r, t)| (r, t)));
        for (run, ty) in runs {
            if lanes_per_part(ty, run.len()).is_none() {
                continue;
            }
            let g = groups.len();
            for (lane, &m) in run.iter().enumerate() {
                if let Stmt::Let { var, .. } = &b[m] {
                    members.insert(var.clone(), (g, lane));
                }
            }
            groups.push(Group { ty, width: run.len(), members: run, load: true });
        }
    }

    /// The store groups of `b`: `(first statement, width, type)`.
    fn store_groups(
        &self,
        b: &[Stmt],
        facts: &BlockFacts,
        groups: &[Group],
        members: &HashMap<Name, (usize, usize)>,
        used: &mut [bool],
    ) -> Vec<(usize, usize, ScalarType)> {
        let mut out = Vec::new();
        // A buffer allocated in the block may shadow the one planned with.
        let allocates = b.iter().any(|s| matches!(s, Stmt::Alloc { .. }));
        let mut i = 0;
        while i < b.len() {
            let Stmt::Store { buf, index, field, .. } = &b[i] else {
                i += 1;
                continue;
            };
            let (j, c0) = split_offset(index);
            let ty = match self.buffer(buf) {
                Ok(bf) if !bf.readonly && bf.fields.len() == 1 && c0 == 0 => bf.fields[0],
                _ => {
                    i += 1;
                    continue;
                }
            };
            // The run of adjacent stores to `J + 0, J + 1, …`.
            let mut len = 1;
            while let Some(Stmt::Store { buf: b2, index: i2, field: f2, .. }) = b.get(i + len)
                && b2 == buf
                && f2 == field
                && split_offset(i2) == (j, len as i64)
            {
                len += 1;
            }
            let shapes: Option<Vec<LaneShape>> = (0..len)
                .map(|c| {
                    let Stmt::Store { value, .. } = &b[i + c] else { return None };
                    let mut sh =
                        Shape { members, groups, facts, at: i + c, ty, lane: None, width: None, key: String::new() };
                    sh.walk(value).then_some((sh.key, sh.lane, sh.width))
                })
                .collect();
            // Every lane `c` reads lane `c` of the same groups, of width `len`.
            let fits = lanes_per_part(ty, len).is_some()
                && !allocates
                && shapes.as_ref().is_some_and(|s| {
                    s.iter()
                        .enumerate()
                        .all(|(c, (key, lane, width))| *key == s[0].0 && *lane == Some(c) && *width == Some(len))
                });
            if fits {
                for c in 0..len {
                    if let Stmt::Store { value, .. } = &b[i + c] {
                        mark_used(value, members, used);
                    }
                }
                out.push((i, len, ty));
            }
            i += len;
        }
        out
    }

    // ---------------------------------------------------------------- emission

    /// Translates the `let` at index `i` of `b`, lane `lane` of planned
    /// group `group`: at lane 0, the group's vector is computed.
    pub(super) fn slp_member(
        &mut self,
        b: &[Stmt],
        plan: &SlpPlan,
        i: usize,
        group: usize,
        lane: usize,
        ids: &mut HashMap<usize, usize>,
    ) -> Result<(), CodegenError> {
        let Stmt::Let { var, ty, value } = &b[i] else { return Err(plan_mismatch()) };
        self.force_lazies(Some(var))?;
        self.let_values.push((var.clone(), value.clone()));
        if lane == 0 {
            let members: Vec<usize> = plan
                .actions
                .iter()
                .filter_map(|(&k, a)| matches!(a, Action::Member { group: g, .. } if *g == group).then_some(k))
                .collect();
            let width = members.len();
            let per = lanes_per_part(*ty, width).ok_or_else(plan_mismatch)?;
            let parts = if let Expr::Load { buf, index, field } = value {
                let (addr, offset, _, _) = self.address(buf, index, *field)?;
                let readonly = self.buffer(buf)?.readonly;
                let vt = part_type(*ty);
                (0..width / per)
                    .map(|p| self.b.ins().load(vt, vector_flags(readonly), addr, offset + (p * PART_BYTES) as i32))
                    .collect()
            } else {
                let mut sorted = members;
                sorted.sort_unstable();
                let exprs: Vec<&Expr> = sorted
                    .iter()
                    .map(|&m| match &b[m] {
                        Stmt::Let { value, .. } => Ok(value),
                        _ => Err(plan_mismatch()),
                    })
                    .collect::<Result<_, _>>()?;
                self.slp_vector(&exprs, *ty, width)?
            };
            ids.insert(group, self.lane_groups.len());
            self.lane_groups.push(LaneGroup { parts, ty: *ty });
        }
        let g = *ids.get(&group).ok_or_else(plan_mismatch)?;
        self.scope.push((var.clone(), Bound::Lane(g, lane)));
        Ok(())
    }

    /// Translates the `width` adjacent stores from index `i` of `b` as one
    /// vector store per part.
    pub(super) fn slp_store(&mut self, b: &[Stmt], i: usize, width: usize, ty: ScalarType) -> Result<(), CodegenError> {
        let exprs: Vec<&Expr> = b[i..i + width]
            .iter()
            .map(|s| match s {
                Stmt::Store { value, .. } => Ok(value),
                _ => Err(plan_mismatch()),
            })
            .collect::<Result<_, _>>()?;
        let parts = self.slp_vector(&exprs, ty, width)?;
        let Stmt::Store { buf, index, field, .. } = &b[i] else { return Err(plan_mismatch()) };
        let (addr, offset, _, _) = self.address(buf, index, *field)?;
        for (p, v) in parts.into_iter().enumerate() {
            self.b.ins().store(vector_flags(false), v, addr, offset + (p * PART_BYTES) as i32);
        }
        Ok(())
    }

    /// The type of the accumulator `n` if it may be a lane sum: a
    /// reassociable mutable local of a lane type.
    fn sum_type(&self, n: &Name) -> Option<ScalarType> {
        let pos = self.position(n).ok()?;
        match self.scope[pos].1 {
            Bound::Var(_, t) if lane_type(t) && self.prog.reassociable.contains(n) => Some(t),
            _ => None,
        }
    }

    /// Translates the first update of lane sum `acc` (statement `i` of `b`,
    /// the others follow it in `b`): the lanes' vector added into the
    /// accumulator's vector partials.
    pub(super) fn slp_lane_sum(
        &mut self,
        b: &[Stmt],
        i: usize,
        acc: &Name,
        width: usize,
        ty: ScalarType,
    ) -> Result<(), CodegenError> {
        let exprs: Vec<&Expr> = b[i..].iter().filter_map(|s| sum_update(s, acc)).take(width).collect();
        if exprs.len() != width {
            return Err(plan_mismatch());
        }
        let parts = self.slp_vector(&exprs, ty, width)?;
        let vars = self.lane_sums.iter().rev().find(|s| s.name == *acc).ok_or_else(plan_mismatch)?.parts.clone();
        for (v, x) in vars.iter().zip(parts) {
            let old = self.b.use_var(*v);
            let new = self.lane_binary(BinOp::Add, ty, old, x)?;
            self.b.def_var(*v, new);
        }
        Ok(())
    }

    /// `for var in lo .. hi { body }` whose body adds the lanes of vectors
    /// into reassociable accumulators (`asScalar :>> reduce(+)` over
    /// vectors: `acc = acc + x₀; …; acc = acc + x_{w-1}`), if it is one:
    /// each such accumulator gets vector partials (one per 128-bit part,
    /// zero before the loop) that the body adds whole vectors into, and
    /// after the loop the partials' lanes are added to the accumulator.
    /// That regroups the sum, which a `reduce` allows (LANGUAGE.md §5);
    /// integer sums are exact in any order. `false`: nothing emitted.
    pub(super) fn lane_sum_loop(
        &mut self,
        var: &Name,
        lo: &Expr,
        hi: &Expr,
        schedule: heddle_ir::loops::Schedule,
        body: &[Stmt],
    ) -> Result<bool, CodegenError> {
        // One accumulator asks for no reassociation at all (as in `reduce.rs`).
        if schedule != heddle_ir::loops::Schedule::Seq || !self.options.vectorize || self.options.accumulators < 2 {
            return Ok(false);
        }
        // Lowering's integer `+` copies the accumulator first (`let x = acc;
        // …; acc = x + e`): read as `acc = acc + e`, as `reduce.rs` does.
        let folded = super::reduce::fold_accumulator_copies(body, &self.prog.reassociable);
        let body: &[Stmt] = folded.as_deref().unwrap_or(body);
        let mut cands: Vec<Name> = Vec::new();
        super::hoist::assigned(body, &mut cands);
        cands.retain(|n| self.sum_type(n).is_some());
        if cands.is_empty() {
            return Ok(false);
        }
        let Some(plan) = self.slp_plan_with(body, &cands) else { return Ok(false) };
        let sums: Vec<(Name, ScalarType, usize)> = plan
            .actions
            .values()
            .filter_map(|a| match a {
                Action::LaneSum { acc, width, ty } => Some((acc.clone(), *ty, *width)),
                _ => None,
            })
            .collect();
        if sums.is_empty() {
            return Ok(false);
        }
        let mark = self.lane_sums.len();
        for (name, ty, width) in &sums {
            let per = lanes_per_part(*ty, *width).ok_or_else(plan_mismatch)?;
            let zero = match ty {
                ScalarType::F32 => self.b.ins().f32const(0.0),
                ScalarType::F64 => self.b.ins().f64const(0.0),
                t => self.b.ins().iconst(types::clif_type(*t), 0),
            };
            let splat = self.b.ins().splat(part_type(*ty), zero);
            let parts = (0..width / per)
                .map(|_| {
                    let v = self.b.declare_var(part_type(*ty));
                    self.b.def_var(v, splat);
                    v
                })
                .collect();
            self.lane_sums.push(LaneSum { name: name.clone(), parts });
        }
        self.for_loop(var, lo, hi, schedule, body)?;
        let done: Vec<LaneSum> = self.lane_sums.drain(mark..).collect();
        for (s, (_, ty, _)) in done.iter().zip(&sums) {
            let per = PART_BYTES / ty.size_bytes();
            let mut parts: Vec<Value> = s.parts.iter().map(|v| self.b.use_var(*v)).collect();
            while parts.len() > 1 {
                let b = parts.pop().unwrap();
                let a = parts.pop().unwrap();
                parts.insert(0, self.lane_binary(BinOp::Add, *ty, a, b)?);
            }
            let mut total = self.b.ins().extractlane(parts[0], 0);
            for l in 1..per {
                let x = self.b.ins().extractlane(parts[0], l as u8);
                total = self.scalar_add(*ty, total, x);
            }
            let pos = self.position(&s.name)?;
            let Bound::Var(acc, _) = self.scope[pos].1 else { return Err(plan_mismatch()) };
            let old = self.b.use_var(acc);
            let new = self.scalar_add(*ty, old, total);
            self.b.def_var(acc, new);
        }
        Ok(true)
    }

    fn scalar_add(&mut self, ty: ScalarType, a: Value, b: Value) -> Value {
        if ty.is_float() { self.b.ins().fadd(a, b) } else { self.b.ins().iadd(a, b) }
    }

    /// The vector (parts) whose lane `c` is `exprs[c]`, per the plan's shapes.
    fn slp_vector(&mut self, exprs: &[&Expr], ty: ScalarType, width: usize) -> Result<Vec<Value>, CodegenError> {
        let per = lanes_per_part(ty, width).ok_or_else(plan_mismatch)?;
        if !self.reads_lane(exprs[0]) {
            let (v, _) = self.expr(exprs[0])?;
            let s = self.b.ins().splat(part_type(ty), v);
            return Ok(vec![s; width / per]);
        }
        match exprs[0] {
            Expr::Var(n) => match self.scope[self.position(n)?].1 {
                Bound::Lane(g, 0) => Ok(self.lane_groups[g].parts.clone()),
                _ => Err(plan_mismatch()),
            },
            Expr::Bin(op, ..) => {
                let (mut xs, mut ys) = (Vec::new(), Vec::new());
                for e in exprs {
                    let Expr::Bin(_, a, b) = e else { return Err(plan_mismatch()) };
                    xs.push(&**a);
                    ys.push(&**b);
                }
                let a = self.slp_vector(&xs, ty, width)?;
                let b = self.slp_vector(&ys, ty, width)?;
                a.into_iter().zip(b).map(|(x, y)| self.lane_binary(*op, ty, x, y)).collect()
            }
            Expr::Neg(_) => {
                let xs: Vec<&Expr> = exprs
                    .iter()
                    .map(|e| if let Expr::Neg(a) = e { Ok(&**a) } else { Err(plan_mismatch()) })
                    .collect::<Result<_, _>>()?;
                let a = self.slp_vector(&xs, ty, width)?;
                Ok(a.into_iter()
                    .map(|x| if ty.is_float() { self.b.ins().fneg(x) } else { self.b.ins().ineg(x) })
                    .collect())
            }
            _ => Err(plan_mismatch()),
        }
    }

    /// Does `e` read a name bound to a lane?
    fn reads_lane(&self, e: &Expr) -> bool {
        match e {
            Expr::Var(n) => self.position(n).is_ok_and(|p| matches!(self.scope[p].1, Bound::Lane(..))),
            Expr::Bin(_, a, b) => self.reads_lane(a) || self.reads_lane(b),
            Expr::Neg(a) => self.reads_lane(a),
            _ => false,
        }
    }

    fn lane_binary(&mut self, op: BinOp, t: ScalarType, a: Value, b: Value) -> Result<Value, CodegenError> {
        let ins = self.b.ins();
        Ok(match (op, t.is_float()) {
            (BinOp::Add, true) => ins.fadd(a, b),
            (BinOp::Sub, true) => ins.fsub(a, b),
            (BinOp::Mul, true) => ins.fmul(a, b),
            (BinOp::Div, true) => ins.fdiv(a, b),
            (BinOp::Add, false) => ins.iadd(a, b),
            (BinOp::Sub, false) => ins.isub(a, b),
            (BinOp::Mul, false) => ins.imul(a, b),
            (BinOp::Min, false) if t.is_signed() => ins.smin(a, b),
            (BinOp::Max, false) if t.is_signed() => ins.smax(a, b),
            (BinOp::Min, false) => ins.umin(a, b),
            (BinOp::Max, false) => ins.umax(a, b),
            _ => return Err(plan_mismatch()),
        })
    }

    /// Lane `lane` of lane group `g`, as a scalar.
    pub(super) fn lane_scalar(&mut self, g: usize, lane: usize) -> (Value, ScalarType) {
        let LaneGroup { parts, ty } = &self.lane_groups[g];
        let per = PART_BYTES / ty.size_bytes();
        let (part, ty) = (parts[lane / per], *ty);
        (self.b.ins().extractlane(part, (lane % per) as u8), ty)
    }
}

/// The update `acc = acc + e` (or `e + acc`): `e`.
fn sum_update<'s>(s: &'s Stmt, acc: &Name) -> Option<&'s Expr> {
    let Stmt::Assign { var, value: Expr::Bin(BinOp::Add, a, b) } = s else { return None };
    if var != acc {
        return None;
    }
    match (&**a, &**b) {
        (Expr::Var(x), e) | (e, Expr::Var(x)) if x == acc && !super::lazy::mentions(e, acc) => Some(e),
        _ => None,
    }
}

/// Whether statement `s` mentions `name` anywhere (reads or assigns it).
fn stmt_mentions(s: &Stmt, name: &Name) -> bool {
    let m = |e: &Expr| super::lazy::mentions(e, name);
    match s {
        Stmt::Let { value, .. } => m(value),
        Stmt::Var { var, init, .. } => var == name || m(init),
        Stmt::Assign { var, value } => var == name || m(value),
        Stmt::Store { index, value, .. } | Stmt::AddAtomic { index, value, .. } => m(index) || m(value),
        Stmt::For { lo, hi, body, .. } => m(lo) || m(hi) || body.iter().any(|s| stmt_mentions(s, name)),
        Stmt::If { cond, then, els } => m(cond) || then.iter().chain(els).any(|s| stmt_mentions(s, name)),
        Stmt::Alloc { len, .. } => m(len),
        Stmt::Sort { lo, len, .. } => m(lo) || m(len),
        Stmt::Check { cond, .. } => m(cond),
        Stmt::Barrier => false,
    }
}

/// The lane sums of `b` among `sums`: `(acc, type, update indices)` where
/// `acc` is mentioned only by `w` updates `acc = acc + e_c` whose `e_c`
/// are lane `c` of groups of width `w`, lane by lane.
fn lane_sum_updates(
    b: &[Stmt],
    sums: &[Name],
    facts: &BlockFacts,
    groups: &[Group],
    members: &HashMap<Name, (usize, usize)>,
    used: &mut [bool],
    ty_of: impl Fn(&Name) -> Option<ScalarType>,
) -> Vec<(Name, ScalarType, Vec<usize>)> {
    let mut out = Vec::new();
    for acc in sums {
        let Some(ty) = ty_of(acc) else { continue };
        let at: Vec<usize> = (0..b.len()).filter(|&i| stmt_mentions(&b[i], acc)).collect();
        let width = at.len();
        if lanes_per_part(ty, width).is_none() {
            continue;
        }
        let shapes: Option<Vec<LaneShape>> = at
            .iter()
            .map(|&i| {
                let e = sum_update(&b[i], acc)?;
                let mut sh = Shape { members, groups, facts, at: i, ty, lane: None, width: None, key: String::new() };
                sh.walk(e).then_some((sh.key, sh.lane, sh.width))
            })
            .collect();
        let fits = shapes.is_some_and(|s| {
            s.iter().enumerate().all(|(c, (key, lane, w))| *key == s[0].0 && *lane == Some(c) && *w == Some(width))
        });
        if fits {
            for &i in &at {
                if let Some(e) = sum_update(&b[i], acc) {
                    mark_used(e, members, used);
                }
            }
            out.push((acc.clone(), ty, at));
        }
    }
    out
}

/// Marks the groups `e` reads as used.
fn mark_used(e: &Expr, members: &HashMap<Name, (usize, usize)>, used: &mut [bool]) {
    match e {
        Expr::Var(n) => {
            if let Some(&(g, _)) = members.get(n) {
                used[g] = true;
            }
        }
        Expr::Bin(_, a, b) => {
            mark_used(a, members, used);
            mark_used(b, members, used);
        }
        Expr::Neg(a) => mark_used(a, members, used),
        _ => {}
    }
}

fn plan_mismatch() -> CodegenError {
    CodegenError::Unsupported("a vector lane group (the SLP plan and its translation disagree)".into())
}

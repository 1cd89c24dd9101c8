//! Loop-IR statements as OpenCL C statements.
//!
//! The one subtle part is *who executes what*. Every work-item runs the
//! kernel body; a statement outside any per-item loop therefore runs on all
//! of them. Code is emitted in one of three contexts:
//! - `Top`: outside every parallel loop. Values are computed redundantly (no
//!   harm); stores to global memory are done by the first work-item only.
//! - `Group`: inside `Workgroup` loops only. Every item of a group runs it;
//!   stores are done by one item of the group.
//! - `Item`: inside a `Global` or `Local` loop: one work-item's own work;
//!   a store is done by one of the items that agree on the enclosing loops'
//!   iterations ([`Gen::who`]: ids of the dimensions no loop distributes are 0).
//!
//! **Barriers** (placed by `barriers.rs`) must be reached by every item of a
//! group, the same number of times. Two devices keep them so:
//! - A per-item loop with a barrier inside runs in lock-step *rounds*: all
//!   items run `ceil(range / size)` rounds, item `id` takes iteration
//!   `base + id` of each and works only where it exists (a predicate); the
//!   barrier is outside the predicate. Every loop around a barrier must have
//!   bounds that are the same on all items of a group (`divergence.rs`),
//!   else the kernel is refused with the loop named.
//! - A condition around a barrier that differs between items — an `if`, or a
//!   `Check` whose rest of block holds a barrier — becomes a *predicate*:
//!   both sides run on every item, each statement under its side's `bool`,
//!   the barriers unconditionally. Under a predicate a `let` that could fault
//!   is `p ? value : 0`, a store is `if (p) …`, a loop or branch without a
//!   barrier is wrapped in `if (p)`, and uniform computations run everywhere.
//!
//! A failed check stores its id and stops the work-item (`return`); in a
//! kernel with barriers, where items leaving early is undefined (POCL rejects
//! it), it predicates the rest of its block off instead.

use crate::barriers::contains_barrier;
use crate::ctype::{scalar, stored};
use crate::launch::{LoopInfo, eval, launch_evaluable};
use crate::{Gen, KernelParam};
use heddle_ir::Name;
use heddle_ir::loops::{BinOp, Block, Expr, Schedule, Space, Stmt, TypeEnv};

/// Which work-items execute a statement (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ctx {
    Top,
    Group,
    Item,
}

/// The predicate a statement runs under (see the module docs): `None` when
/// every item that reaches it executes it, else the C name of a `bool`.
pub(crate) type Pred = Option<String>;

/// The barrier every `__local` hand-off uses.
const BARRIER: &str = "barrier(CLK_LOCAL_MEM_FENCE);";

impl Gen<'_> {
    pub(crate) fn block(
        &mut self,
        b: &Block,
        env: &mut TypeEnv,
        ctx: Ctx,
        depth: usize,
        pred: &Pred,
    ) -> Result<(), String> {
        let mark = env.mark();
        let at = self.arena_enter();
        let done = self.stmts(b, env, ctx, depth, pred);
        self.arena_leave(at, depth);
        env.truncate(mark);
        done
    }

    fn stmts(&mut self, b: &[Stmt], env: &mut TypeEnv, ctx: Ctx, depth: usize, pred: &Pred) -> Result<(), String> {
        let mut skip = 0;
        for (k, s) in b.iter().enumerate() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            if pred.is_none() {
                // `w` loads of consecutive elements: one vector load.
                let mut merged = self.vector_loads(&b[k..], env, depth)?;
                if merged == 0 {
                    // `w` stores of consecutive elements: one vector store.
                    merged = self.vector_stores(&b[k..], env, depth)?;
                }
                if merged > 0 {
                    skip = merged - 1;
                    continue;
                }
            }
            if let Stmt::Check { cond, id } = s {
                return self.check(cond, *id, &b[k + 1..], env, ctx, depth, pred);
            }
            if let Some(fits) = self.narrow_range_check(s) {
                // The loop and the rest of the block run where its range fits.
                return self.check(&fits, heddle_ir::loops::INDEX_OVERFLOW_CHECK, &b[k..], env, ctx, depth, pred);
            }
            self.stmt(s, env, ctx, depth, pred)?;
        }
        Ok(())
    }

    /// For a loop whose body converts its variable to a narrower integer (a
    /// `generate` index is an `int`), not yet checked: the condition that its
    /// whole range fits (or that it runs no iteration). C's conversion would
    /// wrap an index past 2^31 where the interpreter does not; the CPU
    /// backend makes the same check (`heddle_ir::loops::narrow_casts`).
    fn narrow_range_check(&mut self, s: &Stmt) -> Option<Expr> {
        let Stmt::For { var, lo, hi, body, .. } = s else { return None };
        let narrow = heddle_ir::loops::narrow_casts(var, body);
        if narrow.is_empty() || !self.narrow_checked.insert(s as *const Stmt) {
            return None;
        }
        let (min, max) = heddle_ir::loops::fitting_range(&narrow);
        let below_top = Expr::bin(BinOp::Le, hi.clone(), Expr::index(max + 1));
        if matches!(lo, Expr::Int(v, _) if (min..=max + 1).contains(v)) {
            // A constant start that fits (a loop from 0): an empty range ends there too.
            return Some(below_top);
        }
        let empty = Expr::bin(BinOp::Ge, lo.clone(), hi.clone());
        let fits = Expr::bin(BinOp::And, Expr::bin(BinOp::Ge, lo.clone(), Expr::index(min)), below_top);
        Some(Expr::bin(BinOp::Or, empty, fits))
    }

    /// A check and the rest of its block, which runs only where it holds.
    /// Ids are reported 1-based so that 0 means "no failure"; the first
    /// failure wins.
    fn check(
        &mut self,
        cond: &Expr,
        id: u32,
        rest: &[Stmt],
        env: &mut TypeEnv,
        ctx: Ctx,
        depth: usize,
        pred: &Pred,
    ) -> Result<(), String> {
        let report = format!("atomic_cmpxchg(heddle_error, 0, {});", u64::from(id) + 1);
        let c = self.expr(cond, env)?;
        if !self.barriers {
            // A failed check stops the work-item, as it stops the CPU backend:
            // later statements may rely on it (a whole loop of checks before
            // the loop that reads what they checked).
            match pred {
                Some(p) => self.line(depth, &format!("if ({p} && !({c})) {{ {report} return; }}")),
                None => self.line(depth, &format!("if (!({c})) {{ {report} return; }}")),
            }
            return self.stmts(rest, env, ctx, depth, pred);
        }
        if !self.div.expr(cond) || (pred.is_none() && !contains_barrier(rest)) {
            // Every item of the group decides alike (or no barrier follows):
            // the rest is skipped where the check fails. A `return` would be
            // simpler, but items leaving a kernel that has barriers is
            // undefined (POCL rejects it).
            self.line(depth, &format!("if (!({c})) {{"));
            match pred {
                Some(p) => self.line(depth + 1, &format!("if ({p}) {report}")),
                None => self.line(depth + 1, &report),
            }
            if !rest.is_empty() {
                self.line(depth, "} else {");
                self.stmts(rest, env, ctx, depth + 1, pred)?;
            }
            self.line(depth, "}");
            return Ok(());
        }
        // Items decide differently and a barrier follows: the rest runs on
        // every item, predicated on the check, so that all reach the barrier.
        let live = self.fresh_name("heddle_live");
        match pred {
            Some(p) => {
                self.line(depth, &format!("const bool {live} = {p} && ({c});"));
                self.line(depth, &format!("if ({p} && !{live}) {report}"));
            }
            None => {
                self.line(depth, &format!("const bool {live} = {c};"));
                self.line(depth, &format!("if (!{live}) {report}"));
            }
        }
        self.stmts(rest, env, ctx, depth, &Some(live))
    }

    pub(crate) fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    pub(crate) fn fresh_name(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    /// Can `e` be evaluated by an item outside the predicate without harm
    /// (no loads, no division by a value that differs between items)?
    fn safe(&self, e: &Expr) -> bool {
        match e {
            Expr::Load { .. } => false,
            Expr::Bin(op, a, b) => {
                let divides = matches!(op, heddle_ir::loops::BinOp::Div | heddle_ir::loops::BinOp::Rem);
                self.safe(a) && self.safe(b) && !(divides && self.div.expr(b))
            }
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => self.safe(a),
            Expr::Select(c, a, b) => self.safe(c) && self.safe(a) && self.safe(b),
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => true,
        }
    }

    fn stmt(&mut self, s: &Stmt, env: &mut TypeEnv, ctx: Ctx, depth: usize, pred: &Pred) -> Result<(), String> {
        // Uniform computations run on every item, predicate or not: items
        // outside it need the same values to take the same loops and branches.
        let pred = if pred.is_some() && self.div.uniform_stmt(s) { &None } else { pred };
        match s {
            Stmt::Let { var, ty, value } | Stmt::Var { var, ty, init: value } => {
                let mut text = self.expr(value, env)?;
                if let Some(p) = pred
                    && self.div.var(var)
                    && !self.safe(value)
                {
                    text = format!("{p} ? ({text}) : {}", zero(*ty));
                }
                let konst = if matches!(s, Stmt::Let { .. }) { "const " } else { "" };
                let name = self.ids.get(var);
                self.line(depth, &format!("{konst}{} {name} = {text};", scalar(*ty)));
                env.declare_var(var.clone(), *ty);
            }
            Stmt::Assign { var, value } => {
                let text = self.expr(value, env)?;
                let name = self.ids.get(var);
                match pred {
                    Some(p) if self.div.var(var) && !self.safe(value) => {
                        self.line(depth, &format!("if ({p}) {name} = {text};"))
                    }
                    _ => self.line(depth, &format!("{name} = {text};")),
                }
            }
            Stmt::Store { buf, index, field, value } => self.store(buf, index, *field, value, env, depth, pred)?,
            Stmt::AddAtomic { buf, index, field, value } => {
                self.add_atomic(buf, index, *field, value, env, depth, pred)?
            }
            Stmt::For { var, lo, hi, schedule, body } => {
                self.for_loop(var, lo, hi, *schedule, body, env, ctx, depth, pred)?
            }
            Stmt::If { cond, then, els } => self.if_(cond, then, els, env, ctx, depth, pred)?,
            Stmt::Alloc { buf, fields, len, space } => self.alloc(buf, fields, len, *space, env, ctx, depth)?,
            Stmt::Sort { buf, lo, len } => {
                if !self.workspace.contains(buf) {
                    return Err(format!("sorting `{buf}`: only workspaces are sorted in OpenCL"));
                }
                let (lo, len) = (self.expr(lo, env)?, self.expr(len, env)?);
                let name = self.ids.get(buf);
                self.guarded(depth, &format!("heddle_sort({name} + ({lo}), {len});"), pred, &[]);
            }
            Stmt::Barrier => self.line(depth, BARRIER),
            // `stmts` emits checks, with the statements they guard.
            Stmt::Check { .. } => return Err("internal: a check emitted without its block".into()),
        }
        Ok(())
    }

    /// `text` under the predicate and the conditions `who` (see [`Gen::who`]).
    pub(crate) fn guarded(&mut self, depth: usize, text: &str, pred: &Pred, who: &[String]) {
        let conds: Vec<&str> = pred.iter().map(String::as_str).chain(who.iter().map(String::as_str)).collect();
        if conds.is_empty() {
            self.line(depth, text);
        } else {
            self.line(depth, &format!("if ({}) {text}", conds.join(" && ")));
        }
    }

    /// The conditions that pick one work-item among those that compute the
    /// same values here: ids in every dimension that no enclosing loop
    /// distributes are 0. For a `__local` buffer one item per group is
    /// enough (each group has its own), for global memory one per launch.
    pub(crate) fn who(&self, local_buffer: bool) -> Vec<String> {
        if !self.parallel {
            return Vec::new();
        }
        let mut out = Vec::new();
        let on = |s: Schedule| self.active.contains(&s);
        let anywhere = |s: Schedule| self.schedules.contains(&s);
        for d in 0..self.dims {
            // A dimension without loops of a kind has one item (or group) of that kind.
            let items = anywhere(Schedule::Local(d)) || anywhere(Schedule::Global(d));
            let groups = anywhere(Schedule::Workgroup(d)) || anywhere(Schedule::Global(d));
            if items && !on(Schedule::Local(d)) && !on(Schedule::Global(d)) {
                out.push(format!("get_local_id({d}) == 0"));
            }
            if groups && !local_buffer && !on(Schedule::Workgroup(d)) && !on(Schedule::Global(d)) {
                out.push(format!("get_group_id({d}) == 0"));
            }
        }
        out
    }

    fn if_(
        &mut self,
        cond: &Expr,
        then: &Block,
        els: &Block,
        env: &mut TypeEnv,
        ctx: Ctx,
        depth: usize,
        pred: &Pred,
    ) -> Result<(), String> {
        let c = self.expr(cond, env)?;
        let barrier = contains_barrier(then) || contains_barrier(els);
        if barrier && (pred.is_some() || self.div.expr(cond)) {
            // A barrier inside: both branches run on every item, each
            // predicated on its side of the condition.
            let yes = self.fresh_name("heddle_then");
            let no = self.fresh_name("heddle_else");
            match pred {
                Some(p) => self.line(depth, &format!("const bool {yes} = {p} && ({c});")),
                None => self.line(depth, &format!("const bool {yes} = {c};")),
            }
            match pred {
                Some(p) => self.line(depth, &format!("const bool {no} = {p} && !{yes};")),
                None => self.line(depth, &format!("const bool {no} = !{yes};")),
            }
            for (branch, p) in [(then, yes), (els, no)] {
                if branch.is_empty() {
                    continue;
                }
                self.line(depth, "{");
                self.block(branch, env, ctx, depth + 1, &Some(p))?;
                self.line(depth, "}");
            }
            return Ok(());
        }
        if let Some(p) = pred {
            if els.is_empty() {
                self.line(depth, &format!("if ({p} && ({c})) {{"));
                self.block(then, env, ctx, depth + 1, &None)?;
                self.line(depth, "}");
                return Ok(());
            }
            self.line(depth, &format!("if ({p}) {{"));
            self.if_(cond, then, els, env, ctx, depth + 1, &None)?;
            self.line(depth, "}");
            return Ok(());
        }
        self.line(depth, &format!("if ({c}) {{"));
        self.block(then, env, ctx, depth + 1, &None)?;
        if !els.is_empty() {
            self.line(depth, "} else {");
            self.block(els, env, ctx, depth + 1, &None)?;
        }
        self.line(depth, "}");
        Ok(())
    }

    fn store(
        &mut self,
        buf: &Name,
        index: &Expr,
        field: u32,
        value: &Expr,
        env: &TypeEnv,
        depth: usize,
        pred: &Pred,
    ) -> Result<(), String> {
        let fields = env.buffer(buf).ok_or_else(|| format!("buffer `{buf}` is not declared"))?.to_vec();
        let ty = *fields.get(field as usize).ok_or_else(|| format!("`{buf}` has no field {field}"))?;
        self.arena_store(buf)?;
        let member = if fields.len() > 1 { format!(".f{field}") } else { String::new() };
        let mut v = self.expr(value, env)?;
        if ty == heddle_ir::ScalarType::Bool {
            v = format!("(uchar)({v})");
        } else if ty.is_half() {
            v = self.halves.store(ty, &v);
        }
        let target = format!("{}[{}]{member} = {v};", self.ids.get(buf), self.expr(index, env)?);
        let who = if self.private.contains(buf) { Vec::new() } else { self.who(self.local.contains(buf)) };
        self.guarded(depth, &target, pred, &who);
        Ok(())
    }

    /// `buf[index].field += value` with OpenCL 1.2 atomics: `atomic_add` for
    /// 32-bit integers, `atom_add` for 64-bit ones (cl_khr_int64_base_atomics),
    /// and for floats a compare-and-swap loop on the value's bits (OpenCL 1.2
    /// has no float atomics): add to the value last seen, retry with the
    /// value found until no other work-item changed the slot in between.
    fn add_atomic(
        &mut self,
        buf: &Name,
        index: &Expr,
        field: u32,
        value: &Expr,
        env: &TypeEnv,
        depth: usize,
        pred: &Pred,
    ) -> Result<(), String> {
        use heddle_ir::ScalarType as S;
        let fields = env.buffer(buf).ok_or_else(|| format!("buffer `{buf}` is not declared"))?.to_vec();
        let ty = *fields.get(field as usize).ok_or_else(|| format!("`{buf}` has no field {field}"))?;
        if self.private.contains(buf) || self.local.contains(buf) {
            return Err(format!("an atomic add to `{buf}`, which is not in global memory"));
        }
        let member = if fields.len() > 1 { format!(".f{field}") } else { String::new() };
        let place = format!("&{}[{}]{member}", self.ids.get(buf), self.expr(index, env)?);
        let v = self.expr(value, env)?;
        let who = self.who(false);
        let (bits, as_bits, as_value, cmpxchg) = match ty {
            S::F32 => ("uint", "as_uint", "as_float", "atomic_cmpxchg"),
            S::F64 => ("ulong", "as_ulong", "as_double", "atom_cmpxchg"),
            S::I32 | S::U32 => {
                let c = crate::ctype::scalar(ty);
                self.guarded(depth, &format!("atomic_add((volatile __global {c}*){place}, {v});"), pred, &who);
                return Ok(());
            }
            S::I64 | S::U64 => {
                let c = crate::ctype::scalar(ty);
                self.guarded(depth, &format!("atom_add((volatile __global {c}*){place}, {v});"), pred, &who);
                return Ok(());
            }
            S::F16 | S::BF16 => {
                // A compare-and-swap of the 32-bit word holding the slot (the
                // runtime pads every buffer to whole words).
                let call = self.halves.atomic_add(ty, &place, &v);
                self.guarded(depth, &call, pred, &who);
                return Ok(());
            }
            S::I8 | S::U8 | S::I16 | S::U16 => {
                // As for the halves: a compare-and-swap of the 32-bit word
                // holding the slot (`narrow_atomic_add_helper`).
                self.narrow_atomics.insert(ty);
                let c = crate::ctype::scalar(ty);
                let call = format!("heddle_atomic_add_{c}((volatile __global {c}*){place}, (uint)({v}));");
                self.guarded(depth, &call, pred, &who);
                return Ok(());
            }
            other => {
                return Err(format!(
                    "an atomic add of {other} values (OpenCL 1.2 has atomics on 32- and 64-bit words only)"
                ));
            }
        };
        // Every access to the slot is atomic (a plain read racing with the
        // other items' exchanges is a data race): the first exchange guesses
        // the slot holds 0 (it usually does, the output starts zeroed) and
        // each failed one returns what it holds.
        let text = format!(
            "{{ volatile __global {bits}* heddle_p = (volatile __global {bits}*){place}; const {c} heddle_v = {v}; {bits} heddle_old = 0, heddle_seen; \
             for (;;) {{ heddle_seen = {cmpxchg}(heddle_p, heddle_old, {as_bits}({as_value}(heddle_old) + heddle_v)); \
             if (heddle_seen == heddle_old) break; heddle_old = heddle_seen; }} }}",
            c = crate::ctype::scalar(ty)
        );
        self.guarded(depth, &text, pred, &who);
        Ok(())
    }

    fn for_loop(
        &mut self,
        var: &Name,
        lo: &Expr,
        hi: &Expr,
        schedule: Schedule,
        body: &Block,
        env: &mut TypeEnv,
        ctx: Ctx,
        depth: usize,
        pred: &Pred,
    ) -> Result<(), String> {
        let barrier = contains_barrier(body);
        if barrier && (self.div.expr(lo) || self.div.expr(hi)) {
            return Err(format!(
                "the work-items of a group must wait for each other inside the loop over `{var}` ({} .. {}), \
                 but it runs a different number of times on different work-items (its bounds depend on the work-item); \
                 share local memory outside that loop, or give it bounds that are the same for the whole group",
                crate::launch::text(lo),
                crate::launch::text(hi)
            ));
        }
        if !barrier && pred.is_some() {
            // Only the items inside the predicate run it.
            let p = pred.clone().unwrap_or_default();
            self.line(depth, &format!("if ({p}) {{"));
            self.for_loop(var, lo, hi, schedule, body, env, ctx, depth + 1, &None)?;
            self.line(depth, "}");
            return Ok(());
        }
        if schedule != Schedule::Seq {
            if self.active.contains(&schedule) {
                return Err(format!(
                    "two nested loops both use {schedule:?}: each OpenCL id dimension can distribute one loop"
                ));
            }
            let range = if matches!(lo, Expr::Int(0, _)) {
                hi.clone()
            } else {
                Expr::bin(heddle_ir::loops::BinOp::Sub, hi.clone(), lo.clone())
            };
            let range = launch_evaluable(&range, self.prog).then_some(range);
            self.loops.push(LoopInfo { schedule, range });
        }
        let v = self.ids.get(var);
        let lo_text = self.expr(lo, env)?;
        let hi_text = self.expr(hi, env)?;
        let (id, size, inner) = match schedule {
            Schedule::Global(d) => (format!("get_global_id({d})"), format!("get_global_size({d})"), Ctx::Item),
            Schedule::Workgroup(d) => (
                format!("get_group_id({d})"),
                format!("get_num_groups({d})"),
                if ctx == Ctx::Item { Ctx::Item } else { Ctx::Group },
            ),
            Schedule::Local(d) => (format!("get_local_id({d})"), format!("get_local_size({d})"), Ctx::Item),
            _ => (String::new(), String::new(), ctx),
        };
        // The bound is evaluated once; loads in it are not repeated per iteration.
        let simple = matches!(hi, Expr::Int(..) | Expr::Var(_));
        let (end_decl, end) = if simple {
            (String::new(), hi_text)
        } else {
            let e = self.fresh_name("heddle_end");
            (format!(", {e} = {hi_text}"), e)
        };
        let mark = env.mark();
        env.declare_var(var.clone(), heddle_ir::ScalarType::I64);
        self.active.push(schedule);
        let per_item = matches!(schedule, Schedule::Global(_) | Schedule::Local(_));
        let result = if barrier && per_item {
            // Lock-step rounds: every item of the group runs the same number
            // of rounds (the bounds are uniform), takes iteration `base + id`
            // of each, and works only where that iteration exists; barriers
            // inside are reached by all.
            let base = self.fresh_name("heddle_base");
            let live = self.fresh_name("heddle_live");
            self.line(
                depth,
                &format!("for (long {base} = {lo_text}{end_decl}; {base} < {end}; {base} += (long){size}) {{"),
            );
            self.line(depth + 1, &format!("const long {v} = {base} + (long){id};"));
            match pred {
                Some(p) => self.line(depth + 1, &format!("const bool {live} = {p} && {v} < {end};")),
                None => self.line(depth + 1, &format!("const bool {live} = {v} < {end};")),
            }
            self.block(body, env, inner, depth + 1, &Some(live))
        } else {
            let start = match (schedule, lo) {
                (Schedule::Seq, _) => lo_text,
                (_, Expr::Int(0, _)) => format!("(long){id}"),
                _ => format!("{lo_text} + (long){id}"),
            };
            let step = if schedule == Schedule::Seq { format!("++{v}") } else { format!("{v} += (long){size}") };
            self.line(depth, &format!("for (long {v} = {start}{end_decl}; {v} < {end}; {step}) {{"));
            self.block(body, env, inner, depth + 1, pred)
        };
        self.active.pop();
        env.truncate(mark);
        result?;
        self.line(depth, "}");
        Ok(())
    }

    fn alloc(
        &mut self,
        buf: &Name,
        fields: &[heddle_ir::ScalarType],
        len: &Expr,
        space: Space,
        env: &mut TypeEnv,
        ctx: Ctx,
        depth: usize,
    ) -> Result<(), String> {
        let elem = self.records.elem(fields);
        let name = self.ids.get(buf);
        env.declare_buffer(buf.clone(), fields.to_vec());
        match space {
            Space::Private => match eval(len, &|_| None) {
                // A private array needs a constant size (and not too large a one).
                Ok(n) if (1..=1 << 16).contains(&n) => {
                    self.private.push(buf.clone());
                    self.line(depth, &format!("{elem} {name}[{n}];"));
                }
                _ => self.arena_alloc(buf, &elem, &name, len, env, depth)?,
            },
            Space::Local => {
                if ctx == Ctx::Item {
                    return Err(format!(
                        "the local buffer `{buf}` is allocated per work-item; allocate it outside mapLocal/mapGlobal"
                    ));
                }
                if !launch_evaluable(len, self.prog) {
                    return Err(format!(
                        "the local buffer `{buf}` needs a length over the naturals, not {}",
                        crate::launch::text(len)
                    ));
                }
                // OpenCL C 1.2 local arrays need a constant size; a `__local`
                // kernel argument is sized by the host at each launch instead.
                self.local.push(buf.clone());
                self.params.push(KernelParam::Local { name: buf.clone(), fields: fields.to_vec(), len: len.clone() });
                self.params_text.push(format!("__local {elem}* restrict {name}"));
                self.line(
                    depth,
                    &format!("// {name}: __local, {} records (a kernel argument)", crate::launch::text(len)),
                );
            }
            Space::Workspace => {
                if ctx != Ctx::Top || depth != 1 || !launch_evaluable(len, self.prog) {
                    return Err(format!(
                        "the workspace `{buf}` must be allocated at the top of the kernel with a length over the naturals"
                    ));
                }
                // One slice per work-item: this one's starts at its linear global id times the length.
                self.params.push(KernelParam::Workspace {
                    name: buf.clone(),
                    fields: fields.to_vec(),
                    len: len.clone(),
                });
                self.params_text.push(format!("__global {elem}* restrict {name}_all"));
                let item = "(get_global_id(0) + get_global_size(0) * (get_global_id(1) + get_global_size(1) * get_global_id(2)))";
                let len = self.expr(len, env)?;
                self.line(depth, &format!("__global {elem}* restrict {name} = {name}_all + {item} * ({len});"));
                self.private.push(buf.clone());
                self.workspace.push(buf.clone());
            }
            Space::Global => {
                if ctx != Ctx::Top || depth != 1 || !launch_evaluable(len, self.prog) {
                    // Allocated inside a loop, or of a length the data gives: the host cannot size it before the launch.
                    return self.arena_alloc(buf, &elem, &name, len, env, depth);
                }
                self.params.push(KernelParam::Scratch { name: buf.clone(), fields: fields.to_vec(), len: len.clone() });
                self.params_text.push(format!("__global {elem}* restrict {name}"));
                self.line(
                    depth,
                    &format!("// {name}: __global scratch, {} records (a kernel argument)", crate::launch::text(len)),
                );
            }
        }
        Ok(())
    }
}

/// The zero of a scalar type, as C.
fn zero(t: heddle_ir::ScalarType) -> String {
    if t.is_float() { crate::ctype::float_literal(0.0, t) } else { crate::ctype::int_literal(0, t) }
}

/// The type of a kernel argument for a loop-program argument.
/// An `f16` / `bf16` argument is passed as a `float` holding its value.
pub(crate) fn scalar_param(t: heddle_ir::ScalarType) -> &'static str {
    if t.is_half() { "float" } else { stored(t) }
}

//! Loop-IR statements as OpenCL C statements.
//!
//! The one subtle part is *who executes what*. Every work-item runs the
//! kernel body; a statement outside any per-item loop therefore runs on all
//! of them. Code is emitted in one of three contexts:
//! - `Top`: outside every parallel loop. Values are computed redundantly (no
//!   harm); stores to global memory are done by the first work-item only.
//! - `Group`: inside `Workgroup` loops only. Every item of a group runs it;
//!   stores are done by the group's leader (local ids all zero). Control flow
//!   here is uniform across the group, so this is where barriers may go.
//! - `Item`: inside a `Global` or `Local` loop: one work-item's own work.

use crate::ctype::{scalar, stored};
use crate::launch::{eval, launch_evaluable, LoopInfo};
use crate::{Gen, KernelParam};
use heddle_ir::loops::{Block, Expr, Schedule, Space, Stmt, TypeEnv};
use heddle_ir::Name;

/// Which work-items execute a statement (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ctx {
    Top,
    Group,
    Item,
}

/// The barrier every `__local` hand-off uses; the global fence also orders
/// the leader's stores for the group.
const BARRIER: &str = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);";

impl Gen<'_> {
    pub(crate) fn block(&mut self, b: &Block, env: &mut TypeEnv, ctx: Ctx, depth: usize) -> Result<(), String> {
        let mark = env.mark();
        self.stmts(b, env, ctx, depth)?;
        env.truncate(mark);
        Ok(())
    }

    fn stmts(&mut self, b: &[Stmt], env: &mut TypeEnv, ctx: Ctx, depth: usize) -> Result<(), String> {
        for (k, s) in b.iter().enumerate() {
            if let Stmt::Check { cond, id } = s {
                // The rest of the block runs only when the check holds. An
                // early `return` would be simpler, but work-items leaving a
                // kernel that has barriers is undefined (POCL rejects it).
                let c = self.expr(&Expr::Not(Box::new(cond.clone())), env)?;
                // Ids are reported 1-based so that 0 means "no failure".
                self.line(depth, &format!("if ({c}) {{"));
                self.line(depth + 1, &format!("atomic_cmpxchg(heddle_error, 0, {});", u64::from(*id) + 1));
                let rest = &b[k + 1..];
                if !rest.is_empty() {
                    self.line(depth, "} else {");
                    self.stmts(rest, env, ctx, depth + 1)?;
                }
                self.line(depth, "}");
                return Ok(());
            }
            self.stmt(s, env, ctx, depth)?;
            // A work-group's hand-off through local memory: whatever one item
            // stored must be visible to the others before the next statement.
            // (A work-group loop ends each iteration with its own barrier.)
            let group_loop = matches!(s, Stmt::For { schedule: Schedule::Workgroup(_), .. });
            if ctx != Ctx::Item && !group_loop && self.writes_local(s) && !matches!(b.get(k + 1), Some(Stmt::Barrier)) {
                self.line(depth, BARRIER);
            }
        }
        Ok(())
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn stmt(&mut self, s: &Stmt, env: &mut TypeEnv, ctx: Ctx, depth: usize) -> Result<(), String> {
        match s {
            Stmt::Let { var, ty, value } | Stmt::Var { var, ty, init: value } => {
                let value = self.expr(value, env)?;
                let konst = if matches!(s, Stmt::Let { .. }) { "const " } else { "" };
                let name = self.ids.get(var);
                self.line(depth, &format!("{konst}{} {name} = {value};", scalar(*ty)));
                env.declare_var(var.clone(), *ty);
            }
            Stmt::Assign { var, value } => {
                let value = self.expr(value, env)?;
                let name = self.ids.get(var);
                self.line(depth, &format!("{name} = {value};"));
            }
            Stmt::Store { buf, index, field, value } => self.store(buf, index, *field, value, env, ctx, depth)?,
            Stmt::AddAtomic { buf, index, field, value } => self.add_atomic(buf, index, *field, value, env, ctx, depth)?,
            Stmt::For { var, lo, hi, schedule, body } => self.for_loop(var, lo, hi, *schedule, body, env, ctx, depth)?,
            Stmt::If { cond, then, els } => {
                let c = self.expr(cond, env)?;
                self.line(depth, &format!("if ({c}) {{"));
                self.block(then, env, ctx, depth + 1)?;
                if !els.is_empty() {
                    self.line(depth, "} else {");
                    self.block(els, env, ctx, depth + 1)?;
                }
                self.line(depth, "}");
            }
            Stmt::Alloc { buf, fields, len, space } => self.alloc(buf, fields, len, *space, env, ctx, depth)?,
            Stmt::Sort { buf, lo, len } => {
                if !self.workspace.contains(buf) {
                    return Err(format!("sorting `{buf}`: only workspaces are sorted in OpenCL"));
                }
                let (lo, len) = (self.expr(lo, env)?, self.expr(len, env)?);
                let name = self.ids.get(buf);
                self.line(depth, &format!("heddle_sort({name} + ({lo}), {len});"));
            }
            Stmt::Barrier => {
                if ctx == Ctx::Item {
                    return Err("a barrier inside a per-work-item loop (mapGlobal/mapLocal) would not be reached by every work-item of the group".into());
                }
                self.line(depth, BARRIER);
            }
            // `stmts` emits checks, with the statements they guard.
            Stmt::Check { .. } => return Err("internal: a check emitted without its block".into()),
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn store(&mut self, buf: &Name, index: &Expr, field: u32, value: &Expr, env: &TypeEnv, ctx: Ctx, depth: usize) -> Result<(), String> {
        let fields = env.buffer(buf).ok_or_else(|| format!("buffer `{buf}` is not declared"))?.to_vec();
        let ty = *fields.get(field as usize).ok_or_else(|| format!("`{buf}` has no field {field}"))?;
        let member = if fields.len() > 1 { format!(".f{field}") } else { String::new() };
        let mut v = self.expr(value, env)?;
        if ty == heddle_ir::ScalarType::Bool {
            v = format!("(uchar)({v})");
        }
        let target = format!("{}[{}]{member} = {v};", self.ids.get(buf), self.expr(index, env)?);
        let private = self.private.contains(buf);
        let guard = match ctx {
            _ if private || !self.parallel => None,
            Ctx::Item => None,
            Ctx::Group => Some("heddle_leader"),
            Ctx::Top if self.local.contains(buf) => Some("heddle_leader"),
            Ctx::Top => Some("heddle_first"),
        };
        match guard {
            Some(g) => self.line(depth, &format!("if ({g}) {target}")),
            None => self.line(depth, &target),
        }
        Ok(())
    }

    /// `buf[index].field += value` with OpenCL 1.2 atomics: `atomic_add` for
    /// 32-bit integers, `atom_add` for 64-bit ones (cl_khr_int64_base_atomics),
    /// and for floats a compare-and-swap loop on the value's bits (OpenCL 1.2
    /// has no float atomics): reread, add, retry until no other work-item
    /// changed the slot in between.
    #[allow(clippy::too_many_arguments)]
    fn add_atomic(&mut self, buf: &Name, index: &Expr, field: u32, value: &Expr, env: &TypeEnv, ctx: Ctx, depth: usize) -> Result<(), String> {
        use heddle_ir::ScalarType as S;
        let fields = env.buffer(buf).ok_or_else(|| format!("buffer `{buf}` is not declared"))?.to_vec();
        let ty = *fields.get(field as usize).ok_or_else(|| format!("`{buf}` has no field {field}"))?;
        if self.private.contains(buf) || self.local.contains(buf) {
            return Err(format!("an atomic add to `{buf}`, which is not in global memory"));
        }
        let member = if fields.len() > 1 { format!(".f{field}") } else { String::new() };
        let place = format!("&{}[{}]{member}", self.ids.get(buf), self.expr(index, env)?);
        let v = self.expr(value, env)?;
        let (bits, as_bits, as_value, cmpxchg) = match ty {
            S::F32 => ("uint", "as_uint", "as_float", "atomic_cmpxchg"),
            S::F64 => ("ulong", "as_ulong", "as_double", "atom_cmpxchg"),
            S::I32 | S::U32 => {
                let c = crate::ctype::scalar(ty);
                return self.guarded_line(ctx, depth, &format!("atomic_add((volatile __global {c}*){place}, {v});"));
            }
            S::I64 | S::U64 => {
                let c = crate::ctype::scalar(ty);
                return self.guarded_line(ctx, depth, &format!("atom_add((volatile __global {c}*){place}, {v});"));
            }
            other => return Err(format!("an atomic add of {other:?} values (OpenCL 1.2 has atomics on 32- and 64-bit integers only)")),
        };
        let text = format!(
            "{{ volatile __global {bits}* heddle_p = (volatile __global {bits}*){place}; {bits} heddle_old, heddle_new; \
             do {{ heddle_old = *heddle_p; heddle_new = {as_bits}({as_value}(heddle_old) + ({v})); }} \
             while ({cmpxchg}(heddle_p, heddle_old, heddle_new) != heddle_old); }}"
        );
        self.guarded_line(ctx, depth, &text)
    }

    /// A statement with a global effect, done once where every work-item runs it (see `store`).
    fn guarded_line(&mut self, ctx: Ctx, depth: usize, text: &str) -> Result<(), String> {
        let guard = match ctx {
            _ if !self.parallel => None,
            Ctx::Item => None,
            Ctx::Group => Some("heddle_leader"),
            Ctx::Top => Some("heddle_first"),
        };
        match guard {
            Some(g) => self.line(depth, &format!("if ({g}) {text}")),
            None => self.line(depth, text),
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn for_loop(&mut self, var: &Name, lo: &Expr, hi: &Expr, schedule: Schedule, body: &Block, env: &mut TypeEnv, ctx: Ctx, depth: usize) -> Result<(), String> {
        // A `Parallel` loop is the data-parallel top of a program: global ids
        // in dimension 0, unless that dimension is already taken around it.
        let schedule = match schedule {
            Schedule::Parallel if !self.active.contains(&Schedule::Global(0)) && ctx == Ctx::Top => Schedule::Global(0),
            Schedule::Parallel => Schedule::Seq,
            s => s,
        };
        if schedule != Schedule::Seq {
            if self.active.contains(&schedule) {
                return Err(format!("two nested loops both use {schedule:?}: each OpenCL id dimension can distribute one loop"));
            }
            let range = if matches!(lo, Expr::Int(0, _)) { hi.clone() } else { Expr::bin(heddle_ir::loops::BinOp::Sub, hi.clone(), lo.clone()) };
            let range = launch_evaluable(&range, self.prog).then_some(range);
            self.loops.push(LoopInfo { schedule, range });
        }
        let v = self.ids.get(var);
        let lo_text = self.expr(lo, env)?;
        let hi_text = self.expr(hi, env)?;
        let (id, size, inner) = match schedule {
            Schedule::Global(d) => (format!("get_global_id({d})"), format!("get_global_size({d})"), Ctx::Item),
            Schedule::Workgroup(d) => (format!("get_group_id({d})"), format!("get_num_groups({d})"), if ctx == Ctx::Item { Ctx::Item } else { Ctx::Group }),
            Schedule::Local(d) => (format!("get_local_id({d})"), format!("get_local_size({d})"), Ctx::Item),
            _ => (String::new(), String::new(), ctx),
        };
        // The bound is evaluated once; loads in it are not repeated per iteration.
        let simple = matches!(hi, Expr::Int(..) | Expr::Var(_));
        let (end_decl, end) = if simple {
            (String::new(), hi_text)
        } else {
            self.fresh += 1;
            let e = format!("heddle_end{}", self.fresh);
            (format!(", {e} = {hi_text}"), e)
        };
        let start = match (schedule, lo) {
            (Schedule::Seq, _) => lo_text,
            (_, Expr::Int(0, _)) => format!("(long){id}"),
            _ => format!("{lo_text} + (long){id}"),
        };
        let step = if schedule == Schedule::Seq { format!("++{v}") } else { format!("{v} += (long){size}") };
        self.line(depth, &format!("for (long {v} = {start}{end_decl}; {v} < {end}; {step}) {{"));
        let mark = env.mark();
        env.declare_var(var.clone(), heddle_ir::ScalarType::I64);
        self.active.push(schedule);
        self.block(body, env, inner, depth + 1)?;
        // The next iteration of a work-group loop overwrites local buffers the
        // group may still be reading.
        if matches!(schedule, Schedule::Workgroup(_)) && inner == Ctx::Group && self.touches_local(body) && !matches!(body.last(), Some(Stmt::Barrier)) {
            self.line(depth + 1, BARRIER);
        }
        self.active.pop();
        env.truncate(mark);
        self.line(depth, "}");
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn alloc(&mut self, buf: &Name, fields: &[heddle_ir::ScalarType], len: &Expr, space: Space, env: &mut TypeEnv, ctx: Ctx, depth: usize) -> Result<(), String> {
        let elem = self.records.elem(fields);
        let name = self.ids.get(buf);
        env.declare_buffer(buf.clone(), fields.to_vec());
        match space {
            Space::Private => {
                let n = eval(len, &|_| None).map_err(|_| {
                    format!("the private buffer `{buf}` needs a length known when the kernel is compiled, not {}", crate::launch::text(len))
                })?;
                if !(1..=1 << 16).contains(&n) {
                    return Err(format!("the private buffer `{buf}` has {n} elements"));
                }
                self.private.push(buf.clone());
                self.line(depth, &format!("{elem} {name}[{n}];"));
            }
            Space::Local => {
                if ctx == Ctx::Item {
                    return Err(format!("the local buffer `{buf}` is allocated per work-item; allocate it outside mapLocal/mapGlobal"));
                }
                if !launch_evaluable(len, self.prog) {
                    return Err(format!("the local buffer `{buf}` needs a length over the naturals, not {}", crate::launch::text(len)));
                }
                // OpenCL C 1.2 local arrays need a constant size; a `__local`
                // kernel argument is sized by the host at each launch instead.
                self.local.push(buf.clone());
                self.params.push(KernelParam::Local { name: buf.clone(), fields: fields.to_vec(), len: len.clone() });
                self.params_text.push(format!("__local {elem}* restrict {name}"));
                self.line(depth, &format!("// {name}: __local, {} records (a kernel argument)", crate::launch::text(len)));
            }
            Space::Workspace => {
                if ctx != Ctx::Top || depth != 1 || !launch_evaluable(len, self.prog) {
                    return Err(format!("the workspace `{buf}` must be allocated at the top of the kernel with a length over the naturals"));
                }
                // One slice per work-item: this one's starts at its linear global id times the length.
                self.params.push(KernelParam::Workspace { name: buf.clone(), fields: fields.to_vec(), len: len.clone() });
                self.params_text.push(format!("__global {elem}* restrict {name}_all"));
                let item = "(get_global_id(0) + get_global_size(0) * (get_global_id(1) + get_global_size(1) * get_global_id(2)))";
                let len = self.expr(len, env)?;
                self.line(depth, &format!("__global {elem}* restrict {name} = {name}_all + {item} * ({len});"));
                self.private.push(buf.clone());
                self.workspace.push(buf.clone());
            }
            Space::Global => {
                if ctx != Ctx::Top || depth != 1 || !launch_evaluable(len, self.prog) {
                    return Err(format!("the global buffer `{buf}` must be allocated at the top of the kernel with a length over the naturals"));
                }
                self.params.push(KernelParam::Scratch { name: buf.clone(), fields: fields.to_vec(), len: len.clone() });
                self.params_text.push(format!("__global {elem}* restrict {name}"));
                self.line(depth, &format!("// {name}: __global scratch, {} records (a kernel argument)", crate::launch::text(len)));
            }
        }
        Ok(())
    }

    /// Does `s` store into a `__local` buffer (anywhere inside it)?
    fn writes_local(&self, s: &Stmt) -> bool {
        match s {
            Stmt::Store { buf, .. } | Stmt::AddAtomic { buf, .. } => self.local.contains(buf),
            Stmt::For { body, .. } => body.iter().any(|s| self.writes_local(s)),
            Stmt::If { then, els, .. } => then.iter().chain(els).any(|s| self.writes_local(s)),
            _ => false,
        }
    }

    /// Does `b` read or write a `__local` buffer?
    fn touches_local(&self, b: &Block) -> bool {
        b.iter().any(|s| match s {
            Stmt::Store { .. } if self.writes_local(s) => true,
            Stmt::Store { index, value, .. } | Stmt::AddAtomic { index, value, .. } => self.reads_local(index) || self.reads_local(value),
            Stmt::Let { value, .. } | Stmt::Var { init: value, .. } | Stmt::Assign { value, .. } => self.reads_local(value),
            Stmt::For { lo, hi, body, .. } => self.reads_local(lo) || self.reads_local(hi) || self.touches_local(body),
            Stmt::If { cond, then, els } => self.reads_local(cond) || self.touches_local(then) || self.touches_local(els),
            Stmt::Check { cond, .. } => self.reads_local(cond),
            Stmt::Alloc { space, .. } => *space == Space::Local,
            Stmt::Barrier | Stmt::Sort { .. } => false,
        })
    }

    fn reads_local(&self, e: &Expr) -> bool {
        match e {
            Expr::Load { buf, index, .. } => self.local.contains(buf) || self.reads_local(index),
            Expr::Bin(_, a, b) => self.reads_local(a) || self.reads_local(b),
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => self.reads_local(a),
            Expr::Select(c, a, b) => self.reads_local(c) || self.reads_local(a) || self.reads_local(b),
            _ => false,
        }
    }
}

/// The type of a kernel argument for a loop-program argument.
pub(crate) fn scalar_param(t: heddle_ir::ScalarType) -> &'static str {
    stored(t)
}

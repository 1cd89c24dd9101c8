//! Loop IR → Cranelift IR.
//!
//! One [`Translator`] walks the body once, emitting Cranelift instructions
//! through `cranelift-frontend` (which builds SSA form from the mutable
//! locals and loop variables). Statements are in [`stmt`], expressions in
//! [`expr`], operators and conversions in [`arith`], the loop-invariant
//! load hoisting in [`hoist`], lazily evaluated `let`s (loads sunk below
//! checks) and loop indices proven to fit narrow integers in [`lazy`], and
//! reassociated reductions in [`reduce`], loops in vector lanes in [`simd`],
//! straight-line lane groups (`asVector`'s lanes) as vectors in [`slp`],
//! a loop's nested short sums with their vector partials carried across it in [`nested`],
//! loop counters counted in the units of their uses in [`induction`].

mod arith;
mod atomic;
mod carry;
mod expr;
mod halves;
mod hoist;
mod induction;
mod interchange;
mod lazy;
mod nested;
mod rebase;
mod reduce;
mod regs;
mod simd;
mod slp;
mod stmt;

use crate::error::CodegenError;
use crate::{helpers, status, types};
use cranelift_codegen::ir::{AbiParam, FuncRef, Function, InstBuilder, Type, Value, types as ct};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::JITModule;
use cranelift_module::{Linkage, Module};
use heddle_ir::loops::{ArgKind, Expr, LoopProgram, RecordLayout, Schedule, Stmt, record_layout};
use heddle_ir::{Name, ScalarType};

/// Translates `prog` (already validated) into `f`, whose signature is the
/// kernel entry signature; helpers are imported from `m`.
/// Translates `prog` into `f`; returns how many checks it left out because
/// the program's input ranges imply them (`Options::trust_ranges`).
pub fn function(
    prog: &LoopProgram,
    m: &mut JITModule,
    f: &mut Function,
    options: &crate::Options,
) -> Result<usize, CodegenError> {
    if prog.checks.len() as u64 >= u64::from(status::INDEX_OVERFLOW) {
        return Err(CodegenError::Unsupported(format!("{} checks in one kernel", prog.checks.len())));
    }
    // Small arrays go in registers where every access allows it (see
    // `regs`): translated optimistically, then again with those whose
    // memory base was used kept in memory.
    let blank = f.clone();
    let mut in_memory: Vec<Name> = Vec::new();
    loop {
        let (trusted, sentinels) = attempt(prog, m, f, options, &in_memory)?;
        let used = used_sentinels(f, &sentinels);
        if used.is_empty() {
            // The unused sentinel constants go.
            for (v, _) in &sentinels {
                if let cranelift_codegen::ir::ValueDef::Result(inst, _) = f.dfg.value_def(*v) {
                    f.layout.remove_inst(inst);
                }
            }
            return Ok(trusted);
        }
        let before = in_memory.len();
        for name in used {
            if !in_memory.contains(&name) {
                in_memory.push(name);
            }
        }
        if in_memory.len() == before {
            return Err(CodegenError::Unsupported("an array in registers used as memory".into()));
        }
        *f = blank.clone();
    }
}

/// The names whose sentinel base (see `regs`) an instruction of `f` uses.
fn used_sentinels(f: &Function, sentinels: &[(Value, Name)]) -> Vec<Name> {
    let mut used = Vec::new();
    if sentinels.is_empty() {
        return used;
    }
    for block in f.layout.blocks() {
        for inst in f.layout.block_insts(block) {
            for v in f.dfg.inst_values(inst) {
                let v = f.dfg.resolve_aliases(v);
                if let Some((_, name)) = sentinels.iter().find(|(s, _)| *s == v)
                    && !used.contains(name)
                {
                    used.push(name.clone());
                }
            }
        }
    }
    used
}

/// One translation of `prog` into `f`, with the arrays named in `in_memory`
/// kept in memory; returns the checks left out and the sentinels of the
/// arrays placed in registers.
fn attempt(
    prog: &LoopProgram,
    m: &mut JITModule,
    f: &mut Function,
    options: &crate::Options,
    in_memory: &[Name],
) -> Result<(usize, Vec<(Value, Name)>), CodegenError> {
    let ptr_ty = m.target_config().pointer_type();
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(f, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (args_ptr, lo, hi) = (params[0], params[1], params[2]);
    // The one block that returns (see `Translator::exit`), entered from the
    // entry block on a constant `false`: never taken, but it makes the
    // entry the exit's immediate dominator, so that no loop dominates it.
    let exit = b.create_block();
    b.append_block_param(exit, ct::I32);
    let start = b.create_block();
    let never = b.ins().iconst(ct::I8, 0);
    let ok = b.ins().iconst(ct::I32, i64::from(status::OK));
    b.ins().brif(never, exit, &[ok.into()], start, &[]);
    b.switch_to_block(start);
    let fma = options.fused_multiply_add && native_fma(m.isa());
    let mut t = Translator {
        prog,
        fma,
        options: *options,
        b,
        m,
        ptr_ty,
        scope: Vec::new(),
        bufs: Vec::new(),
        heap: Vec::new(),
        hoisted: Vec::new(),
        stack_bytes: 0,
        range: (lo, hi),
        depth: 0,
        helpers: Vec::new(),
        lazies: Vec::new(),
        forcing: Vec::new(),
        widened: std::collections::HashMap::new(),
        narrow_safe: Vec::new(),
        narrow_checked: Vec::new(),
        loop_names: Vec::new(),
        loop_var: None,
        let_values: Vec::new(),
        trusted_checks: 0,
        lane_loads_move: false,
        outer_loop: false,
        carried: Vec::new(),
        lane_groups: Vec::new(),
        lane_sums: Vec::new(),
        nested_sums: Vec::new(),
        args_ptr,
        arg_values: Vec::new(),
        reloaded: std::collections::HashMap::new(),
        in_memory: in_memory.to_vec(),
        sentinels: Vec::new(),
        exit,
    };
    t.bind_args(args_ptr);
    t.block(&prog.body)?;
    let ok = t.b.ins().iconst(ct::I32, i64::from(status::OK));
    t.b.ins().jump(exit, &[ok.into()]);
    t.b.switch_to_block(exit);
    let status = t.b.block_params(exit)[0];
    t.b.ins().return_(&[status]);
    t.b.seal_all_blocks();
    let config = t.m.target_config();
    let trusted = t.trusted_checks;
    let sentinels = std::mem::take(&mut t.sentinels);
    t.b.finalize(config);
    Ok((trusted, sentinels))
}

/// Whether Cranelift lowers `fma` on `isa` to one instruction rather than a
/// call to libm's `fma`: on x86-64 when the host has AVX and FMA (the flags
/// `cranelift_native` sets from `cpuid`), always on AArch64.
fn native_fma(isa: &dyn cranelift_codegen::isa::TargetIsa) -> bool {
    let flag = |name: &str| isa.isa_flags().iter().any(|f| f.name == name && f.as_bool() == Some(true));
    match isa.name() {
        "x64" => flag("has_avx") && flag("has_fma"),
        "aarch64" => true,
        _ => false,
    }
}

/// Whether calls over disjoint sub-ranges of the top-level `Parallel` loop
/// add up to one call over all of it: the body is that loop plus `let`s,
/// checks and workspaces (which every call may repeat harmlessly: each call
/// gets its own workspaces).
pub fn splittable(prog: &LoopProgram) -> bool {
    let mut loops = 0;
    for s in &prog.body {
        match s {
            Stmt::For { schedule: Schedule::Parallel, .. } => loops += 1,
            Stmt::Let { .. } | Stmt::Check { .. } | Stmt::Alloc { space: heddle_ir::loops::Space::Workspace, .. } => {}
            _ => return false,
        }
    }
    loops == 1
}

/// What a scalar name stands for.
#[derive(Clone, Copy)]
enum Bound {
    /// An immutable value (argument, `let`).
    Val(Value, ScalarType),
    /// A mutable local or a loop variable.
    Var(Variable, ScalarType),
    /// A `let` not evaluated yet: entry `k` of [`Translator::lazies`] (see [`lazy`]).
    Lazy(usize),
    /// Lane `l` of entry `g` of [`Translator::lane_groups`] (see [`slp`]).
    Lane(usize, usize),
}

/// A buffer in scope.
struct Buf {
    base: Value,
    fields: Vec<ScalarType>,
    layout: RecordLayout,
    readonly: bool,
    /// The array's registers when it is kept in them (`base` is then a
    /// sentinel that no access may use; see [`regs`]).
    regs: Option<regs::Registers>,
}

/// A live heap temporary, freed at the end of its block or on a failure exit.
struct HeapAlloc {
    ptr: Value,
    len: Value,
    size: i64,
    align: i64,
}

/// Temporaries with a constant size go on the stack while their total stays
/// under this (a worker thread's stack is 2 MiB); the rest on the heap.
const STACK_LIMIT: u64 = 64 * 1024;

/// The state of one translation.
pub(crate) struct Translator<'a, 'f> {
    prog: &'a LoopProgram,
    options: crate::Options,
    b: FunctionBuilder<'f>,
    m: &'a mut JITModule,
    ptr_ty: Type,
    scope: Vec<(Name, Bound)>,
    bufs: Vec<(Name, Buf)>,
    heap: Vec<HeapAlloc>,
    /// Loads evaluated once before the loop that contains them (see [`hoist`]).
    hoisted: Vec<(Expr, Value, ScalarType)>,
    stack_bytes: u64,
    /// The `lo .. hi` parameters that clip the top-level `Parallel` loop.
    range: (Value, Value),
    /// Loop nesting depth of the statement being translated.
    depth: usize,
    helpers: Vec<(&'static str, FuncRef)>,
    /// The values of lazy `let`s (see [`lazy`]).
    lazies: Vec<(Expr, ScalarType)>,
    /// The lazy `let`s being evaluated, innermost last.
    forcing: Vec<usize>,
    /// Narrow integers with a known widening to `i64`: a loop index
    /// converted without wrapping (see [`lazy`]) or an integer loaded
    /// straight to 64 bits. Keyed by the narrow value and its type; one
    /// entry per narrow load, so a map rather than a list to search.
    widened: std::collections::HashMap<(Value, ScalarType), Value>,
    /// Loop variables whose range was checked to fit every narrow integer
    /// type they are converted to in their body.
    narrow_safe: Vec<Name>,
    /// Narrow range checks already made, as `(lo, hi, min, max)`: from the
    /// point of each on, `lo < hi` implies `min <= lo` and `hi - 1 <= max`
    /// (see [`check_narrow_range`](Self::check_narrow_range)). Kept until
    /// the block that holds the checked loop ends.
    narrow_checked: Vec<(Value, Value, i64, i64)>,
    /// For each enclosing loop, innermost last: the names its body declares
    /// or assigns and its variable (what is *not* invariant in it).
    loop_names: Vec<Vec<Name>>,
    /// The innermost loop's variable, and how many `if`s inside that loop
    /// enclose the statement being translated.
    loop_var: Option<(Name, usize)>,
    /// The values of the `let`s in scope, by name (for loads whose index is
    /// a function of the loop variable; see [`expr`]'s `movable`).
    let_values: Vec<(Name, Expr)>,
    /// Checks left out because the input ranges imply them.
    trusted_checks: usize,
    /// The lane step being translated has no check that is emitted (see
    /// [`simd`]'s `lane_load_flags`).
    lane_loads_move: bool,
    /// The innermost loop's body holds another loop: its loads are not
    /// `can_move` (see [`expr`]'s `movable`).
    outer_loop: bool,
    /// Loads carried from one iteration of a loop to the next (see [`carry`]).
    carried: Vec<carry::Carried>,
    /// Contract a reassociable float accumulator's `acc + a * b` into a
    /// fused multiply-add (see [`reduce`]): asked for, and native on the host.
    fma: bool,
    /// The vectors of straight-line lane groups (see [`slp`]).
    lane_groups: Vec<slp::LaneGroup>,
    /// The accumulators of enclosing lane-sum loops (see [`slp`]).
    lane_sums: Vec<slp::LaneSum>,
    /// The nested sums of enclosing loops whose partials they carry (see [`nested`]).
    nested_sums: Vec<nested::NestedSum>,
    /// The argument block (see [`rebase`]).
    args_ptr: Value,
    /// Each argument's value loaded at entry (a buffer's base), by position.
    arg_values: Vec<Value>,
    /// Arguments re-loaded in a pre-header: the fresh value, and the entry
    /// value it equals (see [`rebase`]).
    reloaded: std::collections::HashMap<Value, Value>,
    /// Arrays that could live in registers but are kept in memory: an
    /// earlier translation accessed them as memory (see [`regs`]).
    in_memory: Vec<Name>,
    /// The sentinel bases of the arrays in registers (see [`regs`]).
    sentinels: Vec<(Value, Name)>,
    /// The function's one returning block, its status code a parameter:
    /// the body's end jumps to it with `OK`, and a failed check with
    /// nothing to free branches straight to it with its code.
    ///
    /// Why not a block of its own per check: Cranelift's elaborator (0.135)
    /// walks the dominator tree keeping a stack of the loops it is in, pops
    /// a loop at the first block it visits outside it, and does not push it
    /// back when the walk returns to the loop's other blocks. A check's own
    /// failure block is dominated by the check and outside every loop, so
    /// every block of the loop visited after it hoisted nothing (CSR's rows
    /// of under 16 entries recomputed both rebased bases, `imul` and `lea`,
    /// in each row, after the long rows' range check). The entry branches
    /// to this block too (never taken), so its immediate dominator is the
    /// entry, outside every loop.
    exit: cranelift_codegen::ir::Block,
}

impl Translator<'_, '_> {
    /// Loads every argument from its 8-byte slot at entry.
    fn bind_args(&mut self, args_ptr: Value) {
        for (k, a) in self.prog.args.iter().enumerate() {
            let off = (8 * k) as i32;
            let flags = types::arg_slot();
            match &a.kind {
                ArgKind::Nat => {
                    let v = self.b.ins().load(ct::I64, flags, args_ptr, off);
                    self.arg_values.push(v);
                    self.scope.push((a.name.clone(), Bound::Val(v, ScalarType::I64)));
                }
                ArgKind::Scalar(t) => {
                    // Little-endian: the low bytes of the slot hold the value.
                    let v = self.b.ins().load(types::clif_type(*t), flags, args_ptr, off);
                    self.arg_values.push(v);
                    self.scope.push((a.name.clone(), Bound::Val(v, *t)));
                }
                ArgKind::Input { fields, .. } | ArgKind::Output { fields, .. } => {
                    let base = self.b.ins().load(self.ptr_ty, flags, args_ptr, off);
                    let readonly = matches!(a.kind, ArgKind::Input { .. });
                    self.arg_values.push(base);
                    let buf = Buf { base, fields: fields.clone(), layout: record_layout(fields), readonly, regs: None };
                    self.bufs.push((a.name.clone(), buf));
                }
                ArgKind::Host => {
                    let base = self.b.ins().load(self.ptr_ty, flags, args_ptr, off);
                    let fields = vec![ScalarType::I64];
                    self.arg_values.push(base);
                    let buf = Buf { base, layout: record_layout(&fields), fields, readonly: true, regs: None };
                    self.bufs.push((a.name.clone(), buf));
                }
            }
        }
    }

    /// Where `name` is bound in the scope.
    fn position(&self, name: &Name) -> Result<usize, CodegenError> {
        self.scope
            .iter()
            .rposition(|(n, _)| n == name)
            .ok_or_else(|| CodegenError::Unsupported(format!("the undeclared name `{name}`")))
    }

    fn buffer(&self, name: &Name) -> Result<&Buf, CodegenError> {
        self.bufs
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b)
            .ok_or_else(|| CodegenError::Unsupported(format!("the undeclared buffer `{name}`")))
    }

    /// A helper function, imported into this function on first use.
    fn helper(&mut self, name: &'static str) -> Result<FuncRef, CodegenError> {
        if let Some((_, f)) = self.helpers.iter().find(|(n, _)| *n == name) {
            return Ok(*f);
        }
        let mut sig = self.m.make_signature();
        let (params, ret): (&[Type], Option<Type>) = match name {
            helpers::FMOD => (&[ct::F64, ct::F64], Some(ct::F64)),
            helpers::ALLOC => (&[ct::I64, ct::I64, ct::I64], Some(self.ptr_ty)),
            helpers::SORT => (&[self.ptr_ty, ct::I64], None),
            helpers::F16_OF_F64 | helpers::BF16_OF_F64 => (&[ct::F64], Some(ct::F32)),
            helpers::F16_OF_I64 | helpers::BF16_OF_I64 | helpers::F16_OF_U64 | helpers::BF16_OF_U64 => {
                (&[ct::I64], Some(ct::F32))
            }
            _ => (&[self.ptr_ty, ct::I64, ct::I64, ct::I64], None),
        };
        sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
        sig.returns.extend(ret.map(AbiParam::new));
        let id =
            self.m.declare_function(name, Linkage::Import, &sig).map_err(|e| CodegenError::Cranelift(e.to_string()))?;
        let f = self.m.declare_func_in_func(id, self.b.func);
        self.helpers.push((name, f));
        Ok(f)
    }

    /// Frees the heap temporaries from `from` on, newest first.
    fn free_heap(&mut self, from: usize) -> Result<(), CodegenError> {
        if self.heap.len() <= from {
            return Ok(());
        }
        let free = self.helper(helpers::FREE)?;
        for h in self.heap[from..].iter().rev() {
            let size = self.b.ins().iconst(ct::I64, h.size);
            let align = self.b.ins().iconst(ct::I64, h.align);
            self.b.ins().call(free, &[h.ptr, h.len, size, align]);
        }
        Ok(())
    }

    /// Continues only when `ok` (an `i8` truth value) holds; otherwise frees
    /// every live temporary and returns `code`.
    fn guard(&mut self, ok: Value, code: u32) -> Result<(), CodegenError> {
        let cont = self.b.create_block();
        if self.heap.is_empty() {
            // Nothing to free: straight to the one exit (see `exit`).
            let c = self.b.ins().iconst(ct::I32, i64::from(code));
            self.b.ins().brif(ok, cont, &[], self.exit, &[c.into()]);
            self.b.switch_to_block(cont);
            return Ok(());
        }
        let fail = self.b.create_block();
        self.b.ins().brif(ok, cont, &[], fail, &[]);
        self.b.switch_to_block(fail);
        self.b.set_cold_block(fail);
        self.free_heap(0)?;
        let c = self.b.ins().iconst(ct::I32, i64::from(code));
        self.b.ins().return_(&[c]);
        self.b.switch_to_block(cont);
        Ok(())
    }

    /// The block `b` as a scope: names, buffers and heap temporaries declared
    /// in it end with it.
    fn block(&mut self, b: &[Stmt]) -> Result<(), CodegenError> {
        let (scope, bufs, heap, lets) = (self.scope.len(), self.bufs.len(), self.heap.len(), self.let_values.len());
        let checked = self.narrow_checked.len();
        match self.slp_plan(b) {
            None => {
                for s in b {
                    self.stmt(s)?;
                }
            }
            Some(plan) => {
                let mut ids = std::collections::HashMap::new();
                let mut i = 0;
                while i < b.len() {
                    match plan.action(i) {
                        Some(&slp::Action::Member { group, lane }) => {
                            self.slp_member(b, &plan, i, group, lane, &mut ids)?
                        }
                        Some(&slp::Action::Store { width, ty }) => {
                            self.slp_store(b, i, width, ty)?;
                            i += width;
                            continue;
                        }
                        Some(slp::Action::LaneSum { acc, width, ty }) => self.slp_lane_sum(b, i, acc, *width, *ty)?,
                        Some(slp::Action::Skip) => {}
                        None => self.stmt(&b[i])?,
                    }
                    i += 1;
                }
            }
        }
        // Lazy `let`s never used are dropped with their scope.
        self.free_heap(heap)?;
        self.heap.truncate(heap);
        self.let_values.truncate(lets);
        self.scope.truncate(scope);
        self.bufs.truncate(bufs);
        self.narrow_checked.truncate(checked);
        Ok(())
    }
}

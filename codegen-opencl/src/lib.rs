//! # heddle-codegen-opencl
//!
//! The OpenCL backend's code generator: a [`LoopProgram`] becomes one
//! OpenCL C 1.2 kernel ([`compile`]) together with the launch configuration
//! it implies ([`LaunchConfig`]: global and local sizes as expressions over
//! the kernel's naturals, evaluated by the runtime at each launch).
//!
//! The mapping:
//! - `Global(d)` / `Workgroup(d)` / `Local(d)` loops iterate from
//!   `get_global_id(d)` / `get_group_id(d)` / `get_local_id(d)` in steps of
//!   the matching size, so they are correct whatever the launch size; a
//!   top-level `Parallel` loop is a `Global(0)` loop.
//! - `Space::Local` buffers are `__local` kernel arguments sized by the host;
//!   a barrier follows every statement of the work-group that writes one
//!   (see [`emit`](crate::emit) for who executes what). `Space::Private`
//!   buffers are private arrays of constant size.
//! - A temporary only the running kernel can size (a global buffer allocated
//!   inside a loop or of a length the data gives, a private one of a length
//!   that is not a constant) comes from the work-item's slice of an arena the
//!   host allocates and enlarges on demand ([`arena`](crate::arena)).
//! - Buffer records are C structs laid out like `record_layout`; `bool` is
//!   stored as `uchar`; `double` enables `cl_khr_fp64`.
//! - `Check` writes its 1-based id into the `heddle_error` argument (the last
//!   one) and stops the work-item (`return`), or, in a kernel with barriers,
//!   predicates the rest of its block off.
//! - Floating-point contraction is switched off so that `a * b + c` rounds
//!   twice, like the interpreter.
#![warn(missing_docs)]

mod arena;
mod barriers;
mod ctype;
mod divergence;
mod emit;
mod expr;
mod halves;
pub mod interface;
pub mod launch;
mod normalize;
mod vector_loads;
mod vector_stores;

pub use interface::{ArgSpec, ErrorCode, Interface, Role};
pub use launch::{Dim, LaunchConfig, WorkSizes};

use ctype::{Idents, Records};
use emit::Ctx;
use heddle_ir::loops::{ArgKind, Block, Expr, LoopProgram, Schedule, Stmt};
use heddle_ir::{Diagnostic, Name, ScalarType, Span};
use std::fmt;

/// A kernel parameter of the generated function, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelParam {
    /// The loop program's argument with this index (`LoopProgram::args`).
    Arg(usize),
    /// A `__local` buffer of `len` records (an expression over the naturals).
    Local {
        /// The loop program's buffer.
        name: Name,
        /// Its record fields.
        fields: Vec<ScalarType>,
        /// Its number of records.
        len: Expr,
    },
    /// A global scratch buffer of `len` records, allocated by the host.
    Scratch {
        /// The loop program's buffer.
        name: Name,
        /// Its record fields.
        fields: Vec<ScalarType>,
        /// Its number of records.
        len: Expr,
    },
    /// Workspaces (`Space::Workspace`): `len` zeroed records for each
    /// work-item of the launch, `len × (global work size)` in all; work-item
    /// `g` (its linear global id) uses records `g * len ..`.
    Workspace {
        /// The loop program's buffer.
        name: Name,
        /// Its record fields.
        fields: Vec<ScalarType>,
        /// Records per work-item.
        len: Expr,
    },
    /// The arena ([`arena`](crate::arena)): [`ArenaWords`](KernelParam::ArenaWords)
    /// 8-byte words for each work-item of the launch; work-item `g` (its
    /// linear global id) uses words `g * words ..`. Its contents do not matter.
    Arena,
    /// The arena's words per work-item (a `long`): any number at the first
    /// launch ([`ARENA_FIRST_WORDS`]), then at least what
    /// [`ArenaNeed`](KernelParam::ArenaNeed) said.
    ArenaWords,
    /// One `int`, zero before the launch; after it, the words per work-item
    /// a work-item needed where it was more than it had (the launch must then
    /// be repeated with that many), else zero.
    ArenaNeed,
    /// One `int`, zero before the launch; a failed check stores its id + 1.
    Error,
}

/// The arena's words per work-item at a first launch.
pub const ARENA_FIRST_WORDS: i64 = arena::FIRST_WORDS;

/// The name of the helper converting a `from` float to the integer type `to`.
pub(crate) fn conversion_name(to: ScalarType, from: ScalarType) -> String {
    format!("heddle_{}_of_{}", ctype::scalar(to), ctype::scalar(from))
}

/// A float-to-integer conversion as Rust's `as` does it: toward zero,
/// saturating, NaN giving 0. `convert_T_sat_rtz` alone leaves NaN to the
/// device (the specification says it *should* give 0; Oclgrind gives the
/// minimum), so NaN is tested explicitly. A function rather than an inline
/// `isnan(x) ? 0 : …` so that the operand's text is not repeated.
fn conversion_helper(to: ScalarType, from: ScalarType) -> String {
    let (t, f) = (ctype::scalar(to), ctype::scalar(from));
    format!(
        "\nstatic {t} {name}({f} v) {{ return isnan(v) ? ({t})0 : convert_{t}_sat_rtz(v); }}\n",
        name = conversion_name(to, from)
    )
}

pub(crate) fn division_name(t: ScalarType, rem: bool) -> String {
    format!("heddle_{}_{}", if rem { "rem" } else { "div" }, ctype::scalar(t))
}

/// A signed `int` division or remainder as the interpreter does
/// it (Rust's `wrapping_div` / `wrapping_rem`): `MIN / -1` is `MIN` and
/// `MIN % -1` is 0, where C leaves both undefined. The divisor is not 0: the
/// loop program checks it first (`Stmt::Check`). The negation goes through
/// the unsigned type, where it wraps.
fn division_helper(t: ScalarType, rem: bool) -> String {
    let c = ctype::scalar(t);
    let body = if rem { format!("y == -1 ? ({c})0 : x % y") } else { format!("y == -1 ? ({c})(0 - (u{c})x) : x / y") };
    format!("\nstatic {c} {name}({c} x, {c} y) {{ return {body}; }}\n", name = division_name(t, rem))
}

/// `*p += v` for an 8- or 16-bit integer slot (`scatterAdd` of `i8`, `u8`,
/// `i16`, `u16` values run in parallel): OpenCL 1.2 has no atomics on
/// them, so the aligned 32-bit word holding the slot is exchanged with
/// `atomic_cmpxchg` until no other work-item changed it in between, the
/// rest of the word put back as found (the runtime pads every buffer to
/// whole words). The sum wraps at the slot's width, as the interpreter's
/// does: `v` is the value's two's-complement bits, and the bits above the
/// slot are masked off. The first exchange guesses the word holds 0.
fn narrow_atomic_add_helper(t: ScalarType) -> String {
    let c = ctype::scalar(t);
    let bytes = t.size_bytes();
    let mask = if bytes == 1 { "0xffu" } else { "0xffffu" };
    format!(
        "
static void heddle_atomic_add_{c}(volatile __global {c}* p, uint v) {{
  volatile __global uint* w = (volatile __global uint*)((size_t)p & ~(size_t)3);
#ifdef __ENDIAN_LITTLE__
  const uint sh = (uint)((size_t)p & 3) * 8u;
#else
  const uint sh = (uint)(4 - {bytes} - ((size_t)p & 3)) * 8u;
#endif
  const uint mask = {mask} << sh;
  uint old = 0u;
  for (;;) {{
    const uint next = (old & ~mask) | ((((old & mask) >> sh) + v) << sh & mask);
    const uint seen = atomic_cmpxchg(w, old, next);
    if (seen == old) break;
    old = seen;
  }}
}}
"
    )
}

/// Work-items of a launch whose kernel has workspaces, at most: every
/// work-item gets its own, so this bounds their memory (strided loops cover
/// any range with fewer items).
pub const WORKSPACE_ITEMS: i64 = 1024;

/// OpenCL C for `Stmt::Sort` on `__global long` records: a heapsort (no
/// recursion, no extra memory, O(n log n)).
const SORT_HELPER: &str = "
static void heddle_sift(__global long* a, long root, long n) {
  const long v = a[root];
  for (;;) {
    long child = 2 * root + 1;
    if (child >= n) break;
    if (child + 1 < n && a[child + 1] > a[child]) child++;
    if (a[child] <= v) break;
    a[root] = a[child];
    root = child;
  }
  a[root] = v;
}

static void heddle_sort(__global long* a, long n) {
  for (long start = n / 2 - 1; start >= 0; start--) heddle_sift(a, start, n);
  for (long end = n - 1; end > 0; end--) {
    const long t = a[0]; a[0] = a[end]; a[end] = t;
    heddle_sift(a, 0, end);
  }
}
";

/// A generated OpenCL kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The kernel function's name in [`source`](Kernel::source).
    pub name: String,
    /// The complete OpenCL C program text.
    pub source: String,
    /// The kernel function's parameters, in order.
    pub params: Vec<KernelParam>,
    /// The NDRange the program implies.
    pub launch: LaunchConfig,
    /// What a host program needs to launch it: arguments, sizes, error codes.
    pub interface: Interface,
}

impl fmt::Display for Kernel {
    /// The source, then how to launch it (as comments).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)?;
        writeln!(f, "// arguments of {}:", self.name)?;
        for a in &self.interface.args {
            let of = a.fields.join(", ");
            let records = a.records.as_deref().unwrap_or("1");
            let what = match a.role {
                Role::Natural => match &a.computed {
                    Some(c) => format!("a natural computed by the host: {c}"),
                    None => "a natural".to_string(),
                },
                Role::Scalar => "a scalar input".to_string(),
                Role::Input => format!("input, {records} records of ({of})"),
                Role::Output => format!("output, {records} records of ({of})"),
                Role::Host => format!("computed by the host, {records} longs: {}", a.computed.as_deref().unwrap_or("")),
                Role::Local => format!("__local, {records} records of ({of}): pass its size in bytes, no data"),
                Role::Scratch => format!("scratch, {records} records of ({of})"),
                Role::Workspace => format!("workspace, {records} records of ({of}) per work-item"),
                Role::Arena => format!("the arena, {records} words per work-item; its contents do not matter"),
                Role::ArenaNeed => "0 before the launch; after it, the arena words a work-item needed where it had fewer (then launch again with that many)".to_string(),
                Role::Error => "0 before the launch; after it, 0 or an error code below".to_string(),
            };
            let initial = match (&a.initial, a.role) {
                (Some(i), Role::Output | Role::Workspace) => format!("; starts {i}"),
                _ => String::new(),
            };
            writeln!(f, "//   {} {}: {what}{initial}", a.index, a.name)?;
        }
        for e in &self.interface.errors {
            writeln!(f, "// error code {}: {}", e.code, e.message)?;
        }
        writeln!(f, "// launch {}: {}", self.name, self.launch)
    }
}

/// Generator state for one kernel.
pub(crate) struct Gen<'a> {
    pub(crate) prog: &'a LoopProgram,
    pub(crate) ids: Idents,
    pub(crate) records: Records,
    pub(crate) out: String,
    /// Parameters after the program's arguments (local and scratch buffers).
    pub(crate) params: Vec<KernelParam>,
    pub(crate) params_text: Vec<String>,
    /// Parallel loops emitted, for the launch configuration.
    pub(crate) loops: Vec<launch::LoopInfo>,
    /// Schedules of the enclosing parallel loops.
    pub(crate) active: Vec<Schedule>,
    pub(crate) local: Vec<Name>,
    pub(crate) private: Vec<Name>,
    /// Workspaces (per work-item slices of one global buffer).
    pub(crate) workspace: Vec<Name>,
    /// Does the kernel run on more than one work-item?
    pub(crate) parallel: bool,
    /// Does the kernel have a barrier (then no work-item may return early)?
    pub(crate) barriers: bool,
    /// NDRange dimensions the kernel's loops use.
    pub(crate) dims: u32,
    /// Every schedule some loop of the kernel has.
    pub(crate) schedules: Vec<Schedule>,
    /// What differs between the items of a group.
    pub(crate) div: divergence::Divergence,
    pub(crate) fresh: usize,
    /// Float-to-integer conversions used, `(to, from)`: each gets a helper
    /// function (`conversion_helper`).
    pub(crate) conversions: std::collections::BTreeSet<(ScalarType, ScalarType)>,
    /// `int` divisions and remainders used, `(type, remainder?)`, whose
    /// divisor may be -1: each gets a helper function (`division_helper`).
    pub(crate) divisions: std::collections::BTreeSet<(ScalarType, bool)>,
    /// Narrow integer types (8 and 16 bits) added to atomically: each gets
    /// a helper function (`narrow_atomic_add_helper`).
    pub(crate) narrow_atomics: std::collections::BTreeSet<ScalarType>,
    /// The `f16` / `bf16` helpers used.
    pub(crate) halves: halves::Halves,
    /// Temporaries taken from the arena, each with the number of loops
    /// around it (`active.len()`) where it was allocated.
    pub(crate) arena: Vec<(Name, usize)>,
    /// For each block being emitted: has it allocated from the arena?
    pub(crate) arena_marks: Vec<bool>,
    /// Loops whose variable is converted to a narrower integer and whose
    /// range check (`emit.rs`, `stmts`) is emitted (by address in the program).
    pub(crate) narrow_checked: std::collections::HashSet<*const Stmt>,
}

/// Generates the OpenCL kernel for `prog` (validated first). An error means
/// the program cannot run on OpenCL as scheduled (e.g. a barrier inside a
/// per-work-item loop); it names the construct.
pub fn compile(prog: &LoopProgram) -> Result<Kernel, Diagnostic> {
    let fail = |m: String| Diagnostic::new(Span::default(), format!("OpenCL backend: {m}"));
    prog.validate().map_err(|e| fail(e.to_string()))?;
    let prog = &prepare(prog);
    let mut g = Gen {
        prog,
        ids: Idents::default(),
        records: Records::default(),
        conversions: Default::default(),
        divisions: Default::default(),
        narrow_atomics: Default::default(),
        halves: Default::default(),
        out: String::new(),
        params: Vec::new(),
        params_text: Vec::new(),
        loops: Vec::new(),
        active: Vec::new(),
        local: Vec::new(),
        private: Vec::new(),
        workspace: Vec::new(),
        parallel: has_parallel(&prog.body),
        barriers: barriers::contains_barrier(&prog.body),
        dims: dims_used(&prog.body),
        schedules: schedules_in(&prog.body),
        div: divergence::Divergence::of(&prog.body),
        fresh: 0,
        arena: Vec::new(),
        arena_marks: Vec::new(),
        narrow_checked: Default::default(),
    };
    let mut params_text = Vec::new();
    let mut params = Vec::new();
    for (k, a) in prog.args.iter().enumerate() {
        let name = g.ids.get(&a.name);
        params.push(KernelParam::Arg(k));
        params_text.push(match &a.kind {
            ArgKind::Nat => format!("const long {name}"),
            ArgKind::Scalar(t) => format!("const {} {name}", emit::scalar_param(*t)),
            ArgKind::Input { fields, .. } => format!("__global const {}* restrict {name}", g.records.elem(fields)),
            ArgKind::Host => format!("__global const long* restrict {name}"),
            ArgKind::Output { fields, .. } => format!("__global {}* restrict {name}", g.records.elem(fields)),
        });
    }
    let mut env = prog.arg_env();
    g.block(&prog.body, &mut env, Ctx::Top, 1, &None).map_err(fail)?;
    let mut launch = LaunchConfig::infer(&g.loops).map_err(fail)?;
    let arena = !g.arena.is_empty();
    if arena || g.params.iter().any(|p| matches!(p, KernelParam::Workspace { .. })) {
        launch.cap_items(WORKSPACE_ITEMS);
    }
    if arena {
        g.params.extend([KernelParam::Arena, KernelParam::ArenaWords, KernelParam::ArenaNeed]);
        g.params_text.extend(
            [
                "__global ulong* restrict heddle_arena_all",
                "const long heddle_arena_words",
                "__global int* restrict heddle_arena_need",
            ]
            .map(String::from),
        );
        g.out.insert_str(0, arena::PROLOGUE);
    }
    params.append(&mut g.params);
    params.push(KernelParam::Error);
    params_text.append(&mut g.params_text);
    params_text.push("__global int* restrict heddle_error".into());
    let interface = Interface::new(prog, &params, &params_text, !g.narrow_checked.is_empty());

    let name = kernel_name(&prog.name);
    let mut src = String::new();
    src.push_str(&format!("// heddle: kernel `{}`, generated from its loop program\n", prog.name));
    if uses_f64(prog) {
        src.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    }
    if uses_int64_atomics(&prog.body) {
        src.push_str("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n");
    }
    src.push_str("#pragma OPENCL FP_CONTRACT OFF\n");
    src.push_str(&g.records.declarations());
    if uses_sort(&prog.body) {
        src.push_str(SORT_HELPER);
    }
    for &(to, from) in &g.conversions {
        src.push_str(&conversion_helper(to, from));
    }
    for &(t, rem) in &g.divisions {
        src.push_str(&division_helper(t, rem));
    }
    for &t in &g.narrow_atomics {
        src.push_str(&narrow_atomic_add_helper(t));
    }
    src.push_str(&g.halves.declarations());
    src.push_str(&format!("\n__kernel void {name}(\n  {}) {{\n", params_text.join(",\n  ")));
    src.push_str(&g.out);
    src.push_str("}\n");
    Ok(Kernel { name, source: src, params, launch, interface })
}

/// The program as the OpenCL backend runs it: a chunked loop of atomic adds
/// run by work-groups that combine their boundary runs first
/// (`group_atomic_runs`), schedules explicit (`normalize`) and the barriers the work-groups need (`barriers`).
/// `heddle compile --target opencl` shows the kernel generated from it.
pub fn prepare(prog: &LoopProgram) -> LoopProgram {
    let mut p = prog.clone();
    heddle_ir::loops::group_atomic_runs(&mut p);
    normalize::schedules(&mut p.body);
    p.body = barriers::place(std::mem::take(&mut p.body));
    p
}

/// The number of NDRange dimensions the loops of `b` use (at least 1).
fn dims_used(b: &Block) -> u32 {
    fn max_dim(b: &Block) -> Option<u32> {
        b.iter()
            .filter_map(|s| match s {
                Stmt::For { schedule, body, .. } => {
                    let own = match schedule {
                        Schedule::Global(d) | Schedule::Workgroup(d) | Schedule::Local(d) => Some(*d),
                        _ => None,
                    };
                    own.max(max_dim(body))
                }
                Stmt::If { then, els, .. } => max_dim(then).max(max_dim(els)),
                _ => None,
            })
            .max()
    }
    max_dim(b).map_or(1, |d| d + 1)
}

fn schedules_in(b: &Block) -> Vec<Schedule> {
    let mut out = Vec::new();
    fn go(b: &Block, out: &mut Vec<Schedule>) {
        for s in b {
            match s {
                Stmt::For { schedule, body, .. } => {
                    if !out.contains(schedule) {
                        out.push(*schedule);
                    }
                    go(body, out);
                }
                Stmt::If { then, els, .. } => {
                    go(then, out);
                    go(els, out);
                }
                _ => {}
            }
        }
    }
    go(b, &mut out);
    out
}

/// `heddle_` and the program's name reduced to an identifier.
fn kernel_name(name: &str) -> String {
    let stem: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("heddle_{stem}")
}

fn uses_sort(b: &Block) -> bool {
    b.iter().any(|s| match s {
        Stmt::Sort { .. } => true,
        Stmt::For { body, .. } => uses_sort(body),
        Stmt::If { then, els, .. } => uses_sort(then) || uses_sort(els),
        _ => false,
    })
}

fn has_parallel(b: &Block) -> bool {
    b.iter().any(|s| match s {
        Stmt::For { schedule, body, .. } => *schedule != Schedule::Seq || has_parallel(body),
        Stmt::If { then, els, .. } => has_parallel(then) || has_parallel(els),
        _ => false,
    })
}

/// Does anything in the program have type `double`?
fn uses_f64(prog: &LoopProgram) -> bool {
    let f64_fields = |f: &[ScalarType]| f.contains(&ScalarType::F64);
    prog.args.iter().any(|a| match &a.kind {
        ArgKind::Scalar(t) => *t == ScalarType::F64,
        ArgKind::Input { fields, .. } | ArgKind::Output { fields, .. } => f64_fields(fields),
        _ => false,
    }) || block_f64(&prog.body)
}

fn block_f64(b: &Block) -> bool {
    b.iter().any(|s| match s {
        Stmt::Let { ty, value, .. } | Stmt::Var { ty, init: value, .. } => *ty == ScalarType::F64 || expr_f64(value),
        Stmt::Assign { value, .. } => expr_f64(value),
        Stmt::Store { index, value, .. } | Stmt::AddAtomic { index, value, .. } => expr_f64(index) || expr_f64(value),
        Stmt::For { lo, hi, body, .. } => expr_f64(lo) || expr_f64(hi) || block_f64(body),
        Stmt::If { cond, then, els } => expr_f64(cond) || block_f64(then) || block_f64(els),
        Stmt::Alloc { fields, .. } => fields.contains(&ScalarType::F64),
        Stmt::Check { cond, .. } => expr_f64(cond),
        Stmt::Barrier | Stmt::Sort { .. } => false,
    })
}

fn expr_f64(e: &Expr) -> bool {
    match e {
        Expr::Float(_, t) | Expr::Cast(t, _) if *t == ScalarType::F64 => true,
        Expr::Cast(_, a) | Expr::Neg(a) | Expr::Not(a) => expr_f64(a),
        Expr::Load { index, .. } => expr_f64(index),
        Expr::Bin(_, a, b) => expr_f64(a) || expr_f64(b),
        Expr::Select(c, a, b) => expr_f64(c) || expr_f64(a) || expr_f64(b),
        _ => false,
    }
}

/// Does the kernel add atomically? The 64-bit adds (`atom_add`, `atom_cmpxchg`
/// for i64/u64/f64) need `cl_khr_int64_base_atomics`; enabling it where only
/// 32-bit adds occur is harmless, and the loop IR's buffer types are not at hand here.
fn uses_int64_atomics(b: &Block) -> bool {
    b.iter().any(|s| match s {
        Stmt::AddAtomic { .. } => true,
        Stmt::For { body, .. } => uses_int64_atomics(body),
        Stmt::If { then, els, .. } => uses_int64_atomics(then) || uses_int64_atomics(els),
        _ => false,
    })
}

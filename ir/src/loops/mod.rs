//! The imperative loop IR that lowering produces and every backend consumes.
//!
//! A [`LoopProgram`] is one kernel: its arguments (naturals, scalars, flat
//! input buffers, host-precomputed buffers, the output buffer), the
//! host-side computations that run once per launch (Σ prefix sums), and a
//! body of loops, accumulators, loads and stores over flat buffers. Data
//! layout is already index arithmetic here: there are no nested arrays, no
//! tuples (a buffer element is a record of scalar *fields*), no Σ and no
//! `toNat` — only `i64` index expressions over loop variables, naturals and
//! loads.
//!
//! Types are implicit but fixed: integer and float literals carry their
//! type, loop variables and naturals are `i64`, a variable has the type of
//! its declaration, a load the type of its buffer field, arithmetic the type
//! of its operands and comparisons `bool`. [`LoopProgram::type_of`] computes
//! it; [`validate`](LoopProgram::validate) checks a program is well formed
//! before a backend sees it.
//!
//! Integer arithmetic wraps at its type. A program lowered with rewrite's
//! `LowerOptions::wrapping_i64` has signed 64-bit `+ - *` and negation only
//! for index arithmetic (positions, lengths, loop bounds), which never
//! overflows: a backend may compile it as arithmetic whose overflow is
//! undefined (OpenCL C's `long`, whose no-overflow facts clang uses in
//! address computations), since the program's own `i64` arithmetic is then
//! computed at `u64` (`(i64)((u64)a + (u64)b)`). No lowered program divides
//! `i64::MIN` by -1 (`lower::numbers`).

mod coalesce;
mod interchange;
mod narrow;
mod print;
mod trust;
mod validate;

pub use coalesce::{RUN_CHUNK, RUN_GROUP, RUN_GROUP_FIELDS, coalesce_atomic_runs, group_atomic_runs};
pub use interchange::{Interchanged, ROW_BLOCK, interchange, interchange_in_blocks, interchanged_program};
pub use narrow::{INDEX_OVERFLOW_CHECK, INDEX_OVERFLOW_MESSAGE, fitting_range, int_range, narrow_casts};
pub use print::expr as expr_text;
pub use trust::{implied_by_ranges, trusting_ranges};
pub use validate::LoopError;

use crate::nat::Nat;
use crate::{Name, ScalarType};

/// One kernel in loop form.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopProgram {
    /// A name for the kernel (from the source file).
    pub name: String,
    /// Arguments, in launch order.
    pub args: Vec<Arg>,
    /// Buffers the host computes before each launch, in order.
    pub host: Vec<HostBuffer>,
    /// The kernel body.
    pub body: Block,
    /// What each [`Stmt::Check`] guards, by id: the message the runtime
    /// reports when a check fails.
    pub checks: Vec<Check>,
    /// For a body that is one `Parallel` loop: how much work each iteration
    /// does, so the runtime can split the range into chunks of equal work
    /// rather than equal length.
    pub parallel_work: Option<ParallelWork>,
    /// Accumulators (declared by `Var`) of `reduce`s, whose operator is
    /// associative and commutative (LANGUAGE.md §5): a backend may combine
    /// their loop's contributions in any order — partial accumulators,
    /// vector lanes, a tree — provided each is assigned once per iteration
    /// as `acc = acc op e` (or `e op acc`) with `e` not reading it. The
    /// accumulators of `reduceSeq` are never listed: strictly in order.
    pub reassociable: Vec<Name>,
    /// Bounds on the values of inputs (a tensor's coordinates lie below their
    /// level's size), which a runtime may validate once before a launch; a
    /// backend may then leave out the checks they imply (see [`InputRange`]).
    pub ranges: Vec<InputRange>,
    /// Counting phases that run before this kernel, in order: each fills a
    /// count array (`count#k`, see [`crate::nat::counted`]) that this
    /// program's lengths and host prefix sums read (count → allocate → fill).
    pub counts: Vec<CountPhase>,
    /// How the host builds the kernel's result from its outputs; `None`: the
    /// one output holds the result, flat, as its type lays it out.
    pub result: Option<ResultLayout>,
    /// Where the source converts a loop index to a narrow integer (the first
    /// `generate`, whose position is an `int`): the place a failed
    /// [`INDEX_OVERFLOW_CHECK`] is reported at. `None`: no such place is
    /// known (a hand-built program), and the error has no location.
    pub index_overflow_at: Option<crate::Span>,
}

/// How a kernel's result is read back from its output buffers.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultLayout {
    /// A value of type `ty`, flat in the output `buf` (records per `record_layout`).
    Flat {
        /// The output argument.
        buf: Name,
        /// The value's type.
        ty: crate::Type,
    },
    /// A tuple, one layout per component.
    Tuple(Vec<ResultLayout>),
    /// A stored tensor (`(e : tensor<…, #ENC>)`).
    Tensor(Box<TensorLayout>),
}

/// Where a stored tensor's parts are: the entries in output buffers (the
/// fill kernel writes them in storage order), every level's positions
/// computed by the host from the list's lengths (see
/// `heddle_runtime::sparse::result`).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorLayout {
    /// How the value is stored.
    pub plan: crate::encoding::result::ResultPlan,
    /// The list's length at a dense position, over the plan's dense binders
    /// (`toNat(count#1@i)` when counted); `None` when the value has no list.
    pub list_len: Option<Nat>,
    /// Per level of `plan.entry_levels()`: the output and field holding its
    /// coordinates (the levels of an array-of-structs run share one output).
    pub coordinates: Vec<(Name, u32)>,
    /// The output holding the values, `plan.block_len()` per entry.
    pub values: Name,
    /// The annotation that stores the value: where the host's assembly of
    /// the result reports what it finds wrong (a value its type cannot
    /// hold, a level too large for `crdWidth`).
    pub span: crate::Span,
    /// Where the list's count array holds upper bounds rather than lengths
    /// (a bound phase, [`CountPhase::bound`]): the lists lie at the bounds'
    /// offsets, and the fill wrote their true lengths. `None`: the entries
    /// are in storage order, back to back.
    pub bounded: Option<BoundedLists>,
}

/// The lists of a stored tensor filled in one pass into room for upper
/// bounds on their lengths: list `f` (a dense position, row-major) starts at
/// `offsets[f]`, has `offsets[f + 1] - offsets[f]` records of room and
/// `lengths[f]` entries. The host reads each list's entries from its room,
/// so the result comes back in storage order without a second pass.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundedLists {
    /// The host prefix sum of the bounds (an [`ArgKind::Host`] argument).
    pub offsets: Name,
    /// The output the fill writes each list's length to (`i64`, one per dense position).
    pub lengths: Name,
}

/// The work of the iterations of a body's `Parallel` loop. A runtime weighs
/// an iteration as a fixed cost plus a cost per inner element (its own
/// measured model: on the CPU an empty row costs several nonzeros).
#[derive(Clone, Debug, PartialEq)]
pub struct ParallelWork {
    /// The loop variable.
    pub var: Name,
    /// How many inner elements iteration `var` works through (a CSR row's
    /// nonzeros; a SELL-8 slice's steps times its 8 lanes): an `i64`
    /// expression over `var` and the arguments.
    pub items: Expr,
    /// The sum of `items` over the iterations before `var` (from 0), when
    /// lowering found a closed form for it (CSR: `A_pos1[i] - A_pos1[0]`): a
    /// runtime can then cut the range at equal work by bisection, without
    /// visiting every iteration.
    pub before: Option<Expr>,
}

/// Every value of field `field` of input `buf` lies in `0 .. below`: what a
/// valid tensor's coordinates of one level satisfy (`A_crd1 < A_dim1` for
/// CSR). Nothing guarantees it (a storage buffer may be given directly), so
/// the program keeps the checks it implies; a runtime that has validated the
/// input against it may run code compiled without them.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRange {
    /// The input buffer.
    pub buf: Name,
    /// The field of its records.
    pub field: u32,
    /// The exclusive upper bound: an `i64` expression over the naturals.
    pub below: Expr,
}

/// A counting phase: a kernel whose output is the count array `name`.
#[derive(Clone, Debug, PartialEq)]
pub struct CountPhase {
    /// The count array (`count#1`); the main program reads it as an input of that name.
    pub name: Name,
    /// Its shape, outermost first: the lengths of the maps around the counted
    /// pattern (empty for a single count).
    pub shape: Vec<Nat>,
    /// The kernel; its output is the counts as `i64`, row-major.
    pub program: Box<LoopProgram>,
    /// The phase writes an upper bound on each count instead (the entries
    /// a co-iteration walks: the sum of its lists' lengths, read in O(1) per
    /// row), so the pattern is merged once, by the fill, into room for the
    /// bounds ([`BoundedLists`]); every array the main program reads it as
    /// is then room, never a length.
    pub bound: bool,
}

/// A run-time check of the generated code.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// Why it failed, for the user (names the array and its length).
    pub message: String,
    /// Where in the source the checked access is.
    pub span: crate::Span,
}

/// A kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// Its name (unique among arguments and locals).
    pub name: Name,
    /// What it is.
    pub kind: ArgKind,
}

/// The kinds of kernel arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgKind {
    /// A natural parameter, passed as `i64`.
    Nat,
    /// A scalar input.
    Scalar(ScalarType),
    /// A read-only input buffer of records (one field for an array of scalars);
    /// `len` is its number of records, over naturals and earlier inputs.
    Input {
        /// The record's fields.
        fields: Vec<ScalarType>,
        /// Number of records.
        len: Nat,
    },
    /// A buffer of `i64` computed on the host (see [`HostBuffer`]).
    Host,
    /// The output buffer: zero when the kernel starts (runtimes zero it before
    /// every launch of a program that [adds into it](LoopProgram::adds_into_output));
    /// the kernel stores to it or adds into it atomically, and never loads it.
    Output {
        /// The record's fields.
        fields: Vec<ScalarType>,
        /// Number of records, over naturals and inputs (evaluated by the host).
        len: Nat,
    },
}

/// A value the host computes from the inputs before the launch: a buffer
/// ([`HostKind::PrefixSum`], an [`ArgKind::Host`] argument) or a natural
/// ([`HostKind::Largest`], an [`ArgKind::Nat`] argument).
#[derive(Clone, Debug, PartialEq)]
pub struct HostBuffer {
    /// The argument it is passed as.
    pub name: Name,
    /// How to fill it.
    pub kind: HostKind,
}

/// Host computations.
#[derive(Clone, Debug, PartialEq)]
pub enum HostKind {
    /// `buf[j] = sum(var = 0 .. j - 1, body)` for `j` in `0 ..= count`: an
    /// exclusive prefix sum with `count + 1` entries, computed in one pass.
    /// This is how a Σ without a closed form is removed from the kernel
    /// (LIL's row lengths become CSR's offsets).
    PrefixSum {
        /// The summation index.
        var: Name,
        /// The summand, a natural over `var`, the naturals and the inputs.
        body: Nat,
        /// Number of terms; the buffer has `count + 1` entries.
        count: Nat,
        /// Inputs the summand reads by flat record position (`toNat(len@q)`
        /// for record `q` of a nested `len`): a Σ along one row of a nested
        /// array, re-indexed over the whole array, so that one prefix sum
        /// serves every row (a 3-level LIL's innermost lengths).
        flat: Vec<Name>,
    },
    /// The largest value of `body` as the `ranges`' variables run over
    /// `0 .. count` each (the first outermost; a count may use the variables
    /// before it), 0 where there is none: a natural the launch knows, passed
    /// as the [`ArgKind::Nat`] argument of this name, so buffers allocated
    /// before the launch may be sized by it. This is how a temporary holding
    /// one row's stream gets room for the longest row of a nested input whose
    /// row lengths only the data gives (`[i -> [T]_{toNat(o@(i + 1) - o@i)}]_n`:
    /// the largest `o@(i + 1) - o@i`), where OpenCL allocates nothing inside a
    /// kernel.
    Largest {
        /// The variables bound in `body`, each with its number of values.
        ranges: Vec<(Name, Nat)>,
        /// A natural over the variables, the naturals and the inputs.
        body: Nat,
    },
}

/// A sequence of statements.
pub type Block = Vec<Stmt>;

/// How a loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// One iteration after another.
    Seq,
    /// Iterations are independent; the CPU runtime splits the range across threads.
    Parallel,
    /// OpenCL global ids in dimension `d`.
    Global(u32),
    /// OpenCL work-groups in dimension `d`.
    Workgroup(u32),
    /// OpenCL local ids in dimension `d`.
    Local(u32),
}

/// Where a temporary buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// Private to one iteration / work-item.
    Private,
    /// Shared by a work-group.
    Local,
    /// Global memory.
    Global,
    /// A workspace: one per worker (a thread's chunk of the parallel loop on
    /// the CPU, a work-item in OpenCL), zeroed once when the worker starts.
    /// Allocated at the top of the kernel, before the parallel loop; each
    /// iteration must leave it all zero again (sparse workspaces reset the
    /// entries they touched), or clear all of it before its first use (dense
    /// ones: a `scatterAdd` or `scatter` inside a loop).
    Workspace,
}

/// Statements.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let var: ty = value` — immutable.
    Let {
        /// The variable.
        var: Name,
        /// Its type.
        ty: ScalarType,
        /// Its value.
        value: Expr,
    },
    /// `var var: ty = init` — a mutable local (an accumulator).
    Var {
        /// The variable.
        var: Name,
        /// Its type.
        ty: ScalarType,
        /// Its initial value.
        init: Expr,
    },
    /// `var = value` for a mutable local.
    Assign {
        /// The variable.
        var: Name,
        /// The new value.
        value: Expr,
    },
    /// `buf[index].field = value`.
    Store {
        /// The buffer (the output or a temporary).
        buf: Name,
        /// The record index (`i64`).
        index: Expr,
        /// The field (0 for scalar buffers).
        field: u32,
        /// The value.
        value: Expr,
    },
    /// `buf[index].field += value` as one indivisible update: iterations of a
    /// parallel loop may add to the same record (`scatterAdd` under a parallel
    /// map). Integers wrap; floats round each addition (in whatever order the
    /// iterations arrive, so a parallel float sum may differ in its last bits
    /// from a sequential one).
    AddAtomic {
        /// The buffer (the output or a temporary).
        buf: Name,
        /// The record index (`i64`).
        index: Expr,
        /// The field (0 for scalar buffers).
        field: u32,
        /// The addend, of the field's type.
        value: Expr,
    },
    /// `for var in lo .. hi` (exclusive), `var: i64`.
    For {
        /// The loop variable.
        var: Name,
        /// First value.
        lo: Expr,
        /// One past the last value.
        hi: Expr,
        /// How iterations run.
        schedule: Schedule,
        /// The body.
        body: Block,
    },
    /// `if cond { then } else { els }`.
    If {
        /// A `bool` condition.
        cond: Expr,
        /// When true.
        then: Block,
        /// When false.
        els: Block,
    },
    /// A temporary buffer of `len` records.
    Alloc {
        /// Its name.
        buf: Name,
        /// The record's fields.
        fields: Vec<ScalarType>,
        /// Number of records (`i64`).
        len: Expr,
        /// Where it lives.
        space: Space,
    },
    /// Sorts records `lo .. lo + len` of `buf` (a temporary of one `i64`
    /// field) in increasing order: the compress step of a sparse workspace.
    Sort {
        /// The buffer.
        buf: Name,
        /// The first record (`i64`).
        lo: Expr,
        /// How many records (`i64`).
        len: Expr,
    },
    /// A work-group barrier (OpenCL local memory fence).
    Barrier,
    /// If `cond` is false, the kernel stops and reports `checks[id]`. Guards
    /// data-dependent indices (`xs@col`) that validation up front cannot rule out.
    Check {
        /// Must hold.
        cond: Expr,
        /// Index into [`LoopProgram::checks`].
        id: u32,
    },
}

/// Binary operators of loop code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Truncating division for integers (C semantics), IEEE for floats.
    Div,
    /// Remainder with the sign of the dividend (C semantics).
    Rem,
    Min,
    Max,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    /// Comparison (result `bool`)?
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }
    /// Its C spelling (`min`/`max` are calls).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

/// Expressions of loop code.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An integer of the given integer type.
    Int(i64, ScalarType),
    /// A float of the given float type.
    Float(f64, ScalarType),
    /// A boolean.
    Bool(bool),
    /// A local, a loop variable, a natural or a scalar argument.
    Var(Name),
    /// `buf[index].field`.
    Load {
        /// The buffer.
        buf: Name,
        /// The record index (`i64`).
        index: Box<Expr>,
        /// The field.
        field: u32,
    },
    /// `a op b`; both operands have the same type.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// Arithmetic negation.
    Neg(Box<Expr>),
    /// Logical not.
    Not(Box<Expr>),
    /// `c ? a : b`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A conversion to another scalar type.
    Cast(ScalarType, Box<Expr>),
}

impl Expr {
    /// An `i64` literal (indices, naturals).
    pub fn index(v: i64) -> Expr {
        Expr::Int(v, ScalarType::I64)
    }
    /// A variable.
    pub fn var(n: impl Into<Name>) -> Expr {
        Expr::Var(n.into())
    }
    /// `a op b`.
    pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }
    /// `buf[index].field`.
    pub fn load(buf: impl Into<Name>, index: Expr, field: u32) -> Expr {
        Expr::Load { buf: buf.into(), index: Box::new(index), field }
    }

    /// The direct subexpressions, left to right.
    pub fn children(&self) -> impl Iterator<Item = &Expr> {
        let (a, b, c): (Option<&Expr>, Option<&Expr>, Option<&Expr>) = match self {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => (None, None, None),
            Expr::Load { index, .. } => (Some(index), None, None),
            Expr::Bin(_, x, y) => (Some(x), Some(y), None),
            Expr::Neg(x) | Expr::Not(x) | Expr::Cast(_, x) => (Some(x), None, None),
            Expr::Select(p, x, y) => (Some(p), Some(x), Some(y)),
        };
        a.into_iter().chain(b).chain(c)
    }

    /// Whether `pred` holds for this expression or any expression inside it
    /// (pre-order, stopping at the first that does). Every analysis of which
    /// names an expression reads goes through here, so a new variant of
    /// `Expr` needs handling in [`Expr::children`] only.
    pub fn any(&self, pred: &mut dyn FnMut(&Expr) -> bool) -> bool {
        pred(self) || self.children().any(|c| c.any(pred))
    }

    /// Whether the expression reads a variable (not a buffer) in `names`.
    pub fn reads_var_in(&self, names: &std::collections::HashSet<Name>) -> bool {
        self.any(&mut |e| matches!(e, Expr::Var(v) if names.contains(v)))
    }

    /// Whether the expression reads the variable `name`.
    pub fn reads_var(&self, name: &Name) -> bool {
        self.any(&mut |e| matches!(e, Expr::Var(v) if v == name))
    }

    /// Whether the expression loads from a buffer for which `pred` holds.
    pub fn loads_from(&self, pred: &mut dyn FnMut(&Name) -> bool) -> bool {
        self.any(&mut |e| matches!(e, Expr::Load { buf, .. } if pred(buf)))
    }

    /// Adds every name the expression mentions (variables and buffers) to `out`.
    pub fn collect_names(&self, out: &mut std::collections::HashSet<Name>) {
        self.any(&mut |e| {
            match e {
                Expr::Var(n) | Expr::Load { buf: n, .. } => {
                    out.insert(n.clone());
                }
                _ => {}
            }
            false
        });
    }
}

impl LoopProgram {
    /// The argument named `name`.
    pub fn arg(&self, name: &Name) -> Option<&Arg> {
        self.args.iter().find(|a| &a.name == name)
    }

    /// The (first) output argument.
    pub fn output(&self) -> Option<&Arg> {
        self.args.iter().find(|a| matches!(a.kind, ArgKind::Output { .. }))
    }

    /// The positions of the output arguments among the arguments.
    pub fn output_slots(&self) -> Vec<usize> {
        self.args.iter().enumerate().filter(|(_, a)| matches!(a.kind, ArgKind::Output { .. })).map(|(k, _)| k).collect()
    }

    /// Does the kernel accumulate into an output (`AddAtomic`)? Then its
    /// outputs must be zero at every launch, also when a launch is repeated.
    pub fn adds_into_output(&self) -> bool {
        fn any(b: &Block, out: &Name) -> bool {
            b.iter().any(|s| match s {
                Stmt::AddAtomic { buf, .. } => buf == out,
                Stmt::For { body, .. } => any(body, out),
                Stmt::If { then, els, .. } => any(then, out) || any(els, out),
                _ => false,
            })
        }
        self.args.iter().any(|a| matches!(a.kind, ArgKind::Output { .. }) && any(&self.body, &a.name))
    }

    /// The type of `e` in `env` (see [`TypeEnv`]).
    pub fn type_of(&self, e: &Expr, env: &TypeEnv) -> Option<ScalarType> {
        Some(match e {
            Expr::Int(_, t) | Expr::Float(_, t) | Expr::Cast(t, _) => *t,
            Expr::Bool(_) => ScalarType::Bool,
            Expr::Var(v) => env.var(v)?,
            Expr::Load { buf, field, .. } => *env.buffer(buf)?.get(*field as usize)?,
            Expr::Bin(op, a, _) => {
                if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
                    ScalarType::Bool
                } else {
                    self.type_of(a, env)?
                }
            }
            Expr::Neg(a) => self.type_of(a, env)?,
            Expr::Not(_) => ScalarType::Bool,
            Expr::Select(_, a, _) => self.type_of(a, env)?,
        })
    }

    /// The type environment at the start of the body: the arguments.
    pub fn arg_env(&self) -> TypeEnv {
        let mut env = TypeEnv::default();
        for a in &self.args {
            match &a.kind {
                ArgKind::Nat => env.declare_var(a.name.clone(), ScalarType::I64),
                ArgKind::Scalar(t) => env.declare_var(a.name.clone(), *t),
                ArgKind::Input { fields, .. } | ArgKind::Output { fields, .. } => {
                    env.declare_buffer(a.name.clone(), fields.clone())
                }
                ArgKind::Host => env.declare_buffer(a.name.clone(), vec![ScalarType::I64]),
            }
        }
        env
    }
}

/// The types of the variables and buffers in scope at a point of a body.
/// Backends extend it as they walk (`Let`, `Var`, `For`, `Alloc`).
#[derive(Clone, Debug, Default)]
pub struct TypeEnv {
    vars: Vec<(Name, ScalarType)>,
    buffers: Vec<(Name, Vec<ScalarType>)>,
}

impl TypeEnv {
    /// Declares a scalar variable.
    pub fn declare_var(&mut self, name: Name, ty: ScalarType) {
        self.vars.push((name, ty));
    }
    /// Declares a buffer of records.
    pub fn declare_buffer(&mut self, name: Name, fields: Vec<ScalarType>) {
        self.buffers.push((name, fields));
    }
    /// The type of a variable.
    pub fn var(&self, name: &Name) -> Option<ScalarType> {
        self.vars.iter().rev().find(|(n, _)| n == name).map(|(_, t)| *t)
    }
    /// The fields of a buffer.
    pub fn buffer(&self, name: &Name) -> Option<&[ScalarType]> {
        self.buffers.iter().rev().find(|(n, _)| n == name).map(|(_, f)| f.as_slice())
    }
    /// A mark to return to with [`truncate`](TypeEnv::truncate) when a scope ends.
    pub fn mark(&self) -> (usize, usize) {
        (self.vars.len(), self.buffers.len())
    }
    /// Forgets everything declared since `mark`.
    pub fn truncate(&mut self, mark: (usize, usize)) {
        self.vars.truncate(mark.0);
        self.buffers.truncate(mark.1);
    }
}

/// The memory layout of a buffer record: C struct rules (each field aligned
/// to its size, the record padded to its largest field), which is also what
/// OpenCL C and `.npy` structured dtypes with `align=True` use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordLayout {
    /// Byte offset of each field.
    pub offsets: Vec<usize>,
    /// Bytes from one record to the next.
    pub size: usize,
    /// Alignment of the record.
    pub align: usize,
}

/// The layout of a record with these fields.
pub fn record_layout(fields: &[ScalarType]) -> RecordLayout {
    let mut offsets = Vec::with_capacity(fields.len());
    let mut at: usize = 0;
    let mut align: usize = 1;
    for f in fields {
        let s = f.size_bytes();
        at = at.div_ceil(s) * s;
        offsets.push(at);
        at += s;
        align = align.max(s);
    }
    RecordLayout { offsets, size: at.div_ceil(align) * align, align }
}

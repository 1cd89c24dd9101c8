//! Where the work-items of a group must wait for each other: barrier
//! placement on a loop program with explicit schedules (`normalize`).
//!
//! **Model.** Every work-item runs the kernel body. `Local(d)` / `Global(d)`
//! loops deal their iterations out to work-items; everything else runs on
//! every item of the group (`Workgroup` loops run the same iterations on all
//! items of a group). `__local` buffers are shared by the group, so an item
//! that reads an element another item wrote — or overwrites an element
//! another item still reads — must be separated from it by a barrier.
//!
//! **Placement.** Statements are walked in order, block by block, keeping the
//! accesses to local buffers made since the last barrier (*pending*). Before
//! a statement whose accesses conflict with a pending one (write/read,
//! read/write or write/write of one buffer), a barrier is inserted at the
//! level of that statement, the outermost point between the two accesses.
//! Conflicts inside a statement are resolved by the same walk of its body,
//! and a `Seq` or `Workgroup` loop whose iterations conflict with each other
//! (an iteration's accesses against the next one's) ends its body with a
//! barrier. Iterations of a `Local` / `Global` loop never conflict: they are
//! the independent iterations of a `map`, each with its own part of any
//! local buffer.
//!
//! **Who makes an access.** Per NDRange dimension that has work-items, an
//! access is made by the item a loop around the current block deals the
//! iteration to (the same item for every statement of the block); by the
//! item a loop *inside* the statement deals iteration `v` to; or, where no
//! loop distributes the dimension, redundantly by all items of it (stores
//! then by the one with id 0, see `emit.rs`). Two accesses by the same item
//! in every dimension are ordered by program order and need no barrier.
//! For a loop inside the statement the item is known when the access indexes
//! the buffer with `v + u`: two such accesses in loops with the same
//! schedule and bounds and the same `u` (an expression of variables bound
//! outside both) are by the same item (`mapLocal(f) :>> toLocal :>>
//! mapLocal(g)` where `g` reads its own element).
//!
//! **Redundant barriers** are never inserted: none where nothing is pending
//! since the previous one, none between accesses by the same item. Barriers
//! already in the input are dropped and placed afresh the same way.
//!
//! The emitter makes every barrier reachable by all items of a group (see
//! `emit.rs`: loops that contain one run in lock-step rounds, conditions
//! around one become predicates); that requires the bounds of every loop
//! around a barrier to be the same on all items of a group, which it checks.

use heddle_ir::Name;
use heddle_ir::loops::{BinOp, Block, Expr, Schedule, Space, Stmt};
use std::collections::{HashMap, HashSet};

/// Inserts the barriers `body` needs and drops redundant ones (see the module docs).
pub(crate) fn place(body: Block) -> Block {
    let mut shared = HashSet::new();
    local_buffers(&body, &mut shared);
    let mutable = mutable_vars(&body);
    let mut dims = Vec::new();
    item_dims(&body, &mut dims);
    dims.sort_unstable();
    let placer = Placer { shared, mutable, dims };
    placer.block(body, Vec::new(), &[]).0
}

/// Does `b` contain a barrier (at any depth)?
pub(crate) fn contains_barrier(b: &[Stmt]) -> bool {
    b.iter().any(|s| match s {
        Stmt::Barrier => true,
        Stmt::For { body, .. } => contains_barrier(body),
        Stmt::If { then, els, .. } => contains_barrier(then) || contains_barrier(els),
        _ => false,
    })
}

/// An access to a shared buffer.
#[derive(Clone, Debug, PartialEq)]
struct Access {
    buf: Name,
    write: bool,
    /// Who makes it, per dimension of `Placer::dims`.
    who: Vec<Who>,
}

/// Which work-items of one NDRange dimension make an access (module docs).
#[derive(Clone, Debug, PartialEq)]
enum Who {
    /// The item a loop around the current block deals its iteration to.
    Outer,
    /// The item a loop inside the statement deals iteration `v` to, where known.
    Inner(Option<Item>),
    /// Every item of the dimension (stores: the one with id 0).
    All,
}

/// "Iteration `v` of a loop with this schedule and these bounds, at `v + rest`".
#[derive(Clone, Debug, PartialEq)]
struct Item {
    schedule: Schedule,
    lo: Expr,
    hi: Expr,
    /// The other terms of the index, in a canonical order.
    rest: Vec<Expr>,
}

impl Item {
    fn mentions(&self, names: &HashSet<Name>) -> bool {
        [&self.lo, &self.hi].into_iter().chain(&self.rest).any(|e| e.reads_var_in(names))
    }
}

struct Placer {
    shared: HashSet<Name>,
    /// Mutable locals: an index or bound over one may differ between two accesses.
    mutable: HashSet<Name>,
    /// The NDRange dimensions with work-items (some `Local` / `Global` loop uses them).
    dims: Vec<u32>,
}

/// Are two accesses certainly made by the same work-item?
fn same_item(a: &Access, b: &Access) -> bool {
    a.who.iter().zip(&b.who).all(|(x, y)| match (x, y) {
        (Who::Outer, Who::Outer) => true,
        (Who::Inner(Some(p)), Who::Inner(Some(q))) => p == q,
        // Stores by all items are made by the item with id 0 only.
        (Who::All, Who::All) => a.write && b.write,
        _ => false,
    })
}

fn conflicts(pending: &[Access], next: &[Access]) -> bool {
    pending.iter().any(|p| next.iter().any(|a| p.buf == a.buf && (p.write || a.write) && !same_item(p, a)))
}

fn add(pending: &mut Vec<Access>, more: Vec<Access>) {
    for a in more {
        if !pending.contains(&a) {
            pending.push(a);
        }
    }
}

/// Forgets which item made an access where its description mentions `names`
/// (variables going out of scope, or changing from one iteration to the next).
fn strip(accesses: Vec<Access>, names: &HashSet<Name>) -> Vec<Access> {
    accesses
        .into_iter()
        .map(|mut a| {
            for w in &mut a.who {
                if let Who::Inner(Some(item)) = w
                    && item.mentions(names)
                {
                    *w = Who::Inner(None);
                }
            }
            a
        })
        .collect()
}

impl Placer {
    /// Places barriers in `b`, entered with `pending` accesses; the block and
    /// the accesses pending at its end.
    /// `outer`: the dimensions that loops around `b` distribute.
    fn block(&self, b: Block, mut pending: Vec<Access>, outer: &[u32]) -> (Block, Vec<Access>) {
        let mut out = Block::with_capacity(b.len());
        for s in b {
            if let Stmt::Barrier = s {
                // Barriers already in the program are placed afresh: those
                // needed come back where they order something.
                continue;
            }
            let accesses = self.summary(std::slice::from_ref(&s), outer);
            if conflicts(&pending, &accesses) {
                out.push(Stmt::Barrier);
                pending.clear();
            }
            // From here on nothing pending conflicts with `s` (the check above
            // covers every access inside it), so its body starts with nothing
            // pending and only its own conflicts remain.
            let s = match s {
                Stmt::For { var, lo, hi, schedule, body } => {
                    let inside = declared_in(&body, Some(&var));
                    let mut inner = outer.to_vec();
                    let dim = item_dim(schedule);
                    inner.extend(dim);
                    let (mut body, exit) = self.block(body, Vec::new(), &inner);
                    let exit = self.lift(strip(exit, &inside), dim);
                    let carried = matches!(schedule, Schedule::Seq | Schedule::Workgroup(_))
                        && conflicts(&exit, &strip(self.summary(&body, outer), &inside));
                    if carried {
                        // The next iteration's accesses against this one's.
                        body.push(Stmt::Barrier);
                    } else if contains_barrier(&body) {
                        add(&mut pending, exit);
                    } else {
                        // All of the loop's accesses, described from here (more precisely).
                        add(&mut pending, accesses);
                    }
                    Stmt::For { var, lo, hi, schedule, body }
                }
                Stmt::If { cond, then, els } => {
                    let (then, after_then) = self.block(then, Vec::new(), outer);
                    let (els, after_els) = self.block(els, Vec::new(), outer);
                    if contains_barrier(&then) || contains_barrier(&els) {
                        add(&mut pending, strip(after_then, &declared_in(&then, None)));
                        add(&mut pending, strip(after_els, &declared_in(&els, None)));
                    } else {
                        add(&mut pending, accesses);
                    }
                    Stmt::If { cond, then, els }
                }
                other => {
                    add(&mut pending, accesses);
                    other
                }
            };
            out.push(s);
        }
        (out, pending)
    }

    /// Accesses pending at the end of a loop body, seen from outside the
    /// loop: the loop's own dimension is no longer an enclosing one.
    fn lift(&self, accesses: Vec<Access>, dim: Option<u32>) -> Vec<Access> {
        let Some(k) = dim.and_then(|d| self.dims.iter().position(|x| *x == d)) else { return accesses };
        accesses
            .into_iter()
            .map(|mut a| {
                if a.who[k] == Who::Outer {
                    a.who[k] = Who::Inner(None);
                }
                a
            })
            .collect()
    }

    /// Every shared access in `b`, with who makes it (in terms of variables
    /// bound outside `b`); `outer` as for [`Placer::block`].
    fn summary(&self, b: &[Stmt], outer: &[u32]) -> Vec<Access> {
        let mut out = Vec::new();
        let mut walk =
            Walk { placer: self, outer, lets: HashMap::new(), loops: Vec::new(), inner: HashSet::new(), out: &mut out };
        walk.block(b);
        out
    }
}

/// The dimension a per-item loop distributes.
fn item_dim(s: Schedule) -> Option<u32> {
    match s {
        Schedule::Local(d) | Schedule::Global(d) => Some(d),
        _ => None,
    }
}

fn item_dims(b: &[Stmt], out: &mut Vec<u32>) {
    for s in b {
        match s {
            Stmt::For { schedule, body, .. } => {
                if let Some(d) = item_dim(*schedule)
                    && !out.contains(&d)
                {
                    out.push(d);
                }
                item_dims(body, out);
            }
            Stmt::If { then, els, .. } => {
                item_dims(then, out);
                item_dims(els, out);
            }
            _ => {}
        }
    }
}

/// The state of one summary walk.
struct Walk<'a> {
    placer: &'a Placer,
    /// Dimensions distributed by loops around the walked statements.
    outer: &'a [u32],
    /// `let`s seen so far in the walk: indices are compared with them inlined.
    lets: HashMap<Name, Expr>,
    /// Enclosing loops inside the walked statements: (variable, schedule, lo, hi).
    loops: Vec<(Name, Schedule, Expr, Expr)>,
    /// Variables bound inside the walked statements (not inlined).
    inner: HashSet<Name>,
    out: &'a mut Vec<Access>,
}

impl Walk<'_> {
    fn block(&mut self, b: &[Stmt]) {
        for s in b {
            match s {
                Stmt::Let { var, value, .. } => {
                    self.expr(value);
                    let inlined = self.inline(value);
                    self.lets.insert(var.clone(), inlined);
                }
                Stmt::Var { var, init, .. } => {
                    self.expr(init);
                    self.inner.insert(var.clone());
                }
                Stmt::Assign { value, .. } => self.expr(value),
                Stmt::Store { buf, index, value, .. } | Stmt::AddAtomic { buf, index, value, .. } => {
                    self.expr(index);
                    self.expr(value);
                    self.access(buf, index, true);
                }
                Stmt::For { var, lo, hi, schedule, body } => {
                    self.expr(lo);
                    self.expr(hi);
                    self.inner.insert(var.clone());
                    self.loops.push((var.clone(), *schedule, lo.clone(), hi.clone()));
                    self.block(body);
                    self.loops.pop();
                }
                Stmt::If { cond, then, els } => {
                    self.expr(cond);
                    self.block(then);
                    self.block(els);
                }
                Stmt::Check { cond, .. } => self.expr(cond),
                Stmt::Sort { buf, lo, len } => {
                    self.expr(lo);
                    self.expr(len);
                    if self.placer.shared.contains(buf) {
                        let who = self.placer.dims.iter().map(|_| Who::Inner(None)).collect();
                        self.out.push(Access { buf: buf.clone(), write: true, who });
                    }
                }
                Stmt::Alloc { len, .. } => self.expr(len),
                Stmt::Barrier => {}
            }
        }
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Load { buf, index, .. } => {
                self.expr(index);
                self.access(buf, index, false);
            }
            Expr::Bin(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => self.expr(a),
            Expr::Select(c, a, b) => {
                self.expr(c);
                self.expr(a);
                self.expr(b);
            }
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) => {}
        }
    }

    fn access(&mut self, buf: &Name, index: &Expr, write: bool) {
        if !self.placer.shared.contains(buf) {
            return;
        }
        let who = self.placer.dims.iter().map(|d| self.who(*d, index)).collect();
        let a = Access { buf: buf.clone(), write, who };
        if !self.out.contains(&a) {
            self.out.push(a);
        }
    }

    /// Who makes an access at `index` in dimension `d` (see [`Who`]).
    fn who(&self, d: u32, index: &Expr) -> Who {
        let Some((v, schedule, lo, hi)) = self.loops.iter().rev().find(|(_, s, _, _)| item_dim(*s) == Some(d)) else {
            return if self.outer.contains(&d) { Who::Outer } else { Who::All };
        };
        let index = self.inline(index);
        let mut terms = Vec::new();
        sum_terms(&index, &mut terms);
        let Some(at) = terms.iter().position(|t| is_var(t, v)) else { return Who::Inner(None) };
        terms.remove(at);
        let unstable = |e: &Expr| {
            e.reads_var_in(&self.inner)
                || e.reads_var_in(&self.placer.mutable)
                || e.loads_from(&mut |b| self.placer.shared.contains(b))
        };
        if terms.iter().any(unstable) || unstable(lo) || unstable(hi) {
            return Who::Inner(None);
        }
        terms.sort_by_cached_key(|t| format!("{t:?}"));
        Who::Inner(Some(Item { schedule: *schedule, lo: lo.clone(), hi: hi.clone(), rest: terms }))
    }

    /// `e` with the walk's `let`s substituted.
    fn inline(&self, e: &Expr) -> Expr {
        match e {
            Expr::Var(v) => self.lets.get(v).cloned().unwrap_or_else(|| e.clone()),
            Expr::Load { buf, index, field } => {
                Expr::Load { buf: buf.clone(), index: Box::new(self.inline(index)), field: *field }
            }
            Expr::Bin(op, a, b) => Expr::bin(*op, self.inline(a), self.inline(b)),
            Expr::Neg(a) => Expr::Neg(Box::new(self.inline(a))),
            Expr::Not(a) => Expr::Not(Box::new(self.inline(a))),
            Expr::Cast(t, a) => Expr::Cast(*t, Box::new(self.inline(a))),
            Expr::Select(c, a, b) => {
                Expr::Select(Box::new(self.inline(c)), Box::new(self.inline(a)), Box::new(self.inline(b)))
            }
            other => other.clone(),
        }
    }
}

/// The terms of a sum (`a + (b + c)` → a, b, c); casts between integer types are looked through.
fn sum_terms(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Bin(BinOp::Add, a, b) => {
            sum_terms(a, out);
            sum_terms(b, out);
        }
        Expr::Cast(t, a) if t.is_int() => sum_terms(a, out),
        other => out.push(other.clone()),
    }
}

fn is_var(e: &Expr, v: &Name) -> bool {
    match e {
        Expr::Var(x) => x == v,
        Expr::Cast(t, a) if t.is_int() => is_var(a, v),
        _ => false,
    }
}

/// Variables bound in `b` (and the loop variable `var`): they are new in
/// every iteration, so what was proved with them does not carry over.
fn declared_in(b: &[Stmt], var: Option<&Name>) -> HashSet<Name> {
    fn go(b: &[Stmt], out: &mut HashSet<Name>) {
        for s in b {
            match s {
                Stmt::Let { var, .. } | Stmt::Var { var, .. } => {
                    out.insert(var.clone());
                }
                Stmt::For { var, body, .. } => {
                    out.insert(var.clone());
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
    let mut out = HashSet::new();
    go(b, &mut out);
    out.extend(var.cloned());
    out
}

fn local_buffers(b: &[Stmt], out: &mut HashSet<Name>) {
    for s in b {
        match s {
            Stmt::Alloc { buf, space: Space::Local, .. } => {
                out.insert(buf.clone());
            }
            Stmt::For { body, .. } => local_buffers(body, out),
            Stmt::If { then, els, .. } => {
                local_buffers(then, out);
                local_buffers(els, out);
            }
            _ => {}
        }
    }
}

/// The program's mutable locals (`var`s).
pub(crate) fn mutable_vars(b: &[Stmt]) -> HashSet<Name> {
    fn go(b: &[Stmt], out: &mut HashSet<Name>) {
        for s in b {
            match s {
                Stmt::Var { var, .. } => {
                    out.insert(var.clone());
                }
                Stmt::For { body, .. } => go(body, out),
                Stmt::If { then, els, .. } => {
                    go(then, out);
                    go(els, out);
                }
                _ => {}
            }
        }
    }
    let mut out = HashSet::new();
    go(b, &mut out);
    out
}

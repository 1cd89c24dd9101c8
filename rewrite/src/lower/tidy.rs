//! Clean-up of a lowered loop program: bounds checks an index provably
//! satisfies are dropped, and loop-invariant `let`s are hoisted.
//!
//! Lowering is local: indexing a view emits `check 0 <= k < len` and binds a
//! sub-array's start wherever the element is reached, so the view of a tensor
//! parameter (`generate` over rows, `generate` over a row's entries) checks
//! every position it produced itself and recomputes a row's start for each
//! entry. Both are removed here, on the finished program, where the facts are
//! plain:
//!
//! - **Ranges.** A loop `for v in 0 .. hi` gives `0 <= v < hi` inside it. A
//!   `let` that renames a variable (`let A_i: int = (int) i`, `let idx: i64 =
//!   (i64) A_i`) has its range. A check `k >= 0 && k < len` is dropped when `k`
//!   has a range `0 .. hi` and `hi` and `len` are the same expression once the
//!   renamings are undone, or `len` is `hi + c` for a constant `c >= 0` (a
//!   row's index into its positions row of `rows + 1`). Casts to 32-bit indices are taken as exact: a
//!   `generate` index is an `int`, so lengths beyond 2^31 are outside what the
//!   language's index type can express anyway.
//! - **Guards.** Inside `if v < hi && …`, where `v` is a loop variable or a
//!   *counter* (a `var` that starts at 0 and only ever grows by a constant,
//!   or by one of two chosen by a `select`: a branch-free merge's cursor),
//!   `0 <= v < hi` holds until `v` is assigned again: a co-iteration's cursors
//!   are checked by the loop condition that guards their use.
//! - **Positions.** A check `lo + v >= 0 && lo + v < len`, where `v` is a
//!   loop variable of `0 .. hi - lo` and `lo`, `hi` are values of a positions
//!   buffer whose values binding keeps in `0 ..= len`
//!   ([`BoundedPositions`]), is dropped: `0 <= lo + v < hi <= len`. It is a
//!   child position in the flat rows below a loose or batched level (`A_q`),
//!   checked once per entry otherwise.
//! - **Repeats.** A check whose condition, renamings undone, is the one of a
//!   check already made in an enclosing block (or earlier in the same one), or
//!   is true whatever the inputs (`0 >= 0 && 0 < 2`), is
//!   dropped: a failed check stops the kernel, so past it the condition holds.
//!   Conditions that mention a mutable local are never taken as repeated.
//! - **Hoisting.** A `let` at the head of a loop body (before any check, store
//!   or nested statement, so nothing inside the loop guards it) whose value
//!   uses only variables bound outside the loop, reads only buffers the kernel
//!   never writes, and cannot fault (no division) moves in front of the loop.
//!   Executing it when the loop runs zero times is harmless. An invariant
//!   check at the head moves in front of the loop too, under `if lo < hi`
//!   (it fails exactly when the first iteration's would); `let`s after it stay.
//!   An invariant `let` further in, inside `if`s of the body (not nested
//!   loops), moves too when every load it makes is in bounds wherever it
//!   runs: a load an earlier statement outside the loop always made (the
//!   same buffer and index, renamings undone), or a constant index below the
//!   input's least length (`A_pos1[0]` of an `A_dim0 + 1` buffer). A
//!   co-iteration reads a row's start in every branch of every step.
//! - **Sharing.** A `let` whose stable value (immutable names, buffers
//!   nothing writes) a `let` in scope already computes becomes a renaming of
//!   it: a row's start read for the coordinates and again for the values.

use super::ranges::BoundedPositions;
use heddle_ir::loops::{ArgKind, BinOp, Block, Expr as L, LoopProgram, Stmt};
use heddle_ir::nat::NatOp;
use heddle_ir::{Name, Nat, ScalarType};
use std::collections::{HashMap, HashSet};

/// Drops provable checks and hoists invariant `let`s, in place; `bounded`
/// are the positions buffers whose values binding keeps in range.
pub fn tidy(prog: &mut LoopProgram, bounded: &[BoundedPositions]) {
    let mut written = HashSet::new();
    stored_buffers(&prog.body, &mut written);
    let mut mutable = HashSet::new();
    mutated(&prog.body, &mut mutable);
    let counters = counters(&prog.body, &mutable);
    // The records every input surely has: a read of a constant index below is in bounds.
    let least = prog
        .args
        .iter()
        .filter_map(|a| match &a.kind {
            ArgKind::Input { len, .. } => least_value(len).map(|n| (a.name.clone(), n)),
            _ => None,
        })
        .collect();
    let mut cx = Tidy {
        aliases: HashMap::new(),
        defs: HashMap::new(),
        ranges: HashMap::new(),
        written,
        mutable,
        counters,
        checked: Vec::new(),
        loaded: Vec::new(),
        values: Vec::new(),
        least,
        bounded: bounded.to_vec(),
    };
    let body = std::mem::take(&mut prog.body);
    prog.body = cx.block(body);
}

struct Tidy {
    /// `let x = v` or `let x = (t) v` for an integer `t`: x stands for v.
    aliases: HashMap<Name, L>,
    /// Loop variables: their exclusive upper bound (the lower bound is 0).
    ranges: HashMap<Name, L>,
    /// Buffers some statement stores to (outputs, temporaries).
    written: HashSet<Name>,
    /// Mutable locals (`var`s): a condition over one may change.
    mutable: HashSet<Name>,
    /// `var`s that start at 0 and only grow by constants (never negative).
    counters: HashSet<Name>,
    /// Immutable `let`s whose values read only what nothing writes: comparable by value.
    defs: HashMap<Name, L>,
    /// Conditions (renamings undone) of the checks in force here.
    checked: Vec<L>,
    /// Loads (renamings undone, over immutable names) that the statements
    /// before this point, in this block and the enclosing ones, always made:
    /// the same load made again here is in bounds.
    loaded: Vec<L>,
    /// The values (renamings undone) of the stable `let`s in scope, with their
    /// type and name: a second `let` of one of them becomes a renaming.
    values: Vec<(L, ScalarType, Name)>,
    /// The least number of records of each input buffer whose length has one.
    least: HashMap<Name, i64>,
    /// Positions buffers whose values lie in `0 ..= at_most`.
    bounded: Vec<BoundedPositions>,
}

impl Tidy {
    fn block(&mut self, body: Block) -> Block {
        let (in_force, made, known) = (self.checked.len(), self.loaded.len(), self.values.len());
        let out = self.block_inner(body);
        self.checked.truncate(in_force);
        self.loaded.truncate(made);
        self.values.truncate(known);
        out
    }

    fn block_inner(&mut self, body: Block) -> Block {
        let mut out = Block::with_capacity(body.len());
        for s in body {
            match s {
                Stmt::Let { var, ty, value } => out.push(self.bind(var, ty, value)),
                Stmt::Assign { var, value } => {
                    // A counter that moves no longer satisfies the guard it was checked by.
                    if self.counters.contains(&var) {
                        self.ranges.remove(&var);
                    }
                    out.push(Stmt::Assign { var, value });
                }
                Stmt::Check { cond, id } => {
                    let canon = self.canon(&cond);
                    // A check of constants (`idx >= 0 && idx < 3` with `idx = 0`)
                    // always passes: the OpenCL compilers warn about it.
                    let repeated = self.checked.contains(&canon) || constant(&self.expand(&canon, 0)) == Some(1);
                    if !repeated && !self.provable(&cond) {
                        if !canon.reads_var_in(&self.mutable) {
                            self.checked.push(canon);
                        }
                        out.push(Stmt::Check { cond, id });
                    }
                }
                Stmt::For { var, lo, hi, schedule, body } => {
                    if lo == L::index(0) {
                        self.ranges.insert(var.clone(), hi.clone());
                    }
                    let body = self.block(body);
                    let mut moved = HashSet::new();
                    mutated(&body, &mut moved);
                    self.ranges.retain(|v, _| !(moved.contains(v) && self.counters.contains(v)));
                    let (hoisted, body) = self.hoist(&var, &lo, &hi, body);
                    // Now in this block: a value hoisted from two branches is computed once.
                    for s in hoisted {
                        out.push(match s {
                            Stmt::Let { var, ty, value } => self.bind(var, ty, value),
                            other => other,
                        });
                    }
                    out.push(Stmt::For { var, lo, hi, schedule, body });
                }
                Stmt::If { cond, then, els } => {
                    let mut guarded = Vec::new();
                    for (v, hi) in self.guards(&cond) {
                        guarded.push((v.clone(), self.ranges.insert(v, hi)));
                    }
                    let then = self.block(then);
                    for (v, before) in guarded.into_iter().rev() {
                        match before {
                            Some(hi) => self.ranges.insert(v, hi),
                            None => self.ranges.remove(&v),
                        };
                    }
                    let els = self.block(els);
                    // Counters assigned inside lose their facts here too.
                    let mut moved = HashSet::new();
                    mutated(&then, &mut moved);
                    mutated(&els, &mut moved);
                    self.ranges.retain(|v, _| !(moved.contains(v) && self.counters.contains(v)));
                    out.push(Stmt::If { cond, then, els });
                }
                other => out.push(other),
            }
        }
        out
    }

    /// A `let` reached in order: a renaming is noted, and a stable value
    /// already bound in scope (a row's start, read for the coordinates and
    /// again for the values) becomes a renaming of that `let`.
    fn bind(&mut self, var: Name, ty: ScalarType, value: L) -> Stmt {
        if let Some(v) = renaming(&value, ty) {
            self.aliases.insert(var.clone(), v);
            return Stmt::Let { var, ty, value };
        }
        if self.stable(&value) {
            let canon = self.canon(&value);
            if let Some((_, _, same)) = self.values.iter().find(|(v, t, _)| *v == canon && *t == ty) {
                let same = L::Var(same.clone());
                if let Some(v) = renaming(&same, ty) {
                    self.aliases.insert(var.clone(), v);
                }
                return Stmt::Let { var, ty, value: same };
            }
            self.defs.insert(var.clone(), value.clone());
            if !matches!(canon, L::Var(_) | L::Int(..) | L::Float(..) | L::Bool(_)) {
                self.values.push((canon, ty, var.clone()));
            }
        }
        self.record_loads(&value);
        Stmt::Let { var, ty, value }
    }

    /// `e` with renamings undone (to compare bounds).
    fn canon(&self, e: &L) -> L {
        match e {
            L::Var(v) => match self.aliases.get(v) {
                Some(to) => self.canon(to),
                None => e.clone(),
            },
            L::Cast(t, a) if t.is_int() => {
                let a = self.canon(a);
                if matches!(a, L::Var(_)) { a } else { L::Cast(*t, Box::new(a)) }
            }
            L::Load { buf, index, field } => {
                L::Load { buf: buf.clone(), index: Box::new(self.canon(index)), field: *field }
            }
            L::Bin(op, a, b) => L::Bin(*op, Box::new(self.canon(a)), Box::new(self.canon(b))),
            L::Neg(a) => L::Neg(Box::new(self.canon(a))),
            L::Not(a) => L::Not(Box::new(self.canon(a))),
            L::Cast(t, a) => L::Cast(*t, Box::new(self.canon(a))),
            L::Select(c, a, b) => L::Select(Box::new(self.canon(c)), Box::new(self.canon(a)), Box::new(self.canon(b))),
            other => other.clone(),
        }
    }

    /// `k >= 0 && k < len` where `k` is a loop variable of `0 .. len` (or of
    /// `0 .. hi` with `len = hi + c`, `c >= 0`), or a child position within
    /// bounded positions (see [`Tidy::within_positions`]).
    fn provable(&self, cond: &L) -> bool {
        let L::Bin(BinOp::And, ge, lt) = cond else { return false };
        let (L::Bin(BinOp::Ge, k, zero), L::Bin(BinOp::Lt, k2, len)) = (&**ge, &**lt) else { return false };
        if **zero != L::index(0) || k != k2 {
            return false;
        }
        if let L::Var(v) = self.canon(k)
            && let Some(hi) = self.ranges.get(&v)
        {
            let above = match self.canon(len) {
                L::Bin(BinOp::Add, x, c) if matches!(*c, L::Int(c, _) if c >= 0) => self.same(hi, &x),
                _ => false,
            };
            return self.same(hi, len) || above;
        }
        self.within_positions(k, len)
    }

    /// Is `k` (its `let`s expanded) `lo + v`, with `v` a loop variable of
    /// `0 .. hi - lo`, where `lo` and `hi` are values of one positions buffer
    /// whose values lie in `0 ..= len`? Then `0 <= lo <= lo + v < hi <= len`.
    /// (When `hi < lo` the loop runs no iteration.)
    fn within_positions(&self, k: &L, len: &L) -> bool {
        let L::Bin(BinOp::Add, lo, v) = self.expand(&self.canon(k), 0) else { return false };
        let L::Var(v) = *v else { return false };
        if self.mutable.contains(&v) {
            return false;
        }
        let Some(range) = self.ranges.get(&v) else { return false };
        let L::Bin(BinOp::Sub, hi, lo_again) = self.expand(&self.canon(range), 0) else { return false };
        if lo_again != lo {
            return false;
        }
        let (Some(a), Some(b)) = (self.positions_read(&lo), self.positions_read(&hi)) else { return false };
        a == b && self.bounded.iter().any(|p| &p.buf == a && self.same(&p.at_most, len))
    }

    /// The bounded positions buffer `e` reads a value of (widened to `i64`
    /// or not), if it is one nothing writes.
    fn positions_read<'e>(&self, e: &'e L) -> Option<&'e Name> {
        let load = match e {
            L::Cast(ScalarType::I64, inner) => &**inner,
            other => other,
        };
        let L::Load { buf, field: 0, .. } = load else { return None };
        (!self.written.contains(buf) && self.bounded.iter().any(|p| &p.buf == buf)).then_some(buf)
    }

    /// Equal values: the same once renamings are undone, or once the stable
    /// `let`s they use are expanded too.
    fn same(&self, a: &L, b: &L) -> bool {
        self.canon(a) == self.canon(b) || self.expand(&self.canon(a), 0) == self.expand(&self.canon(b), 0)
    }

    fn expand(&self, e: &L, depth: usize) -> L {
        if depth > 32 {
            return e.clone();
        }
        match e {
            L::Var(v) => match self.defs.get(v) {
                Some(d) => self.expand(&self.canon(d), depth + 1),
                None => e.clone(),
            },
            L::Load { buf, index, field } => {
                L::Load { buf: buf.clone(), index: Box::new(self.expand(index, depth + 1)), field: *field }
            }
            L::Bin(op, a, b) => L::Bin(*op, Box::new(self.expand(a, depth + 1)), Box::new(self.expand(b, depth + 1))),
            L::Neg(a) => L::Neg(Box::new(self.expand(a, depth + 1))),
            L::Not(a) => L::Not(Box::new(self.expand(a, depth + 1))),
            L::Cast(t, a) => {
                let a = self.expand(a, depth + 1);
                if t.is_int() && matches!(a, L::Var(_)) { a } else { L::Cast(*t, Box::new(a)) }
            }
            L::Select(c, a, b) => L::Select(
                Box::new(self.expand(c, depth + 1)),
                Box::new(self.expand(a, depth + 1)),
                Box::new(self.expand(b, depth + 1)),
            ),
            other => other.clone(),
        }
    }

    /// Reads only immutable names and buffers nothing writes.
    fn stable(&self, e: &L) -> bool {
        match e {
            L::Var(v) => !self.mutable.contains(v),
            L::Int(..) | L::Float(..) | L::Bool(_) => true,
            L::Load { buf, index, .. } => !self.written.contains(buf) && self.stable(index),
            L::Bin(_, a, b) => self.stable(a) && self.stable(b),
            L::Neg(a) | L::Not(a) | L::Cast(_, a) => self.stable(a),
            L::Select(c, a, b) => self.stable(c) && self.stable(a) && self.stable(b),
        }
    }

    /// The facts `v < hi` a condition guarantees where it holds, for loop
    /// variables and counters (both never negative).
    fn guards(&self, cond: &L) -> Vec<(Name, L)> {
        match cond {
            L::Bin(BinOp::And, a, b) => {
                let mut out = self.guards(a);
                out.extend(self.guards(b));
                out
            }
            L::Bin(BinOp::Lt, v, hi) => match self.canon(v) {
                L::Var(v)
                    if self.counters.contains(&v) || (!self.mutable.contains(&v) && self.ranges.contains_key(&v)) =>
                {
                    vec![(v, (**hi).clone())]
                }
                _ => vec![],
            },
            _ => vec![],
        }
    }

    /// Splits the `let`s of a loop body's head that can run before the loop.
    fn hoist(&self, var: &Name, lo: &L, hi: &L, body: Block) -> (Block, Block) {
        let mut inside: HashSet<Name> = HashSet::from([var.clone()]);
        assigned(&body, &mut inside);
        let (mut hoisted, mut kept) = (Block::new(), Block::new());
        let mut head = true;
        // Past a hoisted check, `let`s stay: run before the loop they could read
        // what the check guards even when the loop (and so the check) does not run.
        let mut lets = true;
        for s in body {
            head &= matches!(s, Stmt::Let { .. } | Stmt::Var { .. } | Stmt::Check { .. });
            match s {
                Stmt::Let { var, ty, value } if head && lets && self.invariant(&value, &inside) => {
                    hoisted.push(Stmt::Let { var, ty, value });
                }
                // An invariant check at the head runs once, before the loop, if the loop runs.
                Stmt::Check { cond, id } if head && self.invariant(&cond, &inside) => {
                    let runs = L::bin(BinOp::Lt, lo.clone(), hi.clone());
                    hoisted.push(Stmt::If { cond: runs, then: vec![Stmt::Check { cond, id }], els: vec![] });
                    lets = false;
                }
                Stmt::Check { .. } => {
                    head = false;
                    kept.push(s);
                }
                s => {
                    if let Stmt::Let { var, .. } | Stmt::Var { var, .. } = &s {
                        inside.insert(var.clone());
                    }
                    kept.push(s);
                }
            }
        }
        let kept = self.hoist_nested(kept, &mut inside, &mut hoisted);
        (hoisted, kept)
    }

    /// Notes the loads evaluating `e` always makes (not those under a
    /// `select`'s arms or the right of `&&` / `||`).
    fn record_loads(&mut self, e: &L) {
        match e {
            L::Load { index, .. } => {
                let canon = self.canon(e);
                if !canon.reads_var_in(&self.mutable) && !self.loaded.contains(&canon) {
                    self.loaded.push(canon);
                }
                self.record_loads(index);
            }
            L::Bin(BinOp::And | BinOp::Or, a, _) | L::Select(a, ..) => self.record_loads(a),
            L::Bin(_, a, b) => {
                self.record_loads(a);
                self.record_loads(b);
            }
            L::Neg(a) | L::Not(a) | L::Cast(_, a) => self.record_loads(a),
            L::Int(..) | L::Float(..) | L::Bool(_) | L::Var(_) => {}
        }
    }

    /// Every load in `e` is one an earlier statement made, or of a constant
    /// index every record of the input has: in bounds wherever `e` is evaluated.
    fn loads_in_bounds(&self, e: &L) -> bool {
        match e {
            L::Load { buf, index, .. } => {
                let canon = self.canon(e);
                let constant_in =
                    matches!(&**index, L::Int(k, _) if *k >= 0 && self.least.get(buf).is_some_and(|n| k < n));
                (constant_in || self.loaded.contains(&canon)) && self.loads_in_bounds(index)
            }
            L::Bin(_, a, b) => self.loads_in_bounds(a) && self.loads_in_bounds(b),
            L::Neg(a) | L::Not(a) | L::Cast(_, a) => self.loads_in_bounds(a),
            L::Select(c, a, b) => self.loads_in_bounds(c) && self.loads_in_bounds(a) && self.loads_in_bounds(b),
            L::Int(..) | L::Float(..) | L::Bool(_) | L::Var(_) => true,
        }
    }

    /// Moves the invariant `let`s anywhere in `body` (inside `if`s too, not
    /// inside nested loops) whose loads are in bounds wherever they run into
    /// `hoisted`, in order: a row's start that a co-iteration reads in each
    /// branch of each step is read once.
    fn hoist_nested(&self, body: Block, inside: &mut HashSet<Name>, hoisted: &mut Block) -> Block {
        let mut kept = Block::with_capacity(body.len());
        for s in body {
            match s {
                Stmt::Let { var, ty, value } if self.invariant(&value, inside) && self.loads_in_bounds(&value) => {
                    hoisted.push(Stmt::Let { var, ty, value });
                }
                Stmt::Let { var, ty, value } => {
                    inside.insert(var.clone());
                    kept.push(Stmt::Let { var, ty, value });
                }
                Stmt::If { cond, then, els } => {
                    let then = self.hoist_nested(then, inside, hoisted);
                    let els = self.hoist_nested(els, inside, hoisted);
                    kept.push(Stmt::If { cond, then, els });
                }
                Stmt::For { var, lo, hi, schedule, body } => {
                    let mut declared = Vec::new();
                    lets_declared(&body, &mut declared);
                    inside.extend(declared);
                    kept.push(Stmt::For { var, lo, hi, schedule, body });
                }
                other => {
                    if let Stmt::Var { var, .. } = &other {
                        inside.insert(var.clone());
                    }
                    kept.push(other);
                }
            }
        }
        kept
    }

    fn invariant(&self, e: &L, inside: &HashSet<Name>) -> bool {
        match e {
            L::Var(v) => !inside.contains(v),
            L::Int(..) | L::Float(..) | L::Bool(_) => true,
            L::Load { buf, index, .. } => !self.written.contains(buf) && self.invariant(index, inside),
            L::Bin(BinOp::Div | BinOp::Rem, ..) => false,
            L::Bin(_, a, b) => self.invariant(a, inside) && self.invariant(b, inside),
            L::Neg(a) | L::Not(a) | L::Cast(_, a) => self.invariant(a, inside),
            L::Select(c, a, b) => self.invariant(c, inside) && self.invariant(a, inside) && self.invariant(b, inside),
        }
    }
}

/// The names `let`s and `var`s declare anywhere in a block.
fn lets_declared(body: &Block, out: &mut Vec<Name>) {
    for s in body {
        match s {
            Stmt::Let { var, .. } | Stmt::Var { var, .. } => out.push(var.clone()),
            Stmt::For { var, body, .. } => {
                out.push(var.clone());
                lets_declared(body, out);
            }
            Stmt::If { then, els, .. } => {
                lets_declared(then, out);
                lets_declared(els, out);
            }
            _ => {}
        }
    }
}

/// A lower bound of a natural (an input's length), where one is plain:
/// variables and `toNat`s are at least 0.
fn least_value(n: &Nat) -> Option<i64> {
    match n {
        Nat::Lit(k) => Some(*k),
        Nat::Var(_) | Nat::ToNat(_) => Some(0),
        Nat::Bin(NatOp::Add, a, b) => least_value(a)?.checked_add(least_value(b)?),
        // Floor division of a natural by a positive one: at least 0.
        Nat::Bin(NatOp::Div, a, b) => (least_value(a)? >= 0 && least_value(b)? >= 1).then_some(0),
        Nat::Bin(NatOp::Mul, a, b) => {
            let (a, b) = (least_value(a)?, least_value(b)?);
            if a >= 0 && b >= 0 { a.checked_mul(b) } else { None }
        }
        _ => None,
    }
}

/// `v` or `(t) v` for an index-wide integer type `t`.
fn renaming(value: &L, ty: ScalarType) -> Option<L> {
    let wide = matches!(ty, ScalarType::I32 | ScalarType::I64 | ScalarType::U32 | ScalarType::U64);
    match value {
        L::Var(_) if wide => Some(value.clone()),
        L::Cast(t, inner) if wide && *t == ty && matches!(**inner, L::Var(_)) => Some((**inner).clone()),
        _ => None,
    }
}

/// Variables mutated anywhere in a block (accumulators): never invariant.
fn assigned(body: &Block, out: &mut HashSet<Name>) {
    for s in body {
        match s {
            Stmt::Assign { var, .. } | Stmt::Var { var, .. } => {
                out.insert(var.clone());
            }
            Stmt::For { var, body, .. } => {
                out.insert(var.clone());
                assigned(body, out);
            }
            Stmt::If { then, els, .. } => {
                assigned(then, out);
                assigned(els, out);
            }
            _ => {}
        }
    }
}

/// The `var`s declared as 0 whose every assignment adds a non-negative constant to them.
fn counters(body: &Block, mutable: &HashSet<Name>) -> HashSet<Name> {
    fn walk(b: &Block, starts: &mut HashSet<Name>, spoiled: &mut HashSet<Name>) {
        for s in b {
            match s {
                Stmt::Var { var, init, .. } => {
                    if matches!(init, L::Int(0, _)) {
                        starts.insert(var.clone());
                    } else {
                        spoiled.insert(var.clone());
                    }
                }
                Stmt::Assign { var, value } => {
                    // `v + k`, or `v + select(c, k1, k2)` (a cursor that moves or not), for constants `k >= 0`.
                    let step = |c: &L| match c {
                        L::Int(k, _) => *k >= 0,
                        L::Select(_, k1, k2) => {
                            matches!((&**k1, &**k2), (L::Int(k1, _), L::Int(k2, _)) if *k1 >= 0 && *k2 >= 0)
                        }
                        _ => false,
                    };
                    let grows = matches!(value, L::Bin(BinOp::Add, a, c)
                        if matches!(&**a, L::Var(x) if x == var) && step(c));
                    if !grows {
                        spoiled.insert(var.clone());
                    }
                }
                Stmt::For { body, .. } => walk(body, starts, spoiled),
                Stmt::If { then, els, .. } => {
                    walk(then, starts, spoiled);
                    walk(els, starts, spoiled);
                }
                _ => {}
            }
        }
    }
    let (mut starts, mut spoiled) = (HashSet::new(), HashSet::new());
    walk(body, &mut starts, &mut spoiled);
    starts.into_iter().filter(|v| mutable.contains(v) && !spoiled.contains(v)).collect()
}

/// The value of an expression of integer literals and comparisons (true = 1), if it is one.
fn constant(e: &L) -> Option<i64> {
    match e {
        L::Int(v, _) => Some(*v),
        L::Bool(b) => Some(*b as i64),
        // Only a cast that keeps the value: to a type wide enough to hold it.
        L::Cast(t, a) if t.is_int() => {
            let v = constant(a)?;
            let bits = 8 * t.size_bytes() as u32 - t.is_signed() as u32;
            (v >= 0 && (bits >= 63 || v < 1i64 << bits)).then_some(v)
        }
        L::Bin(op, a, b) => {
            let (a, b) = (constant(a)?, constant(b)?);
            Some(match op {
                BinOp::Add => a.checked_add(b)?,
                BinOp::Sub => a.checked_sub(b)?,
                BinOp::Mul => a.checked_mul(b)?,
                BinOp::Lt => (a < b) as i64,
                BinOp::Le => (a <= b) as i64,
                BinOp::Gt => (a > b) as i64,
                BinOp::Ge => (a >= b) as i64,
                BinOp::Eq => (a == b) as i64,
                BinOp::Ne => (a != b) as i64,
                BinOp::And => (a != 0 && b != 0) as i64,
                BinOp::Or => (a != 0 || b != 0) as i64,
                _ => return None,
            })
        }
        _ => None,
    }
}

/// Mutable locals: the targets of `var` and assignments.
fn mutated(body: &Block, out: &mut HashSet<Name>) {
    for s in body {
        match s {
            Stmt::Assign { var, .. } | Stmt::Var { var, .. } => {
                out.insert(var.clone());
            }
            Stmt::For { body, .. } => mutated(body, out),
            Stmt::If { then, els, .. } => {
                mutated(then, out);
                mutated(els, out);
            }
            _ => {}
        }
    }
}

fn stored_buffers(body: &Block, out: &mut HashSet<Name>) {
    for s in body {
        match s {
            Stmt::Store { buf, .. } | Stmt::AddAtomic { buf, .. } | Stmt::Alloc { buf, .. } => {
                out.insert(buf.clone());
            }
            Stmt::For { body, .. } => stored_buffers(body, out),
            Stmt::If { then, els, .. } => {
                stored_buffers(then, out);
                stored_buffers(els, out);
            }
            _ => {}
        }
    }
}

//! Loop interchange of a row sum with its inner loop, in blocks of rows,
//! with the range of each block split where the row's guards hold.
//!
//! A top-level parallel loop over rows whose body is
//!
//! ```text
//! parallel for i in lo .. hi { lets; var acc = init; for k in klo .. khi { …; acc = acc op e }; out[i] = acc }
//! ```
//!
//! where `klo .. khi` and `init` do not depend on the row, and nothing in it
//! reads `out`, becomes (for each block of [`ROW_BLOCK`] rows of a chunk
//! `chunk_lo .. chunk_hi`)
//!
//! ```text
//! for i in block { out[i] = init }
//! for k in klo .. khi { k's row-invariant lets; for i in block { lets; …; out[i] = out[i] op e } }
//! ```
//!
//! Each row still combines its terms in the order of `k`, from the same
//! `init`, with the same operations: the result equals the sequential
//! reduction's bit for bit (for any `op`, reassociable or not). What
//! changes is the memory order: a load of the row's data whose index is
//! `i + (something row-invariant)` (DIA's `A_values[k·n + i]`, `xs[i + d]`)
//! is contiguous across the inner loop instead of strided by the row. The
//! transform applies only when it pays that way ([`interchange`]: every load
//! that depends on the row is affine in it with coefficient 1, or depends on
//! the row and on `k` only through loaded data, and at least one is affine),
//! so a dense row-major matrix–vector product (stride `m`) or CSR (a
//! row-dependent `k` range) keep their loops, and ELL SpMV (`pos[k·n + i]`
//! contiguous; its entries at `pos[…] + p` and the gather `xs[crd[…]]` the
//! same in either order) runs slice by slice.
//!
//! **Range split.** A row-level `let g = c₁ && c₂ …` whose conjuncts compare
//! a value affine in `i` (`i + off`, through `let`s, integer casts, and
//! additions of row-invariant terms) with a row-invariant bound, and a check
//! of the same form, hold on one interval `a .. b` of rows, computed per `k`
//! before the row loop. The block's rows are run in three loops: `blk_lo ..
//! a` and `b .. blk_hi` with the body unchanged, and `a .. b` with `g`
//! replaced by `true` (its `if` reduced to the taken branch, `select`s to
//! their first operand), the checks dropped, a mutable local assigned once
//! made a `let`, and every narrow integer `let` affine in `i` written
//! `(T) i + (T) off`: the same value, because truncation to `T` commutes
//! with wrapping addition. That middle loop is straight-line code over
//! contiguous data: the CPU backend's map-loop lanes take it.
//!
//! Why the interval is exact: a narrowing cast on the way to the compared
//! value adds the constraint that its operand fits the type (then the cast
//! is the identity), so `i + off` in the compared type equals the
//! mathematical `i + off` on `a .. b`. Bounds and offsets are clamped to
//! ±2⁶⁰ (rows to ±2⁶⁰, an offset outside ±2⁶⁰ empties the middle loop), so
//! computing `bound − off` cannot overflow. Bounds and offsets must read no
//! buffer and divide nothing (they are evaluated before the row loop, where
//! the original might not have evaluated them).
//!
//! Where a check fails, the kernel still stops with that check's message,
//! but when two rows would fail different checks, which one is reported can
//! differ from the sequential order (as it already can across threads).

use super::{ArgKind, BinOp, Block, Expr, LoopProgram, Schedule, Stmt};
use crate::{Name, ScalarType};
use std::collections::{HashMap, HashSet};

/// Rows per block: a block's outputs (4 KiB of `f64`) stay in L1 while the
/// inner loop runs over `k` (measured in docs/performance.md).
pub const ROW_BLOCK: i64 = 512;

/// Bounds and offsets are clamped to ±`LIMIT` before `bound − off`.
const LIMIT: i64 = 1 << 60;

/// An interchanged row loop: `body` runs the rows `chunk_lo .. chunk_hi`
/// (two `i64` names the caller binds: the clipped range of the original
/// parallel loop) in blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct Interchanged {
    /// The first row of the chunk.
    pub chunk_lo: Name,
    /// One past its last row.
    pub chunk_hi: Name,
    /// The blocked loops.
    pub body: Block,
    /// Whether the rows' range was split by a guard (a branch-free middle loop).
    pub split: bool,
}

/// The interchanged form of the top-level `parallel for var { body }` of
/// `prog`, or `None` when the body has not the shape or the interchange does
/// not pay (see the module documentation).
pub fn interchange(prog: &LoopProgram, var: &Name, body: &[Stmt]) -> Option<Interchanged> {
    interchange_in_blocks(prog, var, body, ROW_BLOCK)
}

/// [`interchange`] with blocks of `block` rows (at least 1).
pub fn interchange_in_blocks(prog: &LoopProgram, var: &Name, body: &[Stmt], block: i64) -> Option<Interchanged> {
    let block = block.max(1);
    let n = body.len();
    if n < 3 {
        return None;
    }
    let Stmt::Store { buf: out, index: Expr::Var(row), field, value: Expr::Var(acc) } = &body[n - 1] else {
        return None;
    };
    if row != var || !matches!(prog.arg(out)?.kind, ArgKind::Output { .. }) {
        return None;
    }
    let Stmt::For { var: k, lo: klo, hi: khi, schedule: Schedule::Seq, body: kbody } = &body[n - 2] else {
        return None;
    };
    // The row's `let`s, and the accumulator's `var` among them.
    let mut row_lets: Block = Vec::new();
    let mut init: Option<&Expr> = None;
    for s in &body[..n - 2] {
        match s {
            Stmt::Var { var: v, init: i, .. } if v == acc && init.is_none() => init = Some(i),
            Stmt::Let { value, .. } if !value.reads_var(acc) => row_lets.push(s.clone()),
            _ => return None,
        }
    }
    let init = init?;
    let row_lets = &row_lets[..];
    // Everything declared in the row's body depends on the row (lets, the
    // accumulator); the k range and the initial value must read none of it.
    let mut row_names: HashSet<Name> = HashSet::new();
    row_names.insert(var.clone());
    declared(body, &mut row_names);
    if klo.reads_var_in(&row_names) || khi.reads_var_in(&row_names) || init.reads_var_in(&row_names) {
        return None;
    }
    let reads_out = |e: &Expr| e.loads_from(&mut |b| b == out);
    if reads_out(klo) || reads_out(khi) || reads_out(init) {
        return None;
    }
    // The k body: no stores, no other use of `acc`, one `acc = acc op e` at its top level.
    let mut ok = true;
    walk(row_lets, &mut |s| ok &= plain(s, out));
    walk(kbody, &mut |s| ok &= plain(s, out));
    if !ok {
        return None;
    }
    let mut update: Option<(usize, BinOp, Expr, bool)> = None;
    for (p, s) in kbody.iter().enumerate() {
        if let Stmt::Assign { var: v, value } = s
            && v == acc
        {
            let found = match value {
                Expr::Bin(op, a, b) if matches!(&**a, Expr::Var(x) if x == acc) && !b.reads_var(acc) => {
                    (p, *op, (**b).clone(), true)
                }
                Expr::Bin(op, a, b) if matches!(&**b, Expr::Var(x) if x == acc) && !a.reads_var(acc) => {
                    (p, *op, (**a).clone(), false)
                }
                _ => return None,
            };
            if update.replace(found).is_some() {
                return None;
            }
        }
    }
    let (at, op, term, acc_left) = update?;
    let mut other_use = false;
    walk(kbody, &mut |s| {
        other_use |= match s {
            Stmt::Assign { var: v, value } => {
                (v == acc && !std::ptr::eq(s, &kbody[at])) || (!std::ptr::eq(s, &kbody[at]) && value.reads_var(acc))
            }
            _ => stmt_exprs(s).iter().any(|e| e.reads_var(acc)),
        }
    });
    if other_use {
        return None;
    }

    // The row-invariant `let`s of the k body's prefix of `let`s and `var`s
    // move out of the row loop (a `var` is row-dependent: they read none).
    let mut dep: HashSet<Name> = HashSet::new();
    dep.insert(var.clone());
    dependents(&[row_lets, kbody], &mut dep);
    let prefix = kbody.iter().take_while(|s| matches!(s, Stmt::Let { .. } | Stmt::Var { .. })).count();
    let is_hoisted = |s: &Stmt| matches!(s, Stmt::Let { value, .. } if !value.reads_var_in(&dep));
    let hoisted: Block = kbody[..prefix].iter().filter(|s| is_hoisted(s)).cloned().collect();
    let staying: Block =
        kbody.iter().enumerate().filter(|(p, s)| *p >= prefix || !is_hoisted(s)).map(|(_, s)| s.clone()).collect();
    let mut inner: HashSet<Name> = HashSet::new();
    declared(row_lets, &mut inner);
    declared(&staying, &mut inner);
    inner.insert(acc.clone());

    // The generic row body: the row's lets, then the k body with the update
    // made a store to the output.
    let cell = Expr::Load { buf: out.clone(), index: Box::new(Expr::Var(var.clone())), field: *field };
    let combined = if acc_left { Expr::bin(op, cell, term) } else { Expr::bin(op, term, cell) };
    let mut generic: Block = row_lets.to_vec();
    for (p, s) in kbody.iter().enumerate().filter(|(p, s)| *p >= prefix || !is_hoisted(s)) {
        generic.push(if p == at {
            Stmt::Store { buf: out.clone(), index: Expr::Var(var.clone()), field: *field, value: combined.clone() }
        } else {
            s.clone()
        });
    }

    // Pays: every load that depends on the row is contiguous in it, or
    // reaches the row and `k` only through loaded data (a gather, or ELL's
    // entries at `pos[k·n + i] + p`: the same pattern in either order).
    let lets = let_env(body);
    let an = Affine { var, dep: &dep, lets: &lets, through_select: true };
    let blocks: [&[Stmt]; 2] = [row_lets, kbody];
    let by_row = directly(&blocks, var);
    let by_k = directly(&blocks, k);
    let mut contiguous = 0;
    let mut strided = false;
    for e in row_lets.iter().chain(kbody).flat_map(all_exprs) {
        e.any(&mut |x| {
            if let Expr::Load { index, .. } = x
                && index.reads_var_in(&dep)
            {
                if an.affine(index).is_some() {
                    contiguous += 1;
                } else if reads_directly(index, &by_row) || reads_directly(index, &by_k) {
                    // Strided in the row (`a[i·m + k]`), or walked along
                    // `k` per row (`a[base[i] + k]`): the row order is the
                    // better one.
                    strided = true;
                }
            }
            false
        });
    }
    if strided || contiguous == 0 {
        return None;
    }

    let mut names = Names::of(prog);
    let chunk_lo = names.fresh("chunk_lo");
    let chunk_hi = names.fresh("chunk_hi");
    let blk = names.fresh("blk");
    let blk_lo = names.fresh("blk_lo");
    let blk_hi = names.fresh("blk_hi");
    let v = |n: &Name| Expr::Var(n.clone());
    let i64c = Expr::index;
    let loop_of =
        |lo: Expr, hi: Expr, body: Block| Stmt::For { var: var.clone(), lo, hi, schedule: Schedule::Seq, body };

    let mut k_body: Block = hoisted;
    let avail = |e: &Expr| available(e, &inner, var);
    let split = middle(&generic, var, &dep, &avail, &mut names);
    let is_split = split.is_some();
    match split {
        Some((pre, mid)) => {
            let (a, b) = (names.fresh("split_lo"), names.fresh("split_hi"));
            k_body.extend(pre.lets);
            let lo = bound(BinOp::Max, v(&blk_lo), pre.los);
            let hi = bound(BinOp::Min, v(&blk_hi), pre.his);
            k_body.push(Stmt::Let {
                var: a.clone(),
                ty: ScalarType::I64,
                value: Expr::bin(BinOp::Min, lo, v(&blk_hi)),
            });
            let hi = Expr::bin(BinOp::Max, hi, v(&a));
            let hi = match pre.valid {
                Some(c) => Expr::Select(Box::new(c), Box::new(hi), Box::new(v(&a))),
                None => hi,
            };
            k_body.push(Stmt::Let { var: b.clone(), ty: ScalarType::I64, value: hi });
            k_body.push(loop_of(v(&blk_lo), v(&a), generic.clone()));
            k_body.push(loop_of(v(&a), v(&b), mid));
            k_body.push(loop_of(v(&b), v(&blk_hi), generic));
        }
        None => k_body.push(loop_of(v(&blk_lo), v(&blk_hi), generic)),
    }

    let init_store = Stmt::Store { buf: out.clone(), index: v(var), field: *field, value: init.clone() };
    let blocks = Expr::bin(
        BinOp::Div,
        Expr::bin(BinOp::Add, Expr::bin(BinOp::Sub, v(&chunk_hi), v(&chunk_lo)), i64c(block - 1)),
        i64c(block),
    );
    let block_body = vec![
        Stmt::Let {
            var: blk_lo.clone(),
            ty: ScalarType::I64,
            value: Expr::bin(BinOp::Add, v(&chunk_lo), Expr::bin(BinOp::Mul, v(&blk), i64c(block))),
        },
        Stmt::Let {
            var: blk_hi.clone(),
            ty: ScalarType::I64,
            value: Expr::bin(BinOp::Min, Expr::bin(BinOp::Add, v(&blk_lo), i64c(block)), v(&chunk_hi)),
        },
        loop_of(v(&blk_lo), v(&blk_hi), vec![init_store]),
        Stmt::For { var: k.clone(), lo: klo.clone(), hi: khi.clone(), schedule: Schedule::Seq, body: k_body },
    ];
    let body = vec![Stmt::For { var: blk, lo: i64c(0), hi: blocks, schedule: Schedule::Seq, body: block_body }];
    Some(Interchanged { chunk_lo, chunk_hi, body, split: is_split })
}

/// `prog` with its top-level parallel loop interchanged (run as one chunk:
/// the whole range), for the interpreter and `--target loops`; `None` when
/// [`interchange`] does not apply.
pub fn interchanged_program(prog: &LoopProgram) -> Option<LoopProgram> {
    let at = prog.body.iter().position(|s| matches!(s, Stmt::For { schedule: Schedule::Parallel, .. }))?;
    let Stmt::For { var, lo, hi, body, .. } = &prog.body[at] else { return None };
    let x = interchange(prog, var, body)?;
    let mut p = prog.clone();
    let mut new = vec![
        Stmt::Let { var: x.chunk_lo, ty: ScalarType::I64, value: lo.clone() },
        Stmt::Let { var: x.chunk_hi, ty: ScalarType::I64, value: hi.clone() },
    ];
    new.extend(x.body);
    p.body.splice(at..=at, new);
    p.parallel_work = None;
    Some(p)
}

/// `first op x₁ op x₂ …` (`op` is `min` or `max`) with constants folded
/// and repeated terms left out.
fn bound(op: BinOp, first: Expr, xs: Vec<Expr>) -> Expr {
    let mut constant: Option<i64> = None;
    let mut terms: Vec<Expr> = Vec::new();
    for x in xs.into_iter().map(fold_constants) {
        match x {
            Expr::Int(c, _) => {
                constant = Some(constant.map_or(c, |k| if op == BinOp::Max { k.max(c) } else { k.min(c) }))
            }
            x if !terms.contains(&x) => terms.push(x),
            _ => {}
        }
    }
    let head = match constant {
        Some(c) => Expr::bin(op, first, Expr::index(c)),
        None => first,
    };
    terms.into_iter().fold(head, |m, x| Expr::bin(op, m, x))
}

/// Integer arithmetic on literals (`min`, `max`, `+`, `-`, casts to `i64`) evaluated.
fn fold_constants(e: Expr) -> Expr {
    match e {
        Expr::Cast(ScalarType::I64, x) => match fold_constants(*x) {
            Expr::Int(c, _) => Expr::index(c),
            x => Expr::Cast(ScalarType::I64, Box::new(x)),
        },
        Expr::Bin(op @ (BinOp::Min | BinOp::Max | BinOp::Add | BinOp::Sub), a, b) => {
            match (fold_constants(*a), fold_constants(*b)) {
                (Expr::Int(x, ScalarType::I64), Expr::Int(y, ScalarType::I64)) => Expr::index(match op {
                    BinOp::Min => x.min(y),
                    BinOp::Max => x.max(y),
                    BinOp::Add => x.wrapping_add(y),
                    _ => x.wrapping_sub(y),
                }),
                (a, b) => Expr::bin(op, a, b),
            }
        }
        e => e,
    }
}

/// What the middle loop needs before it: `let`s at the k level, the lower
/// and upper bounds of its rows, and a condition that the offsets are in range.
struct Split {
    lets: Block,
    los: Vec<Expr>,
    his: Vec<Expr>,
    valid: Option<Expr>,
}

/// `lo ≤ i + off < hi`, either bound absent (`i64` expressions).
#[derive(Clone)]
struct Constraint {
    off: Expr,
    lo: Option<Expr>,
    hi: Option<Expr>,
}

/// The middle loop's body and what its range needs, if the generic body has a guard.
fn middle(
    generic: &[Stmt],
    var: &Name,
    dep: &HashSet<Name>,
    avail: &dyn Fn(&Expr) -> bool,
    names: &mut Names,
) -> Option<(Split, Block)> {
    let lets = let_env(generic);
    let an = Affine { var, dep, lets: &lets, through_select: false };
    // Guards: top-level boolean lets whose value is an affine conjunction.
    let mut guards: Vec<Name> = Vec::new();
    let mut cons: Vec<Constraint> = Vec::new();
    for s in generic {
        if let Stmt::Let { var: g, ty: ScalarType::Bool, value } = s
            && value.reads_var_in(dep)
            && let Some(c) = an.conjunction(value, avail)
        {
            guards.push(g.clone());
            cons.extend(c);
        }
    }
    if guards.is_empty() {
        return None;
    }
    let truth: HashSet<Name> = guards.into_iter().collect();
    let mut mid = fold_block(generic, &truth);
    // Checks the range implies are dropped (their constraints join the range).
    let lets = let_env(&mid);
    let an = Affine { var, dep, lets: &lets, through_select: false };
    mid.retain(|s| match s {
        Stmt::Check { cond, .. } => match an.conjunction(cond, avail) {
            Some(c) => {
                cons.extend(c);
                false
            }
            None => true,
        },
        _ => true,
    });
    single_assignments(&mut mid);
    // Narrow integer lets affine in the row: `(T) i + (T) off`.
    let mut pre: Block = Vec::new();
    let lets = let_env(&mid);
    let an = Affine { var, dep, lets: &lets, through_select: false };
    let mut rewrites: Vec<(usize, Expr)> = Vec::new();
    for (p, s) in mid.iter().enumerate() {
        if let Stmt::Let { var: x, ty, value } = s {
            let narrow = ty.is_int() && *ty != ScalarType::I64 && *ty != ScalarType::U64;
            if !narrow || matches!(value, Expr::Cast(_, a) if matches!(&**a, Expr::Var(n) if n == var)) {
                continue;
            }
            if let Some(a) = an.affine(value)
                && a.ty == *ty
                && avail(&a.off)
            {
                let off = names.fresh(&format!("{x}_off"));
                pre.push(Stmt::Let { var: off.clone(), ty: ScalarType::I64, value: a.off });
                let canonical = Expr::bin(
                    BinOp::Add,
                    Expr::Cast(*ty, Box::new(Expr::Var(var.clone()))),
                    Expr::Cast(*ty, Box::new(Expr::Var(off))),
                );
                rewrites.push((p, canonical));
                // `(T) i` is range-checked on entry to the loop: keep the rows where it fits.
                let (lo, hi) = type_range(*ty)?;
                cons.push(Constraint { off: Expr::index(0), lo: Some(Expr::index(lo)), hi: Some(Expr::index(hi)) });
            }
        }
    }
    for (p, value) in rewrites {
        if let Stmt::Let { value: v, .. } = &mut mid[p] {
            *v = value;
        }
    }
    // The range: rows within ±LIMIT, each constraint's `bound − off`.
    let clamp =
        |e: Expr| Expr::bin(BinOp::Min, Expr::bin(BinOp::Max, e, Expr::index(-2 * LIMIT)), Expr::index(2 * LIMIT + 1));
    let mut split = Split { lets: pre, los: vec![Expr::index(-LIMIT)], his: vec![Expr::index(LIMIT)], valid: None };
    let mut offs: Vec<(Expr, Name)> = Vec::new();
    for c in cons {
        let off = match &c.off {
            Expr::Int(0, _) => None,
            e => Some(match offs.iter().find(|(x, _)| x == e) {
                Some((_, n)) => n.clone(),
                None => {
                    let n = names.fresh("row_off");
                    split.lets.push(Stmt::Let { var: n.clone(), ty: ScalarType::I64, value: e.clone() });
                    let ok = Expr::bin(
                        BinOp::And,
                        Expr::bin(BinOp::Ge, Expr::Var(n.clone()), Expr::index(-LIMIT)),
                        Expr::bin(BinOp::Le, Expr::Var(n.clone()), Expr::index(LIMIT)),
                    );
                    split.valid = Some(match split.valid.take() {
                        Some(v) => Expr::bin(BinOp::And, v, ok),
                        None => ok,
                    });
                    offs.push((e.clone(), n.clone()));
                    n
                }
            }),
        };
        let minus = |b: Expr| match &off {
            Some(n) => Expr::bin(BinOp::Sub, clamp(b), Expr::Var(n.clone())),
            None => clamp(b),
        };
        if let Some(lo) = c.lo {
            split.los.push(minus(lo));
        }
        if let Some(hi) = c.hi {
            split.his.push(minus(hi));
        }
    }
    Some((split, mid))
}

/// The values of `T` as `lo .. hi` (`i64`); `None` for `u64` (not all fit).
fn type_range(t: ScalarType) -> Option<(i64, i64)> {
    Some(match t {
        ScalarType::I8 => (i8::MIN as i64, i8::MAX as i64 + 1),
        ScalarType::I16 => (i16::MIN as i64, i16::MAX as i64 + 1),
        ScalarType::I32 => (i32::MIN as i64, i32::MAX as i64 + 1),
        ScalarType::U8 => (0, u8::MAX as i64 + 1),
        ScalarType::U16 => (0, u16::MAX as i64 + 1),
        ScalarType::U32 => (0, u32::MAX as i64 + 1),
        _ => return None,
    })
}

/// An affine value `i + off` of type `ty`, exact where `cons` hold.
struct Aff {
    off: Expr,
    ty: ScalarType,
    cons: Vec<Constraint>,
}

/// The affine analysis of one body: `lets` are its `let`s by name, `dep`
/// the names that depend on the row `var`.
struct Affine<'a> {
    var: &'a Name,
    dep: &'a HashSet<Name>,
    lets: &'a HashMap<Name, (Expr, ScalarType)>,
    /// `select(c, a, b)` with `a` affine counts as affine (for the cost
    /// test only: contiguous where `c` holds).
    through_select: bool,
}

impl Affine<'_> {
    fn affine(&self, e: &Expr) -> Option<Aff> {
        self.affine_at(e, 0)
    }

    fn affine_at(&self, e: &Expr, depth: usize) -> Option<Aff> {
        if depth > 32 {
            return None;
        }
        let ext = |b: &Expr, ty: ScalarType| {
            if ty == ScalarType::I64 { b.clone() } else { Expr::Cast(ScalarType::I64, Box::new(b.clone())) }
        };
        let add = |off: Expr, b: Expr, op: BinOp| match off {
            Expr::Int(0, _) if op == BinOp::Add => b,
            off => Expr::bin(op, off, b),
        };
        match e {
            Expr::Var(v) if v == self.var => Some(Aff { off: Expr::index(0), ty: ScalarType::I64, cons: vec![] }),
            Expr::Var(v) => {
                let (value, ty) = self.lets.get(v)?;
                let a = self.affine_at(value, depth + 1)?;
                (a.ty == *ty).then_some(a)
            }
            Expr::Cast(t, x) => {
                let mut a = self.affine_at(x, depth + 1)?;
                if !t.is_int() || *t == ScalarType::U64 || !a.ty.is_int() {
                    return None;
                }
                if *t != ScalarType::I64 && *t != a.ty {
                    let (lo, hi) = type_range(*t)?;
                    a.cons.push(Constraint {
                        off: a.off.clone(),
                        lo: Some(Expr::index(lo)),
                        hi: Some(Expr::index(hi)),
                    });
                }
                a.ty = *t;
                Some(a)
            }
            Expr::Bin(op @ (BinOp::Add | BinOp::Sub), x, y) => {
                let (mut a, b) = match (self.affine_at(x, depth + 1), y.reads_var_in(self.dep)) {
                    (Some(a), false) => (a, y),
                    _ if *op == BinOp::Add && !x.reads_var_in(self.dep) => (self.affine_at(y, depth + 1)?, x),
                    _ => return None,
                };
                a.off = add(a.off, ext(b, a.ty), *op);
                if a.ty != ScalarType::I64 {
                    let (lo, hi) = type_range(a.ty)?;
                    a.cons.push(Constraint {
                        off: a.off.clone(),
                        lo: Some(Expr::index(lo)),
                        hi: Some(Expr::index(hi)),
                    });
                }
                Some(a)
            }
            Expr::Select(_, x, y) if self.through_select && !y.reads_var_in(self.dep) => self.affine_at(x, depth + 1),
            _ => None,
        }
    }

    /// The constraints that make `e` (a conjunction of comparisons of an
    /// affine value with a bound that `avail` accepts) true, with the
    /// constraints of its casts; `None` if `e` has not that form.
    fn conjunction(&self, e: &Expr, avail: &dyn Fn(&Expr) -> bool) -> Option<Vec<Constraint>> {
        match e {
            Expr::Bool(true) => Some(vec![]),
            Expr::Var(v) if self.dep.contains(v) => {
                let (value, ty) = self.lets.get(v)?;
                if *ty != ScalarType::Bool {
                    return None;
                }
                self.conjunction(value, avail)
            }
            Expr::Bin(BinOp::And, x, y) => {
                let mut c = self.conjunction(x, avail)?;
                c.extend(self.conjunction(y, avail)?);
                Some(c)
            }
            Expr::Bin(op, x, y) if op.is_comparison() => {
                let (a, bound, op) = match (y.reads_var_in(self.dep), x.reads_var_in(self.dep)) {
                    (false, true) => (self.affine(x)?, y, *op),
                    (true, false) => {
                        let flipped = match op {
                            BinOp::Lt => BinOp::Gt,
                            BinOp::Le => BinOp::Ge,
                            BinOp::Gt => BinOp::Lt,
                            BinOp::Ge => BinOp::Le,
                            _ => return None,
                        };
                        (self.affine(y)?, x, flipped)
                    }
                    _ => return None,
                };
                if !avail(bound) || !avail(&a.off) || a.cons.iter().any(|c| !avail(&c.off)) {
                    return None;
                }
                let b = if a.ty == ScalarType::I64 {
                    (**bound).clone()
                } else {
                    Expr::Cast(ScalarType::I64, Box::new((**bound).clone()))
                };
                let clamped = Expr::bin(
                    BinOp::Min,
                    Expr::bin(BinOp::Max, b.clone(), Expr::index(-2 * LIMIT)),
                    Expr::index(2 * LIMIT + 1),
                );
                let plus1 = Expr::bin(BinOp::Add, clamped, Expr::index(1));
                let (lo, hi) = match op {
                    BinOp::Ge => (Some(b), None),
                    BinOp::Gt => (Some(plus1), None),
                    BinOp::Lt => (None, Some(b)),
                    BinOp::Le => (None, Some(plus1)),
                    _ => return None,
                };
                let mut cons = a.cons;
                cons.push(Constraint { off: a.off, lo, hi });
                Some(cons)
            }
            _ => None,
        }
    }
}

/// Whether `e` can be evaluated before the row loop: it reads no buffer,
/// divides nothing, and reads no name the row's body declares.
fn available(e: &Expr, inner: &HashSet<Name>, var: &Name) -> bool {
    !e.any(&mut |x| match x {
        Expr::Load { .. } | Expr::Bin(BinOp::Div | BinOp::Rem, ..) => true,
        Expr::Var(n) => n == var || inner.contains(n),
        _ => false,
    })
}

/// `body` with the guards `truth` true: `if`s on them reduced to their
/// taken branch, `select`s and `&&`s folded.
fn fold_block(body: &[Stmt], truth: &HashSet<Name>) -> Block {
    let mut out = Vec::new();
    for s in body {
        match s {
            Stmt::If { cond, then, els } => {
                let c = fold(cond, truth);
                match c {
                    Expr::Bool(true) => out.extend(fold_block(then, truth)),
                    Expr::Bool(false) => out.extend(fold_block(els, truth)),
                    c => out.push(Stmt::If { cond: c, then: fold_block(then, truth), els: fold_block(els, truth) }),
                }
            }
            Stmt::For { var, lo, hi, schedule, body } => out.push(Stmt::For {
                var: var.clone(),
                lo: fold(lo, truth),
                hi: fold(hi, truth),
                schedule: *schedule,
                body: fold_block(body, truth),
            }),
            // A guard is `true` wherever it was read: its `let` goes.
            Stmt::Let { var, .. } if truth.contains(var) => {}
            Stmt::Let { var, ty, value } => {
                out.push(Stmt::Let { var: var.clone(), ty: *ty, value: fold(value, truth) })
            }
            Stmt::Var { var, ty, init } => out.push(Stmt::Var { var: var.clone(), ty: *ty, init: fold(init, truth) }),
            Stmt::Assign { var, value } => out.push(Stmt::Assign { var: var.clone(), value: fold(value, truth) }),
            Stmt::Store { buf, index, field, value } => out.push(Stmt::Store {
                buf: buf.clone(),
                index: fold(index, truth),
                field: *field,
                value: fold(value, truth),
            }),
            Stmt::Check { cond, id } => match fold(cond, truth) {
                Expr::Bool(true) => {}
                c => out.push(Stmt::Check { cond: c, id: *id }),
            },
            other => out.push(other.clone()),
        }
    }
    out
}

fn fold(e: &Expr, truth: &HashSet<Name>) -> Expr {
    let f = |x: &Expr| Box::new(fold(x, truth));
    match e {
        Expr::Var(v) if truth.contains(v) => Expr::Bool(true),
        Expr::Load { buf, index, field } => Expr::Load { buf: buf.clone(), index: f(index), field: *field },
        Expr::Bin(BinOp::And, a, b) => match (fold(a, truth), fold(b, truth)) {
            (Expr::Bool(true), y) => y,
            (x, Expr::Bool(true)) => x,
            (x, y) => Expr::bin(BinOp::And, x, y),
        },
        Expr::Bin(op, a, b) => Expr::Bin(*op, f(a), f(b)),
        Expr::Neg(a) => Expr::Neg(f(a)),
        Expr::Not(a) => match fold(a, truth) {
            Expr::Bool(b) => Expr::Bool(!b),
            x => Expr::Not(Box::new(x)),
        },
        Expr::Select(c, a, b) => match fold(c, truth) {
            Expr::Bool(true) => fold(a, truth),
            Expr::Bool(false) => fold(b, truth),
            c => Expr::Select(Box::new(c), f(a), f(b)),
        },
        Expr::Cast(t, a) => Expr::Cast(*t, f(a)),
        other => other.clone(),
    }
}

/// A top-level `var x = init` assigned once, at the top level, and read
/// only after that: the assignment becomes `let x = value`.
fn single_assignments(body: &mut Block) {
    let mut p = 0;
    while p < body.len() {
        if let Stmt::Var { var: x, ty, .. } = &body[p] {
            let (x, ty) = (x.clone(), *ty);
            let mut assigns = 0;
            walk(body, &mut |s| assigns += matches!(s, Stmt::Assign { var, .. } if var == &x) as usize);
            let at = body.iter().position(|s| matches!(s, Stmt::Assign { var, .. } if var == &x));
            if let (1, Some(at)) = (assigns, at) {
                let read_before = body[p + 1..=at].iter().any(|s| {
                    let mut r = false;
                    walk(std::slice::from_ref(s), &mut |t| r |= stmt_exprs(t).iter().any(|e| e.reads_var(&x)));
                    r
                });
                if !read_before {
                    let Stmt::Assign { value, .. } = body[at].clone() else { unreachable!() };
                    body[at] = Stmt::Let { var: x, ty, value };
                    body.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
}

/// Is `s` a statement the interchange keeps the meaning of: no stores, no
/// output reads, no allocation, no parallel loop.
fn plain(s: &Stmt, out: &Name) -> bool {
    let ok = match s {
        Stmt::Let { .. } | Stmt::Var { .. } | Stmt::Assign { .. } | Stmt::If { .. } | Stmt::Check { .. } => true,
        Stmt::For { schedule, .. } => *schedule == Schedule::Seq,
        _ => false,
    };
    ok && !stmt_exprs(s).iter().any(|e| e.loads_from(&mut |b| b == out))
}

/// Calls `f` on every statement of `body`, nested ones included.
fn walk<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in body {
        f(s);
        match s {
            Stmt::For { body, .. } => walk(body, f),
            Stmt::If { then, els, .. } => {
                walk(then, f);
                walk(els, f);
            }
            _ => {}
        }
    }
}

/// The expressions of `s` itself (not of nested statements).
fn stmt_exprs(s: &Stmt) -> Vec<&Expr> {
    match s {
        Stmt::Let { value, .. } | Stmt::Assign { value, .. } => vec![value],
        Stmt::Var { init, .. } => vec![init],
        Stmt::Store { index, value, .. } | Stmt::AddAtomic { index, value, .. } => vec![index, value],
        Stmt::For { lo, hi, .. } => vec![lo, hi],
        Stmt::If { cond, .. } | Stmt::Check { cond, .. } => vec![cond],
        Stmt::Alloc { len, .. } => vec![len],
        Stmt::Sort { lo, len, .. } => vec![lo, len],
        Stmt::Barrier => vec![],
    }
}

/// Every expression of `s`, nested statements included.
fn all_exprs(s: &Stmt) -> Vec<&Expr> {
    let mut v = Vec::new();
    walk(std::slice::from_ref(s), &mut |t| v.extend(stmt_exprs(t)));
    v
}

/// Adds the names `body` declares (`let`, `var`, loop variables).
fn declared(body: &[Stmt], out: &mut HashSet<Name>) {
    walk(body, &mut |s| match s {
        Stmt::Let { var, .. } | Stmt::Var { var, .. } | Stmt::For { var, .. } => {
            out.insert(var.clone());
        }
        Stmt::Alloc { buf, .. } => {
            out.insert(buf.clone());
        }
        _ => {}
    });
}

/// Adds to `dep` the names of `body` that depend on a name in it: `let`s
/// whose value reads one, and every mutable local and nested loop variable
/// (conservatively).
fn dependents(blocks: &[&[Stmt]], dep: &mut HashSet<Name>) {
    loop {
        let before = dep.len();
        for body in blocks {
            walk(body, &mut |s| match s {
                Stmt::Let { var, value, .. } if value.reads_var_in(dep) => {
                    dep.insert(var.clone());
                }
                Stmt::Var { var, .. } | Stmt::For { var, .. } => {
                    dep.insert(var.clone());
                }
                _ => {}
            });
        }
        if dep.len() == before {
            return;
        }
    }
}

/// Whether `e` reads a name in `names` other than through a load's index
/// (a loaded value is data: it does not vary with the names its index reads
/// in any known way).
fn reads_directly(e: &Expr, names: &HashSet<Name>) -> bool {
    match e {
        Expr::Load { .. } => false,
        Expr::Var(v) => names.contains(v),
        e => e.children().any(|c| reads_directly(c, names)),
    }
}

/// `from` and the names of `blocks` computed from it by arithmetic (not
/// through a load): `let`s whose value reads one directly, loop variables
/// whose bounds do, mutable locals whose initial or assigned value does.
fn directly(blocks: &[&[Stmt]], from: &Name) -> HashSet<Name> {
    let mut set: HashSet<Name> = HashSet::from([from.clone()]);
    loop {
        let before = set.len();
        let mut add: Vec<Name> = Vec::new();
        for body in blocks {
            walk(body, &mut |s| match s {
                Stmt::Let { var, value: e, .. } | Stmt::Var { var, init: e, .. } | Stmt::Assign { var, value: e }
                    if reads_directly(e, &set) =>
                {
                    add.push(var.clone())
                }
                Stmt::For { var, lo, hi, .. } if reads_directly(lo, &set) || reads_directly(hi, &set) => {
                    add.push(var.clone())
                }
                _ => {}
            });
        }
        set.extend(add);
        if set.len() == before {
            return set;
        }
    }
}

/// The `let`s of `body` (nested ones included) by name; a name declared
/// twice is left out.
fn let_env(body: &[Stmt]) -> HashMap<Name, (Expr, ScalarType)> {
    let mut m: HashMap<Name, Option<(Expr, ScalarType)>> = HashMap::new();
    walk(body, &mut |s| match s {
        Stmt::Let { var, ty, value } => {
            m.entry(var.clone()).and_modify(|e| *e = None).or_insert(Some((value.clone(), *ty)));
        }
        Stmt::Var { var, .. } | Stmt::For { var, .. } => {
            m.insert(var.clone(), None);
        }
        _ => {}
    });
    m.into_iter().filter_map(|(k, v)| Some((k, v?))).collect()
}

/// Fresh names for a program.
struct Names(HashSet<Name>);

impl Names {
    fn of(prog: &LoopProgram) -> Names {
        let mut used: HashSet<Name> = prog.args.iter().map(|a| a.name.clone()).collect();
        declared(&prog.body, &mut used);
        walk(&prog.body, &mut |s| {
            for e in stmt_exprs(s) {
                e.collect_names(&mut used);
            }
        });
        Names(used)
    }

    fn fresh(&mut self, base: &str) -> Name {
        let mut k = 0;
        loop {
            let n: Name = if k == 0 { Name::from(base) } else { Name::from(format!("{base}{k}").as_str()) };
            if self.0.insert(n.clone()) {
                return n;
            }
            k += 1;
        }
    }
}

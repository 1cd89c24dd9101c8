//! Facts about arrays that rules may rely on, derived from heddle types.
//!
//! The central one: a size `toNat(A@(i+1) - A@i)` of a position-dependent
//! array `[i ↦ …]_N` is ≥ 0 for every `i` in `0..N-1` (sizes are checked to be
//! non-negative at run time), so `A` is **non-decreasing** on `0..N`. Only
//! then may `toNat(A@x - A@y)` be split into `toNat(A@x) - toNat(A@y)`.
//! Known values (`A@0 = 0` for the positions of a CSR matrix) let the
//! refined CSR index lose its ternary.

use crate::nat_lang::as_lookup;
use heddle_ir::expr::{BinOp, ExprKind};
use heddle_ir::nat::{CmpOp, NatCond, NatOp};
use heddle_ir::{Name, Nat, Type};
use std::collections::BTreeMap;

/// `array` is non-decreasing on the positions `lo ..= hi`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonDecreasing {
    /// The array variable.
    pub array: Name,
    /// First position of the range.
    pub lo: Nat,
    /// Last position of the range (inclusive).
    pub hi: Nat,
}

/// What the simplifier may assume beyond arithmetic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// Arrays known to be non-decreasing.
    pub non_decreasing: Vec<NonDecreasing>,
    /// Known array elements: `(array, position) ↦ value`.
    pub known: BTreeMap<(Name, i64), i64>,
    /// Free variables of a natural denote naturals, so are ≥ 0 (true by
    /// default: they are `nFun` parameters and position binders). Σ indices
    /// are never free in the input and are not covered by this.
    pub free_vars_nonneg: bool,
}

impl Default for Facts {
    fn default() -> Facts {
        Facts { non_decreasing: Vec::new(), known: BTreeMap::new(), free_vars_nonneg: true }
    }
}

impl Facts {
    /// No facts about arrays; free variables are naturals.
    pub fn new() -> Facts {
        Facts::default()
    }
    /// The facts a type states (see [`Facts::add_type`]).
    pub fn from_type(ty: &Type) -> Facts {
        let mut f = Facts::new();
        f.add_type(ty);
        f
    }
    /// Records that `array` is non-decreasing on `lo ..= hi`.
    pub fn with_non_decreasing(mut self, array: &str, lo: Nat, hi: Nat) -> Facts {
        self.non_decreasing.push(NonDecreasing { array: Name::from(array), lo, hi });
        self
    }
    /// Records `array@index = value`.
    pub fn with_value(mut self, array: &str, index: i64, value: i64) -> Facts {
        self.known.insert((Name::from(array), index), value);
        self
    }
    /// Is `array` known to be non-decreasing (on some range)?
    ///
    /// The range is not checked against the positions of a particular lookup:
    /// inside a Σ the positions are bound indices whose ranges are only known
    /// in context. The fact is recorded where the size is introduced, and a
    /// formula built from that type only looks the array up at positions the
    /// type itself uses.
    pub fn is_non_decreasing(&self, array: &str) -> bool {
        self.non_decreasing.iter().any(|f| f.array.as_str() == array)
    }
    /// The known value of `array@index`.
    pub fn value_at(&self, array: &str, index: i64) -> Option<i64> {
        self.known.get(&(Name::from(array), index)).copied()
    }

    /// Walks a type and records the facts its position-dependent array sizes
    /// state: for `[i ↦ T]_N` with a size `toNat(A@(i+d+1) - A@(i+d))`
    /// somewhere in `T`, `A` is non-decreasing on `d ..= N+d`; for the
    /// refined CSR size `toNat(A@(i+1)) - (i == 0 ? 0 : toNat(A@i))`, `A` is
    /// non-decreasing on `1 ..= N`.
    pub fn add_type(&mut self, ty: &Type) {
        match ty {
            Type::Array { binder, elem, len } => {
                if let Some(i) = binder {
                    let mut found = Vec::new();
                    elem.for_each_nat(&mut |n| visit(n, &mut |m| found.extend(size_fact(m, i, len))));
                    for f in found {
                        if !self.non_decreasing.contains(&f) {
                            self.non_decreasing.push(f);
                        }
                    }
                }
                self.add_type(elem);
            }
            Type::Tuple(ts) => ts.iter().for_each(|t| self.add_type(t)),
            Type::Fun { from, to, .. } => {
                self.add_type(from);
                self.add_type(to);
            }
            Type::NatFun { body, .. } => self.add_type(body),
            Type::Scalar(_) | Type::Vector { .. } | Type::Tensor(_) | Type::Meta(_) => {}
        }
    }
}

fn visit(n: &Nat, f: &mut dyn FnMut(&Nat)) {
    f(n);
    n.for_each_child(&mut |c| visit(c, f));
}

/// `Some(d)` when `e = i + d` for a constant `d`.
fn offset_from(e: &Nat, i: &Name) -> Option<i64> {
    Nat::sub(e.clone(), Nat::Var(i.clone())).const_value()
}

fn size_fact(n: &Nat, i: &Name, len: &Nat) -> Option<NonDecreasing> {
    match n {
        // toNat(A@x - A@y) with x = y + 1 = i + d + 1
        Nat::ToNat(e) => {
            let ExprKind::Binary { op: BinOp::Sub, lhs, rhs } = &e.kind else { return None };
            let (a, x) = as_lookup(lhs)?;
            let (b, y) = as_lookup(rhs)?;
            if a != b || Nat::sub(x, y.clone()).const_value() != Some(1) {
                return None;
            }
            // y = i + d for any d free of i: a constant in a CSR-like level, the
            // start of the parent's segment (`A_pos1@p0`) in a CSF tensor's inner levels.
            let d = Nat::sub(y.clone(), Nat::Var(i.clone())).normalize();
            if d.mentions(i) {
                return None;
            }
            Some(NonDecreasing { array: a, lo: d.clone(), hi: Nat::add(len.clone(), d).normalize() })
        }
        // toNat(A@(i+1)) - (i == 0 ? 0 : toNat(A@i))
        Nat::Bin(NatOp::Sub, p, q) => {
            let Nat::ToNat(pe) = &**p else { return None };
            let Nat::Cond(c, zero, r) = &**q else { return None };
            let NatCond::Cmp(CmpOp::Eq, ci, c0) = &**c else { return None };
            if **zero != Nat::Lit(0) || *ci != Nat::Var(i.clone()) || *c0 != Nat::Lit(0) {
                return None;
            }
            let Nat::ToNat(re) = &**r else { return None };
            let (a, x) = as_lookup(pe)?;
            let (b, y) = as_lookup(re)?;
            if a != b || offset_from(&x, i) != Some(1) || offset_from(&y, i) != Some(0) {
                return None;
            }
            Some(NonDecreasing { array: a, lo: Nat::Lit(1), hi: len.clone() })
        }
        _ => None,
    }
}

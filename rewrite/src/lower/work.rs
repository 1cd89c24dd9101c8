//! The work estimate of a parallel loop (`LoopProgram::parallel_work`): what
//! the CPU runtime splits a launch by, and compares with the cost below
//! which a launch stays on one thread (`heddle_runtime::cpu::split`).
//!
//! One iteration's work is its element's length (a CSR row's nonzeros, a
//! SELL slice's steps) times the *lanes* of one inner element: the scalars
//! one step goes through when that inner element has a length fixed in the
//! program (a SELL-8 step is 8 lanes, a BSR(2, 4) block 8 products, a
//! `<float>4` vector 4). A step of 8 lanes does about the work of 8 CSR
//! nonzeros, so without the lanes SELL-8 would look 8 times cheaper than
//! CSR for the same matrix and stay on one thread where CSR splits.

use super::emit::inline_lets;
use super::{Env, Lowerer};
use heddle_ir::loops::{BinOp, Block, Expr as L, ParallelWork, Stmt};
use heddle_ir::{Name, Nat, Type};

impl Lowerer<'_> {
    /// The work of the parallel iterations over `var`: the length of one
    /// iteration's element if that is an array (0 otherwise) times its
    /// elements' lanes ([`lanes`]), and the sum of that over the iterations
    /// before `var` when it has a closed form.
    pub(super) fn work_estimate(&mut self, var: &Name, elem_ty: &Type, env: &Env) -> ParallelWork {
        let none = |items| ParallelWork { var: var.clone(), items, before: None };
        let Some((len, lanes)) = work_len(elem_ty) else { return none(L::index(0)) };
        let times_lanes = |e: L| if lanes > 1 { L::bin(BinOp::Mul, e, L::index(lanes)) } else { e };
        // Only a plain expression over the arguments and the loop variable can be
        // evaluated by the runtime before the launch.
        let plain = |cx: &mut Self, n: &Nat| {
            let mut sink = Block::new();
            let e = cx.index_expr(n, env, &mut sink).ok()?;
            sink.iter().all(|s| matches!(s, Stmt::Let { .. })).then(|| inline_lets(e, &sink))
        };
        let Some(items) = plain(self, len) else { return none(L::index(0)) };
        // Σ(k = 0 .. var - 1, len[var := k]): CSR's telescopes to one difference.
        // (The lanes multiply the closed form, not the sum, which the
        // simplifier then need not see through.)
        let k = self.fresh("k");
        let before = Nat::Sum {
            var: k.clone(),
            lo: Box::new(Nat::Lit(0)),
            hi: Box::new(Nat::sub(Nat::Var(var.clone()), Nat::Lit(1))),
            body: Box::new(len.subst(var, &Nat::Var(k))),
        };
        let closed = crate::simplify(&env.subst_nat(&before), &self.facts, &self.options.limits).nat;
        let before = if closed.has_sum() { None } else { plain(self, &closed) };
        ParallelWork { var: var.clone(), items: times_lanes(items), before: before.map(times_lanes) }
    }
}

/// The length that weighs an element of a parallel loop, and the lanes of
/// one of its inner elements: an array's, or for a stored level's element,
/// `(coordinate, child)`, its child's (DCSR's row, a CSF slice's fibres).
/// `None` for scalars and tuples without an array.
fn work_len(elem_ty: &Type) -> Option<(&Nat, i64)> {
    fn of_array(t: &Type) -> Option<(&Nat, i64)> {
        match t {
            Type::Array { len, elem, .. } => Some((len, lanes(elem))),
            _ => None,
        }
    }
    match elem_ty {
        Type::Tuple(fields) => fields.iter().rev().find_map(of_array),
        t => of_array(t),
    }
}

/// The most lanes one inner element is counted as: far more than any
/// layout's (SELL's at most 64, a BSR block's a few dozen), small enough
/// that no product of lanes and lengths the runtime evaluates overflows.
const MAX_LANES: i64 = 1 << 16;

/// The scalars one inner element of a parallel iteration works through when
/// that is fixed by the program: a literal-length array's length times its
/// elements' lanes (SELL-C's step `[T]_C`: C; a BSR block `[[T]_c]_r`: r·c),
/// a vector's width, a tuple's widest field (a step's columns and values are
/// the same lanes); 1 for a scalar, and for an array whose length depends on
/// the data (its work is not known before the launch).
pub(super) fn lanes(elem: &Type) -> i64 {
    let n = match elem {
        Type::Array { len: Nat::Lit(n), elem, .. } => n.saturating_mul(lanes(elem)),
        Type::Vector { width: Nat::Lit(w), .. } => *w,
        Type::Tuple(fields) => fields.iter().map(lanes).max().unwrap_or(1),
        _ => 1,
    };
    n.clamp(1, MAX_LANES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heddle_ir::ScalarType;

    fn array(elem: Type, len: Nat) -> Type {
        Type::Array { binder: None, elem: Box::new(elem), len }
    }

    #[test]
    fn lanes_count_fixed_length_inner_elements() {
        let f = Type::Scalar(ScalarType::F32);
        let i = Type::Scalar(ScalarType::I32);
        assert_eq!(lanes(&f), 1);
        // A SELL-8 step, and one of columns and values.
        assert_eq!(lanes(&array(f.clone(), Nat::Lit(8))), 8);
        assert_eq!(lanes(&Type::Tuple(vec![array(i.clone(), Nat::Lit(8)), array(f.clone(), Nat::Lit(8))])), 8);
        // A BSR(2, 4) block.
        assert_eq!(lanes(&array(array(f.clone(), Nat::Lit(4)), Nat::Lit(2))), 8);
        assert_eq!(lanes(&Type::Vector { elem: Box::new(f.clone()), width: Nat::Lit(4) }), 4);
        // A length known only at run time counts as one.
        assert_eq!(lanes(&array(f.clone(), Nat::Var("m".into()))), 1);
        assert_eq!(lanes(&array(f.clone(), Nat::Lit(0))), 1);
        assert_eq!(lanes(&array(array(f, Nat::Lit(1 << 40)), Nat::Lit(1 << 40))), MAX_LANES);
    }

    #[test]
    fn the_work_length_is_the_element_array_and_its_lanes() {
        let f = Type::Scalar(ScalarType::F64);
        let steps = Nat::Var("w".into());
        // A SELL-8 slice: steps of 8 lanes.
        let slice = array(array(f.clone(), Nat::Lit(8)), steps.clone());
        assert_eq!(work_len(&slice), Some((&steps, 8)));
        // A CSR row of scalars.
        let row = array(f.clone(), steps.clone());
        assert_eq!(work_len(&row), Some((&steps, 1)));
        // DCSR's (coordinate, row).
        let pair = Type::Tuple(vec![Type::Scalar(ScalarType::I64), row]);
        assert_eq!(work_len(&pair), Some((&steps, 1)));
        assert_eq!(work_len(&f), None);
    }
}

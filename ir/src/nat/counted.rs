//! Counted sizes: array lengths known only after a counting phase.
//!
//! The result of co-iterating two sparse rows (`union`, `intersect`) or of
//! compressing a workspace (`compressAdd`) has a length that no formula over
//! the inputs gives: it is known once the pattern has run. `prims.sig` writes
//! such a length `counted`; the type checker gives each use its own *count
//! array* `count#k` and the length `toNat(count#k)`. A map (or `generate`)
//! around it makes the length depend on the position, so under
//! `map` over `i` it becomes `toNat(count#k@i)`, under two maps
//! `toNat(count#k@i@j)`: exactly the shape of LIL's row lengths, with the
//! count array in place of an input.
//!
//! That is the *attribute query* of sparse format conversion (Chou et al.):
//! compiled code first runs a counting phase that fills `count#k` (one
//! kernel), the host sums it into row offsets and allocates the result (the
//! ordinary Σ elimination of a position-dependent type), and the kernel then
//! fills the rows. The interpreter just runs the pattern.

use super::Nat;
use crate::expr::{Expr, ExprKind};
use crate::name::Name;
use crate::types::Type;

/// How `prims.sig` spells a counted length.
pub const COUNTED: &str = "counted";

/// The prefix of count arrays' names (`count#1`): `#` cannot start or occur
/// in a program name, so these never clash with the program's.
pub const COUNT_PREFIX: &str = "count#";

/// Is `n` the name of a count array?
pub fn is_count_name(n: &Name) -> bool {
    n.as_str().starts_with(COUNT_PREFIX)
}

/// The length `toNat(name)` of a fresh count array.
pub fn counted(name: Name) -> Nat {
    Nat::ToNat(Box::new(Expr::var(name)))
}

/// If `n` is a counted length `toNat(count#k@p1@…@pn)`: the count array and
/// the positions it is indexed by, outermost first.
pub fn as_counted(n: &Nat) -> Option<(Name, Vec<Expr>)> {
    let Nat::ToNat(e) = n else { return None };
    let mut path = Vec::new();
    let mut cur: &Expr = e;
    loop {
        match &cur.kind {
            ExprKind::Var(x) if is_count_name(x) => {
                path.reverse();
                return Some((x.clone(), path));
            }
            ExprKind::Index { array, index } => {
                path.push((**index).clone());
                cur = array;
            }
            _ => return None,
        }
    }
}

/// Does the natural mention a count array?
pub fn mentions_count(n: &Nat) -> bool {
    match n {
        Nat::ToNat(_) => as_counted(n).is_some(),
        _ => {
            let mut hit = false;
            n.for_each_child(&mut |c| hit |= mentions_count(c));
            hit
        }
    }
}

/// Makes every counted length in `n` depend on one more, outer, position:
/// `toNat(count#k@p…)` becomes `toNat(count#k@pos@p…)`.
pub fn lift(n: &Nat, pos: &Name) -> Nat {
    n.map_bottom_up(&mut |x| match as_counted(&x) {
        Some((name, path)) => {
            let base = Expr::var(name);
            let at = |a: Expr, i: Expr| Expr::synth(ExprKind::Index { array: Box::new(a), index: Box::new(i) });
            let e = std::iter::once(Expr::var(pos.clone())).chain(path).fold(base, at);
            Nat::ToNat(Box::new(e))
        }
        None => x,
    })
}

impl Type {
    /// Does a counted length occur anywhere in this type?
    pub fn mentions_count(&self) -> bool {
        let mut hit = false;
        self.map_nats(&mut |n| {
            hit |= mentions_count(n);
            n.clone()
        });
        hit
    }

    /// [`lift`] on every natural of the type.
    pub fn lift_counts(&self, pos: &Name) -> Type {
        self.map_nats(&mut |n| lift(n, pos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifting_adds_the_outer_position_first() {
        let n = counted(Name::from("count#1"));
        assert_eq!(as_counted(&n), Some((Name::from("count#1"), vec![])));
        let once = lift(&n, &Name::from("j"));
        let twice = lift(&once, &Name::from("i"));
        let (name, path) = as_counted(&twice).unwrap();
        assert_eq!(name.as_str(), "count#1");
        assert_eq!(path, vec![Expr::var("i"), Expr::var("j")]);
        assert_eq!(twice.to_string(), "toNat(count#1@i@j)");
        assert!(mentions_count(&Nat::add(twice, Nat::Lit(1))));
        assert!(!mentions_count(&Nat::var("n")));
    }
}

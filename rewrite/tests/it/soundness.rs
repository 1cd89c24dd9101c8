//! Property tests: simplification preserves the value of every natural.

use crate::common;
use common::ArrayEnv;
use heddle_ir::expr::{BinOp, ExprKind};
use heddle_ir::nat::{CmpOp, NatCond, NatOp};
use heddle_ir::{Expr, Name, Nat};
use heddle_rewrite::{Facts, Limits, nat_to_rec, rec_to_nat, simplify};
use proptest::prelude::*;

fn lookup(a: &str, idx: Nat) -> Expr {
    Expr::synth(ExprKind::Index { array: Box::new(Expr::var(a)), index: Box::new(Expr::from_nat(&idx)) })
}

fn small_index() -> impl Strategy<Value = Nat> {
    prop_oneof![
        Just(Nat::var("k")),
        Just(Nat::add(Nat::var("k"), Nat::Lit(1))),
        Just(Nat::var("a")),
        (0i64..4).prop_map(Nat::Lit),
    ]
}

fn leaf() -> impl Strategy<Value = Nat> {
    prop_oneof![
        prop_oneof![Just("a"), Just("b"), Just("k")].prop_map(Nat::var),
        (0i64..5).prop_map(Nat::Lit),
        (prop_oneof![Just("A"), Just("B")], small_index()).prop_map(|(a, i)| Nat::ToNat(Box::new(lookup(a, i)))),
        // the CSR size: toNat(A@(x+1) - A@x)
        (prop_oneof![Just("A"), Just("B")], small_index()).prop_map(|(a, i)| {
            let e = Expr::synth(ExprKind::Binary {
                op: BinOp::Sub,
                lhs: Box::new(lookup(a, Nat::add(i.clone(), Nat::Lit(1)))),
                rhs: Box::new(lookup(a, i)),
            });
            Nat::ToNat(Box::new(e))
        }),
        // the refined CSR size
        Just(Nat::sub(
            Nat::ToNat(Box::new(lookup("A", Nat::add(Nat::var("k"), Nat::Lit(1))))),
            Nat::Cond(
                Box::new(NatCond::Cmp(CmpOp::Eq, Nat::var("k"), Nat::Lit(0))),
                Box::new(Nat::Lit(0)),
                Box::new(Nat::ToNat(Box::new(lookup("A", Nat::var("k"))))),
            ),
        )),
    ]
}

fn bound() -> impl Strategy<Value = Nat> {
    prop_oneof![
        (-3i64..4).prop_map(|v| if v < 0 { Nat::sub(Nat::Lit(0), Nat::Lit(-v)) } else { Nat::Lit(v) }),
        Just(Nat::var("a")),
        Just(Nat::sub(Nat::var("a"), Nat::Lit(1))),
        Just(Nat::add(Nat::var("b"), Nat::Lit(2))),
    ]
}

fn nat_strategy() -> impl Strategy<Value = Nat> {
    leaf().prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::add(a, b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::sub(a, b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::mul(a, b)),
            (inner.clone(), 1i64..4).prop_map(|(a, c)| Nat::div(a, Nat::Lit(c))),
            (inner.clone(), 1i64..4).prop_map(|(a, c)| Nat::bin(NatOp::Mod, a, Nat::Lit(c))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::bin(NatOp::Min, a, b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::bin(NatOp::Max, a, b)),
            (inner.clone(), inner.clone(), inner.clone(), 0usize..3).prop_map(|(x, a, b, op)| {
                let op = [CmpOp::Eq, CmpOp::Lt, CmpOp::Ne][op];
                Nat::Cond(Box::new(NatCond::Cmp(op, x, Nat::Lit(0))), Box::new(a), Box::new(b))
            }),
            (bound(), bound(), inner.clone()).prop_map(|(lo, hi, body)| Nat::sum("k", lo, hi, body)),
            (bound(), bound(), inner.clone()).prop_map(|(lo, hi, body)| Nat::sum(
                "k",
                lo,
                hi,
                Nat::mul(Nat::var("k"), body)
            )),
        ]
    })
}

fn non_decreasing() -> impl Strategy<Value = Vec<i64>> {
    proptest::collection::vec(0i64..5, 1..10).prop_map(|steps| {
        let mut acc = 0;
        steps
            .into_iter()
            .map(|s| {
                acc += s;
                acc
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn simplify_preserves_values(n in nat_strategy(), a in 0i64..6, b in 0i64..6, k in 0i64..6,
                                 xs in non_decreasing(), ys in non_decreasing(), known in any::<bool>()) {
        let mut env = ArrayEnv::default();
        env.vars.insert(Name::from("a"), a);
        env.vars.insert(Name::from("b"), b);
        env.vars.insert(Name::from("k"), k);
        let mut facts = Facts::new()
            .with_non_decreasing("A", Nat::Lit(0), Nat::Lit(xs.len() as i64 - 1))
            .with_non_decreasing("B", Nat::Lit(0), Nat::Lit(ys.len() as i64 - 1));
        if known {
            facts = facts.with_value("A", 0, xs[0]);
        }
        env.arrays.insert(Name::from("A"), xs);
        env.arrays.insert(Name::from("B"), ys);
        let s = simplify(&n, &facts, &Limits::default());
        if let Ok(v) = n.eval(&env) {
            prop_assert_eq!(s.nat.eval(&env), Ok(v), "\n  input: {}\n output: {}", n, s.nat);
        }
    }

    #[test]
    fn conversion_round_trips(n in nat_strategy()) {
        let mut table = Default::default();
        let rec = nat_to_rec(&n, &mut table);
        let back = rec_to_nat(&rec, &table).unwrap();
        // Exact up to spans (the converter rebuilds lookups synthetically).
        prop_assert_eq!(back.to_string(), n.to_string());
        prop_assert_eq!(nat_to_rec(&back, &mut table), rec);
    }
}

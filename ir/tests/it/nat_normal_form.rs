//! Normalisation preserves value: for random naturals and random variable
//! assignments, `n.normalize()` evaluates to what `n` evaluates to.

use heddle_ir::Name;
use heddle_ir::nat::{CmpOp, Nat, NatCond, NatOp};
use heddle_ir::parser::parse_nat;
use proptest::prelude::*;
use std::collections::HashMap;

const VARS: [&str; 3] = ["n", "m", "k"];

fn leaf() -> impl Strategy<Value = Nat> {
    prop_oneof![(0i64..7).prop_map(Nat::Lit), (0usize..3).prop_map(|i| Nat::var(VARS[i]))]
}

fn nat() -> impl Strategy<Value = Nat> {
    leaf().prop_recursive(4, 40, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::add(a, b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::sub(a, b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::mul(a, b)),
            (inner.clone(), 1i64..5).prop_map(|(a, c)| Nat::div(a, Nat::Lit(c))),
            (inner.clone(), 1i64..5).prop_map(|(a, c)| Nat::bin(NatOp::Mod, a, Nat::Lit(c))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::bin(NatOp::Min, a, b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Nat::bin(NatOp::Max, a, b)),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(a, b, c)| {
                Nat::Cond(
                    Box::new(NatCond::Cmp(CmpOp::Lt, a, b)),
                    Box::new(c.clone()),
                    Box::new(Nat::add(c, Nat::Lit(1))),
                )
            }),
            // Σ with a non-zero lower bound and a body using both the index and a free variable.
            (0i64..3, inner.clone(), inner)
                .prop_map(|(lo, hi, body)| { Nat::sum("j", Nat::Lit(lo), hi, Nat::add(Nat::var("j"), body)) }),
        ]
    })
}

fn env(vals: &[i64; 3]) -> HashMap<Name, i64> {
    VARS.iter().zip(vals).map(|(v, x)| (Name::from(*v), *x)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn normalize_preserves_value(n in nat(), vals in prop::array::uniform3(0i64..9)) {
        let env = env(&vals);
        if let Ok(expected) = n.eval(&env) {
            let normal = n.normalize();
            prop_assert_eq!(normal.eval(&env), Ok(expected), "{} normalised to {}", n, normal);
        }
    }

    #[test]
    fn normal_form_is_canonical(n in nat()) {
        let once = n.normalize();
        prop_assert_eq!(once.normalize(), once.clone(), "normalising {} twice changed it", n);
        prop_assert!(n.equiv(&once));
        // The printed normal form parses back to the same natural.
        let text = once.to_string();
        let reparsed = parse_nat(&text).map_err(|e| TestCaseError::fail(format!("{text}: {}", e.message)))?;
        prop_assert!(reparsed.equiv(&once), "{} reparsed as {}", text, reparsed);
    }
}

#[test]
fn decides_the_equalities_the_type_checker_needs() {
    let eq = |a: &str, b: &str| parse_nat(a).unwrap().equiv(&parse_nat(b).unwrap());
    assert!(eq("n + 1", "1 + n"));
    assert!(eq("(n + 1) * (n - 1)", "n * n - 1"));
    assert!(eq("n * (n + 1) / 2 * 2", "n * n + n"));
    assert!(eq("4 * (n / 4)", "4 * (n / 4)"));
    assert!(eq("sum(i = 0 .. n - 1, i)", "sum(j = 0 .. n - 1, j)"), "alpha-equivalent sums are equal");
    assert!(eq("sum(i = 2 .. 4, i * m)", "9 * m"), "short constant ranges are expanded");
    assert!(eq("n == n ? 3 : m", "3"));
    assert!(eq("min(n, n + 2)", "n"));
    assert!(eq("(6 * n + 4) % 2", "0"));
    assert!(!eq("n", "m"));
    assert!(!eq("n / 2 * 2", "n"), "floor division is not exact");
    assert!(!eq("(n * n + n) / 3 * 3", "n * n + n"));
}

#[test]
fn sum_binder_is_chosen_after_normalising_the_body() {
    // `k % 1` is 0: the name `k` must be free for the binder, and stay so.
    let n = parse_nat("sum(j = 0 .. min(0, n), j + k % 1)").unwrap();
    let once = n.normalize();
    assert_eq!(once.normalize(), once, "{once}");
}

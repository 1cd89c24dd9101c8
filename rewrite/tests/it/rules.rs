//! Rule-level tests, egg's `test_fn!` style, and the blow-up case.

use crate::common;
use common::nat;
use heddle_rewrite::rules::{NatRewrite, default_rules, ring_ac};
use heddle_rewrite::{Facts, Limits, StopReason, simplify, simplify_with};
use std::time::Duration;

/// `simplifies!(name, facts, "input" => "expected")`: the result must be
/// equivalent (by normal form) to `expected`, and Σ-free iff it is.
macro_rules! simplifies {
    ($name:ident, $facts:expr, $input:literal => $expected:literal) => {
        #[test]
        fn $name() {
            let s = simplify(&nat($input), &$facts, &Limits::default());
            let want = nat($expected);
            assert!(s.nat.equiv(&want), "{} simplified to {}, expected {}", $input, s.nat, want);
            assert_eq!(s.residual_sums.is_empty(), !want.has_sum(), "residual sums of {}", s.nat);
            assert!(!matches!(s.stats.stop_reason, StopReason::Other(_)), "{:?}", s.stats.stop_reason);
        }
    };
}

simplifies!(empty_range, Facts::new(), "sum(k = n + 1 .. n, toNat(A@k))" => "0");
simplifies!(constant_body, Facts::new(), "sum(k = 2 .. n + 1, m)" => "n * m");
simplifies!(constant_body_maybe_empty, Facts::new(), "sum(k = a .. b, 3)" => "max(0, b - a + 1) * 3");
simplifies!(gauss_from_zero, Facts::new(), "sum(k = 0 .. n, k)" => "n * (n + 1) / 2");
simplifies!(gauss_from_one, Facts::new(), "sum(k = 1 .. n, k)" => "n * (n + 1) / 2");
simplifies!(polynomial_body, Facts::new(), "sum(k = 0 .. n - 1, 2 * k + m)" => "n * (n - 1) + n * m");
simplifies!(linearity_with_factor, Facts::new(), "sum(k = 0 .. n - 1, m * toNat(A@(k + 1)) - m * toNat(A@k))" => "m * toNat(A@n) - m * toNat(A@0)");
simplifies!(telescope_lower_bound_3, Facts::new(), "sum(k = 3 .. n + 2, toNat(A@(k + 1)) - toNat(A@k))" => "toNat(A@(n + 3)) - toNat(A@3)");
simplifies!(telescope_reversed, Facts::new(), "sum(k = 0 .. n, toNat(A@k) - toNat(A@(k + 1)))" => "toNat(A@0) - toNat(A@(n + 1))");
simplifies!(tonat_split_needs_fact, Facts::new(), "sum(k = 0 .. n - 1, toNat(A@(k + 1) - A@k))" => "sum(k = 0 .. n - 1, toNat(A@(k + 1) - A@k))");
simplifies!(tonat_split_with_fact, Facts::new().with_non_decreasing("A", nat("0"), nat("n")), "sum(k = 0 .. n - 1, toNat(A@(k + 1) - A@k))" => "toNat(A@n) - toNat(A@0)");
simplifies!(split_at_ternary, Facts::new(), "sum(k = 0 .. n, k == 2 ? m : 1)" => "min(n, 1) + max(0, n - 2) + (0 <= 2 && 2 <= n ? m : 0) + 1");
simplifies!(ternary_at_zero, Facts::new(), "toNat(A@n) + (n == 0 ? 0 : n * 2)" => "toNat(A@n) + n * 2");
simplifies!(known_value, Facts::new().with_value("A", 0, 0), "i == 0 ? 0 : toNat(A@i)" => "toNat(A@i)");
simplifies!(min_by_interval, Facts::new(), "min(n + 1, n) + max(0, m)" => "n + m");
simplifies!(div_of_multiple, Facts::new(), "(n * 4) / 4 + (n * 4) % 4" => "n");
simplifies!(lil_has_no_closed_form, Facts::new(), "sum(k = 0 .. i - 1, toNat(L@k)) + j" => "sum(k = 0 .. i - 1, toNat(L@k)) + j");
// Two nested compressed levels under a Σ (a rank-4 CSF tensor's flat positions): the inner Σ
// telescopes with the guard `toNat(A@(k + 1)) - toNat(A@k) >= 0`, which the facts decide (a split
// size of a non-decreasing array is ≥ 0), so the outer Σ telescopes too.
simplifies!(nested_telescope_drops_the_guard,
    Facts::new().with_non_decreasing("A", nat("0"), nat("n")).with_non_decreasing("B", nat("0"), nat("toNat(A@n)")),
    "sum(k = 0 .. n - 1, sum(j = 0 .. toNat(A@(k + 1) - A@k) - 1, toNat(B@(A@k + j + 1) - B@(A@k + j))))"
        => "toNat(B@(A@n)) - toNat(B@(A@0))");

/// The bounds behind `nested_telescope_drops_the_guard`: a difference of lookups into a
/// non-decreasing array at positions whose order is provable is ≥ 0, and only then.
#[test]
fn split_sizes_of_non_decreasing_arrays_are_nonnegative() {
    use heddle_rewrite::refine::Ctx;
    let facts = Facts::new().with_non_decreasing("A", nat("0"), nat("n"));
    let ctx = Ctx::new(&facts);
    let lo = |s: &str| ctx.bounds(&nat(s)).lo;
    assert_eq!(lo("toNat(A@(k + 1)) - toNat(A@k)"), Some(0));
    assert_eq!(lo("toNat(A@(k + 2)) - toNat(A@k) + 3"), Some(3));
    assert_eq!(lo("2 * toNat(A@(k + 1)) - 2 * toNat(A@k)"), Some(0));
    // Nested: the outer positions are ordered because the inner difference is ≥ 0.
    assert_eq!(lo("toNat(A@(A@(k + 1))) - toNat(A@(A@k))"), Some(0));
    // Not provable: the wrong order, unrelated positions, more subtracted than added,
    // an array without the fact.
    assert_eq!(lo("toNat(A@k) - toNat(A@(k + 1))"), None);
    assert_eq!(lo("toNat(A@k) - toNat(A@m)"), None);
    assert_eq!(lo("toNat(A@(k + 1)) - 2 * toNat(A@k)"), None);
    assert_eq!(lo("toNat(B@(k + 1)) - toNat(B@k)"), None);
    assert_eq!(Ctx::new(&Facts::new()).bounds(&nat("toNat(A@(k + 1)) - toNat(A@k)")).lo, None);
}

#[test]
fn split_at_ternary_removes_the_sum_for_a_concrete_point() {
    // Σ_{k=0}^{n} (k == 2 ? m : 1) = n + (2 ≤ n ? m : 0) for n ≥ 2.
    let s = simplify(&nat("sum(k = 0 .. n + 2, k == 2 ? m : 1)"), &Facts::new(), &Limits::default());
    assert!(s.residual_sums.is_empty(), "{}", s.nat);
    assert!(s.nat.equiv(&nat("n + 2 + m")), "{}", s.nat);
}

#[test]
fn blow_up_stops_at_the_node_limit_and_says_so() {
    let terms: Vec<String> = (0..14).map(|i| format!("toNat(A@x{i})")).collect();
    let n = nat(&terms.join(" + "));
    let mut rules: Vec<NatRewrite> = default_rules();
    rules.extend(ring_ac());
    let limits = Limits { node_limit: 3_000, iter_limit: 1_000, time_limit: Duration::from_secs(60) };
    let s = simplify_with(&n, &Facts::new(), &limits, &rules);
    assert_eq!(s.stats.stop_reason, StopReason::NodeLimit(3_000));
    assert!(s.stats.egraph_nodes > 3_000);
    assert!(s.nat.equiv(&n));
}

#[test]
fn blow_up_stops_at_the_iteration_limit_and_says_so() {
    let terms: Vec<String> = (0..14).map(|i| format!("toNat(A@x{i})")).collect();
    let n = nat(&terms.join(" + "));
    let mut rules = default_rules();
    rules.extend(ring_ac());
    let limits = Limits { node_limit: 1_000_000, iter_limit: 2, time_limit: Duration::from_secs(60) };
    let s = simplify_with(&n, &Facts::new(), &limits, &rules);
    assert_eq!(s.stats.stop_reason, StopReason::IterationLimit(2));
    assert_eq!(s.stats.iterations, 2);
}

#[test]
fn cheap_path_skips_the_egraph() {
    let s = simplify(&nat("n + 1 + n"), &Facts::new(), &Limits::default());
    assert!(matches!(s.stats.stop_reason, StopReason::NotRun(_)));
    assert_eq!(s.stats.egraph_nodes, 0);
    assert_eq!(s.nat, nat("2 * n + 1"));
}

#[test]
fn arbitrary_user_input_does_not_panic() {
    for text in [
        "0 - 9223372036854775807 - 1",
        "sum(k = 0 .. 9223372036854775807, k * k * k * k)",
        "n / 0 + n % 0",
        "sum(k = 0 .. n, sum(k = k .. n, k))",
        "toNat(f(x)) + toNat(xs@(1 + 2))",
        "max(min(n, 0), 0 - n) * 9223372036854775807 * 9223372036854775807",
    ] {
        let s = simplify(&nat(text), &Facts::new(), &Limits::default());
        let _ = s.nat.to_string();
    }
}

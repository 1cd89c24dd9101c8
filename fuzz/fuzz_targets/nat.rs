//! Naturals (`heddle simplify --nat`): the parser, the polynomial normal
//! form, and Σ elimination in an e-graph under tight limits. Each must
//! finish in bounded time (libFuzzer's -timeout is the judge), and the
//! normal form and the simplified natural must equal the input at small
//! values of its variables wherever all three evaluate.
#![no_main]

use heddle_ir::nat::poly::Poly;
use heddle_ir::{Name, Nat};
use heddle_rewrite::{simplify, Facts, Limits};
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;
use std::time::Duration;

/// Free variables (Σ indices included: harmless extra bindings).
fn vars(n: &Nat, out: &mut Vec<Name>) {
    if let Nat::Var(x) = n
        && !out.contains(x)
    {
        out.push(x.clone());
    }
    n.for_each_child(&mut |c| vars(c, out));
}

/// No literal above 64: evaluation then stays quick (a Σ's range is small).
fn small(n: &Nat) -> bool {
    let mut ok = !matches!(n, Nat::Lit(v) if *v > 64);
    n.for_each_child(&mut |c| ok &= small(c));
    ok
}

fuzz_target!(|data: &[u8]| {
    let Some(src) = heddle_fuzz::text(data) else { return };
    let Ok(nat) = heddle_ir::parser::parse_nat(src) else { return };
    let normal = Poly::from_nat(&nat).to_nat();
    let limits = Limits { node_limit: 2_000, iter_limit: 8, time_limit: Duration::from_millis(100) };
    let simplified = simplify(&nat, &Facts::new(), &limits).nat;
    if !small(&nat) {
        return;
    }
    let mut names = Vec::new();
    vars(&nat, &mut names);
    for seed in 0..4u64 {
        let env: HashMap<Name, i64> = names.iter().enumerate().map(|(k, x)| (x.clone(), ((seed * 7 + k as u64 * 3) % 6) as i64)).collect();
        let Ok(want) = nat.eval(&env) else { continue };
        if let Ok(got) = normal.eval(&env) {
            assert_eq!(got, want, "normal form {normal} of {nat} at {env:?}");
        }
        if let Ok(got) = simplified.eval(&env) {
            assert_eq!(got, want, "simplified {simplified} of {nat} at {env:?}");
        }
    }
});

//! The index formulas of the paper's listings, before and after.

use crate::common;
use common::nat;
use heddle_ir::parser::parse_type;
use heddle_rewrite::{Facts, Limits, StopReason, flat_index, simplify};

fn report(ty: &str, facts: impl Fn(&heddle_ir::Type) -> Facts) -> (String, heddle_rewrite::Simplified) {
    let ty = parse_type(ty).expect("test type parses");
    let before = flat_index(&ty, &[nat("i"), nat("j")]).expect("flattens");
    let s = simplify(&before, &facts(&ty), &Limits::default());
    let residual: Vec<String> = s.residual_sums.iter().map(|n| n.to_string()).collect();
    (format!("before:   {before}\nafter:    {}\nresidual: {residual:?}\nstop:     {:?}", s.nat, s.stats.stop_reason), s)
}

#[test]
fn csr_listing_4() {
    let (text, s) = report("[i -> [float]_{toNat(offset@(i+1) - offset@i)}]_n", Facts::from_type);
    insta::assert_snapshot!(text);
    assert!(s.residual_sums.is_empty());
    assert!(s.nat.equiv(&nat("toNat(offset@i) - toNat(offset@0) + j")), "{}", s.nat);
    assert_eq!(s.stats.stop_reason, StopReason::Saturated);
}

#[test]
fn csr_without_the_type_fact_keeps_the_sum() {
    // Without the fact the toNat may not be split, so the Σ cannot telescope.
    let (_, s) = report("[i -> [float]_{toNat(offset@(i+1) - offset@i)}]_n", |_| Facts::new());
    assert_eq!(s.residual_sums.len(), 1);
}

#[test]
fn csr_refined() {
    let ty = "[i -> [float]_{toNat(offset@(i+1)) - (i == 0 ? 0 : toNat(offset@i))}]_n";
    let (text, s) = report(ty, Facts::from_type);
    insta::assert_snapshot!(text);
    assert!(s.residual_sums.is_empty());
    // Exact without knowing offset@0: row 0 starts at slot 0.
    assert_eq!(s.nat.to_string(), "j + (i == 0 ? 0 : toNat(offset@i))");
}

#[test]
fn csr_refined_with_positions_starting_at_zero() {
    // A CSR positions array starts at 0; with that fact the ternary goes.
    let ty = "[i -> [float]_{toNat(offset@(i+1)) - (i == 0 ? 0 : toNat(offset@i))}]_n";
    let (text, s) = report(ty, |t| Facts::from_type(t).with_value("offset", 0, 0));
    insta::assert_snapshot!(text);
    assert!(s.nat.equiv(&nat("toNat(offset@i) + j")), "{}", s.nat);
}

#[test]
fn lil_listing_3_reports_the_residual_sum() {
    let (text, s) = report("[i -> [float]_{toNat(row_length@i)}]_n", Facts::from_type);
    insta::assert_snapshot!(text);
    assert_eq!(s.residual_sums, vec![nat("sum(k = 0 .. i - 1, toNat(row_length@k))")]);
}

#[test]
fn dense_matrix_needs_no_sum() {
    let ty = parse_type("[[float]_m]_n").unwrap();
    let idx = flat_index(&ty, &[nat("i"), nat("j")]).unwrap();
    assert_eq!(idx, nat("i * m + j"));
    let ty = parse_type("[i -> [(float, int)]_{toNat(offset@(i+1) - offset@i)}]_n").unwrap();
    let idx = flat_index(&ty, &[nat("i"), nat("j")]).unwrap();
    let s = simplify(&idx, &Facts::from_type(&ty), &Limits::default());
    assert!(s.nat.equiv(&nat("toNat(offset@i) - toNat(offset@0) + j")), "{}", s.nat);
}

#[test]
fn nested_dense_inside_sparse_multiplies() {
    // Each row holds f(i) blocks of 4 scalars.
    let ty = parse_type("[i -> [[float]_4]_{toNat(offset@(i+1) - offset@i)}]_n").unwrap();
    let idx = flat_index(&ty, &[nat("i"), nat("j"), nat("l")]).unwrap();
    let s = simplify(&idx, &Facts::from_type(&ty), &Limits::default());
    assert!(s.residual_sums.is_empty(), "{}", s.nat);
    assert!(s.nat.equiv(&nat("4 * toNat(offset@i) - 4 * toNat(offset@0) + 4 * j + l")), "{}", s.nat);
}

#[test]
fn facts_from_types() {
    let ty = parse_type("[i -> [float]_{toNat(offset@(i+1) - offset@i)}]_n").unwrap();
    let f = Facts::from_type(&ty);
    assert!(f.is_non_decreasing("offset"));
    assert_eq!(f.non_decreasing[0].hi, nat("n"));
    let lil = parse_type("[i -> [float]_{toNat(row_length@i)}]_n").unwrap();
    assert!(Facts::from_type(&lil).non_decreasing.is_empty());
    let refined = parse_type("[i -> [float]_{toNat(offset@(i+1)) - (i == 0 ? 0 : toNat(offset@i))}]_n").unwrap();
    assert_eq!(Facts::from_type(&refined).non_decreasing[0].lo, nat("1"));
}

/// Prints the statistics of each formula (run with `--nocapture`); checks
/// that every run finishes well within the default limits.
#[test]
fn timings() {
    for (name, ty, refined_fact) in [
        ("CSR", "[i -> [float]_{toNat(offset@(i+1) - offset@i)}]_n", false),
        ("CSR refined", "[i -> [float]_{toNat(offset@(i+1)) - (i == 0 ? 0 : toNat(offset@i))}]_n", false),
        ("CSR refined, offset@0 = 0", "[i -> [float]_{toNat(offset@(i+1)) - (i == 0 ? 0 : toNat(offset@i))}]_n", true),
        ("LIL", "[i -> [float]_{toNat(row_length@i)}]_n", false),
    ] {
        let (_, s) =
            report(
                ty,
                |t| if refined_fact { Facts::from_type(t).with_value("offset", 0, 0) } else { Facts::from_type(t) },
            );
        println!(
            "{name}: {:?}, {} iterations, {} nodes, {} classes, {:?}",
            s.stats.time, s.stats.iterations, s.stats.egraph_nodes, s.stats.egraph_classes, s.stats.stop_reason
        );
        assert_eq!(s.stats.stop_reason, StopReason::Saturated);
    }
}

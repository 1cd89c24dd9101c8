//! The index formulas of the paper's listings, before and after.

use crate::common;
use common::{ArrayEnv, nat};
use heddle_ir::parser::parse_type;
use heddle_ir::{Name, Nat};
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

/// A tiny deterministic generator (xorshift), so the cases are reproducible.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// The positions buffers `A_pos0 ..` of a CSF tensor (every level compressed) holding the
/// sorted, distinct `coords`, and each entry's path through the view: its position under its
/// parent at every level (level 0's parent is the root, so its position is absolute).
fn csf_storage(rank: usize, coords: &[Vec<i64>]) -> (Vec<Vec<i64>>, Vec<Vec<i64>>) {
    // prefixes[l]: the distinct prefixes of length l + 1, in order.
    let prefixes: Vec<Vec<&[i64]>> = (0..rank)
        .map(|l| {
            let mut p: Vec<&[i64]> = coords.iter().map(|c| &c[..=l]).collect();
            p.dedup();
            p
        })
        .collect();
    let mut positions = Vec::new();
    for l in 0..rank {
        let parents: Vec<&[i64]> = if l == 0 { vec![&[][..]] } else { prefixes[l - 1].clone() };
        let mut pos = vec![0i64];
        for parent in &parents {
            let end = prefixes[l].iter().position(|p| !p.starts_with(parent) && p[..l] > **parent);
            pos.push(end.unwrap_or(prefixes[l].len()) as i64);
        }
        positions.push(pos);
    }
    let paths = coords
        .iter()
        .map(|c| {
            (0..rank)
                .map(|l| {
                    let at = prefixes[l].iter().position(|p| *p == &c[..=l]).expect("every prefix is listed");
                    let parent = if l == 0 { 0 } else { prefixes[l - 1].iter().position(|p| *p == &c[..l]).unwrap() };
                    at as i64 - positions[l][parent]
                })
                .collect()
        })
        .collect();
    (positions, paths)
}

/// The flat position of a value of a rank-4 and rank-5 CSF tensor has a closed form: each
/// telescoped inner Σ's guard is decided by the facts (positions never decrease), so the Σ
/// around it telescopes in turn, and no Σ is left for the host. The formula is checked on
/// random tensors: every stored entry's path gives its own slot of the values buffer.
#[test]
fn csf_rank_4_and_5_values_have_closed_forms() {
    use heddle_ir::ScalarType;
    use heddle_ir::encoding::{resolve, storage_layout};
    for rank in [4usize, 5] {
        let enc = resolve("CSF", 0, Some(rank)).expect("CSF of any rank");
        let layout = storage_layout(&enc, &vec![None; rank], ScalarType::F32, "A").expect("a layout");
        let values = layout.buffers.iter().find(|b| b.name.as_str() == "A_values").expect("a values buffer");
        let names: Vec<Nat> = (0..rank).map(|l| nat(&format!("p{l}"))).collect();
        let before = flat_index(&values.ty, &names).expect("flattens");
        // Rank 5 takes 0.2 s in an unoptimised build (its inner Σs first, then an outer run of
        // 123 e-nodes); the limit is generous so that a loaded test machine cannot stop it.
        let limits = Limits { time_limit: std::time::Duration::from_secs(60), ..Limits::default() };
        let s = simplify(&before, &Facts::from_type(&values.ty), &limits);
        assert!(s.residual_sums.is_empty(), "rank {rank}: {} keeps {:?}", s.nat, s.residual_sums);
        assert_eq!(s.stats.stop_reason, StopReason::Saturated, "rank {rank}");
        let mut state = 0x9e37_79b9_7f4a_7c15u64 + rank as u64;
        for _ in 0..20 {
            let nnz = (next(&mut state) % 14) as usize;
            let mut coords: Vec<Vec<i64>> =
                (0..nnz).map(|_| (0..rank).map(|_| (next(&mut state) % 3) as i64).collect()).collect();
            coords.sort();
            coords.dedup();
            let (positions, paths) = csf_storage(rank, &coords);
            let mut env = ArrayEnv::default();
            for (l, pos) in positions.into_iter().enumerate() {
                env.arrays.insert(Name::from(format!("A_pos{l}")), pos);
            }
            for (slot, path) in paths.iter().enumerate() {
                for (l, p) in path.iter().enumerate() {
                    env.vars.insert(Name::from(format!("p{l}")), *p);
                }
                assert_eq!(s.nat.eval(&env), Ok(slot as i64), "rank {rank}, entry {:?} of {coords:?}: {}", path, s.nat);
                assert_eq!(before.eval(&env), Ok(slot as i64), "rank {rank}: the flat index itself");
            }
        }
    }
}

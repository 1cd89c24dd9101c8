//! `heddle simplify`: the flattened index formulas of the paper's listings,
//! before and after Σ elimination (snapshots), and `--nat`.

use crate::common;

use common::heddle;

fn formulas(file: &str) -> String {
    let (code, out, err) = heddle(&["simplify", "--json", file]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Timings vary from run to run; the formulas must not.
    v["formulas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}@{}\n  before: {}\n  after:  {}\n  residual: {}\n",
                f["array"].as_str().unwrap(),
                f["indices"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect::<Vec<_>>().join("@"),
                f["before"].as_str().unwrap(),
                f["after"].as_str().unwrap(),
                f["residual_sums"]
            )
        })
        .collect()
}

#[test]
fn listing_formulas() {
    for name in ["lil_spmv", "csr_unpacked_spmv", "csr_packed_spmv", "csr_row_sums", "csr_refined_spmv"] {
        insta::assert_snapshot!(format!("simplify_{name}"), formulas(&format!("examples/{name}.hdl")));
    }
}

#[test]
fn csr_closes_and_lil_does_not() {
    let csr = formulas("examples/csr_packed_spmv.hdl");
    assert!(!csr.contains("after:  sum") && csr.contains("toNat(offset@i)"), "{csr}");
    assert!(csr.contains("residual: []"), "{csr}");
    let lil = formulas("examples/lil_spmv.hdl");
    assert!(lil.contains("residual: [\"sum(k = 0 .. i - 1, toNat(row_length@k))\"]"), "{lil}");
}

#[test]
fn nat_option() {
    let (code, out, _) = heddle(&["simplify", "--json", "--nat", "sum(k = 3 .. 3 + n - 1, 2)"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let after = v["formulas"][0]["after"].as_str().unwrap();
    let n = heddle_ir::parser::parse_nat(after).unwrap();
    for k in 0..5 {
        let env: std::collections::HashMap<heddle_ir::Name, i64> =
            [(heddle_ir::Name::from("n"), k)].into_iter().collect();
        assert_eq!(n.eval(&env), Ok(2 * k), "{after} at n = {k}");
    }
    let (code, _, err) = heddle(&["simplify", "--nat", "sum(k = 0 .. , k)"]);
    assert_eq!(code, 1);
    assert!(err.contains("--nat:1:14"), "{err}");
    assert_eq!(heddle(&["simplify"]).0, 2, "neither a file nor --nat is a usage error");
}

//! Unit tests of the front door's rewriting (the CLI tests type-check and run it).

use super::*;
use heddle_ir::encoding::parse_encoding;

const DENSE_MV: &str = include_str!("../../../examples/dense_mv.hdl");
const CSR: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";

fn go(src: &str, operand: &str, enc: &str) -> Result<String, String> {
    let p = heddle_ir::parser::parse_program(src).unwrap();
    let e = parse_encoding(enc, 0).unwrap();
    sparsify(&p, operand, "ENC", &e).map(|s| heddle_ir::printer::print_program(&s.program)).map_err(|d| d.message)
}

#[test]
fn laws_parse() {
    assert!(laws().len() >= 8);
}

#[test]
fn dense_mv_becomes_csr_spmv() {
    let out = go(DENSE_MV, "matrix", CSR).unwrap();
    assert!(!out.contains(MARKER), "{out}");
    assert!(!out.contains("zip"), "{out}");
    assert!(out.contains("tensor<?x?xf32, #ENC>") || out.contains("tensor<?x?xfloat, #ENC>"), "{out}");
    assert!(out.contains("matrix_dim1"), "{out}");
}

#[test]
fn unknown_operand_and_column_first_sparse_are_refused() {
    assert!(go(DENSE_MV, "B", CSR).unwrap_err().contains("no parameter `B`"));
    let dcsc = "#sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed) }>";
    assert!(go(DENSE_MV, "matrix", dcsc).unwrap_err().contains("columns first"));
}

#[test]
fn stored_rows_are_scattered() {
    let dcsr = "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>";
    let out = go(DENSE_MV, "matrix", dcsr).unwrap();
    assert!(out.contains("scatterAdd(matrix_dim0)") && out.contains("row.2 :>> map"), "{out}");
    assert!(!out.contains(MARKER), "{out}");
}

#[test]
fn a_row_used_densely_is_refused() {
    let src = "nFun(n => nFun(m => fun(a: [[float]_m]_n => a :>> map(fun(r => r :>> reduce(*, 1.0))))))";
    assert!(go(src, "a", CSR).unwrap_err().contains("no sparsification law"));
}

#[test]
fn csc_spmv_scatters_scaled_columns() {
    let csc = "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>";
    let out = go(DENSE_MV, "matrix", csc).unwrap();
    assert!(
        out.contains("zip(matrix, xs)") && out.contains(":>> join") && out.contains("scatterAdd(matrix_dim0)"),
        "{out}"
    );
    assert!(!out.contains(MARKER), "{out}");
}

#[test]
fn dense_mv_over_dia_is_the_guarded_diagonal_sum() {
    let dia = "#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, i : dense) }>";
    let out = go(DENSE_MV, "matrix", dia).unwrap();
    assert!(!out.contains(MARKER), "{out}");
    assert!(out.contains("generate(matrix_dim0, fun(i =>"), "{out}");
    assert!(out.contains("let inside = j >= 0 && j < matrix_dim1 in"), "{out}");
    assert!(out.contains("select(inside, d.2@i * xs@select(inside, j, 0), 0)"), "{out}");
}

#[test]
fn dense_mv_over_bsr_sums_block_products() {
    for (r, c) in [(2, 3), (1, 8)] {
        let bsr = format!(
            "#sparse_tensor.encoding<{{ map = (i, j) -> (i floordiv {r} : dense, j floordiv {c} : compressed, i mod {r} : dense, j mod {c} : dense) }}>"
        );
        let out = go(DENSE_MV, "matrix", &bsr).unwrap();
        assert!(!out.contains(MARKER), "{out}");
        assert!(out.contains(&format!("(xs :>> split({c}))@b.1)")), "{out}");
        // Several rows per block: each block row yields r rows, joined.
        assert_eq!(out.contains(&format!("generate({r}, fun(lane =>")), r > 1, "{out}");
    }
}

#[test]
fn names_the_front_door_binds_are_fresh() {
    // The kernel already uses `i`, `d`, `j` and `inside`: the DIA form picks other names.
    let src = "nFun(n => nFun(m => fun(a: [[float]_m]_n => fun(i: [float]_m => fun(d: float =>\n  a :>> map(fun(j => d * (zip(j, i) :>> map(fun(inside => inside.1 * inside.2)) :>> reduce(+, 0)))))))))";
    let dia = "#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, i : dense) }>";
    let out = go(src, "a", dia).unwrap();
    assert!(!out.contains(MARKER), "{out}");
    assert!(out.contains("generate(a_dim0, fun(i_1 =>") && out.contains("let j_1 = i_1 + d_1.1 in"), "{out}");
    assert!(out.contains("i@select(inside_1, j_1, 0)"), "{out}");
}

#[test]
fn the_row_placeholder_never_clashes_with_the_kernel_names() {
    // The kernel names a parameter `ROW` and the operand `ROWS`: the rebuilt
    // row map keeps both names as they are.
    let src = "nFun(n => nFun(m => fun(ROWS: [[float]_m]_n => fun(ROW: [float]_m =>\n  ROWS :>> map(fun(r => zip(r, ROW) :>> map(fun(p => p.1 * p.2)) :>> reduce(+, 0)))))))";
    let bsr = "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>";
    let out = go(src, "ROWS", bsr).unwrap();
    assert!(!out.contains(MARKER), "{out}");
    assert!(!out.contains("ROW_1"), "{out}");
    assert!(out.contains("  ROWS\n    :>> map(fun(brow =>"), "{out}");
    assert!(out.contains("(ROW :>> split(2))@b.1"), "{out}");
}

fn sell(src: &str, operand: &str, c: u64) -> Result<String, String> {
    let p = heddle_ir::parser::parse_program(src).unwrap();
    sell::sparsify_sell(&p, operand, &sell::SellSpec::new(c))
        .map(|s| heddle_ir::printer::print_program(&s.program))
        .map_err(|d| d.message)
}

#[test]
fn dense_mv_becomes_sell_lanes() {
    let out = sell(DENSE_MV, "matrix", 8).unwrap();
    assert!(!out.contains(MARKER), "{out}");
    // The row count only sized the operand: no parameter of the sparse kernel.
    assert!(!out.contains("matrix_dim0"), "{out}");
    for part in [
        "matrix_slices",
        "matrix_soff: [int]_{matrix_slices + 1}",
        "matrix_cols: [s -> [[int]_8]_{toNat(matrix_soff@(s + 1) - matrix_soff@s)}]_matrix_slices",
        "matrix_vals: [s -> [[float]_8]_{toNat(matrix_soff@(s + 1) - matrix_soff@s)}]_matrix_slices",
        "xs: [float]_matrix_dim1",
        "generate(8, fun(l => k.2@l * xs@(k.1@l)))",
        ":>> join",
    ] {
        assert!(out.contains(part), "{part}: {out}");
    }
    // C lanes as asked.
    assert!(sell(DENSE_MV, "matrix", 4).unwrap().contains("generate(4, fun(l => k.2@l * xs@(k.1@l)))"));
}

#[test]
fn sell_refuses_what_it_cannot_lane() {
    assert!(sell(DENSE_MV, "B", 8).unwrap_err().contains("no parameter `B`"));
    assert!(sell(DENSE_MV, "matrix", 0).unwrap_err().contains("1 to 64"));
    assert!(sell(DENSE_MV, "xs", 8).unwrap_err().contains("stores a matrix"));
    let seq = DENSE_MV.replace("reduce(+, 0)", "reduceSeq(+, 0)");
    assert!(sell(&seq, "matrix", 8).unwrap_err().contains("no sparsification law"));
    let scaled = DENSE_MV.replace("reduce(+, 0)", "reduce(+, 0) :>> fun(t => t * 2.0)");
    assert!(sell(&scaled, "matrix", 8).unwrap_err().contains("not summed"));
    let clash = DENSE_MV.replace("xs", "matrix_soff");
    assert!(sell(&clash, "matrix", 8).unwrap_err().contains("already uses `matrix_soff`"));
}

#[test]
fn sell_with_16_bit_columns_stores_them_as_u16() {
    let p = heddle_ir::parser::parse_program(DENSE_MV).unwrap();
    let wide =
        heddle_ir::printer::print_program(&sell::sparsify_sell(&p, "matrix", &sell::SellSpec::new(8)).unwrap().program);
    let narrow =
        sell::sparsify_sell(&p, "matrix", &sell::SellSpec { crd_width: 16, ..sell::SellSpec::new(8) }).unwrap();
    let narrow = heddle_ir::printer::print_program(&narrow.program);
    assert!(narrow.contains("matrix_cols: [s -> [[u16]_8]"), "{narrow}");
    assert!(wide.contains("matrix_cols: [s -> [[int]_8]"), "{wide}");
    // Only the columns' type differs: the lanes read them as they read 32-bit ones.
    assert_eq!(narrow.replace("[[u16]_8]", "[[int]_8]"), wide);
    let bad =
        sell::sparsify_sell(&p, "matrix", &sell::SellSpec { crd_width: 8, ..sell::SellSpec::new(8) }).unwrap_err();
    assert!(bad.message.contains("16 or 32 bits"), "{}", bad.message);
}

#[test]
fn sell_names_parse() {
    let spec = |lanes, crd_width| Some(Ok(sell::SellSpec { lanes, crd_width, sigma: 1, explicit_val: None }));
    assert_eq!(sell::parse_name("SELL(8)"), spec(8, 32));
    assert_eq!(sell::parse_name(" SELL( 16 ) "), spec(16, 32));
    assert_eq!(sell::parse_name("SELL(8, crdWidth = 16)"), spec(8, 16));
    assert_eq!(sell::parse_name("SELL(4,crdWidth=32)"), spec(4, 32));
    assert_eq!(sell::parse_name("SELL(8, indexBitWidth = 16)"), spec(8, 16));
    // The text it prints is the text it reads.
    for s in [sell::SellSpec::new(8), sell::SellSpec { crd_width: 16, ..sell::SellSpec::new(4) }] {
        assert_eq!(sell::parse_name(&s.to_string()), Some(Ok(s)));
    }
    assert_eq!(sell::parse_name("CSR"), None);
    assert_eq!(sell::parse_name("#sparse_tensor.encoding<{}>"), None);
    for bad in [
        "SELL",
        "SELL(0)",
        "SELL(65)",
        "sell(8)",
        "SELL(8, 1)",
        "SELL-8",
        "SELL(8, crdWidth = 8)",
        "SELL(8, crdWidth = 64)",
        "SELL(8, posWidth = 16)",
        "SELL(8, crdWidth = 16, crdWidth = 16)",
        "SELL(8, crdWidth)",
        "SELL(8, sigma = 0)",
        "SELL(8, sigma = 12)",
        "SELL(8, sigma = -8)",
        "SELL(8, sigma = 4096, sigma = 4096)",
        "SELL(8, sigma = 4294967296)",
        "SELL(8, sigma)",
    ] {
        assert!(matches!(sell::parse_name(bad), Some(Err(_))), "{bad}");
    }
}

#[test]
fn sell_sigma_parses_in_any_order_and_prints_back() {
    let spec = |lanes, crd_width, sigma| Some(Ok(sell::SellSpec { lanes, crd_width, sigma, explicit_val: None }));
    assert_eq!(sell::parse_name("SELL(8, sigma = 4096)"), spec(8, 32, 4096));
    assert_eq!(sell::parse_name("SELL(8, sigma = 1)"), spec(8, 32, 1));
    assert_eq!(sell::parse_name("SELL(8, σ = 64)"), spec(8, 32, 64));
    assert_eq!(sell::parse_name("SELL(4,sigma=4,crdWidth=16)"), spec(4, 16, 4));
    assert_eq!(sell::parse_name("SELL(8, crdWidth = 16, sigma = 2147483648)"), spec(8, 16, 1 << 31));
    for s in [
        sell::SellSpec { sigma: 4096, ..sell::SellSpec::new(8) },
        sell::SellSpec { lanes: 4, crd_width: 16, sigma: 64, explicit_val: None },
    ] {
        assert_eq!(sell::parse_name(&s.to_string()), Some(Ok(s)));
    }
    assert_eq!(
        sell::SellSpec { crd_width: 16, sigma: 64, ..sell::SellSpec::new(8) }.to_string(),
        "SELL(8, crdWidth = 16, sigma = 64)"
    );
    // The message says what σ may be.
    let Some(Err(m)) = sell::parse_name("SELL(8, sigma = 12)") else { panic!() };
    assert!(m.contains("multiple of C = 8"), "{m}");
}

#[test]
fn sell_sigma_keeps_the_kernel_and_takes_only_a_row_map_result() {
    let p = heddle_ir::parser::parse_program(DENSE_MV).unwrap();
    let print = |spec| heddle_ir::printer::print_program(&sell::sparsify_sell(&p, "matrix", &spec).unwrap().program);
    // The kernel is σ = 1's: only the packing (and the permutation after it) differ.
    assert_eq!(print(sell::SellSpec { sigma: 4096, ..sell::SellSpec::new(8) }), print(sell::SellSpec::new(8)));
    // Its result combined with a vector in row order: refused at the body.
    let plus = "nFun(n => nFun(m => fun(a: [[float]_m]_n => fun(xs: [float]_m => fun(b: [float]_n =>\n  zip(a :>> map(fun(row => zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduce(+, 0))), b) :>> map(fun(t => t.1 + t.2)))))))";
    let p = heddle_ir::parser::parse_program(plus).unwrap();
    let err = sell::sparsify_sell(&p, "a", &sell::SellSpec { sigma: 64, ..sell::SellSpec::new(8) }).unwrap_err();
    assert!(err.message.contains("sorted by length") && err.message.contains("not its row map"), "{}", err.message);
    assert_eq!(&plus[err.span.start as usize..err.span.start as usize + 4], "zip(");
    // A σ the API is given directly is checked too.
    let p = heddle_ir::parser::parse_program(DENSE_MV).unwrap();
    for sigma in [0, 12] {
        let err = sell::sparsify_sell(&p, "matrix", &sell::SellSpec { sigma, ..sell::SellSpec::new(8) }).unwrap_err();
        assert!(err.message.contains("multiple of C = 8"), "{}", err.message);
    }
}

#[test]
fn sell_takes_the_row_maps_the_laws_take() {
    // `map(f, A)`, the dense operand first in the zip, a float identity, other names.
    let src = "nFun(rows => nFun(cols => fun(a: [[double]_cols]_rows => fun(v: [double]_cols =>\n  map(fun(r => zip(v, r) :>> map(fun(t => t.2 * t.1)) :>> reduce(+, 0.0)), a)))))";
    let out = sell(src, "a", 8).unwrap();
    assert!(!out.contains(MARKER), "{out}");
    for part in
        ["generate(8, fun(l => k.2@l * v@(k.1@l)))", "generate(8, fun(l_1 => 0.0))", "a_vals: [s -> [[double]_8]"]
    {
        assert!(out.contains(part), "{part}: {out}");
    }
}

/// BSR(r, c) with r lanes: `(i floordiv r : dense, j floordiv c : compressed, i mod r : dense, j mod c : dense)`.
fn bsr(r: u64, c: u64) -> String {
    format!(
        "#sparse_tensor.encoding<{{ map = (i, j) -> (i floordiv {r} : dense, j floordiv {c} : compressed, i mod {r} : dense, j mod {c} : dense) }}>"
    )
}

#[test]
fn bsr_block_rows_carry_their_lanes_sums_together() {
    // BSR(8, 1): one product per block, the 8 lanes' terms as a row summed
    // lane by lane from a row of zeros; no per-lane sum, no slice of xs.
    let out = go(DENSE_MV, "matrix", &bsr(8, 1)).unwrap();
    assert!(out.contains("generate(8, fun(lane => (b.2 :>> join)@lane * xs@b.1))"), "{out}");
    assert!(
        out.contains("zip(acc, t) :>> map(fun(q => q.1 + q.2))") && out.contains("generate(8, fun(z => 0))"),
        "{out}"
    );
    assert!(!out.contains("reduce(+") && !out.contains("split(") && !out.contains(MARKER), "{out}");
    // BSR(4, 4): each lane's block dot product stays a sum over the block's columns.
    let out = go(DENSE_MV, "matrix", &bsr(4, 4)).unwrap();
    assert!(out.contains("generate(4, fun(z => 0))") && out.contains("(xs :>> split(4))@b.1"), "{out}");
    assert_eq!(out.matches("reduce(+, 0)").count(), 1, "{out}");
    // A lane whose sum is scaled is not a `reduce(+, 0)`: the per-lane form stays.
    let scaled = "nFun(n => nFun(m => fun(a: [[float]_m]_n => fun(xs: [float]_m => a :>> map(fun(row => 2.0 * (zip(row, xs) :>> map(fun(p => p.1 * p.2)) :>> reduce(+, 0))))))))";
    let out = go(scaled, "a", &bsr(8, 1)).unwrap();
    assert!(out.contains("generate(8, fun(lane =>") && !out.contains("acc"), "{out}");
    // One lane (BSR(1, c)) has no lanes to carry.
    let out = go(DENSE_MV, "matrix", &bsr(1, 8)).unwrap();
    assert!(!out.contains("generate(") && !out.contains("acc"), "{out}");
}

#[test]
fn sell_explicit_val_parses_prints_and_drops_the_values_array() {
    let lit = |text: &str, ty: Option<&str>| {
        Some(heddle_ir::encoding::Literal { text: text.into(), ty: ty.map(str::to_string) })
    };
    let spec = |explicit_val| sell::SellSpec { sigma: 64, explicit_val, ..sell::SellSpec::new(8) };
    let parsed = sell::parse_name("SELL(8, sigma = 64, explicitVal = 1.0 : f64)");
    assert_eq!(parsed, Some(Ok(spec(lit("1.0", Some("f64"))))));
    assert_eq!(sell::parse_name("SELL(8, explicitVal = -0.0, sigma = 64)"), Some(Ok(spec(lit("-0.0", None)))));
    for s in [spec(lit("2.5", None)), spec(lit("1.0", Some("f32")))] {
        assert_eq!(sell::parse_name(&s.to_string()), Some(Ok(s)));
    }
    for bad in
        ["SELL(8, explicitVal = one)", "SELL(8, explicitVal = 1 : f65)", "SELL(8, explicitVal = 1, explicitVal = 1)"]
    {
        assert!(matches!(sell::parse_name(bad), Some(Err(_))), "{bad}");
    }
    // The kernel takes the step indices and lane lengths, no values; a value
    // the element type does not hold is refused at the operand.
    let p = heddle_ir::parser::parse_program(DENSE_MV).unwrap();
    let out = sell::sparsify_sell(&p, "matrix", &spec(lit("1.0", None))).unwrap();
    let text = heddle_ir::printer::print_program(&out.program);
    for part in ["matrix_step", "matrix_len", "select(k.2 < sl.2@l, t, 0)"] {
        assert!(text.contains(part), "{part}: {text}");
    }
    assert!(!text.contains("matrix_vals"), "{text}");
    let err = sell::sparsify_sell(&p, "matrix", &spec(lit("0.1", None))).unwrap_err();
    assert!(err.message.contains("no value of the matrix's element type"), "{}", err.message);
}

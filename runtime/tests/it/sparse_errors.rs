//! Malformed files and buffers are rejected with located messages: a file's
//! line, or a buffer and the position in it. Messages are snapshot-tested.

use heddle_ir::ScalarType;
use heddle_ir::encoding::parse_encoding;
use heddle_runtime::sparse::assemble::{Buffers, assemble};
use heddle_runtime::sparse::build::pack;
use heddle_runtime::sparse::json::{dense_from_json, storage_from_json};
use heddle_runtime::sparse::mtx::parse_mtx;
use heddle_runtime::sparse::tns::parse_tns;
use heddle_runtime::sparse::{Coo, SparseError};
use std::path::Path;

const MTX: &[(&str, &str)] = &[
    ("empty", ""),
    ("bad_banner", "%%MatrixMarket tensor coordinate real general\n2 2 1\n1 1 1\n"),
    ("complex_one_part", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1\n"),
    ("hermitian_complex_diagonal", "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n1 1 1 2\n"),
    ("hermitian", "%%MatrixMarket matrix coordinate real hermitian\n2 2 1\n1 1 1\n"),
    ("pattern_array", "%%MatrixMarket matrix array pattern general\n2 2\n"),
    ("no_size_line", "%%MatrixMarket matrix coordinate real general\n% only comments\n"),
    ("short_size_line", "%%MatrixMarket matrix coordinate real general\n2 2\n1 1 1\n"),
    ("bad_size", "%%MatrixMarket matrix coordinate real general\n2 x 1\n1 1 1\n"),
    ("too_many", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 2\n"),
    ("truncated", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n"),
    ("row_zero", "%%MatrixMarket matrix coordinate real general\n2 2 1\n0 1 1\n"),
    ("column_beyond", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n1 3 1\n"),
    ("not_a_number", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.2.3\n"),
    ("integer_field_float", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n"),
    ("missing_value", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\n"),
    ("extra_token", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1 7\n"),
    ("negative_index", "%%MatrixMarket matrix coordinate real general\n2 2 1\n-1 1 1\n"),
    ("symmetric_not_square", "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n"),
    ("skew_diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 2\n2 1 1\n2 2 1\n"),
    ("array_truncated", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n"),
];

const TNS: &[(&str, &str)] = &[
    ("empty", "# nothing\n"),
    ("one_column", "1\n2\n"),
    ("index_zero", "1 1 1 1.0\n0 2 1 2.0\n"),
    ("ragged", "1 1 1 1.0\n2 2 2.0\n"),
    ("header_too_many", "2 1\n3 3\n1 1 1.0\n2 2 2.0\n"),
    ("header_truncated", "# extended\n2 3\n3 3\n1 1 1.0\n"),
    ("header_beyond", "2 1\n3 3\n4 1 1.0\n"),
    ("not_a_number", "1 1 x\n"),
];

#[test]
fn malformed_matrix_market() {
    for (name, text) in MTX {
        let e = parse_mtx(text.as_bytes(), Path::new("bad.mtx")).expect_err(name);
        assert!(matches!(e, SparseError::File { .. }), "{name}: {e}");
        insta::assert_snapshot!(format!("mtx_{name}"), e.to_string());
    }
}

#[test]
fn malformed_frostt() {
    for (name, text) in TNS {
        let e = parse_tns(text.as_bytes(), Path::new("bad.tns")).expect_err(name);
        insta::assert_snapshot!(format!("tns_{name}"), e.to_string());
    }
}

#[test]
fn symmetric_and_skew_files_expand() {
    let text = "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 4\n3 1 2\n";
    let (c, _) = parse_mtx(text.as_bytes(), Path::new("s.mtx")).unwrap();
    assert_eq!(c.to_dense_values().unwrap().to_f64s(), vec![4.0, 0.0, 2.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0]);
    let text = "%%MatrixMarket matrix array real skew-symmetric\n2 2\n3\n";
    let (c, _) = parse_mtx(text.as_bytes(), Path::new("k.mtx")).unwrap();
    assert_eq!(c.to_dense_values().unwrap().to_f64s(), vec![0.0, -3.0, 3.0, 0.0]);
    let text = "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n2 1\n";
    let (c, _) = parse_mtx(text.as_bytes(), Path::new("p.mtx")).unwrap();
    assert_eq!(c.to_dense_values().unwrap().to_f64s(), vec![0.0, 0.0, 1.0, 0.0]);
    let text = "%%MatrixMarket matrix array integer general\n2 2\n1\n2\n3\n4\n";
    let (c, elem) = parse_mtx(text.as_bytes(), Path::new("a.mtx")).unwrap();
    assert_eq!((c.to_dense_values().unwrap(), elem), (vec![1i64, 3, 2, 4].into(), ScalarType::I64));
    // Hermitian: the mirror holds the conjugate (array format: the lower triangle by columns).
    let text = "%%MatrixMarket matrix array complex hermitian\n2 2\n4 0\n1.5 -2\n-1 0\n";
    let (c, elem) = parse_mtx(text.as_bytes(), Path::new("h.mtx")).unwrap();
    let z = |re: f64, im: f64| heddle_runtime::scalars::Complex { re, im };
    assert_eq!(elem, ScalarType::C64);
    assert_eq!(c.to_dense_values().unwrap(), vec![z(4.0, 0.0), z(1.5, 2.0), z(1.5, -2.0), z(-1.0, 0.0)].into());
    // Complex skew-symmetric: the mirror is negated, both parts.
    let text = "%%MatrixMarket matrix coordinate complex skew-symmetric\n2 2 1\n2 1 3 -0.5\n";
    let (c, _) = parse_mtx(text.as_bytes(), Path::new("k.mtx")).unwrap();
    assert_eq!(c.to_dense_values().unwrap(), vec![z(0.0, 0.0), z(-3.0, 0.5), z(3.0, -0.5), z(0.0, 0.0)].into());
    // Plain FROSTT infers sizes from the largest coordinates.
    let c = parse_tns(b"# plain\n1 2 3 1.5\n2 1 1 2.5\n", Path::new("p.tns")).unwrap();
    assert_eq!(c.dims, vec![2, 2, 3]);
}

fn csr() -> heddle_ir::encoding::Encoding {
    parse_encoding("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 8 }>", 0).unwrap()
}

fn bufs(pos: &[u64], crd: &[u64], n: usize) -> Buffers {
    Buffers {
        positions: vec![None, Some(pos.to_vec())],
        coordinates: vec![None, Some(crd.to_vec())],
        values: vec![1.0; n].into(),
    }
}

#[test]
fn invalid_buffers() {
    let cases: Vec<(&str, Buffers)> = vec![
        ("positions_decrease", bufs(&[0, 2, 1, 3], &[0, 1, 2], 3)),
        ("positions_not_from_zero", bufs(&[1, 2, 2, 3], &[0, 1, 2], 3)),
        ("positions_wrong_length", bufs(&[0, 2, 3], &[0, 1, 2], 3)),
        ("coordinate_out_of_range", bufs(&[0, 2, 2, 3], &[0, 4, 2], 3)),
        ("coordinates_unordered", bufs(&[0, 2, 2, 3], &[3, 1, 2], 3)),
        ("coordinates_duplicate", bufs(&[0, 2, 2, 3], &[1, 1, 2], 3)),
        ("coordinates_short", bufs(&[0, 2, 2, 3], &[0, 1], 3)),
        ("values_short", bufs(&[0, 2, 2, 3], &[0, 1, 2], 2)),
        ("position_overflows_width", bufs(&[0, 300, 300, 300], &(0..300).collect::<Vec<u64>>(), 300)),
        (
            "missing_buffer",
            Buffers { positions: vec![None, None], coordinates: vec![None, Some(vec![0])], values: vec![1.0].into() },
        ),
        (
            "unexpected_buffer",
            Buffers {
                positions: vec![Some(vec![0]), Some(vec![0, 0, 0, 0])],
                coordinates: vec![None, Some(vec![])],
                values: Vec::<f64>::new().into(),
            },
        ),
    ];
    for (name, b) in cases {
        // 3 rows of 4 columns (300 columns for the width case, so only the width fails).
        let cols = if name == "position_overflows_width" { 300 } else { 4 };
        let e = assemble(&csr(), ScalarType::F32, vec![3, cols], b).expect_err(name);
        assert!(matches!(e, SparseError::Buffer { .. }), "{name}: {e}");
        insta::assert_snapshot!(format!("buffer_{name}"), e.to_string());
    }
}

#[test]
fn invalid_storage_json_and_shapes() {
    let mut messages = Vec::new();
    let docs = [
        r##"{"encoding": "#sparse_tensor.encoding<{ map = (i) -> (i : compresed) }>", "dim_sizes": [4], "positions": [[0, 1]], "coordinates": [[0]], "values": [1]}"##,
        r##"{"encoding": "#sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>", "dim_sizes": [4], "positions": [[0, 1]], "coordinates": [[-1]], "values": [1]}"##,
        r##"{"encoding": "#sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>", "dim_sizes": [4], "lvl_sizes": [5], "positions": [[0, 1]], "coordinates": [[0]], "values": [1]}"##,
        r##"{"dim_sizes": [4]}"##,
    ];
    for d in docs {
        let v: serde_json::Value = serde_json::from_str(d).unwrap();
        messages.push(storage_from_json(&v, None).expect_err(d).to_string());
    }
    for d in ["[[1, 2], [3]]", "[[1, \"x\"]]"] {
        let v: serde_json::Value = serde_json::from_str(d).unwrap();
        messages.push(dense_from_json(&v, None).expect_err(d).to_string());
    }
    let bsr = parse_encoding(
        "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j : compressed, i mod 2 : dense) }>",
        0,
    )
    .unwrap();
    messages.push(pack(&Coo::new(vec![5, 4]), &bsr, ScalarType::F32).unwrap_err().to_string());
    let ell = parse_encoding(
        "#sparse_tensor.encoding<{ map = [c](i, j) -> (c * 1 * i : dense, i : dense, j : compressed) }>",
        0,
    )
    .unwrap();
    let mut two = Coo::new(vec![2, 4]);
    two.push(&[1, 0], 1.0);
    two.push(&[1, 3], 1.0);
    messages.push(pack(&two, &ell, ScalarType::F32).unwrap_err().to_string());
    let single =
        parse_encoding("#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : singleton) }>", 0).unwrap();
    messages.push(pack(&two, &single, ScalarType::F32).unwrap_err().to_string());
    let narrow =
        parse_encoding("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), crdWidth = 8 }>", 0)
            .unwrap();
    let mut wide = Coo::new(vec![1, 1000]);
    wide.push(&[0, 999], 1.0);
    messages.push(pack(&wide, &narrow, ScalarType::F32).unwrap_err().to_string());
    insta::assert_snapshot!("storage_and_shape_errors", messages.join("\n"));
}

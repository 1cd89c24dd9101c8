//! Encodings as heddle types: the storage buffers and the view of a
//! parameter `A`, printed and snapshot-tested for every format, plus the
//! parse → print → parse round trip of the encodings themselves.

use heddle_ir::ScalarType;
use heddle_ir::encoding::{parse_encoding, print_encoding, storage_layout};
use heddle_ir::printer::{print_nat, print_type};

/// The encodings of the seeds (MLIR's documentation and the MLIR paper) and
/// the formats named by issue 6, with the tensor shapes they are printed for.
const FORMATS: &[(&str, &str, &[Option<u64>])] = &[
    ("csr", "map = (i, j) -> (i : dense, j : compressed)", &[None, None]),
    ("csr_static", "map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16", &[Some(4), Some(8)]),
    ("csc", "map = (i, j) -> (j : dense, i : compressed)", &[None, None]),
    ("dcsr", "map = (i, j) -> (i : compressed, j : compressed)", &[None, None]),
    ("dcsc", "map = (i, j) -> (j : compressed, i : compressed), posWidth = 32, crdWidth = 8", &[Some(8), Some(8)]),
    ("coo_aos", "map = (i, j) -> (i : compressed(nonunique), j : singleton)", &[None, None]),
    ("coo_soa", "map = (i, j) -> (i : compressed(nonunique), j : singleton(soa))", &[None, None]),
    (
        "coo_3d",
        "map = (i, j, k) -> (i : compressed(nonunique), j : singleton(nonunique), k : singleton)",
        &[None, None, None],
    ),
    (
        "bsr",
        "map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense)",
        &[None, None],
    ),
    (
        "bsr_explicit",
        "map = { ib, jb, ii, jj } ( i = ib * 2 + ii, j = jb * 3 + jj) -> ( ib = i floordiv 2 : dense, jb = j floordiv 3 : compressed, ii = i mod 2 : dense, jj = j mod 3 : dense)",
        &[Some(20), Some(30)],
    ),
    ("nv_2_4", "map = ( i, j ) -> ( i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 8", &[None, None]),
    (
        "structured_2_4",
        "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4])",
        &[Some(16), Some(16)],
    ),
    ("ell", "map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed)", &[None, None]),
    ("loose_compressed", "map = (i, j) -> (i : dense, j : loose_compressed)", &[None, None]),
    ("skyline_banded", "map = (i, j) -> (i : dense, j : banded), posWidth = 32", &[None, None]),
    ("skyline_upper", "map = (i, j) -> (j : dense, i : banded)", &[None, None]),
    (
        "loose_then_compressed",
        "map = (i, j, k) -> (i : loose_compressed, j : compressed, k : dense), posWidth = 32",
        &[None, None, Some(4)],
    ),
    (
        "bcoo_high",
        "map = (i, j, k) -> (i : dense, j : compressed(nonunique, high), k : singleton)",
        &[Some(10), Some(10), Some(10)],
    ),
    ("csf_3d", "map = (i, j, k) -> (i : compressed, j : compressed, k : compressed)", &[None, None, None]),
    (
        "legacy_dcsc",
        "dimLevelType = [ \"compressed\", \"compressed\" ], dimOrdering = affine_map<(i,j) -> (j,i)>",
        &[Some(3), Some(4)],
    ),
    ("batch_csr", "map = (b, i, j) -> (b : batch, i : dense, j : compressed)", &[Some(2), None, None]),
    ("sparse_vector", "map = (i) -> (i : compressed)", &[Some(16)]),
    ("dia", "map = (i, j) -> (j - i : compressed, i : dense)", &[None, None]),
    ("dia_static_i32", "map = (i, j) -> (j - i : compressed, i : dense), crdWidth = 32", &[Some(3), Some(5)]),
    ("dia_by_column", "map = (i, j) -> (j - i : compressed, j : dense), crdWidth = 16", &[None, None]),
    ("dia_rows_first", "map = (i, j) -> (i : dense, i - j : compressed)", &[Some(4), Some(4)]),
    ("dia_explicit", "map = {d, r}(i = r, j = d + r) -> (d = j - i : compressed, r = i : dense)", &[None, None]),
    ("dia_soa", "map = (i, j) -> (i : compressed(nonunique), j - i : singleton(soa))", &[None, None]),
    (
        "csr_slice",
        "map = (i : #sparse_tensor<slice(0, 4, 1)>, j : #sparse_tensor<slice(0, 8, ?)>) -> (i : dense, j : compressed)",
        &[None, None],
    ),
];

fn describe(body: &str, dims: &[Option<u64>]) -> String {
    let text = format!("#sparse_tensor.encoding<{{ {body} }}>");
    let enc = parse_encoding(&text, 0).unwrap_or_else(|e| panic!("{body}: {e:?}"));
    let layout = storage_layout(&enc, dims, ScalarType::F32, "A").expect("layout");
    let mut out = format!("encoding: {}\n", print_encoding(&enc));
    let sizes = |v: &[heddle_ir::Nat]| v.iter().map(print_nat).collect::<Vec<_>>().join(", ");
    out.push_str(&format!("dim sizes: [{}]\nlvl sizes: [{}]\n", sizes(&layout.dim_sizes), sizes(&layout.lvl_sizes)));
    for b in &layout.buffers {
        out.push_str(&format!("{} : {}    (flat length {})\n", b.name, print_type(&b.ty), print_nat(&b.len)));
    }
    out.push_str(&format!("nse: {}\nview: {}\n", print_nat(&layout.nse), print_type(&layout.view)));
    out
}

#[test]
fn storage_and_view_types() {
    for (name, body, dims) in FORMATS {
        insta::assert_snapshot!(format!("types_{name}"), describe(body, dims));
    }
}

#[test]
fn printed_encodings_parse_back_to_the_same_encoding() {
    for (name, body, _) in FORMATS {
        let text = format!("#sparse_tensor.encoding<{{ {body} }}>");
        let a = parse_encoding(&text, 0).expect(name);
        let printed = print_encoding(&a);
        let b = parse_encoding(&printed, 0).unwrap_or_else(|e| panic!("{name}: {printed}: {e:?}"));
        assert_eq!(a, b, "{name}");
        assert_eq!(print_encoding(&b), printed, "{name}: printing is a fixed point");
    }
}

#[test]
fn view_types_reparse() {
    // The printed view and buffer types are valid heddle type syntax.
    for (name, body, dims) in FORMATS {
        let text = format!("#sparse_tensor.encoding<{{ {body} }}>");
        let enc = parse_encoding(&text, 0).expect(name);
        let layout = storage_layout(&enc, dims, ScalarType::F64, "A").expect(name);
        for t in layout.buffers.iter().map(|b| &b.ty).chain([&layout.view]) {
            let printed = print_type(t);
            let back = heddle_ir::parser::parse_type(&printed).unwrap_or_else(|e| panic!("{name}: {printed}: {e:?}"));
            assert_eq!(print_type(&back), printed, "{name}");
        }
    }
}

#[test]
fn mismatched_rank_and_blocks_are_errors() {
    let enc = parse_encoding(
        "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j : compressed, i mod 2 : dense) }>",
        10,
    )
    .expect("bsr");
    let e = storage_layout(&enc, &[Some(5), Some(4)], ScalarType::F32, "A").expect_err("5 rows in blocks of 2");
    assert!(e.message.contains("not a multiple of its block size 2"), "{}", e.message);
    assert_eq!(e.span.start, 10);
    let e = storage_layout(&enc, &[None], ScalarType::F32, "A").expect_err("rank");
    assert!(e.message.contains("2 dimensions"), "{}", e.message);
}

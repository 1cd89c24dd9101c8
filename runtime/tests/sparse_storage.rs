//! Storage snapshots: one 4x8 matrix (tests/data/sparse/m4x8.mtx) in every
//! format, as `.json` storage; plus assemble ∘ disassemble = identity and a
//! check that every stored form densifies back to the file's matrix.

use heddle_ir::encoding::parse_encoding;
use heddle_runtime::sparse::assemble::{assemble, disassemble};
use heddle_runtime::sparse::convert::to_dense;
use heddle_runtime::sparse::dense::DenseTensor;
use heddle_runtime::sparse::json::{storage_from_json, storage_to_json};
use heddle_runtime::sparse::{file, mtx};
use std::path::Path;

const FORMATS: &[(&str, &str)] = &[
    ("csr", "map = (i, j) -> (i : dense, j : compressed)"),
    ("csr_narrow", "map = (i, j) -> (i : dense, j : compressed), posWidth = 8, crdWidth = 8"),
    ("dcsr", "map = (i, j) -> (i : compressed, j : compressed)"),
    ("csc", "map = (i, j) -> (j : dense, i : compressed)"),
    ("dcsc", "map = (i, j) -> (j : compressed, i : compressed), posWidth = 32, crdWidth = 8"),
    (
        "bsr_dense_2x4",
        "map = (i, j) -> (i floordiv 2 : dense, j floordiv 4 : compressed, i mod 2 : dense, j mod 4 : dense)",
    ),
    (
        "bsr_compressed_2x4",
        "map = (i, j) -> (i floordiv 2 : compressed, j floordiv 4 : compressed, i mod 2 : dense, j mod 4 : dense)",
    ),
    ("coo_aos", "map = (i, j) -> (i : compressed(nonunique), j : singleton)"),
    ("coo_soa", "map = (i, j) -> (i : compressed(nonunique), j : singleton(soa))"),
    ("loose_compressed", "map = (i, j) -> (i : dense, j : loose_compressed)"),
    ("ell_3", "map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed)"),
    ("structured_2_4", "map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4])"),
    ("dense", "map = (i, j) -> (i : dense, j : dense)"),
    ("compressed_dense", "map = (i, j) -> (i : compressed, j : dense)"),
];

fn matrix() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sparse/m4x8.mtx")
}

#[test]
fn storage_of_a_4x8_matrix() {
    let (coo, _) = mtx::read_mtx(&matrix()).unwrap();
    let want = DenseTensor::from_coo(&coo).unwrap();
    for (name, body) in FORMATS {
        let e = parse_encoding(&format!("#sparse_tensor.encoding<{{ {body} }}>"), 0).unwrap();
        let t = file::read_into(&matrix(), &e).unwrap_or_else(|err| panic!("{name}: {err}"));
        let json = storage_to_json(&t);
        insta::assert_json_snapshot!(format!("m4x8_{name}"), json);
        // Every stored form denotes the same matrix ...
        assert_eq!(to_dense(&t).unwrap(), want, "{name}");
        // ... and its buffers assemble back into the same tensor, via JSON too.
        let again = assemble(&t.encoding, t.elem, t.dim_sizes.clone(), disassemble(&t)).unwrap();
        assert_eq!(again, t, "{name}");
        let mut back = storage_from_json(&json).unwrap();
        back.elem = t.elem;
        assert_eq!(back, t, "{name}");
    }
}

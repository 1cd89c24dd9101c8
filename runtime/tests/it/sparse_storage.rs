//! Storage snapshots: one 4x8 matrix (tests/data/sparse/m4x8.mtx) in every
//! format, as `.json` storage; plus assemble ∘ disassemble = identity, the
//! streamed `.json` writer against the snapshot's value, a round trip
//! through `.npz`, and a check that every stored form densifies back to the
//! file's matrix.

use heddle_ir::encoding::parse_encoding;
use heddle_runtime::sparse::assemble::{assemble, disassemble};
use heddle_runtime::sparse::convert::to_dense;
use heddle_runtime::sparse::dense::DenseTensor;
use heddle_runtime::sparse::json::{storage_from_json, storage_to_json};
use heddle_runtime::sparse::{file, mtx, write};
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
    ("dia", "map = (i, j) -> (j - i : compressed, i : dense)"),
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
        insta::assert_snapshot!(format!("m4x8_{name}"), pretty(&json));
        // Every stored form denotes the same matrix ...
        assert_eq!(to_dense(&t).unwrap(), want, "{name}");
        // ... and its buffers assemble back into the same tensor, via JSON too.
        let again = assemble(&t.encoding, t.elem, t.dim_sizes.clone(), disassemble(&t)).unwrap();
        assert_eq!(again, t, "{name}");
        let mut back = storage_from_json(&json, Some(t.elem)).unwrap();
        back.elem = t.elem;
        assert_eq!(back, t, "{name}");
        // The streamed storage object is the same JSON value.
        let mut text = Vec::new();
        write::write_json(&t, &mut text).unwrap();
        assert_eq!(serde_json::from_slice::<serde_json::Value>(&text).unwrap(), json, "{name}");
        // Through scipy's .npz (csr, csc, bsr as stored, the rest as coo): the same matrix.
        let dir = crate::scratch_dir("storage");
        let npz = dir.path().join(format!("{name}.npz"));
        write::write(&t, &npz).unwrap();
        assert_eq!(to_dense(&file::read_into(&npz, &e).unwrap()).unwrap(), want, "{name} via .npz");
    }
}

/// A `.json` storage object already in the target encoding is kept as stored
/// (a loose_compressed level's gaps and unused room stay); in another
/// encoding it is repacked from its entries; bad lo/hi pairs are errors
/// naming the buffer.
#[test]
fn json_storage_in_the_target_encoding_keeps_its_layout() {
    let loose = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>";
    let storage = |pos: &str| {
        format!(
            r#"{{"encoding": "{loose}", "dim_sizes": [3, 4], "positions": [null, {pos}],
               "coordinates": [null, [1, 2, 0, 0, 0, 0, 3, 0]], "values": [3, 5, -1, -1, -1, 1, 2, -1]}}"#
        )
    };
    let dir = crate::scratch_dir("gaps");
    let path = dir.path().join("gaps.json");
    std::fs::write(&path, storage("[5, 7, 2, 2, 0, 2]")).unwrap();
    // The same storage scheme, spelled differently (the legacy `high` property).
    let same =
        parse_encoding("#sparse_tensor.encoding<{ map = (r, c) -> (r : dense, c : compressed(high)) }>", 0).unwrap();
    let t = file::read_into(&path, &same).unwrap();
    assert_eq!(disassemble(&t).positions[1], Some(vec![5, 7, 2, 2, 0, 2]));
    assert_eq!(t.nse(), 8, "the unused room is kept");
    assert_eq!(t.encoding, same);
    // CSR: repacked, rows in order, only the entries.
    let csr = parse_encoding("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>", 0).unwrap();
    let b = disassemble(&file::read_into(&path, &csr).unwrap());
    assert_eq!(b.positions[1], Some(vec![0, 2, 2, 4]));
    assert_eq!(b.coordinates[1], Some(vec![0, 3, 1, 2]));
    assert_eq!(b.values, vec![1i64, 2, 3, 5].into(), "integers as written");
    // hi < lo, and hi past the coordinates.
    for (pos, want) in
        [("[5, 4, 2, 2, 0, 2]", "below its lower bound"), ("[5, 9, 2, 2, 0, 2]", "past the end of coordinates[1]")]
    {
        std::fs::write(&path, storage(pos)).unwrap();
        let e = file::read_into(&path, &same).unwrap_err().to_string();
        assert!(e.contains("positions[1][1]") && e.contains(want), "{e}");
    }
}

/// A JSON value as insta's JSON snapshots print it (serde_json's own
/// serializer: with `arbitrary_precision`, insta's would spell numbers as maps).
fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

//! DIA through the difference level `j - i` (issue 12, item 6): the stored
//! buffers of small matrices, checked by hand against the layout (the
//! offsets of the non-empty diagonals, then per diagonal a dense array over
//! the rows, padded where the diagonal leaves the matrix), round trips
//! through CSR and COO, the signed coordinates at narrow widths, and the
//! errors of storage that breaks DIA's rules.

use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, parse_encoding};
use heddle_runtime::sparse::assemble::{assemble, disassemble};
use heddle_runtime::sparse::build::pack;
use heddle_runtime::sparse::convert::{convert, to_dense};
use heddle_runtime::sparse::dense::DenseTensor;
use heddle_runtime::sparse::json::{storage_from_json, storage_to_json};
use heddle_runtime::sparse::{Coo, file, write};

fn enc(map: &str) -> Encoding {
    parse_encoding(&format!("#sparse_tensor.encoding<{{ map = {map} }}>"), 0).unwrap()
}

const DIA: &str = "(i, j) -> (j - i : compressed, i : dense)";
const DIA_BY_COLUMN: &str = "(i, j) -> (j - i : compressed, j : dense)";

/// A matrix from `(i, j, value)` triples.
fn coo(m: u64, n: u64, entries: &[(u64, u64, f64)]) -> Coo {
    let mut c = Coo::new(vec![m, n]);
    for &(i, j, v) in entries {
        c.push(&[i, j], v);
    }
    c
}

/// The stored buffers: (offsets, values).
fn buffers(t: &heddle_runtime::sparse::SparseTensor) -> (Vec<i64>, Vec<f64>) {
    let b = disassemble(t);
    assert_eq!(b.positions[1], None);
    assert_eq!(b.coordinates[1], None);
    let pos = b.positions[0].clone().unwrap();
    let offsets: Vec<i64> = b.coordinates[0].clone().unwrap().into_iter().map(|c| c as i64).collect();
    assert_eq!(pos, vec![0, offsets.len() as u64], "one run of offsets");
    let values = (0..t.values.len()).map(|k| t.values.num(k).to_f64()).collect();
    (offsets, values)
}

/// Stores `c` as DIA and checks the buffers, the round trips (through its
/// JSON storage, CSR and COO), and that it densifies to `c`.
fn check(map: &str, c: &Coo, offsets: &[i64], values: &[f64]) {
    let e = enc(map);
    let t = pack(c, &e, ScalarType::F64).unwrap();
    assert_eq!(buffers(&t), (offsets.to_vec(), values.to_vec()), "{map} of {:?}", c.dims);
    let want = DenseTensor::from_coo(c).unwrap();
    assert_eq!(to_dense(&t).unwrap(), want);
    // JSON storage, as written and as streamed, reads back to the same tensor.
    let json = storage_to_json(&t);
    assert_eq!(json["coordinates"][0], serde_json::json!(offsets));
    let mut text = Vec::new();
    write::write_json(&t, &mut text).unwrap();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&text).unwrap(), json);
    let mut back = storage_from_json(&json, Some(ScalarType::F64)).unwrap();
    back.elem = t.elem;
    assert_eq!(back, t);
    assert_eq!(assemble(&e, t.elem, t.dim_sizes.clone(), disassemble(&t)).unwrap(), t);
    // DIA -> CSR / COO -> DIA.
    for other in [
        "(i, j) -> (i : dense, j : compressed)",
        "(i, j) -> (i : compressed(nonunique), j : singleton)",
        "(i, j) -> (j : dense, i : compressed)",
    ] {
        let o = convert(&t, &enc(other)).unwrap();
        assert_eq!(to_dense(&o).unwrap(), want, "{other}");
        assert_eq!(convert(&o, &e).unwrap(), t, "{other} -> {map}");
    }
}

#[test]
fn tridiagonal_4x4() {
    // a(i, j) = 10 i + j + 1 on the three middle diagonals.
    let entries: Vec<(u64, u64, f64)> = (0..4u64)
        .flat_map(|i| (i.saturating_sub(1)..(i + 2).min(4)).map(move |j| (i, j, (10 * i + j + 1) as f64)))
        .collect();
    assert_eq!(entries.len(), 10);
    let c = coo(4, 4, &entries);
    // Row-indexed: diagonal -1 has no row 0, diagonal 1 no row 3 (padding 0).
    check(DIA, &c, &[-1, 0, 1], &[0., 11., 22., 33., 1., 12., 23., 34., 2., 13., 24., 0.]);
    // Column-indexed (scipy's layout): diagonal -1 has no column 3, diagonal 1 no column 0.
    check(DIA_BY_COLUMN, &c, &[-1, 0, 1], &[11., 22., 33., 0., 1., 12., 23., 34., 0., 2., 13., 24.]);
}

#[test]
fn rectangular_3x5_and_5x3() {
    let c = coo(3, 5, &[(0, 0, 1.), (0, 4, 2.), (2, 0, 3.), (1, 3, 4.)]);
    // Offsets -2, 0, 2, 4; rows 0..3 of each diagonal, padded past the edge.
    check(DIA, &c, &[-2, 0, 2, 4], &[0., 0., 3., 1., 0., 0., 0., 4., 0., 2., 0., 0.]);
    check(
        DIA_BY_COLUMN,
        &c,
        &[-2, 0, 2, 4],
        &[3., 0., 0., 0., 0., 1., 0., 0., 0., 0., 0., 0., 0., 4., 0., 0., 0., 0., 0., 2.],
    );
    let t = coo(5, 3, &[(0, 0, 1.), (4, 0, 2.), (0, 2, 3.), (3, 1, 4.)]);
    check(DIA, &t, &[-4, -2, 0, 2], &[0., 0., 0., 0., 2., 0., 0., 0., 4., 0., 1., 0., 0., 0., 0., 3., 0., 0., 0., 0.]);
}

#[test]
fn empty_and_one_by_one() {
    check(DIA, &coo(3, 4, &[]), &[], &[]);
    check(DIA, &coo(0, 3, &[]), &[], &[]);
    check(DIA, &coo(1, 1, &[(0, 0, 5.)]), &[0], &[5.]);
    let t = pack(&coo(3, 4, &[]), &enc(DIA), ScalarType::F64).unwrap();
    assert_eq!(t.lvl_sizes, vec![6, 3], "offsets -2 ..= 3, rows");
}

/// `i - j` under a dense row level: each row lists its offsets, signed and
/// increasing (-1 before 0).
#[test]
fn row_offsets_i_minus_j() {
    let entries: Vec<(u64, u64, f64)> = (0..4u64)
        .flat_map(|i| (i.saturating_sub(1)..(i + 2).min(4)).map(move |j| (i, j, (10 * i + j + 1) as f64)))
        .collect();
    let e = enc("(i, j) -> (i : dense, i - j : compressed)");
    let t = pack(&coo(4, 4, &entries), &e, ScalarType::F64).unwrap();
    let b = disassemble(&t);
    assert_eq!(b.positions[1], Some(vec![0, 2, 5, 8, 10]));
    let crd: Vec<i64> = b.coordinates[1].clone().unwrap().into_iter().map(|c| c as i64).collect();
    assert_eq!(crd, vec![-1, 0, -1, 0, 1, -1, 0, 1, 0, 1]);
    let vals: Vec<f64> = (0..t.nse()).map(|k| t.values.num(k).to_f64()).collect();
    assert_eq!(vals, vec![2., 1., 13., 12., 11., 24., 23., 22., 34., 33.]);
    assert_eq!(to_dense(&t).unwrap(), DenseTensor::from_coo(&coo(4, 4, &entries)).unwrap());
}

/// Narrow widths hold the offsets in two's complement: `crdWidth = 8`
/// stores -128 ..= 127; beyond that the conversion names the buffer.
#[test]
fn signed_offsets_at_narrow_widths() {
    let c = coo(200, 200, &[(127, 0, 1.), (0, 127, 2.), (5, 5, 3.)]);
    let e = enc("(i, j) -> (j - i : compressed, i : dense), crdWidth = 8, posWidth = 8");
    let t = pack(&c, &e, ScalarType::F64).unwrap();
    let b = disassemble(&t);
    assert_eq!(b.coordinates[0].clone().unwrap().into_iter().map(|c| c as i64).collect::<Vec<_>>(), vec![-127, 0, 127]);
    assert_eq!(to_dense(&t).unwrap(), DenseTensor::from_coo(&c).unwrap());
    // -129 does not fit 8 signed bits.
    let err = pack(&coo(200, 200, &[(129, 0, 1.)]), &e, ScalarType::F64).unwrap_err().to_string();
    assert!(err.contains("coordinates[0]") && err.contains("-129") && err.contains("8 signed bits"), "{err}");
    // 16 bits hold it.
    let e16 = enc("(i, j) -> (j - i : compressed, i : dense), crdWidth = 16");
    let t16 = pack(&coo(200, 200, &[(129, 0, 1.)]), &e16, ScalarType::F64).unwrap();
    assert_eq!(storage_to_json(&t16)["coordinates"][0], serde_json::json!([-129]));
}

/// Values in the padding past the matrix's edge are not entries, whatever
/// they hold (scipy leaves such slots unspecified too); bad offsets are
/// errors naming the buffer and position.
#[test]
fn storage_from_outside() {
    let storage = |offsets: &str, values: &str| {
        serde_json::from_str::<serde_json::Value>(&format!(
            r##"{{"encoding": "#sparse_tensor.encoding<{{ map = (i, j) -> (j - i : compressed, i : dense) }}>",
                "dim_sizes": [3, 5], "positions": [[0, 2], null], "coordinates": [{offsets}, null], "values": {values}}}"##
        ))
        .unwrap()
    };
    // Diagonal -2 reaches only row 2; diagonal 4 only row 0: 99s elsewhere are padding.
    let t = storage_from_json(&storage("[-2, 4]", "[99, 99, 3, 2, 99, 99]"), Some(ScalarType::F64)).unwrap();
    let want = DenseTensor::from_coo(&coo(3, 5, &[(2, 0, 3.), (0, 4, 2.)])).unwrap();
    assert_eq!(to_dense(&t).unwrap(), want);
    let csr = convert(&t, &enc("(i, j) -> (i : dense, j : compressed)")).unwrap();
    assert_eq!(csr.nse(), 2);
    for (offsets, want) in [
        ("[-3, 0]", "coordinates[0][0]: offset -3 is outside level 0's offsets -2 ..= 4"),
        ("[0, 5]", "coordinates[0][1]: offset 5 is outside level 0's offsets -2 ..= 4"),
        ("[1, -1]", "coordinates[0][1]: -1 follows 1 under one parent"),
        ("[1, 1]", "coordinates[0][1]: 1 follows 1 under one parent"),
    ] {
        let err =
            storage_from_json(&storage(offsets, "[1, 2, 3, 4, 5, 6]"), Some(ScalarType::F64)).unwrap_err().to_string();
        assert!(err.contains(want), "{offsets}: {err}");
    }
}

/// Every other encoding converts into DIA and back out of it, the `.npz`
/// writer saves scipy's dia format, and a `.mtx` file reads into DIA.
#[test]
fn to_and_from_every_encoding() {
    let m = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sparse/m4x8.mtx");
    let dia = enc(DIA);
    let t = file::read_into(&m, &dia).unwrap();
    let (coo_m, _) = heddle_runtime::sparse::mtx::read_mtx(&m).unwrap();
    let want = DenseTensor::from_coo(&coo_m).unwrap();
    assert_eq!(to_dense(&t).unwrap(), want);
    for other in [
        "(i, j) -> (i : compressed, j : compressed)",
        "(i, j) -> (j : compressed, i : compressed), posWidth = 32, crdWidth = 8",
        "(i, j) -> (i floordiv 2 : dense, j floordiv 4 : compressed, i mod 2 : dense, j mod 4 : dense)",
        "(i, j) -> (i : compressed(nonunique), j : singleton(soa))",
        "(i, j) -> (i : dense, j : loose_compressed)",
        "[c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed)",
        "(i, j) -> (i : dense, j : dense)",
        "(i, j) -> (j - i : compressed, j : dense), crdWidth = 8",
        "(i, j) -> (i : dense, i - j : compressed)",
    ] {
        let o = convert(&t, &enc(other)).unwrap_or_else(|e| panic!("{other}: {e}"));
        assert_eq!(to_dense(&o).unwrap(), want, "{other}");
        assert_eq!(convert(&o, &dia).unwrap(), t, "{other} -> DIA");
    }
    for map in [DIA, DIA_BY_COLUMN] {
        let e = enc(map);
        let dir = crate::scratch_dir("dia");
        let npz = dir.path().join("dia.npz");
        write::write(&convert(&t, &e).unwrap(), &npz).unwrap();
        assert_eq!(to_dense(&file::read_into(&npz, &e).unwrap()).unwrap(), want, "{map} via .npz");
    }
}

/// CSR and CSC → DIA take a path of their own (mark the diagonals, scatter
/// the values): it stores exactly what the general path (entries, sort,
/// level-by-level assembly) stores, explicit zeros and integer values
/// included, for DIA by rows and by columns, in random shapes.
#[test]
fn direct_path_equals_the_general_path() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    for case in 0..40 {
        let (m, n) = (1 + next(12), 1 + next(12));
        let mut c = Coo::of_type(vec![m, n], if case % 3 == 0 { ScalarType::I32 } else { ScalarType::F64 });
        for i in 0..m {
            for j in 0..n {
                if next(4) == 0 {
                    // Some stored zeros: an explicit 0 marks its diagonal too.
                    c.push(&[i, j], next(5) as f64 - 2.0);
                }
            }
        }
        let elem = c.elem();
        for src in ["(i, j) -> (i : dense, j : compressed)", "(i, j) -> (j : dense, i : compressed), crdWidth = 8"] {
            let s = pack(&c, &enc(src), elem).unwrap();
            for target in [DIA, DIA_BY_COLUMN, "(i, j) -> (j - i : compressed, i : dense), crdWidth = 16, posWidth = 8"]
            {
                let e = enc(target);
                let direct = convert(&s, &e).unwrap();
                let general = pack(&s.to_coo(), &e, elem).unwrap();
                assert_eq!(direct, general, "case {case}: {src} -> {target}");
            }
        }
    }
}

/// DIA's storage is sized by the offsets present, not by the ones possible:
/// a tridiagonal 300 000 x 300 000 matrix (about 900 000 values stored)
/// converts from entries (the general path) and from CSR (the direct one),
/// though 599 999 diagonals times 300 000 rows would be refused.
#[test]
fn a_big_banded_matrix_fits() {
    let n = 300_000u64;
    let mut c = Coo::new(vec![n, n]);
    for i in 0..n {
        for j in i.saturating_sub(1)..(i + 2).min(n) {
            c.push(&[i, j], 1.0 + (i % 7) as f64);
        }
    }
    let t = pack(&c, &enc(DIA), ScalarType::F64).unwrap();
    assert_eq!(buffers(&t).0, vec![-1, 0, 1]);
    assert_eq!(t.nse(), 3 * n as usize);
    let csr = pack(&c, &enc("(i, j) -> (i : dense, j : compressed)"), ScalarType::F64).unwrap();
    assert_eq!(convert(&csr, &enc(DIA)).unwrap(), t);
    // A matrix that really has that many diagonals is still refused, with the reason.
    let mut wide = Coo::new(vec![n, n]);
    for i in 0..n {
        wide.push(&[i, 0], 1.0);
        wide.push(&[0, i], 1.0);
    }
    let err = pack(&wide, &enc(DIA), ScalarType::F64).unwrap_err().to_string();
    assert!(err.contains("more than the 268435456 heddle allocates"), "{err}");
}

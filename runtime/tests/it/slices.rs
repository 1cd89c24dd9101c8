//! Dimension slices (issue 12): an encoding with
//! `#sparse_tensor<slice(offset, size, stride)>` on a dimension stores the
//! window it selects, in any level format. Checked against slicing the dense
//! tensor directly, on random tensors and windows.

use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, parse_encoding};
use heddle_runtime::sparse::build::pack;
use heddle_runtime::sparse::convert::to_dense;
use heddle_runtime::sparse::{Coo, DenseTensor};
use proptest::prelude::*;

/// The level formats the window is stored in.
const LEVELS: &[&str] = &[
    "(i : dense, j : compressed)",
    "(j : dense, i : compressed)",
    "(i : compressed, j : compressed)",
    "(i : compressed(nonunique), j : singleton)",
    "(i : dense, j : dense)",
];

fn sliced(levels: &str, rows: (u64, u64, u64), cols: (u64, u64, u64)) -> Encoding {
    let s = |(o, n, k): (u64, u64, u64)| format!("#sparse_tensor<slice({o}, {n}, {k})>");
    let text = format!("#sparse_tensor.encoding<{{ map = (i : {}, j : {}) -> {levels} }}>", s(rows), s(cols));
    parse_encoding(&text, 0).unwrap()
}

/// A matrix of distinct nonzero entries.
fn matrix() -> impl Strategy<Value = Coo> {
    (1u64..9, 1u64..9).prop_flat_map(|(m, n)| {
        prop::collection::btree_map((0..m, 0..n), 1i32..100, 0..20).prop_map(move |es| {
            let mut c = Coo::new(vec![m, n]);
            for ((i, j), v) in es {
                c.push(&[i, j], f64::from(v));
            }
            c
        })
    })
}

/// A window `(offset, size, stride)` inside a dimension of size `d`.
fn window(d: u64) -> impl Strategy<Value = (u64, u64, u64)> {
    (0..d, 1u64..4).prop_flat_map(move |(offset, stride)| {
        let most = (d - 1 - offset) / stride + 1;
        (Just(offset), 1..=most, Just(stride))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn a_sliced_encoding_stores_the_window(
        (c, rows, cols) in matrix().prop_flat_map(|c| { let (m, n) = (c.dims[0], c.dims[1]); (Just(c), window(m), window(n)) }),
        levels in prop::sample::select(LEVELS),
    ) {
        let t = pack(&c, &sliced(levels, rows, cols), ScalarType::F64).unwrap();
        prop_assert!(t.encoding.dims.iter().all(|d| d.slice.is_none()), "stored in the encoding without its slices");
        let full = DenseTensor::from_coo(&c).unwrap().values.to_f64s();
        let n = c.dims[1] as usize;
        let mut want = Vec::new();
        for a in 0..rows.1 {
            for b in 0..cols.1 {
                let (i, j) = ((rows.0 + a * rows.2) as usize, (cols.0 + b * cols.2) as usize);
                want.push(full[i * n + j]);
            }
        }
        prop_assert_eq!(t.dim_sizes.clone(), vec![rows.1, cols.1]);
        prop_assert_eq!(to_dense(&t).unwrap().values.to_f64s(), want);
    }
}

#[test]
fn windows_past_the_end_and_dynamic_slices_are_errors() {
    let mut c = Coo::new(vec![4, 8]);
    c.push(&[0, 0], 1.0);
    let e = pack(&c, &sliced(LEVELS[0], (1, 2, 1), (2, 4, 2)), ScalarType::F64).unwrap_err().to_string();
    assert!(e.contains("dimension 1's slice (offset 2, size 4, stride 2) reaches past the tensor's size 8"), "{e}");
    let dynamic = parse_encoding(
        "#sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(?, 2, 1)>, j) -> (i : dense, j : compressed) }>",
        0,
    )
    .unwrap();
    let e = pack(&c, &dynamic, ScalarType::F64).unwrap_err().to_string();
    assert!(e.contains("dimension 0's slice has a dynamic (`?`) part"), "{e}");
}

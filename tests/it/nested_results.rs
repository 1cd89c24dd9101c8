//! Stored results whose value has lists inside lists: a CSF tensor of rank 3
//! or 4 stored from its fibres' lists (a map over a CSF input keeps its
//! lists). The interpreter stores every list element; the result is checked
//! against the dense computation and against the input's own storage. The
//! compiled backends refuse it with a located error naming the construct.

use crate::common;

use common::{backends, heddle, root};
use heddle_ir::encoding::parse_encoding;
use heddle_runtime::sparse::convert::to_dense;
use heddle_runtime::sparse::file;
use heddle_runtime::sparse::json::storage_from_json;

/// A map over every level of a rank-`rank` CSF input, `leaf` applied to
/// each value (`e`), stored as CSF again.
fn kernel(rank: usize, leaf: &str) -> String {
    let vars: Vec<String> = (0..rank).map(|k| format!("x{k}")).collect();
    let mut body = format!("({}.1, {})", vars[rank - 1], leaf.replace('e', &format!("{}.2", vars[rank - 1])));
    for k in (0..rank - 1).rev() {
        body = format!("({v}.1, {v}.2 :>> map(fun({w} => {body})))", v = vars[k], w = vars[k + 1]);
    }
    let dims: Vec<String> = (0..rank).map(|d| format!("{{A_dim{d}}}")).collect();
    let q: Vec<&str> = vec!["?"; rank];
    format!(
        "fun(A: tensor<{}xf64, CSF> =>\n  (A :>> map(fun(x0 => {body})) : tensor<{}xf64, CSF>))\n",
        q.join("x"),
        dims.join("x")
    )
}

fn csf(rank: usize) -> heddle_ir::encoding::Encoding {
    let dims: Vec<String> = (0..rank).map(|d| format!("d{d}")).collect();
    let lvls: Vec<String> = dims.iter().map(|d| format!("{d} : compressed")).collect();
    let text = format!("#sparse_tensor.encoding<{{ map = ({}) -> ({}) }}>", dims.join(", "), lvls.join(", "));
    parse_encoding(&text, 0).unwrap()
}

#[test]
fn csf_maps_store_as_csf_on_the_interpreter() {
    let tmp = common::scratch_dir("nested-results");
    let d = tmp.path();
    let data = root().join("tests/compile_coverage/data");
    for (rank, tns) in [(3, "t3x4x5.tns"), (4, "t2x2x3x2.tns"), (5, "t2x3x2x3x2.tns")] {
        let path = data.join(tns);
        if !path.exists() {
            panic!("{} is missing", path.display());
        }
        let src = d.join(format!("scale{rank}.hdl"));
        std::fs::write(&src, kernel(rank, "e * 2.0 - 1.0")).unwrap();
        let m = format!("A={}", path.display());
        let (code, out, err) = heddle(&["run", src.to_str().unwrap(), "--backend", "interp", "--matrix", &m]);
        assert_eq!(code, 0, "rank {rank}: {err}");
        let got = storage_from_json(&serde_json::from_str(&out).unwrap(), None).unwrap();
        let input = file::read_into(&path, &csf(rank)).unwrap();
        // The same lists at every level, every value mapped.
        assert_eq!((&got.positions, &got.coordinates), (&input.positions, &input.coordinates), "rank {rank}");
        let formats =
            |t: &heddle_runtime::sparse::SparseTensor| t.encoding.levels.iter().map(|l| l.format).collect::<Vec<_>>();
        assert_eq!(formats(&got), formats(&input), "rank {rank}");
        // The dense tensors: 2x - 1 wherever the input has an entry, else 0.
        let (dense_in, dense_out) = (to_dense(&input).unwrap(), to_dense(&got).unwrap());
        let entries = input.to_coo();
        let mut want: Vec<f64> = vec![0.0; dense_in.values.len()];
        for k in 0..entries.len() {
            let at = entries.entry(k).iter().zip(&input.dim_sizes).fold(0u64, |a, (&c, &n)| a * n + c) as usize;
            want[at] = entries.values.num(k).to_f64() * 2.0 - 1.0;
        }
        assert_eq!(dense_out.values, want.into(), "rank {rank}");
    }
}

#[test]
fn a_dense_level_between_lists_stores_every_child() {
    // `ssds` (compressed, compressed, dense, compressed): each (i, j) node
    // holds an array over k of lists over l; mapped, it stores as the input.
    let tmp = common::scratch_dir("nested-results-ssds");
    let d = tmp.path();
    let path = root().join("tests/compile_coverage/data/t2x2x3x2.tns");
    let src = d.join("ssds.hdl");
    std::fs::write(
        &src,
        "fun(A: tensor<?x?x?x?xf64, ssds> =>\n  (A :>> map(fun(a => (a.1, a.2 :>> map(fun(b => (b.1, b.2 :>> map(fun(c => c :>> map(fun(d => (d.1, d.2 * 2.0))))))))))) : tensor<{A_dim0}x{A_dim1}x{A_dim2}x{A_dim3}xf64, ssds>))\n",
    )
    .unwrap();
    let m = format!("A={}", path.display());
    let (code, out, err) = heddle(&["run", src.to_str().unwrap(), "--backend", "interp", "--matrix", &m]);
    assert_eq!(code, 0, "{err}");
    let got = storage_from_json(&serde_json::from_str(&out).unwrap(), None).unwrap();
    let enc = parse_encoding(
        "#sparse_tensor.encoding<{ map = (i, j, k, l) -> (i : compressed, j : compressed, k : dense, l : compressed) }>",
        0,
    )
    .unwrap();
    let input = file::read_into(&path, &enc).unwrap();
    assert_eq!((&got.positions, &got.coordinates), (&input.positions, &input.coordinates));
    let doubled: Vec<f64> = (0..input.values.len()).map(|k| input.values.num(k).to_f64() * 2.0).collect();
    assert_eq!(got.values, doubled.into());
}

#[test]
fn inner_lists_left_empty_are_stored_as_nodes_without_children() {
    // A filter of the innermost fibres: a fibre with no positive value is
    // still an element of its list, stored with no entries under it.
    let tmp = common::scratch_dir("nested-results-filter");
    let d = tmp.path();
    let tns = d.join("t.tns");
    std::fs::write(&tns, "1 1 1 -2.0\n1 2 1 3.0\n1 2 3 -1.0\n2 1 2 4.0\n").unwrap();
    let src = d.join("pos.hdl");
    std::fs::write(
        &src,
        "fun(A: tensor<?x?x?xf64, CSF> =>\n  (A :>> map(fun(a => (a.1, a.2 :>> map(fun(b => (b.1, b.2 :>> filter(fun(e => e.2 > 0.0)))))))) : tensor<{A_dim0}x{A_dim1}x{A_dim2}xf64, CSF>))\n",
    )
    .unwrap();
    let m = format!("A={}", tns.display());
    let (code, out, err) = heddle(&["run", src.to_str().unwrap(), "--backend", "interp", "--matrix", &m]);
    assert_eq!(code, 0, "{err}");
    let got = storage_from_json(&serde_json::from_str(&out).unwrap(), None).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Slices 0 and 1; fibres (0,0), (0,1), (1,0); fibre (0,0) keeps nothing.
    assert_eq!(v["positions"], serde_json::json!([[0, 2], [0, 2, 3], [0, 0, 1, 2]]), "{out}");
    assert_eq!(v["coordinates"], serde_json::json!([[0, 1], [0, 1, 0], [0, 1]]), "{out}");
    assert_eq!(got.values, vec![3.0, 4.0].into(), "{out}");
}

#[test]
fn compiled_backends_refuse_lists_inside_lists_naming_them() {
    let tmp = common::scratch_dir("nested-results-refused");
    let d = tmp.path();
    let src = d.join("scale.hdl");
    std::fs::write(&src, kernel(4, "e * 2.0")).unwrap();
    let m = format!("A={}", root().join("tests/compile_coverage/data/t2x2x3x2.tns").display());
    for backend in backends().into_iter().filter(|b| *b != "interp") {
        let (code, _, err) = heddle(&["run", src.to_str().unwrap(), "--backend", backend, "--matrix", &m]);
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(
            err.contains("lists of (coordinate, …) pairs inside lists") && err.contains("cannot be compiled yet"),
            "{backend}: {err}"
        );
        assert!(err.contains("scale.hdl:2:"), "{backend}: located: {err}");
    }
}

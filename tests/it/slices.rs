//! Kernels over sliced tensors on every backend (issue 12): a parameter of a
//! sliced encoding is the window `#sparse_tensor<slice(offset, size,
//! stride)>` selects from the file, in CSR, CSC and COO; row sums compared
//! with the window taken from the file's entries here.

use crate::common;

use common::{backends, heddle, root};

/// The entries of a Matrix Market coordinate file (1-based in the file).
fn entries(path: &std::path::Path) -> Vec<(u64, u64, f64)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('%'));
    lines.next();
    lines
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[0].parse::<u64>().unwrap() - 1, w[1].parse::<u64>().unwrap() - 1, w[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn kernels_see_the_window_on_every_backend() {
    let mtx = root().join("tests/data/sparse/m4x8.mtx");
    let tmp = crate::common::scratch_dir("cli-slices");
    let d = tmp.path();
    // rows 1..4, columns 1, 3, 5, 7.
    let (rows, cols) = ((1u64, 3u64, 1u64), (1u64, 4u64, 2u64));
    let mut want = vec![0.0; rows.1 as usize];
    for (i, j, v) in entries(&mtx) {
        let (a, b) = (i.wrapping_sub(rows.0), j.wrapping_sub(cols.0));
        if a % rows.2 == 0 && a / rows.2 < rows.1 && b % cols.2 == 0 && b / cols.2 < cols.1 {
            want[(a / rows.2) as usize] += v;
        }
    }
    assert!(want.iter().any(|&x| x != 0.0), "the window holds entries");
    let slice = |(o, n, k): (u64, u64, u64)| format!("#sparse_tensor<slice({o}, {n}, {k})>");
    let kernels = [
        // CSR: a row's entries.
        ("csr", "(i : dense, j : compressed)", "A :>> map(fun(row => row :>> map(fun(e => e.2)) :>> reduce(+, 0.0)))"),
        // CSC: scatter-add each column's entries into their rows.
        ("csc", "(j : dense, i : compressed)", "A :>> join :>> scatterAdd(3)"),
    ];
    for (name, levels, body) in kernels {
        let enc =
            format!("#sparse_tensor.encoding<{{ map = (i : {}, j : {}) -> {levels} }}>", slice(rows), slice(cols));
        let kernel = d.join(format!("{name}.hdl"));
        std::fs::write(&kernel, format!("fun(A: tensor<3x4xf64, {enc}> =>\n  {body})\n")).unwrap();
        for backend in backends() {
            let m = format!("A={}", mtx.display());
            let (code, out, err) = heddle(&["run", kernel.to_str().unwrap(), "--backend", backend, "--matrix", &m]);
            assert_eq!(code, 0, "{name} on {backend}: {err}");
            let got: Vec<f64> = serde_json::from_str(&out).unwrap();
            assert_eq!(got, want, "{name} on {backend}");
        }
    }
}

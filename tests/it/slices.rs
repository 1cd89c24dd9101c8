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
        // The window converted for this encoding, as `.json` storage, reads
        // back as the same window.
        let json = d.join(format!("{name}.json"));
        let (code, _, err) = heddle(&["convert", mtx.to_str().unwrap(), "--to", &enc, "-o", json.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
        for backend in backends() {
            let m = format!("A={}", json.display());
            let (code, out, err) = heddle(&["run", kernel.to_str().unwrap(), "--backend", backend, "--matrix", &m]);
            assert_eq!(code, 0, "{name} from .json on {backend}: {err}");
            let got: Vec<f64> = serde_json::from_str(&out).unwrap();
            assert_eq!(got, want, "{name} from .json on {backend}");
        }
    }
}

#[test]
fn a_window_read_for_another_slice_says_what_to_give() {
    let mtx = root().join("tests/data/sparse/m4x8.mtx");
    let tmp = crate::common::scratch_dir("cli-slices-other");
    let d = tmp.path();
    let enc = |o: u64| {
        format!(
            "#sparse_tensor.encoding<{{ map = (i : #sparse_tensor<slice({o}, 2, 1)>, j) -> (i : dense, j : compressed) }}>"
        )
    };
    let json = d.join("w.json");
    let (code, _, err) = heddle(&["convert", mtx.to_str().unwrap(), "--to", &enc(1), "-o", json.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let kernel = d.join("k.hdl");
    std::fs::write(
        &kernel,
        format!(
            "fun(A: tensor<2x8xf64, {}> =>\n  A :>> map(fun(row => row :>> map(fun(e => e.2)) :>> reduce(+, 0.0))))\n",
            enc(2)
        ),
    )
    .unwrap();
    let (code, _, err) = heddle(&["run", kernel.to_str().unwrap(), "--matrix", &format!("A={}", json.display())]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("holds the window slice(1, 2, 1)")
            && err.contains("dimension 0 is slice(2, 2, 1)")
            && err.contains("give its file"),
        "{err}"
    );
    // Read for an unsliced encoding, the file is the window's own tensor.
    let whole = d.join("whole.hdl");
    std::fs::write(
        &whole,
        "fun(A: tensor<?x?xf64, #CSR> =>\n  A :>> map(fun(row => row :>> map(fun(e => e.2)) :>> reduce(+, 0.0))))\n",
    )
    .unwrap();
    let (code, out, err) = heddle(&["run", whole.to_str().unwrap(), "--matrix", &format!("A={}", json.display())]);
    assert_eq!(code, 0, "{err}");
    let sums: Vec<f64> = serde_json::from_str(&out).unwrap();
    assert_eq!(sums.len(), 2, "{out}");
}

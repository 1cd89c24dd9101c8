//! Stored sparse results, `(e : tensor<…, #ENC>)` (issue 11): every result
//! form on interp, cpu and opencl.
//!
//! - Each encoding's storage for small hand-checked cases equals MLIR's
//!   (positions, coordinates, values, sizes), on every backend.
//! - On random matrices (empty rows and columns, 0×0, 1×1, a single long
//!   row) the storage is the same on every backend, and its entries — read
//!   back through `.tns` — are exactly the entries a dense computation
//!   written here predicts (a union's explicit zeros included).
//! - A property test: random operands in random row-major encodings, `+`,
//!   `∘` and SpMSpM with the result in a random encoding, against dense loops.
//! - Outputs: `.json` storage, `.mtx`, `.tns`, `.npz` (scipy's layout, read
//!   back here member by member); errors for what a format cannot hold.

use crate::common;

use common::{Rng, backends, heddle, write};
use serde_json::{Value as J, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Entries by coordinates.
type Entries = BTreeMap<Vec<u64>, f64>;

const CSR: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";

fn mtx(rows: u64, cols: u64, e: &Entries) -> String {
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{rows} {cols} {}\n", e.len());
    for (c, v) in e {
        s.push_str(&format!("{} {} {v}\n", c[0] + 1, c[1] + 1));
    }
    s
}

/// The entries of a `.tns` file (1-based coordinates; the extended header names the shape).
fn read_tns(path: &Path) -> (Vec<u64>, Entries) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let mut dims = Vec::new();
    let mut entries = Entries::new();
    let mut header = false;
    while let Some(line) = lines.next() {
        if line.starts_with('#') {
            header = true;
            let _rank = lines.next().unwrap();
            dims = lines.next().unwrap().split_whitespace().map(|x| x.parse().unwrap()).collect();
            continue;
        }
        let parts: Vec<&str> = line.split_whitespace().collect();
        let (crd, v) = parts.split_at(parts.len() - 1);
        let crd: Vec<u64> = crd.iter().map(|x| x.parse::<u64>().unwrap() - 1).collect();
        let old = entries.insert(crd.clone(), v[0].parse().unwrap());
        assert!(old.is_none(), "{crd:?} twice in {}", path.display());
    }
    assert!(header, "{} has no shape header", path.display());
    (dims, entries)
}

/// A random m x n matrix (`common::random_entries`), keyed by coordinate lists.
fn random(rng: &mut Rng, m: u64, n: u64, percent: u64) -> Entries {
    common::random_entries(rng, m, n, percent).into_iter().map(|((i, j), v)| (vec![i, j], v)).collect()
}

fn union(a: &Entries, b: &Entries) -> Entries {
    let mut out = a.clone();
    for (c, v) in b {
        *out.entry(c.clone()).or_insert(0.0) += v;
    }
    out
}

fn intersection(a: &Entries, b: &Entries) -> Entries {
    a.iter().filter_map(|(c, v)| b.get(c).map(|w| (c.clone(), v * w))).collect()
}

/// Gustavson's pattern: every (i, j) reached through a stored A(i, k) and B(k, j).
fn product(a: &Entries, b: &Entries) -> Entries {
    let mut out = Entries::new();
    for (ca, va) in a {
        for (cb, vb) in b.range(vec![ca[1], 0]..vec![ca[1] + 1, 0]) {
            *out.entry(vec![ca[0], cb[1]]).or_insert(0.0) += va * vb;
        }
    }
    out
}

/// Runs `kernel` with `--matrix` arguments on `backend`; stdout as JSON.
fn run(kernel: &Path, mats: &[(&str, &Path)], backend: &str, extra: &[&str]) -> J {
    let mut args = vec!["run".to_string(), kernel.display().to_string(), "--backend".into(), backend.into()];
    for (name, path) in mats {
        args.extend(["--matrix".into(), format!("{name}={}", path.display())]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = heddle(&args);
    assert_eq!(code, 0, "{} on {backend}: {err}", kernel.display());
    if out.trim().is_empty() { J::Null } else { serde_json::from_str(&out).unwrap() }
}

fn example(name: &str) -> PathBuf {
    common::root().join("examples/sparse").join(format!("{name}.hdl"))
}

/// Storage of every encoding for small hand-checked cases: MLIR's buffers.
#[test]
fn storage_of_each_encoding_is_mlirs() {
    let dir = tempfile::tempdir().unwrap();
    // A = [1 . 2 . . ; . . . . . ; . . . . . ; . . . . 3], B = [. . 5 . . ; . . . . . ; . . . . . ; . 7 . . .]
    let a =
        write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 3\n1 1 1.0\n1 3 2.0\n4 5 3.0\n");
    let b = write(dir.path(), "b.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 2\n1 3 5.0\n4 2 7.0\n");
    // 5 x 3 for products: A * C = [1*(C row 0) + 2*(C row 2); 0; 0; 3*(C row 4)].
    let c = write(
        dir.path(),
        "c.mtx",
        "%%MatrixMarket matrix coordinate real general\n5 3 3\n1 2 1.0\n3 2 4.0\n3 3 -1.0\n",
    );
    let av = write(dir.path(), "av.tns", "1 1.0\n3 2.0\n6 3.0\n");
    let bv = write(dir.path(), "bv.tns", "3 5.0\n4 7.0\n6 0.0\n");
    // Blocks of 2 x 3: A6 = 4 x 6, B6 likewise.
    let a6 = write(
        dir.path(),
        "a6.mtx",
        "%%MatrixMarket matrix coordinate real general\n4 6 4\n1 1 1.0\n2 3 2.0\n4 5 3.0\n3 6 4.0\n",
    );
    let b6 = write(
        dir.path(),
        "b6.mtx",
        "%%MatrixMarket matrix coordinate real general\n4 6 3\n1 2 5.0\n4 6 7.0\n3 1 1.5\n",
    );
    let a3 = write(dir.path(), "a3.tns", "1 1 2 1.0\n1 3 1 2.0\n3 2 2 3.0\n3 2 4 4.0\n");
    let b3 = write(dir.path(), "b3.tns", "1 1 2 5.0\n2 2 2 6.0\n3 2 3 7.0\n3 3 4 0.0\n");
    let two = |x: &Path, y: &Path| vec![("A", x.to_path_buf()), ("B", y.to_path_buf())];
    // (kernel, its tensor files by parameter, the expected storage)
    type Case<'a> = (&'a str, Vec<(&'a str, PathBuf)>, J);
    let cases: Vec<Case> = vec![
        (
            "spadd_csr",
            two(&a, &b),
            json!({"dim_sizes": [4, 5], "lvl_sizes": [4, 5], "nse": 4,
            "positions": [null, [0, 2, 2, 2, 4]], "coordinates": [null, [0, 2, 1, 4]], "values": [1.0, 7.0, 7.0, 3.0]}),
        ),
        (
            "spmul_csr",
            two(&a, &b),
            json!({"dim_sizes": [4, 5], "lvl_sizes": [4, 5], "nse": 1,
            "positions": [null, [0, 1, 1, 1, 1]], "coordinates": [null, [2]], "values": [10.0]}),
        ),
        // Rows 1 and 2 are empty in both: DCSR keeps rows 0 and 3.
        (
            "spadd_dcsr",
            two(&a, &b),
            json!({"dim_sizes": [4, 5], "lvl_sizes": [4, 5], "nse": 4,
            "positions": [[0, 2], [0, 2, 4]], "coordinates": [[0, 3], [0, 2, 1, 4]], "values": [1.0, 7.0, 7.0, 3.0]}),
        ),
        // COO, array of structs: (row, column) pairs interleaved in the first level's buffer.
        (
            "spadd_coo",
            two(&a, &b),
            json!({"dim_sizes": [4, 5], "lvl_sizes": [4, 5], "nse": 4,
            "positions": [[0, 4], null], "coordinates": [[0, 0, 0, 2, 3, 1, 3, 4], null], "values": [1.0, 7.0, 7.0, 3.0]}),
        ),
        // CSC: columns 0..4 hold rows [0], [3], [0], [], [3].
        (
            "spadd_csc",
            two(&a, &b),
            json!({"dim_sizes": [4, 5], "lvl_sizes": [5, 4], "nse": 4,
            "positions": [null, [0, 1, 2, 3, 3, 4]], "coordinates": [null, [0, 3, 0, 3]], "values": [1.0, 7.0, 7.0, 3.0]}),
        ),
        // Row 0: 1 * [. 1 .] + 2 * [. 4 -1] = [. 9 -2]; row 3: 3 * (C row 4, empty) is nothing.
        (
            "spgemm_csr",
            two(&a, &c),
            json!({"dim_sizes": [4, 3], "lvl_sizes": [4, 3], "nse": 2,
            "positions": [null, [0, 2, 2, 2, 2]], "coordinates": [null, [1, 2]], "values": [9.0, -2.0]}),
        ),
        (
            "spgemm_dcsr",
            two(&a, &c),
            json!({"dim_sizes": [4, 3], "lvl_sizes": [4, 3], "nse": 2,
            "positions": [[0, 1], [0, 2]], "coordinates": [[0], [1, 2]], "values": [9.0, -2.0]}),
        ),
        // A stored zero (b's last entry) is an entry of the union.
        (
            "spvadd",
            vec![("a", av.clone()), ("b", bv.clone())],
            json!({"dim_sizes": [6], "lvl_sizes": [6], "nse": 4,
            "positions": [[0, 4]], "coordinates": [[0, 2, 3, 5]], "values": [1.0, 7.0, 7.0, 3.0]}),
        ),
        // Block row 0: block column 0 = [[1 5 0] [0 0 2]]; block row 1: [[1.5 0 0] [0 0 0]], [[0 0 4] [0 3 7]].
        (
            "spadd_bsr",
            two(&a6, &b6),
            json!({"dim_sizes": [4, 6], "lvl_sizes": [2, 2, 2, 3], "nse": 18,
            "positions": [null, [0, 1, 3], null, null], "coordinates": [null, [0, 0, 1], null, null],
            "values": [1.0, 5.0, 0.0, 0.0, 0.0, 2.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 3.0, 7.0]}),
        ),
        // CSF: slices 0, 1, 2; their rows {0, 2}, {1}, {1, 2}; the fibres' columns.
        (
            "csf_add",
            two(&a3, &b3),
            json!({"dim_sizes": [3, 3, 4], "lvl_sizes": [3, 3, 4], "nse": 7,
            "positions": [[0, 3], [0, 2, 3, 5], [0, 1, 2, 3, 6, 7]], "coordinates": [[0, 1, 2], [0, 2, 1, 1, 2], [1, 0, 1, 1, 2, 3, 3]],
            "values": [6.0, 2.0, 6.0, 3.0, 7.0, 4.0, 0.0]}),
        ),
    ];
    for (kernel, mats, want) in cases {
        let mats: Vec<(&str, &Path)> = mats.iter().map(|(n, p)| (*n, p.as_path())).collect();
        for backend in backends() {
            let got = run(&example(kernel), &mats, backend, &[]);
            for (key, value) in want.as_object().unwrap() {
                assert_eq!(&got[key], value, "{kernel} on {backend}: `{key}` in {got}");
            }
        }
    }
}

/// A result's storage on every backend (equal to the interpreter's) and its
/// entries, read from the storage by the runtime's own walk (`to_coo`).
fn stored(kernel: &Path, mats: &[(&str, &Path)], case: &str) -> (Vec<u64>, Entries) {
    let mut reference: Option<J> = None;
    for backend in backends() {
        let storage = run(kernel, mats, backend, &[]);
        match &reference {
            None => reference = Some(storage),
            Some(r) => assert_eq!(
                &storage,
                r,
                "{} on {backend}, {case}: the storage differs from the interpreter's",
                kernel.display()
            ),
        }
    }
    let t = heddle_runtime::sparse::json::storage_from_json(&reference.unwrap(), None).unwrap();
    let coo = t.to_coo();
    let entries = (0..coo.len()).map(|k| (coo.entry(k).to_vec(), coo.values.f64(k))).collect();
    (t.dim_sizes.clone(), entries)
}

/// Random matrices of awkward shapes: every result form equals the dense computation.
#[test]
fn random_results_equal_the_dense_computation() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_5e11);
    let shapes: &[(u64, u64, u64)] = &[(9, 7, 5), (0, 0, 0), (1, 1, 1), (1, 300, 40)];
    for (case, &(m, k, n)) in shapes.iter().enumerate() {
        let label = format!("case {case} ({m}x{k}, {k}x{n})");
        let a = random(&mut rng, m, k, 35);
        let b = random(&mut rng, m, k, 35);
        let c = random(&mut rng, k, n, 40);
        let (fa, fb, fc) = (
            write(dir.path(), &format!("a{case}.mtx"), &mtx(m, k, &a)),
            write(dir.path(), &format!("b{case}.mtx"), &mtx(m, k, &b)),
            write(dir.path(), &format!("c{case}.mtx"), &mtx(k, n, &c)),
        );
        let ab = [("A", fa.as_path()), ("B", fb.as_path())];
        let ac = [("A", fa.as_path()), ("B", fc.as_path())];
        for (kernel, mats, want, dims) in [
            ("spadd_csr", &ab, union(&a, &b), vec![m, k]),
            ("spadd_dcsr", &ab, union(&a, &b), vec![m, k]),
            ("spadd_coo", &ab, union(&a, &b), vec![m, k]),
            ("spmul_csr", &ab, intersection(&a, &b), vec![m, k]),
            ("spgemm_csr", &ac, product(&a, &c), vec![m, n]),
            ("spgemm_dcsr", &ac, product(&a, &c), vec![m, n]),
        ] {
            let (got_dims, got) = stored(&example(kernel), mats, &format!("{kernel}, {label}"));
            assert_eq!(got_dims, dims, "{kernel}, {label}");
            assert_eq!(got.len(), want.len(), "{kernel}, {label}: {got:?}, want {want:?}");
            for ((gc, gv), (wc, wv)) in got.iter().zip(&want) {
                assert_eq!(gc, wc, "{kernel}, {label}");
                assert!((gv - wv).abs() <= 1e-5 * wv.abs().max(1.0), "{kernel}, {label}: {gc:?} is {gv}, want {wv}");
            }
        }
        // CSC: the same matrices, stored column-major (the .mtx is read into CSC).
        let (_, got) = stored(&example("spadd_csc"), &ab, &format!("spadd_csc, {label}"));
        assert_eq!(got.keys().collect::<Vec<_>>(), union(&a, &b).keys().collect::<Vec<_>>(), "spadd_csc, {label}");
    }
}

/// `.npz` members: scipy's names, dtypes and contents.
fn npz_members(path: &Path) -> BTreeMap<String, (String, Vec<u8>)> {
    let file = std::fs::File::open(path).unwrap();
    let mut zip = zip::ZipArchive::new(file).unwrap();
    let mut out = BTreeMap::new();
    for k in 0..zip.len() {
        let mut f = zip.by_index(k).unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut bytes).unwrap();
        assert_eq!(&bytes[..6], b"\x93NUMPY");
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let header = String::from_utf8(bytes[10..10 + hlen].to_vec()).unwrap();
        out.insert(f.name().unwrap().to_string(), (header, bytes[10 + hlen..].to_vec()));
    }
    out
}

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}
fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn stored_results_are_written_as_json_mtx_tns_and_npz() {
    let dir = tempfile::tempdir().unwrap();
    let a =
        write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 3\n1 1 1.0\n1 3 2.0\n4 5 3.0\n");
    let b = write(dir.path(), "b.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 2\n1 3 5.0\n4 2 7.0\n");
    let mats = [("A", a.as_path()), ("B", b.as_path())];
    for backend in backends() {
        // .json is the storage object, the same as stdout.
        let json_out = dir.path().join("c.json");
        let stdout = run(&example("spadd_dcsr"), &mats, backend, &[]);
        run(&example("spadd_dcsr"), &mats, backend, &["-o", json_out.to_str().unwrap()]);
        let file: J = serde_json::from_str(&std::fs::read_to_string(&json_out).unwrap()).unwrap();
        assert_eq!(file, stdout, "{backend}");
        assert_eq!(
            stdout["encoding"],
            json!("#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>")
        );
        // .mtx: the entries, shape from the tensor (the empty last column kept).
        let mtx_out = dir.path().join("c.mtx");
        run(&example("spadd_dcsr"), &mats, backend, &["-o", mtx_out.to_str().unwrap()]);
        assert_eq!(
            std::fs::read_to_string(&mtx_out).unwrap(),
            "%%MatrixMarket matrix coordinate real general\n4 5 4\n1 1 1.0\n1 3 7.0\n4 2 7.0\n4 5 3.0\n",
            "{backend}"
        );
        // .npz: CSR as scipy's csr, COO and DCSR as coo, CSC as csc.
        for (kernel, format, want) in [
            ("spadd_csr", "csr", vec![("indptr.npy", vec![0, 2, 2, 2, 4]), ("indices.npy", vec![0, 2, 1, 4])]),
            ("spadd_csc", "csc", vec![("indptr.npy", vec![0, 1, 2, 3, 3, 4]), ("indices.npy", vec![0, 3, 0, 3])]),
            ("spadd_coo", "coo", vec![("row.npy", vec![0, 0, 3, 3]), ("col.npy", vec![0, 2, 1, 4])]),
            ("spadd_dcsr", "coo", vec![("row.npy", vec![0, 0, 3, 3]), ("col.npy", vec![0, 2, 1, 4])]),
        ] {
            let npz = dir.path().join(format!("{kernel}.npz"));
            run(&example(kernel), &mats, backend, &["-o", npz.to_str().unwrap()]);
            let members = npz_members(&npz);
            assert_eq!(members["format.npy"].1, format.as_bytes(), "{kernel}");
            assert!(
                members["format.npy"].0.contains("'descr': '|S3'") && members["format.npy"].0.contains("'shape': ()")
            );
            let shape: Vec<i64> =
                members["shape.npy"].1.chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
            assert_eq!(shape, vec![4, 5], "{kernel}");
            for (name, values) in want {
                assert!(members[name].0.contains("'descr': '<i4'"), "{kernel} {name}: {}", members[name].0);
                assert_eq!(i32s(&members[name].1), values, "{kernel} {name}");
            }
            assert!(members["data.npy"].0.contains("'descr': '<f4'"));
            let data = f32s(&members["data.npy"].1);
            // Storage order: by rows, or by columns for csc (the same four values here).
            assert_eq!(data, vec![1.0, 7.0, 7.0, 3.0], "{kernel}");
        }
    }
    // .tns: any rank, with its shape (3-D CSF here).
    let a3 = write(dir.path(), "a3.tns", "1 1 2 1.0\n2 3 4 2.0\n");
    let b3 = write(dir.path(), "b3.tns", "1 1 2 0.5\n2 3 4 0.0\n");
    let tns = dir.path().join("x.tns");
    for backend in backends() {
        run(&example("csf_add"), &[("A", a3.as_path()), ("B", b3.as_path())], backend, &["-o", tns.to_str().unwrap()]);
        let want: Entries = [(vec![0, 0, 1], 1.5), (vec![1, 2, 3], 2.0)].into_iter().collect();
        assert_eq!(read_tns(&tns), (vec![2, 3, 4], want), "{backend}");
    }
    // .npz holds a 3-D result as scipy's n-D coo_array (`coords`).
    let out = dir.path().join("x.npz");
    let (code, _, err) = heddle(&[
        "run",
        example("csf_add").to_str().unwrap(),
        "--matrix",
        &format!("A={}", a3.display()),
        "--matrix",
        &format!("B={}", a3.display()),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let members = npz_members(&out);
    assert_eq!(members["format.npy"].1, b"coo", "a 3-D result is stored as coo");
    assert!(members.contains_key("coords.npy"), "{:?}", members.keys().collect::<Vec<_>>());
    // What a format cannot hold is an error naming it.
    let (code, _, err) = heddle(&[
        "run",
        example("spadd_csr").to_str().unwrap(),
        "--matrix",
        &format!("A={}", a.display()),
        "--matrix",
        &format!("B={}", b.display()),
        "-o",
        dir.path().join("x.npy").to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("a stored tensor is written as"), "{err}");
}

/// A coordinate outside the stored tensor's size, or out of order in a
/// list, is a run-time error at the annotation on every backend.
#[test]
fn coordinates_outside_the_stored_shape_or_out_of_order_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n2 6 2\n1 1 1.0\n2 6 2.0\n");
    // The result claims 5 columns: column 5 does not fit.
    let small = write(
        dir.path(),
        "small.hdl",
        &format!(
            "#CSR = {CSR}\nfun(A: tensor<?x?xf32, #CSR> => (A :>> map(fun(row => row :>> map(fun(e => (e.1, e.2 * 2))))) : tensor<?x{{5}}xf32, #CSR>))\n"
        ),
    );
    // Coordinates reversed: a list out of order.
    let reversed = write(
        dir.path(),
        "reversed.hdl",
        &format!(
            "#CSR = {CSR}\nfun(A: tensor<?x?xf32, #CSR> => (generate(A_dim0, fun(i => generate(2, fun(k => (1 - k, 1.0))))) : tensor<?x{{A_dim1}}xf32, #CSR>))\n"
        ),
    );
    for backend in backends() {
        for (kernel, message) in [(&small, "outside the level's size 5"), (&reversed, "must be strictly increasing")] {
            let (code, _, err) = heddle(&[
                "run",
                kernel.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", a.display()),
            ]);
            assert_eq!(code, 1, "{} on {backend}: {err}", kernel.display());
            assert!(err.contains(message) && err.contains(":2:"), "{} on {backend}: {err}", kernel.display());
        }
    }
}

/// A tuple result: each component has its own outputs (and count phase) —
/// two stored tensors, a dense array and counted rows.
#[test]
fn tuples_of_results_have_one_output_each() {
    let dir = tempfile::tempdir().unwrap();
    let a =
        write(dir.path(), "a.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 3\n1 1 1.0\n1 3 2.0\n4 5 3.0\n");
    let b = write(dir.path(), "b.mtx", "%%MatrixMarket matrix coordinate real general\n4 5 2\n1 3 5.0\n4 2 7.0\n");
    let kernel = write(
        dir.path(),
        "tuple.hdl",
        &format!(
            "#CSR = {CSR}\n#DCSR = #sparse_tensor.encoding<{{ map = (i, j) -> (i : compressed, j : compressed) }}>\n\
             fun(A: tensor<?x?xf32, #CSR> => fun(B: tensor<?x?xf32, #CSR> =>\n\
               let s = generate(A_dim0, fun(i => union(0, 0, A@i, B@i) :>> map(fun(e => (e.1, e.2 + e.3))))) in\n\
               ((s : tensor<?x{{A_dim1}}xf32, #CSR>),\n\
                (generate(A_dim0, fun(i => intersect(A@i, B@i) :>> map(fun(e => (e.1, e.2 * e.3))))) : tensor<?x{{A_dim1}}xf32, #DCSR>),\n\
                A :>> map(fun(row => row :>> map(fun(e => e.2)) :>> reduce(+, 0))),\n\
                generate(A_dim0, fun(i => union(0, 0, A@i, B@i) :>> map(fun(e => e.2 - e.3)))))))\n"
        ),
    );
    let (code, loops, err) = heddle(&["compile", kernel.to_str().unwrap(), "--target", "loops"]);
    assert_eq!(code, 0, "{err}");
    // The union is counted twice (the stored tensor's and the rows'), the intersection once.
    assert_eq!(loops.matches("count phase").count(), 3, "{loops}");
    for backend in backends() {
        let got = run(&kernel, &[("A", a.as_path()), ("B", b.as_path())], backend, &[]);
        assert_eq!(got[0]["positions"], json!([null, [0, 2, 2, 2, 4]]), "{backend}: {got}");
        assert_eq!(got[0]["values"], json!([1.0, 7.0, 7.0, 3.0]), "{backend}");
        assert_eq!(got[1]["positions"], json!([[0, 1], [0, 1]]), "{backend}: {got}");
        assert_eq!(got[1]["coordinates"], json!([[0], [2]]), "{backend}");
        assert_eq!(got[1]["values"], json!([10.0]), "{backend}");
        assert_eq!(got[2], json!([3.0, 0.0, 0.0, 3.0]), "{backend}");
        assert_eq!(got[3], json!([[1.0, -3.0], [], [], [-7.0, 3.0]]), "{backend}");
    }
}

/// Co-iteration over a `nonordered` level whose coordinates are out of order
/// is an error on every backend, never a wrong answer (the merge of two
/// lists needs them sorted; compiled code gave `[3, 1]` with exit 0).
#[test]
fn co_iteration_over_unsorted_coordinates_is_an_error_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let enc = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonordered)) }>";
    let kernel = write(
        dir.path(),
        "count.hdl",
        &format!(
            "#NO = {enc}\n\nfun(A: tensor<?x?xf32, #NO> =>\nfun(B: tensor<?x?xf32, #NO> =>\n  generate(A_dim0, fun(i => union(0, 0, A@i, B@i) :>> map(fun(e => 1)) :>> reduce(+, 0)))))\n"
        ),
    );
    let storage = |coordinates: [i64; 3], values: [f64; 3]| json!({ "encoding": enc, "dim_sizes": [2, 4], "lvl_sizes": [2, 4], "nse": 3, "positions": [null, [0, 2, 3]], "coordinates": [null, coordinates], "values": values });
    let sorted = write(dir.path(), "sorted.json", &storage([1, 3, 2], [2.0, 1.0, 4.0]).to_string());
    let unsorted = write(dir.path(), "unsorted.json", &storage([3, 1, 2], [1.0, 2.0, 4.0]).to_string());
    for backend in backends() {
        let run = |a: &Path, b: &Path| {
            heddle(&[
                "run",
                kernel.to_str().unwrap(),
                "--backend",
                backend,
                "--matrix",
                &format!("A={}", a.display()),
                "--matrix",
                &format!("B={}", b.display()),
            ])
        };
        let (code, out, err) = run(&sorted, &sorted);
        assert_eq!((code, out.trim()), (0, "[2,1]"), "{backend}: {err}");
        for (a, b, which) in [(&unsorted, &sorted, "first"), (&sorted, &unsorted, "second")] {
            let (code, out, err) = run(a, b);
            assert_eq!(code, 1, "{backend}: {out}");
            assert!(err.contains(&format!("the {which} list is not sorted")), "{backend}: {err}");
        }
    }
}

/// N-way co-iteration (a co-iteration whose operand is another, mapped back
/// to pairs): `(A + B) - C` and `(A + B) ∘ C` stored as CSR, on random
/// matrices of awkward shapes, equal a dense computation on every backend.
#[test]
fn n_way_co_iteration_equals_the_dense_computation() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xc0_17e2);
    let kernel = |name: &str, outer: &str, op: &str| {
        let text = format!(
            "#CSR = {CSR}\n\nfun(A: tensor<?x?xf32, #CSR> =>\nfun(B: tensor<?x?xf32, #CSR> =>\nfun(C: tensor<?x?xf32, #CSR> =>\n  (generate(A_dim0, fun(i =>\n    {outer}union(0, 0, A@i, B@i) :>> map(fun(e => (e.1, e.2 + e.3))), C@i)\n      :>> map(fun(e => (e.1, e.2 {op} e.3))))) : tensor<?x{{A_dim1}}xf32, #CSR>))))\n"
        );
        write(dir.path(), name, &text)
    };
    let (sub, mul) = (kernel("sub.hdl", "union(0, 0, ", "-"), kernel("mul.hdl", "intersect(", "*"));
    for (case, &(m, n)) in [(9u64, 7u64), (0, 0), (1, 1), (1, 300), (6, 3)].iter().enumerate() {
        let label = format!("case {case} ({m}x{n})");
        let (a, b, c) = (random(&mut rng, m, n, 35), random(&mut rng, m, n, 30), random(&mut rng, m, n, 40));
        let files: Vec<PathBuf> = [&a, &b, &c]
            .iter()
            .enumerate()
            .map(|(k, e)| write(dir.path(), &format!("{k}_{case}.mtx"), &mtx(m, n, e)))
            .collect();
        let mats = [("A", files[0].as_path()), ("B", files[1].as_path()), ("C", files[2].as_path())];
        let ab = union(&a, &b);
        let mut minus = ab.clone();
        for (k, v) in &c {
            *minus.entry(k.clone()).or_insert(0.0) -= v;
        }
        for (kernel, want) in [(&sub, minus), (&mul, intersection(&ab, &c))] {
            let (dims, got) = stored(kernel, &mats, &label);
            assert_eq!(dims, vec![m, n], "{}, {label}", kernel.display());
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>(),
                "{}, {label}",
                kernel.display()
            );
            for ((gc, gv), wv) in got.iter().zip(want.values()) {
                assert!(
                    (gv - wv).abs() <= 1e-5 * wv.abs().max(1.0),
                    "{}, {label}: {gc:?} is {gv}, want {wv}",
                    kernel.display()
                );
            }
        }
    }
}

/// An intersection stops visiting when one list runs out, but the
/// interpreter checks every entry of both: an unsorted entry after the end of
/// the other list is the same error on every backend (two lists, and an
/// intersection whose first operand is a mapped union).
#[test]
fn an_intersection_checks_the_rest_of_the_longer_list() {
    let dir = tempfile::tempdir().unwrap();
    let enc = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonordered)) }>";
    let storage = |coordinates: &[i64]| {
        let values: Vec<f64> = coordinates.iter().map(|&c| c as f64 + 1.0).collect();
        json!({ "encoding": enc, "dim_sizes": [1, 4], "lvl_sizes": [1, 4], "nse": coordinates.len(), "positions": [null, [0, coordinates.len()]], "coordinates": [null, coordinates], "values": values })
    };
    let short = write(dir.path(), "short.json", &storage(&[0]).to_string());
    let sorted = write(dir.path(), "sorted.json", &storage(&[0, 2, 3]).to_string());
    let unsorted = write(dir.path(), "unsorted.json", &storage(&[0, 3, 2]).to_string());
    for (name, first) in
        [("two.hdl", "A@i"), ("nested.hdl", "union(0, 0, A@i, A@i) :>> map(fun(e => (e.1, e.2 + e.3)))")]
    {
        let kernel = write(
            dir.path(),
            name,
            &format!(
                "#NO = {enc}\n\nfun(A: tensor<?x?xf32, #NO> =>\nfun(B: tensor<?x?xf32, #NO> =>\n  generate(A_dim0, fun(i => intersect({first}, B@i) :>> map(fun(e => e.2 * e.3)) :>> reduce(+, 0)))))\n"
            ),
        );
        for backend in backends() {
            let run = |a: &Path, b: &Path| {
                heddle(&[
                    "run",
                    kernel.to_str().unwrap(),
                    "--backend",
                    backend,
                    "--matrix",
                    &format!("A={}", a.display()),
                    "--matrix",
                    &format!("B={}", b.display()),
                ])
            };
            let (code, out, err) = run(&short, &sorted);
            let want = if name == "two.hdl" { "[1.0]" } else { "[2.0]" };
            assert_eq!((code, out.trim()), (0, want), "{name} on {backend}: {err}");
            for (a, b, which) in [(&short, &unsorted, "second"), (&unsorted, &short, "first")] {
                let (code, out, err) = run(a, b);
                assert_eq!(code, 1, "{name} on {backend}: {out}");
                assert!(err.contains(&format!("the {which} list is not sorted")), "{name} on {backend}: {err}");
            }
        }
    }
}

/// A stream copied into a temporary (`toPrivate` of a union's map) is written
/// in order and counted as it is: the row sums of A + B, against a dense
/// computation, on every backend. The temporary has room for A_dim1 + B_dim1
/// records (the rows' level sizes bound the union), a per-worker workspace
/// allocated before the launch, so OpenCL runs it too (it used to refuse a
/// private array of a length only the data gives).
#[test]
fn a_stream_in_a_temporary_is_stored_with_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x7e_3b0);
    let (m, n) = (7, 9);
    let (a, b) = (random(&mut rng, m, n, 40), random(&mut rng, m, n, 40));
    let (fa, fb) = (write(dir.path(), "a.mtx", &mtx(m, n, &a)), write(dir.path(), "b.mtx", &mtx(m, n, &b)));
    let kernel = write(
        dir.path(),
        "private.hdl",
        &format!(
            "#CSR = {CSR}\n\nfun(A: tensor<?x?xf32, #CSR> =>\nfun(B: tensor<?x?xf32, #CSR> =>\n  generate(A_dim0, fun(i =>\n    union(0, 0, A@i, B@i) :>> toPrivate(map(fun(e => e.2 + e.3))) :>> reduce(+, 0)))))\n"
        ),
    );
    let mut want = vec![0.0; m as usize];
    for (c, v) in union(&a, &b) {
        want[c[0] as usize] += v;
    }
    let mats = [("A", fa.as_path()), ("B", fb.as_path())];
    for backend in backends() {
        let got = run(&kernel, &mats, backend, &[]);
        let got: Vec<f64> = got.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(got.len(), want.len(), "{backend}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{backend}: {got:?}, want {want:?}");
        }
    }
}

/// The rows of a CSR operand are merged without checking their order: input
/// binding checks it of every tensor's storage (an ordered, unique level), so
/// storage given buffer by buffer with a row out of order is an input error
/// on every backend, never a wrong sum. Plain arrays, whose order nobody
/// checked, keep the merge's run-time check.
#[test]
fn unsorted_storage_rows_are_input_errors_and_plain_lists_stay_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str, text: &str| write(dir.path(), name, text).to_str().unwrap().to_string();
    let (pos, vals) = (path("pos.json", "[0, 2, 3]"), path("vals.json", "[1.0, 2.0, 3.0]"));
    let plain = path(
        "plain.hdl",
        "nFun(n => nFun(m =>\nfun(xc: [int]_n => fun(xv: [float]_n => fun(yc: [int]_m => fun(yv: [float]_m =>\n  union(0, 0, zip(xc, xv), zip(yc, yv)) :>> map(fun(e => e.2 + e.3)) :>> reduce(+, 0)))))))\n",
    );
    let (xv, yc, yv) = (path("xv.json", "[1.0, 2.0]"), path("yc.json", "[1]"), path("yv.json", "[4.0]"));
    for backend in backends() {
        let csr = |crd: &str| {
            let crd = path("crd.json", crd);
            #[rustfmt::skip]
            let args = [
                "run", "examples/sparse/spadd_csr.hdl", "--backend", backend, "--param", "A_dim1=3", "--param", "B_dim1=3",
                "--input", &format!("A_pos1={pos}"), "--input", &format!("A_crd1={crd}"), "--input", &format!("A_values={vals}"),
                "--input", &format!("B_pos1={pos}"), "--input", &format!("B_crd1={crd}"), "--input", &format!("B_values={vals}"),
            ];
            heddle(&args)
        };
        let (code, _, err) = csr("[0, 2, 1]");
        assert_eq!(code, 0, "{backend}: {err}");
        let (code, out, err) = csr("[2, 0, 1]");
        assert_eq!(code, 1, "{backend}: {out}");
        assert!(err.contains("`A_crd1`[1] = 0 follows 2 under one parent"), "{backend}: {err}");
        let (code, _, err) = csr("[0, 0, 1]");
        assert_eq!(code, 1, "{backend}");
        assert!(err.contains("level 1 is unique"), "{backend}: {err}");
        let list = |xc: &str| {
            let xc = path("xc.json", xc);
            let inputs = [format!("xc={xc}"), format!("xv={xv}"), format!("yc={yc}"), format!("yv={yv}")];
            let mut args = vec!["run", plain.as_str(), "--backend", backend];
            for i in &inputs {
                args.extend(["--input", i.as_str()]);
            }
            heddle(&args)
        };
        let (code, out, err) = list("[0, 2]");
        assert_eq!((code, out.trim()), (0, "7.0"), "{backend}: {err}");
        let (code, out, err) = list("[2, 0]");
        assert_eq!(code, 1, "{backend}: {out}");
        assert!(err.contains("the first list is not sorted"), "{backend}: {err}");
    }
}

/// A matrix whose row lengths follow a power law (most rows short or empty,
/// a few holding most entries) and, where `long_row`, one row of every column.
fn power_law(rng: &mut Rng, m: u64, n: u64, long_row: bool) -> Entries {
    let mut e = Entries::new();
    for i in 0..m {
        // 1 / (1 - u) for u uniform in [0, 1): Pareto with index 1, capped at n.
        let u = rng.below(1000) as f64 / 1000.0;
        let len = if long_row && i == m / 2 { n } else { ((1.0 / (1.0 - u)) as u64).saturating_sub(1).min(n) };
        for _ in 0..len {
            e.insert(vec![i, rng.below(n.max(1))], rng.value());
        }
    }
    e
}

/// Co-iterations stored in a tensor are merged once: the bound phase writes
/// the entries each row's merges walk, the fill merges each row into that
/// room and writes its length, and the host reads the rows back from their
/// rooms. The programs are so lowered (a `compressAdd` keeps its counting
/// phase), and on matrices with empty rows, 0×0, 1×1, one long row and
/// power-law rows, on 1 to 4 threads, the storage is the interpreter's and
/// the entries the dense computation's.
#[test]
fn co_iterations_are_merged_once_into_room_for_their_bounds() {
    for (kernel, bound) in
        [("spadd_csr", true), ("spadd_dcsr", true), ("spmul_csr", true), ("spadd_bsr", true), ("spgemm_csr", false)]
    {
        let (code, out, err) = heddle(&["compile", example(kernel).to_str().unwrap(), "--target", "loops"]);
        assert_eq!(code, 0, "{kernel}: {err}");
        assert_eq!(out.contains("bound phase count#1"), bound, "{kernel}:\n{out}");
        assert_eq!(out.contains("count phase count#1"), !bound, "{kernel}:\n{out}");
        assert_eq!(out.contains(", lists at offsets "), bound, "{kernel}:\n{out}");
        // A merge's coordinates increase by construction: the fill leaves out their order check.
        let fill = out.split("\nkernel ").nth(1).unwrap();
        if kernel != "spadd_bsr" {
            assert_eq!(fill.contains("> last else fail"), !bound, "{kernel}:\n{fill}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xb0_a4d5);
    let shapes: &[(u64, u64, bool)] =
        &[(0, 0, false), (1, 1, false), (1, 300, true), (40, 25, false), (60, 200, true), (7, 9, false)];
    for (case, &(m, n, long_row)) in shapes.iter().enumerate() {
        let label = format!("case {case} ({m}x{n})");
        let a = power_law(&mut rng, m, n, long_row);
        let b = if case % 2 == 0 { random(&mut rng, m, n, 30) } else { power_law(&mut rng, m, n, false) };
        let (fa, fb) = (
            write(dir.path(), &format!("a{case}.mtx"), &mtx(m, n, &a)),
            write(dir.path(), &format!("b{case}.mtx"), &mtx(m, n, &b)),
        );
        let mats = [("A", fa.as_path()), ("B", fb.as_path())];
        for (kernel, want) in
            [("spadd_csr", union(&a, &b)), ("spadd_dcsr", union(&a, &b)), ("spmul_csr", intersection(&a, &b))]
        {
            let kernel = example(kernel);
            let (dims, got) = stored(&kernel, &mats, &label);
            assert_eq!(dims, vec![m, n], "{}, {label}", kernel.display());
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>(),
                "{}, {label}",
                kernel.display()
            );
            for ((gc, gv), wv) in got.iter().zip(want.values()) {
                assert!(
                    (gv - wv).abs() <= 1e-5 * wv.abs().max(1.0),
                    "{}, {label}: {gc:?} is {gv}, want {wv}",
                    kernel.display()
                );
            }
            if common::oclgrind() {
                continue;
            }
            let reference = run(&kernel, &mats, "interp", &[]);
            for threads in 1..=4 {
                let storage = run(&kernel, &mats, "cpu", &["--threads", &threads.to_string()]);
                assert_eq!(
                    storage,
                    reference,
                    "{}, {label}, {threads} threads: the storage differs from the interpreter's",
                    kernel.display()
                );
            }
        }
    }
}

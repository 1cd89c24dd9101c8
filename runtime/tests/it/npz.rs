//! scipy's sparse `.npz` archives without scipy: round trips of every layout
//! heddle writes (csr, csc, bsr, coo of any rank), archives laid out as
//! `save_npz` lays them out (stored and deflated, int32 and int64 indices,
//! every value type), and bad archives — missing arrays, wrong dtypes,
//! inconsistent `indptr`, indices outside the shape, huge shapes over little
//! data, deflate bombs — each a located error, never a panic or a large
//! allocation. (tests/it/scipy_interop.rs checks the same against scipy itself.)

use heddle_ir::ScalarType;
use heddle_ir::encoding::parse_encoding;
use heddle_runtime::io::npy;
use heddle_runtime::sparse::file::{read_into, read_tensor};
use heddle_runtime::sparse::npz::{NpzTensor, read_npz};
use heddle_runtime::sparse::{Coo, SparseTensor, build, write};
use std::io::Write;
use std::path::Path;

/// A directory of the test's own, removed when it ends.
fn dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("heddle-npz-").tempdir().unwrap()
}

fn enc(map: &str) -> heddle_ir::encoding::Encoding {
    parse_encoding(&format!("#sparse_tensor.encoding<{{ map = {map} }}>"), 0).unwrap()
}

const CSR: &str = "(i, j) -> (i : dense, j : compressed)";
const CSC: &str = "(i, j) -> (j : dense, i : compressed)";
const BSR: &str = "(i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense)";
const DCSR: &str = "(i, j) -> (i : compressed, j : compressed)";
const COO3: &str = "(i, j, k) -> (i : compressed(nonunique), j : singleton, k : singleton)";

/// A 4x6 matrix with a -0.0, an infinity, an explicit zero and a 2x3 block structure.
fn matrix() -> Coo {
    let entries = [(0, 0, 1.5), (0, 4, -0.0), (1, 2, f64::INFINITY), (2, 1, -2.25), (3, 5, 0.0), (3, 0, 1e-300)];
    let mut c = Coo::new(vec![4, 6]);
    for (i, j, v) in entries {
        c.push(&[i, j], v);
    }
    c
}

/// The entries of a tensor, sorted, padding zeros left out, as bits.
fn entries(t: &SparseTensor) -> Vec<(Vec<u64>, u64)> {
    let c = t.to_coo();
    let mut e: Vec<(Vec<u64>, u64)> = (0..c.len()).map(|k| (c.entry(k).to_vec(), c.values.f64(k).to_bits())).collect();
    e.sort();
    e
}

#[test]
fn every_layout_round_trips_bit_for_bit() {
    let tmp = dir();
    let d = tmp.path();
    let coo3 = {
        let mut c = Coo::new(vec![3, 4, 5]);
        for (k, (i, j, l)) in [(0, 1, 2), (2, 3, 4), (1, 0, 0), (2, 0, 1)].into_iter().enumerate() {
            c.push(&[i, j, l], k as f64 - 1.5);
        }
        c
    };
    let cases: Vec<(&str, Coo, ScalarType)> = vec![
        (CSR, matrix(), ScalarType::F64),
        (CSC, matrix(), ScalarType::F64),
        (BSR, matrix(), ScalarType::F64),
        (DCSR, matrix(), ScalarType::F64),
        (CSR, matrix(), ScalarType::F32),
        (COO3, coo3, ScalarType::F64),
    ];
    for (k, (map, coo, elem)) in cases.into_iter().enumerate() {
        let e = enc(map);
        let coo = if elem == ScalarType::F32 {
            Coo { values: coo.values.to_f64s().iter().map(|&v| v as f32).collect::<Vec<f32>>().into(), ..coo }
        } else {
            coo
        };
        let t = build::pack(&coo, &e, elem).unwrap();
        let p = d.join(format!("case{k}.npz"));
        write::write(&t, &p).unwrap();
        // Read back into the same encoding: the same storage, bit for bit.
        let back = read_into(&p, &e).unwrap();
        assert_eq!(entries(&back), entries(&t), "{map}");
        assert_eq!(back.positions, t.positions, "{map}");
        assert_eq!(back.coordinates, t.coordinates, "{map}");
        assert_eq!((back.values.elem(), back.values.to_le_bytes()), (t.values.elem(), t.values.to_le_bytes()), "{map}");
        // And kept as stored where scipy has the format.
        let stored = matches!(read_npz(&p).unwrap(), NpzTensor::Stored(_));
        assert_eq!(stored, [CSR, CSC, BSR].contains(&map), "{map}");
        let want = if stored { t.nse() } else { t.to_coo().len() };
        assert_eq!(read_tensor(&p, ScalarType::F64).unwrap().len(), want, "{map}");
    }
}

/// One member of a hand-made archive.
struct Member {
    name: &'static str,
    descr: String,
    shape: Vec<u64>,
    data: Vec<u8>,
}

fn member(name: &'static str, descr: &str, shape: &[u64], data: Vec<u8>) -> Member {
    Member { name, descr: descr.to_string(), shape: shape.to_vec(), data }
}

fn i64s(xs: &[i64]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn i32s(xs: &[i32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn f64s(xs: &[f64]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// An archive as `save_npz` writes one, `deflate` as `compressed=True` does.
fn archive(path: &Path, members: &[Member], deflate: bool) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let method = if deflate { zip::CompressionMethod::Deflated } else { zip::CompressionMethod::Stored };
    for m in members {
        z.start_file(format!("{}.npy", m.name), zip::write::SimpleFileOptions::default().compression_method(method))
            .unwrap();
        npy::write_header(&mut z, &m.descr, &m.shape).unwrap();
        z.write_all(&m.data).unwrap();
    }
    z.finish().unwrap();
}

/// A 3x4 csr matrix `[[1, 0, 2, 0], [0, 0, 0, 3], [0, 4, 0, 0]]` with int32 indices.
fn csr_members() -> Vec<Member> {
    vec![
        member("format", "'|S3'", &[], b"csr".to_vec()),
        member("shape", "'<i8'", &[2], i64s(&[3, 4])),
        member("indptr", "'<i4'", &[4], i32s(&[0, 2, 3, 4])),
        member("indices", "'<i4'", &[4], i32s(&[0, 2, 3, 1])),
        member("data", "'<f8'", &[4], f64s(&[1.0, 2.0, 3.0, 4.0])),
    ]
}

fn csr_entries() -> Vec<(Vec<u64>, u64)> {
    let mut e: Vec<(Vec<u64>, u64)> = [(0, 0, 1.0), (0, 2, 2.0), (1, 3, 3.0), (2, 1, 4.0f64)]
        .iter()
        .map(|&(i, j, v)| (vec![i, j], v.to_bits()))
        .collect();
    e.sort();
    e
}

fn replace(mut ms: Vec<Member>, m: Member) -> Vec<Member> {
    let at = ms.iter().position(|x| x.name == m.name).unwrap();
    ms[at] = m;
    ms
}

#[test]
fn archives_as_scipy_lays_them_out() {
    let tmp = dir();
    let d = tmp.path();
    let csr = enc(CSR);
    for deflate in [false, true] {
        let p = d.join(format!("csr_{deflate}.npz"));
        archive(&p, &csr_members(), deflate);
        assert_eq!(entries(&read_into(&p, &csr).unwrap()), csr_entries());
        // Into another encoding: packed from the entries.
        assert_eq!(entries(&read_into(&p, &enc(DCSR)).unwrap()), csr_entries());
    }
    // csc: the same matrix column by column, int64 indices, unicode format, big-endian data.
    let p = d.join("csc.npz");
    let be: Vec<u8> = [1.0f64, 4.0, 2.0, 3.0].iter().flat_map(|x| x.to_be_bytes()).collect();
    archive(
        &p,
        &[
            member("format", "'<U3'", &[], "csc".chars().flat_map(|c| (c as u32).to_le_bytes()).collect()),
            member("shape", "'<i8'", &[2], i64s(&[3, 4])),
            member("indptr", "'<i8'", &[5], i64s(&[0, 1, 2, 3, 4])),
            member("indices", "'<i8'", &[4], i64s(&[0, 2, 0, 1])),
            member("data", "'>f8'", &[4], be),
        ],
        true,
    );
    assert_eq!(entries(&read_into(&p, &csr).unwrap()), csr_entries());
    // coo with duplicates (summed) and dia with padding (dropped).
    let p = d.join("coo.npz");
    archive(
        &p,
        &[
            member("format", "'|S3'", &[], b"coo".to_vec()),
            member("shape", "'<i8'", &[2], i64s(&[3, 4])),
            member("row", "'<i4'", &[5], i32s(&[2, 0, 1, 0, 0])),
            member("col", "'<i4'", &[5], i32s(&[1, 2, 3, 0, 2])),
            member("data", "'<i8'", &[5], i64s(&[4, 1, 3, 1, 1])),
        ],
        false,
    );
    assert_eq!(entries(&read_into(&p, &csr).unwrap()), csr_entries());
    let p = d.join("dia.npz");
    // Diagonal 0 holds (0,0)=1; offset 1 holds (0,1)... here: offsets [0, 2, -1]:
    // data[k, j] is entry (j - offsets[k], j).
    archive(
        &p,
        &[
            member("format", "'|S3'", &[], b"dia".to_vec()),
            member("shape", "'<i8'", &[2], i64s(&[3, 4])),
            member("offsets", "'<i4'", &[3], i32s(&[0, 2, -1])),
            member("data", "'<f8'", &[3, 4], f64s(&[1.0, 0.0, 0.0, 9.0, 0.0, 0.0, 2.0, 3.0, 0.0, 4.0, 0.0, 0.0])),
        ],
        false,
    );
    // (0,0)=1, (0,2)=2, (1,3)=3, (2,1)=4; data[0,3] would be (3,3): outside, dropped.
    assert_eq!(entries(&read_into(&p, &csr).unwrap()), csr_entries());
    // csr with unsorted rows and a duplicate: entries, sorted and summed.
    let p = d.join("unsorted.npz");
    let ms = replace(csr_members(), member("indices", "'<i4'", &[4], i32s(&[2, 0, 3, 1])));
    let ms = replace(ms, member("data", "'<f8'", &[4], f64s(&[2.0, 1.0, 3.0, 4.0])));
    archive(&p, &ms, false);
    assert!(matches!(read_npz(&p).unwrap(), NpzTensor::Entries(..)));
    assert_eq!(entries(&read_into(&p, &csr).unwrap()), csr_entries());
    // Narrow widths: the stored buffers are narrowed, or refused where they do not fit.
    let narrow =
        parse_encoding(&format!("#sparse_tensor.encoding<{{ map = {CSR}, posWidth = 8, crdWidth = 8 }}>"), 0).unwrap();
    assert_eq!(entries(&read_into(&d.join("csr_false.npz"), &narrow).unwrap()), csr_entries());
}

/// The error reading `members` as an archive, which must be a located one.
fn error_of(name: &str, members: &[Member], deflate: bool) -> String {
    let tmp = dir();
    let p = tmp.path().join(format!("{name}.npz"));
    archive(&p, members, deflate);
    let e = read_into(&p, &enc(CSR)).expect_err(name).to_string();
    assert!(e.starts_with(&p.display().to_string()), "{name}: the error should name the file: {e}");
    e
}

#[test]
fn bad_archives_are_located_errors() {
    let base = csr_members;
    let cases: Vec<(&str, Vec<Member>, &str)> = vec![
        ("no_indptr", base().into_iter().filter(|m| m.name != "indptr").collect(), "`indptr`: missing"),
        ("no_format", base().into_iter().filter(|m| m.name != "format").collect(), "`format`: missing"),
        (
            "float_indices",
            replace(base(), member("indices", "'<f8'", &[4], f64s(&[0.0, 2.0, 3.0, 1.0]))),
            "`indices`: must hold integers",
        ),
        (
            "float128_data",
            replace(base(), member("data", "'<f16'", &[4], vec![0; 64])),
            "`data`: `<f16` is not a value type",
        ),
        (
            "indptr_decreasing",
            replace(base(), member("indptr", "'<i4'", &[4], i32s(&[0, 3, 2, 4]))),
            "`indptr`: [2] = 2 is less than [1] = 3",
        ),
        (
            "indptr_not_from_0",
            replace(base(), member("indptr", "'<i4'", &[4], i32s(&[1, 2, 3, 4]))),
            "`indptr`: [0] = 1, not 0",
        ),
        (
            "indptr_too_short",
            replace(base(), member("indptr", "'<i4'", &[3], i32s(&[0, 2, 3]))),
            "`indptr`: has 3 entries",
        ),
        (
            "indptr_past_indices",
            replace(base(), member("indptr", "'<i4'", &[4], i32s(&[0, 2, 3, 9]))),
            "past the 4 entries of `indices`",
        ),
        (
            "negative_index",
            replace(base(), member("indices", "'<i4'", &[4], i32s(&[0, -2, 3, 1]))),
            "`indices`: [1] = -2 is negative",
        ),
        (
            "index_outside",
            replace(base(), member("indices", "'<i4'", &[4], i32s(&[0, 2, 3, 4]))),
            "`indices`: [3] = 4 is outside",
        ),
        (
            "data_too_short",
            replace(base(), member("data", "'<f8'", &[3], f64s(&[1.0, 2.0, 3.0]))),
            "`data`: has 3 values",
        ),
        (
            "shape_3d",
            replace(base(), member("shape", "'<i8'", &[3], i64s(&[3, 4, 5]))),
            "`shape`: a csr matrix has 2 dimensions",
        ),
        (
            "unknown_format",
            replace(base(), member("format", "'|S3'", &[], b"lil".to_vec())),
            "`format`: `lil` is not a format",
        ),
        (
            "format_not_string",
            replace(base(), member("format", "'<i8'", &[], i64s(&[1]))),
            "`format`: must be one string",
        ),
        (
            "huge_shape_little_data",
            replace(base(), member("data", "'<f8'", &[1 << 40], f64s(&[1.0]))),
            "`data`: the header promises",
        ),
        (
            "truncated_data",
            replace(base(), member("data", "'<f8'", &[4], f64s(&[1.0]))),
            "`data`: truncated: the header promises 4 elements",
        ),
        ("truncated_indices", replace(base(), member("indices", "'<i4'", &[4], vec![])), "`indices`: truncated"),
    ];
    for (name, members, want) in cases {
        for deflate in [false, true] {
            let e = error_of(name, &members, deflate);
            assert!(e.contains(want), "{name} (deflate {deflate}): expected `{want}` in: {e}");
        }
    }
    // Integers beyond 2^53 are kept exactly (an f64 would round them).
    let tmp = dir();
    let p = tmp.path().join("int_beyond_2_53.npz");
    archive(&p, &replace(base(), member("data", "'<i8'", &[4], i64s(&[1, (1 << 53) + 1, 3, i64::MIN]))), false);
    let t = read_into(&p, &enc(CSR)).unwrap();
    assert_eq!(t.values, vec![1i64, (1 << 53) + 1, 3, i64::MIN].into());
    // Not a zip at all, and a member that is not an .npy.
    let tmp = dir();
    let p = tmp.path().join("not_zip.npz");
    std::fs::write(&p, b"hello").unwrap();
    let e = read_into(&p, &enc(CSR)).unwrap_err().to_string();
    assert!(e.contains("not a .npz (zip) archive"), "{e}");
}

/// A deflated member of 64 MiB of zeros is about 64 KiB in the archive. Its
/// header promises 8 doubles: reading inflates only those and leaves the
/// rest (a zip bomb cannot make heddle inflate what no header promised). A
/// header that promises far more than the member could inflate to is
/// refused before anything is read.
#[test]
fn deflate_bombs_are_cut_off() {
    let tmp = dir();
    let d = tmp.path();
    let p = d.join("bomb.npz");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    let deflated = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for m in csr_members().into_iter().filter(|m| m.name != "data") {
        z.start_file(format!("{}.npy", m.name), deflated).unwrap();
        npy::write_header(&mut z, &m.descr, &m.shape).unwrap();
        z.write_all(&m.data).unwrap();
    }
    z.start_file("data.npy", deflated.large_file(true)).unwrap();
    npy::write_header(&mut z, "'<f8'", &[4]).unwrap();
    z.write_all(&f64s(&[1.0, 2.0, 3.0, 4.0])).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        z.write_all(&zeros).unwrap();
    }
    z.finish().unwrap();
    assert!(std::fs::metadata(&p).unwrap().len() < 1 << 20, "the bomb should be small");
    let t = std::time::Instant::now();
    assert_eq!(entries(&read_into(&p, &enc(CSR)).unwrap()), csr_entries());
    assert!(t.elapsed().as_secs_f64() < 5.0, "reading should stop after the promised data");

    // The header promises 2^27 doubles (1 GiB) from a member of a few KiB.
    let p = d.join("promise.npz");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    for m in csr_members().into_iter().filter(|m| m.name != "data") {
        z.start_file(format!("{}.npy", m.name), deflated).unwrap();
        npy::write_header(&mut z, &m.descr, &m.shape).unwrap();
        z.write_all(&m.data).unwrap();
    }
    z.start_file("data.npy", deflated).unwrap();
    npy::write_header(&mut z, "'<f8'", &[1 << 27]).unwrap();
    z.write_all(&vec![0u8; 1 << 16]).unwrap();
    z.finish().unwrap();
    let e = read_into(&p, &enc(CSR)).unwrap_err().to_string();
    assert!(e.contains("`data`: the header promises 1073741824 bytes"), "{e}");
}

/// A csr / csc file is kept as stored with 32-bit positions and
/// coordinates exactly where every coordinate its shape allows fits (a
/// last coordinate of 2^32 - 1 does, 2^32 does not), so conversions read
/// scipy's int32 indices at that width; it reads into any width as before.
#[test]
fn stored_matrices_keep_32_bit_indices_where_the_shape_allows() {
    let tmp = dir();
    let d = tmp.path();
    let big = 1u64 << 32;
    for (m, n, map) in [(3, big, CSR), (3, big + 1, CSR), (big, 3, CSC), (big + 1, 3, CSC), (4, 6, CSR), (4, 6, CSC)] {
        let wide = m > n;
        let mut c = Coo::new(vec![m, n]);
        for (k, (a, b)) in [(0, 0), (1, 1), (2, 2)].into_iter().enumerate() {
            // The largest coordinate the shape allows, in the stored dimension.
            let far = if wide { [m - 1 - a, b] } else { [a, n - 1 - b] };
            c.push(&far, k as f64 + 0.5);
        }
        let t = build::pack(&c, &enc(map), ScalarType::F64).unwrap();
        let p = d.join(format!("wide{m}x{n}.npz"));
        write::write(&t, &p).unwrap();
        let NpzTensor::Stored(stored) = read_npz(&p).unwrap() else { panic!("{m}x{n}: kept as stored") };
        let bits = if m.max(n) <= big { 32 } else { 64 };
        assert_eq!(stored.coordinates[1].as_ref().unwrap().bits(), bits, "{m}x{n}");
        assert_eq!(stored.positions[1].as_ref().unwrap().bits(), 32, "{m}x{n}");
        assert_eq!(entries(&stored), entries(&t), "{m}x{n}");
        // Into the native widths: the same storage as packed from the entries.
        assert_eq!(read_into(&p, &enc(map)).unwrap(), t, "{m}x{n}");
        let narrow = parse_encoding(&format!("#sparse_tensor.encoding<{{ map = {map}, crdWidth = 32 }}>"), 0).unwrap();
        match read_into(&p, &narrow) {
            Ok(back) => {
                assert_eq!(bits, 32, "{m}x{n}");
                assert_eq!(back, build::pack(&c, &narrow, ScalarType::F64).unwrap(), "{m}x{n}");
            }
            Err(e) => {
                assert_eq!(bits, 64, "{m}x{n}: {e}");
                assert!(
                    e.to_string().contains("coordinates[1]")
                        && e.to_string().contains("4294967296 does not fit in 32 bits"),
                    "{e}"
                );
            }
        }
    }
}

/// A coo file's entries are kept as coordinate columns, 32-bit exactly
/// where every dimension (and coordinate) allows, and read into CSR / CSC
/// or any other encoding as the interleaved entries are.
#[test]
fn coo_files_keep_their_coordinate_columns() {
    let tmp = dir();
    let d = tmp.path();
    let big = 1u64 << 32;
    let coo2 = "(i, j) -> (i : compressed(nonunique), j : singleton)";
    for (m, n, map) in [(3, big, CSR), (3, big + 1, CSR), (big, 3, CSC), (big + 1, 3, CSC), (4, 6, BSR), (4, 6, CSC)] {
        let mut c = Coo::new(vec![m, n]);
        for (k, (i, j)) in [(0, n - 1), (m - 1, 0), (1, 1), (m - 1, n - 1)].into_iter().enumerate() {
            c.push(&[i, j], -(k as f64) - 0.25);
        }
        let t = build::pack(&c, &enc(coo2), ScalarType::F64).unwrap();
        let p = d.join(format!("coo{m}x{n}.npz"));
        write::write(&t, &p).unwrap();
        let NpzTensor::Columns(cols, elem) = read_npz(&p).unwrap() else { panic!("{m}x{n}: coordinate columns") };
        assert_eq!(elem, ScalarType::F64);
        let bits = if m.max(n) <= big { 32 } else { 64 };
        assert_eq!((cols.column(0).bits(), cols.column(1).bits()), (bits, bits), "{m}x{n}");
        let mut sorted = c.clone();
        sorted.sort_and_sum();
        assert_eq!(cols.into_coo(), sorted, "{m}x{n}: the stored order");
        for target in [enc(map), enc(coo2)] {
            assert_eq!(read_into(&p, &target).unwrap(), build::pack(&c, &target, ScalarType::F64).unwrap(), "{m}x{n}");
        }
        assert_eq!(read_tensor(&p, ScalarType::F32).unwrap().len(), 4);
    }
}

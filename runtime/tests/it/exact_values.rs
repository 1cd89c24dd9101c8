//! Every value survives every round trip through every format (issue 19):
//! random tensors whose values include ±0, subnormals, the extremes, 0.1,
//! -0.9999999999999999, ±inf and nan, at random coordinates (up to the
//! coordinate width of the encoding), written in each input format, read into
//! each encoding, written in each output format and read back: the same
//! entries, bit for bit (any nan reads back as a nan). `f32` tensors come back
//! as the same `f32`; integer tensors of every width, the extremes included
//! (`u64::MAX`, `i64::MIN`, far beyond 2^53), as the same integers.
//!
//! Entries are unique (duplicates would be summed), and +0 entries are
//! left out (in a padded encoding a stored +0 is indistinguishable from
//! padding, and it denotes the same tensor either way).

use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, parse_encoding};
use heddle_runtime::scalars::{Num, ScalarVec};
use heddle_runtime::sparse::{Coo, SparseTensor, build, file, json, write};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Values that lose something in a careless reader or writer.
// More digits than an f64 holds, on purpose: the literal is what a file may say.
#[allow(clippy::excessive_precision)]
const SPECIAL: &[f64] = &[
    -0.0,
    0.1,
    -0.9999999999999999,
    0.9620693325996399,
    5e-324,
    -2.225073858507201e-308,
    2.2250738585072014e-308,
    f64::MAX,
    f64::MIN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    1e300,
    123456789.123456789,
    9007199254740993.0,
    1.0,
    -3.0,
];

const SPECIAL_F32: &[f32] =
    &[-0.0, 0.1, 1e-45, -1.1754942e-38, 1.1754944e-38, f32::MAX, f32::MIN, 0.33333334, 16777217.0, 3.4e38];

/// Encodings and the largest coordinate their widths hold (so random
/// coordinates use the full width where the storage is not dense).
const ENCODINGS: &[(&str, u64)] = &[
    ("map = (i, j) -> (i : dense, j : compressed)", 1 << 12),
    ("map = (i, j) -> (i : dense, j : compressed), posWidth = 8, crdWidth = 8", 255),
    ("map = (i, j) -> (j : dense, i : compressed), posWidth = 16, crdWidth = 16", 65535),
    ("map = (i, j) -> (i : compressed, j : compressed), crdWidth = 32", u32::MAX as u64),
    ("map = (i, j) -> (i : compressed(nonunique), j : singleton)", u64::MAX - 2),
    ("map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)), posWidth = 32, crdWidth = 16", 65535),
    ("map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)", 64),
    ("map = (i, j) -> (i : dense, j : dense)", 16),
];

fn enc(body: &str) -> Encoding {
    parse_encoding(&format!("#sparse_tensor.encoding<{{ {body} }}>"), 0).unwrap()
}

/// A float: one of [`SPECIAL`], or any bit pattern (nan payloads and all).
fn value() -> BoxedStrategy<Num> {
    prop_oneof![prop::sample::select(SPECIAL), any::<u64>().prop_map(f64::from_bits)].prop_map(Num::Float).boxed()
}

fn value_f32() -> BoxedStrategy<Num> {
    prop_oneof![prop::sample::select(SPECIAL_F32), any::<u32>().prop_map(f32::from_bits)]
        .prop_map(|x| Num::Float(f64::from(x)))
        .boxed()
}

/// An integer of type `elem`: its extremes, small values, or any value.
fn value_int(elem: ScalarType) -> BoxedStrategy<Num> {
    let (lo, hi): (i128, i128) = match elem {
        ScalarType::I8 => (i8::MIN.into(), i8::MAX.into()),
        ScalarType::I16 => (i16::MIN.into(), i16::MAX.into()),
        ScalarType::I32 => (i32::MIN.into(), i32::MAX.into()),
        ScalarType::I64 => (i64::MIN.into(), i64::MAX.into()),
        ScalarType::U8 => (0, u8::MAX.into()),
        ScalarType::U16 => (0, u16::MAX.into()),
        ScalarType::U32 => (0, u32::MAX.into()),
        ScalarType::U64 => (0, u64::MAX.into()),
        other => unreachable!("{other} is not an integer type"),
    };
    let near_2_53 = (1i128 << 53) + 1;
    prop_oneof![Just(lo), Just(hi), -3i128..=3, Just(near_2_53), lo..=hi]
        .prop_filter_map("outside the type", move |i| (lo..=hi).contains(&i).then_some(Num::Int(i)))
        .boxed()
}

/// Is `v` a +0 (or integer 0): the value left out of a tensor's entries?
fn is_zero(v: Num) -> bool {
    match v {
        Num::Float(x) => x.to_bits() == 0,
        Num::Int(i) => i == 0,
        Num::Bool(b) => !b,
        Num::Complex(re, im) => re.to_bits() == 0 && im.to_bits() == 0,
    }
}

/// A matrix of unique entries (no zeros) of type `elem`, with coordinates up
/// to `max`, and dimension sizes just above the largest coordinate or above `max`.
fn matrix(max: u64, elem: ScalarType, values: BoxedStrategy<Num>) -> impl Strategy<Value = Coo> {
    let coord = prop_oneof![0..=max.min(7), 0..=max, Just(max)];
    (prop::collection::vec(((coord.clone(), coord), values), 0..12), any::<bool>()).prop_map(move |(es, tight)| {
        let mut entries = BTreeMap::new();
        for ((i, j), v) in es {
            if !is_zero(v) {
                entries.insert((i, j), v);
            }
        }
        let fit = |k: fn(&(u64, u64)) -> u64| entries.keys().map(k).max().map_or(1, |m| m + 1);
        // Even sizes, so the 2x2 blocks of BSR fit.
        let even = |d: u64| d + d % 2;
        let dims =
            if tight { vec![even(fit(|e| e.0)), even(fit(|e| e.1))] } else { vec![even(max + 1), even(max + 1)] };
        let mut c = Coo::of_type(dims, elem);
        for ((i, j), v) in entries {
            c.push_num(&[i, j], v);
        }
        c
    })
}

/// The entries as a map: integers as themselves, floats as their bits at
/// `single` or double width, every nan the same.
fn entries(c: &Coo, single: bool) -> BTreeMap<Vec<u64>, i128> {
    let key = |v: Num| match v {
        Num::Float(x) if x.is_nan() => i128::MAX,
        Num::Float(x) if single => i128::from((x as f32).to_bits()),
        Num::Float(x) => i128::from(x.to_bits()),
        Num::Int(i) => i,
        Num::Bool(b) => i128::from(b),
        // Both parts' bits, the real part high.
        Num::Complex(re, im) if single => i128::from((re as f32).to_bits()) << 64 | i128::from((im as f32).to_bits()),
        Num::Complex(re, im) => i128::from(re.to_bits()) << 64 | i128::from(im.to_bits()),
    };
    (0..c.len()).filter(|&k| !is_zero(c.values.num(k))).map(|k| (c.entry(k).to_vec(), key(c.values.num(k)))).collect()
}

/// A directory of the test's own, removed when it ends.
fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("heddle-exact-").tempdir().unwrap()
}

/// The input formats: the tensor written by heddle's own writers (`.mtx`,
/// `.tns`, `.json` storage of a COO tensor) and, where it is small, as dense
/// nested lists.
fn inputs(c: &Coo, elem: ScalarType, dir: &Path) -> Vec<PathBuf> {
    let coo = enc("map = (i, j) -> (i : compressed(nonunique), j : singleton)");
    let t = build::pack(c, &coo, elem).unwrap();
    let mut out = Vec::new();
    for name in ["in.mtx", "in.tns", "in.json", "in.npz"] {
        let p = dir.join(name);
        if name == "in.npz" && c.dims.iter().any(|&d| d > i64::MAX as u64) {
            continue;
        }
        write::write(&t, &p).unwrap();
        out.push(p);
    }
    if c.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).is_some_and(|n| n <= 4096) {
        let d = heddle_runtime::sparse::DenseTensor::from_coo(c).unwrap();
        let p = dir.join("dense.json");
        std::fs::write(&p, serde_json::to_string(&json::dense_to_json(&d, elem)).unwrap()).unwrap();
        out.push(p);
    }
    out
}

fn round_trips(c: &Coo, elem: ScalarType, encoding: &str) -> Result<(), TestCaseError> {
    let single = elem == ScalarType::F32;
    let want = entries(c, single);
    let tmp = tempdir();
    let dir = tmp.path();
    let e = enc(encoding);
    for input in inputs(c, elem, dir) {
        let t: SparseTensor = match file::read_into_for(&input, &e, elem) {
            Ok(t) => t,
            // A dense encoding of a huge matrix is refused, not allocated.
            Err(err) if err.to_string().contains("too large") || err.to_string().contains("at most") => continue,
            Err(err) => return Err(TestCaseError::fail(format!("{}: {err}", input.display()))),
        };
        prop_assert_eq!(t.values.elem(), elem);
        prop_assert_eq!(&entries(&t.to_coo(), single), &want, "{} into {}", input.display(), encoding);
        for out in ["out.mtx", "out.tns", "out.json", "out.npz"] {
            let p = dir.join(out);
            if out == "out.npz" && t.dim_sizes.iter().any(|&d| d > i64::MAX as u64) {
                // numpy's shapes are int64: refused, with the size.
                prop_assert!(write::write(&t, &p).unwrap_err().to_string().contains("beyond int64"));
                continue;
            }
            write::write(&t, &p).unwrap();
            let (back, _) = file::read_coo(&p).map_err(|err| TestCaseError::fail(format!("{out}: {err}")))?;
            prop_assert_eq!(&entries(&back, single), &want, "{} → {} → {}", input.display(), encoding, out);
        }
    }
    Ok(())
}

/// The integer types, each with the encodings it is tried in.
const INTS: &[ScalarType] = &[
    ScalarType::I8,
    ScalarType::I16,
    ScalarType::I32,
    ScalarType::I64,
    ScalarType::U8,
    ScalarType::U16,
    ScalarType::U32,
    ScalarType::U64,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn f64_values_survive_every_format_and_encoding((k, c) in (0..ENCODINGS.len()).prop_flat_map(|k| (Just(k), matrix(ENCODINGS[k].1, ScalarType::F64, value())))) {
        round_trips(&c, ScalarType::F64, ENCODINGS[k].0)?;
    }
    #[test]
    fn f32_values_survive_every_format_and_encoding((k, c) in (0..ENCODINGS.len()).prop_flat_map(|k| (Just(k), matrix(ENCODINGS[k].1, ScalarType::F32, value_f32())))) {
        round_trips(&c, ScalarType::F32, ENCODINGS[k].0)?;
    }
    #[test]
    fn integers_of_every_width_survive_every_format_and_encoding(
        (k, t, c) in (0..ENCODINGS.len(), 0..INTS.len()).prop_flat_map(|(k, t)| (Just(k), Just(t), matrix(ENCODINGS[k].1, INTS[t], value_int(INTS[t]))))
    ) {
        round_trips(&c, INTS[t], ENCODINGS[k].0)?;
    }
}

/// The issue's example, exactly: `.mtx` → CSR `.json` → COO `.mtx`.
#[test]
fn the_reported_values_come_back_exactly() {
    let tmp = tempdir();
    let dir = tmp.path();
    let src = dir.join("t.mtx");
    std::fs::write(&src, "%%MatrixMarket matrix coordinate real general\n2 2 4\n1 1 -0.9999999999999999\n2 2 0.9620693325996399\n1 2 1e400\n2 1 nan\n").unwrap();
    let csr = file::read_into(&src, &enc(ENCODINGS[0].0)).unwrap();
    write::write(&csr, &dir.join("t.json")).unwrap();
    let text = std::fs::read_to_string(dir.join("t.json")).unwrap();
    assert!(text.contains(r#""values":[-0.9999999999999999,"inf","nan",0.9620693325996399]"#), "{text}");
    let coo = file::read_into(&dir.join("t.json"), &enc(ENCODINGS[4].0)).unwrap();
    write::write(&coo, &dir.join("t2.mtx")).unwrap();
    let back = std::fs::read_to_string(dir.join("t2.mtx")).unwrap();
    assert_eq!(
        back,
        "%%MatrixMarket matrix coordinate real general\n2 2 4\n1 1 -0.9999999999999999\n1 2 inf\n2 1 nan\n2 2 0.9620693325996399\n"
    );
}

/// Integers are kept exactly at 64 bits, far beyond 2^53 where an `f64`
/// would round them, in every text format; beyond 64 bits they are refused
/// with the line.
#[test]
fn integers_beyond_2_53_are_exact() {
    let tmp = tempdir();
    let dir = tmp.path();
    let big = dir.join("big.mtx");
    std::fs::write(
        &big,
        "%%MatrixMarket matrix coordinate integer general\n1 2 2\n1 1 9007199254740993\n1 2 -9223372036854775808\n",
    )
    .unwrap();
    let (c, elem) = file::read_coo(&big).unwrap();
    assert_eq!((elem, c.values.clone()), (ScalarType::I64, ScalarVec::from(vec![9007199254740993i64, i64::MIN])));
    let unsigned = dir.join("u.mtx");
    std::fs::write(&unsigned, "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 18446744073709551615\n")
        .unwrap();
    let (c, elem) = file::read_coo(&unsigned).unwrap();
    assert_eq!((elem, c.values.clone()), (ScalarType::U64, ScalarVec::from(vec![u64::MAX])));
    let huge = dir.join("huge.mtx");
    std::fs::write(&huge, "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 18446744073709551616\n")
        .unwrap();
    let e = file::read_coo(&huge).unwrap_err().to_string();
    assert!(e.contains("huge.mtx:3") && e.contains("beyond the 64-bit integers"), "{e}");
    let json = dir.join("big.json");
    let storage = r##"{"encoding": "#sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>", "dim_sizes": [1], "positions": [[0, 1]], "coordinates": [[0]], "values": [18446744073709551615]}"##;
    std::fs::write(&json, storage).unwrap();
    let (c, elem) = file::read_coo(&json).unwrap();
    assert_eq!((elem, c.values.clone()), (ScalarType::U64, ScalarVec::from(vec![u64::MAX])));
    // Into a narrower type: exact or an error naming the value.
    let e = file::read_into_for(&json, &enc("map = (i) -> (i : compressed)"), ScalarType::I64).unwrap_err().to_string();
    assert!(e.contains("18446744073709551615 does not fit in i64"), "{e}");
}

/// A decimal that lies just above the midpoint of two `f32`s reads as the
/// upper one: rounded once, straight to `f32`, in every text format (through
/// `f64` it would land on the midpoint and round to even, the lower one).
#[test]
fn f32_values_are_rounded_once_from_the_text() {
    let tmp = tempdir();
    let dir = tmp.path();
    let text = "1.000000059604644776257986737988403547206";
    let want = 1.0000001f32;
    assert_eq!(text.parse::<f32>().unwrap(), want);
    assert_ne!(text.parse::<f64>().unwrap() as f32, want, "the double rounding this test is about");
    let files = [
        ("d.mtx", format!("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 {text}\n")),
        ("d.tns", format!("1 1 {text}\n")),
        ("d.json", format!("[[{text}]]")),
        (
            "s.json",
            format!(
                r##"{{"encoding": "#sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed) }}>", "dim_sizes": [1, 1], "positions": [null, [0, 1]], "coordinates": [null, [0]], "values": [{text}]}}"##
            ),
        ),
    ];
    for (name, body) in files {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        let t = file::read_into_for(&p, &enc(ENCODINGS[0].0), ScalarType::F32).unwrap();
        assert_eq!(t.values, ScalarVec::from(vec![want]), "{name}");
    }
}

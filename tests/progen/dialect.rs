//! The rest of the sparse dialect's tensor parameters: skyline (`banded`)
//! levels, lower and upper; n:m structured levels (`structured[n, m]`,
//! `blockN_M`); dimension slices (`#sparse_tensor<slice(…)>`); `explicitVal`
//! read from pattern Matrix Market files and `implicitVal` over dense levels,
//! blocks and diagonals; static sizes (`tensor<3x4xf64, #E>`); rank 5;
//! stored results of rank 3; definitions used inside a tensor kernel; and
//! tensors bound from scipy `.npz` archives (written here, independently of
//! heddle's writer) and from `.json` storage files (heddle's storage of the
//! same entries: the test binds both the file and its text and checks the
//! interpreter sees one tensor). And dense SpMVs that the test also runs
//! through `heddle run --encoding A=SELL(…)` ([`sell_kernel`]).
//!
//! The kernels are [`tensors`](super::tensors)' (every stored value weighted
//! by its coordinates and summed, in all or per outer position, and SpMV
//! where the view is CSR's or n:m's), so every program type-checks for every
//! value type the draw allows.

use super::tensors::{
    ELEMS, Spmv, TensorDefs, entries, fold, is_complex, is_int, json_value, mlir, mtx_text, scalar_name, spmv,
    tns_text, value,
};
use super::*;
use heddle_runtime::io::npy;
use std::io::Write as _;

/// What [`kernel`] draws, with how often: every kind a few times among CI's
/// tensor cases. `explicitVal` is rare: helper isoval is changing how
/// kernels read such tensors (they will stop reading a values buffer).
const KINDS: &[(Kind, u32)] = &[
    (Kind::SkylineLower, 3),
    (Kind::SkylineUpper, 2),
    (Kind::Structured, 3),
    (Kind::Sliced, 3),
    (Kind::Explicit, 1),
    (Kind::Implicit, 2),
    (Kind::Rank5, 2),
    (Kind::StoredRank3, 3),
];

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// `(i, j) -> (i : dense, j : banded)`: rows from their first entry through the diagonal.
    SkylineLower,
    /// `(i, j) -> (j : dense, i : banded)`: columns from their first entry through the diagonal.
    SkylineUpper,
    /// `(i, j) -> (i : dense, j floordiv m : dense, j mod m : structured[n, m])`.
    Structured,
    /// A window of a bigger file: every dimension sliced.
    Sliced,
    /// `explicitVal`: a pattern file, every stored entry the encoding's value.
    Explicit,
    /// `implicitVal`: what dense levels, blocks and diagonals hold where nothing is stored.
    Implicit,
    /// A 5-D tensor in TACO letters or COO.
    Rank5,
    /// A 3-D tensor mapped fibre by fibre, the result stored as a sparse tensor.
    StoredRank3,
}

/// How a tensor parameter is given to the kernel.
#[derive(Clone, Debug)]
pub enum Form {
    /// The case's Matrix Market or FROSTT text.
    Text,
    /// A scipy `.npz` archive of the same entries.
    Npz(Vec<u8>),
    /// heddle's `.json` storage of the text's tensor in the parameter's
    /// encoding (written by the test from the text).
    Json,
}

/// A kernel over a tensor parameter `A` of a kind drawn here, its file
/// pushed onto `matrices` (and its form onto `forms` where it is not the
/// text), its dense inputs onto `inputs`.
pub(super) fn kernel(
    g: &mut Gen,
    matrices: &mut Vec<(String, String)>,
    inputs: &mut Vec<(String, serde_json::Value)>,
    forms: &mut Vec<(String, Form)>,
) -> String {
    let weights: Vec<u32> = KINDS.iter().map(|(_, w)| *w).collect();
    let kind = KINDS[g.tape.weighted(&weights)].0;
    let elem_weights: Vec<u32> = ELEMS.iter().map(|(_, w)| *w).collect();
    let mut elem = ELEMS[g.tape.weighted(&elem_weights)].0;
    let rank2 = matches!(
        kind,
        Kind::SkylineLower | Kind::SkylineUpper | Kind::Structured | Kind::Sliced | Kind::Explicit | Kind::Implicit
    );
    if (!rank2 && is_complex(elem)) || (matches!(kind, Kind::Explicit | Kind::Implicit) && !fill_type(elem)) {
        // FROSTT has one number per value; fill values are written here as
        // plain numbers.
        elem = "f64";
    }
    if kind == Kind::StoredRank3 {
        return stored_rank3(g, elem, matrices, forms);
    }
    let mut t = tensor(g, kind, elem);
    // Static sizes: always for a slice (its sizes are the window's), one
    // in three otherwise.
    let fixed = kind == Kind::Sliced || g.tape.below(3) == 0;
    let dim = |d: usize| if fixed { t.dims[d].to_string() } else { format!("A_dim{d}") };
    let rank = t.dims.len();
    let half = elem == "f16" || elem == "bf16";
    let sum = if half { "reduceSeq" } else { "reduce" };
    let s = scalar_name(elem);
    // Definitions used by the fold (one kernel in three).
    let (defs_text, defs) = if g.tape.below(3) == 0 {
        let text = format!(
            "def leaf = fun(x => x * 2 + x);\ndef weigh = fun(c, x => x * select(c % 2 == 0, 1, 2));\ndef total = {sum}(+, 0);\n\n"
        );
        (text, Some(TensorDefs { leaf: "leaf".into(), weigh: "weigh".into(), total: "total".into() }))
    } else {
        (String::new(), None)
    };
    let mut params = Vec::new();
    // The kernel: SpMV, the fold in all, or per outer position, which for
    // the encodings that store a kernel's result (skyline and n:m) stores
    // its rows back in the tensor's own encoding (the rest of the draw says how).
    let (which, rest) = g.tape.below_split(3);
    let body = match which {
        2 if matches!(kind, Kind::SkylineLower | Kind::SkylineUpper | Kind::Structured) => {
            let entry = if is_complex(elem) || rest % 2 == 0 {
                "e :>> map(fun(x => (x.1, x.2 * 2 + x.2)))"
            } else {
                "e :>> filter(fun(x => x.2 > 0))"
            };
            // A row is a list of (column, value) pairs; an n:m row a list of such blocks.
            let row = if kind == Kind::Structured {
                format!("r :>> map(fun(e => {entry}))")
            } else {
                entry.replace("e :>>", "r :>>")
            };
            // Both sizes: the upper skyline's first level is over the columns,
            // so its value does not give the rows.
            let size = |d: usize| if fixed { dim(d) } else { format!("{{{}}}", dim(d)) };
            format!("(A :>> map(fun(r => {row})) : tensor<{}x{}x{elem}, #E>)", size(0), size(1))
        }
        0 if t.spmv != Spmv::None || t.blocks_of.is_some() => {
            params.push(format!("fun(xs: [{s}]_{} =>", braced(&dim(1))));
            let xs: Vec<serde_json::Value> = (0..t.dims[1]).map(|_| json_value(&mut g.tape, elem)).collect();
            inputs.push(("xs".to_string(), serde_json::json!(xs)));
            match t.blocks_of {
                Some(m) => format!(
                    "A :>> map(fun(row => zip(row, xs :>> split({m})) :>> map(fun(b => b.1 :>> map(fun(e => e.2 * b.2@e.1)) :>> {sum}(+, 0))) :>> {sum}(+, 0)))"
                ),
                None => spmv(g, t.spmv, sum),
            }
        }
        1 => fold(g, &t.levels, "A", sum, defs.as_ref()),
        _ => {
            let x = g.fresh("x");
            match t.levels[0] {
                Level::Dense { .. } => {
                    let inner = fold(g, &t.levels[1..], &x, sum, defs.as_ref());
                    format!("A :>> map(fun({x} => {inner}))")
                }
                Level::Compressed { dim: Some(d) } => {
                    let inner = fold(g, &t.levels[1..], &format!("{x}.2"), sum, defs.as_ref());
                    format!("A :>> map(fun({x} => ({x}.1, {inner}))) :>> scatterAdd({})", dim(d))
                }
                _ => fold(g, &t.levels, "A", sum, defs.as_ref()),
            }
        }
    };
    let shape: String = (0..rank).map(|d| if fixed { format!("{}x", t.dims[d]) } else { "?x".to_string() }).collect();
    let form = file_form(g, &t, elem);
    matrices.push(("A".to_string(), std::mem::take(&mut t.text)));
    if let Some(f) = form {
        forms.push(("A".to_string(), f));
    }
    // The encoding on a line of its own, or spelled in the type.
    let (head, enc) = if t.inline && !body.contains("#E") && g.tape.below(2) == 0 {
        (String::new(), t.spelling.clone())
    } else {
        (format!("#E = {}\n\n", t.spelling), "#E".to_string())
    };
    let mut text = format!("{head}{defs_text}fun(A: tensor<{shape}{elem}, {enc}> =>\n");
    for p in &params {
        text.push_str(p);
        text.push('\n');
    }
    let _ = writeln!(text, "  {body}{}", ")".repeat(1 + params.len()));
    text
}

/// A natural as the subscript of an array type: `_n`, `_{4}` braced where it
/// is a number (a bare `_4` reads too, but braces keep it one token).
fn braced(n: &str) -> String {
    if n.chars().all(|c| c.is_ascii_digit()) { format!("{{{n}}}") } else { n.to_string() }
}

/// Value types whose fill values are written here (`explicitVal = 0.5 : f64`).
fn fill_type(elem: &str) -> bool {
    matches!(elem, "f32" | "f64" | "i32" | "i64" | "i16")
}

/// A fill value of type `elem`, never 0 (written as the encoding writes it).
fn fill_value(t: &mut Tape, elem: &str) -> String {
    if is_int(elem) {
        return t.pick(&["2", "-3", "1"]).to_string();
    }
    t.pick(&["0.5", "-1.5", "1.0", "2.0"]).to_string()
}

/// A drawn tensor parameter.
struct DrawnTensor {
    /// The encoding as written: MLIR's attribute or TACO letters.
    spelling: String,
    /// Whether the spelling can stand in the type itself.
    inline: bool,
    levels: Vec<Level>,
    /// The sizes the kernel sees (a slice's, not its file's).
    dims: Vec<i64>,
    /// The file's entries, and its text (Matrix Market or FROSTT).
    entries: Vec<(Vec<i64>, String)>,
    file_dims: Vec<i64>,
    text: String,
    /// The SpMV kernel its view allows.
    spmv: Spmv,
    /// An n:m level's block size `m` (its SpMV zips a row with `xs :>> split(m)`).
    blocks_of: Option<i64>,
    /// Whether the file is a pattern file (no values: `explicitVal`).
    pattern: bool,
}

/// The rank-5 encodings drawn: COO, and TACO letters. With static sizes
/// (`tensor<1x3x2x3x1xf64, …>`) a compressed level below dense ones took
/// seconds to lower (`dddds` 7 s; progen3's report); since inner Σs are
/// simplified first it takes about what `?` sizes take (`dddds` 0.2 s,
/// `dsdds` 0.22 s, `ssdds` 0.14 s in a release build; the e-graph work is
/// bounded by heddle-rewrite's `static_sizes` test). `sssss` compiles too.
const RANK5: &[&str] =
    &["COO", "COO", "ddddd", "sdddd", "dsddd", "ssddd", "ddsdd", "dddsd", "sdsdd", "sssss", "dddds", "dsdds", "ssdds"];

/// A matrix size: small, often 0 or 1.
fn dim_size(t: &mut Tape) -> i64 {
    *t.pick(&[0i64, 1, 2, 3, 4, 5, 8])
}

/// The encodings slices and `explicitVal` apply to: `(levels as a map's right-hand side, their kinds, the SpMV their view allows)`.
const BASES: &[(&str, &[Level], Spmv)] = &[
    ("(i : dense, j : compressed)", &[Level::Dense { dim: Some(0) }, Level::Compressed { dim: Some(1) }], Spmv::Csr),
    ("(j : dense, i : compressed)", &[Level::Dense { dim: Some(1) }, Level::Compressed { dim: Some(0) }], Spmv::None),
    (
        "(i : compressed(nonunique), j : singleton)",
        &[Level::Compressed { dim: Some(0) }, Level::Singleton { dim: Some(1) }],
        Spmv::None,
    ),
    (
        "(i : compressed, j : compressed)",
        &[Level::Compressed { dim: Some(0) }, Level::Compressed { dim: Some(1) }],
        Spmv::None,
    ),
    ("(i : dense, j : dense)", &[Level::Dense { dim: Some(0) }, Level::Dense { dim: Some(1) }], Spmv::None),
];

/// The encodings whose dense levels hold `implicitVal` where nothing is
/// stored: all dense, compressed rows of dense columns, 2 × 2 blocks, DIA
/// (the positions of a diagonal outside the matrix), CSR.
const IMPLICIT: &[(&str, &[Level], Spmv, i64)] = &[
    (
        "(i, j) -> (i : dense, j : dense)",
        &[Level::Dense { dim: Some(0) }, Level::Dense { dim: Some(1) }],
        Spmv::None,
        1,
    ),
    (
        "(i, j) -> (i : compressed, j : dense)",
        &[Level::Compressed { dim: Some(0) }, Level::Dense { dim: Some(1) }],
        Spmv::None,
        1,
    ),
    (
        "(i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)",
        &[
            Level::Dense { dim: None },
            Level::Compressed { dim: None },
            Level::Dense { dim: None },
            Level::Dense { dim: None },
        ],
        Spmv::Bsr(2, 2),
        2,
    ),
    (
        "(i, j) -> (j - i : compressed, i : dense)",
        &[Level::Compressed { dim: None }, Level::Dense { dim: Some(0) }],
        Spmv::None,
        1,
    ),
    (
        "(i, j) -> (i : dense, j : compressed)",
        &[Level::Dense { dim: Some(0) }, Level::Compressed { dim: Some(1) }],
        Spmv::Csr,
        1,
    ),
];

/// The tensor of `kind` (any but [`Kind::StoredRank3`]) with values of `elem`.
fn tensor(g: &mut Gen, kind: Kind, elem: &str) -> DrawnTensor {
    let t = &mut g.tape;
    let plain = |spelling: String, levels: Vec<Level>, dims: Vec<i64>, entries, spmv| DrawnTensor {
        spelling,
        inline: false,
        levels,
        file_dims: dims.clone(),
        dims,
        entries,
        text: String::new(),
        spmv,
        blocks_of: None,
        pattern: false,
    };
    let mut d = match kind {
        Kind::SkylineLower | Kind::SkylineUpper => {
            let dims = vec![dim_size(t), dim_size(t)];
            let lower = kind == Kind::SkylineLower;
            // A lower skyline holds `j <= i` in rows whose diagonal is a
            // column; an upper one `i <= j` in columns whose diagonal is a row.
            let mut es = Vec::new();
            for i in 0..dims[0] {
                for j in 0..dims[1] {
                    let fits = if lower { j <= i && i < dims[1] } else { i <= j && j < dims[0] };
                    if fits && t.below(2) == 0 {
                        es.push((vec![i, j], value(t, elem)));
                    }
                }
            }
            let (map, levels, spmv) = if lower {
                (
                    "(i, j) -> (i : dense, j : banded)",
                    vec![Level::Dense { dim: Some(0) }, Level::Compressed { dim: Some(1) }],
                    Spmv::Csr,
                )
            } else {
                (
                    "(i, j) -> (j : dense, i : banded)",
                    vec![Level::Dense { dim: Some(1) }, Level::Compressed { dim: Some(0) }],
                    Spmv::None,
                )
            };
            plain(mlir(map), levels, dims, es, spmv)
        }
        Kind::Structured => {
            let (n, m) = *t.pick(&[(2i64, 4i64), (1, 2), (1, 4), (3, 4), (2, 8)]);
            let dims = vec![dim_size(t), m * t.below(3) as i64];
            let mut es = Vec::new();
            for i in 0..dims[0] {
                for block in 0..dims[1] / m {
                    let mut held = 0;
                    for k in 0..m {
                        if held < n && t.below(2) == 0 {
                            held += 1;
                            es.push((vec![i, block * m + k], value(t, elem)));
                        }
                    }
                }
            }
            let level = if t.below(2) == 0 { format!("structured[{n}, {m}]") } else { format!("block{n}_{m}") };
            let map = format!("(i, j) -> (i : dense, j floordiv {m} : dense, j mod {m} : {level})");
            let levels =
                vec![Level::Dense { dim: Some(0) }, Level::Dense { dim: None }, Level::Compressed { dim: None }];
            let mut d = plain(mlir(&map), levels, dims, es, Spmv::None);
            d.blocks_of = Some(m);
            d
        }
        Kind::Sliced => {
            let (base, levels, spmv) = BASES[t.below(BASES.len() as u64) as usize];
            // Each dimension the window `offset + k * stride`, `k < size`, of
            // a file a little larger than it needs.
            let slices: Vec<(i64, i64, i64)> =
                (0..2).map(|_| (t.below(3) as i64, 1 + t.below(4) as i64, 1 + t.below(3) as i64)).collect();
            let file_dims: Vec<i64> = slices.iter().map(|(o, n, k)| o + (n - 1) * k + 1 + t.below(2) as i64).collect();
            let es = entries(t, &file_dims, elem, None);
            let slice = |(o, n, k): (i64, i64, i64)| format!("#sparse_tensor<slice({o}, {n}, {k})>");
            let map = format!("(i : {}, j : {}) -> {base}", slice(slices[0]), slice(slices[1]));
            let mut d = plain(mlir(&map), levels.to_vec(), slices.iter().map(|s| s.1).collect(), es, spmv);
            d.file_dims = file_dims;
            d
        }
        Kind::Explicit => {
            let (base, levels, spmv) = BASES[t.below(BASES.len() as u64 - 1) as usize];
            let dims = vec![dim_size(t), dim_size(t)];
            let v = fill_value(t, elem);
            let es: Vec<(Vec<i64>, String)> =
                entries(t, &dims, elem, None).into_iter().map(|(c, _)| (c, v.clone())).collect();
            let map = format!("(i, j) -> {base}, explicitVal = {v} : {elem}");
            let mut d = plain(mlir(&map), levels.to_vec(), dims, es, spmv);
            d.pattern = true;
            d
        }
        Kind::Implicit => {
            let (map, levels, spmv, block) = IMPLICIT[t.below(IMPLICIT.len() as u64) as usize];
            let dims: Vec<i64> = (0..2).map(|_| (dim_size(t) + block - 1) / block * block).collect();
            let es = entries(t, &dims, elem, None);
            let v = fill_value(t, elem);
            plain(mlir(&format!("{map}, implicitVal = {v} : {elem}")), levels.to_vec(), dims, es, spmv)
        }
        Kind::Rank5 => {
            let dims: Vec<i64> = (0..5).map(|_| *t.pick(&[1i64, 2, 1, 2, 3, 0])).collect();
            let es = entries(t, &dims, elem, None);
            let (spelling, levels) = match *t.pick(RANK5) {
                "COO" => {
                    let mut levels = vec![Level::Compressed { dim: Some(0) }];
                    levels.extend((1..5).map(|d| Level::Singleton { dim: Some(d) }));
                    ("COO".to_string(), levels)
                }
                letters => {
                    let levels =
                        letters
                            .chars()
                            .enumerate()
                            .map(|(d, l)| {
                                if l == 'd' {
                                    Level::Dense { dim: Some(d) }
                                } else {
                                    Level::Compressed { dim: Some(d) }
                                }
                            })
                            .collect();
                    (letters.to_string(), levels)
                }
            };
            let mut d = plain(spelling, levels, dims, es, Spmv::None);
            d.inline = true;
            d
        }
        Kind::StoredRank3 => unreachable!("drawn by `stored_rank3`"),
    };
    d.text = if d.pattern {
        let mut s = format!(
            "%%MatrixMarket matrix coordinate pattern general\n{} {} {}\n",
            d.file_dims[0],
            d.file_dims[1],
            d.entries.len()
        );
        for (c, _) in &d.entries {
            let _ = writeln!(s, "{} {}", c[0] + 1, c[1] + 1);
        }
        s
    } else if d.file_dims.len() == 2 {
        mtx_text(&d.file_dims, &d.entries, elem)
    } else {
        tns_text(&d.file_dims, &d.entries)
    };
    d
}

/// How the tensor's file is given: its text (`None`; five in seven), a
/// `.npz` archive of it (where scipy's arrays hold the values), or heddle's
/// `.json` storage of it.
fn file_form(g: &mut Gen, t: &DrawnTensor, elem: &str) -> Option<Form> {
    match g.tape.weighted(&[5, 1, 1]) {
        // With `implicitVal` too: a stored archive's entries are read as an
        // entry list's, absent ones taking the encoding's implicit value.
        1 if t.file_dims.len() == 2 && !t.pattern && npz_dtype(elem).is_some() => Some(Form::Npz(npz(g, t, elem))),
        2 => Some(Form::Json),
        _ => None,
    }
}

/// numpy's dtype for values of `elem`, where scipy's `.npz` can hold them.
fn npz_dtype(elem: &str) -> Option<&'static str> {
    Some(match elem {
        "f32" => "'<f4'",
        "f64" => "'<f8'",
        "i8" => "'|i1'",
        "u8" => "'|u1'",
        "i16" => "'<i2'",
        "u16" => "'<u2'",
        "i32" => "'<i4'",
        "i64" => "'<i8'",
        _ => return None,
    })
}

/// `xs` as little-endian bytes of numpy's `dtype`.
fn npz_bytes(dtype: &str, xs: &[f64]) -> Vec<u8> {
    let mut out = Vec::new();
    for &x in xs {
        match dtype {
            "'<f4'" => out.extend((x as f32).to_le_bytes()),
            "'<f8'" => out.extend(x.to_le_bytes()),
            "'|i1'" => out.extend((x as i8).to_le_bytes()),
            "'|u1'" => out.extend((x as u8).to_le_bytes()),
            "'<i2'" => out.extend((x as i16).to_le_bytes()),
            "'<u2'" => out.extend((x as u16).to_le_bytes()),
            "'<i4'" => out.extend((x as i32).to_le_bytes()),
            _ => out.extend((x as i64).to_le_bytes()),
        }
    }
    out
}

/// The matrix as `scipy.sparse.save_npz` writes it: `coo` or `csr` (the
/// entries are in row order), 32- or 64-bit indices, compressed or not.
fn npz(g: &mut Gen, t: &DrawnTensor, elem: &str) -> Vec<u8> {
    let values: Vec<f64> = t.entries.iter().map(|(_, v)| v.parse().expect("a number this module wrote")).collect();
    let dtype = npz_dtype(elem).expect("checked by the caller");
    let (index, wide) = if g.tape.below(2) == 0 { ("'<i4'", false) } else { ("'<i8'", true) };
    let ints = |xs: Vec<i64>| -> Vec<u8> {
        xs.iter()
            .flat_map(|&x| if wide { x.to_le_bytes().to_vec() } else { (x as i32).to_le_bytes().to_vec() })
            .collect()
    };
    let nnz = t.entries.len() as u64;
    let csr = g.tape.below(2) == 0;
    let mut members: Vec<(&str, &str, Vec<u64>, Vec<u8>)> = vec![
        ("format", "'|S3'", vec![], if csr { b"csr".to_vec() } else { b"coo".to_vec() }),
        ("shape", "'<i8'", vec![2], t.file_dims.iter().flat_map(|d| d.to_le_bytes()).collect()),
        ("data", dtype, vec![nnz], npz_bytes(dtype, &values)),
    ];
    if csr {
        let mut indptr = vec![0i64; t.file_dims[0] as usize + 1];
        for (c, _) in &t.entries {
            indptr[c[0] as usize + 1] += 1;
        }
        for k in 1..indptr.len() {
            indptr[k] += indptr[k - 1];
        }
        members.push(("indptr", index, vec![indptr.len() as u64], ints(indptr)));
        members.push(("indices", index, vec![nnz], ints(t.entries.iter().map(|(c, _)| c[1]).collect())));
    } else {
        members.push(("row", index, vec![nnz], ints(t.entries.iter().map(|(c, _)| c[0]).collect())));
        members.push(("col", index, vec![nnz], ints(t.entries.iter().map(|(c, _)| c[1]).collect())));
    }
    let method = if g.tape.below(2) == 0 { zip::CompressionMethod::Stored } else { zip::CompressionMethod::Deflated };
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, descr, shape, data) in members {
        let options = zip::write::SimpleFileOptions::default().compression_method(method);
        z.start_file(format!("{name}.npy"), options).expect("a member of an archive in memory");
        npy::write_header(&mut z, descr, &shape).expect("writing to memory");
        z.write_all(&data).expect("writing to memory");
    }
    z.finish().expect("an archive in memory").into_inner()
}

/// The encodings a stored rank-3 result is drawn in: its value is arrays
/// over `i` and `j` and a list of `(k, value)` per fibre (the input's
/// view), which every one of these takes.
const STORED3: &[&str] = &[
    "(i, j, k) -> (i : dense, j : dense, k : compressed)",
    "(i, j, k) -> (i : dense, j : compressed, k : compressed)",
    "(i, j, k) -> (i : compressed, j : compressed, k : compressed)",
    "(i, j, k) -> (i : compressed(nonunique), j : singleton(nonunique), k : singleton)",
    "(i, j, k) -> (i : batch, j : dense, k : compressed)",
    "(i, j, k) -> (i : dense, j : dense, k : compressed), posWidth = 16, crdWidth = 16",
    "(i, j, k) -> (i : dense, j : dense, k : loose_compressed)",
];

/// A 3-D tensor `A` whose fibres (`(i : dense, j : dense, k : compressed)`
/// or a batch of CSR matrices) are mapped, filtered or co-iterated with
/// themselves, the result stored in one of [`STORED3`].
fn stored_rank3(
    g: &mut Gen,
    elem: &str,
    matrices: &mut Vec<(String, String)>,
    forms: &mut Vec<(String, Form)>,
) -> String {
    let t = &mut g.tape;
    let dims: Vec<i64> = (0..3).map(|_| *t.pick(&[1i64, 2, 3, 4, 0])).collect();
    let es = entries(t, &dims, elem, None);
    let input = if t.below(2) == 0 {
        "(i, j, k) -> (i : dense, j : dense, k : compressed)"
    } else {
        "(i, j, k) -> (i : batch, j : dense, k : compressed)"
    };
    let result = STORED3[t.below(STORED3.len() as u64) as usize];
    let fibre = match t.below(if is_complex(elem) { 2 } else { 3 }) {
        0 => "f :>> map(fun(e => (e.1, e.2 * 2 + e.2)))",
        1 => "union(0, 1, f, f) :>> map(fun(e => (e.1, e.2 - e.3)))",
        _ => "f :>> filter(fun(e => e.2 > 0))",
    };
    let text = tns_text(&dims, &es);
    if t.below(7) == 0 {
        forms.push(("A".to_string(), Form::Json));
    }
    matrices.push(("A".to_string(), text));
    format!(
        "#E = {}\n#R = {}\n\nfun(A: tensor<?x?x?x{elem}, #E> =>\n  (A :>> map(fun(s => s :>> map(fun(f => {fibre})))) : tensor<?x?x{{A_dim2}}x{elem}, #R>))\n",
        mlir(input),
        mlir(result)
    )
}

/// A dense SpMV run with its matrix packed as SELL: the `--encoding` text
/// and the matrix.
#[derive(Clone, Debug)]
pub struct Sell {
    /// `SELL(C)`, `SELL(C, sigma = S)`, `SELL(C, crdWidth = 16)`, …
    pub spec: String,
    /// The matrix `A` as Matrix Market text (its dense form is the input `A`).
    pub mtx: String,
    /// The matrix's rows (the kernel's `n`).
    pub rows: i64,
    /// Its columns (`m`, the length of `xs`).
    pub cols: i64,
    /// Whether the kernel's result is its row map: else SELL-C-σ with σ > 1
    /// refuses it ("… is not its row map"), which is right.
    pub row_map: bool,
}

impl Sell {
    /// Whether the rows are sorted by length before slicing (σ > 1).
    pub fn sorted(&self) -> bool {
        let sigma = self.spec.split("sigma = ").nth(1).map(|r| r.trim_end_matches(')'));
        sigma.and_then(|r| r.split(',').next()?.trim().parse::<u64>().ok()).is_some_and(|s| s > 1)
    }
}

/// The dense SpMV the SELL front door rewrites (`heddle run --encoding
/// A=SELL(C)`: docs/cli.md), in the forms its laws take: the row zipped with
/// the vector either way round, under `*`, summed from 0; the vector maybe
/// computed first (`let`), the rows' results maybe mapped after. Its inputs
/// `A` (dense) and `xs` pushed onto `inputs`.
pub(super) fn sell_kernel(g: &mut Gen, inputs: &mut Vec<(String, serde_json::Value)>) -> (String, Sell) {
    let t = &mut g.tape;
    let ty = *t.pick(&["float", "double"]);
    let (rows, cols) = (dim_size(t), dim_size(t));
    let es = entries(t, &[rows, cols], "f64", None);
    let row = match t.below(3) {
        0 => "zip(row, v) :>> map(fun(p => p.1 * p.2))",
        1 => "zip(v, row) :>> map(fun(p => p.2 * p.1))",
        _ => "zip(v, row) :>> map(fun(p => p.1 * p.2))",
    };
    let computed = t.below(4) == 0;
    let after = t.below(4) == 0;
    let mut body = format!("A :>> map(fun(row => {row} :>> reduce(+, 0)))");
    if after {
        body = format!("{body} :>> map(fun(y => y * 0.5 + 1.0))");
    }
    body = if computed {
        format!("let v = xs :>> map(fun(x => x * 2.0 - 1.0)) in\n  {body}")
    } else {
        body.replace("v, row", "xs, row").replace("row, v", "row, xs")
    };
    let c = *t.pick(&[1i64, 2, 4, 8]);
    let spec = match t.below(5) {
        0 => format!("SELL({c}, sigma = {})", c * *t.pick(&[1i64, 2, 8])),
        1 => format!("SELL({c}, crdWidth = 16)"),
        2 => format!("SELL({c}, crdWidth = 16, sigma = {})", c * 4),
        _ => format!("SELL({c})"),
    };
    let mut dense = vec![vec![0.0f64; cols as usize]; rows as usize];
    for (coords, v) in &es {
        dense[coords[0] as usize][coords[1] as usize] = v.parse().expect("a number this module wrote");
    }
    inputs.push(("A".to_string(), serde_json::json!(dense)));
    let xs: Vec<f64> = (0..cols).map(|_| float_value(t)).collect();
    inputs.push(("xs".to_string(), serde_json::json!(xs)));
    let source = format!("nFun(n =>\nnFun(m =>\nfun(A: [[{ty}]_m]_n =>\nfun(xs: [{ty}]_m =>\n  {body}))))\n");
    let mtx = mtx_text(&[rows, cols], &es, "f64");
    (source, Sell { spec, mtx, rows, cols, row_map: !computed && !after })
}

//! Tensor parameters beyond [`sparse`](super::sparse)'s: DIA (and its
//! other layouts), ELL, blocks of any size (`BSR(r, c)`), the named and
//! TACO-letter spellings of encodings, rank-4 tensors, sparse vectors, and
//! tensors of integer, complex and half values, read from Matrix Market
//! (`.mtx`: `real`, `integer` or `complex` field) and FROSTT (`.tns`) text.
//!
//! Kernels: every stored value weighted by its coordinates and summed (in
//! all, or per outer position: [`tensor_case`](super::sparse::tensor_case)'s
//! fold with constants of the value type), SpMV with a dense vector where
//! the view has a known shape (DIA's `(offset, diagonal)` pairs, ELL's slices,
//! blocks), and for sparse vectors the dot product with a dense one,
//! co-iteration with a second sparse vector, and a sparse vector stored as
//! the result.

use super::*;
use std::fmt::Write as _;

/// The value types of the tensors drawn here, with how often.
pub(super) const ELEMS: &[(&str, u32)] = &[
    ("f32", 3),
    ("f64", 2),
    ("i32", 2),
    ("i64", 1),
    ("i16", 1),
    ("u16", 1),
    ("complex<f32>", 2),
    ("complex<f64>", 1),
    ("f16", 1),
    ("bf16", 1),
    ("i8", 1),
    ("u8", 1),
];

/// A tensor's encoding as written, with what the generator needs of it.
struct Tensor {
    /// The encoding's spelling: a name, TACO letters, or MLIR's attribute.
    spelling: String,
    /// Whether the spelling can stand in the type itself (names and TACO
    /// letters; MLIR's attribute goes on a `#E = …` line).
    inline: bool,
    levels: Vec<Level>,
    /// The block sizes the dimensions must be multiples of.
    blocks: Vec<i64>,
    /// At most this many entries per row (ELL's slices).
    per_row: Option<usize>,
    /// The kind of SpMV kernel the view allows, if any.
    spmv: Spmv,
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Spmv {
    None,
    /// `(j - i : compressed, i : dense)`: `(offset, diagonal over the rows)`.
    Dia,
    /// `[c](i, j) -> (c * K * i : dense, i : dense, j : compressed)`.
    Ell,
    /// `BSR(r, c)`: block rows of `(block column, r × c block)`.
    Bsr(i64, i64),
    /// `(i : dense, j : compressed)`, however spelled.
    Csr,
}

use Level::{Compressed as C, Dense as D, Singleton as S};

pub(super) fn mlir(map: &str) -> String {
    format!("#sparse_tensor.encoding<{{ map = {map} }}>")
}

/// A matrix encoding drawn from `t`: DIA in three layouts, ELL of 1 to 3
/// slices, `BSR(r, c)`, and the named and TACO spellings.
fn matrix_encoding(t: &mut Tape) -> Tensor {
    let plain = |spelling: &str, inline: bool, levels: Vec<Level>, spmv: Spmv| Tensor {
        spelling: spelling.to_string(),
        inline,
        levels,
        blocks: vec![1, 1],
        per_row: None,
        spmv,
    };
    match t.weighted(&[2, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1]) {
        0 => plain("DIA", true, vec![C { dim: None }, D { dim: Some(0) }], Spmv::Dia),
        1 => plain(
            &mlir("(i, j) -> (j - i : compressed, i : dense)"),
            false,
            vec![C { dim: None }, D { dim: Some(0) }],
            Spmv::Dia,
        ),
        // scipy's layout: each diagonal a dense array over the columns.
        2 => plain(
            &mlir("(i, j) -> (j - i : compressed, j : dense)"),
            false,
            vec![C { dim: None }, D { dim: Some(1) }],
            Spmv::None,
        ),
        // Each row's offsets.
        3 => plain(
            &mlir("(i, j) -> (i : dense, i - j : compressed)"),
            false,
            vec![D { dim: Some(0) }, C { dim: None }],
            Spmv::None,
        ),
        4 | 5 => {
            let k = 1 + t.below(3) as usize;
            Tensor {
                spelling: mlir(&format!("[c](i, j) -> (c * {k} * i : dense, i : dense, j : compressed)")),
                inline: false,
                levels: vec![D { dim: None }, D { dim: Some(0) }, C { dim: Some(1) }],
                blocks: vec![1, 1],
                per_row: Some(k),
                spmv: Spmv::Ell,
            }
        }
        6 | 7 => {
            let (r, c) = (1 + t.below(3) as i64, 1 + t.below(3) as i64);
            Tensor {
                spelling: format!("BSR({r}, {c})"),
                inline: true,
                levels: vec![D { dim: None }, C { dim: None }, D { dim: None }, D { dim: None }],
                blocks: vec![r, c],
                per_row: None,
                spmv: Spmv::Bsr(r, c),
            }
        }
        8 => plain("CSR", true, vec![D { dim: Some(0) }, C { dim: Some(1) }], Spmv::Csr),
        9 => plain("ds", true, vec![D { dim: Some(0) }, C { dim: Some(1) }], Spmv::Csr),
        10 => plain("ds:1,0", true, vec![D { dim: Some(1) }, C { dim: Some(0) }], Spmv::None),
        11 => plain("DCSC", true, vec![C { dim: Some(1) }, C { dim: Some(0) }], Spmv::None),
        12 => plain("uq", true, vec![C { dim: Some(0) }, S { dim: Some(1) }], Spmv::None),
        13 => plain("sd", true, vec![C { dim: Some(0) }, D { dim: Some(1) }], Spmv::None),
        _ => plain("COO", true, vec![C { dim: Some(0) }, S { dim: Some(1) }], Spmv::None),
    }
}

/// A rank-4 encoding drawn from `t`.
fn rank4_encoding(t: &mut Tape) -> Tensor {
    let (spelling, inline, levels): (String, bool, Vec<Level>) = match t.below(7) {
        0 => ("CSF".into(), true, (0..4).map(|d| C { dim: Some(d) }).collect()),
        1 => {
            ("dsss".into(), true, vec![D { dim: Some(0) }, C { dim: Some(1) }, C { dim: Some(2) }, C { dim: Some(3) }])
        }
        2 => {
            ("ddds".into(), true, vec![D { dim: Some(0) }, D { dim: Some(1) }, D { dim: Some(2) }, C { dim: Some(3) }])
        }
        3 => ("COO".into(), true, vec![C { dim: Some(0) }, S { dim: Some(1) }, S { dim: Some(2) }, S { dim: Some(3) }]),
        4 => ("dddd".into(), true, (0..4).map(|d| D { dim: Some(d) }).collect()),
        5 => (
            mlir("(a, b, c, d) -> (a : batch, b : dense, c : compressed, d : compressed)"),
            false,
            vec![D { dim: Some(0) }, D { dim: Some(1) }, C { dim: Some(2) }, C { dim: Some(3) }],
        ),
        _ => (
            mlir("(a, b, c, d) -> (d : compressed, b : dense, a : compressed(nonunique), c : singleton)"),
            false,
            vec![C { dim: Some(3) }, D { dim: Some(1) }, C { dim: Some(0) }, S { dim: Some(2) }],
        ),
    };
    Tensor { spelling, inline, levels, blocks: vec![1; 4], per_row: None, spmv: Spmv::None }
}

/// A sparse-vector encoding drawn from `t` (a singleton level cannot come
/// first, so a vector has none).
fn vector_encoding(t: &mut Tape) -> (Tensor, bool) {
    let (spelling, inline, level, sorted) = match t.below(6) {
        0 | 1 => ("s".to_string(), true, C { dim: Some(0) }, true),
        2 => (mlir("(i) -> (i : compressed)"), false, C { dim: Some(0) }, true),
        3 => (mlir("(i) -> (i : loose_compressed)"), false, C { dim: Some(0) }, true),
        4 => ("u".to_string(), true, C { dim: Some(0) }, false),
        _ => ("d".to_string(), true, D { dim: Some(0) }, false),
    };
    let tensor = Tensor { spelling, inline, levels: vec![level], blocks: vec![1], per_row: None, spmv: Spmv::None };
    (tensor, sorted)
}

pub(super) fn is_complex(elem: &str) -> bool {
    elem.starts_with("complex")
}
pub(super) fn is_int(elem: &str) -> bool {
    elem.starts_with('i') || elem.starts_with('u')
}

/// A stored value of type `elem`, never 0 (written as a file writes it).
pub(super) fn value(t: &mut Tape, elem: &str) -> String {
    if is_int(elem) {
        let k = 1 + t.below(4) as i64;
        return if elem.starts_with('u') || t.below(2) == 0 { k.to_string() } else { (-k).to_string() };
    }
    let mut x = float_value(t);
    if x == 0.0 {
        x = 1.0;
    }
    if is_complex(elem) { format!("{x} {}", float_value(t)) } else { x.to_string() }
}

/// A dense vector's element of type `elem`, as JSON.
pub(super) fn json_value(t: &mut Tape, elem: &str) -> serde_json::Value {
    if is_int(elem) {
        let k = t.below(7) as i64 - 3;
        return serde_json::json!(if elem.starts_with('u') { k.abs() } else { k });
    }
    if is_complex(elem) {
        return serde_json::json!([float_value(t), float_value(t)]);
    }
    serde_json::json!(float_value(t))
}

/// The scalar type of program text for the value type `elem`.
pub(super) fn scalar_name(elem: &str) -> &str {
    match elem {
        "f32" => "float",
        "f64" => "double",
        e => e,
    }
}

/// Random entries of a tensor of sizes `dims`: about one in three
/// positions, each row (first coordinate) with at most `per_row`.
pub(super) fn entries(t: &mut Tape, dims: &[i64], elem: &str, per_row: Option<usize>) -> Vec<(Vec<i64>, String)> {
    let total: i64 = dims.iter().product();
    let mut out: Vec<(Vec<i64>, String)> = Vec::new();
    let mut in_row = 0;
    let mut row = -1;
    for flat in 0..total {
        let mut rest = flat;
        let mut coords = vec![0; dims.len()];
        for d in (0..dims.len()).rev() {
            coords[d] = rest % dims[d];
            rest /= dims[d];
        }
        if coords[0] != row {
            (row, in_row) = (coords[0], 0);
        }
        if t.below(3) == 0 && per_row.is_none_or(|k| in_row < k) {
            in_row += 1;
            out.push((coords, value(t, elem)));
        }
    }
    out
}

/// Matrix Market text of a matrix (`real`, `integer` or `complex` field).
pub(super) fn mtx_text(dims: &[i64], entries: &[(Vec<i64>, String)], elem: &str) -> String {
    let field = if is_complex(elem) {
        "complex"
    } else if is_int(elem) {
        "integer"
    } else {
        "real"
    };
    let mut s =
        format!("%%MatrixMarket matrix coordinate {field} general\n{} {} {}\n", dims[0], dims[1], entries.len());
    for (c, x) in entries {
        let _ = writeln!(s, "{} {} {x}", c[0] + 1, c[1] + 1);
    }
    s
}

/// FROSTT text with the extended header (rank, count; the sizes).
pub(super) fn tns_text(dims: &[i64], entries: &[(Vec<i64>, String)]) -> String {
    let sizes: Vec<String> = dims.iter().map(i64::to_string).collect();
    let mut s = format!("{} {}\n{}\n", dims.len(), entries.len(), sizes.join(" "));
    for (c, x) in entries {
        let coords: Vec<String> = c.iter().map(|k| (k + 1).to_string()).collect();
        let _ = writeln!(s, "{} {x}", coords.join(" "));
    }
    s
}

/// The fold of [`tensor_case`](super::sparse::tensor_case) with integer
/// constants (which take any numeric type), so that it holds for every value
/// type: each level's elements weighted by their coordinates and summed.
///
/// With `defs` (a tensor kernel with definitions: [`super::dialect`]) each
/// leaf, weight and sum may go through one of them instead, drawing one
/// more choice at each; without, it draws what it drew before they existed.
pub(super) fn fold(g: &mut Gen, levels: &[Level], var: &str, sum: &str, defs: Option<&TensorDefs>) -> String {
    let Some((first, rest)) = levels.split_first() else {
        let leaf = match *g.tape.pick(&["", " * 2", " + 1", " - 3"]) {
            "" => var.to_string(),
            c => format!("({var}{c})"),
        };
        return match defs {
            Some(d) if g.tape.below(2) == 0 => format!("{}({leaf})", d.leaf),
            _ => leaf,
        };
    };
    let x = g.fresh("x");
    // `:>> total` (the definition of `reduce(+, 0)` or `reduceSeq`) or the sum itself.
    let sum_stage = |g: &mut Gen| match defs {
        Some(d) if g.tape.below(2) == 0 => d.total.clone(),
        _ => format!("{sum}(+, 0)"),
    };
    match first {
        Level::Dense { .. } => {
            let inner = fold(g, rest, &x, sum, defs);
            let total = sum_stage(g);
            format!("({var} :>> map(fun({x} => {inner})) :>> {total})")
        }
        Level::Compressed { .. } => {
            let inner = fold(g, rest, &format!("{x}.2"), sum, defs);
            let weighted = match defs {
                Some(d) if g.tape.below(2) == 0 => format!("{}({x}.1, {inner})", d.weigh),
                _ => format!("{inner} * select({x}.1 % 2 == 0, 1, 2)"),
            };
            let total = sum_stage(g);
            format!("({var} :>> map(fun({x} => {weighted})) :>> {total})")
        }
        Level::Singleton { .. } => {
            let inner = fold(g, rest, &format!("{var}.2"), sum, defs);
            format!("({inner} * select({var}.1 > 0, 2, 1))")
        }
    }
}

/// The definitions a tensor kernel's [`fold`] may use, by name: a leaf's
/// transformation (`fun(x => …)` of `+ - *` and integer literals, so of any
/// value type), an entry weighted by its coordinate (`fun(c, x => …)`), and
/// the sum as a pipeline stage.
pub(super) struct TensorDefs {
    pub(super) leaf: String,
    pub(super) weigh: String,
    pub(super) total: String,
}

/// A kernel over a tensor parameter `A` drawn here (see the module's
/// documentation), its file pushed onto `matrices` and its dense inputs onto
/// `inputs`.
pub(super) fn tensor_kernel_more(
    g: &mut Gen,
    matrices: &mut Vec<(String, String)>,
    inputs: &mut Vec<(String, serde_json::Value)>,
) -> String {
    let weights: Vec<u32> = ELEMS.iter().map(|(_, w)| *w).collect();
    let mut elem = ELEMS[g.tape.weighted(&weights)].0;
    let (shape, _) = g.tape.weighted_split(&[5, 2, 3]);
    let (tensor, sorted) = match shape {
        0 => (matrix_encoding(&mut g.tape), true),
        1 => (rank4_encoding(&mut g.tape), true),
        _ => vector_encoding(&mut g.tape),
    };
    let rank = tensor.blocks.len();
    if rank != 2 && is_complex(elem) {
        // FROSTT has one number per value: complex tensors come from `.mtx` only.
        elem = "f64";
    }
    let sizes: &[i64] = if rank == 4 { &[1, 2, 3, 0] } else { &[0, 1, 2, 3, 4, 5, 8] };
    let dims: Vec<i64> = (0..rank)
        .map(|d| {
            let s = *g.tape.pick(sizes);
            // A multiple of the block size.
            (s + tensor.blocks[d] - 1) / tensor.blocks[d] * tensor.blocks[d]
        })
        .collect();
    let stored = entries(&mut g.tape, &dims, elem, tensor.per_row);
    let text = if rank == 2 { mtx_text(&dims, &stored, elem) } else { tns_text(&dims, &stored) };
    matrices.push(("A".to_string(), text));
    let half = elem == "f16" || elem == "bf16";
    // A half's sum depends on its order (`reduce` may reassociate).
    let sum = if half { "reduceSeq" } else { "reduce" };
    let s = scalar_name(elem);
    let mut params = vec![];
    let body = match (shape, g.tape.below(3)) {
        // SpMV where the view has a known shape, and for vectors the dot
        // product with a dense one.
        (0, 0) if tensor.spmv != Spmv::None => {
            params.push(format!("fun(xs: [{s}]_A_dim1 =>"));
            let xs: Vec<serde_json::Value> = (0..dims[1]).map(|_| json_value(&mut g.tape, elem)).collect();
            inputs.push(("xs".to_string(), serde_json::json!(xs)));
            spmv(g, tensor.spmv, sum)
        }
        (2, 0) => {
            params.push(format!("fun(xs: [{s}]_A_dim0 =>"));
            let xs: Vec<serde_json::Value> = (0..dims[0]).map(|_| json_value(&mut g.tape, elem)).collect();
            inputs.push(("xs".to_string(), serde_json::json!(xs)));
            match tensor.levels[0] {
                Level::Dense { .. } => format!("zip(A, xs) :>> map(fun(p => p.1 * p.2)) :>> {sum}(+, 0)"),
                _ => format!("A :>> map(fun(e => e.2 * xs@e.1)) :>> {sum}(+, 0)"),
            }
        }
        // Co-iteration with a second vector in the same encoding, summed or
        // stored as a sparse vector.
        (2, 1) if sorted => {
            let other = entries(&mut g.tape, &dims, elem, None);
            matrices.push(("B".to_string(), tns_text(&dims, &other)));
            params.push(format!("fun(B: tensor<?x{elem}, #E> =>"));
            let coiter = if g.tape.below(2) == 0 {
                "intersect(A, B) :>> map(fun(e => (e.1, e.2 * e.3 + e.2)))"
            } else {
                "union(0, 1, A, B) :>> map(fun(e => (e.1, e.2 - e.3)))"
            };
            if g.tape.below(2) == 0 {
                format!("{coiter} :>> map(fun(e => e.2 * select(e.1 % 2 == 0, 1, 2))) :>> {sum}(+, 0)")
            } else {
                format!("({coiter} : tensor<{{A_dim0}}x{elem}, #E>)")
            }
        }
        _ => {
            if g.tape.below(2) == 0 || rank == 1 {
                fold(g, &tensor.levels, "A", sum, None)
            } else {
                let x = g.fresh("x");
                match tensor.levels[0] {
                    Level::Dense { .. } => {
                        let inner = fold(g, &tensor.levels[1..], &x, sum, None);
                        format!("A :>> map(fun({x} => {inner}))")
                    }
                    Level::Compressed { dim: Some(d) } => {
                        let inner = fold(g, &tensor.levels[1..], &format!("{x}.2"), sum, None);
                        format!("A :>> map(fun({x} => ({x}.1, {inner}))) :>> scatterAdd(A_dim{d})")
                    }
                    _ => fold(g, &tensor.levels, "A", sum, None),
                }
            }
        }
    };
    let shape_text: String = (0..rank).map(|_| "?x").collect();
    // `#E` on a line of its own, or the spelling in the type itself.
    let (head, enc) =
        if !tensor.inline || g.tape.below(2) == 0 || params.iter().any(|p| p.contains("#E")) || body.contains("#E") {
            (format!("#E = {}\n\n", tensor.spelling), "#E".to_string())
        } else {
            (String::new(), tensor.spelling.clone())
        };
    let mut text = format!("{head}fun(A: tensor<{shape_text}{elem}, {enc}> =>\n");
    for p in &params {
        text.push_str(p);
        text.push('\n');
    }
    let _ = writeln!(text, "  {body}{}", ")".repeat(1 + params.len()));
    text
}

/// SpMV `y = A xs` over the view of `kind`.
pub(super) fn spmv(g: &mut Gen, kind: Spmv, sum: &str) -> String {
    let scale = g.tape.pick(&["", " * 2"]);
    match kind {
        Spmv::Dia => format!(
            "generate(A_dim0, fun(i => A :>> map(fun(d => let j = i + d.1 in let inside = j >= 0 && j < A_dim1 in select(inside, d.2@i * xs@select(inside, j, 0){scale}, 0))) :>> {sum}(+, 0)))"
        ),
        Spmv::Ell => format!(
            "A :>> map(fun(slice => slice :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1{scale})) :>> {sum}(+, 0))))) :>> transpose :>> map({sum}(+, 0))"
        ),
        Spmv::Bsr(r, c) => format!(
            "A :>> map(fun(brow => generate({r}, fun(r => brow :>> map(fun(b => zip(b.2@r, (xs :>> split({c}))@b.1) :>> map(fun(p => p.1 * p.2{scale})) :>> {sum}(+, 0))) :>> {sum}(+, 0))))) :>> join"
        ),
        Spmv::Csr => format!("A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1{scale})) :>> {sum}(+, 0)))"),
        Spmv::None => "0".to_string(),
    }
}

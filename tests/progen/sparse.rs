//! Sparse data: the CSR inputs' co-iterated and compressed rows, structured
//! (position-dependent, counted, stored) results, and tensor parameters in
//! random encodings.

use super::*;
use std::fmt::Write as _;

/// A tensor encoding the generator can write kernels over: its text and the
/// kinds of its levels in storage order.
pub(super) struct Encoding {
    name: &'static str,
    text: &'static str,
    levels: &'static [Level],
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Level {
    /// `dense` / `batch`: `[T]_size`, indexed by coordinate (the level's size
    /// is the dimension's when `dim` is given).
    Dense { dim: Option<usize> },
    /// `compressed` / `loose_compressed` / `structured`: `[p -> (int, T)]`,
    /// coordinates `< dims[dim]` when `dim` is given.
    Compressed { dim: Option<usize> },
    /// `singleton`: `(int, T)`.
    Singleton { dim: Option<usize> },
}

pub(super) const ENCODINGS: &[Encoding] = &[
    Encoding {
        name: "CSR",
        text: "(i, j) -> (i : dense, j : compressed)",
        levels: &[Level::Dense { dim: Some(0) }, Level::Compressed { dim: Some(1) }],
    },
    Encoding {
        name: "CSC",
        text: "(i, j) -> (j : dense, i : compressed)",
        levels: &[Level::Dense { dim: Some(1) }, Level::Compressed { dim: Some(0) }],
    },
    Encoding {
        name: "DCSR",
        text: "(i, j) -> (i : compressed, j : compressed)",
        levels: &[Level::Compressed { dim: Some(0) }, Level::Compressed { dim: Some(1) }],
    },
    Encoding {
        name: "DCSC",
        text: "(i, j) -> (j : compressed, i : compressed)",
        levels: &[Level::Compressed { dim: Some(1) }, Level::Compressed { dim: Some(0) }],
    },
    Encoding {
        name: "COO",
        text: "(i, j) -> (i : compressed(nonunique), j : singleton)",
        levels: &[Level::Compressed { dim: Some(0) }, Level::Singleton { dim: Some(1) }],
    },
    Encoding {
        name: "COO_SOA",
        text: "(i, j) -> (i : compressed(nonunique), j : singleton(soa))",
        levels: &[Level::Compressed { dim: Some(0) }, Level::Singleton { dim: Some(1) }],
    },
    Encoding {
        name: "DENSE",
        text: "(i, j) -> (i : dense, j : dense)",
        levels: &[Level::Dense { dim: Some(0) }, Level::Dense { dim: Some(1) }],
    },
    Encoding {
        name: "LOOSE",
        text: "(i, j) -> (i : dense, j : loose_compressed)",
        levels: &[Level::Dense { dim: Some(0) }, Level::Compressed { dim: Some(1) }],
    },
    Encoding {
        name: "BSR",
        text: "(i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)",
        levels: &[
            Level::Dense { dim: None },
            Level::Compressed { dim: None },
            Level::Dense { dim: None },
            Level::Dense { dim: None },
        ],
    },
    Encoding {
        name: "CDR",
        text: "(i, j) -> (i : compressed(nonunique), j : singleton)",
        levels: &[Level::Compressed { dim: Some(0) }, Level::Singleton { dim: Some(1) }],
    },
];

impl Gen {
    /// `[float]_n` or `[int]_n` from sparse rows with counted lengths:
    /// co-iteration of the two CSR inputs (union, intersect) or the
    /// expand/compress workspace, each row then reduced.
    pub(super) fn counted_rows(&mut self, elem: &Ty) -> String {
        let i = self.fresh("i");
        let t = self.fresh("t");
        let value = match elem {
            Ty::I => format!("{t}.1"),
            _ => format!("{t}.2"),
        };
        let (which, rest) = self.tape.below_split(3);
        let row = match which {
            0 => {
                let (a, b) = (self.sparse_list(&i, 1), self.sparse_list(&i, 1));
                format!("union(0.0, 1.0, {a}, {b}) :>> map(fun({t} => ({t}.1, {t}.2 * {t}.3 + {t}.2)))")
            }
            1 => {
                let (a, b) = (self.sparse_list(&i, 1), self.sparse_list(&i, 1));
                format!("intersect({a}, {b}) :>> map(fun({t} => ({t}.1, {t}.2 - {t}.3)))")
            }
            _ => {
                let a = self.sparse_list(&i, 1);
                format!("{a} :>> map(fun({t} => ({t}.1, {t}.2 * 2.0))) :>> {}(m)", workspace(rest))
            }
        };
        // The row reduced as it is produced, or read by position, which stores
        // it first with its count (issue 11): zipped with itself, padded, or
        // filtered and zipped with a map of it.
        let (u, p) = (self.fresh("u"), self.fresh("p"));
        let (first, second) = match elem {
            Ty::I => (format!("{p}.1.1"), format!("{p}.2.1")),
            _ => (format!("{p}.1.2"), format!("{p}.2.2")),
        };
        let used = match self.tape.below(4) {
            0 => format!("{row} :>> map(fun({t} => {value})) :>> reduce(+, 0)"),
            1 => format!("(let {u} = {row} in zip({u}, {u})) :>> map(fun({p} => {first} + {second})) :>> reduce(+, 0)"),
            2 => format!("pad(1, 2, (0, 1.5), {row}) :>> map(fun({t} => {value})) :>> reduce(+, 0)"),
            _ => format!(
                "(let {u} = {row} :>> filter(fun({t} => {t}.2 > 0.0)) in zip({u}, {u} :>> map(fun({t} => ({t}.1 + 1, {t}.2 * 0.5))))) :>> map(fun({p} => {first} + {second})) :>> reduce(+, 0)"
            ),
        };
        format!("generate(n, fun({i} => {used}))")
    }

    /// A list of row `i`'s (coordinate, value) pairs sorted by coordinate: a
    /// row of `v` or `w`, or, `depth` levels deep, a co-iteration or a
    /// compressed row of such lists mapped back to pairs (n-way co-iteration).
    pub(super) fn sparse_list(&mut self, i: &str, depth: u32) -> String {
        let (choice, rest) = if depth == 0 { (self.tape.below(2), 0) } else { self.tape.below_split(5) };
        let t = self.fresh("t");
        match choice {
            0 => format!("v@{i}"),
            1 => format!("w@{i}"),
            2 => {
                let (a, b) = (self.sparse_list(i, depth - 1), self.sparse_list(i, depth - 1));
                format!("union(0.0, 1.0, {a}, {b}) :>> map(fun({t} => ({t}.1, {t}.2 * {t}.3 + {t}.2)))")
            }
            3 => {
                let (a, b) = (self.sparse_list(i, depth - 1), self.sparse_list(i, depth - 1));
                format!("intersect({a}, {b}) :>> map(fun({t} => ({t}.1, {t}.2 - {t}.3)))")
            }
            _ => {
                let a = self.sparse_list(i, depth - 1);
                format!("{a} :>> map(fun({t} => ({t}.1, {t}.2 * 2.0))) :>> {}(m)", workspace(rest))
            }
        }
    }
}

/// A sparse matrix of `rows × cols`, sorted by row then column, no duplicates.
pub(super) fn random_rows(t: &mut Tape, rows: i64, cols: i64) -> Vec<Vec<(i64, f64)>> {
    (0..rows)
        .map(|_| {
            let mut row = Vec::new();
            for c in 0..cols {
                if t.below(3) == 0 {
                    let mut x = float_value(t);
                    if x == 0.0 {
                        x = 1.0;
                    }
                    row.push((c, x));
                }
            }
            row
        })
        .collect()
}

pub(super) fn packed(rows: &[Vec<(i64, f64)>]) -> (serde_json::Value, serde_json::Value) {
    let mut offsets = vec![0usize];
    for r in rows {
        offsets.push(offsets.last().unwrap() + r.len());
    }
    let entries: Vec<serde_json::Value> = rows.iter().flatten().map(|(c, x)| serde_json::json!([c, x])).collect();
    (serde_json::json!(offsets), serde_json::json!(entries))
}

pub(super) fn mtx(rows: &[Vec<(i64, f64)>], cols: i64) -> String {
    let count: usize = rows.iter().map(Vec::len).sum();
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{} {cols} {count}\n", rows.len());
    for (i, r) in rows.iter().enumerate() {
        for (j, x) in r {
            let _ = writeln!(s, "{} {} {x}", i + 1, j + 1);
        }
    }
    s
}

/// Results whose shape no dense type gives: the CSR rows mapped (a
/// position-dependent result), or sparse rows with counted lengths.
pub(super) fn structured_result(g: &mut Gen) -> String {
    let i = g.fresh("i");
    let e = g.fresh("e");
    // Which result, and from the rest of the draw whether it is stored as a
    // sparse tensor (one in two) and in which encoding ([`STORED`]).
    let (which, rest) = g.tape.below_split(4);
    let rows = structured_rows(g, which, &i, &e, workspace(rest / (2 * STORED.len() as u64)));
    if rest % 2 == 1 {
        return rows;
    }
    let enc = STORED[(rest / 2 % STORED.len() as u64) as usize];
    format!("({rows} : tensor<{{n}}x{{m}}xf32, #sparse_tensor.encoding<{{ map = {enc} }}>>)")
}

/// The encodings a structured result (`n` rows of (coordinate, value)
/// lists, coordinates below `m`) is stored in: every level kind a row list
/// can fill, and narrow position and coordinate widths (a position past
/// 255 does not fit 8 bits: every backend must fail as the interpreter does).
pub(super) const STORED: &[&str] = &[
    "(i, j) -> (i : dense, j : compressed)",
    "(i, j) -> (i : compressed, j : compressed)",
    "(i, j) -> (i : compressed(nonunique), j : singleton)",
    "(i, j) -> (i : compressed(nonunique), j : singleton(soa)), posWidth = 16, crdWidth = 8",
    "(i, j) -> (i : dense, j : loose_compressed)",
    "(i, j) -> (i : dense, j : compressed), posWidth = 8, crdWidth = 8",
    "(i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16",
    "(i, j) -> (i : batch, j : compressed)",
    "(i, j) -> (i : dense, j : compressed(nonordered))",
];

/// The workspace a refinement `rest` of a draw picks: `compressAdd` (0,
/// the old choice), or one in three `compressLast`, where a later value for
/// a coordinate replaces the earlier one.
pub(super) fn workspace(rest: u64) -> &'static str {
    if rest % 3 == 1 { "compressLast" } else { "compressAdd" }
}

/// Structured result number `which` (see [`structured_result`]).
pub(super) fn structured_rows(g: &mut Gen, which: u64, i: &str, e: &str, workspace: &str) -> String {
    match which {
        0 => {
            let row = g.fresh("row");
            let body = g.with_var(e, Ty::Tuple(vec![Ty::I, Ty::F]), |g| {
                g.with_index(&format!("{e}.1"), Len::Nat("m"), |g| g.expr(&Ty::F))
            });
            format!("v :>> map(fun({row} => {row} :>> map(fun({e} => ({e}.1, {body})))))")
        }
        1 => format!(
            "generate(n, fun({i} => union(0.0, 0.0, v@{i}, w@{i}) :>> map(fun({e} => ({e}.1, {e}.2 + {e}.3)))))"
        ),
        2 => format!("generate(n, fun({i} => intersect(v@{i}, w@{i}) :>> map(fun({e} => ({e}.1, {e}.2 * {e}.3)))))"),
        _ => {
            let row = g.fresh("row");
            let b = g.fresh("b");
            format!(
                "v :>> map(fun({row} => {row} :>> map(fun({e} => w@({e}.1 % n) :>> map(fun({b} => ({b}.1, {e}.2 * {b}.2))))) :>> join :>> {workspace}(m)))"
            )
        }
    }
}

/// A kernel over a tensor parameter in a random encoding: every stored
/// value weighted by its coordinates and summed, per outer position or in
/// all.
pub(super) fn tensor_case(g: &mut Gen, enc: &Encoding, dims: (i64, i64)) -> String {
    let total = g.tape.below(2) == 0;
    fn fold(g: &mut Gen, levels: &[Level], var: &str) -> String {
        let Some((first, rest)) = levels.split_first() else {
            let c = g.tape.pick(&["", " * 2.0", " + 1.0"]);
            return format!("{var}{c}");
        };
        let x = g.fresh("x");
        match first {
            Level::Dense { .. } => {
                let inner = fold(g, rest, &x);
                format!("({var} :>> map(fun({x} => {inner})) :>> reduce(+, 0))")
            }
            Level::Compressed { .. } => {
                let inner = fold(g, rest, &format!("{x}.2"));
                let weight = format!("select({x}.1 % 2 == 0, 1.0, 0.5)");
                format!("({var} :>> map(fun({x} => {inner} * {weight})) :>> reduce(+, 0))")
            }
            Level::Singleton { .. } => {
                let inner = fold(g, rest, &format!("{var}.2"));
                format!("({inner} * select({var}.1 > 0, 2.0, 1.0))")
            }
        }
    }
    let _ = dims;
    if total {
        return fold(g, enc.levels, "A");
    }
    let x = g.fresh("x");
    match enc.levels[0] {
        Level::Dense { .. } => {
            let inner = fold(g, &enc.levels[1..], &x);
            format!("A :>> map(fun({x} => {inner}))")
        }
        Level::Compressed { dim } => {
            let inner = fold(g, &enc.levels[1..], &format!("{x}.2"));
            let n = match dim {
                Some(d) => format!("A_dim{d}"),
                None => "A_dim0".to_string(),
            };
            format!("A :>> map(fun({x} => ({x}.1, {inner}))) :>> scatterAdd({n})")
        }
        Level::Singleton { .. } => fold(g, enc.levels, "A"),
    }
}

/// A kernel over a tensor parameter `A` in a random encoding, its matrix
/// (Matrix Market text) pushed onto `matrices`, the dense inputs of the
/// kernels of [`super::tensors`] onto `inputs`.
pub(super) fn tensor_kernel(
    g: &mut Gen,
    matrices: &mut Vec<(String, String)>,
    inputs: &mut Vec<(String, serde_json::Value)>,
) -> String {
    // The encoding, and from the rest of the draw its position and
    // coordinate widths (one in four) and its element type (`f64`,
    // `f16`, else `f32`): drawing no more, so that `f32` tensors of
    // native widths are the programs they were.
    let (which, rest) = g.tape.below_split(ENCODINGS.len() as u64);
    let enc = &ENCODINGS[which as usize];
    let widths = if rest % 4 == 0 {
        // No 8-bit positions: a matrix of more than 255 entries would not fit.
        let pos = [16, 32, 64][(rest / 4 % 3) as usize];
        let crd = [8, 16, 32, 64][(rest / 12 % 4) as usize];
        format!(", posWidth = {pos}, crdWidth = {crd}")
    } else {
        String::new()
    };
    let elem = match rest / 48 % 4 {
        0 => "f64",
        1 => "f16",
        _ => "f32",
    };
    if rest / 192 % 3 == 1 {
        let enc = &ENCODINGS3[(rest / 576 % ENCODINGS3.len() as u64) as usize];
        return tensor3_kernel(g, enc, &widths, elem, matrices);
    }
    // Half the rest: DIA, ELL, blocks of any size, other spellings, rank 4,
    // sparse vectors, integer and complex values.
    if rest / 192 % 3 == 2 || rest / 576 % 2 == 1 {
        return super::tensors::tensor_kernel_more(g, matrices, inputs);
    }
    let mut dims = (size(&mut g.tape), size(&mut g.tape));
    if enc.name == "BSR" {
        // Blocks of 2 x 2: the sizes must be multiples of 2.
        dims = (dims.0 + dims.0 % 2, dims.1 + dims.1 % 2);
    }
    let rows = random_rows(&mut g.tape, dims.0, dims.1);
    matrices.push(("A".to_string(), mtx(&rows, dims.1)));
    let mut body = tensor_case(g, enc, dims);
    if elem == "f16" {
        // A half's sum depends on its order (`reduce` may reassociate).
        body = body.replace("reduce(+, 0)", "reduceSeq(+, 0)");
    }
    format!(
        "// {}\n#E = #sparse_tensor.encoding<{{ map = {}{widths} }}>\n\nfun(A: tensor<?x?x{elem}, #E> =>\n  {body})\n",
        enc.name, enc.text
    )
}

/// 3-D tensor encodings: CSF in two mode orders, with dense outer levels, a
/// batch level, 3-D COO, all dense.
pub(super) const ENCODINGS3: &[Encoding] = &[
    Encoding {
        name: "CSF",
        text: "(i, j, k) -> (i : compressed, j : compressed, k : compressed)",
        levels: &[
            Level::Compressed { dim: Some(0) },
            Level::Compressed { dim: Some(1) },
            Level::Compressed { dim: Some(2) },
        ],
    },
    Encoding {
        name: "CSF_KIJ",
        text: "(i, j, k) -> (k : compressed, i : compressed, j : compressed)",
        levels: &[
            Level::Compressed { dim: Some(2) },
            Level::Compressed { dim: Some(0) },
            Level::Compressed { dim: Some(1) },
        ],
    },
    Encoding {
        name: "DCC",
        text: "(i, j, k) -> (i : dense, j : compressed, k : compressed)",
        levels: &[
            Level::Dense { dim: Some(0) },
            Level::Compressed { dim: Some(1) },
            Level::Compressed { dim: Some(2) },
        ],
    },
    Encoding {
        name: "DDC",
        text: "(i, j, k) -> (i : dense, j : dense, k : compressed)",
        levels: &[Level::Dense { dim: Some(0) }, Level::Dense { dim: Some(1) }, Level::Compressed { dim: Some(2) }],
    },
    Encoding {
        name: "BATCH",
        text: "(i, j, k) -> (i : batch, j : dense, k : compressed)",
        levels: &[Level::Dense { dim: Some(0) }, Level::Dense { dim: Some(1) }, Level::Compressed { dim: Some(2) }],
    },
    Encoding {
        name: "COO3",
        text: "(i, j, k) -> (i : compressed(nonunique), j : singleton(nonunique), k : singleton)",
        levels: &[
            Level::Compressed { dim: Some(0) },
            Level::Singleton { dim: Some(1) },
            Level::Singleton { dim: Some(2) },
        ],
    },
    Encoding {
        name: "DENSE3",
        text: "(i, j, k) -> (i : dense, j : dense, k : dense)",
        levels: &[Level::Dense { dim: Some(0) }, Level::Dense { dim: Some(1) }, Level::Dense { dim: Some(2) }],
    },
];

/// A kernel over a 3-D tensor parameter `A` in the encoding `enc`, its
/// entries (FROSTT text with the extended header that gives its sizes)
/// pushed onto `matrices`.
fn tensor3_kernel(
    g: &mut Gen,
    enc: &Encoding,
    widths: &str,
    elem: &str,
    matrices: &mut Vec<(String, String)>,
) -> String {
    let dims: Vec<i64> = (0..3).map(|_| *g.tape.pick(&[1i64, 2, 3, 4, 0, 5])).collect();
    let mut entries = Vec::new();
    for i in 0..dims[0] {
        for j in 0..dims[1] {
            for k in 0..dims[2] {
                if g.tape.below(3) == 0 {
                    let x = float_value(&mut g.tape);
                    entries.push((i, j, k, if x == 0.0 { 1.0 } else { x }));
                }
            }
        }
    }
    let mut tns = format!("3 {}\n{} {} {}\n", entries.len(), dims[0], dims[1], dims[2]);
    for (i, j, k, x) in &entries {
        let _ = writeln!(tns, "{} {} {} {x}", i + 1, j + 1, k + 1);
    }
    matrices.push(("A".to_string(), tns));
    let mut body = tensor_case(g, enc, (dims[0], dims[1]));
    if elem == "f16" {
        body = body.replace("reduce(+, 0)", "reduceSeq(+, 0)");
    }
    format!(
        "// {}\n#E = #sparse_tensor.encoding<{{ map = {}{widths} }}>\n\nfun(A: tensor<?x?x?x{elem}, #E> =>\n  {body})\n",
        enc.name, enc.text
    )
}

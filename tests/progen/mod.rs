//! A generator of random well-typed heddle programs, with inputs (issue 16).
//!
//! Generation is type-directed: [`Gen::expr`] writes an expression of a
//! requested type from the variables in scope, choosing among the patterns
//! that can produce that type (every pattern of `prims.sig`: maps of every
//! kind, reductions, zip, split/join, transpose, slide, pad, gather, scatter,
//! generate, iterate, the address-space wrappers, interleave, scatterAdd,
//! union/intersect/compressAdd/compressLast, nested: n-way co-iteration, their rows reduced, zipped,
//! padded or filtered; unzip, asVector/asScalar with lane-wise arithmetic,
//! mapWorkgroup/mapLocal through local memory, reductions without an
//! initial value), over dense inputs, position-dependent CSR
//! rows and `tensor<…, #ENC>` parameters of rank 2 and 3 in random encodings, and returning
//! dense, nested, position-dependent or counted (sparse) results. Array
//! lengths are tracked symbolically ([`Len`]): two arrays are zipped only
//! when their lengths were built the same way, so the type checker accepts
//! every program unless it has a bug.
//!
//! Every random choice is drawn from a [`Tape`]. Replaying a recorded tape
//! rebuilds the same case; replaying a shorter or smaller one (a draw past
//! the end reads 0, and choice 0 is always the simplest option) builds a
//! simpler one, which is how [`shrink`] minimises a failing case. A
//! construct added to the generator refines an old choice from what is left
//! of its draw ([`Tape::below_split`], `weighted_split`), 0 meaning the old
//! construct: a program that never meets it is the program it was.
//!
//! Modules: `tape` (the choices), `scalars` (numbers, booleans,
//! conversions, reductions), `arrays` (layout patterns, maps, vectors,
//! work-groups), `defs` (top-level definitions and their uses), `sparse`
//! (co-iteration, workspaces, structured results, tensor parameters of rank
//! 2 and 3), `tensors` (DIA, ELL, `BSR(r, c)`, named and TACO spellings,
//! rank 4, sparse vectors, integer, complex and half values), `dialect`
//! (skyline and n:m structured levels, dimension slices, `explicitVal` and
//! `implicitVal`, static sizes, rank 5, stored results of rank 3, tensor
//! kernels with definitions, tensors bound from `.npz` and `.json` files).
//!
//! Not drawn (yet): type annotations but of maps' results, `mapGlobal`'s
//! and `mapWorkgroup`'s dimension argument (2-D schedules), `scatterAdd` of
//! tuples and rows, the `bool` and `index` conversions and the `f32`/`f64`/
//! `i32`/`half` spellings, `filter` outside the counted rows, SELL (a
//! rewrite of a dense kernel by `heddle run --encoding A=SELL(C)`, not an
//! encoding a kernel can name: `tests/it/sell_front_door.rs` checks it on
//! every backend), tensors of rank 6 and more, a slice whose window is
//! given by `?` (refused: nothing could supply it), `explicitVal` with
//! values that are not numbers of the tensor's type, the symmetric skyline
//! (not there yet), stored results in DIA, skyline or n:m encodings,
//! and `.npz` archives of `bsr` and `dia` format (the test writes `coo` and
//! `csr`).
//! A vector's first level cannot be a singleton (the encoding's verifier
//! refuses it, as MLIR's does).

#![allow(dead_code)]

mod arrays;
mod defs;
mod dialect;
mod scalars;
mod sparse;
mod tape;
mod tensors;

pub use dialect::{Form, Sell};
use sparse::*;
use std::fmt::Write as _;
pub use tape::Tape;

/// An array length as the generator knows it: how it was built.
#[derive(Clone, Debug, PartialEq)]
pub enum Len {
    /// A kernel natural: `n`, `m`, `A_dim0`, …
    Nat(&'static str),
    /// A literal.
    Lit(u32),
    /// `split(k)`'s number of chunks.
    Div(Box<Len>, u32),
    /// `join`'s length.
    Mul(Box<Len>, Box<Len>),
    /// `pad(l, r, _)`'s length.
    Pad(u32, Box<Len>, u32),
    /// `concat`'s length: the sum of its arrays' lengths.
    Add(Box<Len>, Box<Len>),
    /// `slide(size, step)`'s number of windows.
    Slide(Box<Len>, u32, u32),
    /// A length no formula gives: a row of a position-dependent array, a
    /// counted length. Only the array it was made for has it.
    Opaque(u32),
    /// The rows of a position-dependent array: each element gets its own
    /// opaque length when taken out.
    PerPosition(u32),
}

impl Len {
    /// The length as a natural in program text, if it can be written.
    pub(super) fn text(&self) -> Option<String> {
        Some(match self {
            Len::Nat(n) => n.to_string(),
            Len::Lit(k) => k.to_string(),
            Len::Div(l, k) => format!("({}) / {k}", l.text()?),
            Len::Mul(a, b) => format!("({}) * ({})", a.text()?, b.text()?),
            Len::Pad(l, x, r) => format!("{l} + ({}) + {r}", x.text()?),
            Len::Add(a, b) => format!("({}) + ({})", a.text()?, b.text()?),
            Len::Slide(x, size, step) => format!("(({}) - {size}) / {step} + 1", x.text()?),
            Len::Opaque(_) | Len::PerPosition(_) => return None,
        })
    }
    /// Whether the type checker sees that the length is 0 (a literal 0, a
    /// product with one): a `reduce` without an initial value of such an
    /// array is a type error.
    pub(super) fn statically_zero(&self) -> bool {
        match self {
            Len::Lit(k) => *k == 0,
            Len::Mul(a, b) => a.statically_zero() || b.statically_zero(),
            Len::Add(a, b) => a.statically_zero() && b.statically_zero(),
            Len::Pad(l, x, r) => *l == 0 && *r == 0 && x.statically_zero(),
            Len::Div(l, k) => l.statically_zero() || l.value(&[]).is_some_and(|v| v < i64::from(*k)),
            Len::Nat(_) | Len::Slide(..) | Len::Opaque(_) | Len::PerPosition(_) => false,
        }
    }
    /// Its value for the case's naturals, if it has one.
    pub(super) fn value(&self, nats: &[(&'static str, i64)]) -> Option<i64> {
        Some(match self {
            Len::Nat(n) => nats.iter().find(|(x, _)| x == n)?.1,
            Len::Lit(k) => i64::from(*k),
            Len::Div(l, k) => l.value(nats)? / i64::from(*k),
            Len::Mul(a, b) => a.value(nats)? * b.value(nats)?,
            Len::Pad(l, x, r) => i64::from(*l) + x.value(nats)? + i64::from(*r),
            Len::Add(a, b) => a.value(nats)? + b.value(nats)?,
            Len::Slide(x, size, step) => (x.value(nats)? - i64::from(*size)).div_euclid(i64::from(*step)) + 1,
            Len::Opaque(_) | Len::PerPosition(_) => return None,
        })
    }
}

/// A type as the generator knows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    /// `float`.
    F,
    /// `int`.
    I,
    /// `bool`.
    B,
    /// A tuple.
    Tuple(Vec<Ty>),
    /// An array.
    Arr(Box<Ty>, Len),
    /// One of the other scalar types ([`EXTRA_SCALARS`]: narrow and wide,
    /// signed and unsigned integers, `double`, the half floats, complex
    /// numbers), by its name in program text. A case uses at most one.
    S(&'static str),
}

/// The scalar types beyond `int`, `float` and `bool` that a case may use
/// (one per case: [`Gen::extra`]), each beside the others' conversions.
pub const EXTRA_SCALARS: &[&str] =
    &["i8", "u8", "i16", "u16", "i64", "u64", "u32", "double", "f16", "bf16", "complex<f32>", "complex<f64>"];

fn is_int_s(name: &str) -> bool {
    name.starts_with('i') || name.starts_with('u')
}
fn is_unsigned_s(name: &str) -> bool {
    name.starts_with('u')
}
fn is_complex_s(name: &str) -> bool {
    name.starts_with("complex")
}
/// Half floats: a sum's rounding depends on its order, so their reductions
/// are sequential (`reduce` may reassociate, and the test compares a float
/// to 1e-4, not to a half's 1e-3).
fn is_half_s(name: &str) -> bool {
    name == "f16" || name == "bf16"
}

impl Ty {
    /// Whether a sum of such values is the same in any order (up to the
    /// test's 1e-4 for floats): every type but the half floats.
    pub(super) fn reassociates(&self) -> bool {
        !matches!(self, Ty::S(s) if is_half_s(s))
    }
    /// Whether values of the type have an order (`<`, `max`, sort keys).
    pub(super) fn ordered(&self) -> bool {
        match self {
            Ty::F | Ty::I => true,
            Ty::S(s) => !is_complex_s(s),
            _ => false,
        }
    }
}

impl Ty {
    /// The type in program text, if it can be written (no length that only
    /// a position-dependent array or a count has).
    pub(super) fn text(&self) -> Option<String> {
        Some(match self {
            Ty::F => "float".to_string(),
            Ty::I => "int".to_string(),
            Ty::B => "bool".to_string(),
            Ty::S(s) => s.to_string(),
            Ty::Tuple(ts) => format!("({})", ts.iter().map(Ty::text).collect::<Option<Vec<_>>>()?.join(", ")),
            Ty::Arr(e, l) => format!("[{}]_{{{}}}", e.text()?, l.text()?),
        })
    }
}

fn arr(t: Ty, l: Len) -> Ty {
    Ty::Arr(Box::new(t), l)
}
/// One generated test case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The program.
    pub source: String,
    /// The naturals' values (those that input lengths give too).
    pub nats: Vec<(&'static str, i64)>,
    /// Inputs as JSON, by parameter name.
    pub inputs: Vec<(String, serde_json::Value)>,
    /// Tensor parameters: name and Matrix Market text (FROSTT `.tns` text
    /// with its sizes in the extended header for a 3-D tensor).
    pub matrices: Vec<(String, String)>,
    /// The other scalar type the case uses (the type of its parameter `es`), if any.
    pub extra: Option<&'static str>,
    /// The tensor parameters bound from another file than their text (a
    /// `.npz` archive of the same entries, or heddle's `.json` storage of
    /// the text's tensor), by name.
    pub forms: Vec<(String, Form)>,
    /// A dense SpMV also run with its matrix `A` packed as SELL-C(-σ)
    /// (`heddle run --encoding A=SELL(…)`), the result the same.
    pub sell: Option<Sell>,
}

impl Case {
    /// The case as one text: the program, then its inputs as comments (what
    /// a regression test file holds).
    pub fn describe(&self) -> String {
        let mut s = self.source.clone();
        for (k, v) in &self.nats {
            let _ = writeln!(s, "// {k} = {v}");
        }
        for (k, v) in &self.inputs {
            let _ = writeln!(s, "// input {k} = {v}");
        }
        for (k, v) in &self.matrices {
            let _ = writeln!(s, "// matrix {k} =\n//   {}", v.trim_end().replace('\n', "\n//   "));
        }
        if let Some(sell) = &self.sell {
            let _ = writeln!(
                s,
                "// also run as heddle run --encoding 'A={}' --matrix A=A.mtx, A.mtx =\n//   {}",
                sell.spec,
                sell.mtx.trim_end().replace('\n', "\n//   ")
            );
        }
        for (k, form) in &self.forms {
            match form {
                Form::Npz(bytes) => {
                    let _ = writeln!(
                        s,
                        "// matrix {k} is bound from a .npz archive of those entries ({} bytes)",
                        bytes.len()
                    );
                }
                Form::Json => {
                    let _ = writeln!(s, "// matrix {k} is bound from heddle's .json storage of that file");
                }
                Form::Text => {}
            }
        }
        s
    }
}

struct Var {
    name: String,
    ty: Ty,
}

/// An integer expression known to lie in `0 .. len`.
struct Index {
    text: String,
    len: Len,
}

/// The generator's state for one case.
pub struct Gen {
    tape: Tape,
    vars: Vec<Var>,
    indices: Vec<Index>,
    nats: Vec<(&'static str, i64)>,
    names: u32,
    opaque: u32,
    /// Remaining size: each construct spends some; at 0 only leaves remain.
    fuel: i32,
    /// The case's other scalar type (`Ty::S`), if it has one. Every choice
    /// that involves it is drawn only then, so a case without one draws what
    /// it drew before the generator knew of them (the seeds that tests name
    /// keep their programs).
    extra: Option<Ty>,
    /// Where the expression being written stands, for the OpenCL schedules
    /// (`mapWorkgroup` at the top, `mapLocal` inside it).
    ctx: Ctx,
    /// The definitions drawn so far (`defs`): a case's, or while one is
    /// written, those before it.
    defs: Vec<defs::Def>,
    /// Whether a definition's body is being written: no natural is in scope,
    /// so intermediate arrays have literal lengths.
    in_def: bool,
}

/// Where an expression stands with respect to the work-group maps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ctx {
    /// The kernel's body, inside no function: a `mapWorkgroup` may start here.
    Top,
    /// The body of a `mapWorkgroup`'s function: its maps may be `mapLocal`.
    Workgroup,
    /// Anywhere else (inside a map's, a generate's or a `let`'s body, …).
    Other,
}

const FLOATS: [&str; 9] = ["0.0", "1.0", "0.5", "2.0", "0.25", "1.5", "(-1.0)", "(-0.5)", "(-2.0)"];

fn float_value(t: &mut Tape) -> f64 {
    let k = t.below(17) as i64 - 8;
    k as f64 / 4.0
}

impl Gen {
    pub(super) fn fresh(&mut self, base: &str) -> String {
        const CONVERSIONS: &[&str] = &["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"];
        loop {
            self.names += 1;
            let name = format!("{base}{}", self.names);
            // A binder `i8` would hide the conversion `i8(…)` (seed 500331); only
            // a case with another scalar type converts, so only it skips them
            // (the others keep their names).
            if self.extra.is_none() || !CONVERSIONS.contains(&name.as_str()) {
                return name;
            }
        }
    }
    pub(super) fn opaque(&mut self) -> Len {
        self.opaque += 1;
        Len::Opaque(self.opaque)
    }
    /// `f` with `name: ty` in scope, which is inside a function or a `let`
    /// ([`Ctx::Other`]).
    pub(super) fn with_var<T>(&mut self, name: &str, ty: Ty, f: impl FnOnce(&mut Gen) -> T) -> T {
        self.with_var_in(name, ty, Ctx::Other, f)
    }
    /// `f` with `name: ty` in scope, in the context `ctx`.
    pub(super) fn with_var_in<T>(&mut self, name: &str, ty: Ty, ctx: Ctx, f: impl FnOnce(&mut Gen) -> T) -> T {
        self.vars.push(Var { name: name.to_string(), ty });
        let outer = std::mem::replace(&mut self.ctx, ctx);
        let out = f(self);
        self.ctx = outer;
        self.vars.pop();
        out
    }
    pub(super) fn with_index<T>(&mut self, text: &str, len: Len, f: impl FnOnce(&mut Gen) -> T) -> T {
        self.indices.push(Index { text: text.to_string(), len });
        let out = f(self);
        self.indices.pop();
        out
    }
    pub(super) fn vars_of(&self, ty: &Ty) -> Vec<String> {
        self.vars.iter().filter(|v| &v.ty == ty).map(|v| v.name.clone()).collect()
    }
    pub(super) fn spend(&mut self, k: i32) -> bool {
        self.fuel -= k;
        self.fuel > 0
    }
}

/// The kernel's parameters: dense inputs over `n` and `m`, an index array
/// `is` (values in `0 .. n`), a permutation `perm`, and two packed CSR
/// matrices of `n` rows over `m` columns.
const PARAMS: &[&str] = &[
    "nFun(n =>",
    "nFun(m =>",
    "fun(xs: [float]_n =>",
    "fun(ys: [float]_n =>",
    "fun(zs: [float]_m =>",
    "fun(ks: [int]_n =>",
    "fun(mat: [[float]_m]_n =>",
    "fun(is: [int]_n =>",
    "fun(perm: [int]_n =>",
    "fun(o: [int]_{n + 1} =>",
    "fun(v: [i -> [(int, float)]_{toNat(o@(i + 1) - o@i)}]_n =>",
    "fun(q: [int]_{n + 1} =>",
    "fun(w: [i -> [(int, float)]_{toNat(q@(i + 1) - q@i)}]_n =>",
];

/// The kernel around `body`, with a parameter `es: [T]_n` of the case's
/// other scalar type `T` if it has one.
fn kernel(body: &str, extra: Option<&Ty>) -> String {
    let mut params: Vec<String> = PARAMS.iter().map(|p| p.to_string()).collect();
    if let Some(Ty::S(s)) = extra {
        params.push(format!("fun(es: [{s}]_n =>"));
    }
    format!("{}\n  {body}{}\n", params.join("\n"), ")".repeat(params.len()))
}

fn dense_vars() -> Vec<Var> {
    let v = |name: &str, ty: Ty| Var { name: name.to_string(), ty };
    vec![
        v("xs", arr(Ty::F, Len::Nat("n"))),
        v("ys", arr(Ty::F, Len::Nat("n"))),
        v("zs", arr(Ty::F, Len::Nat("m"))),
        v("ks", arr(Ty::I, Len::Nat("n"))),
        v("mat", arr(arr(Ty::F, Len::Nat("m")), Len::Nat("n"))),
    ]
}

/// An input value of the scalar type `s`: small numbers, and for the
/// integers now and then the ends of their range, where arithmetic wraps.
fn extra_value(t: &mut Tape, s: &str) -> serde_json::Value {
    if is_complex_s(s) {
        return serde_json::json!([float_value(t), float_value(t)]);
    }
    if !is_int_s(s) {
        return serde_json::json!(float_value(t));
    }
    let (lo, hi): (i128, i128) = match s {
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "u8" => (0, u8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "i64" => (i64::MIN.into(), i64::MAX.into()),
        _ => (0, u64::MAX.into()),
    };
    let x: i128 = match t.below(8) {
        0 => hi,
        1 => lo,
        2 => hi - 1,
        _ => (t.below(9) as i128 - 4).clamp(lo, hi),
    };
    if x < 0 { serde_json::json!(x as i64) } else { serde_json::json!(x as u64) }
}

/// The result type of a case: a number, a dense array, a nested array, a
/// tuple array, or one of the structured results (position-dependent rows,
/// counted sparse rows) made by [`structured_result`].
fn result_ty(t: &mut Tape) -> Ty {
    match t.weighted(&[3, 6, 2, 2, 1, 1, 1]) {
        1 => arr(Ty::F, Len::Nat("n")),
        2 => arr(arr(Ty::F, Len::Nat("m")), Len::Nat("n")),
        3 => arr(Ty::I, Len::Nat("n")),
        4 => arr(Ty::Tuple(vec![Ty::F, Ty::I]), Len::Nat("m")),
        5 => arr(Ty::F, Len::Mul(Box::new(Len::Nat("n")), Box::new(Len::Nat("m")))),
        6 => arr(arr(Ty::F, Len::Lit(2)), Len::Div(Box::new(Len::Nat("n")), 2)),
        _ => Ty::F,
    }
}

/// A size for a natural or a tensor's dimension: small, often 0 or 1.
fn size(t: &mut Tape) -> i64 {
    *t.pick(&[0i64, 1, 1, 2, 3, 4, 5, 8, 17])
}

/// The case drawn from `tape`.
pub fn case(tape: Tape) -> Case {
    build(tape).0
}

/// The case drawn from `tape`, which afterwards holds the record of what was drawn.
pub fn case_with(tape: &mut Tape) -> Case {
    let (case, used) = build(std::mem::replace(tape, Tape::replaying(Vec::new())));
    *tape = used;
    case
}

fn build(tape: Tape) -> (Case, Tape) {
    let mut g = Gen {
        tape,
        vars: dense_vars(),
        indices: Vec::new(),
        nats: Vec::new(),
        names: 0,
        opaque: 0,
        fuel: 0,
        extra: None,
        ctx: Ctx::Top,
        defs: Vec::new(),
        in_def: false,
    };
    let n = 2 * g.tape.below(5) as i64 + if g.tape.below(5) == 0 { 1 } else { 0 };
    let n = if g.tape.below(6) == 0 { size(&mut g.tape) } else { n };
    let m = size(&mut g.tape);
    g.nats = vec![("n", n), ("m", m)];
    g.fuel = 4 + g.tape.below(40) as i32;
    // The kind of case, and from the rest of the same draw whether a dense
    // case has another scalar type (one in two), and which: drawing no
    // more, so that cases without one are the programs they were.
    let (k, rest) = g.tape.below_split(14);
    let kind = match k {
        0..=9 => 0,
        10..=11 => 1,
        _ => 2,
    };
    // From the rest of the same draw, two tensor cases in five, and one
    // dense case in ten, are tensor kernels of the rest of the sparse
    // dialect (`dialect`).
    let dialect = (kind == 2 && rest % 5 < 2) || (kind == 0 && rest / 72 % 10 == 9);
    // And one dense case in twenty a dense SpMV run under `--encoding
    // A=SELL(…)` (kind 3).
    let sell = kind == 0 && rest / 72 % 20 == 8;
    let kind = if dialect {
        2
    } else if sell {
        3
    } else {
        kind
    };
    if kind == 0 && rest % 2 == 0 {
        g.extra = Some(Ty::S(EXTRA_SCALARS[(rest / 2 % EXTRA_SCALARS.len() as u64) as usize]));
        let s = g.extra.clone().expect("just set");
        g.vars.push(Var { name: "es".to_string(), ty: arr(s, Len::Nat("n")) });
    }
    // From the rest of the same draw, whether a dense case has definitions
    // (one in three).
    let defs = if kind == 0 && rest / 24 % 3 == 1 { g.definitions() } else { String::new() };
    let mut matrices = Vec::new();
    let mut tensor_inputs = Vec::new();
    let mut forms = Vec::new();
    let mut sell = None;
    let source = match kind {
        3 => {
            let (source, spec) = dialect::sell_kernel(&mut g, &mut tensor_inputs);
            sell = Some(spec);
            source
        }
        1 => kernel(&structured_result(&mut g), None),
        2 if dialect => dialect::kernel(&mut g, &mut matrices, &mut tensor_inputs, &mut forms),
        2 => tensor_kernel(&mut g, &mut matrices, &mut tensor_inputs),
        _ => {
            let ty = match g.extra.clone() {
                // Results of the other scalar type: a number, an array, a tuple array.
                Some(e) if g.tape.below(2) == 0 => match g.tape.below(3) {
                    0 => e,
                    1 => arr(e, Len::Nat("n")),
                    _ => arr(Ty::Tuple(vec![e, Ty::I]), Len::Nat("m")),
                },
                _ => result_ty(&mut g.tape),
            };
            let body = g.expr(&ty);
            let text = kernel(&body, g.extra.as_ref());
            if defs.is_empty() { text } else { format!("{defs}\n{text}") }
        }
    };
    let mut inputs = tensor_inputs;
    if kind < 2 {
        let t = &mut g.tape;
        let floats = |t: &mut Tape, k: i64| serde_json::json!((0..k).map(|_| float_value(t)).collect::<Vec<_>>());
        inputs.push(("xs".to_string(), floats(t, n)));
        inputs.push(("ys".to_string(), floats(t, n)));
        inputs.push(("zs".to_string(), floats(t, m)));
        inputs.push(("ks".to_string(), serde_json::json!((0..n).map(|_| t.below(9) as i64 - 4).collect::<Vec<_>>())));
        inputs.push((
            "mat".to_string(),
            serde_json::json!((0..n).map(|_| (0..m).map(|_| float_value(t)).collect::<Vec<_>>()).collect::<Vec<_>>()),
        ));
        inputs
            .push(("is".to_string(), serde_json::json!((0..n).map(|_| t.below(n as u64) as i64).collect::<Vec<_>>())));
        let mut perm: Vec<i64> = (0..n).collect();
        for k in (1..perm.len()).rev() {
            perm.swap(k, t.below(k as u64 + 1) as usize);
        }
        inputs.push(("perm".to_string(), serde_json::json!(perm)));
        let (o, v) = packed(&random_rows(t, n, m));
        inputs.push(("o".to_string(), o));
        inputs.push(("v".to_string(), v));
        let (q, w) = packed(&random_rows(t, n, m));
        inputs.push(("q".to_string(), q));
        inputs.push(("w".to_string(), w));
        if let Some(Ty::S(s)) = &g.extra {
            let es: Vec<serde_json::Value> = (0..n).map(|_| extra_value(&mut g.tape, s)).collect();
            inputs.push(("es".to_string(), serde_json::json!(es)));
        }
    }
    let nats = match kind {
        2 => Vec::new(),
        3 => sell.as_ref().map(|s: &Sell| vec![("n", s.rows), ("m", s.cols)]).unwrap_or_default(),
        _ => g.nats.clone(),
    };
    let extra = match g.extra {
        Some(Ty::S(s)) => Some(s),
        _ => None,
    };
    (Case { source, nats, inputs, matrices, extra, forms, sell }, g.tape)
}

/// Minimises a failing tape: drops runs of choices and lowers values while
/// `fails` still holds of the case they build. The smallest failing tape.
pub fn shrink(tape: Vec<u64>, fails: &mut dyn FnMut(&Case) -> bool) -> Vec<u64> {
    let mut best = tape;
    let mut improved = true;
    let mut rounds = 0;
    while improved && rounds < 8 {
        improved = false;
        rounds += 1;
        // Drop chunks, largest first.
        let mut chunk = best.len().max(1).next_power_of_two();
        while chunk >= 1 {
            let mut at = 0;
            while at < best.len() {
                let mut candidate = best.clone();
                candidate.drain(at..(at + chunk).min(candidate.len()));
                if fails(&case(Tape::replaying(candidate.clone()))) {
                    best = candidate;
                    improved = true;
                } else {
                    at += chunk;
                }
            }
            chunk /= 2;
        }
        // Lower each value: to 0, then halve.
        for k in 0..best.len() {
            for smaller in [0, best[k] / 2, best[k].saturating_sub(1)] {
                if smaller < best[k] {
                    let mut candidate = best.clone();
                    candidate[k] = smaller;
                    if fails(&case(Tape::replaying(candidate.clone()))) {
                        best = candidate;
                        improved = true;
                        break;
                    }
                }
            }
        }
    }
    best
}

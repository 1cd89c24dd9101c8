//! A generator of random well-typed heddle programs, with inputs (issue 16).
//!
//! Generation is type-directed: [`Gen::expr`] writes an expression of a
//! requested type from the variables in scope, choosing among the patterns
//! that can produce that type (every pattern of `prims.sig`: maps of every
//! kind, reductions, zip, split/join, transpose, slide, pad, gather, scatter,
//! generate, iterate, the address-space wrappers, interleave, scatterAdd,
//! union/intersect/compressAdd, nested: n-way co-iteration, their rows reduced, zipped,
//! padded or filtered), over dense inputs, position-dependent CSR
//! rows and `tensor<…, #ENC>` parameters in random encodings, and returning
//! dense, nested, position-dependent or counted (sparse) results. Array
//! lengths are tracked symbolically ([`Len`]): two arrays are zipped only
//! when their lengths were built the same way, so the type checker accepts
//! every program unless it has a bug.
//!
//! Every random choice is drawn from a [`Tape`]. Replaying a recorded tape
//! rebuilds the same case; replaying a shorter or smaller one (a draw past
//! the end reads 0, and choice 0 is always the simplest option) builds a
//! simpler one, which is how [`shrink`] minimises a failing case.

#![allow(dead_code)]

use std::fmt::Write as _;

/// The random choices of one case.
#[derive(Clone, Debug)]
pub struct Tape {
    state: u64,
    replay: Option<Vec<u64>>,
    pos: usize,
    /// Every value drawn, in order.
    pub drawn: Vec<u64>,
}

impl Tape {
    /// Fresh choices from `seed`.
    pub fn seeded(seed: u64) -> Tape {
        Tape { state: seed ^ 0x9E37_79B9_7F4A_7C15, replay: None, pos: 0, drawn: Vec::new() }
    }
    /// The choices of `values`, then zeros.
    pub fn replaying(values: Vec<u64>) -> Tape {
        Tape { state: 0, replay: Some(values), pos: 0, drawn: Vec::new() }
    }
    fn draw(&mut self) -> u64 {
        let v = match &self.replay {
            Some(r) => r.get(self.pos).copied().unwrap_or(0),
            None => {
                // splitmix64
                self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = self.state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            }
        };
        self.pos += 1;
        self.drawn.push(v);
        v
    }
    /// A number in `0 .. n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.draw() % n }
    }
    /// A number in `0 .. n` and what is left of the draw (`draw / n`): a
    /// second choice that costs no draw of its own, so that a choice added
    /// on top of an old one leaves every other case's draws as they were.
    pub fn below_split(&mut self, n: u64) -> (u64, u64) {
        if n == 0 {
            return (0, 0);
        }
        let v = self.draw();
        (v % n, v / n)
    }
    /// Index of an option, chosen with the given weights (index 0 is the
    /// simplest option, the one a replayed 0 picks).
    fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut x = self.below(u64::from(total.max(1))) as u32;
        for (k, w) in weights.iter().enumerate() {
            if x < *w {
                return k;
            }
            x -= w;
        }
        0
    }
    /// One of `items`.
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

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
    fn text(&self) -> Option<String> {
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
    /// Its value for the case's naturals, if it has one.
    fn value(&self, nats: &[(&'static str, i64)]) -> Option<i64> {
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
    fn reassociates(&self) -> bool {
        !matches!(self, Ty::S(s) if is_half_s(s))
    }
    /// Whether values of the type have an order (`<`, `max`, sort keys).
    fn ordered(&self) -> bool {
        match self {
            Ty::F | Ty::I => true,
            Ty::S(s) => !is_complex_s(s),
            _ => false,
        }
    }
}

fn arr(t: Ty, l: Len) -> Ty {
    Ty::Arr(Box::new(t), l)
}

/// A tensor encoding the generator can write kernels over: its text and the
/// kinds of its levels in storage order.
struct Encoding {
    name: &'static str,
    text: &'static str,
    levels: &'static [Level],
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Level {
    /// `dense` / `batch`: `[T]_size`, indexed by coordinate (the level's size
    /// is the dimension's when `dim` is given).
    Dense { dim: Option<usize> },
    /// `compressed` / `loose_compressed` / `structured`: `[p -> (int, T)]`,
    /// coordinates `< dims[dim]` when `dim` is given.
    Compressed { dim: Option<usize> },
    /// `singleton`: `(int, T)`.
    Singleton { dim: Option<usize> },
}

const ENCODINGS: &[Encoding] = &[
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

/// One generated test case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The program.
    pub source: String,
    /// The naturals' values (those that input lengths give too).
    pub nats: Vec<(&'static str, i64)>,
    /// Inputs as JSON, by parameter name.
    pub inputs: Vec<(String, serde_json::Value)>,
    /// Tensor parameters: name and Matrix Market text.
    pub matrices: Vec<(String, String)>,
    /// The other scalar type the case uses (the type of its parameter `es`), if any.
    pub extra: Option<&'static str>,
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
}

const FLOATS: [&str; 9] = ["0.0", "1.0", "0.5", "2.0", "0.25", "1.5", "(-1.0)", "(-0.5)", "(-2.0)"];

fn float_value(t: &mut Tape) -> f64 {
    let k = t.below(17) as i64 - 8;
    k as f64 / 4.0
}

impl Gen {
    fn fresh(&mut self, base: &str) -> String {
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
    fn opaque(&mut self) -> Len {
        self.opaque += 1;
        Len::Opaque(self.opaque)
    }
    fn with_var<T>(&mut self, name: &str, ty: Ty, f: impl FnOnce(&mut Gen) -> T) -> T {
        self.vars.push(Var { name: name.to_string(), ty });
        let out = f(self);
        self.vars.pop();
        out
    }
    fn with_index<T>(&mut self, text: &str, len: Len, f: impl FnOnce(&mut Gen) -> T) -> T {
        self.indices.push(Index { text: text.to_string(), len });
        let out = f(self);
        self.indices.pop();
        out
    }
    fn vars_of(&self, ty: &Ty) -> Vec<String> {
        self.vars.iter().filter(|v| &v.ty == ty).map(|v| v.name.clone()).collect()
    }
    fn spend(&mut self, k: i32) -> bool {
        self.fuel -= k;
        self.fuel > 0
    }

    /// Any expression of type `ty`.
    pub fn expr(&mut self, ty: &Ty) -> String {
        match ty {
            Ty::F | Ty::I | Ty::S(_) => self.number(ty),
            Ty::B => self.boolean(),
            Ty::Tuple(ts) => {
                let vars = self.vars_of(ty);
                if !vars.is_empty() && self.tape.below(2) == 0 {
                    return self.tape.pick(&vars).clone();
                }
                let parts: Vec<String> = ts.iter().map(|t| self.expr(t)).collect();
                format!("({})", parts.join(", "))
            }
            Ty::Arr(elem, len) => self.array(elem, len),
        }
    }

    fn literal(&mut self, ty: &Ty) -> String {
        match ty {
            Ty::F => self.tape.pick(&FLOATS).to_string(),
            // A literal of another scalar type is a conversion of one, so
            // that no context has to decide its type.
            Ty::S(s) if is_complex_s(s) => {
                let (re, im) = (self.literal(&Ty::F), self.literal(&Ty::F));
                if *s == "complex<f64>" {
                    format!("complex(double({re}), double({im}))")
                } else {
                    format!("complex({re}, {im})")
                }
            }
            Ty::S(s) if is_int_s(s) => {
                let k = self.literal(&Ty::I);
                format!("{s}({k})")
            }
            Ty::S(s) => {
                let x = self.literal(&Ty::F);
                format!("{s}({x})")
            }
            _ => {
                let k = self.tape.below(9) as i64 - 2;
                if k < 0 { format!("({k})") } else { k.to_string() }
            }
        }
    }

    fn number(&mut self, ty: &Ty) -> String {
        let vars = self.vars_of(ty);
        let ints: Vec<String> = if *ty == Ty::I {
            self.indices.iter().map(|i| i.text.clone()).chain(self.nats.iter().map(|(n, _)| n.to_string())).collect()
        } else {
            Vec::new()
        };
        if !self.spend(1) {
            return match (vars.is_empty(), ints.is_empty()) {
                (false, _) => self.tape.pick(&vars).clone(),
                (true, false) => self.tape.pick(&ints).clone(),
                _ => self.literal(ty),
            };
        }
        let has_index = self
            .indices
            .iter()
            .any(|i| self.vars.iter().any(|v| matches!(&v.ty, Ty::Arr(e, l) if **e == *ty && *l == i.len)));
        // What the case's other scalar type adds (all 0 without one).
        let (int_like, complex, extra) = match ty {
            Ty::S(s) => (is_int_s(s), is_complex_s(s), true),
            _ => (*ty == Ty::I, false, false),
        };
        let converts = self.extra.is_some() && matches!(ty, Ty::F | Ty::I | Ty::S(_));
        let weights = [
            2,                                                    // 0 literal
            if vars.is_empty() { 0 } else { 6 },                  // 1 variable
            if ints.is_empty() { 0 } else { 3 },                  // 2 index or natural
            6,                                                    // 3 binary arithmetic
            1,                                                    // 4 negation
            2,                                                    // 5 select
            5,                                                    // 6 reduction
            if has_index { 4 } else { 0 },                        // 7 indexing
            2,                                                    // 8 projection
            1,                                                    // 9 let
            1,                                                    // 10 iterate
            if int_like { 1 } else { 0 },                         // 11 division by a constant
            if complex { 0 } else { 1 },                          // 12 min / max
            if converts { if extra { 3 } else { 2 } } else { 0 }, // 13 a conversion
            if extra && !int_like { 2 } else { 0 },               // 14 division, conj
        ];
        match self.tape.weighted(&weights) {
            1 => self.tape.pick(&vars).clone(),
            2 => self.tape.pick(&ints).clone(),
            3 => {
                let op = self.tape.pick(&["+", "-", "*"]);
                // Keep integer products small: one side is a literal.
                let a = self.number(ty);
                let b = if *op == "*" && *ty == Ty::I { self.literal(ty) } else { self.number(ty) };
                format!("({a} {op} {b})")
            }
            4 => format!("-({})", self.number(ty)),
            13 => self.conversion(ty),
            14 => {
                if complex && self.tape.below(2) == 0 {
                    format!("conj({})", self.number(ty))
                } else {
                    let (a, b) = (self.number(ty), self.number(ty));
                    format!("({a} / {b})")
                }
            }
            5 => {
                let c = self.boolean();
                let (a, b) = (self.number(ty), self.number(ty));
                format!("select({c}, {a}, {b})")
            }
            6 => self.reduction(ty),
            7 => {
                let candidates: Vec<(String, String)> = self
                    .indices
                    .iter()
                    .flat_map(|i| {
                        self.vars
                            .iter()
                            .filter(|v| matches!(&v.ty, Ty::Arr(e, l) if **e == *ty && *l == i.len))
                            .map(|v| (v.name.clone(), i.text.clone()))
                    })
                    .collect();
                let (a, i) = self.tape.pick(&candidates).clone();
                format!("{a}@({i})")
            }
            8 => {
                let other = if self.tape.below(2) == 0 { Ty::F } else { Ty::I };
                let (t, k) = if self.tape.below(2) == 0 {
                    (Ty::Tuple(vec![ty.clone(), other]), 1)
                } else {
                    (Ty::Tuple(vec![other, ty.clone()]), 2)
                };
                format!("({}).{k}", self.expr(&t))
            }
            9 => {
                let t = self.simple_ty();
                let value = self.expr(&t);
                let x = self.fresh("v");
                let body = self.with_var(&x.clone(), t, |g| g.number(ty));
                format!("(let {x} = {value} in {body})")
            }
            10 => {
                let k = self.tape.below(3);
                let x = self.fresh("a");
                let start = self.number(ty);
                let step = if int_like { format!("{x} + 3") } else { format!("{x} * 0.5 + 1.0") };
                format!("({start} :>> iterate({k}, fun({x} => {step})))")
            }
            11 => format!("({} {} {})", self.number(ty), self.tape.pick(&["/", "%"]), 1 + self.tape.below(4)),
            12 => {
                let f = self.tape.pick(&["max", "min"]);
                let (a, b) = (self.number(ty), self.number(ty));
                // `max` / `min` are operator sections: apply them to two arguments.
                format!("{f}({a}, {b})")
            }
            _ => self.literal(ty),
        }
    }

    fn boolean(&mut self) -> String {
        if !self.spend(1) {
            return self.tape.pick(&["true", "false"]).to_string();
        }
        match self.tape.weighted(&[1, 6, 2, 2]) {
            1 => {
                let t = match &self.extra {
                    Some(e) if self.tape.below(3) == 0 => e.clone(),
                    _ => {
                        if self.tape.below(2) == 0 {
                            Ty::I
                        } else {
                            Ty::F
                        }
                    }
                };
                let op = if t.ordered() {
                    *self.tape.pick(&["<", "<=", ">", ">=", "==", "!="])
                } else {
                    *self.tape.pick(&["==", "!="])
                };
                format!("({} {op} {})", self.number(&t), self.number(&t))
            }
            2 => format!("({} {} {})", self.boolean(), self.tape.pick(&["&&", "||"]), self.boolean()),
            3 => format!("!({})", self.boolean()),
            _ => self.tape.pick(&["true", "false"]).to_string(),
        }
    }

    /// A small element type for intermediate arrays.
    fn simple_ty(&mut self) -> Ty {
        let Some(extra) = self.extra.clone() else {
            return match self.tape.weighted(&[6, 3, 1]) {
                1 => Ty::I,
                2 => Ty::Tuple(vec![Ty::F, Ty::I]),
                _ => Ty::F,
            };
        };
        match self.tape.weighted(&[6, 3, 1, 4, 1]) {
            1 => Ty::I,
            2 => Ty::Tuple(vec![Ty::F, Ty::I]),
            3 => extra,
            4 => Ty::Tuple(vec![extra, Ty::I]),
            _ => Ty::F,
        }
    }

    /// A number of type `ty` converted from one of another type: to the
    /// case's other scalar type from `int` or `float` (`complex(re, im)` for
    /// a complex number), or back (`re`, `im` of a complex number).
    fn conversion(&mut self, ty: &Ty) -> String {
        let Some(Ty::S(extra)) = self.extra.clone() else { return self.literal(ty) };
        match ty {
            Ty::S(s) if is_complex_s(s) => {
                let (re, im) = (self.number(&Ty::F), self.number(&Ty::F));
                if *s == "complex<f64>" {
                    format!("complex(double({re}), double({im}))")
                } else {
                    format!("complex({re}, {im})")
                }
            }
            Ty::S(s) => {
                let from = if self.tape.below(2) == 0 { Ty::I } else { Ty::F };
                format!("{s}({})", self.number(&from))
            }
            _ => {
                let to = if *ty == Ty::I { "int" } else { "float" };
                let x = self.number(&Ty::S(extra));
                if is_complex_s(extra) {
                    let part = self.tape.pick(&["re", "im"]);
                    format!("{to}({part}({x}))")
                } else {
                    format!("{to}({x})")
                }
            }
        }
    }

    /// A length for an intermediate array: one of the kernel's naturals, a
    /// literal, or what a layout pattern makes of one.
    fn some_len(&mut self) -> Len {
        let n = Box::new(Len::Nat("n"));
        match self.tape.weighted(&[8, 6, 4, 1, 1, 1, 1, 1]) {
            1 => Len::Nat("m"),
            2 => Len::Lit(self.tape.below(4) as u32),
            3 => Len::Pad(self.tape.below(3) as u32, n, self.tape.below(3) as u32),
            4 => {
                // Windows no longer than the array: a shorter array is refused by
                // the interpreter but not by compiled code (FINDINGS: slide, coverage).
                let (size, step) = (1 + self.tape.below(3) as u32, 1 + self.tape.below(2) as u32);
                if Len::Nat("n").value(&self.nats).is_some_and(|v| v >= i64::from(size)) {
                    Len::Slide(n, size, step)
                } else {
                    Len::Nat("n")
                }
            }
            5 => Len::Div(n, 2),
            6 => Len::Mul(n, Box::new(Len::Nat("m"))),
            7 => Len::Add(n, Box::new(Len::Nat("m"))),
            _ => Len::Nat("n"),
        }
    }

    fn reduction(&mut self, ty: &Ty) -> String {
        let len = self.some_len();
        let xs = self.array(ty, &len);
        if let Ty::S(s) = ty {
            // The other scalar types: sums, sequential or (but for the half
            // floats, whose sums depend on the order) parallel, and for the
            // ordered ones max and min from a converted bound.
            let (a, x) = (self.fresh("acc"), self.fresh("x"));
            let z = self.literal(ty);
            let weights = [
                if ty.reassociates() { 4 } else { 0 },
                3,
                if ty.ordered() { 2 } else { 0 },
                if ty.ordered() { 2 } else { 0 },
                2,
            ];
            return match self.tape.weighted(&weights) {
                1 => format!("({xs} :>> reduceSeq(fun({a}, {x} => {a} + {x}), {z}))"),
                2 => format!("({xs} :>> reduce(max, {s}({})))", if is_unsigned_s(s) { "0" } else { "(-8)" }),
                3 => format!("({xs} :>> reduce(min, {s}(8)))"),
                4 => format!(
                    "({xs} :>> reduceSeq(fun({a}, {x} => {a} * {} - {x}), {z}))",
                    if is_int_s(s) { "2" } else { "2.0" }
                ),
                _ => format!("({xs} :>> reduce(+, {z}))"),
            };
        }
        match self.tape.weighted(&[4, 2, 2, 1, 1]) {
            1 => format!("({xs} :>> reduce(max, {}))", if *ty == Ty::F { "(-8.0)" } else { "(-8)" }),
            2 => format!("({xs} :>> reduce(min, {}))", if *ty == Ty::F { "8.0" } else { "8" }),
            3 => {
                // A sequential fold that is not associative: order matters.
                let (a, x) = (self.fresh("acc"), self.fresh("x"));
                let z = self.literal(ty);
                format!("({xs} :>> reduceSeq(fun({a}, {x} => {a} - {x}), {z}))")
            }
            4 => {
                let (a, x) = (self.fresh("acc"), self.fresh("x"));
                let z = self.literal(ty);
                format!("({xs} :>> reduce(fun({a}, {x} => {a} + {x}), {z}))")
            }
            _ => format!("({xs} :>> reduce(+, 0))"),
        }
    }

    /// An array of `elem` of length `len`.
    fn array(&mut self, elem: &Ty, len: &Len) -> String {
        let ty = arr(elem.clone(), len.clone());
        let vars = self.vars_of(&ty);
        let writable = len.text().is_some();
        if !self.spend(2) {
            if !vars.is_empty() {
                return self.tape.pick(&vars).clone();
            }
            if writable {
                return self.generate(elem, len);
            }
        }
        let numeric = matches!(elem, Ty::F | Ty::I);
        // The other scalar types: gathered, and summed where the order of a
        // sum does not matter (scatterAdd, the CSR rows, interleave's parts).
        let other = matches!(elem, Ty::S(_));
        let summed = numeric || (other && elem.reassociates());
        let is_n = *len == Len::Nat("n");
        let nested = matches!(elem, Ty::Arr(..));
        let weights = [
            if vars.is_empty() { 0 } else { 8 },                // 0 variable
            if writable { 3 } else { 0 },                       // 1 generate
            5,                                                  // 2 map
            3,                                                  // 3 zip
            if is_n && (numeric || other) { 1 } else { 0 },     // 4 gather by `is`
            if is_n { 1 } else { 0 },                           // 5 scatter by `perm`
            if matches!(len, Len::Pad(..)) { 6 } else { 0 },    // 6 pad
            if matches!(len, Len::Mul(..)) { 6 } else { 0 },    // 7 join
            if matches!(len, Len::Div(..)) { 6 } else { 0 },    // 8 split then map
            if nested { 3 } else { 0 },                         // 9 transpose / split / slide
            1,                                                  // 10 iterate
            1,                                                  // 11 toLocal / toPrivate / toGlobal
            if is_n && summed { 2 } else { 0 },                 // 12 scatterAdd
            if is_n && summed { 2 } else { 0 },                 // 13 over the CSR rows
            if *len == Len::Lit(2) && numeric { 1 } else { 0 }, // 14 interleave
            if is_n && numeric { 1 } else { 0 },                // 15 a counted (sparse) row, reduced
            if matches!(len, Len::Slide(..)) { 6 } else { 0 },  // 16 slide
            if matches!(len, Len::Add(..)) { 6 } else { 0 },    // 17 concat
            1,                                                  // 18 sortBy
        ];
        if weights.iter().all(|w| *w == 0) {
            return match vars.first() {
                Some(v) => v.clone(),
                None => self.generate(elem, len),
            };
        }
        match self.tape.weighted(&weights) {
            0 => self.tape.pick(&vars).clone(),
            1 => self.generate(elem, len),
            2 => {
                let t = self.simple_ty();
                let src = self.array(&t, len);
                let x = self.fresh("x");
                let body = self.with_var(&x.clone(), t, |g| g.expr(elem));
                let map = self.tape.pick(&["map", "map", "map", "mapSeq", "mapPar", "mapGlobal"]);
                format!("({src} :>> {map}(fun({x} => {body})))")
            }
            3 => {
                let (t1, t2) = (self.simple_ty(), self.simple_ty());
                let (a, b) = (self.array(&t1, len), self.array(&t2, len));
                let p = self.fresh("p");
                let body = self.with_var(&p.clone(), Ty::Tuple(vec![t1, t2]), |g| g.expr(elem));
                format!("(zip({a}, {b}) :>> map(fun({p} => {body})))")
            }
            4 => {
                let src = self.array(elem, len);
                format!("({src} :>> gather(is))")
            }
            5 => {
                let src = self.array(elem, len);
                format!("({src} :>> scatter(perm))")
            }
            6 => {
                let Len::Pad(l, x, r) = len else { unreachable!() };
                let src = self.array(elem, x);
                let v = self.expr(elem);
                format!("({src} :>> pad({l}, {r}, {v}))")
            }
            7 => {
                let Len::Mul(outer, inner) = len else { unreachable!() };
                let rows = self.array(&arr(elem.clone(), (**inner).clone()), outer);
                format!("({rows} :>> join)")
            }
            8 => {
                let Len::Div(whole, k) = len else { unreachable!() };
                let t = self.simple_ty();
                let src = self.array(&t, whole);
                let c = self.fresh("c");
                let body = self.with_var(&c.clone(), arr(t, Len::Lit(*k)), |g| g.expr(elem));
                format!("({src} :>> split({k}) :>> map(fun({c} => {body})))")
            }
            9 => {
                let Ty::Arr(inner, ilen) = elem else { unreachable!() };
                match self.tape.below(3) {
                    0 => {
                        let src = self.array(&arr((**inner).clone(), len.clone()), ilen);
                        format!("({src} :>> transpose)")
                    }
                    1 => {
                        // [[T]_k]_{L/k} from split(k) of a [T]_L whose k the caller chose.
                        match (len, ilen) {
                            (Len::Div(whole, k), Len::Lit(k2)) if k == k2 => {
                                let src = self.array(inner, whole);
                                format!("({src} :>> split({k}))")
                            }
                            _ => self.generate(elem, len),
                        }
                    }
                    _ => self.generate(elem, len),
                }
            }
            10 => {
                let src = self.array(elem, len);
                let k = self.tape.below(3);
                let a = self.fresh("a");
                let x = self.fresh("x");
                let body = self.with_var(&x.clone(), elem.clone(), |g| g.expr(elem));
                format!("({src} :>> iterate({k}, fun({a} => {a} :>> map(fun({x} => {body})))))")
            }
            11 => {
                let src = self.array(elem, len);
                let w = self.tape.pick(&["toLocal", "toPrivate", "toGlobal"]);
                let t = self.fresh("t");
                let x = self.fresh("x");
                let body = self.with_var(&x.clone(), elem.clone(), |g| g.expr(elem));
                format!("({src} :>> {w}(fun({t} => {t} :>> map(fun({x} => {body})))))")
            }
            12 => {
                let src = self.array(elem, len);
                format!("(zip(is, {src}) :>> scatterAdd(n))")
            }
            13 => {
                // Row by row over the packed CSR input (position-dependent rows).
                let row = self.fresh("row");
                let e = self.fresh("e");
                let rl = self.opaque();
                let pair = Ty::Tuple(vec![Ty::I, Ty::F]);
                let body = self.with_var(&row.clone(), arr(pair.clone(), rl.clone()), |g| {
                    g.with_var(&e.clone(), pair.clone(), |g| {
                        g.with_index(&format!("{e}.1"), Len::Nat("m"), |g| {
                            let inner = g.expr(elem);
                            format!("({row} :>> map(fun({e} => {inner})) :>> reduce(+, 0))")
                        })
                    })
                });
                format!("(v :>> map(fun({row} => {body})))")
            }
            14 => {
                let src = self.array(elem, &Len::Nat("n"));
                let part = self.fresh("part");
                format!("({src} :>> interleave(2) :>> map(fun({part} => {part} :>> reduce(+, 0))))")
            }
            15 => self.counted_rows(elem),
            16 => {
                let Len::Slide(whole, size, step) = len else { unreachable!() };
                let t = self.simple_ty();
                let src = self.array(&t, whole);
                let w = self.fresh("w");
                let body = self.with_var(&w.clone(), arr(t, Len::Lit(*size)), |g| g.expr(elem));
                format!("({src} :>> slide({size}, {step}) :>> map(fun({w} => {body})))")
            }
            17 => {
                let Len::Add(a, b) = len else { unreachable!() };
                let (first, second) = (self.array(elem, a), self.array(elem, b));
                format!("concat({first}, {second})")
            }
            18 => {
                // A stable sort by an int or float key of the element.
                let src = self.array(elem, len);
                let key_ty = match self.extra.clone() {
                    // A key of the other scalar type: unsigned, narrow, half.
                    Some(e) if e.ordered() && self.tape.below(3) == 0 => e,
                    _ => {
                        if self.tape.below(2) == 0 {
                            Ty::I
                        } else {
                            Ty::F
                        }
                    }
                };
                let x = self.fresh("x");
                let key = self.with_var(&x.clone(), elem.clone(), |g| g.expr(&key_ty));
                format!("({src} :>> sortBy(fun({x} => {key})))")
            }
            _ => self.generate(elem, len),
        }
    }

    fn generate(&mut self, elem: &Ty, len: &Len) -> String {
        let Some(text) = len.text() else {
            // Cannot happen for lengths the generator asks `generate` for.
            return format!("(generate(0, fun(z => {})))", self.expr(elem));
        };
        let i = self.fresh("i");
        let body = self.with_var(&i.clone(), Ty::I, |g| g.with_index(&i.clone(), len.clone(), |g| g.expr(elem)));
        format!("generate({text}, fun({i} => {body}))")
    }

    /// `[float]_n` or `[int]_n` from sparse rows with counted lengths:
    /// co-iteration of the two CSR inputs (union, intersect) or the
    /// expand/compress workspace, each row then reduced.
    fn counted_rows(&mut self, elem: &Ty) -> String {
        let i = self.fresh("i");
        let t = self.fresh("t");
        let value = match elem {
            Ty::I => format!("{t}.1"),
            _ => format!("{t}.2"),
        };
        let row = match self.tape.below(3) {
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
                format!("{a} :>> map(fun({t} => ({t}.1, {t}.2 * 2.0))) :>> compressAdd(m)")
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
    fn sparse_list(&mut self, i: &str, depth: u32) -> String {
        let choice = if depth == 0 { self.tape.below(2) } else { self.tape.below(5) };
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
                format!("{a} :>> map(fun({t} => ({t}.1, {t}.2 * 2.0))) :>> compressAdd(m)")
            }
        }
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

/// A sparse matrix of `rows × cols`, sorted by row then column, no duplicates.
fn sparse(t: &mut Tape, rows: i64, cols: i64) -> Vec<Vec<(i64, f64)>> {
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

fn packed(rows: &[Vec<(i64, f64)>]) -> (serde_json::Value, serde_json::Value) {
    let mut offsets = vec![0usize];
    for r in rows {
        offsets.push(offsets.last().unwrap() + r.len());
    }
    let entries: Vec<serde_json::Value> = rows.iter().flatten().map(|(c, x)| serde_json::json!([c, x])).collect();
    (serde_json::json!(offsets), serde_json::json!(entries))
}

fn mtx(rows: &[Vec<(i64, f64)>], cols: i64) -> String {
    let count: usize = rows.iter().map(Vec::len).sum();
    let mut s = format!("%%MatrixMarket matrix coordinate real general\n{} {cols} {count}\n", rows.len());
    for (i, r) in rows.iter().enumerate() {
        for (j, x) in r {
            let _ = writeln!(s, "{} {} {x}", i + 1, j + 1);
        }
    }
    s
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

/// Results whose shape no dense type gives: the CSR rows mapped (a
/// position-dependent result), or sparse rows with counted lengths.
fn structured_result(g: &mut Gen) -> String {
    let i = g.fresh("i");
    let e = g.fresh("e");
    // Which result, and from the rest of the draw whether it is stored as a
    // sparse tensor (one in two) and in which encoding ([`STORED`]).
    let (which, rest) = g.tape.below_split(4);
    let rows = structured_rows(g, which, &i, &e);
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
const STORED: &[&str] = &[
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

/// Structured result number `which` (see [`structured_result`]).
fn structured_rows(g: &mut Gen, which: u64, i: &str, e: &str) -> String {
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
                "v :>> map(fun({row} => {row} :>> map(fun({e} => w@({e}.1 % n) :>> map(fun({b} => ({b}.1, {e}.2 * {b}.2))))) :>> join :>> compressAdd(m)))"
            )
        }
    }
}

/// A kernel over a tensor parameter in a random encoding: every stored
/// value weighted by its coordinates and summed, per outer position or in
/// all.
fn tensor_case(g: &mut Gen, enc: &Encoding, dims: (i64, i64)) -> String {
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
    };
    let size = |t: &mut Tape| *t.pick(&[0i64, 1, 1, 2, 3, 4, 5, 8, 17]);
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
    if kind == 0 && rest % 2 == 0 {
        g.extra = Some(Ty::S(EXTRA_SCALARS[(rest / 2 % EXTRA_SCALARS.len() as u64) as usize]));
        let s = g.extra.clone().expect("just set");
        g.vars.push(Var { name: "es".to_string(), ty: arr(s, Len::Nat("n")) });
    }
    let mut matrices = Vec::new();
    let source = match kind {
        1 => kernel(&structured_result(&mut g), None),
        2 => {
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
            let mut dims = (size(&mut g.tape), size(&mut g.tape));
            if enc.name == "BSR" {
                // Blocks of 2 x 2: the sizes must be multiples of 2.
                dims = (dims.0 + dims.0 % 2, dims.1 + dims.1 % 2);
            }
            let rows = sparse(&mut g.tape, dims.0, dims.1);
            matrices.push(("A".to_string(), mtx(&rows, dims.1)));
            let mut body = tensor_case(&mut g, enc, dims);
            if elem == "f16" {
                // A half's sum depends on its order (`reduce` may reassociate).
                body = body.replace("reduce(+, 0)", "reduceSeq(+, 0)");
            }
            format!(
                "// {}\n#E = #sparse_tensor.encoding<{{ map = {}{widths} }}>\n\nfun(A: tensor<?x?x{elem}, #E> =>\n  {body})\n",
                enc.name, enc.text
            )
        }
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
            kernel(&body, g.extra.as_ref())
        }
    };
    let mut inputs = Vec::new();
    if kind != 2 {
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
        let (o, v) = packed(&sparse(t, n, m));
        inputs.push(("o".to_string(), o));
        inputs.push(("v".to_string(), v));
        let (q, w) = packed(&sparse(t, n, m));
        inputs.push(("q".to_string(), q));
        inputs.push(("w".to_string(), w));
        if let Some(Ty::S(s)) = &g.extra {
            let es: Vec<serde_json::Value> = (0..n).map(|_| extra_value(&mut g.tape, s)).collect();
            inputs.push(("es".to_string(), serde_json::json!(es)));
        }
    }
    let nats = if kind == 2 { Vec::new() } else { g.nats.clone() };
    let extra = match g.extra {
        Some(Ty::S(s)) => Some(s),
        _ => None,
    };
    (Case { source, nats, inputs, matrices, extra }, g.tape)
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

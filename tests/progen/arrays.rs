//! Arrays: every layout pattern, maps, zips, generation and the address-space wrappers.

use super::*;

impl Gen {
    /// An array of `elem` of length `len`.
    pub(super) fn array(&mut self, elem: &Ty, len: &Len) -> String {
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
            if vars.is_empty() { 0 } else { 8 },                                // 0 variable
            if writable { 3 } else { 0 },                                       // 1 generate
            5,                                                                  // 2 map
            3,                                                                  // 3 zip
            if is_n && (numeric || other) { 1 } else { 0 },                     // 4 gather by `is`
            if is_n { 1 } else { 0 },                                           // 5 scatter by `perm`
            if matches!(len, Len::Pad(..)) { 6 } else { 0 },                    // 6 pad
            if matches!(len, Len::Mul(..)) { 6 } else { 0 },                    // 7 join
            if matches!(len, Len::Div(..)) { 6 } else { 0 },                    // 8 split then map
            if nested { 3 } else { 0 },                                         // 9 transpose / split / slide
            1,                                                                  // 10 iterate
            1,                                                                  // 11 toLocal / toPrivate / toGlobal
            if is_n && summed { 2 } else { 0 },                                 // 12 scatterAdd
            if is_n && summed { 2 } else { 0 },                                 // 13 over the CSR rows
            if *len == Len::Lit(2) && numeric && !self.in_def { 1 } else { 0 }, // 14 interleave (of an array over `n`)
            if is_n && numeric { 1 } else { 0 },                                // 15 a counted (sparse) row, reduced
            if matches!(len, Len::Slide(..)) { 6 } else { 0 },                  // 16 slide
            if matches!(len, Len::Add(..)) { 6 } else { 0 },                    // 17 concat
            1,                                                                  // 18 sortBy
            if self.defs_give_array(elem) { 3 } else { 0 },                     // 19 a definition
        ];
        if weights.iter().all(|w| *w == 0) {
            return match vars.first() {
                Some(v) => v.clone(),
                None => self.generate(elem, len),
            };
        }
        // What is left of the choice's draw refines it (0: the construct as
        // it was, so that the programs of old seeds stay as they were).
        let (choice, rest) = self.tape.weighted_split(&weights);
        let scalar = matches!(elem, Ty::F | Ty::I | Ty::S(_));
        match choice {
            1 if rest % 6 == 1 && scalar && writable => return self.vectors(elem, len, rest / 6),
            2 if rest % 8 == 1 && self.ctx == Ctx::Top => return self.workgroups(elem, len, rest / 8),
            3 if rest % 5 == 1 => return self.unzipped(elem, len, rest / 5),
            _ => {}
        }
        match choice {
            0 => self.tape.pick(&vars).clone(),
            1 => self.generate(elem, len),
            2 => {
                let t = self.simple_ty();
                let src = self.array(&t, len);
                let x = self.fresh("x");
                let body = self.with_var(&x.clone(), t, |g| g.expr(elem));
                let map = self.tape.pick(&["map", "map", "map", "mapSeq", "mapPar", "mapGlobal"]);
                // In a work-group, now and then over its local work-items.
                let map = if self.ctx == Ctx::Workgroup && rest % 6 == 2 { "mapLocal" } else { map };
                let mapped = format!("({src} :>> {map}(fun({x} => {body})))");
                // One in seven, with a type annotation (where the type can be written).
                match ty.text() {
                    Some(t) if rest / 8 % 7 == 3 => format!("({mapped} : {t})"),
                    _ => mapped,
                }
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
                // In a work-group, its local work-items fill local memory
                // (a barrier before it is read).
                let map = if self.ctx == Ctx::Workgroup && rest % 2 == 1 { "mapLocal" } else { "map" };
                format!("({src} :>> {w}(fun({t} => {t} :>> {map}(fun({x} => {body})))))")
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
            19 => self.def_array(elem, len),
            _ => self.generate(elem, len),
        }
    }

    pub(super) fn generate(&mut self, elem: &Ty, len: &Len) -> String {
        let Some(text) = len.text() else {
            // Cannot happen for lengths the generator asks `generate` for.
            return format!("(generate(0, fun(z => {})))", self.expr(elem));
        };
        let i = self.fresh("i");
        let body = self.with_var(&i.clone(), Ty::I, |g| g.with_index(&i.clone(), len.clone(), |g| g.expr(elem)));
        format!("generate({text}, fun({i} => {body}))")
    }

    /// `[elem]_len` through vectors: an array of `w * len` scalars as
    /// `len` vectors of `w` lanes (`asVector`), lane-wise arithmetic on them,
    /// back to scalars (`asScalar`), and each vector's lanes summed.
    /// `choice` picks the width and whether two arrays are zipped.
    fn vectors(&mut self, elem: &Ty, len: &Len, choice: u64) -> String {
        // 16 lanes the least often: the widest vectors are the slowest to compile.
        let w = [2u32, 4, 3, 8, 2, 4, 3, 16][(choice % 8) as usize];
        let whole = Len::Mul(Box::new(Len::Lit(w)), Box::new(len.clone()));
        let a = self.array(elem, &whole);
        let (src, leaves) = if choice / 8 % 2 == 1 {
            let b = self.array(elem, &whole);
            let p = self.fresh("p");
            (format!("zip({a} :>> asVector({w}), {b} :>> asVector({w}))"), vec![format!("{p}.1"), format!("{p}.2")])
        } else {
            (format!("{a} :>> asVector({w})"), vec![self.fresh("v")])
        };
        let binder = leaves[0].split('.').next().unwrap_or_default().to_string();
        // `/` on floats only: an integer lane divided by 0 is an error.
        let divides = matches!(elem, Ty::F) || matches!(elem, Ty::S(s) if !is_int_s(s));
        let body = self.lanes(&leaves, divides, 2);
        let c = self.fresh("c");
        let sum = if elem.reassociates() { "reduce" } else { "reduceSeq" };
        format!(
            "({src} :>> map(fun({binder} => {body})) :>> asScalar :>> split({w}) :>> map(fun({c} => {c} :>> {sum}(+, {}))))",
            zero(elem)
        )
    }

    /// Lane-wise arithmetic on the vectors `leaves`, `depth` operators deep.
    fn lanes(&mut self, leaves: &[String], divides: bool, depth: u32) -> String {
        if depth == 0 || !self.spend(1) {
            return self.tape.pick(leaves).clone();
        }
        let ops: &[&str] = if divides { &["+", "-", "*", "/", "neg"] } else { &["+", "-", "*", "neg"] };
        let op = *self.tape.pick(ops);
        let a = self.lanes(leaves, divides, depth - 1);
        if op == "neg" {
            return format!("-({a})");
        }
        let b = self.lanes(leaves, divides, depth - 1);
        format!("({a} {op} {b})")
    }

    /// `[elem]_len` from a `mapWorkgroup` (one element per work-group):
    /// rows of a few elements, each row's work spread over the group's
    /// local work-items (`mapLocal`) where the element is a sum, through
    /// local memory (`toLocal`, a barrier before it is read) now and then.
    fn workgroups(&mut self, elem: &Ty, len: &Len, choice: u64) -> String {
        let t = self.simple_ty();
        let k = if choice % 3 == 2 { Len::Nat("m") } else { Len::Lit(2 + 2 * (choice % 3) as u32) };
        let rows = self.array(&arr(t.clone(), k.clone()), len);
        let c = self.fresh("c");
        let summed = matches!(elem, Ty::F | Ty::I) || matches!(elem, Ty::S(_)) && elem.reassociates();
        let body = if summed && !(choice / 3).is_multiple_of(3) {
            let y = self.fresh("y");
            let each = self.with_var(&y, t.clone(), |g| g.expr(elem));
            let staged = if choice / 3 % 3 == 2 {
                let (l, z) = (self.fresh("l"), self.fresh("z"));
                let again = self.with_var(&z, elem.clone(), |g| g.expr(elem));
                format!(" :>> toLocal(fun({l} => {l} :>> mapLocal(fun({z} => {again}))))")
            } else {
                String::new()
            };
            format!("{c} :>> mapLocal(fun({y} => {each})){staged} :>> reduce(+, {})", zero(elem))
        } else {
            self.with_var_in(&c, arr(t.clone(), k), Ctx::Workgroup, |g| g.expr(elem))
        };
        format!("({rows} :>> mapWorkgroup(fun({c} => {body})))")
    }

    /// `[elem]_len` as one half of an array of pairs (`unzip`).
    fn unzipped(&mut self, elem: &Ty, len: &Len, choice: u64) -> String {
        let other = self.simple_ty();
        let (pair, k) = if choice.is_multiple_of(2) {
            (Ty::Tuple(vec![elem.clone(), other]), 1)
        } else {
            (Ty::Tuple(vec![other, elem.clone()]), 2)
        };
        let pairs = self.array(&pair, len);
        format!("({pairs} :>> unzip).{k}")
    }
}

/// The zero of a scalar type, written so that no context decides its type.
fn zero(t: &Ty) -> String {
    match t {
        Ty::F => "0.0".to_string(),
        Ty::S(s) if is_complex_s(s) && *s == "complex<f64>" => "complex(double(0.0), double(0.0))".to_string(),
        Ty::S(s) if is_complex_s(s) => "complex(0.0, 0.0)".to_string(),
        Ty::S(s) if is_int_s(s) => format!("{s}(0)"),
        Ty::S(s) => format!("{s}(0.0)"),
        _ => "0".to_string(),
    }
}

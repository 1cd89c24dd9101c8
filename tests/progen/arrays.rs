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

    pub(super) fn generate(&mut self, elem: &Ty, len: &Len) -> String {
        let Some(text) = len.text() else {
            // Cannot happen for lengths the generator asks `generate` for.
            return format!("(generate(0, fun(z => {})))", self.expr(elem));
        };
        let i = self.fresh("i");
        let body = self.with_var(&i.clone(), Ty::I, |g| g.with_index(&i.clone(), len.clone(), |g| g.expr(elem)));
        format!("generate({text}, fun({i} => {body}))")
    }
}

//! Scalars: numbers and booleans of every type, literals, conversions, reductions.

use super::*;

impl Gen {
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

    pub(super) fn literal(&mut self, ty: &Ty) -> String {
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

    pub(super) fn number(&mut self, ty: &Ty) -> String {
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
            if self.defs_give_number(ty) { 3 } else { 0 },        // 15 a definition
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
            15 => self.def_number(ty),
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

    pub(super) fn boolean(&mut self) -> String {
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
    pub(super) fn simple_ty(&mut self) -> Ty {
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
    pub(super) fn conversion(&mut self, ty: &Ty) -> String {
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
    pub(super) fn some_len(&mut self) -> Len {
        if self.in_def {
            // No natural in a definition's scope.
            return Len::Lit(self.tape.below(4) as u32);
        }
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

    pub(super) fn reduction(&mut self, ty: &Ty) -> String {
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
        let (choice, rest) = self.tape.weighted_split(&[4, 2, 2, 1, 1]);
        if choice == 0 && matches!(rest % 5, 1 | 2) && !len.statically_zero() {
            // Without an initial value: the first element starts the sum (an
            // empty array is an error on every backend).
            let p = self.fresh("p");
            let (r, op) = if rest % 5 == 1 { ("reduce", "+") } else { ("reduceSeq", "-") };
            return format!("({xs} :>> {r}(fun({p} => {p}.1 {op} {p}.2)))");
        }
        match choice {
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
}

//! Top-level definitions (`def NAME = expr;`) and their uses.
//!
//! A case with definitions draws a few before its kernel, each of one of
//! the kinds of [`DefKind`], its body written in a scope of its own: its
//! parameters and the definitions before it (a definition may use an earlier
//! one: nested uses), no kernel parameter, no natural. The kernel then uses
//! them where their types fit: constants as variables, functions called
//! (now and then twice in one expression), passed to `map`, or applied to
//! a lambda. The type checker checks a definition afresh at each use, so
//! the generic kinds are used at several types (and the array kinds at
//! several lengths) in one program.

use super::*;

/// What a definition is, as far as its uses need to know.
#[derive(Clone, Debug)]
pub(super) enum DefKind {
    /// `def c = e;`: a constant of the type, a variable wherever it is in scope.
    Const(Ty),
    /// `def f = fun(a, b => e);` of scalar parameters, called `f(x, y)`.
    Scalar { params: Vec<Ty>, result: Ty },
    /// `def f = fun(a, b => e);` whose body uses only `+ - *` and integer
    /// literals on its parameters: usable at every numeric type but `bool`
    /// (its result is its parameters' type).
    Generic { arity: usize },
    /// `def f = fun(xs => …);` of an array of `elem` of any length, to a
    /// number of type `result`.
    Fold { elem: Ty, result: Ty },
    /// `def f = map(fun(x => e));`: a pipeline stage, `[elem]_N -> [result]_N`.
    MapStage { elem: Ty, result: Ty },
    /// `def f = reduce(+, 0);`: a stage summing an array of any summable type.
    SumStage,
    /// `def f = fun(g, a => g(g(a)));` (or `g(a)`): applied to a lambda and a
    /// value of any type.
    Twice,
    /// `def f = fun(g, xs => xs :>> map(g));`: applied to a lambda and an
    /// array of any type and length.
    Mapper,
}

/// A definition: its name and kind.
#[derive(Clone, Debug)]
pub(super) struct Def {
    pub(super) name: String,
    pub(super) kind: DefKind,
}

/// Whether a value of `t` can be added (`+`, `reduce(+, 0)`, generic
/// arithmetic): the numbers, every scalar type but `bool`.
fn numeric(t: &Ty) -> bool {
    matches!(t, Ty::F | Ty::I | Ty::S(_))
}

impl Gen {
    /// The definitions of a case: their text, one `def` a line; each is
    /// pushed onto `self.defs` (constants onto the kernel's variables too).
    pub(super) fn definitions(&mut self) -> String {
        let count = 1 + self.tape.below(4);
        let mut text = String::new();
        for _ in 0..count {
            let (name, body, kind) = self.in_def_scope(|g| g.definition());
            let _ = writeln!(text, "def {name} = {body};");
            if let DefKind::Const(ty) = &kind {
                self.vars.push(Var { name: name.clone(), ty: ty.clone() });
            }
            self.defs.push(Def { name, kind });
        }
        text
    }

    /// `f` in the scope of a definition's body: no kernel parameter, no
    /// natural, no index, only the earlier constants and definitions; a fuel
    /// of its own.
    fn in_def_scope<T>(&mut self, f: impl FnOnce(&mut Gen) -> T) -> T {
        let consts: Vec<Var> = self
            .defs
            .iter()
            .filter_map(|d| match &d.kind {
                DefKind::Const(ty) => Some(Var { name: d.name.clone(), ty: ty.clone() }),
                _ => None,
            })
            .collect();
        let vars = std::mem::replace(&mut self.vars, consts);
        let indices = std::mem::take(&mut self.indices);
        let nats = std::mem::take(&mut self.nats);
        let ctx = std::mem::replace(&mut self.ctx, Ctx::Other);
        let fuel = std::mem::replace(&mut self.fuel, 3 + self.tape.below(8) as i32);
        let in_def = std::mem::replace(&mut self.in_def, true);
        let out = f(self);
        self.vars = vars;
        self.indices = indices;
        self.nats = nats;
        self.ctx = ctx;
        self.fuel = fuel;
        self.in_def = in_def;
        out
    }

    /// A scalar type for a definition: `float`, `int` or the case's other one.
    fn def_scalar(&mut self) -> Ty {
        match (self.tape.below(3), self.extra.clone()) {
            (0, _) => Ty::F,
            (1, _) => Ty::I,
            (_, Some(e)) => e,
            _ => Ty::F,
        }
    }

    /// One definition: name, body, kind.
    fn definition(&mut self) -> (String, String, DefKind) {
        let name = self.fresh("f");
        match self.tape.weighted(&[3, 4, 2, 2, 2, 1, 2, 2]) {
            0 => {
                // A constant: a number, or (one in three) a short array.
                let t = self.def_scalar();
                if self.tape.below(3) == 0 {
                    let ty = arr(t, Len::Lit(1 + self.tape.below(3) as u32));
                    let body = self.expr(&ty);
                    (name, body, DefKind::Const(ty))
                } else {
                    let body = self.expr(&t);
                    (name, body, DefKind::Const(t))
                }
            }
            1 => {
                let arity = 1 + self.tape.below(2) as usize;
                let params: Vec<Ty> = (0..arity).map(|_| self.def_scalar()).collect();
                let result = self.def_scalar();
                let names: Vec<String> = (0..arity).map(|_| self.fresh("a")).collect();
                for (n, t) in names.iter().zip(&params) {
                    self.vars.push(Var { name: n.clone(), ty: t.clone() });
                }
                let body = self.expr(&result);
                self.vars.truncate(self.vars.len() - arity);
                (name, format!("fun({} => {body})", names.join(", ")), DefKind::Scalar { params, result })
            }
            2 => {
                let arity = 1 + self.tape.below(2) as usize;
                let names: Vec<String> = (0..arity).map(|_| self.fresh("a")).collect();
                // The first parameter at the top: the result has the parameters' type.
                let op = self.tape.pick(&["+", "-", "*"]);
                let rest = self.generic_body(&names, 2);
                let body = format!("{} {op} {rest}", names[0]);
                (name, format!("fun({} => {body})", names.join(", ")), DefKind::Generic { arity })
            }
            3 => {
                let elem = self.simple_ty();
                let result = self.def_scalar();
                let (xs, x) = (self.fresh("xs"), self.fresh("x"));
                let each = self.with_var(&x, elem.clone(), |g| g.expr(&result));
                let body = if self.tape.below(3) == 0 {
                    let acc = self.fresh("acc");
                    let z = self.literal(&result);
                    format!("{xs} :>> reduceSeq(fun({acc}, {x} => {acc} - {each}), {z})")
                } else {
                    let sum = if result.reassociates() { "reduce" } else { "reduceSeq" };
                    format!("{xs} :>> map(fun({x} => {each})) :>> {sum}(+, 0)")
                };
                (name, format!("fun({xs} => {body})"), DefKind::Fold { elem, result })
            }
            4 => {
                let elem = self.simple_ty();
                let result = self.def_scalar();
                let x = self.fresh("x");
                let each = self.with_var(&x, elem.clone(), |g| g.expr(&result));
                (name, format!("map(fun({x} => {each}))"), DefKind::MapStage { elem, result })
            }
            5 => (name, "reduce(+, 0)".to_string(), DefKind::SumStage),
            6 => {
                let (f, a) = (self.fresh("g"), self.fresh("a"));
                let body = if self.tape.below(3) == 0 { format!("{f}({a})") } else { format!("{f}({f}({a}))") };
                (name, format!("fun({f}, {a} => {body})"), DefKind::Twice)
            }
            _ => {
                let (f, xs) = (self.fresh("g"), self.fresh("xs"));
                (name, format!("fun({f}, {xs} => {xs} :>> map({f}))"), DefKind::Mapper)
            }
        }
    }

    /// A body over the parameters `names` of no particular numeric type:
    /// `+ - *`, small integer literals.
    fn generic_body(&mut self, names: &[String], depth: u32) -> String {
        if depth == 0 || self.tape.below(3) == 0 {
            return if self.tape.below(3) == 0 {
                self.tape.below(4).to_string()
            } else {
                self.tape.pick(names).clone()
            };
        }
        let op = self.tape.pick(&["+", "-", "*"]);
        let (a, b) = (self.generic_body(names, depth - 1), self.generic_body(names, depth - 1));
        format!("({a} {op} {b})")
    }

    /// Whether some definition can give a number of type `ty`.
    pub(super) fn defs_give_number(&self, ty: &Ty) -> bool {
        self.defs.iter().any(|d| match &d.kind {
            DefKind::Scalar { result, .. } | DefKind::Fold { result, .. } => result == ty,
            DefKind::Generic { .. } => numeric(ty),
            // A half's sum depends on its order (`reduce` may reassociate).
            DefKind::SumStage => numeric(ty) && ty.reassociates(),
            DefKind::Twice => true,
            _ => false,
        })
    }

    /// A number of type `ty` from a definition (see [`defs_give_number`]).
    pub(super) fn def_number(&mut self, ty: &Ty) -> String {
        let fits: Vec<Def> = self
            .defs
            .iter()
            .filter(|d| match &d.kind {
                DefKind::Scalar { result, .. } | DefKind::Fold { result, .. } => result == ty,
                DefKind::Generic { .. } => numeric(ty),
                DefKind::SumStage => numeric(ty) && ty.reassociates(),
                DefKind::Twice => true,
                _ => false,
            })
            .cloned()
            .collect();
        let d = self.tape.pick(&fits).clone();
        let call = self.def_call(&d, ty);
        // Now and then the same definition twice in one expression.
        if numeric(ty) && self.tape.below(4) == 0 {
            let again = self.def_call(&d, ty);
            return format!("({call} + {again})");
        }
        call
    }

    fn def_call(&mut self, d: &Def, ty: &Ty) -> String {
        let f = &d.name;
        match &d.kind {
            DefKind::Scalar { params, .. } => {
                let args: Vec<String> = params.iter().map(|p| self.expr(p)).collect();
                format!("{f}({})", args.join(", "))
            }
            DefKind::Generic { arity } => {
                let args: Vec<String> = (0..*arity).map(|_| self.number(ty)).collect();
                format!("{f}({})", args.join(", "))
            }
            DefKind::Fold { elem, .. } => {
                let len = self.some_len();
                let xs = self.array(elem, &len);
                format!("{f}({xs})")
            }
            DefKind::SumStage => {
                let len = self.some_len();
                let xs = self.array(ty, &len);
                format!("({xs} :>> {f})")
            }
            DefKind::Twice => {
                let y = self.fresh("y");
                // The lambda runs twice per call, and is inlined twice: kept
                // small (seed 61055 ran for minutes with a sort in it, in a
                // `generate` of 2048 in one of `n` in a map over `ys`).
                let fuel = self.fuel;
                self.fuel = self.fuel.min(2);
                let body = self.with_var(&y, ty.clone(), |g| g.expr(ty));
                self.fuel = fuel - 2;
                let a = self.expr(ty);
                format!("{f}(fun({y} => {body}), {a})")
            }
            _ => self.literal(ty),
        }
    }

    /// Whether some definition can give an array of `elem` (any length).
    pub(super) fn defs_give_array(&self, elem: &Ty) -> bool {
        self.defs.iter().any(|d| match &d.kind {
            DefKind::MapStage { result, .. } => result == elem,
            DefKind::Scalar { params, result } => params.len() == 1 && result == elem,
            DefKind::Generic { arity } => *arity == 1 && numeric(elem),
            DefKind::Mapper => true,
            _ => false,
        })
    }

    /// `[elem]_len` from a definition: a stage, a one-parameter function
    /// passed to `map`, or a mapper applied to a lambda.
    pub(super) fn def_array(&mut self, elem: &Ty, len: &Len) -> String {
        let fits: Vec<Def> = self
            .defs
            .iter()
            .filter(|d| match &d.kind {
                DefKind::MapStage { result, .. } => result == elem,
                DefKind::Scalar { params, result } => params.len() == 1 && result == elem,
                DefKind::Generic { arity } => *arity == 1 && numeric(elem),
                DefKind::Mapper => true,
                _ => false,
            })
            .cloned()
            .collect();
        let d = self.tape.pick(&fits).clone();
        let f = &d.name;
        match &d.kind {
            DefKind::MapStage { elem: from, .. } => {
                let src = self.array(from, len);
                format!("({src} :>> {f})")
            }
            DefKind::Scalar { params, .. } => {
                let src = self.array(&params[0], len);
                format!("({src} :>> map({f}))")
            }
            DefKind::Generic { .. } => {
                let src = self.array(elem, len);
                format!("({src} :>> map({f}))")
            }
            _ => {
                let t = self.simple_ty();
                let src = self.array(&t, len);
                let y = self.fresh("y");
                let body = self.with_var(&y, t, |g| g.expr(elem));
                format!("{f}(fun({y} => {body}), {src})")
            }
        }
    }
}

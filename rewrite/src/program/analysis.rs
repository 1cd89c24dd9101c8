//! What the rewrite conditions need to know about an e-class: its free
//! names (for capture-avoiding binders), the natural it denotes, which
//! primitive it partially applies, and the outer lengths of the array it is.
//!
//! Lengths start from the annotated kernel parameters and follow the
//! primitives whose result length is a function of their inputs' lengths
//! (`split`, `join`, `transpose`, the `map` family, `zip`). Everything else
//! is "unknown", which makes a length condition false: conditions never
//! guess.

use super::lang::Prog;
use egg::{Analysis, DidMerge, EGraph, Id, Language, Symbol};
use heddle_ir::expr::{BinOp, Literal, SectionOp};
use heddle_ir::expr::{Expr, ExprKind};
use heddle_ir::nat::NatOp;
use heddle_ir::{Name, Nat, Type};
use std::collections::{BTreeSet, HashMap};

/// An e-graph of programs.
pub type ProgGraph = EGraph<Prog, ProgAnalysis>;

/// The analysis; holds the kernel parameters' array lengths.
#[derive(Clone, Debug, Default)]
pub struct ProgAnalysis {
    /// For each kernel parameter bound once in the program: the lengths of
    /// its outer non-position-dependent array dimensions.
    pub params: HashMap<Symbol, Vec<Nat>>,
    /// For the same parameters: their number of elements (also of a
    /// position-dependent array, whose elements' lengths vary).
    pub counts: HashMap<Symbol, Nat>,
    /// Values of the kernel's naturals, when the inputs are known (a
    /// measured search): conditions are decided with them, so a rule may
    /// apply that holds for these inputs only; the program it leads to then
    /// carries a run-time obligation saying so.
    pub facts: Vec<(Name, i64)>,
}

impl ProgAnalysis {
    /// The analysis for a kernel: its parameters' lengths.
    pub fn for_kernel(kernel: &Expr) -> ProgAnalysis {
        let typed = typed_params(kernel);
        ProgAnalysis {
            params: typed.iter().map(|(n, t)| (*n, shape_of(t))).collect(),
            counts: typed.iter().filter_map(|(n, t)| Some((*n, count_of(t)?))).collect(),
            facts: Vec::new(),
        }
    }
}

/// Lengths of the kernel's annotated parameters that no lambda rebinds.
fn typed_params(kernel: &Expr) -> Vec<(Symbol, Type)> {
    let mut params = Vec::new();
    let mut e = kernel;
    loop {
        match &e.kind {
            ExprKind::NFun { body, .. } => e = body,
            ExprKind::Fun { params: ps, body } if ps.iter().all(|p| p.ty.is_some()) => {
                params.extend(ps.iter().map(|p| (p.name.clone(), p.ty.clone())));
                e = body;
            }
            _ => break,
        }
    }
    let mut binders: HashMap<Name, usize> = HashMap::new();
    count_binders(kernel, &mut binders);
    params
        .into_iter()
        .filter(|(n, _)| binders.get(n) == Some(&1))
        .filter_map(|(n, t)| Some((Symbol::from(n.as_str()), t?)))
        .collect()
}

fn count_binders(e: &Expr, out: &mut HashMap<Name, usize>) {
    match &e.kind {
        ExprKind::Fun { params, .. } => params.iter().for_each(|p| *out.entry(p.name.clone()).or_default() += 1),
        ExprKind::NFun { var, .. } | ExprKind::Let { name: var, .. } => *out.entry(var.clone()).or_default() += 1,
        _ => {}
    }
    e.for_each_child(&mut |c| count_binders(c, out));
}

/// A primitive applied to its first few arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The primitive (`split`, `map`, …).
    pub prim: Symbol,
    /// How many arguments it has been given.
    pub args: usize,
    /// The first argument read as a natural (`k` of `split(k)`).
    pub first_nat: Option<Nat>,
    /// The first argument's outer lengths (`a` of `zip(a, b)`).
    pub first_shape: Option<Vec<Nat>>,
    /// The first argument's number of elements.
    pub first_count: Option<Nat>,
    /// The first argument is an input ([`Data::input`]).
    pub first_input: bool,
}

/// Per-class facts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Data {
    /// Names used free by some term of the class (an over-approximation).
    pub free: BTreeSet<Symbol>,
    /// Some term holds a type or natural, whose free names are not tracked.
    pub opaque: bool,
    /// The name, for a [`Prog::Sym`] class.
    pub sym: Option<Symbol>,
    /// The natural the class denotes, when it is one.
    pub nat: Option<Nat>,
    /// The literal, for a literal class.
    pub lit: Option<Literal>,
    /// The operator, for a section class.
    pub section: Option<SectionOp>,
    /// The primitive call the class is, when it is one.
    pub call: Option<Call>,
    /// Known outer lengths of the (non-position-dependent) array it is.
    pub shape: Option<Vec<Nat>>,
    /// Known number of elements of the array it is (position-dependent
    /// or not): kernel parameters, and through `map`, `zip`, `split`,
    /// `interleave`.
    pub count: Option<Nat>,
    /// Some term of the class is an array parameter of the kernel or a
    /// `zip` of them: data the kernel reads, not an intermediate.
    pub input: bool,
}

/// The outer lengths of a type whose elements all have one type:
/// `[[float]_m]_n` gives `[n, m]`; stops at the first position-dependent
/// or non-array level.
pub fn shape_of(t: &Type) -> Vec<Nat> {
    let mut out = Vec::new();
    let mut t = t;
    while let Type::Array { binder, elem, len } = t {
        if binder.as_ref().is_some_and(|b| elem.mentions(b)) {
            break;
        }
        out.push(len.clone());
        t = elem;
    }
    out
}

/// The number of elements of an array type, position-dependent or not.
pub fn count_of(t: &Type) -> Option<Nat> {
    match t {
        Type::Array { len, .. } => Some(len.clone()),
        _ => None,
    }
}

fn nat_op(op: BinOp) -> Option<NatOp> {
    Some(match op {
        BinOp::Add => NatOp::Add,
        BinOp::Sub => NatOp::Sub,
        BinOp::Mul => NatOp::Mul,
        BinOp::Div => NatOp::Div,
        BinOp::Rem => NatOp::Mod,
        _ => return None,
    })
}

/// The result's outer lengths of a primitive given one more argument `x`.
fn call_shape(call: &Call, x: &Data) -> Option<Vec<Nat>> {
    let total = call.args + 1;
    let xs = x.shape.as_ref();
    match (call.prim.as_str(), total) {
        ("split", 2) => {
            let xs = xs?;
            let k = call.first_nat.clone()?;
            let mut out = vec![Nat::div(xs.first()?.clone(), k.clone()).normalize(), k];
            out.extend(xs[1..].iter().cloned());
            Some(out)
        }
        ("join", 1) => {
            let xs = xs?;
            let (a, b) = (xs.first()?, xs.get(1)?);
            let mut out = vec![Nat::mul(a.clone(), b.clone()).normalize()];
            out.extend(xs[2..].iter().cloned());
            Some(out)
        }
        ("transpose", 1) => {
            let xs = xs?;
            let (a, b) = (xs.first()?, xs.get(1)?);
            let mut out = vec![b.clone(), a.clone()];
            out.extend(xs[2..].iter().cloned());
            Some(out)
        }
        ("map" | "mapSeq" | "mapPar", 2) | ("mapGlobal" | "mapWorkgroup" | "mapLocal", 2 | 3) => {
            Some(vec![xs?.first()?.clone()])
        }
        ("zip", 2) => Some(vec![call.first_shape.as_ref()?.first()?.clone()]),
        _ => None,
    }
}

/// The number of elements of a primitive's result given one more argument `x`.
fn call_count(call: &Call, x: &Data) -> Option<Nat> {
    match (call.prim.as_str(), call.args + 1) {
        ("map" | "mapSeq" | "mapPar", 2) | ("mapGlobal" | "mapWorkgroup" | "mapLocal", 2 | 3) => x.count.clone(),
        ("zip", 2) => call.first_count.clone(),
        ("split", 2) => Some(Nat::div(x.count.clone()?, call.first_nat.clone()?).normalize()),
        ("interleave", 2) => call.first_nat.clone(),
        _ => None,
    }
}

fn is_prim(s: Symbol) -> bool {
    heddle_ir::prims::lookup(s.as_str()).is_some()
}

impl Analysis<Prog> for ProgAnalysis {
    type Data = Data;

    fn make(egraph: &mut ProgGraph, enode: &Prog, _id: Id) -> Data {
        let d = |i: &Id| &egraph[*i].data;
        let mut out = Data::default();
        for c in enode.children() {
            out.free.extend(d(c).free.iter().copied());
            out.opaque |= d(c).opaque;
        }
        match enode {
            Prog::Sym(s) => out.sym = Some(*s),
            Prog::Var([s]) => {
                if let Some(name) = d(s).sym {
                    out.free.insert(name);
                    if is_prim(name) {
                        out.call = Some(Call {
                            prim: name,
                            args: 0,
                            first_nat: None,
                            first_shape: None,
                            first_count: None,
                            first_input: false,
                        });
                    } else {
                        out.nat = Some(Nat::var(name.as_str()));
                        out.shape = egraph.analysis.params.get(&name).cloned();
                        out.count = egraph.analysis.counts.get(&name).cloned();
                        out.input = out.count.is_some();
                    }
                }
            }
            Prog::Lit(l) => {
                out.lit = Some(*l);
                if let Literal::Int(v) = l
                    && *v >= 0
                {
                    out.nat = Some(Nat::Lit(*v));
                }
            }
            Prog::Section(op) => out.section = Some(*op),
            Prog::NatValue(n) => {
                out.opaque = true;
                out.nat = Some(n.clone());
            }
            Prog::Ty(_) => out.opaque = true,
            // A binder's name is not free in its scope; the annotation of a
            // `fun` parameter and the value of a `let` are outside it.
            Prog::Lam(_, [s, outside, body]) | Prog::Let([s, outside, body]) => {
                let mut inner = d(body).free.clone();
                if let Some(name) = d(s).sym {
                    inner.remove(&name);
                }
                out.free = d(outside).free.union(&inner).copied().collect();
            }
            Prog::NLam([s, body]) => {
                out.free = d(body).free.clone();
                if let Some(name) = d(s).sym {
                    out.free.remove(&name);
                }
            }
            Prog::App(_, [f, x]) => {
                if let Some(c) = &d(f).call {
                    out.shape = call_shape(c, d(x));
                    out.count = call_count(c, d(x)).or_else(|| out.shape.as_ref().and_then(|s| s.first().cloned()));
                    out.input = c.prim.as_str() == "zip" && c.args == 1 && c.first_input && d(x).input;
                    if c.args < 3 {
                        let first = c.args == 0;
                        out.call = Some(Call {
                            prim: c.prim,
                            args: c.args + 1,
                            first_nat: if first { d(x).nat.clone() } else { c.first_nat.clone() },
                            first_shape: if first { d(x).shape.clone() } else { c.first_shape.clone() },
                            first_count: if first { d(x).count.clone() } else { c.first_count.clone() },
                            first_input: if first { d(x).input } else { c.first_input },
                        });
                    }
                }
            }
            Prog::Binary(op, [l, r]) => {
                if let (Some(op), Some(a), Some(b)) = (nat_op(*op), &d(l).nat, &d(r).nat) {
                    out.nat = Some(Nat::bin(op, a.clone(), b.clone()));
                }
            }
            _ => {}
        }
        out
    }

    fn merge(&mut self, a: &mut Data, b: Data) -> DidMerge {
        let before = a.clone();
        a.free.extend(b.free.iter().copied());
        a.opaque |= b.opaque;
        // Equal classes denote equal values, so either side's facts hold.
        fill(&mut a.sym, &b.sym);
        fill(&mut a.nat, &b.nat);
        fill(&mut a.lit, &b.lit);
        fill(&mut a.section, &b.section);
        fill(&mut a.call, &b.call);
        fill(&mut a.count, &b.count);
        a.input |= b.input;
        match (&a.shape, &b.shape) {
            (Some(x), Some(y)) if y.len() > x.len() => a.shape = b.shape.clone(),
            (None, Some(_)) => a.shape = b.shape.clone(),
            _ => {}
        }
        DidMerge(*a != before, *a != b)
    }
}

fn fill<T: Clone>(a: &mut Option<T>, b: &Option<T>) {
    if a.is_none() {
        a.clone_from(b);
    }
}

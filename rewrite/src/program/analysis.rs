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
use heddle_ir::nat::NatOp;
use heddle_ir::{Nat, Type};
use std::collections::{BTreeSet, HashMap};

/// An e-graph of programs.
pub type ProgGraph = EGraph<Prog, ProgAnalysis>;

/// The analysis; holds the kernel parameters' array lengths.
#[derive(Clone, Debug, Default)]
pub struct ProgAnalysis {
    /// For each kernel parameter bound once in the program: the lengths of
    /// its outer non-position-dependent array dimensions.
    pub params: HashMap<Symbol, Vec<Nat>>,
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
}

/// The outer lengths of a type: `[[float]_m]_n` gives `[n, m]`; stops at
/// the first position-dependent or non-array level.
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
                        out.call = Some(Call { prim: name, args: 0, first_nat: None, first_shape: None });
                    } else {
                        out.nat = Some(Nat::var(name.as_str()));
                        out.shape = egraph.analysis.params.get(&name).cloned();
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
                    if c.args < 3 {
                        let first = c.args == 0;
                        out.call = Some(Call {
                            prim: c.prim,
                            args: c.args + 1,
                            first_nat: if first { d(x).nat.clone() } else { c.first_nat.clone() },
                            first_shape: if first { d(x).shape.clone() } else { c.first_shape.clone() },
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

//! Sketches: the shape an extracted program must have (RISE's
//! sketch-guided equality saturation, Koehler et al. 2022).
//!
//! ```text
//! sketch ::= '?' | NAME | NAME '(' arg (',' arg)* ')'
//! arg    ::= sketch | INTEGER
//! ```
//!
//! `?` is any term. `NAME` is a primitive, and `NAME(s1, …, sk)` is
//! satisfied by a term that *contains* a use of that primitive whose first
//! k arguments (an optional OpenCL dimension, `mapLocal(1, f)`'s `1`, is not
//! counted) contain terms satisfying `s1 … sk`; an integer argument must be
//! that literal. So `mapWorkgroup(mapLocal(?))` is any program with a
//! `mapWorkgroup` whose function uses `mapLocal` somewhere, and
//! `join(mapWorkgroup(?))` a `join` of what a `mapWorkgroup` produced. A bare
//! `NAME` needs only a use of it.
//!
//! A sketch becomes goals for extraction ([`super::extract::Goals`]): the
//! cheapest term of the root class that satisfies it, found alongside the
//! cost model's contexts.

use super::analysis::ProgGraph;
use super::extract::Goals;
use super::lang::Prog;
use egg::Language;
use heddle_ir::expr::Literal;
use std::fmt;

/// A parsed sketch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sketch {
    /// `?`
    Any,
    /// An integer literal (as an argument).
    Lit(i64),
    /// A primitive with sketches for its first arguments.
    Prim(String, Vec<Sketch>),
}

impl fmt::Display for Sketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sketch::Any => f.write_str("?"),
            Sketch::Lit(v) => write!(f, "{v}"),
            Sketch::Prim(p, args) if args.is_empty() => f.write_str(p),
            Sketch::Prim(p, args) => {
                write!(f, "{p}(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// A sketch's syntax error: byte offset and message.
pub type SketchError = (usize, String);

/// Nesting deeper than this is refused (the parser recurses).
const MAX_DEPTH: usize = 64;

struct P<'a> {
    s: &'a [u8],
    at: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn sketch(&mut self, depth: usize, arg: bool) -> Result<Sketch, SketchError> {
        if depth > MAX_DEPTH {
            return Err((self.at, format!("the sketch nests deeper than {MAX_DEPTH}")));
        }
        self.ws();
        let start = self.at;
        if self.eat(b'?') {
            return Ok(Sketch::Any);
        }
        while self.at < self.s.len() && (self.s[self.at].is_ascii_alphanumeric() || self.s[self.at] == b'_') {
            self.at += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
        if word.is_empty() {
            return Err((start, "expected `?`, a primitive's name or (as an argument) an integer".into()));
        }
        if word.bytes().all(|b| b.is_ascii_digit()) {
            if !arg {
                return Err((start, "an integer can only be an argument".into()));
            }
            return word.parse().map(Sketch::Lit).map_err(|_| (start, format!("`{word}` is too large")));
        }
        if heddle_ir::prims::lookup(word).is_none() {
            return Err((start, format!("`{word}` is not a primitive")));
        }
        let mut args = Vec::new();
        if self.eat(b'(') {
            loop {
                args.push(self.sketch(depth + 1, true)?);
                if self.eat(b')') {
                    break;
                }
                if !self.eat(b',') {
                    self.ws();
                    return Err((self.at, "expected `,` or `)`".into()));
                }
            }
        }
        Ok(Sketch::Prim(word.to_string(), args))
    }
}

/// Parses a sketch.
pub fn parse(src: &str) -> Result<Sketch, SketchError> {
    let mut p = P { s: src.as_bytes(), at: 0 };
    let s = p.sketch(0, false)?;
    p.ws();
    if p.at < src.len() {
        return Err((p.at, "unexpected text after the sketch".into()));
    }
    Ok(s)
}

/// What a goal asks of a term.
#[derive(Clone, Debug)]
enum Goal {
    /// Anything.
    Free,
    /// Contains a use of sketch node `s`.
    Contains(usize),
    /// Is the primitive of node `s` applied to `q` counted arguments
    /// (`q` = its arity: at least that many), the first meeting the
    /// node's argument sketches.
    Applied(usize, usize),
    /// Is this integer literal.
    Lit(i64),
}

/// A sketch as extraction goals.
pub struct SketchGoals {
    /// The primitive nodes of the sketch: name and argument goals.
    nodes: Vec<(String, Vec<u16>)>,
    goals: Vec<Goal>,
    root: u16,
}

impl SketchGoals {
    /// Compiles a sketch.
    pub fn new(s: &Sketch) -> SketchGoals {
        let mut g = SketchGoals { nodes: Vec::new(), goals: vec![Goal::Free], root: 0 };
        g.root = g.arg_goal(s);
        g
    }

    fn push(&mut self, goal: Goal) -> u16 {
        self.goals.push(goal);
        (self.goals.len() - 1) as u16
    }

    /// The goal an argument (or the whole sketch) stands for.
    fn arg_goal(&mut self, s: &Sketch) -> u16 {
        match s {
            Sketch::Any => 0,
            Sketch::Lit(v) => self.push(Goal::Lit(*v)),
            Sketch::Prim(name, args) => {
                let arg_goals = args.iter().map(|a| self.arg_goal(a)).collect::<Vec<_>>();
                let k = self.nodes.len();
                let contains = self.push(Goal::Contains(k));
                self.nodes.push((name.clone(), arg_goals));
                // `Applied(k, q)` for q = 0 ..= arity, at consecutive indices after `contains`.
                for q in 0..=self.nodes[k].1.len() {
                    self.push(Goal::Applied(k, q));
                }
                contains
            }
        }
    }

    fn applied(&self, k: usize, q: usize) -> u16 {
        let contains = self.goals.iter().position(|g| matches!(g, Goal::Contains(j) if *j == k)).unwrap_or(0);
        (contains + 1 + q) as u16
    }
}

fn has_optional_dim(prim: &str) -> bool {
    matches!(prim, "mapGlobal" | "mapWorkgroup" | "mapLocal")
}

impl Goals for SketchGoals {
    fn root(&self) -> u16 {
        self.root
    }

    fn alternatives(&self, g: &ProgGraph, n: &Prog, goal: u16) -> Vec<Vec<u16>> {
        let arity = n.children().len();
        match &self.goals[goal as usize] {
            Goal::Free => vec![vec![0; arity]],
            Goal::Lit(v) => match n {
                Prog::Lit(Literal::Int(x)) if x == v => vec![vec![]],
                _ => vec![],
            },
            Goal::Contains(k) => {
                // Here (this node is the application), or in one child.
                let mut out = self.alternatives(g, n, self.applied(*k, self.nodes[*k].1.len()));
                for c in 0..arity {
                    let mut alt = vec![0; arity];
                    alt[c] = goal;
                    out.push(alt);
                }
                out
            }
            Goal::Applied(k, q) => {
                let (prim, args) = &self.nodes[*k];
                match n {
                    Prog::Var([s]) if *q == 0 && g[*s].data.sym.is_some_and(|x| x.as_str() == prim) => vec![vec![0]],
                    Prog::App(_, [_, x]) => {
                        let mut out = Vec::new();
                        // An OpenCL dimension right after the primitive is not counted.
                        if *q == 0 && has_optional_dim(prim) && g[*x].data.nat.is_some() {
                            out.push(vec![goal, 0]);
                        }
                        if *q >= 1 {
                            out.push(vec![self.applied(*k, q - 1), args[q - 1]]);
                        }
                        // Arguments beyond the sketch's are free.
                        if *q == args.len() {
                            out.push(vec![goal, 0]);
                        }
                        out
                    }
                    _ => vec![],
                }
            }
        }
    }
}

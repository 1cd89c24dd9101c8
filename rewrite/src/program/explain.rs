//! Why the extracted program equals the input: the chain of rule
//! applications, from egg's explanations.
//!
//! A run with explanations enabled records, for every union, the rule that
//! caused it. egg's flat explanation of `input = extracted` is a sequence
//! of whole terms, each obtained from the one before by one rule applied at
//! one position, left to right (*forward*) or right to left (*backward*:
//! e-graph equalities are symmetric, so a proof may use a rule in reverse).
//! [`Step`] names the rule, the position (a path of child indices and a
//! readable description) and the sub-term before and after.
//!
//! [`replay`] checks a chain independently of egg: each step's rule is
//! matched and instantiated on the term alone ([`super::term`]), its
//! conditions decided on an e-graph holding only that term, and the result
//! compared with the next term up to the names of bound variables. The
//! first term must be the input and the last the extracted program.

use super::analysis::{ProgAnalysis, ProgGraph};
use super::convert::rec_to_expr;
use super::lang::Prog;
use super::rulefile::Rule;
use super::term::{self, Bindings};
use egg::{FlatTerm, Id, Language, RecExpr, Subst, Symbol};
use std::collections::HashMap;

/// One rule application.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Step {
    /// The rule's name.
    pub rule: String,
    /// `true` when the rule was used right to left.
    pub backward: bool,
    /// Child indices from the root of the kernel to the rewritten sub-term.
    pub path: Vec<usize>,
    /// The same position in words (`fun values > argument 2 of map > …`).
    pub location: String,
    /// The sub-term before the step, printed.
    pub before: String,
    /// The sub-term after the step, printed.
    pub after: String,
}

/// The chain from the input to the extracted program.
#[derive(Clone, Debug, Default)]
pub struct Explanation {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The whole kernel before the first step and after each one
    /// (`steps.len() + 1` terms).
    pub terms: Vec<RecExpr<Prog>>,
}

fn annotated_path(t: &FlatTerm<Prog>, path: &mut Vec<usize>) -> Option<(Symbol, bool)> {
    if let Some(r) = t.forward_rule {
        return Some((r, false));
    }
    if let Some(r) = t.backward_rule {
        return Some((r, true));
    }
    for (k, c) in t.children.iter().enumerate() {
        path.push(k);
        if let Some(found) = annotated_path(c, path) {
            return Some(found);
        }
        path.pop();
    }
    None
}

/// Prints a sub-term as heddle text (egg's s-expression where it is not an
/// expression, such as a binder's name).
pub fn print_subterm(t: &RecExpr<Prog>, id: Id) -> String {
    let sub = term::subterm(t, id);
    match rec_to_expr(&sub) {
        Ok(e) => heddle_ir::printer::print_expr(&e),
        Err(_) => sub.to_string(),
    }
}

/// The head and the number of arguments of an application spine.
fn spine(t: &RecExpr<Prog>, mut id: Id) -> (String, usize) {
    let mut args = 0;
    while let Prog::App(_, [f, _]) = &t[id] {
        args += 1;
        id = *f;
    }
    let head = match &t[id] {
        Prog::Var([s]) => match &t[*s] {
            Prog::Sym(s) => s.to_string(),
            _ => "a function".into(),
        },
        Prog::Lam(..) => "a fun".into(),
        _ => "a function".into(),
    };
    (head, args)
}

/// The position at the end of `path`, in words.
pub fn location(t: &RecExpr<Prog>, path: &[usize]) -> String {
    let mut parts = Vec::new();
    let Some(mut id) = (!t.as_ref().is_empty()).then(|| term::root(t)) else { return String::new() };
    let name = |id: Id| match &t[id] {
        Prog::Sym(s) => s.to_string(),
        _ => "?".into(),
    };
    for (depth, &k) in path.iter().enumerate() {
        let node = &t[id];
        // The path ends inside an application's spine: say which part of the call it is.
        if let Prog::App(..) = node
            && path[depth..].iter().all(|s| *s == 0)
        {
            let (head, args) = spine(t, id);
            let kept = args.saturating_sub(path.len() - depth);
            parts.push(if kept == 0 { head } else { format!("{head} with {kept} of its {args} arguments") });
            break;
        }
        let part = match (node, k) {
            (Prog::NLam([s, _]), 1) => Some(format!("nFun {}", name(*s))),
            (Prog::Lam(_, [s, _, _]), 2) => Some(format!("fun {}", name(*s))),
            (Prog::Lam(_, [s, _, _]), 1) => Some(format!("type of {}", name(*s))),
            (Prog::Let([s, _, _]), 1) => Some(format!("value of let {}", name(*s))),
            (Prog::Let([s, _, _]), 2) => Some(format!("let {}", name(*s))),
            (Prog::App(_, [f, _]), 1) => {
                let (head, args) = spine(t, *f);
                Some(format!("argument {} of {head}", args + 1))
            }
            // Down the spine of an application: named at the argument.
            (Prog::App(..), _) | (Prog::Annot(_), 0) => None,
            (Prog::Index(_), 0) => Some("array of @".into()),
            (Prog::Index(_), _) => Some("index of @".into()),
            (Prog::Proj(f, _), _) => Some(format!("tuple of .{f}")),
            (Prog::Tuple(_), k) => Some(format!("component {} of a tuple", k + 1)),
            (Prog::Binary(op, _), 0) => Some(format!("left of {}", op.symbol())),
            (Prog::Binary(op, _), _) => Some(format!("right of {}", op.symbol())),
            (Prog::Unary(..), _) => Some("operand".into()),
            (Prog::Select(_), 0) => Some("condition of select".into()),
            (Prog::Select(_), 1) => Some("then of select".into()),
            (Prog::Select(_), _) => Some("else of select".into()),
            _ => Some(format!("child {k}")),
        };
        parts.extend(part);
        match node.children().get(k) {
            Some(c) => id = *c,
            None => break,
        }
    }
    if parts.is_empty() { "the kernel".into() } else { parts.join(" > ") }
}

fn flat_to_rec(t: &FlatTerm<Prog>) -> RecExpr<Prog> {
    fn go(t: &FlatTerm<Prog>, out: &mut RecExpr<Prog>) -> Id {
        let mut node = t.node.clone();
        for (c, child) in node.children_mut().iter_mut().zip(&t.children) {
            *c = go(child, out);
        }
        out.add(node)
    }
    let mut out = RecExpr::default();
    go(t, &mut out);
    out
}

/// Turns egg's flat explanation into steps.
pub fn from_flat(flat: &[FlatTerm<Prog>]) -> Explanation {
    let terms: Vec<RecExpr<Prog>> = flat.iter().map(flat_to_rec).collect();
    let mut steps = Vec::new();
    for k in 1..flat.len() {
        let mut path = Vec::new();
        let Some((rule, backward)) = annotated_path(&flat[k], &mut path) else { continue };
        let (before, after) = (&terms[k - 1], &terms[k]);
        let show = |t: &RecExpr<Prog>| term::at_path(t, &path).map_or_else(String::new, |id| print_subterm(t, id));
        steps.push(Step {
            rule: rule.to_string(),
            backward,
            location: location(before, &path),
            before: show(before),
            after: show(after),
            path,
        });
    }
    Explanation { steps, terms }
}

/// Why a chain does not replay.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// The chain does not start at the input.
    #[error("the first term is not the input program")]
    Start,
    /// The chain does not end at the extracted program.
    #[error("the last term is not the extracted program")]
    End,
    /// A step names no rule of the set.
    #[error("step {step}: no rule named `{rule}`")]
    UnknownRule {
        /// 1-based.
        step: usize,
        /// The name.
        rule: String,
    },
    /// A step is not what its rule gives.
    #[error("step {step} (`{rule}` at {location}): {why}")]
    Step {
        /// 1-based.
        step: usize,
        /// The rule.
        rule: String,
        /// Where.
        location: String,
        /// What went wrong.
        why: String,
    },
}

/// Applies `rule` at `path` of `from` (left to right): the resulting term,
/// or why it does not apply. New binders get names that occur nowhere in
/// `from`.
pub fn apply_at(
    rule: &Rule,
    from: &RecExpr<Prog>,
    path: &[usize],
    analysis: &ProgAnalysis,
) -> Result<RecExpr<Prog>, String> {
    let at = term::at_path(from, path).ok_or("the position is not in the term")?;
    let lhs = &rule.lhs.ast;
    let mut b = Bindings::new();
    if !term::match_term(lhs, term::root_of_pattern(lhs), from, at, &mut b) {
        return Err(format!("the left-hand side does not match `{}`", print_subterm(from, at)));
    }
    // Conditions are facts about classes: decide them on an e-graph of the term.
    let mut g = ProgGraph::new(analysis.clone());
    g.add_expr(from);
    let mut subst = Subst::with_capacity(b.len());
    for (v, id) in &b {
        let class = g.add_expr(&term::subterm(from, *id));
        subst.insert(*v, class);
    }
    g.rebuild();
    if !rule.applier.admits(&g, &subst) {
        return Err("its condition or a binder's scope does not hold here".into());
    }
    let taken = term::names(from);
    let mut extra = HashMap::new();
    for (k, nb) in rule.applier.new_binders.iter().enumerate() {
        let mut name = Symbol::from(format!("{}_replay{k}", nb.base));
        let mut n = 0;
        while taken.contains(&name) {
            n += 1;
            name = Symbol::from(format!("{}_replay{k}_{n}", nb.base));
        }
        let mut e = RecExpr::default();
        e.add(Prog::Sym(name));
        extra.insert(nb.var, e);
    }
    for (v, e) in rule.applier.computed_terms(&g, &subst).ok_or("a natural it computes is unknown here")? {
        extra.insert(v, e);
    }
    let rhs = &rule.applier.rhs.ast;
    let mut new = RecExpr::default();
    term::instantiate(rhs, term::root_of_pattern(rhs), from, &b, &extra, &mut new)
        .ok_or("the right-hand side uses an unbound variable")?;
    term::replace_at(from, path, &new).ok_or_else(|| "the position is not in the term".to_string())
}

/// Checks `explanation` step by step against `rules` (see the module docs).
pub fn replay(
    input: &RecExpr<Prog>,
    extracted: &RecExpr<Prog>,
    explanation: &Explanation,
    rules: &[Rule],
    analysis: &ProgAnalysis,
) -> Result<(), ReplayError> {
    let terms = &explanation.terms;
    let same = |a: &RecExpr<Prog>, b: &RecExpr<Prog>| {
        !a.as_ref().is_empty()
            && !b.as_ref().is_empty()
            && term::alpha_eq(a, term::root(a), b, term::root(b), &mut Vec::new())
    };
    match terms.first() {
        Some(t) if same(t, input) => {}
        None if same(input, extracted) => return Ok(()),
        _ => return Err(ReplayError::Start),
    }
    if terms.len() != explanation.steps.len() + 1 {
        return Err(ReplayError::End);
    }
    for (k, step) in explanation.steps.iter().enumerate() {
        let rule = rules
            .iter()
            .find(|r| r.name == step.rule)
            .ok_or_else(|| ReplayError::UnknownRule { step: k + 1, rule: step.rule.clone() })?;
        let fail = |why: String| ReplayError::Step {
            step: k + 1,
            rule: step.rule.clone(),
            location: step.location.clone(),
            why,
        };
        // Backward: the rule, applied to the later term, gives the earlier one.
        let (from, to) = if step.backward { (&terms[k + 1], &terms[k]) } else { (&terms[k], &terms[k + 1]) };
        let got = apply_at(rule, from, &step.path, analysis).map_err(fail)?;
        if !same(&got, to) {
            let at =
                |t: &RecExpr<Prog>| term::at_path(t, &step.path).map_or_else(String::new, |id| print_subterm(t, id));
            return Err(fail(format!("the rule gives `{}`, the explanation says `{}`", at(&got), at(to))));
        }
    }
    match terms.last() {
        Some(t) if same(t, extracted) => Ok(()),
        _ => Err(ReplayError::End),
    }
}

//! Turning the two sides of a rule (parsed heddle expressions) into egg
//! patterns, and the binder bookkeeping that keeps rewrites capture-free.
//!
//! * `?x` (parsed as an identifier at a recorded position) is an egg
//!   pattern variable; a `for ?k in …` parameter becomes its literal.
//! * A lambda parameter on the left matches any name: it becomes a pattern
//!   variable bound to the matched lambda's name, and its uses become
//!   `Var(?that)`; its annotation matches anything unless one is written.
//! * A lambda on the right that reuses a left parameter's name rebinds that
//!   same (matched) name; any other right-hand lambda is *new*, and the
//!   applier names it so that it captures nothing ([`super::applier`]).

use super::applier::NatTerm;
use super::convert::{Ast, Names, add_expr, node};
use super::lang::Prog;
use egg::{ENodeOrVar, Id, Symbol, Var};
use heddle_ir::expr::{Expr, Literal, Param};
use heddle_ir::{Name, Span};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Which side of a rule is being built.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Lhs,
    Rhs,
}

/// A lambda parameter of the left-hand side.
#[derive(Clone)]
struct LhsBinder {
    name: Name,
    var: Var,
    ty: Option<Var>,
}

/// A lambda introduced by the right-hand side.
#[derive(Clone, Debug)]
pub struct NewBinder {
    /// The pattern variable that receives its name.
    pub var: Var,
    /// The name written in the rule, used unless it would capture.
    pub base: Symbol,
    /// Pattern variables inside its body: its name must not be free in them.
    pub under: Vec<Var>,
}

/// An egg variable for the user's `?name`.
pub fn user_var(name: &str) -> Var {
    // `?` followed by an identifier always parses.
    format!("?{name}").parse().unwrap_or_else(|_| "?_".parse().expect("`?_` is a variable"))
}

fn internal_var(kind: &str, n: usize) -> Var {
    format!("?__{kind}{n}").parse().expect("internal variables parse")
}

/// Builds one side; records pattern-variable occurrences with the binders
/// around them.
struct PatNames<'a> {
    side: Side,
    pvar_at: &'a HashSet<usize>,
    fixed: &'a HashMap<String, i64>,
    lhs_binders: Vec<LhsBinder>,
    new_binders: Vec<NewBinder>,
    scope: Vec<(Name, Var)>,
    /// (pattern variable, binder variables around this occurrence, span)
    occurrences: Vec<(Var, Vec<Var>, Span)>,
    counter: usize,
}

type Fail = (Span, String);

impl PatNames<'_> {
    fn is_pvar(&self, span: Span) -> bool {
        self.pvar_at.contains(&(span.start as usize))
    }
}

impl Names for PatNames<'_> {
    fn var(&mut self, out: &mut Ast, e: &Expr, x: &Name) -> Result<Id, Fail> {
        if self.is_pvar(e.span) {
            // The preprocessor spelled `?k` as `_k`.
            let name = &x.as_str()[1..];
            if let Some(v) = self.fixed.get(name) {
                return Ok(node(out, Prog::Lit(Literal::Int(*v))));
            }
            let v = user_var(name);
            let around = self.scope.iter().map(|(_, b)| *b).collect();
            self.occurrences.push((v, around, e.span));
            return Ok(out.add(ENodeOrVar::Var(v)));
        }
        if let Some((_, b)) = self.scope.iter().rev().find(|(n, _)| n == x) {
            let s = out.add(ENodeOrVar::Var(*b));
            return Ok(node(out, Prog::Var([s])));
        }
        let s = node(out, Prog::Sym(Symbol::from(x.as_str())));
        Ok(node(out, Prog::Var([s])))
    }

    fn bind(&mut self, out: &mut Ast, p: &Param) -> Result<(Id, Id), Fail> {
        if self.is_pvar(p.span) {
            return Err((
                p.span,
                "a pattern variable cannot be a parameter: parameter names in rules already match any name".into(),
            ));
        }
        self.counter += 1;
        let written_ty = p.ty.clone().map(|t| node(out, Prog::Ty(t)));
        let (var, ty) = match self.side {
            Side::Lhs => {
                let var = internal_var("b", self.counter);
                let tyvar = written_ty.is_none().then(|| internal_var("t", self.counter));
                self.lhs_binders.push(LhsBinder { name: p.name.clone(), var, ty: tyvar });
                let ty = match (written_ty, tyvar) {
                    (Some(t), _) => t,
                    (None, Some(v)) => out.add(ENodeOrVar::Var(v)),
                    (None, None) => node(out, Prog::NoTy),
                };
                (var, ty)
            }
            Side::Rhs => {
                let same: Vec<&LhsBinder> = self.lhs_binders.iter().filter(|b| b.name == p.name).collect();
                match same.as_slice() {
                    [b] => {
                        let ty = match (written_ty, b.ty) {
                            (Some(t), _) => t,
                            (None, Some(v)) => out.add(ENodeOrVar::Var(v)),
                            (None, None) => node(out, Prog::NoTy),
                        };
                        (b.var, ty)
                    }
                    [] => {
                        let var = internal_var("n", self.counter);
                        let base = Symbol::from(p.name.as_str());
                        self.new_binders.push(NewBinder { var, base, under: Vec::new() });
                        (var, written_ty.unwrap_or_else(|| node(out, Prog::NoTy)))
                    }
                    _ => {
                        return Err((
                            p.span,
                            format!(
                                "parameter `{}` is ambiguous: the left-hand side has several parameters of that name",
                                p.name.as_str()
                            ),
                        ));
                    }
                }
            }
        };
        self.scope.push((p.name.clone(), var));
        Ok((out.add(ENodeOrVar::Var(var)), ty))
    }

    fn unbind(&mut self) {
        self.scope.pop();
    }
}

/// Both sides of a rule as egg patterns, with the checks the applier makes.
pub struct Compiled {
    /// The left-hand side.
    pub lhs: Ast,
    /// The right-hand side.
    pub rhs: Ast,
    /// `(v, b)`: the name bound to the left binder `b` must not be free in
    /// `v`, because the right-hand side uses `v` outside that binder.
    pub scope_checks: Vec<(Var, Var)>,
    /// Binders the right-hand side introduces.
    pub new_binders: Vec<NewBinder>,
    /// The user's pattern variables of the left-hand side.
    pub lhs_vars: BTreeSet<Var>,
    /// `len(?x)` and `count(?x)` on the right-hand side: a variable for each, and the natural it stands for.
    pub computed: Vec<(Var, NatTerm)>,
}

/// Replaces each `len(?x)` and `count(?x)` of a right-hand side by a pattern variable of
/// its own (spelled like a `?` variable, at the call's offset), recording
/// the length it stands for.
fn computed_lengths(e: &mut Expr, pvar_at: &mut HashSet<usize>, out: &mut Vec<(Var, NatTerm)>) {
    if let heddle_ir::ExprKind::App { func, args } = &e.kind
        && let heddle_ir::ExprKind::Var(f) = &func.kind
        && matches!(f.as_str(), "len" | "count")
        && let [arg] = args.as_slice()
        && let heddle_ir::ExprKind::Var(x) = &arg.kind
        && pvar_at.contains(&(arg.span.start as usize))
    {
        let name = format!("_{}{}", f.as_str(), x.as_str());
        let var = user_var(&name[1..]);
        let of = user_var(&x.as_str()[1..]);
        if !out.iter().any(|(v, _)| *v == var) {
            out.push((var, if f.as_str() == "len" { NatTerm::Len(of) } else { NatTerm::Count(of) }));
        }
        pvar_at.insert(e.span.start as usize);
        e.kind = heddle_ir::ExprKind::Var(Name::from(name.as_str()));
        return;
    }
    e.for_each_child_mut(&mut |c| computed_lengths(c, pvar_at, out));
}

/// Where a compile error is: on the right-hand side (else the left), the
/// span in that side's text, the message.
pub type CompileError = (bool, Span, String);

/// Compiles a rule's sides. `lhs_pv` and `rhs_pv` hold the offsets (in the
/// spans of `lhs` and `rhs`) where a `?` variable was written; `fixed` the
/// values of `for` parameters.
pub fn compile(
    lhs: &Expr,
    rhs: &Expr,
    (lhs_pv, rhs_pv): (&HashSet<usize>, &HashSet<usize>),
    fixed: &HashMap<String, i64>,
) -> Result<Compiled, CompileError> {
    let on = |rhs: bool| move |(span, msg): Fail| (rhs, span, msg);
    if let Some(span) = find_let(lhs) {
        return Err((false, span, "`let` is not supported in rules".into()));
    }
    if let Some(span) = find_let(rhs) {
        return Err((true, span, "`let` is not supported in rules".into()));
    }
    let mut names = PatNames {
        side: Side::Lhs,
        pvar_at: lhs_pv,
        fixed,
        lhs_binders: Vec::new(),
        new_binders: Vec::new(),
        scope: Vec::new(),
        occurrences: Vec::new(),
        counter: 0,
    };
    let mut lhs_ast = Ast::default();
    add_expr(&mut lhs_ast, lhs, &mut names).map_err(on(false))?;
    if matches!(lhs_ast.as_ref().last(), Some(ENodeOrVar::Var(_))) {
        return Err((
            false,
            lhs.span,
            "the left-hand side must not be a lone pattern variable: it would match everything".into(),
        ));
    }
    let lhs_occ = std::mem::take(&mut names.occurrences);
    let mut rhs = rhs.clone();
    let mut rhs_pv = rhs_pv.clone();
    let mut computed = Vec::new();
    computed_lengths(&mut rhs, &mut rhs_pv, &mut computed);
    names.side = Side::Rhs;
    names.pvar_at = &rhs_pv;
    let mut rhs_ast = Ast::default();
    add_expr(&mut rhs_ast, &rhs, &mut names).map_err(on(true))?;

    let lhs_vars: BTreeSet<Var> = lhs_occ.iter().map(|o| o.0).collect();
    for (_, len) in &computed {
        if let NatTerm::Len(x) | NatTerm::Count(x) = len
            && !lhs_vars.contains(x)
        {
            return Err((true, rhs.span, format!("`{x}` does not occur on the left-hand side")));
        }
    }
    let mut around_lhs: HashMap<Var, BTreeSet<Var>> = HashMap::new();
    for (v, around, _) in &lhs_occ {
        around_lhs.entry(*v).or_default().extend(around.iter().copied());
    }
    let mut scope_checks = BTreeSet::new();
    for (v, around, span) in &names.occurrences {
        if !lhs_vars.contains(v) && !computed.iter().any(|(c, _)| c == v) {
            return Err((true, *span, format!("`{v}` does not occur on the left-hand side")));
        }
        for b in around_lhs.get(v).into_iter().flatten() {
            if !around.contains(b) {
                scope_checks.insert((*v, *b));
            }
        }
        for nb in names.new_binders.iter_mut() {
            if around.contains(&nb.var) && !nb.under.contains(v) {
                nb.under.push(*v);
            }
        }
    }
    Ok(Compiled {
        lhs: lhs_ast,
        rhs: rhs_ast,
        scope_checks: scope_checks.into_iter().collect(),
        new_binders: names.new_binders,
        lhs_vars,
        computed,
    })
}

fn find_let(e: &Expr) -> Option<Span> {
    if let heddle_ir::ExprKind::Let { .. } = e.kind {
        return Some(e.span);
    }
    let mut found = None;
    e.for_each_child(&mut |c| {
        if found.is_none() {
            found = find_let(c);
        }
    });
    found
}

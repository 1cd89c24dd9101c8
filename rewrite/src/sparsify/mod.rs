//! # The sparsity-agnostic front door
//!
//! [`sparsify`] turns a kernel written over dense arrays (`A: [[float]_m]_n`)
//! plus an encoding for one operand into the kernel over the operand's
//! coordinate-hierarchy view (`A: tensor<?x?xf32, #CSR>`, LANGUAGE.md §6).
//!
//! It works in two steps:
//!
//! 1. **The dense-level law, structurally** ([`view`]): a dense level of the
//!    encoding is indexed by coordinate exactly like the dense array, so a
//!    `map` over it stays; a compressed level below it is the dense row only
//!    through `densify(row)` (the dense array a `(crd, value)` list stands
//!    for). The operand's uses are rewritten accordingly, its size naturals
//!    become the tensor's `A_dim0`, `A_dim1`.
//! 2. **The sparse laws, as rewrite rules** (`laws.rules`, rules-as-data in
//!    the format of `builtin.rules`): an e-graph run removes `densify` where a
//!    law says how — zip with a dense operand becomes indexing by coordinate,
//!    multiplication by an absent entry is absent, `+` with identity 0 skips
//!    absent entries. The extracted program is the cheapest one with no
//!    `densify` left; if every program still has one, the kernel uses the
//!    dense row in a way no law covers and [`sparsify`] says where.
//!
//! The caller type-checks the result (heddle-typeck is not a dependency of
//! this crate); the CLI (`heddle sparsify`, `heddle run --encoding`,
//! `heddle search-formats`) does.
//!
//! A compressed outer level (DCSR, CDR) stores only some rows: the row map
//! then visits the stored rows and sends each result to its row coordinate
//! with `scatterAdd`, which is sound when a row's result is 0 for an absent
//! row (checked by [`absent`]).
//!
//! Column-first storage (CSC) is `densifyCols(A, n)`, the dense row-major
//! matrix whose columns are the compressed levels; the `columns-dot` law
//! turns the row-wise dot product over it into columns scaled by `x` and
//! scattered into the rows. Other uses of a CSC operand are refused.
//!
//! DIA and row blocks (BSR) are rebuilt from their stored structure: a DIA
//! row is `densifyGuarded` of the diagonals' `(column, value)` pairs, each
//! with a guard saying whether its column is inside the matrix (padding at
//! a diagonal's ends is never an entry); a BSR row is `densifyBlocks` of its
//! block row's blocks, each a run of `c` values at block column `b.1`. Their
//! laws keep the guard, and slice the dense operand by blocks. A block row
//! of BSR(r, c) with r > 1 then carries its r lanes' sums together across
//! its blocks (`lanes.rs`: the vector-lane form); with c = 1 a lane's row is
//! CSR's `densify` of `(block column, value)` pairs.
//!
//! What is not handled yet, each refused with its reason: singleton levels
//! (COO), counting levels (ELL), other block or difference arrangements, a
//! non-zero implicit value, and operands of rank above 2.

pub mod absent;
mod exprs;
mod lanes;
pub mod sell;
mod view;

use crate::program::analysis::ProgAnalysis;
use crate::program::convert::{expr_to_rec, rec_to_expr};
use crate::program::lang::Prog;
use crate::program::rulefile::{Rule, parse_rules};
use egg::{CostFunction, Extractor, Id, Language, Runner};
use heddle_ir::encoding::Encoding;
use heddle_ir::{Diagnostic, Program};
use std::collections::BTreeMap;

pub use view::{COLS_MARKER, MARKER, Plan, plan};

/// The sparsification laws, as shipped in `laws.rules`.
pub const LAWS: &str = include_str!("laws.rules");

/// The laws, parsed.
pub fn laws() -> Vec<Rule> {
    // The file is part of the crate and covered by tests; an error here is a bug.
    parse_rules("laws.rules", LAWS).unwrap_or_else(|errs| panic!("laws.rules: {errs:?}"))
}

/// The sparse kernel [`sparsify`] built.
#[derive(Clone, Debug)]
pub struct Sparsified {
    /// The program: the original's encodings and definitions, the new
    /// encoding definition, and the sparse kernel.
    pub program: Program,
    /// How often each law changed the e-graph.
    pub rules_applied: BTreeMap<String, usize>,
}

/// Extraction cost: size, with every `densify` priced out so that any
/// program without one is cheaper than every program with one.
struct NoMarker;

/// The price of one `densify`; larger than any kernel's size.
const MARKER_COST: u64 = 1 << 32;

impl CostFunction<Prog> for NoMarker {
    type Cost = u64;
    fn cost<C: FnMut(Id) -> u64>(&mut self, enode: &Prog, mut costs: C) -> u64 {
        let own = match enode {
            Prog::Sym(s) if s.as_str().starts_with(MARKER) => MARKER_COST,
            _ => 1,
        };
        enode.fold(own, |acc, id| acc.saturating_add(costs(id)))
    }
}

/// Rewrites the dense kernel of `program` so that parameter `operand` is
/// stored in `encoding`, defined in the result as `#enc_name`.
///
/// Errors are located in `program`'s source: the operand's parameter, the
/// use the front door cannot handle, or the row no law sparsifies.
pub fn sparsify(
    program: &Program,
    operand: &str,
    enc_name: &str,
    encoding: &Encoding,
) -> Result<Sparsified, Diagnostic> {
    let plan = plan(program, operand, enc_name, encoding)?;
    let (kernel, rules_applied) = apply_laws(&plan.kernel, &plan.rows, plan.operand_span, operand)?;
    // BSR(r, c) with r > 1: the block row's r sums carried together (`lanes`).
    let kernel = if plan.lanes.is_empty() { kernel } else { lanes::carry_lanes(&kernel, &plan.lanes) };
    Ok(Sparsified { program: Program { kernel, ..plan.program }, rules_applied })
}

/// Runs the laws on `kernel` (the structural step's output, with markers)
/// and extracts the cheapest program: the kernel with no marker left, tidied
/// (redexes reduced, the guarded laws' bindings as `let`s), and how often
/// each law applied. A kernel that keeps a marker is refused at the first of
/// `rows` (the row binders that got one), else at `operand_span`.
fn apply_laws(
    kernel: &heddle_ir::Expr,
    rows: &[heddle_ir::Span],
    operand_span: heddle_ir::Span,
    operand: &str,
) -> Result<(heddle_ir::Expr, BTreeMap<String, usize>), Diagnostic> {
    let rules = laws();
    let rec = expr_to_rec(kernel);
    let runner = Runner::<Prog, ProgAnalysis>::new(ProgAnalysis::default())
        .with_expr(&rec)
        .with_iter_limit(30)
        .with_node_limit(20_000)
        .with_time_limit(std::time::Duration::from_secs(5))
        .run(rules.iter().map(|r| &r.rewrite));
    let mut rules_applied: BTreeMap<String, usize> = rules.iter().map(|r| (r.name.clone(), 0)).collect();
    for it in &runner.iterations {
        for (name, n) in &it.applied {
            *rules_applied.entry(name.to_string()).or_default() += n;
        }
    }
    let (cost, best) = Extractor::new(&runner.egraph, NoMarker).find_best(runner.roots[0]);
    let kernel = rec_to_expr(&best).map_err(|m| {
        Diagnostic::new(operand_span, format!("internal: the sparsified kernel cannot be rebuilt: {}", m.0))
    })?;
    if cost >= MARKER_COST {
        let (at, what, label) = match rows.first() {
            Some(row) => (*row, "a row of ", "this row is used as a dense array"),
            None => (operand_span, "", "this operand is used as a dense array"),
        };
        return Err(Diagnostic::new(at, format!("no sparsification law removes the dense view of {what}`{operand}`"))
            .with_label(label)
            .with_note(format!(
                "the laws (rewrite/src/sparsify/laws.rules) cover zip with a dense operand under `*`, then a `+` reduction with identity 0; `{operand}`'s rows must be used only that way"
            )));
    }
    Ok((lets(&crate::program::beta::tidy(&kernel)), rules_applied))
}

/// `fun(x => body)(v)` (one unannotated parameter) as `let x = v in body`:
/// the guarded laws bind the column and the guard that way.
fn lets(e: &heddle_ir::Expr) -> heddle_ir::Expr {
    use heddle_ir::ExprKind;
    let mut out = e.clone();
    out.for_each_child_mut(&mut |c| *c = lets(c));
    if let ExprKind::App { func, args } = &out.kind
        && let ExprKind::Fun { params, body } = &func.kind
        && let ([p], [v]) = (params.as_slice(), args.as_slice())
        && p.ty.is_none()
    {
        return heddle_ir::Expr::new(
            ExprKind::Let { name: p.name.clone(), value: Box::new(v.clone()), body: body.clone() },
            out.span,
        );
    }
    out
}

#[cfg(test)]
mod tests;

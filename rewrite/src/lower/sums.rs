//! Σ elimination in lowering: what the simplifier leaves becomes lookups
//! into host prefix sums (`HostKind::PrefixSum`); no loop that evaluates a Σ
//! is ever generated (except with `naive_sums`, for measurements).
//!
//! A residual `sum(k = lo .. hi, f)` is `P[hi + 1] - P[lo]` for a buffer
//! `P[j] = sum(k = 0 .. j - 1, f)` the host fills once per launch. The
//! outermost Σ is taken first, so a Σ nested in another's summand (a
//! 3-level LIL's `sum(k = 0 .. b - 1, sum(k1 = 0 .. nrows@k - 1, len@k@k1))`)
//! is evaluated by the host while it fills the outer one's buffer — one pass
//! over the inner level. `P` needs `f` to depend on `k` and kernel-level
//! names only:
//!
//! - **Kernel-level summands**: `P` has as many terms as the array the Σ
//!   indexes into (`bound`), or `hi + 1` when `hi` itself is kernel-level (a
//!   joined array's whole length).
//! - **A Σ along one row of a nested input** (`sum(k = 0 .. r - 1,
//!   toNat(len@b@k))`, `b` a position): every occurrence of `k` is the last
//!   index of a lookup into one nested input at one row, so the Σ is
//!   re-indexed over that input's flat records, `q = start(b) + k`, and one
//!   prefix sum over all of `len` serves every row (`flat` in the host
//!   computation): one host prefix sum per level of the structure. `start(b)`
//!   is the row's flat position, itself eliminated the same way.

use super::{Env, Lowerer, unsupported};
use heddle_ir::expr::ExprKind;
use heddle_ir::loops::{ArgKind, BinOp, Block, Expr as L, HostBuffer, HostKind, Schedule, Stmt};
use heddle_ir::nat::NatCond;
use heddle_ir::{Diagnostic, Expr, Name, Nat, ScalarType, Type};

/// `toNat(P@at)`: entry `at` of the host buffer `p`.
fn lookup(p: &Name, at: Nat) -> Nat {
    Nat::ToNat(Box::new(Expr::synth(ExprKind::Index {
        array: Box::new(Expr::var(p.clone())),
        index: Box::new(Expr::synth(ExprKind::NatValue(at))),
    })))
}

/// `sum(k = lo .. hi, f) = P[hi + 1] - P[lo]` (and `P[0] = 0`).
fn range(p: &Name, lo: Nat, hi: Nat) -> Nat {
    let upper = lookup(p, Nat::add(hi, Nat::Lit(1)).normalize());
    if lo.const_value() == Some(0) { upper } else { Nat::sub(upper, lookup(p, lo)) }
}

/// Is `e` the variable `k` (as a program variable or an embedded natural)?
fn is_var(e: &Expr, k: &Name) -> bool {
    match &e.kind {
        ExprKind::Var(x) => x == k,
        ExprKind::NatValue(Nat::Var(x)) => x == k,
        _ => false,
    }
}

/// The array and leading indices of a lookup chain `A@i1@…@im`.
fn chain(e: &Expr) -> Option<(Name, Vec<Expr>)> {
    match &e.kind {
        ExprKind::Var(a) => Some((a.clone(), Vec::new())),
        ExprKind::Index { array, index } => {
            let (a, mut path) = chain(array)?;
            path.push((**index).clone());
            Some((a, path))
        }
        _ => None,
    }
}

/// The lookups `A@prefix@k` in a summand over `k`, when every occurrence of
/// `k` is the last index of one, and all share the array and prefix.
struct RowLookups {
    array: Name,
    prefix: Option<Vec<Expr>>,
    ok: bool,
}

impl RowLookups {
    fn nat(&mut self, n: &Nat, k: &Name) {
        match n {
            Nat::Var(x) if x == k => self.ok = false,
            Nat::ToNat(e) => self.expr(e, k),
            Nat::Sum { var, .. } if var == k => {}
            _ => n.for_each_child(&mut |c| self.nat(c, k)),
        }
    }
    fn expr(&mut self, e: &Expr, k: &Name) {
        if let ExprKind::Index { array, index } = &e.kind
            && is_var(index, k)
            && let Some((a, prefix)) = chain(array)
            && !prefix.iter().any(|i| i.mentions(k))
        {
            let same = self.prefix.as_ref().is_none_or(|p| *p == prefix && self.array == a);
            self.ok &= same;
            self.array = a;
            self.prefix = Some(prefix);
            return;
        }
        match &e.kind {
            ExprKind::Var(x) if x == k => self.ok = false,
            ExprKind::NatValue(n) => self.nat(n, k),
            _ => e.for_each_child(&mut |c| self.expr(c, k)),
        }
    }
}

/// `e` with every lookup `A@prefix@k` replaced by `A@q` (`A` read flat).
fn flatten_lookups(e: &Expr, k: &Name, q: &Name) -> Expr {
    if let ExprKind::Index { index, .. } = &e.kind
        && is_var(index, k)
        && let Some((a, _)) = chain(e)
    {
        return Expr::synth(ExprKind::Index { array: Box::new(Expr::var(a)), index: Box::new(Expr::var(q.clone())) });
    }
    let mut out = e.clone();
    out.for_each_child_mut(&mut |c| *c = flatten_lookups(c, k, q));
    if let ExprKind::NatValue(n) = &out.kind {
        out = Expr::synth(ExprKind::NatValue(flatten_nat(n, k, q)));
    }
    out
}

fn flatten_nat(n: &Nat, k: &Name, q: &Name) -> Nat {
    n.map_bottom_up(&mut |m| match m {
        Nat::ToNat(e) => Nat::ToNat(Box::new(flatten_lookups(&e, k, q))),
        other => other,
    })
}

/// Does `ty`, indexed `depth` times, hold arrays of single records (scalars
/// or tuples of scalars)? Then consecutive elements of such a row are
/// consecutive records of the flat buffer.
fn rows_of_records(ty: &Type, depth: usize) -> bool {
    match ty {
        Type::Array { elem, .. } if depth > 0 => rows_of_records(elem, depth - 1),
        Type::Array { elem, .. } => match &**elem {
            Type::Scalar(_) => true,
            Type::Tuple(ts) => ts.iter().all(|t| t.as_scalar().is_some()),
            _ => false,
        },
        _ => false,
    }
}

impl Lowerer<'_> {
    /// Are all free names of `n` (but `except`) kernel-level: parameters and count arrays?
    fn kernel_level(&self, n: &Nat, except: Option<&Name>) -> bool {
        super::nats::free_names(n).iter().all(|x| {
            Some(x) == except
                || heddle_ir::nat::counted::is_count_name(x)
                || self.kernel.params.iter().any(|p| p.name() == x)
        })
    }

    /// Replaces each Σ left in `n` by lookups into host prefix sums; `bound` is
    /// how many terms a prefix sum must cover when the Σ's upper bound is a
    /// position (the length of the array the Σ indexes into).
    pub(super) fn remove_sums(
        &mut self,
        n: &Nat,
        bound: Option<&Nat>,
        env: &Env,
        body: &mut Block,
    ) -> Result<Nat, Diagnostic> {
        if self.options.naive_sums {
            return self.naive_sums(n, env, body);
        }
        Ok(match n {
            Nat::Sum { var, lo, hi, body: summand } => {
                let lo = self.remove_sums(lo, bound, env, body)?;
                let hi = self.remove_sums(hi, bound, env, body)?;
                if self.kernel_level(summand, Some(var)) {
                    let count = match bound {
                        Some(b) => b.clone(),
                        None if self.kernel_level(&hi, None) => Nat::add(hi.clone(), Nat::Lit(1)).normalize(),
                        None => return Err(self.no_prefix_sum(n)),
                    };
                    let p = self.prefix_sum(var, summand, &count, Vec::new());
                    return Ok(range(&p, lo, hi));
                }
                match self.row_sum(var, &lo, &hi, summand, env, body)? {
                    Some(r) => r,
                    None => return Err(self.no_prefix_sum(n)),
                }
            }
            Nat::Bin(op, a, b) => Nat::Bin(
                *op,
                Box::new(self.remove_sums(a, bound, env, body)?),
                Box::new(self.remove_sums(b, bound, env, body)?),
            ),
            Nat::Cond(c, a, b) => {
                let c = self.remove_sums_cond(c, bound, env, body)?;
                Nat::Cond(
                    Box::new(c),
                    Box::new(self.remove_sums(a, bound, env, body)?),
                    Box::new(self.remove_sums(b, bound, env, body)?),
                )
            }
            other => other.clone(),
        })
    }

    fn remove_sums_cond(
        &mut self,
        c: &NatCond,
        bound: Option<&Nat>,
        env: &Env,
        body: &mut Block,
    ) -> Result<NatCond, Diagnostic> {
        Ok(match c {
            NatCond::Cmp(op, a, b) => {
                NatCond::Cmp(*op, self.remove_sums(a, bound, env, body)?, self.remove_sums(b, bound, env, body)?)
            }
            NatCond::And(a, b) => NatCond::And(
                Box::new(self.remove_sums_cond(a, bound, env, body)?),
                Box::new(self.remove_sums_cond(b, bound, env, body)?),
            ),
            NatCond::Or(a, b) => NatCond::Or(
                Box::new(self.remove_sums_cond(a, bound, env, body)?),
                Box::new(self.remove_sums_cond(b, bound, env, body)?),
            ),
            NatCond::Not(a) => NatCond::Not(Box::new(self.remove_sums_cond(a, bound, env, body)?)),
        })
    }

    fn no_prefix_sum(&self, n: &Nat) -> Diagnostic {
        unsupported(
            self.kernel.body.span,
            &format!("an access whose index needs {n}, which has no closed form and cannot be precomputed on the host"),
        )
    }

    /// A Σ along one row of a nested input, re-indexed over its flat records.
    fn row_sum(
        &mut self,
        k: &Name,
        lo: &Nat,
        hi: &Nat,
        summand: &Nat,
        env: &Env,
        body: &mut Block,
    ) -> Result<Option<Nat>, Diagnostic> {
        let mut found = RowLookups { array: Name::from(""), prefix: None, ok: true };
        found.nat(summand, k);
        let (true, Some(prefix)) = (found.ok, found.prefix) else { return Ok(None) };
        let array = found.array;
        let ty = self.kernel.params.iter().find_map(|p| match p {
            heddle_typeck::KernelParam::Value { name, ty, .. } if *name == array => Some(ty.clone()),
            _ => None,
        });
        let Some(ty) = ty.filter(|t| rows_of_records(t, prefix.len())) else { return Ok(None) };
        let q = self.fresh("q");
        let flat_summand = flatten_nat(summand, k, &q);
        // Outside the lookups the summand may use only kernel-level names.
        if !self.kernel_level(&flat_summand, Some(&q)) {
            return Ok(None);
        }
        let mut at: Vec<Nat> =
            prefix.iter().map(|e| e.as_nat().unwrap_or_else(|| Nat::ToNat(Box::new(e.clone())))).collect();
        at.push(Nat::Lit(0));
        let start = crate::flat_index(&ty, &at)
            .map_err(|e| unsupported(self.kernel.body.span, &format!("the layout of `{array}`: {e}")))?;
        let start = crate::simplify(&start, &self.facts, &self.options.limits).nat;
        let outer = match &ty {
            Type::Array { len, .. } => len.clone(),
            _ => Nat::Lit(0),
        };
        let start = self.remove_sums(&start, Some(&outer), env, body)?;
        let records = crate::flat_size(&ty)
            .map_err(|e| unsupported(self.kernel.body.span, &format!("the layout of `{array}`: {e}")))?;
        let records = crate::simplify(&records, &self.facts, &self.options.limits).nat;
        let p = self.prefix_sum(&q, &flat_summand, &records, vec![array]);
        Ok(Some(range(&p, Nat::add(start.clone(), lo.clone()).normalize(), Nat::add(start, hi.clone()).normalize())))
    }

    /// The host buffer holding the prefix sums of `summand`, shared by equal Σs.
    pub(super) fn prefix_sum(&mut self, var: &Name, summand: &Nat, count: &Nat, flat: Vec<Name>) -> Name {
        for h in &self.host {
            let HostKind::PrefixSum { var: v, body, count: c, flat: f } = &h.kind else { continue };
            if body.subst(v, &Nat::Var(var.clone())) == *summand && c == count && *f == flat {
                return h.name.clone();
            }
        }
        let name = self.fresh("prefix");
        self.args.push(heddle_ir::loops::Arg { name: name.clone(), kind: ArgKind::Host });
        let kind = HostKind::PrefixSum { var: var.clone(), body: summand.clone(), count: count.clone(), flat };
        self.host.push(HostBuffer { name: name.clone(), kind });
        name
    }

    /// `naive_sums`: every Σ a sequential loop at the access, innermost first
    /// (what the paper's Figure 5 measures against).
    fn naive_sums(&mut self, n: &Nat, env: &Env, body: &mut Block) -> Result<Nat, Diagnostic> {
        let mut failure = None;
        let out = n.map_bottom_up(&mut |m| {
            let Nat::Sum { var, lo, hi, body: summand } = &m else { return m };
            if failure.is_some() {
                return m;
            }
            match self.sum_loop(var, lo, hi, summand, env, body) {
                Ok(v) => v,
                Err(e) => {
                    failure = Some(e);
                    m
                }
            }
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    fn sum_loop(
        &mut self,
        var: &Name,
        lo: &Nat,
        hi: &Nat,
        summand: &Nat,
        env: &Env,
        body: &mut Block,
    ) -> Result<Nat, Diagnostic> {
        let acc = self.fresh("sigma");
        let k = self.fresh(var.as_str());
        let lo = self.nat_to_expr(lo, env, body)?;
        let hi = self.nat_to_expr(hi, env, body)?;
        body.push(Stmt::Var { var: acc.clone(), ty: ScalarType::I64, init: L::index(0) });
        let mut inner = Block::new();
        let term = self.nat_to_expr(&summand.subst(var, &Nat::Var(k.clone())), env, &mut inner)?;
        inner.push(Stmt::Assign { var: acc.clone(), value: L::bin(BinOp::Add, L::var(acc.clone()), term) });
        body.push(Stmt::For {
            var: k,
            lo,
            hi: L::bin(BinOp::Add, hi, L::index(1)),
            schedule: Schedule::Seq,
            body: inner,
        });
        Ok(Nat::Var(acc))
    }
}

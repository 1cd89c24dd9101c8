//! `(e : tensor<…, #ENC>)`: a value stored in an encoding's buffers.
//!
//! The annotation is checked by [`heddle_ir::encoding::result::plan`], which
//! reads the value's type level by level against the encoding (in its level
//! order) and says how each level is stored; what the plan needs of the
//! value's types (integer coordinates, values of the element type, arrays of
//! the level's size) is checked here, the last as a run-time obligation
//! where the sizes are not equal by their normal form.

use crate::check::{CResult, Checker, show};
use crate::metas::MetaKind;
use crate::scope::Scope;
use crate::typed::{Obligation, TExpr, TKind};
use heddle_ir::encoding::result::{Need, ResultPlan, Source, plan};
use heddle_ir::nat::{CmpOp, NatCond};
use heddle_ir::tensor::TensorType;
use heddle_ir::{Diagnostic, Expr, Nat, Span, Type};

/// The names a natural mentions (variables and names inside `toNat`).
fn names(n: &Nat, out: &mut Vec<heddle_ir::Name>) {
    fn expr(e: &Expr, out: &mut Vec<heddle_ir::Name>) {
        match &e.kind {
            heddle_ir::ExprKind::Var(x) => out.push(x.clone()),
            heddle_ir::ExprKind::NatValue(n) => names(n, out),
            _ => e.for_each_child(&mut |c| expr(c, out)),
        }
    }
    match n {
        Nat::Var(x) => out.push(x.clone()),
        Nat::ToNat(e) => expr(e, out),
        _ => n.for_each_child(&mut |c| names(c, out)),
    }
}

impl Checker {
    /// `(e : tensor<…>)`.
    pub(crate) fn store_as_tensor(&mut self, e: &Expr, tt: &TensorType, scope: &Scope, span: Span) -> CResult<TExpr> {
        let enc = crate::kernel::tensor_encoding(&self.encodings, tt, span)?;
        for n in tt.dims.iter().flatten() {
            self.nat_well_formed(n, scope, span)?;
        }
        let value = self.infer(e, scope)?;
        let vty = self.metas.zonk(&value.ty);
        let written = heddle_ir::printer::print_type(&Type::Tensor(Box::new(tt.clone())));
        let (plan, needs) = plan(&enc, tt.elem, &tt.dims, &vty).map_err(|m| {
            Diagnostic::new(span, format!("this value of type {} cannot be stored as {written}", show(&vty)))
                .with_label(m)
                .with_note("the value is read in the encoding's level order, as a parameter of this type is viewed (LANGUAGE.md §6)")
        })?;
        // Names that are positions inside the value, or counts known only at run time.
        let mut local = Vec::new();
        for l in &plan.levels {
            if let Source::Dense { binder: Some(b), .. } | Source::List { binder: Some(b), .. } = &l.source {
                local.push(b.clone());
            }
        }
        for need in needs {
            match need {
                Need::Integer(t) => {
                    let int = self.metas.fresh_type(MetaKind::Integer);
                    self.unify_at(&int, &t, e.span, "as a coordinate of the stored tensor")?;
                }
                Need::Element(t) => {
                    self.unify_at(&Type::Scalar(tt.elem), &t, e.span, "as a value of the stored tensor")?
                }
                Need::Equal(a, b, why) => {
                    let (a, b) = (self.metas.zonk_nat(&a), self.metas.zonk_nat(&b));
                    if a.normalize() == b.normalize() {
                        continue;
                    }
                    let mut seen = Vec::new();
                    names(&a, &mut seen);
                    names(&b, &mut seen);
                    if seen.iter().any(|x| local.contains(x) || heddle_ir::nat::counted::is_count_name(x)) {
                        return Err(Diagnostic::new(
                            span,
                            format!("this value cannot be stored as {written}: {why}, but its length is {a}, not {b}"),
                        )
                        .with_label("the array's length depends on data or on its position"));
                    }
                    self.obligations.push(Obligation { cond: NatCond::Cmp(CmpOp::Eq, a, b), span, reason: why });
                }
            }
        }
        let ty = Type::Tensor(Box::new(TensorType {
            dims: plan.dims.iter().cloned().map(Some).collect(),
            elem: tt.elem,
            encoding: tt.encoding.clone(),
        }));
        Ok(TExpr { kind: TKind::Assemble { value: Box::new(value), plan: Box::new(plan) }, ty, span })
    }

    /// After unknowns are solved: the plan again, from the value's final type
    /// (a coordinate written as a literal is now `int`, a length is known).
    pub(crate) fn replan(&self, t: &mut TExpr) -> CResult<()> {
        let TKind::Assemble { value, plan: p } = &mut t.kind else { return Ok(()) };
        let given: Vec<Option<Nat>> = p.dims.iter().cloned().map(Some).collect();
        let (fresh, _) = plan(&p.encoding, p.elem, &given, &value.ty)
            .map_err(|m| Diagnostic::new(t.span, format!("this value cannot be stored as a tensor: {m}")))?;
        let mut fresh: ResultPlan = fresh;
        fresh.map_nats(&mut |n| n.normalize());
        if let Type::Tensor(tt) = &mut t.ty {
            tt.dims = fresh.dims.iter().cloned().map(Some).collect();
        }
        **p = fresh;
        Ok(())
    }
}

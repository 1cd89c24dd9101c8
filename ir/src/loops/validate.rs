//! Well-formedness of loop programs, checked before any backend runs.

use super::{ArgKind, Block, Expr, LoopProgram, Stmt, TypeEnv};
use crate::{Name, ScalarType};

/// A malformed loop program (a bug in lowering, or a hand-written program).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid loop program: {0}")]
pub struct LoopError(pub String);

impl LoopProgram {
    /// Checks names are declared before use, types agree, indices are `i64`,
    /// conditions `bool`, assignments only to mutable locals and stores only
    /// to the output or temporaries.
    pub fn validate(&self) -> Result<(), LoopError> {
        let mut names: Vec<&Name> = Vec::new();
        for a in &self.args {
            if names.contains(&&a.name) {
                return Err(LoopError(format!("argument `{}` declared twice", a.name)));
            }
            names.push(&a.name);
        }
        for h in &self.host {
            let flat = match &h.kind {
                super::HostKind::PrefixSum { flat, .. } => flat.as_slice(),
                super::HostKind::Largest { .. } => {
                    if !matches!(self.arg(&h.name).map(|a| &a.kind), Some(ArgKind::Nat)) {
                        return Err(LoopError(format!("host bound `{}` is not a natural argument", h.name)));
                    }
                    continue;
                }
            };
            if !matches!(self.arg(&h.name).map(|a| &a.kind), Some(ArgKind::Host)) {
                return Err(LoopError(format!("host buffer `{}` is not a host argument", h.name)));
            }
            if let Some(a) = flat.iter().find(|a| !matches!(self.arg(a).map(|a| &a.kind), Some(ArgKind::Input { .. })))
            {
                return Err(LoopError(format!("host buffer `{}` reads `{a}` flat, which is not an input", h.name)));
            }
        }
        for c in &self.counts {
            // A count array is an input buffer; a single count (a 1-D result's) is an `i64` scalar.
            let as_input = match self.arg(&c.name).map(|a| &a.kind) {
                Some(ArgKind::Input { .. }) => !c.shape.is_empty(),
                Some(ArgKind::Scalar(ScalarType::I64)) => c.shape.is_empty(),
                _ => false,
            };
            if !as_input {
                return Err(LoopError(format!("count array `{}` is not an input", c.name)));
            }
            c.program.validate()?;
        }
        let mut vars = Vec::new();
        declared_vars(&self.body, &mut vars);
        if let Some(a) = self.reassociable.iter().find(|a| !vars.contains(a)) {
            return Err(LoopError(format!("reassociable accumulator `{a}` is not declared by a `var`")));
        }
        let mut env = self.arg_env();
        for r in &self.ranges {
            let fields = match self.arg(&r.buf).map(|a| &a.kind) {
                Some(ArgKind::Input { fields, .. }) => fields,
                _ => return Err(LoopError(format!("the range of `{}` is not about an input", r.buf))),
            };
            if !fields.get(r.field as usize).is_some_and(|t| t.is_int()) {
                return Err(LoopError(format!(
                    "the range of `{}` is about field {}, which is not an integer",
                    r.buf, r.field
                )));
            }
            self.expect(&r.below, ScalarType::I64, &env, &format!("the bound of `{}`", r.buf))?;
        }
        let mut mutable: Vec<Name> = Vec::new();
        let writable: Vec<Name> =
            self.args.iter().filter(|a| matches!(a.kind, ArgKind::Output { .. })).map(|a| a.name.clone()).collect();
        self.check_block(&self.body, &mut env, &mut mutable, &mut writable.clone())
    }

    fn check_block(
        &self,
        b: &Block,
        env: &mut TypeEnv,
        mutable: &mut Vec<Name>,
        writable: &mut Vec<Name>,
    ) -> Result<(), LoopError> {
        let mark = env.mark();
        let (m0, w0) = (mutable.len(), writable.len());
        for s in b {
            match s {
                Stmt::Let { var, ty, value } | Stmt::Var { var, ty, init: value } => {
                    self.expect(value, *ty, env, &format!("the value of `{var}`"))?;
                    env.declare_var(var.clone(), *ty);
                    if matches!(s, Stmt::Var { .. }) {
                        mutable.push(var.clone());
                    }
                }
                Stmt::Assign { var, value } => {
                    if !mutable.contains(var) {
                        return Err(LoopError(format!("assignment to `{var}`, which is not a mutable local")));
                    }
                    let ty = env.var(var).ok_or_else(|| LoopError(format!("`{var}` is not declared")))?;
                    self.expect(value, ty, env, &format!("the value assigned to `{var}`"))?;
                }
                Stmt::Store { buf, index, field, value } | Stmt::AddAtomic { buf, index, field, value } => {
                    if !writable.contains(buf) {
                        return Err(LoopError(format!("store to `{buf}`, which is not the output or a temporary")));
                    }
                    let fields = env.buffer(buf).ok_or_else(|| LoopError(format!("buffer `{buf}` is not declared")))?;
                    let ty = *fields
                        .get(*field as usize)
                        .ok_or_else(|| LoopError(format!("`{buf}` has no field {field}")))?;
                    self.expect(index, ScalarType::I64, env, &format!("the index into `{buf}`"))?;
                    self.expect(value, ty, env, &format!("the value stored to `{buf}`"))?;
                }
                Stmt::For { var, lo, hi, body, .. } => {
                    self.expect(lo, ScalarType::I64, env, "a loop bound")?;
                    self.expect(hi, ScalarType::I64, env, "a loop bound")?;
                    let inner = env.mark();
                    env.declare_var(var.clone(), ScalarType::I64);
                    self.check_block(body, env, mutable, writable)?;
                    env.truncate(inner);
                }
                Stmt::If { cond, then, els } => {
                    self.expect(cond, ScalarType::Bool, env, "a condition")?;
                    self.check_block(then, env, mutable, writable)?;
                    self.check_block(els, env, mutable, writable)?;
                }
                Stmt::Alloc { buf, fields, len, .. } => {
                    self.expect(len, ScalarType::I64, env, &format!("the length of `{buf}`"))?;
                    env.declare_buffer(buf.clone(), fields.clone());
                    writable.push(buf.clone());
                }
                Stmt::Sort { buf, lo, len } => {
                    if !writable.contains(buf) {
                        return Err(LoopError(format!("sort of `{buf}`, which is not a temporary")));
                    }
                    let fields = env.buffer(buf).ok_or_else(|| LoopError(format!("buffer `{buf}` is not declared")))?;
                    if fields != [ScalarType::I64] {
                        return Err(LoopError(format!("sort of `{buf}`, whose records are not one i64")));
                    }
                    self.expect(lo, ScalarType::I64, env, &format!("the first record sorted in `{buf}`"))?;
                    self.expect(len, ScalarType::I64, env, &format!("the number of records sorted in `{buf}`"))?;
                }
                Stmt::Barrier => {}
                Stmt::Check { cond, id } => {
                    self.expect(cond, ScalarType::Bool, env, "a check")?;
                    if *id as usize >= self.checks.len() {
                        return Err(LoopError(format!("check #{id} has no message")));
                    }
                }
            }
        }
        env.truncate(mark);
        mutable.truncate(m0);
        writable.truncate(w0);
        Ok(())
    }

    fn expect(&self, e: &Expr, want: ScalarType, env: &TypeEnv, what: &str) -> Result<(), LoopError> {
        let got = self.check_expr(e, env)?;
        if got != want {
            return Err(LoopError(format!("{what} has type {got}, expected {want}: {}", super::print::expr(e))));
        }
        Ok(())
    }

    fn check_expr(&self, e: &Expr, env: &TypeEnv) -> Result<ScalarType, LoopError> {
        let bad = |m: String| Err(LoopError(m));
        match e {
            Expr::Int(_, t) if !t.is_int() => bad(format!("integer literal of type {t}")),
            Expr::Float(_, t) if !t.is_float() => bad(format!("float literal of type {t}")),
            Expr::Var(v) if env.var(v).is_none() => bad(format!("`{v}` is not declared")),
            Expr::Load { buf, index, field } => {
                let fields = env.buffer(buf).ok_or_else(|| LoopError(format!("buffer `{buf}` is not declared")))?;
                if *field as usize >= fields.len() {
                    return bad(format!("`{buf}` has no field {field}"));
                }
                self.expect(index, ScalarType::I64, env, &format!("the index into `{buf}`"))?;
                Ok(fields[*field as usize])
            }
            Expr::Bin(op, a, b) => {
                let ta = self.check_expr(a, env)?;
                let tb = self.check_expr(b, env)?;
                if ta != tb {
                    return bad(format!(
                        "operands of `{}` have types {ta} and {tb}: {}",
                        op.symbol(),
                        super::print::expr(e)
                    ));
                }
                if matches!(op, super::BinOp::And | super::BinOp::Or) && ta != ScalarType::Bool {
                    return bad(format!("`{}` of non-booleans", op.symbol()));
                }
                Ok(if op.is_comparison() || matches!(op, super::BinOp::And | super::BinOp::Or) {
                    ScalarType::Bool
                } else {
                    ta
                })
            }
            Expr::Select(c, a, b) => {
                self.expect(c, ScalarType::Bool, env, "a select condition")?;
                let ta = self.check_expr(a, env)?;
                self.expect(b, ta, env, "a select branch")?;
                Ok(ta)
            }
            Expr::Neg(a) | Expr::Cast(_, a) | Expr::Not(a) => {
                self.check_expr(a, env)?;
                self.type_of(e, env).ok_or_else(|| LoopError("untyped expression".into()))
            }
            _ => self.type_of(e, env).ok_or_else(|| LoopError(format!("cannot type {}", super::print::expr(e)))),
        }
    }
}

/// The names `var` statements declare, anywhere in `b`.
fn declared_vars<'a>(b: &'a Block, out: &mut Vec<&'a Name>) {
    for s in b {
        match s {
            Stmt::Var { var, .. } => out.push(var),
            Stmt::For { body, .. } => declared_vars(body, out),
            Stmt::If { then, els, .. } => {
                declared_vars(then, out);
                declared_vars(els, out);
            }
            _ => {}
        }
    }
}

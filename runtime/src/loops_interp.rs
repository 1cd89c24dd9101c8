//! An interpreter for the loop IR.
//!
//! It runs a lowered [`LoopProgram`] on a prepared [`Launch`] statement by
//! statement (every schedule sequentially), with every load and store
//! bounds-checked. Tests compare it with the reference interpreter to check
//! lowering on its own, apart from any backend.

use crate::launch::{Buffer, Launch, Slot, cast, eval_scalar};
use crate::value::Value;
use heddle_ir::Name;
use heddle_ir::loops::{Block, LoopProgram, Stmt};

/// Why a run stopped early.
#[derive(Clone, Debug, PartialEq)]
pub enum LoopFailure {
    /// A `Check` failed (its id).
    Check(u32),
    /// The program is wrong (a lowering bug): out-of-bounds access, unknown name.
    Invalid(String),
}

struct Machine<'p> {
    prog: &'p LoopProgram,
    locals: Vec<(Name, Value)>,
    temps: Vec<(Name, Buffer)>,
}

/// Runs the program; the output buffer in `launch` receives the result.
pub fn run(prog: &LoopProgram, launch: &mut Launch) -> Result<(), LoopFailure> {
    let mut m = Machine { prog, locals: Vec::new(), temps: Vec::new() };
    m.block(&prog.body, launch)
}

impl Machine<'_> {
    fn eval(&self, e: &heddle_ir::loops::Expr, launch: &Launch) -> Result<Value, LoopFailure> {
        let locals = &self.locals;
        eval_scalar(self.prog, launch, &self.temps, e, &|n: &Name| {
            locals.iter().rev().find(|(x, _)| x == n).map(|(_, v)| v.clone())
        })
        .map_err(LoopFailure::Invalid)
    }

    fn int(&self, e: &heddle_ir::loops::Expr, launch: &Launch) -> Result<i64, LoopFailure> {
        self.eval(e, launch)?.as_int().ok_or_else(|| LoopFailure::Invalid("expected an integer".into()))
    }

    fn block(&mut self, b: &Block, launch: &mut Launch) -> Result<(), LoopFailure> {
        let (locals, temps) = (self.locals.len(), self.temps.len());
        for s in b {
            self.stmt(s, launch)?;
        }
        self.locals.truncate(locals);
        self.temps.truncate(temps);
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt, launch: &mut Launch) -> Result<(), LoopFailure> {
        match s {
            Stmt::Let { var, ty, value } | Stmt::Var { var, ty, init: value } => {
                let v = cast(self.eval(value, launch)?, *ty);
                self.locals.push((var.clone(), v));
            }
            Stmt::Assign { var, value } => {
                let v = self.eval(value, launch)?;
                match self.locals.iter_mut().rev().find(|(x, _)| x == var) {
                    Some(slot) => slot.1 = v,
                    None => return Err(LoopFailure::Invalid(format!("assignment to unknown `{var}`"))),
                }
            }
            Stmt::Store { buf, index, field, value } => {
                let i = self.int(index, launch)?;
                let v = self.eval(value, launch)?;
                let target = match self.temps.iter_mut().rev().find(|(n, _)| n == buf) {
                    Some((_, b)) => b,
                    None => {
                        let k = self.prog.args.iter().position(|a| &a.name == buf);
                        match k.and_then(|k| launch.slots.get_mut(k)) {
                            Some(Slot::Buffer(b)) => b,
                            _ => return Err(LoopFailure::Invalid(format!("store to unknown buffer `{buf}`"))),
                        }
                    }
                };
                match usize::try_from(i).ok().filter(|i| *i < target.len()) {
                    Some(i) => target.write(i, *field as usize, &v),
                    None => {
                        return Err(LoopFailure::Invalid(format!(
                            "store {buf}[{i}] out of bounds (length {})",
                            target.len()
                        )));
                    }
                }
            }
            // One iteration at a time: the addition is trivially indivisible.
            Stmt::AddAtomic { buf, index, field, value } => {
                use heddle_ir::loops::{BinOp, Expr};
                let sum = Expr::bin(BinOp::Add, Expr::load(buf.clone(), index.clone(), *field), value.clone());
                self.stmt(&Stmt::Store { buf: buf.clone(), index: index.clone(), field: *field, value: sum }, launch)?;
            }
            Stmt::For { var, lo, hi, body, .. } => {
                let (lo, hi) = (self.int(lo, launch)?, self.int(hi, launch)?);
                for k in lo..hi {
                    self.locals.push((var.clone(), Value::Int(k)));
                    let r = self.block(body, launch);
                    self.locals.pop();
                    r?;
                }
            }
            Stmt::If { cond, then, els } => match self.eval(cond, launch)? {
                Value::Bool(true) => self.block(then, launch)?,
                _ => self.block(els, launch)?,
            },
            Stmt::Alloc { buf, fields, len, .. } => {
                let n = usize::try_from(self.int(len, launch)?)
                    .map_err(|_| LoopFailure::Invalid("negative allocation".into()))?;
                let temp = Buffer::try_zeroed(fields.clone(), n, &format!("the temporary `{buf}`"))
                    .map_err(LoopFailure::Invalid)?;
                self.temps.push((buf.clone(), temp));
            }
            Stmt::Sort { buf, lo, len } => {
                let (lo, len) = (self.int(lo, launch)?, self.int(len, launch)?);
                let Some((_, b)) = self.temps.iter_mut().rev().find(|(n, _)| n == buf) else {
                    return Err(LoopFailure::Invalid(format!("sort of unknown temporary `{buf}`")));
                };
                let range =
                    usize::try_from(lo).ok().zip(usize::try_from(len).ok()).filter(|(lo, len)| lo + len <= b.len());
                let Some((lo, len)) = range else {
                    return Err(LoopFailure::Invalid(format!(
                        "sort of {buf}[{lo} .. + {len}] out of bounds (length {})",
                        b.len()
                    )));
                };
                let mut keys: Vec<i64> = (lo..lo + len).map(|r| b.read(r, 0).as_int().unwrap_or(0)).collect();
                keys.sort_unstable();
                for (r, k) in (lo..).zip(keys) {
                    b.write(r, 0, &Value::Int(k));
                }
            }
            Stmt::Barrier => {}
            Stmt::Check { cond, id } => {
                if self.eval(cond, launch)? != Value::Bool(true) {
                    return Err(LoopFailure::Check(*id));
                }
            }
        }
        Ok(())
    }
}

//! Loop-IR expressions as OpenCL C expressions.

use crate::Gen;
use crate::ctype::{float_literal, int_literal, is_narrow, scalar};
use heddle_ir::ScalarType;
use heddle_ir::loops::{BinOp, Expr, TypeEnv};

/// C precedence levels, higher binds tighter.
mod prec {
    pub const COND: u8 = 3;
    pub const OR: u8 = 4;
    pub const AND: u8 = 5;
    pub const EQ: u8 = 9;
    pub const REL: u8 = 10;
    pub const ADD: u8 = 12;
    pub const MUL: u8 = 13;
    pub const UNARY: u8 = 14;
    pub const PRIMARY: u8 = 15;
}

fn wrap(text: String, p: u8, ctx: u8) -> String {
    if p < ctx { format!("({text})") } else { text }
}

impl Gen<'_> {
    /// The C text of `e`, parenthesised as needed for a context of precedence `ctx`.
    pub(crate) fn expr(&mut self, e: &Expr, env: &TypeEnv) -> Result<String, String> {
        self.expr_at(e, env, 0)
    }

    fn ty(&self, e: &Expr, env: &TypeEnv) -> Result<ScalarType, String> {
        self.prog.type_of(e, env).ok_or_else(|| "an expression without a type (validate the program first)".to_string())
    }

    fn expr_at(&mut self, e: &Expr, env: &TypeEnv, ctx: u8) -> Result<String, String> {
        Ok(match e {
            Expr::Int(v, t) => wrap(
                int_literal(*v, *t),
                if is_narrow(*t) || v.is_negative() { prec::UNARY } else { prec::PRIMARY },
                ctx,
            ),
            Expr::Float(v, t) => wrap(float_literal(*v, *t), if *v < 0.0 { prec::UNARY } else { prec::PRIMARY }, ctx),
            Expr::Bool(b) => b.to_string(),
            Expr::Var(v) => self.ids.get(v),
            Expr::Load { buf, index, field } => {
                let fields = env.buffer(buf).ok_or_else(|| format!("buffer `{buf}` is not declared"))?;
                let ty = *fields.get(*field as usize).ok_or_else(|| format!("`{buf}` has no field {field}"))?;
                let member = if fields.len() > 1 { format!(".f{field}") } else { String::new() };
                let text = format!("{}[{}]{member}", self.ids.get(buf), self.expr_at(index, env, 0)?);
                // Booleans are stored as uchar, halves as their bits (see ctype::stored).
                if ty == ScalarType::Bool {
                    wrap(format!("{text} != 0"), prec::EQ, ctx)
                } else if ty.is_half() {
                    self.halves.load(ty, &text)
                } else {
                    text
                }
            }
            Expr::Bin(op, a, b) => self.bin(*op, a, b, env, ctx)?,
            Expr::Neg(a) => {
                let t = self.ty(a, env)?;
                let operand = self.expr_at(a, env, prec::UNARY)?;
                // `-` before an operand that starts with `-` (a negation, a
                // negative literal) must not lex as C's `--` (pre-decrement).
                let text = if operand.starts_with('-') { format!("-({operand})") } else { format!("-{operand}") };
                if t == ScalarType::I32 {
                    // Through `uint`, where it wraps (see `bin`): `-INT_MIN` is undefined in C.
                    wrap(format!("(int)(0u - (uint){})", self.expr_at(a, env, prec::UNARY)?), prec::UNARY, ctx)
                } else if is_narrow(t) {
                    wrap(format!("({})({text})", scalar(t)), prec::UNARY, ctx)
                } else {
                    wrap(text, prec::UNARY, ctx)
                }
            }
            Expr::Not(a) => wrap(format!("!{}", self.expr_at(a, env, prec::UNARY)?), prec::UNARY, ctx),
            // A choice between equal values is that value (the condition, which
            // cannot fault, need not be evaluated).
            Expr::Select(_, a, b) if same_value(a, b) => self.expr_at(a, env, ctx)?,
            Expr::Select(c, a, b) => {
                let text = format!(
                    "{} ? {} : {}",
                    self.expr_at(c, env, prec::OR)?,
                    self.expr_at(a, env, prec::OR)?,
                    self.expr_at(b, env, prec::COND)?
                );
                wrap(text, prec::COND, ctx)
            }
            Expr::Cast(t, a) => {
                let from = self.ty(a, env)?;
                if *t == from {
                    self.expr_at(a, env, ctx)?
                } else if t.is_half() {
                    let v = self.expr_at(a, env, 0)?;
                    self.halves.convert(*t, from, &v)
                } else if from.is_half() && matches!(t, ScalarType::F32) {
                    // Held in a float already, exactly.
                    self.expr_at(a, env, ctx)?
                } else if *t == ScalarType::Bool {
                    wrap(format!("{} != 0", self.expr_at(a, env, prec::REL)?), prec::EQ, ctx)
                } else if from.is_float() && !t.is_float() {
                    // Toward zero, saturating, NaN giving 0: a C cast is undefined out of range.
                    // A half is held in a float: the float's helper serves it.
                    let from = if from.is_half() { ScalarType::F32 } else { from };
                    self.conversions.insert((*t, from));
                    format!("{}({})", crate::conversion_name(*t, from), self.expr_at(a, env, 0)?)
                } else {
                    wrap(format!("({}){}", scalar(*t), self.expr_at(a, env, prec::UNARY)?), prec::UNARY, ctx)
                }
            }
        })
    }

    fn bin(&mut self, op: BinOp, a: &Expr, b: &Expr, env: &TypeEnv, ctx: u8) -> Result<String, String> {
        let t = self.ty(a, env)?;
        if matches!(op, BinOp::Min | BinOp::Max) {
            let (mut x, mut y) = (self.expr_at(a, env, 0)?, self.expr_at(b, env, 0)?);
            if is_narrow(t) {
                // C promotes a narrow operand of `?:` or of arithmetic to
                // `int`, and `max((char)4, c ? (char)1 : (char)2)` is then a
                // call of (char, int), which matches no overload: the same type both.
                x = format!("({})({x})", scalar(t));
                y = format!("({})({y})", scalar(t));
            }
            return Ok(match (t, op) {
                // OpenCL's min/max have no bool overloads.
                (ScalarType::Bool, BinOp::Min) => wrap(format!("({x}) && ({y})"), prec::AND, ctx),
                (ScalarType::Bool, _) => wrap(format!("({x}) || ({y})"), prec::OR, ctx),
                // OpenCL's float `min`/`max` leave a NaN operand undefined
                // (POCL gave NaN for `min(1.0f, NaN)`); `fmin`/`fmax` return the
                // other operand, as the interpreter (Rust's `f64::min`) does.
                (t, BinOp::Min) if t.is_float() => format!("fmin({x}, {y})"),
                (t, _) if t.is_float() => format!("fmax({x}, {y})"),
                _ => format!("{}({x}, {y})", op.symbol()),
            });
        }
        if op.is_comparison() && !t.is_float() && same_value(a, b) {
            // An integer compared with itself (`select(i == i, …)` once
            // lowering has simplified both sides to `i`): its answer, rather
            // than a self-comparison, which C compilers warn about.
            return Ok(matches!(op, BinOp::Eq | BinOp::Le | BinOp::Ge).to_string());
        }
        if matches!(op, BinOp::Div | BinOp::Rem) && t == ScalarType::I32 && !matches!(b, Expr::Int(v, _) if *v != -1) {
            // `INT_MIN / -1` and `INT_MIN % -1` are undefined in C (x86
            // traps; POCL gave -1 for the remainder); the interpreter wraps:
            // MIN and 0. A helper rather than an inline test so that no
            // operand's text is repeated. (Narrow types are promoted to int:
            // no overflow. `long` division is index arithmetic, `n / R`: the
            // program's own `i64` divisions by a possible -1 come guarded
            // from lowering, see `heddle_ir::loops`.)
            self.divisions.insert((t, op == BinOp::Rem));
            let (x, y) = (self.expr_at(a, env, 0)?, self.expr_at(b, env, 0)?);
            return Ok(format!("{}({x}, {y})", crate::division_name(t, op == BinOp::Rem)));
        }
        if op == BinOp::Rem && t.is_float() {
            return Ok(format!("fmod({}, {})", self.expr_at(a, env, 0)?, self.expr_at(b, env, 0)?));
        }
        let p = match op {
            BinOp::Or => prec::OR,
            BinOp::And => prec::AND,
            BinOp::Eq | BinOp::Ne => prec::EQ,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => prec::REL,
            BinOp::Add | BinOp::Sub => prec::ADD,
            _ => prec::MUL,
        };
        let arithmetic = !op.is_comparison() && !matches!(op, BinOp::And | BinOp::Or);
        if t == ScalarType::I32 && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) {
            // `int` arithmetic wraps in the interpreter; in C a signed
            // overflow is undefined, and clang folds `x + 1 > x` to true for
            // `INT_MAX`. Through `uint` it wraps. (`long` arithmetic is left
            // as it is: it is index arithmetic, which never overflows and is
            // faster for clang's knowing it, where lowering computed the
            // program's own `i64` arithmetic in `ulong` (`LowerOptions::
            // wrapping_i64`, as heddle's `opencl::compile` lowers; see
            // `heddle_ir::loops`).)
            let text = format!(
                "(int)((uint){} {} (uint){})",
                self.expr_at(a, env, prec::UNARY)?,
                op.symbol(),
                self.expr_at(b, env, prec::UNARY)?
            );
            return Ok(wrap(text, prec::UNARY, ctx));
        }
        let text = format!("{} {} {}", self.expr_at(a, env, p)?, op.symbol(), self.expr_at(b, env, p + 1)?);
        if arithmetic && t.is_half() {
            return Ok(self.halves.round(t, &text));
        }
        if arithmetic && is_narrow(t) {
            return Ok(wrap(format!("({})({text})", scalar(t)), prec::UNARY, ctx));
        }
        Ok(wrap(text, p, ctx))
    }
}

/// Are `a` and `b` the same once choices between equal values are folded
/// (as they are written), so the same value (expressions have no side
/// effects)? `select(c, i, i) == i` compares `i` with itself.
fn same_value(a: &Expr, b: &Expr) -> bool {
    a == b || choices_folded(a) == choices_folded(b)
}

/// `e` with every choice between equal values replaced by the value,
/// bottom-up (linear in its size, so checking it at every level of a nest
/// costs the nest's size times its depth).
fn choices_folded(e: &Expr) -> Expr {
    let fold = |x: &Expr| Box::new(choices_folded(x));
    match e {
        Expr::Select(c, a, b) => {
            let (a, b) = (fold(a), fold(b));
            if a == b { *a } else { Expr::Select(fold(c), a, b) }
        }
        Expr::Bin(op, a, b) => Expr::Bin(*op, fold(a), fold(b)),
        Expr::Neg(a) => Expr::Neg(fold(a)),
        Expr::Not(a) => Expr::Not(fold(a)),
        Expr::Cast(t, a) => Expr::Cast(*t, fold(a)),
        Expr::Load { buf, index, field } => Expr::Load { buf: buf.clone(), index: fold(index), field: *field },
        other => other.clone(),
    }
}

//! Consecutive scalar loads as one vector load.
//!
//! The loop IR has only scalars: `asVector(4)` lowers to four `let`s loading
//! `xs[4·k]`, `xs[4·k + 1]`, … A GPU reads memory fastest in wide
//! transactions (one 16-byte load per work-item rather than four 4-byte
//! ones), and its compiler cannot merge scalar loads whose alignment it does
//! not know. A run of `w` ∈ {2, 4, 8, 16} such `let`s from one plain buffer
//! is therefore emitted as one `vloadW` and its components:
//!
//! ```c
//! const float4 heddle_vec1 = vload4(k, xs);   // xs[4k .. 4k + 3]
//! const float p1 = heddle_vec1.s0; …
//! ```
//!
//! `vloadW(k, p)` reads `p[W·k .. W·k + W − 1]`, exactly the scalars it
//! replaces (the same addresses: Oclgrind's bounds checks see the same
//! accesses), and needs only the scalar's alignment.

use crate::Gen;
use crate::ctype::scalar;
use heddle_ir::loops::{BinOp, Expr, Stmt, TypeEnv};
use heddle_ir::{Name, ScalarType};
use std::collections::HashSet;

/// The widths OpenCL C has vector loads for, widest first (3 is left out:
/// `vload3` steps by 3 elements, which no lowering produces).
pub(crate) const WIDTHS: [usize; 4] = [16, 8, 4, 2];

/// A `let` loading field 0 of `buf` at `index`: `(var, ty, buf, index)`.
fn scalar_load(s: &Stmt) -> Option<(&Name, ScalarType, &Name, &Expr)> {
    match s {
        Stmt::Let { var, ty, value: Expr::Load { buf, index, field: 0 } } => Some((var, *ty, buf, index)),
        _ => None,
    }
}

/// Whether `e` is `base + c` (or `base` itself for `c = 0`).
pub(crate) fn offset_of(e: &Expr, base: &Expr, c: i64) -> bool {
    match e {
        _ if c == 0 => e == base,
        Expr::Bin(BinOp::Add, a, b) => **a == *base && matches!(**b, Expr::Int(v, _) if v == c),
        _ => false,
    }
}

/// `e` as `w · k`: `k`, where `e` is a multiple of `w` written so.
pub(crate) fn multiple_of(e: &Expr, w: i64) -> Option<&Expr> {
    match e {
        Expr::Bin(BinOp::Mul, a, b) => match (&**a, &**b) {
            (Expr::Int(v, _), k) | (k, Expr::Int(v, _)) if *v == w => Some(k),
            _ => None,
        },
        _ => None,
    }
}

/// Element types with OpenCL C vector types whose loads need no conversion
/// (booleans are stored as `uchar`, halves as their bits).
pub(crate) fn vectorisable(t: ScalarType) -> bool {
    matches!(
        t,
        ScalarType::F32 | ScalarType::F64 | ScalarType::I32 | ScalarType::U32 | ScalarType::I64 | ScalarType::U64
    )
}

impl Gen<'_> {
    /// Emits the longest run of scalar loads at the start of `b` that one
    /// vector load can replace (see the module docs); how many statements it
    /// stood for (0: none, nothing emitted).
    pub(crate) fn vector_loads(&mut self, b: &[Stmt], env: &mut TypeEnv, depth: usize) -> Result<usize, String> {
        let Some((_, ty, buf, base)) = b.first().and_then(scalar_load) else { return Ok(0) };
        let Some(fields) = env.buffer(buf) else { return Ok(0) };
        if fields.len() != 1 || fields[0] != ty || !vectorisable(ty) {
            return Ok(0);
        }
        let run = b
            .iter()
            .enumerate()
            .take_while(|(c, s)| {
                scalar_load(s)
                    .is_some_and(|(_, t, b2, index)| t == ty && b2 == buf && offset_of(index, base, *c as i64))
            })
            .count();
        let Some(w) = WIDTHS.into_iter().find(|w| *w <= run) else { return Ok(0) };
        let lanes = &b[..w];
        // A lane's variable read by a later lane's index would be read before
        // the vector defines it.
        let defined: HashSet<Name> = lanes.iter().filter_map(|s| scalar_load(s).map(|l| l.0.clone())).collect();
        if lanes.iter().any(|s| scalar_load(s).is_some_and(|(_, _, _, index)| index.reads_var_in(&defined))) {
            return Ok(0);
        }
        let pointer = self.ids.get(buf);
        let load = match multiple_of(base, w as i64) {
            Some(k) => format!("vload{w}({}, {pointer})", self.expr(k, env)?),
            None => format!("vload{w}(0, {pointer} + ({}))", self.expr(base, env)?),
        };
        let vector = self.fresh_name("heddle_vec");
        self.line(depth, &format!("const {}{w} {vector} = {load};", scalar(ty)));
        for (c, s) in lanes.iter().enumerate() {
            let Some((var, _, _, _)) = scalar_load(s) else { continue };
            let name = self.ids.get(var);
            self.line(depth, &format!("const {} {name} = {vector}.s{c:x};", scalar(ty)));
            env.declare_var(var.clone(), ty);
        }
        Ok(w)
    }
}

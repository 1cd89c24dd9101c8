//! Consecutive scalar stores as one vector store.
//!
//! The counterpart of [`crate::vector_loads`]: a result written through
//! `asScalar` of computed vectors lowers to `w` stores `out[w·k + j] = v_j`
//! (`rewrite`'s `write`, one vector per iteration). A run of `w` ∈ {2, 4, 8,
//! 16} such stores to one plain buffer is emitted as one `vstoreW` of the
//! vector built from their values:
//!
//! ```c
//! vstore4((float4)(p1 * p5, p2 * p6, p3 * p7, p4 * p8), k, out);   // out[4k .. 4k + 3]
//! ```
//!
//! The same addresses are written; the values are all computed before any
//! is stored, so a run qualifies only where no value reads the buffer.

use crate::Gen;
use crate::ctype::scalar;
use crate::vector_loads::{WIDTHS, multiple_of, offset_of, vectorisable};
use heddle_ir::Name;
use heddle_ir::loops::{Expr, Stmt, TypeEnv};
use std::collections::HashSet;

/// A store to field 0: `(buf, index, value)`.
fn scalar_store(s: &Stmt) -> Option<(&Name, &Expr, &Expr)> {
    match s {
        Stmt::Store { buf, index, field: 0, value } => Some((buf, index, value)),
        _ => None,
    }
}

impl Gen<'_> {
    /// Emits the longest run of scalar stores at the start of `b` that one
    /// vector store can replace (see the module docs); how many statements
    /// it stood for (0: none, nothing emitted).
    pub(crate) fn vector_stores(&mut self, b: &[Stmt], env: &mut TypeEnv, depth: usize) -> Result<usize, String> {
        let Some((buf, base, _)) = b.first().and_then(scalar_store) else { return Ok(0) };
        let Some(fields) = env.buffer(buf) else { return Ok(0) };
        let ty = match fields {
            [t] if vectorisable(*t) => *t,
            _ => return Ok(0),
        };
        let run = b
            .iter()
            .enumerate()
            .take_while(|(c, s)| {
                scalar_store(s).is_some_and(|(b2, index, _)| b2 == buf && offset_of(index, base, *c as i64))
            })
            .count();
        let Some(w) = WIDTHS.into_iter().find(|w| *w <= run) else { return Ok(0) };
        let lanes = &b[..w];
        let written: HashSet<Name> = [buf.clone()].into();
        if lanes.iter().any(|s| scalar_store(s).is_some_and(|(_, _, value)| value.reads_var_in(&written))) {
            return Ok(0);
        }
        self.arena_store(buf)?;
        let mut values = Vec::new();
        for s in lanes {
            let Some((_, _, value)) = scalar_store(s) else { return Ok(0) };
            values.push(self.expr(value, env)?);
        }
        let pointer = self.ids.get(buf);
        let vector = format!("({}{w})({})", scalar(ty), values.join(", "));
        let text = match multiple_of(base, w as i64) {
            Some(k) => format!("vstore{w}({vector}, {}, {pointer});", self.expr(k, env)?),
            None => format!("vstore{w}({vector}, 0, {pointer} + ({}));", self.expr(base, env)?),
        };
        let who = if self.private.contains(buf) { Vec::new() } else { self.who(self.local.contains(buf)) };
        self.guarded(depth, &text, &None, &who);
        Ok(w)
    }
}

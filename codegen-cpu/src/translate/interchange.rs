//! The top-level parallel loop of a row sum, interchanged with its inner
//! loop in blocks of rows (`heddle_ir::loops::interchange`): the blocked
//! loops run over the call's clipped range, so a runtime's chunks of rows
//! (split by work per row) stay what they were.

use super::{Bound, Translator};
use crate::error::CodegenError;
use heddle_ir::loops::{Expr, Schedule, Stmt};
use heddle_ir::{Name, ScalarType};

impl Translator<'_, '_> {
    /// Translates `parallel for var in lo .. hi { body }` interchanged, if
    /// the transform applies; `false` (nothing emitted) otherwise.
    pub(super) fn interchanged(
        &mut self,
        var: &Name,
        lo: &Expr,
        hi: &Expr,
        body: &[Stmt],
    ) -> Result<bool, CodegenError> {
        if !self.options.interchange {
            return Ok(false);
        }
        let Some(x) = heddle_ir::loops::interchange_in_blocks(self.prog, var, body, heddle_ir::loops::ROW_BLOCK) else {
            return Ok(false);
        };
        let (lo_v, hi_v) = self.loop_bounds(lo, hi, Schedule::Parallel)?;
        let scope = self.scope.len();
        self.scope.push((x.chunk_lo.clone(), Bound::Val(lo_v, ScalarType::I64)));
        self.scope.push((x.chunk_hi.clone(), Bound::Val(hi_v, ScalarType::I64)));
        self.block(&x.body)?;
        self.scope.truncate(scope);
        Ok(true)
    }
}

//! `heddle tune --matrix`: iso-valued variants. Where every `--matrix` file
//! of an operand holds one value in every entry (a graph's adjacency
//! matrix: `heddle_runtime::sparse::inspect::iso_value`, bit for bit), each
//! variant whose tensor parameter for it could store no values (its
//! encoding has no `explicitVal` and every value slot is an entry:
//! `storage_types::iso_value`) is also tried with `explicitVal = V` added:
//! the same kernel text, reading the constant instead of a values buffer
//! (4 bytes per CSR entry instead of 12 at f64). The derived variant is
//! reported as the variant's name with ` iso` appended, and timed and
//! verified with the others.

use super::Failure;
use super::tune_matrix::Reader;
use heddle::source::SourceFile;
use heddle_ir::expr::ExprKind;
use heddle_ir::tensor::{EncodingRef, EncodingText};
use heddle_ir::{Expr, Program, Span, Type};
use heddle_typeck::Kernel;

/// The iso-valued form of the variant `program` (read from `file`,
/// checked as `kernel`) for the `--matrix` files `matrices` (`NAME`,
/// `PATH`): its source and kernel, or `None` when no operand qualifies (a
/// file of several values, an encoding with `explicitVal` already, or one
/// whose storage pads: BSR, DIA, ELL).
pub fn iso_variant(
    file: &SourceFile,
    program: &Program,
    kernel: &Kernel,
    matrices: &[(String, String)],
    reader: &mut Reader,
) -> Result<Option<(SourceFile, Kernel)>, Failure> {
    let mut program = program.clone();
    let mut changed = false;
    let mut operands: Vec<&str> = matrices.iter().map(|(n, _)| n.trim()).collect();
    operands.sort_unstable();
    operands.dedup();
    for operand in operands {
        let Ok((enc, elem)) = heddle_runtime::io::bind::tensor_param(kernel, operand) else { continue };
        if enc.explicit_val.is_some() {
            continue;
        }
        // The one value of every file given for the operand, the same in all.
        let mut value: Option<String> = None;
        let mut all_iso = true;
        for (_, path) in matrices.iter().filter(|(n, _)| n.trim() == operand) {
            let (_, coo) = reader.get(path, elem)?;
            match heddle_runtime::sparse::inspect::iso_value(&coo.values) {
                Some(v) if value.as_ref().is_none_or(|w| *w == v) => value = Some(v),
                _ => all_iso = false,
            }
        }
        let Some(literal) =
            value.filter(|_| all_iso).and_then(|v| heddle_runtime::sparse::inspect::explicit_literal(&v, elem))
        else {
            continue;
        };
        let iso = heddle_ir::encoding::Encoding { explicit_val: Some(literal), ..enc.clone() };
        if heddle_ir::encoding::storage_types::iso_value(&iso, elem).is_none() {
            continue;
        }
        let text = heddle_ir::encoding::print_encoding(&iso);
        changed |= set_encoding(&mut program.kernel, operand, &text);
    }
    if !changed {
        return Ok(None);
    }
    let source = SourceFile::new(format!("{} (iso)", file.name), heddle_ir::printer::print_program(&program));
    match heddle::check_source(&source) {
        Ok((_, kernel)) => Ok(Some((source, kernel))),
        // The encoding was the variant's own with one field added, checked
        // above to hold: a failure here is no fault of the input.
        Err(d) => Err(Failure::Internal(format!(
            "internal error: the iso-valued form of {} does not check: {}",
            file.name,
            d.first().map_or(String::new(), |d| d.message.clone())
        ))),
    }
}

/// Gives the kernel parameter `operand` (a tensor) the encoding `text`
/// written in place; whether it was found.
fn set_encoding(e: &mut Expr, operand: &str, text: &str) -> bool {
    match &mut e.kind {
        ExprKind::NFun { body, .. } => set_encoding(body, operand, text),
        ExprKind::Fun { params, body } => {
            let mut found = false;
            for p in params.iter_mut().filter(|p| p.name.as_str() == operand) {
                if let Some(Type::Tensor(t)) = &mut p.ty {
                    t.encoding = Some(EncodingRef::Inline(EncodingText { text: text.to_string(), span: Span::DUMMY }));
                    found = true;
                }
            }
            found || set_encoding(body, operand, text)
        }
        _ => false,
    }
}

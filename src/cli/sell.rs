//! `--encoding A=SELL(C)` with `--matrix A=FILE`: the matrix packed as the
//! three arrays the sparsified kernel takes (`heddle_rewrite::sparsify::sell`
//! names them; `heddle_runtime::sparse::sell` packs them, σ = 1; the columns
//! at the kernel's width, 32 or 16 bits, checked to fit), the columns' range
//! stated for compiled code, and the padding rows dropped from the result.

use super::Failure;
use heddle_ir::Type;
use heddle_ir::loops::{ArgKind, InputRange, LoopProgram};
use heddle_rewrite::sparsify::sell::SellNames;
use heddle_runtime::io::read::Loaded;
use heddle_runtime::scalars::ScalarVec;
use heddle_runtime::sparse::coo::Coo;
use heddle_runtime::value::Value;
use heddle_typeck::{Kernel, KernelParam};

/// A matrix packed for a SELL operand.
pub struct Packed {
    /// The naturals the kernel takes: `A_dim0`, `A_dim1`, `A_slices` (those it has).
    pub nats: Vec<(String, i64)>,
    /// `A_soff`, `A_cols`, `A_vals`.
    pub inputs: Vec<(String, Loaded)>,
    /// The matrix's rows: the result's first `rows` elements are `y`.
    pub rows: usize,
    /// Rows in whole slices (`C · A_slices`): the padded result's length.
    pub padded: usize,
    /// The matrix's columns.
    pub cols: usize,
}

/// The scalar type of the kernel's value parameter `name`, if it is an array of them.
fn scalar_of(kernel: &Kernel, name: &str) -> Option<heddle_ir::ScalarType> {
    kernel.params.iter().find_map(|p| match p {
        KernelParam::Value { name: n, ty, .. } if n.as_str() == name => {
            let mut t = ty;
            loop {
                match t {
                    Type::Array { elem, .. } => t = elem,
                    Type::Scalar(s) => return Some(*s),
                    _ => return None,
                }
            }
        }
        _ => None,
    })
}

/// Packs `coo` (a matrix) for `operand` stored as SELL-`c` in `kernel`.
pub fn pack(kernel: &Kernel, operand: &str, c: u64, coo: &Coo) -> Result<Packed, Failure> {
    let names = SellNames::of(operand);
    let what = format!("--matrix {operand}");
    let elem = scalar_of(kernel, &names.vals).ok_or_else(|| {
        Failure::Input(format!(
            "{what}: the kernel has no SELL values array `{}` (was it sparsified with SELL?)",
            names.vals
        ))
    })?;
    // The columns' width is the kernel's: `u16` for `SELL(C, crdWidth = 16)`, else `int`.
    let narrow = scalar_of(kernel, &names.cols) == Some(heddle_ir::ScalarType::U16);
    let csr = heddle_runtime::sparse::csr::coo_to_csr_i32(coo).map_err(|e| Failure::Input(format!("{what}: {e}")))?;
    if narrow {
        check_16_bit_columns(&what, &csr.offsets, &csr.col_indices)?;
    }
    let rowptr: Vec<usize> = csr.offsets.iter().map(|&o| o as usize).collect();
    let colidx: Vec<usize> = csr.col_indices.iter().map(|&j| j as usize).collect();
    let (rows, cols) = (csr.rows as usize, csr.cols as usize);
    let sell = heddle_runtime::sparse::sell::from_csr(
        rows,
        cols,
        &rowptr,
        &colidx,
        &csr.values.to_f64s(),
        c as usize,
        1,
        elem.size_bytes(),
        None,
    )
    .map_err(|e| Failure::Input(format!("{what}: {e}")))?;
    // On huge pages when large (`Loaded::streamed`): the kernel streams them.
    let packed = |data: ScalarVec, dtype: &str| Loaded::streamed(data, dtype);
    let vals = match elem {
        heddle_ir::ScalarType::F32 => packed(ScalarVec::F32(sell.val.iter().map(|&v| v as f32).collect()), "float32"),
        heddle_ir::ScalarType::F64 => packed(ScalarVec::F64(sell.val.clone()), "float64"),
        // Other element types: converted by binding, as a file's values are.
        _ => Loaded::Flat {
            shape: vec![sell.val.len() as u64],
            items: sell.val.iter().map(|&v| Value::Float(v)).collect(),
            dtype: "float64".into(),
            kinds: vec![heddle_runtime::io::read::ScalarKind::Float],
        },
    };
    let slices = sell.slices();
    let inputs = vec![
        (names.soff.clone(), packed(ScalarVec::I32(sell.soff.clone()), "int32")),
        (
            names.cols.clone(),
            if narrow {
                // Every stored column, padding too, is one of the row's own
                // columns or 0, all checked above to be below 2^16.
                packed(ScalarVec::U16(sell.col.iter().map(|&j| j as u16).collect()), "uint16")
            } else {
                packed(ScalarVec::I32(sell.col), "int32")
            },
        ),
        (names.vals.clone(), vals),
    ];
    let has_nat = |n: &str| kernel.params.iter().any(|p| matches!(p, KernelParam::Nat(v) if v.as_str() == n));
    let nats = [(&names.rows, rows), (&names.cols_dim, cols), (&names.slices, slices)]
        .into_iter()
        .filter(|(n, _)| has_nat(n))
        .map(|(n, v)| (n.clone(), v as i64))
        .collect();
    Ok(Packed { nats, inputs, rows, padded: slices * c as usize, cols })
}

/// The most columns 16-bit column coordinates hold (0 to 65 535).
pub const MAX_16_BIT_COLUMNS: u64 = 1 << 16;

/// Refuses a matrix with an entry in a column past 16 bits, naming the
/// first such entry (row and column, counted from 0) and the width. Only
/// the entries count, not the declared column count: a matrix of 100 000
/// columns whose entries all lie in the first 65 536 fits.
fn check_16_bit_columns(what: &str, offsets: &[i32], cols: &[i32]) -> Result<(), Failure> {
    let Some(at) = cols.iter().position(|&j| j as u64 >= MAX_16_BIT_COLUMNS) else { return Ok(()) };
    // The entry's row: the last row starting at or before it.
    let row = offsets.partition_point(|&o| o as usize <= at).saturating_sub(1);
    Err(Failure::Input(format!(
        "{what}: the entry at row {row}, column {} does not fit SELL's 16-bit columns (crdWidth = 16 holds \
         columns 0 to {}); store it with 32-bit columns, SELL(C)",
        cols[at],
        MAX_16_BIT_COLUMNS - 1
    )))
}

/// Checks the packed matrix against the dense kernel's literal sizes
/// (`A: [[float]_16]_12`): the SELL kernel keeps no row count to check
/// (its rows are whole slices), so a file of another shape is refused here,
/// as the dense kernel's binding refuses it.
pub fn check_literal_sizes(dense: &heddle_ir::Program, operand: &str, packed: &Packed) -> Result<(), Failure> {
    let Some(Type::Array { elem, len: rows_len, .. }) =
        super::sparsify::kernel_param(dense, operand).and_then(|p| p.ty.as_ref())
    else {
        return Ok(());
    };
    let cols_len = match elem.as_ref() {
        Type::Array { len, .. } => len.as_lit(),
        _ => None,
    };
    for (what, want, got) in [("rows", rows_len.as_lit(), packed.rows), ("columns", cols_len, packed.cols)] {
        if let Some(want) = want
            && want != got as i64
        {
            return Err(Failure::Input(format!(
                "--matrix {operand}: the matrix has {got} {what}, but `{operand}` is declared with {want}"
            )));
        }
    }
    Ok(())
}

/// The SELL operands of a sparsified kernel: those whose three arrays it
/// takes (`A_soff`, `A_cols`, `A_vals`).
pub fn operands(kernel: &Kernel) -> Vec<String> {
    let has =
        |n: &str| kernel.params.iter().any(|p| matches!(p, KernelParam::Value { name, .. } if name.as_str() == n));
    kernel
        .params
        .iter()
        .filter_map(|p| p.name().as_str().strip_suffix("_cols"))
        .filter(|a| {
            let n = SellNames::of(a);
            has(&n.soff) && has(&n.cols) && has(&n.vals)
        })
        .map(str::to_string)
        .collect()
}

/// States for compiled code that each SELL operand's columns lie below
/// its column count, as a tensor's coordinates are stated
/// (`LoopProgram::ranges`). The packer writes only such columns (padding
/// too); the runtime checks every launch's columns against it and runs the
/// checked code where one is not, so stating it is always sound. It lets
/// the lanes read `x` without a check per column.
pub fn trust_columns(kernel: &Kernel, program: &mut LoopProgram) {
    for a in operands(kernel) {
        let n = SellNames::of(&a);
        let is_input =
            program.args.iter().any(|g| g.name.as_str() == n.cols && matches!(g.kind, ArgKind::Input { .. }));
        let is_nat = program.args.iter().any(|g| g.name.as_str() == n.cols_dim && matches!(g.kind, ArgKind::Nat));
        if is_input && is_nat && !program.ranges.iter().any(|r| r.buf.as_str() == n.cols) {
            program.ranges.push(InputRange {
                buf: n.cols.as_str().into(),
                field: 0,
                below: heddle_ir::loops::Expr::var(n.cols_dim.as_str()),
            });
        }
    }
}

/// `y` from a SELL kernel's result and its type `ty`: an array result of
/// exactly `padded` elements (the rows in whole slices) keeps its first
/// `rows` (the padding rows' results go), typed `[T]_rows`; any other result
/// is the kernel's own.
pub fn unpad(value: Value, ty: &Type, rows: usize, padded: usize) -> (Value, Type) {
    match (&value, ty) {
        (Value::Array(items), Type::Array { binder: None, elem, .. }) if items.len() == padded && rows < padded => (
            Value::array(items[..rows].to_vec()),
            Type::Array { binder: None, elem: elem.clone(), len: heddle_ir::Nat::Lit(rows as i64) },
        ),
        _ => (value, ty.clone()),
    }
}

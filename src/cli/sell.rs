//! `--encoding A=SELL(C)` with `--matrix A=FILE`: the matrix packed as the
//! three arrays the sparsified kernel takes (`heddle_rewrite::sparsify::sell`
//! names them; `heddle_runtime::sparse::sell` packs them, the rows sorted by
//! length within windows of σ rows for `SELL(C, sigma = S)`; the columns at
//! the kernel's width, 32 or 16 bits, checked to fit), the columns' range
//! stated for compiled code, and the result made y ([`Restore`]): the
//! padding rows dropped, and with σ > 1 the rows put back in their order.

use super::Failure;
use heddle_ir::Type;
use heddle_ir::loops::{ArgKind, InputRange, LoopProgram};
use heddle_rewrite::sparsify::sell::{SellNames, SellSpec};
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
    /// With σ > 1: the packing's row order (its arrays dropped), which
    /// [`Restore`] undoes after the kernel.
    pub sorted: Option<heddle_runtime::sparse::sell::Sell>,
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

/// A matrix laid out as SELL-C-σ, its values in their element type: the
/// arrays any SELL kernel takes, whichever kernel that is.
pub struct SellArrays {
    /// The layout: slice offsets, and the rows' order with σ > 1 (its
    /// columns taken into `cols`, its f64 values unused).
    pub sell: heddle_runtime::sparse::sell::Sell,
    /// The columns, `C` per step, `u16` with 16-bit columns, else `i32`.
    pub cols: ScalarVec,
    /// What each entry holds: the values at the element type, laid out as
    /// `cols`, or iso-valued SELL's masks (`explicitVal`, no values).
    pub vals: SellValues,
}

/// A SELL layout's values: stored, or for `explicitVal = V` none, with the
/// arrays that tell padding from entries instead.
pub enum SellValues {
    /// `A_vals`, laid out as the columns (padding 0).
    Stored(ScalarVec),
    /// `A_step` (each step's index in its slice) and `A_len` (each lane's row
    /// length): step `k` of lane `l` is an entry when `k < len[l]`.
    Iso { step: Vec<i32>, len: Vec<i32> },
}

/// Lays `coo` out as `spec` with values of type `elem`, the columns at 16
/// bits where `narrow` (each checked to fit). `what` names the matrix in
/// errors: an entry whose value `elem` cannot hold, or a column past 16 bits.
fn pack_arrays(
    what: &str,
    spec: &SellSpec,
    elem: heddle_ir::ScalarType,
    narrow: bool,
    coo: &Coo,
) -> Result<SellArrays, Failure> {
    let csr = heddle_runtime::sparse::csr::coo_to_csr_i32(coo).map_err(|e| Failure::Input(format!("{what}: {e}")))?;
    if narrow {
        check_16_bit_columns(what, &csr.offsets, &csr.col_indices)?;
    }
    let rowptr: Vec<usize> = csr.offsets.iter().map(|&o| o as usize).collect();
    let colidx: Vec<usize> = csr.col_indices.iter().map(|&j| j as usize).collect();
    let (rows, cols) = (csr.rows as usize, csr.cols as usize);
    // The file's values in the kernel's type, each checked to fit as binding
    // checks a file's values (a complex value for `double`, an integer for `u8`).
    let values = csr.values.convert(elem).map_err(|e| {
        let row = rowptr.partition_point(|&p| p <= e.position).saturating_sub(1);
        Failure::Input(format!(
            "{what}: the entry at row {row}, column {}: {}",
            colidx.get(e.position).copied().unwrap_or(0),
            e.message
        ))
    })?;
    let mut sell = heddle_runtime::sparse::sell::layout(
        rows,
        cols,
        &rowptr,
        &colidx,
        spec.lanes as usize,
        // The spec was checked where it was read (1 or a multiple of C, at most 2^31).
        spec.sigma as usize,
        elem.size_bytes(),
        None,
    )
    .map_err(|e| Failure::Input(format!("{what}: {e}")))?;
    let vals = match spec.explicit_val.as_ref() {
        None => SellValues::Stored(sell.place(&rowptr, values)),
        Some(lit) => {
            check_iso_values(what, lit, &values, &rowptr, &colidx)?;
            SellValues::Iso { step: sell.step_indices(), len: sell.lane_lengths(&rowptr) }
        }
    };
    let col = std::mem::take(&mut sell.col);
    let cols = if narrow {
        // Every stored column, padding too, is one of the row's own
        // columns or 0, all checked above to be below 2^16.
        ScalarVec::U16(col.iter().map(|&j| j as u16).collect())
    } else {
        ScalarVec::I32(col)
    };
    Ok(SellArrays { sell, cols, vals })
}

/// Refuses a matrix stored with `explicitVal = V` that has an entry of
/// another value, naming it: the kernel reads `V` for every entry, so each
/// value (at the element type) must be `V` bit for bit (a stored `0.0` is not
/// `-0.0`), as a tensor encoding's iso values are checked
/// (`assemble::check_explicit_values`).
fn check_iso_values(
    what: &str,
    lit: &heddle_ir::encoding::Literal,
    values: &ScalarVec,
    rowptr: &[usize],
    colidx: &[usize],
) -> Result<(), Failure> {
    use heddle_runtime::scalars::Num;
    let want = Num::of_literal(lit);
    let differs = (0..values.len()).find(|&k| match (values.num(k), want) {
        (Num::Float(x), Some(Num::Float(v))) => x.to_bits() != v.to_bits(),
        (Num::Float(x), Some(Num::Int(v))) => x.to_bits() != (v as f64).to_bits(),
        (Num::Int(x), Some(Num::Int(v))) => x != v,
        (Num::Int(x), Some(Num::Float(v))) => x as f64 != v,
        _ => true,
    });
    let Some(k) = differs else { return Ok(()) };
    let row = rowptr.partition_point(|&p| p <= k).saturating_sub(1);
    Err(Failure::Input(format!(
        "{what}: the entry at row {row}, column {} holds {}, but SELL's `explicitVal = {}` says every entry holds that \
         value (no values are stored); store the matrix without explicitVal",
        colidx.get(k).copied().unwrap_or(0),
        values.num(k),
        lit.text
    )))
}

/// Packs `coo` (a matrix) for `operand` stored as `spec` in `kernel`.
pub fn pack(kernel: &Kernel, operand: &str, source: &str, spec: &SellSpec, coo: &Coo) -> Result<Packed, Failure> {
    let c = spec.lanes;
    let names = SellNames::of(operand);
    let what = format!("parameter `{operand}`: {source}");
    // Iso-valued SELL has no values array: the file's values are checked
    // against the constant at their own type.
    let elem = match spec.explicit_val {
        Some(_) => Some(coo.elem()),
        None => scalar_of(kernel, &names.vals),
    }
    .ok_or_else(|| {
        Failure::Input(format!(
            "{what}: the kernel has no SELL values array `{}` (was it sparsified with SELL?)",
            names.vals
        ))
    })?;
    // The columns' width is the kernel's: `u16` for `SELL(C, crdWidth = 16)`, else `int`.
    let narrow = scalar_of(kernel, &names.cols) == Some(heddle_ir::ScalarType::U16);
    let SellArrays { sell, cols, vals } = pack_arrays(&what, spec, elem, narrow, coo)?;
    // On huge pages when large (`Loaded::streamed`): the kernel streams them.
    let packed = |data: ScalarVec, dtype: &str| Loaded::streamed(data, dtype);
    let cols_type = if narrow { "uint16" } else { "int32" };
    let mut inputs = vec![
        (names.soff.clone(), packed(ScalarVec::I32(sell.soff.clone()), "int32")),
        (names.cols.clone(), packed(cols, cols_type)),
    ];
    match vals {
        SellValues::Stored(vals) => inputs.push((names.vals.clone(), packed(vals, &elem.to_string()))),
        SellValues::Iso { step, len } => {
            inputs.push((names.step.clone(), packed(ScalarVec::I32(step), "int32")));
            inputs.push((names.len.clone(), packed(ScalarVec::I32(len), "int32")));
        }
    }
    let (rows, matrix_cols, slices) = (sell.rows, sell.cols, sell.slices());
    let has_nat = |n: &str| kernel.params.iter().any(|p| matches!(p, KernelParam::Nat(v) if v.as_str() == n));
    let nats = [(&names.rows, rows), (&names.cols_dim, matrix_cols), (&names.slices, slices)]
        .into_iter()
        .filter(|(n, _)| has_nat(n))
        .map(|(n, v)| (n.clone(), v as i64))
        .collect();
    let sorted = (spec.sigma > 1).then_some(sell);
    Ok(Packed { nats, inputs, rows, padded: slices * c as usize, cols: matrix_cols, sorted })
}

/// SELL-C-σ's arrays for `heddle convert FILE --to 'SELL(…)' -o OUT.npz`,
/// named as the kernel `heddle sparsify --encoding NAME=SELL(…)` takes them:
/// `NAME_soff`, `NAME_cols`, `NAME_vals` (flat, in the kernel's order), the
/// naturals `NAME_dim0`, `NAME_dim1`, `NAME_slices` as 0-d arrays, and with
/// σ > 1 `NAME_slot`, the sliced position of each row (y = z[slot] puts the
/// kernel's result back in row order). `elem` is the values' type.
pub fn export(
    coo: &Coo,
    spec: &SellSpec,
    elem: heddle_ir::ScalarType,
    name: &str,
    source: &str,
) -> Result<Vec<(String, ScalarVec, Vec<u64>)>, Failure> {
    let SellArrays { sell, cols, vals } = pack_arrays(source, spec, elem, spec.crd_width == 16, coo)?;
    let names = SellNames::of(name);
    let flat = |v: ScalarVec| {
        let n = v.len() as u64;
        (v, vec![n])
    };
    let natural = |n: usize| (ScalarVec::I64(vec![n as i64]), vec![]);
    let slot = (spec.sigma > 1).then(|| flat(ScalarVec::I64(sell.slot.iter().map(|&p| p as i64).collect())));
    let values = match vals {
        SellValues::Stored(vals) => vec![(names.vals, flat(vals))],
        SellValues::Iso { step, len } => {
            vec![(names.step, flat(ScalarVec::I32(step))), (names.len, flat(ScalarVec::I32(len)))]
        }
    };
    let mut arrays = vec![(names.soff, flat(ScalarVec::I32(sell.soff.clone()))), (names.cols, flat(cols))];
    arrays.extend(values);
    arrays.extend([
        (names.rows, natural(sell.rows)),
        (names.cols_dim, natural(sell.cols)),
        (names.slices, natural(sell.slices())),
    ]);
    if let Some(slot) = slot {
        arrays.push((format!("{name}_slot"), slot));
    }
    Ok(arrays.into_iter().map(|(n, (v, shape))| (n, v, shape)).collect())
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

/// The SELL operands of a sparsified kernel: those whose arrays it takes
/// (`A_soff`, `A_cols`, and `A_vals` or, iso-valued, `A_step` and `A_len`).
pub fn operands(kernel: &Kernel) -> Vec<String> {
    let has =
        |n: &str| kernel.params.iter().any(|p| matches!(p, KernelParam::Value { name, .. } if name.as_str() == n));
    kernel
        .params
        .iter()
        .filter_map(|p| p.name().as_str().strip_suffix("_cols"))
        .filter(|a| {
            let n = SellNames::of(a);
            has(&n.soff) && has(&n.cols) && (has(&n.vals) || (has(&n.step) && has(&n.len)))
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

/// How a SELL kernel's result becomes y: the padding rows of the last slice
/// dropped, and with σ > 1 the rows put back in their order.
pub struct Restore {
    /// The matrix's rows.
    pub rows: usize,
    /// Rows in whole slices: the kernel's result's length.
    pub padded: usize,
    /// With σ > 1: the packing's row order.
    pub sorted: Option<heddle_runtime::sparse::sell::Sell>,
}

impl Restore {
    /// What makes y of `packed`'s kernel result.
    pub fn of(packed: &mut Packed) -> Restore {
        Restore { rows: packed.rows, padded: packed.padded, sorted: packed.sorted.take() }
    }

    /// `y` from the kernel's result `value` and its type `ty`. With σ = 1 an
    /// array result of exactly `padded` elements keeps its first `rows`
    /// (the padding rows' results go), typed `[T]_rows`, and any other result
    /// is the kernel's own. With σ > 1 the result is the row map's
    /// (`heddle_rewrite::sparsify::sell` takes no other kernel), `padded`
    /// elements in sliced order; y's element `i` is its element `slot[i]`.
    pub fn apply(&self, value: Value, ty: &Type) -> Result<(Value, Type), Failure> {
        match (&value, ty, &self.sorted) {
            (Value::Array(items), Type::Array { binder: None, elem, .. }, Some(sell)) if items.len() == self.padded => {
                let mut y = vec![Value::Int(0); self.rows];
                sell.unpermute_into(items, &mut y);
                Ok((
                    Value::array(y),
                    Type::Array { binder: None, elem: elem.clone(), len: heddle_ir::Nat::Lit(self.rows as i64) },
                ))
            }
            (_, _, Some(_)) => Err(Failure::Internal(format!(
                "internal error: a SELL-C-σ kernel's result of type {ty} is not the {} rows in sliced order",
                self.padded
            ))),
            (Value::Array(items), Type::Array { binder: None, elem, .. }, None)
                if items.len() == self.padded && self.rows < self.padded =>
            {
                Ok((
                    Value::array(items[..self.rows].to_vec()),
                    Type::Array { binder: None, elem: elem.clone(), len: heddle_ir::Nat::Lit(self.rows as i64) },
                ))
            }
            _ => Ok((value, ty.clone())),
        }
    }

    /// With σ > 1, adds to each of `times` (the kernel's `--reps` runs) the
    /// time of putting one result back in row order: `Sell::unpermute_into`
    /// over a flat buffer of the result's element width, as the compiled
    /// kernel leaves it (y is part of what the kernel computes, so it is part
    /// of what `kernel_seconds` reports). A gather's time does not depend on
    /// the values moved, only on their width, so the buffer holds zeros. Run
    /// once per rep after the kernel's runs, each time into the same y, on
    /// `threads` threads of the kernels' pool (`Sell::unpermute_on`): the
    /// pass as it runs after each launch, minus the cache state between
    /// them. Nothing with σ = 1 (the first `rows` are y already).
    pub fn time(&self, value: &Value, ty: &Type, times: &mut [f64], threads: usize) {
        let (Some(sell), Value::Array(items), Type::Array { elem, .. }) = (&self.sorted, value, ty) else { return };
        let len = items.len();
        if len < sell.slices() * sell.c {
            return;
        }
        match element_bytes(elem) {
            Some(1) => time_each::<u8>(times, sell, len, self.rows, threads),
            Some(2) => time_each::<u16>(times, sell, len, self.rows, threads),
            Some(4) => time_each::<u32>(times, sell, len, self.rows, threads),
            Some(8) => time_each::<u64>(times, sell, len, self.rows, threads),
            Some(16) => time_each::<u128>(times, sell, len, self.rows, threads),
            // A record of another size: moved as whole 8-byte words, its
            // size rounded up (within 7 bytes of the real move); one over
            // 64 bytes as 64, a lower bound.
            Some(n) => match n.div_ceil(8) {
                3 => time_each::<[u64; 3]>(times, sell, len, self.rows, threads),
                4 => time_each::<[u64; 4]>(times, sell, len, self.rows, threads),
                5 => time_each::<[u64; 5]>(times, sell, len, self.rows, threads),
                6 => time_each::<[u64; 6]>(times, sell, len, self.rows, threads),
                7 => time_each::<[u64; 7]>(times, sell, len, self.rows, threads),
                _ => time_each::<[u64; 8]>(times, sell, len, self.rows, threads),
            },
            None => {}
        }
    }
}

/// The bytes one element of type `ty` takes in a flat buffer: a scalar's
/// size, a record's fields' sum; `None` for anything holding an array.
fn element_bytes(ty: &Type) -> Option<usize> {
    match ty {
        Type::Scalar(s) => Some(s.size_bytes()),
        Type::Tuple(fields) => fields.iter().map(element_bytes).sum(),
        _ => None,
    }
}

/// Adds to each of `times` the time of one unpermuting pass on `threads`
/// threads from a zeroed sliced result of `len` elements of `T` into a
/// zeroed y of `rows`.
fn time_each<T: Copy + Default + Send + Sync>(
    times: &mut [f64],
    sell: &heddle_runtime::sparse::sell::Sell,
    len: usize,
    rows: usize,
    threads: usize,
) {
    let z = vec![T::default(); len];
    let mut y = vec![T::default(); rows];
    for t in times {
        let start = std::time::Instant::now();
        sell.unpermute_on(&z, &mut y, threads);
        *t += start.elapsed().as_secs_f64();
        std::hint::black_box(&y);
    }
}

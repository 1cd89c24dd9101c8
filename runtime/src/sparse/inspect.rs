//! The structural inspector behind `--encoding A=auto`: what a matrix's
//! entries look like, measured in one pass, and a documented rule that
//! ranks storage formats from it — no timing, as MKL's
//! `mkl_sparse_optimize` chooses (docs/performance.md, "What MKL's
//! `mkl_sparse_optimize` does per matrix").
//!
//! [`inspect`] reads the entries once in row-major order (an unsorted
//! [`Coo`] is sorted first, on a copy): O(nnz) time (a block row's column
//! blocks are sorted when it ends: O(nnz log) at worst), then sorts the
//! non-empty rows' lengths (SELL-8-σ); memory O(cols) for the blocks of more
//! than one row, at most [`DIAGONAL_CAP`] diagonals and one length per
//! non-empty row, never a buffer per entry. [`rank`] turns the statistics into candidates,
//! best first, each with its reason; the caller takes the first one the
//! front door (`heddle_rewrite::sparsify`) accepts.
//!
//! ## The rule
//!
//! A format is a candidate when the share of its stored values that hold
//! entries (its *fill*) is at least [`MIN_FILL`]:
//!
//! - **DIA** (`j - i : compressed, i : dense`): `nnz / (diagonals × rows)`.
//!   Its SpMV reads one value per stored slot and no column index, against
//!   CSR's value and 32-bit index per entry: it reads fewer bytes than CSR32
//!   from a fill of `v / (v + 4)` (0.67 for f64, 0.5 for f32). Measured
//!   (bench spmv_peers, sessions 8 and 9): `banded_1M_k2`, 5 diagonals at
//!   fill 0.99999, ran DIA at 1.6–3.9x CSR32's GFLOP/s in f32, but in f64 at
//!   medians of 0.7x (session 9) and 1.1x (session 8), the rounds spread
//!   from 0.7x to 2x: f64 DIA is the rule's least certain pick;
//!   `rowband_5k`, thousands of diagonals at fill below 0.01, ran DIA at
//!   0.03x.
//! - **BSR(1, 8)** (a row in runs of 8 columns): `nnz / (blocks × 8)`, when
//!   the columns are a multiple of 8 (the storage's shape). Spelled with
//!   32-bit positions and 16-bit block coordinates when the block columns
//!   (`cols / 8`) fit 16 bits, else 32-bit ones ([`BSR_1X8_16`],
//!   [`BSR_1X8_32`]; the named, 64-bit `BSR(1, 8)` past 2^31 blocks or
//!   block columns). It reads a value per slot and one coordinate per 8
//!   slots: fewer bytes than CSR32 from a fill of `(v + 0.25) / (v + 4)`
//!   at 16-bit coordinates (0.69 for f64, 0.53 for f32; at 32-bit ones
//!   `(v + 0.5) / (v + 4)`, 0.71 and 0.56). Measured:
//!   `rowband_5k` (fill 1.0) at 1.2–1.7x CSR32; the uniform matrices (fill
//!   about 1/8) at 0.25–0.55x; `banded_1M_k2` (fill about 0.4) at 0.5–0.8x.
//! - **BSR(8, 1)** (blocks of 8 rows by 1 column: a column's entries in 8
//!   consecutive rows): `nnz / (blocks × 8)`, when the rows are a multiple
//!   of 8. Spelled with 32-bit positions and 16-bit block coordinates when
//!   the columns fit 16 bits, else 32-bit ones ([`BSR_8X1_16`],
//!   [`BSR_8X1_32`]; the named, 64-bit `BSR(8, 1)` past 2^31 blocks or
//!   columns). The front door runs a block row's 8 sums in vector lanes
//!   (`heddle_rewrite::sparsify`'s lane form): per block one 16-bit
//!   coordinate, one broadcast of x and 8 values multiplied from memory, so
//!   it streams `v + 2/8` bytes per slot (8.25 at f64, 4.25 at f32) against
//!   SELL-8c16's `v + 2`, and loads x once per block where SELL-8's lanes
//!   gather it once per entry. By bytes alone it would break even with a
//!   full SELL-8c16 at a fill of `(v + 0.25) / (v + 2)` (0.83 at f64, 0.71
//!   at f32) and with CSR32 at `(v + 0.25) / (v + 4)` (0.69, 0.53); the
//!   loads of x move the measured break-even lower, so it is a candidate
//!   from a fill of [`BSR_8X1_MIN_FILL`] = 0.6 and, as a structured format,
//!   goes before SELL-8 and CSR32. Measured (docs/performance.md, "bsr81",
//!   interleaved on a loaded machine): `rowband_5k` (fill 0.97) at 0.6–0.65x
//!   SELL-8c16's time at f64, 0.4x at f32; synthetic 8000 x 8000 row
//!   blocks of 200 columns each at fills 0.2–0.9, one thread: BSR(8, 1)
//!   at 0.26 ms (f64) and 0.17 ms (f32) whatever the fill (the blocks are
//!   the same), SELL-8c16 at f64 0.50 ms (fill 0.9), 0.38 (0.7), 0.32
//!   (0.6), 0.27 (0.5), 0.23 (0.4), at f32 0.44 (0.9), 0.31 (0.6), 0.22
//!   (0.4), 0.17 (0.3); so 0.6 keeps a margin over the f64 break-even
//!   (0.5). The uniform matrices (fill about 1/8) and `banded_1M_k2` (fill
//!   0.42) stay under it and keep their formats. BSR(4, 1)'s fill is
//!   reported too but not ranked: on `rowband_5k` its lane form ran at
//!   1.15–1.2x BSR(8, 1)'s time at f64 (half the rows per coordinate and
//!   per broadcast), and at f32 7x (its row of 4 lanes, one vector, is
//!   kept in memory by the CPU backend).
//! - **SELL-8** (slices of 8 rows padded to their longest): `nnz / slots`.
//!   Measured at 1.1–1.7x CSR32 on the uniform matrices and `banded_1M_k2`
//!   (fill 0.8–1.0). No MLIR encoding expresses SELL-8; it is heddle's own
//!   layout `SELL(8)`, which the front door takes (`--encoding A=SELL(8)`:
//!   `heddle_rewrite::sparsify::sell`).
//! - **SELL-8c16** (`SELL(8, crdWidth = 16)`): SELL-8 with 16-bit columns,
//!   when the matrix has at most 65 536 columns; the same fill and kernel,
//!   2 bytes less per slot (10 instead of 12 bytes per slot at f64, 6
//!   instead of 8 at f32). Ranked just before SELL-8, which stays the
//!   fallback. Measured (docs/performance.md, "SELL-8 with 16-bit columns",
//!   interleaved, 1 and 2 threads): `uniform_5k_d4` 0.95x SELL-8's time in
//!   every statistic at f32 and f64; `rowband_5k` (5 M entries, a loaded
//!   machine) 0.94–1.00x by the median, 0.72–0.95x by the fastest run.
//!   Never slower beyond the noise.
//! - **SELL-8-σ** (`SELL(8, sigma = S)`, S the rows rounded up to whole
//!   slices: every row sorted by length, longest first): when SELL-8's
//!   slices in row order fall under the fill but sorted ones reach it, and
//!   the row lengths vary as a power law's do ([`POWER_LAW_CV`]). Ranked after the
//!   structured formats, before CSR32. Measured on `rmat_s18_ef10`
//!   (2 threads, the `spmv_peers` bench, 5 interleaved rounds; the
//!   thirteenth session's run in docs/performance.md): 3.65 GFLOP/s
//!   against CSR32's 2.88 at f32 (1.27x), 2.66 against 2.47 at f64 (1.08x),
//!   the permutation back to row order included.
//! - **CSR32** (32-bit positions and coordinates), when the entries and
//!   columns fit 31 bits: what MKL and the peers read; then **CSR** (64-bit).
//! - **Iso-valued** matrices ([`Inspection::iso_value`]: every entry the
//!   same value, bit for bit, not NaN): CSR32 and CSR carry `explicitVal`
//!   ([`explicit_val`]) and read no values (4 bytes per entry, against 12
//!   at f64 and 8 at f32), in CSR32's place, except that with 8-byte
//!   values the iso CSR32 goes ahead of SELL-8-σ: measured on
//!   `rmat_s18_ef10` (docs/performance.md, "iso-valued matrices" and
//!   "Against MKL after the fourteenth session's merges"), the iso CSR32 ran
//!   1.14–1.20x CSR32 with values; at f64 and 2 threads 1.02–1.06x
//!   SELL-8-σ with its values, at f32 SELL-8-σ stayed ahead (its SpMV
//!   waits on the gathers of x more than on the values). The padded
//!   formats (DIA, BSR, SELL) keep their values: a padding slot must read
//!   0, not the constant — except **iso-valued SELL-8-σ**
//!   (`SELL(8, sigma = S, explicitVal = V)`), whose lanes mask their
//!   padding by their rows' lengths: where SELL-8-σ is a candidate it goes
//!   first, ahead of SELL-8-σ and the iso CSR32 at both value widths
//!   (measured, [`rank_iso_sell_sorted`]); and **iso-valued SELL-8**
//!   (`SELL(8, explicitVal = V)`) likewise just before SELL-8 (and
//!   SELL-8c16) where SELL-8 is a candidate ([`rank_iso_sell8`]).
//!
//! The candidates that pass their fill are ordered by their storage bytes
//! (the bytes [`super::estimate::storage_size`] gives, computed here from
//! the statistics), DIA and BSR first since they read the fewest bytes when
//! they qualify; SELL-8 next (SELL-8c16 first where it fits), CSR32 and CSR
//! last. One exception, measured: for 8-byte values SELL-8 goes before
//! BSR(1, 8) when both qualify (not before BSR(8, 1), which is ahead of it
//! on the same matrix). On the row-band matrix where both fill, at
//! f64 and 2 threads, BSR(1, 8) (32-bit positions, 16-bit block
//! coordinates, its block sums carried in lanes) ran at a median of 6.2
//! GFLOP/s against SELL-8c16's 7.2 through the same front door (the
//! `spmv_peers` bench, 5 interleaved rounds each); at f32 BSR(1, 8) is
//! ahead (16.8 against 13.5) and keeps its place (docs/performance.md,
//! "…twelfth session's merges"). Measured again with both formats' values
//! on huge pages and x's loads folded into BSR's multiplies: one thread,
//! 2.6–2.7 ms against SELL-8c16's 2.0–2.1; the BSR step stalls on its
//! values' first load per block, and x (40 KB at f64) does not stay in L1
//! as SELL-8's lanes' shared columns do (docs/performance.md, "bsr64"). [`MIN_FILL`] = 0.75 is
//! above both break-even fills of each format for f32 and f64 and below the
//! fills of every measured win. 16-bit column coordinates (CSR16) are not
//! ranked: measured against CSR32 they were no faster (0.65–1.1x).

use super::coo::Coo;
use heddle_ir::ScalarType;
use serde::Serialize;

/// At most this many distinct diagonals are counted; past it DIA is ruled
/// out (its fill could reach [`MIN_FILL`] only with rows of at least 768
/// entries on average) and the count is reported as over the cap.
pub const DIAGONAL_CAP: usize = 1024;

/// The least share of a format's stored values that must hold entries for
/// the format to be a candidate (see the module's rule).
pub const MIN_FILL: f64 = 0.75;

/// The least fill of BSR(8, 1)'s blocks for it to be a candidate: lower
/// than [`MIN_FILL`], measured (module documentation): its lane form loads
/// x once per block where SELL-8 gathers it per entry, and ran ahead of
/// SELL-8c16 down to a fill of 0.5 at f64 and 0.3 at f32.
pub const BSR_8X1_MIN_FILL: f64 = 0.6;

/// The block shapes whose fill is measured (powers of two); BSR(1, 8) and
/// BSR(8, 1) are the ranked ones.
pub const BLOCK_SHAPES: [(u64, u64); 6] = [(1, 8), (1, 4), (2, 2), (4, 4), (8, 1), (4, 1)];

/// Rows per SELL slice.
pub const SELL_SLICE: u64 = 8;

/// The name of SELL-8 with 16-bit columns (`SELL(8, crdWidth = 16)`).
pub const SELL8_C16: &str = "SELL-8c16";

/// The name of SELL-8-σ with every row sorted by length (`SELL(8, sigma = S)`,
/// S from [`sorted_sigma`]).
pub const SELL8_SORTED: &str = "SELL-8-σ";

/// The coefficient of variation of the row lengths (standard deviation over
/// mean) from which SELL-8-σ is ranked: the regime it was measured in
/// (`rmat_s18_ef10`: 6.8); milder variation (rows of 0 to 8 entries: 0.65)
/// stays on CSR32 until measured.
pub const POWER_LAW_CV: f64 = 1.0;

/// The sorting window that sorts all of a matrix's `rows`: the rows
/// rounded up to whole slices, at most the front door's largest window
/// (2^31 rows; a matrix with more is sorted within windows of that many).
pub fn sorted_sigma(rows: u64) -> u64 {
    rows.max(1).next_multiple_of(SELL_SLICE).min(1 << 31)
}

/// How full the blocks of one shape are.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BlockFill {
    /// Block rows.
    pub rows: u64,
    /// Block columns.
    pub cols: u64,
    /// Distinct blocks that hold an entry.
    pub blocks: u64,
    /// `nnz / (blocks × rows × cols)`; 0 without entries.
    pub fill: f64,
    /// Whether the matrix's shape is a multiple of the block's (BSR storage needs it).
    pub fits: bool,
}

/// A matrix's structure, measured in one pass over its entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Inspection {
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Entries (duplicates counted once).
    pub nnz: u64,
    /// Mean entries per row.
    pub row_mean: f64,
    /// The longest row's entries.
    pub row_max: u64,
    /// Coefficient of variation of the row lengths (standard deviation / mean; 0 without entries).
    pub row_cv: f64,
    /// Rows without entries.
    pub empty_rows: u64,
    /// Distinct diagonals (`j - i`) holding entries; `None` past [`DIAGONAL_CAP`].
    pub diagonals: Option<u64>,
    /// DIA's fill `nnz / (diagonals × rows)`; `None` past the cap.
    pub dia_fill: Option<f64>,
    /// Block fills, one per shape of [`BLOCK_SHAPES`].
    pub blocks: Vec<BlockFill>,
    /// SELL-8's fill: `nnz` over the slots of slices of 8 rows each padded to its longest row.
    pub sell8_fill: f64,
    /// SELL-8's slots (stored values, padding included).
    pub sell8_slots: u64,
    /// SELL-8-σ's fill with every row sorted by length (σ the whole
    /// matrix, [`sorted_sigma`]): `nnz` over the slots of slices of 8 rows
    /// of nearly one length.
    pub sell8_sorted_fill: f64,
    /// SELL-8-σ's slots with every row sorted by length.
    pub sell8_sorted_slots: u64,
    /// Whether every column coordinate fits 16 bits (cols ≤ 65536).
    pub cols_fit_16_bits: bool,
    /// The value every entry holds when all hold the same one, bit for bit
    /// at the values' type (an *iso-valued* matrix: a graph's adjacency
    /// matrix, a pattern file), written exactly (`1.0`, `-0.0`, `3`); `None`
    /// without entries, when two differ (`0.0` and `-0.0` do), for a NaN
    /// (no stored value equals it), and for values of a type the iso
    /// storage does not take (`f16`, `bf16`, complex, `bool`).
    pub iso_value: Option<String>,
}

/// [`Inspection::iso_value`] of a matrix's values (also `heddle tune
/// --matrix`'s test for trying iso-valued variants).
pub fn iso_value(values: &crate::scalars::ScalarVec) -> Option<String> {
    use crate::scalars::ScalarVec as V;
    fn same<T: Copy, B: PartialEq>(v: &[T], bits: impl Fn(T) -> B) -> Option<T> {
        let first = *v.first()?;
        v.iter().all(|&x| bits(x) == bits(first)).then_some(first)
    }
    let float = |x: f64| (!x.is_nan() && x.is_finite()).then(|| format!("{x:?}"));
    match values {
        V::F64(v) => same(v, f64::to_bits).and_then(float),
        V::F32(v) => same(v, f32::to_bits).and_then(|x| float(f64::from(x))),
        V::I8(v) => same(v, |x| x).map(|x| x.to_string()),
        V::I16(v) => same(v, |x| x).map(|x| x.to_string()),
        V::I32(v) => same(v, |x| x).map(|x| x.to_string()),
        V::I64(v) => same(v, |x| x).map(|x| x.to_string()),
        V::U8(v) => same(v, |x| x).map(|x| x.to_string()),
        V::U16(v) => same(v, |x| x).map(|x| x.to_string()),
        V::U32(v) => same(v, |x| x).map(|x| x.to_string()),
        V::U64(v) => same(v, |x| x).map(|x| x.to_string()),
        _ => None,
    }
}

/// The `explicitVal = …` field an encoding of a matrix of `elem` values
/// takes for the inspection's iso value (`explicitVal = 1.0 : f64`), when
/// the value holds exactly at `elem` (the matrix's values may be read at
/// another type: `heddle convert --elem`); `None` otherwise.
pub fn explicit_val(s: &Inspection, elem: ScalarType) -> Option<String> {
    explicit_val_of(s.iso_value.as_deref()?, elem)
}

/// [`explicit_val`] for the iso value `text` ([`iso_value`]'s).
pub fn explicit_val_of(text: &str, elem: ScalarType) -> Option<String> {
    let lit = explicit_literal(text, elem)?;
    Some(format!("explicitVal = {} : {}", lit.text, lit.ty.unwrap_or_default()))
}

/// The iso value `text` ([`iso_value`]'s) as the literal of an
/// `explicitVal` for values of `elem`, typed (`1.0 : f64`), when it holds
/// exactly at `elem`; `None` otherwise.
pub fn explicit_literal(text: &str, elem: ScalarType) -> Option<heddle_ir::encoding::Literal> {
    let value = match elem {
        ScalarType::F64 | ScalarType::F32 => {
            let v: f64 = text.parse().ok()?;
            // Rounded as the values would be, written exactly (`0.1` at f32
            // is 0.10000000149011612).
            let v = if elem == ScalarType::F32 { f64::from(v as f32) } else { v };
            if !v.is_finite() {
                return None;
            }
            format!("{v:?}")
        }
        e if e.is_int() => {
            let v: i128 = text.parse().ok().or_else(|| {
                let f: f64 = text.parse().ok()?;
                (f.fract() == 0.0 && f.abs() < 9.0e18).then_some(f as i128)
            })?;
            let bits = 8 * e.size_bytes() as u32;
            let signed = matches!(e, ScalarType::I8 | ScalarType::I16 | ScalarType::I32 | ScalarType::I64);
            let fits = if signed {
                v >= -(1i128 << (bits - 1)) && v < 1i128 << (bits - 1)
            } else {
                // 64-bit unsigned values past i64's range keep their buffer (the view's literal is an i64).
                v >= 0 && v < 1i128 << bits.min(63)
            };
            if !fits {
                return None;
            }
            v.to_string()
        }
        _ => return None,
    };
    let ty = match elem {
        ScalarType::F64 => "f64".to_string(),
        ScalarType::F32 => "f32".to_string(),
        e => format!("i{}", 8 * e.size_bytes()),
    };
    Some(heddle_ir::encoding::Literal { text: value, ty: Some(ty) })
}

/// `text`, an `--encoding` value that is a `#sparse_tensor.encoding<{…}>`,
/// with `field` added before its closing `}>`.
fn with_field(text: &str, field: &str) -> String {
    match text.strip_suffix("}>") {
        Some(head) => format!("{} , {field} }}>", head.trim_end()).replace(" , ", ", "),
        None => text.to_string(),
    }
}

/// Inspects a matrix (rank 2). Entries are read in row-major order; an
/// unsorted `coo` (or one with duplicates) is sorted and summed on a copy first.
pub fn inspect(coo: &Coo) -> Result<Inspection, String> {
    if coo.rank() != 2 {
        return Err(format!("the inspector reads matrices; this tensor has {} dimensions", coo.rank()));
    }
    if coo.is_sorted_unique() {
        Ok(inspect_sorted(coo))
    } else {
        let mut c = coo.clone();
        c.sort_and_sum();
        Ok(inspect_sorted(&c))
    }
}

/// Distinct blocks of one shape (powers of two: shifts, no division), block
/// row by block row: a row's entries come in column order, so one-row blocks
/// are runs; a taller block row's column blocks are gathered (a repeat of the
/// previous one left out), then sorted and counted when the block row ends.
/// Memory: the column blocks of one block row, at most `rows × cols / c`.
struct Blocks {
    rs: u32,
    cs: u32,
    block_row: u64,
    last: u64,
    ids: Vec<u64>,
    count: u64,
}

impl Blocks {
    fn new(r: u64, c: u64) -> Blocks {
        debug_assert!(r.is_power_of_two() && c.is_power_of_two());
        Blocks {
            rs: r.trailing_zeros(),
            cs: c.trailing_zeros(),
            block_row: u64::MAX,
            last: u64::MAX,
            ids: Vec::new(),
            count: 0,
        }
    }
    fn add(&mut self, i: u64, j: u64) {
        let (br, bc) = (i >> self.rs, j >> self.cs);
        if br != self.block_row {
            self.flush();
            (self.block_row, self.last) = (br, u64::MAX);
        }
        if bc != self.last {
            self.last = bc;
            if self.rs == 0 {
                self.count += 1;
            } else {
                self.ids.push(bc);
            }
        }
    }
    fn flush(&mut self) {
        self.ids.sort_unstable();
        self.ids.dedup();
        self.count += self.ids.len() as u64;
        self.ids.clear();
    }
}

fn inspect_sorted(coo: &Coo) -> Inspection {
    let (rows, cols) = (coo.dims[0], coo.dims[1]);
    let nnz = coo.len() as u64;
    // Row lengths, on the fly: entries come row by row.
    let (mut sum_sq, mut row_max, mut nonempty) = (0f64, 0u64, 0u64);
    // SELL-8: per slice, its longest row.
    let (mut slots, mut slice, mut slice_max) = (0u64, u64::MAX, 0u64);
    // The non-empty rows' lengths (at most one per entry), for SELL-8-σ.
    let mut lengths: Vec<u64> = Vec::new();
    let mut finish_row = |len: u64, row: u64| {
        if len == 0 {
            return;
        }
        lengths.push(len);
        sum_sq += (len as f64) * (len as f64);
        row_max = row_max.max(len);
        nonempty += 1;
        let s = row / SELL_SLICE;
        if s != slice {
            slots += slice_max * SELL_SLICE;
            (slice, slice_max) = (s, 0);
        }
        slice_max = slice_max.max(len);
    };
    // Diagonals, kept sorted while at most DIAGONAL_CAP.
    // As i128: a coordinate may be past i64 (a dimension up to 2^64 - 1).
    let mut diagonals: Option<Vec<i128>> = Some(Vec::new());
    let mut shapes: Vec<Blocks> = BLOCK_SHAPES.iter().map(|&(r, c)| Blocks::new(r, c)).collect();
    let (mut row, mut len) = (0u64, 0u64);
    for k in 0..coo.len() {
        let e = coo.entry(k);
        let (i, j) = (e[0], e[1]);
        if i != row {
            finish_row(len, row);
            (row, len) = (i, 0);
        }
        len += 1;
        if let Some(d) = &mut diagonals {
            let diag = i128::from(j) - i128::from(i);
            if let Err(at) = d.binary_search(&diag) {
                if d.len() == DIAGONAL_CAP {
                    diagonals = None;
                } else {
                    d.insert(at, diag);
                }
            }
        }
        for b in &mut shapes {
            b.add(i, j);
        }
    }
    finish_row(len, row);
    slots += slice_max * SELL_SLICE;
    // Sorted longest first, the empty rows last (they pad only the slice
    // they share with the shortest non-empty rows): each slice of 8 is as
    // wide as its first row.
    lengths.sort_unstable_by(|a, b| b.cmp(a));
    let sorted_slots: u64 = lengths.iter().step_by(SELL_SLICE as usize).map(|&l| l * SELL_SLICE).sum();
    let fill = |stored: u64| if stored == 0 { 0.0 } else { nnz as f64 / stored as f64 };
    let row_mean = if rows == 0 { 0.0 } else { nnz as f64 / rows as f64 };
    let variance = if rows == 0 { 0.0 } else { (sum_sq / rows as f64 - row_mean * row_mean).max(0.0) };
    let row_cv = if row_mean == 0.0 { 0.0 } else { variance.sqrt() / row_mean };
    let diag_count = diagonals.map(|d| d.len() as u64);
    let mut blocks = Vec::new();
    for (&(r, c), b) in BLOCK_SHAPES.iter().zip(&mut shapes) {
        b.flush();
        let count = b.count;
        let fits = rows.is_multiple_of(r) && cols.is_multiple_of(c);
        blocks.push(BlockFill { rows: r, cols: c, blocks: count, fill: fill(count * r * c), fits });
    }
    Inspection {
        rows,
        cols,
        nnz,
        row_mean,
        row_max,
        row_cv,
        empty_rows: rows - nonempty,
        diagonals: diag_count,
        dia_fill: diag_count.map(|d| fill(d.saturating_mul(rows))),
        blocks,
        sell8_fill: fill(slots),
        sell8_slots: slots,
        sell8_sorted_fill: fill(sorted_slots),
        sell8_sorted_slots: sorted_slots,
        cols_fit_16_bits: cols <= 1 << 16,
        iso_value: iso_value(&coo.values),
    }
}

/// One ranked storage format.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidate {
    /// The format's name (`DIA`, `BSR(1, 8)`, `BSR(8, 1)`, `SELL-8c16`, `SELL-8`, `CSR32`, `CSR`).
    pub name: String,
    /// What `--encoding NAME=…` takes for it; `None` when no encoding expresses it.
    pub encoding: Option<String>,
    /// Why it is ranked here.
    pub reason: String,
    /// Its storage bytes.
    pub bytes: u64,
}

/// A format the rule considered and left out, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rejected {
    /// The format's name.
    pub name: String,
    /// Why it is not a candidate.
    pub reason: String,
}

/// The rule's verdict: candidates best first (never empty: CSR is last), and the rest.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ranking {
    /// Best first.
    pub candidates: Vec<Candidate>,
    /// Considered and left out.
    pub rejected: Vec<Rejected>,
}

/// CSR with 32-bit positions and coordinates, as `--encoding` text.
pub const CSR32: &str =
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>";

/// The named `CSR` (64-bit positions and coordinates), as `--encoding` text.
const CSR64: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";

/// BSR(1, 8) with 32-bit positions and 16-bit block coordinates (block
/// columns ≤ 2^16), as `--encoding` text: the named `BSR(1, 8)`'s levels.
pub const BSR_1X8_16: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 1 : dense, j floordiv 8 : compressed, i mod 1 : dense, j mod 8 : dense), posWidth = 32, crdWidth = 16 }>";

/// BSR(1, 8) with 32-bit positions and block coordinates, as `--encoding` text.
pub const BSR_1X8_32: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 1 : dense, j floordiv 8 : compressed, i mod 1 : dense, j mod 8 : dense), posWidth = 32, crdWidth = 32 }>";

/// The narrowest spelling of BSR(1, 8) for `blocks` stored blocks of a
/// matrix of `cols` columns: 32-bit positions when the blocks fit 31 bits,
/// block coordinates (below `cols / 8`) at 16 bits when they fit, else
/// 32; the named `BSR(1, 8)` (64-bit) past that. Returns the encoding text
/// and the bytes of a position and of a coordinate.
fn bsr_1x8_widths(blocks: u64, cols: u64) -> (&'static str, u64, u64) {
    let block_cols = cols / 8;
    match (blocks < 1 << 31, block_cols) {
        (true, ..=0x1_0000) => (BSR_1X8_16, 4, 2),
        (true, ..=0x8000_0000) => (BSR_1X8_32, 4, 4),
        _ => ("BSR(1, 8)", 8, 8),
    }
}

/// BSR(8, 1) with 32-bit positions and 16-bit block coordinates (columns
/// ≤ 2^16), as `--encoding` text: the named `BSR(8, 1)`'s levels.
pub const BSR_8X1_16: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 8 : dense, j floordiv 1 : compressed, i mod 8 : dense, j mod 1 : dense), posWidth = 32, crdWidth = 16 }>";

/// BSR(8, 1) with 32-bit positions and block coordinates, as `--encoding` text.
pub const BSR_8X1_32: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 8 : dense, j floordiv 1 : compressed, i mod 8 : dense, j mod 1 : dense), posWidth = 32, crdWidth = 32 }>";

/// The narrowest spelling of BSR(8, 1) for `blocks` stored blocks of a
/// matrix of `cols` columns (a block column is a column): as
/// [`bsr_1x8_widths`], the encoding text and the bytes of a position and
/// of a coordinate.
fn bsr_8x1_widths(blocks: u64, cols: u64) -> (&'static str, u64, u64) {
    match (blocks < 1 << 31, cols) {
        (true, ..=0x1_0000) => (BSR_8X1_16, 4, 2),
        (true, ..=0x8000_0000) => (BSR_8X1_32, 4, 4),
        _ => ("BSR(8, 1)", 8, 8),
    }
}

/// A block shape the module's rule ranks: BSR(1, 8) or BSR(8, 1).
struct BlockRule {
    rows: u64,
    cols: u64,
    /// The fill it needs to be a candidate.
    min_fill: f64,
    /// Its narrowest spelling for a count of blocks and the matrix's columns
    /// (encoding text, bytes of a position, bytes of a coordinate).
    widths: fn(u64, u64) -> (&'static str, u64, u64),
}

/// BSR(1, 8): a row in runs of 8 columns.
const BSR_1X8_RULE: BlockRule = BlockRule { rows: 1, cols: 8, min_fill: MIN_FILL, widths: bsr_1x8_widths };
/// BSR(8, 1): blocks of 8 rows by 1 column, the block row's 8 sums carried in
/// vector lanes.
const BSR_8X1_RULE: BlockRule = BlockRule { rows: 8, cols: 1, min_fill: BSR_8X1_MIN_FILL, widths: bsr_8x1_widths };

/// The block shape `rule` as a structured candidate when its blocks fill
/// `rule.min_fill` (the module's rule), else why not.
fn block_candidate(
    s: &Inspection,
    v: u64,
    rule: &BlockRule,
    structural: &mut Vec<Candidate>,
    rejected: &mut Vec<Rejected>,
) {
    let Some(b) = s.blocks.iter().find(|b| (b.rows, b.cols) == (rule.rows, rule.cols)) else { return };
    let (r, c) = (rule.rows, rule.cols);
    let name = format!("BSR({r}, {c})");
    if s.nnz == 0 {
        rejected.push(Rejected { name, reason: "no entries".into() });
    } else if !b.fits {
        let reason = if r > 1 {
            format!("{} rows are not a multiple of {r}", s.rows)
        } else {
            format!("{} columns are not a multiple of {c}", s.cols)
        };
        rejected.push(Rejected { name, reason });
    } else if b.fill >= rule.min_fill {
        let (encoding, pos, crd) = (rule.widths)(b.blocks, s.cols);
        structural.push(Candidate {
            name,
            encoding: Some(encoding.into()),
            reason: format!("{} blocks of {r}x{c} hold the entries, {} full", b.blocks, pct(b.fill)),
            // (i floordiv r : dense, j floordiv c : compressed, i mod r : dense, j mod c : dense):
            // a position per block row and one more, a coordinate per block, r·c values per block.
            bytes: bytes(&[
                ((s.rows / r).saturating_add(1), pos),
                (b.blocks, crd),
                (b.blocks.saturating_mul(r * c), v),
            ]),
        });
    } else {
        rejected.push(Rejected {
            name,
            reason: format!("blocks of {r}x{c} would be {} full, under {}", pct(b.fill), pct(rule.min_fill)),
        });
    }
}

fn pct(x: f64) -> String {
    let p = 100.0 * x;
    if p >= 99.95 || p == 0.0 || p >= 10.0 { format!("{p:.1}%") } else { format!("{p:.2}%") }
}

/// The bytes of buffers of `(count, bytes each)`, saturating: a file's size
/// line may give a dimension up to 2^64 - 1, and a count past `u64` only
/// needs to rank last.
fn bytes(buffers: &[(u64, u64)]) -> u64 {
    buffers.iter().fold(0u64, |sum, &(count, each)| sum.saturating_add(count.saturating_mul(each)))
}

/// Ranks storage formats for a matrix of values of type `elem` by the
/// module's rule.
pub fn rank(s: &Inspection, elem: ScalarType) -> Ranking {
    let v = elem.size_bytes() as u64;
    let mut structural = Vec::new();
    let mut rejected = Vec::new();
    let min = pct(MIN_FILL);
    match (s.diagonals, s.dia_fill) {
        _ if s.nnz == 0 => rejected.push(Rejected { name: "DIA".into(), reason: "no entries".into() }),
        (Some(d), Some(f)) if f >= MIN_FILL => structural.push(Candidate {
            name: "DIA".into(),
            encoding: Some("DIA".into()),
            reason: format!("{d} diagonals hold the entries, {} of their {} slots", pct(f), d.saturating_mul(s.rows)),
            // (j - i : compressed, i : dense), 64-bit positions and coordinates.
            bytes: bytes(&[(2 + d, 8), (d.saturating_mul(s.rows), v)]),
        }),
        (Some(d), Some(f)) => rejected.push(Rejected {
            name: "DIA".into(),
            reason: format!("{d} diagonals would be {} full, under {min}", pct(f)),
        }),
        _ => rejected.push(Rejected { name: "DIA".into(), reason: format!("more than {DIAGONAL_CAP} diagonals") }),
    }
    block_candidate(s, v, &BSR_1X8_RULE, &mut structural, &mut rejected);
    block_candidate(s, v, &BSR_8X1_RULE, &mut structural, &mut rejected);
    structural.sort_by_key(|c| c.bytes);
    let mut candidates = structural;
    let slices = s.rows.div_ceil(SELL_SLICE);
    if s.nnz > 0 && s.sell8_fill >= MIN_FILL {
        // For 8-byte values, before BSR(1, 8), though it stores more bytes:
        // measured faster at f64 on 2 threads where both fill (module
        // documentation); for 4-byte values BSR(1, 8) is faster and keeps
        // its place.
        let at = match v {
            8.. => {
                // BSR(8, 1) stays ahead of SELL-8 (measured faster where it
                // qualifies): ahead of BSR(1, 8) too when that stores fewer bytes.
                let b18 = candidates.iter().position(|c| c.name == "BSR(1, 8)");
                let b81 = candidates.iter().position(|c| c.name == "BSR(8, 1)");
                if let (Some(i), Some(j)) = (b18, b81)
                    && j > i
                {
                    let c = candidates.remove(j);
                    candidates.insert(i, c);
                }
                candidates.iter().position(|c| c.name == "BSR(1, 8)").unwrap_or(candidates.len())
            }
            _ => candidates.len(),
        };
        let full = format!("slices of 8 rows padded to their longest are {} full", pct(s.sell8_fill));
        candidates.insert(
            at,
            Candidate {
                name: "SELL-8".into(),
                encoding: Some("SELL(8)".into()),
                reason: full.clone(),
                bytes: bytes(&[(slices + 1, 4), (s.sell8_slots, 4 + v)]),
            },
        );
        // 16-bit columns where every column fits: 2 bytes less per slot,
        // the same kernel otherwise; ranked just before SELL-8 (measured,
        // module documentation), which stays the fallback.
        if s.cols_fit_16_bits {
            candidates.insert(
                at,
                Candidate {
                    name: SELL8_C16.into(),
                    encoding: Some("SELL(8, crdWidth = 16)".into()),
                    reason: format!("{full}; the {} columns fit 16-bit coordinates", s.cols),
                    bytes: bytes(&[(slices + 1, 4), (s.sell8_slots, 2 + v)]),
                },
            );
        } else {
            rejected.push(Rejected {
                name: SELL8_C16.into(),
                reason: format!("{} columns do not fit 16-bit coordinates (at most 65536)", s.cols),
            });
        }
    } else if s.nnz > 0 {
        rejected.push(Rejected {
            name: "SELL-8".into(),
            reason: format!("slices of 8 rows would be {} full, under {min}", pct(s.sell8_fill)),
        });
        // Rows of very different lengths in their order (a power law):
        // sorted by length, slices of 8 rows pad little. Measured faster
        // than CSR32 on rmat_s18_ef10 at 2 threads (docs/performance.md,
        // "SELL-C-σ…" and the thirteenth session's runs: 1.27× at f32,
        // 1.08× at f64), where row lengths vary most; after the structured
        // formats, before CSR.
        if s.row_cv < POWER_LAW_CV {
            rejected.push(Rejected {
                name: SELL8_SORTED.into(),
                reason: format!(
                    "row lengths vary less than a power law's (coefficient of variation {:.2}, under {POWER_LAW_CV})",
                    s.row_cv
                ),
            });
        } else if s.sell8_sorted_fill >= MIN_FILL {
            let sigma = sorted_sigma(s.rows);
            candidates.push(Candidate {
                name: SELL8_SORTED.into(),
                encoding: Some(format!("SELL(8, sigma = {sigma})")),
                reason: format!(
                    "slices of 8 rows are {} full in their order, {} with the rows sorted by length",
                    pct(s.sell8_fill),
                    pct(s.sell8_sorted_fill)
                ),
                bytes: bytes(&[(slices + 1, 4), (s.sell8_sorted_slots, 4 + v), (s.rows, 4)]),
            });
        } else {
            rejected.push(Rejected {
                name: SELL8_SORTED.into(),
                reason: format!(
                    "slices of 8 rows sorted by length would be {} full, under {min}",
                    pct(s.sell8_sorted_fill)
                ),
            });
        }
    }
    let structured = !candidates.is_empty();
    let csr_reason = |what: &str| {
        if structured {
            format!("rows with {what} positions and coordinates")
        } else {
            format!("no structure fills {min} of its storage; rows with {what} positions and coordinates")
        }
    };
    // An iso-valued matrix stores no values in CSR (`explicitVal`: the kernel
    // reads the constant); the padded formats above keep theirs (a padding
    // slot must read 0, not the constant).
    let iso = explicit_val(s, elem);
    let iso_reason = |reason: String| match &iso {
        Some(f) => format!("{reason}; every entry is {}: no values stored ({f})", s.iso_value.as_deref().unwrap_or("")),
        None => reason,
    };
    let value_bytes = if iso.is_some() { 0 } else { v };
    if s.nnz < 1 << 31 && s.cols <= 1 << 31 && s.rows < 1 << 31 {
        let reason = iso_reason(csr_reason("32-bit"));
        let csr32 = Candidate {
            name: "CSR32".into(),
            encoding: Some(iso.as_ref().map_or_else(|| CSR32.into(), |f| with_field(CSR32, f))),
            reason,
            bytes: bytes(&[(s.rows.saturating_add(1), 4), (s.nnz, 4 + value_bytes)]),
        };
        // Iso-valued, it reads a third (f64) or a half (f32) of its bytes
        // with values. With 8-byte values that puts it ahead of SELL-8-σ,
        // which keeps its values (a padding slot must read 0): on
        // rmat_s18_ef10 at 2 threads, 1.02-1.06x SELL-8-σ in two quiet runs
        // of the whole bench (docs/performance.md, "Against MKL after the
        // fourteenth session's merges"). With 4-byte values SELL-8-σ stays
        // ahead (1.25-1.36x the iso CSR32, "Iso-valued matrices"): that SpMV
        // waits on its gathers of x more than on its values. Otherwise it
        // keeps its place after the structured formats.
        let sorted_at = candidates.iter().position(|c| c.name == SELL8_SORTED);
        match sorted_at {
            Some(at) if iso.is_some() && v >= 8 => candidates.insert(at, csr32),
            _ => candidates.push(csr32),
        }
    } else {
        rejected.push(Rejected { name: "CSR32".into(), reason: "the entries or columns do not fit 31 bits".into() });
    }
    if let Some(field) = &iso {
        rank_iso_sell_sorted(s, field, &mut candidates);
        rank_iso_sell8(s, field, &mut candidates);
    }
    let reason = iso_reason(csr_reason("64-bit"));
    candidates.push(Candidate {
        name: "CSR".into(),
        encoding: Some(iso.as_ref().map_or_else(|| "CSR".into(), |f| with_field(CSR64, f))),
        reason,
        bytes: bytes(&[(s.rows.saturating_add(1), 8), (s.nnz, 8 + value_bytes)]),
    });
    Ranking { candidates, rejected }
}

/// The name of iso-valued SELL-8-σ (`SELL(8, sigma = S, explicitVal = V)`).
pub const SELL8_SORTED_ISO: &str = "SELL-8-σ iso";

/// For an iso-valued matrix (`field` is its `explicitVal = …`) where
/// SELL-8-σ is a candidate: SELL-8-σ without values
/// (`heddle_rewrite::sparsify::sell`, "Iso-valued SELL"), 4 bytes a slot
/// plus a 4-byte index per step and a length per lane, ranked ahead of both
/// SELL-8-σ with its values and the iso CSR32, at f32 and f64. Measured on
/// `rmat_s18_ef10`, 2 threads, interleaved (docs/performance.md,
/// "Iso-valued SELL-8-σ"): the fastest median of the four at both widths
/// (f64 5.2–8.7 ms against SELL-8-σ's 10.5–11.0 and the iso CSR32's
/// 7.0–12.3; f32 3.4–5.7 against 7.3–9.5 and 6.0–8.8), on a loaded machine.
/// Its lanes gather x as SELL-8-σ's do, and it streams a third (f64) or a
/// half (f32) of their bytes.
fn rank_iso_sell_sorted(s: &Inspection, field: &str, candidates: &mut Vec<Candidate>) {
    let Some(sorted) = candidates.iter().find(|c| c.name == SELL8_SORTED) else { return };
    let Some(encoding) = sorted.encoding.as_deref().and_then(|e| e.strip_suffix(')')) else { return };
    let slices = s.rows.div_ceil(SELL_SLICE);
    let steps = s.sell8_sorted_slots / SELL_SLICE;
    let iso = Candidate {
        name: SELL8_SORTED_ISO.into(),
        encoding: Some(format!("{encoding}, {field})")),
        reason: format!(
            "{}; every entry is {}: no values stored, padding masked by each lane's length",
            sorted.reason,
            s.iso_value.as_deref().unwrap_or("")
        ),
        // Offsets, columns, a step index per step, a length per lane, the permutation.
        bytes: bytes(&[(slices + 1, 4), (s.sell8_sorted_slots, 4), (steps, 4), (slices * SELL_SLICE, 4), (s.rows, 4)]),
    };
    let at = candidates.iter().position(|c| c.name == SELL8_SORTED || c.name == "CSR32").unwrap_or(candidates.len());
    candidates.insert(at, iso);
}

/// The name of iso-valued SELL-8 (`SELL(8, explicitVal = V)`).
pub const SELL8_ISO: &str = "SELL-8 iso";

/// For an iso-valued matrix (`field` its `explicitVal = …`) where SELL-8 is
/// a candidate (its slices in row order fill): SELL-8 without values, its
/// padding masked by each lane's length, ranked ahead of SELL-8 (and of
/// SELL-8c16, which stores 2 + the value's bytes a slot against its 4).
/// Measured on `uniform_1M_d5` with every value 1.0, 2 threads,
/// interleaved (docs/performance.md, "Iso-valued SELL-8-σ"): f64 3.22 ms
/// against SELL-8's 4.71 and the iso CSR32's 4.32–4.45, f32 2.73 against
/// 3.37 and 3.83–4.07 (medians of 3 rounds).
fn rank_iso_sell8(s: &Inspection, field: &str, candidates: &mut Vec<Candidate>) {
    let Some(at) = candidates.iter().position(|c| c.name == "SELL-8" || c.name == SELL8_C16) else { return };
    let slices = s.rows.div_ceil(SELL_SLICE);
    let steps = s.sell8_slots / SELL_SLICE;
    let iso = Candidate {
        name: SELL8_ISO.into(),
        encoding: Some(format!("SELL(8, {field})")),
        reason: format!(
            "slices of 8 rows padded to their longest are {} full; every entry is {}: no values stored, padding masked by each lane's length",
            pct(s.sell8_fill),
            s.iso_value.as_deref().unwrap_or("")
        ),
        // Offsets, columns, a step index per step, a length per lane.
        bytes: bytes(&[(slices + 1, 4), (s.sell8_slots, 4), (steps, 4), (slices * SELL_SLICE, 4)]),
    };
    candidates.insert(at, iso);
}

/// The statistics and the ranking for people (`heddle convert --stats`).
pub fn text(s: &Inspection, r: &Ranking) -> String {
    let mut out = format!("structure: {} x {}, {} entries\n", s.rows, s.cols, s.nnz);
    out += &format!(
        "rows: mean {:.2}, max {}, coefficient of variation {:.2}, {} empty\n",
        s.row_mean, s.row_max, s.row_cv, s.empty_rows
    );
    match (s.diagonals, s.dia_fill) {
        (Some(d), Some(f)) => out += &format!("diagonals: {d}, DIA fill {}\n", pct(f)),
        _ => out += &format!("diagonals: more than {DIAGONAL_CAP}\n"),
    }
    for b in &s.blocks {
        let fits = if b.fits { "" } else { " (the shape is not a multiple)" };
        out += &format!("blocks {}x{}: {}, fill {}{fits}\n", b.rows, b.cols, b.blocks, pct(b.fill));
    }
    out += &format!("SELL-8: {} slots, fill {}\n", s.sell8_slots, pct(s.sell8_fill));
    out +=
        &format!("SELL-8, rows sorted by length: {} slots, fill {}\n", s.sell8_sorted_slots, pct(s.sell8_sorted_fill));
    out += &format!("columns fit 16 bits: {}\n", if s.cols_fit_16_bits { "yes" } else { "no" });
    match &s.iso_value {
        Some(v) => out += &format!("values: every entry is {v} (iso-valued: CSR kernels read no values)\n"),
        None => out += "values: not all one value\n",
    }
    out += "ranking:\n";
    for (k, c) in r.candidates.iter().enumerate() {
        let none = if c.encoding.is_none() { "; no encoding expresses it" } else { "" };
        out += &format!("  {}. {}: {} ({} bytes{none})\n", k + 1, c.name, c.reason, c.bytes);
    }
    for x in &r.rejected {
        out += &format!("  not {}: {}\n", x.name, x.reason);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalars::ScalarVec;
    use crate::sparse::estimate::storage_size;
    use heddle_ir::encoding::parse_encoding;

    /// A matrix of these entries, of values 1, 2 and 3 (not iso-valued:
    /// the structural rule alone ranks it).
    fn coo(dims: [u64; 2], entries: &[(u64, u64)]) -> Coo {
        let coords = entries.iter().flat_map(|&(i, j)| [i, j]).collect();
        let values: Vec<f64> = (0..entries.len()).map(|k| 1.0 + (k % 3) as f64).collect();
        Coo { dims: dims.to_vec(), coords, values: ScalarVec::from(values) }
    }

    fn names(r: &Ranking) -> Vec<&str> {
        r.candidates.iter().map(|c| c.name.as_str()).collect()
    }

    fn banded(n: u64, k: i64) -> Vec<(u64, u64)> {
        let mut e = Vec::new();
        for i in 0..n {
            for d in -k..=k {
                let j = i as i64 + d;
                if j >= 0 && j < n as i64 {
                    e.push((i, j as u64));
                }
            }
        }
        e
    }

    /// A stand-in for a scattered matrix: entry columns from a fixed LCG.
    fn scattered(rows: u64, cols: u64, per_row: u64) -> Vec<(u64, u64)> {
        let mut x = 12345u64;
        let mut e = Vec::new();
        for i in 0..rows {
            let mut js: Vec<u64> = (0..per_row)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (x >> 33) % cols
                })
                .collect();
            js.sort();
            js.dedup();
            e.extend(js.into_iter().map(|j| (i, j)));
        }
        e
    }

    /// Brute force: the same statistics from the dense matrix.
    fn brute(dims: [u64; 2], entries: &[(u64, u64)]) -> (u64, u64, Vec<u64>) {
        let mut set = std::collections::BTreeSet::new();
        for &e in entries {
            set.insert(e);
        }
        let diags: std::collections::BTreeSet<i64> = set.iter().map(|&(i, j)| j as i64 - i as i64).collect();
        let blocks: Vec<u64> = BLOCK_SHAPES
            .iter()
            .map(|&(r, c)| {
                set.iter().map(|&(i, j)| (i / r, j / c)).collect::<std::collections::BTreeSet<_>>().len() as u64
            })
            .collect();
        let _ = dims;
        (set.len() as u64, diags.len() as u64, blocks)
    }

    #[test]
    fn counts_match_a_brute_force_count() {
        for (dims, e) in
            [([100, 100], banded(100, 2)), ([64, 80], scattered(64, 80, 9)), ([30, 16], scattered(30, 16, 5))]
        {
            let s = inspect(&coo(dims, &e)).unwrap();
            let (nnz, diags, blocks) = brute(dims, &e);
            assert_eq!(s.nnz, nnz);
            assert_eq!(s.diagonals, Some(diags));
            assert_eq!(s.blocks.iter().map(|b| b.blocks).collect::<Vec<_>>(), blocks);
        }
    }

    fn with_values(dims: [u64; 2], entries: &[(u64, u64)], values: ScalarVec) -> Coo {
        Coo { values, ..coo(dims, entries) }
    }

    #[test]
    fn a_matrix_of_one_value_is_iso_valued_and_csr_stores_no_values() {
        let e = scattered(40, 48, 6);
        let n = e.len();
        let s = inspect(&with_values([40, 48], &e, ScalarVec::from(vec![2.5f64; n]))).unwrap();
        assert_eq!(s.iso_value.as_deref(), Some("2.5"));
        let r = rank(&s, ScalarType::F64);
        let csr32 = r.candidates.iter().find(|c| c.name == "CSR32").unwrap();
        let text = csr32.encoding.as_deref().unwrap();
        assert_eq!(
            text,
            "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32, explicitVal = 2.5 : f64 }>"
        );
        assert!(csr32.reason.contains("no values stored"), "{}", csr32.reason);
        // The bytes are the estimate's for that encoding: positions and coordinates only.
        let c = with_values([40, 48], &e, ScalarVec::from(vec![2.5f64; n]));
        let enc = parse_encoding(text, 0).unwrap();
        assert_eq!(storage_size(&c, &enc, ScalarType::F64).unwrap().bytes, csr32.bytes);
        assert_eq!(csr32.bytes, 41 * 4 + n as u64 * 4);
        let csr = r.candidates.iter().find(|c| c.name == "CSR").unwrap();
        assert!(csr.encoding.as_deref().unwrap().contains("explicitVal = 2.5 : f64"));
        assert!(text_of(&s, &r).contains("values: every entry is 2.5"));
    }

    #[test]
    fn iso_sell8_goes_before_sell8_and_stores_what_the_packer_stores() {
        // Rows of 6 (SELL-8 fills), every value 1.0: SELL-8 without values first.
        let (rows, cols) = (203u64, 500u64);
        let e = scattered(rows, cols, 6);
        let ones = with_values([rows, cols], &e, ScalarVec::from(vec![1.0f64; e.len()]));
        let s = inspect(&ones).unwrap();
        let mut rowptr = vec![0usize; rows as usize + 1];
        for &(i, _) in &e {
            rowptr[i as usize + 1] += 1;
        }
        for i in 0..rows as usize {
            rowptr[i + 1] += rowptr[i];
        }
        let colidx: Vec<usize> = e.iter().map(|&(_, j)| j as usize).collect();
        let p = super::super::sell::layout(rows as usize, cols as usize, &rowptr, &colidx, 8, 1, 0, None).unwrap();
        for (elem, ty) in [(ScalarType::F64, "f64"), (ScalarType::F32, "f32")] {
            let r = rank(&s, elem);
            let plain = rank(&inspect(&coo([rows, cols], &e)).unwrap(), elem);
            let mut want = names(&plain);
            let at = want.iter().position(|n| *n == "SELL-8" || *n == SELL8_C16).unwrap();
            want.insert(at, SELL8_ISO);
            assert_eq!(names(&r), want, "{elem}");
            let iso = r.candidates.iter().find(|c| c.name == SELL8_ISO).unwrap();
            assert_eq!(iso.encoding.as_deref(), Some(format!("SELL(8, explicitVal = 1.0 : {ty})").as_str()));
            assert_eq!(iso.bytes, super::super::sell::iso_storage_bytes(&p.soff, 8, rows as usize, 1), "{elem}");
        }
        // Values of two kinds: no iso SELL-8.
        assert!(!names(&rank(&inspect(&coo([rows, cols], &e)).unwrap(), ScalarType::F64)).contains(&SELL8_ISO));
    }

    fn text_of(s: &Inspection, r: &Ranking) -> String {
        text(s, r)
    }

    /// Every 8th row 64 long, the others 1 (a power law's variation).
    fn power_law_entries() -> Vec<(u64, u64)> {
        let (rows, cols) = (2048u64, 4096u64);
        let mut e = Vec::new();
        for i in 0..rows {
            let n = if i % 8 == 0 { 64 } else { 1 };
            let mut js: Vec<u64> = (0..n).map(|k| (i * 7 + k * 61) % cols).collect();
            js.sort();
            e.extend(js.into_iter().map(|j| (i, j)));
        }
        e
    }

    #[test]
    fn iso_csr32_passes_sell8_sorted_with_8_byte_values_only() {
        // A power law of ones: iso-valued SELL-8-σ first at both widths; then
        // with 8-byte values the iso CSR32 goes ahead of SELL-8-σ (with
        // values), with 4-byte values it stays behind, as measured on
        // rmat_s18_ef10; a structured format stays first.
        let e = power_law_entries();
        let dims = [2048, 4096];
        let ones = with_values(dims, &e, ScalarVec::from(vec![1.0f64; e.len()]));
        let b = banded(200, 2);
        let banded_ones = with_values([200, 200], &b, ScalarVec::from(vec![1.0f64; b.len()]));
        for (elem, second) in [(ScalarType::F64, "CSR32"), (ScalarType::F32, SELL8_SORTED)] {
            let plain = rank(&inspect(&coo(dims, &e)).unwrap(), elem);
            assert_eq!(&names(&plain)[..2], [SELL8_SORTED, "CSR32"], "{elem}");
            let iso = rank(&inspect(&ones).unwrap(), elem);
            let mut want = names(&plain);
            if second == "CSR32" {
                want.swap(0, 1);
            }
            want.insert(0, SELL8_SORTED_ISO);
            assert_eq!(names(&iso), want, "{elem}");
            assert_eq!(names(&iso)[1], second, "{elem}");
            let sell = &iso.candidates[0];
            let sigma = sorted_sigma(2048);
            let field = if elem == ScalarType::F64 { "1.0 : f64" } else { "1.0 : f32" };
            assert_eq!(
                sell.encoding.as_deref(),
                Some(format!("SELL(8, sigma = {sigma}, explicitVal = {field})").as_str()),
                "{elem}"
            );
            // 4 bytes a slot, against SELL-8-σ's 4 + the value's; what the packer stores.
            let with_values = iso.candidates.iter().find(|c| c.name == SELL8_SORTED).unwrap();
            assert!(sell.bytes < with_values.bytes, "{elem}");
            let mut rowptr = vec![0usize; dims[0] as usize + 1];
            for &(i, _) in &e {
                rowptr[i as usize + 1] += 1;
            }
            for i in 0..dims[0] as usize {
                rowptr[i + 1] += rowptr[i];
            }
            let colidx: Vec<usize> = e.iter().map(|&(_, j)| j as usize).collect();
            let (r, c) = (dims[0] as usize, dims[1] as usize);
            let p = super::super::sell::layout(r, c, &rowptr, &colidx, 8, sigma as usize, 0, None).unwrap();
            assert_eq!(sell.bytes, super::super::sell::iso_storage_bytes(&p.soff, 8, r, sigma as usize), "{elem}");
            let csr32 = iso.candidates.iter().find(|c| c.name == "CSR32").unwrap();
            assert!(csr32.encoding.as_deref().unwrap().contains("explicitVal = 1.0"), "{elem}");
            assert_eq!(names(&rank(&inspect(&banded_ones).unwrap(), elem))[0], "DIA", "{elem}");
        }
    }

    #[test]
    fn one_differing_value_a_nan_or_a_signed_zero_is_not_iso_valued() {
        let e = scattered(20, 24, 4);
        let n = e.len();
        let mut one_off = vec![1.0f64; n];
        one_off[n / 2] = 1.0 + f64::EPSILON;
        let mut zeros = vec![0.0f64; n];
        zeros[3] = -0.0;
        for values in [vec![f64::NAN; n], one_off, zeros] {
            let s = inspect(&with_values([20, 24], &e, ScalarVec::from(values))).unwrap();
            assert_eq!(s.iso_value, None);
            let r = rank(&s, ScalarType::F64);
            assert!(r.candidates.iter().all(|c| !c.encoding.as_deref().unwrap_or("").contains("explicitVal")));
            assert!(text_of(&s, &r).contains("values: not all one value"));
        }
        // All -0.0 is iso-valued, and written so.
        let s = inspect(&with_values([20, 24], &e, ScalarVec::from(vec![-0.0f64; n]))).unwrap();
        assert_eq!(s.iso_value.as_deref(), Some("-0.0"));
        assert_eq!(explicit_val(&s, ScalarType::F32).as_deref(), Some("explicitVal = -0.0 : f32"));
        // No entries: nothing to be iso about.
        assert_eq!(inspect(&coo([3, 3], &[])).unwrap().iso_value, None);
    }

    #[test]
    fn the_explicit_value_is_written_exactly_at_the_element_type() {
        let e = scattered(8, 8, 2);
        let s = inspect(&with_values([8, 8], &e, ScalarVec::from(vec![0.1f64; e.len()]))).unwrap();
        assert_eq!(explicit_val(&s, ScalarType::F64).as_deref(), Some("explicitVal = 0.1 : f64"));
        // 0.1 rounded to f32, written exactly so that it parses back to that f32.
        assert_eq!(explicit_val(&s, ScalarType::F32).as_deref(), Some("explicitVal = 0.10000000149011612 : f32"));
        // Integers: in range, or none.
        let s = inspect(&with_values([8, 8], &e, ScalarVec::I32(vec![300; e.len()]))).unwrap();
        assert_eq!(explicit_val(&s, ScalarType::I32).as_deref(), Some("explicitVal = 300 : i32"));
        assert_eq!(explicit_val(&s, ScalarType::U8), None);
        // Every written value makes the kernel's storage drop its values buffer.
        for elem in [ScalarType::F64, ScalarType::F32] {
            let s = inspect(&with_values([8, 8], &e, ScalarVec::from(vec![0.1f64; e.len()]))).unwrap();
            let text = with_field(CSR32, &explicit_val(&s, elem).unwrap());
            let enc = parse_encoding(&text, 0).unwrap();
            assert!(heddle_ir::encoding::storage_types::iso_value(&enc, elem).is_some(), "{text}");
        }
    }

    #[test]
    fn unsorted_entries_and_duplicates_give_the_same_statistics() {
        let mut e = scattered(40, 48, 6);
        let ones = |e: &[(u64, u64)]| with_values([40, 48], e, ScalarVec::from(vec![1.0f64; e.len()]));
        let sorted = inspect(&ones(&e)).unwrap();
        e.reverse();
        e.push(e[0]);
        let mut summed = inspect(&ones(&e)).unwrap();
        // The duplicate sums to 2 where every other entry is 1: no longer iso-valued.
        assert_eq!((sorted.iso_value.as_deref(), summed.iso_value.as_deref()), (Some("1.0"), None));
        summed.iso_value = sorted.iso_value.clone();
        assert_eq!(summed, sorted);
    }

    #[test]
    fn bytes_are_what_the_estimate_gives() {
        let e = banded(64, 2);
        let c = coo([64, 64], &e);
        let s = inspect(&c).unwrap();
        let r = rank(&s, ScalarType::F64);
        let enc = |t: &str| parse_encoding(t, 0).unwrap();
        let named = |n: &str| heddle_ir::encoding::named::resolve(n, 0, Some(2)).unwrap();
        for cand in &r.candidates {
            let e = match cand.name.as_str() {
                "CSR32" => enc(cand.encoding.as_deref().unwrap()),
                "DIA" | "CSR" => named(&cand.name),
                _ => continue,
            };
            assert_eq!(storage_size(&c, &e, ScalarType::F64).unwrap().bytes, cand.bytes, "{}", cand.name);
        }
        // BSR(1, 8) on rows of full blocks.
        let full: Vec<(u64, u64)> = (0..4).flat_map(|i| (8..16).map(move |j| (i, j))).collect();
        let c = coo([4, 32], &full);
        let r = rank(&inspect(&c).unwrap(), ScalarType::F32);
        let bsr = r.candidates.iter().find(|c| c.name == "BSR(1, 8)").expect("BSR(1, 8) ranked");
        assert_eq!(bsr.encoding.as_deref(), Some(BSR_1X8_16));
        assert_eq!(storage_size(&c, &enc(BSR_1X8_16), ScalarType::F32).unwrap().bytes, bsr.bytes);
    }

    #[test]
    fn bsr_1x8_is_spelled_at_the_narrowest_widths_the_block_columns_allow() {
        let enc = |t: &str| parse_encoding(t, 0).unwrap();
        // The texts are the named BSR(1, 8)'s levels at other widths.
        let named = heddle_ir::encoding::named::resolve("BSR(1, 8)", 0, Some(2)).unwrap();
        use heddle_ir::encoding::Width;
        for (text, pos, crd) in [(BSR_1X8_16, Width::W32, Width::W16), (BSR_1X8_32, Width::W32, Width::W32)] {
            let e = enc(text);
            assert_eq!(e.levels, named.levels, "{text}");
            assert_eq!((e.pos_width, e.crd_width), (pos, crd), "{text}");
        }
        // 2^16 block columns fit 16 bits (the last is 65535); one more does not.
        for (cols, want) in [(8 * 65536, BSR_1X8_16), (8 * 65537, BSR_1X8_32), (16, BSR_1X8_16)] {
            let full: Vec<(u64, u64)> = (0..8).map(|j| (0, cols - 8 + j)).chain((0..8).map(|j| (1, j))).collect();
            let c = coo([2, cols], &full);
            let r = rank(&inspect(&c).unwrap(), ScalarType::F64);
            let bsr = r.candidates.iter().find(|c| c.name == "BSR(1, 8)").expect("BSR(1, 8) ranked");
            assert_eq!(bsr.encoding.as_deref(), Some(want), "{cols} columns");
            // The bytes are the estimate's for that spelling.
            assert_eq!(storage_size(&c, &enc(want), ScalarType::F64).unwrap().bytes, bsr.bytes, "{cols} columns");
        }
        // Past 2^31 stored blocks, 64-bit positions: the named BSR(1, 8).
        assert_eq!(bsr_1x8_widths(1 << 31, 64).0, "BSR(1, 8)");
        assert_eq!(bsr_1x8_widths(10, 8 << 31).0, BSR_1X8_32);
        assert_eq!(bsr_1x8_widths(10, (8 << 31) + 8).0, "BSR(1, 8)");
    }

    #[test]
    fn a_banded_matrix_ranks_dia_first() {
        let s = inspect(&coo([1000, 1000], &banded(1000, 2))).unwrap();
        assert_eq!(s.diagonals, Some(5));
        assert!(s.dia_fill.unwrap() > 0.99);
        let r = rank(&s, ScalarType::F64);
        assert_eq!(names(&r)[0], "DIA");
        assert!(r.candidates[0].reason.contains("5 diagonals"), "{}", r.candidates[0].reason);
        assert_eq!(names(&r).last(), Some(&"CSR"));
    }

    #[test]
    fn dense_runs_of_eight_rank_bsr_1x8_first() {
        // Each row: 1 or 4 aligned runs of 8 columns at different places
        // (many diagonals; SELL-8's slices would be 5/8 full).
        let e: Vec<(u64, u64)> = (0..200u64)
            .flat_map(|i| {
                (0..if i % 2 == 0 { 1 } else { 4 })
                    .flat_map(move |b: u64| (0..8).map(move |t| (i, ((i * 7 + b * 13) % 50) * 8 + t)))
            })
            .collect();
        let mut c = coo([200, 400], &e);
        c.sort_and_sum();
        let s = inspect(&c).unwrap();
        let b18 = &s.blocks[0];
        assert_eq!((b18.rows, b18.cols), (1, 8));
        assert!(b18.fill > 0.99, "{b18:?}");
        let r = rank(&s, ScalarType::F64);
        assert_eq!(names(&r)[0], "BSR(1, 8)");
        assert!(r.rejected.iter().any(|x| x.name == "DIA"));
        assert!(r.rejected.iter().any(|x| x.name == "SELL-8"));
    }

    #[test]
    fn sell8_goes_before_bsr_1x8_for_f64_when_both_fill() {
        // Every row: 4 aligned runs of 8 columns, so slices of 8 rows are full too.
        let e: Vec<(u64, u64)> = (0..200u64)
            .flat_map(|i| (0..4u64).flat_map(move |b| (0..8).map(move |t| (i, ((i * 7 + b * 13) % 50) * 8 + t))))
            .collect();
        let mut c = coo([200, 400], &e);
        c.sort_and_sum();
        let s = inspect(&c).unwrap();
        assert!(s.blocks[0].fill > 0.99 && s.sell8_fill > 0.99, "{s:?}");
        // f64: BSR(1, 8) stores fewer bytes, yet is ranked after SELL-8
        // (its 16-bit columns first: 400 columns fit).
        let r = rank(&s, ScalarType::F64);
        assert!(r.candidates[2].bytes < r.candidates[1].bytes);
        assert_eq!(&names(&r)[..4], [SELL8_C16, "SELL-8", "BSR(1, 8)", "CSR32"]);
        // f32: by bytes.
        assert_eq!(&names(&rank(&s, ScalarType::F32))[..4], ["BSR(1, 8)", SELL8_C16, "SELL-8", "CSR32"]);
    }

    /// A row band: the first `dense` rows full, the others two scattered entries.
    fn row_band(rows: u64, cols: u64, dense: u64) -> Vec<(u64, u64)> {
        (0..rows)
            .flat_map(|i| {
                let js: Vec<u64> =
                    if i < dense { (0..cols).collect() } else { vec![(i * 7) % cols, (i * 13 + 5) % cols] };
                let mut js = js;
                js.sort();
                js.dedup();
                js.into_iter().map(move |j| (i, j))
            })
            .collect()
    }

    #[test]
    fn a_row_band_ranks_bsr_8x1_first_at_the_narrowest_widths() {
        let enc = |t: &str| parse_encoding(t, 0).unwrap();
        // The texts are the named BSR(8, 1)'s levels at other widths.
        let named = heddle_ir::encoding::named::resolve("BSR(8, 1)", 0, Some(2)).unwrap();
        use heddle_ir::encoding::Width;
        for (text, pos, crd) in [(BSR_8X1_16, Width::W32, Width::W16), (BSR_8X1_32, Width::W32, Width::W32)] {
            let e = enc(text);
            assert_eq!(e.levels, named.levels, "{text}");
            assert_eq!((e.pos_width, e.crd_width), (pos, crd), "{text}");
        }
        let c = coo([64, 256], &row_band(64, 256, 16));
        let s = inspect(&c).unwrap();
        let b81 = s.blocks.iter().find(|b| (b.rows, b.cols) == (8, 1)).unwrap();
        assert!(b81.fits && b81.fill > 0.8 && b81.fill < 0.9, "{b81:?}");
        // Fewer bytes than SELL-8c16 (10 or 6 per slot, here a slot per
        // entry) at both widths of value, and BSR(8, 1) goes first at f64
        // too (SELL-8 goes before BSR(1, 8) only).
        for elem in [ScalarType::F64, ScalarType::F32] {
            let r = rank(&s, elem);
            assert_eq!(names(&r)[0], "BSR(8, 1)", "{elem:?}");
            if elem == ScalarType::F64 {
                assert_eq!(names(&r)[..4], ["BSR(8, 1)", SELL8_C16, "SELL-8", "BSR(1, 8)"]);
            }
            let bsr = &r.candidates[0];
            assert_eq!(bsr.encoding.as_deref(), Some(BSR_8X1_16));
            assert_eq!(storage_size(&c, &enc(BSR_8X1_16), elem).unwrap().bytes, bsr.bytes, "{elem:?}");
        }
        // Wider than 2^16 columns: 32-bit coordinates; rows not a multiple of 8: not a candidate.
        assert_eq!(bsr_8x1_widths(10, 1 << 16).0, BSR_8X1_16);
        assert_eq!(bsr_8x1_widths(10, (1 << 16) + 1).0, BSR_8X1_32);
        assert_eq!(bsr_8x1_widths(1 << 31, 64).0, "BSR(8, 1)");
        let r = rank(&inspect(&coo([60, 256], &row_band(60, 256, 16))).unwrap(), ScalarType::F64);
        assert!(!names(&r).contains(&"BSR(8, 1)"));
        assert!(r.rejected.iter().any(|x| x.name == "BSR(8, 1)" && x.reason.contains("60 rows")), "{r:?}");
        // A scattered matrix: blocks of 8x1 hold one entry each.
        let r = rank(&inspect(&coo([64, 64], &scattered(64, 64, 4))).unwrap(), ScalarType::F64);
        assert!(r.rejected.iter().any(|x| x.name == "BSR(8, 1)" && x.reason.contains("under")), "{r:?}");
    }

    #[test]
    fn bsr_8x1_stays_ahead_of_sell8_at_f64_when_bsr_1x8_stores_fewer_bytes() {
        // 16 rows: per block row, rows 0..6 dense over 64 columns, rows 6..8
        // one run of 8 each: 1x8 blocks are full (fewer bytes), 8x1 blocks
        // 81% full; SELL-8's slices 81% full.
        let e: Vec<(u64, u64)> = (0..16u64)
            .flat_map(|i| {
                let js: Vec<u64> = if i % 8 < 6 { (0..64).collect() } else { (8 * (i % 8)..8 * (i % 8) + 8).collect() };
                js.into_iter().map(move |j| (i, j))
            })
            .collect();
        let s = inspect(&coo([16, 64], &e)).unwrap();
        let r = rank(&s, ScalarType::F64);
        let bytes = |n: &str| r.candidates.iter().find(|c| c.name == n).unwrap().bytes;
        assert!(bytes("BSR(1, 8)") < bytes("BSR(8, 1)"), "{r:?}");
        assert_eq!(names(&r)[..4], ["BSR(8, 1)", SELL8_C16, "SELL-8", "BSR(1, 8)"], "{r:?}");
        // f32: by bytes.
        assert_eq!(names(&rank(&s, ScalarType::F32))[..2], ["BSR(1, 8)", "BSR(8, 1)"]);
    }

    #[test]
    fn a_scattered_matrix_with_even_rows_ranks_sell8_then_csr32() {
        let s = inspect(&coo([2000, 2000], &scattered(2000, 2000, 5))).unwrap();
        let r = rank(&s, ScalarType::F64);
        // Row lengths vary little: SELL-8 pads little and is ranked first
        // (with 16-bit columns: 2000 fit; then with 32-bit ones), then CSR32.
        assert!(s.row_cv < 0.5);
        assert!(s.sell8_fill >= MIN_FILL, "{}", s.sell8_fill);
        assert_eq!(&names(&r)[..3], [SELL8_C16, "SELL-8", "CSR32"]);
        assert_eq!(r.candidates[0].encoding.as_deref(), Some("SELL(8, crdWidth = 16)"));
        assert_eq!(r.candidates[1].encoding.as_deref(), Some("SELL(8)"));
        // 2 bytes less per slot.
        assert_eq!(r.candidates[1].bytes - r.candidates[0].bytes, 2 * s.sell8_slots);
        assert!(r.rejected.iter().any(|x| x.name == "BSR(1, 8)" && x.reason.contains("under")));
    }

    #[test]
    fn rows_of_very_different_lengths_rank_sell8_sorted_before_csr32() {
        // Every 8th row 64 long, the others 1: each slice of 8 rows in their
        // order pads 7 rows to 64 (14% full); sorted by length, the long rows
        // share slices and nothing pads.
        let (rows, cols) = (2048u64, 4096u64);
        let e = power_law_entries();
        let s = inspect(&coo([rows, cols], &e)).unwrap();
        assert!(s.sell8_fill < MIN_FILL && s.sell8_sorted_fill > 0.99 && s.row_cv > POWER_LAW_CV, "{s:?}");
        let mut rowptr = vec![0usize; rows as usize + 1];
        e.iter().for_each(|&(i, _)| rowptr[i as usize + 1] += 1);
        (0..rows as usize).for_each(|i| rowptr[i + 1] += rowptr[i]);
        let colidx: Vec<usize> = e.iter().map(|&(_, j)| j as usize).collect();
        for elem in [ScalarType::F32, ScalarType::F64] {
            let r = rank(&s, elem);
            assert_eq!(&names(&r)[..2], [SELL8_SORTED, "CSR32"], "{elem}");
            assert_eq!(r.candidates[0].encoding.as_deref(), Some("SELL(8, sigma = 2048)"));
            assert!(r.rejected.iter().any(|x| x.name == "SELL-8"));
            // The slots and bytes the packer stores at that window.
            let v = elem.size_bytes();
            let sell =
                super::super::sell::layout(rows as usize, cols as usize, &rowptr, &colidx, 8, 2048, v, None).unwrap();
            assert_eq!(sell.col.len() as u64, s.sell8_sorted_slots);
            assert_eq!(super::super::sell::storage_bytes(&sell.soff, 8, rows as usize, 2048, v), r.candidates[0].bytes);
        }
        // One long row among short ones pads its slice even sorted: not ranked.
        let mut e: Vec<(u64, u64)> = (0..500).map(|j| (0, j)).collect();
        e.extend((1..64).map(|i| (i, 0)));
        let s = inspect(&coo([64, 500], &e)).unwrap();
        assert!(s.sell8_sorted_fill < MIN_FILL, "{s:?}");
        let r = rank(&s, ScalarType::F64);
        assert!(!names(&r).contains(&SELL8_SORTED));
        assert!(r.rejected.iter().any(|x| x.name == SELL8_SORTED && x.reason.contains("sorted by length")));
        // Rows of 0 to 8 entries (a coefficient of variation about 0.65):
        // sorted slices would fill, but that regime is not measured.
        let mut e = Vec::new();
        for i in 0..800u64 {
            e.extend((0..i % 9).map(|j| (i, j * 5)));
        }
        let s = inspect(&coo([800, 64], &e)).unwrap();
        assert!(s.sell8_fill < MIN_FILL && s.sell8_sorted_fill >= MIN_FILL && s.row_cv < POWER_LAW_CV, "{s:?}");
        let r = rank(&s, ScalarType::F32);
        assert_eq!(names(&r)[0], "CSR32");
        assert!(r.rejected.iter().any(|x| x.name == SELL8_SORTED && x.reason.contains("power law")));
        // The window: whole slices, at least one, at most the front door's largest.
        assert_eq!(
            [sorted_sigma(0), sorted_sigma(5), sorted_sigma(2048), sorted_sigma(1 << 40)],
            [8, 8, 2048, 1 << 31]
        );
    }

    #[test]
    fn a_scattered_matrix_stops_counting_diagonals_at_the_cap() {
        let s = inspect(&coo([3000, 3000], &scattered(3000, 3000, 4))).unwrap();
        assert_eq!(s.diagonals, None);
        assert_eq!(s.dia_fill, None);
        let r = rank(&s, ScalarType::F32);
        assert!(r.rejected.iter().any(|x| x.name == "DIA" && x.reason.contains("more than 1024")));
    }

    #[test]
    fn an_empty_matrix_ranks_csr() {
        let s = inspect(&coo([5, 7], &[])).unwrap();
        assert_eq!((s.nnz, s.empty_rows, s.row_max, s.sell8_slots), (0, 5, 0, 0));
        assert_eq!(s.row_cv, 0.0);
        let r = rank(&s, ScalarType::F64);
        assert_eq!(names(&r), ["CSR32", "CSR"]);
        // And a 0 x 0 one.
        let s = inspect(&coo([0, 0], &[])).unwrap();
        assert_eq!(names(&rank(&s, ScalarType::F64)), ["CSR32", "CSR"]);
    }

    #[test]
    fn one_row_one_by_one_and_one_huge_row() {
        let s = inspect(&coo([1, 1], &[(0, 0)])).unwrap();
        assert_eq!((s.nnz, s.diagonals, s.row_max), (1, Some(1), 1));
        // One entry is one value: iso-valued; DIA still first.
        assert_eq!(s.iso_value.as_deref(), Some("1.0"));
        assert_eq!(names(&rank(&s, ScalarType::F64))[0], "DIA");
        let row: Vec<(u64, u64)> = (0..64).map(|j| (0, j)).collect();
        let s = inspect(&coo([1, 64], &row)).unwrap();
        assert_eq!((s.row_max, s.blocks[0].blocks), (64, 8));
        // One row of 64 entries, 64 diagonals: DIA's 64 slots are all full too; BSR(1, 8) stores fewer bytes.
        assert_eq!(names(&rank(&s, ScalarType::F64))[0], "BSR(1, 8)");
        // One huge row among empty ones: SELL-8 pads its slice 8-fold.
        let mut e: Vec<(u64, u64)> = (0..500).map(|j| (3, j * 2)).collect();
        e.extend((0..100).map(|i| (i, 1)).filter(|&(i, _)| i != 3));
        let s = inspect(&coo([100, 1000], &e)).unwrap();
        assert_eq!(s.row_max, 500);
        assert!(s.row_cv > 3.0, "{}", s.row_cv);
        assert!(s.sell8_fill < 0.2);
        let r = rank(&s, ScalarType::F64);
        assert_eq!(names(&r), ["CSR32", "CSR"]);
    }

    #[test]
    fn wide_columns_do_not_fit_16_bits() {
        let s = inspect(&coo([2, 70000], &[(0, 65536), (1, 69999)])).unwrap();
        assert!(!s.cols_fit_16_bits);
        let s = inspect(&coo([2, 65536], &[(0, 65535)])).unwrap();
        assert!(s.cols_fit_16_bits);
        // SELL-8 with 16-bit columns: ranked up to 65 536 columns, left out from 65 537.
        for (cols, fits) in [(65535, true), (65536, true), (65537, false), (100_000, false)] {
            let e: Vec<(u64, u64)> = (0..64).flat_map(|i| [(i, i), (i, cols - 1 - i)]).collect();
            let s = inspect(&coo([64, cols], &e)).unwrap();
            let r = rank(&s, ScalarType::F64);
            assert_eq!(names(&r)[0], if fits { SELL8_C16 } else { "SELL-8" }, "{cols}");
            assert_eq!(names(&r).contains(&SELL8_C16), fits, "{cols}");
            let left_out = r.rejected.iter().find(|x| x.name == SELL8_C16);
            assert_eq!(left_out.is_some(), !fits, "{cols}");
            if let Some(x) = left_out {
                assert!(x.reason.contains(&format!("{cols} columns do not fit 16-bit")), "{}", x.reason);
            }
        }
    }

    #[test]
    fn sell_bytes_are_what_the_packer_stores() {
        // The SELL candidates' bytes: 32-bit offsets, columns of 2 or 4
        // bytes and values of the element's, for slices as the packer makes them.
        let (rows, cols) = (203u64, 500u64);
        let e = scattered(rows, cols, 6);
        let s = inspect(&coo([rows, cols], &e)).unwrap();
        let mut rowptr = vec![0usize; rows as usize + 1];
        for &(i, _) in &e {
            rowptr[i as usize + 1] += 1;
        }
        for i in 0..rows as usize {
            rowptr[i + 1] += rowptr[i];
        }
        let colidx: Vec<usize> = e.iter().map(|&(_, j)| j as usize).collect();
        let values = vec![1.0; e.len()];
        for elem in [ScalarType::F32, ScalarType::F64] {
            let v = elem.size_bytes();
            let p =
                super::super::sell::from_csr(rows as usize, cols as usize, &rowptr, &colidx, &values, 8, 1, v, None)
                    .unwrap();
            let r = rank(&s, elem);
            let bytes = |name: &str| r.candidates.iter().find(|c| c.name == name).unwrap().bytes;
            assert_eq!(p.val.len() as u64, s.sell8_slots);
            assert_eq!(bytes("SELL-8"), (p.soff.len() * 4 + p.col.len() * 4 + p.val.len() * v) as u64);
            assert_eq!(bytes(SELL8_C16), (p.soff.len() * 4 + p.col.len() * 2 + p.val.len() * v) as u64);
        }
    }

    #[test]
    fn the_text_lists_the_statistics_and_the_ranking() {
        let s = inspect(&coo([16, 16], &banded(16, 1))).unwrap();
        let t = text(&s, &rank(&s, ScalarType::F64));
        assert!(t.contains("diagonals: 3, DIA fill"), "{t}");
        assert!(t.contains("  1. DIA: 3 diagonals"), "{t}");
    }

    #[test]
    fn other_ranks_are_refused() {
        let c = Coo { dims: vec![2, 2, 2], coords: vec![], values: ScalarVec::from(Vec::<f64>::new()) };
        assert!(inspect(&c).unwrap_err().contains("3 dimensions"));
    }
}

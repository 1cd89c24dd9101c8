//! MLIR's sparse tensor encodings (`#sparse_tensor.encoding<{ ... }>`) as
//! heddle understands them: the data model, the [`parse_encoding`] parser
//! (which also runs the [`verify`] checks), a printer back to MLIR text
//! ([`print_encoding`]), the dimension → level map ([`map`]) and the bridge to
//! heddle types ([`storage_types`]).
//!
//! # What is accepted
//!
//! The current MLIR syntax, verbatim:
//!
//! ```text
//! #sparse_tensor.encoding<{
//!   map = [c] { l0, l1 } (i : #sparse_tensor<slice(0, 4, 1)>, j) -> (l0 = i : dense, l1 = j : compressed),
//!   posWidth = 32, crdWidth = 16, explicitVal = 1.0 : f32, implicitVal = 0.0 : f32
//! }>
//! ```
//!
//! - level formats `dense`, `batch`, `compressed`, `loose_compressed`,
//!   `singleton`, and n:m structured sparsity written `structured[n, m]` or
//!   (the seed's spelling) `block2_4`;
//! - properties `nonunique`, `nonordered`, `soa` in parentheses after the
//!   format, and the legacy `high` on `compressed`, which is what
//!   `loose_compressed` used to be called (so `compressed(nonunique, high)` from
//!   older MLIR documentation is read as `loose_compressed(nonunique)`);
//! - level expressions `d`, `d floordiv K`, `d mod K`, the ELL counting form
//!   `c * K * d` over a symbol `c` (see [`LvlExpr::Counter`]), and DIA's
//!   offset `a - b` of two different dimensions (see [`LvlExpr::Diff`]);
//! - symbols either before the dimensions (`[c](i, j)`, as MLIR's map parser
//!   and the seed write it) or after them (`(i, j)[c]`, affine-map style);
//! - the legacy fields of the MLIR paper: `dimLevelType = ["dense", "compressed"]`
//!   (also `lvlTypes`), `dimOrdering = affine_map<(i, j) -> (j, i)>` (also
//!   `dimToLvl`), `pointerBitWidth`, `indexBitWidth`.
//!
//! Comments (`// ...`) inside the attribute are skipped, since pasted MLIR
//! often carries them.
//!
//! # Spans
//!
//! Every span in an [`Encoding`] and every [`Diagnostic`] from this module is
//! absolute: [`parse_encoding`] takes the byte offset at which the text starts
//! in its file, so the CLI can point at the right column of a `#NAME = ...`
//! line.

pub mod map;
pub mod named;
mod parse;
mod print;
pub mod result;
pub mod storage_types;
pub mod verify;

use crate::name::Name;
use crate::span::{Diagnostic, Span};

pub use named::{Named, resolve};
pub use parse::parse_encoding;
pub use print::print_encoding;
pub use storage_types::{StorageLayout, storage_layout};

/// A parsed and verified sparse tensor encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoding {
    /// The dimension variables, in dimension order.
    pub dims: Vec<DimVar>,
    /// Symbols (`[c]`), used only by the ELL counting form.
    pub symbols: Vec<(Name, Span)>,
    /// The levels, outermost first.
    pub levels: Vec<Level>,
    /// Bit width of the positions buffers.
    pub pos_width: Width,
    /// Bit width of the coordinates buffers.
    pub crd_width: Width,
    /// `explicitVal`: the value every stored entry has (pattern matrices), as written.
    pub explicit_val: Option<Literal>,
    /// `implicitVal`: the value of every entry that is not stored, as written.
    pub implicit_val: Option<Literal>,
    /// Whether the map named its level variables (`{l0, l1}` or `l0 = ...`);
    /// the printer then writes the explicit form back.
    pub named_levels: bool,
    /// The whole attribute.
    pub span: Span,
}

/// A dimension variable of the map, with its optional slice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DimVar {
    /// Its name (`i`).
    pub name: Name,
    /// `#sparse_tensor<slice(offset, size, stride)>`, if given.
    pub slice: Option<DimSlice>,
    /// Where the name is.
    pub span: Span,
}

/// A dimension slice: the tensor is a strided window of a bigger one.
/// `None` stands for `?` (dynamic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimSlice {
    /// First coordinate of the window in the underlying tensor.
    pub offset: Option<u64>,
    /// Number of coordinates in the window (≥ 1).
    pub size: Option<u64>,
    /// Distance between successive coordinates (≥ 1).
    pub stride: Option<u64>,
}

/// One storage level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// The level variable's name, when the map gives one (`ib = i floordiv 2 : dense`).
    pub name: Option<Name>,
    /// What coordinate the level stores.
    pub expr: LvlExpr,
    /// How it is stored.
    pub format: LevelFormat,
    /// Non-default properties.
    pub props: LevelProps,
    /// The whole `expr : format(props)` text.
    pub span: Span,
    /// Just the format and properties.
    pub format_span: Span,
}

/// The coordinate a level stores, as a function of the dimension coordinates.
/// Dimensions are referred to by their index in [`Encoding::dims`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LvlExpr {
    /// `d`: the dimension's coordinate itself.
    Dim(usize),
    /// `d floordiv K`: the block a coordinate falls in.
    FloorDiv(usize, u64),
    /// `d mod K`: the coordinate within its block.
    Mod(usize, u64),
    /// `c * K * d`: ELL's "counting" of dimension `d` (Chou et al.'s `#d`).
    /// The level coordinate of an entry is how many stored entries with the
    /// same `d` coordinate precede it in lexicographic dimension order; `K`
    /// is the number of slices, so the level has size `K`.
    Counter {
        /// The counted dimension.
        dim: usize,
        /// Number of slices (the largest count plus one that fits).
        slices: u64,
    },
    /// `a - b` of two different dimensions: DIA's diagonal offset
    /// (`j - i` for a matrix indexed `(i, j)`). The coordinate is signed, in
    /// `-(size_b - 1) ..= size_a - 1`; its coordinates buffer stores it in
    /// two's complement at `crdWidth` (a signed buffer type: `i8` .. `i64`).
    /// The runtime handles it internally as the unsigned `a - b + size_b - 1`
    /// (see [`map`]), so the level's size there is `size_a + size_b - 1`.
    /// Only `a - b` is accepted (not `-b + a`, no coefficients or constants),
    /// on a compressed, loose_compressed or `soa` singleton level, at most one
    /// per encoding, and with exactly one of `a`, `b` stored whole by another
    /// level (see [`verify`]).
    Diff {
        /// The dimension added (`j` in `j - i`).
        plus: usize,
        /// The dimension subtracted (`i` in `j - i`).
        minus: usize,
    },
}

impl LvlExpr {
    /// The dimension this level's coordinate is computed from (for a
    /// difference, the one added).
    pub fn dim(self) -> usize {
        match self {
            LvlExpr::Dim(d) | LvlExpr::FloorDiv(d, _) | LvlExpr::Mod(d, _) => d,
            LvlExpr::Counter { dim, .. } => dim,
            LvlExpr::Diff { plus, .. } => plus,
        }
    }
    /// Is the coordinate signed (stored in two's complement)?
    pub fn is_signed(self) -> bool {
        matches!(self, LvlExpr::Diff { .. })
    }
}

/// A level format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LevelFormat {
    /// Every coordinate is stored; no buffers.
    Dense,
    /// A leading dense-like level that batches the levels below it.
    Batch,
    /// Positions (`pos[q] .. pos[q+1]`) and coordinates buffers.
    Compressed,
    /// Positions as `lo, hi` pairs per parent (intervals may have gaps) and coordinates.
    LooseCompressed,
    /// One coordinate per parent position; no positions buffer.
    Singleton,
    /// n:m structured sparsity: exactly `n` coordinates stored out of every block of `m`.
    NOutOfM {
        /// Stored entries per block.
        n: u32,
        /// Block size.
        m: u32,
        /// Whether it was written `blockN_M` (printed back the same way).
        block_spelling: bool,
    },
    /// heddle's skyline (banded) level, not MLIR's: below a dense row level,
    /// every column from the row's first stored one through the diagonal,
    /// dense in between. Positions per row; coordinates implicit (the last
    /// of row `i`'s `len` children is column `i`, child `k` is column
    /// `i + 1 - len + k`). Below a dense column level (`(j : dense, i :
    /// banded)`, the upper skyline) the same in level order: each column's
    /// rows from its first stored one through the diagonal.
    Banded,
}

impl LevelFormat {
    /// MLIR's spelling.
    pub fn keyword(self) -> String {
        match self {
            LevelFormat::Dense => "dense".into(),
            LevelFormat::Batch => "batch".into(),
            LevelFormat::Compressed => "compressed".into(),
            LevelFormat::LooseCompressed => "loose_compressed".into(),
            LevelFormat::Singleton => "singleton".into(),
            LevelFormat::NOutOfM { n, m, block_spelling: true } => format!("block{n}_{m}"),
            LevelFormat::NOutOfM { n, m, block_spelling: false } => format!("structured[{n}, {m}]"),
            LevelFormat::Banded => "banded".into(),
        }
    }
    /// Does the level have a positions buffer?
    pub fn has_positions(self) -> bool {
        matches!(self, LevelFormat::Compressed | LevelFormat::LooseCompressed | LevelFormat::Banded)
    }
    /// Does the level store coordinates?
    pub fn has_coordinates(self) -> bool {
        matches!(
            self,
            LevelFormat::Compressed
                | LevelFormat::LooseCompressed
                | LevelFormat::Singleton
                | LevelFormat::NOutOfM { .. }
        )
    }
    /// Dense or batch: every coordinate present, nothing stored.
    pub fn is_dense_like(self) -> bool {
        matches!(self, LevelFormat::Dense | LevelFormat::Batch)
    }
}

/// The non-default level properties (the defaults are unique and ordered, AoS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LevelProps {
    /// `nonunique`: a coordinate may repeat under one parent.
    pub nonunique: bool,
    /// `nonordered`: coordinates under one parent may appear in any order.
    pub nonordered: bool,
    /// `soa`: a singleton level keeps its own coordinates buffer instead of
    /// sharing the array-of-structs buffer of the compressed level it follows.
    pub soa: bool,
}

/// A bit width for positions or coordinates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Width {
    /// 0: the native width (64 bits here).
    #[default]
    Native,
    /// 8 bits.
    W8,
    /// 16 bits.
    W16,
    /// 32 bits.
    W32,
    /// 64 bits.
    W64,
}

impl Width {
    /// The width for a number as written, if MLIR accepts it.
    pub fn from_bits(bits: u64) -> Option<Width> {
        Some(match bits {
            0 => Width::Native,
            8 => Width::W8,
            16 => Width::W16,
            32 => Width::W32,
            64 => Width::W64,
            _ => return None,
        })
    }
    /// As written (0 for native).
    pub fn bits(self) -> u32 {
        match self {
            Width::Native => 0,
            Width::W8 => 8,
            Width::W16 => 16,
            Width::W32 => 32,
            Width::W64 => 64,
        }
    }
    /// The storage width in bits (native is 64).
    pub fn storage_bits(self) -> u32 {
        match self {
            Width::Native => 64,
            w => w.bits(),
        }
    }
    /// The largest value a buffer of this width holds.
    pub fn max_value(self) -> u64 {
        match self.storage_bits() {
            64 => u64::MAX,
            b => (1u64 << b) - 1,
        }
    }
}

/// A numeric literal of `explicitVal` / `implicitVal`, kept as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Literal {
    /// The number's text (`1.0`).
    pub text: String,
    /// The type after `:` (`f32`), if any.
    pub ty: Option<String>,
}

impl Literal {
    /// The number, if it parses as one.
    pub fn value(&self) -> Option<f64> {
        self.text.parse().ok()
    }
}

impl Encoding {
    /// Number of dimensions.
    pub fn dim_rank(&self) -> usize {
        self.dims.len()
    }
    /// Number of levels.
    pub fn lvl_rank(&self) -> usize {
        self.levels.len()
    }
    /// Whether level `l` keeps, in a coordinates buffer of its own, strictly
    /// increasing coordinates under each parent: a compressed level, ordered
    /// and unique, not sharing an array-of-structs buffer. Input binding
    /// checks it of every tensor parameter's storage (`heddle_runtime::io`),
    /// and compiled co-iteration relies on it (an unchecked merge).
    pub fn strictly_increasing(&self, l: usize) -> bool {
        self.levels
            .get(l)
            .is_some_and(|lv| lv.format == LevelFormat::Compressed && !lv.props.nonordered && !lv.props.nonunique)
            && self.aos_run(l).is_none()
    }
    /// The first level of the trailing run of singletons that shares an
    /// array-of-structs coordinates buffer with level `l`, when `l` is a
    /// (loose_)compressed level followed by non-`soa` singletons. MLIR stores
    /// such a COO region's coordinates interleaved in level `l`'s buffer.
    pub fn aos_run(&self, l: usize) -> Option<std::ops::Range<usize>> {
        let lvl = self.levels.get(l)?;
        if !matches!(lvl.format, LevelFormat::Compressed | LevelFormat::LooseCompressed) {
            return None;
        }
        let mut end = l + 1;
        while end < self.levels.len()
            && self.levels[end].format == LevelFormat::Singleton
            && !self.levels[end].props.soa
        {
            end += 1;
        }
        (end > l + 1).then_some(l..end)
    }
    /// Is level `l` a singleton whose coordinates live in an earlier level's AoS buffer?
    pub fn in_aos_buffer(&self, l: usize) -> bool {
        (0..l).any(|k| self.aos_run(k).is_some_and(|r| r.contains(&l) && k != l))
    }
    /// Do stored entries with equal coordinates get summed into one? True
    /// unless the innermost level is `nonunique` (then duplicates are kept).
    pub fn sums_duplicates(&self) -> bool {
        self.levels.last().is_none_or(|l| !l.props.nonunique)
    }
    /// Is this heddle's upper skyline, `(i, j) -> (j : dense, i : banded)`
    /// (each column's rows from its first nonzero through the diagonal)?
    /// The lower one is `(i, j) -> (i : dense, j : banded)`.
    pub fn upper_skyline(&self) -> bool {
        self.levels.iter().any(|l| l.format == LevelFormat::Banded)
            && matches!(self.levels.first().map(|l| l.expr), Some(LvlExpr::Dim(1)))
    }
    /// A skyline's outer and inner level in words: ("row", "column"), or
    /// ("column", "row") for the upper skyline.
    fn skyline_words(&self) -> (&'static str, &'static str) {
        if self.upper_skyline() { ("column", "row") } else { ("row", "column") }
    }
    /// The error for an entry at level coordinates (`outer`, `inner`) on the
    /// wrong side of a skyline's diagonal (`inner > outer`), in the
    /// matrix's (row, column) order.
    pub fn skyline_off_triangle(&self, outer: u64, inner: u64) -> String {
        if self.upper_skyline() {
            format!(
                "entry ({inner}, {outer}) lies below the diagonal; an upper banded (skyline) level stores each column's rows from its first nonzero through the diagonal (the upper triangle)"
            )
        } else {
            format!(
                "entry ({outer}, {inner}) lies above the diagonal; a banded (skyline) level stores each row's columns from its first nonzero through the diagonal (the lower triangle)"
            )
        }
    }
    /// The error for a skyline's outer node `outer` holding entries when its
    /// diagonal is outside the `size` inner coordinates.
    pub fn skyline_outside(&self, outer: u64, size: u64) -> String {
        let (o, i) = self.skyline_words();
        format!(
            "{o} {outer} has entries, but its diagonal ({i} {outer}) is outside the {size} {i}s; a banded (skyline) level stores each {o} through its diagonal"
        )
    }
    /// The error for stored skyline node `outer` holding `len` values, more
    /// than its `0 ..= outer` of `size`.
    pub fn skyline_too_long(&self, outer: u64, len: u64, size: u64) -> String {
        let (o, i) = self.skyline_words();
        format!(
            "{o} {outer} stores {len} {i}s through the diagonal, but a skyline {o} stores at most its {i}s 0 ..= {outer} of {size}"
        )
    }
    /// Does level `l` store signed coordinates (a difference level, DIA's
    /// offsets)? Its coordinates buffer then holds two's complement values.
    pub fn signed_level(&self, l: usize) -> bool {
        self.levels.get(l).is_some_and(|lv| lv.expr.is_signed())
    }
    /// The difference level (DIA's offsets), if any: (level, plus, minus).
    pub fn diff_level(&self) -> Option<(usize, usize, usize)> {
        self.levels.iter().enumerate().find_map(|(l, lv)| match lv.expr {
            LvlExpr::Diff { plus, minus } => Some((l, plus, minus)),
            _ => None,
        })
    }
    /// Is this the identity map with all-dense levels (a dense tensor's layout)?
    pub fn is_all_dense(&self) -> bool {
        self.levels.iter().enumerate().all(|(l, lv)| lv.format.is_dense_like() && lv.expr == LvlExpr::Dim(l))
            && self.levels.len() == self.dims.len()
    }
}

/// A diagnostic at `span` with a label; shared by the parser and verifier.
pub(crate) fn err(span: Span, message: impl Into<String>, label: impl Into<String>) -> Diagnostic {
    Diagnostic::new(span, message).with_label(label)
}

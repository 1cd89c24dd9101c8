//! What a stored tensor's storage holds, level by level: the attribute
//! queries that size a conversion's output (Chou et al.), reported after
//! the fact for `heddle convert --stats`.

use super::buffer::IndexBuf;
use super::tensor::SparseTensor;
use heddle_ir::encoding::{LevelFormat, LvlExpr};
use serde::Serialize;

/// One buffer's size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BufferStats {
    /// Number of entries.
    pub count: usize,
    /// Bits per entry.
    pub bits: u32,
    /// Bytes in all.
    pub bytes: usize,
}

impl BufferStats {
    fn of(b: &IndexBuf) -> BufferStats {
        BufferStats { count: b.len(), bits: b.bits(), bytes: b.len() * (b.bits() as usize / 8) }
    }
}

/// One level's storage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LevelStats {
    /// The level's format (`dense`, `compressed`, …).
    pub format: String,
    /// The level's size.
    pub size: u64,
    /// Its positions buffer, if it has one.
    pub positions: Option<BufferStats>,
    /// Its coordinates buffer, if it has one (an AoS region's shared buffer
    /// counts at its first level).
    pub coordinates: Option<BufferStats>,
}

/// The storage of a stored tensor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StorageStats {
    /// Per level.
    pub levels: Vec<LevelStats>,
    /// The values buffer.
    pub values: BufferStats,
    /// Stored values that hold an entry of the tensor.
    pub entries: usize,
    /// Stored values that hold none: padding of dense levels (BSR's blocks,
    /// DIA's diagonals) and n:m blocks, and DIA's positions past the
    /// matrix's edge. A zero stored in such storage cannot be told from
    /// padding and counts here.
    pub padding: usize,
    /// DIA: the number of stored diagonals (the difference level's coordinates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagonals: Option<usize>,
    /// Blocked storage (BSR: trailing dense `d mod K` levels): the number
    /// of stored blocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks: Option<usize>,
    /// The shape of a block, outermost first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_shape: Option<Vec<u64>>,
    /// Bytes of all buffers together.
    pub bytes: usize,
}

impl SparseTensor {
    /// The sizes of this tensor's storage.
    pub fn stats(&self) -> StorageStats {
        let enc = &self.encoding;
        let levels: Vec<LevelStats> = enc
            .levels
            .iter()
            .enumerate()
            .map(|(l, level)| LevelStats {
                format: level.format.keyword(),
                size: self.lvl_sizes[l],
                positions: self.positions[l].as_ref().map(BufferStats::of),
                coordinates: self.coordinates[l].as_ref().map(BufferStats::of),
            })
            .collect();
        let elem_bytes = self.elem.size_bytes();
        let values = BufferStats { count: self.nse(), bits: (elem_bytes * 8) as u32, bytes: self.nse() * elem_bytes };
        let entries = if self.has_padding() || enc.diff_level().is_some() { self.to_coo().len() } else { self.nse() };
        let diagonals = enc.diff_level().and_then(|(l, _, _)| self.coordinates[l].as_ref().map(IndexBuf::len));
        // Blocks: dense levels of `d mod K` at the end, under a level that stores coordinates.
        let inside = enc
            .levels
            .iter()
            .rev()
            .take_while(|lv| lv.format == LevelFormat::Dense && matches!(lv.expr, LvlExpr::Mod(..)))
            .count();
        let (blocks, block_shape) = if inside > 0 && inside < enc.levels.len() {
            let outer = enc.levels.len() - inside - 1;
            let shape: Vec<u64> = enc.levels[outer + 1..]
                .iter()
                .filter_map(|lv| match lv.expr {
                    LvlExpr::Mod(_, k) => Some(k),
                    _ => None,
                })
                .collect();
            let block: u64 = shape.iter().product();
            (Some(self.nse() / block.max(1) as usize), Some(shape))
        } else {
            (None, None)
        };
        let bytes = values.bytes
            + levels.iter().flat_map(|l| [&l.positions, &l.coordinates]).flatten().map(|b| b.bytes).sum::<usize>();
        StorageStats { levels, values, entries, padding: self.nse() - entries, diagonals, blocks, block_shape, bytes }
    }
}

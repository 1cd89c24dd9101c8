//! Integer buffers at a declared bit width.

use super::error::{Result, SparseError};
use heddle_ir::encoding::Width;

/// A positions or coordinates buffer stored at its encoding's width
/// (native width is 64 bits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexBuf {
    /// 8 bits.
    U8(Vec<u8>),
    /// 16 bits.
    U16(Vec<u16>),
    /// 32 bits.
    U32(Vec<u32>),
    /// 64 bits (also the native width).
    U64(Vec<u64>),
}

impl IndexBuf {
    /// Narrows `v` to `width`. A value that does not fit is an error naming
    /// `name` and the position: a narrow width never wraps.
    pub fn from_u64(v: Vec<u64>, width: Width, name: &str) -> Result<IndexBuf> {
        let max = width.max_value();
        if let Some(p) = v.iter().position(|&x| x > max) {
            return Err(SparseError::buffer(
                name,
                p,
                format!("{} does not fit in {} bits (the encoding's width)", v[p], width.storage_bits()),
            ));
        }
        Ok(match width.storage_bits() {
            8 => IndexBuf::U8(v.into_iter().map(|x| x as u8).collect()),
            16 => IndexBuf::U16(v.into_iter().map(|x| x as u16).collect()),
            32 => IndexBuf::U32(v.into_iter().map(|x| x as u32).collect()),
            _ => IndexBuf::U64(v),
        })
    }
    /// Stores the signed values `v` (two's complement in 64 bits) at `width`
    /// in two's complement: a difference level's coordinates (DIA's offsets).
    /// A value outside the width's signed range is an error naming `name`
    /// and the position.
    pub fn from_i64(v: Vec<i64>, width: Width, name: &str) -> Result<IndexBuf> {
        let bits = width.storage_bits();
        let (lo, hi) =
            if bits == 64 { (i64::MIN, i64::MAX) } else { (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1) };
        if let Some(p) = v.iter().position(|&x| x < lo || x > hi) {
            return Err(SparseError::buffer(
                name,
                p,
                format!("{} does not fit in {bits} signed bits (the encoding's width)", v[p]),
            ));
        }
        Ok(match bits {
            8 => IndexBuf::U8(v.into_iter().map(|x| x as i8 as u8).collect()),
            16 => IndexBuf::U16(v.into_iter().map(|x| x as i16 as u16).collect()),
            32 => IndexBuf::U32(v.into_iter().map(|x| x as i32 as u32).collect()),
            _ => IndexBuf::U64(v.into_iter().map(|x| x as u64).collect()),
        })
    }
    /// Entry `i` read as a signed (two's complement) value of the buffer's
    /// width and sign-extended: a difference level's coordinate.
    #[inline]
    pub fn get_signed(&self, i: usize) -> i64 {
        match self {
            IndexBuf::U8(v) => i64::from(v[i] as i8),
            IndexBuf::U16(v) => i64::from(v[i] as i16),
            IndexBuf::U32(v) => i64::from(v[i] as i32),
            IndexBuf::U64(v) => v[i] as i64,
        }
    }
    /// All entries read as signed values.
    pub fn to_i64(&self) -> Vec<i64> {
        (0..self.len()).map(|i| self.get_signed(i)).collect()
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        match self {
            IndexBuf::U8(v) => v.len(),
            IndexBuf::U16(v) => v.len(),
            IndexBuf::U32(v) => v.len(),
            IndexBuf::U64(v) => v.len(),
        }
    }
    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Entry `i` widened to 64 bits; panics only on an out-of-range index,
    /// which validated storage never produces.
    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        match self {
            IndexBuf::U8(v) => u64::from(v[i]),
            IndexBuf::U16(v) => u64::from(v[i]),
            IndexBuf::U32(v) => u64::from(v[i]),
            IndexBuf::U64(v) => v[i],
        }
    }
    /// All entries widened to 64 bits.
    pub fn to_u64(&self) -> Vec<u64> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }
    /// The width in bits.
    pub fn bits(&self) -> u32 {
        match self {
            IndexBuf::U8(_) => 8,
            IndexBuf::U16(_) => 16,
            IndexBuf::U32(_) => 32,
            IndexBuf::U64(_) => 64,
        }
    }
}

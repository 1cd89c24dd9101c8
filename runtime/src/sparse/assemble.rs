//! `assemble` (buffers → tensor, validated) and `disassemble` (tensor → buffers).
//!
//! Validation checks everything the encoding claims, so a tensor built from
//! outside data can be trusted by every consumer: buffer presence and
//! lengths, positions that start at 0 and never decrease, coordinates within
//! their level's size, order and uniqueness where the level claims them,
//! widths that hold every entry. Each error names the buffer and position.

use super::buffer::IndexBuf;
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use crate::scalars::{Num, ScalarVec};
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat, map};

/// The buffers of a stored tensor, widened to 64 bits, as MLIR lists them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Buffers {
    /// Positions per level (`None` where the level has none).
    pub positions: Vec<Option<Vec<u64>>>,
    /// Coordinates per level (`None` where the level has none; an AoS COO
    /// region's buffer sits at its first level, interleaved). A difference
    /// level's (DIA's offsets) are signed: each is the 64-bit two's
    /// complement of the offset (`offset as u64`).
    pub coordinates: Vec<Option<Vec<u64>>>,
    /// The values, at their own type.
    pub values: ScalarVec,
}

/// The tensor's buffers.
pub fn disassemble(t: &SparseTensor) -> Buffers {
    Buffers {
        positions: t.positions.iter().map(|b| b.as_ref().map(IndexBuf::to_u64)).collect(),
        coordinates: t
            .coordinates
            .iter()
            .enumerate()
            .map(|(l, b)| {
                b.as_ref().map(|b| {
                    if t.encoding.signed_level(l) {
                        b.to_i64().into_iter().map(|x| x as u64).collect()
                    } else {
                        b.to_u64()
                    }
                })
            })
            .collect(),
        values: t.values.clone(),
    }
}

/// Builds a tensor from its buffers after checking them against `enc`.
pub fn assemble(enc: &Encoding, elem: ScalarType, dim_sizes: Vec<u64>, b: Buffers) -> Result<SparseTensor> {
    // Batches are stored (and checked) one by one, each in its own rows.
    if super::batch::batch_rank(enc) > 0 {
        return super::batch::assemble_batched(enc, elem, dim_sizes, b);
    }
    let lr = enc.lvl_rank();
    let lvl_sizes = map::lvl_sizes(enc, &dim_sizes).map_err(SparseError::Shape)?;
    if b.positions.len() != lr || b.coordinates.len() != lr {
        return Err(SparseError::Shape(format!(
            "the encoding has {lr} levels but {} positions and {} coordinates entries were given (one per level, null where none)",
            b.positions.len(),
            b.coordinates.len()
        )));
    }
    let bias = map::diff_bias(enc, &dim_sizes);
    let mut count: u64 = 1;
    for (l, lv) in enc.levels.iter().enumerate() {
        let pname = format!("positions[{l}]");
        let cname = format!("coordinates[{l}]");
        let want_pos = lv.format.has_positions();
        let want_crd = lv.format.has_coordinates() && !enc.in_aos_buffer(l);
        presence(&pname, want_pos, b.positions[l].is_some(), l, lv.format)?;
        presence(&cname, want_crd, b.coordinates[l].is_some(), l, lv.format)?;
        // Where level l's coordinates live: (buffer, its name, stride, offset).
        let (crd, crd_name, stride, off) = crd_source(enc, &b, l);
        let n_crd = crd.map_or(0, |c| c.len() / stride.max(1));
        if let Some(c) = crd
            && c.len() % stride != 0
        {
            return Err(SparseError::buffer(
                &crd_name,
                c.len(),
                format!("length {} is not a multiple of {stride} (coordinates per AoS entry)", c.len()),
            ));
        }
        // A difference level's signed offsets, checked and ordered as the
        // internal unsigned coordinates `offset + bias` (see `map`); one below
        // the smallest offset becomes u64::MAX, which the range check reports.
        let signed = enc.signed_level(l);
        let internal: Option<Vec<u64>> = (signed && stride == 1).then(|| {
            crd.unwrap_or_default().iter().map(|&v| map::offset_level(v as i64, bias).unwrap_or(u64::MAX)).collect()
        });
        let crd_at = |p: usize| match &internal {
            Some(c) => c[p],
            None => crd.map_or(0, |c| c[p * stride + off]),
        };
        let check_range = |p: usize| -> Result<()> {
            let v = crd_at(p);
            if v >= lvl_sizes[l] {
                if signed {
                    let stored = crd.map_or(0, |c| c[p * stride + off]) as i64;
                    let hi = lvl_sizes[l] as i64 - 1 - bias as i64;
                    return Err(SparseError::buffer(
                        &crd_name,
                        p * stride + off,
                        format!(
                            "offset {stored} is outside level {l}'s offsets {} ..= {hi} (for these dimension sizes)",
                            -(bias as i64)
                        ),
                    ));
                }
                return Err(SparseError::buffer(
                    &crd_name,
                    p * stride + off,
                    format!("coordinate {v} is outside level {l}'s size {}", lvl_sizes[l]),
                ));
            }
            Ok(())
        };
        let check_order = |s: usize, e: usize| -> Result<()> {
            for p in s..e {
                check_range(p)?;
                if p > s && !lv.props.nonordered {
                    let (a, c) = (crd_at(p - 1), crd_at(p));
                    if c < a || (c == a && !lv.props.nonunique) {
                        let why = if c < a { "coordinates must be ordered" } else { "coordinates must be unique" };
                        let show =
                            |x: u64| if signed { map::stored_offset(x, bias).to_string() } else { x.to_string() };
                        return Err(SparseError::buffer(
                            &crd_name,
                            p * stride + off,
                            format!("{} follows {} under one parent ({why} at level {l})", show(c), show(a)),
                        ));
                    }
                }
            }
            if lv.props.nonordered && !lv.props.nonunique {
                let mut seg: Vec<u64> = (s..e).map(crd_at).collect();
                seg.sort_unstable();
                if let Some(w) = seg.windows(2).find(|w| w[0] == w[1]) {
                    let shown = if signed { map::stored_offset(w[0], bias).to_string() } else { w[0].to_string() };
                    return Err(SparseError::buffer(
                        &crd_name,
                        s * stride + off,
                        format!("coordinate {shown} appears twice under one parent (level {l} is unique)"),
                    ));
                }
            }
            Ok(())
        };
        match lv.format {
            LevelFormat::Dense | LevelFormat::Batch => count = count.saturating_mul(lvl_sizes[l]),
            LevelFormat::Compressed => {
                let pos = b.positions[l].as_deref().unwrap_or_default();
                expect_len(&pname, pos.len(), count.saturating_add(1))?;
                if pos.first().is_some_and(|&x| x != 0) {
                    return Err(SparseError::buffer(&pname, 0, format!("the first position is {}, not 0", pos[0])));
                }
                for q in 1..pos.len() {
                    if pos[q] < pos[q - 1] {
                        return Err(SparseError::buffer(
                            &pname,
                            q,
                            format!(
                                "{} is less than the previous position {} (positions must not decrease)",
                                pos[q],
                                pos[q - 1]
                            ),
                        ));
                    }
                }
                let last = pos.last().copied().unwrap_or(0);
                expect_len(&crd_name, n_crd, last)?;
                for q in 0..pos.len().saturating_sub(1) {
                    check_order(pos[q] as usize, pos[q + 1] as usize)?;
                }
                count = last;
            }
            LevelFormat::Banded => {
                // heddle's skyline below dense rows: row q holds columns
                // q + 1 - len ..= q, so len <= q + 1 and, when len > 0, q is a column.
                let pos = b.positions[l].as_deref().unwrap_or_default();
                expect_len(&pname, pos.len(), count.saturating_add(1))?;
                if pos.first().is_some_and(|&x| x != 0) {
                    return Err(SparseError::buffer(&pname, 0, format!("the first position is {}, not 0", pos[0])));
                }
                for q in 1..pos.len() {
                    let (row, len) = (q as u64 - 1, pos[q].wrapping_sub(pos[q - 1]));
                    if pos[q] < pos[q - 1] {
                        return Err(SparseError::buffer(
                            &pname,
                            q,
                            format!(
                                "{} is less than the previous position {} (positions must not decrease)",
                                pos[q],
                                pos[q - 1]
                            ),
                        ));
                    }
                    if len > row + 1 || (len > 0 && row >= lvl_sizes[l]) {
                        return Err(SparseError::buffer(&pname, q, enc.skyline_too_long(row, len, lvl_sizes[l])));
                    }
                }
                count = pos.last().copied().unwrap_or(0);
            }
            LevelFormat::LooseCompressed => {
                let pos = b.positions[l].as_deref().unwrap_or_default();
                expect_len(&pname, pos.len(), count.saturating_mul(2))?;
                for q in 0..pos.len() / 2 {
                    let (lo, hi) = (pos[2 * q], pos[2 * q + 1]);
                    if lo > hi {
                        return Err(SparseError::buffer(
                            &pname,
                            2 * q + 1,
                            format!("upper bound {hi} is below its lower bound {lo}"),
                        ));
                    }
                    if hi as usize > n_crd {
                        return Err(SparseError::buffer(
                            &pname,
                            2 * q + 1,
                            format!("upper bound {hi} is past the end of {crd_name} ({n_crd} entries)"),
                        ));
                    }
                    check_order(lo as usize, hi as usize)?;
                }
                count = n_crd as u64;
            }
            LevelFormat::Singleton => {
                expect_len(&crd_name, n_crd, count)?;
                (0..n_crd).try_for_each(check_range)?;
            }
            LevelFormat::NOutOfM { n, m, .. } => {
                let n = u64::from(n);
                expect_len(&crd_name, n_crd, count.saturating_mul(n))?;
                for blk in 0..count as usize {
                    let (s, e) = (blk * n as usize, (blk + 1) * n as usize);
                    for p in s..e {
                        let v = crd_at(p);
                        if v >= u64::from(m) {
                            return Err(SparseError::buffer(
                                &crd_name,
                                p,
                                format!("coordinate {v} is outside the block of {m}"),
                            ));
                        }
                        if p > s && crd_at(p - 1) >= v {
                            return Err(SparseError::buffer(
                                &crd_name,
                                p,
                                format!("{v} follows {} in one block (coordinates must increase)", crd_at(p - 1)),
                            ));
                        }
                    }
                }
                count = count.saturating_mul(n);
            }
        }
    }
    expect_len("values", b.values.len(), count)?;
    let mut positions = Vec::with_capacity(lr);
    let mut coordinates = Vec::with_capacity(lr);
    for (l, (p, c)) in b.positions.into_iter().zip(b.coordinates).enumerate() {
        positions.push(p.map(|v| IndexBuf::from_u64(v, enc.pos_width, &format!("positions[{l}]"))).transpose()?);
        let name = format!("coordinates[{l}]");
        coordinates.push(
            c.map(|v| {
                if enc.signed_level(l) {
                    IndexBuf::from_i64(v.into_iter().map(|x| x as i64).collect(), enc.crd_width, &name)
                } else {
                    IndexBuf::from_u64(v, enc.crd_width, &name)
                }
            })
            .transpose()?,
        );
    }
    let values = b.values.convert(elem).map_err(|e| SparseError::buffer("values", e.position, e.message))?;
    check_explicit_values(enc, &values)?;
    Ok(SparseTensor { encoding: enc.clone(), elem, dim_sizes, lvl_sizes, positions, coordinates, values })
}

/// The value of the entries an encoding does not store: its `implicitVal`,
/// or 0.
pub fn implicit_value(enc: &Encoding) -> Num {
    enc.implicit_val.as_ref().and_then(Num::of_literal).unwrap_or(Num::Int(0))
}

/// Converting between encodings keeps the stored entries; the absent ones
/// take the target's implicit value, so the two must agree (else the
/// tensor would change; the error says how to keep it).
pub(crate) fn check_same_implicit(from: &Encoding, to: &Encoding) -> Result<()> {
    let (a, b) = (implicit_value(from), implicit_value(to));
    if a.to_f64().to_bits() == b.to_f64().to_bits() || (a.to_f64() == 0.0 && b.to_f64() == 0.0) {
        return Ok(());
    }
    Err(SparseError::Shape(format!(
        "the tensor's absent entries are {a} (its encoding's implicitVal) but the target encoding's are {b}: converting would change the tensor (store it in an encoding with `implicitVal = {a}`, or in an all-dense one, which stores every entry)"
    )))
}

/// An encoding with an `explicitVal` says every stored entry has that
/// value: a stored value that is neither it nor the implicit value (the
/// padding of dense levels, 0 unless `implicitVal` says otherwise) is an
/// error naming its position.
pub(crate) fn check_explicit_values(enc: &Encoding, values: &ScalarVec) -> Result<()> {
    let Some(explicit) = enc.explicit_val.as_ref().and_then(Num::of_literal) else { return Ok(()) };
    // Without padding slots the values buffer holds entries only, and the
    // kernels of an iso-valued encoding read the constant instead of it
    // (`storage_types::iso_value`): every value must be the constant bit for
    // bit (a stored `0.0` is not `explicitVal = -0.0`).
    let implicit = match heddle_ir::encoding::storage_types::iso_value(enc, values.elem()) {
        Some(_) => explicit,
        None => implicit_value(enc),
    };
    let differs = match explicit {
        Num::Float(e) if heddle_ir::encoding::storage_types::iso_value(enc, values.elem()).is_some() => match values {
            ScalarVec::F64(v) => v.iter().position(|x| x.to_bits() != e.to_bits()),
            ScalarVec::F32(v) => v.iter().position(|x| f64::from(*x).to_bits() != e.to_bits()),
            _ => values.position_not_in(explicit, implicit),
        },
        _ => values.position_not_in(explicit, implicit),
    };
    match differs {
        None => Ok(()),
        Some(p) => Err(SparseError::buffer(
            "values",
            p,
            format!(
                "{} differs from the encoding's explicitVal {explicit}, the value of every stored entry",
                values.num(p)
            ),
        )),
    }
}

fn presence(name: &str, want: bool, have: bool, l: usize, f: LevelFormat) -> Result<()> {
    match (want, have) {
        (true, false) => {
            Err(SparseError::buffer(name, 0, format!("missing: level {l} ({}) needs this buffer", f.keyword())))
        }
        (false, true) => Err(SparseError::buffer(
            name,
            0,
            format!("unexpected: level {l} ({}) has no such buffer; give null", f.keyword()),
        )),
        _ => Ok(()),
    }
}

fn expect_len(name: &str, len: usize, want: u64) -> Result<()> {
    if len as u64 != want {
        return Err(SparseError::buffer(
            name,
            len.min(want as usize),
            format!("has {len} entries; the levels above require {want}"),
        ));
    }
    Ok(())
}

fn crd_source<'a>(enc: &Encoding, b: &'a Buffers, l: usize) -> (Option<&'a [u64]>, String, usize, usize) {
    for h in (0..=l).rev() {
        if let Some(run) = enc.aos_run(h)
            && run.contains(&l)
        {
            return (b.coordinates[h].as_deref(), format!("coordinates[{h}]"), run.len(), l - h);
        }
    }
    (b.coordinates[l].as_deref(), format!("coordinates[{l}]"), 1, 0)
}

//! Batch levels, stored as MLIR stores them.
//!
//! MLIR gives every buffer of a tensor with leading `batch` levels the batch
//! levels' sizes as leading dimensions: positions, coordinates and values are
//! `memref<B0 x … x Bk x ? x T>` (`foreachFieldAndTypeInSparseTensor` in
//! `mlir/lib/Dialect/SparseTensor/IR/SparseTensorDialect.cpp`: "memref<[batch]
//! x ? x pos> positions"), and the sparsifier reads `pos[b, i]`, `crd[b, p]`
//! and `values[b, p]`. Each batch is the tensor of the remaining levels stored
//! on its own: its positions start at 0 and index its own row of the
//! coordinates and values. A memref is rectangular and the storage specifier
//! keeps one size per buffer, so every batch's row of a buffer has the same
//! length; a batch with fewer entries leaves the end of its rows unused.
//!
//! heddle keeps the rows concatenated (the memref's row-major data): row `b`
//! of a buffer of length `len` is `[b * len / B, (b + 1) * len / B)`, where
//! `B` is the product of the batch levels' sizes. Rows are as long as the
//! longest batch needs; the unused room is padding that heddle writes as the
//! batch's last position (positions stay non-decreasing), coordinate 0 and
//! value 0, and that is never read. A positions row whose length the dense
//! levels above fix (CSR's `rows + 1`) has exactly that length.

use super::assemble::{Buffers, assemble, disassemble, implicit_value};
use super::coo::Coo;
use super::error::{Result, SparseError};
use super::tensor::SparseTensor;
use crate::scalars::ScalarVec;
use heddle_ir::ScalarType;
use heddle_ir::encoding::{Encoding, LevelFormat, LvlExpr, map};

/// The most batches a tensor may have.
pub const MAX_BATCHES: u64 = 1 << 20;

/// The number of leading `batch` levels of `enc` (the verifier keeps them leading).
pub fn batch_rank(enc: &Encoding) -> usize {
    enc.levels.iter().take_while(|l| l.format == LevelFormat::Batch).count()
}

/// A batched encoding taken apart: its batch levels and the encoding of one batch.
#[derive(Clone, Debug)]
pub struct Batching {
    /// The dimension each batch level stores, in level order.
    pub batch_dims: Vec<usize>,
    /// The other dimensions, in order: dimension `i` of a batch is `inner_dims[i]`.
    pub inner_dims: Vec<usize>,
    /// The encoding of one batch: the levels after the batch levels, over `inner_dims`.
    pub inner: Encoding,
}

impl Batching {
    /// Takes `enc` apart; `None` when it has no batch level. A batch level must
    /// store a dimension of its own whole (`b : batch`), unsliced, and leave
    /// at least one level to the batches.
    pub fn of(enc: &Encoding) -> Result<Option<Batching>> {
        let k = batch_rank(enc);
        if k == 0 {
            return Ok(None);
        }
        let unsupported = |m: String| Err(SparseError::Shape(format!("batch levels: {m}")));
        let mut batch_dims = Vec::with_capacity(k);
        for (l, level) in enc.levels[..k].iter().enumerate() {
            let LvlExpr::Dim(d) = level.expr else {
                return unsupported(format!("level {l} must store one dimension whole (`b : batch`)"));
            };
            if enc.dims[d].slice.is_some() {
                return unsupported(format!(
                    "dimension {d} (`{}`), stored by batch level {l}, cannot be sliced",
                    enc.dims[d].name
                ));
            }
            batch_dims.push(d);
        }
        if k == enc.lvl_rank() {
            return unsupported(
                "every level is a batch level, which leaves nothing to store per batch; make the last one `dense`"
                    .into(),
            );
        }
        let uses = |e: LvlExpr, d: usize| match e {
            LvlExpr::Dim(x) | LvlExpr::FloorDiv(x, _) | LvlExpr::Mod(x, _) | LvlExpr::Counter { dim: x, .. } => x == d,
            LvlExpr::Diff { plus, minus } => plus == d || minus == d,
        };
        for (l, level) in enc.levels.iter().enumerate().skip(k) {
            if let Some(&d) = batch_dims.iter().find(|&&d| uses(level.expr, d)) {
                return unsupported(format!(
                    "level {l} uses dimension `{}`, which a batch level stores",
                    enc.dims[d].name
                ));
            }
        }
        let inner_dims: Vec<usize> = (0..enc.dim_rank()).filter(|d| !batch_dims.contains(d)).collect();
        let renumber = |d: usize| inner_dims.iter().position(|&x| x == d).unwrap_or(0);
        let mut inner = enc.clone();
        inner.dims = inner_dims.iter().map(|&d| enc.dims[d].clone()).collect();
        inner.levels = enc.levels[k..]
            .iter()
            .map(|level| {
                let mut level = level.clone();
                level.expr = match level.expr {
                    LvlExpr::Dim(d) => LvlExpr::Dim(renumber(d)),
                    LvlExpr::FloorDiv(d, b) => LvlExpr::FloorDiv(renumber(d), b),
                    LvlExpr::Mod(d, b) => LvlExpr::Mod(renumber(d), b),
                    LvlExpr::Counter { dim, slices } => LvlExpr::Counter { dim: renumber(dim), slices },
                    LvlExpr::Diff { plus, minus } => LvlExpr::Diff { plus: renumber(plus), minus: renumber(minus) },
                };
                level
            })
            .collect();
        Ok(Some(Batching { batch_dims, inner_dims, inner }))
    }

    /// The batch levels' sizes, from the tensor's dimension sizes.
    pub fn sizes(&self, dim_sizes: &[u64]) -> Vec<u64> {
        self.batch_dims.iter().map(|&d| dim_sizes[d]).collect()
    }

    /// The number of batches: the product of the batch levels' sizes, at
    /// most [`MAX_BATCHES`] (each batch is stored, checked and converted on
    /// its own, so one costs more than a dense position).
    pub fn count(&self, dim_sizes: &[u64]) -> Result<usize> {
        let n = self.sizes(dim_sizes).iter().try_fold(1u64, |n, &s| n.checked_mul(s));
        let n = n.filter(|&n| n <= MAX_BATCHES).ok_or_else(|| {
            SparseError::Shape(format!(
                "the batch levels' sizes {:?} make more than the {MAX_BATCHES} batches heddle stores; store the batch dimension as a dense level",
                self.sizes(dim_sizes)
            ))
        })?;
        Ok(n as usize)
    }

    /// One batch's dimension sizes.
    pub fn inner_sizes(&self, dim_sizes: &[u64]) -> Vec<u64> {
        self.inner_dims.iter().map(|&d| dim_sizes[d]).collect()
    }
}

/// The number of positions at level `l` of one batch where the dense levels
/// above fix it (CSR's rows; a positions row is one longer), `None` below a
/// level whose size depends on the data; one entry per level, then the count
/// below the last level (a dense batch's values).
fn fixed_counts(inner: &Encoding, inner_lvl_sizes: &[u64]) -> Vec<Option<u64>> {
    let mut count = Some(1u64);
    let mut out = Vec::with_capacity(inner.lvl_rank());
    for (l, level) in inner.levels.iter().enumerate() {
        out.push(count);
        count = match level.format {
            LevelFormat::Dense | LevelFormat::Batch => count.and_then(|c| c.checked_mul(inner_lvl_sizes[l])),
            LevelFormat::NOutOfM { n, .. } => count.and_then(|c| c.checked_mul(u64::from(n))),
            LevelFormat::Singleton => count,
            LevelFormat::Compressed | LevelFormat::LooseCompressed | LevelFormat::Banded => None,
        };
    }
    out.push(count);
    out
}

/// Relabels an error about one batch's buffers (levels numbered from the
/// first level after the batch levels, positions within the row) for the
/// whole tensor: the level number shifted, the batch and the row position said.
fn in_batch(e: SparseError, k: usize, b: usize, rows: &[usize; 3]) -> SparseError {
    match e {
        SparseError::Buffer { buffer, position, message } => {
            let (name, row) = match buffer.split_once('[') {
                Some((kind, rest)) => {
                    let l: usize = rest.trim_end_matches(']').parse().unwrap_or(0);
                    let row = if kind == "positions" { rows[0] } else { rows[1] };
                    (format!("{kind}[{}]", l + k), row)
                }
                None => (buffer, rows[2]),
            };
            SparseError::Buffer {
                buffer: name,
                position: b * row + position,
                message: format!("{} (batch {b}, entry {position} of its row)", shift_levels(&message, k)),
            }
        }
        SparseError::Shape(m) => SparseError::Shape(format!("batch {b}: {}", shift_levels(&m, k))),
        other => other,
    }
}

/// `text` with every "level N" of one batch's numbering renumbered for the
/// whole tensor (`k` batch levels come first).
fn shift_levels(text: &str, k: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("level ") {
        let (head, tail) = rest.split_at(at + "level ".len());
        out.push_str(head);
        let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if let Ok(l) = tail[..digits].parse::<usize>() {
            out.push_str(&(l + k).to_string());
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// The batches of a batched tensor's buffers, each checked and stored on its
/// own (what the sparsifier sees of batch `b`): positions from 0, the rows
/// cut to what its positions use. Errors name the buffer, the flat position
/// and the batch.
fn split_buffers(enc: &Encoding, elem: ScalarType, dim_sizes: &[u64], b: &Buffers) -> Result<Vec<SparseTensor>> {
    let bt = Batching::of(enc)?.ok_or_else(|| SparseError::Shape("the encoding has no batch level".into()))?;
    let k = batch_rank(enc);
    let lr = enc.lvl_rank();
    if dim_sizes.len() != enc.dim_rank() {
        return Err(SparseError::Shape(format!(
            "the encoding has {} dimensions but the tensor has {}",
            enc.dim_rank(),
            dim_sizes.len()
        )));
    }
    if b.positions.len() != lr || b.coordinates.len() != lr {
        return Err(SparseError::Shape(format!(
            "the encoding has {lr} levels but {} positions and {} coordinates entries were given (one per level, null where none)",
            b.positions.len(),
            b.coordinates.len()
        )));
    }
    for l in 0..k {
        for (kind, given) in [("positions", &b.positions[l]), ("coordinates", &b.coordinates[l])] {
            if given.is_some() {
                return Err(SparseError::buffer(
                    format!("{kind}[{l}]"),
                    0,
                    format!("unexpected: level {l} (batch) has no such buffer; give null"),
                ));
            }
        }
    }
    let nb = bt.count(dim_sizes)?;
    let inner_sizes = bt.inner_sizes(dim_sizes);
    let inner_lvl = map::lvl_sizes(&bt.inner, &inner_sizes).map_err(SparseError::Shape)?;
    let fixed = fixed_counts(&bt.inner, &inner_lvl);
    // Every buffer splits into `nb` rows of one length.
    let row_of = |name: &str, len: usize| -> Result<usize> {
        if nb == 0 {
            return Ok(0);
        }
        if !len.is_multiple_of(nb) {
            return Err(SparseError::buffer(
                name,
                len,
                format!("has {len} entries, not {nb} rows of one length (one per batch)"),
            ));
        }
        Ok(len / nb)
    };
    let mut pos_rows = vec![0usize; lr];
    let mut crd_rows = vec![0usize; lr];
    for l in k..lr {
        if let Some(p) = &b.positions[l] {
            let name = format!("positions[{l}]");
            pos_rows[l] = row_of(&name, p.len())?;
            let want = match (bt.inner.levels[l - k].format, fixed[l - k]) {
                (LevelFormat::Compressed, Some(c)) => Some(c.saturating_add(1)),
                (LevelFormat::LooseCompressed, Some(c)) => Some(c.saturating_mul(2)),
                _ => None,
            };
            if let Some(w) = want.filter(|&w| nb > 0 && pos_rows[l] as u64 != w) {
                return Err(SparseError::buffer(
                    &name,
                    0,
                    format!("has rows of {} entries; the levels above give each batch {w} positions", pos_rows[l]),
                ));
            }
        }
        if let Some(c) = &b.coordinates[l] {
            crd_rows[l] = row_of(&format!("coordinates[{l}]"), c.len())?;
        }
    }
    let val_row = row_of("values", b.values.len())?;
    let mut parts = Vec::with_capacity(nb);
    for batch in 0..nb {
        // Cut each row to what the batch's levels use, top down.
        let mut one = Buffers {
            positions: vec![None; lr - k],
            coordinates: vec![None; lr - k],
            values: ScalarVec::new(b.values.elem()),
        };
        let mut count: u64 = 1;
        let too_short = |name: String, row: usize, need: u64| {
            SparseError::buffer(
                name,
                batch * row + row.min(need as usize),
                format!("batch {batch}'s row has {row} entries but its levels above need {need}"),
            )
        };
        for l in k..lr {
            let il = l - k;
            let level = &bt.inner.levels[il];
            if let Some(p) = &b.positions[l] {
                let row = &p[batch * pos_rows[l]..(batch + 1) * pos_rows[l]];
                let used = match level.format {
                    LevelFormat::LooseCompressed => count.saturating_mul(2),
                    _ => count.saturating_add(1),
                };
                if used > row.len() as u64 {
                    return Err(too_short(format!("positions[{l}]"), row.len(), used));
                }
                one.positions[il] = Some(row[..used as usize].to_vec());
                if level.format == LevelFormat::Compressed {
                    count = row[count as usize];
                }
            }
            match level.format {
                LevelFormat::Dense => count = count.saturating_mul(inner_lvl[il]),
                LevelFormat::NOutOfM { n, .. } => count = count.saturating_mul(u64::from(n)),
                // A loose level's children may lie anywhere in the row.
                LevelFormat::LooseCompressed => count = crd_rows[l] as u64,
                _ => {}
            }
            if let Some(c) = &b.coordinates[l] {
                let stride = bt.inner.aos_run(il).map_or(1, |r| r.len()) as u64;
                let row = &c[batch * crd_rows[l]..(batch + 1) * crd_rows[l]];
                let used = count.saturating_mul(stride);
                if used > row.len() as u64 {
                    return Err(too_short(format!("coordinates[{l}]"), row.len(), used));
                }
                one.coordinates[il] = Some(row[..used as usize].to_vec());
            }
        }
        if count > val_row as u64 {
            return Err(too_short("values".into(), val_row, count));
        }
        one.values = b.values.slice(batch * val_row..batch * val_row + count as usize);
        let rows = [pos_rows.iter().copied().max().unwrap_or(0), crd_rows.iter().copied().max().unwrap_or(0), val_row];
        let rows_of = |e: SparseError| {
            // Name the row length of the buffer the error is about.
            let rows = match &e {
                SparseError::Buffer { buffer, .. } => {
                    let l = buffer
                        .split_once('[')
                        .and_then(|(_, r)| r.trim_end_matches(']').parse::<usize>().ok())
                        .map_or(0, |l| l + k);
                    [pos_rows.get(l).copied().unwrap_or(rows[0]), crd_rows.get(l).copied().unwrap_or(rows[1]), val_row]
                }
                _ => rows,
            };
            in_batch(e, k, batch, &rows)
        };
        parts.push(assemble(&bt.inner, elem, inner_sizes.clone(), one).map_err(rows_of)?);
    }
    Ok(parts)
}

/// Builds a batched tensor from its buffers after checking every batch (see
/// [`split_buffers`]); the buffers are kept as given, padding included.
pub fn assemble_batched(enc: &Encoding, elem: ScalarType, dim_sizes: Vec<u64>, b: Buffers) -> Result<SparseTensor> {
    split_buffers(enc, elem, &dim_sizes, &b)?;
    let lvl_sizes = map::lvl_sizes(enc, &dim_sizes).map_err(SparseError::Shape)?;
    let mut positions = Vec::with_capacity(enc.lvl_rank());
    let mut coordinates = Vec::with_capacity(enc.lvl_rank());
    for (l, (p, c)) in b.positions.into_iter().zip(b.coordinates).enumerate() {
        positions.push(
            p.map(|v| super::buffer::IndexBuf::from_u64(v, enc.pos_width, &format!("positions[{l}]"))).transpose()?,
        );
        let name = format!("coordinates[{l}]");
        coordinates.push(
            c.map(|v| {
                if enc.signed_level(l) {
                    super::buffer::IndexBuf::from_i64(v.into_iter().map(|x| x as i64).collect(), enc.crd_width, &name)
                } else {
                    super::buffer::IndexBuf::from_u64(v, enc.crd_width, &name)
                }
            })
            .transpose()?,
        );
    }
    let values = b.values.convert(elem).map_err(|e| SparseError::buffer("values", e.position, e.message))?;
    super::assemble::check_explicit_values(enc, &values)?;
    Ok(SparseTensor { encoding: enc.clone(), elem, dim_sizes, lvl_sizes, positions, coordinates, values })
}

/// The batches of batched tensor `t`, in row-major order of the batch
/// coordinates, each stored on its own in the batch encoding.
pub fn split(t: &SparseTensor) -> Result<Vec<SparseTensor>> {
    split_buffers(&t.encoding, t.elem, &t.dim_sizes, &disassemble(t))
}

/// The batched tensor in `enc` whose batches (row-major over the batch
/// coordinates) are `parts`, each stored in the batch encoding: every row
/// as long as the longest batch needs, the room padded (see the module
/// documentation).
pub fn join(enc: &Encoding, elem: ScalarType, dim_sizes: Vec<u64>, parts: &[SparseTensor]) -> Result<SparseTensor> {
    let k = batch_rank(enc);
    let lr = enc.lvl_rank();
    let bufs: Vec<Buffers> = parts.iter().map(disassemble).collect();
    let mut positions: Vec<Option<Vec<u64>>> = vec![None; lr];
    let mut coordinates: Vec<Option<Vec<u64>>> = vec![None; lr];
    for l in k..lr {
        let il = l - k;
        let level = &enc.levels[l];
        if level.format.has_positions() {
            let row = bufs.iter().map(|b| b.positions[il].as_ref().map_or(0, Vec::len)).max().unwrap_or(0);
            let mut out = Vec::with_capacity(row * bufs.len());
            for b in &bufs {
                let p = b.positions[il].as_deref().unwrap_or_default();
                out.extend_from_slice(p);
                let last = p.last().copied().unwrap_or(0);
                out.extend(std::iter::repeat_n(last, row - p.len()));
            }
            positions[l] = Some(out);
        }
        if level.format.has_coordinates() && !enc.in_aos_buffer(l) {
            let row = bufs.iter().map(|b| b.coordinates[il].as_ref().map_or(0, Vec::len)).max().unwrap_or(0);
            let mut out = Vec::with_capacity(row * bufs.len());
            for b in &bufs {
                let c = b.coordinates[il].as_deref().unwrap_or_default();
                out.extend_from_slice(c);
                out.extend(std::iter::repeat_n(0, row - c.len()));
            }
            coordinates[l] = Some(out);
        }
    }
    let row = bufs.iter().map(|b| b.values.len()).max().unwrap_or(0);
    let mut values = ScalarVec::with_capacity(elem, row * bufs.len());
    let pad = implicit_value(enc);
    for b in &bufs {
        let v = b.values.clone().convert(elem).map_err(|e| SparseError::buffer("values", e.position, e.message))?;
        for i in 0..v.len() {
            values.push_from(&v, i);
        }
        for _ in v.len()..row {
            if !values.push_num(pad) {
                return Err(SparseError::Shape(format!(
                    "the implicit value {pad} does not fit the element type {elem}"
                )));
            }
        }
    }
    assemble_batched(enc, elem, dim_sizes, Buffers { positions, coordinates, values })
}

/// Stores `coo` in batched `enc`: its entries grouped by batch, each group
/// stored in the batch encoding, then joined.
pub fn pack_batched(coo: &Coo, enc: &Encoding, elem: ScalarType) -> Result<SparseTensor> {
    let bt = Batching::of(enc)?.ok_or_else(|| SparseError::Shape("the encoding has no batch level".into()))?;
    if coo.rank() != enc.dim_rank() {
        return Err(SparseError::Shape(format!(
            "the encoding has {} dimensions, the tensor {}",
            enc.dim_rank(),
            coo.rank()
        )));
    }
    let sizes = bt.sizes(&coo.dims);
    let nb = bt.count(&coo.dims)?;
    let inner_sizes = bt.inner_sizes(&coo.dims);
    // Every batch's positions rows have at least the length the dense levels fix.
    let inner_lvl = map::lvl_sizes(&bt.inner, &inner_sizes).map_err(SparseError::Shape)?;
    let fixed = fixed_counts(&bt.inner, &inner_lvl).into_iter().flatten().max().unwrap_or(0);
    super::build::check_alloc((nb as u64).saturating_mul(fixed.saturating_add(1)), "the batches' buffers")?;
    // The entries in batch order (stable: each batch's in the file's order).
    let mut batch_of = Vec::with_capacity(coo.len());
    for e in 0..coo.len() {
        let x = coo.entry(e);
        let mut b = 0u64;
        for (&d, &s) in bt.batch_dims.iter().zip(&sizes) {
            if x[d] >= s {
                return Err(SparseError::Shape(format!(
                    "entry {e}: coordinate {} is outside dimension {d}'s size {s}",
                    x[d]
                )));
            }
            b = b * s + x[d];
        }
        batch_of.push(b as usize);
    }
    let mut order: Vec<usize> = (0..coo.len()).collect();
    order.sort_by_key(|&e| batch_of[e]);
    // Empty batches are all the same tensor: stored once.
    let empty = super::build::pack(&Coo::of_type(inner_sizes.clone(), coo.elem()), &bt.inner, elem)?;
    let mut parts = Vec::with_capacity(nb);
    let mut inner = vec![0u64; inner_sizes.len()];
    let mut next = 0;
    for b in 0..nb {
        let start = next;
        while next < order.len() && batch_of[order[next]] == b {
            next += 1;
        }
        if start == next {
            parts.push(empty.clone());
            continue;
        }
        let mut group = Coo::of_type(inner_sizes.clone(), coo.elem());
        for &e in &order[start..next] {
            for (i, &d) in bt.inner_dims.iter().enumerate() {
                inner[i] = coo.entry(e)[d];
            }
            group.push_from(&inner, &coo.values, e);
        }
        parts.push(super::build::pack(&group, &bt.inner, elem).map_err(|e| match e {
            SparseError::Shape(m) => {
                SparseError::Shape(format!("batch {b}: {}", shift_levels(&m, bt.batch_dims.len())))
            }
            other => other,
        })?);
    }
    join(enc, elem, coo.dims.clone(), &parts)
}

/// The entries of batched `t` as dimension coordinates, batch by batch.
pub fn to_coo(t: &SparseTensor) -> Result<Coo> {
    let bt = Batching::of(&t.encoding)?.ok_or_else(|| SparseError::Shape("the encoding has no batch level".into()))?;
    let sizes = bt.sizes(&t.dim_sizes);
    let mut out = Coo::of_type(t.dim_sizes.clone(), t.elem);
    let mut x = vec![0u64; t.dim_sizes.len()];
    for (b, part) in split(t)?.iter().enumerate() {
        // Batch b's coordinates, row-major over the batch levels.
        let mut rest = b as u64;
        for (&d, &s) in bt.batch_dims.iter().zip(&sizes).rev() {
            x[d] = rest % s;
            rest /= s;
        }
        let coo = part.to_coo();
        for e in 0..coo.len() {
            for (i, &d) in bt.inner_dims.iter().enumerate() {
                x[d] = coo.entry(e)[i];
            }
            out.push_from(&x, &coo.values, e);
        }
    }
    Ok(out)
}

/// Calls `f(level coordinates, position in the values buffer)` for every
/// entry batched `t` stores (padding left out), batch by batch.
pub fn for_each_stored(t: &SparseTensor, f: &mut dyn FnMut(&[u64], usize)) -> Result<()> {
    let k = batch_rank(&t.encoding);
    let parts = split(t)?;
    let row = if parts.is_empty() { 0 } else { t.values.len() / parts.len() };
    let mut lvl = vec![0u64; t.encoding.lvl_rank()];
    for (b, part) in parts.iter().enumerate() {
        let mut rest = b as u64;
        for l in (0..k).rev() {
            lvl[l] = rest % t.lvl_sizes[l];
            rest /= t.lvl_sizes[l];
        }
        part.for_each_stored(&mut |inner, q| {
            lvl[k..].copy_from_slice(inner);
            f(&lvl, b * row + q);
        });
    }
    Ok(())
}

/// The row shape of a batched tensor's buffers, for printing them nested:
/// the batch levels' sizes (empty when `enc` has no batch level).
pub fn row_shape(t: &SparseTensor) -> Vec<u64> {
    t.lvl_sizes[..batch_rank(&t.encoding)].to_vec()
}

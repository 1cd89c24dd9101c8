//! Preparing a compiled kernel's launch and reading its result.
//!
//! Inputs arrive validated (see [`crate::io::bind`]) as [`Value`]s in an
//! [`Env`]. For a [`LoopProgram`] they become flat buffers of records laid out
//! by [`record_layout`] (C struct rules, shared with every backend), the
//! host-side buffers are computed (Σ prefix sums, once per launch), and the
//! output buffer is allocated zeroed. After the kernel ran, [`output_value`]
//! turns the output buffer back into a value of the kernel's result type.

use crate::interp::Env;
use crate::value::{Value, round_float, wrap_int};
use heddle_ir::loops::{
    ArgKind, BinOp, Expr, HostKind, LoopProgram, RecordLayout, ResultLayout, TensorLayout, record_layout,
};
use heddle_ir::{Diagnostic, Name, Nat, ScalarType, Span, Type};
use std::sync::Arc;

/// A flat buffer of records, each aligned to its record (zeroed buffers to 8 bytes).
///
/// Its storage is shared between clones and copied on the first write
/// (`as_mut_ptr`, `bytes_mut`, `write`): an input bound once
/// ([`crate::io::bind::bind_inputs_flat`]) goes into every launch that reads
/// it without a copy.
#[derive(Clone, Debug)]
pub struct Buffer {
    words: Arc<Storage>,
    /// The record's fields.
    pub fields: Vec<ScalarType>,
    /// Their layout.
    pub layout: RecordLayout,
    records: usize,
    /// What a validation established about the records (dropped on any write).
    checked: Option<Arc<Checked>>,
}

/// Facts about a coordinates buffer of one `i64` field, established by the
/// pass that validated it ([`crate::io::bind::compressed_inputs`]), so that
/// later checks of the same facts can be skipped.
#[derive(Debug)]
struct Checked {
    /// Every coordinate lies in `0 .. below`.
    // Read by the CPU backend's range checks only (not built for the fuzz targets).
    #[cfg_attr(not(feature = "cpu"), allow(dead_code))]
    below: u64,
    /// The coordinates strictly increase under each parent of these
    /// positions (their storage, held: a write to the positions copies them,
    /// so the fact then no longer matches).
    sorted_under: Arc<Storage>,
}

impl Buffer {
    /// `records` zeroed records of `fields`, for sizes known to be small;
    /// panics where [`try_zeroed`](Buffer::try_zeroed) would refuse.
    pub fn zeroed(fields: Vec<ScalarType>, records: usize) -> Buffer {
        Buffer::try_zeroed(fields, records, "a buffer").unwrap_or_else(|e| panic!("{e}"))
    }

    /// `records` zeroed records of `fields`, or why not: the byte size
    /// overflows or exceeds [`crate::limits::max_bytes`]. `what` names the
    /// buffer in the error.
    pub fn try_zeroed(fields: Vec<ScalarType>, records: usize, what: &str) -> Result<Buffer, String> {
        let layout = record_layout(&fields);
        let bytes = crate::limits::check_records(what, records as u64, layout.size as u64)?;
        Ok(Buffer {
            words: Arc::new(Storage::Words(crate::pages::Words::zeroed(bytes.div_ceil(8).max(1)))),
            fields,
            layout,
            records,
            checked: None,
        })
    }
    /// Number of records.
    pub fn len(&self) -> usize {
        self.records
    }
    /// No records?
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }
    /// Size in bytes of the records.
    pub fn byte_len(&self) -> usize {
        self.records * self.layout.size
    }
    /// One field of the float type `elem` per record, `records` of them, read
    /// in place from memory the buffer does not own (a numpy array's): no
    /// copy. `None` where the memory is not aligned to `elem`, holds fewer
    /// than 8 bytes, `elem` is not a float or the machine is big-endian
    /// (the caller copies instead). Writing to the buffer copies it first.
    ///
    /// Only floats: a kernel never addresses memory by a float it read, so
    /// memory that another thread changes while a kernel runs (a Python
    /// thread, without the GIL) can give wrong values but never an access
    /// outside a buffer; integers (offsets, coordinates) are validated
    /// before a run and must not change after it.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reading `records * elem.size_bytes()` bytes,
    /// and stay so (neither freed nor moved) as long as the buffer or any
    /// clone of it lives.
    pub unsafe fn borrowed(
        elem: ScalarType,
        ptr: *const u8,
        records: usize,
        what: &str,
    ) -> Result<Option<Buffer>, String> {
        let size = elem.size_bytes();
        if !elem.is_float()
            || cfg!(target_endian = "big")
            || !(ptr as usize).is_multiple_of(size)
            || records.saturating_mul(size) < 8
        {
            return Ok(None);
        }
        let layout = record_layout(&[elem]);
        crate::limits::check_records(what, records as u64, layout.size as u64)?;
        debug_assert_eq!(layout.size, size, "a one-field record is its field");
        Ok(Some(Buffer {
            words: Arc::new(Storage::Borrowed(Borrowed { ptr, bytes: records * size })),
            fields: vec![elem],
            layout,
            records,
            checked: None,
        }))
    }

    /// One field of the integer type `elem` per record, `records` of them,
    /// read in place from memory the buffer does not own (scipy's `int32` or
    /// `int64` indices): no copy. `None` where the memory is not aligned to
    /// `elem`, holds fewer than 8 bytes, `elem` is not an integer or the
    /// machine is big-endian (the caller copies instead).
    ///
    /// Unlike floats, integers may address memory: only for coordinates
    /// that a kernel checks at every use, that is code compiled with the
    /// checks the program's ranges imply kept (`Options::default()`, never
    /// `trust_ranges`). Another thread may write the memory while the kernel
    /// runs; a check then fails, nothing is read out of bounds. The launch
    /// never takes such a buffer for validated: it carries no
    /// [`Checked`] facts, and `cpu::Ready` refuses to trust the ranges of a
    /// launch that holds one. Never for positions (offsets), which kernels
    /// use unchecked: copy those, then validate the copy.
    ///
    /// # Safety
    ///
    /// As for [`Buffer::borrowed`].
    pub unsafe fn borrowed_coordinates(
        elem: ScalarType,
        ptr: *const u8,
        records: usize,
        what: &str,
    ) -> Result<Option<Buffer>, String> {
        let size = elem.size_bytes();
        if !elem.is_int()
            || cfg!(target_endian = "big")
            || !(ptr as usize).is_multiple_of(size)
            || records.saturating_mul(size) < 8
        {
            return Ok(None);
        }
        let layout = record_layout(&[elem]);
        crate::limits::check_records(what, records as u64, layout.size as u64)?;
        Ok(Some(Buffer {
            words: Arc::new(Storage::Borrowed(Borrowed { ptr, bytes: records * size })),
            fields: vec![elem],
            layout,
            records,
            checked: None,
        }))
    }

    /// Records that a validating pass found this buffer's coordinates (one
    /// `i64` field) all in `0 .. below` and strictly increasing under each
    /// parent of `positions`. Crate-internal: only a pass that checked
    /// exactly this may say so.
    pub(crate) fn with_checked_coordinates(mut self, below: u64, positions: &Buffer) -> Buffer {
        self.checked = Some(Arc::new(Checked { below, sorted_under: positions.words.clone() }));
        self
    }

    /// Whether a validating pass found every coordinate below `below` (see
    /// [`with_checked_coordinates`](Buffer::with_checked_coordinates)).
    #[cfg_attr(not(feature = "cpu"), allow(dead_code))]
    pub(crate) fn known_below(&self, below: u64) -> bool {
        self.fields.as_slice() == [ScalarType::I64] && self.checked.as_ref().is_some_and(|c| c.below <= below)
    }

    /// Whether a validating pass found the coordinates strictly increasing
    /// under each parent of `positions` (these very positions, unchanged).
    pub(crate) fn known_sorted_under(&self, positions: &Buffer) -> bool {
        self.fields.as_slice() == [ScalarType::I64]
            && positions.fields.as_slice() == [ScalarType::I64]
            && self.checked.as_ref().is_some_and(|c| Arc::ptr_eq(&c.sorted_under, &positions.words))
    }

    /// A zeroed output of one field of `elem` per record, `records` of them,
    /// written in place in memory the buffer does not own (a fresh numpy
    /// array's), so the result needs no copy and its pages are touched
    /// once. `None` where the memory is not aligned to `elem`, holds fewer
    /// than 8 bytes, or the machine is big-endian (the caller allocates
    /// instead). While the buffer is the only one holding the memory, writes
    /// go to it; a write through a clone that shares it copies first, as
    /// for any storage, so [`Buffer::writes_in_place_at`] tells afterwards
    /// whether the records are still there.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reading and writing `records *
    /// elem.size_bytes()` bytes, all zero, and nothing else may read or
    /// write them as long as the buffer or any clone of it lives.
    pub unsafe fn lent_output(
        elem: ScalarType,
        ptr: *mut u8,
        records: usize,
        what: &str,
    ) -> Result<Option<Buffer>, String> {
        let size = elem.size_bytes();
        if cfg!(target_endian = "big") || !(ptr as usize).is_multiple_of(size) || records.saturating_mul(size) < 8 {
            return Ok(None);
        }
        let layout = record_layout(&[elem]);
        crate::limits::check_records(what, records as u64, layout.size as u64)?;
        debug_assert_eq!(layout.size, size, "a one-field record is its field");
        Ok(Some(Buffer {
            words: Arc::new(Storage::Lent(Lent { ptr, bytes: records * size })),
            fields: vec![elem],
            layout,
            records,
            checked: None,
        }))
    }

    /// Whether the records live in the lent memory at `ptr`
    /// ([`Buffer::lent_output`]), not in a copy made on a shared write.
    pub fn writes_in_place_at(&self, ptr: *const u8) -> bool {
        matches!(&*self.words, Storage::Lent(l) if std::ptr::eq(l.ptr.cast_const(), ptr))
    }

    /// Whether the buffer reads memory it does not own ([`Buffer::borrowed`]).
    pub fn is_borrowed(&self) -> bool {
        matches!(*self.words, Storage::Borrowed(_))
    }

    /// The first byte (valid for [`byte_len`](Buffer::byte_len) bytes, and
    /// for at least 8 when that is less).
    pub fn as_ptr(&self) -> *const u8 {
        match &*self.words {
            Storage::Words(w) => w.as_ptr().cast(),
            Storage::Scalars(v) => crate::with_values!(v, x => x.as_ptr().cast()),
            Storage::Borrowed(b) => b.ptr,
            Storage::Lent(l) => l.ptr.cast_const(),
        }
    }
    /// The first byte, writable (the storage is copied first if a clone
    /// shares it, or if it is borrowed).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        // The records may change: what a validation found no longer holds.
        self.checked = None;
        if let Storage::Lent(l) = &*self.words {
            // The only holder writes in place (`lent_output`'s contract: no
            // one else touches the memory meanwhile).
            if Arc::strong_count(&self.words) == 1 {
                return l.ptr;
            }
        }
        let elsewhere = match &*self.words {
            Storage::Borrowed(b) => Some((b.ptr, b.bytes)),
            Storage::Lent(l) => Some((l.ptr.cast_const(), l.bytes)),
            Storage::Words(_) | Storage::Scalars(_) => None,
        };
        if let Some((ptr, len)) = elsewhere {
            // SAFETY: `borrowed`'s (`lent_output`'s) contract: `ptr` is valid for `len` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
            let mut words = crate::pages::Words::zeroed(len.div_ceil(8).max(1));
            // SAFETY: `words` holds at least `bytes.len()` bytes; the two do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), words.as_mut_ptr().cast::<u8>(), bytes.len()) };
            self.words = Arc::new(Storage::Words(words));
        }
        match Arc::make_mut(&mut self.words) {
            Storage::Words(w) => w.as_mut_ptr().cast(),
            Storage::Scalars(v) => crate::with_values!(v, x => x.as_mut_ptr().cast()),
            Storage::Borrowed(_) | Storage::Lent(_) => unreachable!("copied above"),
        }
    }
    /// Whether `other` is a clone sharing this buffer's storage.
    pub fn shares_storage(&self, other: &Buffer) -> bool {
        Arc::ptr_eq(&self.words, &other.words)
    }

    /// One field of scalar type `elem` per record, from `data` (whose
    /// elements must already be of that type: the caller converts).
    pub fn from_scalars(data: &crate::scalars::ScalarVec, what: &str) -> Result<Buffer, String> {
        let elem = data.elem();
        let mut buf = Buffer::try_zeroed(vec![elem], data.len(), what)?;
        debug_assert_eq!(buf.layout.size, elem.size_bytes(), "a one-field record is its field");
        data.write_le_into(buf.bytes_mut());
        Ok(buf)
    }

    /// One field of the scalar type of `data` per record, holding `data`
    /// itself: no copy (on a little-endian machine, where its memory is the
    /// records' bytes; elsewhere, and for fewer than 8 bytes, a copy).
    pub fn from_scalar_vec(data: crate::scalars::ScalarVec, what: &str) -> Result<Buffer, String> {
        let elem = data.elem();
        if cfg!(target_endian = "big") || data.len() * elem.size_bytes() < 8 {
            return Buffer::from_scalars(&data, what);
        }
        let layout = record_layout(&[elem]);
        crate::limits::check_records(what, data.len() as u64, layout.size as u64)?;
        debug_assert_eq!(layout.size, elem.size_bytes(), "a one-field record is its field");
        let records = data.len();
        Ok(Buffer { words: Arc::new(Storage::Scalars(data)), fields: vec![elem], layout, records, checked: None })
    }

    /// The same records read as `fields`, sharing the storage: where `fields`
    /// are this buffer's with each complex field split into its two parts
    /// (lowering sees a complex number as a pair, `rewrite::lower::complex`)
    /// at the same byte offsets. `None` where the layouts differ.
    pub fn with_fields(&self, fields: &[ScalarType]) -> Option<Buffer> {
        if self.fields.as_slice() == fields {
            return Some(self.clone());
        }
        let mut split = Vec::with_capacity(fields.len());
        let mut offsets = Vec::with_capacity(fields.len());
        for (f, at) in self.fields.iter().zip(&self.layout.offsets) {
            if f.is_complex() {
                split.extend([f.part(); 2]);
                offsets.extend([*at, at + f.part().size_bytes()]);
            } else {
                split.push(*f);
                offsets.push(*at);
            }
        }
        let layout = record_layout(fields);
        if split != fields || layout.offsets != offsets || layout.size != self.layout.size {
            return None;
        }
        Some(Buffer { words: self.words.clone(), fields: split, layout, records: self.records, checked: None })
    }

    /// The records as a slice of `i64`, for a buffer of one `i64` field.
    pub fn as_i64s(&self) -> Option<&[i64]> {
        // The records are little-endian bytes: native integers only on a little-endian machine.
        if self.fields.as_slice() != [ScalarType::I64] || cfg!(target_endian = "big") {
            return None;
        }
        // SAFETY: one `i64` field per record: the records are `records`
        // consecutive 8-byte integers, and the storage (`u64` words, or a
        // vector of `i64`) is aligned to 8 bytes; `bytes` holds them all.
        Some(unsafe { std::slice::from_raw_parts(self.as_ptr().cast::<i64>(), self.records) })
    }

    /// [`as_i64s`](Buffer::as_i64s), writable (copied first if shared).
    pub fn as_mut_i64s(&mut self) -> Option<&mut [i64]> {
        if self.fields.as_slice() != [ScalarType::I64] || cfg!(target_endian = "big") {
            return None;
        }
        let n = self.records;
        let p = self.as_mut_ptr().cast::<i64>();
        // SAFETY: as in `as_i64s`; `&mut self` and `as_mut_ptr`'s copy on
        // write make the access unique.
        Some(unsafe { std::slice::from_raw_parts_mut(p, n) })
    }

    /// Field 0 of record `record` as an integer, for single-field integer buffers.
    pub fn int_at(&self, record: usize) -> Option<i64> {
        let &[s] = self.fields.as_slice() else { return None };
        if record >= self.records || !s.is_int() {
            return None;
        }
        let u = self.bits(record, 0);
        let shift = 64 - 8 * s.size_bytes() as u32;
        Some(if s.is_signed() { ((u << shift) as i64) >> shift } else { u as i64 })
    }

    /// The records as values: scalars, or tuples of a record's fields.
    pub fn to_values(&self) -> Vec<Value> {
        (0..self.records)
            .map(|r| {
                if self.fields.len() == 1 {
                    self.read(r, 0)
                } else {
                    Value::tuple((0..self.fields.len()).map(|f| self.read(r, f)).collect())
                }
            })
            .collect()
    }
    /// The records' bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the storage holds at least `byte_len` initialised bytes (a
        // scalar vector's elements have no padding; borrowed memory is valid
        // for them by `borrowed`'s contract); u8 has no alignment needs.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.byte_len()) }
    }
    /// The records' bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let n = self.byte_len();
        // SAFETY: as in `bytes`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), n) }
    }

    fn at(&self, record: usize, field: usize) -> usize {
        record * self.layout.size + self.layout.offsets[field]
    }

    /// Field `field` of record `record`.
    pub fn read(&self, record: usize, field: usize) -> Value {
        let s = self.fields[field];
        if s.is_complex() {
            // Two parts, real first (no loop program has complex fields, but
            // a buffer bound from a complex array has).
            let (at, part) = (self.at(record, field), s.part().size_bytes());
            let part_at = |k: usize| self.part_bits(at + k * part, part);
            return match s {
                ScalarType::C32 => {
                    Value::complex(f32::from_bits(part_at(0) as u32) as f64, f32::from_bits(part_at(1) as u32) as f64)
                }
                _ => Value::complex(f64::from_bits(part_at(0)), f64::from_bits(part_at(1))),
            };
        }
        let u = self.bits(record, field);
        match s {
            ScalarType::Bool => Value::Bool(u != 0),
            ScalarType::F16 => Value::Float(half::f16::from_bits(u as u16).to_f64()),
            ScalarType::BF16 => Value::Float(half::bf16::from_bits(u as u16).to_f64()),
            ScalarType::F32 => Value::Float(f32::from_bits(u as u32) as f64),
            ScalarType::F64 => Value::Float(f64::from_bits(u)),
            ScalarType::I8 | ScalarType::I16 | ScalarType::I32 | ScalarType::I64 => {
                let shift = 64 - 8 * s.size_bytes() as u32;
                Value::Int(((u << shift) as i64) >> shift)
            }
            _ => Value::Int(u as i64),
        }
    }

    /// The bits of field `field` of record `record`, zero-extended.
    fn bits(&self, record: usize, field: usize) -> u64 {
        self.part_bits(self.at(record, field), self.fields[field].size_bytes())
    }

    /// The `size` (at most 8) bytes at byte `at`, zero-extended.
    fn part_bits(&self, at: usize, size: usize) -> u64 {
        let b = self.bytes();
        assert!(at + size <= b.len(), "byte {at} of a buffer of {} records", self.records);
        // SAFETY: `at + size` is within the buffer's bytes (asserted above).
        unsafe {
            let p = b.as_ptr().add(at);
            u64::from_le(match size {
                8 => p.cast::<u64>().read_unaligned(),
                4 => u64::from(p.cast::<u32>().read_unaligned()),
                2 => u64::from(p.cast::<u16>().read_unaligned()),
                _ => u64::from(p.read()),
            })
        }
    }

    /// Sets field `field` of record `record`.
    pub fn write(&mut self, record: usize, field: usize, v: &Value) {
        let s = self.fields[field];
        let at = self.at(record, field);
        if let (Value::Complex(z), true) = (v, s.is_complex()) {
            let part = s.part().size_bytes();
            for (k, x) in [z.re, z.im].into_iter().enumerate() {
                let bits = if part == 4 { u64::from((x as f32).to_bits()) } else { x.to_bits() };
                self.bytes_mut()[at + k * part..at + (k + 1) * part].copy_from_slice(&bits.to_le_bytes()[..part]);
            }
            return;
        }
        let bits: u64 = match (v, s) {
            (Value::Float(x), ScalarType::F32) => (*x as f32).to_bits() as u64,
            (Value::Float(x), ScalarType::F16) => u64::from(heddle_ir::rounding::f16_of_f64(*x).to_bits()),
            (Value::Float(x), ScalarType::BF16) => u64::from(heddle_ir::rounding::bf16_of_f64(*x).to_bits()),
            (Value::Float(x), _) => x.to_bits(),
            (Value::Int(x), _) => *x as u64,
            (Value::Bool(b), _) => *b as u64,
            _ => 0,
        };
        let n = s.size_bytes();
        self.bytes_mut()[at..at + n].copy_from_slice(&bits.to_le_bytes()[..n]);
    }
}

/// A buffer's memory.
#[derive(Clone, Debug)]
enum Storage {
    /// Records laid out by [`record_layout`], in 8-byte words (at least one;
    /// a large buffer on transparent huge pages, [`crate::pages`]).
    Words(crate::pages::Words),
    /// Records of one scalar field, in the vector they were given in
    /// (aligned to the scalar; at least 8 bytes).
    Scalars(crate::scalars::ScalarVec),
    /// Records of one float field in memory owned elsewhere ([`Buffer::borrowed`]).
    Borrowed(Borrowed),
    /// An output's records written in place in memory owned elsewhere
    /// ([`Buffer::lent_output`]).
    Lent(Lent),
}

/// Memory a buffer reads but does not own.
#[derive(Clone, Debug)]
struct Borrowed {
    ptr: *const u8,
    bytes: usize,
}

// SAFETY: `Buffer::borrowed`'s contract keeps the memory valid for as long as
// any buffer reads it, from any thread; it is only read (a write copies it
// first, `as_mut_ptr`).
unsafe impl Send for Borrowed {}
// SAFETY: as for `Send`: shared references only read.
unsafe impl Sync for Borrowed {}

/// Memory an output is written to in place but that the buffer does not own.
/// Cloning it (only `Arc::make_mut` would, and `as_mut_ptr` copies a shared
/// one before that) would alias the memory.
#[derive(Clone, Debug)]
struct Lent {
    ptr: *mut u8,
    bytes: usize,
}

// SAFETY: `Buffer::lent_output`'s contract: the memory stays valid, and only
// this buffer's holders touch it, from whichever thread holds them; writes
// need `&mut Buffer` and are in place only while one holder is left.
unsafe impl Send for Lent {}
// SAFETY: as for `Send`: shared references only read.
unsafe impl Sync for Lent {}

/// One kernel argument, ready to pass.
#[derive(Clone, Debug)]
pub enum Slot {
    /// A natural.
    Nat(i64),
    /// An integer scalar of this type.
    Int(i64, ScalarType),
    /// A float scalar of this type.
    Float(f64, ScalarType),
    /// A boolean.
    Bool(bool),
    /// A buffer (an input, a host buffer or the output).
    Buffer(Buffer),
}

/// The arguments of one launch, one slot per [`LoopProgram::args`] entry.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The slots, in argument order.
    pub slots: Vec<Slot>,
}

impl Launch {
    /// The buffer in slot `k`, if it is one.
    pub fn buffer(&self, k: usize) -> Option<&Buffer> {
        match self.slots.get(k) {
            Some(Slot::Buffer(b)) => Some(b),
            _ => None,
        }
    }
    /// The output buffer.
    pub fn output<'a>(&'a self, prog: &LoopProgram) -> Option<&'a Buffer> {
        let k = prog.args.iter().position(|a| matches!(a.kind, ArgKind::Output { .. }))?;
        self.buffer(k)
    }
}

fn fail(span: Span, msg: String) -> Diagnostic {
    Diagnostic::new(span, msg).with_label("while preparing the kernel's launch")
}

fn eval_len(n: &Nat, env: &Env, what: &str) -> Result<usize, Diagnostic> {
    let v = n.eval(env).map_err(|e| fail(Span::DUMMY, format!("cannot compute the length of {what} ({n}): {e}")))?;
    usize::try_from(v).map_err(|_| fail(Span::DUMMY, format!("the length of {what} ({n}) is {v}, which is negative")))
}

fn zeroed(fields: Vec<ScalarType>, records: usize, what: &str) -> Result<Buffer, Diagnostic> {
    Buffer::try_zeroed(fields, records, what).map_err(|m| fail(Span::DUMMY, m))
}

/// Marshals the inputs, computes host buffers and allocates the output.
/// Every buffer's size is checked ([`crate::limits`]) before it is allocated.
pub fn prepare(prog: &LoopProgram, env: &Env) -> Result<Launch, Diagnostic> {
    let mut slots = Vec::with_capacity(prog.args.len());
    for arg in &prog.args {
        let name = &arg.name;
        slots.push(match &arg.kind {
            ArgKind::Nat => match prog.host.iter().find(|h| &h.name == name).map(|h| &h.kind) {
                Some(HostKind::Largest { ranges, body }) => Slot::Nat(largest(name, ranges, body, env)?),
                _ => Slot::Nat(env.nat(name).ok_or_else(|| fail(Span::DUMMY, format!("no value for the natural `{name}`")))?),
            },
            ArgKind::Scalar(s) => match lookup(env, name) {
                Some(Value::Int(v)) => Slot::Int(v, *s),
                Some(Value::Float(v)) => Slot::Float(v, *s),
                Some(Value::Bool(b)) => Slot::Bool(b),
                _ => return Err(fail(Span::DUMMY, format!("no scalar value for `{name}`"))),
            },
            ArgKind::Input { fields, len } if let Some(buf) = env.buffer(name).and_then(|b| b.with_fields(fields)) => {
                // Bound flat (`bind_inputs_flat`): shared, not copied (complex
                // numbers read as the pairs of parts the program wants).
                let expected = eval_len(len, env, &format!("`{name}`"))?;
                if buf.len() != expected {
                    return Err(fail(Span::DUMMY, format!("`{name}` has {} records, its layout needs {expected}", buf.len())));
                }
                Slot::Buffer(buf)
            }
            ArgKind::Input { fields, len } => {
                let value = lookup(env, name).ok_or_else(|| fail(Span::DUMMY, format!("no value for the input `{name}`")))?;
                let mut items = Vec::new();
                value.flatten_into(&mut items);
                let expected = eval_len(len, env, &format!("`{name}`"))?;
                if items.len() != expected {
                    return Err(fail(Span::DUMMY, format!("`{name}` has {} records, its layout needs {expected}", items.len())));
                }
                let mut buf = zeroed(fields.clone(), items.len(), &format!("the input `{name}`"))?;
                for (r, item) in items.iter().enumerate() {
                    // A tuple's leaves, nested tuples included, are the record's fields in order.
                    let mut leaves = Vec::with_capacity(fields.len());
                    record_leaves(item, &mut leaves);
                    leaves.iter().enumerate().for_each(|(f, v)| buf.write(r, f, v));
                }
                Slot::Buffer(buf)
            }
            ArgKind::Host => {
                let host = prog.host.iter().find(|h| &h.name == name).ok_or_else(|| fail(Span::DUMMY, format!("no host computation for `{name}`")))?;
                let HostKind::PrefixSum { var, body, count, flat } = &host.kind else {
                    return Err(fail(Span::DUMMY, format!("`{name}` is a host buffer but its computation is not a prefix sum")));
                };
                let n = eval_len(count, env, &format!("the prefix sum `{name}`"))?;
                // Inputs read by flat record position: bound to their records in order.
                let mut flat_env = None;
                for a in flat {
                    if env.buffer(a).is_some() {
                        continue; // Already its records in order.
                    }
                    let value = lookup(env, a).ok_or_else(|| fail(Span::DUMMY, format!("no value for the input `{a}`")))?;
                    let mut records = Vec::new();
                    value.flatten_into(&mut records);
                    flat_env = Some(flat_env.as_ref().unwrap_or(env).with_value(a.clone(), Value::array(records)));
                }
                let env = flat_env.as_ref().unwrap_or(env);
                let mut buf = zeroed(vec![ScalarType::I64], n.saturating_add(1), &format!("the prefix sum `{name}`"))?;
                let terms = match body {
                    Nat::ToNat(e) => env.lookups(e, var).and_then(|xs| xs.get(..n)),
                    _ => None,
                };
                if let (Some(terms), Some(sums)) = (terms, buf.as_mut_i64s()) {
                    // The usual prefix sum (`toNat(count@j)`, `toNat(len@j)`), straight off the buffer.
                    let mut total: i64 = 0;
                    for (j, &term) in terms.iter().enumerate() {
                        total = total.checked_add(term).ok_or_else(|| fail(Span::DUMMY, format!("`{name}` overflows")))?;
                        sums[j + 1] = total;
                    }
                } else {
                    let mut total: i64 = 0;
                    let mut bound = Vec::with_capacity(1);
                    for j in 0..n {
                        bound.push((var.clone(), j as i64));
                        let term = body.eval_with(env, &mut bound).map_err(|e| fail(Span::DUMMY, format!("computing the prefix sum `{name}` before the launch: {e} (an input is shorter than the kernel reads it)")))?;
                        bound.pop();
                        total = total.checked_add(term).ok_or_else(|| fail(Span::DUMMY, format!("`{name}` overflows")))?;
                        buf.write(j + 1, 0, &Value::Int(total));
                    }
                }
                Slot::Buffer(buf)
            }
            ArgKind::Output { fields, len } => Slot::Buffer(zeroed(fields.clone(), eval_len(len, env, "the result")?, "the result")?),
        });
    }
    Ok(Launch { slots })
}

/// The natural `name` ([`HostKind::Largest`]): the largest `body` as the
/// `ranges`' variables run over theirs, 0 where none does. A body that reads
/// one flat `i64` input at the variable (`toNat(len@i)`) or the difference
/// of two neighbours (`toNat(o@(i + 1) - o@i)`, a nested input's offsets)
/// is read straight off the buffer; any other is evaluated term by term.
fn largest(name: &Name, ranges: &[(Name, Nat)], body: &Nat, env: &Env) -> Result<i64, Diagnostic> {
    if let ([(var, count)], Nat::ToNat(e)) = (ranges, body) {
        let n = eval_len(count, env, &format!("the range of `{var}` in the bound `{name}`"))?;
        if let Some(terms) = env.lookups(e, var).and_then(|xs| xs.get(..n)) {
            return Ok(terms.iter().copied().max().unwrap_or(0).max(0));
        }
        if let Some(offsets) = neighbour_difference(e, var)
            .and_then(|o| env.buffer(o))
            .and_then(|b| b.as_i64s())
            .and_then(|xs| xs.get(..n.checked_add(1)?))
        {
            return Ok(offsets.windows(2).map(|w| w[1].saturating_sub(w[0])).max().unwrap_or(0).max(0));
        }
    }
    // Inputs bound flat are read here as values, once rather than per term.
    let mut values = env.clone();
    for x in nat_names(body).iter().chain(ranges.iter().flat_map(|(_, n)| nat_names(n)).collect::<Vec<_>>().iter()) {
        if let Some(b) = env.buffer(x) {
            values = values.with_value(x.clone(), Value::array(b.to_values()));
        }
    }
    let mut best = 0i64;
    let mut bound = Vec::with_capacity(ranges.len());
    largest_over(name, ranges, body, &values, &mut bound, &mut best)?;
    Ok(best)
}

/// [`largest`] over `ranges` with `bound` fixed, into `best`.
fn largest_over(
    name: &Name,
    ranges: &[(Name, Nat)],
    body: &Nat,
    env: &Env,
    bound: &mut Vec<(Name, i64)>,
    best: &mut i64,
) -> Result<(), Diagnostic> {
    let computing = |e: heddle_ir::nat::NatEvalError| {
        fail(
            Span::DUMMY,
            format!(
                "computing the bound `{name}` before the launch: {e} (an input is shorter than the kernel reads it)"
            ),
        )
    };
    let Some(((var, count), rest)) = ranges.split_first() else {
        *best = (*best).max(body.eval_with(env, bound).map_err(computing)?);
        return Ok(());
    };
    let n = count.eval_with(env, bound).map_err(computing)?;
    for j in 0..n.max(0) {
        bound.push((var.clone(), j));
        largest_over(name, rest, body, env, bound, best)?;
        bound.pop();
    }
    Ok(())
}

/// `o` where `e` is `o@(var + 1) - o@var`.
fn neighbour_difference<'a>(e: &'a heddle_ir::Expr, var: &Name) -> Option<&'a Name> {
    use heddle_ir::expr::{BinOp as B, ExprKind as K, Literal};
    let K::Binary { op: B::Sub, lhs, rhs } = &e.kind else { return None };
    let (K::Index { array: a, index: i }, K::Index { array: b, index: j }) = (&lhs.kind, &rhs.kind) else {
        return None;
    };
    let (K::Var(a), K::Var(b), K::Var(j)) = (&a.kind, &b.kind, &j.kind) else { return None };
    let K::Binary { op: B::Add, lhs: i, rhs: one } = &i.kind else { return None };
    let (K::Var(i), K::Lit(Literal::Int(1))) = (&i.kind, &one.kind) else { return None };
    (a == b && i == var && j == var).then_some(a)
}

/// The names a natural mentions (its `toNat`s' included).
fn nat_names(n: &Nat) -> Vec<Name> {
    fn expr(e: &heddle_ir::Expr, out: &mut Vec<Name>) {
        match &e.kind {
            heddle_ir::expr::ExprKind::Var(x) => out.push(x.clone()),
            heddle_ir::expr::ExprKind::NatValue(n) => nat(n, out),
            _ => e.for_each_child(&mut |c| expr(c, out)),
        }
    }
    fn nat(n: &Nat, out: &mut Vec<Name>) {
        match n {
            Nat::Var(x) => out.push(x.clone()),
            Nat::ToNat(e) => expr(e, out),
            _ => n.for_each_child(&mut |c| nat(c, out)),
        }
    }
    let mut out = Vec::new();
    nat(n, &mut out);
    out.sort();
    out.dedup();
    out
}

/// Runs the counting phases of `prog` (count → allocate → fill, see
/// `heddle_ir::nat::counted`) in order, each with `run` (given the phase's
/// index, program and prepared launch), and returns `env` with every count
/// array bound: what [`prepare`] and [`output_value`] of `prog` need.
pub fn run_counts(
    prog: &LoopProgram,
    env: &Env,
    run: &mut dyn FnMut(usize, &LoopProgram, &mut Launch) -> Result<(), Diagnostic>,
) -> Result<Env, Diagnostic> {
    let mut env = env.clone();
    for (k, phase) in prog.counts.iter().enumerate() {
        let mut launch = prepare(&phase.program, &env)?;
        run(k, &phase.program, &mut launch)?;
        if let ([_], Some(out)) = (phase.shape.as_slice(), launch.output(&phase.program))
            && let Some(counts) = out.as_i64s()
        {
            // One count per row: the output buffer itself is the count array
            // (read in place by the fill's sizes and passed to it uncopied).
            if let Some((r, bad)) = counts.iter().enumerate().find(|(_, c)| **c < 0) {
                return Err(fail(
                    Span::DUMMY,
                    format!("the counting phase of `{}` produced {bad} (row {r})", phase.name),
                ));
            }
            env = env.with_buffer(phase.name.clone(), out.clone());
            continue;
        }
        let ty = phase.shape.iter().rev().fold(Type::Scalar(ScalarType::I64), |t, n| Type::array(t, n.clone()));
        let counts = output_value(&phase.program, &launch, &ty, &env)?;
        let mut flat = Vec::new();
        counts.flatten_into(&mut flat);
        if let Some(bad) = flat.iter().find(|v| v.as_int().is_none_or(|c| c < 0)) {
            return Err(fail(Span::DUMMY, format!("the counting phase of `{}` produced {bad}", phase.name)));
        }
        env = env.with_value(phase.name.clone(), counts);
    }
    Ok(env)
}

/// A kernel parameter's value; a tuple parameter `p` is passed as `p_1`,
/// `p_2`, … (a nested tuple's as `p_1_1`, …), and a complex one as its real
/// and imaginary parts, `p_1` and `p_2`.
fn lookup(env: &Env, name: &Name) -> Option<Value> {
    if let Some(v) = env.value(name) {
        return Some(v.clone());
    }
    if let Some(b) = env.buffer(name) {
        // A flat input the program wants at other fields: its records, converted below.
        return Some(Value::array(b.to_values()));
    }
    component(env, name)
}

/// Component `k` of the value of the tuple or complex parameter `p`, for
/// the name `p_k` (`p_j_k`: component `k` of component `j`).
fn component(env: &Env, name: &Name) -> Option<Value> {
    let (base, k) = name.as_str().rsplit_once('_')?;
    let k: usize = k.parse().ok()?;
    let base = Name::from(base);
    match env.value(&base).cloned().or_else(|| component(env, &base))? {
        Value::Tuple(items) => items.get(k.checked_sub(1)?).cloned(),
        Value::Complex(z) => [z.re, z.im].get(k.checked_sub(1)?).map(|&x| Value::Float(x)),
        _ => None,
    }
}

/// The kernel's result, read from its output buffers (see
/// [`LoopProgram::result`]): a value of `result_ty`.
pub fn output_value(prog: &LoopProgram, launch: &Launch, result_ty: &Type, env: &Env) -> Result<Value, Diagnostic> {
    match &prog.result {
        Some(layout) => read_layout(prog, launch, layout, env),
        None => {
            let out = launch.output(prog).ok_or_else(|| fail(Span::DUMMY, "the kernel has no output buffer".into()))?;
            read_flat(out, result_ty, env)
        }
    }
}

/// The buffer of the argument named `name`.
fn buffer_named<'a>(prog: &LoopProgram, launch: &'a Launch, name: &Name) -> Result<&'a Buffer, Diagnostic> {
    let k = prog.args.iter().position(|a| &a.name == name);
    k.and_then(|k| launch.buffer(k)).ok_or_else(|| fail(Span::DUMMY, format!("the kernel has no output `{name}`")))
}

fn read_flat(out: &Buffer, ty: &Type, env: &Env) -> Result<Value, Diagnostic> {
    let mut pos = 0;
    let v = unflatten(ty, out, &mut pos, env)?;
    if pos != out.len() {
        return Err(fail(Span::DUMMY, format!("the result uses {pos} of the output's {} records", out.len())));
    }
    Ok(v)
}

fn read_layout(prog: &LoopProgram, launch: &Launch, layout: &ResultLayout, env: &Env) -> Result<Value, Diagnostic> {
    match layout {
        ResultLayout::Flat { buf, ty } => read_flat(buffer_named(prog, launch, buf)?, ty, env),
        ResultLayout::Tuple(parts) => {
            Ok(Value::tuple(parts.iter().map(|p| read_layout(prog, launch, p, env)).collect::<Result<_, _>>()?))
        }
        ResultLayout::Tensor(t) => read_tensor(prog, launch, t, env),
    }
}

/// A stored tensor: positions from the lists' lengths, entries from the outputs.
fn read_tensor(prog: &LoopProgram, launch: &Launch, t: &TensorLayout, env: &Env) -> Result<Value, Diagnostic> {
    let (plan, span) = (&t.plan, t.span);
    let size = |n: &Nat, what: &str| eval_len(n, env, what);
    let dims = plan
        .dims
        .iter()
        .map(|n| size(n, "a dimension of the stored tensor").map(|v| v as u64))
        .collect::<Result<Vec<_>, _>>()?;
    let lvl_sizes = heddle_ir::encoding::map::lvl_sizes(&plan.encoding, &dims).map_err(|m| fail(span, m))?;
    // The kernel wrote coordinates at crdWidth, checked below each level's size.
    let crd_max = plan.encoding.crd_width.max_value();
    if let Some((l, n)) = lvl_sizes
        .iter()
        .enumerate()
        .find(|(l, n)| plan.encoding.levels[*l].format.has_coordinates() && **n > 0 && **n - 1 > crd_max)
    {
        return Err(fail(
            span,
            format!(
                "level {l} of the stored tensor has size {n}, whose coordinates do not fit the encoding's crdWidth ({} bits)",
                plan.encoding.crd_width.storage_bits()
            ),
        ));
    }
    let dense: Vec<(usize, Option<Name>)> = plan
        .dense_prefix()
        .iter()
        .map(|(n, b)| size(n, "a dense level of the stored tensor").map(|v| (v, b.clone())))
        .collect::<Result<_, _>>()?;
    let lens: Vec<usize> = dense.iter().map(|(n, _)| *n).collect();
    let positions: usize = lens.iter().product();
    let (counts, rooms) = match (&t.list_len, &t.bounded) {
        (None, _) => (vec![1; positions], None),
        (Some(_), Some(bounded)) => {
            let (counts, rooms) = bounded_lists(prog, launch, bounded, positions, span)?;
            (counts, Some(rooms))
        }
        (Some(len), None) => (list_lengths(len, &dense, env)?, None),
    };
    // The records holding entries, in storage order: every record, or each
    // list's first `count` records of its room.
    let records = |len: usize| -> Box<dyn Iterator<Item = usize> + '_> {
        match &rooms {
            None => Box::new(0..len),
            Some(starts) => Box::new(starts.iter().zip(&counts).flat_map(|(&start, &n)| start..start + n as usize)),
        }
    };
    let mut entries = crate::sparse::result::Entries::default();
    for (buf, field) in &t.coordinates {
        let b = buffer_named(prog, launch, buf)?;
        let crd = records(b.len()).map(|r| b.read(r, *field as usize).as_int().map_or(0, |c| c as u64)).collect();
        entries.coordinates.push(crd);
    }
    let values = buffer_named(prog, launch, &t.values)?;
    let block = match &rooms {
        Some(_) => eval_len(&plan.block_len(), env, "a stored entry's block")?,
        None => 1,
    };
    entries.values = crate::scalars::ScalarVec::with_capacity(plan.elem, values.len());
    // Complex values are two fields, their parts (lowering sees pairs).
    let parts = plan.elem.is_complex() && values.fields.len() == 2;
    let value_records: Box<dyn Iterator<Item = usize> + '_> = match &rooms {
        None => Box::new(0..values.len()),
        Some(_) if block == 1 => records(0),
        // A block of `block` values per entry (trailing dense levels).
        Some(_) => Box::new(records(0).flat_map(move |e| e * block..(e + 1) * block)),
    };
    for r in value_records {
        let v = if parts { complex_of(values.read(r, 0), values.read(r, 1)) } else { values.read(r, 0) };
        let fits = crate::scalars::Num::of_value(&v, plan.elem).is_some_and(|n| entries.values.push_num(n));
        if !fits {
            return Err(fail(span, format!("stored value {r} of the result is {v}, not a {}", plan.elem)));
        }
    }
    let tensor = crate::sparse::result::assemble_result(plan, dims, &lens, &counts, entries)
        // Worded as the interpreter words it (`interp/store.rs`): the same
        // result fails the same way on every backend.
        .map_err(|e| Diagnostic::new(span, format!("the stored tensor is invalid: {e}")).with_label("stored here"))?;
    Ok(Value::Tensor(std::rc::Rc::new(tensor)))
}

/// Lists filled into room for upper bounds on their lengths
/// ([`heddle_ir::loops::BoundedLists`]): each list's length, as the fill
/// wrote it, and the first record of its room. A length beyond its room
/// is an internal error (the bound was no bound), never a wrong tensor.
fn bounded_lists(
    prog: &LoopProgram,
    launch: &Launch,
    bounded: &heddle_ir::loops::BoundedLists,
    positions: usize,
    span: Span,
) -> Result<(Vec<u64>, Vec<usize>), Diagnostic> {
    let offsets = buffer_named(prog, launch, &bounded.offsets)?
        .as_i64s()
        .ok_or_else(|| fail(span, format!("`{}` holds no offsets", bounded.offsets)))?;
    let lengths = buffer_named(prog, launch, &bounded.lengths)?
        .as_i64s()
        .ok_or_else(|| fail(span, format!("`{}` holds no lengths", bounded.lengths)))?;
    if offsets.len() != positions + 1 || lengths.len() != positions {
        return Err(fail(
            span,
            format!(
                "the stored result's lists: {} offsets and {} lengths for {positions} positions",
                offsets.len(),
                lengths.len()
            ),
        ));
    }
    let mut counts = Vec::with_capacity(positions);
    for (f, (room, &len)) in offsets.windows(2).zip(lengths).enumerate() {
        if len < 0 || len > room[1] - room[0] {
            return Err(fail(
                span,
                format!(
                    "internal error: list {f} of the stored result has {len} entries, room for {}",
                    room[1] - room[0]
                ),
            ));
        }
        counts.push(len as u64);
    }
    Ok((counts, offsets[..positions].iter().map(|&o| o as usize).collect()))
}

/// The list's length at every dense position, row-major: read straight from
/// a count array indexed by the dense positions, else evaluated per position.
fn list_lengths(len: &Nat, dense: &[(usize, Option<Name>)], env: &Env) -> Result<Vec<u64>, Diagnostic> {
    let positions: usize = dense.iter().map(|(n, _)| *n).product();
    if let Some((array, path)) = heddle_ir::nat::counted::as_counted(len) {
        let binders: Vec<Option<Name>> = dense.iter().map(|(_, b)| b.clone()).collect();
        let by_position = path.len() == binders.len()
            && path
                .iter()
                .zip(&binders)
                .all(|(e, b)| matches!((&e.kind, b), (heddle_ir::ExprKind::Var(x), Some(b)) if x == b));
        if let (true, Some(counts)) = (by_position, env.buffer(&array).and_then(Buffer::as_i64s))
            && counts.len() == positions
        {
            return Ok(counts.iter().map(|&c| c.max(0) as u64).collect());
        }
        if let (true, Some(v)) = (by_position, env.value(&array)) {
            let mut flat = Vec::new();
            v.flatten_into(&mut flat);
            if flat.len() == positions {
                return Ok(flat.iter().map(|c| c.as_int().map_or(0, |c| c.max(0) as u64)).collect());
            }
        }
    }
    let mut out = Vec::with_capacity(positions);
    let mut bound = Vec::with_capacity(dense.len());
    for f in 0..positions {
        bound.clear();
        let mut rest = f;
        for (n, b) in dense.iter().rev() {
            if let Some(b) = b {
                bound.push((b.clone(), (rest % n.max(&1)) as i64));
            }
            rest /= n.max(&1);
        }
        let v = len
            .eval_with(env, &mut bound)
            .map_err(|e| fail(Span::DUMMY, format!("cannot compute a list's length ({len}): {e}")))?;
        out.push(u64::try_from(v).map_err(|_| fail(Span::DUMMY, format!("a list's length ({len}) is {v}")))?);
    }
    Ok(out)
}

fn unflatten(ty: &Type, buf: &Buffer, pos: &mut usize, env: &Env) -> Result<Value, Diagnostic> {
    match ty {
        Type::Array { binder, elem, len } => {
            let n = eval_len(len, env, "a part of the result")?;
            // Arrays of empty arrays take no records: bound their number too.
            crate::limits::check_values("an array of the result", n as i64, std::mem::size_of::<Value>())
                .map_err(|m| fail(Span::DUMMY, m))?;
            if let (Type::Scalar(_), 1) = (&**elem, buf.fields.len()) {
                // A row of scalars: its records in one sweep, no environment per element.
                if buf.len().saturating_sub(*pos) < n {
                    return Err(fail(Span::DUMMY, "the output buffer is shorter than the result".into()));
                }
                let items = (*pos..*pos + n).map(|r| buf.read(r, 0)).collect();
                *pos += n;
                return Ok(Value::array(items));
            }
            if let (Type::Scalar(s), [a, b]) = (&**elem, buf.fields.as_slice())
                && s.is_complex()
                && (*a, *b) == (s.part(), s.part())
            {
                // A row of complex numbers, each the pair of its parts.
                if buf.len().saturating_sub(*pos) < n {
                    return Err(fail(Span::DUMMY, "the output buffer is shorter than the result".into()));
                }
                let items = (*pos..*pos + n).map(|r| complex_of(buf.read(r, 0), buf.read(r, 1))).collect();
                *pos += n;
                return Ok(Value::array(items));
            }
            let mut items = Vec::with_capacity(n);
            for k in 0..n {
                let env_k = match binder {
                    Some(b) => env.with_nat(b.clone(), k as i64),
                    None => env.clone(),
                };
                items.push(unflatten(elem, buf, pos, &env_k)?);
            }
            Ok(Value::array(items))
        }
        _ => {
            if *pos >= buf.len() {
                return Err(fail(Span::DUMMY, "the output buffer is shorter than the result".into()));
            }
            let v = match ty {
                Type::Scalar(_) | Type::Tuple(_) | Type::Vector { .. } => read_record(ty, buf, *pos, &mut 0),
                _ if buf.fields.len() == 1 => buf.read(*pos, 0),
                _ => Value::tuple((0..buf.fields.len()).map(|f| buf.read(*pos, f)).collect()),
            };
            *pos += 1;
            Ok(v)
        }
    }
}

/// The scalars of a record's value, nested tuples flattened, in field order;
/// a complex number is its two parts (no loop program has complex fields).
fn record_leaves(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Tuple(parts) => parts.iter().for_each(|p| record_leaves(p, out)),
        Value::Complex(z) => out.extend([Value::Float(z.re), Value::Float(z.im)]),
        v => out.push(v.clone()),
    }
}

/// The value of type `ty` (a scalar, a vector, or nested tuples of them) stored flat in
/// record `record` from field `*field` on.
fn read_record(ty: &Type, buf: &Buffer, record: usize, field: &mut usize) -> Value {
    match ty {
        Type::Tuple(ts) => Value::tuple(ts.iter().map(|t| read_record(t, buf, record, field)).collect()),
        // A vector is its lanes, one field each (lowering sees it as a tuple).
        Type::Vector { elem, width } => {
            let lanes = width.const_value().unwrap_or(0).max(0) as usize;
            Value::array((0..lanes).map(|_| read_record(elem, buf, record, field)).collect())
        }
        // A complex number where the buffer holds its parts (lowering sees it as a pair).
        Type::Scalar(s) if s.is_complex() && buf.fields.get(*field).is_some_and(|f| !f.is_complex()) => {
            *field += 2;
            complex_of(buf.read(record, *field - 2), buf.read(record, *field - 1))
        }
        _ => {
            *field += 1;
            buf.read(record, *field - 1)
        }
    }
}

/// The complex number of two parts read from a buffer.
fn complex_of(re: Value, im: Value) -> Value {
    match (re, im) {
        (Value::Float(re), Value::Float(im)) => Value::complex(re, im),
        (re, im) => Value::tuple(vec![re, im]),
    }
}

/// The diagnostic for a failed run-time check of the generated code.
pub fn check_failure(prog: &LoopProgram, id: u32) -> Diagnostic {
    if id == heddle_ir::loops::INDEX_OVERFLOW_CHECK {
        return index_overflow(prog);
    }
    match prog.checks.get(id as usize) {
        Some(c) => Diagnostic::new(c.span, c.message.clone()).with_label("this access"),
        None => Diagnostic::new(Span::DUMMY, format!("the kernel failed check #{id}")),
    }
}

/// The diagnostic for a loop whose range does not fit the narrow integer its
/// index is converted to: at the `generate` (or tensor parameter) whose
/// `int` positions those are.
pub fn index_overflow(prog: &LoopProgram) -> Diagnostic {
    let d = Diagnostic::new(prog.index_overflow_at.unwrap_or(Span::DUMMY), heddle_ir::loops::INDEX_OVERFLOW_MESSAGE);
    match prog.index_overflow_at {
        Some(_) => d.with_label("positions counted as `int` here").with_note(format!(
            "the positions of a `generate` and of a tensor's levels are `int`s: at most {} of them",
            i32::MAX
        )),
        None => d,
    }
}

/// Evaluates an `i64` loop expression over the launch's arguments (for
/// `parallel_work`, and the loop-IR interpreter); `vars` binds loop variables.
pub fn eval_index_expr(prog: &LoopProgram, launch: &Launch, e: &Expr, vars: &[(Name, i64)]) -> Result<i64, String> {
    match eval_scalar(prog, launch, &[], e, &|n: &Name| {
        vars.iter().rev().find(|(x, _)| x == n).map(|(_, v)| Value::Int(*v))
    })? {
        Value::Int(v) => Ok(v),
        other => Err(format!("expected an integer, found {other}")),
    }
}

/// Evaluates a loop expression; `local` supplies variables not among the
/// arguments and `temps` the temporary buffers in scope.
pub fn eval_scalar(
    prog: &LoopProgram,
    launch: &Launch,
    temps: &[(Name, Buffer)],
    e: &Expr,
    local: &dyn Fn(&Name) -> Option<Value>,
) -> Result<Value, String> {
    let arg_slot = |n: &Name| prog.args.iter().position(|a| &a.name == n).and_then(|k| launch.slots.get(k));
    let ty_of = |e: &Expr| -> ScalarType {
        let env = prog.arg_env();
        prog.type_of(e, &env).unwrap_or(ScalarType::I64)
    };
    Ok(match e {
        Expr::Int(v, s) => Value::Int(wrap_int(*v, *s)),
        Expr::Float(v, s) => Value::Float(round_float(*v, *s)),
        Expr::Bool(b) => Value::Bool(*b),
        Expr::Var(v) => match local(v) {
            Some(x) => x,
            None => match arg_slot(v) {
                Some(Slot::Nat(x)) => Value::Int(*x),
                Some(Slot::Int(x, _)) => Value::Int(*x),
                Some(Slot::Float(x, _)) => Value::Float(*x),
                Some(Slot::Bool(b)) => Value::Bool(*b),
                _ => return Err(format!("`{v}` has no value")),
            },
        },
        Expr::Load { buf, index, field } => {
            let i = eval_scalar(prog, launch, temps, index, local)?.as_int().ok_or("a non-integer index")?;
            let temp = temps.iter().rev().find(|(n, _)| n == buf).map(|(_, b)| b);
            let slot = match temp {
                Some(b) => Some(b),
                None => match arg_slot(buf) {
                    Some(Slot::Buffer(b)) => Some(b),
                    _ => None,
                },
            };
            match slot {
                Some(b) => match usize::try_from(i).ok().filter(|i| *i < b.len()) {
                    Some(i) => b.read(i, *field as usize),
                    None => return Err(format!("{buf}[{i}] is out of bounds (length {})", b.len())),
                },
                None => return Err(format!("`{buf}` is not a buffer")),
            }
        }
        Expr::Bin(op, a, b) => {
            let s = ty_of(a);
            bin(*op, eval_scalar(prog, launch, temps, a, local)?, eval_scalar(prog, launch, temps, b, local)?, s)?
        }
        Expr::Neg(a) => match eval_scalar(prog, launch, temps, a, local)? {
            Value::Int(x) => Value::Int(wrap_int(x.wrapping_neg(), ty_of(a))),
            Value::Float(x) => Value::Float(-x),
            other => return Err(format!("negation of {other}")),
        },
        Expr::Not(a) => match eval_scalar(prog, launch, temps, a, local)? {
            Value::Bool(b) => Value::Bool(!b),
            other => return Err(format!("`!` of {other}")),
        },
        Expr::Select(c, a, b) => match eval_scalar(prog, launch, temps, c, local)? {
            Value::Bool(true) => eval_scalar(prog, launch, temps, a, local)?,
            _ => eval_scalar(prog, launch, temps, b, local)?,
        },
        Expr::Cast(t, a) => cast(eval_scalar(prog, launch, temps, a, local)?, *t),
    })
}

/// A scalar conversion as the compiled backends do it (float → int toward
/// zero, saturating, NaN giving 0: [`crate::value::float_to_int`]).
pub fn cast(v: Value, t: ScalarType) -> Value {
    match (v, t) {
        (Value::Int(x), t) if t.is_float() => Value::Float(crate::value::int_to_float(i128::from(x), t)),
        (Value::Int(x), ScalarType::Bool) => Value::Bool(x != 0),
        (Value::Int(x), t) => Value::Int(wrap_int(x, t)),
        (Value::Float(x), t) if t.is_float() => Value::Float(round_float(x, t)),
        (Value::Float(x), ScalarType::Bool) => Value::Bool(x != 0.0),
        (Value::Float(x), t) => Value::Int(crate::value::float_to_int(x, t)),
        (Value::Bool(b), t) if t.is_float() => Value::Float(b as i64 as f64),
        (Value::Bool(b), ScalarType::Bool) => Value::Bool(b),
        (Value::Bool(b), _) => Value::Int(b as i64),
        (other, _) => other,
    }
}

/// A binary operation of loop code at scalar type `s` (the operands' type).
pub fn bin(op: BinOp, a: Value, b: Value, s: ScalarType) -> Result<Value, String> {
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            let unsigned = !s.is_signed();
            let ord = if unsigned { (x as u64).cmp(&(y as u64)) } else { x.cmp(&y) };
            match op {
                BinOp::Add => Value::Int(wrap_int(x.wrapping_add(y), s)),
                BinOp::Sub => Value::Int(wrap_int(x.wrapping_sub(y), s)),
                BinOp::Mul => Value::Int(wrap_int(x.wrapping_mul(y), s)),
                BinOp::Div | BinOp::Rem if y == 0 => return Err("integer division by zero".into()),
                BinOp::Div if unsigned => Value::Int(wrap_int(((x as u64) / (y as u64)) as i64, s)),
                BinOp::Rem if unsigned => Value::Int(wrap_int(((x as u64) % (y as u64)) as i64, s)),
                BinOp::Div => Value::Int(wrap_int(x.wrapping_div(y), s)),
                BinOp::Rem => Value::Int(wrap_int(x.wrapping_rem(y), s)),
                BinOp::Min => Value::Int(if ord.is_le() { x } else { y }),
                BinOp::Max => Value::Int(if ord.is_ge() { x } else { y }),
                BinOp::Eq => Value::Bool(x == y),
                BinOp::Ne => Value::Bool(x != y),
                BinOp::Lt => Value::Bool(ord.is_lt()),
                BinOp::Le => Value::Bool(ord.is_le()),
                BinOp::Gt => Value::Bool(ord.is_gt()),
                BinOp::Ge => Value::Bool(ord.is_ge()),
                BinOp::And | BinOp::Or => return Err("logical operator on integers".into()),
            }
        }
        (Value::Float(x), Value::Float(y)) => match op {
            BinOp::Add => Value::Float(round_float(x + y, s)),
            BinOp::Sub => Value::Float(round_float(x - y, s)),
            BinOp::Mul => Value::Float(round_float(x * y, s)),
            BinOp::Div => Value::Float(round_float(x / y, s)),
            BinOp::Rem => Value::Float(round_float(x % y, s)),
            BinOp::Min => Value::Float(x.min(y)),
            BinOp::Max => Value::Float(x.max(y)),
            BinOp::Eq => Value::Bool(x == y),
            BinOp::Ne => Value::Bool(x != y),
            BinOp::Lt => Value::Bool(x < y),
            BinOp::Le => Value::Bool(x <= y),
            BinOp::Gt => Value::Bool(x > y),
            BinOp::Ge => Value::Bool(x >= y),
            BinOp::And | BinOp::Or => return Err("logical operator on floats".into()),
        },
        (Value::Complex(x), Value::Complex(y)) => complex_bin(op, (x.re, x.im), (y.re, y.im), s.part())?,
        (Value::Bool(x), Value::Bool(y)) => match op {
            BinOp::And => Value::Bool(x && y),
            BinOp::Or => Value::Bool(x || y),
            BinOp::Eq => Value::Bool(x == y),
            BinOp::Ne => Value::Bool(x != y),
            _ => return Err(format!("`{}` on booleans", op.symbol())),
        },
        (a, b) => return Err(format!("`{}` on {a} and {b}", op.symbol())),
    })
}

/// `(a + bi) op (c + di)` with parts of type `part`, each real operation
/// rounded to `part` as compiled code rounds it (no fused multiply-add):
/// the textbook product and quotient (`(ac + bd) / (c² + d²)`, which
/// overflows sooner than Smith's algorithm, but every backend computes it the
/// same way, in the same order).
pub fn complex_bin(op: BinOp, (a, b): (f64, f64), (c, d): (f64, f64), part: ScalarType) -> Result<Value, String> {
    let r = |x: f64| round_float(x, part);
    Ok(match op {
        BinOp::Add => Value::complex(r(a + c), r(b + d)),
        BinOp::Sub => Value::complex(r(a - c), r(b - d)),
        BinOp::Mul => Value::complex(r(r(a * c) - r(b * d)), r(r(a * d) + r(b * c))),
        BinOp::Div => {
            let denominator = r(r(c * c) + r(d * d));
            Value::complex(r(r(r(a * c) + r(b * d)) / denominator), r(r(r(b * c) - r(a * d)) / denominator))
        }
        BinOp::Eq => Value::Bool(a == c && b == d),
        BinOp::Ne => Value::Bool(a != c || b != d),
        _ => return Err(format!("`{}` on complex numbers", op.symbol())),
    })
}

#[cfg(test)]
mod tests {
    use super::Buffer;
    use heddle_ir::ScalarType;

    #[test]
    fn complex_records_read_as_pairs_of_parts_sharing_their_storage() {
        use crate::scalars::{Complex, ScalarVec};
        use crate::value::Value;
        let zs = ScalarVec::C32(vec![Complex { re: 1.5, im: -2.0 }, Complex { re: 0.25, im: 3.0 }]);
        let b = Buffer::from_scalar_vec(zs, "zs").unwrap();
        assert_eq!(b.read(1, 0), Value::complex(0.25, 3.0));
        let pairs = b.with_fields(&[ScalarType::F32, ScalarType::F32]).expect("the same bytes");
        assert!(pairs.shares_storage(&b));
        assert_eq!(
            (pairs.read(0, 0), pairs.read(0, 1), pairs.read(1, 1)),
            (Value::Float(1.5), Value::Float(-2.0), Value::Float(3.0))
        );
        // Other fields, or parts at other offsets than the complex field's: refused.
        assert!(b.with_fields(&[ScalarType::F64, ScalarType::F64]).is_none());
        let mut mixed = Buffer::zeroed(vec![ScalarType::I32, ScalarType::C32], 1);
        assert!(
            mixed.with_fields(&[ScalarType::I32, ScalarType::F32, ScalarType::F32]).is_none(),
            "the complex field starts at byte 8, its split at 4"
        );
        mixed.write(0, 1, &Value::complex(-1.0, 0.5));
        assert_eq!(mixed.read(0, 1), Value::complex(-1.0, 0.5));
        let mut wide = Buffer::zeroed(vec![ScalarType::C64], 2);
        wide.write(1, 0, &Value::complex(0.1, -0.2));
        assert_eq!((wide.read(0, 0), wide.read(1, 0)), (Value::complex(0.0, 0.0), Value::complex(0.1, -0.2)));
        let split = wide.with_fields(&[ScalarType::F64, ScalarType::F64]).expect("the same bytes");
        assert_eq!((split.read(1, 0), split.read(1, 1)), (Value::Float(0.1), Value::Float(-0.2)));
    }

    #[test]
    fn large_buffers_are_zero_on_huge_pages_and_copied_on_write() {
        use crate::value::Value;
        // 3 MiB of f64: above `pages::THRESHOLD`, so a 2 MiB-aligned mapping on Linux.
        let n = 3 << 17;
        let mut a = Buffer::zeroed(vec![ScalarType::F64], n);
        if cfg!(target_os = "linux") && crate::pages::enabled() {
            assert_eq!(a.as_ptr() as usize % crate::pages::HUGE, 0, "2 MiB-aligned");
        }
        assert!(a.bytes().iter().all(|&b| b == 0));
        for i in (0..n).step_by(4099) {
            a.write(i, 0, &Value::Float(i as f64 + 0.5));
        }
        let mut b = a.clone();
        assert!(b.shares_storage(&a));
        b.write(1, 0, &Value::Float(-1.0));
        assert!(!b.shares_storage(&a), "a write copies shared storage");
        for i in (0..n).step_by(4099) {
            assert_eq!(a.read(i, 0), Value::Float(i as f64 + 0.5));
            if i != 1 {
                assert_eq!(b.read(i, 0), Value::Float(i as f64 + 0.5));
            }
        }
        assert_eq!((a.read(1, 0), b.read(1, 0)), (Value::Float(0.0), Value::Float(-1.0)));
        assert_eq!(a.read(n - 1, 0), Value::Float(0.0));
    }

    #[test]
    fn a_borrowed_buffer_reads_in_place_and_copies_before_a_write() {
        let owner = [1.5f32, 2.5, 3.5];
        // SAFETY: `owner` outlives the buffer and its clones (dropped below first).
        let b = unsafe { Buffer::borrowed(ScalarType::F32, owner.as_ptr().cast(), owner.len(), "x") }
            .unwrap()
            .expect("aligned floats");
        assert!(b.is_borrowed() && b.as_ptr() == owner.as_ptr().cast());
        let mut c = b.clone();
        c.write(0, 0, &crate::value::Value::Float(9.0));
        assert!(!c.is_borrowed() && b.is_borrowed());
        assert_eq!(owner[0], 1.5);
        assert_eq!(
            (b.read(0, 0), c.read(0, 0), c.read(2, 0)),
            (crate::value::Value::Float(1.5), crate::value::Value::Float(9.0), crate::value::Value::Float(3.5))
        );
        drop((b, c));
        // Integers, fewer than 8 bytes, misaligned memory: not borrowed.
        let ints = [1i64, 2];
        assert!(unsafe { Buffer::borrowed(ScalarType::I64, ints.as_ptr().cast(), 2, "x") }.unwrap().is_none());
        assert!(unsafe { Buffer::borrowed(ScalarType::F32, owner.as_ptr().cast(), 1, "x") }.unwrap().is_none());
        let bytes = [0u8; 16];
        let odd = bytes.as_ptr().wrapping_add(if (bytes.as_ptr() as usize).is_multiple_of(2) { 1 } else { 0 });
        assert!(unsafe { Buffer::borrowed(ScalarType::F32, odd, 2, "x") }.unwrap().is_none());
    }

    #[test]
    fn a_lent_output_is_written_in_place_until_a_clone_shares_it() {
        let mut owner = vec![0.0f64; 4];
        let ptr: *mut u8 = owner.as_mut_ptr().cast();
        // SAFETY: `owner` is zeroed, outlives the buffers (dropped below first)
        // and is not touched while they live.
        let mut b = unsafe { Buffer::lent_output(ScalarType::F64, ptr, 4, "out") }.unwrap().expect("aligned f64s");
        assert!(b.writes_in_place_at(ptr) && b.as_ptr() == ptr.cast_const());
        b.write(1, 0, &crate::value::Value::Float(2.5));
        assert!(b.writes_in_place_at(ptr));
        // A clone shares the memory: the next write copies it, and the
        // records no longer live in the lent memory.
        let keep = b.clone();
        b.write(2, 0, &crate::value::Value::Float(7.0));
        assert!(!b.writes_in_place_at(ptr) && keep.writes_in_place_at(ptr));
        assert_eq!(
            (b.read(1, 0), b.read(2, 0), keep.read(2, 0)),
            (crate::value::Value::Float(2.5), crate::value::Value::Float(7.0), crate::value::Value::Float(0.0))
        );
        drop((b, keep));
        assert_eq!(owner, [0.0, 2.5, 0.0, 0.0]);
        // Fewer than 8 bytes, or misaligned: not lent.
        assert!(unsafe { Buffer::lent_output(ScalarType::F32, ptr, 1, "out") }.unwrap().is_none());
        assert!(unsafe { Buffer::lent_output(ScalarType::F64, ptr.wrapping_add(4), 2, "out") }.unwrap().is_none());
    }

    #[test]
    fn checked_coordinates_hold_until_a_write() {
        let pos = Buffer::from_scalar_vec(crate::scalars::ScalarVec::I64(vec![0, 1, 2]), "p").unwrap();
        let mut crd = Buffer::from_scalar_vec(crate::scalars::ScalarVec::I64(vec![3, 4]), "c")
            .unwrap()
            .with_checked_coordinates(5, &pos);
        assert!(crd.known_below(5) && crd.known_below(6) && !crd.known_below(4));
        assert!(crd.known_sorted_under(&pos) && crd.clone().known_sorted_under(&pos.clone()));
        // Other positions (equal, but not these) are not known.
        let other = Buffer::from_scalar_vec(crate::scalars::ScalarVec::I64(vec![0, 1, 2]), "p").unwrap();
        assert!(!crd.known_sorted_under(&other));
        // A write to the positions copies them: the fact no longer matches.
        let mut written = pos.clone();
        written.write(1, 0, &crate::value::Value::Int(2));
        assert!(!crd.known_sorted_under(&written));
        crd.write(0, 0, &crate::value::Value::Int(7));
        assert!(!crd.known_below(100) && !crd.known_sorted_under(&pos));
    }

    /// The host bound (`HostKind::Largest`) on each path — an offsets
    /// array's neighbour differences and a lengths array read off the
    /// buffer, the same inputs bound as values, a formula over nested
    /// ranges term by term — against the largest term computed here.
    #[test]
    fn the_longest_row_is_the_largest_term_on_every_path() {
        use crate::interp::Env;
        use crate::value::Value;
        use heddle_ir::parser::parse_nat;
        use heddle_ir::{Name, Nat};
        let offsets = [0i64, 2, 2, 9, 10, 10];
        let n = offsets.len() as i64 - 1;
        let buffer = Buffer::from_scalar_vec(crate::scalars::ScalarVec::I64(offsets.to_vec()), "o").unwrap();
        let flat = Env::default().with_nat(Name::from("n"), n).with_buffer(Name::from("o"), buffer);
        let values = Env::default()
            .with_nat(Name::from("n"), n)
            .with_value(Name::from("o"), Value::array(offsets.iter().map(|&v| Value::Int(v)).collect()));
        let over_rows = |count: Nat| vec![(Name::from("i"), count)];
        let largest = |ranges: &[(Name, Nat)], body: &str, env: &Env| {
            super::largest(&Name::from("bound"), ranges, &parse_nat(body).unwrap(), env).unwrap()
        };
        let longest_row = offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        let largest_length = offsets[..n as usize].iter().copied().max().unwrap();
        for env in [&flat, &values] {
            assert_eq!(largest(&over_rows(Nat::Var(Name::from("n"))), "toNat(o@(i + 1) - o@i)", env), longest_row);
            assert_eq!(largest(&over_rows(Nat::Var(Name::from("n"))), "toNat(o@i)", env), largest_length);
            // No rows: no row is longer than 0.
            assert_eq!(largest(&over_rows(Nat::Lit(0)), "toNat(o@(i + 1) - o@i)", env), 0);
            // Nested ranges, the inner one's count over the outer variable: term by term.
            let ranges = [(Name::from("i"), Nat::Lit(3)), (Name::from("j"), parse_nat("toNat(o@i)").unwrap())];
            let want = (0..3).flat_map(|i| (0..offsets[i]).map(move |j| offsets[i + 1] + j)).max().unwrap();
            assert_eq!(largest(&ranges, "toNat(o@(i + 1) + j)", env), want);
        }
    }
}

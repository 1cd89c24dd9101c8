//! Reading input files: `.npy` (numeric dtypes; structured dtypes for tuples)
//! and `.json` (nested or flat lists).

use crate::value::Value;
use npyz::{DType, TypeChar};
use std::path::Path;

/// Data read from an input file, before it is matched against a type.
#[derive(Clone, Debug)]
pub enum Loaded {
    /// A flat buffer (from `.npy`): scalars, or tuples for structured dtypes.
    Flat {
        /// The items.
        items: Vec<Value>,
        /// Element kinds in the file, for messages (`int64`, `(int32, float32)`).
        dtype: String,
        /// Whether each scalar field is a float (`None` for structured: per field).
        kinds: Vec<ScalarKind>,
        /// The file's shape, outermost first: one dimension for a flat
        /// buffer; a 2-D `.npy` gives `[[T]_m]_n` its `n` and `m`.
        shape: Vec<u64>,
    },
    /// A flat buffer of one scalar type, kept packed (a plain `.npy`, a stored
    /// tensor's buffers, a numpy array): the compiled backends bind it as
    /// the kernel's buffer ([`super::bind::bind_inputs_flat`]), the interpreter
    /// as values.
    Packed {
        /// The scalars, at the file's type.
        data: crate::scalars::ScalarVec,
        /// The file's element type, for messages (`int64`, `float32`, `storage`).
        dtype: String,
        /// The file's shape, as in `Flat`.
        shape: Vec<u64>,
    },
    /// A flat buffer of one scalar field per record, bound as it is by the
    /// compiled backends where the field is the input's type (no copy: it may
    /// read memory owned elsewhere, [`crate::launch::Buffer::borrowed`]);
    /// converted as `Packed` data otherwise, values for the interpreter.
    Buffer {
        /// The records.
        buffer: crate::launch::Buffer,
        /// The data's element type, for messages.
        dtype: String,
        /// The data's shape, as in `Flat`.
        shape: Vec<u64>,
    },
    /// A JSON document.
    Json(serde_json::Value),
}

impl Loaded {
    /// One dimension of packed scalars.
    pub fn packed(data: crate::scalars::ScalarVec, dtype: impl Into<String>) -> Loaded {
        let shape = vec![data.len() as u64];
        Loaded::Packed { data, dtype: dtype.into(), shape }
    }

    /// One dimension of scalars a kernel streams through (a stored tensor's
    /// values, SELL's slices): as [`Loaded::packed`], but data of
    /// [`crate::pages::THRESHOLD`] bytes or more is copied onto huge pages
    /// first, a [`Loaded::Buffer`] on [`crate::pages::Words`] (2 MiB-aligned,
    /// so a 64-byte block of values is one cache line), while they are
    /// [`crate::pages::enabled`]. The vectors these come from were filled on
    /// small pages, which advice cannot move; streamed from there, the
    /// front door's SELL-8 and BSR(1, 8) SpMVs ran up to 1.9x slower than
    /// over the same bytes on huge pages (docs/performance.md, "bsr64").
    /// The copy is one pass over memory every launch reads at least once.
    /// (A plain `.npy` array's vector is advised before it is filled and
    /// taken without a copy: `packed`.)
    pub fn streamed(data: crate::scalars::ScalarVec, dtype: impl Into<String>) -> Loaded {
        let bytes = data.len() * data.elem().size_bytes();
        if cfg!(target_os = "linux") && bytes >= crate::pages::THRESHOLD && crate::pages::enabled() {
            // A buffer over the size limits stays packed: binding reports it.
            if let Ok(buffer) = crate::launch::Buffer::from_scalars(&data, "the input") {
                let shape = vec![data.len() as u64];
                return Loaded::Buffer { buffer, dtype: dtype.into(), shape };
            }
        }
        Loaded::packed(data, dtype)
    }

    /// `Packed` data as `Flat` values (what the interpreter binds); others unchanged.
    pub fn into_values(self) -> Loaded {
        match self {
            Loaded::Packed { data, dtype, shape } => {
                let kind = kind_of(data.elem());
                let items = (0..data.len()).map(|k| data.num(k).to_value()).collect();
                Loaded::Flat { items, dtype, kinds: vec![kind], shape }
            }
            Loaded::Buffer { buffer, dtype, shape } => {
                let kinds = buffer.fields.iter().map(|&f| kind_of(f)).collect();
                Loaded::Flat { items: buffer.to_values(), dtype, kinds, shape }
            }
            other => other,
        }
    }
}

/// The kind of a scalar type.
pub fn kind_of(s: heddle_ir::ScalarType) -> ScalarKind {
    if s.is_float() {
        ScalarKind::Float
    } else if s.is_complex() {
        ScalarKind::Complex
    } else if s.is_int() {
        ScalarKind::Int
    } else {
        ScalarKind::Bool
    }
}

/// The kind of scalar a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    /// Integers (signed or not).
    Int,
    /// Floats.
    Float,
    /// Booleans.
    Bool,
    /// Complex numbers (numpy's complex64, complex128).
    Complex,
}

/// Reads the input of the kernel parameter `param` from `path`: a `.npz`
/// archive's array `param`, or its array `ARRAY` where `path` is
/// `FILE.npz:ARRAY` (and no file has that whole name); any other file as
/// [`read_input`] reads it.
pub fn read_input_for(path: &Path, param: &str) -> Result<Loaded, String> {
    if !path.exists()
        && let Some((file, member)) = path.to_str().and_then(|p| p.rsplit_once(':'))
        && file.ends_with(".npz")
    {
        return read_npz_member(Path::new(file), member);
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("npz") => read_npz_member(path, param),
        _ => read_input(path),
    }
}

/// Reads an input file by its extension (`.npy`, `.json`).
pub fn read_input(path: &Path) -> Result<Loaded, String> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "npy" => read_npy(path),
        "npz" => Err(format!(
            "{}: a .npz archive holds several arrays: name one, as a kernel parameter's input does \
             (`--input NAME={}` reads the array NAME, `--input NAME={}:ARRAY` the array ARRAY)",
            path.display(),
            path.display(),
            path.display()
        )),
        "json" => {
            let invalid =
                |e: serde_json::Error| format!("{}:{}:{}: not valid JSON: {e}", path.display(), e.line(), e.column());
            // A stream (a FIFO, a device) is parsed as it is read, so it
            // fails at its first bad byte; a regular file is read whole once
            // its first bytes are seen to start a value (see `read_text`).
            if crate::sparse::text::is_stream(path) {
                let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                return serde_json::from_reader(std::io::BufReader::new(file)).map(Loaded::Json).map_err(invalid);
            }
            use crate::sparse::SparseError;
            let text = crate::sparse::text::read_text(path, &|head| {
                crate::sparse::text::json_head(head).map_or(Ok(()), |e| Err(SparseError::Json(invalid(e))))
            })
            .map_err(|e| match e {
                SparseError::Io { .. } => format!("cannot read {e}"),
                e => e.to_string(),
            })?;
            serde_json::from_slice(&text).map(Loaded::Json).map_err(invalid)
        }
        _ => Err(format!("{}: unsupported input format (expected a .npy or .json file)", path.display())),
    }
}

struct FieldLayout {
    kind: ScalarKind,
    bytes: usize,
    big_endian: bool,
    signed: bool,
    name: String,
}

fn field_layout(dtype: &DType) -> Result<FieldLayout, String> {
    let DType::Plain(ts) = dtype else {
        return Err("nested array fields are not supported in input .npy files".into());
    };
    let bytes = ts.num_bytes().ok_or("unsupported dtype")?;
    let (kind, signed) = match ts.type_char() {
        TypeChar::Int => (ScalarKind::Int, true),
        TypeChar::Uint => (ScalarKind::Int, false),
        TypeChar::Float => (ScalarKind::Float, true),
        TypeChar::Complex => (ScalarKind::Complex, true),
        TypeChar::Bool => (ScalarKind::Bool, false),
        other => {
            return Err(format!(
                "unsupported dtype `{}` (expected integers, floats, complex numbers or booleans)",
                other.to_str()
            ));
        }
    };
    let ok = match kind {
        ScalarKind::Int => [1, 2, 4, 8].contains(&bytes),
        ScalarKind::Float => [2, 4, 8].contains(&bytes),
        ScalarKind::Complex => [8, 16].contains(&bytes),
        ScalarKind::Bool => bytes == 1,
    };
    if !ok {
        return Err(format!("unsupported dtype `{ts}`"));
    }
    let name = match kind {
        ScalarKind::Int => format!("{}int{}", if signed { "" } else { "u" }, bytes * 8),
        ScalarKind::Float => format!("float{}", bytes * 8),
        ScalarKind::Complex => format!("complex{}", bytes * 8),
        ScalarKind::Bool => "bool".to_string(),
    };
    Ok(FieldLayout { kind, bytes, big_endian: ts.endianness() == npyz::Endianness::Big, signed, name })
}

fn decode(f: &FieldLayout, raw: &[u8]) -> Value {
    if f.kind == ScalarKind::Complex {
        // Two floats, the real part first whatever the byte order.
        let half = FieldLayout {
            kind: ScalarKind::Float,
            bytes: f.bytes / 2,
            big_endian: f.big_endian,
            signed: true,
            name: String::new(),
        };
        return match (decode(&half, &raw[..f.bytes / 2]), decode(&half, &raw[f.bytes / 2..])) {
            (Value::Float(re), Value::Float(im)) => Value::complex(re, im),
            _ => unreachable!("float halves decode to floats"),
        };
    }
    let mut b = [0u8; 8];
    if f.big_endian {
        for (k, byte) in raw.iter().rev().enumerate() {
            b[k] = *byte;
        }
    } else {
        b[..raw.len()].copy_from_slice(raw);
    }
    let u = u64::from_le_bytes(b);
    match f.kind {
        ScalarKind::Bool => Value::Bool(u != 0),
        ScalarKind::Float if f.bytes == 2 => Value::Float(half::f16::from_bits(u as u16).to_f64()),
        ScalarKind::Float if f.bytes == 4 => Value::Float(f32::from_bits(u as u32) as f64),
        ScalarKind::Float => Value::Float(f64::from_bits(u)),
        ScalarKind::Int if f.signed => {
            let shift = 64 - 8 * f.bytes as u32;
            Value::Int(((u << shift) as i64) >> shift)
        }
        ScalarKind::Int => Value::Int(u as i64),
        ScalarKind::Complex => unreachable!("complex fields are decoded as two floats above"),
    }
}

fn read_npy(path: &Path) -> Result<Loaded, String> {
    let invalid = |e: String| format!("{}: not a valid .npy file: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    // Read as a stream: the magic string and header are checked before any
    // data is read (`/dev/zero` fails at its first byte), and the data's
    // buffer grows as bytes arrive, reserved at most at the file's size: a
    // header that promises more than the file holds allocates no more than
    // the file, then fails as truncated; and one that promises more than
    // the memory limit (`crate::limits`) is refused before any data is read.
    let size = file.metadata().ok().filter(|m| m.is_file()).map_or(1 << 20, |m| m.len());
    let (limit, _) = crate::limits::max_bytes()?;
    let array = super::npy::read_array(std::io::BufReader::new(file), limit, size).map_err(invalid)?;
    loaded_of(array, &path.display().to_string())
}

/// Reads the array `member` of a numpy `.npz` archive (`np.savez(path,
/// member=…)`, stored or deflated: the archive's `member.npy`), as
/// [`read_npy`] reads a file. Messages name the file and the member, and a
/// missing member lists the archive's arrays.
pub fn read_npz_member(path: &Path, member: &str) -> Result<Loaded, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| format!("{}: not a valid .npz archive: {e}", path.display()))?;
    let Some(index) = zip.index_for_name(&format!("{member}.npy")) else {
        let mut names: Vec<String> =
            zip.file_names().filter_map(|n| Some(n.ok()?.strip_suffix(".npy")?.to_string())).collect();
        names.sort_unstable();
        return Err(format!(
            "{}: the archive has no array `{member}` (it holds {}); name another with {}:ARRAY",
            path.display(),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            },
            path.display()
        ));
    };
    let what = format!("{}: array `{member}`", path.display());
    let entry = zip.by_index(index).map_err(|e| format!("{what}: cannot open it: {e}"))?;
    // The data's buffer is reserved in part (a deflated member's size is
    // known only by inflating it) and grows as bytes arrive, up to the
    // memory limit and to what the member can hold.
    let (holds, reserve) = crate::sparse::npz::member_sizes(entry.compression(), entry.compressed_size());
    let (limit, _) = crate::limits::max_bytes()?;
    let array = super::npy::read_array(entry, limit, reserve.min(holds).min(limit))
        .map_err(|e| format!("{what}: not a valid .npy array: {e}"))?;
    loaded_of(array, &what)
}

/// What a `.npy` array holds, as an input: `what` (the file, or the
/// archive's member) names it in messages.
fn loaded_of(array: super::npy::Array, what: &str) -> Result<Loaded, String> {
    let super::npy::Array { header, data } = array;
    let shape_dims = header.shape.clone();
    // A 0-d array is one item.
    let shape = if shape_dims.is_empty() { vec![1] } else { shape_dims };
    if header.fortran_order && header.shape.len() > 1 {
        return Err(format!("{}: Fortran-ordered arrays are not supported; save with order='C'", what));
    }
    let count = header.count().ok_or("shape too large")? as usize;
    let fields: Vec<FieldLayout> = match &header.dtype {
        DType::Record(fs) => fs
            .iter()
            .map(|f| {
                field_layout(&f.dtype).map(|mut l| {
                    l.name = format!("{}: {}", f.name, l.name);
                    l
                })
            })
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}: {e}", what))?,
        d => vec![field_layout(d).map_err(|e| format!("{}: {e}", what))?],
    };
    let structured = matches!(header.dtype, DType::Record(_));
    let row: usize = fields.iter().map(|f| f.bytes).sum();
    // A record of no bytes would let a tiny file claim any number of items.
    if row == 0 {
        return Err(format!("{}: a structured dtype with no fields holds no data", what));
    }
    let needed = count.checked_mul(row).ok_or("file too large")?;
    if data.len() < needed {
        return Err(format!(
            "{}: truncated .npy file: the header promises {count} elements ({needed} bytes), the file holds {} bytes",
            what,
            data.len()
        ));
    }
    if !structured {
        return Ok(Loaded::Packed { data: packed(&fields[0], &data[..needed]), dtype: fields[0].name.clone(), shape });
    }
    let mut items = Vec::with_capacity(count);
    for r in 0..count {
        let base = r * row;
        let mut off = base;
        let mut vals = Vec::with_capacity(fields.len());
        for f in &fields {
            vals.push(decode(f, &data[off..off + f.bytes]));
            off += f.bytes;
        }
        items.push(if structured { Value::tuple(vals) } else { vals.pop().expect("one field") });
    }
    let dtype = if structured {
        format!("({})", fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", "))
    } else {
        fields[0].name.clone()
    };
    Ok(Loaded::Flat { items, dtype, kinds: fields.iter().map(|f| f.kind).collect(), shape })
}

/// The scalars of a plain dtype, at their own type (byte order fixed).
fn packed(f: &FieldLayout, raw: &[u8]) -> crate::scalars::ScalarVec {
    use crate::scalars::ScalarVec;
    fn read<const N: usize, T>(raw: &[u8], big: bool, from: impl Fn([u8; N]) -> T) -> Vec<T> {
        let mut v = Vec::with_capacity(raw.len() / N);
        // A large array (an SpMV's `x`, which a kernel reads at random) on
        // huge pages: advised before anything is written to it, which is
        // the only time the advice takes effect (`crate::pages`).
        crate::pages::advise(v.spare_capacity_mut());
        v.extend(raw.chunks_exact(N).map(|c| {
            let mut b: [u8; N] = c.try_into().expect("exact chunks");
            if big {
                b.reverse();
            }
            from(b)
        }));
        v
    }
    let big = f.big_endian;
    match (f.kind, f.bytes, f.signed) {
        (ScalarKind::Bool, _, _) => ScalarVec::Bool(raw.iter().map(|b| *b != 0).collect()),
        // The real part first, each part in the file's byte order.
        (ScalarKind::Complex, 8, _) => ScalarVec::C32(read(raw, false, |b: [u8; 8]| {
            let part = |p: &[u8]| read::<4, f32>(p, big, f32::from_le_bytes)[0];
            crate::scalars::Complex { re: part(&b[..4]), im: part(&b[4..]) }
        })),
        (ScalarKind::Complex, _, _) => ScalarVec::C64(read(raw, false, |b: [u8; 16]| {
            let part = |p: &[u8]| read::<8, f64>(p, big, f64::from_le_bytes)[0];
            crate::scalars::Complex { re: part(&b[..8]), im: part(&b[8..]) }
        })),
        (ScalarKind::Float, 2, _) => ScalarVec::F16(read(raw, big, half::f16::from_le_bytes)),
        (ScalarKind::Float, 4, _) => ScalarVec::F32(read(raw, big, f32::from_le_bytes)),
        (ScalarKind::Float, _, _) => ScalarVec::F64(read(raw, big, f64::from_le_bytes)),
        (ScalarKind::Int, 1, true) => ScalarVec::I8(read(raw, big, i8::from_le_bytes)),
        (ScalarKind::Int, 2, true) => ScalarVec::I16(read(raw, big, i16::from_le_bytes)),
        (ScalarKind::Int, 4, true) => ScalarVec::I32(read(raw, big, i32::from_le_bytes)),
        (ScalarKind::Int, _, true) => ScalarVec::I64(read(raw, big, i64::from_le_bytes)),
        (ScalarKind::Int, 1, false) => ScalarVec::U8(raw.to_vec()),
        (ScalarKind::Int, 2, false) => ScalarVec::U16(read(raw, big, u16::from_le_bytes)),
        (ScalarKind::Int, 4, false) => ScalarVec::U32(read(raw, big, u32::from_le_bytes)),
        (ScalarKind::Int, _, false) => ScalarVec::U64(read(raw, big, u64::from_le_bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_streamed_data_is_copied_onto_huge_pages_small_data_stays_packed() {
        // 3 MiB of f64 (a stored tensor's values): a buffer on a 2 MiB-aligned
        // mapping advised MADV_HUGEPAGE, holding the same values.
        let n: usize = 3 << 17;
        let values: Vec<f64> = (0..n).map(|i| i as f64 * 0.25 - 7.0).collect();
        match Loaded::streamed(crate::scalars::ScalarVec::F64(values.clone()), "storage") {
            Loaded::Buffer { buffer, shape, .. } if cfg!(target_os = "linux") && crate::pages::enabled() => {
                assert_eq!((buffer.len(), shape), (n, vec![n as u64]));
                assert_eq!(buffer.fields, vec![heddle_ir::ScalarType::F64]);
                let got = buffer.to_values();
                assert!(got.iter().zip(&values).all(|(g, &v)| *g == crate::value::Value::Float(v)));
                let addr = buffer.as_ptr() as usize;
                assert_eq!(addr % crate::pages::HUGE, 0, "2 MiB-aligned");
                #[cfg(target_os = "linux")]
                {
                    let flags = crate::pages::vm_flags(addr).expect("the buffer's mapping in /proc/self/smaps");
                    assert!(flags.split_whitespace().any(|f| f == "hg"), "not advised MADV_HUGEPAGE: VmFlags {flags}");
                }
            }
            Loaded::Packed { data: crate::scalars::ScalarVec::F64(v), .. } => {
                assert!(!(cfg!(target_os = "linux") && crate::pages::enabled()), "kept packed");
                assert_eq!(v, values);
            }
            _ => panic!("streamed data is a buffer or packed"),
        }
        // Under 2 MiB: packed as given, no copy.
        let small: Vec<i32> = (0..1000).collect();
        let at = small.as_ptr();
        let Loaded::Packed { data: crate::scalars::ScalarVec::I32(v), .. } =
            Loaded::streamed(crate::scalars::ScalarVec::I32(small), "storage")
        else {
            panic!("small data stays packed")
        };
        assert_eq!(v.as_ptr(), at);
    }

    #[test]
    fn a_large_npy_array_is_read_onto_advised_huge_pages() {
        // A million f64s (8 MB, an SpMV's x read at random): the vector
        // holding them is advised MADV_HUGEPAGE (VmFlags `hg`) where it
        // covers whole huge pages, and holds the file's values.
        let n: usize = 1 << 20;
        // A directory of its own, removed when the test ends (never named by
        // the process id: ids come back).
        let dir = tempfile::Builder::new().prefix("heddle-npy-huge-").tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let mut bytes = Vec::new();
        super::super::npy::write_header(&mut bytes, "'<f8'", &[n as u64]).unwrap();
        for i in 0..n {
            bytes.extend_from_slice(&((i as f64) * 0.5 - 3.0).to_le_bytes());
        }
        std::fs::write(&path, &bytes).unwrap();
        let loaded = read_npy(&path).unwrap();
        let Loaded::Packed { data: crate::scalars::ScalarVec::F64(v), .. } = loaded else {
            panic!("a plain f64 array is read packed")
        };
        assert_eq!(v.len(), n);
        assert!(v.iter().enumerate().all(|(i, &x)| x == (i as f64) * 0.5 - 3.0));
        #[cfg(target_os = "linux")]
        if crate::pages::enabled() {
            let addr = (v.as_ptr() as usize).next_multiple_of(crate::pages::HUGE);
            assert!(addr + crate::pages::HUGE <= v.as_ptr() as usize + 8 * n, "a whole huge page inside");
            let flags = crate::pages::vm_flags(addr).expect("the vector's mapping in /proc/self/smaps");
            assert!(flags.split_whitespace().any(|f| f == "hg"), "not advised MADV_HUGEPAGE: VmFlags {flags}");
        }
    }
}

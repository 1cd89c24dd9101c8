//! The `.npy` format (numpy's NEP 1) as every reader and writer of heddle
//! uses it: `run --input`, `run -o FILE.npy`, and the arrays inside `.npz`
//! archives.
//!
//! Reading checks the header before npyz parses it ([`check_npy_header`]),
//! and reads the data from a stream without trusting the header's promise:
//! the buffer grows as bytes arrive (a header that claims 2^40 elements over
//! a file of a few bytes allocates a few bytes, then fails), never past a
//! caller's limit (a compressed `.npz` member that inflates without end is cut
//! off where its header says the data stops).

use heddle_ir::ScalarType;
use npyz::{DType, TypeChar};
use std::io::{Read, Write};

/// numpy's own limit on a header's length (`np.load(max_header_size=10000)`).
const MAX_HEADER: usize = 10_000;
/// Brackets nest at most this deep in a header: a structured dtype of
/// structured fields is 4 or 5 deep; npyz's header parser backtracks
/// exponentially on deep nesting (16 `{` take minutes).
const MAX_HEADER_DEPTH: usize = 8;

/// Checks a `.npy` file's preamble and header text before npyz parses it:
/// the magic string, a known version, a header length the file holds and
/// within numpy's limit, ASCII text, and bracket nesting within
/// [`MAX_HEADER_DEPTH`]. Returns where the data starts.
pub fn check_npy_header(bytes: &[u8]) -> Result<usize, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic string)".into());
    }
    let (len, start) = header_len(bytes)?;
    let header = bytes.get(start..start + len).ok_or("the file ends inside its header")?;
    let mut depth = 0usize;
    for &b in header {
        match b {
            b'{' | b'[' | b'(' => {
                depth += 1;
                if depth > MAX_HEADER_DEPTH {
                    return Err(format!("the header nests brackets more than {MAX_HEADER_DEPTH} deep"));
                }
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            b if !b.is_ascii() => return Err("the header is not ASCII text".into()),
            _ => {}
        }
    }
    check_shape_products(header)?;
    Ok(start + len)
}

/// npyz multiplies a shape's dimensions from both ends (the element count
/// and the strides of C and Fortran order) without checking for overflow:
/// `(0, 2**32, 2**32)` holds no element but its C strides wrap (a panic
/// where overflow is checked, a wrong count where it is not). numpy itself
/// refuses such shapes ("array is too big"). So every integer sequence in the
/// header — the shape, wherever a crafted header puts or spells its key, and
/// a field's subarray shape — must have running products from either end
/// within 64 bits. Integers are Python literals: decimal, `0x`, `0o`, `0b`,
/// with `_` between digits; a word that is none of these is left to npyz.
fn check_shape_products(header: &[u8]) -> Result<(), String> {
    // Per open bracket, the integers directly inside it.
    let mut groups: Vec<Vec<u64>> = vec![Vec::new()];
    let mut k = 0;
    fn wraps<'a>(mut dims: impl Iterator<Item = &'a u64>) -> bool {
        dims.try_fold(1u64, |a, &d| a.checked_mul(d)).is_none()
    }
    let overflows = |dims: &[u64]| wraps(dims.iter()) || wraps(dims.iter().rev());
    while k < header.len() {
        let b = header[k];
        match b {
            b'{' | b'[' | b'(' => groups.push(Vec::new()),
            b'}' | b']' | b')' if groups.len() > 1 => {
                let dims = groups.pop().unwrap_or_default();
                if overflows(&dims) {
                    return Err(format!(
                        "the shape {dims:?} has more elements than 64 bits count (numpy refuses it too)"
                    ));
                }
            }
            b'}' | b']' | b')' => {}
            b'0'..=b'9' if k == 0 || !(header[k - 1].is_ascii_alphanumeric() || header[k - 1] == b'_') => {
                let end = header[k..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                    .map_or(header.len(), |e| k + e);
                if let Some(n) = python_int(&header[k..end])
                    && let Some(g) = groups.last_mut()
                {
                    g.push(n);
                }
                k = end;
                continue;
            }
            _ => {}
        }
        k += 1;
    }
    Ok(())
}

/// A Python integer literal (`12`, `1_000`, `0x10`, `0o7`, `0b1`); `None`
/// when the word is not one or exceeds 64 bits (npyz refuses those itself).
fn python_int(word: &[u8]) -> Option<u64> {
    let text: String = std::str::from_utf8(word).ok()?.chars().filter(|&c| c != '_').collect();
    let lower = text.to_ascii_lowercase();
    let (digits, radix) = match lower.get(..2) {
        Some("0x") => (&lower[2..], 16),
        Some("0o") => (&lower[2..], 8),
        Some("0b") => (&lower[2..], 2),
        _ => (&lower[..], 10),
    };
    u64::from_str_radix(digits, radix).ok()
}

/// The header's length and where it starts, from the preamble (at least 10 bytes).
fn header_len(bytes: &[u8]) -> Result<(usize, usize), String> {
    let (len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        2 | 3 => return Err("the file ends inside its preamble".into()),
        v => return Err(format!("unsupported .npy format version {v}")),
    };
    if len > MAX_HEADER {
        return Err(format!("the header is {len} bytes, more than numpy's limit of {MAX_HEADER}"));
    }
    Ok((len, start))
}

/// A parsed header.
#[derive(Clone, Debug)]
pub struct Header {
    /// The element type.
    pub dtype: DType,
    /// The shape, outermost first (empty for a 0-d array).
    pub shape: Vec<u64>,
    /// Column-major data?
    pub fortran_order: bool,
}

impl Header {
    /// Number of elements (1 for a 0-d array); `None` if it overflows.
    pub fn count(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    }
    /// Bytes per element (`None` for types without a fixed size, such as pickled objects).
    pub fn item_size(&self) -> Option<usize> {
        self.dtype.num_bytes()
    }
}

/// Parses the header at the start of `bytes` (checked first, see
/// [`check_npy_header`]); returns it and where the data starts.
pub fn parse_header(bytes: &[u8]) -> Result<(Header, usize), String> {
    let start = check_npy_header(bytes)?;
    let npy = npyz::NpyFile::new(&bytes[..start]).map_err(|e| e.to_string())?;
    let header =
        Header { dtype: npy.dtype(), shape: npy.shape().to_vec(), fortran_order: npy.order() == npyz::Order::Fortran };
    Ok((header, start))
}

/// One array read from a stream.
#[derive(Clone, Debug)]
pub struct Array {
    /// Its header.
    pub header: Header,
    /// Exactly `count × item_size` bytes of data, as stored.
    pub data: Vec<u8>,
}

/// Reads one `.npy` array from `r`. The header is checked, then the data is
/// read up to the size the header gives, which must be at most `max_bytes`;
/// `capacity_hint` is how many bytes to reserve at once (the rest grows as it
/// arrives, so a lying header costs nothing). Bytes after the data are not read.
pub fn read_array(mut r: impl Read, max_bytes: u64, capacity_hint: u64) -> Result<Array, String> {
    let mut head = vec![0u8; 12];
    read_full(&mut r, &mut head[..10]).map_err(|_| "not a .npy file (it ends before its preamble)".to_string())?;
    if &head[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic string)".into());
    }
    if matches!(head[6], 2 | 3) {
        read_full(&mut r, &mut head[10..12]).map_err(|_| "the file ends inside its preamble".to_string())?;
    } else {
        head.truncate(10);
    }
    let (len, start) = header_len(&head)?;
    head.resize(start + len, 0);
    read_full(&mut r, &mut head[start..]).map_err(|_| "the file ends inside its header".to_string())?;
    let (header, _) = parse_header(&head)?;
    let item = header.item_size().filter(|&s| s > 0).ok_or_else(|| {
        format!(
            "the dtype `{}` has no fixed size (objects and empty records are not data heddle reads)",
            dtype_text(&header.dtype)
        )
    })?;
    let needed = header.count().and_then(|c| c.checked_mul(item as u64)).unwrap_or(u64::MAX);
    if needed > max_bytes {
        return Err(format!(
            "the header promises {} bytes of data, more than the {max_bytes} heddle reads",
            if needed == u64::MAX { "more than 2^64".to_string() } else { needed.to_string() }
        ));
    }
    let mut data = Vec::with_capacity(needed.min(capacity_hint) as usize);
    let got = r.take(needed).read_to_end(&mut data).map_err(|e| format!("cannot read the data: {e}"))?;
    if (got as u64) < needed {
        return Err(format!(
            "truncated: the header promises {} elements ({needed} bytes), the data holds {got} bytes",
            header.count().unwrap_or(0)
        ));
    }
    Ok(Array { header, data })
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<()> {
    r.read_exact(buf)
}

/// A dtype as numpy writes it in messages: `<f8`, or the field list of a record.
pub fn dtype_text(dtype: &DType) -> String {
    match dtype {
        DType::Plain(ts) => ts.to_string(),
        d => d.descr(),
    }
}

/// The type a value of type `s` is written as in `.npy` and `.npz` files:
/// itself, except `bf16`, which numpy lacks, written exactly as `float32`.
pub fn file_type(s: ScalarType) -> ScalarType {
    if s == ScalarType::BF16 { ScalarType::F32 } else { s }
}

/// numpy's type string for a scalar type, little-endian (`<f8`, `|b1`, ...).
/// A `bf16` is written as `<f4` ([`file_type`]).
pub fn descr(s: ScalarType) -> &'static str {
    match s {
        ScalarType::F16 => "<f2",
        ScalarType::BF16 => "<f4",
        ScalarType::Bool => "|b1",
        ScalarType::I8 => "|i1",
        ScalarType::I16 => "<i2",
        ScalarType::I32 => "<i4",
        ScalarType::I64 => "<i8",
        ScalarType::U8 => "|u1",
        ScalarType::U16 => "<u2",
        ScalarType::U32 => "<u4",
        ScalarType::U64 => "<u8",
        ScalarType::F32 => "<f4",
        ScalarType::F64 => "<f8",
        ScalarType::C32 => "<c8",
        ScalarType::C64 => "<c16",
    }
}

/// The scalar type of a plain numeric dtype (`None` for records, strings,
/// complex numbers and the like).
pub fn scalar_type(dtype: &DType) -> Option<(ScalarType, bool)> {
    let DType::Plain(ts) = dtype else { return None };
    let big = ts.endianness() == npyz::Endianness::Big;
    let s = match (ts.type_char(), ts.num_bytes()?) {
        (TypeChar::Bool, 1) => ScalarType::Bool,
        (TypeChar::Int, 1) => ScalarType::I8,
        (TypeChar::Int, 2) => ScalarType::I16,
        (TypeChar::Int, 4) => ScalarType::I32,
        (TypeChar::Int, 8) => ScalarType::I64,
        (TypeChar::Uint, 1) => ScalarType::U8,
        (TypeChar::Uint, 2) => ScalarType::U16,
        (TypeChar::Uint, 4) => ScalarType::U32,
        (TypeChar::Uint, 8) => ScalarType::U64,
        (TypeChar::Float, 2) => ScalarType::F16,
        (TypeChar::Float, 4) => ScalarType::F32,
        (TypeChar::Float, 8) => ScalarType::F64,
        (TypeChar::Complex, 8) => ScalarType::C32,
        (TypeChar::Complex, 16) => ScalarType::C64,
        _ => return None,
    };
    Some((s, big))
}

/// Writes a `.npy` header (version 1.0, or 2.0 when the text needs more than
/// 65535 bytes) for C-ordered data: `descr` is numpy's dtype text as it
/// appears in the header (`'<f8'`, or a list of fields), `shape` the dimensions
/// (empty for a 0-d array). The data follows it, 64-byte aligned as numpy does.
pub fn write_header(w: &mut impl Write, descr: &str, shape: &[u64]) -> std::io::Result<()> {
    let shape = match shape {
        [n] => format!("({n},)"),
        ds => format!("({})", ds.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}");
    // Preamble + header + '\n', padded with spaces to a multiple of 64.
    let preamble = if header.len() + 11 > usize::from(u16::MAX) { 12 } else { 10 };
    let total = preamble + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    if preamble == 10 {
        w.write_all(b"\x93NUMPY\x01\x00")?;
        w.write_all(&(header.len() as u16).to_le_bytes())?;
    } else {
        w.write_all(b"\x93NUMPY\x02\x00")?;
        w.write_all(&(header.len() as u32).to_le_bytes())?;
    }
    w.write_all(header.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_header(&mut out, descr, shape).unwrap();
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn header_round_trip() {
        let bytes = npy("'<f8'", &[2, 3], &[0u8; 48]);
        assert_eq!(check_npy_header(&bytes).unwrap() % 64, 0, "data aligned to 64 bytes");
        let a = read_array(&bytes[..], 1 << 20, 1 << 20).unwrap();
        assert_eq!(a.header.shape, vec![2, 3]);
        assert_eq!(scalar_type(&a.header.dtype), Some((ScalarType::F64, false)));
        assert_eq!(a.data.len(), 48);
        let zero_d = npy("'|b1'", &[], &[1]);
        assert_eq!(read_array(&zero_d[..], 8, 8).unwrap().header.count(), Some(1));
    }

    #[test]
    fn lying_headers_cost_nothing() {
        // 2^40 doubles promised, 8 bytes given: refused before anything is reserved.
        let bytes = npy("'<f8'", &[1 << 40], &[0u8; 8]);
        assert!(read_array(&bytes[..], 1 << 30, 0).unwrap_err().contains("more than the"));
        let e = read_array(&bytes[..], u64::MAX, 0).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
        // A shape whose products wrap: refused before npyz multiplies it
        // (its C strides overflowed although the array holds no element).
        for shape in [
            "(0, 4294967296, 4294967296)",
            "(4294967296, 4294967296, 0)",
            "(1099511627776, 1099511627776)",
            "(0x100000000, 4_294_967_296, 0)",
        ] {
            let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}\n");
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
            bytes.extend_from_slice(header.as_bytes());
            let e = read_array(&bytes[..], u64::MAX, 0).unwrap_err();
            assert!(e.contains("more elements than 64 bits count"), "{shape}: {e}");
        }
        // Near the limit but within it: read as usual.
        let big = npy("'<f4'", &[0, 1 << 31, 1 << 31], &[]);
        assert_eq!(read_array(&big[..], 8, 0).unwrap().header.count(), Some(0));
        // A 0 between two large dimensions stops every running product from either end.
        let middle = npy("'<f4'", &[1 << 32, 0, 1 << 32], &[]);
        assert_eq!(read_array(&middle[..], 8, 0).unwrap().header.count(), Some(0));
        // Trailing bytes past the promised data are left unread.
        let long = npy("'<i4'", &[1], &[1, 0, 0, 0, 9, 9, 9, 9]);
        assert_eq!(read_array(&long[..], 4, 4).unwrap().data, vec![1, 0, 0, 0]);
    }
}

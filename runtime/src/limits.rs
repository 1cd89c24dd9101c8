//! How much memory one run may ask for.
//!
//! Every buffer whose size comes from the program (a kernel's result, a
//! host prefix sum, an input's flat layout, an array the interpreter
//! builds) is sized with checked arithmetic and compared against one
//! limit *before* it is allocated, so a size that wraps or that no machine
//! could hold is a clear error instead of a crash, an abort on allocation
//! failure or a kernel writing past a short buffer.
//!
//! The limit is `HEDDLE_MAX_MEMORY` when set (bytes, or with a `K`, `M`,
//! `G` or `T` suffix, powers of 1024), else the machine's physical memory
//! (`MemTotal` of `/proc/meminfo`), else [`FALLBACK_BYTES`]. It bounds each
//! allocation, not their sum: a program that builds many arrays each below
//! the limit can still exhaust the machine, as it could by its own work.
//! One case is caught before it starts: the interpreter's `generate` checks
//! the whole of the nested arrays its type gives the lengths of (an array
//! of n arrays of n values), not only the outer one.

use std::sync::OnceLock;

/// The environment variable that sets the limit.
pub const ENV: &str = "HEDDLE_MAX_MEMORY";

/// The limit where neither [`ENV`] nor `/proc/meminfo` gives one: 16 GiB.
pub const FALLBACK_BYTES: u64 = 16 << 30;

/// The largest allocation allowed, and where that figure comes from; an
/// error when [`ENV`] is set to something that is not a size.
pub fn max_bytes() -> Result<(u64, &'static str), String> {
    static LIMIT: OnceLock<Result<(u64, &'static str), String>> = OnceLock::new();
    LIMIT
        .get_or_init(|| match std::env::var(ENV) {
            Ok(text) => parse_size(&text)
                .map(|b| (b, "set by HEDDLE_MAX_MEMORY"))
                .ok_or_else(|| format!("{ENV}={text:?} is not a size (write bytes, or a number with K, M, G or T)")),
            Err(_) => Ok(match physical_memory() {
                Some(b) => (b, "the machine's memory; set HEDDLE_MAX_MEMORY to change it"),
                None => (FALLBACK_BYTES, "the default; set HEDDLE_MAX_MEMORY to change it"),
            }),
        })
        .clone()
}

/// Bytes for `records` records of `record_bytes` bytes each, if that is
/// within the limit; `what` names the buffer in the error ("the result").
pub fn check_records(what: &str, records: u64, record_bytes: u64) -> Result<usize, String> {
    let Some(bytes) = records.checked_mul(record_bytes) else {
        return Err(format!("{what} would need {records} records of {record_bytes} bytes: the size overflows 64 bits"));
    };
    let (limit, why) = max_bytes()?;
    if bytes > limit {
        return Err(format!(
            "{what} would need {} ({records} records of {record_bytes} bytes), more than the limit of {} ({why})",
            human(bytes),
            human(limit)
        ));
    }
    usize::try_from(bytes).map_err(|_| format!("{what} would need {} bytes, more than this machine can address", bytes))
}

/// Checks that an array of `len` values of `value_bytes` bytes each may be
/// built (the interpreter's arrays); `len` as a `usize`.
pub fn check_values(what: &str, len: i64, value_bytes: usize) -> Result<usize, String> {
    let records = u64::try_from(len).map_err(|_| format!("{what} would have {len} elements"))?;
    check_records(what, records, value_bytes as u64)?;
    usize::try_from(records)
        .map_err(|_| format!("{what} would have {records} elements, more than this machine can address"))
}

/// `1536` → `1.5 KiB`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{bytes} bytes") } else { format!("{v:.1} {}", UNITS[u]) }
}

/// `4096`, `64K`, `1.5G` (powers of 1024) as bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (number, scale) = match t.char_indices().last()? {
        (k, c) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                'B' => 0,
                _ => return None,
            };
            (&t[..k], 1u64 << shift)
        }
        _ => (t, 1),
    };
    if let Ok(n) = number.parse::<u64>() {
        return n.checked_mul(scale);
    }
    let x: f64 = number.parse().ok()?;
    let bytes = x * scale as f64;
    (x.is_finite() && x >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("1.5g"), Some(3 << 29));
        assert_eq!(parse_size("2T"), Some(2 << 40));
        assert_eq!(parse_size("99999999999T"), None);
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("-1"), None);
    }

    #[test]
    fn a_product_that_wraps_is_refused_not_wrapped() {
        // 2^62 records of 4 bytes is 2^64 bytes: zero after wrapping.
        let e = check_records("the result", 1 << 62, 4).unwrap_err();
        assert!(e.contains("overflows"), "{e}");
        let e = check_records("the result", 1 << 40, 4).unwrap_err();
        assert!(e.contains("4.0 TiB") && e.contains("more than the limit"), "{e}");
        assert_eq!(check_records("the result", 1000, 8), Ok(8000));
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(12), "12 bytes");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(1 << 42), "4.0 TiB");
    }
}

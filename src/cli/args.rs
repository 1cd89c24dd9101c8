//! Value parsers for flags. A value that does not parse is a usage error
//! (exit status 2) that clap reports before any work is done, naming the
//! flag: `--param n=abc`, `--output out.csv`, `--input xs` all stop here.
//!
//! The file formats each flag reads or writes are listed once, here.

/// What `--input NAME=PATH` reads.
pub const INPUT_FORMATS: &[&str] = &["npy", "json", "npz"];
/// What `--matrix NAME=PATH` (and `convert`) reads.
pub const MATRIX_FORMATS: &[&str] = &["mtx", "tns", "npz", "json"];
/// What `convert -o PATH` writes.
pub const TENSOR_OUTPUT_FORMATS: &[&str] = &["json", "mtx", "tns", "npz"];
/// What `run --output PATH` writes.
pub const OUTPUT_FORMATS: &[&str] = &["npy", "json", "mtx", "npz", "tns"];

/// `NAME=VALUE` with VALUE a natural number (`--param n=1024`).
pub fn nat_binding(s: &str) -> Result<(String, i64), String> {
    let (name, value) = binding_parts(s, "NAME=VALUE, e.g. n=1024")?;
    match value.trim().parse::<i64>() {
        Ok(v) if v >= 0 => Ok((name.to_string(), v)),
        Ok(_) => Err(format!("`{value}` is negative; a natural is 0 or more")),
        Err(_) => Err(format!("`{value}` is not a natural number")),
    }
}

/// `NAME=PATH` of an input file in one of `formats`.
fn file_binding(s: &str, formats: &[&str]) -> Result<(String, String), String> {
    let (name, path) = binding_parts(s, "NAME=PATH")?;
    check_format(path, formats)?;
    Ok((name.to_string(), path.to_string()))
}

/// `--input NAME=PATH` (`.npy`, `.json`, or a `.npz` archive's array NAME;
/// `PATH.npz:ARRAY` its array ARRAY).
pub fn input_binding(s: &str) -> Result<(String, String), String> {
    let (name, path) = binding_parts(s, "NAME=PATH")?;
    let archive = match path.rsplit_once(':') {
        Some((file, _)) if file.ends_with(".npz") && !std::path::Path::new(path).exists() => file,
        _ => path,
    };
    check_format(archive, INPUT_FORMATS)?;
    Ok((name.to_string(), path.to_string()))
}

/// `--matrix NAME=PATH` (`.mtx`, `.tns`, `.npz` or `.json` storage).
pub fn matrix_binding(s: &str) -> Result<(String, String), String> {
    file_binding(s, MATRIX_FORMATS)
}

/// `NAME=a..b` or `NAME=a..b,step` with 1 <= a <= b (`tune --param-range W=1..32`).
pub fn range_binding(s: &str) -> Result<(String, String), String> {
    let shape = "NAME=a..b or NAME=a..b,step with 1 <= a <= b";
    let (name, range) = binding_parts(s, shape)?;
    let (span, step) = range.split_once(',').map_or((range, "1"), |(r, st)| (r, st));
    let bounds = span
        .split_once("..")
        .and_then(|(lo, hi)| Some((lo.trim().parse::<i64>().ok()?, hi.trim().parse::<i64>().ok()?)));
    match (bounds, step.trim().parse::<i64>()) {
        (Some((lo, hi)), Ok(st)) if 1 <= lo && lo <= hi && st >= 1 => Ok((name.to_string(), range.to_string())),
        _ => Err(format!("expected {shape}")),
    }
}

/// A matrix file, `.mtx`, `.npz`, `.tns` or `.json` (`tune --csr`).
pub fn matrix_file(s: &str) -> Result<String, String> {
    check_format(s, MATRIX_FILES)?;
    Ok(s.to_string())
}

/// Validates with `parse` but keeps the text as given, for flags whose
/// command reads the value itself.
pub fn checked<T: 'static>(
    parse: fn(&str) -> Result<T, String>,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |s: &str| parse(s).map(|_| s.to_string())
}

/// `--encoding NAME=ENCODING` (`A=CSR`); the encoding is resolved later, for
/// the operand's rank.
pub fn encoding_binding(s: &str) -> Result<(String, String), String> {
    let (name, text) = binding_parts(s, "NAME=ENCODING, e.g. A=CSR")?;
    Ok((name.to_string(), text.to_string()))
}

/// A tensor file `convert` reads.
pub fn tensor_file(s: &str) -> Result<(), String> {
    check_format(s, MATRIX_FORMATS)
}

/// A tensor file `convert` writes.
pub fn tensor_output(s: &str) -> Result<(), String> {
    check_format(s, TENSOR_OUTPUT_FORMATS)
}

/// `run --output PATH`: a file name whose extension says the format.
pub fn output_file(s: &str) -> Result<String, String> {
    check_format(s, OUTPUT_FORMATS)?;
    Ok(s.to_string())
}

/// `ROWSxCOLS` (`--output-dims 1024x1024`).
pub fn dims2(s: &str) -> Result<(u64, u64), String> {
    s.split_once(['x', 'X'])
        .and_then(|(r, c)| Some((r.trim().parse::<u64>().ok()?, c.trim().parse::<u64>().ok()?)))
        .ok_or_else(|| "expected ROWSxCOLS, e.g. 1024x1024".to_string())
}

/// `A,B,C=FILE` with exactly `names` names (`--csr offset,col,val=M.mtx`), FILE a matrix file.
pub fn buffers_from_matrix(names: usize) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let example = ["OFFSETS", "COL_INDICES", "VALUES"][..names.min(3)].join(",");
        let (list, path) = binding_parts(s, &format!("{example}=FILE"))?;
        let count = list.split(',').filter(|n| !n.trim().is_empty()).count();
        if count != names || list.split(',').count() != names {
            return Err(format!(
                "expected {names} buffer name(s) separated by commas before `=`, e.g. {example}=FILE.mtx"
            ));
        }
        check_format(path, MATRIX_FILES)?;
        Ok(s.to_string())
    }
}

/// The files a matrix given as plain buffers (`--csr`, `--lil`, …) may come
/// from: any tensor file `heddle convert` reads.
const MATRIX_FILES: &[&str] = &["mtx", "npz", "tns", "json"];

fn binding_parts<'a>(s: &'a str, shape: &str) -> Result<(&'a str, &'a str), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => Ok((k.trim(), v.trim())),
        _ => Err(format!("expected {shape}")),
    }
}

fn check_format(path: &str, formats: &[&str]) -> Result<(), String> {
    let ext = std::path::Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or("");
    if formats.contains(&ext) {
        return Ok(());
    }
    let list: Vec<String> = formats.iter().map(|f| format!(".{f}")).collect();
    let said = if ext.is_empty() { "has no extension".to_string() } else { format!("is a .{ext} file") };
    Err(format!("`{path}` {said}; the format is taken from the extension: {}", list.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings() {
        assert_eq!(nat_binding("n=12"), Ok(("n".into(), 12)));
        assert!(nat_binding("n=abc").unwrap_err().contains("not a natural"));
        assert!(nat_binding("n=-1").unwrap_err().contains("negative"));
        assert!(nat_binding("n").is_err() && nat_binding("=3").is_err());
        assert!(input_binding("xs=a.csv").unwrap_err().contains(".npy, .json, .npz"));
        assert_eq!(input_binding("xs=a.npz:x"), Ok(("xs".into(), "a.npz:x".into())));
        assert!(input_binding("xs=a.npy:x").is_err());
        assert_eq!(output_file("o.json"), Ok("o.json".into()));
        assert!(output_file("out.csv").is_err() && output_file("out").is_err());
        assert_eq!(dims2("3x4"), Ok((3, 4)));
        assert!(buffers_from_matrix(3)("a,b=m.mtx").is_err());
        assert!(buffers_from_matrix(2)("a,b=m.mtx").is_ok());
    }
}

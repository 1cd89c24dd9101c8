//! `heddle convert IN --to ENCODING -o OUT [--defs FILE]`: read a tensor
//! (`.mtx`, `.tns`, `.npz`, `.json`), store it in ENCODING, write it (`.mtx`,
//! `.tns`, `.npz`, or `.json` = its storage, LANGUAGE.md §7) through
//! `heddle_runtime::sparse::write`, the writer `run -o` uses too.

use super::type_cmd::{check_encoding_arg, resolve_encoding};
use super::{Failure, Output};
use heddle_ir::encoding::print_encoding;
use heddle_runtime::sparse::stats::{BufferStats, StorageStats};
use heddle_runtime::sparse::{file, write};
use std::path::Path;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The input tensor: .mtx, .tns, .npz (scipy.sparse.save_npz), or .json (nested lists, or a stored tensor's storage).
    #[arg(value_parser = super::args::checked(super::args::tensor_file))]
    input: String,
    /// The target encoding: a name (CSR, CSC, COO, DCSR, DCSC, CSF, BSR(r, c)), TACO's level
    /// letters (`ds`, `ds:1,0`), `#sparse_tensor.encoding<{...}>`, or `#NAME` from --defs; `auto`
    /// for a matrix: the structural inspector's first choice (printed; `auto` in --json).
    #[arg(long)]
    to: String,
    /// Where to write: .json (the storage), .mtx, .tns or .npz (scipy.sparse.load_npz reads it).
    #[arg(long, short, value_parser = super::args::checked(super::args::tensor_output))]
    output: String,
    /// A file with `#NAME = #sparse_tensor.encoding<{...}>` lines.
    #[arg(long)]
    defs: Option<String>,
    /// With `--to 'SELL(C…)'`: the operand whose arrays the archive holds
    /// (`NAME_soff`, `NAME_cols`, `NAME_vals`, …, as `heddle sparsify
    /// --encoding NAME=SELL(C…)` names the kernel's parameters); `A` by default.
    #[arg(long, value_parser = super::args::checked(parameter_name))]
    name: Option<String>,
    /// Store the values at this element type (heddle or MLIR spelling: f16, bf16,
    /// f32, f64, i32, ...), rounded once to nearest; the file's own type by default.
    #[arg(long, value_parser = super::type_cmd::parse_elem)]
    elem: Option<heddle_ir::ScalarType>,
    /// Also report what the storage holds: per level its format, size and the
    /// entries and bytes of its positions and coordinates buffers; the stored
    /// values, how many hold entries and how many are padding; DIA's diagonals
    /// and BSR's blocks (`stats` in --json); for a matrix, its structure (row lengths,
    /// diagonals, block and SELL-8 fills) and the inspector's ranking of formats
    /// (`inspection` in --json).
    #[arg(long)]
    stats: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    if let Some(spec) = heddle_rewrite::sparsify::sell::parse_name(&a.to) {
        let spec = spec.map_err(|m| Failure::usage("--to", format!("--to {}: {m}", a.to.trim())))?;
        return sell(a, spec);
    }
    if a.name.is_some() {
        super::warn(
            "--name applies to --to 'SELL(C…)' (the archive's array names); a tensor encoding's output ignores it",
        );
    }
    let auto = super::auto::is_auto(&a.to);
    if !auto {
        check_encoding_arg("--to", &a.to, a.defs.as_deref())?;
    }
    let format = write::Format::from_path(Path::new(&a.output)).map_err(|e| Failure::Input(e.to_string()))?;
    let t0 = Instant::now();
    // A Matrix Market file holds a matrix: its target is known before the
    // read, which then reads at the target's widths where it can.
    let input = Path::new(&a.input);
    let matrix = input.extension().is_some_and(|e| e.eq_ignore_ascii_case("mtx"));
    let early = if matrix && !auto { Some(resolve_encoding("--to", &a.to, a.defs.as_deref(), Some(2))?) } else { None };
    let contents = match &early {
        Some(enc) => file::read_as_written_for(input, enc),
        None => file::read_as_written(input),
    }
    .map_err(|e| Failure::Input(e.to_string()))?;
    let entries_read = contents.len();
    let t1 = Instant::now();
    // `--to auto`: the inspector's first choice that a tensor encoding expresses.
    let mut chosen = None;
    let enc = match early {
        Some(enc) => enc,
        None if auto => {
            let coo = super::auto::entries_of(&contents);
            let elem = a.elem.unwrap_or(coo.elem());
            let (_, ranking) = super::auto::inspect_ranked(&coo, elem, &a.input)?;
            // SELL is no tensor encoding (only the front door's `--encoding` takes it): passed over.
            let expressed = |t: &str| heddle_rewrite::sparsify::sell::parse_name(t).is_none();
            let first = ranking.candidates.into_iter().find(|c| c.encoding.as_deref().is_some_and(expressed));
            let first = first.ok_or_else(|| Failure::Input(format!("{}: no format to choose", a.input)))?;
            let text = first.encoding.clone().unwrap_or_default();
            let enc = resolve_encoding("--to", &text, None, Some(2))?;
            chosen = Some(first);
            enc
        }
        None => resolve_encoding("--to", &a.to, a.defs.as_deref(), Some(contents.rank()))?,
    };
    let mut t = contents.into_encoding(&enc).map_err(|e| Failure::Input(format!("{}: {e}", a.input)))?;
    if let Some(elem) = a.elem {
        let values = std::mem::take(&mut t.values);
        t.values = values.convert(elem).map_err(|e| {
            Failure::Input(format!(
                "{}: stored value {} does not convert to {elem}: {}",
                a.input, e.position, e.message
            ))
        })?;
        t.elem = elem;
    }
    let t2 = Instant::now();
    // A sliced encoding's window: `.json` storage names the sliced encoding,
    // so the file reads back as the window for a parameter of it.
    let written = if enc.dims.iter().any(|d| d.slice.is_some()) {
        write::write_window(&t, &enc, format, Path::new(&a.output))
    } else {
        write::write_as(&t, format, Path::new(&a.output))
    };
    written.map_err(|e| Failure::Input(e.to_string()))?;
    let t3 = Instant::now();
    let dims: Vec<String> = t.dim_sizes.iter().map(u64::to_string).collect();
    let text = format!(
        "{} ({} entries read) -> {} ({}, {} stored values)\n",
        a.input,
        entries_read,
        a.output,
        dims.join("x"),
        t.nse()
    );
    let text = match &chosen {
        Some(c) => format!("auto: {} ({})\n", c.name, c.reason) + &text,
        None => text,
    };
    let stats = a.stats.then(|| t.stats());
    let text = match &stats {
        Some(s) => text + &stats_text(s),
        None => text,
    };
    // A matrix's structure and the inspector's ranking, with --stats.
    let inspection = if a.stats && t.dim_sizes.len() == 2 {
        Some(super::auto::inspect_ranked(&t.to_coo(), t.elem, &a.input)?)
    } else {
        None
    };
    let text = match &inspection {
        Some((s, r)) => text + &heddle_runtime::sparse::inspect::text(s, r),
        None => text,
    };
    let mut json = serde_json::json!({
        "ok": true,
        "input": a.input,
        "output": a.output,
        "encoding": print_encoding(&enc),
        "dim_sizes": t.dim_sizes,
        "lvl_sizes": t.lvl_sizes,
        "entries_read": entries_read,
        "nse": t.nse(),
        "read_seconds": (t1 - t0).as_secs_f64(),
        "convert_seconds": (t2 - t1).as_secs_f64(),
        "write_seconds": (t3 - t2).as_secs_f64(),
    });
    if let Some(s) = stats {
        json["stats"] = serde_json::to_value(s).map_err(|e| Failure::Input(e.to_string()))?;
    }
    if let Some((s, r)) = inspection {
        json["inspection"] = serde_json::json!({ "structure": s, "ranking": r });
    }
    if let Some(c) = chosen {
        json["auto"] = serde_json::json!({ "encoding": c.name, "reason": c.reason });
    }
    Ok(Output { text, json })
}

/// `--stats` for people: one line per level, then the values.
fn stats_text(s: &StorageStats) -> String {
    let buf = |what: &str, b: &Option<BufferStats>| {
        b.as_ref().map(|b| format!(", {} {what} ({}-bit, {} bytes)", b.count, b.bits, b.bytes)).unwrap_or_default()
    };
    let mut out = String::new();
    for (l, level) in s.levels.iter().enumerate() {
        out += &format!(
            "level {l}: {} of size {}{}{}\n",
            level.format,
            level.size,
            buf("positions", &level.positions),
            buf("coordinates", &level.coordinates)
        );
    }
    out += &format!(
        "values: {} ({}-bit, {} bytes): {} entries, {} padding\n",
        s.values.count, s.values.bits, s.values.bytes, s.entries, s.padding
    );
    if let Some(d) = s.diagonals {
        out += &format!("diagonals: {d}\n");
    }
    if let (Some(b), Some(shape)) = (s.blocks, &s.block_shape) {
        let shape: Vec<String> = shape.iter().map(u64::to_string).collect();
        out += &format!("blocks: {b} of {}\n", shape.join("x"));
    }
    out += &format!("storage: {} bytes\n", s.bytes);
    out
}

/// `--to 'SELL(C…)'`: the matrix laid out as SELL-C-σ, written as a numpy
/// archive of the arrays a SELL kernel takes (`super::sell::export`). SELL is
/// no tensor encoding, so this is the one output it has.
fn sell(a: &Args, spec: heddle_rewrite::sparsify::sell::SellSpec) -> Result<Output, Failure> {
    let output = Path::new(&a.output);
    if !output.extension().is_some_and(|e| e.eq_ignore_ascii_case("npz")) {
        return Err(Failure::usage(
            "--output",
            format!(
                "`{}`: SELL-C-σ is written as a .npz archive of its arrays (`-o FILE.npz`); it is no tensor encoding, \
                 so no other format holds it",
                a.output
            ),
        ));
    }
    if a.stats {
        super::warn("--stats describes a tensor encoding's storage; --to 'SELL(C…)' lists its arrays instead");
    }
    let t0 = Instant::now();
    let contents = file::read_as_written(Path::new(&a.input)).map_err(|e| Failure::Input(e.to_string()))?;
    let coo = super::auto::entries_of(&contents);
    if coo.rank() != 2 {
        return Err(Failure::Input(format!(
            "{}: SELL-C-σ stores a matrix; this tensor has rank {}",
            a.input,
            coo.rank()
        )));
    }
    let elem = a.elem.unwrap_or(coo.elem());
    let (rows, cols) = (coo.dims[0], coo.dims[1]);
    let t1 = Instant::now();
    let arrays = super::sell::export(&coo, &spec, elem, a.name.as_deref().unwrap_or("A"), &a.input)?;
    let t2 = Instant::now();
    let named: Vec<_> = arrays
        .iter()
        .map(|(name, data, shape)| heddle_runtime::sparse::npz::NamedArray {
            name: name.clone(),
            data,
            shape: shape.clone(),
        })
        .collect();
    heddle_runtime::sparse::npz::write_arrays(output, &named).map_err(|e| Failure::Io(e.to_string()))?;
    let t3 = Instant::now();
    let listed: Vec<String> = arrays
        .iter()
        .map(|(name, data, shape)| match shape.as_slice() {
            [] => format!("  {name} = {}", data.num(0)),
            _ => format!("  {name}: {} × {}", data.len(), heddle_runtime::io::npy::descr(data.elem())),
        })
        .collect();
    let text = format!("{} -> {} ({}):\n{}\n", a.input, a.output, spec, listed.join("\n"));
    let json = serde_json::json!({
        "ok": true,
        "input": a.input,
        "output": a.output,
        "encoding": spec.to_string(),
        "dim_sizes": [rows, cols],
        "entries_read": coo.len(),
        // Stored values, padding included, as a tensor's nse counts a dense level's.
        "nse": arrays.iter().find(|(name, ..)| name.ends_with("_vals")).map_or(0, |(_, data, _)| data.len()),
        "arrays": arrays.iter().map(|(name, data, shape)| serde_json::json!({
            "name": name, "dtype": heddle_runtime::io::npy::descr(data.elem()), "shape": shape,
        })).collect::<Vec<_>>(),
        "read_seconds": (t1 - t0).as_secs_f64(),
        "convert_seconds": (t2 - t1).as_secs_f64(),
        "write_seconds": (t3 - t2).as_secs_f64(),
    });
    Ok(Output { text, json })
}

/// `--name NAME`: a kernel parameter's name (letters, digits and `_`, not
/// starting with a digit), as the archive's array names start with it.
fn parameter_name(text: &str) -> Result<String, String> {
    let mut chars = text.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(text.to_string())
    } else {
        Err(format!("`{text}` is not a parameter name (letters, digits and `_`, not starting with a digit)"))
    }
}

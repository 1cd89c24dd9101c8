//! `heddle type 'ENCODING' [--dims 4x8] [--elem f32] [--name A] [--defs FILE]`:
//! the storage buffers of a sparse encoding as position-dependent heddle
//! types, and the tensor's view in programs (LANGUAGE.md §6).

use super::{Failure, Output};
use heddle::source::SourceFile;
use heddle_ir::ErrorKind;
use heddle_ir::ScalarType;
use heddle_ir::encoding::storage_types::BufferKind;
use heddle_ir::encoding::{Encoding, Named, named, parse_encoding, print_encoding, storage_layout};
use heddle_ir::parser::parse_encoding_defs;
use heddle_ir::printer::{print_nat, print_type};

#[derive(clap::Args)]
pub struct Args {
    /// `#sparse_tensor.encoding<{...}>`, a name (CSR, CSC, COO, DCSR, DCSC, CSF, BSR(r, c)),
    /// TACO's level letters (`ds`, `ds:1,0`), or `#NAME` defined in the --defs file.
    encoding: String,
    /// Dimension sizes, `4x8` or `?x8` (`?` for a size the program binds); all `?` by default.
    #[arg(long, value_parser = parse_dims)]
    dims: Option<Dims>,
    /// Element type (heddle or MLIR spelling).
    #[arg(long, default_value = "f32", value_parser = parse_elem)]
    elem: ScalarType,
    /// The parameter's name, the prefix of every buffer.
    #[arg(long, default_value = "A")]
    name: String,
    /// A file with `#NAME = #sparse_tensor.encoding<{...}>` lines.
    #[arg(long)]
    defs: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// Parsed `--dims`.
#[derive(Clone, Debug)]
pub struct Dims(pub Vec<Option<u64>>);

/// `4x8`, `?x?`, `16`.
pub fn parse_dims(s: &str) -> Result<Dims, String> {
    s.split('x')
        .map(|d| match d.trim() {
            "?" => Ok(None),
            t => t.parse::<u64>().map(Some).map_err(|_| format!("`{t}` is not a size (write e.g. 4x8 or ?x8)")),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Dims)
}

pub(super) fn parse_elem(s: &str) -> Result<ScalarType, String> {
    ScalarType::from_keyword(s)
        .or_else(|| heddle_ir::parser::mlir_scalar(s))
        .ok_or_else(|| format!("`{s}` is not a scalar type"))
}

/// Resolves an encoding given on the command line (`flag` says where): an
/// MLIR attribute, `#NAME` / `NAME` defined in the `defs` file, or a built-in
/// name (`CSR`, `BSR(2, 3)`, TACO's `ds:1,0`; LANGUAGE.md §6) for a tensor of
/// `rank` dimensions when known. A malformed value is a usage error located
/// in the flag's text; an error in the defs file is located there.
pub fn resolve_encoding(flag: &str, arg: &str, defs: Option<&str>, rank: Option<usize>) -> Result<Encoding, Failure> {
    // A flag's value that is not an encoding is a usage error; the argument
    // of `heddle type` is that command's input (exit 1, syntax or type).
    let is_flag = flag.starts_with("--");
    let shown = if is_flag { flag } else { "<encoding>" };
    let in_flag = |d: heddle_ir::Diagnostic| {
        let d = if is_flag { d.with_kind(ErrorKind::Usage) } else { d };
        Failure::Source(SourceFile::new(shown, arg), vec![d])
    };
    let wrong = |message: String| {
        if is_flag {
            Failure::usage(flag, message)
        } else {
            let all = heddle_ir::Span::new(0, arg.len());
            Failure::Source(
                SourceFile::new(shown, arg),
                vec![heddle_ir::Diagnostic::new(all, message).with_kind(ErrorKind::Syntax)],
            )
        }
    };
    let start = arg.len() - arg.trim_start().len();
    let trimmed = arg.trim();
    if trimmed.starts_with("#sparse_tensor") {
        return parse_encoding(trimmed, start).map_err(in_flag);
    }
    let name = trimmed.trim_start_matches('#');
    if let Some(path) = defs {
        let file = SourceFile::read(path).map_err(Failure::Io)?;
        let found = parse_encoding_defs(&file.text).map_err(|d| Failure::Source(file.clone(), d))?;
        if let Some(def) = found.iter().rev().find(|d| d.name.as_str() == name) {
            return named::resolve(&def.encoding.text, def.encoding.span.start as usize, rank)
                .map_err(|d| Failure::Source(file.clone(), vec![d]));
        }
        if trimmed.starts_with('#') {
            let known: Vec<String> = found.iter().map(|d| format!("#{}", d.name)).collect();
            return Err(wrong(format!("{path} defines no encoding `{trimmed}` (it defines: {})", known.join(", "))));
        }
    }
    if heddle_rewrite::sparsify::sell::parse_name(name).is_some() {
        return Err(wrong(format!(
            "`{trimmed}` is heddle's SELL layout, not a sparse tensor encoding: `heddle sparsify` and `heddle run` \
             take it as --encoding NAME=SELL(C) for a dense matrix operand; it is no tensor type's encoding"
        )));
    }
    let at = start + (trimmed.len() - name.len());
    match Named::parse(name) {
        // A well-formed name of another rank does not fit this kernel: not a usage error.
        Some(Ok(n)) if n.rank().zip(rank).is_some_and(|(own, r)| own != r) => {
            let d = named::resolve(name, at, rank)
                .err()
                .unwrap_or_else(|| heddle_ir::Diagnostic::new(heddle_ir::Span::DUMMY, "rank"));
            Err(Failure::Source(SourceFile::new(shown, arg), vec![d.with_kind(ErrorKind::Type)]))
        }
        Some(_) => named::resolve(name, at, rank).map_err(in_flag),
        None => Err(wrong(format!(
            "`{arg}` is not an encoding: write a name ({}), TACO's level letters (`ds`, `ds:1,0`), \
                 `#sparse_tensor.encoding<{{...}}>`, or `#NAME` defined in a file given with --defs",
            named::NAMES.join(", ")
        ))),
    }
}

/// Checks an encoding flag's text before any work, where that needs no
/// rank and no file: an MLIR attribute parses, a name form is well written.
pub fn check_encoding_arg(flag: &str, arg: &str, defs: Option<&str>) -> Result<(), Failure> {
    let trimmed = arg.trim();
    // SELL(C) is no encoding: only the front door's `--encoding` takes it.
    if let Some(sell) = heddle_rewrite::sparsify::sell::parse_name(trimmed) {
        if flag != "--encoding" {
            return resolve_encoding(flag, arg, defs, None).map(|_| ());
        }
        return sell.map(|_| ()).map_err(|m| Failure::usage(flag, format!("{flag} {trimmed}: {m}")));
    }
    if trimmed.starts_with("#sparse_tensor") {
        return resolve_encoding(flag, arg, defs, None).map(|_| ());
    }
    match Named::parse(trimmed.trim_start_matches('#')) {
        Some(Err(_)) if defs.is_none() => resolve_encoding(flag, arg, defs, None).map(|_| ()),
        _ => Ok(()),
    }
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let rank = a.dims.as_ref().map(|d| d.0.len());
    let enc = resolve_encoding("ENCODING", &a.encoding, a.defs.as_deref(), rank)?;
    let dims = a.dims.clone().map_or_else(|| vec![None; enc.dim_rank()], |d| d.0);
    let layout = storage_layout(&enc, &dims, a.elem, &a.name)
        .map_err(|d| Failure::Input(format!("{} (the encoding has {} dimensions)", d.message, enc.dim_rank())))?;
    let nats = |v: &[heddle_ir::Nat]| v.iter().map(print_nat).collect::<Vec<_>>();
    let mut text = format!("encoding: {}\n", print_encoding(&enc));
    text.push_str(&format!("dimension sizes: [{}]\n", nats(&layout.dim_sizes).join(", ")));
    text.push_str(&format!("level sizes: [{}]\n", nats(&layout.lvl_sizes).join(", ")));
    text.push_str("storage:\n");
    // MLIR's memref shape, which shows a batched buffer's rows (`memref<A_dim0 x ? x i64>`).
    let memref = |b: &heddle_ir::encoding::storage_types::Buffer| {
        b.shape
            .iter()
            .map(|n| {
                let t = print_nat(n);
                if t.contains(' ') { format!("({t})") } else { t }
            })
            .collect::<Vec<_>>()
            .join(" x ")
    };
    for b in &layout.buffers {
        text.push_str(&format!("  {} : {}\n", b.name, print_type(&b.ty)));
        if layout.batch_levels > 0 {
            text.push_str(&format!("    shape: {} (one row per batch)\n", memref(b)));
        }
    }
    if let Some(v) = layout.iso {
        // `explicitVal` on storage whose every value slot is an entry: no buffer.
        text.push_str(&format!("  (no values buffer: every stored entry is {v}, the explicitVal)\n"));
    }
    text.push_str(&format!("stored entries: {}\nview: {}\n", print_nat(&layout.nse), print_type(&layout.view)));
    let buffers: Vec<_> = layout
        .buffers
        .iter()
        .map(|b| {
            serde_json::json!({
                "name": b.name.as_str(),
                "kind": match b.kind { BufferKind::Positions => "positions", BufferKind::Coordinates => "coordinates", BufferKind::Values => "values" },
                "level": b.level,
                "type": print_type(&b.ty),
                "length": print_nat(&b.len),
                "shape": b.shape.iter().map(print_nat).collect::<Vec<_>>(),
            })
        })
        .collect();
    let levels: Vec<_> = enc
        .levels
        .iter()
        .zip(&layout.lvl_sizes)
        .map(|(l, s)| serde_json::json!({ "format": l.format.keyword(), "nonunique": l.props.nonunique, "nonordered": l.props.nonordered, "soa": l.props.soa, "size": print_nat(s) }))
        .collect();
    let mut json = serde_json::json!({
            "ok": true,
            "encoding": print_encoding(&enc),
            "dim_sizes": nats(&layout.dim_sizes),
            "lvl_sizes": nats(&layout.lvl_sizes),
            "levels": levels,
            "pos_width": enc.pos_width.bits(),
            "crd_width": enc.crd_width.bits(),
            "buffers": buffers,
            "nse": print_nat(&layout.nse),
            "view": print_type(&layout.view),
            "nat_vars": layout.nat_vars.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
    });
    if let Some(v) = layout.iso {
        json["iso_value"] = v.to_string().into();
    }
    Ok(Output { text, json })
}

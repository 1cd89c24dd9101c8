//! `heddle type 'ENCODING' [--dims 4x8] [--elem f32] [--name A] [--defs FILE]`:
//! the storage buffers of a sparse encoding as position-dependent heddle
//! types, and the tensor's view in programs (LANGUAGE.md §6).

use super::{Failure, Output};
use heddle::source::SourceFile;
use heddle_ir::ScalarType;
use heddle_ir::encoding::storage_types::BufferKind;
use heddle_ir::encoding::{Encoding, parse_encoding, print_encoding, storage_layout};
use heddle_ir::printer::{print_nat, print_type};

#[derive(clap::Args)]
pub struct Args {
    /// `#sparse_tensor.encoding<{...}>`, or `#NAME` defined in the --defs file.
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

fn parse_elem(s: &str) -> Result<ScalarType, String> {
    ScalarType::from_keyword(s)
        .or_else(|| heddle_ir::parser::mlir_scalar(s))
        .ok_or_else(|| format!("`{s}` is not a scalar type"))
}

/// Resolves an encoding argument: inline text, or `#NAME` / `NAME` from `defs`.
/// Errors are located in the text they come from.
pub fn resolve_encoding(arg: &str, defs: Option<&str>) -> Result<Encoding, Failure> {
    let trimmed = arg.trim();
    if trimmed.starts_with("#sparse_tensor.encoding") {
        let file = SourceFile::new("<encoding>", arg);
        let start = arg.len() - arg.trim_start().len();
        return parse_encoding(trimmed, start).map_err(|d| Failure::Source(file, vec![d]));
    }
    let name = trimmed.trim_start_matches('#');
    let Some(path) = defs else {
        return Err(Failure::Input(format!(
            "`{arg}` is not an encoding: write `#sparse_tensor.encoding<{{...}}>`, or name one defined in a file given with --defs"
        )));
    };
    let file = SourceFile::read(path).map_err(Failure::Input)?;
    let tokens = heddle_ir::lexer::lex(&file.text)
        .map_err(|d| Failure::Source(SourceFile::new(path, file.text.clone()), vec![d]))?;
    use heddle_ir::lexer::Tok;
    for w in tokens.windows(3) {
        if let (Tok::HashName(n), Tok::Sym("="), Tok::Encoding(text)) = (&w[0].tok, &w[1].tok, &w[2].tok)
            && n == name
        {
            let start = w[2].span.start as usize;
            return parse_encoding(text, start)
                .map_err(|d| Failure::Source(SourceFile::new(path, file.text.clone()), vec![d]));
        }
    }
    Err(Failure::Input(format!("{path}: no encoding `#{name}` is defined there")))
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let enc = resolve_encoding(&a.encoding, a.defs.as_deref())?;
    let dims = a.dims.clone().map_or_else(|| vec![None; enc.dim_rank()], |d| d.0);
    let layout = storage_layout(&enc, &dims, a.elem, &a.name)
        .map_err(|d| Failure::Input(format!("{} (the encoding has {} dimensions)", d.message, enc.dim_rank())))?;
    let nats = |v: &[heddle_ir::Nat]| v.iter().map(print_nat).collect::<Vec<_>>();
    let mut text = format!("encoding: {}\n", print_encoding(&enc));
    text.push_str(&format!("dimension sizes: [{}]\n", nats(&layout.dim_sizes).join(", ")));
    text.push_str(&format!("level sizes: [{}]\n", nats(&layout.lvl_sizes).join(", ")));
    text.push_str("storage:\n");
    for b in &layout.buffers {
        text.push_str(&format!("  {} : {}\n", b.name, print_type(&b.ty)));
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
            })
        })
        .collect();
    let levels: Vec<_> = enc
        .levels
        .iter()
        .zip(&layout.lvl_sizes)
        .map(|(l, s)| serde_json::json!({ "format": l.format.keyword(), "nonunique": l.props.nonunique, "nonordered": l.props.nonordered, "soa": l.props.soa, "size": print_nat(s) }))
        .collect();
    Ok(Output {
        text,
        json: serde_json::json!({
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
        }),
    })
}

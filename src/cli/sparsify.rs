//! `heddle sparsify FILE --encoding A=#CSR [--defs FILE]`: the front door.
//! A kernel written over dense arrays becomes the kernel over the named
//! operands' sparse views (heddle_rewrite::sparsify), type-checked; also
//! used by `heddle run --encoding` and `heddle search-formats`.

use super::type_cmd::resolve_encoding;
use super::{Failure, Output};
use heddle::source::SourceFile;
use heddle_ir::Program;
use heddle_ir::encoding::Encoding;
use heddle_typeck::Kernel;
use std::collections::BTreeMap;

#[derive(clap::Args)]
pub struct Args {
    /// The source file, written over dense arrays.
    file: String,
    /// An operand and its encoding: NAME=#sparse_tensor.encoding<{...}>, or NAME=#ENC defined in --defs.
    #[arg(long = "encoding", value_name = "NAME=ENCODING", required = true)]
    encodings: Vec<String>,
    /// A file with `#NAME = #sparse_tensor.encoding<{...}>` lines.
    #[arg(long)]
    defs: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// `NAME=ENCODING` split and the encoding resolved, with the name the
/// sparse program defines it under.
pub fn parse_spec(spec: &str, defs: Option<&str>) -> Result<(String, String, Encoding), Failure> {
    let Some((name, enc)) = spec.split_once('=').filter(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty()) else {
        return Err(Failure::Input(format!("--encoding {spec}: expected NAME=ENCODING (e.g. A=#CSR with --defs, or A='#sparse_tensor.encoding<{{...}}>')")));
    };
    let name = name.trim().to_string();
    let encoding = resolve_encoding(enc, defs)?;
    let trimmed = enc.trim();
    // A named encoding keeps its name; an inline one is named after the operand.
    let enc_name = if trimmed.starts_with("#sparse_tensor") { format!("{name}_enc") } else { trimmed.trim_start_matches('#').to_string() };
    Ok((name, enc_name, encoding))
}

/// What the front door produced.
pub struct Sparse {
    /// The sparse program's text, named after the dense file: later errors
    /// point into what the user can print with `heddle sparsify`.
    pub file: SourceFile,
    /// The checked sparse kernel.
    pub kernel: Kernel,
    /// How often each law changed the e-graph, over all operands.
    pub laws: BTreeMap<String, usize>,
}

/// Sparsifies `program` (read from `file`) for every operand encoding, then
/// type-checks it.
pub fn front_door(file: &SourceFile, program: &Program, specs: &[(String, String, Encoding)]) -> Result<Sparse, Failure> {
    let mut program = program.clone();
    let mut src = file.clone();
    let mut laws = BTreeMap::new();
    for (k, (operand, _, _)) in specs.iter().enumerate() {
        if specs[..k].iter().any(|(o, _, _)| o == operand) {
            return Err(Failure::Input(format!("--encoding {operand}=…: `{operand}` is given an encoding twice")));
        }
    }
    for (operand, enc_name, enc) in specs {
        let out = heddle_rewrite::sparsify::sparsify(&program, operand, enc_name, enc).map_err(|d| Failure::Source(src.clone(), vec![d]))?;
        for (law, n) in out.rules_applied {
            *laws.entry(law).or_default() += n;
        }
        // The next operand's errors are located in this step's text, parsed back.
        src = SourceFile::new(format!("{} (sparsified)", file.name), heddle_ir::printer::print_program(&out.program));
        program = heddle_ir::parser::parse_program(&src.text).map_err(|d| Failure::Source(src.clone(), d))?;
    }
    let text = heddle_ir::printer::print_program(&program);
    let sparse = SourceFile::new(format!("{} (sparsified)", file.name), text);
    match heddle::check_source(&sparse) {
        Ok((_, kernel)) => Ok(Sparse { file: sparse, kernel, laws }),
        Err(d) => Err(Failure::Source(sparse, d)),
    }
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let (file, program, _) = super::load(&a.file)?;
    let specs = a.encodings.iter().map(|s| parse_spec(s, a.defs.as_deref())).collect::<Result<Vec<_>, _>>()?;
    let Sparse { file: sparse, kernel, laws } = front_door(&file, &program, &specs)?;
    let json = serde_json::json!({
        "ok": true,
        "program": sparse.text,
        "type": kernel.ty.to_string(),
        "laws_applied": laws,
    });
    Ok(Output { text: sparse.text.clone(), json })
}

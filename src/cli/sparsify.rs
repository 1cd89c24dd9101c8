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
    /// An operand and its encoding: NAME=#sparse_tensor.encoding<{...}>, a name (CSR, DIA, BSR(r, c), …),
    /// NAME=#ENC defined in --defs, or NAME=SELL(C) (heddle's SELL-C layout: three arrays, C rows per slice;
    /// SELL(C, sigma = S) sorts rows by length within windows of S rows);
    /// NAME=auto chooses it from the structure of NAME's --matrix file (said on stderr, and under
    /// `auto` with --json).
    #[arg(long = "encoding", value_name = "NAME=ENCODING", required = true, value_parser = super::args::encoding_binding)]
    encodings: Vec<(String, String)>,
    /// The matrix file of an operand given NAME=auto: NAME=FILE (.mtx, .tns, .npz or .json), inspected
    /// (not stored) to choose its encoding.
    #[arg(long = "matrix", value_name = "NAME=FILE", value_parser = super::args::matrix_binding)]
    matrices: Vec<(String, String)>,
    /// A file with `#NAME = #sparse_tensor.encoding<{...}>` lines.
    #[arg(long)]
    defs: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// How an operand is stored: an MLIR encoding (named or pasted), or
/// heddle's own SELL-C layout (`heddle_rewrite::sparsify::sell`), which no
/// encoding expresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// A sparse tensor encoding: the operand becomes a `tensor<…, #ENC>`.
    Encoding(Encoding),
    /// `SELL(C)` (with `crdWidth = 16`, `sigma = S`): the operand becomes three
    /// arrays (`A_soff`, `A_cols`, `A_vals`) with `C` lanes per slice; with
    /// σ > 1 the rows are sorted within windows of σ by the packer, and the
    /// result is put back in row order after the kernel.
    Sell(heddle_rewrite::sparsify::sell::SellSpec),
}

/// An operand, the name its encoding is defined under in the sparse
/// program (unused for SELL), and its format.
pub type Spec = (String, String, Format);

/// The SELL operands among `specs`: (operand, how it is stored).
pub fn sell_operands(specs: &[Spec]) -> Vec<(String, heddle_rewrite::sparsify::sell::SellSpec)> {
    specs
        .iter()
        .filter_map(|(o, _, f)| match f {
            Format::Sell(spec) => Some((o.clone(), spec.clone())),
            Format::Encoding(_) => None,
        })
        .collect()
}

/// `--encoding NAME=ENCODING` with the encoding resolved (for the rank of
/// the operand's dense type in `program`), and the name the sparse program
/// defines it under.
pub fn parse_spec((name, enc): &(String, String), defs: Option<&str>, program: &Program) -> Result<Spec, Failure> {
    let name = name.trim().to_string();
    if let Some(c) = heddle_rewrite::sparsify::sell::parse_name(enc) {
        let c = c.map_err(|m| Failure::usage("--encoding", format!("--encoding {name}={}: {m}", enc.trim())))?;
        return Ok((name, format!("SELL_{}", c.lanes), Format::Sell(c)));
    }
    let encoding = resolve_encoding("--encoding", enc, defs, dense_rank(program, &name))?;
    let trimmed = enc.trim();
    // A named encoding keeps its name (BSR(2, 3) becomes BSR_2_3); an inline one is named after the operand.
    let enc_name = if trimmed.starts_with("#sparse_tensor") {
        format!("{name}_enc")
    } else {
        let ident: String =
            trimmed.trim_start_matches('#').chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        // Runs of separators become one `_` (`BSR(2, 3)` is `BSR_2_3`).
        let ident = ident.split('_').filter(|s| !s.is_empty()).collect::<Vec<_>>().join("_");
        if ident.is_empty() { format!("{name}_enc") } else { ident }
    };
    Ok((name, enc_name, Format::Encoding(encoding)))
}

/// The kernel parameter `operand`, if the kernel has one (looked for along
/// its chain of `nFun`s and `fun`s).
pub fn kernel_param<'a>(program: &'a Program, operand: &str) -> Option<&'a heddle_ir::expr::Param> {
    let mut e = &program.kernel;
    loop {
        match &e.kind {
            heddle_ir::ExprKind::NFun { body, .. } => e = body,
            heddle_ir::ExprKind::Fun { params, body } => {
                if let Some(p) = params.iter().find(|p| p.name.as_str() == operand) {
                    return Some(p);
                }
                e = body;
            }
            _ => return None,
        }
    }
}

/// How many array levels the kernel parameter `operand` has, if it is one.
fn dense_rank(program: &Program, operand: &str) -> Option<usize> {
    let mut rank = 0;
    let mut t = kernel_param(program, operand)?.ty.as_ref();
    while let Some(heddle_ir::Type::Array { elem, .. }) = t {
        rank += 1;
        t = Some(elem);
    }
    (rank > 0).then_some(rank)
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
pub fn front_door(file: &SourceFile, program: &Program, specs: &[Spec]) -> Result<Sparse, Failure> {
    let mut program = program.clone();
    let mut src = file.clone();
    let mut laws = BTreeMap::new();
    for (k, (operand, _, _)) in specs.iter().enumerate() {
        if specs[..k].iter().any(|(o, _, _)| o == operand) {
            return Err(Failure::Input(format!("--encoding {operand}=…: `{operand}` is given an encoding twice")));
        }
    }
    for (operand, enc_name, format) in specs {
        let out = match format {
            Format::Encoding(enc) => heddle_rewrite::sparsify::sparsify(&program, operand, enc_name, enc),
            Format::Sell(spec) => heddle_rewrite::sparsify::sell::sparsify_sell(&program, operand, spec),
        }
        .map_err(|d| Failure::Source(src.clone(), vec![d]))?;
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
    let matrix_of = |name: &str| a.matrices.iter().find(|(k, _)| k.trim() == name.trim()).map(|(_, p)| p.as_str());
    for (name, enc) in &a.encodings {
        if super::auto::is_auto(enc) {
            if matrix_of(name).is_none() {
                return Err(Failure::usage(
                    "--encoding",
                    format!(
                        "--encoding {name}=auto chooses from the matrix `{name}` will hold: give its file with --matrix {name}=FILE \
                         (as `heddle run --encoding {name}=auto --matrix {name}=FILE` does; `heddle convert FILE --stats` shows what the choice reads)"
                    ),
                ));
            }
            continue;
        }
        super::type_cmd::check_encoding_arg("--encoding", enc, a.defs.as_deref())?;
    }
    if let Some((name, _)) = a
        .matrices
        .iter()
        .find(|(k, _)| !a.encodings.iter().any(|(n, e)| n.trim() == k.trim() && super::auto::is_auto(e)))
    {
        return Err(Failure::usage(
            "--matrix",
            format!(
                "--matrix {name}=…: sparsify reads a matrix only to choose an encoding, for --encoding {name}=auto"
            ),
        ));
    }
    let (file, program, _) = super::load(&a.file)?;
    let (given, auto): (Vec<_>, Vec<_>) = a.encodings.iter().partition(|(_, enc)| !super::auto::is_auto(enc));
    let mut specs =
        given.into_iter().map(|s| parse_spec(s, a.defs.as_deref(), &program)).collect::<Result<Vec<_>, _>>()?;
    // Each `auto` is chosen with the operands given and chosen before it, as `run` does.
    let mut choices = Vec::new();
    for (name, _) in auto {
        let name = name.trim();
        let elem = super::auto::matrix_elem(&program, name)?;
        let contents =
            super::auto::read_matrix(matrix_of(name).unwrap_or_default(), elem, &format!("--matrix {name}="))?;
        // No backend here: every format the front door accepts is shown (`run
        // --encoding NAME=auto` also passes over one its backend cannot compile).
        let picked = super::auto::sparsify_auto(
            &file,
            &program,
            name,
            &super::auto::entries_of(&contents),
            &specs,
            &|_| Ok(()),
        )?;
        // Not eprintln!: a closed stderr must not panic.
        let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{}\n", picked.choice.line()));
        specs.push(picked.spec);
        choices.push(picked.choice);
    }
    // Once more with every operand's encoding, as given or chosen: the laws
    // applied are counted over all of them (the choice's kernel is the same).
    let Sparse { file: sparse, kernel, laws } = front_door(&file, &program, &specs)?;
    let mut json = serde_json::json!({
        "ok": true,
        "program": sparse.text,
        "type": kernel.ty.to_string(),
        "laws_applied": laws,
    });
    if !choices.is_empty() {
        let auto: serde_json::Map<String, serde_json::Value> =
            choices.iter().map(|c| (c.operand.clone(), serde_json::to_value(c).unwrap_or_default())).collect();
        json["auto"] = serde_json::Value::Object(auto);
    }
    Ok(Output { text: sparse.text.clone(), json })
}

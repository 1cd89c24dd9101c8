//! Sub-commands. Each returns its output or a [`Failure`]; exit status 0 on
//! success, 1 when the input was wrong, 2 on usage errors (clap's own).

mod check;
mod compile;
mod convert;
mod fmt;
mod matrix;
mod rewrite;
mod run;
mod search_formats;
mod simplify;
mod sparsify;
mod tune;
mod type_cmd;

use clap::{Parser, Subcommand};
use heddle::source::SourceFile;
use heddle_ir::Diagnostic;

/// heddle: a compiler for a functional pattern IR with dependent types, for sparse tensors.
#[derive(Parser)]
#[command(name = "heddle", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and type-check a file; print the kernel's type.
    Check(check::Args),
    /// Print what a kernel compiles to: the loop program or Cranelift IR.
    Compile(compile::Args),
    /// Print the canonical form of a file.
    Fmt(fmt::Args),
    /// Execute the kernel of a file.
    Run(run::Args),
    /// Flattened index formulas before and after Σ elimination.
    Simplify(simplify::Args),
    /// Search a kernel's tunable naturals on the OpenCL backend, per input.
    Tune(tune::Args),
    /// Explore rewrites of the kernel with an e-graph; print the best program found.
    Rewrite(rewrite::Args),
    /// Print a sparse encoding's storage buffers and view as heddle types.
    Type(type_cmd::Args),
    /// Read a tensor, store it in an encoding, write it.
    Convert(convert::Args),
    /// Turn a kernel over dense arrays into the kernel over sparse operands.
    Sparsify(sparsify::Args),
    /// Run a dense kernel with its operand in every encoding; a table sorted by time.
    SearchFormats(search_formats::Args),
}

/// Why a command failed.
pub enum Failure {
    /// Located problems in a source file.
    Source(SourceFile, Vec<Diagnostic>),
    /// A problem with some other input (a data file, a parameter), already worded.
    Input(String),
}

/// What a command prints on success.
pub struct Output {
    /// For people.
    pub text: String,
    /// For `--json`.
    pub json: serde_json::Value,
}

pub fn main() -> i32 {
    let cli = Cli::parse();
    let (json, result) = match cli.command {
        Command::Check(a) => (a.json, check::run(&a)),
        Command::Compile(a) => (a.json, compile::run(&a)),
        Command::Fmt(a) => (a.json, fmt::run(&a)),
        Command::Run(a) => (a.json, run::run(&a)),
        Command::Simplify(a) => (a.json, simplify::run(&a)),
        Command::Tune(a) => (a.json, tune::run(&a)),
        Command::Rewrite(a) => (a.json, rewrite::run(&a)),
        Command::Type(a) => (a.json, type_cmd::run(&a)),
        Command::Convert(a) => (a.json, convert::run(&a)),
        Command::Sparsify(a) => (a.json, sparsify::run(&a)),
        Command::SearchFormats(a) => (a.json, search_formats::run(&a)),
    };
    match result {
        Ok(out) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&out.json).unwrap_or_default());
            } else if !out.text.is_empty() {
                print!("{}", out.text);
                if !out.text.ends_with('\n') {
                    println!();
                }
            }
            0
        }
        Err(f) => {
            report(&f, json);
            1
        }
    }
}

fn report(f: &Failure, json: bool) {
    match f {
        Failure::Source(file, diags) => {
            eprint!("{}", file.render(diags));
            if json {
                let errors: Vec<_> = diags.iter().map(|d| file.locate(d)).collect();
                println!("{}", serde_json::json!({ "ok": false, "errors": errors }));
            }
        }
        Failure::Input(msg) => {
            eprintln!("error: {msg}");
            if json {
                println!("{}", serde_json::json!({ "ok": false, "errors": [{ "message": msg }] }));
            }
        }
    }
}

/// Reads and checks a source file.
pub fn load(path: &str) -> Result<(SourceFile, heddle_ir::Program, heddle_typeck::Kernel), Failure> {
    let file = SourceFile::read(path).map_err(Failure::Input)?;
    match heddle::check_source(&file) {
        Ok((p, k)) => Ok((file, p, k)),
        Err(d) => Err(Failure::Source(file, d)),
    }
}

//! Sub-commands. Each returns its output or a [`Failure`]; exit status 0 on
//! success, 1 when the input was wrong, 2 on usage errors (clap's, a flag
//! value that does not parse, flags that contradict each other), all of them
//! found before any work is done.
//!
//! With `--json`, stdout carries exactly one object: the command's output,
//! with `"schema": "heddle.COMMAND/1"`, or an error object
//! (`"schema": "heddle.error/1"`: `kind`, `message`, and `file`/`line`/`column`,
//! `parameter` or `flag` per error). The schemas are in `docs/schemas/`.

mod args;
pub mod auto;
mod check;
mod compile;
mod convert;
mod fmt;
mod install;
mod matrix;
mod prims;
mod rewrite;
mod run;
mod search_formats;
pub mod sell;
mod simplify;
pub mod sparsify;
mod timing;
mod tune;
mod tune_iso;
mod tune_matrix;
mod type_cmd;

pub use compile::kernel_name;
pub use type_cmd::resolve_encoding;

use clap::{CommandFactory, Parser, Subcommand};
use heddle::source::SourceFile;
use heddle_ir::{Diagnostic, ErrorKind};

/// heddle: a compiler for a functional pattern IR with dependent types, for sparse tensors.
#[derive(Parser)]
#[command(
    name = "heddle",
    version,
    about,
    long_about = "heddle compiles programs written with data-parallel patterns (map, reduce, zip, \
split, join, ...) over arrays whose lengths are part of their types; position-dependent arrays \
and toNat make sparse formats such as CSR ordinary types. Kernels run on a reference \
interpreter, on the CPU (Cranelift) and on OpenCL devices.",
    after_long_help = "Every command takes --json: stdout is then one JSON object \
(\"schema\": \"heddle.COMMAND/1\", or \"heddle.error/1\" on failure). Exit status: 0 \
success, 1 the input was wrong (syntax, type, data), 2 a usage error.\n\n\
The language guide, the command reference and the JSON schemas are in the docs/ directory \
of the heddle repository (docs/guide.md, docs/cli.md, docs/schemas/)."
)]
pub(crate) struct Cli {
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
    /// List the primitive patterns and their signatures.
    Prims(prims::Args),
    /// Execute the kernel of a file.
    Run(run::Args),
    /// Flattened index formulas before and after Σ elimination.
    Simplify(simplify::Args),
    /// Search a kernel's variants and tunable naturals on OpenCL or the CPU, per input.
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
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(install::CompletionsArgs),
    /// Print a manual page (roff) for heddle or one of its commands.
    Man(install::ManArgs),
}

/// Why a command failed.
pub enum Failure {
    /// Located problems in a source file (or a command-line value shown as
    /// one); each diagnostic's `kind` says what, else it is taken as an input
    /// error (`internal` when it says so).
    Source(SourceFile, Vec<Diagnostic>),
    /// A problem with some other input (a data file, a parameter), already worded.
    Input(String),
    /// A problem with an input, naming the kernel parameter it concerns.
    Data(heddle_runtime::io::bind::InputError),
    /// A file that cannot be read or written.
    Io(String),
    /// No OpenCL device, or the device refused the kernel.
    Device(String),
    /// A state heddle should never reach, whatever the input: a bug in heddle,
    /// reported with kind `internal` (exit status 1).
    Internal(String),
    /// A malformed command line or flag value: exit status 2.
    Usage {
        /// The flag concerned (`--param`), if one.
        flag: Option<String>,
        /// What is wrong, and what to write instead.
        message: String,
    },
}

impl From<heddle_runtime::io::bind::InputError> for Failure {
    fn from(e: heddle_runtime::io::bind::InputError) -> Failure {
        Failure::Data(e)
    }
}

impl Failure {
    /// A usage error about `flag`.
    pub fn usage(flag: &str, message: impl Into<String>) -> Failure {
        Failure::Usage { flag: Some(flag.to_string()), message: message.into() }
    }

    /// The problem in one line (the first diagnostic's message for a source).
    pub fn message(&self) -> String {
        match self {
            Failure::Source(_, diags) => diags.first().map_or_else(|| "failed".to_string(), |d| d.message.clone()),
            Failure::Input(m)
            | Failure::Io(m)
            | Failure::Device(m)
            | Failure::Internal(m)
            | Failure::Usage { message: m, .. } => m.clone(),
            Failure::Data(e) => e.to_string(),
        }
    }

    /// The exit status: 2 for usage errors, 1 for anything else.
    fn exit_code(&self) -> i32 {
        let usage = match self {
            Failure::Usage { .. } => true,
            Failure::Source(_, diags) => diags.iter().any(|d| d.kind == Some(ErrorKind::Usage)),
            _ => false,
        };
        if usage { 2 } else { 1 }
    }
}

/// What a command prints on success.
pub struct Output {
    /// For people.
    pub text: String,
    /// For `--json`: an object; `schema` (`heddle.COMMAND/1`) is added to it.
    pub json: serde_json::Value,
}

thread_local! {
    static WARNINGS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Notes a problem that does not stop the command (a flag that has no
/// effect): printed on stderr, and listed under `warnings` with `--json`.
pub fn warn(message: impl Into<String>) {
    WARNINGS.with(|w| w.borrow_mut().push(message.into()));
}

/// The `schema` of a command's `--json` output.
fn schema(command: &str) -> String {
    format!("heddle.{command}/1")
}

pub fn main() -> i32 {
    let wants_json = std::env::args().skip(1).take_while(|a| a != "--").any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e, wants_json),
    };
    let name = cli.command.name();
    let json = cli.command.json();
    let result = cli.command.execute();
    let warnings = WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut()));
    for w in &warnings {
        complain(&format!("warning: {w}\n"));
    }
    match result {
        Ok(out) => {
            let mut text = if json {
                serde_json::to_string_pretty(&success_object(name, out.json, warnings)).unwrap_or_default()
            } else {
                out.text
            };
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            match emit(&text) {
                Ok(()) => 0,
                // The reader went away (`heddle run … | head -c 1`): nobody is
                // left to tell, and what was asked for ran. End quietly.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
                // Anything else (a full disk) lost output the user asked for.
                Err(e) => {
                    complain(&format!("error: cannot write the output: {e}\n"));
                    1
                }
            }
        }
        Err(f) => {
            let code = f.exit_code();
            report(&f, json, name, code, &warnings);
            code
        }
    }
}

impl Command {
    /// Whether `--json` was given.
    fn json(&self) -> bool {
        match self {
            Command::Check(a) => a.json,
            Command::Compile(a) => a.json,
            Command::Fmt(a) => a.json,
            Command::Prims(a) => a.json,
            Command::Run(a) => a.json,
            Command::Simplify(a) => a.json,
            Command::Tune(a) => a.json,
            Command::Rewrite(a) => a.json,
            Command::Type(a) => a.json,
            Command::Convert(a) => a.json,
            Command::Sparsify(a) => a.json,
            Command::SearchFormats(a) => a.json,
            Command::Completions(a) => a.json,
            Command::Man(a) => a.json,
        }
    }

    /// Runs the sub-command.
    fn execute(&self) -> Result<Output, Failure> {
        match self {
            Command::Check(a) => check::run(a),
            Command::Compile(a) => compile::run(a),
            Command::Fmt(a) => fmt::run(a),
            Command::Prims(a) => prims::run(a),
            Command::Run(a) => run::run(a),
            Command::Simplify(a) => simplify::run(a),
            Command::Tune(a) => tune::run(a),
            Command::Rewrite(a) => rewrite::run(a),
            Command::Type(a) => type_cmd::run(a),
            Command::Convert(a) => convert::run(a),
            Command::Sparsify(a) => sparsify::run(a),
            Command::SearchFormats(a) => search_formats::run(a),
            Command::Completions(a) => install::completions(a),
            Command::Man(a) => install::man(a),
        }
    }

    /// The sub-command's name, as typed.
    fn name(&self) -> &'static str {
        match self {
            Command::Check(_) => "check",
            Command::Compile(_) => "compile",
            Command::Fmt(_) => "fmt",
            Command::Prims(_) => "prims",
            Command::Run(_) => "run",
            Command::Simplify(_) => "simplify",
            Command::Tune(_) => "tune",
            Command::Rewrite(_) => "rewrite",
            Command::Type(_) => "type",
            Command::Convert(_) => "convert",
            Command::Sparsify(_) => "sparsify",
            Command::SearchFormats(_) => "search-formats",
            Command::Completions(_) => "completions",
            Command::Man(_) => "man",
        }
    }
}

/// A malformed command line, reported by clap (help and version are not
/// errors). A bad value gets a hint where a likely intent is known.
fn usage_error(mut e: clap::Error, json: bool) -> i32 {
    use clap::error::{ContextKind, ContextValue, ErrorKind as Clap};
    if matches!(e.kind(), Clap::DisplayHelp | Clap::DisplayVersion | Clap::DisplayHelpOnMissingArgumentOrSubcommand) {
        let _ = e.print();
        return e.exit_code();
    }
    if let Some(ContextValue::String(v)) = e.get(ContextKind::InvalidValue)
        && let Some(better) = value_hint(v)
    {
        e.insert(ContextKind::SuggestedValue, ContextValue::String(better.to_string()));
    }
    let _ = e.print();
    if json {
        let flag = match e.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(a)) => {
                serde_json::Value::String(a.split([' ', '=']).next().unwrap_or(a).to_string())
            }
            _ => serde_json::Value::Null,
        };
        let rendered = e.to_string();
        let message = rendered.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string();
        let mut error = serde_json::json!({ "kind": "usage", "message": message, "flag": flag });
        let suggested = [ContextKind::SuggestedValue, ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand]
            .into_iter()
            .find_map(|k| match e.get(k) {
                Some(ContextValue::String(s)) => Some(s.clone()),
                Some(ContextValue::Strings(v)) => v.first().cloned(),
                _ => None,
            });
        if let Some(s) = suggested {
            error["suggestion"] = s.into();
        }
        if let Some(ContextValue::Strings(values)) = e.get(ContextKind::ValidValue) {
            error["valid_values"] = values.clone().into();
        }
        // The sub-command, if one was named.
        let command = std::env::args().skip(1).find(|a| Cli::command().find_subcommand(a).is_some());
        let object = error_object(command.as_deref(), 2, vec![error], &[]);
        let _ = emit(&format!("{}\n", serde_json::to_string_pretty(&object).unwrap_or_default()));
    }
    2
}

/// A value meant as another: `--backend gpu` means OpenCL.
fn value_hint(value: &str) -> Option<&'static str> {
    match value.to_ascii_lowercase().as_str() {
        "gpu" | "cuda" | "cl" | "ocl" | "open-cl" => Some("opencl"),
        "jit" | "native" | "cranelift" | "host" => Some("cpu"),
        "interpreter" | "ref" | "reference" => Some("interp"),
        _ => None,
    }
}

fn error_object(
    command: Option<&str>,
    code: i32,
    errors: Vec<serde_json::Value>,
    warnings: &[String],
) -> serde_json::Value {
    let mut object = serde_json::json!({
        "schema": schema("error"),
        "ok": false,
        "command": command,
        "exit_code": code,
        "errors": errors,
    });
    if !warnings.is_empty() {
        object["warnings"] = warnings.into();
    }
    object
}

/// Writes `text` to stdout, flushed, reporting failure instead of panicking
/// as `print!` does.
fn emit(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes `text` to stderr; if even that fails there is nobody to tell.
fn complain(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

fn report(f: &Failure, json: bool, command: &str, code: i32, warnings: &[String]) {
    match f {
        Failure::Source(file, diags) => complain(&file.render(diags)),
        Failure::Data(e) => complain(&format!("error: {e}\n")),
        Failure::Input(m)
        | Failure::Io(m)
        | Failure::Device(m)
        | Failure::Internal(m)
        | Failure::Usage { message: m, .. } => complain(&format!("error: {m}\n")),
    }
    if json {
        // The exit status says what matters when stdout is gone.
        let _ = emit(&format!(
            "{}\n",
            serde_json::to_string_pretty(&error_object(Some(command), code, error_list(f), warnings))
                .unwrap_or_default()
        ));
    }
}

/// The `errors` of a failure's `heddle.error/1` object.
fn error_list(f: &Failure) -> Vec<serde_json::Value> {
    match f {
        Failure::Source(file, diags) => diags
            .iter()
            .map(|d| {
                let kind = d.kind.unwrap_or(if d.message.starts_with("internal error") {
                    ErrorKind::Internal
                } else {
                    ErrorKind::Data
                });
                let mut v = serde_json::to_value(file.locate(d)).unwrap_or_default();
                v["kind"] = kind.name().into();
                v
            })
            .collect(),
        Failure::Input(message) => vec![serde_json::json!({ "kind": "data", "message": message })],
        Failure::Data(e) => {
            // The readers word a file they cannot open as "cannot read PATH: …".
            let kind = if e.message.starts_with("cannot read") || e.message.starts_with("cannot open") {
                "io"
            } else {
                "data"
            };
            vec![serde_json::json!({ "kind": kind, "message": e.message, "parameter": e.parameter })]
        }
        Failure::Io(message) => vec![serde_json::json!({ "kind": "io", "message": message })],
        Failure::Device(message) => vec![serde_json::json!({ "kind": "device", "message": message })],
        Failure::Internal(message) => vec![serde_json::json!({ "kind": "internal", "message": message })],
        Failure::Usage { flag, message } => {
            vec![serde_json::json!({ "kind": "usage", "message": message, "flag": flag })]
        }
    }
}

/// Runs one command in-process with `--json` semantics and prints nothing:
/// `argv` without the program name (`["rewrite", "k.hdl", "--json"]`).
/// The exit status and the object `--json` would print (`heddle.COMMAND/1`,
/// or `heddle.error/1`). Help and version requests are usage errors here.
pub fn invoke(argv: &[String]) -> (i32, serde_json::Value) {
    let cli = match Cli::try_parse_from(std::iter::once("heddle".to_string()).chain(argv.iter().cloned())) {
        Ok(cli) => cli,
        Err(e) => {
            let message = e.to_string();
            let errors = vec![serde_json::json!({ "kind": "usage", "message": message.trim(), "flag": null })];
            return (2, error_object(None, 2, errors, &[]));
        }
    };
    let name = cli.command.name();
    let result = cli.command.execute();
    let warnings = WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut()));
    match result {
        Ok(out) => (0, success_object(name, out.json, warnings)),
        Err(f) => {
            let code = f.exit_code();
            (code, error_object(Some(name), code, error_list(&f), &warnings))
        }
    }
}

/// A command's `--json` object: `schema`, its fields, `warnings`.
fn success_object(name: &str, json: serde_json::Value, warnings: Vec<String>) -> serde_json::Value {
    let mut object = serde_json::Map::new();
    object.insert("schema".into(), schema(name).into());
    match json {
        serde_json::Value::Object(fields) => object.extend(fields),
        other => {
            object.insert("result".into(), other);
        }
    }
    if !warnings.is_empty() {
        object.insert("warnings".into(), warnings.into());
    }
    serde_json::Value::Object(object)
}

/// Reads and checks a source file.
pub fn load(path: &str) -> Result<(SourceFile, heddle_ir::Program, heddle_typeck::Kernel), Failure> {
    let file = SourceFile::read(path).map_err(Failure::Io)?;
    match heddle::check_source(&file) {
        Ok((p, k)) => Ok((file, p, k)),
        Err(d) => Err(Failure::Source(file, d)),
    }
}

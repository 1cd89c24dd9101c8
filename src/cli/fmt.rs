//! `heddle fmt FILE`: the canonical form.

use super::{Failure, Output};
use heddle::source::SourceFile;

#[derive(clap::Args)]
pub struct Args {
    /// The source file.
    file: String,
    /// Rewrite the file in place.
    #[arg(short, long)]
    write: bool,
    /// Exit with status 1 if the file is not in canonical form.
    #[arg(long, conflicts_with = "write")]
    check: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let file = SourceFile::read(&a.file).map_err(Failure::Input)?;
    let text = match heddle_ir::printer::format_source(&file.text) {
        Ok(t) => t,
        Err(d) => return Err(Failure::Source(file, d)),
    };
    let changed = text != file.text;
    if a.check && changed {
        return Err(Failure::Input(format!(
            "{} is not in canonical form (run `heddle fmt --write {}`)",
            a.file, a.file
        )));
    }
    if a.write && changed {
        std::fs::write(&a.file, &text).map_err(|e| Failure::Input(format!("cannot write {}: {e}", a.file)))?;
    }
    let json = serde_json::json!({ "ok": true, "file": a.file, "formatted": text, "changed": changed });
    let shown = if a.write || a.check { String::new() } else { text };
    Ok(Output { text: shown, json })
}

//! `heddle completions SHELL` and `heddle man [COMMAND]`: shell completions
//! and manual pages generated from the command-line definition itself, so
//! they list exactly the commands and flags the binary has.

use super::{Failure, Output};
use clap::CommandFactory;

#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
    /// Machine-readable output (the script as a JSON string).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct ManArgs {
    /// A sub-command's page (`heddle-run(1)`); the main page without it.
    command: Option<String>,
    /// Machine-readable output (the page as a JSON string).
    #[arg(long)]
    pub json: bool,
}

pub fn completions(a: &CompletionsArgs) -> Result<Output, Failure> {
    let mut cmd = super::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "heddle", &mut script);
    let text = String::from_utf8_lossy(&script).into_owned();
    let json = serde_json::json!({ "ok": true, "shell": a.shell.to_string(), "script": text });
    Ok(Output { text, json })
}

pub fn man(a: &ManArgs) -> Result<Output, Failure> {
    let root = super::Cli::command();
    let page = match &a.command {
        None => root,
        Some(name) => {
            let found = root.get_subcommands().find(|c| c.get_name() == name).cloned();
            let Some(sub) = found else {
                let names: Vec<String> = root.get_subcommands().map(|c| c.get_name().to_string()).collect();
                let hint = heddle_ir::suggest::closest(name, names.iter().map(String::as_str))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(Failure::usage("COMMAND", format!("there is no command `{name}`{hint}")));
            };
            // clap names commands with 'static strings; a page is rendered once per run.
            let page_name: &'static str = Box::leak(format!("heddle-{name}").into_boxed_str());
            sub.name(page_name)
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut roff)
        .map_err(|e| Failure::Io(format!("cannot render the manual page: {e}")))?;
    let text = String::from_utf8_lossy(&roff).into_owned();
    let json = serde_json::json!({ "ok": true, "command": a.command, "page": text });
    Ok(Output { text, json })
}

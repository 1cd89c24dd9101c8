//! `heddle prims [NAME]`: every primitive pattern and its signature, read
//! from `ir/src/prims.sig` (the one declaration the type checker uses, so
//! this list cannot drift from the language).

use super::{Failure, Output};
use heddle_ir::prims::{PrimSig, Slot, lookup, note, sections, signatures};
use heddle_ir::printer::print_type;

#[derive(clap::Args)]
pub struct Args {
    /// Show only this pattern.
    name: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

fn slot_json(s: &Slot) -> serde_json::Value {
    match s {
        Slot::Nat { name, optional } => {
            serde_json::json!({ "kind": "nat", "name": name.as_str(), "optional": optional })
        }
        Slot::Fun { name, params, result } => {
            let params: Vec<String> = params.iter().map(print_type).collect();
            serde_json::json!({ "kind": "function", "name": name.as_str(), "params": params, "result": print_type(result) })
        }
        Slot::Value { name, ty } => {
            serde_json::json!({ "kind": "value", "name": name.as_str(), "type": print_type(ty) })
        }
        Slot::Input(ty) => serde_json::json!({ "kind": "input", "type": print_type(ty) }),
    }
}

fn prim_json(p: &PrimSig) -> serde_json::Value {
    serde_json::json!({
        "name": p.name,
        "signature": p.text,
        "summary": p.summary,
        "section": sections().get(p.section).map(|s| s.title.as_str()),
        "slots": p.slots.iter().map(slot_json).collect::<Vec<_>>(),
        "note": note(p.name),
    })
}

fn prim_text(p: &PrimSig, width: usize) -> String {
    let mut text = format!("  {:width$} : {}\n  {:width$}   {}\n", p.name, p.text, "", p.summary);
    if let Some(n) = note(p.name) {
        text.push_str(&format!("  {:width$}   ({n})\n", ""));
    }
    text
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let chosen: Vec<&PrimSig> = match &a.name {
        Some(n) => match lookup(n) {
            // Every form of it (`reduce` with and without an initial value).
            Some(_) => signatures().iter().filter(|s| s.name == n.as_str()).collect(),
            None => {
                let names = signatures().iter().map(|s| s.name);
                let hint = heddle_ir::suggest::closest(n, names)
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(Failure::usage(
                    "NAME",
                    format!("there is no pattern `{n}`{hint}; `heddle prims` lists them"),
                ));
            }
        },
        None => signatures().iter().collect(),
    };
    let width = chosen.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut text = String::new();
    for (k, section) in sections().iter().enumerate() {
        let in_section: Vec<&&PrimSig> = chosen.iter().filter(|p| p.section == k).collect();
        if in_section.is_empty() {
            continue;
        }
        if a.name.is_none() {
            text.push_str(&format!("{}\n", section.title));
        }
        for p in in_section {
            text.push_str(&prim_text(p, width));
        }
        if a.name.is_none() {
            text.push('\n');
        }
    }
    let json = serde_json::json!({
        "ok": true,
        "sections": sections().iter().map(|s| serde_json::json!({ "title": s.title, "description": s.description })).collect::<Vec<_>>(),
        "prims": chosen.iter().map(|p| prim_json(p)).collect::<Vec<_>>(),
    });
    Ok(Output { text, json })
}

//! `heddle check FILE`.

use super::{Failure, Output, load};
use heddle_typeck::KernelParam;

#[derive(clap::Args)]
pub struct Args {
    /// The source file.
    file: String,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let (_, _, kernel) = load(&a.file)?;
    let params: Vec<serde_json::Value> = kernel
        .params
        .iter()
        .map(|p| match p {
            KernelParam::Nat(n) => serde_json::json!({ "name": n.as_str(), "kind": "nat" }),
            KernelParam::Value { name, ty, .. } => {
                serde_json::json!({ "name": name.as_str(), "kind": "value", "type": ty.to_string() })
            }
            KernelParam::Tensor { name, ty, view, .. } => {
                serde_json::json!({ "name": name.as_str(), "kind": "tensor", "type": ty.to_string(), "view": view.to_string() })
            }
        })
        .collect();
    let obligations: Vec<serde_json::Value> = kernel
        .obligations
        .iter()
        .map(|o| serde_json::json!({ "condition": o.cond.to_string(), "reason": o.reason }))
        .collect();
    let mut text = format!("{}: {}\n", a.file, kernel.ty);
    for o in &kernel.obligations {
        text.push_str(&format!("  requires {} ({})\n", o.cond, o.reason));
    }
    Ok(Output {
        text,
        json: serde_json::json!({
            "ok": true,
            "file": a.file,
            "type": kernel.ty.to_string(),
            "result": kernel.body.ty.to_string(),
            "params": params,
            "requires": obligations,
        }),
    })
}

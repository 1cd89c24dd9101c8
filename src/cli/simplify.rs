//! `heddle simplify FILE` / `heddle simplify --nat 'NAT'`: flattened index
//! formulas before and after Σ elimination.

use super::{Failure, Output, load};
use heddle::source::SourceFile;
use heddle_ir::{Name, Nat, Type};
use heddle_rewrite::{Facts, Limits, Simplified, flat_index, simplify};
use heddle_typeck::KernelParam;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["file", "nat"])))]
pub struct Args {
    /// The source file: every flattened index formula of its kernel's parameters.
    file: Option<String>,
    /// Simplify this natural instead (LANGUAGE.md §3 syntax).
    #[arg(long)]
    nat: Option<String>,
    /// With --nat: the array named is non-decreasing (may repeat), which allows `toNat(a - b) = toNat(a) - toNat(b)` on it.
    #[arg(long = "non-decreasing", value_name = "ARRAY", requires = "nat")]
    non_decreasing: Vec<String>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

struct Formula {
    array: String,
    indices: Vec<String>,
    before: Nat,
    after: Simplified,
}

/// The run's statistics, spelled as `heddle rewrite --json` spells them.
fn stats_json(s: &Simplified) -> serde_json::Value {
    use heddle_rewrite::StopReason;
    let (reason, limit, why) = match &s.stats.stop_reason {
        StopReason::Saturated => ("saturated", serde_json::Value::Null, None),
        StopReason::IterationLimit(n) => ("iteration-limit", serde_json::json!(n), None),
        StopReason::NodeLimit(n) => ("node-limit", serde_json::json!(n), None),
        StopReason::TimeLimit(t) => ("time-limit", serde_json::json!(t), None),
        StopReason::NotRun(why) => ("not-run", serde_json::Value::Null, Some(why.clone())),
        StopReason::Other(why) => ("other", serde_json::Value::Null, Some(why.clone())),
    };
    serde_json::json!({
        "iterations": s.stats.iterations,
        "nodes": s.stats.egraph_nodes,
        "classes": s.stats.egraph_classes,
        "seconds": s.stats.time.as_secs_f64(),
        "stop_reason": reason,
        "limit": limit,
        "why": why,
    })
}

fn describe(s: &Simplified) -> String {
    let outcome = if s.residual_sums.is_empty() {
        if s.nat.has_sum() { "Σ left" } else { "Σ-free" }
    } else {
        "no closed form: the Σ is precomputed on the host"
    };
    format!(
        "{outcome}; {} iterations, {} e-nodes, {} e-classes, {:?}, {:.2} ms",
        s.stats.iterations,
        s.stats.egraph_nodes,
        s.stats.egraph_classes,
        s.stats.stop_reason,
        s.stats.time.as_secs_f64() * 1e3
    )
}

/// The index names for `depth` nested positions: the type's binders where it has them.
fn index_names(ty: &Type) -> Vec<Nat> {
    let pool = ["i", "j", "l", "p", "q", "r"];
    let mut out = Vec::new();
    let mut cur = ty;
    while let Type::Array { binder, elem, .. } = cur {
        let fallback = pool.iter().copied().find(|n| !out.iter().any(|x: &Nat| x.to_string() == *n)).unwrap_or("x");
        let name = binder.as_ref().map_or(fallback.to_string(), |b| b.to_string());
        out.push(Nat::Var(Name::from(name)));
        cur = elem;
    }
    out
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let limits = Limits::from_env();
    let formulas: Vec<Formula> = if let Some(text) = &a.nat {
        let nat = heddle_ir::parser::parse_nat(text)
            .map_err(|d| Failure::Source(SourceFile::new("--nat", text.clone()), vec![d]))?;
        let mut facts = Facts::new();
        for arr in &a.non_decreasing {
            facts = facts.with_non_decreasing(arr, Nat::Lit(0), Nat::var("N"));
        }
        let after = simplify(&nat, &facts, &limits);
        vec![Formula { array: String::new(), indices: Vec::new(), before: nat, after }]
    } else {
        let path = a.file.as_deref().unwrap_or_default();
        let (_, _, kernel) = load(path)?;
        let mut out = Vec::new();
        for p in &kernel.params {
            let KernelParam::Value { name, ty, .. } = p else { continue };
            // Only nested arrays have index formulas worth showing (a flat array's is its index).
            if !matches!(ty, Type::Array { elem, .. } if matches!(**elem, Type::Array { .. })) {
                continue;
            }
            let indices = index_names(ty);
            let before = flat_index(ty, &indices).map_err(|e| Failure::Input(format!("parameter `{name}`: {e}")))?;
            let after = simplify(&before, &Facts::from_type(ty), &limits);
            out.push(Formula {
                array: name.to_string(),
                indices: indices.iter().map(|n| n.to_string()).collect(),
                before,
                after,
            });
        }
        out
    };
    let mut text = String::new();
    for f in &formulas {
        if !f.array.is_empty() {
            text.push_str(&format!("{}@{}\n", f.array, f.indices.join("@")));
        }
        text.push_str(&format!("  before: {}\n  after:  {}\n", f.before, f.after.nat));
        for s in &f.after.residual_sums {
            text.push_str(&format!("  residual: {s}\n"));
        }
        text.push_str(&format!("  ({})\n", describe(&f.after)));
    }
    let json = serde_json::json!({
        "ok": true,
        "formulas": formulas.iter().map(|f| serde_json::json!({
            "array": if f.array.is_empty() { serde_json::Value::Null } else { f.array.clone().into() },
            "indices": f.indices,
            "before": f.before.to_string(),
            "after": f.after.nat.to_string(),
            "residual_sums": f.after.residual_sums.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "stats": stats_json(&f.after),
        })).collect::<Vec<_>>(),
    });
    Ok(Output { text, json })
}

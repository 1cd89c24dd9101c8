//! `heddle rewrite FILE`: e-graph exploration of the kernel with the
//! built-in and user rules; prints the extracted program and statistics.

use super::{Failure, Output, load};
use heddle::source::SourceFile;
use heddle_ir::{Diagnostic, Program, Span};
use heddle_rewrite::program::{self, Checked, CostKind, Limits, Options, Rule, RuleError};
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// The source file.
    file: String,
    /// A rule file to add (one rule a line: `name: LHS => RHS [if COND] [for ?k in …]`); repeatable.
    #[arg(long = "rules", value_name = "FILE")]
    rules: Vec<String>,
    /// Leave out the built-in rules.
    #[arg(long)]
    no_builtin: bool,
    /// Stop after N iterations [default: 30, or $HEDDLE_REWRITE_ITER_LIMIT].
    #[arg(long, value_name = "N")]
    iter_limit: Option<usize>,
    /// Stop when the e-graph has more than N e-nodes [default: 20000, or $HEDDLE_REWRITE_NODE_LIMIT].
    #[arg(long, value_name = "N")]
    node_limit: Option<usize>,
    /// Stop after S seconds [default: 5, or $HEDDLE_REWRITE_TIME_LIMIT].
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    time_limit: Option<f64>,
    /// Cost model for extraction: size, depth or parallel.
    #[arg(long, default_value = "parallel", value_parser = parse_cost)]
    cost: CostKind,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v <= 1e9 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds")),
    }
}

fn parse_cost(s: &str) -> Result<CostKind, String> {
    s.parse()
}

fn rule_failure(path: &str, text: String, errors: Vec<RuleError>) -> Failure {
    let diags = errors
        .into_iter()
        .map(|e| Diagnostic::new(Span::new(e.offset, e.offset + 1), e.message).with_label("in this rule"))
        .collect();
    Failure::Source(SourceFile::new(path, text), diags)
}

fn load_rules(a: &Args) -> Result<Vec<Rule>, Failure> {
    let mut rules = if a.no_builtin { Vec::new() } else { program::rulefile::builtin() };
    for path in &a.rules {
        let file = SourceFile::read(path).map_err(Failure::Input)?;
        let mut more = program::parse_rules(path, &file.text).map_err(|e| rule_failure(path, file.text.clone(), e))?;
        if let Some(dup) = more.iter().find(|r| rules.iter().any(|q| q.name == r.name)) {
            let first = rules.iter().find(|q| q.name == dup.name).map(|q| q.origin.clone()).unwrap_or_default();
            return Err(Failure::Input(format!("{}: rule `{}` is already defined at {first}", dup.origin, dup.name)));
        }
        rules.append(&mut more);
    }
    Ok(rules)
}

/// Type-checks with heddle-typeck, reporting the type and obligations.
fn check(p: &Program) -> Result<Checked, String> {
    match heddle_typeck::check_program(p) {
        Ok(k) => Ok(Checked { ty: k.ty.to_string(), obligations: k.obligations.iter().map(|o| o.cond.to_string()).collect() }),
        Err(d) => Err(d.first().map_or_else(|| "type error".to_string(), |d| d.message.clone())),
    }
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let (file, program, _) = load(&a.file)?;
    let rules = load_rules(a)?;
    let mut limits = Limits::from_env();
    if let Some(n) = a.iter_limit {
        limits.iter_limit = n;
    }
    if let Some(n) = a.node_limit {
        limits.node_limit = n;
    }
    if let Some(s) = a.time_limit {
        limits.time_limit = Duration::from_secs_f64(s);
    }
    let out = program::explore(&program, &rules, &Options { limits, cost: a.cost }, &check)
        .map_err(|e| Failure::Source(file, vec![Diagnostic::new(Span::new(0, 0), e.to_string())]))?;
    let s = &out.stats;
    let limit = match &s.stop_reason {
        program::StopReason::IterationLimit(n) | program::StopReason::NodeLimit(n) => serde_json::json!(n),
        program::StopReason::TimeLimit(t) => serde_json::json!(t),
        _ => serde_json::Value::Null,
    };
    let applied: Vec<(&String, &usize)> = out.rules_applied.iter().filter(|(_, n)| **n > 0).collect();
    // Statistics as comments, so the output is itself a heddle file.
    let mut text = out.text.clone();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "// rewrite: {} iterations, {} e-nodes, {} e-classes, {:.3} s, stopped: {}{}\n",
        s.iterations,
        s.nodes,
        s.classes,
        s.seconds,
        s.stop_reason.name(),
        if limit.is_null() { String::new() } else { format!(" ({limit})") }
    ));
    text.push_str(&format!("// cost ({}): {} -> {}\n", cost_name(a.cost), out.cost_before, out.cost_after));
    if !applied.is_empty() {
        let list: Vec<String> = applied.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        text.push_str(&format!("// rules applied: {}\n", list.join(", ")));
    }
    if let Some(why) = &out.fallback {
        // Not eprintln!: a closed stderr must not panic.
        let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("warning: kept the original program: {why}\n"));
        text.push_str(&format!("// kept the original program: {why}\n"));
    }
    let json = serde_json::json!({
        "ok": true,
        "file": a.file,
        "program": out.text,
        "type": out.ty,
        "cost": { "model": cost_name(a.cost), "before": out.cost_before, "after": out.cost_after },
        "stats": {
            "iterations": s.iterations,
            "nodes": s.nodes,
            "classes": s.classes,
            "seconds": s.seconds,
            "stop_reason": s.stop_reason.name(),
            "limit": limit,
        },
        "rules_applied": out.rules_applied,
        "rules": rules.len(),
        "fallback": out.fallback,
    });
    Ok(Output { text, json })
}

fn cost_name(c: CostKind) -> &'static str {
    CostKind::ALL.iter().find(|(_, k)| *k == c).map_or("?", |(n, _)| n)
}

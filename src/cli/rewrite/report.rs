//! What `heddle rewrite` prints: the program, then its statistics as `//`
//! comments (so the output is itself a heddle file), and the `--json`
//! object (`docs/schemas/rewrite.json`).

use super::Dumped;
use crate::cli::Output;
use heddle_rewrite::program::{CostModel, Outcome, Rule, Stats};
use serde_json::json;
use std::fmt::Write;

/// `// ` before every line of `s`, indented by `indent` after the slashes.
fn commented(s: &str, indent: usize) -> String {
    s.lines().map(|l| format!("//{}{l}\n", " ".repeat(indent))).collect()
}

fn stop_line(s: &Stats) -> String {
    let limit = s.stop_reason.limit();
    let mut line = format!(
        "// rewrite: {} iterations, {} e-nodes, {} e-classes, {:.3} s, stopped: {}{}\n",
        s.iterations,
        s.nodes,
        s.classes,
        s.seconds,
        s.stop_reason.name(),
        if limit.is_null() { String::new() } else { format!(" ({limit})") }
    );
    if let Some(d) = s.stop_reason.detail() {
        let _ = writeln!(line, "// stopped because: {d}");
    }
    if let Some(rule) = &s.grew_most {
        let added = s.rules.iter().find(|r| &r.name == rule).map_or(0, |r| r.nodes_added);
        let _ = writeln!(line, "// the rule that grew the e-graph most: {rule} (+{added} e-nodes)");
    }
    line
}

/// The per-rule and per-iteration tables.
pub fn stats_tables(s: &Stats) -> String {
    let mut t = String::new();
    let width = s.rules.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(
        t,
        "// {:<width$}  {:>8}  {:>8}  {:>8}  {:>10}  {:>10}  {:>4}",
        "rule", "matches", "applied", "+e-nodes", "search ms", "apply ms", "bans"
    );
    for r in &s.rules {
        let _ = writeln!(
            t,
            "// {:<width$}  {:>8}  {:>8}  {:>8}  {:>10.3}  {:>10.3}  {:>4}",
            r.name,
            r.matches,
            r.applied,
            r.nodes_added,
            r.search_seconds * 1e3,
            r.apply_seconds * 1e3,
            r.bans
        );
    }
    let _ =
        writeln!(t, "//\n// {:>9}  {:>8}  {:>9}  {:>8}  {:>10}", "iteration", "e-nodes", "e-classes", "applied", "ms");
    for (i, it) in s.per_iteration.iter().enumerate() {
        let _ = writeln!(
            t,
            "// {:>9}  {:>8}  {:>9}  {:>8}  {:>10.3}",
            i + 1,
            it.nodes,
            it.classes,
            it.applied,
            it.seconds * 1e3
        );
    }
    let _ = writeln!(t, "// e-graph run {:.3} ms, extraction {:.3} ms", s.run_seconds * 1e3, s.extract_seconds * 1e3);
    t
}

/// The explanation, one numbered step a few lines.
fn explanation(out: &Outcome) -> String {
    let Some(e) = &out.explanation else {
        return match &out.fallback {
            Some(_) => "// no explanation: the original program was kept\n".into(),
            None => String::new(),
        };
    };
    if e.steps.is_empty() {
        return "// explanation: the extracted program is the input (no rule was needed)\n".into();
    }
    let mut t = format!("// explanation: {} steps from the input\n", e.steps.len());
    for (k, s) in e.steps.iter().enumerate() {
        let dir = if s.backward { " (right to left)" } else { "" };
        let _ = writeln!(t, "// {:>3}. {}{dir} at {}", k + 1, s.rule, s.location);
        let _ = write!(t, "//        before: {}\n{}", first_line(&s.before), commented(rest(&s.before), 16));
        let _ = write!(t, "//        after:  {}\n{}", first_line(&s.after), commented(rest(&s.after), 16));
    }
    t.push_str("// then β-reduction of the redexes the rules left (`fun(x => b)(y)`) gives the program above\n");
    t
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn rest(s: &str) -> &str {
    s.split_once('\n').map_or("", |(_, r)| r)
}

/// The text output.
pub fn text(out: &Outcome, cost: &CostModel, explain: bool, stats: bool, dumped: Option<&Dumped>) -> String {
    let s = &out.stats;
    let mut text = out.text.clone();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&stop_line(s));
    let _ = writeln!(text, "// cost ({}): {} -> {}", cost.name, out.cost_before, out.cost_after);
    let applied: Vec<String> =
        out.rules_applied.iter().filter(|(_, n)| **n > 0).map(|(k, n)| format!("{k} ×{n}")).collect();
    if !applied.is_empty() {
        let _ = writeln!(text, "// rules applied: {}", applied.join(", "));
    }
    if let Some(why) = &out.fallback {
        let _ = writeln!(text, "// kept the original program: {why}");
    }
    if !out.assumptions.is_empty() {
        let _ =
            writeln!(text, "// specialised to the --param values: checks at run time {}", out.assumptions.join(", "));
    }
    if stats {
        text.push_str(&stats_tables(s));
    }
    if explain {
        text.push_str(&explanation(out));
    }
    if let Some(d) = dumped {
        let _ = writeln!(text, "// e-graph written to {} ({})", d.path, d.format);
        if let Some(t) = &d.truncated {
            let _ = writeln!(
                text,
                "// TRUNCATED: {} of {} e-classes, {} of {} e-nodes (limit {})",
                t.classes_kept, t.classes, t.nodes_kept, t.nodes, t.limit
            );
        }
    }
    text
}

/// The `--json` object.
pub fn json(
    file: &str,
    out: &Outcome,
    cost: &CostModel,
    rule_count: usize,
    dumped: Option<&Dumped>,
) -> serde_json::Value {
    let s = &out.stats;
    json!({
        "schema": "heddle.rewrite/1",
        "ok": true,
        "file": file,
        "program": out.text,
        "type": out.ty,
        "cost": { "model": cost.name, "before": out.cost_before, "after": out.cost_after },
        "stats": {
            "iterations": s.iterations,
            "nodes": s.nodes,
            "classes": s.classes,
            "seconds": s.seconds,
            "run_seconds": s.run_seconds,
            "extract_seconds": s.extract_seconds,
            "stop_reason": s.stop_reason.name(),
            "limit": s.stop_reason.limit(),
            "why": s.stop_reason.detail(),
            "grew_most": s.grew_most,
            "rules": s.rules,
            "per_iteration": s.per_iteration,
        },
        "rules_applied": out.rules_applied,
        "rules": rule_count,
        "fallback": out.fallback,
        "assumptions": out.assumptions,
        "explanation": out.explanation.as_ref().map(|e| json!({ "steps": e.steps, "then": "beta-reduction" })),
        "egraph_dump": dumped.map(|d| json!({ "path": d.path, "format": d.format, "truncated": d.truncated })),
    })
}

/// `--list-rules`: every rule with where it is defined.
pub fn rule_list(rules: &[Rule]) -> Output {
    let width = rules.iter().map(|r| r.name.len()).max().unwrap_or(4);
    let mut text = String::new();
    for r in rules {
        let _ = writeln!(text, "{:<width$}  {}  ({})", r.name, r.text, r.origin);
    }
    let list: Vec<_> = rules.iter().map(|r| json!({ "name": r.name, "rule": r.text, "origin": r.origin })).collect();
    Output { text, json: json!({ "schema": "heddle.rewrite-rules/1", "ok": true, "rules": list }) }
}

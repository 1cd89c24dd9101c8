//! `heddle rewrite FILE`: e-graph exploration of the kernel with the
//! built-in and user rules; prints the extracted program and statistics,
//! and on request the chain of rule applications (`--explain`), the
//! per-rule and per-iteration tables (`--stats`), the e-graph
//! (`--dump-egraph`), or the rules themselves (`--list-rules`).

mod report;
mod search;

use super::{Failure, Output, load};
use heddle::source::SourceFile;
use heddle_ir::{Diagnostic, Program, Span};
use heddle_rewrite::program::{self, Checked, CostKind, CostModel, Limits, Options, Rule, RuleError};
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// The source file (not needed with --list-rules).
    #[arg(required_unless_present = "list_rules")]
    file: Option<String>,
    /// A rule file to add (one rule a line: `name: LHS => RHS [if COND] [for ?k in …]`); repeatable.
    #[arg(long = "rules", value_name = "FILE")]
    rules: Vec<String>,
    /// Leave out the built-in rules.
    #[arg(long)]
    no_builtin: bool,
    /// Print the rules (built-in and --rules files) with where each is defined, and stop.
    #[arg(long)]
    list_rules: bool,
    /// Stop after N iterations [default: 30, or $HEDDLE_REWRITE_ITER_LIMIT].
    #[arg(long, value_name = "N")]
    iter_limit: Option<usize>,
    /// Stop when the e-graph has more than N e-nodes [default: 20000, or $HEDDLE_REWRITE_NODE_LIMIT].
    #[arg(long, value_name = "N")]
    node_limit: Option<usize>,
    /// Stop after S seconds [default: 5, or $HEDDLE_REWRITE_TIME_LIMIT].
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    time_limit: Option<f64>,
    /// Cost model for extraction: size, depth, parallel or cpu [default: parallel; cpu for --search --backend cpu].
    #[arg(long, value_parser = parse_cost, conflicts_with = "cost_file")]
    cost: Option<CostKind>,
    /// A cost model read from a file: per-primitive costs, one `NAME COST [at top|workgroup|inner]` a line.
    #[arg(long, value_name = "FILE")]
    cost_file: Option<String>,
    /// Explain the result: the chain of rule applications from the input to the extracted program.
    #[arg(long, conflicts_with = "count")]
    explain: bool,
    /// Print the per-rule and per-iteration statistics as tables (always in --json).
    #[arg(long)]
    stats: bool,
    /// Write the e-graph to FILE.json (egraph-serialize's form) or FILE.dot (Graphviz).
    #[arg(long, value_name = "FILE", conflicts_with = "count")]
    dump_egraph: Option<String>,
    /// Write at most N e-nodes with --dump-egraph (the rest is cut, and the file says so).
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    dump_limit: u64,
    /// Extract only programs of this shape, e.g. 'mapWorkgroup(mapLocal(?))' (`?` is anything;
    /// `f(s)`: a use of f whose argument contains s). With --search, repeatable: candidates of each.
    #[arg(long = "sketch", value_name = "SKETCH", value_parser = parse_sketch)]
    sketches: Vec<program::sketch::Sketch>,
    /// A natural's value: NAME=VALUE. Rule conditions are decided with it (a split by 8 of a
    /// length n needs n % 8 == 0), and the result may then check it at run time. With --search
    /// the inputs give the values.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    params: Vec<(heddle_ir::Name, i64)>,
    #[command(flatten)]
    search: search::SearchArgs,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1e9).contains(&v) => Ok(v),
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

/// The built-in rules (unless left out) and those of the `--rules` files.
pub fn load_rules(no_builtin: bool, files: &[String]) -> Result<Vec<Rule>, Failure> {
    let mut rules = if no_builtin { Vec::new() } else { program::rulefile::builtin() };
    for path in files {
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

/// The cost model the flags name.
pub fn cost_model(kind: CostKind, file: Option<&str>) -> Result<CostModel, Failure> {
    let Some(path) = file else { return Ok(kind.into()) };
    let src = SourceFile::read(path).map_err(Failure::Input)?;
    CostModel::from_file(path, &src.text).map_err(|errs| {
        let diags = errs
            .into_iter()
            .map(|e| Diagnostic::new(Span::new(e.offset, e.offset + 1), e.message).with_label("in this entry"))
            .collect();
        Failure::Source(SourceFile::new(path, src.text.clone()), diags)
    })
}

/// Type-checks with heddle-typeck, reporting the type and obligations.
pub fn check(p: &Program) -> Result<Checked, String> {
    match heddle_typeck::check_program(p) {
        Ok(k) => Ok(Checked {
            ty: k.ty.to_string(),
            obligations: k.obligations.iter().map(|o| o.cond.clone()).collect(),
            kernel_ty: Some(k.ty.clone()),
        }),
        Err(d) => Err(d.first().map_or_else(|| "type error".to_string(), |d| d.message.clone())),
    }
}

/// The limits: defaults, then the environment, then the flags.
pub fn limits(iter: Option<usize>, nodes: Option<usize>, seconds: Option<f64>) -> Limits {
    let mut limits = Limits::from_env();
    if let Some(n) = iter {
        limits.iter_limit = n;
    }
    if let Some(n) = nodes {
        limits.node_limit = n;
    }
    if let Some(s) = seconds {
        limits.time_limit = Duration::from_secs_f64(s);
    }
    limits
}

pub fn run(a: &Args) -> Result<Output, Failure> {
    let rules = load_rules(a.no_builtin, &a.rules)?;
    if a.list_rules {
        return Ok(report::rule_list(&rules));
    }
    let path = a.file.as_deref().unwrap_or_default();
    let sketches = &a.sketches;
    if a.search.count.is_some() {
        return search::run(a, path, &rules, sketches);
    }
    if sketches.len() > 1 {
        return Err(Failure::Input(
            "one --sketch at a time without --search (with --search, candidates of each sketch are measured)".into(),
        ));
    }
    let dump = a.dump_egraph.as_deref().map(dump_format).transpose()?;
    let (file, program, _) = load(path)?;
    let opts = Options {
        limits: limits(a.iter_limit, a.node_limit, a.time_limit),
        cost: cost_model(a.cost.unwrap_or(CostKind::Parallel), a.cost_file.as_deref())?,
        explain: a.explain,
        keep_egraph: dump.is_some(),
        facts: a.params.clone(),
    };
    let explored = match sketches.first() {
        Some(s) => program::explore_with(&program, &rules, &opts, &program::sketch::SketchGoals::new(s), &check),
        None => program::explore(&program, &rules, &opts, &check),
    };
    let out = explored.map_err(|e| Failure::Source(file, vec![Diagnostic::new(Span::new(0, 0), e.to_string())]))?;
    let dumped = match (&a.dump_egraph, dump, &out.egraph) {
        (Some(path), Some(format), Some((g, root))) => {
            Some(write_dump(path, format, g, *root, &opts.cost, a.dump_limit as usize)?)
        }
        _ => None,
    };
    if let Some(why) = &out.fallback {
        super::warn(format!("kept the original program: {why}"));
    }
    Ok(Output {
        text: report::text(&out, &opts.cost, a.explain, a.stats, dumped.as_ref()),
        json: report::json(path, &out, &opts.cost, rules.len(), dumped.as_ref()),
    })
}

/// Parses `--sketch` (a malformed one is a usage error).
fn parse_sketch(s: &str) -> Result<program::sketch::Sketch, String> {
    program::sketch::parse(s).map_err(|(at, msg)| format!("at column {}: {msg}", at + 1))
}

/// Parses `--param NAME=VALUE`.
pub fn parse_param(p: &str) -> Result<(heddle_ir::Name, i64), String> {
    let (k, v) =
        p.split_once('=').filter(|(k, v)| !k.trim().is_empty() && !v.is_empty()).ok_or("expected NAME=VALUE")?;
    let v: i64 = v.trim().parse().ok().filter(|v| *v >= 0).ok_or_else(|| format!("`{v}` is not a natural number"))?;
    Ok((heddle_ir::Name::from(k.trim()), v))
}

/// The e-graph's file format, from the file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    /// egraph-serialize's JSON.
    Json,
    /// Graphviz.
    Dot,
}

fn dump_format(path: &str) -> Result<DumpFormat, Failure> {
    match std::path::Path::new(path).extension().and_then(|e| e.to_str()) {
        Some("json") => Ok(DumpFormat::Json),
        Some("dot") => Ok(DumpFormat::Dot),
        _ => Err(Failure::Input(format!("--dump-egraph {path}: expected a .json or .dot file name"))),
    }
}

/// What was written by `--dump-egraph`.
pub struct Dumped {
    /// The file.
    pub path: String,
    /// `json` or `dot`.
    pub format: &'static str,
    /// How much was cut, if anything.
    pub truncated: Option<program::export::Truncation>,
}

fn write_dump(
    path: &str,
    format: DumpFormat,
    g: &program::analysis::ProgGraph,
    root: program::Id,
    model: &CostModel,
    limit: usize,
) -> Result<Dumped, Failure> {
    let (text, truncated, name) = match format {
        DumpFormat::Json => {
            let (j, t) = program::export::to_json(g, root, model, limit);
            (serde_json::to_string_pretty(&j).unwrap_or_default(), t, "json")
        }
        DumpFormat::Dot => {
            let (s, t) = program::export::to_dot(g, root, limit);
            (s, t, "dot")
        }
    };
    std::fs::write(path, text).map_err(|e| Failure::Input(format!("--dump-egraph {path}: {e}")))?;
    if let Some(t) = &truncated {
        super::warn(format!(
            "--dump-egraph {path}: truncated to {} of {} e-classes ({} of {} e-nodes; raise --dump-limit)",
            t.classes_kept, t.classes, t.nodes_kept, t.nodes
        ));
    }
    Ok(Dumped { path: path.to_string(), format: name, truncated })
}

//! Rule files: one rule a line, in heddle's surface syntax.
//!
//! ```text
//! # comment (also `//`)
//! name: LHS => RHS [if COND] [for ?k in 2, 4, 8]
//! name: LHS <=> RHS [if COND]          # both directions; the reverse is `name-rev`
//! ```
//!
//! `LHS` and `RHS` are heddle expressions where `?x` is a pattern variable
//! (`?` directly followed by an identifier; write a natural's ternary with a
//! space after `?`). Parameter names of lambdas match any name. `COND` is
//! described in [`super::cond`]; `for ?k in …` makes one rule per value,
//! named `name[k=4]`. Names are letters, digits, `_`, `-` and `.`.

use super::analysis::ProgAnalysis;
use super::applier::RuleApplier;
use super::cond::parse_cond;
use super::lang::Prog;
use super::pattern::{compile, user_var};
use egg::{Pattern, Rewrite};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// A located problem in a rule file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RuleError {
    /// The file name as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// Byte offset in the file.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message)
    }
}

impl std::error::Error for RuleError {}

/// One parsed rule (one direction, one `for` value).
pub struct Rule {
    /// Its name.
    pub name: String,
    /// `file:line` where it is defined.
    pub origin: String,
    /// The rule as written after its name (`LHS => RHS if … for …`).
    pub text: String,
    /// The left-hand side (the right-hand side for a `-rev` rule).
    pub lhs: Pattern<Prog>,
    /// What applies it: the other side, conditions, binder checks.
    pub applier: RuleApplier,
    /// The egg rewrite built from `lhs` and `applier`.
    pub rewrite: Rewrite<Prog, ProgAnalysis>,
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rule({} at {})", self.name, self.origin)
    }
}

/// The built-in rules, as shipped in `builtin.rules` (Lift's rules).
pub const BUILTIN: &str = include_str!("builtin.rules");

/// The built-in sparse and GPU schedule rules, `schedule.rules`.
pub const SCHEDULE: &str = include_str!("schedule.rules");

/// The built-in rule files, by name.
pub const BUILTIN_FILES: [(&str, &str); 2] = [("builtin.rules", BUILTIN), ("schedule.rules", SCHEDULE)];

/// The built-in rules of every built-in file, parsed.
pub fn builtin() -> Vec<Rule> {
    BUILTIN_FILES.iter().flat_map(|(name, text)| builtin_file(name, text)).collect()
}

/// Lift's rules alone (`builtin.rules`).
pub fn lift() -> Vec<Rule> {
    builtin_file("builtin.rules", BUILTIN)
}

/// The sparse and GPU schedule rules alone (`schedule.rules`).
pub fn schedule() -> Vec<Rule> {
    builtin_file("schedule.rules", SCHEDULE)
}

fn builtin_file(name: &str, text: &str) -> Vec<Rule> {
    // The files are part of the crate and covered by tests; an error here is a bug.
    parse_rules(name, text).unwrap_or_else(|errs| panic!("{name}: {errs:?}"))
}

/// Parses a rule file; every bad line is reported.
pub fn parse_rules(file: &str, text: &str) -> Result<Vec<Rule>, Vec<RuleError>> {
    if text.len() > heddle_ir::parser::MAX_SOURCE_BYTES {
        let message = format!(
            "the file is {} bytes long; heddle reads at most {} bytes of rules",
            text.len(),
            heddle_ir::parser::MAX_SOURCE_BYTES
        );
        return Err(vec![RuleError { file: file.to_string(), line: 1, column: 1, offset: 0, message }]);
    }
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut line_start = 0;
    for (i, raw) in text.split('\n').enumerate() {
        let lineno = i + 1;
        let start = line_start;
        line_start += raw.len() + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let err = |byte: usize, message: String| RuleError {
            file: file.to_string(),
            line: lineno,
            column: line.get(..byte.min(line.len())).map_or(byte, |s| s.chars().count()) + 1,
            offset: start + byte.min(line.len()),
            message,
        };
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("//") {
            continue;
        }
        match parse_line(line) {
            Ok(parsed) => {
                if let Some(first) = seen.get(&parsed.name) {
                    errors.push(err(
                        parsed.name_at,
                        format!("rule `{}` is already defined on line {first}", parsed.name),
                    ));
                    continue;
                }
                seen.insert(parsed.name.clone(), lineno);
                match build(&parsed, &format!("{file}:{lineno}")) {
                    Ok(mut rs) => rules.append(&mut rs),
                    Err((at, msg)) => errors.push(err(at, msg)),
                }
            }
            Err((at, msg)) => errors.push(err(at, msg)),
        }
    }
    if errors.is_empty() { Ok(rules) } else { Err(errors) }
}

/// A rule line cut into its parts; offsets are bytes in the line.
struct Line {
    name: String,
    name_at: usize,
    lhs: (usize, String),
    rhs: (usize, String),
    both: bool,
    cond: Option<(usize, String)>,
    for_var: Option<(usize, String)>,
    for_values: Vec<i64>,
    /// Offsets in the line where a `?` variable starts.
    pvar_at: HashSet<usize>,
    /// Everything after the name's colon, trimmed.
    text: String,
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Top-level (outside brackets) occurrences of a separator or keyword.
fn find_top(line: &str, from: usize, pat: &str, word: bool) -> Option<usize> {
    let b = line.as_bytes();
    let mut depth = 0i32;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ => {}
        }
        if depth == 0 && b[i..].starts_with(pat.as_bytes()) {
            let before_ok = !word || i == 0 || !is_ident(b[i - 1]);
            let after_ok = !word || b.get(i + pat.len()).is_none_or(|c| !is_ident(*c));
            if before_ok && after_ok {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// The first bracket that is never closed (an arrow inside it was not seen).
fn unbalanced(line: &str, from: usize) -> Option<(usize, String)> {
    let mut open = Vec::new();
    for (i, c) in line.bytes().enumerate().skip(from) {
        match c {
            b'(' | b'[' | b'{' => open.push(i),
            b')' | b']' | b'}' => {
                open.pop();
            }
            _ => {}
        }
    }
    open.first().map(|i| (*i, format!("`{}` is never closed", line.as_bytes()[*i] as char)))
}

fn parse_line(line: &str) -> Result<Line, (usize, String)> {
    let name_at = line.len() - line.trim_start().len();
    let colon = line.find(':').ok_or((name_at, "expected `name: LHS => RHS`".to_string()))?;
    let name = line[name_at..colon].trim_end();
    if name.is_empty() || !name.bytes().all(|c| is_ident(c) || c == b'-' || c == b'.') {
        return Err((name_at, "a rule starts with its name (letters, digits, `_`, `-`, `.`) and a colon".into()));
    }
    let body = colon + 1;
    // `<=>` contains `=>`: look for it first.
    let (arrow, both, arrow_len) = match find_top(line, body, "<=>", false) {
        Some(a) => (a, true, 3),
        None => match find_top(line, body, "=>", false) {
            Some(a) => (a, false, 2),
            None => {
                return Err(
                    unbalanced(line, body).unwrap_or((body, "expected `=>` between the two sides of the rule".into()))
                );
            }
        },
    };
    let rhs_at = arrow + arrow_len;
    let if_at = find_top(line, rhs_at, "if", true);
    let for_at = find_top(line, rhs_at, "for", true);
    let rhs_end = [if_at, for_at].into_iter().flatten().min().unwrap_or(line.len());
    let cond = if_at.map(|i| (i + 2, line[i + 2..for_at.filter(|f| *f > i).unwrap_or(line.len())].to_string()));
    let (mut for_var, mut for_values) = (None, Vec::new());
    if let Some(f) = for_at {
        let end = if_at.filter(|i| *i > f).unwrap_or(line.len());
        let text = &line[f + 3..end];
        let lead = text.len() - text.trim_start().len();
        let t = text.trim();
        let (var, rest) =
            t.split_once(char::is_whitespace).ok_or((f + 3 + lead, "expected `for ?k in 2, 4`".to_string()))?;
        let rest = rest.trim_start();
        let values = rest.strip_prefix("in").filter(|r| r.starts_with(char::is_whitespace));
        if !var.starts_with('?') || var.len() < 2 || !var[1..].bytes().all(is_ident) || values.is_none() {
            return Err((f + 3 + lead, "expected `for ?k in 2, 4`".into()));
        }
        for v in values.unwrap_or_default().split(',') {
            let v = v.trim();
            let n = v.parse::<i64>().ok().filter(|n| *n > 0).ok_or((f, format!("`{v}` is not a positive integer")))?;
            for_values.push(n);
        }
        for_var = Some((f + 3 + lead, var[1..].to_string()));
    }
    let mut pvar_at = HashSet::new();
    let b = line.as_bytes();
    for i in body..line.len() {
        if b[i] == b'?' && b.get(i + 1).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') {
            pvar_at.insert(i);
        }
    }
    Ok(Line {
        name: name.to_string(),
        name_at,
        lhs: (body, line[body..arrow].to_string()),
        rhs: (rhs_at, line[rhs_at..rhs_end].to_string()),
        both,
        cond,
        for_var,
        for_values,
        pvar_at,
        text: line[body..].trim().to_string(),
    })
}

/// Parses one side: `?x` becomes `_x` (same length, so spans stay put).
fn parse_side(side: &(usize, String), pvar_at: &HashSet<usize>) -> Result<heddle_ir::Expr, (usize, String)> {
    let (at, text) = side;
    if text.trim().is_empty() {
        return Err((*at, "this side of the rule is empty".into()));
    }
    let mut bytes = text.clone().into_bytes();
    for p in pvar_at {
        if *p >= *at && *p < at + bytes.len() {
            bytes[p - at] = b'_';
        }
    }
    let src = String::from_utf8(bytes).map_err(|_| (*at, "invalid text".to_string()))?;
    heddle_ir::parser::parse_expr(&src).map_err(|d| (at + d.span.start as usize, d.message))
}

fn build(l: &Line, origin: &str) -> Result<Vec<Rule>, (usize, String)> {
    let lhs = parse_side(&l.lhs, &l.pvar_at)?;
    let rhs = parse_side(&l.rhs, &l.pvar_at)?;
    // Spans are relative to each side's text; shift the offsets to match.
    let rel = |at: usize| l.pvar_at.iter().filter(|p| **p >= at).map(|p| p - at).collect::<HashSet<_>>();
    let (lhs_pv, rhs_pv) = (rel(l.lhs.0), rel(l.rhs.0));
    let at_side = |base: usize, (span, msg): (heddle_ir::Span, String)| (base + span.start as usize, msg);
    let instances: Vec<Option<i64>> =
        if l.for_values.is_empty() { vec![None] } else { l.for_values.iter().map(|v| Some(*v)).collect() };
    let mut out = Vec::new();
    for value in instances {
        let mut fixed = HashMap::new();
        let mut name = l.name.clone();
        if let (Some((_, var)), Some(v)) = (&l.for_var, value) {
            fixed.insert(var.clone(), v);
            name = format!("{name}[{var}={v}]");
        }
        let directions: &[bool] = if l.both { &[false, true] } else { &[false] };
        for &reverse in directions {
            let (from, to, from_pv, to_pv, from_at, to_at) = if reverse {
                (&rhs, &lhs, &rhs_pv, &lhs_pv, l.rhs.0, l.lhs.0)
            } else {
                (&lhs, &rhs, &lhs_pv, &rhs_pv, l.lhs.0, l.rhs.0)
            };
            let c = compile(from, to, (from_pv, to_pv), &fixed)
                .map_err(|(on_to, span, msg)| at_side(if on_to { to_at } else { from_at }, (span, msg)))?;
            let conds = match &l.cond {
                Some((at, text)) => {
                    let vars = |v: &str| c.lhs_vars.contains(&user_var(v));
                    parse_cond(text, &vars, &fixed).map_err(|(o, m)| (at + o, m))?
                }
                None => Vec::new(),
            };
            let rule_name = if reverse { format!("{name}-rev") } else { name.clone() };
            let applier = RuleApplier {
                rhs: Pattern::new(c.rhs),
                conds,
                scope_checks: c.scope_checks,
                new_binders: c.new_binders,
                computed: c.computed,
            };
            let lhs = Pattern::new(c.lhs);
            let rewrite = Rewrite::new(rule_name.clone(), lhs.clone(), applier.clone()).map_err(|e| (l.lhs.0, e))?;
            out.push(Rule { name: rule_name, origin: origin.to_string(), text: l.text.clone(), lhs, applier, rewrite });
        }
    }
    Ok(out)
}

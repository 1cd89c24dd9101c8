//! The pretty-printer: the canonical text of programs, types and naturals.
//!
//! Output parses back to the same tree (spans aside), and printing that again
//! gives the same text: `heddle fmt` is idempotent. Expressions become a
//! [`doc::Doc`] laid out in [`WIDTH`] columns: a pipeline that does not fit is
//! broken one stage per line, a function's body goes to the next line, a call
//! whose last argument is a function keeps it on the call's line (`map(fun(x =>`);
//! kernel headers (`nFun` / annotated `fun`) get a line each. Types and
//! naturals are never broken.
//!
//! [`format_source`] is `heddle fmt`: the same layout with the source's
//! comments put back where they stood and its numbers spelled as written
//! (`trivia.rs`).

mod doc;
mod trivia;

use crate::expr::{Expr, ExprKind, Literal, Program, UnOp};
use crate::nat::{Nat, NatCond, NatOp};
use crate::span::Diagnostic;
use crate::tensor::EncodingRef;
use crate::types::{ScalarType, Type};
use doc::{Doc, cat, group, nest, text};

/// Lines longer than this are broken where the layout allows.
pub const WIDTH: usize = 90;

/// The canonical text of a program.
pub fn print_program(p: &Program) -> String {
    let mut out = layout(program_doc(p), None);
    out.push('\n');
    out
}

/// `heddle fmt`: the canonical text of a source file, its comments kept where
/// they stand (on their own line, at the end of a line, or between two tokens)
/// and its literals spelled as written (`-3.0e38` stays `-3.0e38`).
/// Formatting the result again gives the same text.
pub fn format_source(src: &str) -> Result<String, Vec<Diagnostic>> {
    let program = crate::parser::parse_program(src)?;
    let (tokens, comments) = crate::lexer::lex_with_comments(src).map_err(|d| vec![d])?;
    let mut out = layout(program_doc(&program), Some((src, &tokens, &comments)));
    out.push('\n');
    Ok(out)
}

type Source<'a> = (&'a str, &'a [crate::lexer::Token], &'a [crate::lexer::Comment]);

fn layout(mut d: Doc, source: Option<Source>) -> String {
    let numbered = doc::number(&mut d);
    let plan = match source {
        Some((src, tokens, comments)) => trivia::plan(src, tokens, comments, &numbered),
        None => doc::Plan { pieces: Vec::new(), tail: Vec::new(), forced: numbered.hard },
    };
    doc::render(&d, WIDTH, &plan)
}

fn program_doc(p: &Program) -> Doc {
    let mut parts = Vec::new();
    for e in &p.encodings {
        parts.push(text(format!("#{} = {}", e.name, e.encoding.text)));
        parts.push(Doc::HardLine);
    }
    if !p.encodings.is_empty() {
        parts.pop();
        parts.push(Doc::BlankLine);
    }
    for d in &p.defs {
        let head = text(format!("def {} =", d.name));
        parts.push(group(cat([head, nest(2, cat([Doc::Line, expr(&d.value, 0)])), text(";")])));
        parts.push(Doc::BlankLine);
    }
    parts.push(kernel_doc(&p.kernel));
    cat(parts)
}

/// A kernel: its header (the `nFun`s on one line, each annotated `fun` on a
/// line of its own), then the body.
fn kernel_doc(e: &Expr) -> Doc {
    let mut lines: Vec<String> = Vec::new();
    let mut closers = 0;
    let mut cur = e;
    let mut after_nfun = false;
    loop {
        let line = match &cur.kind {
            ExprKind::NFun { var, body } => {
                cur = body;
                format!("nFun({var} =>")
            }
            ExprKind::Fun { params, body } if params.len() == 1 && params[0].ty.is_some() => {
                cur = body;
                format!("fun({} =>", print_param(&params[0]))
            }
            _ => break,
        };
        let is_nfun = line.starts_with("nFun");
        match lines.last_mut() {
            Some(last) if after_nfun && is_nfun => {
                last.push(' ');
                last.push_str(&line);
            }
            _ => lines.push(line),
        }
        after_nfun = is_nfun;
        closers += 1;
    }
    if closers == 0 {
        return expr(e, 0);
    }
    let mut parts = Vec::new();
    for (k, line) in lines.into_iter().enumerate() {
        if k > 0 {
            parts.push(Doc::HardLine);
        }
        parts.push(text(line));
    }
    parts.push(nest(2, cat([Doc::HardLine, expr(cur, 0)])));
    parts.push(text(")".repeat(closers)));
    cat(parts)
}

fn print_param(p: &crate::expr::Param) -> String {
    match &p.ty {
        Some(t) => format!("{}: {}", p.name, print_type(t)),
        None => p.name.to_string(),
    }
}

/// The text of an expression on one line or, when long, broken as in [`print_program`].
pub fn print_expr(e: &Expr) -> String {
    layout(expr(e, 0), None)
}

/// The document of `e`, parenthesised when it binds looser than `ctx`.
/// Precedence levels: 0 pipe / let, 1 `||`, 2 `&&`, 3 comparisons, 4 `+ -`,
/// 5 `* / %`, 6 unary, 7 `@`, 8 postfix, 9 atoms.
fn expr(e: &Expr, ctx: u8) -> Doc {
    let (d, prec) = expr_prec(e);
    if prec < ctx { cat([text("("), d, text(")")]) } else { d }
}

fn expr_prec(e: &Expr) -> (Doc, u8) {
    match &e.kind {
        ExprKind::Var(x) => (text(x.to_string()), 9),
        ExprKind::Lit(l) => (text(print_literal(l)), 9),
        ExprKind::Section(op) => (text(op.symbol()), 9),
        ExprKind::NatValue(n) => (text(format!("({})", print_nat(n))), 9),
        ExprKind::Fun { params, body } => {
            let ps: Vec<String> = params.iter().map(print_param).collect();
            (binder(format!("fun({} =>", ps.join(", ")), body), 9)
        }
        ExprKind::NFun { var, body } => (binder(format!("nFun({var} =>"), body), 9),
        ExprKind::App { func, args } => (call(expr(func, 8), args), 8),
        ExprKind::Select { cond, then, els } => {
            (call(text("select"), &[(**cond).clone(), (**then).clone(), (**els).clone()]), 9)
        }
        ExprKind::Pipe { .. } => {
            let mut stages = Vec::new();
            let mut cur = e;
            while let ExprKind::Pipe { arg, func } = &cur.kind {
                stages.push(&**func);
                cur = arg;
            }
            let mut rest = Vec::new();
            for s in stages.into_iter().rev() {
                rest.extend([Doc::Line, text(":>> "), expr(s, 1)]);
            }
            // The head binds tighter than a pipe only when it is a `let`.
            (group(cat([expr(cur, 1), nest(2, cat(rest))])), 0)
        }
        ExprKind::Index { array, index } => (cat([expr(array, 7), text("@"), expr(index, 8)]), 7),
        ExprKind::Proj { tuple, field } => {
            // A number before `.k` is parenthesised: `0 .3` must not print as the float `0.3`.
            let t = match &tuple.kind {
                ExprKind::Lit(Literal::Int(_) | Literal::Float(_)) => cat([text("("), expr(tuple, 0), text(")")]),
                _ => expr(tuple, 8),
            };
            (cat([t, text(format!(".{field}"))]), 8)
        }
        ExprKind::Tuple(es) => (list(text("("), es), 9),
        ExprKind::Annot { expr: inner, ty } => {
            (cat([text("("), expr(inner, 0), text(format!(" : {})", print_type(ty)))]), 9)
        }
        ExprKind::Let { name, value, body } => {
            (group(cat([text(format!("let {name} = ")), expr(value, 1), text(" in"), Doc::Line, expr(body, 0)])), 0)
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let p = op.precedence();
            // Left-associative; comparisons do not chain.
            let (l, r) = if op.is_comparison() { (p + 1, p + 1) } else { (p, p + 1) };
            let rhs = cat([Doc::Line, text(format!("{} ", op.symbol())), expr(rhs, r)]);
            (group(cat([expr(lhs, l), nest(2, rhs)])), p)
        }
        ExprKind::Unary { op, operand } => {
            let sym = match op {
                UnOp::Neg => "-",
                UnOp::Not => "!",
            };
            (cat([text(sym), expr(operand, 6)]), 6)
        }
    }
}

/// `fun(x =>` or `nFun(n =>`, then the body on the same line or the next.
fn binder(head: String, body: &Expr) -> Doc {
    group(cat([text(head), nest(2, cat([Doc::Line, expr(body, 0)])), text(")")]))
}

/// `f(a, b)`.
fn call(func: Doc, args: &[Expr]) -> Doc {
    cat([func, list(text("("), args)])
}

/// `(a, b, c)` after `open`: a function (or pipeline) last stays on the
/// opening line, its body broken below (`map(fun(x =>`); otherwise the items
/// go one per line when they do not fit.
fn list(open: Doc, items: &[Expr]) -> Doc {
    let (last, others) = match items.split_last() {
        Some((l, o)) => (Some(l), o),
        None => (None, items),
    };
    let hug = last
        .is_some_and(|l| matches!(l.kind, ExprKind::Fun { .. } | ExprKind::NFun { .. } | ExprKind::Pipe { .. }))
        && others.iter().all(simple);
    if hug {
        let mut parts = vec![open];
        for (k, it) in items.iter().enumerate() {
            if k > 0 {
                parts.push(text(", "));
            }
            parts.push(argument(it));
        }
        parts.push(text(")"));
        return cat(parts);
    }
    let mut inner = vec![Doc::SoftLine];
    for (k, it) in items.iter().enumerate() {
        if k > 0 {
            inner.extend([text(","), Doc::Line]);
        }
        inner.push(argument(it));
    }
    group(cat([open, nest(2, cat(inner)), text(")")]))
}

/// An argument of a call or an item of a tuple: a lambda written without
/// `fun(…)` in the source (`reduce(x => x.1 + x.2)`, the paper's Listing 7) is
/// printed as written; the `,` or `)` after it ends its body.
fn argument(e: &Expr) -> Doc {
    match &e.kind {
        ExprKind::Fun { params, body } if is_bare(e) => {
            group(cat([text(format!("{} =>", params[0].name)), nest(2, cat([Doc::Line, expr(body, 0)]))]))
        }
        _ => expr(e, 0),
    }
}

/// Was this lambda written `x => body`? Its span then starts at its parameter's
/// (a `fun(x => …)` starts at `fun`); a synthesized tree has empty spans.
fn is_bare(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Fun { params, .. } => {
            params.len() == 1
                && params[0].ty.is_none()
                && e.span.end > e.span.start
                && e.span.start == params[0].span.start
        }
        _ => false,
    }
}

/// An expression without functions, pipelines or `let`s: short enough to
/// stand before a hugged last argument.
fn simple(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Pipe { .. } | ExprKind::Fun { .. } | ExprKind::NFun { .. } | ExprKind::Let { .. } => false,
        _ => {
            let mut all = true;
            e.for_each_child(&mut |c| all &= simple(c));
            all
        }
    }
}

fn print_literal(l: &Literal) -> String {
    match l {
        Literal::Int(v) => v.to_string(),
        Literal::Bool(b) => b.to_string(),
        Literal::Float(f) => {
            let v = f.0;
            if v.is_finite() {
                let s = format!("{v:?}");
                if s.contains('.') || s.contains('e') { s } else { format!("{s}.0") }
            } else if v.is_nan() {
                "nan".to_string()
            } else if v > 0.0 {
                "inf".to_string()
            } else {
                "-inf".to_string()
            }
        }
    }
}

/// The text of a type.
pub fn print_type(t: &Type) -> String {
    match t {
        Type::Scalar(s) => s.keyword().to_string(),
        Type::Tuple(ts) => format!("({})", ts.iter().map(print_type).collect::<Vec<_>>().join(", ")),
        Type::Array { binder, elem, len } => {
            let size = print_size(len);
            match binder {
                Some(b) => format!("[{b} -> {}]{size}", print_type(elem)),
                None => format!("[{}]{size}", print_type(elem)),
            }
        }
        Type::Vector { elem, width } => format!("<{}>{}", print_type(elem), nat_prec(width, 3)),
        Type::Tensor(tt) => {
            let dims = tt.dims.iter().map(|d| match d {
                None => "?".to_string(),
                Some(n) => match n.as_lit() {
                    Some(v) => v.to_string(),
                    None => format!("{{{}}}", print_nat(n)),
                },
            });
            let mut dims: Vec<String> = dims.collect();
            dims.push(mlir_name(tt.elem).to_string());
            match &tt.encoding {
                None => format!("tensor<{}>", dims.join("x")),
                Some(EncodingRef::Named(n, _)) => format!("tensor<{}, #{n}>", dims.join("x")),
                Some(EncodingRef::Inline(e)) => format!("tensor<{}, {}>", dims.join("x"), e.text),
            }
        }
        Type::Fun { param, from, to } => {
            let from_text = match (param, &**from) {
                (Some(p), f) => format!("({p}: {})", print_type(f)),
                (None, f @ Type::Fun { .. }) | (None, f @ Type::NatFun { .. }) => format!("({})", print_type(f)),
                (None, f) => print_type(f),
            };
            format!("{from_text} -> {}", print_type(to))
        }
        Type::NatFun { var, body } => format!("({var}: nat) -> {}", print_type(body)),
        Type::Meta(id) => format!("?T{id}"),
    }
}

/// MLIR's name of a scalar type (`f32`, `i64`, …).
pub fn mlir_name(s: ScalarType) -> &'static str {
    match s {
        ScalarType::Bool => "i1",
        ScalarType::I8 => "i8",
        ScalarType::I16 => "i16",
        ScalarType::I32 => "i32",
        ScalarType::I64 => "i64",
        ScalarType::U8 => "ui8",
        ScalarType::U16 => "ui16",
        ScalarType::U32 => "ui32",
        ScalarType::U64 => "ui64",
        ScalarType::F16 => "f16",
        ScalarType::BF16 => "bf16",
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
        ScalarType::C32 => "complex<f32>",
        ScalarType::C64 => "complex<f64>",
    }
}

/// `_n`, `_4`, or `_{formula}`.
pub fn print_size(n: &Nat) -> String {
    match n {
        Nat::Var(x) => format!("_{x}"),
        Nat::Lit(v) if *v >= 0 => format!("_{v}"),
        _ => format!("_{{{}}}", print_nat(n)),
    }
}

/// The text of a natural.
pub fn print_nat(n: &Nat) -> String {
    nat_prec(n, 0)
}

/// Levels: 0 ternary, 1 `+ -`, 2 `* / %`, 3 atoms.
fn nat_prec(n: &Nat, ctx: u8) -> String {
    let (text, p) = match n {
        Nat::Var(x) => (x.to_string(), 3),
        Nat::Lit(v) if *v >= 0 => (v.to_string(), 3),
        Nat::Lit(v) => (format!("0 - {}", v.unsigned_abs()), 1),
        Nat::Meta(id) => (format!("?N{id}"), 3),
        Nat::ToNat(e) => (format!("toNat({})", print_expr(e)), 3),
        Nat::Sum { var, lo, hi, body } => {
            (format!("sum({var} = {} .. {}, {})", nat_prec(lo, 0), nat_prec(hi, 0), nat_prec(body, 0)), 3)
        }
        Nat::Cond(c, a, b) => (format!("{} ? {} : {}", print_cond(c), nat_prec(a, 1), nat_prec(b, 0)), 0),
        Nat::Bin(op @ (NatOp::Min | NatOp::Max), a, b) => {
            let name = if *op == NatOp::Min { "min" } else { "max" };
            (format!("{name}({}, {})", nat_prec(a, 0), nat_prec(b, 0)), 3)
        }
        Nat::Bin(op, a, b) => {
            let p = op.precedence();
            (format!("{} {} {}", nat_prec(a, p), op.infix().unwrap_or("?"), nat_prec(b, p + 1)), p)
        }
    };
    if p < ctx { format!("({text})") } else { text }
}

/// The text of a natural condition.
pub fn print_cond(c: &NatCond) -> String {
    cond_prec(c, 0)
}

fn cond_prec(c: &NatCond, ctx: u8) -> String {
    let (text, p) = match c {
        NatCond::Cmp(op, a, b) => (format!("{} {} {}", nat_prec(a, 1), op.symbol(), nat_prec(b, 1)), 3),
        NatCond::Or(a, b) => (format!("{} || {}", cond_prec(a, 1), cond_prec(b, 2)), 1),
        NatCond::And(a, b) => (format!("{} && {}", cond_prec(a, 2), cond_prec(b, 3)), 2),
        NatCond::Not(a) => (format!("!{}", cond_prec(a, 4)), 4),
    };
    if p < ctx { format!("({text})") } else { text }
}

impl std::fmt::Display for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_type(self))
    }
}
impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_expr(self))
    }
}

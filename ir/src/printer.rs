//! The pretty-printer: the canonical text of programs, types and naturals.
//!
//! Output parses back to the same tree (spans aside), and printing that again
//! gives the same text: `heddle fmt` is idempotent. Long pipelines are broken
//! one stage per line; kernel headers (`nFun` / annotated `fun`) get a line each.

use crate::expr::{Expr, ExprKind, Literal, Program, UnOp};
use crate::nat::{Nat, NatCond, NatOp};
use crate::tensor::EncodingRef;
use crate::types::{ScalarType, Type};

/// Lines longer than this are broken at `:>>`.
pub const WIDTH: usize = 90;

/// The canonical text of a program.
pub fn print_program(p: &Program) -> String {
    let mut out = String::new();
    for e in &p.encodings {
        out.push_str(&format!("#{} = {}\n", e.name, e.encoding.text));
    }
    if !p.encodings.is_empty() {
        out.push('\n');
    }
    for d in &p.defs {
        let body = print_expr_at(&d.value, 1);
        if body.contains('\n') || body.len() + d.name.as_str().len() + 7 > WIDTH {
            out.push_str(&format!("def {} =\n  {};\n\n", d.name, body));
        } else {
            out.push_str(&format!("def {} = {};\n\n", d.name, body));
        }
    }
    out.push_str(&print_kernel(&p.kernel));
    out.push('\n');
    out
}

/// A kernel: its header of `nFun`s and annotated `fun`s one per line, then the body.
fn print_kernel(e: &Expr) -> String {
    let mut header = Vec::new();
    let mut closers = 0;
    let mut cur = e;
    loop {
        match &cur.kind {
            ExprKind::NFun { var, body } => {
                header.push(format!("nFun({var} =>"));
                closers += 1;
                cur = body;
            }
            ExprKind::Fun { params, body } if params.iter().all(|p| p.ty.is_some()) && params.len() == 1 => {
                header.push(format!("fun({} =>", print_param(&params[0])));
                closers += 1;
                cur = body;
            }
            _ => break,
        }
    }
    if header.is_empty() {
        return print_expr_at(e, 0);
    }
    let body = print_expr_at(cur, 1);
    format!("{}\n  {}{}", header.join("\n"), body, ")".repeat(closers))
}

fn print_param(p: &crate::expr::Param) -> String {
    match &p.ty {
        Some(t) => format!("{}: {}", p.name, print_type(t)),
        None => p.name.to_string(),
    }
}

/// The text of an expression on one line or, when long, broken at `:>>`.
pub fn print_expr(e: &Expr) -> String {
    print_expr_at(e, 0)
}

fn print_expr_at(e: &Expr, indent: usize) -> String {
    let flat = Flat.expr(e, 0);
    if flat.len() + indent * 2 <= WIDTH || !flat.contains(":>>") {
        return flat;
    }
    broken(e, indent)
}

/// A pipeline broken one stage per line, nested functions broken in turn.
fn broken(e: &Expr, indent: usize) -> String {
    let pad = "  ".repeat(indent + 1);
    match &e.kind {
        ExprKind::Pipe { .. } => {
            let mut stages = Vec::new();
            let mut cur = e;
            while let ExprKind::Pipe { arg, func } = &cur.kind {
                stages.push(&**func);
                cur = arg;
            }
            stages.reverse();
            let mut out = print_expr_at(cur, indent);
            if matches!(cur.kind, ExprKind::Let { .. }) {
                out = format!("({out})");
            }
            for s in stages {
                let text = print_expr_at(s, indent + 1);
                let text = if needs_parens_in_pipe(s) { format!("({text})") } else { text };
                out.push_str(&format!("\n{pad}:>> {text}"));
            }
            out
        }
        ExprKind::App { func, args } if args.len() == 1 && matches!(args[0].kind, ExprKind::Fun { .. } | ExprKind::Pipe { .. }) => {
            format!("{}({})", Flat.expr(func, 8), print_expr_at(&args[0], indent))
        }
        ExprKind::Fun { params, body } => {
            let ps: Vec<String> = params.iter().map(print_param).collect();
            format!("fun({} =>\n{pad}{})", ps.join(", "), print_expr_at(body, indent + 1))
        }
        _ => Flat.expr(e, 0),
    }
}

fn needs_parens_in_pipe(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Pipe { .. } | ExprKind::Let { .. })
}

/// Single-line printing with minimal parentheses. Precedence levels: 0 pipe /
/// let, 1 `||`, 2 `&&`, 3 comparisons, 4 `+ -`, 5 `* / %`, 6 unary, 7 `@`,
/// 8 postfix, 9 atoms.
struct Flat;

impl Flat {
    fn expr(&self, e: &Expr, ctx: u8) -> String {
        let (text, prec) = self.expr_prec(e);
        if prec < ctx { format!("({text})") } else { text }
    }

    fn expr_prec(&self, e: &Expr) -> (String, u8) {
        match &e.kind {
            ExprKind::Var(x) => (x.to_string(), 9),
            ExprKind::Lit(l) => (print_literal(l), 9),
            ExprKind::Section(op) => (op.symbol().to_string(), 9),
            ExprKind::NatValue(n) => (format!("({})", print_nat(n)), 9),
            ExprKind::Fun { params, body } => {
                let ps: Vec<String> = params.iter().map(print_param).collect();
                (format!("fun({} => {})", ps.join(", "), self.expr(body, 0)), 9)
            }
            ExprKind::NFun { var, body } => (format!("nFun({var} => {})", self.expr(body, 0)), 9),
            ExprKind::App { func, args } => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a, 0)).collect();
                (format!("{}({})", self.expr(func, 8), args.join(", ")), 8)
            }
            ExprKind::Pipe { arg, func } => (format!("{} :>> {}", self.expr(arg, 0), self.expr(func, 1)), 0),
            ExprKind::Index { array, index } => (format!("{}@{}", self.expr(array, 7), self.expr(index, 8)), 7),
            ExprKind::Proj { tuple, field } => (format!("{}.{field}", self.expr(tuple, 8)), 8),
            ExprKind::Tuple(es) => {
                let items: Vec<String> = es.iter().map(|a| self.expr(a, 0)).collect();
                (format!("({})", items.join(", ")), 9)
            }
            ExprKind::Annot { expr, ty } => (format!("({} : {})", self.expr(expr, 0), print_type(ty)), 9),
            ExprKind::Let { name, value, body } => {
                (format!("let {name} = {} in {}", self.expr(value, 1), self.expr(body, 0)), 0)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let p = op.precedence();
                // Left-associative; comparisons do not chain.
                let (l, r) = if op.is_comparison() { (p + 1, p + 1) } else { (p, p + 1) };
                (format!("{} {} {}", self.expr(lhs, l), op.symbol(), self.expr(rhs, r)), p)
            }
            ExprKind::Unary { op, operand } => {
                let sym = match op {
                    UnOp::Neg => "-",
                    UnOp::Not => "!",
                };
                (format!("{sym}{}", self.expr(operand, 6)), 6)
            }
            ExprKind::Select { cond, then, els } => (
                format!("select({}, {}, {})", self.expr(cond, 0), self.expr(then, 0), self.expr(els, 0)),
                9,
            ),
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
            } else {
                // Only reachable for computed literals; keep it parseable.
                "0.0".to_string()
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
            let mut dims: Vec<String> = tt.dims.iter().map(|d| d.map_or("?".to_string(), |v| v.to_string())).collect();
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
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
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

//! The text form of loop programs (`heddle compile --target loops`).

use super::{Arg, ArgKind, Block, Expr, HostKind, LoopProgram, Schedule, Space, Stmt};
use crate::printer::{mlir_name, print_nat};
use std::fmt::{self, Write};

fn fields_text(fields: &[crate::ScalarType]) -> String {
    match fields {
        [one] => one.keyword().to_string(),
        many => format!("({})", many.iter().map(|f| f.keyword()).collect::<Vec<_>>().join(", ")),
    }
}

/// How a stored tensor is read back (flat outputs need no line).
fn result_lines(f: &mut fmt::Formatter<'_>, layout: &super::ResultLayout) -> fmt::Result {
    match layout {
        super::ResultLayout::Flat { .. } => Ok(()),
        super::ResultLayout::Tuple(parts) => parts.iter().try_for_each(|p| result_lines(f, p)),
        super::ResultLayout::Tensor(t) => {
            let plan = &t.plan;
            let dims: Vec<String> = plan.dims.iter().map(print_nat).collect();
            let stores: Vec<String> = plan.levels.iter().map(|l| format!("{:?}", l.store).to_lowercase()).collect();
            write!(
                f,
                "result tensor [{}] {}: levels [{}]",
                dims.join(", "),
                crate::encoding::print_encoding(&plan.encoding),
                stores.join(", ")
            )?;
            if let Some(len) = &t.list_len {
                write!(f, ", list length {}", print_nat(len))?;
            }
            let crds: Vec<String> = plan
                .entry_levels()
                .iter()
                .zip(&t.coordinates)
                .map(|(l, (b, k))| format!("crd{l} in {b}.{}", k + 1))
                .collect();
            write!(
                f,
                ", entries: {}values in {}",
                crds.iter().map(|c| format!("{c}, ")).collect::<String>(),
                t.values
            )?;
            match &t.bounded {
                Some(b) => writeln!(f, ", lists at offsets {}, lengths in {}", b.offsets, b.lengths),
                None => writeln!(f),
            }
        }
    }
}

fn arg_text(a: &Arg) -> String {
    match &a.kind {
        ArgKind::Nat => format!("{}: nat", a.name),
        ArgKind::Scalar(t) => format!("{}: {}", a.name, t.keyword()),
        ArgKind::Input { fields, len } => format!("{}: {}[{}]", a.name, fields_text(fields), print_nat(len)),
        ArgKind::Host => format!("{}: host i64[]", a.name),
        ArgKind::Output { fields, len } => format!("out {}: {}[{}]", a.name, fields_text(fields), print_nat(len)),
    }
}

impl fmt::Display for LoopProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.counts {
            let shape: Vec<String> = c.shape.iter().map(print_nat).collect();
            let what = if c.bound { "bound" } else { "count" };
            writeln!(f, "{what} phase {}[{}]: {{", c.name, shape.join(", "))?;
            for line in c.program.to_string().lines() {
                writeln!(f, "    {line}")?;
            }
            writeln!(f, "}}")?;
        }
        for h in &self.host {
            match &h.kind {
                HostKind::PrefixSum { var, body, count, flat } => {
                    let flat: String = flat.iter().map(|a| format!(", {a} flat")).collect();
                    writeln!(
                        f,
                        "host {}[j] = sum({var} = 0 .. j - 1, {}) for j in 0 ..= {}{flat}",
                        h.name,
                        print_nat(body),
                        print_nat(count)
                    )?
                }
                HostKind::Largest { ranges, body } => {
                    let ranges: Vec<String> =
                        ranges.iter().map(|(v, n)| format!("{v} in 0 .. {}", print_nat(n))).collect();
                    writeln!(f, "host {} = max({}, 0 where none) for {}", h.name, print_nat(body), ranges.join(", "))?
                }
            }
        }
        for r in &self.ranges {
            writeln!(f, "range {r}")?;
        }
        if let Some(w) = &self.parallel_work {
            write!(f, "balance {} by {}", w.var, expr(&w.items))?;
            match &w.before {
                Some(before) => writeln!(f, " (before: {})", expr(before))?,
                None => writeln!(f)?,
            }
        }
        if let Some(layout) = &self.result {
            result_lines(f, layout)?;
        }
        let args: Vec<String> = self.args.iter().map(arg_text).collect();
        writeln!(f, "kernel {}({}) {{", self.name, args.join(", "))?;
        let mut out = String::new();
        let mut multi: Vec<crate::Name> = self
            .args
            .iter()
            .filter(|a| matches!(&a.kind, ArgKind::Input { fields, .. } | ArgKind::Output { fields, .. } if fields.len() > 1))
            .map(|a| a.name.clone())
            .collect();
        collect_multi(&self.body, &mut multi);
        MULTI.with(|m| *m.borrow_mut() = multi);
        REASSOCIABLE.with(|r| r.borrow_mut().clone_from(&self.reassociable));
        block(&mut out, &self.body, 1);
        f.write_str(&out)?;
        writeln!(f, "}}")
    }
}

fn block(out: &mut String, b: &Block, depth: usize) {
    for s in b {
        stmt(out, s, depth);
    }
}

fn stmt(out: &mut String, s: &Stmt, depth: usize) {
    let pad = "  ".repeat(depth);
    let _ = match s {
        Stmt::Let { var, ty, value } => writeln!(out, "{pad}let {var}: {} = {}", ty.keyword(), expr(value)),
        Stmt::Var { var, ty, init } => {
            let any_order = if REASSOCIABLE.with(|r| r.borrow().contains(var)) { " (reassociable)" } else { "" };
            writeln!(out, "{pad}var {var}: {} = {}{any_order}", ty.keyword(), expr(init))
        }
        Stmt::Assign { var, value } => writeln!(out, "{pad}{var} = {}", expr(value)),
        Stmt::Store { buf, index, field, value } => {
            writeln!(out, "{pad}{buf}[{}]{} = {}", expr(index), field_suffix(buf, *field), expr(value))
        }
        Stmt::AddAtomic { buf, index, field, value } => {
            writeln!(out, "{pad}{buf}[{}]{} += {} (atomic)", expr(index), field_suffix(buf, *field), expr(value))
        }
        Stmt::For { var, lo, hi, schedule, body } => {
            let kind = match schedule {
                Schedule::Seq => "for".to_string(),
                Schedule::Parallel => "parallel for".to_string(),
                Schedule::Global(d) => format!("for.global({d})"),
                Schedule::Workgroup(d) => format!("for.workgroup({d})"),
                Schedule::Local(d) => format!("for.local({d})"),
            };
            let _ = writeln!(out, "{pad}{kind} {var} in {} .. {} {{", expr(lo), expr(hi));
            block(out, body, depth + 1);
            writeln!(out, "{pad}}}")
        }
        Stmt::If { cond, then, els } => {
            let _ = writeln!(out, "{pad}if {} {{", expr(cond));
            block(out, then, depth + 1);
            if !els.is_empty() {
                let _ = writeln!(out, "{pad}}} else {{");
                block(out, els, depth + 1);
            }
            writeln!(out, "{pad}}}")
        }
        Stmt::Alloc { buf, fields, len, space } => {
            let space = match space {
                Space::Private => "private",
                Space::Local => "local",
                Space::Global => "global",
                Space::Workspace => "workspace",
            };
            writeln!(out, "{pad}alloc {space} {buf}: {}[{}]", fields_text(fields), expr(len))
        }
        Stmt::Sort { buf, lo, len } => writeln!(out, "{pad}sort {buf}[{} .. + {}]", expr(lo), expr(len)),
        Stmt::Barrier => writeln!(out, "{pad}barrier"),
        Stmt::Check { cond, id } => writeln!(out, "{pad}check {} else fail #{id}", expr(cond)),
    };
}

thread_local! {
    /// Buffers whose records have several fields (their loads show `.k`).
    static MULTI: std::cell::RefCell<Vec<crate::Name>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The program's reassociable accumulators (their `var` says so).
    static REASSOCIABLE: std::cell::RefCell<Vec<crate::Name>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn collect_multi(b: &Block, out: &mut Vec<crate::Name>) {
    for s in b {
        match s {
            Stmt::Alloc { buf, fields, .. } if fields.len() > 1 => out.push(buf.clone()),
            Stmt::For { body, .. } => collect_multi(body, out),
            Stmt::If { then, els, .. } => {
                collect_multi(then, out);
                collect_multi(els, out)
            }
            _ => {}
        }
    }
}

fn field_suffix(buf: &crate::Name, field: u32) -> String {
    // Record fields are numbered from 1 in the text, like heddle's projections.
    if MULTI.with(|m| m.borrow().contains(buf)) { format!(".{}", field + 1) } else { String::new() }
}

/// The text of an expression.
pub fn expr(e: &Expr) -> String {
    prec(e, 0)
}

fn prec(e: &Expr, ctx: u8) -> String {
    let (text, p) = match e {
        Expr::Int(v, t) if *t == crate::ScalarType::I64 || *t == crate::ScalarType::I32 => (v.to_string(), 9),
        Expr::Int(v, t) => (format!("{v}{}", mlir_name(*t)), 9),
        Expr::Float(v, t) => (format!("{v:?}{}", if *t == crate::ScalarType::F32 { "f" } else { "" }), 9),
        Expr::Bool(b) => (b.to_string(), 9),
        Expr::Var(v) => (v.to_string(), 9),
        Expr::Load { buf, index, field } => (format!("{buf}[{}]{}", prec(index, 0), field_suffix(buf, *field)), 9),
        Expr::Bin(op @ (super::BinOp::Min | super::BinOp::Max), a, b) => {
            (format!("{}({}, {})", op.symbol(), prec(a, 0), prec(b, 0)), 9)
        }
        Expr::Bin(op, a, b) => {
            let p = match op {
                super::BinOp::Or => 1,
                super::BinOp::And => 2,
                o if o.is_comparison() => 3,
                super::BinOp::Add | super::BinOp::Sub => 4,
                _ => 5,
            };
            (format!("{} {} {}", prec(a, p), op.symbol(), prec(b, p + 1)), p)
        }
        Expr::Neg(a) => (format!("-{}", prec(a, 6)), 6),
        Expr::Not(a) => (format!("!{}", prec(a, 6)), 6),
        Expr::Select(c, a, b) => (format!("select({}, {}, {})", prec(c, 0), prec(a, 0), prec(b, 0)), 9),
        Expr::Cast(t, a) => (format!("({}) {}", t.keyword(), prec(a, 6)), 6),
    };
    if p < ctx { format!("({text})") } else { text }
}

/// `A_crd1 < A_dim1`, `A_crd0.1 < A_dim1` (a field after the first named).
impl fmt::Display for super::InputRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = if self.field == 0 { String::new() } else { format!(".{}", self.field) };
        write!(f, "{}{field} < {}", self.buf, expr(&self.below))
    }
}

//! The side-condition language of rule files:
//!
//! ```text
//! cond   ::= atom ('&&' atom)*
//! atom   ::= 'assoc' '(' ?op ',' ?init ')' | 'known' '(' nat ')' | 'not' '(' atom ')'
//!          | 'input' '(' ?x ')' | nat cmp nat
//! nat    ::= term (('+' | '-') term)*
//! term   ::= factor (('*' | '/' | '%') factor)*
//! factor ::= integer | ?k | 'len' '(' ?x ')' | 'count' '(' ?x ')' | '(' nat ')'
//! cmp    ::= '==' | '!=' | '<' | '<=' | '>' | '>='
//! ```
//!
//! `len(?x)` is the length of an array whose elements all have one type
//! (what `split` needs); `count(?x)` the number of elements of any array,
//! position-dependent ones too.
//!
//! An atom holds only when it is *provable* from what the e-graph knows;
//! `known(n)` holds when the natural can be computed at all, and `not(a)`
//! when `a` cannot be proved; `input(?x)` when `?x` is an array parameter
//! of the kernel or a `zip` of them (a guard against pointless application, never
//! what makes a rule sound).

use super::applier::{Cond, NatTerm};
use super::pattern::user_var;
use heddle_ir::nat::{CmpOp, NatOp};
use std::collections::HashMap;

/// A token and its byte offset.
type Tok = (usize, String);

fn lex(src: &str) -> Result<Vec<Tok>, (usize, String)> {
    let mut out = Vec::new();
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c == '?' || c.is_ascii_alphanumeric() || c == '_' {
            i += 1;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else if i + 1 < b.len() && [b"&&", b"==", b"!=", b"<=", b">="].iter().any(|op| b[i..i + 2] == op[..]) {
            i += 2;
        } else if "+-*/%()<>,".contains(c) {
            i += 1;
        } else {
            // Only ASCII was consumed before `i`, so it is a character boundary.
            let c = src[i..].chars().next().unwrap_or(c);
            return Err((start, format!("unexpected `{c}` in a condition")));
        }
        out.push((start, src[start..i].to_string()));
    }
    Ok(out)
}

struct P<'a> {
    toks: Vec<Tok>,
    pos: usize,
    end: usize,
    vars: &'a dyn Fn(&str) -> bool,
    fixed: &'a HashMap<String, i64>,
}

type R<T> = Result<T, (usize, String)>;

impl P<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(|t| t.1.as_str())
    }
    fn at(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |t| t.0)
    }
    fn eat(&mut self, s: &str) -> bool {
        if self.peek() == Some(s) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, s: &str) -> R<()> {
        if self.eat(s) { Ok(()) } else { Err((self.at(), format!("expected `{s}` in the condition"))) }
    }
    /// A `?name` that the left-hand side binds; its name without `?`.
    fn pvar(&mut self) -> R<String> {
        let at = self.at();
        match self.peek() {
            Some(t) if t.starts_with('?') && t.len() > 1 => {
                let name = t[1..].to_string();
                if !(self.vars)(&name) && !self.fixed.contains_key(&name) {
                    return Err((at, format!("`{t}` does not occur on the left-hand side")));
                }
                self.pos += 1;
                Ok(name)
            }
            _ => Err((at, "expected a pattern variable `?name`".into())),
        }
    }
    fn cond(&mut self) -> R<Vec<Cond>> {
        let mut out = vec![self.atom()?];
        while self.eat("&&") {
            out.push(self.atom()?);
        }
        if self.pos < self.toks.len() {
            return Err((self.at(), format!("unexpected `{}` in the condition", self.toks[self.pos].1)));
        }
        Ok(out)
    }
    fn atom(&mut self) -> R<Cond> {
        if self.peek() == Some("assoc") {
            self.pos += 1;
            self.expect("(")?;
            let op = self.pvar()?;
            self.expect(",")?;
            let init = self.pvar()?;
            self.expect(")")?;
            return Ok(Cond::Assoc(user_var(&op), user_var(&init)));
        }
        if self.peek() == Some("known") {
            self.pos += 1;
            self.expect("(")?;
            let n = self.nat()?;
            self.expect(")")?;
            return Ok(Cond::Known(n));
        }
        if self.peek() == Some("input") {
            self.pos += 1;
            self.expect("(")?;
            let v = self.pvar()?;
            self.expect(")")?;
            return Ok(Cond::Input(user_var(&v)));
        }
        if self.peek() == Some("not") {
            self.pos += 1;
            self.expect("(")?;
            let a = self.atom()?;
            self.expect(")")?;
            return Ok(Cond::Not(Box::new(a)));
        }
        let a = self.nat()?;
        let at = self.at();
        let op = match self.peek() {
            Some("==") => CmpOp::Eq,
            Some("!=") => CmpOp::Ne,
            Some("<") => CmpOp::Lt,
            Some("<=") => CmpOp::Le,
            Some(">") => CmpOp::Gt,
            Some(">=") => CmpOp::Ge,
            _ => return Err((at, "expected a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`)".into())),
        };
        self.pos += 1;
        Ok(Cond::Cmp(op, a, self.nat()?))
    }
    fn nat(&mut self) -> R<NatTerm> {
        let mut a = self.term()?;
        loop {
            let op = match self.peek() {
                Some("+") => NatOp::Add,
                Some("-") => NatOp::Sub,
                _ => return Ok(a),
            };
            self.pos += 1;
            a = NatTerm::Bin(op, Box::new(a), Box::new(self.term()?));
        }
    }
    fn term(&mut self) -> R<NatTerm> {
        let mut a = self.factor()?;
        loop {
            let op = match self.peek() {
                Some("*") => NatOp::Mul,
                Some("/") => NatOp::Div,
                Some("%") => NatOp::Mod,
                _ => return Ok(a),
            };
            self.pos += 1;
            a = NatTerm::Bin(op, Box::new(a), Box::new(self.factor()?));
        }
    }
    fn factor(&mut self) -> R<NatTerm> {
        let at = self.at();
        match self.peek() {
            Some("(") => {
                self.pos += 1;
                let n = self.nat()?;
                self.expect(")")?;
                Ok(n)
            }
            Some(f @ ("len" | "count")) => {
                let count = f == "count";
                self.pos += 1;
                self.expect("(")?;
                let v = self.pvar()?;
                self.expect(")")?;
                Ok(if count { NatTerm::Count(user_var(&v)) } else { NatTerm::Len(user_var(&v)) })
            }
            Some(t) if t.starts_with('?') => {
                let v = self.pvar()?;
                Ok(match self.fixed.get(&v) {
                    Some(k) => NatTerm::Lit(*k),
                    None => NatTerm::Var(user_var(&v)),
                })
            }
            Some(t) if t.bytes().all(|c| c.is_ascii_digit()) => {
                let v = t.parse::<i64>().map_err(|_| (at, format!("`{t}` is too large")))?;
                self.pos += 1;
                Ok(NatTerm::Lit(v))
            }
            Some(t) => {
                Err((at, format!("unexpected `{t}`: expected a number, `?name`, `len(?x)`, `count(?x)` or `(`")))
            }
            None => Err((at, "the condition ends too early".into())),
        }
    }
}

/// Parses a condition. `vars` says whether a name (without `?`) is a
/// pattern variable of the left-hand side; `fixed` holds `for` values.
/// Errors carry a byte offset into `src`.
pub fn parse_cond(
    src: &str,
    vars: &dyn Fn(&str) -> bool,
    fixed: &HashMap<String, i64>,
) -> Result<Vec<Cond>, (usize, String)> {
    let toks = lex(src)?;
    if toks.is_empty() {
        return Err((src.len(), "`if` needs a condition".into()));
    }
    P { toks, pos: 0, end: src.len(), vars, fixed }.cond()
}

//! The parser for `#sparse_tensor.encoding<{ ... }>`.
//!
//! Parsing produces a [`RawEncoding`]: the syntax as written, with general
//! affine expressions. [`super::verify::build`] then classifies the level
//! expressions and applies MLIR's verifier rules, so every semantic error is
//! reported by one module with one style.

use super::err;
use super::verify;
use super::{DimSlice, Encoding, Literal};
use crate::name::Name;
use crate::span::{Diagnostic, ErrorKind, Span};

/// Parses and verifies an encoding attribute. `offset` is the byte offset at
/// which `text` starts in its file; every span in the result (and in the
/// error) is absolute.
///
/// ```
/// use heddle_ir::encoding::{parse_encoding, LevelFormat};
/// let e = parse_encoding("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>", 0).unwrap();
/// assert_eq!(e.levels[1].format, LevelFormat::Compressed);
/// ```
pub fn parse_encoding(text: &str, offset: usize) -> Result<Encoding, Diagnostic> {
    let syntax = |d: Diagnostic| d.or_kind(ErrorKind::Syntax);
    let toks = lex(text, offset).map_err(syntax)?;
    let end = Span::new(offset + text.len(), offset + text.len());
    let mut p = Parser { toks, pos: 0, end };
    let raw = p.attribute().map_err(syntax)?;
    verify::build(raw).map_err(|d| d.or_kind(ErrorKind::Type))
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    /// `#sparse_tensor.encoding`, `#sparse_tensor`.
    Hash(String),
    Int(u64),
    Float(String),
    Str(String),
    Sym(&'static str),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    span: Span,
}

const SYMBOLS: [&str; 17] = ["->", "(", ")", "[", "]", "{", "}", "<", ">", ",", ":", "=", "*", "+", "-", "?", "."];

fn lex(text: &str, offset: usize) -> Result<Vec<Token>, Diagnostic> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if text[i..].starts_with("//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        let span = |e: usize| Span::new(offset + start, offset + e);
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(text[start..i].to_string()), span: span(i) });
        } else if c == b'#' {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            out.push(Token { tok: Tok::Hash(text[start + 1..i].to_string()), span: span(i) });
        } else if c.is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let mut float = false;
            if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
                float = true;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    float = true;
                    i = j;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s = &text[start..i];
            let tok = if float {
                Tok::Float(s.to_string())
            } else {
                match s.parse::<u64>() {
                    Ok(v) => Tok::Int(v),
                    Err(_) => {
                        return Err(err(span(i), format!("integer `{s}` is too large"), "does not fit in 64 bits"));
                    }
                }
            };
            out.push(Token { tok, span: span(i) });
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += 1;
            }
            if i >= b.len() || b[i] != b'"' {
                return Err(err(span(i), "unterminated string", "this string is never closed by `\"`"));
            }
            i += 1;
            out.push(Token { tok: Tok::Str(text[start + 1..i - 1].to_string()), span: span(i) });
        } else if let Some(s) = SYMBOLS.iter().find(|s| text[i..].starts_with(**s)) {
            i += s.len();
            out.push(Token { tok: Tok::Sym(s), span: span(i) });
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            let e = i + ch.len_utf8();
            return Err(err(
                span(e),
                format!("unexpected character `{ch}` in an encoding"),
                "not part of MLIR's encoding syntax",
            ));
        }
    }
    Ok(out)
}

/// An affine expression as written.
#[derive(Clone, Debug)]
pub(crate) struct AExpr {
    pub kind: AKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) enum AKind {
    Var(Name),
    Const(i64),
    Neg(Box<AExpr>),
    Bin(ABin, Box<AExpr>, Box<AExpr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ABin {
    Add,
    Sub,
    Mul,
    FloorDiv,
    CeilDiv,
    Mod,
}

impl ABin {
    pub(crate) fn spelling(self) -> &'static str {
        match self {
            ABin::Add => "+",
            ABin::Sub => "-",
            ABin::Mul => "*",
            ABin::FloorDiv => "floordiv",
            ABin::CeilDiv => "ceildiv",
            ABin::Mod => "mod",
        }
    }
}

/// A dimension specification: `i`, `i : #sparse_tensor<slice(...)>`, or `i = ib * 2 + ii`.
#[derive(Clone, Debug)]
pub(crate) struct RawDim {
    pub name: Name,
    pub span: Span,
    pub slice: Option<(DimSlice, Span)>,
    pub inverse: Option<AExpr>,
}

/// A level specification: `[name =] expr : format[(props)]`.
#[derive(Clone, Debug)]
pub(crate) struct RawLevel {
    pub name: Option<(Name, Span)>,
    pub expr: AExpr,
    /// The format's words: the keyword, its `[n, m]` arguments, the properties.
    pub format: Option<RawFormat>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) struct RawFormat {
    pub keyword: String,
    pub args: Option<(Vec<u64>, Span)>,
    pub props: Vec<(String, Span)>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) struct RawMap {
    pub symbols: Vec<(Name, Span)>,
    pub lvl_names: Option<Vec<(Name, Span)>>,
    pub dims: Vec<RawDim>,
    pub levels: Vec<RawLevel>,
    pub span: Span,
}

/// The attribute as written.
#[derive(Clone, Debug)]
pub(crate) struct RawEncoding {
    pub map: Option<RawMap>,
    /// Legacy `dimLevelType = [...]`: formats without expressions.
    pub legacy_levels: Option<(Vec<RawFormat>, Span)>,
    /// Legacy `dimOrdering = affine_map<...>`.
    pub legacy_ordering: Option<RawMap>,
    pub pos_width: Option<(u64, Span)>,
    pub crd_width: Option<(u64, Span)>,
    pub explicit_val: Option<Literal>,
    pub implicit_val: Option<Literal>,
    pub span: Span,
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    end: Span,
}

type PResult<T> = Result<T, Diagnostic>;

fn describe(t: Option<&Tok>) -> String {
    match t {
        None => "the end of the encoding".into(),
        Some(Tok::Ident(s)) => format!("`{s}`"),
        Some(Tok::Hash(s)) => format!("`#{s}`"),
        Some(Tok::Int(v)) => format!("`{v}`"),
        Some(Tok::Float(s)) => format!("`{s}`"),
        Some(Tok::Str(s)) => format!("\"{s}\""),
        Some(Tok::Sym(s)) => format!("`{s}`"),
    }
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }
    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }
    fn span(&self) -> Span {
        self.toks.get(self.pos).map_or(self.end, |t| t.span)
    }
    fn prev_span(&self) -> Span {
        self.pos.checked_sub(1).and_then(|p| self.toks.get(p)).map_or(self.end, |t| t.span)
    }
    fn bump(&mut self) -> Option<Token> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Sym(x)) if *x == s)
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(x)) if x == s)
    }
    fn eat_sym(&mut self, s: &str) -> bool {
        if self.is_sym(s) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn unexpected(&self, what: &str) -> Diagnostic {
        err(self.span(), format!("expected {what}, found {}", describe(self.peek())), format!("expected {what}"))
    }
    fn expect_sym(&mut self, s: &str, ctx: &str) -> PResult<Span> {
        if self.is_sym(s) {
            Ok(self.bump().map_or(self.end, |t| t.span))
        } else {
            Err(self.unexpected(&format!("`{s}` {ctx}")))
        }
    }
    fn ident(&mut self, what: &str) -> PResult<(Name, Span)> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let n = Name::from(s.as_str());
                let sp = self.span();
                self.pos += 1;
                Ok((n, sp))
            }
            _ => Err(self.unexpected(what)),
        }
    }
    fn int(&mut self, what: &str) -> PResult<(u64, Span)> {
        match self.peek() {
            Some(Tok::Int(v)) => {
                let v = *v;
                let sp = self.span();
                self.pos += 1;
                Ok((v, sp))
            }
            _ => Err(self.unexpected(what)),
        }
    }

    fn attribute(&mut self) -> PResult<RawEncoding> {
        let start = self.span();
        match self.peek() {
            Some(Tok::Hash(h)) if h == "sparse_tensor.encoding" => self.pos += 1,
            _ => return Err(self.unexpected("`#sparse_tensor.encoding<{ ... }>`")),
        }
        self.expect_sym("<", "after `#sparse_tensor.encoding`")?;
        self.expect_sym("{", "to open the encoding's fields")?;
        let mut raw = RawEncoding {
            map: None,
            legacy_levels: None,
            legacy_ordering: None,
            pos_width: None,
            crd_width: None,
            explicit_val: None,
            implicit_val: None,
            span: start,
        };
        let mut seen: Vec<String> = Vec::new();
        while !self.is_sym("}") {
            let (key, key_span) = self.ident("a field name (`map`, `posWidth`, `crdWidth`, ...)")?;
            let canonical = match key.as_str() {
                "dimLevelType" | "lvlTypes" => "lvlTypes",
                "dimOrdering" | "dimToLvl" => "dimToLvl",
                "pointerBitWidth" | "posWidth" => "posWidth",
                "indexBitWidth" | "crdWidth" => "crdWidth",
                k => k,
            }
            .to_string();
            if seen.contains(&canonical) {
                return Err(err(key_span, format!("field `{key}` is given twice"), "second definition here"));
            }
            self.expect_sym("=", &format!("after `{key}`"))?;
            match canonical.as_str() {
                "map" => raw.map = Some(self.map()?),
                "posWidth" => raw.pos_width = Some(self.int("a bit width (0, 8, 16, 32 or 64)")?),
                "crdWidth" => raw.crd_width = Some(self.int("a bit width (0, 8, 16, 32 or 64)")?),
                "explicitVal" => raw.explicit_val = Some(self.literal()?),
                "implicitVal" => raw.implicit_val = Some(self.literal()?),
                "lvlTypes" => raw.legacy_levels = Some(self.legacy_levels()?),
                "dimToLvl" => raw.legacy_ordering = Some(self.affine_map()?),
                _ => {
                    return Err(err(
                        key_span,
                        format!("unknown encoding field `{key}`"),
                        "not a field of `#sparse_tensor.encoding`",
                    )
                    .with_note("the fields are `map`, `posWidth`, `crdWidth`, `explicitVal` and `implicitVal`"));
                }
            }
            seen.push(canonical);
            if !self.eat_sym(",") && !self.is_sym("}") {
                return Err(self.unexpected("`,` or `}`"));
            }
        }
        self.pos += 1;
        let close = self.expect_sym(">", "to close `#sparse_tensor.encoding<{ ... }`")?;
        if self.peek().is_some() {
            return Err(err(
                self.span(),
                format!("unexpected {} after the encoding", describe(self.peek())),
                "the encoding ended at `}>`",
            ));
        }
        raw.span = start.to(close);
        Ok(raw)
    }

    fn literal(&mut self) -> PResult<Literal> {
        let neg = self.eat_sym("-");
        let text = match self.bump().map(|t| t.tok) {
            Some(Tok::Int(v)) => v.to_string(),
            Some(Tok::Float(s)) => s,
            Some(Tok::Ident(s)) if s == "true" || s == "false" => s,
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("a number"));
            }
        };
        let text = if neg { format!("-{text}") } else { text };
        let ty = if self.eat_sym(":") { Some(self.ident("a type such as `f32`")?.0.to_string()) } else { None };
        Ok(Literal { text, ty })
    }

    /// `[c]`, `{l0, l1}`, the dims, `[c]` again (affine-map style), `->`, the levels.
    fn map(&mut self) -> PResult<RawMap> {
        let start = self.span();
        let mut symbols = Vec::new();
        if self.is_sym("[") {
            symbols = self.id_list("[", "]", "a symbol name")?;
        }
        let lvl_names = if self.is_sym("{") { Some(self.id_list("{", "}", "a level variable")?) } else { None };
        self.expect_sym("(", "to open the dimension list")?;
        let mut dims = Vec::new();
        while !self.is_sym(")") {
            dims.push(self.dim_spec()?);
            if !self.eat_sym(",") && !self.is_sym(")") {
                return Err(self.unexpected("`,` or `)` in the dimension list"));
            }
        }
        self.pos += 1;
        if self.is_sym("[") {
            if !symbols.is_empty() {
                return Err(err(
                    self.span(),
                    "symbols are given twice",
                    "symbols were already listed before the dimensions",
                ));
            }
            symbols = self.id_list("[", "]", "a symbol name")?;
        }
        self.expect_sym("->", "between the dimensions and the levels")?;
        self.expect_sym("(", "to open the level list")?;
        let mut levels = Vec::new();
        while !self.is_sym(")") {
            levels.push(self.level_spec(true)?);
            if !self.eat_sym(",") && !self.is_sym(")") {
                return Err(self.unexpected("`,` or `)` in the level list"));
            }
        }
        self.pos += 1;
        Ok(RawMap { symbols, lvl_names, dims, levels, span: start.to(self.prev_span()) })
    }

    /// `affine_map<(d0, d1) -> (d1, d0)>`: a legacy ordering, levels without formats.
    fn affine_map(&mut self) -> PResult<RawMap> {
        let start = self.span();
        if !self.is_ident("affine_map") {
            return Err(self.unexpected("`affine_map<(...) -> (...)>`"));
        }
        self.pos += 1;
        self.expect_sym("<", "after `affine_map`")?;
        self.expect_sym("(", "to open the dimension list")?;
        let mut dims = Vec::new();
        while !self.is_sym(")") {
            let (name, span) = self.ident("a dimension name")?;
            dims.push(RawDim { name, span, slice: None, inverse: None });
            if !self.eat_sym(",") && !self.is_sym(")") {
                return Err(self.unexpected("`,` or `)`"));
            }
        }
        self.pos += 1;
        let symbols = if self.is_sym("[") { self.id_list("[", "]", "a symbol name")? } else { Vec::new() };
        self.expect_sym("->", "in the affine map")?;
        self.expect_sym("(", "to open the results")?;
        let mut levels = Vec::new();
        while !self.is_sym(")") {
            levels.push(self.level_spec(false)?);
            if !self.eat_sym(",") && !self.is_sym(")") {
                return Err(self.unexpected("`,` or `)`"));
            }
        }
        self.pos += 1;
        self.expect_sym(">", "to close `affine_map<...>`")?;
        Ok(RawMap { symbols, lvl_names: None, dims, levels, span: start.to(self.prev_span()) })
    }

    fn id_list(&mut self, open: &str, close: &str, what: &str) -> PResult<Vec<(Name, Span)>> {
        self.expect_sym(open, "")?;
        let mut out = Vec::new();
        while !self.is_sym(close) {
            out.push(self.ident(what)?);
            if !self.eat_sym(",") && !self.is_sym(close) {
                return Err(self.unexpected(&format!("`,` or `{close}`")));
            }
        }
        self.pos += 1;
        Ok(out)
    }

    fn dim_spec(&mut self) -> PResult<RawDim> {
        let (name, span) = self.ident("a dimension variable")?;
        let mut d = RawDim { name, span, slice: None, inverse: None };
        if self.eat_sym("=") {
            d.inverse = Some(self.expr()?);
        } else if self.eat_sym(":") {
            d.slice = Some(self.slice()?);
        }
        Ok(d)
    }

    /// `#sparse_tensor<slice(offset, size, stride)>`, `?` for dynamic.
    fn slice(&mut self) -> PResult<(DimSlice, Span)> {
        let start = self.span();
        match self.peek() {
            Some(Tok::Hash(h)) if h == "sparse_tensor" => self.pos += 1,
            _ => return Err(self.unexpected("a slice `#sparse_tensor<slice(offset, size, stride)>`")),
        }
        self.expect_sym("<", "after `#sparse_tensor`")?;
        if !self.is_ident("slice") {
            return Err(self.unexpected("`slice(offset, size, stride)`"));
        }
        self.pos += 1;
        self.expect_sym("(", "after `slice`")?;
        let mut parts = [None; 3];
        for (k, part) in parts.iter_mut().enumerate() {
            if k > 0 {
                self.expect_sym(",", "between the slice's offset, size and stride")?;
            }
            if !self.eat_sym("?") {
                *part = Some(self.int("an integer or `?`")?.0);
            }
        }
        self.expect_sym(")", "after the slice's stride")?;
        let close = self.expect_sym(">", "to close `#sparse_tensor<...>`")?;
        Ok((DimSlice { offset: parts[0], size: parts[1], stride: parts[2] }, start.to(close)))
    }

    fn level_spec(&mut self, with_format: bool) -> PResult<RawLevel> {
        let start = self.span();
        let name = if matches!(self.peek(), Some(Tok::Ident(_))) && matches!(self.peek_at(1), Some(Tok::Sym("="))) {
            let n = self.ident("a level variable")?;
            self.pos += 1;
            Some(n)
        } else {
            None
        };
        let expr = self.expr()?;
        let format = if with_format {
            self.expect_sym(":", "and a level format after the level expression (`i : dense`)")?;
            Some(self.format()?)
        } else {
            None
        };
        Ok(RawLevel { name, expr, format, span: start.to(self.prev_span()) })
    }

    fn format(&mut self) -> PResult<RawFormat> {
        let (kw, start) = self.ident("a level format (`dense`, `compressed`, `singleton`, ...)")?;
        let args = if self.is_sym("[") {
            let open = self.span();
            self.pos += 1;
            let mut v = Vec::new();
            while !self.is_sym("]") {
                v.push(self.int("an integer")?.0);
                if !self.eat_sym(",") && !self.is_sym("]") {
                    return Err(self.unexpected("`,` or `]`"));
                }
            }
            self.pos += 1;
            Some((v, open.to(self.prev_span())))
        } else {
            None
        };
        let mut props = Vec::new();
        if self.eat_sym("(") {
            while !self.is_sym(")") {
                let (p, sp) = self.ident("a level property (`nonunique`, `nonordered`, `soa`)")?;
                props.push((p.to_string(), sp));
                if !self.eat_sym(",") && !self.is_sym(")") {
                    return Err(self.unexpected("`,` or `)` in the property list"));
                }
            }
            self.pos += 1;
        }
        Ok(RawFormat { keyword: kw.to_string(), args, props, span: start.to(self.prev_span()) })
    }

    /// Legacy `["dense", "compressed-nu", ...]`.
    fn legacy_levels(&mut self) -> PResult<(Vec<RawFormat>, Span)> {
        let start = self.expect_sym("[", "to open the list of level types")?;
        let mut out = Vec::new();
        while !self.is_sym("]") {
            match self.bump() {
                Some(Token { tok: Tok::Str(s), span }) => {
                    // Old suffixes: -nu nonunique, -no nonordered, -hi loose.
                    let mut parts = s.split('-');
                    let kw = parts.next().unwrap_or_default().to_string();
                    let props = parts
                        .map(|p| match p {
                            "nu" => "nonunique".to_string(),
                            "no" => "nonordered".to_string(),
                            "hi" => "high".to_string(),
                            other => other.to_string(),
                        })
                        .map(|p| (p, span))
                        .collect();
                    out.push(RawFormat { keyword: kw, args: None, props, span });
                }
                _ => {
                    self.pos -= 1;
                    return Err(self.unexpected("a quoted level type such as \"compressed\""));
                }
            }
            if !self.eat_sym(",") && !self.is_sym("]") {
                return Err(self.unexpected("`,` or `]`"));
            }
        }
        self.pos += 1;
        Ok((out, start.to(self.prev_span())))
    }

    // Affine expressions: `+ -` < `* floordiv ceildiv mod` < unary minus < atoms.
    fn expr(&mut self) -> PResult<AExpr> {
        let mut lhs = self.term()?;
        loop {
            let op = if self.is_sym("+") {
                ABin::Add
            } else if self.is_sym("-") {
                ABin::Sub
            } else {
                return Ok(lhs);
            };
            self.pos += 1;
            let rhs = self.term()?;
            let span = lhs.span.to(rhs.span);
            lhs = AExpr { kind: AKind::Bin(op, Box::new(lhs), Box::new(rhs)), span };
        }
    }

    fn term(&mut self) -> PResult<AExpr> {
        let mut lhs = self.unary()?;
        loop {
            let op = if self.is_sym("*") {
                ABin::Mul
            } else if self.is_ident("floordiv") {
                ABin::FloorDiv
            } else if self.is_ident("ceildiv") {
                ABin::CeilDiv
            } else if self.is_ident("mod") {
                ABin::Mod
            } else {
                return Ok(lhs);
            };
            self.pos += 1;
            let rhs = self.unary()?;
            let span = lhs.span.to(rhs.span);
            lhs = AExpr { kind: AKind::Bin(op, Box::new(lhs), Box::new(rhs)), span };
        }
    }

    fn unary(&mut self) -> PResult<AExpr> {
        let start = self.span();
        if self.eat_sym("-") {
            let e = self.unary()?;
            let span = start.to(e.span);
            return Ok(AExpr { kind: AKind::Neg(Box::new(e)), span });
        }
        match self.peek().cloned() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                let v = i64::try_from(v).map_err(|_| err(start, "constant too large", "does not fit in 63 bits"))?;
                Ok(AExpr { kind: AKind::Const(v), span: start })
            }
            Some(Tok::Ident(s)) if !matches!(s.as_str(), "floordiv" | "ceildiv" | "mod") => {
                self.pos += 1;
                Ok(AExpr { kind: AKind::Var(Name::from(s)), span: start })
            }
            Some(Tok::Sym("(")) => {
                self.pos += 1;
                let mut e = self.expr()?;
                let close = self.expect_sym(")", "to close the parenthesis")?;
                e.span = start.to(close);
                Ok(e)
            }
            _ => Err(self.unexpected("a level expression (a dimension variable, `i floordiv 2`, `i mod 2`)")),
        }
    }
}

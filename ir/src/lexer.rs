//! The lexer (LANGUAGE.md §1).

use crate::span::{Diagnostic, Span};

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier (also keywords, which the parser recognises by text).
    Ident(String),
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// `#NAME`, a reference to a named encoding.
    HashName(String),
    /// A whole `#sparse_tensor.encoding<{ ... }>` attribute.
    Encoding(String),
    /// Punctuation and operators, by their spelling (`->` also for `↦`).
    Sym(&'static str),
    /// End of input.
    Eof,
}

/// A token with its location.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What.
    pub tok: Tok,
    /// Where.
    pub span: Span,
}

const SYMBOLS: &[&str] = &[
    ":>>", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "..", "(", ")", "[", "]", "{", "}", ",", ";", ":", ".", "@",
    "=", "+", "-", "*", "/", "%", "<", ">", "!", "?",
];

/// A comment, kept as trivia: the parser never sees it; `heddle fmt` puts it
/// back where it stood (see [`crate::printer::format_source`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    /// The comment as written, `//` or `/*` included (a line comment without its newline).
    pub text: String,
    /// Where.
    pub span: Span,
}

impl Comment {
    /// A `// …` comment (it ends its line)?
    pub fn is_line(&self) -> bool {
        self.text.starts_with("//")
    }
}

/// Splits `src` into tokens. Stops at the first bad character or literal.
pub fn lex(src: &str) -> Result<Vec<Token>, Diagnostic> {
    lex_with_comments(src).map(|(tokens, _)| tokens)
}

/// Splits `src` into tokens and the comments between them, both in source order.
pub fn lex_with_comments(src: &str) -> Result<(Vec<Token>, Vec<Comment>), Diagnostic> {
    let bytes = src.as_bytes();
    let mut i = 0;
    let mut out: Vec<Token> = Vec::new();
    let mut comments = Vec::new();
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            let start = i;
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            let text = src[start..i].trim_end();
            comments.push(Comment { text: text.to_string(), span: Span::new(start, start + text.len()) });
            continue;
        }
        if src[i..].starts_with("/*") {
            match src[i + 2..].find("*/") {
                Some(end) => {
                    let start = i;
                    i = i + 2 + end + 2;
                    comments.push(Comment { text: src[start..i].to_string(), span: Span::new(start, i) });
                }
                None => {
                    return Err(Diagnostic::new(Span::new(i, i + 2), "unterminated block comment")
                        .with_label("this `/*` is never closed by `*/`"));
                }
            }
            continue;
        }
        let start = i;
        if src[i..].starts_with('↦') {
            i += '↦'.len_utf8();
            out.push(Token { tok: Tok::Sym("->"), span: Span::new(start, i) });
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(src[start..i].to_string()), span: Span::new(start, i) });
            continue;
        }
        if c.is_ascii_digit() {
            let after_dot = matches!(out.last(), Some(Token { tok: Tok::Sym("."), .. }));
            let (tok, end) = lex_number(src, i, after_dot)?;
            i = end;
            out.push(Token { tok, span: Span::new(start, i) });
            continue;
        }
        if c == b'#' {
            i += 1;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.') {
                i += 1;
            }
            let name = &src[start + 1..i];
            if name.is_empty() {
                return Err(Diagnostic::new(Span::new(start, start + 1), "expected a name after `#`")
                    .with_label("`#` starts an encoding name such as `#CSR`"));
            }
            if name == "sparse_tensor.encoding" {
                let end = encoding_end(src, i).ok_or_else(|| {
                    Diagnostic::new(Span::new(start, i), "unterminated sparse encoding")
                        .with_label("expected `<{ ... }>` after this")
                })?;
                i = end;
                out.push(Token { tok: Tok::Encoding(src[start..i].to_string()), span: Span::new(start, i) });
            } else {
                out.push(Token { tok: Tok::HashName(name.to_string()), span: Span::new(start, i) });
            }
            continue;
        }
        match SYMBOLS.iter().find(|s| src[i..].starts_with(**s)) {
            Some(s) => {
                i += s.len();
                out.push(Token { tok: Tok::Sym(s), span: Span::new(start, i) });
            }
            None => {
                let ch = src[i..].chars().next().unwrap_or('?');
                let d = Diagnostic::new(Span::new(i, i + ch.len_utf8()), format!("unknown character `{ch}`"))
                    .with_label("not part of heddle's syntax");
                // Other languages' lambdas: `\x -> e`, `|x| e`, `λx. e`.
                return Err(match ch {
                    '\\' | '|' | 'λ' => d.with_note("a function is written `fun(x => body)` (or `x => body`)"),
                    _ => d,
                });
            }
        }
    }
    out.push(Token { tok: Tok::Eof, span: Span::new(src.len(), src.len()) });
    Ok((out, comments))
}

/// Finds the end of `<{ ... }>` starting at `i` (after the attribute name).
fn encoding_end(src: &str, mut i: usize) -> Option<usize> {
    let bytes = src.as_bytes();
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    if !src[i..].starts_with('<') {
        return None;
    }
    let mut depth = 0i32;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] != b'-' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn lex_number(src: &str, start: usize, integer_only: bool) -> Result<(Tok, usize), Diagnostic> {
    let bytes = src.as_bytes();
    let mut i = start;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    let mut is_float = false;
    if !integer_only {
        if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
            is_float = true;
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
        if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
            let mut j = i + 1;
            if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                j += 1;
            }
            if j < bytes.len() && bytes[j].is_ascii_digit() {
                is_float = true;
                i = j;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
        }
    }
    let text = &src[start..i];
    if !integer_only
        && i < bytes.len()
        && bytes[i] == b'f'
        && !bytes.get(i + 1).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    {
        let v: f64 = text.parse().map_err(|_| bad_number(start, i + 1))?;
        return Ok((Tok::Float(finite(v, text, start, i + 1)?), i + 1));
    }
    if i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
        let mut j = i;
        while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
            j += 1;
        }
        // `10x8xf32` in tensor shapes is read by the parser from the source; here it is an int and an identifier.
        if bytes[i] != b'x' {
            return Err(Diagnostic::new(Span::new(start, j), format!("malformed number `{}`", &src[start..j]))
                .with_label("a number cannot run into letters"));
        }
    }
    if is_float {
        let v: f64 = text.parse().map_err(|_| bad_number(start, i))?;
        Ok((Tok::Float(finite(v, text, start, i)?), i))
    } else {
        let v: i64 = text.parse().map_err(|_| {
            Diagnostic::new(Span::new(start, i), format!("integer literal `{text}` is too large"))
                .with_label("integers must fit in 64 bits")
        })?;
        Ok((Tok::Int(v), i))
    }
}

/// A float literal must have a value: `3.0e382` is not a number any type holds.
fn finite(v: f64, text: &str, start: usize, end: usize) -> Result<f64, Diagnostic> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(Diagnostic::new(Span::new(start, end), format!("float literal `{text}` is too large"))
            .with_label("beyond the largest double, about 1.8e308"))
    }
}

fn bad_number(start: usize, end: usize) -> Diagnostic {
    Diagnostic::new(Span::new(start, end), "malformed number")
}

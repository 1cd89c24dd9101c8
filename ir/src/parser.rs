//! The parser: LANGUAGE.md §1–§5 (and the `tensor<…>` / encoding syntax of §6).
//!
//! Recursive descent over the token list. Errors are located; at the top level
//! the parser recovers at the next `;` or `def`, so one run reports every
//! broken definition.

use crate::expr::{BinOp, Def, EncodingDef, Expr, ExprKind, FloatLit, Literal, Param, Program, SectionOp, UnOp};
use crate::lexer::{Tok, Token, lex};
use crate::name::Name;
use crate::nat::{CmpOp, Nat, NatCond, NatOp};
use crate::span::{Diagnostic, ErrorKind, Span};
use crate::tensor::{EncodingRef, EncodingText, TensorType};
use crate::types::{ScalarType, Type};

type PResult<T> = Result<T, Diagnostic>;

/// Parses a whole file. On failure, every error found (at least one).
pub fn parse_program(src: &str) -> Result<Program, Vec<Diagnostic>> {
    check_size(src).map_err(|d| vec![d.or_kind(ErrorKind::Syntax)])?;
    let tokens = lex(src).map_err(|d| vec![d.or_kind(ErrorKind::Syntax)])?;
    let mut p = Parser { src, tokens, pos: 0, sig_mode: false, depth: 0, links: 0 };
    p.program().map_err(|ds| ds.into_iter().map(|d| d.or_kind(ErrorKind::Syntax)).collect())
}

/// Parses a file of named encodings (`--defs FILE`): `#NAME = ENCODING` lines,
/// each an MLIR attribute or a name form (`#B = BSR(2, 2)`), `;` optional.
pub fn parse_encoding_defs(src: &str) -> Result<Vec<EncodingDef>, Vec<Diagnostic>> {
    check_size(src).map_err(|d| vec![d.or_kind(ErrorKind::Syntax)])?;
    let tokens = lex(src).map_err(|d| vec![d.or_kind(ErrorKind::Syntax)])?;
    let mut p = Parser { src, tokens, pos: 0, sig_mode: false, depth: 0, links: 0 };
    let mut defs = Vec::new();
    let mut errors = Vec::new();
    while !matches!(p.peek().tok, Tok::Eof) {
        if !matches!(p.peek().tok, Tok::HashName(_)) {
            errors.push(p.unexpected("`#NAME = ENCODING`").or_kind(ErrorKind::Syntax));
            break;
        }
        match p.encoding_def() {
            Ok(d) => defs.push(d),
            Err(e) => {
                errors.push(e.or_kind(ErrorKind::Syntax));
                p.recover();
            }
        }
    }
    if errors.is_empty() { Ok(defs) } else { Err(errors) }
}

/// Parses one expression (the whole input).
pub fn parse_expr(src: &str) -> Result<Expr, Diagnostic> {
    whole(src, |p| p.expr())
}

/// Parses one type (the whole input).
pub fn parse_type(src: &str) -> Result<Type, Diagnostic> {
    whole(src, |p| p.ty())
}

/// Parses one natural (the whole input), e.g. for `heddle simplify --nat`.
pub fn parse_nat(src: &str) -> Result<Nat, Diagnostic> {
    whole(src, |p| p.nat())
}

fn whole<T>(src: &str, item: impl FnOnce(&mut Parser) -> PResult<T>) -> Result<T, Diagnostic> {
    let parsed = Parser::new(src).and_then(|mut p| {
        let t = item(&mut p)?;
        p.expect_eof()?;
        Ok(t)
    });
    parsed.map_err(|d| d.or_kind(ErrorKind::Syntax))
}

/// Words that cannot be used as names.
pub const KEYWORDS: &[&str] =
    &["fun", "nFun", "nfun", "let", "in", "def", "select", "true", "false", "max", "min", "inf", "nan"];

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    /// Reading `prims.sig`: single capital letters are unknowns.
    sig_mode: bool,
    /// Current nesting of expressions, types and naturals.
    depth: u32,
    /// Links of the innermost left-associative chain so far.
    links: u32,
}

/// Nesting deeper than this is reported instead of recursing further. It
/// bounds the depth of every syntax tree the parser builds: parentheses,
/// arguments and bodies nest one level each, and so does each link of a
/// left-associative chain (`:>>` stages, operators, `@`, applications), so
/// every tree is at most twice this deep and every later pass may recurse
/// that far.
pub const MAX_NESTING: u32 = 500;

/// Program texts longer than this are refused before they are read: a
/// kernel is kilobytes, and each byte can become a token (tens of bytes).
pub const MAX_SOURCE_BYTES: usize = 4 << 20;

fn check_size(src: &str) -> PResult<()> {
    if src.len() > MAX_SOURCE_BYTES {
        return Err(Diagnostic::new(
            Span::new(0, 0),
            format!("the text is {} bytes long; heddle reads at most {MAX_SOURCE_BYTES} bytes", src.len()),
        )
        .with_label("too long to read"));
    }
    Ok(())
}

/// Parses a primitive's signature from `prims.sig` (see [`crate::prims`]).
pub fn parse_signature(src: &str) -> Result<(Vec<crate::prims::Slot>, Type), Diagnostic> {
    use crate::prims::Slot;
    let mut p = Parser::new(src)?;
    p.sig_mode = true;
    let mut items = Vec::new();
    loop {
        let named = matches!(
            (&p.peek().tok, &p.peek_at(1).tok, &p.peek_at(2).tok),
            (Tok::Sym("("), Tok::Ident(_), Tok::Sym(":"))
        );
        if named {
            p.bump();
            let (name, _) = p.ident("a slot name")?;
            p.bump();
            if p.is_ident("nat") {
                p.bump();
                let optional = p.eat_sym("?");
                items.push(Slot::Nat { name, optional });
            } else {
                let mut chain = vec![p.ty()?];
                while p.eat_sym("->") {
                    chain.push(p.ty()?);
                }
                let result = chain.pop().expect("at least one type");
                items.push(if chain.is_empty() {
                    Slot::Value { name, ty: result }
                } else {
                    Slot::Fun { name, params: chain, result }
                });
            }
            p.expect_sym(")", "to close the slot")?;
        } else {
            items.push(Slot::Input(p.ty()?));
        }
        if !p.eat_sym("->") {
            break;
        }
    }
    p.expect_eof()?;
    match items.pop() {
        Some(Slot::Input(result)) => Ok((items, result)),
        _ => Err(Diagnostic::new(Span::DUMMY, "a signature must end with its result type")),
    }
}

fn is_unknown_letter(s: &str) -> Option<char> {
    let mut cs = s.chars();
    match (cs.next(), cs.next()) {
        (Some(c), None) if c.is_ascii_uppercase() => Some(c),
        _ => None,
    }
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> PResult<Parser<'a>> {
        check_size(src)?;
        Ok(Parser { src, tokens: lex(src)?, pos: 0, sig_mode: false, depth: 0, links: 0 })
    }

    // ----- token helpers -------------------------------------------------

    fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }
    fn peek_at(&self, k: usize) -> &Token {
        &self.tokens[(self.pos + k).min(self.tokens.len() - 1)]
    }
    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn prev_span(&self) -> Span {
        self.tokens[self.pos.saturating_sub(1)].span
    }
    fn is_sym(&self, s: &str) -> bool {
        matches!(&self.peek().tok, Tok::Sym(x) if *x == s)
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(x) if x == s)
    }
    fn eat_sym(&mut self, s: &str) -> bool {
        if self.is_sym(s) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn expect_sym(&mut self, s: &str, context: &str) -> PResult<Span> {
        if self.is_sym(s) { Ok(self.bump().span) } else { Err(self.unexpected(&format!("`{s}` {context}"))) }
    }
    fn expect_eof(&mut self) -> PResult<()> {
        if matches!(self.peek().tok, Tok::Eof) { Ok(()) } else { Err(self.unexpected("the end of the input")) }
    }
    fn unexpected(&self, expected: &str) -> Diagnostic {
        let t = self.peek();
        let found = describe(&t.tok);
        Diagnostic::new(t.span, format!("expected {expected}, found {found}"))
            .with_label(format!("expected {expected}"))
    }
    fn ident(&mut self, what: &str) -> PResult<(Name, Span)> {
        match &self.peek().tok {
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                let t = self.bump();
                Ok((Name::from(s_of(&t)), t.span))
            }
            Tok::Ident(s) => {
                Err(Diagnostic::new(self.peek().span, format!("`{s}` is a keyword and cannot be used as {what}"))
                    .with_label(format!("expected {what}")))
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// Runs `f` over a left-associative chain, counting its links (see
    /// [`Parser::link`]) apart from those of any chain around it.
    fn chain<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        let outer = std::mem::replace(&mut self.links, 0);
        let r = f(self);
        self.links = outer;
        r
    }

    /// One more link of a left-associative chain: the tree grows one level.
    /// Links and nesting together stay within [`MAX_NESTING`] (an operand
    /// is parsed at the chain's own depth, so a tree is at most twice that deep).
    fn link(&mut self) -> PResult<()> {
        if self.depth + self.links >= MAX_NESTING {
            return Err(Diagnostic::new(
                self.peek().span,
                format!("the program nests more than {MAX_NESTING} levels deep here"),
            )
            .with_label("too deeply nested")
            .with_note("each `:>>` stage, operator, `@` or application in a row nests one level deeper"));
        }
        self.links += 1;
        Ok(())
    }

    /// Runs `f` one nesting level deeper, refusing to go past [`MAX_NESTING`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_NESTING {
            return Err(Diagnostic::new(
                self.peek().span,
                format!("the program nests more than {MAX_NESTING} levels deep here"),
            )
            .with_label("too deeply nested"));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    // ----- program -------------------------------------------------------

    fn program(&mut self) -> Result<Program, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let mut defs = Vec::new();
        let mut encodings = Vec::new();
        let mut kernel = None;
        loop {
            match &self.peek().tok {
                Tok::Eof => break,
                Tok::HashName(_) => match self.encoding_def() {
                    Ok(d) => encodings.push(d),
                    Err(e) => {
                        errors.push(e);
                        self.recover();
                    }
                },
                Tok::Ident(s) if s == "def" => match self.def() {
                    Ok(d) => defs.push(d),
                    Err(e) => {
                        errors.push(e);
                        self.recover();
                    }
                },
                _ => {
                    if kernel.is_some() {
                        errors.push(self.unexpected("the end of the file (the kernel expression comes last)"));
                        break;
                    }
                    match self.expr() {
                        Ok(e) => {
                            self.eat_sym(";");
                            kernel = Some(e);
                        }
                        Err(e) => {
                            errors.push(e);
                            self.recover();
                        }
                    }
                }
            }
        }
        match kernel {
            Some(kernel) if errors.is_empty() => Ok(Program { encodings, defs, kernel }),
            None if errors.is_empty() => {
                let end = self.src.len();
                Err(vec![
                    Diagnostic::new(Span::new(end, end), "the file has no kernel expression")
                        .with_label("expected an expression after the definitions"),
                ])
            }
            _ => Err(errors),
        }
    }

    /// Skips to just after the next `;`, or to the next `def` / `#NAME`.
    fn recover(&mut self) {
        loop {
            match &self.peek().tok {
                Tok::Eof => return,
                Tok::Sym(";") => {
                    self.bump();
                    return;
                }
                Tok::Ident(s) if s == "def" => return,
                Tok::HashName(_) if self.pos > 0 => return,
                _ => {
                    self.bump();
                }
            }
        }
    }

    fn def(&mut self) -> PResult<Def> {
        self.bump(); // def
        let (name, span) = self.ident("a definition name")?;
        self.expect_sym("=", "after the definition's name")?;
        let value = self.expr()?;
        self.expect_sym(";", "to end the definition")?;
        Ok(Def { name, value, span })
    }

    fn encoding_def(&mut self) -> PResult<EncodingDef> {
        let t = self.bump();
        let name = match t.tok {
            Tok::HashName(n) => Name::from(n),
            _ => unreachable!("encoding_def is only called on `#NAME`"),
        };
        self.expect_sym("=", "after the encoding's name")?;
        let encoding = match &self.peek().tok {
            Tok::Encoding(text) => {
                let text = text.clone();
                let span = self.bump().span;
                EncodingText { text, span }
            }
            Tok::Ident(_) => self.named_encoding()?,
            _ => {
                return Err(
                    self.unexpected("`#sparse_tensor.encoding<{ ... }>` or an encoding's name (CSR, BSR(2, 2), ds, …)")
                );
            }
        };
        self.eat_sym(";");
        Ok(EncodingDef { name, encoding, span: t.span })
    }

    /// An encoding by name, as written: `CSR`, `BSR(2, 3)`, `ds:1,0`
    /// (`crate::encoding::named` says what each stands for).
    fn named_encoding(&mut self) -> PResult<EncodingText> {
        // The text is rebuilt from the tokens (so comments inside stay trivia).
        let start = self.bump().span;
        let mut text = self.src[start.range()].to_string();
        let mut numbers = Vec::new();
        if self.eat_sym("(") {
            loop {
                match self.bump().tok {
                    Tok::Sym(")") => break,
                    Tok::Int(v) => numbers.push(v),
                    Tok::Sym(",") => {}
                    other => {
                        return Err(Diagnostic::new(
                            self.prev_span(),
                            format!("expected a size, found {}", describe(&other)),
                        )
                        .with_label("e.g. BSR(2, 3)"));
                    }
                }
            }
            let items: Vec<String> = numbers.iter().map(i64::to_string).collect();
            text.push_str(&format!("({})", items.join(", ")));
        } else if self.eat_sym(":") {
            loop {
                match self.peek().tok {
                    Tok::Int(v) => numbers.push(v),
                    _ => return Err(self.unexpected("a dimension number (e.g. `ds:1,0`)")),
                }
                self.bump();
                if !(self.is_sym(",") && matches!(self.peek_at(1).tok, Tok::Int(_))) {
                    break;
                }
                self.bump();
            }
            let items: Vec<String> = numbers.iter().map(i64::to_string).collect();
            text.push_str(&format!(":{}", items.join(",")));
        }
        Ok(EncodingText { text, span: start.to(self.prev_span()) })
    }

    // ----- expressions ---------------------------------------------------

    fn expr(&mut self) -> PResult<Expr> {
        self.nested(|p| p.expr_inner())
    }

    fn expr_inner(&mut self) -> PResult<Expr> {
        self.chain(|p| p.pipeline())
    }

    fn pipeline(&mut self) -> PResult<Expr> {
        let mut lhs = self.binary(1)?;
        while self.is_sym(":>>") {
            self.link()?;
            self.bump();
            let rhs = self.binary(1)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr::new(ExprKind::Pipe { arg: Box::new(lhs), func: Box::new(rhs) }, span);
        }
        Ok(lhs)
    }

    fn binop(&self) -> Option<BinOp> {
        Some(match &self.peek().tok {
            Tok::Sym(s) => match *s {
                "||" => BinOp::Or,
                "&&" => BinOp::And,
                "==" => BinOp::Eq,
                "!=" => BinOp::Ne,
                "<" => BinOp::Lt,
                "<=" => BinOp::Le,
                ">" => BinOp::Gt,
                ">=" => BinOp::Ge,
                "+" => BinOp::Add,
                "-" => BinOp::Sub,
                "*" => BinOp::Mul,
                "/" => BinOp::Div,
                "%" => BinOp::Rem,
                _ => return None,
            },
            _ => return None,
        })
    }

    /// Precedence climbing for levels `min..=5`.
    fn binary(&mut self, min: u8) -> PResult<Expr> {
        self.chain(|p| p.binary_chain(min))
    }

    fn binary_chain(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.binop() {
            let prec = op.precedence();
            if prec < min {
                break;
            }
            // A bare `+` or `*` right before `,` or `)` is an operator section, not an operator.
            if matches!(op, BinOp::Add | BinOp::Mul) && matches!(self.peek_at(1).tok, Tok::Sym(",") | Tok::Sym(")")) {
                break;
            }
            self.link()?;
            let op_span = self.bump().span;
            let rhs = self.binary(prec + 1)?;
            if op.is_comparison()
                && let Some(next) = self.binop()
                && next.is_comparison()
            {
                return Err(Diagnostic::new(op_span.to(self.peek().span), "comparisons cannot be chained")
                    .with_label("add parentheses, e.g. `(a < b) && (b < c)`"));
            }
            let span = lhs.span.to(rhs.span);
            lhs = Expr::new(ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, span);
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        self.nested(|p| p.unary_inner())
    }

    fn unary_inner(&mut self) -> PResult<Expr> {
        let start = self.peek().span;
        let op = if self.is_sym("-") && !matches!(self.peek_at(1).tok, Tok::Sym(",") | Tok::Sym(")")) {
            Some(UnOp::Neg)
        } else if self.is_sym("!") {
            Some(UnOp::Not)
        } else {
            None
        };
        match op {
            Some(op) => {
                self.bump();
                let operand = self.unary()?;
                let span = start.to(operand.span);
                Ok(Expr::new(ExprKind::Unary { op, operand: Box::new(operand) }, span))
            }
            None => self.index(),
        }
    }

    fn index(&mut self) -> PResult<Expr> {
        self.chain(|p| p.index_chain())
    }

    fn index_chain(&mut self) -> PResult<Expr> {
        let mut lhs = self.postfix()?;
        while self.is_sym("@") {
            self.link()?;
            self.bump();
            let rhs = self.postfix()?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr::new(ExprKind::Index { array: Box::new(lhs), index: Box::new(rhs) }, span);
        }
        Ok(lhs)
    }

    fn postfix(&mut self) -> PResult<Expr> {
        self.chain(|p| p.postfix_chain())
    }

    fn postfix_chain(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.is_sym(".") || self.is_sym("(") {
                self.link()?;
            }
            if self.is_sym(".") {
                self.bump();
                let t = self.bump();
                let field = match t.tok {
                    Tok::Int(k) if k >= 1 && k <= u32::MAX as i64 => k as u32,
                    Tok::Int(_) => {
                        return Err(Diagnostic::new(t.span, "tuple components are numbered from 1")
                            .with_label("write `.1` for the first component"));
                    }
                    other => {
                        return Err(Diagnostic::new(
                            t.span,
                            format!("expected a component number after `.`, found {}", describe(&other)),
                        )
                        .with_label("projections are written `.1`, `.2`, …"));
                    }
                };
                let span = e.span.to(t.span);
                e = Expr::new(ExprKind::Proj { tuple: Box::new(e), field }, span);
            } else if self.is_sym("(") {
                self.bump();
                let args = self.comma_list(")", "an argument")?;
                let span = e.span.to(self.prev_span());
                e = Expr::new(ExprKind::App { func: Box::new(e), args }, span);
            } else {
                return Ok(e);
            }
        }
    }

    /// `a, b, c)` — at least one item; consumes the closing symbol.
    fn comma_list(&mut self, close: &str, what: &str) -> PResult<Vec<Expr>> {
        let mut items = Vec::new();
        if self.is_sym(close) {
            return Err(self.unexpected(what));
        }
        loop {
            items.push(self.expr()?);
            if self.eat_sym(",") {
                continue;
            }
            self.expect_sym(close, &format!("or `,` after {what}"))?;
            return Ok(items);
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Int(v) => {
                self.bump();
                Ok(Expr::new(ExprKind::Lit(Literal::Int(*v)), t.span))
            }
            Tok::Float(v) => {
                self.bump();
                Ok(Expr::new(ExprKind::Lit(Literal::Float(FloatLit(*v))), t.span))
            }
            Tok::Sym("+") | Tok::Sym("*") => {
                self.bump();
                let op = if t.tok == Tok::Sym("+") { SectionOp::Add } else { SectionOp::Mul };
                Ok(Expr::new(ExprKind::Section(op), t.span))
            }
            Tok::Sym("(") => self.paren(),
            Tok::Ident(s) => match s.as_str() {
                "true" | "false" => {
                    self.bump();
                    Ok(Expr::new(ExprKind::Lit(Literal::Bool(s == "true")), t.span))
                }
                // Float literals without a decimal spelling: `-inf` is `-(inf)`.
                "inf" | "nan" => {
                    self.bump();
                    let v = if s == "inf" { f64::INFINITY } else { f64::NAN };
                    Ok(Expr::new(ExprKind::Lit(Literal::Float(FloatLit(v))), t.span))
                }
                "max" | "min" => {
                    self.bump();
                    let op = if s == "max" { SectionOp::Max } else { SectionOp::Min };
                    Ok(Expr::new(ExprKind::Section(op), t.span))
                }
                "fun" => self.fun(),
                "nFun" | "nfun" => self.nfun(),
                "let" => self.let_in(),
                "select" => {
                    self.bump();
                    self.expect_sym("(", "after `select`")?;
                    let args = self.comma_list(")", "an argument")?;
                    let span = t.span.to(self.prev_span());
                    match <[Expr; 3]>::try_from(args) {
                        Ok([cond, then, els]) => Ok(Expr::new(
                            ExprKind::Select { cond: Box::new(cond), then: Box::new(then), els: Box::new(els) },
                            span,
                        )),
                        Err(args) => {
                            Err(Diagnostic::new(span, format!("`select` takes 3 arguments, found {}", args.len()))
                                .with_label("write `select(condition, if_true, if_false)`"))
                        }
                    }
                }
                // `x => body`: a one-parameter lambda without `fun(…)`, as the
                // paper writes reduce's operator in Listing 7 (`reduce(x => x.1 + x.2)`).
                _ if matches!(self.peek_at(1).tok, Tok::Sym("=>")) => {
                    let (name, span) = self.ident("a parameter name")?;
                    self.bump();
                    let body = self.expr()?;
                    let whole = span.to(body.span);
                    Ok(Expr::new(
                        ExprKind::Fun { params: vec![Param { name, ty: None, span }], body: Box::new(body) },
                        whole,
                    ))
                }
                // `x -> body`: the arrow of types, meant as a lambda's.
                _ if matches!(self.peek_at(1).tok, Tok::Sym("->")) => {
                    let at = self.peek_at(1).span;
                    Err(Diagnostic::new(at, "`->` is for types; a function is written `x => body`")
                        .with_label("write `=>` here")
                        .with_note(format!("e.g. `{s} => …` or `fun({s} => …)`")))
                }
                _ => {
                    let (name, span) = self.ident("an expression")?;
                    Ok(Expr::new(ExprKind::Var(name), span))
                }
            },
            _ => Err(self.unexpected("an expression")),
        }
    }

    fn paren(&mut self) -> PResult<Expr> {
        let open = self.bump().span;
        let first = self.expr()?;
        if self.eat_sym(":") {
            let ty = self.ty()?;
            self.expect_sym(")", "to close the type annotation")?;
            let span = open.to(self.prev_span());
            return Ok(Expr::new(ExprKind::Annot { expr: Box::new(first), ty }, span));
        }
        if self.is_sym(",") {
            let mut items = vec![first];
            while self.eat_sym(",") {
                items.push(self.expr()?);
            }
            self.expect_sym(")", "to close the tuple")
                .map_err(|e| e.with_note(format!("the tuple opened at byte {}", open.start)))?;
            if self.is_sym("=>") {
                return Err(lambda_hint(self.peek().span, &items));
            }
            let span = open.to(self.prev_span());
            return Ok(Expr::new(ExprKind::Tuple(items), span));
        }
        if !self.is_sym(")") {
            return Err(self
                .unexpected("`)`")
                .with_note("this `(` is not closed")
                .with_label(format!("expected `)` to match the `(` at byte {}", open.start)));
        }
        self.bump();
        if self.is_sym("=>") {
            return Err(lambda_hint(self.peek().span, std::slice::from_ref(&first)));
        }
        Ok(first)
    }

    fn fun(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        self.expect_sym("(", "after `fun`")
            .map_err(|d| d.with_note("a function is written `fun(x => body)` (or `x => body`)"))?;
        let mut params = Vec::new();
        loop {
            let (name, span) = self.ident("a parameter name")?;
            let ty = if self.eat_sym(":") { Some(self.ty()?) } else { None };
            // The span covers the annotation too, so errors in the type can point into it.
            let span = if ty.is_some() { span.to(self.prev_span()) } else { span };
            params.push(Param { name, ty, span });
            if self.eat_sym(",") {
                continue;
            }
            self.expect_sym("=>", "after the parameters of `fun`")?;
            break;
        }
        let body = self.expr()?;
        self.expect_sym(")", "to close `fun(`")?;
        let span = start.to(self.prev_span());
        Ok(Expr::new(ExprKind::Fun { params, body: Box::new(body) }, span))
    }

    fn nfun(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        self.expect_sym("(", "after `nFun`")?;
        let (var, _) = self.ident("a natural's name")?;
        self.expect_sym("=>", "after the natural's name")?;
        let body = self.expr()?;
        self.expect_sym(")", "to close `nFun(`")?;
        let span = start.to(self.prev_span());
        Ok(Expr::new(ExprKind::NFun { var, body: Box::new(body) }, span))
    }

    fn let_in(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let (name, _) = self.ident("a name to bind")?;
        self.expect_sym("=", "after the name in `let`")?;
        let value = self.expr()?;
        if !self.is_ident("in") {
            return Err(self.unexpected("`in`"));
        }
        self.bump();
        let body = self.expr()?;
        let span = start.to(body.span);
        Ok(Expr::new(ExprKind::Let { name, value: Box::new(value), body: Box::new(body) }, span))
    }

    // ----- types ---------------------------------------------------------

    fn ty(&mut self) -> PResult<Type> {
        self.nested(|p| p.ty_inner())
    }

    fn ty_inner(&mut self) -> PResult<Type> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Ident(s) if s == "tensor" => self.tensor_type(),
            Tok::Ident(s) if self.sig_mode && is_unknown_letter(s).is_some() => {
                self.bump();
                Ok(Type::Meta(is_unknown_letter(s).map_or(0, |c| c as u32)))
            }
            Tok::Ident(s) if s == "complex" && matches!(self.peek_at(1).tok, Tok::Sym("<")) => self.complex_type(),
            Tok::Ident(s) => match ScalarType::from_keyword(s) {
                Some(st) => {
                    self.bump();
                    Ok(Type::Scalar(st))
                }
                None => Err(Diagnostic::new(t.span, format!("unknown type `{s}`")).with_label(
                    "expected a scalar type (int, float, double, bool, i8…i64, u8…u64, f32, f64, index), a tuple or an array",
                )),
            },
            Tok::Sym("(") => {
                self.bump();
                let mut items = vec![self.ty()?];
                while self.eat_sym(",") {
                    items.push(self.ty()?);
                }
                self.expect_sym(")", "to close the tuple type")?;
                Ok(if items.len() == 1 { items.pop().expect("one item") } else { Type::Tuple(items) })
            }
            Tok::Sym("<") => {
                self.bump();
                let elem = self.ty()?;
                if !self.sig_mode && elem.as_scalar().is_none() {
                    return Err(Diagnostic::new(t.span, "vector elements must be scalars").with_label("in this vector type"));
                }
                self.expect_sym(">", "to close the vector's element type")?;
                let w = self.peek().clone();
                let width = match &w.tok {
                    Tok::Int(v) if [2, 3, 4, 8, 16].contains(v) => Nat::Lit(*v),
                    // A signature's unknown letter (`<T>W`) is solved at each use; a
                    // lowercase name is the primitive's natural argument (`asVector(w)`).
                    Tok::Ident(s) if self.sig_mode && is_unknown_letter(s).is_some() => {
                        let letter = is_unknown_letter(s).map_or(0, |c| c as u32);
                        self.bump();
                        Nat::Meta(letter)
                    }
                    Tok::Ident(_) if self.sig_mode => Nat::Var(self.ident("a width")?.0),
                    _ => return Err(Diagnostic::new(w.span, "expected a vector width (2, 3, 4, 8 or 16)")),
                };
                if matches!(width, Nat::Lit(_)) {
                    self.bump();
                }
                Ok(Type::Vector { elem: Box::new(elem), width })
            }
            Tok::Sym("[") => self.array_type(),
            _ => Err(self.unexpected("a type")),
        }
    }

    /// `complex<f32>` / `complex<f64>` (MLIR's spelling; `float` and `double`
    /// name the same parts).
    fn complex_type(&mut self) -> PResult<Type> {
        let start = self.bump().span;
        self.bump();
        let (part, part_span) = self.ident("the type of the parts (f32 or f64)")?;
        self.expect_sym(">", "to close `complex<`")?;
        match ScalarType::from_keyword(&format!("complex<{part}>")) {
            Some(s) => Ok(Type::Scalar(s)),
            None => Err(Diagnostic::new(start.to(part_span), format!("unknown complex type `complex<{part}>`"))
                .with_label("expected complex<f32> or complex<f64>")),
        }
    }

    fn array_type(&mut self) -> PResult<Type> {
        let open = self.bump().span;
        let binder = match (&self.peek().tok, &self.peek_at(1).tok) {
            (Tok::Ident(_), Tok::Sym("->")) => {
                let (b, _) = self.ident("a position variable")?;
                self.bump();
                Some(b)
            }
            _ => None,
        };
        let elem = self.ty()?;
        if binder.is_none() && self.eat_sym(";") {
            let len = self.nat()?;
            self.expect_sym("]", "to close the array type")?;
            return Ok(Type::array(elem, len));
        }
        self.expect_sym("]", "to close the array type")
            .map_err(|e| e.with_note(format!("the `[` at byte {}", open.start)))?;
        let len = self.size()?;
        Ok(Type::Array { binder, elem: Box::new(elem), len })
    }

    /// The `_N`, `_{nat}` or `_(nat)` after an array type.
    fn size(&mut self) -> PResult<Nat> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Ident(s) if s == "_" => {
                self.bump();
                if self.eat_sym("{") {
                    let n = self.nat()?;
                    self.expect_sym("}", "to close the size")?;
                    Ok(n)
                } else if self.eat_sym("(") {
                    let n = self.nat()?;
                    self.expect_sym(")", "to close the size")?;
                    Ok(n)
                } else {
                    Err(self.unexpected("a size after `_` (a name, a number, `{nat}` or `(nat)`)"))
                }
            }
            Tok::Ident(s) if s.starts_with('_') => {
                self.bump();
                let rest = &s[1..];
                if rest.bytes().all(|b| b.is_ascii_digit()) {
                    rest.parse::<i64>().map(Nat::Lit).map_err(|_| Diagnostic::new(t.span, "array size too large"))
                } else if let Some(c) = is_unknown_letter(rest).filter(|_| self.sig_mode) {
                    Ok(Nat::Meta(c as u32))
                } else if rest.as_bytes()[0].is_ascii_digit() {
                    Err(Diagnostic::new(t.span, format!("malformed array size `{rest}`"))
                        .with_label("write `_{...}` for a formula"))
                } else {
                    Ok(Nat::Var(Name::from(rest)))
                }
            }
            _ => {
                Err(Diagnostic::new(t.span, format!("expected the array's size after `]`, found {}", describe(&t.tok)))
                    .with_label("array types are written `[T]_N` or `[T]_{formula}`"))
            }
        }
    }

    fn tensor_type(&mut self) -> PResult<Type> {
        let start = self.bump().span;
        let lt = self.peek().span;
        if !self.is_sym("<") {
            return Err(self.unexpected("`<` after `tensor`"));
        }
        // The shape `?x8xf32` does not tokenize naturally; read it from the source.
        // A size given as a natural is braced (`{n}`, `{A_dim0 + 1}`): its text may
        // hold `x`, `,` or `>`, so only separators outside braces count.
        let from = lt.end as usize;
        let rest = &self.src[from..];
        let mut depth = 0usize;
        let mut shape_len = None;
        let mut cuts = Vec::new();
        // `complex<f64>` holds an `x` and a `>` that separate nothing.
        let mut inside_complex = false;
        for (k, c) in rest.char_indices() {
            if inside_complex {
                inside_complex = c != '>';
                continue;
            }
            match c {
                'c' if depth == 0 && rest[k..].starts_with("complex<") => inside_complex = true,
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                'x' if depth == 0 => cuts.push(k),
                ',' | '>' if depth == 0 => {
                    shape_len = Some(k);
                    break;
                }
                _ => {}
            }
        }
        let shape_len = shape_len.ok_or_else(|| {
            Diagnostic::new(start.to(lt), "unterminated tensor type").with_label("expected `tensor<DIMSxTYPE, #ENC>`")
        })?;
        let shape_span = Span::new(from, from + shape_len);
        // The pieces between the `x`s, with where each starts in the source.
        let mut pieces: Vec<(usize, &str)> = Vec::new();
        let mut begin = 0;
        for &cut in cuts.iter().chain(std::iter::once(&shape_len)) {
            pieces.push((from + begin, &rest[begin..cut]));
            begin = cut + 1;
        }
        let (_, elem_text) = pieces.pop().unwrap_or((from, ""));
        let elem = mlir_scalar(elem_text.trim()).ok_or_else(|| {
            Diagnostic::new(shape_span, format!("unknown tensor element type `{}`", elem_text.trim())).with_label(
                "expected f32, f64, i8, i16, i32, i64 (or u8…u64, index, f16, bf16, complex<f32>, complex<f64>)",
            )
        })?;
        let mut dims = Vec::new();
        for (at, p) in pieces {
            let p = p.trim();
            if p == "?" {
                dims.push(None);
            } else if p.starts_with('{') {
                // Parse the braced natural from the tokens.
                while (self.peek().span.start as usize) < at && !matches!(self.peek().tok, Tok::Eof) {
                    self.bump();
                }
                self.expect_sym("{", "to open the size")?;
                let n = self.nat()?;
                self.expect_sym("}", "to close the size")?;
                dims.push(Some(n));
            } else {
                dims.push(Some(p.parse::<i64>().ok().filter(|v| *v >= 0).map(Nat::Lit).ok_or_else(|| {
                    Diagnostic::new(shape_span, format!("bad tensor dimension `{p}`"))
                        .with_label("dimensions are `?`, a number or a braced natural `{n}`")
                })?));
            }
        }
        if dims.is_empty() {
            return Err(Diagnostic::new(shape_span, "a tensor type needs at least one dimension")
                .with_label("e.g. `tensor<?x?xf32, #CSR>`"));
        }
        // Skip the tokens of the shape.
        let stop = from + shape_len;
        while (self.peek().span.start as usize) < stop && !matches!(self.peek().tok, Tok::Eof) {
            self.bump();
        }
        let encoding = if self.eat_sym(",") {
            if matches!(self.peek().tok, Tok::Ident(_)) {
                Some(EncodingRef::Inline(self.named_encoding()?))
            } else {
                let t = self.bump();
                Some(match t.tok {
                    Tok::HashName(n) => EncodingRef::Named(Name::from(n), t.span),
                    Tok::Encoding(text) => EncodingRef::Inline(EncodingText { text, span: t.span }),
                    other => {
                        return Err(Diagnostic::new(
                            t.span,
                            format!("expected an encoding, found {}", describe(&other)),
                        )
                        .with_label(
                            "write `#NAME`, a name (CSR, BSR(2, 2), ds, …) or `#sparse_tensor.encoding<{...}>`",
                        ));
                    }
                })
            }
        } else {
            None
        };
        self.expect_sym(">", "to close the tensor type")?;
        Ok(Type::Tensor(Box::new(TensorType { dims, elem, encoding })))
    }

    // ----- naturals ------------------------------------------------------

    fn nat(&mut self) -> PResult<Nat> {
        self.nested(|p| p.nat_inner())
    }

    fn nat_inner(&mut self) -> PResult<Nat> {
        let at = self.peek().span;
        let n = self.nat_or_cond()?;
        self.as_nat(n, at)
    }

    // Naturals and the conditions of ternaries share their first tokens
    // (`(a + b) * 2 < c ? …` only turns out to be a condition at `<`), so
    // both are read by one pass that returns either; a wrong guess is never
    // undone. (Trying a condition first and backtracking cost ×3 per level
    // of parentheses: 20 levels took minutes.)

    /// A ternary, a condition, or a natural.
    fn nat_or_cond(&mut self) -> PResult<NatOrCond> {
        match self.cond_or()? {
            NatOrCond::Cond(c) if self.eat_sym("?") => {
                let a = self.nat()?;
                self.expect_sym(":", "between the branches of `?`")?;
                let b = self.nat()?;
                Ok(NatOrCond::Nat(Nat::Cond(Box::new(c), Box::new(a), Box::new(b))))
            }
            other => Ok(other),
        }
    }

    fn as_nat(&self, n: NatOrCond, at: Span) -> PResult<Nat> {
        match n {
            NatOrCond::Nat(n) => Ok(n),
            NatOrCond::Cond(_) => {
                Err(Diagnostic::new(at.to(self.prev_span()), "expected a natural number, found a condition")
                    .with_label("a condition chooses between naturals: `cond ? a : b`"))
            }
        }
    }

    fn as_cond(&self, n: NatOrCond, at: Span) -> PResult<NatCond> {
        match n {
            NatOrCond::Cond(c) => Ok(c),
            NatOrCond::Nat(_) => {
                Err(Diagnostic::new(at.to(self.prev_span()), "expected a condition, found a natural number")
                    .with_label("compare it: `==`, `!=`, `<`, `<=`, `>`, `>=`"))
            }
        }
    }

    fn cond_or(&mut self) -> PResult<NatOrCond> {
        self.chain(|p| p.cond_or_chain())
    }

    fn cond_or_chain(&mut self) -> PResult<NatOrCond> {
        let at = self.peek().span;
        let mut lhs = self.cond_and()?;
        while self.is_sym("||") {
            let mut c = self.as_cond(lhs, at)?;
            while self.is_sym("||") {
                self.link()?;
                self.bump();
                let at = self.peek().span;
                let rhs = self.cond_and()?;
                c = NatCond::Or(Box::new(c), Box::new(self.as_cond(rhs, at)?));
            }
            lhs = NatOrCond::Cond(c);
        }
        Ok(lhs)
    }

    fn cond_and(&mut self) -> PResult<NatOrCond> {
        self.chain(|p| p.cond_and_chain())
    }

    fn cond_and_chain(&mut self) -> PResult<NatOrCond> {
        let at = self.peek().span;
        let mut lhs = self.cond_atom()?;
        while self.is_sym("&&") {
            let mut c = self.as_cond(lhs, at)?;
            while self.is_sym("&&") {
                self.link()?;
                self.bump();
                let at = self.peek().span;
                let rhs = self.cond_atom()?;
                c = NatCond::And(Box::new(c), Box::new(self.as_cond(rhs, at)?));
            }
            lhs = NatOrCond::Cond(c);
        }
        Ok(lhs)
    }

    fn cond_atom(&mut self) -> PResult<NatOrCond> {
        if self.eat_sym("!") {
            let at = self.peek().span;
            let operand = self.nested(|p| p.cond_atom())?;
            return Ok(NatOrCond::Cond(NatCond::Not(Box::new(self.as_cond(operand, at)?))));
        }
        let a = match self.nat_binary(1)? {
            cond @ NatOrCond::Cond(_) => return Ok(cond),
            NatOrCond::Nat(a) => a,
        };
        let op = match &self.peek().tok {
            Tok::Sym("==") => CmpOp::Eq,
            Tok::Sym("!=") => CmpOp::Ne,
            Tok::Sym("<") => CmpOp::Lt,
            Tok::Sym("<=") => CmpOp::Le,
            Tok::Sym(">") => CmpOp::Gt,
            Tok::Sym(">=") => CmpOp::Ge,
            _ => return Ok(NatOrCond::Nat(a)),
        };
        self.bump();
        let at = self.peek().span;
        let b = self.nat_binary(1)?;
        Ok(NatOrCond::Cond(NatCond::Cmp(op, a, self.as_nat(b, at)?)))
    }

    fn nat_binary(&mut self, min: u8) -> PResult<NatOrCond> {
        self.chain(|p| p.nat_chain(min))
    }

    fn nat_chain(&mut self, min: u8) -> PResult<NatOrCond> {
        let at = self.peek().span;
        let mut lhs = self.nat_atom()?;
        loop {
            let op = match &self.peek().tok {
                Tok::Sym("+") => NatOp::Add,
                Tok::Sym("-") => NatOp::Sub,
                Tok::Sym("*") => NatOp::Mul,
                Tok::Sym("/") => NatOp::Div,
                Tok::Sym("%") => NatOp::Mod,
                _ => return Ok(lhs),
            };
            if op.precedence() < min {
                return Ok(lhs);
            }
            let l = self.as_nat(lhs, at)?;
            self.link()?;
            self.bump();
            let rhs_at = self.peek().span;
            let rhs = self.nat_binary(op.precedence() + 1)?;
            lhs = NatOrCond::Nat(Nat::bin(op, l, self.as_nat(rhs, rhs_at)?));
        }
    }

    /// An operand of `+ - * / %`: a parenthesis may hold a condition.
    fn nat_atom(&mut self) -> PResult<NatOrCond> {
        let t = self.peek().clone();
        if matches!(t.tok, Tok::Sym("(")) {
            self.bump();
            let inner = self.nested(|p| p.nat_or_cond())?;
            self.expect_sym(")", "to close the parenthesis")?;
            return Ok(inner);
        }
        self.nat_leaf().map(NatOrCond::Nat)
    }

    fn nat_leaf(&mut self) -> PResult<Nat> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Int(v) => {
                self.bump();
                Ok(Nat::Lit(*v))
            }
            Tok::Ident(s) if s == "toNat" => {
                self.bump();
                self.expect_sym("(", "after `toNat`")?;
                let e = self.expr()?;
                self.expect_sym(")", "to close `toNat(`")?;
                Ok(Nat::ToNat(Box::new(e)))
            }
            Tok::Ident(s) if s == "sum" => {
                self.bump();
                self.expect_sym("(", "after `sum`")?;
                let (var, _) = self.ident("the summation index")?;
                self.expect_sym("=", "after the summation index")?;
                let lo = self.nat()?;
                self.expect_sym("..", "between the bounds of the sum")?;
                let hi = self.nat()?;
                self.expect_sym(",", "before the summand")?;
                let body = self.nat()?;
                self.expect_sym(")", "to close `sum(`")?;
                Ok(Nat::Sum { var, lo: Box::new(lo), hi: Box::new(hi), body: Box::new(body) })
            }
            Tok::Ident(s) if s == "min" || s == "max" => {
                self.bump();
                let op = if s == "min" { NatOp::Min } else { NatOp::Max };
                self.expect_sym("(", &format!("after `{s}`"))?;
                let a = self.nat()?;
                self.expect_sym(",", &format!("between the arguments of `{s}`"))?;
                let b = self.nat()?;
                self.expect_sym(")", &format!("to close `{s}(`"))?;
                Ok(Nat::bin(op, a, b))
            }
            Tok::Ident(s) if self.sig_mode && is_unknown_letter(s).is_some() => {
                self.bump();
                Ok(Nat::Meta(is_unknown_letter(s).map_or(0, |c| c as u32)))
            }
            Tok::Ident(_) => {
                let (name, _) = self.ident("a natural")?;
                Ok(Nat::Var(name))
            }
            _ => Err(self.unexpected("a natural number expression")),
        }
    }
}

/// What a natural-or-condition parse found.
enum NatOrCond {
    Nat(Nat),
    Cond(NatCond),
}

/// `(a, b) => …`: parameters are not a tuple.
fn lambda_hint(at: Span, params: &[Expr]) -> Diagnostic {
    let names: Vec<String> = params.iter().map(crate::printer::print_expr).collect();
    Diagnostic::new(at, "a function's parameters are not parenthesised")
        .with_label("`=>` after a parenthesis")
        .with_note(if names.len() == 1 {
            format!("write `fun({0} => …)` or `{0} => …`", names[0])
        } else {
            format!(
                "write `fun({} => …)` for {} parameters, or `fun(p => …)` with `p.1`, `p.2`, … for one tuple",
                names.join(", "),
                names.len()
            )
        })
}

fn s_of(t: &Token) -> &str {
    match &t.tok {
        Tok::Ident(s) => s,
        _ => "",
    }
}

/// MLIR's spelling of element types in `tensor<…>`.
pub fn mlir_scalar(s: &str) -> Option<ScalarType> {
    Some(match s {
        "f16" => ScalarType::F16,
        "bf16" => ScalarType::BF16,
        "f32" => ScalarType::F32,
        "f64" => ScalarType::F64,
        "complex<f32>" => ScalarType::C32,
        "complex<f64>" => ScalarType::C64,
        "i1" => ScalarType::Bool,
        "i8" => ScalarType::I8,
        "i16" => ScalarType::I16,
        "i32" => ScalarType::I32,
        "i64" | "index" => ScalarType::I64,
        "u8" | "ui8" => ScalarType::U8,
        "u16" | "ui16" => ScalarType::U16,
        "u32" | "ui32" => ScalarType::U32,
        "u64" | "ui64" => ScalarType::U64,
        _ => return None,
    })
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Int(v) => format!("the number `{v}`"),
        Tok::Float(v) => format!("the number `{v}`"),
        Tok::HashName(n) => format!("`#{n}`"),
        Tok::Encoding(_) => "an encoding attribute".to_string(),
        Tok::Sym(s) => format!("`{s}`"),
        Tok::Eof => "the end of the input".to_string(),
    }
}

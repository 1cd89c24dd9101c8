//! `heddle fmt`: every program in the repository is in canonical form; the
//! corpus in `tests/fmt/` (comments in every position, literals) is formatted
//! as snapshotted; and comments inserted between any two tokens of any
//! program survive formatting, keep how they stood (own line, end of line,
//! inline), leave the tree unchanged, and format again to the same text.

use crate::common;

use heddle_ir::lexer::{Comment, Tok, lex_with_comments};
use heddle_ir::parser::parse_program;
use heddle_ir::printer::format_source;
use std::path::{Path, PathBuf};

/// Every `.hdl` file of the repository (not `target/`, not the deliberately
/// unformatted inputs in `tests/fmt/`), sorted.
fn programs() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if name != "target" && name != ".git" && p != common::root().join("tests/fmt") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "hdl") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&common::root(), &mut out);
    out.sort();
    out
}

fn relative(p: &Path) -> String {
    p.strip_prefix(common::root()).unwrap_or(p).display().to_string()
}

fn comment_texts(src: &str) -> Vec<String> {
    let (_, comments) = lex_with_comments(src).expect("lexes");
    let mut texts: Vec<String> = comments.into_iter().map(|c| c.text).collect();
    texts.sort();
    texts
}

/// The invariants of formatting `src` (which parses): the same tree, the same
/// comments, idempotent. Returns the formatted text.
fn check_format(name: &str, src: &str) -> String {
    let tree = parse_program(src).unwrap_or_else(|e| panic!("{name} does not parse: {e:?}"));
    let out = format_source(src).unwrap_or_else(|e| panic!("{name}: fmt failed: {e:?}"));
    let again =
        parse_program(&out).unwrap_or_else(|e| panic!("{name}: the formatted text does not parse: {e:?}\n{out}"));
    assert_eq!(again, tree, "{name}: formatting changed the program\n{out}");
    assert_eq!(comment_texts(&out), comment_texts(src), "{name}: formatting lost or changed a comment\n{out}");
    assert_eq!(format_source(&out).unwrap(), out, "{name}: fmt is not idempotent\n{out}");
    out
}

#[test]
fn every_program_is_in_canonical_form() {
    let files = programs();
    assert!(files.len() >= 60, "only {} programs found", files.len());
    let mut parsed = 0;
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap();
        if parse_program(&src).is_err() {
            continue; // a syntax-error test case
        }
        parsed += 1;
        let out = check_format(&relative(&path), &src);
        assert!(
            out == src,
            "{0} is not in canonical form: run `heddle fmt --write {0}`\n--- canonical:\n{out}",
            relative(&path)
        );
    }
    assert!(parsed >= 50);
}

#[test]
fn fmt_corpus() {
    let files = common::hdl_files("tests/fmt");
    assert!(files.len() >= 5);
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap();
        let name = common::stem(&path);
        let out = check_format(&name, &src);
        insta::assert_snapshot!(format!("fmt_{name}"), out);
    }
}

#[test]
fn literals_keep_their_spelling() {
    let out = format_source("fun(x: float => select(x > 3.0e38, 1f, x * 2.50 + 1e3 - -3.0e38))").unwrap();
    assert!(out.contains("3.0e38, 1f, x * 2.50 + 1e3 - -3.0e38"), "{out}");
}

/// How a comment stands: alone on its line(s), after code at the end of a
/// line, or between two tokens of a line.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Stands {
    OwnLine,
    Trailing,
    Inline,
}

fn stands(src: &str, c: &Comment) -> Stands {
    let line_start = src[..c.span.start as usize].rfind('\n').map_or(0, |k| k + 1);
    let before = src[line_start..c.span.start as usize].trim();
    let rest = &src[c.span.end as usize..];
    let after = rest[..rest.find('\n').unwrap_or(rest.len())].trim();
    match (before.is_empty(), after.is_empty() || c.is_line()) {
        (true, true) => Stands::OwnLine,
        (false, true) => Stands::Trailing,
        (_, false) => Stands::Inline,
    }
}

/// The token text right after byte `at` of `src`.
fn token_after(src: &str, at: usize) -> Option<Tok> {
    let (tokens, _) = lex_with_comments(src).ok()?;
    tokens.into_iter().find(|t| t.span.start as usize >= at).map(|t| t.tok)
}

/// Where comments may be inserted: before each token, except inside
/// `tensor<…>` (whose shape is read as text, `complex<f64>` elements included).
fn boundaries(src: &str) -> Vec<(usize, Tok)> {
    let (tokens, _) = lex_with_comments(src).unwrap();
    let mut out = Vec::new();
    let mut in_tensor = false;
    // Open `<`s inside the tensor type.
    let mut depth = 0usize;
    for t in &tokens {
        if !in_tensor {
            out.push((t.span.start as usize, t.tok.clone()));
        }
        match &t.tok {
            Tok::Ident(s) if s == "tensor" => in_tensor = true,
            Tok::Sym("<") if in_tensor => depth += 1,
            Tok::Sym(">") if in_tensor => {
                depth = depth.saturating_sub(1);
                in_tensor = depth > 0;
            }
            _ => {}
        }
    }
    out
}

fn insert(src: &str, at: usize, kind: usize, id: usize) -> (String, String) {
    let text = match kind {
        0 => format!("/* c{id} */"),
        1 => format!("// c{id}"),
        _ => format!("// own {id}"),
    };
    let snippet = match kind {
        0 => format!(" {text} "),
        1 => format!(" {text}\n"),
        _ => format!("\n{text}\n"),
    };
    (format!("{}{snippet}{}", &src[..at], &src[at..]), text)
}

#[test]
fn comments_between_any_tokens_survive_formatting() {
    let mut checked = 0;
    for path in programs() {
        let src = std::fs::read_to_string(&path).unwrap();
        if parse_program(&src).is_err() {
            continue;
        }
        let name = relative(&path);
        let spots = boundaries(&src);
        // A comment before every token at once, in three rotations of the kinds.
        for rotation in 0..3 {
            let mut text = src.clone();
            for (k, (at, _)) in spots.iter().enumerate().rev() {
                text = insert(&text, *at, (k + rotation) % 3, k).0;
            }
            check_format(&format!("{name} (every token, rotation {rotation})"), &text);
        }
        // One comment at a time before every third token, its kind taking
        // turns (all three kinds at each spot made this CI's second slowest
        // test): it keeps how it stood, and one before a name stays before
        // that name.
        for (k, (at, tok)) in spots.iter().enumerate().step_by(3) {
            let kind = (k / 3) % 3;
            let (text, comment) = insert(&src, *at, kind, k);
            let label = format!("{name} ({comment} before token {k})");
            let out = check_format(&label, &text);
            let (_, cs) = lex_with_comments(&out).unwrap();
            let c = cs.iter().find(|c| c.text == comment).expect("kept");
            let (_, original) = lex_with_comments(&text).unwrap();
            let o = original.iter().find(|c| c.text == comment).expect("inserted");
            assert_eq!(stands(&out, c), stands(&text, o), "{label}: the comment moved\n{out}");
            let named =
                matches!(tok, Tok::Ident(s) if heddle_ir::types::ScalarType::from_keyword(s).is_none() && s != "nfun");
            if kind != 1 && named {
                assert_eq!(token_after(&out, c.span.end as usize).as_ref(), Some(tok), "{label}\n{out}");
            }
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} insertions checked");
}

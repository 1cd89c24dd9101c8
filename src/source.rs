//! Source files and the rendering of diagnostics (file:line:column and a caret).

use codespan_reporting::diagnostic::{Diagnostic as Report, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term;
use heddle_ir::{Diagnostic, Span};

/// A named source text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The name shown in diagnostics (usually the path).
    pub name: String,
    /// The text.
    pub text: String,
}

/// A diagnostic located in a file, for JSON output.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Located {
    /// The file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// The message.
    pub message: String,
    /// The caret's label.
    pub label: String,
    /// Further notes.
    pub notes: Vec<String>,
}

impl SourceFile {
    /// A source file.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile { name: name.into(), text: text.into() }
    }

    /// Reads a file; the error says which file and why. At most
    /// [`MAX_SOURCE_BYTES`](heddle_ir::parser::MAX_SOURCE_BYTES) bytes are
    /// read: a longer file (or an endless one, `/dev/zero` or a pipe) is
    /// refused there instead of filling memory.
    pub fn read(path: &str) -> Result<SourceFile, String> {
        use std::io::Read;
        let limit = heddle_ir::parser::MAX_SOURCE_BYTES;
        let cannot = |e: std::io::Error| format!("cannot read {path}: {e}");
        let mut bytes = Vec::new();
        std::fs::File::open(path).map_err(cannot)?.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(cannot)?;
        if bytes.len() > limit {
            return Err(format!(
                "{path}: the file is more than {limit} bytes long; heddle reads at most {limit} bytes of program text"
            ));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            format!("{path}: the file is not valid UTF-8 (first bad byte at offset {})", e.utf8_error().valid_up_to())
        })?;
        Ok(SourceFile::new(path, text))
    }

    /// The span a diagnostic points at, narrowed to the word its `focus:` note names.
    fn effective(&self, d: &Diagnostic) -> (Span, Vec<String>) {
        let mut span = d.span;
        let mut notes = Vec::new();
        for n in &d.notes {
            match n.strip_prefix("focus:") {
                Some(word) => {
                    if let Some(s) = self.find_word(span, word) {
                        span = s;
                    }
                }
                None => notes.push(n.clone()),
            }
        }
        let len = self.text.len() as u32;
        span.start = span.start.min(len);
        span.end = span.end.clamp(span.start, len);
        while !self.text.is_char_boundary(span.start as usize) {
            span.start -= 1;
        }
        while !self.text.is_char_boundary(span.end as usize) {
            span.end += 1;
        }
        (span, notes)
    }

    fn find_word(&self, within: Span, word: &str) -> Option<Span> {
        let hay = self.text.get(within.range())?;
        let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let mut from = 0;
        while let Some(k) = hay[from..].find(word) {
            let start = from + k;
            let end = start + word.len();
            let before_ok = hay[..start].chars().next_back().is_none_or(|c| !is_ident(c) || c == '_' && start == 1);
            let after_ok = hay[end..].chars().next().is_none_or(|c| !is_ident(c));
            // `[float]_n`: the size after `]_` counts as a word too.
            let size_form = hay[..start].ends_with("]_");
            if (before_ok || size_form) && after_ok {
                let base = within.start as usize;
                return Some(Span::new(base + start, base + end));
            }
            from = end;
        }
        None
    }

    /// 1-based line and column of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    /// A diagnostic with its location, for `--json`.
    pub fn locate(&self, d: &Diagnostic) -> Located {
        let (span, notes) = self.effective(d);
        let (line, column) = self.line_col(span.start as usize);
        Located { file: self.name.clone(), line, column, message: d.message.clone(), label: d.label.clone(), notes }
    }

    /// Renders diagnostics as text: `error: …`, `┌─ file:line:col`, the line, a caret.
    pub fn render(&self, diags: &[Diagnostic]) -> String {
        let file = SimpleFile::new(self.name.as_str(), self.text.as_str());
        let config = term::Config::default();
        let mut out = String::new();
        for d in diags {
            let (span, notes) = self.effective(d);
            let report = Report::error()
                .with_message(d.message.clone())
                .with_labels(vec![Label::primary((), span.range()).with_message(d.label.clone())])
                .with_notes(notes);
            match term::emit_into_string(&config, &file, &report) {
                Ok(text) => out.push_str(&text),
                Err(_) => {
                    let (l, c) = self.line_col(span.start as usize);
                    out.push_str(&format!("error: {}\n  --> {}:{l}:{c}\n", d.message, self.name));
                }
            }
        }
        out
    }
}

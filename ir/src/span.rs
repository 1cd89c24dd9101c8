//! Source locations.
//!
//! A [`Span`] is a byte range in one source text. Spans never take part in
//! equality, ordering or hashing: two syntax trees that differ only in where
//! they came from are the same tree. That makes "parse → print → parse gives
//! the same tree" a plain `==`, and lets naturals containing expressions
//! (`toNat(e)`) be compared structurally.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

/// A half-open byte range `start..end` in a source text.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// The span `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }
    /// A span that points nowhere (synthesised nodes).
    pub const DUMMY: Span = Span { start: 0, end: 0 };
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
    /// The byte range, for diagnostics.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}
impl Eq for Span {}
impl PartialOrd for Span {
    fn partial_cmp(&self, other: &Span) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Span {
    fn cmp(&self, _: &Span) -> Ordering {
        Ordering::Equal
    }
}
impl Hash for Span {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

/// What kind of problem an error reports: the `kind` of `--json` error
/// objects (docs/schemas/heddle.error.json lists them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// A malformed command line (exit status 2).
    Usage,
    /// Text that does not parse: a program, a natural, an encoding, a rule file.
    Syntax,
    /// A program that does not type-check.
    Type,
    /// An input whose contents contradict the kernel's types or are malformed.
    Data,
    /// A file that cannot be read or written.
    Io,
    /// A check that failed while the kernel ran (an index out of bounds, a requirement).
    Runtime,
    /// A construct a backend cannot compile (located where it stands).
    Unsupported,
    /// The OpenCL platform: no device, or the device refused the kernel.
    Device,
    /// A bug in heddle.
    Internal,
}

impl ErrorKind {
    /// Its name in JSON.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::Syntax => "syntax",
            ErrorKind::Type => "type",
            ErrorKind::Data => "data",
            ErrorKind::Io => "io",
            ErrorKind::Runtime => "runtime",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Device => "device",
            ErrorKind::Internal => "internal",
        }
    }
}

/// A located error produced by any front-end pass.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("{message}")]
pub struct Diagnostic {
    /// One line saying what is wrong.
    pub message: String,
    /// Where.
    pub span: Span,
    /// Text for the caret under the span (what was expected, what was found).
    pub label: String,
    /// Further lines: hints, the other side of a mismatch.
    pub notes: Vec<String>,
    /// What kind of problem, where the pass that found it says so (else the
    /// command that reports it decides).
    pub kind: Option<ErrorKind>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn new(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { message: message.into(), span, label: String::new(), notes: Vec::new(), kind: None }
    }
    /// Sets the kind of problem.
    pub fn with_kind(mut self, kind: ErrorKind) -> Diagnostic {
        self.kind = Some(kind);
        self
    }
    /// Sets the kind of problem, unless a pass already did.
    pub fn or_kind(mut self, kind: ErrorKind) -> Diagnostic {
        self.kind.get_or_insert(kind);
        self
    }
    /// Sets the caret's label.
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = label.into();
        self
    }
    /// Adds a note line.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
}

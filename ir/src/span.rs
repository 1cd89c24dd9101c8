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
}

impl Diagnostic {
    /// An error at `span`.
    pub fn new(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { message: message.into(), span, label: String::new(), notes: Vec::new() }
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

//! Documents and their layout (Wadler's "prettier printer", in the imperative
//! form prettier uses): text, line breaks that a group takes all or none of,
//! and nesting. A group is laid out flat when it fits in the width, else broken.
//!
//! Comments enter as [`Piece`]s attached to text leaves (see `trivia.rs`): a
//! group that must hold a line break for a comment is *forced* broken, so that
//! the layout around a comment is the one that holds it.

/// A document.
#[derive(Clone, Debug)]
pub(crate) enum Doc {
    /// Text without newlines (one or more tokens); `id` numbers leaves in order.
    Text { id: usize, text: String },
    /// A space when the enclosing group is flat, a newline when it is broken.
    Line,
    /// Nothing when flat, a newline when broken.
    SoftLine,
    /// Always a newline: every group around it is broken.
    HardLine,
    /// A hard line that leaves a blank line.
    BlankLine,
    /// The inner document indented `k` more columns after each newline.
    Nest(usize, Box<Doc>),
    /// Flat if it fits, else broken; `id` numbers groups in order.
    Group { id: usize, doc: Box<Doc> },
    /// One after the other.
    Cat(Vec<Doc>),
}

/// Text (numbered later by [`number`]).
pub(crate) fn text(s: impl Into<String>) -> Doc {
    Doc::Text { id: 0, text: s.into() }
}

/// Concatenation.
pub(crate) fn cat(ds: impl IntoIterator<Item = Doc>) -> Doc {
    Doc::Cat(ds.into_iter().collect())
}

/// Indented by `k` after each newline inside.
pub(crate) fn nest(k: usize, d: Doc) -> Doc {
    Doc::Nest(k, Box::new(d))
}

/// A group.
pub(crate) fn group(d: Doc) -> Doc {
    Doc::Group { id: 0, doc: Box::new(d) }
}

/// The leaves and groups of a document, numbered in document order.
pub(crate) struct Numbered {
    /// Each leaf's text, by id.
    pub leaves: Vec<String>,
    /// Each group's leaves, `first..end`, by id.
    pub group_leaves: Vec<std::ops::Range<usize>>,
    /// Groups that hold a hard line (they can never be flat).
    pub hard: Vec<bool>,
    /// Per leaf: the layout may break the line just before it.
    pub break_before: Vec<bool>,
    line_seen: bool,
}

/// Numbers the leaves and groups of `d` in document order.
pub(crate) fn number(d: &mut Doc) -> Numbered {
    let mut n = Numbered {
        leaves: Vec::new(),
        group_leaves: Vec::new(),
        hard: Vec::new(),
        break_before: Vec::new(),
        line_seen: false,
    };
    visit(d, &mut n);
    n
}

/// Returns whether `d` holds a hard line.
fn visit(d: &mut Doc, n: &mut Numbered) -> bool {
    match d {
        Doc::Text { id, text } => {
            *id = n.leaves.len();
            n.leaves.push(text.clone());
            n.break_before.push(std::mem::take(&mut n.line_seen));
            false
        }
        Doc::Line | Doc::SoftLine => {
            n.line_seen = true;
            false
        }
        Doc::HardLine | Doc::BlankLine => {
            n.line_seen = true;
            true
        }
        Doc::Nest(_, inner) => visit(inner, n),
        Doc::Group { id, doc } => {
            *id = n.group_leaves.len();
            n.group_leaves.push(0..0);
            n.hard.push(false);
            let first = n.leaves.len();
            let hard = visit(doc, n);
            n.group_leaves[*id] = first..n.leaves.len();
            n.hard[*id] = hard;
            hard
        }
        Doc::Cat(ds) => {
            let mut hard = false;
            for d in ds {
                hard |= visit(d, n);
            }
            hard
        }
    }
}

/// Something written in place of, or beside, a leaf's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Text (tokens and the spaces between them).
    Text(String),
    /// A comment on a line of its own, before what follows.
    OwnLine {
        /// The comment.
        text: String,
        /// A blank line before it.
        blank_before: bool,
        /// A blank line after it.
        blank_after: bool,
        /// Its indentation.
        align: Align,
    },
    /// A comment at the end of the current line (written before the next newline).
    Trailing(String),
    /// A block comment between two tokens of a line.
    Inline(String),
}

/// The indentation of a comment on its own line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    /// That of the line that follows.
    Next,
    /// That of the line before (a comment before closing brackets: it ends
    /// what they close, like a commented-out last stage).
    Previous,
    /// Four more than the line it interrupts (inside a type).
    Continuation,
}

/// How leaves are written and which groups are forced broken.
pub(crate) struct Plan {
    /// Per leaf id, what to write; a leaf without an entry is written as its text.
    pub pieces: Vec<Option<Vec<Piece>>>,
    /// Pieces after the last leaf (comments at the end of the file).
    pub tail: Vec<Piece>,
    /// Per group id: broken whatever the width (a comment or a hard line inside).
    pub forced: Vec<bool>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Flat,
    Break,
}

type Cmd<'d> = (usize, Mode, &'d Doc);

/// Lays `d` (numbered) out in `width` columns.
pub(crate) fn render(d: &Doc, width: usize, plan: &Plan) -> String {
    let mut w = Writer::default();
    let mut stack: Vec<Cmd> = vec![(0, Mode::Break, d)];
    while let Some((indent, mode, doc)) = stack.pop() {
        match doc {
            Doc::Text { id, text } => match plan.pieces.get(*id).and_then(|p| p.as_ref()) {
                Some(pieces) => pieces.iter().for_each(|p| w.piece(p, indent)),
                None => w.text(text),
            },
            Doc::Line if mode == Mode::Flat => w.text(" "),
            Doc::SoftLine if mode == Mode::Flat => {}
            Doc::Line | Doc::SoftLine | Doc::HardLine => w.newline(indent, 1),
            Doc::BlankLine => w.newline(indent, 2),
            Doc::Nest(k, inner) => stack.push((indent + k, mode, inner)),
            Doc::Cat(ds) => stack.extend(ds.iter().rev().map(|d| (indent, mode, d))),
            Doc::Group { id, doc } => {
                let forced = plan.forced.get(*id).copied().unwrap_or(false);
                let flat = !forced
                    && (mode == Mode::Flat
                        || fits((indent, Mode::Flat, doc), &stack, width as isize - w.column() as isize, plan));
                stack.push((indent, if flat { Mode::Flat } else { Mode::Break }, doc));
            }
        }
    }
    for p in &plan.tail {
        w.piece(p, 0);
    }
    w.finish()
}

/// Does `next` fit in `room` columns, followed by the rest of the line from `rest`?
fn fits(next: Cmd, rest: &[Cmd], mut room: isize, plan: &Plan) -> bool {
    let mut todo = vec![next];
    let mut rest = rest.iter().rev();
    loop {
        let (indent, mode, doc) = match todo.pop() {
            Some(c) => c,
            None => match rest.next() {
                Some(c) => *c,
                None => return true,
            },
        };
        if room < 0 {
            return false;
        }
        match doc {
            Doc::Text { id, text } => {
                room -= match plan.pieces.get(*id).and_then(|p| p.as_ref()) {
                    Some(pieces) => {
                        let mut n = 0;
                        for p in pieces {
                            match p {
                                Piece::Text(t) => n += width(t),
                                Piece::Inline(c) => n += width(c) + 1,
                                Piece::Trailing(_) => {}
                                Piece::OwnLine { .. } => return true,
                            }
                        }
                        n
                    }
                    None => width(text),
                } as isize
            }
            Doc::Line if mode == Mode::Flat => room -= 1,
            Doc::SoftLine if mode == Mode::Flat => {}
            Doc::Line | Doc::SoftLine | Doc::HardLine | Doc::BlankLine => return true,
            Doc::Nest(k, inner) => todo.push((indent + k, mode, inner)),
            Doc::Cat(ds) => todo.extend(ds.iter().rev().map(|d| (indent, mode, d))),
            Doc::Group { id, doc } => {
                let forced = plan.forced.get(*id).copied().unwrap_or(false);
                todo.push((indent, if forced { Mode::Break } else { mode }, doc));
            }
        }
        if room < 0 {
            return false;
        }
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// The output, with newlines held back until text follows (so no line ends in
/// spaces and blank lines never pile up) and trailing comments written just
/// before the newline that ends their line.
#[derive(Default)]
struct Writer {
    out: String,
    col: usize,
    /// Newlines owed before the next text (at most 2: one blank line).
    pending: usize,
    /// The indentation of the line they start.
    pending_indent: usize,
    /// Trailing comments of the current line.
    suffix: Vec<String>,
    /// The indentation of the last line written.
    line_indent: usize,
}

impl Writer {
    /// The column the next text starts at.
    fn column(&self) -> usize {
        if self.pending > 0 { self.pending_indent } else { self.col }
    }

    fn newline(&mut self, indent: usize, count: usize) {
        if self.out.is_empty() {
            return;
        }
        if self.pending == 0 {
            self.pending_indent = indent;
        }
        self.pending = self.pending.max(count).min(2);
    }

    fn flush(&mut self) {
        if self.pending == 0 {
            return;
        }
        self.trim_end();
        let rest = self.end_line();
        for _ in 0..self.pending {
            self.out.push('\n');
        }
        self.start_line(self.pending_indent);
        self.pending = 0;
        self.overflow(rest, self.pending_indent);
    }

    fn start_line(&mut self, indent: usize) {
        self.out.extend(std::iter::repeat_n(' ', indent));
        self.col = indent;
        self.line_indent = indent;
    }

    fn trim_end(&mut self) {
        let kept = self.out.trim_end_matches(' ').len();
        self.out.truncate(kept);
    }

    /// Writes the trailing comments of the line, up to the first `//` one
    /// (which ends the line); returns the others.
    fn end_line(&mut self) -> Vec<String> {
        let mut rest = std::mem::take(&mut self.suffix);
        let cut = rest.iter().position(|c| c.starts_with("//")).map_or(rest.len(), |k| k + 1);
        for c in rest.drain(..cut) {
            self.out.push(' ');
            self.out.push_str(&c);
        }
        rest
    }

    /// Trailing comments that did not fit on their line (after a `//` one),
    /// at the start of the next: each line comment on a line of its own.
    fn overflow(&mut self, comments: Vec<String>, indent: usize) {
        for c in comments {
            self.out.push_str(&c);
            if c.starts_with("//") {
                self.out.push('\n');
                self.start_line(indent);
            } else {
                self.out.push(' ');
                self.advance(&c);
                self.col += 1;
            }
        }
    }

    fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.flush();
        self.out.push_str(s);
        self.advance(s);
    }

    fn advance(&mut self, s: &str) {
        match s.rfind('\n') {
            Some(k) => self.col = width(&s[k + 1..]),
            None => self.col += width(s),
        }
    }

    fn piece(&mut self, p: &Piece, indent: usize) {
        match p {
            Piece::Text(t) => self.text(t),
            Piece::Trailing(c) => {
                if self.out.is_empty() {
                    // Nothing before it: it is the file's first line.
                    self.out.push_str(c);
                    self.advance(c);
                    self.newline(indent, 1);
                } else {
                    self.suffix.push(c.clone());
                }
            }
            Piece::Inline(c) => {
                self.flush();
                if !self.out.is_empty() && !self.out.ends_with([' ', '(', '[', '{', '\n']) {
                    self.out.push(' ');
                    self.col += 1;
                }
                self.out.push_str(c);
                self.advance(c);
                self.out.push(' ');
                self.col += 1;
            }
            Piece::OwnLine { text, blank_before, blank_after, align } => {
                let own = match align {
                    Align::Next => indent,
                    Align::Previous => self.line_indent,
                    Align::Continuation => self.line_indent + 4,
                };
                let next = if *align == Align::Continuation { own } else { indent };
                if self.pending > 0 && *align != Align::Next {
                    self.pending_indent = own;
                }
                self.newline(own, if *blank_before { 2 } else { 1 });
                self.text(text);
                self.newline(next, if *blank_after { 2 } else { 1 });
            }
        }
    }

    fn finish(mut self) -> String {
        self.trim_end();
        let rest = self.end_line();
        if !rest.is_empty() {
            self.out.push('\n');
            self.overflow(rest, 0);
            let kept = self.out.trim_end().len();
            self.out.truncate(kept);
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(d: &mut Doc) -> Plan {
        let n = number(d);
        Plan { pieces: Vec::new(), tail: Vec::new(), forced: n.hard }
    }

    fn list(items: &[&str]) -> Doc {
        let mut parts = vec![text("f(")];
        let mut inner = vec![Doc::SoftLine];
        for (k, it) in items.iter().enumerate() {
            if k > 0 {
                inner.push(text(","));
                inner.push(Doc::Line);
            }
            inner.push(text(*it));
        }
        parts.push(nest(2, cat(inner)));
        parts.push(text(")"));
        group(cat(parts))
    }

    #[test]
    fn a_group_is_flat_when_it_fits_and_broken_when_not() {
        let mut d = list(&["aaaa", "bbbb"]);
        let p = plain(&mut d);
        assert_eq!(render(&d, 80, &p), "f(aaaa, bbbb)");
        assert_eq!(render(&d, 10, &p), "f(\n  aaaa,\n  bbbb)");
    }

    #[test]
    fn a_hard_line_breaks_its_groups() {
        let mut d = group(cat([text("a"), Doc::Line, text("b"), Doc::HardLine, text("c")]));
        let p = plain(&mut d);
        assert_eq!(render(&d, 80, &p), "a\nb\nc");
    }

    #[test]
    fn trailing_comments_wait_for_the_end_of_the_line() {
        let mut d = cat([text("a"), text(")"), Doc::HardLine, text("b")]);
        let mut p = plain(&mut d);
        p.pieces = vec![Some(vec![Piece::Text("a".into()), Piece::Trailing("// c".into())]), None, None];
        assert_eq!(render(&d, 80, &p), "a) // c\nb");
    }

    #[test]
    fn own_line_comments_start_and_end_a_line() {
        let mut d = nest(2, cat([text("a"), Doc::HardLine, text("b"), text("c")]));
        let mut p = plain(&mut d);
        let own = Piece::OwnLine { text: "// x".into(), blank_before: true, blank_after: false, align: Align::Next };
        p.pieces = vec![None, None, Some(vec![own, Piece::Text("c".into())])];
        assert_eq!(render(&d, 80, &p), "a\n  b\n\n  // x\n  c");
    }
}

//! Comments and literal spellings, put back into the canonical layout.
//!
//! The syntax tree has no room for comments; they are trivia the lexer keeps
//! with their positions. To put one back, the printed tokens are aligned with
//! the source's (a longest common subsequence: they differ only where the
//! printer drops redundant parentheses or respells a size), and the comment is
//! attached to the printed token it stood next to:
//!
//! - alone on its line(s): before the token that followed it, on a line of its
//!   own (a blank line before or after it is kept);
//! - after code at the end of a line: after the token it followed, written at
//!   the end of the output line;
//! - between two tokens of a line (`/* … */`): before the token that followed it.
//!
//! A group of the layout that must hold a line break for a comment is forced
//! broken. Numbers matched with a source token keep the source's spelling
//! (`3.0e38`, `1f`). Since the canonical text's tokens are exactly the printed
//! ones, formatting it again attaches every comment to the same token: `fmt`
//! is idempotent.

use super::doc::{Align, Numbered, Piece, Plan};
use crate::lexer::{Comment, Tok, Token, lex};
use std::ops::Range;

/// Longest diff searched exactly; beyond it (only for pathological inputs,
/// e.g. thousands of redundant parentheses) tokens are matched greedily.
const MAX_EDITS: usize = 500;

/// How a comment stood in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    OwnLine { blank_before: bool, blank_after: bool },
    Trailing,
    Inline,
}

/// A printed token: which leaf, where in it, what.
struct Printed {
    leaf: usize,
    range: Range<usize>,
    tok: Tok,
}

/// The plan for writing `n`'s leaves with the comments and spellings of `src`.
pub(crate) fn plan(src: &str, tokens: &[Token], comments: &[Comment], n: &Numbered) -> Plan {
    let source = &tokens[..tokens.len().saturating_sub(1)]; // without Eof
    let printed = printed_tokens(n);
    let matched = align(source, &printed);
    let m = printed.len();

    // Per printed token: its text when the source spells it differently, the
    // comments before it (index m: after the last token), the comments after it.
    let mut spelled: Vec<Option<&str>> = vec![None; m];
    for (i, j) in matched.iter().enumerate() {
        if let Some(j) = *j
            && matches!(source[i].tok, Tok::Int(_) | Tok::Float(_))
        {
            spelled[j] = Some(&src[source[i].span.range()]);
        }
    }
    let mut before: Vec<Vec<Piece>> = vec![Vec::new(); m + 1];
    let mut after: Vec<Vec<Piece>> = vec![Vec::new(); m];
    let mut breaks: Vec<(usize, usize)> = Vec::new();
    let opportunity = |t: usize| break_between(n, &printed, t);

    for (k, c) in comments.iter().enumerate() {
        let next_tok = source.partition_point(|t| t.span.start < c.span.end);
        let prev_tok = next_tok.checked_sub(1);
        let (place, multi_line) = (classify(src, source, comments, k, next_tok), c.text.contains('\n'));
        let prev_printed = prev_tok.and_then(|i| (0..=i).rev().find_map(|i| matched[i]));
        let next_printed = (next_tok..source.len()).find_map(|i| matched[i]).unwrap_or(m);
        match place {
            Place::Trailing if prev_printed.is_some() => {
                // Written at the end of the output line: attach it to the last
                // token before a possible line break, and make that break.
                let mut p = prev_printed.unwrap_or(0);
                while p + 1 < m && !opportunity(p) {
                    p += 1;
                }
                after[p].push(Piece::Trailing(c.text.clone()));
                if p + 1 < m {
                    breaks.push((printed[p].leaf, printed[p + 1].leaf));
                }
            }
            Place::Inline if !multi_line => before[next_printed].push(Piece::Inline(c.text.clone())),
            _ => {
                let (blank_before, blank_after) = match place {
                    Place::OwnLine { blank_before, blank_after } => (blank_before, blank_after),
                    _ => (false, false),
                };
                let q = next_printed;
                let align = if q < m && q > 0 && printed[q].leaf == printed[q - 1].leaf {
                    Align::Continuation
                } else if q < m && matches!(printed[q].tok, Tok::Sym(")" | "]" | "}" | ";")) {
                    Align::Previous
                } else {
                    Align::Next
                };
                before[q].push(Piece::OwnLine { text: c.text.clone(), blank_before, blank_after, align });
                if q > 0 && q < m {
                    breaks.push((printed[q - 1].leaf, printed[q].leaf));
                }
            }
        }
    }

    let mut pieces: Vec<Option<Vec<Piece>>> = vec![None; n.leaves.len()];
    let mut j = 0;
    for (leaf, text) in n.leaves.iter().enumerate() {
        let first = j;
        while j < m && printed[j].leaf == leaf {
            j += 1;
        }
        let toks = first..j;
        let touched = toks.clone().any(|t| spelled[t].is_some() || !before[t].is_empty() || !after[t].is_empty());
        if !touched {
            continue;
        }
        let mut out = Vec::new();
        let mut at = 0;
        for t in toks {
            let r = printed[t].range.clone();
            out.push(Piece::Text(text[at..r.start].to_string()));
            out.append(&mut before[t]);
            out.push(Piece::Text(spelled[t].unwrap_or(&text[r.clone()]).to_string()));
            out.append(&mut after[t]);
            at = r.end;
        }
        out.push(Piece::Text(text[at..].to_string()));
        out.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
        pieces[leaf] = Some(out);
    }
    let tail = std::mem::take(&mut before[m]);
    let forced = forced_groups(n, breaks);
    Plan { pieces, tail, forced }
}

/// The tokens of the leaves, in order. A leaf that does not lex (none does)
/// simply holds no token.
fn printed_tokens(n: &Numbered) -> Vec<Printed> {
    let mut out = Vec::new();
    for (leaf, text) in n.leaves.iter().enumerate() {
        if let Ok(toks) = lex(text) {
            for t in toks {
                if t.tok != Tok::Eof {
                    out.push(Printed { leaf, range: t.span.range(), tok: t.tok });
                }
            }
        }
    }
    out
}

/// May the layout break the line between printed tokens `t` and `t + 1`?
fn break_between(n: &Numbered, printed: &[Printed], t: usize) -> bool {
    let (a, b) = (printed[t].leaf, printed[t + 1].leaf);
    (a + 1..=b).any(|l| n.break_before[l])
}

/// How comment `k` stands between its neighbours (tokens or comments).
fn classify(src: &str, source: &[Token], comments: &[Comment], k: usize, next_tok: usize) -> Place {
    let c = &comments[k];
    let prev_end =
        [next_tok.checked_sub(1).map(|i| source[i].span.end), k.checked_sub(1).map(|i| comments[i].span.end)]
            .into_iter()
            .flatten()
            .max();
    let next_start = [source.get(next_tok).map(|t| t.span.start), comments.get(k + 1).map(|n| n.span.start)]
        .into_iter()
        .flatten()
        .min();
    let newlines = |a: u32, b: u32| src[a as usize..b as usize].matches('\n').count();
    let before = prev_end.map(|e| newlines(e, c.span.start));
    let after = next_start.map(|s| newlines(c.span.end, s));
    let own_line = before.is_none_or(|n| n > 0);
    let ends_line = c.is_line() || after.is_none_or(|n| n > 0);
    match (own_line, ends_line) {
        (true, true) => {
            Place::OwnLine { blank_before: before.is_some_and(|n| n > 1), blank_after: after.is_some_and(|n| n > 1) }
        }
        (false, true) => Place::Trailing,
        (_, false) => Place::Inline,
    }
}

/// Tokens equal for alignment: the same kind and text, numbers by value.
fn same(a: &Tok, b: &Tok) -> bool {
    match (a, b) {
        (Tok::Float(x), Tok::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// For each source token, the printed token it is matched with.
fn align(source: &[Token], printed: &[Printed]) -> Vec<Option<usize>> {
    let a: Vec<&Tok> = source.iter().map(|t| &t.tok).collect();
    let b: Vec<&Tok> = printed.iter().map(|t| &t.tok).collect();
    let mut out = vec![None; a.len()];
    // The common prefix and suffix (all of it, for a file already formatted).
    let pre = a.iter().zip(&b).take_while(|(x, y)| same(x, y)).count();
    let suf = a[pre..].iter().rev().zip(b[pre..].iter().rev()).take_while(|(x, y)| same(x, y)).count();
    for (k, slot) in out.iter_mut().enumerate().take(pre) {
        *slot = Some(k);
    }
    for k in 0..suf {
        out[a.len() - 1 - k] = Some(b.len() - 1 - k);
    }
    let (ma, mb) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let pairs = myers(ma, mb, MAX_EDITS).unwrap_or_else(|| greedy(ma, mb));
    for (i, j) in pairs {
        out[pre + i] = Some(pre + j);
    }
    out
}

/// The matched pairs of a shortest edit script (Myers, 1986), or `None` when
/// it needs more than `max_d` edits. Time O((N + M) D), memory O(D²).
fn myers(a: &[&Tok], b: &[&Tok], max_d: usize) -> Option<Vec<(usize, usize)>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let limit = max_d.min(a.len() + b.len()) as isize;
    let off = limit + 1;
    let mut v = vec![0isize; 2 * limit as usize + 3];
    // trace[d][k + d]: the furthest x on diagonal k after d edits.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=limit {
        let mut done = false;
        for k in (-d..=d).step_by(2) {
            let down = k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize]);
            let mut x = if down { v[(off + k + 1) as usize] } else { v[(off + k - 1) as usize] + 1 };
            let mut y = x - k;
            while x < n && y < m && same(a[x as usize], b[y as usize]) {
                x += 1;
                y += 1;
            }
            v[(off + k) as usize] = x;
            done |= x >= n && y >= m;
        }
        trace.push(v[(off - d) as usize..=(off + d) as usize].to_vec());
        if done {
            return Some(backtrack(&trace, n, m));
        }
    }
    None
}

fn backtrack(trace: &[Vec<isize>], n: isize, m: isize) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..trace.len() as isize).rev() {
        let prev = &trace[(d - 1) as usize];
        let get = |k: isize| prev[(k + d - 1) as usize];
        let k = x - y;
        let down = k == -d || (k != d && get(k - 1) < get(k + 1));
        let pk = if down { k + 1 } else { k - 1 };
        let (px, py) = (get(pk), get(pk) - pk);
        let (sx, sy) = if down { (px, py + 1) } else { (px + 1, py) };
        while x > sx && y > sy {
            x -= 1;
            y -= 1;
            pairs.push((x as usize, y as usize));
        }
        (x, y) = (px, py);
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        pairs.push((x as usize, y as usize));
    }
    pairs.reverse();
    pairs
}

/// A linear-time matching for inputs whose diff is too long to search: equal
/// tokens are matched, and after a mismatch the nearer re-synchronisation
/// (within a window) is taken.
fn greedy(a: &[&Tok], b: &[&Tok]) -> Vec<(usize, usize)> {
    const WINDOW: usize = 32;
    let (mut i, mut j) = (0, 0);
    let mut pairs = Vec::new();
    while i < a.len() && j < b.len() {
        if same(a[i], b[j]) {
            pairs.push((i, j));
            i += 1;
            j += 1;
            continue;
        }
        let skip_a = (1..WINDOW).find(|&s| i + s < a.len() && same(a[i + s], b[j]));
        let skip_b = (1..WINDOW).find(|&s| j + s < b.len() && same(a[i], b[j + s]));
        match (skip_a, skip_b) {
            (Some(s), Some(t)) if s <= t => i += s,
            (Some(s), None) => i += s,
            (_, Some(t)) => j += t,
            (None, None) => {
                i += 1;
                j += 1;
            }
        }
    }
    pairs
}

/// Per group: broken whatever the width, because it holds a hard line or
/// both leaves of a break a comment needs.
fn forced_groups(n: &Numbered, mut breaks: Vec<(usize, usize)>) -> Vec<bool> {
    breaks.sort_unstable();
    // Sparse table of the smallest second leaf over runs of breaks (sorted by first leaf).
    let mut table: Vec<Vec<usize>> = vec![breaks.iter().map(|b| b.1).collect()];
    let mut len = 1;
    while 2 * len <= breaks.len() {
        let prev = table.last().expect("one level at least");
        let next: Vec<usize> = (0..=breaks.len() - 2 * len).map(|i| prev[i].min(prev[i + len])).collect();
        table.push(next);
        len *= 2;
    }
    let min_second = |lo: usize, hi: usize| -> usize {
        // Breaks lo..hi (non-empty).
        let level = (usize::BITS - 1 - (hi - lo).leading_zeros()) as usize;
        table[level][lo].min(table[level][hi - (1 << level)])
    };
    n.group_leaves
        .iter()
        .zip(&n.hard)
        .map(|(leaves, &hard)| {
            let lo = breaks.partition_point(|b| b.0 < leaves.start);
            let hi = breaks.partition_point(|b| b.0 < leaves.end);
            hard || (lo < hi && min_second(lo, hi) < leaves.end)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.tok).filter(|t| *t != Tok::Eof).collect()
    }

    #[test]
    fn myers_matches_a_longest_common_subsequence() {
        let a = toks("( ( a ) + b ) * c");
        let b = toks("(a + b) * c");
        let (ra, rb): (Vec<&Tok>, Vec<&Tok>) = (a.iter().collect(), b.iter().collect());
        let pairs = myers(&ra, &rb, 100).unwrap();
        assert_eq!(pairs.len(), b.len());
        assert!(pairs.iter().all(|&(i, j)| same(ra[i], rb[j])));
        assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(myers(&ra, &rb, 1).is_none(), "two edits are needed");
    }

    #[test]
    fn greedy_resynchronises_after_dropped_tokens() {
        let a = toks("((((x)))) + y");
        let b = toks("x + y");
        let (ra, rb): (Vec<&Tok>, Vec<&Tok>) = (a.iter().collect(), b.iter().collect());
        assert_eq!(greedy(&ra, &rb), vec![(4, 0), (9, 1), (10, 2)]);
    }
}

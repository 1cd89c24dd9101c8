//! Encodings by name (LANGUAGE.md §6): `CSR`, `CSC`, `COO`, `DCSR`, `DCSC`,
//! `CSF` (any rank), `BSR(r, c)`, `DIA` (diagonals: `(i, j) -> (j - i :
//! compressed, i : dense)`), and TACO's level letters (`ds` is CSR,
//! `ds:1,0` CSC, `sss` a 3-D CSF): wherever an encoding is taken, one of these
//! stands for the MLIR attribute it names ([`Named::mlir`]), which is then
//! parsed and verified like a pasted one ([`resolve`]).
//!
//! TACO's letters, one per level: `d` dense, `s` compressed, `u` compressed
//! and not unique, `q` singleton, `c` singleton and not unique. After a colon,
//! the dimension each level stores (`:1,0`: level 0 stores dimension 1); by
//! default level `l` stores dimension `l`.

use super::{Encoding, parse_encoding};
use crate::span::{Diagnostic, ErrorKind, Span};

/// A named encoding, before its rank is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Named {
    /// Compressed sparse rows: `(i, j) -> (i : dense, j : compressed)`.
    Csr,
    /// Compressed sparse columns: `(i, j) -> (j : dense, i : compressed)`.
    Csc,
    /// Coordinates: a non-unique compressed level, then singletons.
    Coo,
    /// Doubly compressed rows: both levels compressed.
    Dcsr,
    /// Doubly compressed columns.
    Dcsc,
    /// Compressed sparse fibres: every level compressed.
    Csf,
    /// Block sparse rows with `r × c` dense blocks.
    Bsr(u64, u64),
    /// Diagonals: the offsets `j - i` of the stored diagonals, then a
    /// row-indexed dense array per diagonal.
    Dia,
    /// TACO's level letters and mode order.
    Taco {
        /// One MLIR level format per letter.
        levels: Vec<&'static str>,
        /// The dimension each level stores.
        order: Vec<usize>,
    },
}

/// The names, for help and suggestions.
pub const NAMES: &[&str] = &["CSR", "CSC", "COO", "DCSR", "DCSC", "CSF", "BSR(r, c)", "DIA"];

impl Named {
    /// Reads a name form; `None` when `text` is not one (e.g. an MLIR
    /// attribute or a `#NAME`), an error when it is one written wrongly.
    pub fn parse(text: &str) -> Option<Result<Named, String>> {
        let t = text.trim();
        if t.is_empty() || t.starts_with('#') {
            return None;
        }
        Some(Named::parse_form(t))
    }

    fn parse_form(t: &str) -> Result<Named, String> {
        let upper = t.to_ascii_uppercase();
        let simple = match upper.as_str() {
            "CSR" => Some(Named::Csr),
            "CSC" => Some(Named::Csc),
            "COO" => Some(Named::Coo),
            "DCSR" => Some(Named::Dcsr),
            "DCSC" => Some(Named::Dcsc),
            "CSF" => Some(Named::Csf),
            "DIA" => Some(Named::Dia),
            _ => None,
        };
        if let Some(n) = simple {
            return if t == upper { Ok(n) } else { Err(format!("encoding names are upper case: write `{upper}`")) };
        }
        if upper.starts_with("BSR") {
            let args = t[3..].trim();
            let inner = args.strip_prefix('(').and_then(|a| a.strip_suffix(')'));
            let sizes = inner
                .and_then(|a| a.split_once(','))
                .and_then(|(r, c)| Some((r.trim().parse::<u64>().ok()?, c.trim().parse::<u64>().ok()?)));
            return match sizes {
                Some((r, c)) if r >= 1 && c >= 1 && t.starts_with("BSR") => Ok(Named::Bsr(r, c)),
                Some(_) if t.starts_with("BSR") => Err("BSR's block sizes are at least 1".to_string()),
                _ => Err("write BSR(ROWS, COLS) with the block's sizes, e.g. BSR(2, 3)".to_string()),
            };
        }
        let (letters, order) = match t.split_once(':') {
            Some((l, o)) => (l.trim(), Some(o)),
            None => (t, None),
        };
        let mut levels = Vec::new();
        for ch in letters.chars() {
            levels.push(match ch {
                'd' => "dense",
                's' => "compressed",
                'u' => "compressed(nonunique)",
                'q' => "singleton",
                'c' => "singleton(nonunique)",
                _ => {
                    return Err(format!(
                        "`{t}` is not an encoding: write an MLIR `#sparse_tensor.encoding<{{...}}>`, a name ({}), \
                         or TACO's level letters (d dense, s compressed, u compressed non-unique, q singleton, \
                         c singleton non-unique; e.g. `ds`, `ds:1,0`)",
                        NAMES.join(", ")
                    ));
                }
            });
        }
        let rank = levels.len();
        let order = match order {
            None => (0..rank).collect(),
            Some(o) => {
                let order: Option<Vec<usize>> = o.split(',').map(|d| d.trim().parse::<usize>().ok()).collect();
                let mut sorted = order.clone().unwrap_or_default();
                sorted.sort_unstable();
                if sorted != (0..rank).collect::<Vec<_>>() {
                    return Err(format!(
                        "`:{o}` must order the {rank} dimensions: each of 0..{} once, comma-separated",
                        rank - 1
                    ));
                }
                order.unwrap_or_default()
            }
        };
        Ok(Named::Taco { levels, order })
    }

    /// The rank the name implies, if it does.
    pub fn rank(&self) -> Option<usize> {
        match self {
            Named::Csr | Named::Csc | Named::Dcsr | Named::Dcsc | Named::Bsr(..) | Named::Dia => Some(2),
            Named::Coo | Named::Csf => None,
            Named::Taco { levels, .. } => Some(levels.len()),
        }
    }

    /// The MLIR attribute it stands for, for a tensor of `rank` dimensions
    /// (needed for `COO` and `CSF`, checked for the others).
    pub fn mlir(&self, rank: Option<usize>) -> Result<String, String> {
        let rank = match (self.rank(), rank) {
            (Some(own), Some(r)) if own != r => {
                return Err(format!("{} has {own} dimension(s); this tensor has {r}", self.describe()));
            }
            (Some(own), _) => own,
            (None, Some(r)) => r,
            (None, None) if *self == Named::Coo => 2,
            (None, None) => return Err(format!("{} needs the tensor's rank (give its dimensions)", self.describe())),
        };
        if rank == 0 {
            return Err("a tensor has at least one dimension".to_string());
        }
        // MLIR's documentation names dimensions i, j, k, …
        const LETTERS: [&str; 8] = ["i", "j", "k", "l", "m", "n", "o", "p"];
        let d = |k: usize| if rank <= LETTERS.len() { LETTERS[k].to_string() } else { format!("d{k}") };
        let levels: Vec<String> = match self {
            Named::Csr => vec![format!("{} : dense", d(0)), format!("{} : compressed", d(1))],
            Named::Csc => vec![format!("{} : dense", d(1)), format!("{} : compressed", d(0))],
            Named::Dcsr => vec![format!("{} : compressed", d(0)), format!("{} : compressed", d(1))],
            Named::Dcsc => vec![format!("{} : compressed", d(1)), format!("{} : compressed", d(0))],
            Named::Csf => (0..rank).map(|k| format!("{} : compressed", d(k))).collect(),
            Named::Coo if rank == 1 => vec![format!("{} : compressed", d(0))],
            Named::Coo => (0..rank)
                .map(|k| match k {
                    0 => format!("{} : compressed(nonunique)", d(k)),
                    _ if k + 1 == rank => format!("{} : singleton", d(k)),
                    _ => format!("{} : singleton(nonunique)", d(k)),
                })
                .collect(),
            Named::Bsr(r, c) => vec![
                format!("i floordiv {r} : dense"),
                format!("j floordiv {c} : compressed"),
                format!("i mod {r} : dense"),
                format!("j mod {c} : dense"),
            ],
            Named::Dia => vec!["j - i : compressed".to_string(), "i : dense".to_string()],
            Named::Taco { levels, order } => {
                levels.iter().zip(order).map(|(f, &dim)| format!("{} : {f}", d(dim))).collect()
            }
        };
        let dims: Vec<String> = (0..rank).map(d).collect();
        Ok(format!("#sparse_tensor.encoding<{{ map = ({}) -> ({}) }}>", dims.join(", "), levels.join(", ")))
    }

    fn describe(&self) -> String {
        match self {
            Named::Bsr(r, c) => format!("BSR({r}, {c})"),
            Named::Taco { .. } => "this TACO format".to_string(),
            other => format!("{other:?}").to_uppercase(),
        }
    }
}

/// Any encoding text: an MLIR attribute (parsed and verified) or a name
/// form, for a tensor of `rank` dimensions if known. `offset` locates `text`
/// in its file; errors point there.
pub fn resolve(text: &str, offset: usize, rank: Option<usize>) -> Result<Encoding, Diagnostic> {
    let span = Span::new(offset, offset + text.len());
    match Named::parse(text) {
        None => parse_encoding(text, offset),
        Some(Err(why)) => Err(Diagnostic::new(span, why).with_label("not an encoding").or_kind(ErrorKind::Syntax)),
        Some(Ok(named)) => {
            let mlir = named
                .mlir(rank)
                .map_err(|why| Diagnostic::new(span, why).with_label("here").or_kind(ErrorKind::Type))?;
            parse_encoding(&mlir, 0).map_err(|d| {
                Diagnostic::new(span, format!("`{}` is not a valid encoding: {}", text.trim(), d.message))
                    .with_label("this format")
                    .with_note(format!("it stands for {mlir}"))
                    .or_kind(ErrorKind::Type)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::print_encoding;

    fn same(a: &str, b: &str, rank: Option<usize>) {
        let x = resolve(a, 0, rank).unwrap_or_else(|d| panic!("{a}: {}", d.message));
        let y = parse_encoding(b, 0).unwrap();
        assert_eq!(print_encoding(&x), print_encoding(&y), "{a}");
    }

    #[test]
    fn names_stand_for_the_usual_mlir_encodings() {
        same("CSR", "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>", None);
        same("CSC", "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>", None);
        same("DCSR", "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>", None);
        same("DCSC", "#sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed) }>", None);
        same("COO", "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>", None);
        same(
            "COO",
            "#sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed(nonunique), j : singleton(nonunique), k : singleton) }>",
            Some(3),
        );
        same(
            "CSF",
            "#sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed, j : compressed, k : compressed) }>",
            Some(3),
        );
        same(
            "BSR(2, 3)",
            "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense) }>",
            None,
        );
        same("DIA", "#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, i : dense) }>", None);
    }

    #[test]
    fn taco_letters() {
        same("ds", "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>", Some(2));
        same("ds:1,0", "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>", None);
        same(
            "sss",
            "#sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed, j : compressed, k : compressed) }>",
            None,
        );
        same("uq", "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>", None);
        same("d", "#sparse_tensor.encoding<{ map = (i) -> (i : dense) }>", None);
    }

    #[test]
    fn wrong_names_say_why() {
        let err = |t: &str, rank| resolve(t, 0, rank).unwrap_err().message;
        assert!(err("csr", None).contains("write `CSR`"));
        assert!(err("CSF", None).contains("needs the tensor's rank"));
        assert!(err("CSR", Some(3)).contains("has 2 dimension(s); this tensor has 3"));
        assert!(err("BSR(0, 2)", None).contains("at least 1"));
        assert!(err("BSR", None).contains("BSR(ROWS, COLS)"));
        assert!(err("ds:0,0", None).contains("must order"));
        assert!(err("xyz", None).contains("TACO's level letters"));
        assert!(err("q", None).contains("not a valid encoding"), "a singleton level needs a non-unique parent");
        assert!(parse_encoding("#sparse_tensor.encoding<{ map = (i) -> (i : dense) }>", 0).is_ok());
        assert!(Named::parse("#CSR").is_none());
    }
}

//! The primitive patterns and their signatures (LANGUAGE.md §5).
//!
//! Every signature is declared once, as text, in `prims.sig` (included
//! below) and parsed on first use; the type checker instantiates these and
//! nothing else. The few rules a signature cannot state (`iterate` applies its
//! function `k` times at possibly different lengths; `asVector` needs scalar
//! elements and a constant width) are named in [`Prim::note`] and handled in
//! one place in the type checker.

use crate::name::Name;
use crate::nat::Nat;
use crate::types::Type;
use std::sync::OnceLock;

/// The signature file.
pub const SIGNATURES: &str = include_str!("prims.sig");

/// One argument slot of a primitive.
#[derive(Clone, Debug, PartialEq)]
pub enum Slot {
    /// A type-level natural, named in the signature.
    Nat {
        /// Its name, used in the rest of the signature.
        name: Name,
        /// `nat?`: may be left out (defaults to 0).
        optional: bool,
    },
    /// A function argument with its parameter types and result type.
    Fun {
        /// The slot's name.
        name: Name,
        /// Parameter types.
        params: Vec<Type>,
        /// Result type.
        result: Type,
    },
    /// A named non-function, non-data argument (`init`, `v`, `idx`).
    Value {
        /// The slot's name.
        name: Name,
        /// Its type.
        ty: Type,
    },
    /// A data input.
    Input(Type),
}

/// A primitive's signature.
#[derive(Clone, Debug, PartialEq)]
pub struct PrimSig {
    /// Its name.
    pub name: &'static str,
    /// Arguments in order.
    pub slots: Vec<Slot>,
    /// Result type.
    pub result: Type,
    /// The signature's text, for error messages and docs.
    pub text: String,
    /// What it does, in one line (the comment after the signature).
    pub summary: String,
    /// The section of `prims.sig` it is declared in (an index into [`sections`]).
    pub section: usize,
}

impl PrimSig {
    /// How many arguments it takes when every optional natural is given.
    pub fn arity(&self) -> usize {
        self.slots.len()
    }
    /// How many optional slots it has.
    pub fn optional_count(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s, Slot::Nat { optional: true, .. })).count()
    }
}

/// A section of `prims.sig` (`// ## Title` and the comment after it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Its title.
    pub title: String,
    /// Its description, the comment lines after the title joined.
    pub description: String,
}

struct Parsed {
    sigs: Vec<PrimSig>,
    sections: Vec<Section>,
}

fn parsed() -> &'static Parsed {
    static PARSED: OnceLock<Parsed> = OnceLock::new();
    PARSED.get_or_init(|| {
        let mut sigs = Vec::new();
        let mut sections: Vec<Section> = Vec::new();
        // Between a section's title and its first signature, comments describe it.
        let mut describing = false;
        for line in SIGNATURES.lines().map(str::trim) {
            if let Some(title) = line.strip_prefix("// ## ") {
                sections.push(Section { title: title.trim().to_string(), description: String::new() });
                describing = true;
                continue;
            }
            if let Some(comment) = line.strip_prefix("//") {
                if let Some(sec) = sections.last_mut().filter(|_| describing) {
                    if !sec.description.is_empty() {
                        sec.description.push(' ');
                    }
                    sec.description.push_str(comment.trim());
                }
                continue;
            }
            if line.is_empty() {
                continue;
            }
            describing = false;
            let (name, rest) = line.split_once(':').unwrap_or_else(|| panic!("prims.sig: missing `:` in {line:?}"));
            let (sig, summary) = rest.split_once("//").unwrap_or((rest, ""));
            let name: &'static str = Box::leak(name.trim().to_string().into_boxed_str());
            let (slots, result) = crate::parser::parse_signature(sig.trim())
                .unwrap_or_else(|e| panic!("prims.sig: cannot parse the signature of {name}: {}", e.message));
            let section = sections.len().saturating_sub(1);
            sigs.push(PrimSig {
                name,
                slots,
                result,
                text: sig.trim().to_string(),
                summary: summary.trim().to_string(),
                section,
            });
        }
        Parsed { sigs, sections }
    })
}

/// The primitives, in the order of `prims.sig`.
pub fn signatures() -> &'static [PrimSig] {
    &parsed().sigs
}

/// The sections of `prims.sig`, in order.
pub fn sections() -> &'static [Section] {
    &parsed().sections
}

/// The signature of the primitive named `name`.
pub fn lookup(name: &str) -> Option<&'static PrimSig> {
    signatures().iter().find(|s| s.name == name)
}

/// The second form of a primitive declared twice in `prims.sig`: `reduce` and
/// `reduceSeq` without an initial value, whose operator takes one pair.
pub fn second_form(name: &str) -> Option<&'static PrimSig> {
    signatures().iter().filter(|s| s.name == name).nth(1)
}

/// The form of `name` to use when its first argument is a function of
/// `params` parameters (`None`: not a function, or not known): the second
/// form when its first function slot takes that many and the first form does
/// not (`reduce(x => x.1 + x.2)` against `reduce(+, 0)`).
pub fn form(name: &str, params: Option<usize>) -> Option<&'static PrimSig> {
    let first = lookup(name)?;
    let takes = |s: &PrimSig| match s.slots.first() {
        Some(Slot::Fun { params, .. }) => Some(params.len()),
        _ => None,
    };
    match (second_form(name), params) {
        (Some(second), Some(p)) if takes(second) == Some(p) && takes(first) != Some(p) => Some(second),
        _ => Some(first),
    }
}

/// Rules a signature cannot state, checked by name in the type checker.
pub fn note(name: &str) -> Option<&'static str> {
    match name {
        "iterate" => Some(
            "the function is applied k times; k must be a constant and each application is checked at its own input type",
        ),
        "asVector" => Some("elements must be scalars and the width a constant 2, 3, 4, 8 or 16"),
        "asScalar" => Some("elements must be vectors"),
        "sortBy" => {
            Some("the key U is a scalar that is not complex, or a tuple of such scalars (compared lexicographically)")
        }
        n if conversion(n).is_some() => {
            Some("the argument must be a scalar: a real number or a bool (a complex one: take re or im first)")
        }
        "complex" => Some("the parts have one type, f32 or f64; C is complex<f32> or complex<f64> accordingly"),
        "re" | "im" | "conj" => Some("C is complex<f32> or complex<f64>, T its parts' type (f32 or f64)"),
        _ => None,
    }
}

/// The scalar type a conversion primitive (`float`, `int`, `u8`, …) converts to.
pub fn conversion(name: &str) -> Option<crate::types::ScalarType> {
    crate::types::ScalarType::from_keyword(name).filter(|_| lookup(name).is_some())
}

/// Is `name` one of the `map` family (same typing, different schedules)?
pub fn is_map(name: &str) -> bool {
    matches!(name, "map" | "mapSeq" | "mapPar" | "mapGlobal" | "mapWorkgroup" | "mapLocal")
}
/// Is `name` one of the `reduce` family?
pub fn is_reduce(name: &str) -> bool {
    matches!(name, "reduce" | "reduceSeq")
}
/// Is `name` a memory-placement wrapper?
pub fn is_placement(name: &str) -> bool {
    matches!(name, "toLocal" | "toPrivate" | "toGlobal")
}

/// A natural unknown of a signature (`N`, `M`, `K`): `Nat::Meta` of its letter.
pub fn nat_unknown(letter: char) -> Nat {
    Nat::Meta(letter as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signature_parses() {
        let sigs = signatures();
        assert!(sigs.len() >= 24, "only {} signatures", sigs.len());
        let map = lookup("map").unwrap();
        assert_eq!(map.arity(), 2);
        assert!(matches!(map.slots[0], Slot::Fun { .. }));
        assert_eq!(lookup("mapGlobal").unwrap().optional_count(), 1);
        assert!(lookup("nosuch").is_none());
        assert!(!map.text.contains("//"), "{}", map.text);
    }

    #[test]
    fn every_primitive_is_described_in_a_section() {
        assert!(sections().len() >= 4);
        assert!(sections().iter().all(|s| !s.title.is_empty() && !s.description.is_empty()), "{:?}", sections());
        for p in signatures() {
            assert!(!p.summary.is_empty(), "`{}` has no summary in prims.sig (`// …` after its signature)", p.name);
            assert!(p.section < sections().len(), "`{}` is before any `// ## Section`", p.name);
        }
        assert_eq!(sections()[lookup("union").unwrap().section].title, "Co-iteration");
    }

    #[test]
    fn reduce_has_a_form_without_init() {
        let with = form("reduce", Some(2)).unwrap();
        let without = form("reduce", Some(1)).unwrap();
        assert_eq!(with.arity(), 3);
        assert_eq!(without.arity(), 2);
        assert!(
            matches!(&without.slots[0], Slot::Fun { params, .. } if params.len() == 1 && matches!(params[0], Type::Tuple(_)))
        );
        assert_eq!(form("reduceSeq", Some(1)).unwrap().arity(), 2);
        assert_eq!(form("reduce", None).unwrap().arity(), 3);
        assert_eq!(form("map", Some(1)).unwrap().arity(), 2);
        assert!(second_form("map").is_none());
    }
}

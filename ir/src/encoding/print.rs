//! Printing an [`Encoding`] back as MLIR text.
//!
//! The output is the canonical modern syntax (`map = ... -> (... : fmt)`),
//! whatever the input's spelling was: legacy `dimLevelType` encodings come
//! out as `map`s, `compressed(high)` as `loose_compressed`. Parsing the output
//! gives an equal [`Encoding`] (spans aside).

use super::{Encoding, LvlExpr, Width};

/// The encoding as one line of MLIR: `#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>`.
pub fn print_encoding(e: &Encoding) -> String {
    let mut out = String::from("#sparse_tensor.encoding<{ map = ");
    if !e.symbols.is_empty() {
        let syms: Vec<_> = e.symbols.iter().map(|(s, _)| s.to_string()).collect();
        out.push_str(&format!("[{}]", syms.join(", ")));
    }
    let names: Option<Vec<String>> =
        if e.named_levels { e.levels.iter().map(|l| l.name.as_ref().map(|n| n.to_string())).collect() } else { None };
    if let Some(n) = &names {
        out.push_str(&format!("{{{}}}", n.join(", ")));
    }
    let dims: Vec<String> = e
        .dims
        .iter()
        .map(|d| match d.slice {
            None => d.name.to_string(),
            Some(s) => {
                let f = |v: Option<u64>| v.map_or("?".to_string(), |x| x.to_string());
                format!("{} : #sparse_tensor<slice({}, {}, {})>", d.name, f(s.offset), f(s.size), f(s.stride))
            }
        })
        .collect();
    out.push_str(&format!("({}) -> (", dims.join(", ")));
    let sym = e.symbols.first().map_or("c".to_string(), |s| s.0.to_string());
    let dim = |k: usize| e.dims.get(k).map_or_else(|| format!("d{k}"), |d| d.name.to_string());
    let lvls: Vec<String> = e
        .levels
        .iter()
        .enumerate()
        .map(|(l, lv)| {
            let expr = match lv.expr {
                LvlExpr::Dim(d) => dim(d),
                LvlExpr::FloorDiv(d, k) => format!("{} floordiv {k}", dim(d)),
                LvlExpr::Mod(d, k) => format!("{} mod {k}", dim(d)),
                LvlExpr::Counter { dim: d, slices } => format!("{sym} * {slices} * {}", dim(d)),
                LvlExpr::Diff { plus, minus } => format!("{} - {}", dim(plus), dim(minus)),
            };
            let mut props = Vec::new();
            if lv.props.nonunique {
                props.push("nonunique");
            }
            if lv.props.nonordered {
                props.push("nonordered");
            }
            if lv.props.soa {
                props.push("soa");
            }
            let props = if props.is_empty() { String::new() } else { format!("({})", props.join(", ")) };
            let name = names.as_ref().map_or(String::new(), |n| format!("{} = ", n[l]));
            format!("{name}{expr} : {}{props}", lv.format.keyword())
        })
        .collect();
    out.push_str(&lvls.join(", "));
    out.push(')');
    if e.pos_width != Width::Native {
        out.push_str(&format!(", posWidth = {}", e.pos_width.bits()));
    }
    if e.crd_width != Width::Native {
        out.push_str(&format!(", crdWidth = {}", e.crd_width.bits()));
    }
    for (field, lit) in [("explicitVal", &e.explicit_val), ("implicitVal", &e.implicit_val)] {
        if let Some(l) = lit {
            out.push_str(&format!(", {field} = {}", l.text));
            if let Some(t) = &l.ty {
                out.push_str(&format!(" : {t}"));
            }
        }
    }
    out.push_str(" }>");
    out
}

impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_encoding(self))
    }
}

//! The verifier: turns the parsed syntax of an encoding into an [`Encoding`],
//! rejecting what MLIR's `SparseTensorEncodingAttr::verify` rejects (and a
//! few things it would only reject later, such as maps heddle cannot invert).
//!
//! Every error points at the part of the attribute that is wrong; the first
//! error wins, as in MLIR.

use super::parse::{ABin, AExpr, AKind, RawEncoding, RawFormat, RawLevel, RawMap};
use super::{DimVar, Encoding, Level, LevelFormat, LevelProps, LvlExpr, Width, err};
use crate::name::Name;
use crate::span::{Diagnostic, Span};
use std::collections::BTreeMap;

type VResult<T> = Result<T, Diagnostic>;

/// The most dimensions, and the most levels, an encoding may have (a
/// 3-D block format has 6 levels).
pub const MAX_LEVELS: usize = 32;

/// Builds and verifies an encoding from its parsed syntax.
pub(crate) fn build(raw: RawEncoding) -> VResult<Encoding> {
    let (map, formats): (RawMap, Vec<RawFormat>) = match (raw.map, raw.legacy_levels, raw.legacy_ordering) {
        (Some(m), None, None) => {
            let formats = m.levels.iter().filter_map(|l| l.format.clone()).collect();
            (m, formats)
        }
        (Some(m), _, _) => {
            return Err(err(
                m.span,
                "`map` cannot be combined with the legacy `dimLevelType` / `dimOrdering` fields",
                "`map` given here",
            )
            .with_note("write the level types inside `map`: `(i, j) -> (i : dense, j : compressed)`"));
        }
        (None, Some((formats, fspan)), ordering) => {
            let m = match ordering {
                Some(m) => {
                    if m.levels.len() != formats.len() {
                        return Err(err(
                            m.span,
                            format!(
                                "the dimension ordering has {} results but `dimLevelType` lists {} level types",
                                m.levels.len(),
                                formats.len()
                            ),
                            "one result per level is needed",
                        ));
                    }
                    m
                }
                None => identity_map(formats.len(), fspan),
            };
            (m, formats)
        }
        (None, None, Some(m)) => {
            return Err(err(m.span, "a dimension ordering without level types", "`dimLevelType = [...]` is missing"));
        }
        (None, None, None) => {
            return Err(err(
                raw.span,
                "the encoding has no `map`",
                "expected `map = (i, j) -> (i : dense, j : compressed)`",
            ));
        }
    };

    let pos_width = width(raw.pos_width, "position")?;
    let crd_width = width(raw.crd_width, "coordinate")?;
    for (lit, field) in [(&raw.explicit_val, "explicitVal"), (&raw.implicit_val, "implicitVal")] {
        if let Some(l) = lit
            && l.value().is_none()
            && l.text != "true"
            && l.text != "false"
        {
            return Err(err(raw.span, format!("`{field}` must be a number, found `{}`", l.text), "not a number"));
        }
    }

    // Before anything walks them (some checks compare every pair).
    if map.levels.len() > MAX_LEVELS || map.dims.len() > MAX_LEVELS {
        return Err(err(
            map.span,
            format!(
                "the map has {} dimensions and {} levels; heddle handles at most {MAX_LEVELS} of each",
                map.dims.len(),
                map.levels.len()
            ),
            "too many levels",
        )
        .with_note(
            "each level's types mention every level above it, so their size grows with the cube of the level count",
        ));
    }

    // Names: dimensions, symbols, level variables.
    let mut dims: Vec<DimVar> = Vec::new();
    for d in &map.dims {
        if let Some(prev) = dims.iter().find(|p| p.name == d.name) {
            return Err(err(
                d.span,
                format!("dimension variable `{}` is declared twice", d.name),
                "second declaration",
            )
            .with_note(format!("first declared at byte {}", prev.span.start)));
        }
        if let Some((s, sspan)) = d.slice
            && (s.size == Some(0) || s.stride == Some(0))
        {
            let what = if s.size == Some(0) { "size" } else { "stride" };
            return Err(err(sspan, format!("a dimension slice's {what} must be positive"), format!("{what} 0")));
        }
        dims.push(DimVar { name: d.name.clone(), slice: d.slice.map(|s| s.0), span: d.span });
    }
    if dims.is_empty() {
        return Err(err(map.span, "the map has no dimensions", "a sparse tensor has at least one dimension"));
    }
    for (s, sspan) in &map.symbols {
        if dims.iter().any(|d| &d.name == s) || map.symbols.iter().filter(|(t, _)| t == s).count() > 1 {
            return Err(err(*sspan, format!("symbol `{s}` is declared twice"), "already a dimension or symbol"));
        }
    }
    if map.levels.is_empty() {
        return Err(err(map.span, "the map has no levels", "a sparse tensor has at least one level"));
    }

    let lvl_names = level_names(&map)?;

    // Levels.
    let mut levels = Vec::with_capacity(map.levels.len());
    for (l, (rl, rf)) in map.levels.iter().zip(&formats).enumerate() {
        let expr = classify(&rl.expr, &map, &dims)?;
        let (format, props) = format(rf)?;
        levels.push(Level {
            name: lvl_names.as_ref().and_then(|n| n.get(l).cloned()),
            expr,
            format,
            props,
            span: if rl.format.is_some() { rl.span } else { rf.span },
            format_span: rf.span,
        });
    }
    check_order(&levels)?;
    check_invertible(&levels, &dims, &map)?;
    check_inverse_exprs(&map, &levels, &dims)?;

    Ok(Encoding {
        dims,
        symbols: map.symbols.clone(),
        levels,
        pos_width,
        crd_width,
        explicit_val: raw.explicit_val,
        implicit_val: raw.implicit_val,
        named_levels: lvl_names.is_some(),
        span: raw.span,
    })
}

fn identity_map(n: usize, span: Span) -> RawMap {
    let dims: Vec<_> = (0..n)
        .map(|k| super::parse::RawDim { name: Name::from(format!("d{k}")), span, slice: None, inverse: None })
        .collect();
    let levels = dims
        .iter()
        .map(|d| RawLevel { name: None, expr: AExpr { kind: AKind::Var(d.name.clone()), span }, format: None, span })
        .collect();
    RawMap { symbols: Vec::new(), lvl_names: None, dims, levels, span }
}

fn width(w: Option<(u64, Span)>, what: &str) -> VResult<Width> {
    match w {
        None => Ok(Width::Native),
        Some((bits, span)) => Width::from_bits(bits).ok_or_else(|| {
            err(span, format!("unexpected {what} bitwidth: {bits}"), "not 0, 8, 16, 32 or 64")
                .with_note("MLIR accepts 0 (native), 8, 16, 32 and 64 bits")
        }),
    }
}

/// The level variables' names, from `{l0, l1}` and/or `l0 = ...`, checked against each other.
fn level_names(map: &RawMap) -> VResult<Option<Vec<Name>>> {
    let inline: Vec<_> = map.levels.iter().map(|l| l.name.clone()).collect();
    match &map.lvl_names {
        Some(declared) => {
            if declared.len() != map.levels.len() {
                return Err(err(
                    map.span,
                    format!(
                        "the map declares {} level variables but lists {} levels",
                        declared.len(),
                        map.levels.len()
                    ),
                    "level count mismatch",
                ));
            }
            for ((dn, _), inl) in declared.iter().zip(&inline) {
                if let Some((n, sp)) = inl
                    && n != dn
                {
                    return Err(err(
                        *sp,
                        format!("level variable `{n}` is out of order"),
                        format!("expected `{dn}` here"),
                    ));
                }
            }
            Ok(Some(declared.iter().map(|(n, _)| n.clone()).collect()))
        }
        None if inline.iter().all(|n| n.is_some()) => Ok(Some(inline.into_iter().flatten().map(|(n, _)| n).collect())),
        None => Ok(None),
    }
}

/// Text of an affine expression for messages.
pub(crate) fn show(e: &AExpr) -> String {
    match &e.kind {
        AKind::Var(n) => n.to_string(),
        AKind::Const(v) => v.to_string(),
        AKind::Neg(a) => format!("-{}", show(a)),
        AKind::Bin(op, a, b) => format!("{} {} {}", show_atom(a), op.spelling(), show_atom(b)),
    }
}
fn show_atom(e: &AExpr) -> String {
    match e.kind {
        AKind::Bin(..) => format!("({})", show(e)),
        _ => show(e),
    }
}

/// Which supported form a level expression has.
fn classify(e: &AExpr, map: &RawMap, dims: &[DimVar]) -> VResult<LvlExpr> {
    let dim_of = |x: &AExpr| -> VResult<Option<usize>> {
        match &x.kind {
            AKind::Var(n) => match dims.iter().position(|d| &d.name == n) {
                Some(k) => Ok(Some(k)),
                None if map.symbols.iter().any(|(s, _)| s == n) => Ok(None),
                None => Err(err(
                    x.span,
                    format!("unknown variable `{n}` in a level expression"),
                    "not a dimension of the map",
                )
                .with_note(format!(
                    "the dimensions are {}",
                    dims.iter().map(|d| format!("`{}`", d.name)).collect::<Vec<_>>().join(", ")
                ))),
            },
            _ => Ok(None),
        }
    };
    let unsupported = || {
        err(e.span, format!("unsupported level expression `{}`", show(e)), "not a form heddle can store").with_note(
            "a level is `d`, `d floordiv K`, `d mod K` (K > 0), ELL's counting form `c * K * d` with a symbol `c`, or DIA's offset `a - b` of two different dimensions",
        )
    };
    match &e.kind {
        AKind::Var(n) => match dim_of(e)? {
            Some(d) => Ok(LvlExpr::Dim(d)),
            None => Err(err(e.span, format!("symbol `{n}` cannot be a level on its own"), "a symbol alone")
                .with_note("ELL counting is written `c * K * i`: the K slices counting dimension i")),
        },
        AKind::Bin(op @ (ABin::FloorDiv | ABin::Mod | ABin::CeilDiv), a, b) => {
            let d = dim_of(a)?.ok_or_else(unsupported)?;
            let k = match b.kind {
                AKind::Const(k) => k,
                _ => return Err(unsupported()),
            };
            if k <= 0 {
                return Err(err(
                    b.span,
                    format!("`{}` by {k}", op.spelling()),
                    "the divisor must be a positive constant",
                ));
            }
            match op {
                ABin::FloorDiv => Ok(LvlExpr::FloorDiv(d, k as u64)),
                ABin::Mod => Ok(LvlExpr::Mod(d, k as u64)),
                _ => Err(err(e.span, "`ceildiv` cannot define a storage level", "use `floordiv`")),
            }
        }
        AKind::Bin(ABin::Sub, a, b) => {
            // DIA's diagonal offset: exactly `a - b` of two different dimensions.
            let (Some(x), Some(y)) = (dim_of(a)?, dim_of(b)?) else { return Err(unsupported()) };
            if x == y {
                return Err(err(
                    e.span,
                    format!("`{}` is always 0", show(e)),
                    "a difference of one dimension with itself",
                )
                .with_note("DIA's offset subtracts two different dimensions: `j - i`"));
            }
            Ok(LvlExpr::Diff { plus: x, minus: y })
        }
        AKind::Bin(ABin::Mul, _, _) => {
            // Flatten the product; ELL's counter is symbol × constant × dimension.
            let mut factors = Vec::new();
            flatten_mul(e, &mut factors);
            let (mut sym, mut dim, mut k) = (0, None, 1i64);
            for f in &factors {
                match &f.kind {
                    AKind::Const(c) => k = k.saturating_mul(*c),
                    AKind::Var(_) => match dim_of(f)? {
                        Some(d) if dim.is_none() => dim = Some(d),
                        Some(_) => return Err(unsupported()),
                        None => sym += 1,
                    },
                    _ => return Err(unsupported()),
                }
            }
            match dim {
                Some(d) if sym == 1 && k > 0 => Ok(LvlExpr::Counter { dim: d, slices: k as u64 }),
                _ => Err(unsupported()),
            }
        }
        _ => Err(unsupported()),
    }
}

fn flatten_mul<'a>(e: &'a AExpr, out: &mut Vec<&'a AExpr>) {
    match &e.kind {
        AKind::Bin(ABin::Mul, a, b) => {
            flatten_mul(a, out);
            flatten_mul(b, out);
        }
        _ => out.push(e),
    }
}

const FORMATS: [&str; 8] =
    ["dense", "batch", "compressed", "loose_compressed", "singleton", "structured", "block2_4", "banded"];

fn format(rf: &RawFormat) -> VResult<(LevelFormat, LevelProps)> {
    let kw = rf.keyword.as_str();
    let mut format = match kw {
        "dense" => LevelFormat::Dense,
        "batch" => LevelFormat::Batch,
        "compressed" => LevelFormat::Compressed,
        "loose_compressed" => LevelFormat::LooseCompressed,
        "singleton" => LevelFormat::Singleton,
        "banded" => LevelFormat::Banded,
        "structured" => match &rf.args {
            Some((v, sp)) if v.len() == 2 => nm(v[0], v[1], false, *sp)?,
            Some((_, sp)) => {
                return Err(err(*sp, "`structured` takes two numbers, `structured[n, m]`", "expected `[n, m]`"));
            }
            None => return Err(err(rf.span, "`structured` needs its block shape", "write `structured[2, 4]`")),
        },
        _ => match block_nm(kw) {
            Some((n, m)) => nm(n, m, true, rf.span)?,
            None => {
                let mut e = err(rf.span, format!("unknown level format `{kw}`"), "not a level format");
                if let Some(s) = FORMATS.iter().find(|f| edit_distance(f, kw) <= 2) {
                    e = e.with_note(format!("did you mean `{s}`?"));
                }
                return Err(e.with_note(
                    "the formats are dense, batch, compressed, loose_compressed, singleton, structured[n, m] (or blockN_M), and heddle's banded (skyline)",
                ));
            }
        },
    };
    if rf.args.is_some() && kw != "structured" {
        let sp = rf.args.as_ref().map_or(rf.span, |a| a.1);
        return Err(err(sp, format!("`{kw}` takes no `[...]` arguments"), "unexpected arguments"));
    }
    let mut props = LevelProps::default();
    let mut seen: Vec<&str> = Vec::new();
    for (p, sp) in &rf.props {
        if seen.contains(&p.as_str()) {
            return Err(err(*sp, format!("property `{p}` is given twice"), "repeated property"));
        }
        seen.push(p);
        let allowed = match p.as_str() {
            "nonunique" => {
                props.nonunique = true;
                format.has_coordinates()
            }
            "nonordered" => {
                props.nonordered = true;
                format.has_coordinates()
            }
            "soa" => {
                props.soa = true;
                if format != LevelFormat::Singleton {
                    return Err(err(
                        *sp,
                        "SoA is only applicable to singleton lvlTypes",
                        "`soa` on a non-singleton level",
                    ));
                }
                true
            }
            // Older MLIR spelled loose_compressed as compressed with a "high" bound.
            "high" if format == LevelFormat::Compressed => {
                format = LevelFormat::LooseCompressed;
                true
            }
            _ => {
                return Err(err(*sp, format!("unknown level property `{p}`"), "not a level property")
                    .with_note("the properties are nonunique, nonordered and soa"));
            }
        };
        if !allowed || matches!(format, LevelFormat::NOutOfM { .. }) {
            return Err(err(
                *sp,
                format!("property `{p}` is not allowed on a {} level", format.keyword()),
                "only levels that store coordinates take it",
            ));
        }
    }
    Ok((format, props))
}

fn nm(n: u64, m: u64, block: bool, sp: Span) -> VResult<LevelFormat> {
    if n == 0 || n > m || m > 64 {
        return Err(err(sp, format!("invalid n:m structure {n}:{m}"), "need 0 < n <= m <= 64"));
    }
    Ok(LevelFormat::NOutOfM { n: n as u32, m: m as u32, block_spelling: block })
}

/// `block2_4` → (2, 4).
fn block_nm(kw: &str) -> Option<(u64, u64)> {
    let rest = kw.strip_prefix("block")?;
    let (n, m) = rest.split_once('_')?;
    Some((n.parse().ok()?, m.parse().ok()?))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push((prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// MLIR's rules on the sequence of level formats.
fn check_order(levels: &[Level]) -> VResult<()> {
    for (l, lv) in levels.iter().enumerate() {
        match lv.format {
            LevelFormat::Singleton => {
                let prev = l.checked_sub(1).map(|p| levels[p].format);
                match prev {
                    Some(LevelFormat::Compressed | LevelFormat::LooseCompressed) => {}
                    Some(LevelFormat::Singleton) => {
                        if levels[l - 1].props.soa != lv.props.soa {
                            return Err(err(
                                lv.format_span,
                                "expected all singleton lvlTypes stored in the same memory layout (SoA vs AoS)",
                                "mixes `soa` with AoS in one COO region",
                            ));
                        }
                    }
                    _ => {
                        return Err(err(
                            lv.format_span,
                            "expected compressed or loose_compressed level before singleton level",
                            match prev {
                                None => "a singleton cannot be the first level".to_string(),
                                Some(f) => format!("follows a {} level", f.keyword()),
                            },
                        ));
                    }
                }
            }
            LevelFormat::Banded => {
                // heddle's skyline: exactly `(i, j) -> (i : dense, j : banded)`,
                // or the upper one, `(i, j) -> (j : dense, i : banded)`.
                let outer_dense = l == 1 && levels[0].format == LevelFormat::Dense;
                let lower = matches!((levels[0].expr, lv.expr), (LvlExpr::Dim(0), LvlExpr::Dim(1)));
                let upper = matches!((levels[0].expr, lv.expr), (LvlExpr::Dim(1), LvlExpr::Dim(0)));
                if !outer_dense || levels.len() != 2 || !(lower || upper) {
                    return Err(err(
                        lv.format_span,
                        "a banded (skyline) level is heddle's, for a matrix's columns below its dense rows (or rows below dense columns)",
                        "not `(i, j) -> (i : dense, j : banded)` or `(i, j) -> (j : dense, i : banded)`",
                    )
                    .with_note("write `map = (i, j) -> (i : dense, j : banded)`: each row stores its columns from its first nonzero through the diagonal; `(j : dense, i : banded)` stores each column's rows from its first nonzero through the diagonal (the upper triangle)"));
                }
            }
            LevelFormat::Batch => {
                if let Some(p) = levels[..l].iter().find(|p| p.format != LevelFormat::Batch) {
                    return Err(err(
                        lv.format_span,
                        "Batch lvlType can only be leading levels",
                        "batch after a non-batch level",
                    )
                    .with_note(format!("the earlier level is {}", p.format.keyword())));
                }
            }
            LevelFormat::NOutOfM { m, .. } => {
                if l + 1 != levels.len() {
                    return Err(err(
                        lv.format_span,
                        "expected n_out_of_m to be the last level type",
                        "levels follow it",
                    ));
                }
                if let Some(p) = levels[..l].iter().find(|p| p.format != LevelFormat::Dense) {
                    return Err(err(
                        p.format_span,
                        "expected all dense lvlTypes before a n_out_of_m level",
                        "not dense",
                    ));
                }
                match lv.expr {
                    LvlExpr::Mod(_, k) if k == u64::from(m) => {}
                    LvlExpr::Mod(_, k) => {
                        return Err(err(
                            lv.span,
                            "expected coefficients of Affine expressions to be equal to m of n_out_of_m level",
                            format!("blocks of {k}, but m is {m}"),
                        ));
                    }
                    _ => {
                        return Err(err(lv.span, "expected 1xm block structure for n_out_of_m level", "not `d mod m`")
                            .with_note(format!(
                                "write `j floordiv {m} : dense, j mod {m} : {}`",
                                lv.format.keyword()
                            )));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every dimension must be recoverable from the level coordinates: stored
/// whole once, or as a `floordiv K` / `mod K` pair with the same `K`.
fn check_invertible(levels: &[Level], dims: &[DimVar], map: &RawMap) -> VResult<()> {
    let name = |d: usize| dims[d].name.clone();
    let mut counters = 0;
    check_diff(levels, dims)?;
    let diff = levels.iter().find_map(|lv| match lv.expr {
        LvlExpr::Diff { plus, minus } => Some((plus, minus)),
        _ => None,
    });
    for (d, dv) in dims.iter().enumerate() {
        let mut whole = Vec::new();
        let mut divs = Vec::new();
        let mut mods = Vec::new();
        for (l, lv) in levels.iter().enumerate() {
            match lv.expr {
                LvlExpr::Dim(x) if x == d => whole.push(l),
                LvlExpr::FloorDiv(x, k) if x == d => divs.push((l, k)),
                LvlExpr::Mod(x, k) if x == d => mods.push((l, k)),
                _ => {}
            }
        }
        if whole.len() > 1 {
            return Err(err(
                levels[whole[1]].span,
                format!("dimension `{}` is stored by two levels ({} and {})", name(d), whole[0], whole[1]),
                "duplicate dimension",
            )
            .with_note("the dimension-to-level map must be a permutation (or a block map)"));
        }
        if !whole.is_empty() && (!divs.is_empty() || !mods.is_empty()) {
            let l = divs.first().or(mods.first()).map_or(0, |x| x.0);
            return Err(err(
                levels[l].span,
                format!("dimension `{}` is stored both whole and blocked", name(d)),
                "blocks a dimension that another level stores whole",
            ));
        }
        if divs.len() > 1 || mods.len() > 1 {
            let l = if divs.len() > 1 { divs[1].0 } else { mods[1].0 };
            return Err(err(
                levels[l].span,
                format!("dimension `{}` is blocked twice", name(d)),
                "a second block level",
            ));
        }
        match (divs.first(), mods.first()) {
            (Some(&(_, a)), Some(&(ml, b))) if a != b => {
                return Err(err(
                    levels[ml].span,
                    format!("block sizes of dimension `{}` differ: floordiv {a} but mod {b}", name(d)),
                    "the map is not invertible",
                ));
            }
            (Some(&(l, k)), None) => {
                return Err(err(
                    levels[l].span,
                    format!("`{} floordiv {k}` has no matching `{} mod {k}` level", name(d), name(d)),
                    "the map is not invertible",
                )
                .with_note("the coordinate within the block is lost"));
            }
            (None, Some(&(l, k))) => {
                return Err(err(
                    levels[l].span,
                    format!("`{} mod {k}` has no matching `{} floordiv {k}` level", name(d), name(d)),
                    "the map is not invertible",
                ));
            }
            // Recovered through the difference level (checked by `check_diff`).
            (None, None) if whole.is_empty() && diff.is_some_and(|(a, b)| a == d || b == d) => {}
            (None, None) if whole.is_empty() => {
                return Err(err(
                    dv.span,
                    format!("dimension `{}` is not stored by any level", name(d)),
                    "the map cannot be inverted",
                )
                .with_note(format!(
                    "the levels are {}",
                    levels.iter().map(|l| format!("`{}`", show_lvl(l, dims))).collect::<Vec<_>>().join(", ")
                )));
            }
            _ => {}
        }
    }
    for lv in levels {
        if let LvlExpr::Counter { .. } = lv.expr {
            counters += 1;
            if counters > 1 {
                return Err(err(lv.span, "only one counting (ELL) level is supported", "second counter"));
            }
        }
    }
    if counters == 0
        && let Some((s, sp)) = map.symbols.first()
    {
        return Err(err(*sp, format!("symbol `{s}` is not used by any level"), "unused symbol")
            .with_note("symbols only serve ELL's counting form `c * K * i`"));
    }
    Ok(())
}

/// A difference level (DIA's offset `a - b`): at most one; on a level that
/// keeps its own coordinates buffer (compressed, loose_compressed, or a
/// `soa` singleton: the buffer holds signed coordinates, which an
/// array-of-structs buffer shared with unsigned ones could not); and exactly
/// one of `a`, `b` stored whole by another level, the other by no level
/// (then the map inverts: `a = offset + b`, or `b = a - offset`).
fn check_diff(levels: &[Level], dims: &[DimVar]) -> VResult<()> {
    let name = |d: usize| dims[d].name.clone();
    let mut seen: Option<usize> = None;
    for (l, lv) in levels.iter().enumerate() {
        let LvlExpr::Diff { plus, minus } = lv.expr else { continue };
        if let Some(first) = seen {
            return Err(err(lv.span, "only one difference (DIA offset) level is supported", "second difference")
                .with_note(format!("level {first} is already a difference")));
        }
        seen = Some(l);
        let aos_head = matches!(lv.format, LevelFormat::Compressed | LevelFormat::LooseCompressed)
            && levels.get(l + 1).is_some_and(|n| n.format == LevelFormat::Singleton && !n.props.soa);
        match lv.format {
            LevelFormat::Compressed | LevelFormat::LooseCompressed if !aos_head => {}
            LevelFormat::Singleton if lv.props.soa => {}
            f => {
                let why = if aos_head || f == LevelFormat::Singleton {
                    "its coordinates would share an array-of-structs buffer with unsigned ones".to_string()
                } else {
                    format!("a {} level stores no coordinates", f.keyword())
                };
                return Err(err(
                    lv.format_span,
                    format!("a difference level (`{} - {}`) must store its signed coordinates in a buffer of its own", name(plus), name(minus)),
                    why,
                )
                .with_note("make it `compressed` (DIA: `(j - i : compressed, i : dense)`), `loose_compressed`, or a `singleton(soa)`"));
            }
        }
        let whole = |d: usize| levels.iter().filter(|o| o.expr == LvlExpr::Dim(d)).count();
        for (lx, o) in levels.iter().enumerate() {
            if let LvlExpr::FloorDiv(d, _) | LvlExpr::Mod(d, _) | LvlExpr::Counter { dim: d, .. } = o.expr
                && (d == plus || d == minus)
            {
                return Err(err(
                    o.span,
                    format!(
                        "dimension `{}` is both in the difference `{} - {}` and {}",
                        name(d),
                        name(plus),
                        name(minus),
                        if matches!(o.expr, LvlExpr::Counter { .. }) { "counted" } else { "blocked" }
                    ),
                    format!("level {lx}"),
                )
                .with_note("a difference level's dimensions may only be stored whole"));
            }
        }
        match (whole(plus), whole(minus)) {
            (1, 0) | (0, 1) => {}
            (0, 0) => {
                return Err(err(
                    lv.span,
                    format!("neither `{}` nor `{}` is stored whole by another level", name(plus), name(minus)),
                    "the map cannot be inverted",
                )
                .with_note(format!(
                    "store `{m}` (or `{p}`) whole as well, as DIA does: `{p} - {m} : compressed, {m} : dense`",
                    p = name(plus),
                    m = name(minus)
                )));
            }
            _ => {
                return Err(err(
                    lv.span,
                    format!(
                        "both `{}` and `{}` are stored whole by other levels, so the difference is redundant",
                        name(plus),
                        name(minus)
                    ),
                    "one of them must be recovered from the difference",
                ));
            }
        }
    }
    Ok(())
}

/// The level expression as text, in the encoding's dimension names.
pub(crate) fn show_lvl(l: &Level, dims: &[DimVar]) -> String {
    let n = |d: usize| dims.get(d).map_or_else(|| format!("d{d}"), |v| v.name.to_string());
    match l.expr {
        LvlExpr::Dim(d) => n(d),
        LvlExpr::FloorDiv(d, k) => format!("{} floordiv {k}", n(d)),
        LvlExpr::Mod(d, k) => format!("{} mod {k}", n(d)),
        LvlExpr::Counter { dim, slices } => format!("c * {slices} * {}", n(dim)),
        LvlExpr::Diff { plus, minus } => format!("{} - {}", n(plus), n(minus)),
    }
}

/// A linear form `Σ coeff·var + const`, for comparing inverse expressions.
fn linear(e: &AExpr) -> Option<(BTreeMap<Name, i64>, i64)> {
    match &e.kind {
        AKind::Var(n) => Some((BTreeMap::from([(n.clone(), 1)]), 0)),
        AKind::Const(c) => Some((BTreeMap::new(), *c)),
        AKind::Neg(a) => linear(a).map(|(m, c)| (m.into_iter().map(|(k, v)| (k, -v)).collect(), -c)),
        AKind::Bin(op @ (ABin::Add | ABin::Sub), a, b) => {
            let (mut ma, ca) = linear(a)?;
            let (mb, cb) = linear(b)?;
            let s = if *op == ABin::Add { 1 } else { -1 };
            for (k, v) in mb {
                *ma.entry(k).or_insert(0) += s * v;
            }
            ma.retain(|_, v| *v != 0);
            Some((ma, ca + s * cb))
        }
        AKind::Bin(ABin::Mul, a, b) => {
            let (ma, ca) = linear(a)?;
            let (mb, cb) = linear(b)?;
            let (m, c, k) = if ma.is_empty() {
                (mb, cb, ca)
            } else if mb.is_empty() {
                (ma, ca, cb)
            } else {
                return None;
            };
            Some((m.into_iter().map(|(n, v)| (n, v * k)).filter(|(_, v)| *v != 0).collect(), c * k))
        }
        _ => None,
    }
}

/// `{ib, jb, ii, jj}(i = ib * 2 + ii, ...)`: the given inverse must be the one
/// the level map implies.
fn check_inverse_exprs(map: &RawMap, levels: &[Level], dims: &[DimVar]) -> VResult<()> {
    let given: Vec<_> = map.dims.iter().filter_map(|d| d.inverse.as_ref().map(|e| (d, e))).collect();
    if given.is_empty() {
        return Ok(());
    }
    if given.len() != map.dims.len() {
        let missing = map.dims.iter().find(|d| d.inverse.is_none()).map_or(map.span, |d| d.span);
        return Err(err(missing, "either every dimension or none gives its expression", "no `= ...` here"));
    }
    let names: Vec<Name> = match levels.iter().map(|l| l.name.clone()).collect::<Option<Vec<_>>>() {
        Some(n) => n,
        None => {
            return Err(err(
                map.span,
                "dimension expressions need named levels",
                "write `{l0, l1}` before the dimensions",
            ));
        }
    };
    for (d, (rd, e)) in given.iter().enumerate() {
        let mut expected: BTreeMap<Name, i64> = BTreeMap::new();
        let mut text = Vec::new();
        for (l, lv) in levels.iter().enumerate() {
            match lv.expr {
                LvlExpr::Dim(x) | LvlExpr::Mod(x, _) if x == d => {
                    expected.insert(names[l].clone(), 1);
                    text.push(names[l].to_string());
                }
                LvlExpr::FloorDiv(x, k) if x == d => {
                    expected.insert(names[l].clone(), k as i64);
                    text.insert(0, format!("{} * {k}", names[l]));
                }
                // The dimension not stored whole comes back through the difference.
                LvlExpr::Diff { plus, minus }
                    if (plus == d || minus == d) && !levels.iter().any(|o| o.expr == LvlExpr::Dim(d)) =>
                {
                    let other = if plus == d { minus } else { plus };
                    if let Some(w) = levels.iter().position(|o| o.expr == LvlExpr::Dim(other)) {
                        if plus == d {
                            expected.insert(names[l].clone(), 1);
                            expected.insert(names[w].clone(), 1);
                            text.push(format!("{} + {}", names[l], names[w]));
                        } else {
                            expected.insert(names[l].clone(), -1);
                            expected.insert(names[w].clone(), 1);
                            text.push(format!("{} - {}", names[w], names[l]));
                        }
                    }
                }
                _ => {}
            }
        }
        let ok = linear(e).is_some_and(|(m, c)| c == 0 && m == expected);
        if !ok {
            return Err(err(
                e.span,
                format!("the expression for dimension `{}` does not invert the level map", rd.name),
                format!("expected `{}`", text.join(" + ")),
            )
            .with_note(format!("found `{} = {}`", dims[d].name, show(e))));
        }
    }
    Ok(())
}

//! Extraction: the cheapest program of an e-class under a cost model.
//!
//! egg's `Extractor` picks one best node per e-class, independent of where
//! the class is used. The `parallel` model needs context — `mapLocal` is
//! only valid inside `mapWorkgroup`, no parallel map inside another — so
//! costs here are computed per (class, context) by a fixpoint over all
//! nodes. Every node costs at least 1 and a node's cost includes its
//! children's, so a chosen term never refers back to itself.

use super::analysis::ProgGraph;
use super::lang::Prog;
use egg::{Id, Language, RecExpr};
use std::collections::HashMap;
use std::str::FromStr;

/// A cost model for extraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CostKind {
    /// Number of nodes.
    Size,
    /// Height of the tree, then size.
    Depth,
    /// Lowered and parallel: unlowered `map`/`reduce` cost 10, `mapGlobal`
    /// and `mapLocal` 1, `mapSeq` 2 (8 outside every parallel map), `mapWorkgroup` 3, placement 2; a
    /// parallel map where OpenCL nesting does not allow it costs 1000.
    Parallel,
}

impl CostKind {
    /// Every model, by name.
    pub const ALL: [(&'static str, CostKind); 3] =
        [("size", CostKind::Size), ("depth", CostKind::Depth), ("parallel", CostKind::Parallel)];
}

impl FromStr for CostKind {
    type Err = String;
    fn from_str(s: &str) -> Result<CostKind, String> {
        CostKind::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, k)| *k)
            .ok_or_else(|| format!("unknown cost model `{s}` (expected size, depth or parallel)"))
    }
}

/// Where a term stands, for the `parallel` model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ctx {
    /// Outside every map: `mapGlobal`/`mapWorkgroup` allowed.
    Top,
    /// Directly inside `mapWorkgroup`: `mapLocal` allowed.
    Workgroup,
    /// Inside a parallel or sequential map: only sequential maps.
    Inner,
}

/// What a node does to the `parallel` model.
enum Role {
    /// Applies a map-family primitive to its function (the child at index 1).
    MapFn(&'static str),
    Other,
}

fn role(g: &ProgGraph, n: &Prog) -> Role {
    let Prog::App(_, [f, x]) = n else { return Role::Other };
    let Some(call) = &g[*f].data.call else { return Role::Other };
    let prim: &'static str = match call.prim.as_str() {
        "map" => "map",
        "mapSeq" | "mapPar" => "mapSeq",
        "mapGlobal" => "mapGlobal",
        "mapWorkgroup" => "mapWorkgroup",
        "mapLocal" => "mapLocal",
        _ => return Role::Other,
    };
    let optional_dim = matches!(prim, "mapGlobal" | "mapWorkgroup" | "mapLocal");
    let function_arg = g[*x].data.nat.is_none()
        && (call.args == 0 || (optional_dim && call.args == 1 && call.first_nat.is_some()));
    if function_arg { Role::MapFn(prim) } else { Role::Other }
}

/// The cost of a parallel map placed where OpenCL does not allow it.
const PENALTY: u64 = 1000;

fn leaf_cost(n: &Prog, g: &ProgGraph) -> u64 {
    if let Prog::Var([s]) = n {
        match g[*s].data.sym.map(|s| s.as_str()) {
            Some("map" | "reduce") => return 10,
            Some("mapSeq" | "toLocal" | "toPrivate" | "toGlobal") => return 2,
            Some("mapWorkgroup") => return 3,
            _ => {}
        }
    }
    1
}

struct Model<'a> {
    g: &'a ProgGraph,
    kind: CostKind,
}

impl Model<'_> {
    /// The node's own cost in `ctx` and its children's contexts; `None`
    /// where the node is not allowed.
    fn node(&self, n: &Prog, ctx: Ctx) -> Option<(u64, Vec<Ctx>)> {
        let same = vec![ctx; n.children().len()];
        if self.kind != CostKind::Parallel {
            return Some((1, same));
        }
        let mut kids = same;
        let mut own = leaf_cost(n, self.g);
        if let Role::MapFn(prim) = role(self.g, n) {
            // A map where OpenCL does not allow it costs a penalty rather
            // than being excluded: programs written that way still extract.
            let (allowed, inner) = match (prim, ctx) {
                ("mapGlobal", Ctx::Top) => (true, Ctx::Inner),
                ("mapWorkgroup", Ctx::Top) => (true, Ctx::Workgroup),
                // Nested mapLocal: one per OpenCL dimension.
                ("mapLocal", Ctx::Workgroup) => (true, Ctx::Workgroup),
                ("mapGlobal" | "mapWorkgroup" | "mapLocal", _) => (false, Ctx::Inner),
                _ => (true, Ctx::Inner),
            };
            if !allowed {
                own = own.saturating_add(PENALTY);
            }
            // Outside every parallel map, a sequential map runs on one work-item.
            if prim == "mapSeq" && ctx == Ctx::Top {
                own = own.saturating_add(6);
            }
            kids[1] = inner;
        }
        Some((own, kids))
    }

    fn combine(&self, own: u64, kids: &[u64]) -> u64 {
        match self.kind {
            // Height first, size as the tie-break (one key keeps it a total order).
            CostKind::Depth => {
                let h = kids.iter().map(|c| c >> 32).max().unwrap_or(0) + 1;
                let s = kids.iter().fold(own, |a, c| a.saturating_add(c & 0xffff_ffff));
                (h << 32) | s.min(0xffff_ffff)
            }
            _ => kids.iter().fold(own, |a, c| a.saturating_add(*c)),
        }
    }
}

/// The best term of `root` under `kind`, with its cost; `None` when no term
/// is allowed (cannot happen for a class holding a well-formed program).
pub fn extract(g: &ProgGraph, root: Id, kind: CostKind) -> Option<(RecExpr<Prog>, u64)> {
    let model = Model { g, kind };
    let ctxs: &[Ctx] = if kind == CostKind::Parallel { &[Ctx::Top, Ctx::Workgroup, Ctx::Inner] } else { &[Ctx::Top] };
    let mut best: HashMap<(Id, Ctx), (u64, usize)> = HashMap::new();
    let mut classes: Vec<Id> = g.classes().map(|c| c.id).collect();
    classes.sort();
    // Bellman-Ford style: costs only decrease, and are bounded below.
    loop {
        let mut changed = false;
        for &c in &classes {
            for &ctx in ctxs {
                for (i, n) in g[c].nodes.iter().enumerate() {
                    let Some((own, kid_ctx)) = model.node(n, ctx) else { continue };
                    let mut kids = Vec::with_capacity(kid_ctx.len());
                    let ok = n.children().iter().zip(&kid_ctx).all(|(k, kc)| match best.get(&(g.find(*k), *kc)) {
                        Some((cost, _)) => {
                            kids.push(*cost);
                            true
                        }
                        None => false,
                    });
                    if !ok {
                        continue;
                    }
                    let cost = model.combine(own, &kids);
                    if best.get(&(c, ctx)).is_none_or(|(old, _)| cost < *old) {
                        best.insert((c, ctx), (cost, i));
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    let root = g.find(root);
    let cost = best.get(&(root, Ctx::Top))?.0;
    let mut out = RecExpr::default();
    let mut memo = HashMap::new();
    build(g, &model, &best, root, Ctx::Top, &mut out, &mut memo)?;
    Some((out, cost))
}

fn build(
    g: &ProgGraph,
    model: &Model,
    best: &HashMap<(Id, Ctx), (u64, usize)>,
    class: Id,
    ctx: Ctx,
    out: &mut RecExpr<Prog>,
    memo: &mut HashMap<(Id, Ctx), Id>,
) -> Option<Id> {
    if let Some(id) = memo.get(&(class, ctx)) {
        return Some(*id);
    }
    let (_, i) = best.get(&(class, ctx))?;
    let n = &g[class].nodes[*i];
    let (_, kid_ctx) = model.node(n, ctx)?;
    let mut n = n.clone();
    for (k, kc) in n.children_mut().iter_mut().zip(kid_ctx) {
        *k = build(g, model, best, g.find(*k), kc, out, memo)?;
    }
    let id = out.add(n);
    memo.insert((class, ctx), id);
    Some(id)
}

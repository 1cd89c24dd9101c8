//! Extraction: the cheapest program of an e-class under a cost model.
//!
//! egg's `Extractor` picks one best node per e-class, independent of where
//! the class is used. Here a node's cost may depend on its *context* (the
//! `parallel` model: `mapLocal` only inside `mapWorkgroup`, each local
//! dimension once, no parallel map inside another) and a term may have to
//! satisfy a *goal* (a sketch, [`super::sketch`]). So extraction works on
//! a hypergraph whose vertices are (e-class, context, goal) and whose
//! edges are an e-node with a context and a goal for each child; a term is
//! a derivation in it. Costs are found with Knuth's generalisation of
//! Dijkstra's algorithm (a term costs more than each of its sub-terms,
//! since every node costs at least 1), so a chosen term never refers back
//! to itself. Only vertices reachable from the root are built.

use super::analysis::ProgGraph;
use super::costs::{Combine, CostModel, Place};
use super::lang::Prog;
use egg::{Id, Language, RecExpr};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::str::FromStr;

/// The built-in cost models, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CostKind {
    /// Number of nodes.
    Size,
    /// Height of the tree, then size.
    Depth,
    /// Lowered and parallel: the table `parallel.costs` (unlowered
    /// `map` 10, `mapGlobal`/`mapLocal` 1, `mapSeq` 2 and 8 outside every
    /// parallel map, `reduce` 1 and `reduceSeq` 2, …; a parallel map where
    /// OpenCL nesting does not allow it 1000).
    Parallel,
    /// For the CPU backend: the table `cpu.costs` (a plain `map` is a
    /// parallel loop and costs 1; OpenCL's `mapGlobal`/`mapWorkgroup`/
    /// `mapLocal` run sequentially there and cost 20).
    Cpu,
}

impl CostKind {
    /// Every model, by name.
    pub const ALL: [(&'static str, CostKind); 4] = [
        ("size", CostKind::Size),
        ("depth", CostKind::Depth),
        ("parallel", CostKind::Parallel),
        ("cpu", CostKind::Cpu),
    ];
}

impl FromStr for CostKind {
    type Err = String;
    fn from_str(s: &str) -> Result<CostKind, String> {
        CostKind::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, k)| *k)
            .ok_or_else(|| format!("unknown cost model `{s}` (expected size, depth, parallel or cpu)"))
    }
}

impl From<CostKind> for CostModel {
    fn from(k: CostKind) -> CostModel {
        match k {
            CostKind::Size => CostModel::size(),
            CostKind::Depth => CostModel::depth(),
            CostKind::Parallel => CostModel::parallel(),
            CostKind::Cpu => CostModel::cpu(),
        }
    }
}

/// Where a term stands, for contextual models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ctx {
    /// Outside every map: `mapGlobal`/`mapWorkgroup` allowed.
    Top,
    /// Outside every map, and what a map there reads (through views such
    /// as `split`): a map here makes an intermediate array.
    Feed,
    /// Inside `mapWorkgroup`, and inside the `mapLocal`s of the dimensions
    /// in the mask: `mapLocal` of another dimension allowed.
    Workgroup(u8),
    /// Inside a parallel or sequential map: only sequential maps.
    Inner,
}

impl Ctx {
    fn place(self) -> Place {
        match self {
            Ctx::Top | Ctx::Feed => Place::Top,
            Ctx::Workgroup(_) => Place::Workgroup,
            Ctx::Inner => Place::Inner,
        }
    }
}

/// A map-family primitive applied to its function: (primitive, dimension).
fn map_role(g: &ProgGraph, n: &Prog) -> Option<(&'static str, u32)> {
    let Prog::App(_, [f, x]) = n else { return None };
    let call = g[*f].data.call.as_ref()?;
    let prim: &'static str = match call.prim.as_str() {
        "map" => "map",
        "mapSeq" => "mapSeq",
        "mapPar" => "mapPar",
        "mapGlobal" => "mapGlobal",
        "mapWorkgroup" => "mapWorkgroup",
        "mapLocal" => "mapLocal",
        _ => return None,
    };
    let optional_dim = matches!(prim, "mapGlobal" | "mapWorkgroup" | "mapLocal");
    if g[*x].data.nat.is_some() {
        return None;
    }
    if call.args == 0 {
        return Some((prim, 0));
    }
    if optional_dim && call.args == 1 {
        let d = call.first_nat.as_ref()?.const_value()?;
        return u32::try_from(d).ok().filter(|d| *d < 3).map(|d| (prim, d));
    }
    None
}

/// A map-family primitive applied to its function and its data: this node
/// applies `map(f)` (or `mapGlobal(d, f)`) to the array in its child 1.
fn map_application(g: &ProgGraph, n: &Prog) -> bool {
    let Prog::App(_, [f, _]) = n else { return false };
    let Some(call) = &g[*f].data.call else { return false };
    let is_map = matches!(call.prim.as_str(), "map" | "mapSeq" | "mapPar" | "mapGlobal" | "mapWorkgroup" | "mapLocal");
    let dim = matches!(call.prim.as_str(), "mapGlobal" | "mapWorkgroup" | "mapLocal") && call.first_nat.is_some();
    is_map && (call.args == 1 || (dim && call.args == 2))
}

/// What extraction must reach besides low cost: goal 0 is "anything";
/// others are a sketch's states ([`super::sketch`]).
pub trait Goals {
    /// The ways node `n` can meet `goal`, each a goal for every child
    /// (empty: it cannot).
    fn alternatives(&self, g: &ProgGraph, n: &Prog, goal: u16) -> Vec<Vec<u16>>;
    /// The goal the root must meet.
    fn root(&self) -> u16;
}

/// No goal: every term will do.
pub struct Free;

impl Goals for Free {
    fn alternatives(&self, _: &ProgGraph, n: &Prog, _: u16) -> Vec<Vec<u16>> {
        vec![vec![0; n.children().len()]]
    }
    fn root(&self) -> u16 {
        0
    }
}

/// A vertex of the extraction hypergraph.
pub type Vertex = (Id, Ctx, u16);

/// A way to build a vertex: one of its class's nodes, with children.
#[derive(Clone, Debug)]
pub struct Edge {
    /// The node's index in its class.
    pub node: usize,
    /// The node's own cost.
    pub own: u64,
    /// The child vertices, one per child of the node.
    pub kids: Vec<usize>,
}

/// The extraction hypergraph reachable from a root, with best costs.
pub struct Hypergraph<'a> {
    /// The e-graph.
    pub g: &'a ProgGraph,
    /// The cost model.
    pub model: &'a CostModel,
    /// Vertices; index 0 is the root.
    pub vertices: Vec<Vertex>,
    /// Each vertex's edges.
    pub edges: Vec<Vec<Edge>>,
    /// Each vertex's best cost and edge, where it has a term.
    pub best: Vec<Option<(u64, usize)>>,
}

impl CostModel {
    /// A node's own cost where no context is known (the outermost).
    pub fn own_cost(&self, g: &ProgGraph, n: &Prog) -> u64 {
        self.node(g, n, Ctx::Top).0
    }

    /// A node's own cost in `ctx`, and its children's contexts.
    pub fn node(&self, g: &ProgGraph, n: &Prog, ctx: Ctx) -> (u64, Vec<Ctx>) {
        let mut kids = vec![ctx; n.children().len()];
        let Some(table) = &self.table else { return (1, kids) };
        let mut own = table.node;
        if let Prog::Var([s]) = n
            && let Some(name) = g[*s].data.sym
            && heddle_ir::prims::lookup(name.as_str()).is_some()
        {
            own = table.prim(name.as_str(), ctx.place());
        }
        let applies_map = map_application(g, n);
        match ctx {
            Ctx::Feed if applies_map => own = own.saturating_add(table.intermediate),
            // A value fed to a map flows on through views' data arguments.
            Ctx::Feed if matches!(n, Prog::App(..)) => kids[0] = Ctx::Top,
            Ctx::Feed => kids.iter_mut().for_each(|k| *k = Ctx::Top),
            _ => {}
        }
        if applies_map && matches!(ctx, Ctx::Top | Ctx::Feed) {
            kids[0] = Ctx::Top;
            kids[1] = Ctx::Feed;
        }
        if let Some((prim, dim)) = map_role(g, n) {
            let bit = 1u8 << dim;
            // A map where OpenCL does not allow it costs a penalty rather
            // than being excluded: programs written that way still extract.
            let (allowed, inner) = match (prim, ctx) {
                ("mapGlobal", Ctx::Top | Ctx::Feed) => (true, Ctx::Inner),
                ("mapWorkgroup", Ctx::Top | Ctx::Feed) => (true, Ctx::Workgroup(0)),
                ("mapLocal", Ctx::Workgroup(mask)) if mask & bit == 0 => (true, Ctx::Workgroup(mask | bit)),
                ("mapGlobal" | "mapWorkgroup" | "mapLocal", _) => (false, Ctx::Inner),
                _ => (true, Ctx::Inner),
            };
            if !allowed {
                own = own.saturating_add(table.misplaced);
            }
            kids[1] = inner;
        }
        (own, kids)
    }

    fn combine(&self, own: u64, kids: impl Iterator<Item = u64>) -> u64 {
        match self.combine {
            // Height first, size as the tie-break (one key keeps it a total order).
            Combine::Depth => {
                let (mut h, mut s) = (0, own);
                for c in kids {
                    h = h.max(c >> 32);
                    s = s.saturating_add(c & 0xffff_ffff);
                }
                ((h + 1) << 32) | s.min(0xffff_ffff)
            }
            Combine::Sum => kids.fold(own, u64::saturating_add),
        }
    }
}

impl<'a> Hypergraph<'a> {
    /// Builds the vertices reachable from `(root, Top, goals.root())` and
    /// finds each one's cheapest term.
    pub fn new(g: &'a ProgGraph, root: Id, model: &'a CostModel, goals: &dyn Goals) -> Hypergraph<'a> {
        let mut h = Hypergraph { g, model, vertices: Vec::new(), edges: Vec::new(), best: Vec::new() };
        let mut index: HashMap<Vertex, usize> = HashMap::new();
        let start = (g.find(root), Ctx::Top, goals.root());
        index.insert(start, 0);
        h.vertices.push(start);
        let mut next = 0;
        while next < h.vertices.len() {
            let (class, ctx, goal) = h.vertices[next];
            let mut out = Vec::new();
            let nodes = &g[class].nodes;
            for (i, n) in nodes.iter().enumerate() {
                // The same node spelled another way (`f(x)` and `x :>> f`) adds no term.
                if nodes[..i].iter().any(|m| m.matches(n) && m.children() == n.children()) {
                    continue;
                }
                let (own, kid_ctx) = model.node(g, n, ctx);
                let mut alts = goals.alternatives(g, n, goal);
                alts.sort_unstable();
                alts.dedup();
                for alt in alts {
                    let kids = n
                        .children()
                        .iter()
                        .zip(kid_ctx.iter().zip(&alt))
                        .map(|(c, (kc, kg))| {
                            let v = (g.find(*c), *kc, *kg);
                            *index.entry(v).or_insert_with(|| {
                                h.vertices.push(v);
                                h.vertices.len() - 1
                            })
                        })
                        .collect();
                    out.push(Edge { node: i, own, kids });
                }
            }
            h.edges.push(out);
            next += 1;
        }
        h.solve();
        h
    }

    /// Knuth's algorithm: vertices are settled cheapest first; an edge is
    /// priced once all its children are settled.
    fn solve(&mut self) {
        let n = self.vertices.len();
        self.best = vec![None; n];
        let mut waiting: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
        let mut pending: Vec<Vec<usize>> = Vec::with_capacity(n);
        let mut heap = BinaryHeap::new();
        for (v, es) in self.edges.iter().enumerate() {
            pending.push(es.iter().map(|e| e.kids.len()).collect());
            for (k, e) in es.iter().enumerate() {
                for c in &e.kids {
                    waiting[*c].push((v, k));
                }
                if e.kids.is_empty() {
                    heap.push(Reverse((self.model.combine(e.own, std::iter::empty()), v, k)));
                }
            }
        }
        while let Some(Reverse((cost, v, k))) = heap.pop() {
            if self.best[v].is_some() {
                continue;
            }
            self.best[v] = Some((cost, k));
            for &(p, pk) in &waiting[v] {
                pending[p][pk] -= 1;
                if pending[p][pk] == 0 && self.best[p].is_none() {
                    let e = &self.edges[p][pk];
                    let c = self.model.combine(e.own, e.kids.iter().map(|c| self.best[*c].map_or(u64::MAX, |b| b.0)));
                    heap.push(Reverse((c, p, pk)));
                }
            }
        }
    }

    /// The cost of the cheapest term of the root.
    pub fn cost(&self) -> Option<u64> {
        self.best.first().copied().flatten().map(|b| b.0)
    }

    /// The cheapest term of the root.
    pub fn term(&self) -> Option<RecExpr<Prog>> {
        let mut out = RecExpr::default();
        let mut memo = HashMap::new();
        self.build(0, &mut out, &mut memo)?;
        Some(out)
    }

    fn build(&self, v: usize, out: &mut RecExpr<Prog>, memo: &mut HashMap<usize, Id>) -> Option<Id> {
        if let Some(id) = memo.get(&v) {
            return Some(*id);
        }
        let (_, k) = self.best[v]?;
        let e = &self.edges[v][k];
        let mut node = self.g[self.vertices[v].0].nodes[e.node].clone();
        for (slot, kid) in node.children_mut().iter_mut().zip(&e.kids) {
            *slot = self.build(*kid, out, memo)?;
        }
        let id = out.add(node);
        memo.insert(v, id);
        Some(id)
    }
}

/// The best term of `root` under `model` meeting `goals`, with its cost;
/// `None` when no term meets them.
pub fn extract(g: &ProgGraph, root: Id, model: &CostModel, goals: &dyn Goals) -> Option<(RecExpr<Prog>, u64)> {
    let h = Hypergraph::new(g, root, model, goals);
    Some((h.term()?, h.cost()?))
}

//! Writing an e-graph out: JSON close to
//! [egraph-serialize](https://github.com/egraphs-good/egraph-serialize)
//! (what egglog and the extraction gym read), and Graphviz.
//!
//! JSON form (`"schema": "heddle.egraph/1"`, documented in
//! `docs/schemas/egraph.json`):
//!
//! ```text
//! { "schema": "heddle.egraph/1",
//!   "nodes": { "C.i": { "op": …, "children": ["D.0", …], "eclass": "C", "cost": 1.0 } },
//!   "root_eclasses": ["R"],
//!   "class_data": { "C": { "free": […], "nat": …, "shape": […], "omitted": false } },
//!   "truncated": null | { "classes": …, "nodes": …, "classes_kept": …, "nodes_kept": …, "limit": … } }
//! ```
//!
//! Node `C.i` is the i-th e-node of e-class `C`; as in egraph-serialize a
//! child names the first node of its class (`D.0`), standing for the class.
//! Classes are written breadth-first from the root. When the e-graph has
//! more e-nodes than the limit, the rest is cut: a class that is referred
//! to but cut is written as one node with op `…` and no children
//! (`"omitted": true` in its class data), so the file stays well formed, and
//! `truncated` says how much was left out. The DOT form draws each class as
//! a dotted cluster (egg's layout) and says the same in its label.

use super::analysis::ProgGraph;
use super::costs::CostModel;
use super::lang::Prog;
use egg::{Id, Language};
use serde_json::{Map, Value as J, json};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write;

/// How much of an e-graph was written.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Truncation {
    /// E-classes in the e-graph (reachable from the root).
    pub classes: usize,
    /// E-nodes in them.
    pub nodes: usize,
    /// E-classes written in full.
    pub classes_kept: usize,
    /// E-nodes written.
    pub nodes_kept: usize,
    /// The limit on e-nodes.
    pub limit: usize,
}

/// The classes to write, breadth-first from `root`, and how many are kept
/// whole under `limit` e-nodes (at least the root's class).
fn layout(g: &ProgGraph, root: Id, limit: usize) -> (Vec<Id>, usize, Option<Truncation>) {
    let root = g.find(root);
    let mut order = vec![root];
    let mut seen: HashMap<Id, usize> = HashMap::from([(root, 0)]);
    let mut queue = VecDeque::from([root]);
    while let Some(c) = queue.pop_front() {
        for n in &g[c].nodes {
            for k in n.children() {
                let k = g.find(*k);
                if let std::collections::hash_map::Entry::Vacant(e) = seen.entry(k) {
                    e.insert(order.len());
                    order.push(k);
                    queue.push_back(k);
                }
            }
        }
    }
    let total: usize = order.iter().map(|c| g[*c].nodes.len()).sum();
    let mut kept = 0;
    let mut nodes = 0;
    for c in &order {
        let n = g[*c].nodes.len();
        if kept > 0 && nodes + n > limit {
            break;
        }
        nodes += n;
        kept += 1;
    }
    let truncation = (kept < order.len()).then_some(Truncation {
        classes: order.len(),
        nodes: total,
        classes_kept: kept,
        nodes_kept: nodes,
        limit,
    });
    (order, kept, truncation)
}

/// A node's operator, as egg prints it (`app`, `fun`, a name, a literal).
fn op(n: &Prog) -> String {
    n.to_string()
}

fn class_data(g: &ProgGraph, c: Id, omitted: bool) -> J {
    let d = &g[c].data;
    let mut m = Map::new();
    // Sorted by text: a symbol's own order is its interning order, which varies.
    let mut free: Vec<&str> = d.free.iter().map(|s| s.as_str()).collect();
    free.sort_unstable();
    m.insert("free".into(), json!(free));
    if let Some(n) = &d.nat {
        m.insert("nat".into(), json!(heddle_ir::printer::print_nat(n)));
    }
    if let Some(s) = &d.shape {
        m.insert("shape".into(), json!(s.iter().map(heddle_ir::printer::print_nat).collect::<Vec<_>>()));
    }
    if let Some(call) = &d.call {
        m.insert("call".into(), json!({ "prim": call.prim.as_str(), "args": call.args }));
    }
    m.insert("omitted".into(), json!(omitted));
    J::Object(m)
}

/// The e-graph as JSON (see the module docs), at most `limit` e-nodes.
pub fn to_json(g: &ProgGraph, root: Id, model: &CostModel, limit: usize) -> (J, Option<Truncation>) {
    let (order, kept, truncation) = layout(g, root, limit);
    let mut nodes = Map::new();
    let mut classes = Map::new();
    let kept_set: std::collections::HashSet<Id> = order[..kept].iter().copied().collect();
    let mut referenced_cut = Vec::new();
    for c in &order[..kept] {
        for (i, n) in g[*c].nodes.iter().enumerate() {
            let children: Vec<String> = n
                .children()
                .iter()
                .map(|k| {
                    let k = g.find(*k);
                    if !kept_set.contains(&k) && !referenced_cut.contains(&k) {
                        referenced_cut.push(k);
                    }
                    format!("{k}.0")
                })
                .collect();
            nodes.insert(format!("{c}.{i}"), json!({ "op": op(n), "children": children, "eclass": c.to_string(), "cost": model.own_cost(g, n) as f64 }));
        }
        classes.insert(c.to_string(), class_data(g, *c, false));
    }
    for c in referenced_cut {
        nodes.insert(format!("{c}.0"), json!({ "op": "…", "children": [], "eclass": c.to_string(), "cost": 0.0 }));
        classes.insert(c.to_string(), class_data(g, c, true));
    }
    let out = json!({
        "schema": "heddle.egraph/1",
        "nodes": nodes,
        "root_eclasses": [g.find(root).to_string()],
        "class_data": classes,
        "truncated": truncation,
    });
    (out, truncation)
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The e-graph as Graphviz DOT, at most `limit` e-nodes.
pub fn to_dot(g: &ProgGraph, root: Id, limit: usize) -> (String, Option<Truncation>) {
    let (order, kept, truncation) = layout(g, root, limit);
    let root = g.find(root);
    let mut s = String::from("digraph egraph {\n  compound=true\n  clusterrank=local\n");
    match &truncation {
        Some(t) => {
            let _ = writeln!(
                s,
                "  label=\"TRUNCATED: {} of {} e-classes ({} of {} e-nodes) written, limit {} e-nodes; dashed boxes are classes left out\"",
                t.classes_kept, t.classes, t.nodes_kept, t.nodes, t.limit
            );
        }
        None => s.push_str("  label=\"\"\n"),
    }
    let kept_set: std::collections::HashSet<Id> = order[..kept].iter().copied().collect();
    let mut cut = Vec::new();
    for c in &order[..kept] {
        let style = if *c == root { "style=\"dotted,bold\"" } else { "style=dotted" };
        let _ = writeln!(s, "  subgraph cluster_{c} {{\n    {style}\n    label=\"{c}\"");
        for (i, n) in g[*c].nodes.iter().enumerate() {
            let _ = writeln!(s, "    \"{c}.{i}\" [label=\"{}\"]", escape(&op(n)));
        }
        s.push_str("  }\n");
    }
    for c in &order[..kept] {
        for (i, n) in g[*c].nodes.iter().enumerate() {
            for (arg, k) in n.children().iter().enumerate() {
                let k = g.find(*k);
                if !kept_set.contains(&k) && !cut.contains(&k) {
                    cut.push(k);
                }
                // An edge into the class's cluster (its first node stands for it).
                let head = if k == *c { String::new() } else { format!(", lhead=cluster_{k}") };
                let _ = writeln!(s, "  \"{c}.{i}\" -> \"{k}.0\" [label={arg}{head}]");
            }
        }
    }
    for c in cut {
        let _ = writeln!(
            s,
            "  subgraph cluster_{c} {{\n    style=dashed\n    label=\"{c} (left out)\"\n    \"{c}.0\" [label=\"…\"]\n  }}"
        );
    }
    s.push_str("}\n");
    (s, truncation)
}

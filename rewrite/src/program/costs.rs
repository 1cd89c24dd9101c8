//! Cost models as data.
//!
//! A cost model prices each e-node; a term costs the sum of its nodes
//! (`size` and table models) or its height then its size (`depth`). A
//! *table* prices primitives by name and by where they stand, in a file of
//! one entry a line (the built-in `parallel` model is `parallel.costs`):
//!
//! ```text
//! # comment
//! node 1                  # every node the table does not name
//! map 10                  # a use of the primitive `map`, anywhere
//! mapSeq 8 at top         # … outside every parallel map
//! reduce 1 at inner       # … inside a map (contexts: top, workgroup, inner)
//! misplaced 1000          # a parallel map where OpenCL's nesting does not allow it
//! intermediate 20         # a top-level map whose result another top-level map reads
//! ```
//!
//! The context of a node is where the extracted program puts it: `top`
//! outside every map, `workgroup` directly inside `mapWorkgroup` or
//! `mapLocal` (where `mapLocal` may stand), `inner` inside any other map.
//! A later line for the same primitive and context replaces an earlier one.

use std::collections::HashMap;
use std::fmt;

/// Where a node stands, for a table's `at` clauses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    /// Outside every map.
    Top,
    /// Inside `mapWorkgroup` (or a `mapLocal` in one), where `mapLocal` may stand.
    Workgroup,
    /// Inside any other map.
    Inner,
}

impl Place {
    const ALL: [(&'static str, Place); 3] =
        [("top", Place::Top), ("workgroup", Place::Workgroup), ("inner", Place::Inner)];
    fn index(self) -> usize {
        self as usize
    }
}

/// Per-primitive costs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostTable {
    /// Cost of any node the table does not price.
    pub node: u64,
    /// A primitive's cost in each place (`None`: `node`).
    pub prims: HashMap<String, [Option<u64>; 3]>,
    /// Added to a parallel map placed where OpenCL does not allow it.
    pub misplaced: u64,
    /// Added to a map outside every map whose result another map outside
    /// every map reads: the array is stored and read back instead of fused.
    pub intermediate: u64,
}

impl CostTable {
    /// The cost of a use of `prim` at `place`.
    pub fn prim(&self, prim: &str, place: Place) -> u64 {
        self.prims.get(prim).and_then(|c| c[place.index()]).unwrap_or(self.node)
    }
}

/// How a term's cost is made of its nodes' costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// The sum of the nodes' costs.
    Sum,
    /// Height first, then the number of nodes.
    Depth,
}

/// A cost model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostModel {
    /// Its name (`size`, `depth`, `parallel`, or a cost file's name).
    pub name: String,
    /// How costs combine.
    pub combine: Combine,
    /// Per-primitive costs; without a table every node costs 1.
    pub table: Option<CostTable>,
}

/// The built-in `parallel` model's table.
pub const PARALLEL: &str = include_str!("parallel.costs");

/// The built-in `cpu` model's table.
pub const CPU: &str = include_str!("cpu.costs");

/// A located problem in a cost file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostError {
    /// 1-based line.
    pub line: usize,
    /// Byte offset in the file.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The largest cost a file may give: sums of many stay far from overflow.
const MAX_COST: u64 = 1 << 32;

/// Parses a cost file.
pub fn parse_table(text: &str) -> Result<CostTable, Vec<CostError>> {
    let mut table = CostTable { node: 1, prims: HashMap::new(), misplaced: 1000, intermediate: 0 };
    let mut errors = Vec::new();
    let mut start = 0;
    for (i, raw) in text.split('\n').enumerate() {
        let offset = start;
        start += raw.len() + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let lead = raw.len() - raw.trim_start().len();
        let err = |message: String| CostError { line: i + 1, offset: offset + lead, message };
        let words: Vec<&str> = line.split_whitespace().collect();
        let (name, cost, place) = match words.as_slice() {
            [name, cost] => (*name, *cost, None),
            [name, cost, "at", place] => match Place::ALL.iter().find(|(n, _)| n == place) {
                Some((_, p)) => (*name, *cost, Some(*p)),
                None => {
                    errors.push(err(format!("unknown place `{place}` (expected top, workgroup or inner)")));
                    continue;
                }
            },
            _ => {
                errors.push(err("expected `NAME COST` or `NAME COST at top|workgroup|inner`".into()));
                continue;
            }
        };
        let cost = match cost.parse::<u64>() {
            Ok(c) if (1..=MAX_COST).contains(&c) => c,
            _ => {
                errors.push(err(format!("`{cost}` is not a cost (a whole number from 1 to {MAX_COST})")));
                continue;
            }
        };
        match (name, place) {
            ("node", None) => table.node = cost,
            ("misplaced", None) => table.misplaced = cost,
            ("intermediate", None) => table.intermediate = cost,
            ("node" | "misplaced" | "intermediate", Some(_)) => errors.push(err(format!("`{name}` takes no place"))),
            (prim, _) if heddle_ir::prims::lookup(prim).is_none() => {
                errors.push(err(format!("`{prim}` is not a primitive (nor `node`, `misplaced` or `intermediate`)")))
            }
            (prim, place) => {
                let slot = table.prims.entry(prim.to_string()).or_insert([None; 3]);
                match place {
                    Some(p) => slot[p.index()] = Some(cost),
                    None => *slot = [Some(cost); 3],
                }
            }
        }
    }
    if errors.is_empty() { Ok(table) } else { Err(errors) }
}

impl CostModel {
    /// Every node costs 1; a term costs its size.
    pub fn size() -> CostModel {
        CostModel { name: "size".into(), combine: Combine::Sum, table: None }
    }

    /// The height of a term, then its size.
    pub fn depth() -> CostModel {
        CostModel { name: "depth".into(), combine: Combine::Depth, table: None }
    }

    /// The built-in `parallel` model (`parallel.costs`).
    pub fn parallel() -> CostModel {
        // The file is part of the crate and covered by tests; an error here is a bug.
        let table = parse_table(PARALLEL).unwrap_or_else(|e| panic!("parallel.costs: {e:?}"));
        CostModel { name: "parallel".into(), combine: Combine::Sum, table: Some(table) }
    }

    /// The built-in `cpu` model (`cpu.costs`), for the CPU backend.
    pub fn cpu() -> CostModel {
        let table = parse_table(CPU).unwrap_or_else(|e| panic!("cpu.costs: {e:?}"));
        CostModel { name: "cpu".into(), combine: Combine::Sum, table: Some(table) }
    }

    /// A table model read from a file's text.
    pub fn from_file(name: &str, text: &str) -> Result<CostModel, Vec<CostError>> {
        Ok(CostModel { name: name.into(), combine: Combine::Sum, table: Some(parse_table(text)?) })
    }

    /// Whether costs depend on where a node stands.
    pub fn contextual(&self) -> bool {
        self.table.is_some()
    }
}

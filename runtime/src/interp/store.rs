//! `(e : tensor<…, #ENC>)` in the interpreter: the value's entries in
//! storage order, checked (coordinates within their level, lists in order),
//! then the storage assembled by [`crate::sparse::result`], as compiled code's is.

use super::Env;
use crate::scalars::{Num, ScalarVec};
use crate::sparse::assemble::Buffers;
use crate::sparse::result::{Entries, assemble_result};
use crate::value::Value;
use heddle_ir::encoding::result::{Order, ResultPlan, Source, Store};
use heddle_ir::{Diagnostic, Span};
use std::rc::Rc;

struct Walk<'a> {
    plan: &'a ResultPlan,
    lvl_sizes: Vec<u64>,
    entry_levels: Vec<usize>,
    counts: Vec<u64>,
    entries: Entries,
    /// The coordinates of the current path, per level.
    path: Vec<u64>,
    span: Span,
}

impl Walk<'_> {
    fn fail(&self, m: String) -> Diagnostic {
        Diagnostic::new(self.span, m).with_label("stored here")
    }
    fn coordinate(&self, v: &Value, l: usize) -> Result<u64, Diagnostic> {
        let c = v.as_int().ok_or_else(|| self.fail("a coordinate is not an integer".into()))?;
        u64::try_from(c)
            .ok()
            .filter(|c| *c < self.lvl_sizes[l])
            .ok_or_else(|| self.fail(format!("{} (it is {c})", self.plan.range_message(l))))
    }
    /// Level `l` of the value `v` at dense position `g`.
    fn level(&mut self, v: &Value, l: usize, g: usize) -> Result<(), Diagnostic> {
        let Some(level) = self.plan.levels.get(l) else { return self.entry(v) };
        let items = |v: &Value| {
            v.as_array()
                .map(<[Value]>::to_vec)
                .ok_or_else(|| self.fail(format!("level {l} of the value is not an array")))
        };
        match &level.source {
            Source::Dense { .. } => {
                let xs = items(v)?;
                for (i, x) in xs.iter().enumerate() {
                    self.path[l] = i as u64;
                    self.level(x, l + 1, g * xs.len() + i)?;
                }
                Ok(())
            }
            Source::List { .. } => {
                let xs = items(v)?;
                self.counts[g] = xs.len() as u64;
                if let Some((_, n, m)) = self.plan.n_out_of_m().filter(|(k, n, _)| *k == l && xs.len() > *n as usize) {
                    return Err(self.fail(format!(
                        "{} (block {g} has {})",
                        self.plan.block_message(l, n, m),
                        xs.len()
                    )));
                }
                let mut last: Option<u64> = None;
                for x in xs.iter() {
                    let (c, child) = self.pair(x, l)?;
                    let in_order = match (self.plan.order(l), last) {
                        (_, None) | (Order::Any, _) => true,
                        (Order::Increasing, Some(p)) => c > p,
                        (Order::NonDecreasing, Some(p)) => c >= p,
                    };
                    if !in_order {
                        return Err(self.fail(format!(
                            "{} (coordinate {c} follows {})",
                            self.plan.order_message(l),
                            last.unwrap_or(0)
                        )));
                    }
                    last = Some(c);
                    self.path[l] = c;
                    self.level(&child, l + 1, g)?;
                }
                Ok(())
            }
            Source::Pair { .. } => {
                let (c, child) = self.pair(v, l)?;
                self.path[l] = c;
                self.level(&child, l + 1, g)
            }
        }
    }
    fn pair(&self, v: &Value, l: usize) -> Result<(u64, Value), Diagnostic> {
        match v {
            Value::Tuple(items) if items.len() == 2 => Ok((self.coordinate(&items[0], l)?, items[1].clone())),
            _ => Err(self.fail(format!("level {l} of the value is not a (coordinate, …) pair"))),
        }
    }
    /// One entry: its per-entry coordinates and its block of values.
    fn entry(&mut self, v: &Value) -> Result<(), Diagnostic> {
        for (k, &l) in self.entry_levels.iter().enumerate() {
            self.entries.coordinates[k].push(self.path[l]);
        }
        let mut flat = Vec::new();
        v.flatten_into(&mut flat);
        for x in flat {
            let n = Num::of_value(&x, self.plan.elem)
                .ok_or_else(|| self.fail(format!("a stored value is {x}, not a number")))?;
            if !self.entries.values.push_num(n) {
                return Err(self.fail(format!("a stored value is {x}, which does not fit in {}", self.plan.elem)));
            }
        }
        Ok(())
    }
}

/// A value with lists inside lists ([`ResultPlan::nested_lists`]), walked
/// depth first: the nodes of each level are met in storage order (each
/// level's in the order of their parents), so each level's positions,
/// coordinates and the values are appended as they come.
struct Nested<'a> {
    walk: Walk<'a>,
    positions: Vec<Option<Vec<u64>>>,
    coordinates: Vec<Option<Vec<u64>>>,
}

impl Nested<'_> {
    fn loose(&self, l: usize) -> bool {
        self.walk.plan.encoding.levels[l].format == heddle_ir::encoding::LevelFormat::LooseCompressed
    }
    /// Closes a node's children at level `l`, `n` of them, in its positions.
    fn close(&mut self, l: usize, n: u64) {
        let loose = self.loose(l);
        let crd_len = self.coordinates[l].as_ref().map_or(0, Vec::len) as u64;
        if let Some(pos) = self.positions[l].as_mut() {
            if loose {
                pos.push(crd_len - n);
            }
            pos.push(crd_len);
        }
    }
    /// Does `v`, the value at level `l`, hold a stored node below (a list
    /// element)? A level stored compressed keeps only such children.
    fn has_node(&self, v: &Value, l: usize) -> bool {
        match self.walk.plan.levels.get(l).map(|p| &p.source) {
            None | Some(Source::Pair { .. }) => true,
            Some(Source::List { .. }) => v.as_array().is_some_and(|xs| !xs.is_empty()),
            Some(Source::Dense { .. }) => v.as_array().is_some_and(|xs| xs.iter().any(|x| self.has_node(x, l + 1))),
        }
    }
    fn level(&mut self, v: &Value, l: usize) -> Result<(), Diagnostic> {
        let Some(level) = self.walk.plan.levels.get(l) else { return self.walk.entry(v) };
        let items = |v: &Value| {
            v.as_array()
                .map(<[Value]>::to_vec)
                .ok_or_else(|| self.walk.fail(format!("level {l} of the value is not an array")))
        };
        match (&level.source, level.store) {
            (Source::Dense { .. }, Store::Compress) => {
                let xs = items(v)?;
                let mut n = 0;
                for (i, x) in xs.iter().enumerate() {
                    if self.has_node(x, l + 1) {
                        self.coordinates[l].get_or_insert_with(Vec::new).push(i as u64);
                        n += 1;
                        self.level(x, l + 1)?;
                    }
                }
                self.close(l, n);
                Ok(())
            }
            (Source::Dense { .. }, _) => {
                for x in items(v)?.iter() {
                    self.level(x, l + 1)?;
                }
                Ok(())
            }
            (Source::List { .. }, _) => {
                let xs = items(v)?;
                let mut last: Option<u64> = None;
                for x in xs.iter() {
                    let (c, child) = self.walk.pair(x, l)?;
                    let in_order = match (self.walk.plan.order(l), last) {
                        (_, None) | (Order::Any, _) => true,
                        (Order::Increasing, Some(p)) => c > p,
                        (Order::NonDecreasing, Some(p)) => c >= p,
                    };
                    if !in_order {
                        return Err(self.walk.fail(format!(
                            "{} (coordinate {c} follows {})",
                            self.walk.plan.order_message(l),
                            last.unwrap_or(0)
                        )));
                    }
                    last = Some(c);
                    self.coordinates[l].get_or_insert_with(Vec::new).push(c);
                    self.level(&child, l + 1)?;
                }
                self.close(l, xs.len() as u64);
                Ok(())
            }
            (Source::Pair { .. }, _) => {
                let (c, child) = self.walk.pair(v, l)?;
                self.coordinates[l].get_or_insert_with(Vec::new).push(c);
                self.level(&child, l + 1)
            }
        }
    }
}

/// Stores a value with lists inside lists (see [`Nested`]).
fn store_nested(
    plan: &ResultPlan,
    v: &Value,
    dims: Vec<u64>,
    lvl_sizes: Vec<u64>,
    span: Span,
) -> Result<Value, Diagnostic> {
    let enc = &plan.encoding;
    let lr = enc.lvl_rank();
    let mut w = Nested {
        walk: Walk {
            plan,
            lvl_sizes,
            entries: Entries { coordinates: Vec::new(), values: ScalarVec::new(plan.elem) },
            entry_levels: Vec::new(),
            counts: Vec::new(),
            path: vec![0; plan.levels.len()],
            span,
        },
        // A compressed level's positions start at 0 (a loose one's pairs need no start).
        positions: (0..lr)
            .map(|l| {
                let f = enc.levels[l].format;
                f.has_positions()
                    .then(|| if f == heddle_ir::encoding::LevelFormat::LooseCompressed { vec![] } else { vec![0] })
            })
            .collect(),
        coordinates: vec![None; lr],
    };
    w.level(v, 0)?;
    // A stored level's coordinates buffer exists even when it holds none.
    for l in 0..plan.levels.len() {
        if plan.levels[l].store != Store::Dense && w.coordinates[l].is_none() {
            w.coordinates[l] = Some(Vec::new());
        }
    }
    let buffers = Buffers { positions: w.positions, coordinates: w.coordinates, values: w.walk.entries.values };
    let t = crate::sparse::assemble::assemble(enc, plan.elem, dims, buffers)
        .map_err(|e| Diagnostic::new(span, format!("the stored tensor is invalid: {e}")).with_label("stored here"))?;
    Ok(Value::Tensor(Rc::new(t)))
}

/// Stores `v` as `plan` says.
pub fn store(plan: &ResultPlan, v: &Value, env: &Env, span: Span) -> Result<Value, Diagnostic> {
    let eval = |n: &heddle_ir::Nat| -> Result<u64, Diagnostic> {
        let x = n
            .eval(env)
            .map_err(|e| Diagnostic::new(span, format!("cannot compute the size {n} of the stored tensor: {e}")))?;
        u64::try_from(x)
            .map_err(|_| Diagnostic::new(span, format!("the size {n} of the stored tensor is {x}, which is negative")))
    };
    let dims = plan.dims.iter().map(eval).collect::<Result<Vec<_>, _>>()?;
    let lvl_sizes = heddle_ir::encoding::map::lvl_sizes(&plan.encoding, &dims)
        .map_err(|m| Diagnostic::new(span, m).with_label("stored here"))?;
    if plan.nested_lists() {
        return store_nested(plan, v, dims, lvl_sizes, span);
    }
    let dense: Vec<usize> =
        plan.dense_prefix().iter().map(|(n, _)| eval(n).map(|v| v as usize)).collect::<Result<_, _>>()?;
    let positions: usize = dense.iter().product();
    let entry_levels = plan.entry_levels();
    let mut w = Walk {
        plan,
        lvl_sizes,
        entries: Entries { coordinates: vec![Vec::new(); entry_levels.len()], values: ScalarVec::new(plan.elem) },
        entry_levels,
        // Without a list every dense position is one entry (a dense tensor).
        counts: vec![u64::from(plan.list_level().is_none()); positions],
        path: vec![0; plan.levels.len()],
        span,
    };
    w.level(v, 0, 0)?;
    let (counts, entries) = (w.counts, w.entries);
    let t = assemble_result(plan, dims, &dense, &counts, entries)
        .map_err(|e| Diagnostic::new(span, format!("the stored tensor is invalid: {e}")).with_label("stored here"))?;
    Ok(Value::Tensor(Rc::new(t)))
}

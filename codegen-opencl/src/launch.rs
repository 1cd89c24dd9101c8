//! The launch configuration a kernel implies: the NDRange's global and
//! local sizes as expressions over the kernel's natural parameters, chosen
//! from the ranges of its `Global` / `Workgroup` / `Local` loops and
//! evaluated by the runtime at each launch.
//!
//! Every parallel loop is emitted as a strided loop (`for (i = id; i < hi;
//! i += size)`), so any positive size is *correct*; these choices only make
//! one work-item per iteration where the range is known at launch.

use heddle_ir::Name;
use heddle_ir::loops::{ArgKind, BinOp, Expr, LoopProgram, Schedule};
use serde::Serialize;
use std::fmt;

/// Work-items in a dimension used by a `Global` loop whose range depends on
/// loop variables or loads (unknown before the launch).
pub const DEFAULT_ITEMS: i64 = 16384;
/// Work-groups in a dimension whose `Workgroup` loop range is unknown at launch.
pub const DEFAULT_GROUPS: i64 = 1024;
/// Work-groups a simulator (Oclgrind) launches where a kernel would launch
/// [`DEFAULT_GROUPS`] ([`LaunchConfig::cap_default_groups`]): it runs every
/// work-item of the launch, even those with nothing to do, at about 10 µs
/// each, and strided `Workgroup` loops cover any range with fewer groups
/// (which checks the barriers between a group's iterations too).
pub const SIMULATOR_GROUPS: i64 = 4;
/// Work-items per group in dimension 0 when a `Local` loop's range is unknown
/// at launch (e.g. a row's number of nonzeros).
pub const DEFAULT_LOCAL: i64 = 64;

/// The size of one NDRange dimension.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dim {
    /// Work-items only (`mapGlobal`): the implementation picks the groups.
    Global {
        /// Number of work-items.
        #[serde(serialize_with = "ser_expr")]
        items: Expr,
    },
    /// `groups` work-groups of `local` work-items (`mapWorkgroup` / `mapLocal`).
    Grouped {
        /// Number of work-groups.
        #[serde(serialize_with = "ser_expr")]
        groups: Expr,
        /// Work-items per group.
        #[serde(serialize_with = "ser_expr")]
        local: Expr,
    },
}

fn ser_expr<S: serde::Serializer>(e: &Expr, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&text(e))
}

/// The NDRange of a kernel: one to three dimensions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaunchConfig {
    /// Dimension 0 first.
    pub dims: Vec<Dim>,
}

/// Concrete sizes for one launch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkSizes {
    /// Global work size per dimension (a multiple of `local` where given).
    pub global: Vec<usize>,
    /// Local work size per dimension; `None` lets the OpenCL implementation choose.
    pub local: Option<Vec<usize>>,
}

/// A parallel loop the generator emitted, with its effective schedule.
#[derive(Clone, Debug)]
pub(crate) struct LoopInfo {
    pub schedule: Schedule,
    /// `hi - lo`, when it depends only on naturals and literals.
    pub range: Option<Expr>,
}

/// Largest size of one dimension the runtime will launch: strided loops
/// cover any larger range.
const MAX_DIM: i64 = 1 << 30;

impl LaunchConfig {
    /// The configuration implied by the loops, or why the loops cannot share one NDRange.
    pub(crate) fn infer(loops: &[LoopInfo]) -> Result<LaunchConfig, String> {
        let dim_of = |s: Schedule| match s {
            Schedule::Global(d) | Schedule::Workgroup(d) | Schedule::Local(d) => Some(d),
            _ => None,
        };
        let used = loops.iter().filter_map(|l| dim_of(l.schedule)).max().map_or(1, |d| d as usize + 1);
        if used > 3 {
            return Err(format!("OpenCL has three NDRange dimensions; the kernel uses dimension {}", used - 1));
        }
        let mut dims = Vec::new();
        for d in 0..used as u32 {
            let ranges = |want: fn(u32) -> Schedule| -> (bool, Option<Expr>) {
                let of: Vec<&LoopInfo> = loops.iter().filter(|l| l.schedule == want(d)).collect();
                // Several loops share the dimension: size it for the largest
                // range; literal ranges (a `0 .. 1` leader loop) yield to
                // symbolic ones, which strided loops cover anyway.
                let mut known: Vec<Expr> = Vec::new();
                for r in of.iter().filter_map(|l| l.range.clone()) {
                    if !known.contains(&r) {
                        known.push(r);
                    }
                }
                if known.iter().any(|r| !matches!(r, Expr::Int(..))) {
                    known.retain(|r| !matches!(r, Expr::Int(..)));
                }
                let known = known.into_iter().reduce(|a, b| Expr::bin(BinOp::Max, a, b));
                (!of.is_empty(), known)
            };
            let (global, global_range) = ranges(Schedule::Global);
            let (groups, groups_range) = ranges(Schedule::Workgroup);
            let (local, local_range) = ranges(Schedule::Local);
            if global && (groups || local) {
                return Err(format!(
                    "dimension {d} is used by mapGlobal and by mapWorkgroup/mapLocal; give them different dimensions"
                ));
            }
            dims.push(if global {
                Dim::Global { items: global_range.unwrap_or(Expr::index(DEFAULT_ITEMS)) }
            } else {
                let default_groups = if groups { DEFAULT_GROUPS } else { 1 };
                let default_local = if local && d == 0 { DEFAULT_LOCAL } else { 1 };
                Dim::Grouped {
                    groups: groups_range.unwrap_or(Expr::index(default_groups)),
                    local: local_range.unwrap_or(Expr::index(default_local)),
                }
            });
        }
        Ok(LaunchConfig { dims })
    }

    /// Launches at most `max` work-items in each `mapGlobal` dimension (the
    /// loops are strided, so fewer items still cover every iteration).
    pub(crate) fn cap_items(&mut self, max: i64) {
        for d in &mut self.dims {
            if let Dim::Global { items } = d {
                *items = Expr::bin(BinOp::Min, items.clone(), Expr::index(max));
            }
        }
    }

    /// Launches at most `max` work-groups in each dimension whose number of
    /// groups is [`DEFAULT_GROUPS`] (a `Workgroup` loop's range unknown at
    /// launch): on a simulator ([`SIMULATOR_GROUPS`]).
    pub fn cap_default_groups(&mut self, max: i64) {
        for d in &mut self.dims {
            if let Dim::Grouped { groups, .. } = d
                && *groups == Expr::index(DEFAULT_GROUPS)
            {
                *groups = Expr::index(max.min(DEFAULT_GROUPS));
            }
        }
    }

    /// The sizes for a launch, given the natural parameters' values.
    pub fn sizes(&self, nat: &dyn Fn(&Name) -> Option<i64>) -> Result<WorkSizes, String> {
        let clamp = |v: i64| v.clamp(1, MAX_DIM) as usize;
        let grouped = self.dims.iter().any(|d| matches!(d, Dim::Grouped { .. }));
        let (mut global, mut local) = (Vec::new(), Vec::new());
        for d in &self.dims {
            match d {
                Dim::Global { items } => {
                    global.push(clamp(eval(items, nat)?));
                    local.push(1);
                }
                Dim::Grouped { groups, local: l } => {
                    let l = clamp(eval(l, nat)?);
                    let g = clamp(eval(groups, nat)?);
                    global.push(g.checked_mul(l).ok_or("the NDRange is too large")?);
                    local.push(l);
                }
            }
        }
        Ok(WorkSizes { global, local: grouped.then_some(local) })
    }
}

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grouped = self.dims.iter().any(|d| matches!(d, Dim::Grouped { .. }));
        let mut global = Vec::new();
        let mut local = Vec::new();
        for d in &self.dims {
            match d {
                Dim::Global { items } => {
                    global.push(text(items));
                    local.push("1".to_string());
                }
                Dim::Grouped { groups, local: l } => {
                    global.push(if matches!(groups, Expr::Int(1, _)) {
                        text(l)
                    } else {
                        format!("{} * {}", paren(groups), paren(l))
                    });
                    local.push(text(l));
                }
            }
        }
        write!(f, "global = [{}]", global.join(", "))?;
        if grouped {
            write!(f, ", local = [{}]", local.join(", "))?;
        }
        Ok(())
    }
}

fn paren(e: &Expr) -> String {
    match e {
        Expr::Int(..) | Expr::Var(_) | Expr::Bin(BinOp::Min | BinOp::Max, ..) => text(e),
        _ => format!("({})", text(e)),
    }
}

/// A size expression as text over the naturals' source names.
pub fn text(e: &Expr) -> String {
    match e {
        Expr::Int(v, _) => v.to_string(),
        Expr::Var(v) => v.to_string(),
        Expr::Bin(op @ (BinOp::Min | BinOp::Max), a, b) => format!("{}({}, {})", op.symbol(), text(a), text(b)),
        Expr::Bin(op, a, b) => format!("{} {} {}", paren(a), op.symbol(), paren(b)),
        Expr::Neg(a) => format!("-{}", paren(a)),
        Expr::Cast(_, a) => text(a),
        other => heddle_ir::loops::expr_text(other),
    }
}

/// Does `e` depend only on natural arguments and literals (so the host can
/// evaluate it before the launch)?
pub(crate) fn launch_evaluable(e: &Expr, prog: &LoopProgram) -> bool {
    match e {
        Expr::Int(_, t) => t.is_int(),
        Expr::Var(v) => matches!(prog.arg(v).map(|a| &a.kind), Some(ArgKind::Nat)),
        Expr::Bin(op, a, b) => {
            matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem | BinOp::Min | BinOp::Max)
                && launch_evaluable(a, prog)
                && launch_evaluable(b, prog)
        }
        Expr::Neg(a) => launch_evaluable(a, prog),
        _ => false,
    }
}

/// Evaluates a launch-evaluable expression with C's truncating division,
/// reporting overflow and division by zero instead of wrapping.
pub fn eval(e: &Expr, nat: &dyn Fn(&Name) -> Option<i64>) -> Result<i64, String> {
    let overflow = || format!("overflow in the size {}", text(e));
    Ok(match e {
        Expr::Int(v, _) => *v,
        Expr::Var(v) => nat(v).ok_or_else(|| format!("no value for the natural `{v}`"))?,
        Expr::Neg(a) => eval(a, nat)?.checked_neg().ok_or_else(overflow)?,
        Expr::Cast(t, a) if t.is_int() => eval(a, nat)?,
        Expr::Bin(op, a, b) => {
            let (x, y) = (eval(a, nat)?, eval(b, nat)?);
            let r = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div | BinOp::Rem if y == 0 => return Err(format!("division by zero in the size {}", text(e))),
                BinOp::Div => x.checked_div(y),
                BinOp::Rem => x.checked_rem(y),
                BinOp::Min => Some(x.min(y)),
                BinOp::Max => Some(x.max(y)),
                _ => return Err(format!("cannot evaluate the size {}", text(e))),
            };
            r.ok_or_else(overflow)?
        }
        _ => return Err(format!("cannot evaluate the size {}", text(e))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulator_launches_few_groups_only_where_the_count_was_a_default() {
        let mut c = LaunchConfig {
            dims: vec![
                Dim::Grouped { groups: Expr::index(DEFAULT_GROUPS), local: Expr::index(256) },
                Dim::Grouped { groups: Expr::var("n"), local: Expr::index(4) },
            ],
        };
        c.cap_default_groups(SIMULATOR_GROUPS);
        let sizes = c.sizes(&|_| Some(10)).unwrap();
        assert_eq!(sizes.global, vec![SIMULATOR_GROUPS as usize * 256, 40]);
        assert_eq!(sizes.local, Some(vec![256, 4]));
    }
}

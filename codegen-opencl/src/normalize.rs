//! Explicit OpenCL schedules, before barriers are placed and code emitted.
//!
//! The loop IR leaves two choices to the backend, made here once so that
//! every later pass sees the same program:
//! - A `Parallel` loop outside every parallel loop is the data-parallel top
//!   of the program: `Global(0)`. A `Parallel` loop anywhere else runs
//!   sequentially (`Seq`) in the work-item that reaches it.
//! - A parallel loop that encloses another loop of the same schedule (a
//!   `mapWorkgroup` inside a `mapWorkgroup`, as in the paper's Listing 7)
//!   runs sequentially on every work-item, and the innermost one distributes
//!   its iterations: each OpenCL id dimension can distribute one loop of a
//!   nest, and the innermost is where the work is.

use heddle_ir::loops::{Block, Schedule, Stmt};

/// Rewrites the schedules of `body` as described in the module docs.
pub(crate) fn schedules(body: &mut Block) {
    resolve_parallel(body, false);
    demote_enclosing(body);
}

fn resolve_parallel(body: &mut Block, inside: bool) {
    for s in body {
        match s {
            Stmt::For { schedule, body, .. } => {
                if *schedule == Schedule::Parallel {
                    *schedule = if inside { Schedule::Seq } else { Schedule::Global(0) };
                }
                resolve_parallel(body, inside || *schedule != Schedule::Seq);
            }
            Stmt::If { then, els, .. } => {
                resolve_parallel(then, inside);
                resolve_parallel(els, inside);
            }
            _ => {}
        }
    }
}

/// Demotes loops that enclose a loop of their own schedule (bottom-up).
fn demote_enclosing(body: &mut Block) {
    for s in body {
        match s {
            Stmt::For { schedule, body, .. } => {
                demote_enclosing(body);
                if *schedule != Schedule::Seq && uses(body, *schedule) {
                    *schedule = Schedule::Seq;
                }
            }
            Stmt::If { then, els, .. } => {
                demote_enclosing(then);
                demote_enclosing(els);
            }
            _ => {}
        }
    }
}

/// Does a loop in `body` (at any depth) have this schedule?
fn uses(body: &Block, schedule: Schedule) -> bool {
    body.iter().any(|s| match s {
        Stmt::For { schedule: inner, body, .. } => *inner == schedule || uses(body, schedule),
        Stmt::If { then, els, .. } => uses(then, schedule) || uses(els, schedule),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use heddle_ir::loops::Expr;

    fn for_(s: Schedule, body: Block) -> Stmt {
        Stmt::For { var: "i".into(), lo: Expr::index(0), hi: Expr::index(4), schedule: s, body }
    }

    fn schedule_of(s: &Stmt) -> Schedule {
        match s {
            Stmt::For { schedule, .. } => *schedule,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_top_parallel_loop_is_global_and_nested_ones_sequential() {
        let mut b = vec![for_(Schedule::Parallel, vec![for_(Schedule::Parallel, vec![])])];
        schedules(&mut b);
        assert_eq!(schedule_of(&b[0]), Schedule::Global(0));
        let Stmt::For { body, .. } = &b[0] else { unreachable!() };
        assert_eq!(schedule_of(&body[0]), Schedule::Seq);
    }

    #[test]
    fn the_innermost_of_nested_workgroup_loops_distributes() {
        let mut b = vec![for_(
            Schedule::Workgroup(0),
            vec![for_(Schedule::Workgroup(0), vec![for_(Schedule::Local(0), vec![])])],
        )];
        schedules(&mut b);
        assert_eq!(schedule_of(&b[0]), Schedule::Seq);
        let Stmt::For { body, .. } = &b[0] else { unreachable!() };
        assert_eq!(schedule_of(&body[0]), Schedule::Workgroup(0));
    }
}

//! Barrier placement and the uniform control flow around barriers
//! (`barriers.rs`, `divergence.rs`, the rounds and predicates of `emit.rs`)
//! on hand-written loop programs. The kernels run on POCL and Oclgrind in
//! the `heddle` package's tests/it/opencl.rs.

use crate::samples;

use heddle_codegen_opencl::{compile, prepare};
use heddle_ir::loops::{BinOp, Block, Expr, LoopProgram, Schedule, Stmt};

fn barriers(b: &Block) -> usize {
    b.iter()
        .map(|s| match s {
            Stmt::Barrier => 1,
            Stmt::For { body, .. } => barriers(body),
            Stmt::If { then, els, .. } => barriers(then) + barriers(els),
            _ => 0,
        })
        .sum()
}

/// The statements of the work-group loop, as placed.
fn group_body(p: &LoopProgram) -> Block {
    match &prepare(p).body[0] {
        Stmt::For { body, .. } => body.clone(),
        other => panic!("not a loop: {other:?}"),
    }
}

#[test]
fn reading_another_items_element_needs_a_barrier_between_and_after() {
    let p =
        samples::hand_off(Expr::bin(BinOp::Sub, Expr::bin(BinOp::Sub, Expr::var("W"), Expr::index(1)), Expr::var("j")));
    let body = group_body(&p);
    // alloc, fill, barrier, drain, barrier (the next group iteration refills tmp).
    assert!(matches!(body[2], Stmt::Barrier), "{body:?}");
    assert!(matches!(body.last(), Some(Stmt::Barrier)), "{body:?}");
    assert_eq!(barriers(&body), 2);
}

#[test]
fn reading_ones_own_element_needs_no_barrier() {
    let p = samples::hand_off(Expr::var("j"));
    assert_eq!(barriers(&group_body(&p)), 0, "item j wrote tmp[j] itself");
    let k = compile(&p).unwrap();
    assert!(!k.source.contains("barrier("), "{}", k.source);
}

#[test]
fn barriers_with_nothing_to_order_are_dropped() {
    let mut p = samples::hand_off(Expr::var("j"));
    let Stmt::For { body, .. } = &mut p.body[0] else { unreachable!() };
    body.insert(0, Stmt::Barrier);
    body.push(Stmt::Barrier);
    body.push(Stmt::Barrier);
    assert_eq!(barriers(&group_body(&p)), 0);
    let mut q = samples::hand_off(Expr::index(0));
    let Stmt::For { body, .. } = &mut q.body[0] else { unreachable!() };
    body.insert(3, Stmt::Barrier);
    body.insert(3, Stmt::Barrier);
    assert_eq!(barriers(&group_body(&q)), 2, "between the loops, and at the end");
}

#[test]
fn placement_is_idempotent() {
    for p in [samples::hand_off(Expr::index(0)), samples::nested_hand_off(), samples::listing7()] {
        let once = prepare(&p);
        assert_eq!(prepare(&once), once, "{}", p.name);
        assert_eq!(compile(&once).unwrap().source, compile(&p).unwrap().source, "{}", p.name);
    }
}

/// The hand-off sits inside the dimension-1 loop and after a check that
/// differs between items: the loop runs in rounds, the check becomes a
/// predicate, and the barrier is outside every condition.
#[test]
fn a_hand_off_inside_a_per_item_loop_runs_in_rounds() {
    let p = samples::nested_hand_off();
    let k = compile(&p).unwrap();
    let src = &k.source;
    assert!(src.contains("heddle_base"), "{src}");
    assert!(src.contains("const bool heddle_live"), "{src}");
    let barrier = src.lines().find(|l| l.contains("barrier(")).expect("a barrier");
    assert_eq!(barrier.trim(), "barrier(CLK_LOCAL_MEM_FENCE);", "not under a condition");
    // The row's sum is stored once, by the items with local id 0 in dimension 0.
    assert!(src.contains("get_local_id(0) == 0) out[row] = acc;"), "{src}");
    insta::assert_snapshot!(k.to_string());
}

#[test]
fn a_barrier_in_a_loop_whose_trip_count_differs_between_items_is_refused() {
    // The per-row sum runs to a bound read at the item's row: a hand-off inside it cannot be ordered.
    let mut p = samples::nested_hand_off();
    let Stmt::For { body, .. } = &mut p.body[0] else { unreachable!() };
    let Stmt::For { body: rows, .. } = &mut body[1] else { unreachable!() };
    let part = rows.remove(3);
    let Stmt::For { hi, .. } = &mut rows[4] else { unreachable!() };
    *hi = Expr::bin(BinOp::Add, Expr::var("W"), Expr::var("r"));
    let Stmt::For { body: sum, .. } = &mut rows[4] else { unreachable!() };
    sum.insert(0, part);
    let err = compile(&p).expect_err("refused");
    assert!(err.message.contains("different number of times"), "{}", err.message);
    assert!(err.message.contains("`k`"), "names the loop: {}", err.message);
}

#[test]
fn nested_loops_on_one_dimension_run_the_outer_one_sequentially() {
    let mut p = samples::hand_off(Expr::var("j"));
    let inner = p.body.remove(0);
    p.body.push(Stmt::For {
        var: "outer".into(),
        lo: Expr::index(0),
        hi: Expr::index(1),
        schedule: Schedule::Workgroup(0),
        body: vec![inner],
    });
    let prepared = prepare(&p);
    assert!(matches!(prepared.body[0], Stmt::For { schedule: Schedule::Seq, .. }), "{:?}", prepared.body[0]);
    compile(&p).unwrap();
}

#[test]
fn local_memory_in_a_per_item_loop_is_refused() {
    let mut p = samples::hand_off(Expr::var("j"));
    let Stmt::For { body, .. } = &mut p.body[0] else { unreachable!() };
    let Stmt::For { body: fill, .. } = &mut body[1] else { unreachable!() };
    fill.insert(
        0,
        Stmt::Alloc {
            buf: "mine".into(),
            fields: vec![heddle_ir::ScalarType::F32],
            len: Expr::index(1),
            space: heddle_ir::loops::Space::Local,
        },
    );
    let err = compile(&p).expect_err("refused");
    assert!(err.message.contains("allocated per work-item"), "{}", err.message);
}

//! Temporaries taken from the work-item's arena (`arena.rs`): a global
//! buffer made inside a loop or of a length the data gives, a private one of
//! a length that is not a constant. The kernels of the compile-coverage
//! corpus that need one (`tests/compile_coverage/arena_*.hdl` and others)
//! run on POCL and Oclgrind in the `heddle` package's tests.

use crate::samples;

use heddle_codegen_opencl::{KernelParam, Role, compile};
use heddle_ir::ScalarType;
use heddle_ir::loops::{BinOp, Expr, Schedule, Space, Stmt};

/// Listing 5 with a temporary of the row's length (`end - start`, known
/// only as the kernel runs) allocated in `space` at the head of each row.
fn listing5_with_row_temporary(space: Space) -> heddle_ir::loops::LoopProgram {
    let mut p = samples::listing5();
    let Stmt::For { body, .. } = &mut p.body[0] else { unreachable!("listing 5 is one loop") };
    let len = Expr::bin(BinOp::Sub, Expr::var("end"), Expr::var("start"));
    body.insert(2, Stmt::Alloc { buf: "row_copy".into(), fields: vec![ScalarType::F32], len, space });
    body.insert(
        3,
        Stmt::Store {
            buf: "row_copy".into(),
            index: Expr::index(0),
            field: 0,
            value: Expr::Float(1.0, ScalarType::F32),
        },
    );
    p
}

#[test]
fn a_temporary_of_a_data_dependent_length_in_a_loop_comes_from_the_arena() {
    for space in [Space::Global, Space::Private] {
        let k = compile(&listing5_with_row_temporary(space)).unwrap_or_else(|e| panic!("{space:?}: {}", e.message));
        let params: Vec<&KernelParam> = k
            .params
            .iter()
            .filter(|p| matches!(p, KernelParam::Arena | KernelParam::ArenaWords | KernelParam::ArenaNeed))
            .collect();
        assert_eq!(params, [&KernelParam::Arena, &KernelParam::ArenaWords, &KernelParam::ArenaNeed], "{space:?}");
        let roles: Vec<Role> = k.interface.args.iter().map(|a| a.role).collect();
        assert!(roles.contains(&Role::Arena) && roles.contains(&Role::ArenaNeed), "{roles:?}");
        let src = &k.source;
        // Taken at the stack pointer, given back at the end of the row's iteration.
        assert!(src.contains("row_copy = (__global float*)(heddle_arena + heddle_sp);"), "{src}");
        assert!(src.contains("atomic_max(heddle_arena_need"), "{src}");
        let save = src.find("= heddle_sp;").expect("the stack pointer saved");
        let restore = src.rfind("heddle_sp = heddle_sp_at").expect("and restored");
        assert!(save < src.find("row_copy =").unwrap() && src.find("row_copy =").unwrap() < restore, "{src}");
        // Each work-item has its own copy: the store is not left to one item.
        assert!(src.contains("row_copy[0L] = 1.0f;") && !src.contains("get_global_id(0) == 0) row_copy"), "{src}");
    }
}

#[test]
fn a_kernel_without_such_temporaries_has_no_arena() {
    let k = compile(&samples::listing5()).unwrap();
    assert!(!k.source.contains("heddle_arena"), "{}", k.source);
    assert!(!k.params.contains(&KernelParam::Arena));
}

#[test]
fn an_arena_temporary_where_work_items_wait_at_barriers_is_refused_naming_it() {
    // A work-item that finds its arena short stops early, which it may not do where others wait for it.
    // Each item reads another's element: barriers order the hand-off.
    let mut p =
        samples::hand_off(Expr::bin(BinOp::Sub, Expr::bin(BinOp::Sub, Expr::var("W"), Expr::index(1)), Expr::var("j")));
    let Stmt::For { body, .. } = &mut p.body[0] else { unreachable!("the work-group loop") };
    body.insert(
        0,
        Stmt::Alloc { buf: "grown".into(), fields: vec![ScalarType::F32], len: Expr::index(4), space: Space::Global },
    );
    let err = compile(&p).expect_err("refused");
    assert!(err.message.contains("`grown`") && err.message.contains("barriers"), "{}", err.message);
}

#[test]
fn an_arena_temporary_filled_by_a_parallel_loop_is_refused() {
    // Each work-item's copy would hold only the iterations it ran.
    let mut p = samples::listing5();
    let len = Expr::bin(BinOp::Add, Expr::var("n"), Expr::index(1));
    let fill = Stmt::For {
        var: "z".into(),
        lo: Expr::index(0),
        hi: Expr::var("n"),
        schedule: Schedule::Parallel,
        body: vec![Stmt::Store {
            buf: "shared".into(),
            index: Expr::var("z"),
            field: 0,
            value: Expr::Float(0.0, ScalarType::F32),
        }],
    };
    let seq = Stmt::For {
        var: "s".into(),
        lo: Expr::index(0),
        hi: Expr::index(1),
        schedule: Schedule::Seq,
        body: vec![
            Stmt::Alloc { buf: "shared".into(), fields: vec![ScalarType::F32], len, space: Space::Global },
            fill,
        ],
    };
    p.body.insert(0, seq);
    let err = compile(&p).expect_err("refused");
    assert!(err.message.contains("`shared`") && err.message.contains("parallel loop"), "{}", err.message);
}

#[test]
fn an_integer_compared_with_itself_is_its_answer_not_a_self_comparison() {
    // `select(i == i, i, i)` once lowering has simplified both sides: C compilers warn about `i == i`.
    let mut p = samples::listing5();
    let Stmt::For { body, .. } = &mut p.body[0] else { unreachable!("listing 5 is one loop") };
    let i = || Expr::var("i");
    let same = Expr::Select(Box::new(Expr::bin(BinOp::Eq, i(), i())), Box::new(i()), Box::new(i()));
    let below = Expr::bin(BinOp::Lt, i(), i());
    body.insert(0, Stmt::Let { var: "same".into(), ty: ScalarType::I64, value: same });
    body.insert(1, Stmt::Let { var: "below".into(), ty: ScalarType::Bool, value: below });
    body.insert(
        2,
        Stmt::Let {
            var: "chosen".into(),
            ty: ScalarType::I64,
            value: Expr::Select(Box::new(Expr::bin(BinOp::Ge, i(), i())), Box::new(i()), Box::new(Expr::index(0))),
        },
    );
    // Equal once the choice between equal values is folded.
    let folded = Expr::bin(BinOp::Ne, Expr::Select(Box::new(Expr::Bool(true)), Box::new(i()), Box::new(i())), i());
    body.insert(3, Stmt::Let { var: "differs".into(), ty: ScalarType::Bool, value: folded });
    let src = compile(&p).unwrap().source;
    assert!(src.contains("const bool differs = false;"), "{src}");
    assert!(src.contains("const long same = i;"), "{src}");
    assert!(src.contains("const bool below = false;"), "{src}");
    assert!(src.contains("const long chosen = true ? i : 0L;"), "{src}");
}

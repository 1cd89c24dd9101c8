//! Nothing a user can type makes heddle panic: random programs built from
//! the language's own tokens (so they get past the lexer and deep into the
//! parser, the type checker and lowering) give a result or a diagnostic.

use proptest::prelude::*;

const TOKENS: &[&str] = &[
    "nFun(n => ",
    "nFun(m => ",
    "fun(xs: [float]_n => ",
    "fun(o: [int]_{n+1} => ",
    "fun(v: [i -> [float]_{toNat(o@(i+1) - o@i)}]_n => ",
    "fun(p: (int, float) => ",
    "fun(x => ",
    "xs",
    "v",
    "o",
    "p",
    "x",
    "n",
    "m",
    "i",
    "0",
    "1",
    "2.5",
    "4",
    "true",
    "map(",
    "mapSeq(",
    "mapGlobal(0, ",
    "reduce(+, 0",
    "reduce(",
    "zip(",
    "unzip",
    "split(",
    "join",
    "transpose",
    "slide(",
    "pad(1, 1, ",
    "gather(",
    "scatter(",
    "generate(",
    "iterate(2, ",
    "toLocal(",
    "asVector(4)",
    "asScalar",
    "interleave(",
    "scatterAdd(",
    "select(",
    "let y = ",
    " in ",
    ":>>",
    "@",
    ".1",
    ".2",
    ".3",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    "==",
    "&&",
    "!",
    "(",
    ")",
    ",",
    "[",
    "]",
    "_",
    "{",
    "}",
    "?",
    ":",
    "toNat(",
    "sum(k = 0 .. n, ",
    "min(",
    "max",
    ";",
    "def f = ",
    "(x : [float]_n)",
    "[float]_4",
    "->",
];

fn program() -> impl Strategy<Value = String> {
    prop::collection::vec(0..TOKENS.len(), 1..40)
        .prop_map(|ks| ks.into_iter().map(|k| TOKENS[k]).collect::<Vec<_>>().join(" "))
}

/// How far a program got: 0 nothing, 1 parsed, 2 type-checked, 3 lowered.
fn exercise(src: &str) -> u8 {
    let Ok(p) = heddle_ir::parser::parse_program(src) else { return 0 };
    let _ = heddle_ir::printer::print_program(&p);
    let Ok(k) = heddle_typeck::check_program(&p) else { return 1 };
    if heddle_rewrite::lower::lower_kernel(&k, "fuzz").is_err() {
        return 2;
    }
    3
}

/// Whole pipeline stages: random pipelines of them are often well-typed, and
/// the rest fail in the type checker rather than the parser.
const STAGES: &[&str] = &[
    "map(fun(x => x * 2.0))",
    "map(fun(x => x))",
    "reduce(+, 0)",
    "reduce(max, 0)",
    "reduceSeq(+, 0)",
    "split(2)",
    "split(4)",
    "join",
    "transpose",
    "map(reduce(+, 0))",
    "map(map(fun(y => y + 1.0)))",
    "mapSeq(fun(r => r :>> reduce(+, 0)))",
    "mapGlobal(fun(x => x))",
    "pad(1, 1, 0.0)",
    "slide(2, 1)",
    "map(fun(r => zip(r, r)))",
    "map(unzip)",
    "toLocal(fun(t => t))",
    "map(fun(r => r@0))",
    "interleave(2)",
    "map(fun(x => (x, x)))",
    "map(fun(p => p.1))",
    "scatterAdd(4)",
    "asVector(4)",
];

/// Programs that are well-formed around a random body, so the type checker
/// and lowering see many of them.
fn kernel() -> impl Strategy<Value = String> {
    let body = prop::collection::vec(0..STAGES.len(), 1..5)
        .prop_map(|ks| ks.into_iter().map(|k| STAGES[k]).collect::<Vec<_>>().join(" :>> "));
    (body, 0usize..4).prop_map(|(b, shape)| match shape {
        0 => format!("nFun(n => fun(xs: [float]_n => xs :>> {b}))"),
        1 => format!(
            "nFun(n => fun(o: [int]_{{n+1}} => fun(v: [i -> [float]_{{toNat(o@(i+1) - o@i)}}]_n => v :>> {b})))"
        ),
        2 => format!("nFun(n => fun(xs: [float]_n => {b}))"),
        _ => format!("fun(xs: [[float]_4]_8 => xs :>> {b})"),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn random_token_programs_do_not_panic(src in program()) {
        let r = std::panic::catch_unwind(|| exercise(&src));
        prop_assert!(r.is_ok(), "panicked on: {}", src);
    }

    #[test]
    fn random_kernel_bodies_do_not_panic(src in kernel()) {
        let r = std::panic::catch_unwind(|| exercise(&src));
        prop_assert!(r.is_ok(), "panicked on: {}", src);
    }
}

#[test]
fn the_generator_reaches_the_type_checker_and_lowering() {
    // Guards the fuzzing itself: a generator that never gets past the parser tests little.
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut reached = [0usize; 4];
    for _ in 0..2000 {
        let src = kernel().new_tree(&mut runner).unwrap().current();
        reached[exercise(&src) as usize] += 1;
    }
    assert!(reached[2] + reached[3] >= 20, "type-checked: {reached:?}");
    assert!(reached[3] >= 5, "lowered: {reached:?}");
}

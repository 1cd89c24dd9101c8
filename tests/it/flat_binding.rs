//! Inputs bound as flat buffers for the compiled backends
//! (`bind_inputs_flat`) are checked exactly as value binding checks them —
//! the same errors, word for word — run to the same results, and are shared
//! by every launch instead of copied.

use crate::common;

use heddle::source::SourceFile;
use heddle_runtime::io::{Loaded, bind_inputs, bind_inputs_flat};
use heddle_runtime::launch::{self, Slot};
use heddle_runtime::scalars::ScalarVec;
use heddle_runtime::value::Value;
use heddle_typeck::Kernel;

fn kernel(path: &str) -> Kernel {
    let text = std::fs::read_to_string(common::root().join(path)).unwrap();
    heddle::check_source(&SourceFile::new(path, text)).unwrap_or_else(|e| panic!("{e:?}")).1
}

fn packed(data: impl Into<ScalarVec>, dtype: &str) -> Loaded {
    Loaded::packed(data.into(), dtype)
}

/// Listing 4's inputs: a 3-row CSR matrix with an empty row.
fn csr_inputs() -> Vec<(String, Loaded)> {
    vec![
        ("offset".into(), packed(vec![0i64, 2, 2, 3], "int64")),
        ("col_indices".into(), packed(vec![1i64, 0, 2], "int64")),
        ("values".into(), packed(vec![1.5f32, 2.0, -3.0], "float32")),
        ("xs".into(), packed(vec![10.0f32, 20.0, 30.0], "float32")),
    ]
}

fn with(mut inputs: Vec<(String, Loaded)>, name: &str, data: Loaded) -> Vec<(String, Loaded)> {
    inputs.iter_mut().find(|(n, _)| n == name).expect("an input of that name").1 = data;
    inputs
}

fn run_cpu(k: &Kernel, env: &heddle_runtime::interp::Env) -> Value {
    let program = heddle::cpu::lower(k, "k").unwrap();
    heddle::cpu::run(k, &program, env, 2).unwrap()
}

#[test]
fn flat_and_value_binding_give_the_same_results() {
    let k = kernel("examples/csr_unpacked_spmv.hdl");
    let reference = heddle_runtime::interp::run_kernel(&k, &bind_inputs(&k, &[], csr_inputs()).unwrap()).unwrap();
    assert_eq!(reference, Value::array(vec![Value::Float(50.0), Value::Float(0.0), Value::Float(-90.0)]));
    let flat = bind_inputs_flat(&k, &[], csr_inputs()).unwrap();
    assert!(flat.buffer(&"values".into()).is_some(), "a packed input of scalars is bound as a buffer");
    assert_eq!(flat.nat(&"m".into()), Some(3), "naturals are solved from packed lengths too");
    assert_eq!(run_cpu(&k, &flat), reference);
    // Data of another type is converted element by element, as values are.
    let wide = with(csr_inputs(), "xs", packed(vec![10.0f64, 20.0, 30.000000001], "float64"));
    let wide_col = with(wide, "col_indices", packed(vec![1u8, 0, 2], "uint8"));
    let by_values = heddle_runtime::interp::run_kernel(&k, &bind_inputs(&k, &[], wide_col.clone()).unwrap()).unwrap();
    assert_eq!(run_cpu(&k, &bind_inputs_flat(&k, &[], wide_col).unwrap()), by_values);
}

#[test]
fn flat_binding_refuses_what_value_binding_refuses_with_the_same_message() {
    let k = kernel("examples/csr_unpacked_spmv.hdl");
    let cases: Vec<(&str, Vec<(String, Loaded)>)> = vec![
        ("decreasing offsets", with(csr_inputs(), "offset", packed(vec![0i64, 2, 1, 3], "int64"))),
        ("offsets past the data", with(csr_inputs(), "offset", packed(vec![0i64, 2, 2, 4], "int64"))),
        ("a negative first offset", with(csr_inputs(), "offset", packed(vec![-1i64, 2, 2, 3], "int64"))),
        ("too few values", with(csr_inputs(), "values", packed(vec![1.5f32, 2.0], "float32"))),
        ("floats for integers", with(csr_inputs(), "col_indices", packed(vec![1.0f64, 0.0, 2.0], "float64"))),
        ("an integer beyond int", with(csr_inputs(), "col_indices", packed(vec![1i64 << 40, 0, 2], "int64"))),
        ("a u64 beyond i64", with(csr_inputs(), "offset", packed(vec![0u64, 2, 2, u64::MAX], "uint64"))),
        ("integers for floats", with(csr_inputs(), "xs", packed(vec![1i32, 2, 3], "int32"))),
        ("booleans for floats", with(csr_inputs(), "values", packed(vec![true, false, true], "bool"))),
    ];
    for (what, inputs) in cases {
        let by_values =
            bind_inputs(&k, &[], inputs.clone()).err().unwrap_or_else(|| panic!("{what}: value binding accepted it"));
        let flat =
            bind_inputs_flat(&k, &[], inputs).err().unwrap_or_else(|| panic!("{what}: flat binding accepted it"));
        assert_eq!(flat, by_values, "{what}");
    }
    // A natural given that contradicts a packed length.
    let by_values = bind_inputs(&k, &[("m".into(), 4)], csr_inputs()).unwrap_err();
    assert_eq!(bind_inputs_flat(&k, &[("m".into(), 4)], csr_inputs()).unwrap_err(), by_values);
}

#[test]
fn a_bound_buffer_is_shared_by_every_launch_not_copied() {
    let k = kernel("examples/csr_unpacked_spmv.hdl");
    let env = bind_inputs_flat(&k, &[], csr_inputs()).unwrap();
    let program = heddle::cpu::lower(&k, "k").unwrap();
    let bound = env.buffer(&"values".into()).unwrap().clone();
    let slot = program.args.iter().position(|a| a.name.as_str() == "values").unwrap();
    for _ in 0..2 {
        let mut l = launch::prepare(&program, &env).unwrap();
        heddle_runtime::cpu::run(&program, &mut l, 2).unwrap();
        let Slot::Buffer(b) = &l.slots[slot] else { panic!("values is a buffer") };
        assert!(b.shares_storage(&bound), "the launch copied the input");
    }
}

#[test]
fn the_interpreter_refuses_a_flat_environment_with_a_message() {
    let k = kernel("examples/csr_unpacked_spmv.hdl");
    let env = bind_inputs_flat(&k, &[], csr_inputs()).unwrap();
    let e = heddle_runtime::interp::run_kernel(&k, &env).unwrap_err();
    assert!(e.message.contains("bind them with `bind_inputs`"), "{}", e.message);
}

#[test]
fn stored_tensors_bind_flat_and_agree_with_the_interpreter() {
    let k = kernel("examples/sparse/spmv_csr.hdl");
    let mtx = common::root().join("tests/data/sparse/m4x8.mtx");
    let (nats, mut inputs) = heddle_runtime::io::bind::tensor_inputs(&k, "A", &mtx).unwrap();
    inputs.push(("xs".into(), packed((0..8).map(|j| j as f32 - 2.5).collect::<Vec<_>>(), "float32")));
    let flat = bind_inputs_flat(&k, &nats, inputs.clone()).unwrap();
    for buffer in ["A_pos1", "A_crd1", "A_values"] {
        assert!(flat.buffer(&buffer.into()).is_some(), "{buffer} is bound flat");
    }
    let reference = heddle_runtime::interp::run_kernel(&k, &bind_inputs(&k, &nats, inputs).unwrap()).unwrap();
    assert_eq!(run_cpu(&k, &flat), reference);
}

#[test]
fn sums_over_a_flat_buffer_equal_the_term_by_term_sums() {
    use heddle_runtime::interp::Env;
    use heddle_runtime::launch::Buffer;
    let xs = vec![3i64, -1, 5, i64::MAX];
    let flat =
        Env::default().with_buffer("X".into(), Buffer::from_scalar_vec(ScalarVec::I64(xs.clone()), "X").unwrap());
    let values = Env::default().with_value("X".into(), Value::array(xs.iter().map(|&x| Value::Int(x)).collect()));
    for (text, expect) in [
        ("sum(f = 0 .. 2, toNat(X@f))", Some(7)),
        ("sum(f = 1 .. 1, toNat(X@f))", Some(-1)),
        ("sum(f = 2 .. 1, toNat(X@f))", Some(0)),
        ("sum(f = 0 .. 3, toNat(X@f))", None), // overflows
        ("sum(f = 0 .. 4, toNat(X@f))", None), // reads past the end
        ("sum(g = 0 .. 1, sum(f = 0 .. g, toNat(X@f)))", Some(5)),
    ] {
        let n = heddle_ir::parser::parse_nat(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        let (by_buffer, by_values) = (n.eval(&flat), n.eval(&values));
        assert_eq!(by_buffer.as_ref().ok(), expect.as_ref(), "{text}");
        assert_eq!(
            format!("{by_buffer:?}"),
            format!("{by_values:?}"),
            "{text}: the same result or error as term by term"
        );
    }
}

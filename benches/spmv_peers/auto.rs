//! The "heddle auto" rows of `spmv_peers`: `examples/dense_mv.hdl` (its
//! `float` or, for f64, `double` variant) with `--encoding matrix=auto`,
//! through the library path `heddle run` takes
//! (`heddle::cli::auto::sparsify_auto`: the structural inspector's ranking,
//! then the first format the front door accepts), then the CPU lowering; the
//! matrix stored in the chosen encoding (not timed, as `run --matrix` stores
//! it before the kernel runs). One configuration for every matrix: no
//! timing decides the format, as MKL's `mkl_sparse_optimize` decides.

use crate::Csr;
use heddle_ir::loops::LoopProgram;
use heddle_runtime::io::read::{Loaded, ScalarKind};
use heddle_runtime::launch::Launch;
use heddle_runtime::sparse::build;
use heddle_runtime::value::Value;

/// The auto kernel laid out for one matrix and precision.
pub struct Laid {
    /// The chosen format's name (`CSR32`, `DIA`, …).
    pub choice: String,
    pub program: LoopProgram,
    pub launch: Launch,
    /// A SELL-C-σ choice with σ > 1: its row order, undone in every timed run.
    pub sell: Option<heddle_runtime::sparse::sell::Sell>,
}

/// `dense_mv.hdl` for `f32` (as written) or `f64`.
fn source(f32: bool) -> String {
    let text = include_str!("../../examples/dense_mv.hdl");
    if f32 { text.to_string() } else { text.replace("[float]", "[double]") }
}

/// Chooses, sparsifies, lowers and lays out the auto kernel for `a`.
pub fn lay_out(a: &Csr, f32: bool, x_of: fn(usize) -> f64) -> Laid {
    let src = source(f32);
    let file = heddle::source::SourceFile::new("dense_mv.hdl", &src);
    let (program, _) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d)));
    let coo = crate::tuned::entries(a);
    let start = std::time::Instant::now();
    let picked = heddle::cli::auto::sparsify_auto(&file, &program, "matrix", &coo, &[], &|k| {
        heddle::cpu::lower(k, "auto").and_then(|p| heddle::cpu::compile(&p)).map_err(|d| d.message)
    })
    .unwrap_or_else(|f| panic!("{}: auto: {}", a.name, f.message()));
    // The inspection and the front door's attempts (the entries already read).
    let ms = start.elapsed().as_secs_f64() * 1e3;
    eprintln!("    auto {} (chosen in {ms:.1} ms): {}", if f32 { "f32" } else { "f64" }, picked.choice.line());
    let kernel = picked.kernel;
    let (nats, mut inputs, sell) = match picked.spec.2 {
        // SELL-C-σ: the three arrays, packed as `heddle run --matrix` packs them
        // (and with σ > 1 the row order, undone in every timed run).
        heddle::cli::sparsify::Format::Sell(spec) => {
            let packed = heddle::cli::sell::pack(&kernel, "matrix", &a.name, &spec, &coo)
                .unwrap_or_else(|f| panic!("{}: SELL: {}", a.name, f.message()));
            (packed.nats, packed.inputs, packed.sorted)
        }
        heddle::cli::sparsify::Format::Encoding(_) => {
            let (enc, elem) =
                heddle_runtime::io::bind::tensor_param(&kernel, "matrix").expect("a tensor parameter `matrix`");
            let stored = build::pack(&coo, enc, elem).unwrap_or_else(|e| panic!("{}: store: {e}", a.name));
            let (nats, inputs) =
                heddle_runtime::io::bind::stored_tensor_inputs(&kernel, "matrix", stored).expect("bind the matrix");
            (nats, inputs, None)
        }
    };
    let xs: Vec<Value> = (0..a.cols).map(|j| Value::Float(x_of(j))).collect();
    inputs.push((
        "xs".into(),
        Loaded::Flat { shape: vec![a.cols as u64], items: xs, dtype: "float64".into(), kinds: vec![ScalarKind::Float] },
    ));
    let env = heddle_runtime::io::bind_inputs_flat(&kernel, &nats, inputs).expect("bind inputs");
    let mut program =
        heddle::cpu::lower(&kernel, "dense_mv_auto").unwrap_or_else(|d| panic!("{}", picked.file.render(&[d])));
    heddle::cli::sell::trust_columns(&kernel, &mut program);
    let launch = heddle_runtime::launch::prepare(&program, &env).expect("lay out");
    Laid { choice: picked.choice.encoding, program, launch, sell }
}

//! The "heddle tuned" column of `spmv_peers`: per matrix, SpMV variants in
//! other encodings than the CSR32 baseline, each given the matrix stored in
//! its own encoding (as `heddle tune --matrix` stores it, the conversion not
//! timed); the table reports, per matrix, the fastest of them and the
//! baseline at 2 threads, and which it was.
//!
//! The variants: the CSR32 baseline's kernel compiled with other settings
//! (`heddle run --accumulators`, `--chunks-per-thread`): one accumulator
//! (`csr32a1`), eight (`csr32a8`), one accumulator and one chunk per thread
//! (`csr32a1c1`); CSR with 16-bit coordinates (32-bit positions), DIA,
//! ELL with as many slices as the longest row (32-bit positions and
//! coordinates), BSR with 1×8 blocks (a row stored in runs of 8
//! columns), BSR with 8×1 blocks (`bsr8x1`: a block row's 8 rows in vector
//! lanes, 16-bit block coordinates where the columns fit, skipped when the
//! rows are not a multiple of 8), and SELL-8-1 (`sell8`: slices of 8 rows run in vector lanes,
//! `examples/sparse/spmv_sell8.hdl`, packed by
//! `heddle_runtime::sparse::sell`; σ = 1, so its result is y in row order
//! and no permutation is left to apply), and the same with 16-bit columns
//! (`sell8c16`, `examples/sparse/spmv_sell8c16.hdl`) where the matrix has at
//! most 65 536 columns; and SELL-8-σ (`sell8s{σ}`, rows sorted by length
//! within windows of σ rows, by default the whole matrix, see [`sigmas`]),
//! whose result is put back in row order inside every timed run; for an
//! iso-valued matrix also iso-valued SELL-8 and SELL-8-σ (`sell8iso`,
//! `sell8s{σ}iso`: no values, each lane's padding masked by its row's
//! length; `heddle run --encoding 'A=SELL(8, sigma = S, explicitVal = V)'`'s
//! kernel and packing). One whose storage would exceed 3x the matrix's plain CSR
//! bytes (`heddle_runtime::sparse::estimate`, the limit `tune` applies), or
//! that cannot hold the matrix (a column past 65535 for 16-bit
//! coordinates), is skipped, and the reason printed.

use crate::Csr;
use heddle_ir::ScalarType;
use heddle_ir::loops::LoopProgram;
use heddle_runtime::cpu::Tuning;
use heddle_runtime::io::read::{Loaded, ScalarKind};
use heddle_runtime::launch::Launch;
use heddle_runtime::sparse::coo::Coo;
use heddle_runtime::sparse::{build, convert, estimate};
use heddle_runtime::value::Value;

/// A variant laid out for one matrix and precision, ready to time.
pub struct Laid {
    pub name: String,
    pub program: LoopProgram,
    pub launch: Launch,
    /// The code settings it runs with.
    pub tuning: Tuning,
    /// SELL-8-σ with σ > 1 (its packed arrays dropped): the kernel's result is
    /// in sliced order, and every timed run puts it back in row order
    /// (`Sell::unpermute_into`), as `heddle run` does.
    pub sell: Option<heddle_runtime::sparse::sell::Sell>,
}

/// The variants' sources for one matrix: (name, source), `elem` `f64` or `f32`.
fn sources(a: &Csr, elem: &str, scalar: &str) -> Vec<(String, String)> {
    let longest = a.rowptr.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0).max(1);
    let row_dot = "A :>> map(fun(row => row :>> map(fun(e => e.2 * (xs@e.1))) :>> reduce(+, 0)))";
    let csr16 = format!(
        "#C = #sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }}>\n\
         fun(A: tensor<?x?x{elem}, #C> => fun(xs: [{scalar}]_A_dim1 => {row_dot}))\n"
    );
    let dia = include_str!("../../examples/sparse/spmv_dia.hdl")
        .replace("xf64", &format!("x{elem}"))
        .replace("[double]", &format!("[{scalar}]"));
    let ell = include_str!("../../examples/sparse/spmv_ell.hdl")
        .replace(
            "c * 3 * i : dense, i : dense, j : compressed)",
            &format!("c * {longest} * i : dense, i : dense, j : compressed), posWidth = 32, crdWidth = 32"),
        )
        .replace("xf32", &format!("x{elem}"))
        .replace("[float]", &format!("[{scalar}]"));
    let bsr1x8 = include_str!("../../examples/sparse/spmv_bsr_1x8.hdl")
        .replace("xf64", &format!("x{elem}"))
        .replace("[double]", &format!("[{scalar}]"));
    let mut out = vec![("csr16".into(), csr16), ("dia".into(), dia), (format!("ell{longest}"), ell)];
    // An iso-valued matrix (every value the same, bit for bit: a graph's
    // adjacency matrix): CSR32 and CSR16 with `explicitVal`, which read no
    // values (`storage_types::iso_value`).
    if let Some(v) = iso_value(a, elem == "f32") {
        for (name, crd) in [("csr32iso", 32), ("csr16iso", 16)] {
            out.push((
                name.into(),
                format!(
                    "#C = #sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = {crd}, explicitVal = {v} : {elem} }}>\n\
                     fun(A: tensor<?x?x{elem}, #C> => fun(xs: [{scalar}]_A_dim1 => {row_dot}))\n"
                ),
            ));
        }
    } else {
        eprintln!("    csr32iso: skipped, the matrix's values are not all one value");
    }
    // BSR(8, 1): a block row's 8 rows in vector lanes, one coordinate per 8
    // values (the front door's lane form, rewrite/src/sparsify/lanes.rs);
    // 16-bit coordinates where the columns fit, as `auto` spells it.
    if a.rows.is_multiple_of(8) {
        let crd = if a.cols <= 1 << 16 { 16 } else { 32 };
        out.push((
            "bsr8x1".into(),
            format!(
                "#B = #sparse_tensor.encoding<{{ map = (i, j) -> (i floordiv 8 : dense, j floordiv 1 : compressed, i mod 8 : dense, j mod 1 : dense), posWidth = 32, crdWidth = {crd} }}>\n\
                 fun(A: tensor<?x?x{elem}, #B> => fun(xs: [{scalar}]_A_dim1 =>\n\
                 A :>> map(fun(brow => brow\n\
                   :>> map(fun(b => generate(8, fun(l => (b.2 :>> join)@l * xs@b.1))))\n\
                   :>> reduce(fun(acc, t => zip(acc, t) :>> map(fun(q => q.1 + q.2))), generate(8, fun(z => 0)))))\n\
                 :>> join))\n"
            ),
        ));
    } else {
        // The result has 8 rows per block row.
        eprintln!("    bsr8x1: skipped, {} rows are not a multiple of 8", a.rows);
    }
    if a.cols.is_multiple_of(8) {
        out.push(("bsr1x8".into(), bsr1x8));
    } else {
        // The kernel splits x in 8s.
        eprintln!("    bsr1x8: skipped, {} columns are not a multiple of 8", a.cols);
    }
    out
}

/// The one value every entry of `a` holds, at f32 when `f32`, written
/// exactly (as `explicitVal` takes it); `None` when two differ, for a NaN or
/// an infinity, or without entries.
fn iso_value(a: &Csr, f32: bool) -> Option<String> {
    let round = |v: f64| if f32 { f64::from(v as f32) } else { v };
    let first = round(*a.val.first()?);
    (first.is_finite() && a.val.iter().all(|&v| round(v).to_bits() == first.to_bits())).then(|| format!("{first:?}"))
}

/// The matrix's entries.
pub fn entries(a: &Csr) -> Coo {
    let mut coords = Vec::with_capacity(2 * a.val.len());
    for i in 0..a.rows {
        for k in a.rowptr[i] as usize..a.rowptr[i + 1] as usize {
            coords.extend([i as u64, a.col[k] as u64]);
        }
    }
    Coo { dims: vec![a.rows as u64, a.cols as u64], coords, values: a.val.clone().into() }
}

/// Lays out every variant that suits `a`; prints why the others are skipped.
pub fn lay_out(a: &Csr, f32: bool, x_of: fn(usize) -> f64) -> Vec<Laid> {
    let (elem, scalar, ty) = if f32 { ("f32", "float", ScalarType::F32) } else { ("f64", "double", ScalarType::F64) };
    let coo = entries(a);
    let csr_enc = heddle_ir::encoding::parse_encoding(
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>",
        0,
    )
    .expect("CSR");
    let csr = build::pack(&coo, &csr_enc, ty).expect("CSR storage");
    let plain = estimate::plain_size(&coo, ty);
    let mut out = Vec::new();
    for (name, accumulators, chunks_per_thread) in [("csr32a1", 1, 8), ("csr32a8", 8, 8), ("csr32a1c1", 1, 1)] {
        let program = crate::lowered(f32);
        let launch = crate::launch(&program, a, f32);
        let tuning = Tuning { accumulators, chunks_per_thread, ..Tuning::default() };
        out.push(Laid { name: name.into(), program, launch, tuning, sell: None });
    }
    for (name, src) in sources(a, elem, scalar) {
        let file = heddle::source::SourceFile::new(&name, &src);
        let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{name}: {}", file.render(&d)));
        let (enc, _) = heddle_runtime::io::bind::tensor_param(&kernel, "A").expect("a tensor parameter A");
        let size = estimate::storage_size(&coo, enc, ty).expect("level sizes");
        if size.bytes > 3 * plain {
            eprintln!("    {name} {elem}: skipped, {} bytes stored against {plain} as CSR", size.bytes);
            continue;
        }
        let stored = match convert::convert(&csr, enc) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("    {name} {elem}: skipped, {e}");
                continue;
            }
        };
        let (nats, mut inputs) = heddle_runtime::io::bind::stored_tensor_inputs(&kernel, "A", stored).expect("bind A");
        let xs: Vec<Value> = (0..a.cols).map(|j| Value::Float(x_of(j))).collect();
        inputs.push((
            "xs".into(),
            Loaded::Flat {
                shape: vec![a.cols as u64],
                items: xs,
                dtype: "float64".into(),
                kinds: vec![ScalarKind::Float],
            },
        ));
        let env = heddle_runtime::io::bind_inputs_flat(&kernel, &nats, inputs).expect("bind inputs");
        let program = heddle::cpu::lower(&kernel, &name).unwrap_or_else(|d| panic!("{}", file.render(&[d])));
        let launch = heddle_runtime::launch::prepare(&program, &env).expect("lay out");
        if name == "csr32iso" {
            // Also at one accumulator, as csr32a1 (the fastest CSR32 on rmat at f64).
            let tuning = Tuning { accumulators: 1, ..Tuning::default() };
            let (program, launch) = (program.clone(), launch.clone());
            out.push(Laid { name: "csr32isoa1".into(), program, launch, tuning, sell: None });
        }
        out.push(Laid { name, program, launch, tuning: Tuning::default(), sell: None });
    }
    out.extend(sell8(a, f32, ty, plain, x_of, false, 1));
    if a.cols <= 1 << 16 {
        out.extend(sell8(a, f32, ty, plain, x_of, true, 1));
    } else {
        eprintln!("    sell8c16: skipped, {} columns do not fit 16 bits", a.cols);
    }
    for sigma in sigmas() {
        out.extend(sell8(a, f32, ty, plain, x_of, false, sigma));
    }
    // Iso-valued SELL (no values; lanes masked by their rows' lengths): SELL-8
    // and the SELL-8-σ windows, through the front door as `heddle run
    // --encoding 'A=SELL(8, sigma = S, explicitVal = V)'` takes them.
    match iso_value(a, f32) {
        Some(v) => {
            for sigma in std::iter::once(1).chain(sigmas()) {
                out.extend(sell8_iso(a, f32, &coo, &v, x_of, sigma));
            }
        }
        None => eprintln!("    sell8iso: skipped, the matrix's values are not all one value"),
    }
    out
}

/// Iso-valued SELL-8-σ (`sell8iso`, `sell8s{σ}iso`; `sigma` 0 for the whole
/// matrix) for `a`, every entry `v`: `examples/dense_mv.hdl` sparsified with
/// `SELL(8, sigma = S, explicitVal = v)` and packed by `heddle run`'s packer
/// (`heddle::cli::sell::pack`), the columns' range stated as `run` states
/// it. With σ > 1 the timed run includes putting y back in row order.
fn sell8_iso(a: &Csr, f32: bool, coo: &Coo, v: &str, x_of: fn(usize) -> f64, sigma: usize) -> Option<Laid> {
    let sigma = if sigma == 0 { a.rows.div_ceil(8).max(1) * 8 } else { sigma };
    let name = if sigma == 1 { "sell8iso".to_string() } else { format!("sell8s{sigma}iso") };
    let text = include_str!("../../examples/dense_mv.hdl");
    let src = if f32 { text.to_string() } else { text.replace("[float]", "[double]") };
    let file = heddle::source::SourceFile::new("dense_mv.hdl", &src);
    let (program, _) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d)));
    let spec = format!("SELL(8, sigma = {sigma}, explicitVal = {v})");
    let spec = heddle_rewrite::sparsify::sell::parse_name(&spec).expect("a SELL spelling").expect("a valid SELL");
    let specs = [("matrix".to_string(), "SELL".to_string(), heddle::cli::sparsify::Format::Sell(spec.clone()))];
    let sparse = heddle::cli::sparsify::front_door(&file, &program, &specs)
        .unwrap_or_else(|f| panic!("{name}: the front door: {}", f.message()));
    let kernel = sparse.kernel;
    let packed = heddle::cli::sell::pack(&kernel, "matrix", &name, &spec, coo)
        .unwrap_or_else(|f| panic!("{name}: pack: {}", f.message()));
    eprintln!("    {name}: {} rows in {} slices of 8", packed.rows, packed.padded / 8);
    let mut inputs = packed.inputs;
    let xs: Vec<Value> = (0..a.cols).map(|j| Value::Float(x_of(j))).collect();
    inputs.push((
        "xs".into(),
        Loaded::Flat { shape: vec![a.cols as u64], items: xs, dtype: "float64".into(), kinds: vec![ScalarKind::Float] },
    ));
    let env = heddle_runtime::io::bind_inputs_flat(&kernel, &packed.nats, inputs).expect("bind iso SELL inputs");
    let mut program = heddle::cpu::lower(&kernel, &name).unwrap_or_else(|d| panic!("{}", sparse.file.render(&[d])));
    heddle::cli::sell::trust_columns(&kernel, &mut program);
    let launch = heddle_runtime::launch::prepare(&program, &env).expect("lay out iso SELL");
    Some(Laid { name, program, launch, tuning: Tuning::default(), sell: packed.sorted })
}

/// The sorting windows of the SELL-8-σ variants (`sell8s{σ}`): by default
/// one, the whole matrix (`0`: its rows rounded up to a whole slice). On
/// `rmat_s18_ef10` it stored 1.02 entries per nonzero against 1.06 at σ =
/// 32 768, 1.31 at 4096 and 3.74 at 64, and ran fastest of them in every
/// interleaved run, the unpermute included (docs/performance.md,
/// "SELL-C-σ … sellsigma"). `HEDDLE_BENCH_SIGMAS=64,4096,…` times others
/// (each a multiple of 8).
fn sigmas() -> Vec<usize> {
    match std::env::var("HEDDLE_BENCH_SIGMAS") {
        Ok(list) => list
            .split(',')
            .map(|s| s.trim().parse::<usize>().unwrap_or_else(|_| panic!("HEDDLE_BENCH_SIGMAS: `{s}` is no number")))
            .collect(),
        Err(_) => vec![0],
    }
}

/// SELL-8-σ laid out for `a` (with 16-bit columns when `narrow`: `sell8c16`;
/// `sigma` 0 for the whole matrix), or `None` (the reason printed) when its
/// padding would exceed 3x the plain CSR bytes. With `σ > 1` its result is
/// in sliced order, and the timed run includes putting it back in row order
/// ([`Laid::sell`]).
#[allow(clippy::too_many_arguments)]
fn sell8(
    a: &Csr,
    f32: bool,
    ty: ScalarType,
    plain: u64,
    x_of: fn(usize) -> f64,
    narrow: bool,
    sigma: usize,
) -> Option<Laid> {
    let sigma = if sigma == 0 { a.rows.div_ceil(8).max(1) * 8 } else { sigma };
    let name = match (narrow, sigma) {
        (true, 1) => "sell8c16".to_string(),
        (false, 1) => "sell8".to_string(),
        (true, s) => format!("sell8c16s{s}"),
        (false, s) => format!("sell8s{s}"),
    };
    let name = name.as_str();
    let rowptr: Vec<usize> = a.rowptr.iter().map(|&p| p as usize).collect();
    let col: Vec<usize> = a.col.iter().map(|&j| j as usize).collect();
    let elem = if f32 { "f32" } else { "f64" };
    let s = match heddle_runtime::sparse::sell::from_csr(
        a.rows,
        a.cols,
        &rowptr,
        &col,
        &a.val,
        8,
        sigma,
        ty.size_bytes(),
        Some(3 * plain),
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("    {name} {elem}: skipped, {e}");
            return None;
        }
    };
    eprintln!(
        "    {name} {elem}: {} slices, {:.2} stored entries per nonzero",
        s.slices(),
        s.col.len() as f64 / a.val.len().max(1) as f64
    );
    let src = if narrow {
        include_str!("../../examples/sparse/spmv_sell8c16.hdl")
    } else {
        include_str!("../../examples/sparse/spmv_sell8.hdl")
    }
    .replace("[float]", if f32 { "[float]" } else { "[double]" });
    let file = heddle::source::SourceFile::new(name, &src);
    let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{name}: {}", file.render(&d)));
    let flat = |items: Vec<Value>, kind: ScalarKind, dtype: &str| Loaded::Flat {
        shape: vec![items.len() as u64],
        items,
        dtype: dtype.into(),
        kinds: vec![kind],
    };
    let ints = |v: &[i32]| v.iter().map(|&x| Value::Int(x as i64)).collect::<Vec<_>>();
    let inputs = vec![
        ("soff".into(), flat(ints(&s.soff), ScalarKind::Int, "int32")),
        ("cols".into(), flat(ints(&s.col), ScalarKind::Int, if narrow { "uint16" } else { "int32" })),
        ("vals".into(), flat(s.val.iter().map(|&v| Value::Float(v)).collect(), ScalarKind::Float, "float64")),
        ("xs".into(), flat((0..a.cols).map(|j| Value::Float(x_of(j))).collect(), ScalarKind::Float, "float64")),
    ];
    let nats = [("m".to_string(), a.cols as i64), ("S".to_string(), s.slices() as i64)];
    let env = heddle_runtime::io::bind_inputs_flat(&kernel, &nats, inputs).expect("bind SELL inputs");
    let mut program = heddle::cpu::lower(&kernel, name).unwrap_or_else(|d| panic!("{}", file.render(&[d])));
    // The packer writes columns below m, as a tensor's coordinates are: the
    // runtime validates them against this range, then runs the code without
    // the per-lane column checks (as for CSR32's tensor coordinates).
    program.ranges.push(heddle_ir::loops::InputRange {
        buf: "cols".into(),
        field: 0,
        below: heddle_ir::loops::Expr::var("m"),
    });
    let launch = heddle_runtime::launch::prepare(&program, &env).expect("lay out SELL");
    // What putting y back in row order needs: the slots (the arrays are laid out already).
    let sell = (sigma > 1).then(|| heddle_runtime::sparse::sell::Sell { col: Vec::new(), val: Vec::new(), ..s });
    Some(Laid { name: name.into(), program, launch, tuning: Tuning::default(), sell })
}

//! Rank-4 and rank-5 tensors with nested compressed levels on every backend: the flat
//! position of a value several compressed levels down is a Σ of Σs that the simplifier closes
//! (each telescoped Σ's guard is decided by the positions' monotonicity, ARCHITECTURE.md "A Σ
//! the host cannot precompute"). For each mix of dense, compressed and singleton levels, one
//! kernel reads every level's coordinates and the values; it is compiled once per backend and
//! run on random tensors (empty ones included), and the CPU's and OpenCL's results must equal
//! the interpreter's.

use crate::common::{self, Rng};
use heddle::source::SourceFile;
use heddle_runtime::interp::Env;
use heddle_runtime::io::{Loaded, bind_inputs};
use heddle_typeck::Kernel;
use std::collections::BTreeSet;
use std::path::Path;

/// Level mixes, TACO's letters (`d` dense, `s` compressed, `u` compressed non-unique, `q`
/// singleton). Before the guard was decided, every one with three or more nested compressed
/// levels (`dsss`, `ssss`, `sdss`, rank 5 …) was refused.
const FORMATS: &[&str] =
    &["ssss", "dsss", "sdss", "ssds", "sssd", "dsds", "suqq", "dsuq", "sssss", "dssss", "ssdss", "sssuq", "dsuqq"];

/// The sum below level `level` of the view value `var`, each entry weighted by its
/// coordinates (so a wrong coordinate position changes the result, as a wrong value's does).
fn below(format: &[u8], level: usize, var: &str) -> String {
    let Some(&letter) = format.get(level) else { return var.to_string() };
    let x = format!("x{level}");
    match letter {
        b'd' => format!("({var} :>> map(fun({x} => {})) :>> reduce(+, 0))", below(format, level + 1, &x)),
        b's' | b'u' => format!(
            "({var} :>> map(fun({x} => {} * float({x}.1 + {level}))) :>> reduce(+, 0))",
            below(format, level + 1, &format!("{x}.2"))
        ),
        b'q' => format!("({} * float({var}.1 + {level}))", below(format, level + 1, &format!("{var}.2"))),
        other => panic!("no level letter {}", other as char),
    }
}

/// The kernel for one mix: per outer coordinate, the weighted sum of its subtree.
fn kernel_text(format: &str) -> String {
    let f = format.as_bytes();
    let dims = vec!["?"; f.len()].join("x");
    let body = if f[0] == b'd' {
        format!("A :>> map(fun(x0 => {}))", below(f, 1, "x0"))
    } else {
        format!("A :>> map(fun(x0 => (x0.1, {}))) :>> scatterAdd(A_dim0)", below(f, 1, "x0.2"))
    };
    format!("fun(A: tensor<{dims}xf32, {format}> =>\n  {body})\n")
}

/// A random tensor of the given rank as a `.tns` file: sizes 1 to 4, up to 16 distinct entries.
fn random_tns(dir: &Path, name: &str, rank: usize, rng: &mut Rng) -> std::path::PathBuf {
    let dims: Vec<u64> = (0..rank).map(|_| 1 + rng.below(4)).collect();
    let capacity: u64 = dims.iter().product();
    let want = rng.below(17).min(capacity);
    let mut coords = BTreeSet::new();
    while (coords.len() as u64) < want {
        coords.insert(dims.iter().map(|&d| rng.below(d)).collect::<Vec<u64>>());
    }
    let mut text =
        format!("{rank} {}\n{}\n", coords.len(), dims.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
    for c in &coords {
        let one_based: Vec<String> = c.iter().map(|v| (v + 1).to_string()).collect();
        text.push_str(&format!("{} {}\n", one_based.join(" "), rng.value()));
    }
    common::write(dir, name, &text)
}

fn bind(kernel: &Kernel, tns: &Path) -> Env {
    let (nats, buffers) = heddle_runtime::io::bind::tensor_inputs(kernel, "A", tns).expect("the tensor binds");
    let inputs: Vec<(String, Loaded)> = buffers;
    bind_inputs(kernel, &nats, inputs).expect("the inputs bind")
}

#[test]
fn rank_4_and_5_level_mixes_agree_on_every_backend() {
    let dir = common::scratch_dir("nested-levels");
    let mut rng = Rng(0x5157_4a4b_0000_0004);
    let cl = common::opencl_platform();
    for format in FORMATS {
        let text = kernel_text(format);
        let file = SourceFile::new(format!("{format}.hdl"), &text);
        let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{format}:\n{}", file.render(&d)));
        let cpu = heddle::cpu::lower(&kernel, "nested")
            .unwrap_or_else(|d| panic!("{format}: the CPU backend refuses:\n{}", file.render(&[d])));
        let opencl = cl.map(|_| {
            heddle::opencl::compile(&kernel, "nested")
                .unwrap_or_else(|d| panic!("{format}: OpenCL refuses:\n{}", file.render(&[d])))
        });
        for case in 0..common::cases(3) {
            let tns = random_tns(dir.path(), &format!("{format}_{case}.tns"), format.len(), &mut rng);
            let at = format!("{format}, tensor {}", std::fs::read_to_string(&tns).unwrap().replace('\n', "; "));
            let env = bind(&kernel, &tns);
            let ty = &kernel.body.ty;
            let json = |v: &heddle_runtime::value::Value| heddle_runtime::io::write::to_json(v, ty);
            let want = heddle_runtime::interp::run_kernel(&kernel, &env)
                .unwrap_or_else(|d| panic!("{at}: the interpreter fails: {}", d.message));
            let want = json(&want);
            let got = heddle::cpu::run(&kernel, &cpu, &env, 2)
                .unwrap_or_else(|d| panic!("{at}: the CPU backend fails: {}", d.message));
            assert!(common::json_agree(&json(&got), &want), "{at}: cpu gives {}, the interpreter {want}", json(&got));
            if let (Some(cl), Some(compiled)) = (cl, &opencl) {
                let (got, _) = heddle::opencl::run(cl, &kernel, compiled, &env, 1)
                    .unwrap_or_else(|d| panic!("{at}: OpenCL fails: {}", d.message));
                assert!(
                    common::json_agree(&json(&got), &want),
                    "{at}: opencl gives {}, the interpreter {want}",
                    json(&got)
                );
            }
        }
    }
}

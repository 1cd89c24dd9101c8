//! Shared by the `program_*` tests: paths, type checking with heddle-typeck,
//! running kernels on the interpreter.
#![allow(dead_code)]

use heddle_ir::Program;
use heddle_rewrite::program::{Checked, CostKind, Limits, Options, Outcome, Rule, explore, parse_rules};
use heddle_runtime::io::{Loaded, bind_inputs};
use std::path::PathBuf;

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `*.hdl` files of a directory, sorted.
pub fn hdl_files(dir: PathBuf) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hdl"))
        .collect();
    v.sort();
    v
}

pub fn stem(p: &std::path::Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

pub fn parse_file(p: &std::path::Path) -> Program {
    heddle_ir::parser::parse_program(&std::fs::read_to_string(p).unwrap())
        .unwrap_or_else(|d| panic!("{}: {d:?}", p.display()))
}

pub fn check(p: &Program) -> Result<Checked, String> {
    match heddle_typeck::check_program(p) {
        Ok(k) => Ok(Checked {
            ty: k.ty.to_string(),
            obligations: k.obligations.iter().map(|o| o.cond.clone()).collect(),
            kernel_ty: Some(k.ty.clone()),
        }),
        Err(d) => Err(format!("{d:?}")),
    }
}

pub fn rules_file(name: &str) -> Vec<Rule> {
    let path = root().join("rewrite/tests/rules").join(name);
    parse_rules(name, &std::fs::read_to_string(path).unwrap()).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

pub fn rewrite(p: &Program, rules: &[Rule], cost: CostKind) -> Outcome {
    let opts = Options { limits: Limits::default(), cost: cost.into(), ..Options::default() };
    explore(p, rules, &opts, &check).unwrap()
}

/// Runs a program's kernel on JSON inputs; the result as JSON.
pub fn run(p: &Program, nats: &[(&str, i64)], inputs: &[(&str, serde_json::Value)]) -> serde_json::Value {
    let kernel =
        heddle_typeck::check_program(p).unwrap_or_else(|d| panic!("{d:?}\n{}", heddle_ir::printer::print_program(p)));
    let loaded = inputs.iter().map(|(k, v)| (k.to_string(), Loaded::Json(v.clone()))).collect();
    let env = bind_inputs(&kernel, &nats.iter().map(|(k, v)| (k.to_string(), *v)).collect::<Vec<_>>(), loaded)
        .unwrap_or_else(|e| panic!("{e}"));
    let v = heddle_runtime::interp::run_kernel(&kernel, &env)
        .unwrap_or_else(|d| panic!("{d:?}\n{}", heddle_ir::printer::print_program(p)));
    heddle_runtime::io::write::to_json(&v, &kernel.body.ty)
}

//! File-driven front-end tests: every example's inferred type and canonical
//! form (`examples/` and its sub-directories), every malformed program's
//! diagnostics (insta snapshots), and parse → print → parse for everything
//! that parses.

use crate::common;

use common::{hdl_files, stem};
use heddle::source::SourceFile;
use heddle_ir::parser::parse_program;
use heddle_ir::printer::print_program;

fn round_trip(name: &str, src: &str) {
    let Ok(p) = parse_program(src) else { return };
    let text = print_program(&p);
    let p2 =
        parse_program(&text).unwrap_or_else(|e| panic!("{name}: the canonical form does not parse: {e:?}\n{text}"));
    assert_eq!(p, p2, "{name}: parse → print → parse changed the tree\n{text}");
    assert_eq!(print_program(&p2), text, "{name}: fmt is not idempotent");
}

/// Every example: `examples/*.hdl` named by stem, `examples/DIR/*.hdl` by `DIR_stem`.
fn examples() -> Vec<(String, std::path::PathBuf)> {
    let mut out: Vec<_> = hdl_files("examples").into_iter().map(|p| (stem(&p), p)).collect();
    let mut dirs: Vec<_> = std::fs::read_dir(common::root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = stem(&dir);
        out.extend(hdl_files(&format!("examples/{name}")).into_iter().map(|p| (format!("{name}_{}", stem(&p)), p)));
    }
    out
}

#[test]
fn example_types() {
    let files = examples();
    assert!(files.len() >= 6, "the paper's listings are missing from examples/");
    assert!(files.iter().any(|(n, _)| n.starts_with("sparse_")), "examples/sparse/ is not covered");
    for (name, path) in files {
        let file = SourceFile::read(path.to_str().unwrap()).unwrap();
        let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{}", file.render(&d)));
        insta::assert_snapshot!(format!("type_{name}"), kernel.ty.to_string());
    }
}

#[test]
fn example_fmt() {
    for (name, path) in examples() {
        let src = std::fs::read_to_string(&path).unwrap();
        let p = parse_program(&src).unwrap();
        insta::assert_snapshot!(format!("fmt_{name}"), print_program(&p));
        round_trip(&name, &src);
    }
}

#[test]
fn error_messages() {
    let files = hdl_files("tests/errors");
    assert!(files.len() >= 25, "only {} error cases", files.len());
    for path in files {
        let name = stem(&path);
        let file = SourceFile::read(path.to_str().unwrap()).unwrap();
        let diags = match heddle::check_source(&file) {
            Ok(_) => panic!("{name}: expected an error, but the program checks"),
            Err(d) => d,
        };
        // The snapshot shows the file relative to the repository.
        let rel = SourceFile::new(format!("tests/errors/{name}.hdl"), file.text.clone());
        insta::assert_snapshot!(format!("error_{name}"), rel.render(&diags));
        round_trip(&name, &file.text);
    }
}

#[test]
fn typing_programs() {
    let files = hdl_files("tests/typing");
    assert!(files.len() >= 10);
    for path in files {
        let name = stem(&path);
        let file = SourceFile::read(path.to_str().unwrap()).unwrap();
        let (_, kernel) = heddle::check_source(&file).unwrap_or_else(|d| panic!("{name}:\n{}", file.render(&d)));
        let mut text = kernel.ty.to_string();
        for o in &kernel.obligations {
            text.push_str(&format!("\nrequires {} ({})", o.cond, o.reason));
        }
        insta::assert_snapshot!(format!("typing_{name}"), text);
        round_trip(&name, &file.text);
    }
}

#[test]
fn examples_check() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "hdl") {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let p = heddle_ir::parser::parse_program(&src).unwrap();
        match heddle_typeck::check_program(&p) {
            Ok(k) => println!("{}: {}", path.display(), k.ty),
            Err(e) => panic!("{}: {:?}", path.display(), e),
        }
    }
}

use heddle_ir::parser::parse_program;
use heddle_ir::printer::print_program;

#[test]
fn examples_round_trip() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "hdl") {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let p = parse_program(&src).unwrap_or_else(|e| panic!("{}: {:?}", path.display(), e));
        let text = print_program(&p);
        let p2 = parse_program(&text).unwrap_or_else(|e| panic!("{}: reprint does not parse: {:?}\n{text}", path.display(), e));
        assert_eq!(p, p2, "{}", path.display());
        assert_eq!(print_program(&p2), text);
        println!("{text}");
    }
}

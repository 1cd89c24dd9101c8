//! The parser and the printer: whatever parses prints as text that parses
//! to the same program, and printing that again gives the same text.
#![no_main]

use heddle_ir::parser::parse_program;
use heddle_ir::printer::print_program;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(src) = heddle_fuzz::text(data) else { return };
    let Ok(program) = parse_program(src) else { return };
    let printed = print_program(&program);
    let reparsed = parse_program(&printed).unwrap_or_else(|e| panic!("the printed program does not parse: {e:?}\ninput: {src:?}\nprinted: {printed}"));
    assert!(reparsed == program, "print → parse changed the program\ninput: {src:?}\nprinted: {printed}");
    assert_eq!(print_program(&reparsed), printed, "printing is not stable\ninput: {src:?}");
    // The lossless formatter (comments kept) must accept what the parser does.
    if let Ok(formatted) = heddle_ir::printer::format_source(src) {
        let again = parse_program(&formatted).unwrap_or_else(|e| panic!("fmt output does not parse: {e:?}\ninput: {src:?}\nfmt: {formatted}"));
        assert!(again == program, "fmt changed the program\ninput: {src:?}\nfmt: {formatted}");
    }
});

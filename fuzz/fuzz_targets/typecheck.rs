//! Parse and type check: a kernel or located diagnostics, never a panic or
//! an internal error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(src) = heddle_fuzz::text(data) else { return };
    let Ok(program) = heddle_ir::parser::parse_program(src) else { return };
    if let Err(errors) = heddle_typeck::check_program(&program) {
        for e in errors {
            heddle_fuzz::no_internal_error("the type checker", &e.message, src);
        }
    }
});

//! Parse, check and lower to the loop IR, then emit OpenCL C: a program the
//! type checker accepts is lowered or refused with a located "cannot be
//! compiled" diagnostic; an "internal error" (lowering produced an invalid
//! loop program) is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(src) = heddle_fuzz::text(data) else { return };
    let Ok(program) = heddle_ir::parser::parse_program(src) else { return };
    let Ok(kernel) = heddle_typeck::check_program(&program) else { return };
    match heddle_rewrite::lower::lower_kernel(&kernel, "fuzz") {
        Ok(loops) => {
            if let Err(e) = heddle_codegen_opencl::compile(&loops) {
                heddle_fuzz::no_internal_error("OpenCL code generation", &e.message, src);
            }
        }
        Err(e) => heddle_fuzz::no_internal_error("lowering", &e.message, src),
    }
});

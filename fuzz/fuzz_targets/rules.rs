//! Rule files (`heddle rewrite --rules`): rules or located errors, never a
//! panic; every error's line and column lie inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = heddle_fuzz::text(data) else { return };
    if let Err(errors) = heddle_rewrite::program::parse_rules("fuzz.rules", text) {
        let lines = text.split('\n').count();
        for e in errors {
            assert!(e.line >= 1 && e.line <= lines && e.offset <= text.len(), "error outside the text: {e:?}\ninput: {text:?}");
        }
    }
});

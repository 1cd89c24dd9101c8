//! Validating inputs against the program's ranges (`LoopProgram::ranges`:
//! a tensor's coordinates lie below their level's size), so that a launch
//! can run code compiled without the checks they imply. One pass over each
//! such input per launch that is planned (once for any number of
//! repetitions), split across the launch's threads; an input outside its
//! range just means the launch runs the checked code, which then reports
//! the failing access where it is in the source.

use super::pool;
use super::split::Evaluator;
use crate::launch::{Buffer, Launch, Slot};
use heddle_ir::loops::LoopProgram;
use heddle_ir::ScalarType;

/// Records per chunk of the validation pass.
const CHUNK: usize = 1 << 16;

/// Whether every input named in `prog.ranges` lies in its range.
pub fn inputs_in_ranges(prog: &LoopProgram, launch: &Launch, threads: usize) -> bool {
    let ev = Evaluator { prog, launch };
    prog.ranges.iter().all(|r| {
        let Some(k) = prog.args.iter().position(|a| a.name == r.buf) else { return false };
        let (Some(Slot::Buffer(b)), Some(below)) = (launch.slots.get(k), ev.eval_closed(&r.below)) else { return false };
        let Some(&ty) = b.fields.get(r.field as usize) else { return false };
        below >= 0 && all_below(b, r.field as usize, ty, below as u64, threads)
    })
}

/// Whether field `field` (an integer of type `ty`) of every record of `b` is in `0 .. below`.
fn all_below(b: &Buffer, field: usize, ty: ScalarType, below: u64, threads: usize) -> bool {
    let (size, offset, width) = (b.layout.size, b.layout.offsets[field], ty.size_bytes());
    let bytes = b.bytes();
    let check = |(lo, hi): (i64, i64)| -> Result<(), heddle_codegen_cpu::Fault> {
        let ok = (lo as usize..hi as usize).all(|r| {
            let at = r * size + offset;
            let mut raw = [0u8; 8];
            raw[..width].copy_from_slice(&bytes[at..at + width]);
            let bits = u64::from_le_bytes(raw);
            // A negative signed value is sign-extended, so it is huge unsigned.
            let value = if ty.is_signed() && width < 8 && bits >> (8 * width - 1) & 1 == 1 { u64::MAX } else { bits };
            value < below
        });
        if ok { Ok(()) } else { Err(heddle_codegen_cpu::Fault::Check(0)) }
    };
    let n = b.len();
    let chunks: Vec<(i64, i64)> = (0..n.div_ceil(CHUNK)).map(|c| ((c * CHUNK) as i64, ((c + 1) * CHUNK).min(n) as i64)).collect();
    pool::run_chunks(&chunks, threads, &check).is_ok()
}

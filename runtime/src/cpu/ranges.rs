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
use heddle_ir::ScalarType;
use heddle_ir::loops::LoopProgram;

/// Records per chunk of the validation pass.
const CHUNK: usize = 1 << 16;

/// Whether every input named in `prog.ranges` lies in its range.
pub fn inputs_in_ranges(prog: &LoopProgram, launch: &Launch, threads: usize) -> bool {
    let ev = Evaluator { prog, launch };
    prog.ranges.iter().all(|r| {
        let Some(k) = prog.args.iter().position(|a| a.name == r.buf) else { return false };
        let (Some(Slot::Buffer(b)), Some(below)) = (launch.slots.get(k), ev.eval_closed(&r.below)) else {
            return false;
        };
        let Some(&ty) = b.fields.get(r.field as usize) else { return false };
        // Memory read in place may change after this pass (another thread
        // writing it): its uses stay checked (`Buffer::borrowed_coordinates`).
        if b.is_borrowed() {
            return false;
        }
        // Coordinates validated when they were bound need no second pass.
        below >= 0
            && (r.field == 0 && b.known_below(below as u64)
                || all_below(b, r.field as usize, ty, below as u64, threads))
    })
}

/// Whether field `field` (an integer of type `ty`) of every record of `b` is in `0 .. below`.
fn all_below(b: &Buffer, field: usize, ty: ScalarType, below: u64, threads: usize) -> bool {
    let (size, offset, width) = (b.layout.size, b.layout.offsets[field], ty.size_bytes());
    let bytes = b.bytes();
    let check = |(lo, hi): (i64, i64)| -> Result<(), heddle_codegen_cpu::Fault> {
        let (lo, hi) = (lo as usize, hi as usize);
        if size == width {
            // One field per record (a coordinates buffer): a branch-free
            // maximum the compiler vectorises.
            let ok = max_unsigned(&bytes[lo * width..hi * width], width, ty.is_signed()) < below;
            return if ok { Ok(()) } else { Err(heddle_codegen_cpu::Fault::Check(0)) };
        }
        let ok = (lo..hi).all(|r| {
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
    let chunks: Vec<(i64, i64)> =
        (0..n.div_ceil(CHUNK)).map(|c| ((c * CHUNK) as i64, ((c + 1) * CHUNK).min(n) as i64)).collect();
    pool::run_chunks(&chunks, threads, &check).is_ok()
}

/// The largest of the little-endian integers of `width` bytes in `bytes`,
/// a negative signed one counted as `u64::MAX` (never below any bound).
fn max_unsigned(bytes: &[u8], width: usize, signed: bool) -> u64 {
    macro_rules! max_of {
        ($t:ty) => {
            bytes.chunks_exact(width).map(|c| <$t>::from_le_bytes(c.try_into().expect("exact chunks"))).fold(
                0u64,
                |m, x| {
                    // Sign-extended to 64 bits, then seen unsigned: a negative value is huge.
                    #[allow(clippy::unnecessary_cast)]
                    let v = if signed { x as i64 as u64 } else { x as u64 };
                    m.max(v)
                },
            )
        };
    }
    match (width, signed) {
        (8, true) => max_of!(i64),
        (8, false) => max_of!(u64),
        (4, true) => max_of!(i32),
        (4, false) => max_of!(u32),
        (2, true) => max_of!(i16),
        (2, false) => max_of!(u16),
        (1, true) => max_of!(i8),
        _ => max_of!(u8),
    }
}

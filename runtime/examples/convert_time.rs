//! Times one conversion the way `heddle convert` does it (read, then
//! `Contents::into_encoding`), for profiling without building the CLI:
//!
//! ```text
//! cargo run --release -p heddle-runtime --example convert_time -- FILE ENCODING [REPS]
//! ```
//!
//! Prints the median conversion time; the file is read once per repetition
//! (the conversion consumes what was read), only the conversion is timed.

use heddle_runtime::sparse::file;
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, enc, rest @ ..] = args.as_slice() else {
        eprintln!("usage: convert_time FILE ENCODING [REPS]");
        std::process::exit(2);
    };
    let reps: usize = rest.first().and_then(|r| r.parse().ok()).unwrap_or(5);
    let enc = heddle_ir::encoding::parse_encoding(enc, 0).unwrap_or_else(|e| panic!("encoding: {e:?}"));
    let mut times = Vec::new();
    for _ in 0..reps {
        let contents = file::read_as_written(Path::new(path)).expect("read");
        let t = Instant::now();
        let out = contents.into_encoding(&enc).expect("convert");
        times.push(t.elapsed().as_secs_f64());
        std::hint::black_box(out);
    }
    times.sort_by(f64::total_cmp);
    println!("median {:.4} s, best {:.4} s over {reps}", times[reps / 2], times[0]);
}

"""Two heddle builds' CSR SpMV kernels timed against each other, interleaved.

f64 SpMV over CSR with 32-bit positions and coordinates, one thread (or --threads), on the
synthetic matrices of ../shared/bench (run its setup.sh first: it writes
/tmp/heddle-bench/matrices/bin/*.csr). Each round runs both binaries on each
matrix (`heddle run … --reps N --json`, the kernel's median), the new build
first in even rounds and second in odd ones; the figure is the median over
rounds of the new build's time over the old one's.

    python3 benches/spmv_ab.py --old OLD/heddle --new target/release/heddle --rounds 7
    python3 benches/spmv_ab.py --old OLD/heddle --new-args="--accumulators 1"   # a setting of the new build
    python3 benches/spmv_ab.py --old OLD/heddle --threads 1,2 --stat min   # also 2 threads; fastest launch
    python3 benches/spmv_ab.py --old OLD/heddle --prec f32   # f32 values and x (the matrix's values rounded)

`--stat min` compares each run's fastest launch instead of its median: on a machine shared with
other work the median of a 2-thread run often measures the other work, the fastest launch less so.
`--stat p10` (both builds must report it: `kernel_seconds.p10`) is between the two: the time 90 %
of the launches took at least, which a single lucky launch does not set as it sets the minimum.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

import numpy as np
import scipy.sparse as sp

KERNEL = """#CSR32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>

fun(A: tensor<?x?xf64, #CSR32> =>
fun(xs: [double]_A_dim1 =>
  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0.0)))))
"""

# (matrix, repetitions per run): enough for a stable median in well under a second.
CASES = [("uniform_5k_d4", 400), ("uniform_100k_d10", 60), ("banded_1M_k2", 15), ("rowband_5k", 15), ("uniform_1M_d5", 15),
         ("rmat_s18_ef10", 15)]


def read_csr(path):
    """The bench's binary CSR container (see ../shared/bench/scripts/csrbin.py)."""
    with open(path, "rb") as f:
        r, c, nnz = np.fromfile(f, dtype=np.int64, count=3)
        ip = np.fromfile(f, dtype=np.int32, count=r + 1)
        ix = np.fromfile(f, dtype=np.int32, count=nnz)
        v = np.fromfile(f, dtype=np.float64, count=nnz)
    return sp.csr_array((v, ix, ip), shape=(int(r), int(c)))


def kernel_median(binary, work, m, reps, extra=(), threads=1, stat="median"):
    out = subprocess.run(
        [binary, "run", os.path.join(work, "spmv.hdl"), "--backend", "cpu", "--threads", str(threads),
         "--matrix", f"A={work}/{m}.npz", "--input", f"xs={work}/{m}_x.npy",
         "--reps", str(reps), "--json", "-o", os.path.join(work, "y.npy"), *extra],
        capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} on {m}: {out.stderr}")
    return json.loads(out.stdout)["kernel_seconds"][stat]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the heddle binary to compare against")
    ap.add_argument("--new", default="target/release/heddle")
    ap.add_argument("--new-args", default="", help="more `heddle run` flags for the new build (--accumulators 1)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--matrices", default="/tmp/heddle-bench/matrices/bin")
    ap.add_argument("--only", default="", help="a comma-separated subset of the matrices")
    ap.add_argument("--threads", default="1", help="comma-separated thread counts (each its own line)")
    ap.add_argument("--prec", default="f64", choices=["f64", "f32"], help="the values' and x's type")
    ap.add_argument("--stat", default="median", choices=["median", "min", "p10"],
                    help="each run's kernel median, fastest launch, or nearest-rank 10th percentile")
    args = ap.parse_args()
    global CASES
    if args.only:
        CASES = [(m, r) for m, r in CASES if m in args.only.split(",")]
    with tempfile.TemporaryDirectory() as work:
        kernel = KERNEL if args.prec == "f64" else KERNEL.replace("xf64", "xf32").replace("[double]", "[float]")
        dtype = np.float64 if args.prec == "f64" else np.float32
        with open(os.path.join(work, "spmv.hdl"), "w") as f:
            f.write(kernel)
        for m, _ in CASES:
            a = read_csr(os.path.join(args.matrices, f"{m}.csr")).astype(dtype)
            sp.save_npz(os.path.join(work, f"{m}.npz"), a, compressed=False)
            np.save(os.path.join(work, f"{m}_x.npy"), np.random.default_rng(0).random(a.shape[1]).astype(dtype))
        for m, reps in CASES:
            for t in [int(t) for t in args.threads.split(",")]:
                ratios, new, old = [], [], []
                for r in range(args.rounds):
                    # Every other round the old build first: whichever ran
                    # second measured ~5% faster in an A/A run at load 6.
                    if r % 2:
                        o = kernel_median(args.old, work, m, reps, (), t, args.stat)
                    n = kernel_median(args.new, work, m, reps, args.new_args.split(), t, args.stat)
                    if not r % 2:
                        o = kernel_median(args.old, work, m, reps, (), t, args.stat)
                    new.append(n), old.append(o), ratios.append(n / o)
                label = m if args.threads == "1" else f"{m}, {t} thread{'s' if t > 1 else ''}"
                print(f"{label}: new {statistics.median(new) * 1e3:.4f} ms, old {statistics.median(old) * 1e3:.4f} ms, "
                      f"new/old {statistics.median(ratios):.3f} (rounds: {', '.join(f'{r:.2f}' for r in ratios)})",
                      flush=True)


if __name__ == "__main__":
    main()

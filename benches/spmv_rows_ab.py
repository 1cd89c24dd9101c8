"""Two heddle builds' CSR SpMV kernels on rows of L entries, interleaved (and callgrind counts).

f64 CSR with 32-bit positions and coordinates, one thread; n = 20 000 rows and columns, L sorted
random columns per row (numpy default_rng(1)), saved with scipy.sparse.save_npz(compressed=False).
Each round runs both binaries (`heddle run … --reps N --json`, the kernel's median); the figure is
the median over rounds of new / old. With --callgrind, instead: instructions per nonzero of the
JIT'd code (`???:0x…` in callgrind_annotate), (--reps 101 minus --reps 1) / (100 × nnz).

    python3 benches/spmv_rows_ab.py --old OLD/heddle --new target/release/heddle --rounds 9
    python3 benches/spmv_rows_ab.py --old OLD/heddle --new target/release/heddle --callgrind
    python3 benches/spmv_rows_ab.py --old OLD/heddle --lengths 2,4,8,10,16,64   # other row lengths
"""
import argparse, json, os, statistics, subprocess, tempfile

import numpy as np
import scipy.sparse as sp

KERNEL = """#CSR32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>

fun(A: tensor<?x?xf64, #CSR32> =>
fun(xs: [double]_A_dim1 =>
  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0.0)))))
"""
N = 20000
CASES = [(2, 300), (4, 300), (8, 200), (16, 100), (64, 40)]


def write_matrix(work, L):
    rng = np.random.default_rng(1)
    cols = np.stack([np.sort(rng.choice(N, L, replace=False)) for _ in range(N)])
    a = sp.csr_array((rng.standard_normal(N * L), cols.ravel(), np.arange(0, N * L + 1, L)), shape=(N, N))
    sp.save_npz(os.path.join(work, f"L{L}.npz"), a, compressed=False)
    np.save(os.path.join(work, f"L{L}_x.npy"), rng.standard_normal(N))


def args_for(binary, work, L, reps):
    return [binary, "run", os.path.join(work, "spmv.hdl"), "--backend", "cpu", "--threads", "1",
            "--matrix", f"A={work}/L{L}.npz", "--input", f"xs={work}/L{L}_x.npy",
            "--reps", str(reps), "--json", "-o", os.path.join(work, "y.npy")]


def kernel_median(binary, work, L, reps):
    out = subprocess.run(args_for(binary, work, L, reps), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["kernel_seconds"]["median"]


def jit_instructions(binary, work, L, reps):
    cg = os.path.join(work, "cg.out")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}", *args_for(binary, work, L, reps)],
                   capture_output=True, check=True)
    ann = subprocess.run(["callgrind_annotate", "--auto=no", cg], capture_output=True, text=True).stdout
    return sum(int(l.split()[0].replace(",", "")) for l in ann.splitlines() if "???:0x" in l)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", default="target/release/heddle")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--lengths", default="", help="comma-separated row lengths (default: those of CASES)")
    args = ap.parse_args()
    cases = [(L, dict(CASES).get(L, max(40, 1200 // L))) for L in map(int, args.lengths.split(","))] if args.lengths else CASES
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "spmv.hdl"), "w") as f:
            f.write(KERNEL)
        for L, _ in cases:
            write_matrix(work, L)
        for L, reps in cases:
            if args.callgrind:
                per = {b: (jit_instructions(b, work, L, 101) - jit_instructions(b, work, L, 1)) / (100 * N * L)
                       for b in (args.old, args.new)}
                print(f"L={L}: instructions per nonzero: old {per[args.old]:.2f}, new {per[args.new]:.2f}", flush=True)
                continue
            ratios, new, old = [], [], []
            for _ in range(args.rounds):
                n = kernel_median(args.new, work, L, reps)
                o = kernel_median(args.old, work, L, reps)
                new.append(n), old.append(o), ratios.append(n / o)
            print(f"L={L}: new {statistics.median(new) * 1e3:.4f} ms, old {statistics.median(old) * 1e3:.4f} ms, "
                  f"new/old {statistics.median(ratios):.3f} (rounds: {', '.join(f'{r:.2f}' for r in ratios)})", flush=True)


if __name__ == "__main__":
    main()

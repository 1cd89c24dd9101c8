"""CSR SpMV (f64, 32-bit indices) on 2 threads at 8 (the default), 1, 2 and 4 chunks per thread,
interleaved, on the six synthetic matrices saved as .npz in /tmp/npz (scripts/csrbin.py reads
/tmp/heddle-bench/matrices/bin/*.csr; `NAME_x.npy` a float64 x). Prints each setting's median
kernel time over the rounds divided by the default's.

    python3 benches/chunks_ab.py target/release/heddle 5      # binary, rounds
"""
import json, subprocess, statistics, sys, os
B = sys.argv[1]
import tempfile
K = os.path.join(tempfile.mkdtemp(), "spmv.hdl")
open(K, "w").write("""#CSR32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>

fun(A: tensor<?x?xf64, #CSR32> =>
fun(xs: [double]_A_dim1 =>
  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0.0)))))
""")
cases = [("uniform_5k_d4", 400), ("uniform_100k_d10", 60), ("banded_1M_k2", 15), ("rowband_5k", 15), ("uniform_1M_d5", 15), ("rmat_s18_ef10", 15)]
confs = {"c8": [], "c1": ["--chunks-per-thread", "1"], "c2": ["--chunks-per-thread", "2"], "c4": ["--chunks-per-thread", "4"]}
res = {(m, c): [] for m, _ in cases for c in confs}
for r in range(int(sys.argv[2])):
    for m, reps in cases:
        for c, extra in confs.items():
            out = subprocess.run([B, "run", K, "--backend", "cpu", "--threads", "2", "--matrix", f"A=/tmp/npz/{m}.npz", "--input", f"xs=/tmp/npz/{m}_x.npy", "--reps", str(reps), "--json", "-o", K + ".y.npy", *extra], capture_output=True, text=True)
            if out.returncode: sys.exit(out.stderr)
            res[(m, c)].append(json.loads(out.stdout)["kernel_seconds"]["median"])
for m, _ in cases:
    base = statistics.median(res[(m, "c8")])
    print(m, " ".join(f"{c} {statistics.median(res[(m, c)]) / base:.3f}" for c in confs), f"(c8 {base*1e3:.3f} ms)")

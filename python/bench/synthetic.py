"""CSR SpMV through the Python package against scipy's `A @ x`, on the
synthetic matrices of ../shared/bench (its `setup.sh` writes them as binary
CSR to /tmp/heddle-bench/matrices/bin).

    python python/bench/synthetic.py [--dir /tmp/heddle-bench/matrices/bin] [--reps 50] [--threads 1]

For each matrix, f64 and f32 (int32 indices, as scipy keeps them): the
median time of a whole call `k(A=A, xs=x)` (binding, checks, the kernel,
the numpy result), of the kernel alone (`Kernel.time`), and of scipy's
`A @ x` on the same arrays, taken in interleaved rounds; every heddle result
is checked against scipy's first. Prints a table and the geometric means of
scipy's time over heddle's (> 1: heddle faster).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import statistics
import time

import numpy as np
import scipy.sparse as sp

import heddle

ROOT = pathlib.Path(__file__).resolve().parents[2]


def read_csr(path: pathlib.Path) -> sp.csr_array:
    """The bench's binary CSR: int64 rows, cols, nnz; int32 rowptr[rows + 1],
    int32 col[nnz]; float64 val[nnz]; little endian."""
    with open(path, "rb") as f:
        rows, cols, nnz = (int(v) for v in np.fromfile(f, dtype="<i8", count=3))
        indptr = np.fromfile(f, dtype="<i4", count=rows + 1)
        indices = np.fromfile(f, dtype="<i4", count=nnz)
        data = np.fromfile(f, dtype="<f8", count=nnz)
    return sp.csr_array((data, indices, indptr), shape=(rows, cols))


def median_seconds(f, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/heddle-bench/matrices/bin")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    files = sorted(pathlib.Path(a.dir).glob("*.csr"))
    if not files:
        raise SystemExit(f"no .csr matrices in {a.dir}: run ../shared/bench/setup.sh first")
    src32 = (ROOT / "examples" / "sparse" / "spmv_csr.hdl").read_text()
    src64 = src32.replace("xf32", "xf64").replace("[float]", "[double]")
    assert src64 != src32
    kernels = {"f32": heddle.compile(src32, backend="cpu", threads=a.threads),
               "f64": heddle.compile(src64, backend="cpu", threads=a.threads)}
    rng = np.random.default_rng(0)
    print(f"{'matrix':<22} {'prec':>4} {'nnz':>9} {'call ms':>9} {'kernel ms':>9} {'scipy ms':>9} {'scipy/call':>10} {'scipy/kernel':>12}")
    ratios = {"f32": [], "f64": []}
    for path in files:
        A64 = read_csr(path)
        for prec, dtype in (("f64", np.float64), ("f32", np.float32)):
            A = sp.csr_array((A64.data.astype(dtype), A64.indices, A64.indptr), shape=A64.shape)
            x = rng.uniform(-1, 1, A.shape[1]).astype(dtype)
            k = kernels[prec]
            np.testing.assert_allclose(k(A=A, xs=x), A @ x, rtol=1e-4 if prec == "f32" else 1e-10, atol=1e-4 if prec == "f32" else 1e-10)
            per = max(1, a.reps // a.rounds)
            call, kern, ref = [], [], []
            for _ in range(a.rounds):
                call.append(median_seconds(lambda: k(A=A, xs=x), per))
                kern.append(k.time(reps=per, A=A, xs=x)["median"])
                ref.append(median_seconds(lambda: A @ x, per))
            call, kern, ref = (statistics.median(v) for v in (call, kern, ref))
            ratios[prec].append((ref / call, ref / kern))
            print(f"{path.stem:<22} {prec:>4} {A.nnz:>9} {call * 1e3:>9.3f} {kern * 1e3:>9.3f} {ref * 1e3:>9.3f} {ref / call:>10.2f} {ref / kern:>12.2f}", flush=True)
    for prec, r in ratios.items():
        g = [math.exp(statistics.mean(math.log(v[i]) for v in r)) for i in (0, 1)]
        print(f"geomean {prec}: scipy / heddle call {g[0]:.2f}, scipy / heddle kernel {g[1]:.2f}")


if __name__ == "__main__":
    main()

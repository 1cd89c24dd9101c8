"""Kernels with sparse results against scipy (issue 11's benchmark).

    python python/bench/sparse_results.py [--reps 5] [--sizes 1024,2048,4096] [--kernels spadd_csr]

SpMSpM C = A B with a CSR result (`examples/sparse/spgemm_csr.hdl`) and a
DCSR result (`spgemm_dcsr.hdl`), and the element-wise sum A + B with a CSR
result (`spadd_csr.hdl`), on n x n uniformly random float32 matrices of
density 0.01 and on one power-law matrix (row lengths drawn from a Pareto
distribution, about the same number of nonzeros as the uniform one at the
largest n). heddle's time is `Kernel.time`: the kernel alone with inputs
bound once, which for a sparse result is all of count -> prefix sum ->
allocate -> fill. scipy's is `A @ B` followed by `sort_indices()` (heddle's
rows are sorted; scipy's product leaves them in accumulator order), and
`A + B` (sorted already for canonical inputs). Every heddle result is
checked against scipy's before it is timed. One process, interleaved per
case: heddle at 1 and 2 threads, then scipy, `--reps` times each, medians.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import time

import numpy as np
import scipy.sparse as sp

import heddle

ROOT = pathlib.Path(__file__).resolve().parents[2]


def uniform(n: int, density: float, seed: int) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    a = sp.random_array((n, n), density=density, format="csr", dtype=np.float32, rng=rng)
    a.sort_indices()
    return a


def power_law(n: int, nnz: int, seed: int) -> sp.csr_array:
    """Row lengths from a Pareto law (a few rows hold most entries), columns uniform."""
    rng = np.random.default_rng(seed)
    weights = rng.pareto(1.2, n) + 1.0
    lengths = np.minimum(n, np.maximum(0, np.round(weights / weights.sum() * nnz))).astype(np.int64)
    rows = np.repeat(np.arange(n), lengths)
    cols = np.concatenate([rng.choice(n, size=k, replace=False) for k in lengths]) if lengths.sum() else np.zeros(0, np.int64)
    vals = rng.random(rows.size, dtype=np.float32)
    a = sp.coo_array((vals, (rows, cols)), shape=(n, n)).tocsr()
    a.sort_indices()
    return a


def seconds(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def scipy_product(a, b):
    c = a @ b
    c.sort_indices()
    return c


def check(got, want, what: str) -> None:
    got = sp.csr_array(got)
    diff = abs(got - want)
    scale = max(1.0, float(abs(want).max()) if want.nnz else 1.0)
    assert diff.nnz == 0 or diff.max() <= 1e-4 * scale, f"{what}: heddle differs from scipy"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--kernels", default="spgemm_csr,spgemm_dcsr,spadd_csr", help="a comma-separated subset")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    kernels = {}
    for name in a.kernels.split(","):
        src = (ROOT / "examples" / "sparse" / f"{name}.hdl").read_text()
        kernels[name] = {t: heddle.compile(src, backend="cpu", threads=t) for t in (1, 2)}
    cases = [(f"uniform n={n}", uniform(n, 0.01, n), uniform(n, 0.01, n + 1)) for n in sizes]
    big = max(sizes)
    cases.append((f"power-law n={big}", power_law(big, int(0.01 * big * big), 7), uniform(big, 0.01, big + 2)))
    print("| matrices | nnz(A) | kernel | nnz(C) | heddle 1T ms | heddle 2T ms | scipy ms | scipy / heddle 1T | 1T / 2T |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, A, B in cases:
        for name, by_threads in kernels.items():
            want = scipy_product(A, B) if name.startswith("spgemm") else (A + B)
            for t, k in by_threads.items():
                check(k(A=A, B=B), want, f"{name} {label} {t} threads")
            times = {1: [], 2: [], "scipy": []}
            for _ in range(a.reps):
                for t, k in by_threads.items():
                    times[t].append(k.time(reps=1, A=A, B=B)["median"])
                peer = (lambda: scipy_product(A, B)) if name.startswith("spgemm") else (lambda: A + B)
                times["scipy"].append(seconds(peer))
            m = {k: statistics.median(v) * 1e3 for k, v in times.items()}
            print(f"| {label} | {A.nnz} | {name} | {want.nnz} | {m[1]:.2f} | {m[2]:.2f} | {m['scipy']:.2f} | {m['scipy'] / m[1]:.2f} | {m[1] / m[2]:.2f} |", flush=True)


if __name__ == "__main__":
    main()

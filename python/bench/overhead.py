"""Call overhead of a compiled SpMV from Python, and SpMV through heddle
against scipy's `A @ x`.

    python python/bench/overhead.py [--nnz 20000] [--reps 200] [--threads 1]

Prints, per figure, the median over `reps` calls (seconds and µs):
kernel (Kernel.time: the kernel alone, inputs bound once), call (a whole
`k(A=A, xs=x)`: binding the scipy and numpy inputs, checking them, laying
them out, running, the result back as numpy; the planned fast path where it
applies), their difference (the call overhead), the same through the
general path (`Compiled.run`, what a call did before the fast path), the
Python half of the general binding alone, scipy's `A @ x` on the same
float32 data, and the fast path of the same kernel written so that the
fast path does not recognise it as a sum of the entries' products (its
body under a `let`): the call with the coordinates' sortedness sweep
(`swept_*`), what the fast path did before that test. The figures are taken in 5 interleaved rounds of reps/5
calls each; each is the median of the rounds' medians.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import time

import numpy as np
import scipy.sparse as sp

import heddle

ROOT = pathlib.Path(__file__).resolve().parents[2]


def median_seconds(f, reps: int) -> float:
    f()  # warm
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nnz", type=int, default=20_000)
    ap.add_argument("--rows", type=int, default=2_000)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backend", default="cpu")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    density = a.nnz / (a.rows * a.rows)
    A = sp.random_array((a.rows, a.rows), density=density, format="csr", dtype=np.float32, rng=rng)
    x = rng.random(a.rows, dtype=np.float32)
    src = (ROOT / "examples" / "sparse" / "spmv_csr.hdl").read_text()
    threads = a.threads if a.backend == "cpu" else None
    k = heddle.compile(src, backend=a.backend, threads=threads)
    # The same SpMV, its product under a `let`: not recognised, so swept.
    swept_src = src.replace("fun(e => e.2 * xs@e.1)", "fun(e => let p = e.2 * xs@e.1 in p)")
    assert swept_src != src
    swept = heddle.compile(swept_src, backend=a.backend, threads=threads)
    np.testing.assert_allclose(swept(A=A, xs=x), A @ x, rtol=1e-4, atol=1e-4)
    y = k(A=A, xs=x)
    np.testing.assert_allclose(y, A @ x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(k._c.run(*k._bind({"A": A, "xs": x}), 0)[0], y, rtol=1e-6, atol=1e-6)
    fast_taken = k._c.call_fast({"A": A, "xs": x}) is not None
    # Interleaved rounds, so that load from elsewhere falls on every figure alike.
    rounds = 5
    per = max(1, a.reps // rounds)
    samples = {"kernel": [], "call": [], "general": [], "bind": [], "scipy": [], "swept_kernel": [], "swept_call": []}
    for _ in range(rounds):
        samples["kernel"].append(k.time(reps=per, A=A, xs=x)["median"])
        samples["call"].append(median_seconds(lambda: k(A=A, xs=x), per))
        samples["general"].append(median_seconds(lambda: k._c.run(*k._bind({"A": A, "xs": x}), 0), per))
        samples["bind"].append(median_seconds(lambda: k._bind({"A": A, "xs": x}), per))
        samples["scipy"].append(median_seconds(lambda: A @ x, per))
        samples["swept_kernel"].append(swept.time(reps=per, A=A, xs=x)["median"])
        samples["swept_call"].append(median_seconds(lambda: swept(A=A, xs=x), per))
    kernel, call, general, bind, scipy_mv, swept_kernel, swept_call = (
        statistics.median(samples[n]) for n in ("kernel", "call", "general", "bind", "scipy", "swept_kernel", "swept_call")
    )
    figures = {
        "nnz": int(A.nnz),
        "rows": a.rows,
        "backend": a.backend,
        "threads": a.threads,
        "kernel_us": kernel * 1e6,
        "call_us": call * 1e6,
        "overhead_us": (call - kernel) * 1e6,
        "fast_path": fast_taken,
        "general_call_us": general * 1e6,
        "general_overhead_us": (general - kernel) * 1e6,
        "python_bind_us": bind * 1e6,
        "swept_kernel_us": swept_kernel * 1e6,
        "swept_call_us": swept_call * 1e6,
        "swept_overhead_us": (swept_call - swept_kernel) * 1e6,
        "scipy_us": scipy_mv * 1e6,
        "kernel_vs_scipy": scipy_mv / kernel,
        "call_vs_scipy": scipy_mv / call,
    }
    for key, v in figures.items():
        print(f"{key:>16}: {v:.2f}" if isinstance(v, float) else f"{key:>16}: {v}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

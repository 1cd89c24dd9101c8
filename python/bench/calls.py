"""Whole calls `k(A=A, xs=x)` of the CSR SpMV kernel on one thread: the
median seconds per matrix and precision, as one JSON line, for comparing two
builds of the package (run this with each build's Python in turn, several
rounds, alternating; or under `/usr/bin/time -f %R` for page faults).

    python python/bench/calls.py --calls 40 --matrices banded_1M_k2,uniform_1M_d5

The matrices are ../shared/bench's synthetic set (its `setup.sh` writes them
to /tmp/heddle-bench/matrices/bin); every result is checked against scipy's.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import numpy as np

import heddle

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from synthetic import read_csr  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/tmp/heddle-bench/matrices/bin")
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--matrices", default="banded_1M_k2,uniform_1M_d5,uniform_100k_d10,uniform_5k_d4")
    args = ap.parse_args()
    spmv = (ROOT / "examples/sparse/spmv_csr.hdl").read_text()
    kernels = {
        np.float32: heddle.compile(spmv, backend="cpu", threads=1),
        np.float64: heddle.compile(spmv.replace("xf32", "xf64").replace("[float]", "[f64]"), backend="cpu", threads=1),
    }
    out = {}
    for name in args.matrices.split(","):
        a64 = read_csr(pathlib.Path(args.dir) / f"{name}.csr")
        for dtype in (np.float64, np.float32):
            a = a64.astype(dtype)
            x = np.linspace(-1, 1, a.shape[1]).astype(dtype)
            k = kernels[dtype]
            np.testing.assert_allclose(k(A=a, xs=x), a @ x, rtol=1e-4, atol=1e-4)
            times = []
            for _ in range(args.calls):
                start = time.perf_counter()
                k(A=a, xs=x)
                times.append(time.perf_counter() - start)
            out[f"{name} {dtype.__name__}"] = statistics.median(times)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

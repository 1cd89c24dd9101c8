#!/usr/bin/env python3
"""sortBy inside a kernel: every CSR row's entries by decreasing value
(examples/sparse/sort_rows_csr.hdl) on the CPU backend, against numpy's
stable sort of the same entries (`np.lexsort((-values, rows))`, which gives
the same order), and against the same kernel without the sort (each row
copied as it is, its coordinates through `+ 0`: a plain copy of `A@i` hits a
lowering bug, an `i64` coordinate stored to an `int` field unconverted) to
show what the sort itself costs.

usage: [HEDDLE=CLI] [HEDDLE_BASELINE=CLI] benches/sort_rows.py [ROWS] [PER_ROW] [THREADS] [REPS]

Builds a ROWS x ROWS CSR matrix with about PER_ROW entries per row (numpy
only: no scipy.sparse.random), writes it as .npz to a temporary folder, runs
`target/release/heddle run … --reps REPS --threads THREADS` on each kernel,
interleaved three times, and prints the medians (heddle reports the kernel
alone) and numpy's median over REPS runs. The results are checked equal.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The CLI to measure (the kernel's time is the JIT-compiled code's, the same
# from a debug or a release CLI); HEDDLE_BASELINE, if set, is a second CLI
# whose sort_rows_csr is measured in the same rounds (an A/B of lowering).
HEDDLE = os.environ.get("HEDDLE", os.path.join(ROOT, "target", "release", "heddle"))
BASELINE = os.environ.get("HEDDLE_BASELINE")
COPY = """#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>

fun(A: tensor<?x?xf32, #CSR> =>
  generate(A_dim0, fun(i => A@i :>> map(fun(e => (e.1 + 0, e.2))))) :>> join)
"""


def heddle_median(kernel, matrix, threads, reps, cli=None):
    out = subprocess.run(
        [cli or HEDDLE, "run", kernel, "--matrix", f"A={matrix}", "--backend", "cpu", "--threads", str(threads), "--reps", str(reps)],
        check=True, capture_output=True, text=True,
    )
    for line in out.stderr.splitlines():
        if "median" in line:
            return line.strip()
    sys.exit(f"no timing in heddle's output: {out.stderr}")


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    per_row = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    rng = np.random.default_rng(7)
    nnz = rows * per_row
    r = rng.integers(0, rows, nnz)
    c = rng.integers(0, rows, nnz)
    # Values in steps of 1/8: many ties, so stability matters.
    v = (rng.integers(-64, 64, nnz) / 8).astype(np.float32)
    a = sp.coo_array((v, (r, c)), shape=(rows, rows)).tocsr()
    a.sum_duplicates()
    a.sort_indices()
    with tempfile.TemporaryDirectory() as d:
        matrix = os.path.join(d, "a.npz")
        sp.save_npz(matrix, a)
        copy = os.path.join(d, "copy_rows.hdl")
        with open(copy, "w") as f:
            f.write(COPY)
        sort = os.path.join(ROOT, "examples", "sparse", "sort_rows_csr.hdl")
        # Correctness first: heddle's order is numpy's.
        got = subprocess.run([HEDDLE, "run", sort, "--matrix", f"A={matrix}", "--backend", "cpu", "-o", os.path.join(d, "out.json")],
                             check=True, capture_output=True, text=True)
        rows_of = np.repeat(np.arange(rows), np.diff(a.indptr))
        order = np.lexsort((-a.data, rows_of))
        with open(os.path.join(d, "out.json")) as f:
            out = json.load(f)
        flat = np.array(out if isinstance(out, list) else out["values"]).reshape(-1)
        want = np.stack([a.indices[order].astype(np.float64), a.data[order].astype(np.float64)], axis=1).reshape(-1)
        assert np.array_equal(flat.astype(np.float64), want), "heddle's order differs from numpy's"
        print(f"{rows} x {rows}, {a.nnz} entries, {threads} thread(s), {reps} reps")
        for rnd in range(3):
            print("sort_rows_csr:", heddle_median(sort, matrix, threads, reps))
            if BASELINE:
                print("sort_rows_csr (HEDDLE_BASELINE):", heddle_median(sort, matrix, threads, reps, BASELINE))
            print("copy rows    :", heddle_median(copy, matrix, threads, reps))
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                o = np.lexsort((-a.data, rows_of))
                a.indices[o], a.data[o]
                times.append(time.perf_counter() - t)
            print(f"numpy lexsort + gather: median {np.median(times) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

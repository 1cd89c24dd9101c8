#!/usr/bin/env python3
"""The Python side of benches/sparse_io.rs: scipy and fast_matrix_market on the
same Matrix Market file, best of REPS runs. Prints one JSON object.

    python3 benches/sparse_io_compare.py FILE [REPS]
"""
import json
import sys
import time

import fast_matrix_market as fmm
import scipy
import scipy.io


def best(f, reps):
    out, times = None, []
    for _ in range(reps):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return out, min(times)


def main():
    path, reps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    coo, t_scipy_read = best(lambda: scipy.io.mmread(path), reps)
    _, t_tocsr = best(lambda: coo.tocsr(), reps)
    _, t_tocsc = best(lambda: coo.tocsc(), reps)
    csr = coo.tocsr()
    _, t_csr_tocsc = best(lambda: csr.tocsc(), reps)
    _, t_fmm_read = best(lambda: fmm.mmread(path), reps)
    _, t_fmm_triplet = best(lambda: fmm.read_coo(path), reps)
    print(json.dumps({
        "nnz": int(coo.nnz),
        "scipy_version": scipy.__version__,
        "fmm_version": fmm.__version__,
        "scipy_mmread": t_scipy_read,
        "scipy_tocsr": t_tocsr,
        "scipy_tocsc": t_tocsc,
        "scipy_csr_tocsc": t_csr_tocsc,
        "fmm_mmread": t_fmm_read,
        "fmm_read_coo": t_fmm_triplet,
    }))


if __name__ == "__main__":
    main()

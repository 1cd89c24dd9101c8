#!/usr/bin/env python3
"""scipy's SpMSpM on two Matrix Market files, for benches/spgemm.rs.

usage: spgemm_scipy.py A.mtx B.mtx REPS
Prints the median time of `A @ B` in ms (CSR float32 operands, converted
before timing) and nnz(C).
"""
import sys
import time

import scipy.io
import scipy.sparse


def main():
    a = scipy.sparse.csr_matrix(scipy.io.mmread(sys.argv[1]), dtype="float32")
    b = scipy.sparse.csr_matrix(scipy.io.mmread(sys.argv[2]), dtype="float32")
    reps = int(sys.argv[3])
    times = []
    c = None
    for _ in range(reps):
        t = time.perf_counter()
        c = a @ b
        times.append(time.perf_counter() - t)
    times.sort()
    print(f"{times[len(times) // 2] * 1e3:.3f} {c.nnz}")


if __name__ == "__main__":
    main()

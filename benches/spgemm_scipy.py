#!/usr/bin/env python3
"""scipy's SpMSpM on two Matrix Market files, for benches/spgemm.rs.

usage: spgemm_scipy.py A.mtx B.mtx REPS
Prints the median time of `A @ B` in ms (CSR float32 operands, converted
before timing), nnz(C), and the median time of `A @ B` followed by
`sort_indices()`: scipy leaves each row's columns in the order its
accumulator met them, where heddle, MLIR and TACO produce sorted rows.
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
    sorted_times = []
    for _ in range(reps):
        t = time.perf_counter()
        d = a @ b
        d.sort_indices()
        sorted_times.append(time.perf_counter() - t)
    times.sort()
    sorted_times.sort()
    print(f"{times[len(times) // 2] * 1e3:.3f} {c.nnz} {sorted_times[len(sorted_times) // 2] * 1e3:.3f}")


if __name__ == "__main__":
    main()

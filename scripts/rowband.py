#!/usr/bin/env python3
"""Writes a row-band matrix (MLIR sparse compiler paper, SpMV CSR vs DCSR vs
CDR) as Matrix Market, and a vector of n ones-ish values as JSON.

usage: rowband.py N BAND DENSITY OUT.mtx XS.json [SEED]

The n x n matrix has nonzeros only in BAND consecutive rows starting at
n/2 - BAND/2; each of those rows holds every column with probability
DENSITY. Everything else is empty, which is what makes the formats differ:
CSR walks all n row pointers, DCSR and CDR only the stored rows, CDR keeps
each stored row dense.
"""
import json
import random
import sys


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    n, band, density = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    out, xs_out = sys.argv[4], sys.argv[5]
    rng = random.Random(int(sys.argv[6]) if len(sys.argv) == 7 else 1)
    first = max(0, n // 2 - band // 2)
    entries = []
    for i in range(first, min(n, first + band)):
        for j in range(n):
            if density >= 1.0 or rng.random() < density:
                entries.append(f"{i + 1} {j + 1} {rng.randint(-8, 8) * 0.125 or 1.0}")
    with open(out, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"% row band: {band} rows from {first}, density {density}\n")
        f.write(f"{n} {n} {len(entries)}\n")
        f.write("\n".join(entries))
        f.write("\n")
    with open(xs_out, "w") as f:
        json.dump([((j * 7) % 11) * 0.25 - 1.0 for j in range(n)], f)


if __name__ == "__main__":
    main()

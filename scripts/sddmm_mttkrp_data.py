#!/usr/bin/env python3
"""Inputs for the SDDMM and MTTKRP benchmarks (benches/sddmm_mttkrp.rs),
after the MLIR sparse compiler paper's tables. Python standard library only,
fixed seeds: the same arguments write the same bytes on every machine.

usage:
  sddmm_mttkrp_data.py sddmm  N NNZ K OUTDIR [SEED]
      OUTDIR/S.mtx   an N x N Matrix Market matrix, NNZ distinct uniformly
                     random positions (row-major order)
      OUTDIR/U.npy, OUTDIR/V.npy   dense N x K float32 matrices
  sddmm_mttkrp_data.py mttkrp I K L NNZ J OUTDIR [SEED]
      OUTDIR/B.tns   an I x K x L FROSTT tensor (1-based, no header), NNZ
                     distinct uniformly random positions in (i, k, l) order;
                     the corner (I, K, L) is always stored so the sizes are
                     the largest coordinates, as FROSTT readers infer them
      OUTDIR/C.npy (K x J), OUTDIR/D.npy (L x J)   dense float32 matrices

Every value is a multiple of 1/1024 in [-1, 1] (never 0 in the sparse
operand), so the text is exact and float32 holds it exactly: every reader
(heddle, scipy, the hand-written loops) starts from the same numbers.
"""
import array
import os
import random
import sys


def value(rng):
    v = rng.randint(1, 1024) / 1024
    return v if rng.random() < 0.5 else -v


def write_npy(path, rows, cols, values):
    """A C-order float32 .npy (format 1.0), written without numpy."""
    data = array.array("f", values)
    assert len(data) == rows * cols
    if sys.byteorder != "little":
        data.byteswap()
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
        f.write(data.tobytes())


def dense(rng, rows, cols):
    return [rng.randint(-1024, 1024) / 1024 for _ in range(rows * cols)]


def positions(rng, total, nnz):
    """`nnz` distinct sorted linear positions in [0, total), the last one among them."""
    if not 1 <= nnz <= total:
        raise ValueError(f"{nnz} nonzeros do not fit in {total} positions")
    picked = rng.sample(range(total - 1), nnz - 1)
    picked.append(total - 1)
    picked.sort()
    return picked


def sddmm(n, nnz, k, out, seed):
    rng = random.Random(seed)
    pos = positions(rng, n * n, nnz)
    with open(os.path.join(out, "S.mtx"), "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"% scripts/sddmm_mttkrp_data.py sddmm {n} {nnz} {k} (seed {seed})\n")
        f.write(f"{n} {n} {nnz}\n")
        f.writelines(f"{p // n + 1} {p % n + 1} {value(rng)!r}\n" for p in pos)
    write_npy(os.path.join(out, "U.npy"), n, k, dense(rng, n, k))
    write_npy(os.path.join(out, "V.npy"), n, k, dense(rng, n, k))


def mttkrp(ni, nk, nl, nnz, j, out, seed):
    rng = random.Random(seed)
    total = ni * nk * nl
    pos = positions(rng, total, nnz)
    kl = nk * nl
    with open(os.path.join(out, "B.tns"), "w") as f:
        f.write(f"# scripts/sddmm_mttkrp_data.py mttkrp {ni} {nk} {nl} {nnz} {j} (seed {seed})\n")
        f.writelines(f"{p // kl + 1} {p // nl % nk + 1} {p % nl + 1} {value(rng)!r}\n" for p in pos)
    write_npy(os.path.join(out, "C.npy"), nk, j, dense(rng, nk, j))
    write_npy(os.path.join(out, "D.npy"), nl, j, dense(rng, nl, j))


def main():
    args = sys.argv[1:]
    try:
        if args and args[0] == "sddmm" and len(args) in (5, 6):
            n, nnz, k = map(int, args[1:4])
            os.makedirs(args[4], exist_ok=True)
            sddmm(n, nnz, k, args[4], int(args[5]) if len(args) == 6 else 7)
        elif args and args[0] == "mttkrp" and len(args) in (7, 8):
            ni, nk, nl, nnz, j = map(int, args[1:6])
            os.makedirs(args[6], exist_ok=True)
            mttkrp(ni, nk, nl, nnz, j, args[6], int(args[7]) if len(args) == 8 else 11)
        else:
            sys.exit(__doc__)
    except ValueError as e:
        sys.exit(f"{e}\n{__doc__}")


if __name__ == "__main__":
    main()

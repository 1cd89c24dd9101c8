"""Conversions against scipy on one thread (issue 12): COO -> CSR, COO -> CSC,
CSR -> CSC, CSR -> DIA (banded), CSR -> BSR, on a 1 000 000 x 1 000 000
matrix with 5 000 000 nonzeros.

    cargo build --release -p heddle
    python benches/convert_scipy.py [--rows 1000000] [--nnz 5000000] [--reps 7]

Writes target/convert-bench/ (not in git): random.npz (COO, entries ordered
column by column as SuiteSparse files are), random_csr.npz, band.npz (CSR,
offsets -2 .. 2) and blocky.npz (CSR whose nonzeros fall in 2 x 2 blocks,
for BSR). heddle runs as `RAYON_NUM_THREADS=1 heddle convert --json`
and its figure is `convert_seconds` (the conversion alone, the file already
read); scipy's is the conversion of the loaded matrix (`coo.tocsr()`,
`csr.tocsc()`, `csr.todia()`, `csr.tobsr(blocksize=(2, 2))`), single-threaded
as scipy's sparse conversions are. The runs are interleaved; the table gives
medians and heddle's median over scipy's. Indices: scipy's are int32; heddle
stores positions and coordinates at the target encoding's widths, 32 bits
here (`posWidth = 32, crdWidth = 32`) to match. Each heddle output is also
read back and compared with scipy's result.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import time

import numpy as np
import scipy.sparse as sp

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEDDLE = ROOT / "target" / "release" / "heddle"
W = "posWidth = 32, crdWidth = 32"
CSR = f"#sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed), {W} }}>"
CSC = f"#sparse_tensor.encoding<{{ map = (i, j) -> (j : dense, i : compressed), {W} }}>"
DIA = "#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, j : dense), crdWidth = 32 }>"
BSR = (
    "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed,"
    f" i mod 2 : dense, j mod 2 : dense), {W} }}>"
)


def heddle(src: pathlib.Path, enc: str, out: pathlib.Path, exe: pathlib.Path = HEDDLE) -> float:
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    r = subprocess.run([str(exe), "convert", str(src), "--to", enc, "-o", str(out), "--json"], capture_output=True, text=True, check=True, env=env)
    return json.loads(r.stdout)["convert_seconds"]


def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def same(a, b) -> bool:
    a, b = a.tocsr(), b.tocsr()
    a.sort_indices()
    b.sort_indices()
    return a.shape == b.shape and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices) and np.array_equal(a.data, b.data)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--nnz", type=int, default=5_000_000)
    ap.add_argument("--reps", type=int, default=7, help="0: only write the matrices")
    ap.add_argument("--before", type=pathlib.Path, help="another heddle binary (an older build) to time in the same run")
    a = ap.parse_args()
    d = ROOT / "target" / "convert-bench"
    d.mkdir(parents=True, exist_ok=True)
    n, rng = a.rows, np.random.default_rng(0)
    # Random entries (a few more than asked, duplicates merged), column by column.
    k = a.nnz + a.nnz // 50
    A = sp.coo_array((rng.random(k), (rng.integers(0, n, k), rng.integers(0, n, k))), shape=(n, n)).tocsc()
    A.sum_duplicates()
    A.data, A.indices = A.data[: a.nnz], A.indices[: a.nnz]
    A.indptr = np.minimum(A.indptr, a.nnz)
    # int32 indices, as scipy picks for this size (numpy's random integers are int64).
    coo = A.tocoo()
    coo = sp.coo_array((coo.data, (coo.row.astype(np.int32), coo.col.astype(np.int32))), shape=(n, n))
    csr = coo.tocsr()
    csr.indptr, csr.indices = csr.indptr.astype(np.int32), csr.indices.astype(np.int32)
    sp.save_npz(d / "random.npz", coo, compressed=False)
    sp.save_npz(d / "random_csr.npz", csr, compressed=False)
    offs = [-2, -1, 0, 1, 2]
    band = sp.diags([rng.integers(1, 9, size=n - abs(o)) / 4.0 for o in offs], offs, shape=(n, n), format="csr")
    sp.save_npz(d / "band.npz", band, compressed=False)
    # 2 x 2 blocks, about nnz / 4 of them, each full.
    nb = a.nnz // 4
    bi, bj = rng.integers(0, n // 2, nb), rng.integers(0, n // 2, nb)
    rows = np.concatenate([2 * bi, 2 * bi, 2 * bi + 1, 2 * bi + 1])
    cols = np.concatenate([2 * bj, 2 * bj + 1, 2 * bj, 2 * bj + 1])
    blocky = sp.coo_array((rng.random(4 * nb), (rows, cols)), shape=(n, n)).tocsr()
    blocky.sum_duplicates()
    blocky.indptr, blocky.indices = blocky.indptr.astype(np.int32), blocky.indices.astype(np.int32)
    sp.save_npz(d / "blocky.npz", blocky, compressed=False)

    coo = sp.load_npz(d / "random.npz")
    csr = sp.load_npz(d / "random_csr.npz")
    band = sp.load_npz(d / "band.npz")
    blocky = sp.load_npz(d / "blocky.npz")
    if a.reps == 0:
        return
    print(f"{n} x {n}: random {coo.nnz} nonzeros, band {band.nnz}, blocky {blocky.nnz}; scipy {sp.__name__} {__import__('scipy').__version__}")
    cases = [
        ("COO -> CSR", d / "random.npz", CSR, lambda: coo.tocsr()),
        ("COO -> CSC", d / "random.npz", CSC, lambda: coo.tocsc()),
        ("CSR -> CSC", d / "random_csr.npz", CSC, lambda: csr.tocsc()),
        ("CSR -> DIA (banded)", d / "band.npz", DIA, lambda: band.todia()),
        ("CSR -> BSR 2x2 (blocky)", d / "blocky.npz", BSR, lambda: blocky.tobsr(blocksize=(2, 2))),
        ("CSR -> BSR 2x2 (random)", d / "random_csr.npz", BSR, lambda: csr.tobsr(blocksize=(2, 2))),
    ]
    times = {name: ([], [], []) for name, *_ in cases}
    for _ in range(a.reps):
        for i, (name, src, enc, ref) in enumerate(cases):
            times[name][0].append(heddle(src, enc, d / f"out{i}.npz"))
            times[name][1].append(timed(ref)[1])
            if a.before:
                times[name][2].append(heddle(src, enc, d / "before.npz", a.before))
    before = " before / scipy |" if a.before else ""
    print(f"| conversion | nonzeros | heddle median | scipy median | heddle / scipy |{before}")
    print("|---|---|---|---|---|" + ("---|" if a.before else ""))
    for i, (name, src, enc, ref) in enumerate(cases):
        h, s = (statistics.median(t) for t in times[name][:2])
        b = f" {statistics.median(times[name][2]) / s:.2f}x |" if a.before else ""
        ok = same(sp.load_npz(d / f"out{i}.npz"), ref())
        nnz = sp.load_npz(src).nnz
        print(f"| {name} | {nnz} | {h:.3f} s | {s:.3f} s | {h / s:.2f}x |{b}{'' if ok else ' (RESULT DIFFERS)'}")


if __name__ == "__main__":
    main()

"""CSR -> DIA conversion (issue 12, item 6) against scipy's `todia()`, on one
banded matrix: 1 000 000 x 1 000 000, offsets -2 .. 2, 4 999 994 nonzeros.

    cargo build --release -p heddle
    python benches/dia_convert.py [--rows 1000000] [--reps 5]

Writes target/dia-bench/ (band.npz as CSR, band_coo.npz as COO; not in git).
heddle's figure is `heddle convert --json`'s `convert_seconds`: the conversion
alone, the file already read (CSR as stored: the direct path; COO: the
general path, sort and level-by-level assembly). scipy's is `A.todia()` on
the loaded matrix. Interleaved, best and median of `--reps`. Also checks
that heddle's DIA (scipy's layout, `j - i : compressed, j : dense`) has
scipy's offsets and data.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import time

import numpy as np
import scipy.sparse as sp

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEDDLE = ROOT / "target" / "release" / "heddle"
BYCOL = "#sparse_tensor.encoding<{ map = (i, j) -> (j - i : compressed, j : dense), crdWidth = 32 }>"


def heddle_convert(src: pathlib.Path, enc: str, out: pathlib.Path) -> float:
    r = subprocess.run([str(HEDDLE), "convert", str(src), "--to", enc, "-o", str(out), "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["convert_seconds"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    d = ROOT / "target" / "dia-bench"
    d.mkdir(parents=True, exist_ok=True)
    n = a.rows
    rng = np.random.default_rng(0)
    offs = [-2, -1, 0, 1, 2]
    A = sp.diags([rng.integers(1, 9, size=n - abs(o)) / 4.0 for o in offs], offs, shape=(n, n), format="csr")
    A.sort_indices()
    sp.save_npz(d / "band.npz", A, compressed=False)
    sp.save_npz(d / "band_coo.npz", A.tocoo(), compressed=False)
    A = sp.load_npz(d / "band.npz")
    C = sp.load_npz(d / "band_coo.npz")
    print(f"{n} x {n}, {A.nnz} nonzeros, {len(offs)} diagonals")
    times: dict[str, list[float]] = {k: [] for k in ["heddle CSR -> DIA", "heddle CSR -> DIA (scipy layout)", "heddle COO -> DIA (general path)", "scipy csr.todia()", "scipy coo.todia()"]}
    for _ in range(a.reps):
        times["heddle CSR -> DIA"].append(heddle_convert(d / "band.npz", "DIA", d / "out.npz"))
        times["heddle CSR -> DIA (scipy layout)"].append(heddle_convert(d / "band.npz", BYCOL, d / "out_bycol.npz"))
        times["heddle COO -> DIA (general path)"].append(heddle_convert(d / "band_coo.npz", "DIA", d / "out_coo.npz"))
        t = time.perf_counter(); D = A.todia(); times["scipy csr.todia()"].append(time.perf_counter() - t)
        t = time.perf_counter(); C.todia(); times["scipy coo.todia()"].append(time.perf_counter() - t)
    H = sp.load_npz(d / "out_bycol.npz")
    order = np.argsort(D.offsets)
    same = H.format == "dia" and np.array_equal(H.offsets, D.offsets[order]) and np.array_equal(H.data, D.data[order])
    print("heddle's DIA equals scipy's:", same)
    base = statistics.median(times["scipy csr.todia()"])
    for k, v in times.items():
        print(f"{k:36s} best {min(v):.3f} s  median {statistics.median(v):.3f} s  ({A.nnz / statistics.median(v) / 1e6:.0f} M nonzeros/s, {statistics.median(v) / base:.2f}x scipy csr.todia)")


if __name__ == "__main__":
    main()

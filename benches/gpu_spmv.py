#!/usr/bin/env python3
"""CSR SpMV on an OpenCL GPU: heddle's kernels against cuSPARSE, one interleaved run.

heddle's OpenCL kernels, timed by `heddle tune` / `heddle run --reps` (OpenCL
profiling events, the kernel alone, median of --reps):
  - examples/csr_spmv_row_per_item.hdl   one row per work-item (`mapGlobal`)
  - examples/csr_spmv_parallel.hdl        the paper's Listing 7 schedule, R rows per
                                          work-group and W work-items per row, tuned
  - examples/sparse/spmv_csr.hdl          the MLIR-encoded CSR kernel (`--matrix A=M.npz`)
  - examples/sparse/spmv_coo.hdl          the MLIR-encoded COO kernel: chunks of entries,
                                          each run of one row added once (atomically); on
                                          OpenCL a work-group's 256 chunks first combine their
                                          boundary runs in local memory (one atomic add per
                                          row and work-group of 8 192 entries)
  both MLIR kernels also with `posWidth = 32, crdWidth = 32` (scipy's indices as
  stored), and with --baseline BIN the COO kernel of another build (before/after)
against cuSPARSE's SpMV (`cupyx.cusparse.spmv`, CUDA events, median of --reps;
skipped, saying so, where cupy is missing). Every heddle result is checked
against scipy's `A @ x` in float64; a wrong result is a failure (exit 1).

The matrices are generated here with numpy (f32 values, n = 2^LOG_N rows):
uniform (16 entries a row), power-law row lengths, banded (width 21) and a
row band (a few long rows among nearly empty ones), saved as scipy `.npz`
files, which `run --matrix`, `run --csr` and `tune --csr` read directly.

    python3 benches/gpu_spmv.py --heddle target/release/heddle --log-n 20 --reps 30 --out /tmp/gpu

Prints a TSV table (GB/s counts the bytes one SpMV must move once: offsets,
column indices, values, x and y) and writes it to OUT/gpu_spmv.tsv.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def matrices(log_n, rng):
    n = 1 << log_n
    def from_lengths(lens, cols_of):
        lens = np.minimum(lens, n).astype(np.int64)
        indptr = np.concatenate([[0], np.cumsum(lens)])
        cols = cols_of(lens, indptr)
        vals = rng.uniform(-1, 1, int(indptr[-1])).astype(np.float32)
        a = sp.csr_array((vals, cols.astype(np.int32), indptr.astype(np.int32)), shape=(n, n))
        a.sum_duplicates()
        a.sort_indices()
        return a
    def random_cols(lens, indptr):
        return rng.integers(0, n, int(indptr[-1]))
    yield "uniform16", from_lengths(np.full(n, 16), random_cols)
    # Row lengths ~ 1/rank, shuffled: a few rows of thousands of entries among short ones.
    ranks = rng.permutation(n) + 1
    yield "powerlaw", from_lengths(np.maximum(1, (4 * n // 16) // ranks), random_cols)
    # Banded: columns i-10 .. i+10 clipped to the matrix.
    def band_cols(lens, indptr):
        i = np.repeat(np.arange(n), lens)
        start = np.clip(np.arange(n) - 10, 0, n - 21)
        return np.repeat(start, lens) + (np.arange(int(indptr[-1])) - np.repeat(indptr[:-1], lens))
    yield "banded21", from_lengths(np.full(n, 21), band_cols)
    # Row band: 256 rows of n/64 entries, every other row 0..2 entries.
    lens = rng.integers(0, 3, n)
    lens[rng.choice(n, 256, replace=False)] = n // 64
    yield "rowband", from_lengths(lens, random_cols)


def mlir_kernels(args, ex):
    """(label, .hdl file, heddle binary) of each MLIR-encoded kernel timed."""
    out = []
    for stem in ("spmv_csr", "spmv_coo"):
        src = ex(f"sparse/{stem}.hdl")
        out.append((f"{stem}.hdl", src, args.heddle))
        # The same kernel reading scipy's 32-bit indices as they are stored.
        text = open(src).read()
        narrow = os.path.join(args.out, f"{stem}32.hdl")
        with open(narrow, "w") as f:
            f.write(text.replace(") }>", "), posWidth = 32, crdWidth = 32 }>", 1))
        out.append((f"{stem}.hdl, posWidth = crdWidth = 32", narrow, args.heddle))
        if args.baseline and stem == "spmv_coo":
            out.append((f"{stem}.hdl, baseline build", src, args.baseline))
            out.append((f"{stem}.hdl, posWidth = crdWidth = 32, baseline build", narrow, args.baseline))
    return out


def bytes_moved(a):
    n, m = a.shape
    return 4 * (n + 1) + 8 * a.nnz + 4 * m + 4 * n


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\nexit {p.returncode}\n{p.stderr[-3000:]}")
    return p.stdout


def check(name, what, y, ref):
    err = np.max(np.abs(y.astype(np.float64) - ref)) / max(1e-30, np.max(np.abs(ref)))
    ok = err < 1e-4
    print(f"# {name}: {what}: max relative error {err:.2e} {'ok' if ok else 'WRONG'}", flush=True)
    return ok


def cusparse_times(a, x, reps):
    try:
        import cupy as cp
        import cupyx.scipy.sparse as cps
        from cupyx import cusparse
    except ImportError as e:
        print(f"# cuSPARSE skipped: cupy is not importable ({e})", flush=True)
        return None, None
    ad = cps.csr_matrix((cp.asarray(a.data), cp.asarray(a.indices), cp.asarray(a.indptr)), shape=a.shape)
    xd = cp.asarray(x)
    yd = cp.zeros(a.shape[0], dtype=cp.float32)
    spmv = (lambda: cusparse.spmv(ad, xd, y=yd)) if hasattr(cusparse, "spmv") else (lambda: ad @ xd)
    for _ in range(3):
        y = spmv()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        y = spmv()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return float(np.median(times)), cp.asnumpy(y)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heddle", default=os.path.join(ROOT, "target/release/heddle"))
    ap.add_argument("--log-n", type=int, default=20)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--r", default="1..64", help="the Listing 7 kernel's R range (tune syntax)")
    ap.add_argument("--w", default="1..32", help="the Listing 7 kernel's W range (tune syntax)")
    ap.add_argument("--out", default="/tmp/heddle-gpu-spmv")
    ap.add_argument("--only", default="", help="comma-separated matrix names")
    ap.add_argument("--baseline", default="", help="another heddle build whose COO kernel is timed too")
    ap.add_argument("--no-tune", action="store_true", help="skip the row-per-item and Listing 7 kernels")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(2026)
    ex = lambda p: os.path.join(ROOT, "examples", p)
    rows = []
    failures = 0
    for name, a in matrices(args.log_n, rng):
        if args.only and name not in args.only.split(","):
            continue
        t0 = time.time()
        x = rng.uniform(-1, 1, a.shape[1]).astype(np.float32)
        ref = a.astype(np.float64) @ x.astype(np.float64)
        npz, xs = (os.path.join(args.out, f"{name}.{e}") for e in ("npz", "npy"))
        sp.save_npz(npz, a, compressed=False)
        np.save(xs, x)
        print(f"# {name}: {a.shape[0]} rows, {a.nnz} nonzeros, longest row {int(np.diff(a.indptr).max())} "
              f"(generated in {time.time() - t0:.1f} s)", flush=True)
        gb = bytes_moved(a) / 1e9
        # The MLIR-encoded kernels (CSR: a row per work-item; COO: chunks of
        # entries, each run of one row added once), at 64-bit and at 32-bit
        # positions and coordinates, each with its result checked; with
        # --baseline, the COO kernel of that build too (before/after).
        for label, hdl, binary in mlir_kernels(args, ex):
            y_npy = os.path.join(args.out, f"{name}.y.npy")
            try:
                r = json.loads(run([binary, "run", hdl, "--backend", "opencl", "--matrix", f"A={npz}",
                                    "--input", f"xs={xs}", "--reps", str(args.reps), "--json", "-o", y_npy]))
            except RuntimeError as e:
                print(f"# {name}: {label}: {str(e)[-600:]}", flush=True)
                failures += 1
                continue
            failures += not check(name, label, np.load(y_npy), ref)
            rows.append((name, a.nnz, f"heddle {label}", "", r["kernel_seconds"]["median"]))
        # The row-per-item and Listing 7 kernels, tuned together (each checked against the first).
        t = {"cases": [{"variants": []}]} if args.no_tune else json.loads(run([args.heddle, "tune", ex("csr_spmv_row_per_item.hdl"), ex("csr_spmv_parallel.hdl"),
                            "--csr", npz, "--param-range", f"R={args.r}", "--param-range", f"W={args.w}",
                            "--reps", str(args.reps), "--verify", "first", "--json"]))
        variants = t["cases"][0]["variants"]
        bad = [v for v in variants if v["error"]]
        for v in bad[:5]:
            print(f"# {name}: {v['kernel']} {v['params']}: {v['error'][:300]}", flush=True)
        good = [v for v in variants if not v["error"]]
        for kernel in ("csr_spmv_row_per_item", "csr_spmv_parallel"):
            mine = [v for v in good if v["kernel"] == kernel]
            if mine:
                best = min(mine, key=lambda v: v["seconds"])
                params = " ".join(f"{k}={v}" for k, v in best["params"])
                rows.append((name, a.nnz, f"heddle {kernel}.hdl (best of {len(mine)})", params, best["seconds"]))
        # The Listing 7 kernel's best configuration, its result checked against scipy.
        par = [v for v in good if v["kernel"] == "csr_spmv_parallel"]
        if par:
            best = min(par, key=lambda v: v["seconds"])
            y2 = os.path.join(args.out, f"{name}.y2.npy")
            cmd = [args.heddle, "run", ex("csr_spmv_parallel.hdl"), "--backend", "opencl",
                   "--csr", f"offset,col_indices,values={npz}", "--input", f"xs={xs}", "-o", y2]
            for k, v in best["params"]:
                cmd += ["--param", f"{k}={v}"]
            run(cmd)
            failures += not check(name, f"csr_spmv_parallel.hdl {best['params']}", np.load(y2), ref)
        failures += sum(v["kernel"] == "csr_spmv_row_per_item" for v in bad)
        secs, y = cusparse_times(a, x, args.reps)
        if secs is not None:
            failures += not check(name, "cuSPARSE", y, ref)
            rows.append((name, a.nnz, "cuSPARSE (cupyx.cusparse.spmv)", "", secs))
        for row in rows:
            if row[0] == name:
                print("\t".join([row[0], str(row[1]), row[2], row[3], f"{row[4] * 1e3:.4f} ms", f"{gb / row[4]:.1f} GB/s"]), flush=True)
        os.remove(npz)
    with open(os.path.join(args.out, "gpu_spmv.tsv"), "w") as f:
        f.write("matrix\tnnz\tkernel\tparams\tmedian_s\n")
        for row in rows:
            f.write("\t".join(map(str, row)) + "\n")
    if failures:
        print(f"{failures} wrong results", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""SpMV over SELL-8 written by the front door against the hand-written kernel
and against CSR32 (what `--encoding matrix=auto` ran on the uniform matrices
before SELL had an encoding), interleaved, through `heddle run --reps`.

The three configurations, per matrix, precision and thread count:

- `front`: `examples/dense_mv.hdl --encoding matrix=SELL(8) --matrix matrix=M.npz`
  (the front door's lane form; the CLI packs the matrix and states the
  columns' range);
- `hand`: `examples/sparse/spmv_sell8.hdl`, its parameters renamed to the
  front door's names (`A_soff`, `A_cols`, `A_vals`, `A_dim1`, `A_slices`) so
  that `heddle run` states the same range for it, the arrays packed here as
  `.npy` exactly as `heddle_runtime::sparse::sell` packs them (σ = 1);
- `csr32`: `dense_mv.hdl --encoding matrix=<CSR with 32-bit positions and
  coordinates>`.

Each run prints the kernel's median and fastest launch over `--reps`; rounds
rotate the order of the configurations. Results are checked equal (y against
scipy) on the first round.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp

CSR32 = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>"


def read_csrbin(path):
    with open(path, "rb") as f:
        r, c, nnz = np.fromfile(f, dtype=np.int64, count=3)
        ip = np.fromfile(f, dtype=np.int32, count=r + 1)
        ix = np.fromfile(f, dtype=np.int32, count=nnz)
        v = np.fromfile(f, dtype=np.float64, count=nnz)
    return sp.csr_matrix((v, ix, ip), shape=(int(r), int(c)))


def pack_sell(a, c=8):
    """SELL-c-1 as runtime/src/sparse/sell.rs packs it: soff, cols, vals."""
    rows = a.shape[0]
    lens = np.diff(a.indptr)
    slices = -(-rows // c)
    padded = np.zeros(slices * c, dtype=np.int64)
    padded[:rows] = lens
    width = padded.reshape(slices, c).max(axis=1)
    soff = np.concatenate([[0], np.cumsum(width)]).astype(np.int32)
    cols = np.zeros(int(soff[-1]) * c, dtype=np.int32)
    vals = np.zeros(int(soff[-1]) * c, dtype=np.float64)
    for i in range(rows):
        s, l = divmod(i, c)
        lo, hi = a.indptr[i], a.indptr[i + 1]
        k = np.arange(width[s])
        at = (soff[s] + k) * c + l
        n = hi - lo
        cols[at[:n]] = a.indices[lo:hi]
        vals[at[:n]] = a.data[lo:hi]
        # Padding: value 0 at the row's last column (0 for an empty row).
        cols[at[n:]] = a.indices[hi - 1] if n > 0 else 0
    return soff, cols, vals


def hand_source(root, ty):
    text = open(os.path.join(root, "examples/sparse/spmv_sell8.hdl")).read()
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))
    for old, new in [("soff", "A_soff"), ("cols", "A_cols"), ("vals", "A_vals"), ("m", "A_dim1"), ("S", "A_slices")]:
        # Not inside another name (`_` may precede: `[float]_m`, `]_S`).
        text = re.sub(rf"(?<![A-Za-z0-9]){old}(?![A-Za-z0-9_])", new, text)
    return text.replace("[float]", f"[{ty}]")


def run(heddle, args):
    out = subprocess.run([heddle, "run", *args, "--backend", "cpu", "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"heddle run {' '.join(args)}: {out.stderr}")
    return json.loads(out.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--heddle", default="target/release/heddle")
    p.add_argument("--matrices", default="/tmp/heddle-bench/matrices/bin")
    p.add_argument("--only", default="uniform_100k_d10,uniform_1M_d5,uniform_5k_d4")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=200)
    a = p.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmp = tempfile.mkdtemp(prefix="sell_front_ab_")
    mv = os.path.join(root, "examples/dense_mv.hdl")
    results = {}
    print(f"load: {os.getloadavg()}", file=sys.stderr)
    for name in a.only.split(","):
        m = read_csrbin(os.path.join(a.matrices, f"{name}.csr"))
        npz = os.path.join(tmp, f"{name}.npz")
        sp.save_npz(npz, m, compressed=False)
        soff, cols, vals = pack_sell(m)
        for ty, dt in [("float", np.float32), ("double", np.float64)]:
            prec = "f32" if ty == "float" else "f64"
            x = (1.0 + (np.arange(m.shape[1]) % 13) * 0.125).astype(dt)
            want = m.astype(np.float64) @ x.astype(np.float64)
            files = {}
            for k, v in [("x", x), ("soff", soff), ("cols", cols), ("vals", vals.astype(dt))]:
                files[k] = os.path.join(tmp, f"{name}_{prec}_{k}.npy")
                np.save(files[k], v)
            dense = os.path.join(tmp, f"dense_mv_{ty}.hdl")
            open(dense, "w").write(open(mv).read().replace("[float]", f"[{ty}]"))
            hand = os.path.join(tmp, f"sell8_{ty}.hdl")
            open(hand, "w").write(hand_source(root, ty))
            configs = {
                "front": [dense, "--encoding", "matrix=SELL(8)", "--matrix", f"matrix={npz}", "--input", f"xs={files['x']}"],
                "hand": [hand, "--input", f"A_soff={files['soff']}", "--input", f"A_cols={files['cols']}",
                         "--input", f"A_vals={files['vals']}", "--input", f"xs={files['x']}",
                         "--param", f"A_dim1={m.shape[1]}", "--param", f"A_slices={len(soff) - 1}"],
                "csr32": [dense, "--encoding", f"matrix={CSR32}", "--matrix", f"matrix={npz}", "--input", f"xs={files['x']}"],
            }
            for t in map(int, a.threads.split(",")):
                order = list(configs)
                for r in range(a.rounds):
                    for c in order[r % 3:] + order[:r % 3]:
                        args = configs[c] + ["--threads", str(t), "--reps", str(a.reps)]
                        if r > 0:
                            args += ["-o", os.path.join(tmp, "y.npy")]
                        v = run(a.heddle, args)
                        if r == 0:
                            y = np.array(v["result"], dtype=np.float64)[: m.shape[0]]
                            tol = 1e-5 if prec == "f32" else 1e-12
                            err = np.max(np.abs(y - want) / (np.abs(want) + 1.0)) if len(y) else 0.0
                            assert err < tol, f"{name} {prec} {c}: relative error {err}"
                        ks = v["kernel_seconds"]
                        results.setdefault((name, prec, t, c), []).append((ks["median"], ks["min"]))
                print(f"{name} {prec} {t}T done", file=sys.stderr)
    print(f"load: {os.getloadavg()}", file=sys.stderr)
    print(
        "| matrix | prec | threads | front ms (median / min) | hand ms | csr32 ms "
        "| front / hand (median, min) | csr32 / front (median, min) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in a.only.split(","):
        for prec in ["f32", "f64"]:
            for t in map(int, a.threads.split(",")):
                row = {}
                for c in ["front", "hand", "csr32"]:
                    runs = results[(name, prec, t, c)]
                    row[c] = (float(np.median([r[0] for r in runs])), min(r[1] for r in runs))
                ms = lambda c: f"{row[c][0] * 1e3:.4f} / {row[c][1] * 1e3:.4f}"
                print(
                    f"| {name} | {prec} | {t} | {ms('front')} | {ms('hand')} | {ms('csr32')} | "
                    f"{row['front'][0] / row['hand'][0]:.2f}, {row['front'][1] / row['hand'][1]:.2f} | "
                    f"{row['csr32'][0] / row['front'][0]:.2f}, {row['csr32'][1] / row['front'][1]:.2f} |"
                )


if __name__ == "__main__":
    main()

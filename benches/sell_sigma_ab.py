#!/usr/bin/env python3
"""SpMV over SELL-8-σ (`--encoding matrix=SELL(8, sigma = S)`) against CSR32
(the CSR kernel at 32-bit positions and coordinates, with the default
accumulators and with one, `--accumulators 1`) and SELL-8 (σ = 1),
interleaved, through one heddle binary's `heddle run --backend cpu --reps
--json`: `kernel_seconds`, which for σ > 1 includes putting y back in row
order after each run (docs/cli.md, "SELL-C-σ").

Per round, matrix, precision and thread count, every variant runs once, the
order rotating from round to round. f64 runs `examples/dense_mv.hdl` over
`double`, f32 over `float`, with the matrix's `_x.npy` / `_x32.npy` vector
from its folder. A variant refused (SELL-8 at σ = 1 is not refused by `run`,
only slow) is printed and left out. The first round checks every variant's
y against the first's.

    python3 benches/sell_sigma_ab.py --heddle target/release/heddle \
        --matrix /tmp/npz/rmat_s18_ef10.npz --matrix /tmp/npz/uniform_1M_d5.npz \
        --sigmas 4096,32768,2147483648 --rounds 3 --reps 60 --threads 1,2
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

CSR32 = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>"


def run(heddle, kernel, matrix, x, encoding, threads, reps, extra):
    args = [heddle, "run", kernel, "--backend", "cpu", "--matrix", f"matrix={matrix}", "--input", f"xs={x}",
            "--encoding", f"matrix={encoding}", "--threads", str(threads), "--reps", str(reps), "--json"] + extra
    p = subprocess.run(args, capture_output=True, text=True)
    v = json.loads(p.stdout) if p.stdout.strip() else {}
    return p.returncode, v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heddle", default="target/release/heddle")
    ap.add_argument("--matrix", action="append", required=True, help="a scipy .npz (its _x.npy and _x32.npy beside it)")
    ap.add_argument("--sigmas", default="4096,32768,2147483648", help="σ values, comma-separated (2147483648: the whole matrix)")
    ap.add_argument("--sell1", action="store_true", help="also SELL(8), σ = 1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--precisions", default="f64,f32")
    a = ap.parse_args()
    variants = [("csr32", CSR32, []), ("csr32a1", CSR32, ["--accumulators", "1"])]
    if a.sell1:
        variants.append(("sell8", "SELL(8)", []))
    for s in a.sigmas.split(","):
        name = "sell8s-all" if int(s) >= 1 << 31 else f"sell8s{s}"
        variants.append((name, f"SELL(8, sigma = {s})", []))
    src = open(os.path.join(os.path.dirname(__file__), "..", "examples", "dense_mv.hdl")).read()
    tmp = tempfile.mkdtemp()
    kernels = {}
    for prec, ty in [("f32", "float"), ("f64", "double")]:
        path = os.path.join(tmp, f"dense_mv_{prec}.hdl")
        with open(path, "w") as f:
            f.write(src.replace("[float]", f"[{ty}]"))
        kernels[prec] = path
    times = {}
    for r in range(a.rounds):
        for m in a.matrix:
            base = m[: -len(".npz")]
            for prec in a.precisions.split(","):
                x = base + ("_x32.npy" if prec == "f32" else "_x.npy")
                for t in [int(t) for t in a.threads.split(",")]:
                    order = variants[r % len(variants):] + variants[: r % len(variants)]
                    first = None
                    for name, enc, extra in order:
                        code, v = run(a.heddle, kernels[prec], m, x, enc, t, a.reps, extra)
                        if code != 0:
                            print(f"{os.path.basename(m)} {prec} {t}T {name}: exit {code}: {v.get('errors')}")
                            continue
                        if r == 0:
                            y = v["result"]
                            if first is None:
                                first = (name, y)
                            else:
                                worst = max(abs(float(p) - float(q)) / max(1.0, abs(float(q))) for p, q in zip(y, first[1]))
                                assert len(y) == len(first[1]) and worst < (1e-3 if prec == "f32" else 1e-9), (name, first[0], worst)
                        k = v["kernel_seconds"]
                        times.setdefault((os.path.basename(base), prec, t, name), []).append((k["median"], k["min"]))
        print(f"round {r + 1} done", flush=True)
    print("| matrix | prec | threads | variant | median of medians (ms) | min (ms) | GFLOP/s (median) |")
    print("|---|---|---|---|---|---|---|")
    nnz = {}
    for (mat, prec, t, name), v in sorted(times.items()):
        if mat not in nnz:
            import zipfile
            import numpy as np
            with np.load(os.path.join(os.path.dirname(a.matrix[0]), mat + ".npz")) as z:
                nnz[mat] = len(z["data"])
        med = statistics.median(x[0] for x in v)
        mn = min(x[1] for x in v)
        print(f"| {mat} | {prec} | {t} | {name} | {med * 1e3:.3f} | {mn * 1e3:.3f} | {2 * nnz[mat] / med * 1e-9:.2f} |")


if __name__ == "__main__":
    main()

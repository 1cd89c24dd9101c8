#!/usr/bin/env python3
"""SpMV over SELL-8 with 32-bit columns (`--encoding matrix=SELL(8)`) against
16-bit columns (`SELL(8, crdWidth = 16)`), interleaved, through one heddle
binary's `heddle run --reps --json` (the kernel alone: `kernel_seconds`).

Per round, matrix and precision, both encodings run once each, the order
alternating from round to round. f64 runs a dense SpMV over `double`, f32 one
over `float` (`examples/dense_mv.hdl`), each with the matrix's `_x.npy` /
`_x32.npy` vector from the matrix's folder. A matrix with more than 65 536
columns is refused for 16 bits (exit 1, printed). The first round checks
both results equal.

    python3 benches/sell_width_ab.py --heddle target/release/heddle \
        --matrix /tmp/npz/rowband_5k.npz --matrix /tmp/npz/uniform_5k_d4.npz \
        --rounds 6 --reps 200 --threads 2
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ENCODINGS = {"c32": "SELL(8)", "c16": "SELL(8, crdWidth = 16)"}


def run(heddle, kernel, matrix, x, encoding, threads, reps):
    args = [heddle, "run", kernel, "--backend", "cpu", "--matrix", f"matrix={matrix}", "--input", f"xs={x}",
            "--encoding", f"matrix={encoding}", "--threads", str(threads), "--reps", str(reps), "--json"]
    p = subprocess.run(args, capture_output=True, text=True)
    v = json.loads(p.stdout) if p.stdout.strip() else {}
    return p.returncode, v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heddle", default="target/release/heddle")
    ap.add_argument("--matrix", action="append", required=True, help="a scipy .npz (its _x.npy and _x32.npy beside it)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prec", default="f64,f32")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(root, "examples/dense_mv.hdl")).read()
    tmp = tempfile.mkdtemp()
    kernels = {"f32": os.path.join(tmp, "dense_mv_f.hdl"), "f64": os.path.join(tmp, "dense_mv_d.hdl")}
    open(kernels["f32"], "w").write(text)
    open(kernels["f64"], "w").write(text.replace("[float]", "[double]"))
    precs = a.prec.split(",")
    times = {}  # (matrix, prec, enc) -> [(median, min)]
    refused = {}
    for r in range(a.rounds):
        for m in a.matrix:
            base = m[: -len(".npz")]
            for prec in precs:
                x = base + ("_x32.npy" if prec == "f32" else "_x.npy")
                order = list(ENCODINGS) if r % 2 == 0 else list(reversed(ENCODINGS))
                results = {}
                for enc in order:
                    code, v = run(a.heddle, kernels[prec], m, x, ENCODINGS[enc], a.threads, a.reps)
                    if code != 0:
                        refused[(m, prec, enc)] = (code, v.get("errors", [{}])[0].get("message", ""))
                        continue
                    ks = v["kernel_seconds"]
                    times.setdefault((m, prec, enc), []).append((ks["median"], ks["min"], ks["p10"]))
                    results[enc] = v["result"]
                if r == 0 and len(results) == 2 and results["c32"] != results["c16"]:
                    sys.exit(f"{m} {prec}: the 16-bit result differs from the 32-bit one")
        print(f"round {r + 1} done", file=sys.stderr)
    for (m, prec, enc), (code, msg) in sorted(refused.items()):
        print(f"{os.path.basename(m)} {prec} {enc}: exit {code}: {msg}")
    print(f"threads {a.threads}, {a.rounds} rounds of --reps {a.reps}; per encoding: the median over rounds of each run's "
          "median and p10, and the fastest run (ms)")
    print("| matrix | prec | 32-bit median / p10 / min | 16-bit median / p10 / min | 16/32 median | 16/32 p10 | 16/32 min |")
    print("|---|---|---|---|---|---|---|")
    for m in a.matrix:
        for prec in precs:
            t32, t16 = times.get((m, prec, "c32")), times.get((m, prec, "c16"))
            if not t32 or not t16:
                continue
            med = lambda t: statistics.median(x[0] for x in t) * 1e3
            p10 = lambda t: statistics.median(x[2] for x in t) * 1e3
            mn = lambda t: min(x[1] for x in t) * 1e3
            print(f"| {os.path.basename(m)[:-4]} | {prec} | {med(t32):.4f} / {p10(t32):.4f} / {mn(t32):.4f} "
                  f"| {med(t16):.4f} / {p10(t16):.4f} / {mn(t16):.4f} "
                  f"| {med(t16) / med(t32):.3f} | {p10(t16) / p10(t32):.3f} | {mn(t16) / mn(t32):.3f} |")

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Small SpMV launches on one and two threads, the policy of one threshold
against the state-aware pair, interleaved (docs/performance.md, "wake").

    python3 benches/small_launch_ab.py --heddle target/release/heddle --rounds 5

Each configuration runs `heddle run … --reps N --json` twice per round, once
with HEDDLE_PARALLEL_THRESHOLD=40000 (the one threshold of before: a launch
under it stays on one thread whatever the workers' state) and once without
(awake workers split launches from 5 000), in alternating order. Prints the
minimum and the median over rounds of each run's kernel median and p10, in µs.
"""
import argparse
import json
import os
import statistics
import subprocess

NPZ = "/tmp/npz"
KERNELS = {"f64": "/tmp/lead/dense_mv_d.hdl", "f32": "examples/dense_mv.hdl"}
# What `--encoding matrix=auto` calls CSR32.
CSR32 = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>"


def run(heddle, kernel, matrix, dtype, enc, threads, reps, threshold):
    x = f"{NPZ}/{matrix}_x.npy" if dtype == "f64" else f"{NPZ}/{matrix}_x32.npy"
    cmd = [heddle, "run", kernel, "--backend", "cpu", "--matrix", f"matrix={NPZ}/{matrix}.npz",
           "--input", f"xs={x}", "--encoding", f"matrix={CSR32 if enc == 'CSR32' else enc}", "--threads", str(threads),
           "--reps", str(reps), "--json"]
    env = dict(os.environ)
    env.pop("HEDDLE_PARALLEL_THRESHOLD", None)
    if threshold is not None:
        env["HEDDLE_PARALLEL_THRESHOLD"] = str(threshold)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    k = json.loads(out.stdout)["kernel_seconds"]
    return k["median"] * 1e6, k["p10"] * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heddle", default="target/release/heddle")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3000)
    ap.add_argument("--large", action="store_true", help="also uniform_100k_d10 and rowband_5k at 2 threads")
    args = ap.parse_args()
    configs = [("uniform_5k_d4", d, e, t) for d in ("f32", "f64") for e in ("SELL(8)", "CSR32", "auto") for t in (1, 2)]
    if args.large:
        configs += [(m, d, "auto", 2) for m in ("uniform_100k_d10", "rowband_5k") for d in ("f32", "f64")]
    results = {c: {"one": [], "aware": []} for c in configs}
    for r in range(args.rounds):
        for c in configs:
            order = [("one", 40000), ("aware", None)]
            if r % 2:
                order.reverse()
            for label, threshold in order:
                m, d, e, t = c
                reps = args.reps if m == "uniform_5k_d4" else max(args.reps // 10, 50)
                results[c][label].append(run(args.heddle, KERNELS[d], m, d, e, t, reps, threshold))
    print("| matrix | values | encoding | T | one threshold: median (min) | p10 (min) | state-aware: median (min) | p10 (min) | median ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c, res in results.items():
        cells = []
        for label in ("one", "aware"):
            med = [x[0] for x in res[label]]
            p10 = [x[1] for x in res[label]]
            cells += [f"{statistics.median(med):.2f} ({min(med):.2f})", f"{statistics.median(p10):.2f} ({min(p10):.2f})"]
        ratio = statistics.median(x[0] for x in res["aware"]) / statistics.median(x[0] for x in res["one"])
        m, d, e, t = c
        print(f"| {m} | {d} | {e} | {t} | " + " | ".join(cells) + f" | {ratio:.2f} |")


if __name__ == "__main__":
    main()

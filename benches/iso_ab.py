#!/usr/bin/env python3
"""Iso-valued CSR against CSR32 and SELL-8-σ, and `auto` of two builds,
interleaved, on rmat_s18_ef10 (issue 14, branch isoval; docs/performance.md,
"iso-valued matrices").

usage: benches/iso_ab.py NEW_HEDDLE OLD_HEDDLE MATRIX.npz X64.npy X32.npy ROUNDS REPS

Each round runs every (precision, threads, configuration) once, in order: a
CSR32 kernel, the same with `explicitVal = 1.0`, the dense kernel through
`--encoding matrix=SELL(8, sigma = S)` (every row sorted), and the dense
kernel with `--encoding matrix=auto` on the old and the new build. A run's
figures are `kernel_seconds`' median and fastest launch over REPS; the table
gives the median over rounds of the medians and the fastest launch of all.
"""
import json, subprocess, sys, statistics, os, tempfile
new, old, mat, x64, x32, rounds, reps = sys.argv[1:8]
rounds, reps = int(rounds), int(reps)
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
here = tempfile.mkdtemp(prefix="iso-ab-")
dense = open(os.path.join(root, "examples", "dense_mv.hdl")).read()
open(f"{here}/dense_mv32.hdl", "w").write(dense)
open(f"{here}/dense_mv64.hdl", "w").write(dense.replace("float", "double"))
for prec, scalar in [("f64", "double"), ("f32", "float")]:
    for name, iso in [("csr32", ""), ("csr32iso", f", explicitVal = 1.0 : {prec}")]:
        open(f"{here}/{name}_{prec}.hdl", "w").write(
            "#C = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), "
            f"posWidth = 32, crdWidth = 32{iso} }}>\n"
            f"fun(A: tensor<?x?x{prec}, #C> => fun(xs: [{scalar}]_A_dim1 =>\n"
            "  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0)))))\n")
rows = 262144  # rmat_s18_ef10
sigma = (rows + 7) // 8 * 8
def cfgs(prec):
    x = x64 if prec == "f64" else x32
    dense = f"{here}/dense_mv{prec[1:]}.hdl"
    return [
        ("csr32", new, [f"{here}/csr32_{prec}.hdl", "--matrix", f"A={mat}", "--input", f"xs={x}"]),
        ("csr32iso", new, [f"{here}/csr32iso_{prec}.hdl", "--matrix", f"A={mat}", "--input", f"xs={x}"]),
        ("sell8s", new, [dense, "--matrix", f"matrix={mat}", "--encoding", f"matrix=SELL(8, sigma = {sigma})", "--input", f"xs={x}"]),
        ("auto-before", old, [dense, "--matrix", f"matrix={mat}", "--encoding", "matrix=auto", "--input", f"xs={x}"]),
        ("auto-after", new, [dense, "--matrix", f"matrix={mat}", "--encoding", "matrix=auto", "--input", f"xs={x}"]),
    ]
res = {}
for r in range(rounds):
    for prec in ["f64", "f32"]:
        for t in [1, 2]:
            for name, exe, args in cfgs(prec):
                cmd = [exe, "run"] + args + ["--backend", "cpu", "--threads", str(t), "--reps", str(reps), "--json"]
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    print("FAILED", name, prec, t, p.stderr[-500:], file=sys.stderr)
                    continue
                v = json.loads(p.stdout)
                ks = v["kernel_seconds"]
                auto = v.get("auto", {}).get("matrix", {}).get("encoding", "")
                res.setdefault((prec, t, name), []).append((ks["median"], ks["min"], auto))
    print(f"round {r + 1} done", file=sys.stderr)
nnz = 4877352  # rmat_s18_ef10
print("| prec | threads | config | format | median of medians ms | min ms | GFLOP/s (median) | vs csr32 (median) |")
print("|---|---|---|---|---|---|---|---|")
for prec in ["f64", "f32"]:
    for t in [1, 2]:
        base = statistics.median(m for m, _, _ in res.get((prec, t, "csr32"), [(float("nan"), 0, "")]))
        for name, _, _ in cfgs(prec):
            v = res.get((prec, t, name))
            if not v:
                continue
            med = statistics.median(m for m, _, _ in v)
            mn = min(m for _, m, _ in v)
            fmt = v[0][2] or {"csr32": "CSR32", "csr32iso": "CSR32 + explicitVal", "sell8s": "SELL-8-σ"}[name]
            print(f"| {prec} | {t} | {name} | {fmt} | {med*1e3:.3f} | {mn*1e3:.3f} | {2*nnz/med/1e9:.2f} | {base/med:.2f}x |")

#!/usr/bin/env python3
"""The measured search from the paper's Listing 5 towards Listing 7's schedule.

    python3 examples/measured_search.py [--matrix M.mtx] [--backend opencl|cpu]
                                        [--search N] [--reps N] [--tune]

1. `heddle rewrite examples/csr_packed_spmv.hdl --search N --json`: N distinct
   candidates from one e-graph run, each compiled, checked against the
   interpreter and timed with the input program (interleaved rounds); the
   ranked table, Listing-7-like schedules (a row's entries dealt across the
   work-items of a group) marked.
2. With --tune: the best candidate and the best Listing-7-like one, saved to
   files, timed by `heddle tune` in one interleaved run against
   `examples/csr_spmv_parallel.hdl` (the hand-written Listing 7) over its
   tunables R (rows per work-group) and W (work-items per row).

The binary is $HEDDLE, else target/release/heddle, else target/debug/heddle.
The matrix defaults to examples/data/spmv8/matrix.mtx; the vector is all ones.
Uses only the Python standard library.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LISTING5 = os.path.join(ROOT, "examples", "csr_packed_spmv.hdl")
LISTING7 = os.path.join(ROOT, "examples", "csr_spmv_parallel.hdl")


def heddle_binary():
    if os.environ.get("HEDDLE"):
        return os.environ["HEDDLE"]
    for profile in ("release", "debug"):
        path = os.path.join(ROOT, "target", profile, "heddle")
        if os.path.exists(path):
            return path
    sys.exit("no heddle binary: run `cargo build` or set HEDDLE")


def columns(mtx):
    """The column count of a Matrix Market file (its size line)."""
    with open(mtx) as f:
        for line in f:
            if not line.startswith("%"):
                return int(line.split()[1])
    sys.exit(f"{mtx}: no size line")


def heddle_json(args):
    out = subprocess.run([heddle_binary(), *args, "--json"], capture_output=True, text=True)
    try:
        doc = json.loads(out.stdout)
    except json.JSONDecodeError:
        sys.exit(f"heddle {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    if not doc.get("ok"):
        sys.exit(f"heddle {' '.join(args)}: {doc.get('errors')}")
    return doc


def listing7_like(sketch):
    """A row's entries dealt across the work-items of a group, as Listing 7 does."""
    return "mapLocal" in sketch and "interleave" in sketch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrix", default=os.path.join(ROOT, "examples", "data", "spmv8", "matrix.mtx"))
    ap.add_argument("--backend", default="opencl", choices=["opencl", "cpu"])
    ap.add_argument("--search", type=int, default=8)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tune", action="store_true")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="heddle-search-")
    xs = os.path.join(work, "xs.json")
    with open(xs, "w") as f:
        json.dump([1.0] * columns(a.matrix), f)

    doc = heddle_json(["rewrite", LISTING5, "--search", str(a.search), "--backend", a.backend,
                       "--csr-packed", f"offset,values={a.matrix}", "--input", f"xs={xs}", "--reps", str(a.reps)])
    base = doc["input"]["kernel_seconds"]["median"]
    print(f"search from Listing 5 on {doc['device']}: {len(doc['candidates'])} candidates, median of {doc['reps']} interleaved runs")
    print(f"{'rank':>5} {'median ms':>10} {'vs input':>9}  sketch")
    print(f"{'input':>5} {base * 1e3:>10.4f} {1.0:>8.2f}x  (Listing 5 as written)")
    ranked = [c for c in doc["candidates"] if c.get("rank") is not None]
    for c in ranked:
        t = c["kernel_seconds"]["median"]
        mark = "  <- Listing 7's shape" if listing7_like(c["sketch"]) else ""
        print(f"{c['rank']:>5} {t * 1e3:>10.4f} {base / t:>8.2f}x  {c['sketch']}{mark}")
    for c in doc["candidates"]:
        if c.get("rank") is None:
            print(f"    - {c['sketch']}: {c.get('error')}")
    if doc.get("first_rejection"):
        print(f"dropped while extracting (first): {doc['first_rejection']}")
    if not a.tune or not ranked:
        return

    # The best candidate and the best Listing-7-like one, against the
    # hand-written Listing 7 over its tunables, in one interleaved run.
    picks = [("search_best", ranked[0])]
    like = [c for c in ranked if listing7_like(c["sketch"])]
    if like and like[0] is not ranked[0]:
        picks.append(("search_listing7_like", like[0]))
    files = []
    for name, c in picks:
        path = os.path.join(work, f"{name}.hdl")
        with open(path, "w") as f:
            f.write(c["program"])
        files.append(path)
    tuned = heddle_json(["tune", LISTING5, *files, LISTING7, "--backend", a.backend, "--csr", a.matrix,
                         "--param-range", "R=1..16", "--param-range", "W=1..4", "--reps", str(a.reps), "--verify", "first"])
    case = tuned["cases"][0]
    best = {}
    for v in case["variants"]:
        if v.get("seconds") is None:
            continue
        if v["kernel"] not in best or v["seconds"] < best[v["kernel"]]["seconds"]:
            best[v["kernel"]] = v
    print(f"\none interleaved tune run on {case['case']} (best configuration of each kernel):")
    fastest = min(v["seconds"] for v in best.values())
    for kernel, v in best.items():
        params = " ".join(f"{k}={n}" for k, n in v["params"])
        print(f"  {kernel:<24} {v['seconds'] * 1e3:>10.4f} ms  {fastest / v['seconds']:>5.2f}x the fastest  {params}")


if __name__ == "__main__":
    main()

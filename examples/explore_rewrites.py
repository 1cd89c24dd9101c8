#!/usr/bin/env python3
"""Explore rewrites of a heddle kernel: several rule subsets and limits,
one `heddle rewrite --json` run each, and a comparison table.

    python3 examples/explore_rewrites.py [KERNEL.hdl] [--cost size|depth|parallel]

The binary is $HEDDLE, else target/release/heddle, else target/debug/heddle.
Uses only the Python standard library.
"""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = os.path.join(ROOT, "rewrite", "tests", "rules")


def heddle_binary():
    if os.environ.get("HEDDLE"):
        return os.environ["HEDDLE"]
    for profile in ("release", "debug"):
        path = os.path.join(ROOT, "target", profile, "heddle")
        if os.path.exists(path):
            return path
    sys.exit("no heddle binary: run `cargo build` or set HEDDLE")


# (label, extra arguments): rule subsets first, then the full set under limits.
CONFIGS = [
    ("builtin", []),
    ("lowering only", ["--no-builtin", "--rules", os.path.join(RULES, "lowering.rules")]),
    ("fusion only", ["--no-builtin", "--rules", os.path.join(RULES, "fusion.rules")]),
    ("structure only", ["--no-builtin", "--rules", os.path.join(RULES, "structure.rules")]),
    ("split only", ["--no-builtin", "--rules", os.path.join(RULES, "split.rules")]),
    ("memory", ["--no-builtin", "--rules", os.path.join(RULES, "memory.rules")]),
    ("builtin, 1 iteration", ["--iter-limit", "1"]),
    ("builtin, 50 nodes", ["--node-limit", "50"]),
    ("builtin + AC of +", ["--rules", os.path.join(RULES, "ac.rules"), "--node-limit", "5000"]),
]


def run(binary, kernel, args, cost):
    cmd = [binary, "rewrite", kernel, "--json", "--cost", cost] + args
    proc = subprocess.run(cmd, capture_output=True, text=True)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[:1]}
    if not out.get("ok", False):
        return {"error": [e.get("message", "") for e in out.get("errors", [])][:1]}
    return out


def first_line_changes(before, after):
    """Which lowered primitives the extracted program uses."""
    used = [p for p in ("mapGlobal", "mapWorkgroup", "mapLocal", "mapSeq", "reduceSeq", "split", "toLocal", "toPrivate")
            if p in after and p not in before]
    return ", ".join(used) or "-"


def main():
    args = sys.argv[1:]
    cost = "parallel"
    if "--cost" in args:
        i = args.index("--cost")
        cost = args[i + 1] if i + 1 < len(args) else cost
        del args[i:i + 2]
    kernel = args[0] if args else os.path.join(ROOT, "examples", "dense_mv.hdl")
    binary = heddle_binary()
    with open(kernel) as f:
        original = f.read()
    rows = []
    for label, extra in CONFIGS:
        out = run(binary, kernel, extra, cost)
        if "error" in out:
            rows.append((label, "error", "", "", "", "", "", " ".join(out["error"])))
            continue
        s = out["stats"]
        applied = sum(out["rules_applied"].values())
        note = "kept original: " + out["fallback"] if out.get("fallback") else first_line_changes(original, out["program"])
        rows.append((label, str(s["iterations"]), str(s["nodes"]), str(s["classes"]),
                     "%.3f" % s["seconds"], s["stop_reason"], "%d -> %d" % (out["cost"]["before"], out["cost"]["after"]),
                     "%d applied; %s" % (applied, note)))
    head = ("configuration", "iters", "e-nodes", "e-classes", "seconds", "stopped", "cost " + cost, "result")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    print("kernel:", os.path.relpath(kernel, ROOT))
    print(line(head))
    print(line(tuple("-" * w for w in widths)))
    for r in rows:
        print(line(r))


if __name__ == "__main__":
    main()

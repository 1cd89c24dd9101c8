"""Read + pack a Matrix Market file into CSR: heddle against scipy, interleaved
(issue 14: read + pack >= 1.5x scipy's speed on 2 threads, peak memory <= scipy's).

    cargo build --release -p heddle
    python benches/mtx_read_pack.py [--mtx target/e2e/random_5000000.mtx] [--reps 7] [--heddle BIN ...]

heddle's time is `heddle convert FILE --to CSR -o OUT.npz --json`'s
`read_seconds + convert_seconds` (reading the file, parsing, packing into CSR;
not the write); scipy's is `scipy.io.mmread(FILE).tocsr()` timed around the
call in its own process (fast_matrix_market's threads: all cores). Peak
memory is each whole process's maximum resident set (`/usr/bin/time -v`; the
heddle process also writes the .npz, scipy's does nothing else). CPU time
(all threads) is heddle's whole process (`/usr/bin/time -v`, the write
included) against scipy's `time.process_time()` around the call: on a
loaded machine it shows the work done where wall time shows the scheduler. Generate the
default file with `python benches/run_matrix_e2e.py --reps 1` (or it is made
here, as that script makes it). Several `--heddle` binaries (a before and an
after build) are interleaved with scipy in every repetition.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCIPY = """import sys, time, scipy.io as sio
t, c = time.perf_counter(), time.process_time()
A = sio.mmread(sys.argv[1]).tocsr()
t, c = time.perf_counter() - t, time.process_time() - c
print(t, A.nnz, c)
"""


def peak_kb(stderr: str) -> float | None:
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return float(m.group(1)) if m else None


def cpu_s(stderr: str) -> float | None:
    u = re.search(r"User time \(seconds\): ([0-9.]+)", stderr)
    s = re.search(r"System time \(seconds\): ([0-9.]+)", stderr)
    return float(u.group(1)) + float(s.group(1)) if u and s else None


def run(cmd: list[str]) -> tuple[str, float | None, float | None]:
    timev = ["/usr/bin/time", "-v"] if os.path.exists("/usr/bin/time") else []
    p = subprocess.run(timev + cmd, check=True, capture_output=True, text=True)
    return p.stdout, peak_kb(p.stderr), cpu_s(p.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mtx", default=str(ROOT / "target" / "e2e" / "random_5000000.mtx"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--heddle", action="append", help="heddle binaries to compare (default: target/release/heddle)")
    a = ap.parse_args()
    mtx = pathlib.Path(a.mtx)
    if not mtx.exists():
        subprocess.run([sys.executable, str(ROOT / "benches" / "run_matrix_e2e.py"), "--reps", "1"], check=True)
    bins = a.heddle or [str(ROOT / "target" / "release" / "heddle")]
    tmp = pathlib.Path(tempfile.mkdtemp())
    script = tmp / "scipy_read.py"
    script.write_text(SCIPY)
    times: dict[str, list[float]] = {b: [] for b in bins} | {"scipy": []}
    mem: dict[str, list[float]] = {k: [] for k in times}
    cpu: dict[str, list[float]] = {k: [] for k in times}
    nnz = {}
    for _ in range(a.reps):
        for b in bins:
            out, kb, c = run([b, "convert", str(mtx), "--to", "CSR", "-o", str(tmp / "out.npz"), "--json"])
            if c is not None:
                cpu[b].append(c)
            j = json.loads(out)
            times[b].append(j["read_seconds"] + j["convert_seconds"])
            nnz[b] = j["nse"]
            if kb:
                mem[b].append(kb)
        out, kb, _ = run([sys.executable, str(script), str(mtx)])
        t, n, c = out.split()
        times["scipy"].append(float(t))
        cpu["scipy"].append(float(c))
        nnz["scipy"] = int(n)
        if kb:
            mem["scipy"].append(kb)
    assert len(set(nnz.values())) == 1, f"stored entries differ: {nnz}"
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        m = f", peak {statistics.median(mem[k]) / 1024:.0f} MB" if mem[k] else ""
        m += f", CPU {statistics.median(cpu[k]):.3f} s" if cpu[k] else ""
        print(f"{k}: read + pack median {med[k]:.3f} s (min {min(v):.3f}, max {max(v):.3f}, {len(v)} runs){m}")
        if k != "scipy":
            print(f"  scipy / {k} time: {med['scipy'] / med[k]:.2f}x")
            if cpu[k] and cpu["scipy"]:
                print(f"  scipy / {k} CPU time: {statistics.median(cpu['scipy']) / statistics.median(cpu[k]):.2f}x")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Is this (virtual) machine's core in its slow mode right now?
#
# On the shared development VM a core sometimes runs all code at about half
# speed for stretches of tens of milliseconds to seconds (issue 14, the
# "bimodal" small SpMV; docs/performance.md, "The bimodal small SpMV"): a
# latency-bound chain of integer multiplies, a plain C CSR SpMV and heddle's
# kernels slow down together, with the same addresses and pages, and no steal
# time is counted. It is the machine, not heddle, so a benchmark of a kernel
# of a few microseconds taken in such a stretch is 2x off.
#
# This script compiles (with `cc`) and runs a tiny probe that times a fixed
# 4 chains of 15 000 dependent multiplies each (about 16 us at full speed) in windows
# of 100 runs for SECONDS seconds (default 2), and prints the fastest window,
# the median window and the share of windows slower than 1.3x the fastest.
# Use it before and after a benchmark of a small kernel, or interleave it with
# one: a share near 0 is a quiet machine. Exit status 0 always (it only reports).
#
#   bash scripts/cpu-mode-probe.sh [SECONDS] [CPU]
#
# CPU (optional) pins the probe with taskset.
set -euo pipefail
secs="${1:-2}"
cpu="${2:-}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat >"$dir/probe.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
/* kind 0: one chain of dependent multiplies (latency-bound: slower only if
   the clock is); kind 1: four independent chains (throughput-bound: slower
   also when another hardware thread shares the core's multipliers). */
static double run(int kind) {
  double s = now();
  unsigned long x0 = 1, x1 = 2, x2 = 3, x3 = 4;
  if (kind == 0)
    for (int i = 0; i < 30000; i++) x0 = x0 * 3 + i;
  else
    for (int i = 0; i < 15000; i++) { x0 = x0 * 3 + i; x1 = x1 * 5 + i; x2 = x2 * 7 + i; x3 = x3 * 9 + i; }
  __asm__ volatile("" ::"r"(x0 + x1 + x2 + x3));
  return now() - s;
}
static double w[2][100000];
int main(int argc, char **argv) {
  double end = now() + atof(argv[1]);
  int nw = 0;
  while (now() < end && nw < 100000) {
    for (int kind = 0; kind < 2; kind++) {
      double t[50];
      for (int r = 0; r < 50; r++) t[r] = run(kind);
      qsort(t, 50, sizeof t[0], cmp);
      w[kind][nw] = t[25];
    }
    nw++;
  }
  const char *name[2] = {"1 chain (latency) ", "4 chains (ports)  "};
  for (int kind = 0; kind < 2; kind++) {
    qsort(w[kind], nw, sizeof w[kind][0], cmp);
    int slow = 0;
    for (int k = 0; k < nw; k++) slow += w[kind][k] > 1.3 * w[kind][0];
    /* the median of the slow windows (they are the last `slow` once sorted) */
    double slow_median = slow ? w[kind][nw - 1 - slow / 2] : 0;
    printf("%s windows %d  fastest %.1f us  median %.1f us  slow share %.2f  slow windows' median %.1f us\n",
           name[kind], nw, w[kind][0] * 1e6, w[kind][nw / 2] * 1e6, (double)slow / nw, slow_median * 1e6);
  }
  return 0;
}
EOF
cc -O2 -o "$dir/probe" "$dir/probe.c"
if [ -n "$cpu" ]; then
  taskset -c "$cpu" "$dir/probe" "$secs"
else
  "$dir/probe" "$secs"
fi

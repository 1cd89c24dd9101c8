#!/usr/bin/env bash
# Runs every fuzz target (fuzz/, cargo-fuzz + libFuzzer) for a fixed time
# each and fails if any of them finds a crash, a timeout or an allocation
# beyond the limits below. The findings are in fuzz/artifacts/TARGET/.
#
#   bash scripts/fuzz.sh                 # 10 s per target
#   bash scripts/fuzz.sh 600 nat mtx     # 10 minutes each for two targets
#   FUZZ_JOBS=2 bash scripts/fuzz.sh 3600   # longer runs, two processes per target
#
# The toolchain is stable: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its
# instrumentation flags. Under CI=true libFuzzer's seed is fixed, so a run
# is reproducible; elsewhere every run explores anew.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-10}"
shift || true
all=(parse_roundtrip typecheck lower encoding mtx tns json_storage input_file rules nat)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=("${all[@]}"); fi

export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked --quiet
fi
# Release code with debug assertions (overflow checks panic), no sanitizer:
# the targets are safe Rust, and ASan would double the build and run time.
# FUZZ_SANITIZER=address for a run that wants it.
flags=(-O -a -s "${FUZZ_SANITIZER:-none}")
python3 fuzz/seed_corpus.py >/dev/null
start=$(date +%s)
(cd fuzz && cargo fuzz build "${flags[@]}" 2>&1 | grep -vE '^\s+(Compiling|Checking|Fresh)' || true)
echo "== fuzz targets built in $(( $(date +%s) - start )) s" >&2

dict_of() {
  case "$1" in
    parse_roundtrip|typecheck|lower) echo heddle ;;
    *) echo "$1" ;;
  esac
}
extra=()
if [ "${CI:-}" = "true" ]; then extra+=(-seed=20261123); fi
if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then extra+=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS"); fi
failed=()
for t in "${targets[@]}"; do
  log="fuzz/artifacts/$t.log"
  mkdir -p "fuzz/artifacts/$t"
  # -timeout: one input may take 10 s at most (a hang is a finding);
  # -rss_limit_mb / -malloc_limit_mb: no input may make heddle allocate
  # beyond 2 GiB in all or 1 GiB at once (small inputs, bounded memory).
  if (cd fuzz && cargo fuzz run "${flags[@]}" "$t" -- \
        -max_total_time="$secs" -dict="dict/$(dict_of "$t").dict" -timeout=10 \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
        "${extra[@]}") >"$log" 2>&1; then
    logs=("$log")
    for f in fuzz/fuzz-*.log; do if [ -e "$f" ]; then logs+=("$f"); fi; done
    runs=$(awk '/stat::number_of_executed_units/ {s += $2} END {print s + 0}' "${logs[@]}")
    cov=$(awk '/cov: [0-9]+/ {for (i = 1; i < NF; i++) if ($i == "cov:") c = $(i + 1)} END {print "cov " c + 0}' "${logs[@]}")
    echo "fuzz $t: ok ($runs runs, $cov, ${secs} s)"
  else
    echo "fuzz $t: FAILED (see $log and fuzz/artifacts/$t/)" >&2
    grep -E 'panicked at|ERROR: libFuzzer|SUMMARY' "$log" | head -5 >&2 || true
    failed+=("$t")
  fi
  rm -f fuzz/fuzz-*.log
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found crashes in: ${failed[*]}" >&2
  exit 1
fi

#!/usr/bin/env bash
# Runs every fuzz target (fuzz/, cargo-fuzz + libFuzzer) for a fixed time
# each and fails if any of them finds a crash, a timeout or an allocation
# beyond the limits below. The findings are in fuzz/artifacts/TARGET/.
#
#   bash scripts/fuzz.sh                 # 10 s per target
#   bash scripts/fuzz.sh 600 nat mtx     # 10 minutes each for two targets
#   FUZZ_JOBS=2 bash scripts/fuzz.sh 3600   # longer runs, two processes per target
#   bash scripts/fuzz.sh --selftest      # proves that a crashing input fails the run
#
# The toolchain is stable: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its
# instrumentation flags. Under CI=true libFuzzer's seed is fixed (the inputs
# it tries follow from the seed; how many it gets through in the time still
# varies with the machine's load); elsewhere every run explores anew.
#
# scripts/test.sh runs this under CI=true, which also makes the build
# cheaper (opt-level 1, 16 codegen units: a few seconds of fuzzing per
# target gain little from a slower, fully optimised build).
# FUZZ_QUICK_BUILD=1 or 0 chooses either build anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
selftest=0
if [ "${1:-}" = "--selftest" ]; then selftest=1; shift; fi
secs="${1:-10}"
shift || true
all=(parse_roundtrip typecheck lower encoding mtx tns json_storage input_file npz rules nat)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=("${all[@]}"); fi

export RUSTC_BOOTSTRAP=1
# cargo-fuzz pinned: 0.13.2 builds on the stable toolchain (rustc 1.95);
# --locked keeps its dependencies at the versions it was released with.
cargo_fuzz_version=0.13.2
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz $cargo_fuzz_version" >&2
  start=$(date +%s)
  cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked --quiet
  echo "== cargo-fuzz installed in $(( $(date +%s) - start )) s" >&2
fi
# Release code with debug assertions (overflow checks panic), no sanitizer:
# the targets are safe Rust, and ASan would double the build and run time.
# FUZZ_SANITIZER=address for a run that wants it.
flags=(-O -a -s "${FUZZ_SANITIZER:-none}")
if [ "${FUZZ_QUICK_BUILD:-$([ "${CI:-}" = "true" ] && echo 1 || echo 0)}" = "1" ]; then
  # cargo-fuzz compiles each crate as one codegen unit unless told
  # otherwise; 16 let the cores share a crate. The same settings must reach
  # `cargo fuzz build` and every `cargo fuzz run` (which rebuilds on any
  # change): in `flags` and exported.
  flags+=(--codegen-units 16)
  export CARGO_PROFILE_RELEASE_OPT_LEVEL=1
fi
start=$(date +%s)
set +e
(cd fuzz && cargo fuzz build "${flags[@]}" 2>&1) | grep -vE '^\s+(Compiling|Checking|Fresh)'
built=${PIPESTATUS[0]}
set -e
if [ "$built" -ne 0 ]; then
  echo "fuzz: the targets do not build" >&2
  exit 1
fi
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

# run_target TARGET LOG [CORPUS_DIR...]: fuzzes TARGET for $secs seconds
# (its corpus fuzz/corpus/TARGET unless directories are named); fails when
# libFuzzer reports a finding (it exits non-zero and leaves the input in
# fuzz/artifacts/TARGET/).
run_target() {
  local t="$1" log="$2"
  shift 2
  mkdir -p "fuzz/artifacts/$t"
  # -timeout: one input may take 10 s at most (a hang is a finding);
  # -rss_limit_mb / -malloc_limit_mb: no input may make heddle allocate
  # beyond 2 GiB in all or 1 GiB at once (small inputs, bounded memory).
  (cd fuzz && cargo fuzz run "${flags[@]}" "$t" "$@" -- \
      -max_total_time="$secs" -dict="dict/$(dict_of "$t").dict" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
      ${extra[@]+"${extra[@]}"}) >"$log" 2>&1
}

if [ "$selftest" = 1 ]; then
  # The failure path, end to end: the `nat` target crashes on one marker
  # input when HEDDLE_FUZZ_SELFTEST is set (fuzz/src/lib.rs); a run over a
  # corpus holding it must fail and leave the input as a crash artifact.
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/corpus"
  printf 'heddle-fuzz-selftest' >"$scratch/corpus/marker"
  mkdir -p fuzz/artifacts/nat
  before=$(find fuzz/artifacts/nat -name 'crash-*' | wc -l)
  secs=5
  if HEDDLE_FUZZ_SELFTEST=1 run_target nat "$scratch/log" "$scratch/corpus"; then
    echo "fuzz self-test: FAILED: a crashing input did not fail the run" >&2
    tail -5 "$scratch/log" >&2
    exit 1
  fi
  if ! grep -q 'fuzz self-test crash' "$scratch/log"; then
    echo "fuzz self-test: FAILED: the run failed, but not on the marker input" >&2
    tail -20 "$scratch/log" >&2
    exit 1
  fi
  new=$(find fuzz/artifacts/nat -name 'crash-*' -newer "$scratch/corpus/marker")
  if [ -z "$new" ] || ! grep -qx 'heddle-fuzz-selftest' $new; then
    echo "fuzz self-test: FAILED: no crash artifact holds the marker input" >&2
    exit 1
  fi
  rm -f $new
  echo "fuzz self-test: ok (a crashing input fails the run and is kept as an artifact; $before earlier artifacts untouched)"
  exit 0
fi

python3 fuzz/seed_corpus.py >/dev/null
failed=()
for t in "${targets[@]}"; do
  log="fuzz/artifacts/$t.log"
  if run_target "$t" "$log"; then
    logs=("$log")
    for f in fuzz/fuzz-*.log; do if [ -e "$f" ]; then logs+=("$f"); fi; done
    runs=$(awk '/stat::number_of_executed_units/ {s += $2} END {print s + 0}' "${logs[@]}")
    # The last status line of libFuzzer (of each job): coverage, features, corpus.
    last=$(grep -hE '^#[0-9]+.*cov: [0-9]+' "${logs[@]}" | tail -1)
    cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$last")
    corp=$(sed -nE 's/.*corp: ([0-9]+\/[0-9a-zA-Z]+).*/\1/p' <<<"$last")
    echo "fuzz $t: ok ($runs runs, cov ${cov:-0}, ft ${ft:-0}, corpus ${corp:-?}, ${secs} s)"
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

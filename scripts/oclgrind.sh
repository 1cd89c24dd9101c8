#!/usr/bin/env bash
# Runs every test that launches OpenCL kernels again, on Oclgrind instead of
# POCL, with what `oclgrind --data-races --uninitialized --check-api` checks:
# any report (a data race, an uninitialised value, an invalid API call) fails
# the launch that caused it (runtime/src/oclgrind.rs), so it fails the test.
#
# Which tests: every file in tests/it/ (or tests/) that mentions `opencl` or `backends()`
# (the helpers of tests/common every OpenCL test goes through), so kernels
# that tests add later are checked without being listed here. With
# HEDDLE_OCLGRIND=1 those helpers offer the OpenCL backend only, refuse any
# device but Oclgrind, and tests pick small inputs (the simulator is slow).
#
# Oclgrind is installed as the only OpenCL platform through its ICD library
# (OCL_ICD_VENDORS) rather than LD_PRELOAD, so processes that never use
# OpenCL do not load it; the OCLGRIND_* variables are the ones the `oclgrind`
# wrapper sets for those flags. Each process logs to its own file (`%p`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/opencl-deps.sh
opencl_deps
source scripts/oclgrind-deps.sh
oclgrind_deps
icd="$(oclgrind_icd)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "$icd" > "$work/oclgrind.icd"
export OCL_ICD_VENDORS="$work/oclgrind.icd"
export OCLGRIND_DATA_RACES=1 OCLGRIND_UNINITIALIZED=1 OCLGRIND_CHECK_API=1
export OCLGRIND_LOG="$work/oclgrind-%p.log"
# Oclgrind interprets the LLVM IR of each kernel; built without optimisation
# it sees the kernel as written (and 21.10 cannot load some optimised IR:
# "Unsupported constant int size: 5 bytes").
export OCLGRIND_BUILD_OPTIONS="-cl-opt-disable"
export HEDDLE_OCLGRIND=1
unset INSTA_UPDATE
export INSTA_UPDATE=no

# The integration tests are one binary, tests/it/ (a module per file): its
# modules that qualify run through name filters (`opencl::` runs the tests
# of tests/it/opencl.rs). A file left directly in tests/ is a binary of its own.
tests=()
filters=()
for f in tests/it/*.rs; do
  [ "$(basename "$f")" = main.rs ] && continue
  if grep -q -E 'opencl|backends\(\)' "$f"; then
    filters+=("$(basename "$f" .rs)::")
  fi
done
for f in tests/*.rs; do
  [ -e "$f" ] || continue
  if grep -q -E 'opencl|backends\(\)' "$f"; then
    tests+=(--test "$(basename "$f" .rs)")
  fi
done
echo "== Oclgrind: tests/it modules ${filters[*]}; binaries ${tests[*]}" >&2
status=0
if [ ${#filters[@]} -gt 0 ]; then
  cargo test --no-fail-fast --test it "$@" -- "${filters[@]}" || status=$?
fi
if [ ${#tests[@]} -gt 0 ]; then
  cargo test --no-fail-fast "${tests[@]}" "$@" || status=$?
fi
exit $status

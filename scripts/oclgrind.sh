#!/usr/bin/env bash
# Runs every test that launches OpenCL kernels again, on Oclgrind instead of
# POCL, with what `oclgrind --data-races --uninitialized --check-api` checks:
# any report (a data race, an uninitialised value, an invalid API call) fails
# the launch that caused it (runtime/src/oclgrind.rs), so it fails the test.
#
# Which tests: every file in tests/ that mentions `opencl` or `backends()`
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

tests=()
for f in tests/*.rs; do
  if grep -q -E 'opencl|backends\(\)' "$f"; then
    tests+=(--test "$(basename "$f" .rs)")
  fi
done
echo "== Oclgrind: ${tests[*]}" >&2
cargo test --no-fail-fast "${tests[@]}" "$@"

#!/usr/bin/env bash
# Runs the whole test suite. Snapshot tests never update themselves here:
# a missing or changed snapshot is a failure (review with `cargo insta review`).
set -euo pipefail
cd "$(dirname "$0")/.."
# The OpenCL backend links libOpenCL and its tests run on POCL.
source scripts/opencl-deps.sh
opencl_deps
# numpy and scipy write and check data in the documentation's scripts.
source scripts/python-deps.sh
python_deps
unset INSTA_UPDATE
export INSTA_UPDATE=no
# Under CI the property tests draw a fixed sequence of cases, so a run is
# reproducible; elsewhere every run draws new ones (and keeps finding bugs).
if [ "${CI:-}" = "true" ]; then
  export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261121}"
  # A one-off build gains nothing from incremental state (1.7 GB of disk).
  export CARGO_INCREMENTAL=0
fi
# Disk at each stage, so a CI log shows what a run needs.
disk() { echo "== ${SECONDS} s, disk after $1: $(du -sh target 2>/dev/null | cut -f1) in target/, $(df -h . | awk 'NR==2 {print $4}') free" >&2; }
disk "setup"
status=0
# Formatting (rustfmt.toml) first: it takes a second and fails the run at the end.
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all --check >/dev/null || { echo "cargo fmt --all --check: the code is not formatted (run cargo fmt --all)" >&2; status=1; }
else
  echo "SKIPPED: cargo fmt --check (rustfmt is not installed: rustup component add rustfmt)" >&2
fi
cargo test --workspace --no-fail-fast || status=$?
disk "cargo test"
# The Python package (python/): built with maturin into target/python-venv, tested with pytest.
bash scripts/python-package.sh || status=$?
disk "python"
# Every OpenCL test again on Oclgrind: any data race, uninitialised value or
# invalid API call it reports fails the build.
bash scripts/oclgrind.sh || status=$?
disk "oclgrind"
# Every fuzz target (fuzz/) for a few seconds each, FUZZ_SECONDS (5 by
# default; libFuzzer's seed fixed under CI=true): a crash, a hang or an
# allocation beyond the limits fails the build. The self-test first proves
# that a crashing input does. Installs cargo-fuzz if it is missing.
bash scripts/fuzz.sh --selftest || status=$?
bash scripts/fuzz.sh "${FUZZ_SECONDS:-5}" || status=$?
exit $status

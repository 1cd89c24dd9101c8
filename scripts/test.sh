#!/usr/bin/env bash
# Runs the whole test suite. Snapshot tests never update themselves here:
# a missing or changed snapshot is a failure (review with `cargo insta review`).
set -euo pipefail
cd "$(dirname "$0")/.."
# The OpenCL backend links libOpenCL and its tests run on POCL.
source scripts/opencl-deps.sh
opencl_deps
unset INSTA_UPDATE
export INSTA_UPDATE=no
cargo test --workspace --no-fail-fast

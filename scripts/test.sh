#!/usr/bin/env bash
# Runs the whole test suite. Snapshot tests never update themselves here:
# a missing or changed snapshot is a failure (review with `cargo insta review`).
set -euo pipefail
cd "$(dirname "$0")/.."
unset INSTA_UPDATE
export INSTA_UPDATE=no
cargo test --workspace --no-fail-fast

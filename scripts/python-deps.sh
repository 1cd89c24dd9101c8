#!/usr/bin/env bash
# Installs the Python packages tests use to write and check data (numpy,
# scipy): the cookbook's scripts (tests/it/docs.rs) run against them.
# Sourced by scripts/test.sh. Does nothing when they import already.
python_deps() {
  if python3 -c "import numpy, scipy" >/dev/null 2>&1; then
    return 0
  fi
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "note: no pip; install numpy and scipy for python3 by hand" >&2
    return 0
  fi
  echo "== installing numpy and scipy" >&2
  python3 -m pip install --quiet --disable-pip-version-check numpy scipy >&2
}

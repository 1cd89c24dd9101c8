#!/usr/bin/env bash
# Installs Oclgrind, the OpenCL device simulator that checks kernels for data
# races, uninitialised values and API misuse (scripts/oclgrind.sh uses it).
# Sourced like scripts/opencl-deps.sh; does nothing when `oclgrind` and its
# ICD library are already installed; needs root (or sudo) and apt otherwise.
oclgrind_icd() {
  # The ICD library Debian's package installs (OCL_ICD_VENDORS may name it).
  local f
  for f in /usr/lib/oclgrind/liboclgrind-rt-icd.so /usr/lib/x86_64-linux-gnu/oclgrind/liboclgrind-rt-icd.so \
           /usr/local/lib/oclgrind/liboclgrind-rt-icd.so; do
    if [ -e "$f" ]; then echo "$f"; return 0; fi
  done
  return 1
}

oclgrind_deps() {
  if command -v oclgrind >/dev/null 2>&1 && oclgrind_icd >/dev/null; then
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "note: no apt-get; install Oclgrind (https://github.com/jrprice/Oclgrind) by hand" >&2
    return 1
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "note: not root and no sudo: install the oclgrind package by hand" >&2
      return 1
    fi
  fi
  echo "== installing Oclgrind" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq --no-install-recommends oclgrind >&2
  oclgrind_icd >/dev/null
}

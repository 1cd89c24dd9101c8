#!/usr/bin/env bash
# Installs what the OpenCL backend needs to build and run on the CPU: the ICD
# loader and its link library (libOpenCL), and POCL as the platform.
# Sourced by scripts/test.sh and scripts/demo.sh. Does nothing when an ICD
# loader and a vendor are already installed; needs root (CI and the
# project's machines run as root) and apt otherwise.
opencl_deps() {
  if [ -e /usr/lib/x86_64-linux-gnu/libOpenCL.so ] || ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so '; then
    if ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
      return 0
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "note: no apt-get; install an OpenCL ICD loader (libOpenCL.so) and a driver such as POCL by hand" >&2
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "note: not root and no sudo: install pocl-opencl-icd ocl-icd-opencl-dev clinfo by hand" >&2
      return 0
    fi
  fi
  echo "== installing OpenCL (POCL, ICD loader)" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq --no-install-recommends pocl-opencl-icd ocl-icd-opencl-dev clinfo >&2
}

#!/usr/bin/env bash
# Runs heddle's OpenCL tests and the GPU SpMV benchmark on a machine with a
# GPU but without a Rust toolchain (the device machine lent to some
# sessions). Everything is built beforehand, here:
#
#   scripts/gpu-check.sh --bundle DIR     # on the build machine: fills DIR
#   scripts/gpu-check.sh --run DIR        # on the GPU machine, from the repository root
#
# The bundle holds the release CLI, the release test binaries that hold every test
# file that runs OpenCL kernels (the list scripts/oclgrind.sh uses; the files of
# tests/it/ are modules of one binary, run one at a time by name filter), stripped,
# and the OpenCL ICD loader (libOpenCL.so.1) in case the GPU machine lacks one.
# On the GPU machine the NVIDIA OpenCL driver is registered with the loader
# when /etc/OpenCL/vendors has no entry for it. Each test binary runs with
# CI=true, so a missing OpenCL device fails rather than skips, and the tests
# pick the first GPU (runtime::opencl::OpenCl::new). The test binaries look
# for their data under the path they were built at (CARGO_MANIFEST_DIR); a
# link from that path to this checkout is made when they differ.
#
# Output: one log per test file and the benchmark's table under $OUT
# (or /tmp/heddle-gpu-check); the exit status is 1 if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bundle() {
  local dir="$1"
  mkdir -p "$dir/tests" "$dir/lib"
  # units.list: one line per test file, NAME BINARY [FILTER]. The files of
  # tests/it/ are modules of the one binary `it` (FILTER `NAME::` runs one);
  # a file directly in tests/ is a binary of its own.
  local tests=() f n
  : > "$dir/units.list"
  for f in tests/it/*.rs tests/*.rs; do
    [ -e "$f" ] || continue
    n="$(basename "$f" .rs)"
    [ "$f" = tests/it/main.rs ] && continue
    # HEDDLE_GPU_TESTS=a,b bundles only those files (a release build of all
    # of them takes long on a small machine).
    if [ -n "${HEDDLE_GPU_TESTS:-}" ]; then
      echo ",$HEDDLE_GPU_TESTS," | grep -q ",$n," || continue
    else
      grep -q -E 'opencl|backends\(\)' "$f" || continue
    fi
    if [ "$(dirname "$f")" = tests/it ]; then
      echo "$n it $n::" >> "$dir/units.list"
      [[ " ${tests[*]} " == *" it "* ]] || tests+=(--test it)
    else
      echo "$n $n" >> "$dir/units.list"
      tests+=(--test "$n")
    fi
  done
  cargo build --release -p heddle >&2 || return 1
  cargo test --release -p heddle --no-run "${tests[@]}" --message-format=json 2>/dev/null \
    | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["target"]["name"], m["executable"])' > "$dir/tests.list" || return 1
  while read -r name exe; do
    strip -o "$dir/tests/$name" "$exe"
  done < "$dir/tests.list"
  strip -o "$dir/heddle" target/release/heddle
  # HEDDLE_GPU_BASELINE=BIN: another build's CLI, whose kernels the
  # benchmark times beside this one's (gpu_spmv.py --baseline).
  local extra=()
  if [ -n "${HEDDLE_GPU_BASELINE:-}" ]; then
    strip -o "$dir/heddle-baseline" "$HEDDLE_GPU_BASELINE" && extra+=(heddle-baseline)
  fi
  # Compressed, the bundle fits the 64 MiB a device call carries.
  (cd "$dir" && tar -cf - tests heddle "${extra[@]}" | xz -T0 -6 > bundle.tar.xz && rm -rf tests heddle "${extra[@]}")
  cp -L "$(ldconfig -p | awk '/libOpenCL.so.1 /{print $NF; exit}')" "$dir/lib/libOpenCL.so.1"
  pwd > "$dir/built_at"
  du -sh "$dir" >&2
}

run() {
  local dir="$1" out="${OUT:-/tmp/heddle-gpu-check}" failed=0
  mkdir -p "$out"
  [ -f "$dir/bundle.tar.xz" ] && (cd "$dir" && xz -dc bundle.tar.xz | tar -xf - && rm bundle.tar.xz)
  # The CLI tests run the binary cargo built them with: target/release/heddle.
  [ -x target/release/heddle ] || { mkdir -p target/release && cp "$dir/heddle" target/release/heddle; }
  nvidia-smi -L 2>&1 | tee "$out/device.txt" || true
  if ! ldconfig -p | grep -q 'libOpenCL.so.1 '; then
    export LD_LIBRARY_PATH="$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "== using the bundled OpenCL ICD loader" >&2
  fi
  # The NVIDIA driver, registered even where /etc/OpenCL/vendors lists
  # other platforms (the H200 machine listed only POCL's CPU device, which
  # a first run tested in the GPU's place); the tests take the first GPU.
  local lib
  lib="$(ldconfig -p | awk '/libnvidia-opencl.so.1 /{print $NF; exit}')"
  [ -n "$lib" ] || lib="$(find /usr/local/nvidia /usr/lib /usr/lib64 /lib -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)"
  if [ -n "$lib" ]; then
    mkdir -p /tmp/heddle-icd && echo "$lib" > /tmp/heddle-icd/nvidia.icd
    export OCL_ICD_VENDORS=/tmp/heddle-icd
    echo "== the OpenCL driver: $lib" >&2
  elif [ "${HEDDLE_GPU_ANY_DEVICE:-0}" != 1 ]; then
    echo "error: no libnvidia-opencl.so.1 (HEDDLE_GPU_ANY_DEVICE=1 runs on whatever /etc/OpenCL/vendors offers)" >&2
    return 1
  fi
  python3 - <<'PY' 2>&1 | tee -a "$out/device.txt"
import ctypes
cl = ctypes.CDLL("libOpenCL.so.1")
n = ctypes.c_uint()
cl.clGetPlatformIDs(0, None, ctypes.byref(n))
ids = (ctypes.c_void_p * n.value)()
cl.clGetPlatformIDs(n, ids, None)
for p in ids:
    buf = ctypes.create_string_buffer(256)
    cl.clGetPlatformInfo(ctypes.c_void_p(p), 0x0902, 256, buf, None)  # CL_PLATFORM_NAME
    m = ctypes.c_uint()
    cl.clGetDeviceIDs(ctypes.c_void_p(p), 0xFFFFFFFF, 0, None, ctypes.byref(m))
    devs = (ctypes.c_void_p * m.value)()
    cl.clGetDeviceIDs(ctypes.c_void_p(p), 0xFFFFFFFF, m, devs, None)
    for d in devs:
        name = ctypes.create_string_buffer(256)
        cl.clGetDeviceInfo(ctypes.c_void_p(d), 0x102B, 256, name, None)  # CL_DEVICE_NAME
        ver = ctypes.create_string_buffer(256)
        cl.clGetDeviceInfo(ctypes.c_void_p(d), 0x102F, 256, ver, None)  # CL_DEVICE_VERSION
        print(f"OpenCL: {buf.value.decode()}: {name.value.decode()} ({ver.value.decode()})")
PY
  local built_at
  built_at="$(cat "$dir/built_at")"
  if [ "$built_at" != "$PWD" ] && [ ! -e "$built_at" ]; then
    mkdir -p "$(dirname "$built_at")" && ln -s "$PWD" "$built_at"
  fi
  export CI=true INSTA_UPDATE=no
  # The benchmark first (figures only a GPU gives), then the tests, most
  # telling first; none starts after HEDDLE_GPU_DEADLINE seconds.
  if [ "${HEDDLE_GPU_BENCH:-1}" != 0 ]; then
    local baseline=()
    [ -x "$dir/heddle-baseline" ] && baseline=(--baseline "$dir/heddle-baseline")
    timeout "${HEDDLE_GPU_BENCH_TIMEOUT:-240}" python3 benches/gpu_spmv.py --heddle "$dir/heddle" --out /tmp/heddle-gpu-spmv \
      "${baseline[@]}" ${HEDDLE_GPU_BENCH_ARGS:-} > "$out/gpu_spmv.log" 2>&1 || { echo "FAIL gpu_spmv.py (exit $?)"; failed=1; }
    grep -v '^#' "$out/gpu_spmv.log" | tail -40
    cp /tmp/heddle-gpu-spmv/gpu_spmv.tsv "$out/" 2>/dev/null || true
  fi
  local order="compile_coverage opencl listing7 sparse_kernels sparse_results half_floats sparse_ops random_programs"
  local names bin filter
  names="$( (for t in $order; do grep -q "^$t " "$dir/units.list" && echo "$t"; done; cut -d' ' -f1 "$dir/units.list") | awk '!seen[$0]++')"
  [ -n "${HEDDLE_GPU_TESTS:-}" ] && names="$(echo "$HEDDLE_GPU_TESTS" | tr ',' '\n')"
  for name in $names; do
    read -r _ bin filter < <(grep "^$name " "$dir/units.list") || { echo "FAIL $name (not in the bundle)"; failed=1; continue; }
    if [ "$SECONDS" -ge "${HEDDLE_GPU_DEADLINE:-100000}" ]; then
      echo "NOT RUN $name (the deadline of ${HEDDLE_GPU_DEADLINE} s passed)"; failed=1; continue
    fi
    local start=$SECONDS
    if (cd "$built_at" && timeout "${HEDDLE_GPU_TEST_TIMEOUT:-300}" "$OLDPWD/$dir/tests/$bin" ${filter:+"$filter"}) > "$out/test-$name.log" 2>&1; then
      echo "PASS $name ($((SECONDS - start)) s): $(grep -E '^test result' "$out/test-$name.log" | head -1)"
    else
      echo "FAIL $name ($((SECONDS - start)) s): $(grep -E '^test result|panicked|FAILED|^---- ' "$out/test-$name.log" | head -6 | tr '\n' ' ')"
      failed=1
    fi
  done
  return $failed
}

case "${1:-}" in
  --bundle) bundle "${2:?--bundle DIR}" ;;
  --run) run "${2:?--run DIR}" ;;
  *) echo "usage: scripts/gpu-check.sh --bundle DIR | --run DIR" >&2; exit 2 ;;
esac

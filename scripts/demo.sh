#!/usr/bin/env bash
# Sets heddle up on a fresh machine and runs the main example end to end:
# CSR SpMV (the paper's Listing 5) checked, formatted and executed.
set -euo pipefail
cd "$(dirname "$0")/.."
# The OpenCL backend links libOpenCL and its tests run on POCL.
source scripts/opencl-deps.sh
opencl_deps

cargo build --release --quiet
heddle=target/release/heddle
data=examples/data/csr

echo "== type of the kernel"
$heddle check examples/csr_packed_spmv.hdl
echo "== y = A x on the reference interpreter (A is 3x3 with 3 nonzeros, one empty row)"
$heddle run examples/csr_packed_spmv.hdl \
  --input offset=$data/offset.json --input values=$data/values_packed.json --input xs=$data/xs.json
echo "== the same kernel compiled to OpenCL C, and run on the OpenCL device (POCL on a CPU)"
$heddle compile examples/csr_packed_spmv.hdl --target opencl
$heddle run examples/csr_packed_spmv.hdl --backend opencl \
  --input offset=$data/offset.json --input values=$data/values_packed.json --input xs=$data/xs.json
echo "== the same kernel JIT-compiled with Cranelift, on every core"
$heddle run examples/csr_packed_spmv.hdl --backend cpu \
  --input offset=$data/offset.json --input values=$data/values_packed.json --input xs=$data/xs.json
echo "== SpMV over an MLIR-encoded CSR tensor read from Matrix Market (4x8, an empty row)"
$heddle run examples/sparse/spmv_csr.hdl --backend cpu \
  --matrix A=tests/data/sparse/m4x8.mtx --input xs=examples/data/sparse/x8.json

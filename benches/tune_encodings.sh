#!/usr/bin/env bash
# `heddle tune --matrix` over encodings on the CPU: one f32 SpMV stored as
# CSR (64-, 32- and 16-bit indices), DIA, ELL (16 slices) and BSR 1x8, per
# matrix (BSR 1x8 needs a column count divisible by 8).
# Not a timed test: it prints tune's report (docs/performance.md, "Per-matrix
# tuning over encodings"). The matrices are .npz files (scipy's CSR); results
# are checked against the first configuration (`--verify first`: the
# interpreter is too slow for millions of entries). Each encoding also runs with
# ACCUMULATORS partial sums (default 1,4) and at most CHUNKS chunks per thread
# (default 8): `heddle run --accumulators`, `--chunks-per-thread`.
#
#   bash benches/tune_encodings.sh [HEDDLE] M1.npz M2.npz …
set -euo pipefail
heddle=${HEDDLE:-target/release/heddle}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
csr() {  # name, widths
  cat > "$dir/$1.hdl" <<EOF
#C = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed)$2 }>
fun(A: tensor<?x?xf32, #C> => fun(xs: [float]_A_dim1 =>
  A :>> map(fun(row => row :>> map(fun(e => e.2 * xs@e.1)) :>> reduce(+, 0)))))
EOF
}
csr csr64 ""
csr csr32 ", posWidth = 32, crdWidth = 32"
csr csr16 ", posWidth = 32, crdWidth = 16"
sed -e 's/xf64/xf32/' -e 's/\[double\]/[float]/' examples/sparse/spmv_dia.hdl > "$dir/dia.hdl"
sed -e 's/c \* 3 \* i : dense, i : dense, j : compressed)/c * 16 * i : dense, i : dense, j : compressed), posWidth = 32, crdWidth = 32/' \
  examples/sparse/spmv_ell.hdl > "$dir/ell16.hdl"
sed -e 's/xf64/xf32/' -e 's/\[double\]/[float]/' examples/sparse/spmv_bsr_1x8.hdl > "$dir/bsr1x8.hdl"
matrices=()
for m in "$@"; do matrices+=(--matrix "A=$m"); done
"$heddle" tune "$dir"/csr64.hdl "$dir"/csr32.hdl "$dir"/csr16.hdl "$dir"/dia.hdl "$dir"/ell16.hdl "$dir"/bsr1x8.hdl \
  "${matrices[@]}" --backend cpu --threads 1,2 \
  --accumulators "${ACCUMULATORS:-1,4}" --chunks-per-thread "${CHUNKS:-8}" --reps "${REPS:-30}" --verify first

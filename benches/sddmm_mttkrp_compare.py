#!/usr/bin/env python3
"""The numpy / scipy side of benches/sddmm_mttkrp.rs: the same kernels on the
same files (scripts/sddmm_mttkrp_data.py), vectorised with numpy and scipy.
Inputs are read and laid out once (not timed); each kernel is timed alone,
median of REPS runs after one warm-up run. Every variant's result is written
to OUTDIR/<variant>.npy (float32) for the bench to check against its
reference. Prints one JSON object: versions and seconds per variant.

    python3 benches/sddmm_mttkrp_compare.py sddmm  DIR REPS OUTDIR
    python3 benches/sddmm_mttkrp_compare.py mttkrp DIR REPS OUTDIR

numpy's einsum and scipy's sparse-times-dense products run on one thread
(no BLAS call is involved).
"""
import json
import os
import sys
import time

import numpy as np
import scipy
import scipy.io
import scipy.sparse as sp


def median(f, reps):
    out = f()  # warm-up, and the result that is checked
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    times.sort()
    return out, times[len(times) // 2]


def sddmm(d, reps):
    s = scipy.io.mmread(os.path.join(d, "S.mtx")).tocsr()
    s.sort_indices()
    vals = s.data.astype(np.float32)
    cols = s.indices.astype(np.int64)
    rows = np.repeat(np.arange(s.shape[0], dtype=np.int64), np.diff(s.indptr))
    u = np.load(os.path.join(d, "U.npy"))
    v = np.load(os.path.join(d, "V.npy"))

    def whole():
        # Gather both operands' rows for every nonzero, then one batched dot.
        return vals * np.einsum("ij,ij->i", u[rows], v[cols])

    chunk = 8192

    def chunked():
        # The same in blocks of nonzeros, so the gathered rows stay in cache.
        out = np.empty_like(vals)
        for a in range(0, len(vals), chunk):
            b = min(a + chunk, len(vals))
            out[a:b] = vals[a:b] * np.einsum("ij,ij->i", u[rows[a:b]], v[cols[a:b]])
        return out

    return {"numpy einsum": median(whole, reps), f"numpy einsum, chunks of {chunk}": median(chunked, reps)}


def read_tns(path):
    with open(path, "rb") as f:
        text = b"".join(line for line in f if not line.startswith(b"#"))
    a = np.fromstring(text, sep=" ").reshape(-1, 4)
    return a[:, 0].astype(np.int64) - 1, a[:, 1].astype(np.int64) - 1, a[:, 2].astype(np.int64) - 1, a[:, 3].astype(np.float32)


def mttkrp(d, reps):
    i, k, l, v = read_tns(os.path.join(d, "B.tns"))
    c = np.load(os.path.join(d, "C.npy"))
    dd = np.load(os.path.join(d, "D.npy"))
    ni, nk, nl = int(i.max()) + 1, c.shape[0], dd.shape[0]
    assert k.max() < nk and l.max() < nl

    # CSF as two sparse-times-dense products: the fibres (i, k) as rows of a
    # fibres x L matrix F, and a 0/1 matrix P (I x fibres) summing fibres into
    # their slice. A = P @ ((F @ D) * C[k of each fibre]).
    order = np.lexsort((l, k, i))
    i, k, l, v = i[order], k[order], l[order], v[order]
    fibre_start = np.ones(len(v), dtype=bool)
    fibre_start[1:] = (i[1:] != i[:-1]) | (k[1:] != k[:-1])
    fibre = np.cumsum(fibre_start) - 1
    nf = int(fibre[-1]) + 1
    f_mat = sp.csr_matrix((v, (fibre, l)), shape=(nf, nl), dtype=np.float32)
    fi, fk = i[fibre_start], k[fibre_start]
    p_mat = sp.csr_matrix((np.ones(nf, dtype=np.float32), (fi, np.arange(nf))), shape=(ni, nf))

    def csf():
        y = f_mat @ dd
        y *= c[fk]
        return p_mat @ y

    # The matricised form: A = B_(1) @ (C ⊙ D), B_(1) the I x (K*L) unfolding
    # and C ⊙ D the Khatri-Rao product (row k*L + l is C[k] * D[l]), formed
    # in every run.
    b1 = sp.csr_matrix((v, (i, k * nl + l)), shape=(ni, nk * nl), dtype=np.float32)

    def unfolded():
        kr = (c[:, None, :] * dd[None, :, :]).reshape(nk * nl, -1)
        return b1 @ kr

    return {"scipy CSF (two SpMMs)": median(csf, reps), "scipy unfolding @ Khatri-Rao": median(unfolded, reps)}


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("sddmm", "mttkrp"):
        sys.exit(__doc__)
    kernel, d, reps, outdir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    os.makedirs(outdir, exist_ok=True)
    results = (sddmm if kernel == "sddmm" else mttkrp)(d, max(reps, 1))
    report = {"numpy": np.__version__, "scipy": scipy.__version__, "variants": []}
    for n, (name, (out, seconds)) in enumerate(results.items()):
        path = os.path.join(outdir, f"{kernel}_{n}.npy")
        np.save(path, np.ascontiguousarray(np.asarray(out, dtype=np.float32)))
        report["variants"].append({"name": name, "seconds": seconds, "result": path})
    print(json.dumps(report))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Synthetic row-block matrices for BSR(8, 1)'s fill threshold
(docs/performance.md, "bsr81"): n x n (n a multiple of 8), each block row
of 8 rows holding K random columns, each of its 8 rows holding an entry in
such a column with probability p (at least one does), so 8x1 blocks are
about p full. Writes OUT/fillP.npz (scipy CSR, f64 values) with
fillP_x.npy and fillP_x32.npy, for benches/bsr_lanes_ab.py --matrix.

    python3 benches/row_blocks_fill.py --out /tmp/bsr81/fill --fills 0.9,0.8,0.7,0.6,0.5,0.4,0.3,0.2
"""
import argparse, os
import numpy as np, scipy.sparse as sp

ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
ap.add_argument('--out', required=True)
ap.add_argument('--n', type=int, default=8000)
ap.add_argument('--k', type=int, default=200)
ap.add_argument('--fills', default='0.9,0.8,0.7,0.6,0.5,0.4,0.3,0.2')
ap.add_argument('--seed', type=int, default=81)
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
rng = np.random.default_rng(a.seed)
n, k = a.n - a.n % 8, a.k
for p in map(float, a.fills.split(',')):
    rows, cols = [], []
    for br in range(n // 8):
        cs = rng.choice(n, k, replace=False)
        m = rng.random((8, k)) < p
        m[0, ~m.any(axis=0)] = True
        r, c = np.nonzero(m)
        rows.append(br * 8 + r)
        cols.append(cs[c])
    r, c = np.concatenate(rows), np.concatenate(cols)
    A = sp.csr_matrix((rng.standard_normal(len(r)), (r, c)), shape=(n, n))
    A.sum_duplicates()
    A.sort_indices()
    name = os.path.join(a.out, f'fill{round(p * 100)}')
    sp.save_npz(name + '.npz', A)
    x = rng.standard_normal(n)
    np.save(name + '_x.npy', x)
    np.save(name + '_x32.npy', x.astype(np.float32))
    print(f'{name}.npz: {A.nnz} entries')

#!/usr/bin/env python3
"""Two heddle builds' front-door BSR(1, 8) and SELL-8c16 SpMVs, and the
hand-written BSR 1x8 kernel, timed against each other on rowband_5k,
interleaved (docs/performance.md, "bsr64").

    python3 benches/rowband_ab.py --old OLD_HEDDLE [--new target/release/heddle]
        --prec f64 --threads 1,2 --rounds 3 --reps 200

Each configuration is one `heddle run … --reps N --json`; a round runs every
configuration once, every other round in the reverse order. Per configuration
the table gives the median over the rounds of each run's 10th-percentile
kernel time (the VM's slow stretches only ever slow a launch, and a run's
median can land in one), the best of them and the fastest launch.
`new hp0` is the new build with HEDDLE_HUGEPAGES=0 (buffers on small pages).
Inputs: /tmp/npz/rowband_5k.npz and its x (see /work/helpers/common.md).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BSR = ("#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 1 : dense, j floordiv 8 : compressed, "
       "i mod 1 : dense, j mod 8 : dense), posWidth = 32, crdWidth = 16 }>")
SELL = "SELL(8, crdWidth = 16)"

ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
ap.add_argument('--old', required=True)
ap.add_argument('--new', default=os.path.join(ROOT, 'target/release/heddle'))
ap.add_argument('--prec', choices=['f32', 'f64'], default='f64')
ap.add_argument('--threads', default='1,2')
ap.add_argument('--rounds', type=int, default=3)
ap.add_argument('--reps', default='200')
ap.add_argument('--matrix', default='/tmp/npz/rowband_5k.npz')
ap.add_argument('--only', help='comma-separated configuration names')
a = ap.parse_args()

tmp = tempfile.mkdtemp(prefix='rowband_ab_')
scalar, elem = ('double', 'xf64') if a.prec == 'f64' else ('float', 'xf32')
dense = os.path.join(tmp, 'dense_mv.hdl')
with open(os.path.join(ROOT, 'examples/dense_mv.hdl')) as f:
    open(dense, 'w').write(f.read().replace('[float]', f'[{scalar}]'))
hand = os.path.join(tmp, 'bsr1x8.hdl')
with open(os.path.join(ROOT, 'examples/sparse/spmv_bsr_1x8.hdl')) as f:
    open(hand, 'w').write(f.read().replace('xf64', elem).replace('[double]', f'[{scalar}]'))
x = a.matrix[:-4] + ('_x.npy' if a.prec == 'f64' else '_x32.npy')

configs = []
for side, binary in [('old', a.old), ('new', a.new)]:
    configs += [(f'{side} bsr', binary, dense, 'matrix', BSR, '1'),
                (f'{side} sell16', binary, dense, 'matrix', SELL, '1'),
                (f'{side} hand bsr1x8', binary, hand, 'A', None, '1')]
configs.append(('new bsr hp0', a.new, dense, 'matrix', BSR, '0'))
if a.only:
    keep = a.only.split(',')
    configs = [c for c in configs if c[0] in keep]
threads = a.threads.split(',')
res = {(c[0], t): [] for c in configs for t in threads}
for r in range(a.rounds):
    order = [(c, t) for c in configs for t in threads]
    if r % 2:
        order.reverse()
    for (name, binary, k, param, enc, hp), t in order:
        cmd = [binary, 'run', k, '--backend', 'cpu', '--matrix', f'{param}={a.matrix}', '--input', f'xs={x}',
               '--threads', t, '--reps', a.reps, '--json', '-o', os.path.join(tmp, 'y.npy')]
        if enc:
            cmd += ['--encoding', f'{param}={enc}']
        out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, HEDDLE_HUGEPAGES=hp))
        if out.returncode:
            sys.exit(f'{name}: {out.stderr[-800:]}')
        ks = json.loads(out.stdout)['kernel_seconds']
        res[(name, t)].append((ks['p10'], ks['min']))
print('load average after:', ' '.join(open('/proc/loadavg').read().split()[:3]))
print('| configuration | threads | p10, median over runs (ms) | best p10 | fastest launch |')
print('|---|---|---|---|---|')
for t in threads:
    for c in configs:
        v = res[(c[0], t)]
        print(f'| {a.prec} {c[0]} | {t} | {statistics.median(p for p, _ in v) * 1e3:.3f} '
              f'| {min(p for p, _ in v) * 1e3:.3f} | {min(m for _, m in v) * 1e3:.3f} |')

#!/usr/bin/env python3
"""Two heddle builds' front-door BSR(8, 1) (32-bit positions, 16-bit
coordinates), SELL-8c16 and `auto` SpMVs, timed against each other,
interleaved (docs/performance.md, "bsr81").

    python3 benches/bsr_lanes_ab.py --old OLD_HEDDLE [--new target/release/heddle]
        --prec f64 --threads 1,2 --rounds 5 --reps 200 [--matrix /tmp/npz/rowband_5k.npz]
        [--only 'new bsr8x1,new auto']

Each configuration is one `heddle run … --reps N --json`; a round runs every
configuration once, every other round in the reverse order. Per configuration
the table gives the median over the rounds of each run's 10th-percentile
kernel time (the VM's slow stretches only ever slow a launch), the best of
them, the median over the rounds of each run's median, and the fastest
launch; for `auto`, the format it chose. Inputs: /tmp/npz/NAME.npz and its x
(see /work/helpers/common.md).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BSR81 = ("#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 8 : dense, j floordiv 1 : compressed, "
         "i mod 8 : dense, j mod 1 : dense), posWidth = 32, crdWidth = 16 }>")
BSR41 = BSR81.replace('floordiv 8', 'floordiv 4').replace('mod 8', 'mod 4')
SELL = "SELL(8, crdWidth = 16)"

ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
ap.add_argument('--old', required=True)
ap.add_argument('--new', default=os.path.join(ROOT, 'target/release/heddle'))
ap.add_argument('--prec', choices=['f32', 'f64'], default='f64')
ap.add_argument('--threads', default='1,2')
ap.add_argument('--rounds', type=int, default=5)
ap.add_argument('--reps', default='200')
ap.add_argument('--matrix', default='/tmp/npz/rowband_5k.npz')
ap.add_argument('--only', help='comma-separated configuration names')
a = ap.parse_args()

tmp = tempfile.mkdtemp(prefix='bsr_lanes_ab_')
scalar = 'double' if a.prec == 'f64' else 'float'
dense = os.path.join(tmp, 'dense_mv.hdl')
with open(os.path.join(ROOT, 'examples/dense_mv.hdl')) as f:
    open(dense, 'w').write(f.read().replace('[float]', f'[{scalar}]'))
x = a.matrix[:-4] + ('_x.npy' if a.prec == 'f64' else '_x32.npy')

configs = []
for side, binary in [('old', a.old), ('new', a.new)]:
    configs += [(f'{side} bsr8x1', binary, BSR81), (f'{side} auto', binary, 'auto')]
configs += [('new bsr4x1', a.new, BSR41), ('new sell16', a.new, SELL)]
if a.only:
    keep = a.only.split(',')
    configs = [c for c in configs if c[0] in keep]
threads = a.threads.split(',')
res = {(c[0], t): [] for c in configs for t in threads}
chose = {}
for r in range(a.rounds):
    order = [(c, t) for c in configs for t in threads]
    if r % 2:
        order.reverse()
    for (name, binary, enc), t in order:
        cmd = [binary, 'run', dense, '--backend', 'cpu', '--matrix', f'matrix={a.matrix}', '--input', f'xs={x}',
               '--threads', t, '--reps', a.reps, '--json', '-o', os.path.join(tmp, 'y.npy'),
               '--encoding', f'matrix={enc}']
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            sys.exit(f'{name}: {out.stderr[-800:]}')
        ks = json.loads(out.stdout)['kernel_seconds']
        res[(name, t)].append((ks['p10'], ks['median'], ks['min']))
        if enc == 'auto':
            line = [l for l in out.stderr.splitlines() if l.startswith('auto:')]
            chose[name] = line[0].split(' for ')[0][6:] if line else '?'
print('matrix:', os.path.basename(a.matrix), '| load average after:', ' '.join(open('/proc/loadavg').read().split()[:3]))
print('| configuration | threads | p10, median over runs (ms) | best p10 | median of medians | fastest launch |')
print('|---|---|---|---|---|---|')
for t in threads:
    for c in configs:
        v = res[(c[0], t)]
        name = c[0] + (f' ({chose[c[0]]})' if c[0] in chose else '')
        print(f'| {a.prec} {name} | {t} | {statistics.median(p for p, _, _ in v) * 1e3:.3f} '
              f'| {min(p for p, _, _ in v) * 1e3:.3f} | {statistics.median(m for _, m, _ in v) * 1e3:.3f} '
              f'| {min(m for _, _, m in v) * 1e3:.3f} |')

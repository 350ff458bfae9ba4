#!/usr/bin/env python3
# usage: stats.py DIR: medians (min-max) of base-N.txt and new-N.txt and the exact Mann-Whitney p (two-sided)
import glob, itertools, re, statistics, sys
d = sys.argv[1]
def parse(f):
    out = {}
    for line in open(f):
        m = re.match(r'BenchmarkCreateCPUShareHTTP2/(\S+)-2\s+\d+\s+(.*)', line)
        if not m: continue
        name, rest = m.groups()
        for val, unit in re.findall(r'([\d.]+) (\S+)', rest):
            out[f'{name} {unit}'] = float(val)
    return out
runs = {b: [parse(f) for f in sorted(glob.glob(f'{d}/{b}-*.txt'))] for b in ('base', 'new')}
def mw_p(a, b):
    # exact two-sided Mann-Whitney by enumerating all splits
    allv = a + b; n = len(a)
    def u(x, y): return sum((xi > yi) + 0.5 * (xi == yi) for xi in x for yi in y)
    obs = u(a, b); mean = len(a) * len(b) / 2
    cnt = tot = 0
    for idx in itertools.combinations(range(len(allv)), n):
        x = [allv[i] for i in idx]; y = [allv[i] for i in range(len(allv)) if i not in idx]
        tot += 1
        if abs(u(x, y) - mean) >= abs(obs - mean) - 1e-9: cnt += 1
    return cnt / tot
keys = [k for k in runs['base'][0] if not k.endswith('ns/op') and 'creates/s' not in k and not k.startswith('share B') and not k.startswith('share allocs')]
print(f"{'':36s}{'base median (min-max)':>28s}{'new median (min-max)':>28s}  p (n={len(runs['base'])}+{len(runs['new'])})")
for k in keys:
    a = [r[k] for r in runs['base'] if k in r]; b = [r[k] for r in runs['new'] if k in r]
    p = 2 if max(a + b) < 10 else 1
    f = lambda v: f"{statistics.median(v):.{p}f} ({min(v):.{p}f}-{max(v):.{p}f})"
    print(f"{k:36s}{f(a):>28s}{f(b):>28s}  p={mw_p(a, b):.3f}")

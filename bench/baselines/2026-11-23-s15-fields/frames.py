#!/usr/bin/env python3
"""frames.py traces.txt PODS REGEX...: CPU (ms per pod) of the samples whose stack has a frame matching each regex."""
import re, sys
path, pods = sys.argv[1], int(sys.argv[2])
pats = [re.compile(p) for p in sys.argv[3:]]
tot = [0.0]*len(pats); alls = 0.0
def unit(v):
    m = re.match(r'([\d.]+)(ms|s|us|ns)', v)
    n, u = float(m.group(1)), m.group(2)
    return n * {'s':1000,'ms':1,'us':1e-3,'ns':1e-6}[u]
for block in open(path).read().split('-----------+-------------------------------------------------------')[1:]:
    lines = [l for l in block.strip('\n').split('\n') if l.strip()]
    if not lines: continue
    first = lines[0].split()
    if not first or not re.match(r'[\d.]+(ms|s|us|ns)$', first[0]): continue
    v = unit(first[0]); alls += v
    frames = [first[1]] + [l.strip() for l in lines[1:]]
    for i, p in enumerate(pats):
        if any(p.search(f) for f in frames): tot[i] += v
print(f"all: {alls/pods:.3f} ms/pod")
for p, t in zip(sys.argv[3:], tot): print(f"{p}: {t/pods:.3f} ms/pod ({100*t/alls:.2f}%)")

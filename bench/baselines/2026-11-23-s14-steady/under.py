#!/usr/bin/env python3
"""What a function's CPU goes to: its samples' leaf frames and its direct
callees, over CPU profiles' traces.

  python3 under.py 'sim.(*Runtime).PodState' cpu.pprof.0??.traces"""
import collections, os, sys

here = os.path.dirname(os.path.abspath(__file__))
exec(open(os.path.join(here, '..', '2026-11-22-s10-cpu', 'classify.py')).read().replace('\nmain()\n', '\n'))

fn = sys.argv[1]
leaf, callee = collections.Counter(), collections.Counter()
for f in sys.argv[2:]:
    for v, st in parse(f):
        frames = [x.split(' ')[0] for x in st]
        at = [i for i, x in enumerate(frames) if x.endswith(fn)]
        if not at:
            continue
        i = at[-1]
        leaf[frames[0]] += v
        callee[frames[i - 1] if i > 0 else '(self)'] += v
print('-- leaf')
for k, v in leaf.most_common(15):
    print(f'{v:6.2f} {k}')
print('-- direct callees')
for k, v in callee.most_common(15):
    print(f'{v:6.2f} {k}')

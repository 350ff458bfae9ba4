#!/usr/bin/env python3
"""CPU by component in each window of a `bench startup --cpu-profile-every`
run, in millicores (CPU ms per second of the window's wall time, read from
its profile's Duration), and the growth from an early window set to a
late one.

  for f in cpu.pprof.0??; do go tool pprof -traces BINARY $f > $f.traces; done
  python3 windows.py EARLY LATE cpu.pprof.0??.traces

EARLY and LATE are comma-separated window numbers (0 is the first 30 s)
averaged into the two columns compared; the table lists every window too.
Components are session 10's classify.py (loaded from there, not copied)."""
import collections, os, re, sys

here = os.path.dirname(os.path.abspath(__file__))
src = open(os.path.join(here, '..', '2026-11-22-s10-cpu', 'classify.py')).read()
exec(src.replace('\nmain()\n', '\n'))  # parse, classify

def duration(path):
    """The profile's wall time in seconds (its "Duration:" header)."""
    for line in open(path):
        m = re.match(r'Duration: ([\d.]+)(ms|s|m)?', line)
        if m:
            return float(m.group(1)) * {'ms': 1e-3, 's': 1, 'm': 60, None: 1}[m.group(2)]
        if line.startswith('-----------+'):
            break
    raise SystemExit(f'{path}: no Duration header')

def main():
    early = [int(x) for x in sys.argv[1].split(',')]
    late = [int(x) for x in sys.argv[2].split(',')]
    files = sys.argv[3:]
    widths = [duration(f) for f in files]
    by = []  # per window: component -> CPU s
    for f in files:
        c = collections.Counter()
        for v, st in parse(f):
            c[classify(st)] += v
        by.append(c)
    comps = set()
    for c in by:
        comps |= set(c)
    def mc(i, k):
        return 1000 * by[i][k] / widths[i]
    def avg(ws, k):
        return sum(mc(i, k) for i in ws) / len(ws)
    rows = sorted(comps, key=lambda k: -(avg(late, k) - avg(early, k)))
    head = ' | '.join(f'w{i}' for i in range(len(by)))
    print(f'| component | early ({sys.argv[1]}) | late ({sys.argv[2]}) | growth | {head} |')
    print('|---|---:|---:|---:|' + '---:|' * len(by))
    for k in rows:
        cells = ' | '.join(f'{mc(i, k):.0f}' for i in range(len(by)))
        print(f'| {k} | {avg(early, k):.0f} | {avg(late, k):.0f} | {avg(late, k) - avg(early, k):+.0f} | {cells} |')
    tot = lambda i: 1000 * sum(by[i].values()) / widths[i]
    cells = ' | '.join(f'{tot(i):.0f}' for i in range(len(by)))
    te, tl = sum(tot(i) for i in early) / len(early), sum(tot(i) for i in late) / len(late)
    print(f'| total | {te:.0f} | {tl:.0f} | {tl - te:+.0f} | {cells} |')

main()

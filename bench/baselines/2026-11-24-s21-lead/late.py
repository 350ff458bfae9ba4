"""late.py DIR...: for each startup-1000x30000 run without the control, sorted by p99: the
collector's worst cycle 200-330 s into the process (the end of the pods phase) by what the
mutators allocated while it marked against the runway the pacer left them (goal minus the heap
when it started; above 1 the heap passed its goal mid-mark and every allocating goroutine had to
help mark), and the longest mark of those cycles."""
import re, sys

CYCLE = re.compile(r'gc \d+ @([0-9.]+)s .*?\+([0-9.]+)\+[0-9.]+ ms clock, [0-9.]+\+([0-9.]+)/([0-9.]+)/([0-9.]+)\+.*?(\d+)->(\d+)->(\d+) MB, (\d+) MB goal')
P99 = re.compile(r'\| 1000 \| 30000 \| 100/s \| \d+ \| [0-9.]+ ms \| ([0-9.]+) ms')

rows = []
for d in sys.argv[1:]:
    text = open(d + '/gctrace.txt', errors='replace').read().replace('\r', '\n')
    cycles = [[float(v) for v in m.groups()] for m in CYCLE.finditer(text)]
    late = [c for c in cycles if 200 <= c[0] <= 330]
    worst = max(late, key=lambda c: (c[6] - c[5]) / (c[8] - c[5]))
    p99 = float(P99.search(open(d + '/results.md').read()).group(1))
    rows.append((p99, d.rstrip('/').split('/')[-1], (worst[6] - worst[5]) / (worst[8] - worst[5]), worst[1], max(c[1] for c in late)))
for p99, name, ratio, mark, longest in sorted(rows):
    print('%-10s p99 %6.1f ms  worst late cycle: allocated while marking / runway %.2f (mark %4.0f ms)  longest late mark %4.0f ms' % (name, p99, ratio, mark, longest))

"""runs.py DIR...: one line per startup-1000x30000 run directory (results.md, gctrace.txt):
create->Running p99 and max, the process's cores over the whole run, the collector's
allocation rate A and mark CPU per MB of live heap m over the pods phase (process time
80-310 s; runs without the control only: with it, the pods phase pauses at half for a
memory reading with forced collections), assists, and the cycles whose heap passed its goal
while marking (process time, mark wall ms, MB allocated during the mark against the runway
the pacer left: goal minus the heap when the cycle started)."""
import re, sys

CYCLE = re.compile(r'gc \d+ @([0-9.]+)s .*?\+([0-9.]+)\+[0-9.]+ ms clock, [0-9.]+\+([0-9.]+)/([0-9.]+)/([0-9.]+)\+.*?(\d+)->(\d+)->(\d+) MB, (\d+) MB goal')

def cycles(d):
    text = open(d + '/gctrace.txt', errors='replace').read().replace('\r', '\n')
    return [[float(x) for x in m.groups()] for m in CYCLE.finditer(text)]

def summary(d):
    out = open(d + '/results.md').read()
    row = re.search(r'\| 1000 \| 30000 \| 100/s \| (\d+) \| ([0-9.]+) ms \| ([0-9.]+) ms \| ([0-9.]+) ms', out)
    whole = re.search(r'\| whole run \|[^|]*\|[^|]*\|[^|]*\|[^|]*\| ([0-9.]+) \|', out)
    closed = re.search(r'Watches the watch cache closed[^:]*: ([^\n]*)', out)
    cs = cycles(d)
    sel = [i for i in range(1, len(cs)) if 80 <= cs[i][0] < 310]
    alloc = sum(cs[i][6] - cs[i-1][7] for i in sel)
    span = cs[sel[-1]][0] - cs[sel[0]-1][0]
    mark = sum(cs[i][2] + cs[i][3] + cs[i][4] for i in sel)
    marked = sum(cs[i][7] for i in sel)
    assist = sum(cs[i][2] for i in sel)
    over = ['@%.0fs %.0fms %.0f/%.0fMB' % (c[0], c[1], c[6]-c[5], c[8]-c[5]) for c in cs if c[6] > c[8] and c[0] >= 25]
    control = 'Memory beyond the API server' in out
    rates = 'A and m: n/a (control run)' if control else 'A %5.1f MB/s  m %.2f ms/MB' % (alloc/span, mark/marked)
    return '%-8s p99 %6s ms max %6s ms  cores %s  %s  assist %5.0f ms  closed watches %s  over goal: %s' % (
        d.rstrip('/').split('/')[-1], row.group(3), row.group(4), whole.group(1) if whole else '?', rates, assist,
        closed.group(1) if closed else 'none', ', '.join(over) or 'none')

for d in sys.argv[1:]:
    print(summary(d))

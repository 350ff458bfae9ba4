#!/usr/bin/env python3
# Summary of GODEBUG=gctrace=1 lines (a benchmark's stderr):
#   gcsum.py STDERR [FROM_SECONDS]
# per cycle from FROM_SECONDS on (default 0): the mark phase's wall clock,
# its CPU (assist + background + idle, ms), the live heap after it (MB),
# and the means over the cycles that were not forced (the benchmark's
# readings force some), with mark CPU per MB of live heap.
import re, sys
pat = re.compile(r"gc (\d+) @([\d.]+)s \d+%: ([\d.]+)\+([\d.]+)\+([\d.]+) ms clock, "
                 r"([\d.]+)\+([\d.]+)/([\d.]+)/([\d.]+)\+([\d.]+) ms cpu, (\d+)->(\d+)->(\d+) MB, (\d+) MB goal, (\d+) MB stacks.*?(\(forced\))?$")
frm = float(sys.argv[2]) if len(sys.argv) > 2 else 0
rows = []
for line in open(sys.argv[1], errors="replace").read().replace("\r", "\n").replace("\x1b[K", "\n").split("\n"):
    m = pat.search(line)
    if not m:
        continue
    g = m.groups()
    t = float(g[1])
    if t < frm:
        continue
    rows.append(dict(n=int(g[0]), t=t, wall=float(g[3]), assist=float(g[6]), bg=float(g[7]), idle=float(g[8]),
                     live=int(g[12]), stacks=int(g[14]), forced=bool(g[15])))
print("| gc | at s | mark wall ms | assist ms cpu | background | idle | live MB | stacks MB | forced |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for r in rows:
    print("| %d | %.1f | %.0f | %.0f | %.0f | %.0f | %d | %d | %s |" % (r["n"], r["t"], r["wall"], r["assist"], r["bg"], r["idle"], r["live"], r["stacks"], "forced" if r["forced"] else ""))
nf = [r for r in rows if not r["forced"]]
if nf:
    n = len(nf)
    mean = lambda k: sum(r[k] for r in nf) / n
    cpu = sum(r["assist"] + r["bg"] + r["idle"] for r in nf) / n
    print()
    print("not forced: %d cycles, mark wall %.0f ms, mark CPU %.0f ms (assist %.0f, background %.0f, idle %.0f), live %.0f MB, %.2f ms CPU per MB live"
          % (n, mean("wall"), cpu, mean("assist"), mean("bg"), mean("idle"), mean("live"), cpu / max(mean("live"), 1)))

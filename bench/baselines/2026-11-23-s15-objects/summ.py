#!/usr/bin/env python3
# summ.py RUNDIR... : one table row per run of `bench startup` (300 x 9,000):
# heap objects and live heap at nodes Ready / pods Running, per node and
# per pod, p50/p99, load and steal from load.txt.
import json, re, sys, os
print("| run | binary | start (UTC) | load start → end | steal before / after (cores) | others' cores (whole run) | create→Running p50 / p99 | live heap nodes / pods MiB | live heap per pod B | heap objects nodes / pods | per node | per pod |")
print("|---|---|---|---|---|---:|---|---|---:|---|---:|---:|")
for d in sys.argv[1:]:
    r = json.load(open(os.path.join(d, "results.json")))["startup"][0]
    lt = open(os.path.join(d, "load.txt")).read()
    start = re.search(r"start (\S+)", lt).group(1)
    l0 = re.search(r"start .*load average: ([0-9.]+)", lt).group(1)
    l1 = re.search(r"end .*load average: ([0-9.]+)", lt).group(1)
    st = re.findall(r"= *([0-9.]+) cores", lt)
    md = open(os.path.join(d, "results.md")).read()
    w = re.search(r"\| whole run \| \d+ \| ([0-9.]+) ms \| ([0-9.]+) ms \| [0-9.]+ ms \| [0-9.]+ \| ([0-9.]+) \|", md)
    hn, hp = r["HeapAfterNodes"], r["HeapAfterPods"]
    on, op = r["HeapObjectsAfterNodes"], r["HeapObjectsAfterPods"]
    nodes, pods = 300, 9000
    name = os.path.basename(d.rstrip("/"))
    print(f"| {name} | {name.rstrip('0123456789')} | {start} | {l0} → {l1} | {st[0] if st else '?'} / {st[1] if len(st)>1 else '?'} | {w.group(3)} | {float(w.group(1))/1000:.2f} / {float(w.group(2))/1000:.2f} s | {hn/2**20:.1f} / {hp/2**20:.1f} | {(hp-hn)/pods:.0f} | {on:,} / {op:,} | {on/nodes:.0f} | {(op-on)/pods:.1f} |")

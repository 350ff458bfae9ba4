#!/usr/bin/env python3
# holders.py RUNDIR... : objects per pod (and B per pod) of the holders this
# work changes, from each run's breakdown.md (the heap profile at pods Running).
import sys, os, re
want = ["kubelets (workers, status, object cache, pod records)", "kubelets: sim runtime", "events (client-go record)", "**total (profile)**"]
print("| run | kubelets | sim runtime | events (client-go record) | kubelets + sim + events | profile total |")
print("|---|---:|---:|---:|---:|---:|")
for d in sys.argv[1:]:
    rows = {}
    for line in open(os.path.join(d, "breakdown.md")):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if c and c[0] in want:
            rows[c[0]] = (float(c[6]), float(c[5]))
    k, s, e, t = (rows.get(w, (0, 0)) for w in want)
    f = lambda v: f"{v[0]:.1f} ({v[1]:.0f} B)"
    print(f"| {os.path.basename(d.rstrip('/'))} | {f(k)} | {f(s)} | {f(e)} | {k[0]+s[0]+e[0]:.1f} | {f(t)} |")

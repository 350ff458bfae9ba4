#!/usr/bin/env python3
# Live heap beyond the API server per pod, by holder, from one run's heap
# profiles: beyond.py BINARY DIR PODS
# per holder ((full pods Running - full nodes Ready) - (control pods - control
# nodes)) / PODS, as the benchmark's per-pod figure, with the holders of
# ../2026-11-22-s10-heap/breakdown.py (sampled profiles: estimates).
import os, sys
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-22-s10-heap", "breakdown.py")).read().split("\nbinary, prof = sys.argv")[0]
ns = {}
exec(compile(src, "breakdown.py", "exec"), ns)
binary, d, pods = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = lambda f: os.path.join(d, f)
fn, fp = ns["agg"](binary, p("heap.pprof.nodes"), "inuse_space"), ns["agg"](binary, p("heap.pprof"), "inuse_space")
cn, cp = ns["agg"](binary, p("heap.pprof.control.nodes"), "inuse_space"), ns["agg"](binary, p("heap.pprof.control"), "inuse_space")
on, op = ns["agg"](binary, p("heap.pprof.nodes"), "inuse_objects"), ns["agg"](binary, p("heap.pprof"), "inuse_objects")
ocn, ocp = ns["agg"](binary, p("heap.pprof.control.nodes"), "inuse_objects"), ns["agg"](binary, p("heap.pprof.control"), "inuse_objects")
keys = set(fn) | set(fp) | set(cn) | set(cp)
full = {k: (fp[k] - fn[k]) / pods for k in keys}
ctl = {k: (cp[k] - cn[k]) / pods for k in keys}
bey = {k: full[k] - ctl[k] for k in keys}
obey = {k: ((op[k] - on[k]) - (ocp[k] - ocn[k])) / pods for k in keys}
print("| holder | full B/pod | control B/pod | beyond B/pod | beyond objects/pod |")
print("|---|---:|---:|---:|---:|")
rest = [0.0] * 4
for k in sorted(keys, key=lambda k: -abs(bey[k])):
    if abs(bey[k]) < 40 and abs(full[k]) < 40:
        rest = [rest[0] + full[k], rest[1] + ctl[k], rest[2] + bey[k], rest[3] + obey[k]]
        continue
    print("| %s | %.0f | %.0f | %.0f | %.1f |" % (k, full[k], ctl[k], bey[k], obey[k]))
print("| (each under 40 B) | %.0f | %.0f | %.0f | %.1f |" % tuple(rest))
print("| **total (profile)** | %.0f | %.0f | %.0f | %.1f |" % (sum(full.values()), sum(ctl.values()), sum(bey.values()), sum(obey.values())))

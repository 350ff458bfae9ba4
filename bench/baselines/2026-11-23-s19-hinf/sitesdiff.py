#!/usr/bin/env python3
# Growth nodes Ready -> pods Running of one holder's allocation sites:
#   sitesdiff.py BINARY DIR "HOLDER" PODS [FRAMES]   (B / pod, sampled)
import os, sys, collections
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-22-s10-heap", "breakdown.py")).read().split("\nbinary, prof = sys.argv")[0]
ns = {}
exec(compile(src, "breakdown.py", "exec"), ns)
binary, d, owner, pods = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
depth = int(sys.argv[5]) if len(sys.argv) > 5 else 3
def key(st):
    return " <- ".join(f.split(" ")[0].replace("github.com/kubeproof/kubeproof/", "") for f in st[:depth])
def sites(prof, idx):
    c = collections.Counter()
    for v, st in ns["traces"](binary, os.path.join(d, prof), idx):
        if ns["classify"](st) == owner: c[key(st)] += v
    return c
sp, sn = sites("heap.pprof", "inuse_space"), sites("heap.pprof.nodes", "inuse_space")
op, on = sites("heap.pprof", "inuse_objects"), sites("heap.pprof.nodes", "inuse_objects")
g = {k: (sp[k] - sn[k]) / pods for k in set(sp) | set(sn)}
print("B/pod  obj/pod  site")
for k in sorted(g, key=lambda k: -abs(g[k]))[:30]:
    print("%6.0f %6.2f  %s" % (g[k], (op[k] - on[k]) / pods, k))
print("total %.0f B/pod" % sum(g.values()))

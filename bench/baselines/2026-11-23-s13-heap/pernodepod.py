#!/usr/bin/env python3
# Holders per node and per pod from two heap profiles of one run:
#   pernodepod.py BINARY NODES_PROFILE PODS_PROFILE NODES PODS
# (bench startup --heap-profile P writes P.nodes once every node is Ready
# and P once every pod is Running.) Per node: the holder at nodes Ready
# over NODES (the control plane's start included); per pod: its growth
# from nodes Ready to pods Running over PODS. Same labels as breakdown.py.
import os
import sys, importlib.util
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-22-s10-heap", "breakdown.py")).read().split("\nbinary, prof = sys.argv")[0]
ns = {}
exec(compile(src, "breakdown.py", "exec"), ns)
binary, pn, pp, nodes, pods = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sn, on = ns["agg"](binary, pn, "inuse_space"), ns["agg"](binary, pn, "inuse_objects")
sp, op = ns["agg"](binary, pp, "inuse_space"), ns["agg"](binary, pp, "inuse_objects")
tp = sum(op.values())
print("| holder | nodes Ready MB | objects (k) | pods Running MB | objects (k) | B / node | objects / node | B / pod | objects / pod |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
rest = [0.0] * 4
for k in sorted(set(sp) | set(sn), key=lambda k: -op[k]):
    if op[k] < 0.01 * tp and on[k] < 0.01 * tp:
        rest = [rest[0] + sn[k], rest[1] + on[k], rest[2] + sp[k], rest[3] + op[k]]
        continue
    print("| %s | %.1f | %.0f | %.1f | %.0f | %.0f | %.1f | %.0f | %.1f |" % (k, sn[k] / 1e6, on[k] / 1e3, sp[k] / 1e6, op[k] / 1e3,
          sn[k] / nodes, on[k] / nodes, (sp[k] - sn[k]) / pods, (op[k] - on[k]) / pods))
print("| (each under 1%% of objects) | %.1f | %.0f | %.1f | %.0f | %.0f | %.1f | %.0f | %.1f |" % (rest[0] / 1e6, rest[1] / 1e3, rest[2] / 1e6, rest[3] / 1e3,
      rest[0] / nodes, rest[1] / nodes, (rest[2] - rest[0]) / pods, (rest[3] - rest[1]) / pods))
a, b, c, d = sum(sn.values()), sum(on.values()), sum(sp.values()), tp
print("| **total (profile)** | %.1f | %.0f | %.1f | %.0f | %.0f | %.1f | %.0f | %.1f |" % (a / 1e6, b / 1e3, c / 1e6, d / 1e3, a / nodes, b / nodes, (c - a) / pods, (d - b) / pods))

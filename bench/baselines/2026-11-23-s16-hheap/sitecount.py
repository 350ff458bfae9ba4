#!/usr/bin/env python3
# sitecount.py BINARY PROFILE PODS : heap objects per pod (the profile's
# estimate, 32 KiB sampling) at the allocation sites this session's cuts
# change, and the profile's total per pod. Uses session 10's breakdown.py
# for the profile's samples.
import os, re, sys
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-22-s10-heap", "breakdown.py")).read().split("\nbinary, prof = sys.argv")[0]
ns = {}
exec(compile(src, "breakdown.py", "exec"), ns)
binary, prof, pods = sys.argv[1], sys.argv[2], int(sys.argv[3])
SITES = [  # (label, leaf-frame pattern, a pattern some frame of the stack must match)
    ("watch cache: key, wrapper, field list", r"cacher\.\(\*Cacher\)\.keyOf|cacher\.newFieldList|cacher\.newCachedObject|cacher\.\(\*Cacher\)\.newCached$", r"newCached"),
    ("eventsink: observation strings", r"eventsink\.observed", r""),
    ("eventsink: spam token buckets (rate.NewLimiter)", r"rate\.NewLimiter", r"eventsink"),
    ("sim: per-pod index slices", r"sim\.podObjects\.add", r""),
    ("kubelet: status write answers (ObjectMeta strings)", r"ObjectMeta\)\.Unmarshal", r"status\.\(\*Manager\)\.Write"),
]
per = {lab: 0.0 for lab, _, _ in SITES}
total = 0.0
for v, st in ns["traces"](binary, prof, "inuse_objects"):
    total += v
    leaf = st[0].split(" ")[0]
    joined = "\n".join(st)
    for lab, leafrx, stackrx in SITES:
        if re.search(leafrx, leaf) and re.search(stackrx, joined):
            per[lab] += v
            break
for lab, _, _ in SITES:
    print("%s\t%.2f" % (lab, per[lab] / pods))
print("profile total\t%.1f" % (total / pods))

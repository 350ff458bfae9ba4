#!/usr/bin/env python3
# Allocation sites of one owner of breakdown.py's table:
#   sites.py BINARY PROFILE "OWNER LABEL" [FRAMES]
# prints, by retained heap objects, the first FRAMES (default 3) frames of
# the samples breakdown.py gives that owner, with their MB.
import os
import sys, collections, importlib.util
spec = importlib.util.spec_from_file_location("bd", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-22-s10-heap", "breakdown.py"))
src = open(spec.origin).read().split("\nbinary, prof = sys.argv")[0]
ns = {}
exec(compile(src, spec.origin, "exec"), ns)
binary, prof, owner = sys.argv[1], sys.argv[2], sys.argv[3]
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 3
def key(st):
    return " <- ".join(f.split(" ")[0].replace("github.com/kubeproof/kubeproof/", "") for f in st[:depth])
objs, space = collections.Counter(), collections.Counter()
for v, st in ns["traces"](binary, prof, "inuse_objects"):
    if ns["classify"](st) == owner: objs[key(st)] += v
for v, st in ns["traces"](binary, prof, "inuse_space"):
    if ns["classify"](st) == owner: space[key(st)] += v
print("objects(k)  MB   site")
for k, v in objs.most_common(40):
    print("%8.1f %6.1f  %s" % (v / 1e3, space[k] / 1e6, k))
print("total %.0fk objects, %.1f MB" % (sum(objs.values()) / 1e3, sum(space.values()) / 1e6))

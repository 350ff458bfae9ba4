#!/usr/bin/env python3
# Live heap by owning component, bytes and objects, of one heap profile:
#   breakdown.py BINARY PROFILE [PODS]
# (`kubeproof bench --heap-profile P startup...` writes P once every pod is
# Running.) Each sample is labelled by classify(): decoded API objects by who
# decoded them, else the first frame (leaf to root) matching RULES. Derived
# from session 8's attribute.py (bench/baselines/2026-11-22-s8-up-1000x30000/
# attribution/), which diffs two profiles instead.
import sys, re, subprocess, collections

def traces(binary, prof, index):
    out = subprocess.run(["go", "tool", "pprof", "-sample_index=" + index, "-traces", binary, prof],
                         capture_output=True, text=True).stdout
    samples, cur = [], None
    for line in out.splitlines():
        if line.startswith("-----------+"):
            if cur and cur[1]:
                samples.append(cur)
            cur = [0, []]
            continue
        if cur is None:
            continue
        if re.match(r"\s+bytes:", line):
            continue
        m = re.match(r"\s+([\d.]+)([kMG]?B?)\s+(\S.*)$", line)
        if m and not cur[1]:
            mult = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
            cur[0] = float(m.group(1)) * mult
            cur[1].append(m.group(3).strip())
            continue
        if line.strip():
            cur[1].append(line.strip())
    if cur and cur[1]:
        samples.append(cur)
    return samples

RULES = [
    ("etcd server (mvcc index, raft log, backend buffers)", r"go\.etcd\.io/(etcd/server|raft|bbolt)"),
    ("etcd client", r"go\.etcd\.io/etcd/client"),
    ("apiserver watch cache (entries, fields, ring)", r"impl/storage/cacher"),
    ("apiserver watch cache: objects decoded by etcd3", r"impl/storage/etcd3"),
    ("apiserver node authorizer graph", r"impl/apiserver/auth/node"),
    ("apiserver storage (other)", r"impl/storage/"),
    ("apiserver field manager", r"impl/apiserver/fieldmanager"),
    ("apiserver (other)", r"impl/apiserver|impl/registry"),
    ("kubelets: sim runtime", r"impl/kubelet/runtime/sim"),
    ("kubelets (workers, status, object cache, pod records)", r"impl/kubelet"),
    ("scheduler", r"impl/scheduler"),
    ("controller manager", r"impl/controllermanager|impl/controller/"),
    ("cluster (sim node set-up)", r"impl/cluster"),
    ("bench bookkeeping", r"kubeproof/bench\."),
    ("informer stores and indexes (client-go)", r"client-go/tools/cache"),
    ("events (client-go record)", r"client-go/tools/record"),
    ("http2/tls/net", r"net/http|golang.org/x/net/http2|crypto/tls|bufio"),
    ("grpc", r"google.golang.org/grpc"),
]
SERVER = re.compile(r"net/http\.\(\*http2serverConn\)|net/http\.\(\*conn\)\.serve|http2Server|http2ConfigureServer")

def classify(stack):
    joined = "\n".join(stack)
    # Objects etcd3 decoded (protoenvelope) are held by whoever asked: the
    # API server's internal caches (localcache: the Node authorizer's pods,
    # RBAC, namespaces) or the watch cache (its watch, or a write's decode
    # handed to it by sharedDecodes).
    if "internal/localcache" in joined and re.search(r"impl/storage/(etcd3|protoenvelope)", joined):
        # what it listed: the decoded objects and the list's item array
        return "apiserver internal caches (Node authorizer pods, RBAC, namespaces): objects decoded by etcd3"
    if re.search(r"impl/storage/(etcd3|protoenvelope)", joined) and "Unmarshal" in joined or "impl/storage/etcd3.(*sharedDecodes).publish" in joined:
        return "apiserver watch cache: objects decoded by etcd3"
    if "client-go/rest/watch" in joined or "k8s.io/client-go/rest.(*Request)" in joined or "client-go/rest.Result" in joined:
        kinds = re.findall(r"k8s\.io/api/[\w]+/v1\.\(\*(\w+)\)\.Unmarshal", joined)
        if not re.search(r"impl/(kubelet|scheduler|controllermanager|controller/)", joined):
            return "informers: decoded " + (kinds[-1] if kinds else "(object shells, Scheme.New)")
    for fr in stack:
        for lab, rx in RULES:
            if re.search(rx, fr):
                if lab == "http2/tls/net":
                    return "http2/tls/net server side" if SERVER.search(joined) else "http2/tls/net client side"
                return lab
    return "other: " + (stack[-3] if len(stack) >= 3 else stack[-1])

def agg(binary, prof, index):
    d = collections.Counter()
    for v, st in traces(binary, prof, index):
        d[classify(st)] += v
    return d

binary, prof = sys.argv[1], sys.argv[2]
pods = int(sys.argv[3]) if len(sys.argv) > 3 else 0
space, objs = agg(binary, prof, "inuse_space"), agg(binary, prof, "inuse_objects")
ts, to = sum(space.values()), sum(objs.values())
rows = sorted(set(space) | set(objs), key=lambda k: -space[k])
print("| component | MB | % | objects (k) | % |" + (" B / pod | objects / pod |" if pods else ""))
print("|---|---:|---:|---:|---:|" + ("---:|---:|" if pods else ""))
other_b = other_o = 0
for k in rows:
    if space[k] < 0.01 * ts and objs[k] < 0.01 * to:
        other_b += space[k]; other_o += objs[k]
        continue
    extra = " %.0f | %.1f |" % (space[k] / pods, objs[k] / pods) if pods else ""
    print("| %s | %.1f | %.1f | %.0f | %.1f |%s" % (k, space[k] / 1e6, 100 * space[k] / ts, objs[k] / 1e3, 100 * objs[k] / to, extra))
extra = " %.0f | %.1f |" % (other_b / pods, other_o / pods) if pods else ""
print("| (each under 1%%) | %.1f | %.1f | %.0f | %.1f |%s" % (other_b / 1e6, 100 * other_b / ts, other_o / 1e3, 100 * other_o / to, extra))
extra = " %.0f | %.1f |" % (ts / pods, to / pods) if pods else ""
print("| **total (profile)** | %.1f | 100 | %.0f | 100 |%s" % (ts / 1e6, to / 1e3, extra))

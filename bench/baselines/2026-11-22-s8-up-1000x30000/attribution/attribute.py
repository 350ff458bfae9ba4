#!/usr/bin/env python3
# Attribution of heap growth by owning component: `kubeproof bench --heap-profile P startup...` writes
# P.nodes, P, P.control.nodes, P.control; run: attribute.py BINARY P.nodes P P.control.nodes P.control PODS
# Each inuse_space sample is labelled by the first frame (leaf to root) matching RULES.
import sys, re, subprocess, collections
def traces(binary, prof):
    out = subprocess.run(["go","tool","pprof","-sample_index=inuse_space","-traces",binary,prof],capture_output=True,text=True).stdout
    samples=[]; cur=None
    for line in out.splitlines():
        if line.startswith("-----------+"):
            if cur and cur[1]: samples.append(cur)
            cur=[0,[]]; continue
        if cur is None: continue
        m=re.match(r"\s+bytes:",line)
        if m: continue
        m=re.match(r"\s+([\d.]+)([kMG]?B)\s+(\S.*)$",line)
        if m and not cur[1]:
            v=float(m.group(1))*{"B":1,"kB":1e3,"MB":1e6,"GB":1e9}[m.group(2)]
            cur[0]=v; cur[1].append(m.group(3).strip()); continue
        m=re.match(r"\s+0\s+(\S.*)$",line)
        if m and not cur[1]:
            cur[1].append(m.group(1).strip()); continue
        if line.strip(): cur[1].append(line.strip())
    if cur and cur[1]: samples.append(cur)
    return samples
# rules: (label, regex) checked from leaf to root; first match wins
RULES=[
 ("etcd", r"go\.etcd\.io/etcd/server"),
 ("etcd-client", r"go\.etcd\.io/etcd/client"),
 ("apiserver/watchcache", r"impl/storage/cacher"),
 ("apiserver/node-authorizer-graph", r"impl/apiserver/auth/node"),
 ("apiserver/storage", r"impl/storage/"),
 ("apiserver/fieldmanager", r"impl/apiserver/fieldmanager"),
 ("apiserver", r"impl/apiserver|impl/registry"),
 ("kubelet", r"impl/kubelet"),
 ("scheduler", r"impl/scheduler"),
 ("controllermanager", r"impl/controllermanager|impl/controller/"),
 ("cluster(sim nodes)", r"impl/cluster"),
 ("bench", r"kubeproof/bench\."),
 ("client-go informer", r"client-go/tools/cache"),
 ("client-go events", r"client-go/tools/record"),
 ("http2/net", r"net/http|golang.org/x/net/http2|crypto/tls|bufio"),
 ("grpc", r"google.golang.org/grpc"),
]
SERVER=re.compile(r"net/http\.\(\*http2serverConn\)|net/http\.\(\*conn\)\.serve|http2Server|http2ConfigureServer")
def classify(stack):
    joined="\n".join(stack)
    if "client-go/rest/watch" in joined or "k8s.io/client-go/rest.(*Request)" in joined:
        kinds=re.findall(r"k8s\.io/api/[\w]+/v1\.\(\*(\w+)\)\.Unmarshal",joined)
        if not kinds: kinds=["(object shells, Scheme.New)"]
        if not re.search(r"impl/(kubelet|scheduler|controllermanager|controller/)",joined):
            return "client decode: "+kinds[-1]
    for fr in stack:
        for lab,rx in RULES:
            if re.search(rx,fr):
                if lab=="http2/net": return "net server-side" if SERVER.search(joined) else "net client-side"
                return lab
    return "other:"+ (stack[-3] if len(stack)>=3 else stack[-1])
def agg(binary,prof):
    d=collections.Counter()
    for v,st in traces(binary,prof):
        d[classify(st)]+=v
    return d
b,fn,fp,cn,cp,pods=sys.argv[1:7]; pods=int(pods)
A=[agg(b,p) for p in (fn,fp,cn,cp)]
keys=set().union(*A)
rows=[]
for k in keys:
    df=A[1][k]-A[0][k]; dc=A[3][k]-A[2][k]
    rows.append((k,df,dc,df-dc))
rows.sort(key=lambda r:-abs(r[3]))
print("| component (heap profile, inuse_space) | full Δ MB | control Δ MB | beyond MB | beyond per pod |")
print("|---|---:|---:|---:|---:|")
for k,df,dc,d in rows:
    if abs(d)<0.15e6 and abs(df)<0.5e6: continue
    print("| %s | %.1f | %.1f | %.1f | %.0f B |"%(k,df/1e6,dc/1e6,d/1e6,d/pods))
t=[sum(a.values()) for a in A]
print("| total | %.1f | %.1f | %.1f | %.0f B |"%((t[1]-t[0])/1e6,(t[3]-t[2])/1e6,((t[1]-t[0])-(t[3]-t[2]))/1e6,((t[1]-t[0])-(t[3]-t[2]))/pods))

import sys, re, collections
# usage: stages.py TRACES N  (TRACES: go tool pprof -traces BIN cpu.pprof; N: creates in the profile)
# Session 9's stages.py with golang.org/x/net/http2's client and server frames (session 13 moved the
# API server to it; client-go uses it too) added to the client and server connection groups, and an APF
# handler stage (its samples went to the next filter up, impersonation, before).
path, n = sys.argv[1], int(sys.argv[2])
text = open(path).read()
blocks = text.split('-----------+-------------------------------------------------------')[1:]
def ms(s):
    s=s.strip()
    m=re.match(r'([\d.]+)(ms|s|us|µs)',s)
    v=float(m.group(1)); u=m.group(2)
    return v*{'ms':1e-3,'s':1,'us':1e-6,'µs':1e-6}[u]
root=collections.Counter(); stage=collections.Counter()
total=0
for b in blocks:
    lines=[l for l in b.strip('\n').split('\n') if l.strip()]
    if not lines: continue
    first=lines[0]
    parts=first.split()
    t=ms(parts[0]); frames=[parts[1]]+[l.strip() for l in lines[1:]]
    frames=[f.replace(' (inline)','') for f in frames]
    st='\n'.join(frames)
    if any(k in st for k in ('clustertest.Start','cluster.Start','openapi.NewHandler','yaml','bbolt.Open','embed.StartEtcd')) and 'runHandler' not in st:
        root['setup']+=t; continue
    total+=t
    bottom=frames[-1]
    def has(*ks): return any(k in st for k in ks)
    if has('runHandler'):
        r='server handler'
        # subdivide: innermost matching frame wins
        pats=[('kvs2kvc','etcd call (in-process)'),('client/v3.','etcd call (in-process)'),
              ('fieldmanager.','field manager'),('Store).decode','decode stored object'),('protoenvelope.Decoder','decode stored object'),
              ('Store).encode','encode for storage'),('Validate','validation'),('validation.','validation'),
              ('admission.','admission'),('Handler).decode','read+decode body'),('readBodyInto','read+decode body'),('readAll','read+decode body'),
              ('endpoints.write','response write'),('writeRaw','response write'),('http2responseWriter','response write'),('handlerDone','response write (handlerDone)'),
              ('rbac.','authz (RBAC)'),('authorizer','authz'),('node.','authz (Node)'),('Authoriz','authz'),
              ('authn','authn'),('Authenticat','authn'),('x509','authn'),
              ('flowcontrol.','APF'),('WithPriorityAndFairness','APF'),('audit.','audit'),('metrics.','metrics'),('prometheus','metrics'),
              ('context.With','timeout ctx'),('timerCtx','timeout ctx'),('WithRequestTimeout','timeout ctx'),
              ('reserveStack','stack reserve'),('trackCreate','trackCreate'),('WithRequestInfo','requestinfo'),('requestinfo','requestinfo'),
              ('CreateObject','CreateObject other'),('Handler).create','create other'),('route','route'),('WithMaxInFlight','max-in-flight'),('WithImpersonation','impersonation'),('WithPanicRecovery','panic recovery'),('runHandler','runHandler'),]
        s='other'
        for f in frames:
            hit=None
            for p,name in pats:
                if p in f: hit=name; break
            if hit: s=hit; break
        s='handler: '+s
        stage[s]+=t
    elif has('gcBgMarkWorker'): r='GC mark workers'
    elif has('bench.','http2ClientConn','http2clientStream','http2clientConnReadLoop','http2Transport','http2.(*ClientConn)','http2.(*clientStream)','http2.(*clientConnReadLoop)','http2.(*Transport)','client-go','net/http.(*Transport)','persistConn'): r='client'
    elif has('cacher.','etcd3.(*watchStream)','etcd3.(*Store)'): r='watch cache / watch stream'
    elif has('http2serverConn','net/http.(*conn).serve','http2Server','http2.(*serverConn)','http2.(*Server)'): r='server: HTTP/2 conn loops (frames, TLS)'
    elif has('go.etcd.io','grpc','raft'): r='etcd + gRPC'
    else: r='runtime other'
    root[r]+=t
print(f"total {total:.2f}s for {n} creates = {total/n*1e6:.1f} µs/create (setup {root.pop('setup',0):.2f}s excluded)")
for k,v in root.most_common(): print(f"{v/total*100:5.1f}% {v/n*1e6:6.1f} µs  {k}")
print('--- handler stages')
for k,v in stage.most_common(): print(f"{v/total*100:5.1f}% {v/n*1e6:6.1f} µs  {k}")

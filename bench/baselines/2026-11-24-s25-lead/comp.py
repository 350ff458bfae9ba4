import re,sys,collections
# comp.py DIFFTRACES: diff -traces grouped by component
txt=open(sys.argv[1]).read()
blocks=txt.split('-----------+-------------------------------------------------------')
def val(s):
    m=re.match(r'(-?[\d.]+)([kMG]?B)?$',s)
    return float(m.group(1))*{'B':1,'kB':1e3,'MB':1e6,'GB':1e9,None:1}[m.group(2)]
rules=[('bench harness',r'kubeproof/bench\.'),('client watch decode',r'StreamWatcher\)\.receive'),('kubelet/eventsink',r'kubelet/eventsink'),('sim runtime',r'kubelet/runtime/sim'),('kubelet',r'impl/kubelet'),('scheduler',r'impl/scheduler'),('controllers',r'impl/controller'),('cluster (sim nodes informer)',r'impl/cluster\.'),('client-go other',r'client-go'),('apiserver',r'impl/apiserver|impl/storage|impl/registry'),('etcd',r'go.etcd.io'),]
agg=collections.Counter(); sub=collections.defaultdict(collections.Counter)
for b in blocks:
    lines=[l for l in b.strip().splitlines() if l.strip() and 'bytes:' not in l and 'pprof::' not in l]
    if not lines: continue
    p=lines[0].split(None,1)
    try: v=val(p[0])
    except: continue
    frames=[p[1].strip()]+[l.strip() for l in lines[1:]]
    s='\n'.join(frames)
    c=next((n for n,r in rules if re.search(r,s)),'other')
    agg[c]+=v
    leaf=frames[0].split('/')[-1][:60]
    sub[c][leaf]+=v
pods=float(sys.argv[2]) if len(sys.argv)>2 else 9000
print("total beyond %.1f MB = %.2f KiB/pod"%(sum(agg.values())/1e6, sum(agg.values())/pods/1024))
for c,v in sorted(agg.items(),key=lambda x:-x[1]):
    print("%-32s %7.1f MB %5.2f KiB/pod   top: %s"%(c,v/1e6,v/pods/1024, '; '.join("%s %.1f"%(k,x/1e6) for k,x in sub[c].most_common(3))))

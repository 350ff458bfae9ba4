import re,collections,sys
# tr.py TRACES [pattern]: aggregate diff -traces by (leaf, first kubeproof/client-go frame)
txt=open(sys.argv[1]).read()
pat=sys.argv[2] if len(sys.argv)>2 else None
blocks=txt.split('-----------+-------------------------------------------------------')
agg=collections.Counter()
def val(s):
    m=re.match(r'(-?[\d.]+)([kMG]?B)?$',s)
    return float(m.group(1))*{'B':1,'kB':1e3,'MB':1e6,'GB':1e9,None:1}[m.group(2)]
for b in blocks:
    lines=[l for l in b.strip().splitlines() if l.strip() and 'bytes:' not in l and 'pprof::' not in l]
    if not lines: continue
    p=lines[0].split(None,1)
    if len(p)<2: continue
    try: v=val(p[0])
    except: continue
    frames=[p[1].strip()]+[l.strip() for l in lines[1:]]
    if pat and not any(re.search(pat,f) for f in frames): continue
    ours=[f for f in frames if 'kubeproof/impl' in f or 'kubeproof/bench' in f]
    key=ours[0] if ours else frames[-1]
    agg[(frames[0][:50],key[:110])]+=v
tot=sum(agg.values())
print("total %.0f kB"%(tot/1e3))
for (a,k),v in agg.most_common(int(sys.argv[3]) if len(sys.argv)>3 else 40): print("%8.0f kB  %-50s %s"%(v/1e3,a,k))

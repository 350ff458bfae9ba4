import re,sys,collections
def load(fn,pat,depth):
    txt=open(fn).read()
    blocks=txt.split('-----------+-------------------------------------------------------')
    def val(s):
        m=re.match(r'(-?[\d.]+)([kMG]?B)?$',s)
        return float(m.group(1))*{'B':1,'kB':1e3,'MB':1e6,'GB':1e9,None:1}[m.group(2)]
    c=collections.Counter()
    for b in blocks:
        lines=[l for l in b.strip().splitlines() if l.strip() and 'bytes:' not in l and 'pprof::' not in l]
        if not lines: continue
        p=lines[0].split(None,1)
        try: v=val(p[0])
        except: continue
        frames=[p[1].strip()]+[l.strip() for l in lines[1:]]
        idx=[i for i,f in enumerate(frames) if re.search(pat,f)]
        if not idx: continue
        key=' < '.join(f.split('/')[-1][:60] for f in frames[idx[0]:idx[0]+depth])
        c[key]+=v
    return c
pat=sys.argv[3]; depth=int(sys.argv[4]) if len(sys.argv)>4 else 1
a=load(sys.argv[1],pat,depth); b=load(sys.argv[2],pat,depth)
keys=set(a)|set(b)
rows=sorted(keys,key=lambda k:-abs(b[k]-a[k]))
print("total %.1f -> %.1f MB"%(sum(a.values())/1e6,sum(b.values())/1e6))
for k in rows[:25]: print("%8.1f %8.1f %+7.1f MB  %s"%(a[k]/1e6,b[k]/1e6,(b[k]-a[k])/1e6,k))

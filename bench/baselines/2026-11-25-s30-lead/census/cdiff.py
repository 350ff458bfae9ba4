import sys,re
def load(p):
    d={}
    lines=open(p).read().split('\n')
    hdr=lines[0]
    for l in lines[1:]:
        m=re.match(r'\s*(\d+)\s+(\d+) (.*?)  \[(.*?)\](.*)$',l)
        if not m: continue
        d[m.group(3)]=(int(m.group(1)),int(m.group(2)),m.group(4))
    return hdr,d
ha,a=load(sys.argv[1]); hb,b=load(sys.argv[2])
print('A:',ha); print('B:',hb)
keys=sorted(set(a)|set(b), key=lambda k:-abs(b.get(k,(0,0,''))[0]-a.get(k,(0,0,''))[0]))
for k in keys[:int(sys.argv[3]) if len(sys.argv)>3 else 15]:
    x=a.get(k,(0,0,'')); y=b.get(k,(0,0,''))
    print(f"{(y[0]-x[0])/1024:9.0f}K  A {x[1]:5d} [{x[2]}]  B {y[1]:5d} [{y[2]}]  {k[:150]}")

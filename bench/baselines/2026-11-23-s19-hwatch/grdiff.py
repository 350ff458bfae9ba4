import sys,re
def load(p):
    groups={}
    cur=None
    for line in open(p):
        m=re.match(r'^(\d+) @',line)
        if m:
            cur=[int(m.group(1)),[]]; continue
        if line.startswith('#\t') and cur is not None:
            fn=line.split('\t')[2].strip()
            if not fn.startswith(('runtime.','internal/','sync.runtime','sync.(*Cond)','sync.(*WaitGroup)','sync.(*Mutex)')):
                cur[1].append(fn)
        elif line.strip()=='' and cur is not None:
            key=' <- '.join(cur[1][:3])
            groups[key]=groups.get(key,0)+cur[0]; cur=None
    if cur: 
        key=' <- '.join(cur[1][:3]); groups[key]=groups.get(key,0)+cur[0]
    return groups
a,b=load(sys.argv[1]),load(sys.argv[2])
for k in sorted(set(a)|set(b), key=lambda k: -(b.get(k,0)-a.get(k,0))):
    d=b.get(k,0)-a.get(k,0)
    if abs(d)>=10: print(a.get(k,0),b.get(k,0),k[:230])

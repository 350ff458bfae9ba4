import os,sys
d='/tmp/bis/runs'
steps=["created (201) → scheduler queued","binding sent → binding accepted","binding accepted → kubelet handed over","kubelet sync start → volumes ready","Running write sent → Running written"]
print("%-10s %9s %9s %5s %5s %5s | %s"%("run","p99","max","cpu","oth","steal","created→sched / bindsent→acc / acc→kubelet / sync→vol / write→written (p99 all pods)"))
runs=sorted(os.listdir(d),key=lambda x:os.path.getmtime(os.path.join(d,x)))
for r in runs:
    p=os.path.join(d,r,'results.md')
    if not os.path.exists(p): continue
    L=open(p).read().splitlines()
    row=[l for l in L if l.startswith('| 1000 |')]
    if not row: continue
    f=row[0].split('|')
    w=[l for l in L if l.startswith('| whole run')][0].split('|')
    st=[]
    for s in steps:
        x=[l for l in L if l.startswith('| '+s)]
        st.append(x[0].split('|')[4].strip() if x else '-')
    print("%-10s %9s %9s %5s %5s %5s | %s"%(r,f[6].strip(),f[7].strip(),w[6].strip(),w[7].strip(),w[8].strip()," / ".join(st)))

import sys,re
# gcsum.py RUN...: the collector's cycles 200-330 s after the process started: mark phase wall time, assist and background mark CPU, live heap after marking, and cycles whose heap reached the goal.
for r in sys.argv[1:]:
    rows=[]
    for l in open('/tmp/bis/runs/%s/gctrace.txt'%r,errors='replace').read().replace('\r','\n').splitlines():
        m=re.search(r'gc \d+ @([0-9.]+)s .*?\+([0-9.]+)\+[0-9.]+ ms clock, [0-9.]+\+([0-9.]+)/([0-9.]+)/([0-9.]+)\+.*?(\d+)->(\d+)->(\d+) MB, (\d+) MB goal',l)
        if not m: continue
        t,mark,assist,bg,idle,a,b,c,goal=[float(x) for x in m.groups()]
        if 200<=t<=330: rows.append((mark,assist,bg,idle,c,b>=goal-10))
    n=len(rows)
    print("%-8s cycles %2d  mark wall avg %5.0f max %5.0f ms  assist avg %4.0f max %4.0f ms  bg mark CPU avg %5.0f ms  idle mark CPU avg %4.0f ms  live avg %4.0f MB  at goal %d"%(r,n,sum(x[0] for x in rows)/n,max(x[0] for x in rows),sum(x[1] for x in rows)/n,max(x[1] for x in rows),sum(x[2] for x in rows)/n,sum(x[3] for x in rows)/n,sum(x[4] for x in rows)/n,sum(x[5] for x in rows)))

# summary.py RUN...: the README table row of each run directory here (CPU by go tool pprof of RUN/cpu.pprof)
import json,subprocess,sys,re,os
def cum(d,f):
    out=subprocess.run(['go','tool','pprof','-top','-cum','-show=^'+f.replace('.','\\.')+'$','-nodecount=1',d+'/cpu.pprof'],capture_output=True,text=True).stdout
    for l in out.splitlines():
        if l.strip().endswith(f):
            v=l.split()[3]
            return float(v[:-2])/1000 if v.endswith('ms') else float(v[:-1])
    return 0.0
def total(d):
    out=subprocess.run(['go','tool','pprof','-top','-nodecount=1',d+'/cpu.pprof'],capture_output=True,text=True).stdout
    m=re.search(r'Total samples = ([0-9.]+)(ms|s|mins)',out); v=float(m.group(1))
    return v/1000 if m.group(2)=='ms' else v*60 if m.group(2)=='mins' else v
print('| run | load start → end | process cores | others | GC cycles (0–30 / 30–60 / whole) | GC share | p50 | p99 | CPU s | ms/pod | GC mark | assists | mark+assists ms/pod | live heap nodes Ready / pods Running (forced GC) | RSS nodes Ready / pods Running | peak RSS (VmHWM) |')
print('|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|')
for r in sys.argv[1:]:
    d=os.path.join(os.path.dirname(os.path.abspath(__file__)), r)
    j=json.load(open(d+'/results.json')); s=j['startup'][0]
    w=s['windows']; whole=w[-1]
    lt=open(d+'/load.txt').read()
    loads=re.findall(r'load average: ([0-9.]+)',lt)
    hwm=0
    for l in open(d+'/rss.txt'):
        m=re.search(r'VmHWM:\s+(\d+)',l)
        if m: hwm=max(hwm,int(m.group(1)))
    T=total(d); mk=cum(d,'runtime.gcBgMarkWorker'); a=cum(d,'runtime.gcAssistAlloc'); pods=s['pods']
    lat=s['createToRunning']
    def ms(x): return '%.0f ms'%(x/1e6) if x<1e9 else '%.2f s'%(x/1e9)
    MiB=lambda b:'%.0f'%(b/2**20)
    print(f"| {r} | {loads[0]} → {loads[-1]} | {whole['processCores']:.2f} | {whole['othersCores']:.2f} | {w[0]['gcCycles']} / {w[1]['gcCycles']} / {whole['gcCycles']} | {whole['gcShare']*100:.0f}% | {ms(lat['P50'])} | {ms(lat['P99'])} | {T:.2f} | **{T/pods*1000:.2f}** | {mk:.2f} | {a:.2f} | {(mk+a)/pods*1000:.2f} | {MiB(s['HeapAfterNodes'])} / {MiB(s['HeapAfterPods'])} MiB | {MiB(s['RSSAfterNodes'])} / {MiB(s['RSSAfterPods'])} MiB | {hwm/1024:.0f} MiB |")

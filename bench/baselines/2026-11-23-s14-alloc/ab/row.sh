#!/bin/bash
# row.sh NAME BINARY LABEL: one markdown row of the A/B table (run in the
# directory holding NAME/). Bytes and objects allocated per pod from the
# heap profile's traces (classify.py's total), CPU per pod and its GC part
# from the run's CPU profile (heap.pprof.cpu), the rest from results.md.
name=$1; bin=$2; label=$3; d=$name; pods=9000
cls=/work/main/bench/baselines/2026-11-22-s10-cpu/classify.py
[ -f $d/alloc-classified.md ] || { go tool pprof -sample_index=alloc_space -traces $bin $d/heap.pprof > /tmp/halloc3/t.txt 2>/dev/null; python3 $cls /tmp/halloc3/t.txt $pods > $d/alloc-classified.md; }
[ -f $d/obj-classified.md ] || { go tool pprof -sample_index=alloc_objects -traces $bin $d/heap.pprof > /tmp/halloc3/t.txt 2>/dev/null; python3 $cls /tmp/halloc3/t.txt $pods > $d/obj-classified.md; }
[ -f $d/cpu-classified.md ] || { go tool pprof -traces $bin $d/heap.pprof.cpu > /tmp/halloc3/t.txt 2>/dev/null; python3 $cls /tmp/halloc3/t.txt $pods > $d/cpu-classified.md; }
space=$(grep '^| total' $d/alloc-classified.md | awk -F'|' '{print $3}')
objs=$(grep '^| total' $d/obj-classified.md | awk -F'|' '{print $3}')
cpu=$(grep '^| total' $d/cpu-classified.md | awk -F'|' '{print $3}')
gcs=$(grep '| GC' $d/cpu-classified.md | awk -F'|' '{s+=$3} END {printf "%.4f", s}')
IFS='|' read -r _ _ _ p50 p99 _ cores others gcshare cycles _ <<< "$(grep '^| whole run' $d/results.md | head -1)"
lock=$(grep '^lock' $d/load.txt | grep -o 'load average: [0-9.]*' | grep -o '[0-9.]*$')
after=$(grep '^after' $d/load.txt | grep -o 'load average: [0-9.]*' | grep -o '[0-9.]*$')
python3 - "$name" "$label" "$space" "$objs" "$cpu" "$lock" "$after" "$cores" "$others" "$gcshare" "$cycles" "$p99" "$gcs" <<'PY'
import sys
n,label,space,objs,cpu,lock,after,cores,others,gcshare,cycles,p99,gcs=sys.argv[1:]
pods=9000
print(f"| `{n}` | {label} | {lock} → {after} | {others.strip()} | {cores.strip()} | {float(space)/1024/pods:,.1f} KiB | {float(objs)/pods:,.0f} | {cycles.strip()} | {gcshare.strip()} | {float(cpu)*1000/pods:.2f} ms | {float(gcs)*1000/pods:.2f} ms | {p99.strip()} |")
PY

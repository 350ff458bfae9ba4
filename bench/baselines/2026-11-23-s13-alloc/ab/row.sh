#!/bin/bash
# row.sh NAME BINARY LABEL: one markdown row of the A/B table.
name=$1; bin=$2; label=$3; d=$(dirname "$0")/$name; pods=9000
space=$(go tool pprof -sample_index=alloc_space -top -nodecount=1 $bin $d/heap.pprof 2>/dev/null | grep -o "of [0-9.]*MB total" | grep -o "[0-9.]*")
objs=$(go tool pprof -sample_index=alloc_objects -top -nodecount=1 $bin $d/heap.pprof 2>/dev/null | grep -o "of [0-9]* total" | grep -o "[0-9]*")
cpu=$(go tool pprof -top -nodecount=1 $bin $d/heap.pprof.cpu 2>/dev/null | grep -o "Total samples = [0-9.]*s" | grep -o "[0-9.]*")
gcs=$(grep '| GC: ' $d/cpu-classified.md | awk -F'|' '{s+=$5} END {printf "%.2f", s/1}')
IFS='|' read -r _ _ _ p50 p99 _ cores others gcshare cycles _ <<< "$(grep '^| whole run' $d/results.md | head -1)"
lock=$(grep '^lock' $d/load.txt | grep -o 'load average: [0-9.]*' | grep -o '[0-9.]*$')
after=$(grep '^after' $d/load.txt | grep -o 'load average: [0-9.]*' | grep -o '[0-9.]*$')
python3 - "$name" "$label" "$space" "$objs" "$cpu" "$lock" "$after" "$cores" "$others" "$gcshare" "$cycles" "$p99" "$gcs" <<'PY'
import sys
n,label,space,objs,cpu,lock,after,cores,others,gcshare,cycles,p99,gcs=sys.argv[1:]
pods=9000
print(f"| `{n}` | {label} | {lock} → {after} | {others.strip()} | {cores.strip()} | {float(space)*1024/pods:,.1f} KiB ({float(space):,.0f} MiB) | {int(objs)/pods:,.0f} | {cycles.strip()} | {gcshare.strip()} | {float(cpu)*1000/pods:.2f} ms | {float(gcs):.2f} ms | {p99.strip()} |")
PY

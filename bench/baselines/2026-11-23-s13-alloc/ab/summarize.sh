#!/bin/bash
# summarize.sh NAME BINARY: bytes and objects allocated per pod (heap
# profile), CPU per pod (its CPU profile), GC cycles and latency (results).
name=$1; bin=$2; d=$(dirname "$0")/$name; pods=9000
space=$(go tool pprof -sample_index=alloc_space -top -nodecount=1 $bin $d/heap.pprof 2>/dev/null | grep -o "of [0-9.]*[MG]B total" | head -1)
objs=$(go tool pprof -sample_index=alloc_objects -top -nodecount=1 $bin $d/heap.pprof 2>/dev/null | grep -o "of [0-9]* total" | head -1)
cpu=$(go tool pprof -top -nodecount=1 $bin $d/heap.pprof.cpu 2>/dev/null | grep -o "Total samples = [0-9.]*s")
go tool pprof -sample_index=alloc_space -traces $bin $d/heap.pprof > $d/alloc-traces.txt 2>/dev/null
python3 /work/main/bench/baselines/2026-11-22-s10-cpu/classify.py $d/alloc-traces.txt $pods > $d/alloc-classified.md
go tool pprof -traces $bin $d/heap.pprof.cpu > $d/cpu-traces.txt 2>/dev/null
python3 /work/main/bench/baselines/2026-11-22-s10-cpu/classify.py $d/cpu-traces.txt $pods > $d/cpu-classified.md
whole=$(grep "^| whole run" $d/results.md | head -1)
echo "$name | space $space | objects $objs | cpu $cpu | $whole"

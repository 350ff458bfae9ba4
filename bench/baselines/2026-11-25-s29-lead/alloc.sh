#!/bin/bash
# alloc.sh BIN DIR: bytes allocated during the pods phase (full run), by component
BIN=$1; D=$2; cd $D
go tool pprof -sample_index=alloc_space -traces -diff_base heap.pprof.nodes $BIN heap.pprof > alloc.traces 2>/dev/null
python3 /work/main/bench/baselines/2026-11-24-s25-lead/comp.py alloc.traces 9000

#!/bin/bash
# comp.sh BIN DIR: live heap beyond the API server by component (session 25's method)
BIN=$1; D=$2
cd $D
go tool pprof -proto heap.pprof heap.pprof.control.nodes > a.pb.gz 2>/dev/null
go tool pprof -proto heap.pprof.nodes heap.pprof.control > b.pb.gz 2>/dev/null
go tool pprof -sample_index=inuse_space -traces -diff_base b.pb.gz $BIN a.pb.gz > beyond.traces 2>/dev/null
python3 /work/main/bench/baselines/2026-11-24-s25-lead/comp.py beyond.traces 9000

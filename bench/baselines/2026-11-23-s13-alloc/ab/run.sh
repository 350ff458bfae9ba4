#!/bin/bash
# run.sh NAME BINARY: one startup 300 x 9,000 run under the bench lock.
name=$1; bin=$2; d=$(dirname "$0")/$name
mkdir -p $d
echo "before $(date -u +%T) $(uptime)" > $d/load.txt
flock /tmp/kp-bench.lock bash -c "echo \"lock $(date -u +%T) \$(uptime)\" >> $d/load.txt; GODEBUG=gctrace=1 $bin bench startup --startup-nodes 300 --startup-duration 90s --startup-control=false --heap-profile $d/heap.pprof --out $d > $d/stdout.txt 2> $d/stderr.txt; echo rc \$? >> $d/load.txt"
echo "after $(date -u +%T) $(uptime)" >> $d/load.txt

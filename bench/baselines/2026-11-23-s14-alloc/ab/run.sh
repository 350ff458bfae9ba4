#!/bin/bash
# usage: run.sh BIN DIR
BIN=$1; DIR=$2
mkdir -p $DIR
flock /tmp/kp-bench.lock bash -c "echo \"lock: \$(uptime)\" > $DIR/load.txt; GODEBUG=gctrace=1 $BIN bench --out $DIR startup --startup-nodes 300 --startup-duration 90s --startup-control=false --heap-profile $DIR/heap.pprof > $DIR/stdout.txt 2> $DIR/stderr.txt; echo \"after: \$(uptime)\" >> $DIR/load.txt"

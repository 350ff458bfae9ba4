#!/bin/bash
# usage: run.sh BIN OUTDIR  (run under: flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock run.sh ...)
BIN=$1; OUT=$2; mkdir -p $OUT
s(){ awk '/^cpu /{print $9}' /proc/stat; }
{
echo "start $(date -u +%T) $(uptime)"
a=$(s); sleep 10; b=$(s); echo "steal before: $(( b - a )) ticks/10s = $(echo "scale=2; ($b-$a)/1000" | bc) cores"
$BIN bench --out $OUT startup --startup-nodes 300 --startup-duration 90s --heap-profile $OUT/heap.pprof > $OUT/stdout.txt 2> $OUT/stderr.txt
echo "exit $?"
echo "end $(date -u +%T) $(uptime)"
a=$(s); sleep 10; b=$(s); echo "steal after: $(( b - a )) ticks/10s = $(echo "scale=2; ($b-$a)/1000" | bc) cores"
} > $OUT/load.txt 2>&1

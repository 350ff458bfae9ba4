#!/bin/bash
# usage: run30k.sh NAME BINARY -- [extra args]
name=$1; bin=$2; shift 3
d=/tmp/hgcp/runs/$name
mkdir -p $d
{ echo "start $(date -u +%T) $(uptime)"; } > $d/load.txt
$bin bench startup-1000x30000 --startup-control=false --cpu-profile $d/cpu.pprof --out $d "$@" > $d/stdout.txt 2> $d/stderr.txt &
pid=$!
/tmp/hgcp/rss.sh $pid $d/rss.txt &
wait $pid
echo "rc $?" >> $d/load.txt
{ echo "end $(date -u +%T) $(uptime)"; } >> $d/load.txt
wait

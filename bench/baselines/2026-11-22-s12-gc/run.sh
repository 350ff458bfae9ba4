#!/bin/bash
# usage: run.sh NAME BINARY [env...] -- [extra args]
name=$1; bin=$2; shift 2
envs=()
while [ "$1" != "--" ] && [ $# -gt 0 ]; do envs+=("$1"); shift; done
shift
d=/tmp/hgcp/runs/$name
mkdir -p $d
{ echo "start $(date -u +%T) $(uptime)"; } > $d/load.txt
env "${envs[@]}" $bin bench startup --startup-nodes 1000 --startup-duration 60s --startup-control=false --cpu-profile $d/cpu.pprof --out $d "$@" > $d/stdout.txt 2> $d/stderr.txt &
pid=$!
/tmp/hgcp/rss.sh $pid $d/rss.txt &
wait $pid
echo "rc $?" >> $d/load.txt
{ echo "end $(date -u +%T) $(uptime)"; } >> $d/load.txt
wait

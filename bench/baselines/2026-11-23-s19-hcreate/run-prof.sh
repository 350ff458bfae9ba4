#!/bin/bash
# usage: run-prof.sh <test binary> <name>: client-go creates with cpu and mem profiles
bin=$1; name=$2; d=/tmp/hcreate19/profile; cd /tmp/hcreate19/base/bench
l0=$(cut -d' ' -f1-3 /proc/loadavg); s0=$(awk '/^cpu /{print $9}' /proc/stat); t0=$(date +%s.%N)
$bin -test.run '^$' -test.bench 'CreateCPUShareHTTP2/api$' -test.benchtime 40000x -test.benchmem -test.cpuprofile $d/cpu-$name.pprof -test.memprofile $d/mem-$name.pprof > $d/$name-prof.txt 2>&1
s1=$(awk '/^cpu /{print $9}' /proc/stat); t1=$(date +%s.%N); l1=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$name $(date -u +%H:%M:%S) load $l0 -> $l1 steal_cores $(echo "($s1-$s0)/100/($t1-$t0)" | bc -l | cut -c1-6) secs $(echo "$t1-$t0" | bc | cut -c1-6)" >> $d/load.txt

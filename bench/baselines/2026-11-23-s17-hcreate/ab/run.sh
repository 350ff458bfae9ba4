#!/bin/bash
# Alternated runs of the head and new test binaries: BenchmarkCreateCPUShareHTTP2, 20000 creates per target.
cd /tmp/hcreate/head/bench
for i in 1 2 3 4 5 6; do
  for b in head new; do
    l0=$(cut -d' ' -f1-3 /proc/loadavg); s0=$(awk '/^cpu /{print $9}' /proc/stat); t0=$(date +%s.%N)
    /tmp/hcreate/bench-$b.test -test.run '^$' -test.bench 'CreateCPUShareHTTP2' -test.benchtime 20000x -test.benchmem > /tmp/hcreate/ab/$b-$i.txt 2>&1
    s1=$(awk '/^cpu /{print $9}' /proc/stat); t1=$(date +%s.%N); l1=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "$b-$i $(date -u +%H:%M:%S) load $l0 -> $l1 steal_cores $(echo "($s1-$s0)/100/($t1-$t0)" | bc -l | cut -c1-6) secs $(echo "$t1-$t0" | bc | cut -c1-6)" >> /tmp/hcreate/ab/load.txt
  done
done

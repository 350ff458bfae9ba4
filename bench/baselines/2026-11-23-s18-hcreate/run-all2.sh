#!/bin/bash
# Session 18 hcreate measurements, each batch under one hold of the locks.
# 1. writes --clients 64 (fsync on), new and head-at-start alternated
flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock bash -c '
cd /tmp/hcreate18
for r in new-1 head-3 new-2 head-4; do
  ./run-writes.sh /tmp/hcreate18/kubeproof-${r%-*} $r
done'
# 2. BenchmarkCreateCPUShareHTTP2 (fsync off, 20000 creates per target), alternated
flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock bash -c '
cd /tmp/hcreate18/head/bench
for i in 2 3 4 5; do
  for b in head new; do
    l0=$(cut -d" " -f1-3 /proc/loadavg); s0=$(awk "/^cpu /{print \$9}" /proc/stat); t0=$(date +%s.%N)
    /tmp/hcreate18/bench-$b.test -test.run "^$" -test.bench "CreateCPUShareHTTP2" -test.benchtime 20000x -test.benchmem > /tmp/hcreate18/ab/$b-$i.txt 2>&1
    s1=$(awk "/^cpu /{print \$9}" /proc/stat); t1=$(date +%s.%N); l1=$(cut -d" " -f1-3 /proc/loadavg)
    echo "$b-$i $(date -u +%H:%M:%S) load $l0 -> $l1 steal_cores $(echo "($s1-$s0)/100/($t1-$t0)" | bc -l | cut -c1-6) secs $(echo "$t1-$t0" | bc | cut -c1-6)" >> /tmp/hcreate18/ab/load.txt
  done
done'
# 3. profile of new
flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock /tmp/hcreate18/run-prof.sh /tmp/hcreate18/bench-new.test new
echo finished > /tmp/hcreate18/all.done

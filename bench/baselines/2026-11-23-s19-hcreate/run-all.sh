#!/bin/bash
# Session 19 hcreate measurements, each batch under one hold of the locks.
# 1. BenchmarkCreateCPUShareHTTP2 (fsync off, 20000 creates per target), base and new alternated
flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock bash -c '
cd /tmp/hcreate19/base/bench
for i in 1 2 3 4; do
  for b in base new; do
    l0=$(cut -d" " -f1-3 /proc/loadavg); s0=$(awk "/^cpu /{print \$9}" /proc/stat); t0=$(date +%s.%N)
    /tmp/hcreate19/bench-$b.test -test.run "^$" -test.bench "CreateCPUShareHTTP2" -test.benchtime 20000x -test.benchmem > /tmp/hcreate19/ab/$b-$i.txt 2>&1
    s1=$(awk "/^cpu /{print \$9}" /proc/stat); t1=$(date +%s.%N); l1=$(cut -d" " -f1-3 /proc/loadavg)
    echo "$b-$i $(date -u +%H:%M:%S) load $l0 -> $l1 steal_cores $(echo "($s1-$s0)/100/($t1-$t0)" | bc -l | cut -c1-6) secs $(echo "$t1-$t0" | bc | cut -c1-6)" >> /tmp/hcreate19/ab/load.txt
  done
done'
# 2. writes --clients 64 (fsync on), base and new alternated
flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock bash -c '
cd /tmp/hcreate19
for r in new-1 base-1 new-2 base-2; do
  ./run-writes.sh /tmp/hcreate19/kubeproof-${r%-*} $r
done'
# 3. profiles of base and new
flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock bash -c '/tmp/hcreate19/run-prof.sh /tmp/hcreate19/bench-new.test new; /tmp/hcreate19/run-prof.sh /tmp/hcreate19/bench-base.test base'
echo finished > /tmp/hcreate19/all.done

#!/bin/bash
# 1. alternated BenchmarkCreateCPUShareHTTP2 runs (20000 creates per target), head and new
cd /tmp/hcreate18/head/bench
for i in 1 2 3 4 5 6; do
  for b in head new; do
    flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock bash -c '
    b='$b'; i='$i'
    l0=$(cut -d" " -f1-3 /proc/loadavg); s0=$(awk "/^cpu /{print \$9}" /proc/stat); t0=$(date +%s.%N)
    /tmp/hcreate18/bench-$b.test -test.run "^$" -test.bench "CreateCPUShareHTTP2" -test.benchtime 20000x -test.benchmem > /tmp/hcreate18/ab/$b-$i.txt 2>&1
    s1=$(awk "/^cpu /{print \$9}" /proc/stat); t1=$(date +%s.%N); l1=$(cut -d" " -f1-3 /proc/loadavg)
    echo "$b-$i $(date -u +%H:%M:%S) load $l0 -> $l1 steal_cores $(echo "($s1-$s0)/100/($t1-$t0)" | bc -l | cut -c1-6) secs $(echo "$t1-$t0" | bc | cut -c1-6)" >> /tmp/hcreate18/ab/load.txt'
  done
done
# 2. writes --clients 64, alternated
cd /tmp/hcreate18
for r in new-1 head-3 new-2 head-4; do
  b=${r%-*}
  flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock ./run-writes.sh /tmp/hcreate18/kubeproof-$b $r
done
# 3. profile of new
flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock ./run-prof.sh /tmp/hcreate18/bench-new.test new
echo finished > /tmp/hcreate18/all.done

#!/bin/bash
for pair in "new-1 /tmp/lead/s24/kpH" "base-1 /tmp/lead/s23/kp0" "new-2 /tmp/lead/s24/kpH" "base-2 /tmp/lead/s23/kp0"; do
  set -- $pair; name=$1; bin=$2; d=/tmp/lead/s24/w/$name; mkdir -p $d; cd $d
  l0=$(cut -d' ' -f1-3 /proc/loadavg); s0=$(awk '/^cpu /{print $9}' /proc/stat); t0=$(date +%s.%N)
  echo "start $(date -u +%H:%M:%S) load $l0" > load.txt
  $bin bench writes --clients 64 > stdout.txt 2> stderr.txt; echo "rc=$?" >> load.txt
  s1=$(awk '/^cpu /{print $9}' /proc/stat); t1=$(date +%s.%N); l1=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "end $(date -u +%H:%M:%S) load $l1 steal_cores $(echo "($s1-$s0)/100/($t1-$t0)" | bc -l | cut -c1-6)" >> load.txt
done

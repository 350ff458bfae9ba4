#!/bin/bash
# usage: run-writes.sh <binary> <name>; kubeproof bench writes --clients 64 (fsync on), load and steal before/after
bin=$1; name=$2; d=/tmp/hcreate19/out/$name; mkdir -p $d
cd $d
l0=$(cut -d' ' -f1-3 /proc/loadavg); s0=$(awk '/^cpu /{print $9}' /proc/stat); t0=$(date +%s.%N)
echo "start $(date -u +%H:%M:%S) load $l0 stat $(head -1 /proc/stat)" > load.txt
$bin bench writes --clients 64 > stdout.txt 2> stderr.txt; echo "rc=$?" >> load.txt
s1=$(awk '/^cpu /{print $9}' /proc/stat); t1=$(date +%s.%N); l1=$(cut -d' ' -f1-3 /proc/loadavg)
echo "end $(date -u +%H:%M:%S) load $l1 stat $(head -1 /proc/stat)" >> load.txt
echo "$name load $l0 -> $l1 steal_cores $(echo "($s1-$s0)/100/($t1-$t0)" | bc -l | cut -c1-6) secs $(echo "$t1-$t0" | bc | cut -c1-6)" >> load.txt

#!/bin/bash
BIN=$1; OUT=$2; mkdir -p $OUT
$BIN bench --out $OUT startup --startup-nodes 300 --startup-duration 90s --heap-profile $OUT/heap.pprof --startup-control=false > $OUT/stdout.txt 2> $OUT/stderr.txt
echo "exit $?" >> $OUT/stdout.txt

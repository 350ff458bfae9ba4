#!/bin/bash
# ab.sh OUTDIR: BenchmarkStatusUpdate, BenchmarkNodeStatusUpdate, BenchmarkLeaseUpdate, before and
# after binaries alternated, 8 rounds of -count 1, load and steal around them.
out=$1; mkdir -p $out
cd /work/main/impl/apiserver/fieldmanager
steal() { awk '/^cpu /{print $9}' /proc/stat; }
{ date -u; uptime; } > $out/env.txt
s0=$(steal); sleep 10; s1=$(steal); echo "steal before: $(( (s1-s0) ))/1000 cores (10 s)" >> $out/env.txt
: > $out/before.txt; : > $out/after.txt
for i in 1 2 3 4 5 6 7 8; do
  for b in before after; do
    /tmp/hstatus/$b.test -test.run '^$' -test.bench '^Benchmark(StatusUpdate|NodeStatusUpdate|LeaseUpdate)$' -test.benchmem -test.benchtime 1s -test.count 1 >> $out/$b.txt 2>&1
  done
  uptime >> $out/env.txt
done
s2=$(steal); sleep 10; s3=$(steal); echo "steal after: $(( (s3-s2) ))/1000 cores (10 s); total during run: $((s2-s1)) ticks" >> $out/env.txt
{ date -u; uptime; } >> $out/env.txt
/tmp/hstatus/bin/benchstat $out/before.txt $out/after.txt > $out/benchstat.txt

#!/bin/bash
# cpuop.sh BIN N [BENCH]: process CPU seconds (user+sys) of one benchmark at N iterations, then ns/op B/op allocs/op
cd /tmp/hlist/base/impl/apiserver/fieldmanager
bin=$1; n=$2; bench=${3:-BenchmarkCreatePodFields}
/usr/bin/time -o /tmp/hlist/cpuop.time -f "%U %S" $bin -test.run x -test.bench "^$bench\$" -test.benchmem -test.benchtime ${n}x > /tmp/hlist/cpuop.out 2>&1
read u s < /tmp/hlist/cpuop.time
echo "$(echo "$u + $s" | bc) $(grep Benchmark /tmp/hlist/cpuop.out | awk '{print $3, $5, $7}')"

#!/bin/bash
# 7cbe559/20c4a45 (nodes) against 2dacc0d (map: kept forms in a map under a lock), one hold of the bench lock
cd /tmp/hlist
steal(){ awk '/^cpu /{print $9}' /proc/stat; }
echo "# process CPU s (user+sys) at N iterations, then ns/op, B/op, allocs/op; per-op CPU = (cpu(N)-cpu(1))/N"
for bench in BenchmarkCreateSentPodFields BenchmarkCreateSchedulerEventFields; do
echo "## $bench"
for r in 1 2 3; do for b in nodes map; do
  s0=$(steal); l0=$(uptime | sed 's/.*load average: //')
  one=$(./cpuop.sh /tmp/hlist/fm-$b.test 1 $bench); many=$(./cpuop.sh /tmp/hlist/fm-$b.test 50000 $bench)
  s1=$(steal); c1=${one%% *}; cn=${many%% *}
  echo "$b round$r $(date -u +%T) load[$l0] steal=$(( s1 - s0 ))ticks | N=1: $one | N=50000: $many | cpu/op $(echo "($cn - $c1)*1000000/50000" | bc) us"
done; done; done

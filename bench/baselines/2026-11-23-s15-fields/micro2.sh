#!/bin/bash
# the whole micro A/B in one hold of the bench lock
cd /tmp/hlist
steal(){ awk '/^cpu /{print $9}' /proc/stat; }
echo "# process CPU s (user+sys) at N iterations, then ns/op, B/op, allocs/op; per-op CPU = (cpu(20000)-cpu(1))/20000; steal in /proc/stat ticks (1/100 s) over the pair of runs"
echo "# base = 266a2cf (session start), nodes = 20c4a45 (lists, shapes set aside, set nodes kept); one hold of /tmp/kp-bench.lock for all"
for bench in BenchmarkCreatePodFields BenchmarkCreateSentPodFields; do
echo "## $bench"
for r in 1 2 3; do for b in base nodes; do
  s0=$(steal); l0=$(uptime | sed 's/.*load average: //')
  one=$(./cpuop.sh /tmp/hlist/fm-$b.test 1 $bench); many=$(./cpuop.sh /tmp/hlist/fm-$b.test 20000 $bench)
  s1=$(steal); c1=${one%% *}; cn=${many%% *}
  echo "$b round$r $(date -u +%T) load[$l0] steal=$(( s1 - s0 ))ticks | N=1: $one | N=20000: $many | cpu/op $(echo "($cn - $c1)*1000000/20000" | bc) us"
done; done; done
echo "## other create benchmarks, base against nodes (go test -bench, count 3)"
for r in 1 2; do for b in base nodes; do
  echo "== $b round$r $(date -u +%T) $(uptime | sed 's/.*load/load/') steal0=$(steal)"
  (cd /tmp/hlist/base/impl/apiserver/fieldmanager && /tmp/hlist/fm-$b.test -test.run x -test.bench 'BenchmarkCreate(Fields|EventFields|SchedulerEventFields)' -test.benchmem -test.count 3 | grep Benchmark)
  echo "   after $(date -u +%T) $(uptime | sed 's/.*load/load/') steal1=$(steal)"
done; done

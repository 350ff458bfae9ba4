#!/bin/sh
# alternate binaries; each run under exclusive lock
n=1
for i in 1 2 3 4 5; do
  for r in 39d949e2 4d1a8b72; do
    if [ $((i % 2)) = 0 ]; then :; fi
    uptime > $n-$r.load
    flock /tmp/kp-quiet.lock /tmp/kp-$r bench --clients 64 writes > $n-$r.md 2> $n-$r.err
    uptime >> $n-$r.load
    n=$((n+1))
  done
done

#!/bin/sh
# Session 40 A/B: b9acc8f3 (session start) vs b77f1868 (all of session 40's server changes), alternating, exclusive lock.
set -e
i=1
for b in base head base head; do
  cat /proc/loadavg > $i-$b.load
  flock /tmp/kp-quiet.lock /tmp/lead/kp-$b bench --clients 64 writes > $i-$b.md 2> $i-$b.err
  i=$((i+1))
done

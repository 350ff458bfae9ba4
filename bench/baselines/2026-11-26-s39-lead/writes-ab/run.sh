#!/bin/sh
# Session 39 A/B: 368171d5 (session start) vs e01dadf7, alternating, exclusive lock.
set -e
i=1
for b in base head base head; do
  cat /proc/loadavg > $i-$b.load
  flock /tmp/kp-quiet.lock /tmp/lead/kp-$b bench --clients 64 writes > $i-$b.md 2> $i-$b.err
  i=$((i+1))
done

#!/bin/sh
cd /work/main
for i in 1 2; do
  for b in before after; do
    flock /tmp/kp-quiet.lock sh -c "uptime > /tmp/lead/model/$i-$b.load; /usr/bin/time -v /tmp/kp-fp-$b model check --config RollingUpdate --quiet > /tmp/lead/model/$i-$b.txt 2> /tmp/lead/model/$i-$b.time; uptime >> /tmp/lead/model/$i-$b.load"
  done
done

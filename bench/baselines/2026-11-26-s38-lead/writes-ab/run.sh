#!/bin/sh
# Session 38 lead: writes --clients 64, alternating the session's start (5e3b10fe, session 37's
# work landed) and 95cf6aa8 (all of this session's server changes but ff4a758f, a webhook
# credential change), exclusive lock, 11:24-11:31 UTC, one helper reading code beside it. The
# "commit" each report names is the checkout the command ran in (/work/main, ff4a758f), not the
# binary's: base is /tmp/lead/kp-base, head /tmp/lead/kp-head.
i=0
for rev in base head base head; do
  i=$((i+1))
  uptime > $i-$rev.load
  flock /tmp/kp-quiet.lock /tmp/lead/kp-$rev bench --clients 64 writes > $i-$rev.md 2> $i-$rev.err
done

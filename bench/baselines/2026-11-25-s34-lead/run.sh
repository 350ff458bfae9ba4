#!/bin/sh
# End-of-session measurements of session 34 under the exclusive lock:
# three `writes --clients 64`, one apiserver-memory, then one startup-1000x30000.
BIN=$1; OUT=$2; mkdir -p "$OUT"
flock /tmp/kp-quiet.lock sh -c '
BIN=$0; OUT=$1
for i in 1 2 3; do
  mkdir -p "$OUT/writes-$i"; cut -d" " -f1-3 /proc/loadavg > "$OUT/writes-$i/load.txt"
  "$BIN" bench --clients 64 writes > "$OUT/writes-$i/results.md" 2> "$OUT/writes-$i/stderr.txt"
done
mkdir -p "$OUT/apiserver-memory"; cut -d" " -f1-3 /proc/loadavg > "$OUT/apiserver-memory/load.txt"
"$BIN" bench apiserver-memory > "$OUT/apiserver-memory/results.md" 2>&1
' "$BIN" "$OUT"
sh /work/main/bench/baselines/2026-11-25-s29-lead/measure.sh "$BIN" "$OUT/startup"

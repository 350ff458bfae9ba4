#!/bin/sh
# measure.sh BIN OUT: one startup-1000x30000 run (with its control) under the
# exclusive machine lock, gctrace to OUT/gctrace.txt, /proc/stat every 10 s.
BIN=$1; OUT=$2; mkdir -p "$OUT"
exec flock /tmp/kp-quiet.lock sh -c '
BIN=$0; OUT=$1
date -u > "$OUT/when.txt"
(while sleep 10; do echo "$(date -u +%T) $(head -1 /proc/stat) load $(cut -d" " -f1-3 /proc/loadavg)"; done) > "$OUT/stat.txt" &
SP=$!
GODEBUG=gctrace=1 "$BIN" bench --out "$OUT" startup-1000x30000 > "$OUT/stdout.txt" 2> "$OUT/gctrace.txt"
echo "rc=$?" >> "$OUT/when.txt"
kill $SP
date -u >> "$OUT/when.txt"
' "$BIN" "$OUT"

#!/bin/bash
# usage: run.sh NAME BINARY [extra args...]
name=$1; bin=$2; shift 2
out=/tmp/hvol18/runs/$name; mkdir -p $out
{
echo "start $(date -u +%T) load $(cat /proc/loadavg) cpu $(head -1 /proc/stat)"
flock -s /tmp/kp-quiet.lock flock /tmp/kp-bench.lock bash -c "echo locked \$(date -u +%T) load \$(cat /proc/loadavg) cpu \$(head -1 /proc/stat); ( while sleep 10; do echo \"\$(date -u +%T) \$(cat /proc/loadavg) \$(head -1 /proc/stat)\"; done ) > $out/stat.txt & sp=\$!; $bin bench --out $out --log-level ${LOGLEVEL:-info} $* > $out/stdout.txt 2> $out/stderr.txt; echo rc=\$?; kill \$sp; echo end \$(date -u +%T) load \$(cat /proc/loadavg) cpu \$(head -1 /proc/stat)"
} > $out/start.txt 2>&1

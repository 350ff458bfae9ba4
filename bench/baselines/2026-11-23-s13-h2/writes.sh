#!/bin/bash
# usage: writes.sh PID SECONDS OUTDIR — write(2) calls per fd of PID for SECONDS, and which
# fds are TCP sockets on which local/remote ports (the listening ports mark the servers).
set -u
pid=$1 secs=$2 out=$3; mkdir -p $out
ls -l /proc/$pid/fd 2>/dev/null | awk '/socket:/{gsub(/socket:\[|\]/,"",$NF); print $9, $NF}' > $out/fd-inode.txt
cat /proc/net/tcp /proc/net/tcp6 > $out/tcp.txt
perf record -q -e syscalls:sys_enter_write -p $pid -o $out/perf.data -- sleep $secs 2>/dev/null
perf script -i $out/perf.data 2>/dev/null | grep -o 'fd: 0x[0-9a-f]*' | sort | uniq -c | sort -rn > $out/writes-by-fd.txt
rm -f $out/perf.data

#!/bin/bash
# usage: sites.sh <binary> <mem.pprof>: handler goroutine and watch cache allocations per create (40,000 creates)
bin=$1; p=$2
for f in 'http2.\(\*serverConn\).runHandler' 'cacher.\(\*Cacher\).reflect'; do
  for idx in alloc_space alloc_objects; do
    tot=$(go tool pprof -sample_index=$idx -top -focus="$f" -nodecount=100000 $bin $p 2>/dev/null | grep "Showing nodes" | awk '{print $5}' | tr -d ,)
    echo "$f $idx total $tot"
  done
done

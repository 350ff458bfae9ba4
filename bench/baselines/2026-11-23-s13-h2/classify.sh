#!/bin/bash
# usage: classify.sh DIR BINARY PODS
# Session 10's classifier (bench/baselines/2026-11-22-s10-cpu/classify.py) on
# DIR/cpu.pprof, after naming x/net's server frames as net/http's bundled copy
# names them: since 5982c70 the API server's HTTP/2 server is
# golang.org/x/net/http2's (golang.org/x/net/http2.(*serverConn)...), which the
# classifier would otherwise count as the clients' transport.
set -eu
d=$1 bin=$2 pods=$3
here=$(cd "$(dirname "$0")" && pwd)
go tool pprof -traces "$bin" "$d/cpu.pprof" 2>/dev/null |
  sed 's#golang.org/x/net/http2\.(\*serverConn)#net/http.(*http2serverConn)#g' > "$d/traces.txt"
python3 "$here/../2026-11-22-s10-cpu/classify.py" "$d/traces.txt" "$pods" > "$d/classify.md"

#!/bin/bash
# cls.sh DIR...: p50/p99, classes beyond per node/pod, stacks totals
for d in "$@"; do
  echo "== $d $(head -2 $d/load.txt | tail -1 | cut -d' ' -f1-3)"
  grep -E "^\| [0-9]+ \| [0-9]+ \|" $d/results.md | head -1 | cut -d'|' -f6-8
  grep "beyond the API server by class" $d/results.md | sed 's/| beyond the API server by class, per node \/ per pod: //; s/ | | | | | |//' | sed 's/(etcd.s mapped db pages, the binary)//; s/(partly used spans)//'
  grep "slope beyond the API server by class" $d/results.md | sed 's/| slope beyond the API server by class, per pod: /slope: /; s/ | | | | | |//; s/(etcd.s mapped db pages, the binary)//; s/(partly used spans)//'
  python3 - "$d" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]+'/results.json'))['startup'][0]['upMemory']
for k in ('full','control'):
    print(k, ' '.join('%d:%dg/%.1fMB/%.1fMBused'%(i,r['classes']['goroutines'],r['classes']['heap/stacks']/1e6,r['classes']['gc/scan/stack']/1e6) for i,r in enumerate(d[k])))
PY
done

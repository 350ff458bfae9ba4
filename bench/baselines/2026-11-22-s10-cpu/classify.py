#!/usr/bin/env python3
"""Attribute a profile's samples to the components of one `kubeproof up`
process, by the frames on each stack (first rule that matches wins).

  go tool pprof -traces BINARY cpu.pprof > traces.txt
  python3 classify.py traces.txt PODS      # seconds, share, ms per pod

Also reads `-sample_index=alloc_space -traces` output of a heap profile
(the "CPU s" column is then bytes). The API server's samples are split by
handler path: the profile carries no resource, so "create" holds pods and
events creates, "update" leases and events updates, and subresource
updates are pods/status (nodes/status when the registry's node code is on
the stack)."""
import sys, re, collections

def parse(path):
    total = None
    samples = []
    cur = None
    val = 0.0
    for line in open(path):
        if line.startswith('-----------+'):
            if cur is not None:
                samples.append((val, cur))
            cur = []
            continue
        if cur is None:
            continue
        if line.strip().startswith('bytes:'):
            continue
        m = re.match(r'\s+([\d.]+)(ms|s|us|µs|min|B|kB|MB|GB)?\s+(\S.*)$', line)
        if m and not cur:
            v = float(m.group(1)); u = m.group(2) or ''
            mult = {'ms':1e-3,'us':1e-6,'µs':1e-6,'min':60,'s':1,'B':1,'kB':1e3,'MB':1e6,'GB':1e9,'':1}[u]
            val = v*mult
            cur.append(m.group(3).strip())
        elif line.strip():
            cur.append(line.strip())
    if cur:
        samples.append((val, cur))
    return samples

def has(stack, s):
    return any(s in f for f in stack)

def classify(stack):
    # Since session 13 (5982c70) the API server's HTTP/2 server is x/net's, not
    # net/http's bundled copy: its frames count as the bundled ones do.
    j = '\n'.join(stack).replace('golang.org/x/net/http2.(*serverConn)', 'net/http.(*http2serverConn)')
    gc_assist = 'runtime.gcAssistAlloc' in j
    # GC first
    if 'runtime.gcBgMarkWorker' in j:
        return 'GC: background mark'
    if gc_assist:
        return 'GC: assists (charged to allocating code)'
    if 'runtime.bgsweep' in j or 'runtime.bgscavenge' in j or 'runtime.sweepone' in j:
        return 'GC: sweep/scavenge'
    if 'runtime.gcStart' in j or 'runtime.gcMarkDone' in j or 'runtime.gcMarkTermination' in j:
        return 'GC: start/termination'
    # API server handlers
    if 'impl/apiserver' in j and 'http2serverConn).runHandler' in j:
        if 'serveTokenRequest' in j:
            return 'API: serviceaccounts/token create'
        if 'endpoints.(*Handler).bind' in j:
            return 'API: pods/binding create'
        if 'endpoints.(*Handler).serveSubresource' in j:
            if 'registry.nodes' in j:
                return 'API: nodes/status update'
            return 'API: pods/status update (and nodes/status)'
        if 'endpoints.(*Handler).watch' in j:
            return 'API: watch (serving encode)'
        if 'endpoints.(*Handler).create' in j:
            return 'API: create (pods, events)'
        if 'endpoints.(*Handler).update' in j:
            return 'API: update (leases, events)'
        if 'endpoints.(*Handler).get' in j:
            return 'API: get (nodes)'
        if 'endpoints.(*Handler).list' in j:
            return 'API: list'
        if 'endpoints.(*Handler).patch' in j:
            return 'API: patch'
        return 'API: filters/other'
    if 'http2serverConn' in j or 'net/http.(*conn).serve' in j:
        return 'API: HTTP/2+TLS server conn (reads, frame writes)'
    if 'impl/storage/cacher' in j:
        return 'watch cache (dispatch/fan-out)'
    if 'go.etcd.io/etcd/server' in j or 'go.etcd.io/raft' in j or 'go.etcd.io/bbolt' in j:
        return 'etcd'
    if 'go.etcd.io/etcd/client' in j or 'google.golang.org/grpc' in j:
        return 'etcd client/grpc'
    if 'impl/kubelet' in j:
        if 'housekeeping' in j:
            if 'relist' in j: return 'kubelet: relist'
            if 'renewLease' in j: return 'kubelet: lease renew'
            if 'updateNodeStatus' in j: return 'kubelet: node status'
            if 'evictionTick' in j: return 'kubelet: eviction'
            return 'kubelet: housekeeping other'
        if 'syncPod' in j:
            if 'writeStatus' in j: return 'kubelet: sync: status write'
            if 'setUpVolumes' in j: return 'kubelet: sync: volumes (token, files)'
            if 'startContainer' in j: return 'kubelet: sync: start container'
            if 'podRuntimeState' in j: return 'kubelet: sync: runtime state'
            return 'kubelet: sync: other'
        if 'dispatcher' in j or 'Dispatcher' in j:
            return 'kubelet: dispatcher'
        return 'kubelet: other'
    if 'client-go/tools/record' in j:
        return 'event broadcaster (client side)'
    if 'impl/scheduler' in j:
        return 'scheduler'
    if 'impl/controller' in j:
        return 'controller manager'
    if 'client-go/tools/cache' in j or 'apimachinery/pkg/watch' in j or 'rest.(*Request).Watch' in j or 'watch.(*StreamWatcher)' in j:
        return 'informers (watch decode, handlers)'
    if 'golang.org/x/net/http2' in j:
        return 'clients: HTTP/2+TLS transport'
    if 'kubeproof/bench' in j:
        return 'benchmark itself'
    if 'runtime.' in stack[-1] or 'runtime.mcall' in j or 'runtime.schedule' in j:
        return 'Go runtime: scheduler/other'
    return 'other'

def main():
    samples = parse(sys.argv[1])
    pods = float(sys.argv[2]) if len(sys.argv) > 2 else 0
    tot = sum(v for v, _ in samples)
    by = collections.Counter()
    for v, st in samples:
        by[classify(st)] += v
    print(f'| component | CPU s | share | ms per pod |')
    print('|---|---:|---:|---:|')
    for k, v in sorted(by.items(), key=lambda kv: -kv[1]):
        print(f'| {k} | {v:.2f} | {100*v/tot:.1f}% | {1000*v/pods if pods else 0:.2f} |')
    print(f'| total | {tot:.2f} | 100% | {1000*tot/pods if pods else 0:.2f} |')

main()

#!/usr/bin/env python3
"""PodState's share of the kubelets' syncPod CPU in CPU profiles' traces.

  python3 share.py cpu.pprof.0??.traces

Samples with the function anywhere on the stack; classify.py's parser
(session 10's, loaded from there)."""
import os, sys

here = os.path.dirname(os.path.abspath(__file__))
exec(open(os.path.join(here, '..', '2026-11-22-s10-cpu', 'classify.py')).read().replace('\nmain()\n', '\n'))

tot = sync = podstate = 0
for f in sys.argv[1:]:
    for v, st in parse(f):
        frames = [x.split(' ')[0] for x in st]
        tot += v
        if any(x.endswith('kubelet.(*Kubelet).syncPod') for x in frames):
            sync += v
        if any(x.endswith('sim.(*Runtime).PodState') for x in frames):
            podstate += v
print(f'total {tot:.2f} s, syncPod {sync:.2f} s, PodState {podstate:.2f} s ({100 * podstate / sync:.1f}% of syncPod)')

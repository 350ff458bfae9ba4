#!/usr/bin/env python3
"""writes_by_side.py DIR SECONDS PODS_PER_SECOND: write(2) calls of writes.sh's sample (DIR)
by side of the process's TCP connections to itself: server side (local port listening),
client side (remote port listening), and everything that is not TCP (files, pipes)."""
import collections, sys
d, secs, rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
fdino = {}
for l in open(f'{d}/fd-inode.txt'):
    p = l.split()
    if len(p) == 2:
        fdino[int(p[0])] = p[1]
tcp, listen = {}, set()
for l in open(f'{d}/tcp.txt'):
    p = l.split()
    if len(p) < 10 or p[0] == 'sl':
        continue
    lp, rp = int(p[1].split(':')[1], 16), int(p[2].split(':')[1], 16)
    tcp[p[9]] = (lp, rp)
    if p[3] == '0A':
        listen.add(lp)
by, fds = collections.Counter(), collections.Counter()
for l in open(f'{d}/writes-by-fd.txt'):
    c, _, fd = l.split()
    ino = fdino.get(int(fd, 16))
    t = tcp.get(ino)
    if t is None:
        kind = 'not TCP (files, pipes, eventfds) or opened after the fd list'
    elif t[0] in listen:
        kind = f'server side of :{t[0]}'
    elif t[1] in listen:
        kind = f'client side to :{t[1]}'
    else:
        kind = 'other TCP'
    by[kind] += int(c)
    fds[kind] += 1
print('| writes | per s | per pod | fds | side |')
print('|---:|---:|---:|---:|---|')
for k, v in by.most_common():
    print(f'| {v} | {v/secs:.0f} | {v/secs/rate:.1f} | {fds[k]} | {k} |')

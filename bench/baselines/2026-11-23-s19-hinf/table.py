#!/usr/bin/env python3
# One row per run dir of the README's table: table.py DIR... (reads
# DIR/results.md and DIR/load.txt).
import re, sys
for d in sys.argv[1:]:
    r = open(d + "/results.md").read()
    load = open(d + "/load.txt").read()
    m = re.search(r"\| 300 \| 9000 \| [^|]+\| \d+ \| ([\d.]+ ms) \| ([\d.]+ ms) \|", r)
    def row(label):
        mm = re.search(r"\| \*\*" + re.escape(label) + r"\*\* \|[^\n]*\*\*([-\d.]+ KiB)\*\* \|\n", r)
        return mm.group(1) if mm else "?"
    cls = re.search(r"beyond the API server by class, per node / per pod: heap objects [^/]+/ ([-\d.]+) KiB; heap/unused \(partly used spans\) [^/]+/ ([-\d.]+) KiB; goroutine stacks [^/]+/ ([-\d.]+) KiB", r)
    starts = re.findall(r"load average: ([\d.]+)", load)
    steal = re.findall(r"steal \w+: (\d+) ticks", load)
    start = re.search(r"start (\d\d:\d\d:\d\d)", load).group(1)
    print("| %s | %s | %s → %s | %s / %s | %s / %s | %s | %s | %s KiB | %s KiB | %s | %s |" % (
        d.rstrip("/").split("/")[-1], start, starts[0], starts[-1] if len(starts) > 1 else "?", steal[0], steal[-1] if len(steal) > 1 else "?",
        m.group(1), m.group(2), row("RSS beyond the API server"), row("live heap beyond the API server"),
        cls.group(2), cls.group(3), row("RSS beyond the API server, slope"), row("live heap beyond the API server, slope")))

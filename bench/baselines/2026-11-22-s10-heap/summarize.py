#!/usr/bin/env python3
# One line of figures per run directory (results.json of `kubeproof bench startup...`).
import json, sys
def ms(ns): return "%.0f ms" % (ns / 1e6)
for d in sys.argv[1:]:
    r = json.load(open(d + "/results.json"))["startup"][0]
    w = r["windows"]
    whole, per = w[-1], w[:-1]
    um = r.get("upMemory") or {}
    print("## " + d)
    print("pods Running %d/%d; create->Running p50 %s p99 %s; whole run: process %.2f cores, others %.2f, GC share %.0f%%, %d GC cycles, load %.1f" % (
        r["running"], r["pods"], ms(r["createToRunning"]["P50"]), ms(r["createToRunning"]["P99"]),
        whole["processCores"], whole["othersCores"], 100 * whole["gcShare"], whole["gcCycles"], whole["load1"]))
    print("live heap at pods Running %.1f MiB (nodes Ready %.1f); RSS %.1f MiB; heap/pod %.2f KiB, RSS/pod %.2f KiB (whole process, nodes Ready -> pods Running)" % (
        r["HeapAfterPods"] / 2**20, r["HeapAfterNodes"] / 2**20, r["RSSAfterPods"] / 2**20, r["heapPerPod"] / 1024, r["rssPerPod"] / 1024))
    if um:
        print("beyond the API server per pod: RSS %.2f KiB, live heap %.2f KiB (nodes Ready -> pods Running); slope %d -> %d pods: RSS %.2f KiB, live heap %.2f KiB; per node RSS %.0f KiB" % (
            um["rssPerPod"] / 1024, um["heapPerPod"] / 1024, um["midPods"], um["pods"], um["rssPerPodSlope"] / 1024, um["heapPerPodSlope"] / 1024, um["rssPerNode"] / 1024))
    print("last windows (30 s): " + "; ".join("%.0f-%.0f s: %d pods p99 %s, GC %.0f%%, %d cycles, heap %.0f MiB, cores %.2f/%.2f, load %.1f" % (
        x["start"], x["end"], x["pods"], ms(x["running"]["P99"]), 100 * x["gcShare"], x["gcCycles"], x["heapLive"] / 2**20,
        x["processCores"], x["othersCores"], x["load1"]) for x in per[-4:]))

package sim

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// HostGCPercent is the garbage collection target of a process hosting
// simulated nodes (`kubeproof up`, the node-memory benchmark's node agent)
// when neither a flag nor the GOGC or GOMEMLIMIT environment variable sets
// one: half Go's default.
//
// Such a process holds one decoded copy of every pod and the kubelets',
// scheduler's and simulated runtime's records of it for as long as the pod
// lives, and while pods arrive it also allocates their superseded versions,
// which die. Go's collector does not move objects: a heap span keeps its
// pages resident while any object in it lives, so after a burst of pods
// nearly every span the heap grew to keeps a surviving pod's bytes, and the
// resident heap stays near the heap goal the collector allowed at the peak.
// In startup-1000x30000 (session 31), once every pod ran, the partly used
// spans held 0.66-0.80 bytes per byte of heap objects at GOGC=100, in the
// `up` process and in a control process of etcd and the API server alike,
// 0.65-0.71 at 75 and 0.44-0.47 at 50: at 100 that took the anonymous
// memory per pod beyond the API server to 8.7-10.0 KiB (issue 5: < 10), at
// 50 to 8.4, for 6% more CPU (1.00 against 0.94 cores over the run; the
// collector's share of it 16% against 10%) and create→Running p99 105 ms
// against 77. Lower is not worth it on two cores: every cycle marks the
// whole live heap, and GOGC=25 (session 6) spent 41% of the CPU collecting
// and took p99 from 0.76 s to 7.1 s. A higher one is not either: at
// 1,000 nodes / 6,000 pods (session 12, bench/baselines/2026-11-22-s12-gc)
// GOGC=200 halved the collector's marking per pod but raised the peak RSS
// by half (1.0 -> 1.5 GB); see HostHeapFloorPerNode for the cheaper trade.
const HostGCPercent = 50

// ApplyHostGCPercent sets the collector's target for a process hosting
// simulated nodes and says what is in effect. percent > 0 (or -1, off) set
// by flag wins; otherwise a GOGC or GOMEMLIMIT environment variable, which
// the Go runtime has already applied, is left alone; otherwise
// HostGCPercent applies. flagSet tells whether percent was given
// explicitly; percent 0 leaves the runtime as the environment made it.
func ApplyHostGCPercent(percent int, flagSet bool) string {
	switch {
	case flagSet && percent == 0:
		return "GC percent left to the Go runtime (--gogc 0)"
	case flagSet:
		debug.SetGCPercent(percent)
		return fmt.Sprintf("GC percent %d (--gogc)", percent)
	case os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "":
		return fmt.Sprintf("GC settings from the environment (GOGC=%q GOMEMLIMIT=%q)", os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT"))
	default:
		debug.SetGCPercent(HostGCPercent)
		return fmt.Sprintf("GC percent %d (default for processes hosting simulated nodes)", HostGCPercent)
	}
}

// HostHeapFloorPerNode is the default of --gc-heap-floor-per-node: the
// heap goal a process hosting simulated nodes keeps at least per node
// while its live heap is small (HeapFloorGCPercent). 0: no floor.
//
// Measured in session 12 (bench/baselines/2026-11-22-s12-gc, startup at
// 1,000 nodes / 6,000 pods, one binary per pair, floor 1 MiB per node
// against none): GC cycles 17-18 -> 7-11 and the collector's marking and
// assists 1.66-1.87 -> 0.87-1.46 ms of CPU per pod; in the two pairs where
// both sides had the machine to themselves CPU per pod fell 6.6% and
// 9.2% (latency within the runs' spread), but RSS after all pods were
// Running (forced GC, memory returned) grew 18-20% and the peak RSS
// 20-22%, more than the ~10% the default may cost, so the floor is off
// unless asked for. It stops mattering once the live heap passes half the
// floor (512 MiB at 1,000 nodes): in startup-1000x30000 the first ~90 s,
// where it took the process from 1.79 to 1.62 cores, while over the whole
// run CPU per pod fell 0.9% and p99 did not improve (one pair).
const HostHeapFloorPerNode = 0

// HeapFloorGCPercent is the GC percent that makes the collector's next
// heap goal, live x (1 + percent/100), at least floor bytes, and never
// less than gogc: a process hosting n simulated nodes stands for n
// kubelets, each of which would have the Go runtime's own minimum heap
// goal (4 MiB at GOGC=100), and collapsing them into one process
// otherwise collects a small live heap as often as its allocation rate
// over that small heap allows. Once live x (1 + gogc/100) reaches floor it
// is gogc itself. live 0 (no collection has marked anything yet) answers
// gogc: the runtime's minimum heap goal holds until then. gogc < 0 (off)
// and floor 0 answer gogc.
func HeapFloorGCPercent(gogc int, live, floor uint64) int {
	if gogc < 0 || live == 0 || floor <= live {
		return gogc
	}
	// Rounded up, so the goal is not a byte short of the floor.
	p := (100*(floor-live) + live - 1) / live
	if p <= uint64(gogc) {
		return gogc
	}
	if p > maxFloorGCPercent {
		return maxFloorGCPercent
	}
	return int(p)
}

// maxFloorGCPercent bounds HeapFloorGCPercent for a tiny live heap (a
// 1 MiB live heap and a 1 GiB floor would ask for 102,300).
const maxFloorGCPercent = 100_000

// heapFloorPoll is how often keepHeapFloor reads the runtime's live heap:
// with collections every second or more, a few milliseconds' lag after
// one ends leaves the next goal as it is.
const heapFloorPoll = 100 * time.Millisecond

// ApplyHostGCPolicy is ApplyHostGCPercent and, when it set HostGCPercent
// (neither --gogc nor GOGC nor GOMEMLIMIT said otherwise) and floor > 0,
// keeps the heap goal at least floor bytes (HeapFloorGCPercent) until ctx
// is done, then puts HostGCPercent back. It says what is in effect;
// done is closed once nothing of it runs any more.
func ApplyHostGCPolicy(ctx context.Context, percent int, flagSet bool, floor uint64) (says string, done <-chan struct{}) {
	says = ApplyHostGCPercent(percent, flagSet)
	ended := make(chan struct{})
	if flagSet || floor == 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		close(ended)
		return says, ended
	}
	go func() {
		defer close(ended)
		keepHeapFloor(ctx, HostGCPercent, floor, heapFloorPoll)
	}()
	return fmt.Sprintf("%s, heap goal at least %d MiB while the live heap is smaller", says, floor>>20), ended
}

// keepHeapFloor sets the GC percent to HeapFloorGCPercent(gogc, live heap,
// floor) whenever the live heap the last collection marked changes, every
// poll, until ctx is done; then it sets gogc back.
func keepHeapFloor(ctx context.Context, gogc int, floor uint64, poll time.Duration) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := gogc
	defer func() {
		if set != gogc {
			debug.SetGCPercent(gogc)
		}
	}()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		metrics.Read(samples)
		if samples[0].Value.Kind() == metrics.KindUint64 {
			if p := HeapFloorGCPercent(gogc, samples[0].Value.Uint64(), floor); p != set {
				debug.SetGCPercent(p)
				set = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

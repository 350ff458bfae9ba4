package sim

import (
	"fmt"
	"os"
	"runtime/debug"
)

// HostGCPercent is the garbage collection target of a process hosting
// simulated nodes (`kubeproof up`, the node-memory benchmark's node agent)
// when neither a flag nor the GOGC or GOMEMLIMIT environment variable sets
// one: Go's own default.
//
// Such a process holds one decoded copy of every pod and the kubelets',
// scheduler's and simulated runtime's records of it for as long as the pod
// lives, and while pods arrive it also allocates their superseded versions,
// which die. Go's collector does not move objects: a heap span keeps its
// pages resident while any object in it lives, so after a burst of pods
// nearly every span the heap grew to keeps a surviving pod's bytes, and the
// resident heap stays near the heap goal the collector allowed at the peak
// (measured at 1,000 nodes / 30,000 pods: 7.9 KiB live per pod and 7.9 KiB
// more in partly used spans at GOGC=100, 4.4 KiB more at GOGC=25). A lower
// target (--gogc) trades more frequent collections for that resident
// memory, and on two cores the trade is poor for latency: every cycle marks
// the whole live heap, and with everything in one process (startup-1000x30000)
// GOGC=25 spent 41% of the CPU collecting and took create→Running p99 from
// 0.76 s to 7.1 s, so it is not the default.
const HostGCPercent = 100

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

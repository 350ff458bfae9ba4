package linearizability

import (
	"context"
	"flag"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

var benchDuration = flag.Duration("lin.benchduration", time.Minute, "length of the recording in BenchmarkRecord")

// BenchmarkCheck checks a 10,000-operation history recorded from 16
// clients against kubeproof's API server (target: under 30 s per check).
func BenchmarkCheck(b *testing.B) {
	c, _ := clustertest.Start(b, clustertest.Options{})
	rec, err := NewRecorder(RecordConfig{Scenario: "bench-check", Servers: []*rest.Config{c.AdminConfig}, Namespace: "lin", Clients: 16, MaxOps: 10000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	h, err := rec.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res := Check(h, CheckOptions{PorcupineTimeout: 5 * time.Minute})
		if !res.OK() {
			b.Fatalf("history rejected: %s", Summary(h, res))
		}
	}
	b.ReportMetric(float64(len(h.Ops)), "ops/history")
}

// BenchmarkRecord records for -lin.benchduration (60 s) with 32 clients
// against kubeproof's API server and reports the operations recorded
// (target: at least 20,000 in 60 s).
func BenchmarkRecord(b *testing.B) {
	c, _ := clustertest.Start(b, clustertest.Options{})
	for b.Loop() {
		rec, err := NewRecorder(RecordConfig{Scenario: "bench-record", Servers: []*rest.Config{c.AdminConfig}, Namespace: "lin", Clients: 32, Duration: *benchDuration})
		if err != nil {
			b.Fatal(err)
		}
		h, err := rec.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(h.Ops)), "ops")
		b.ReportMetric(float64(len(h.Ops))/benchDuration.Seconds(), "ops/s")
	}
}

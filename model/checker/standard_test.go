package checker

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/kubeproof/kubeproof/model"
)

var standard = flag.Bool("standard", false, "check the standard configurations exhaustively (make model)")

// TestStandardConfigurations checks the standard configurations of
// spec/*.cfg exhaustively. It runs only with -standard (they take minutes).
func TestStandardConfigurations(t *testing.T) {
	if !*standard {
		t.Skip("run with -standard (make model)")
	}
	var results []Result
	for _, name := range model.StandardConfigs {
		cfg, err := model.LoadConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := model.New(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := Check(context.Background(), m, Options{Symmetry: true, Progress: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
		if r.Violation != nil {
			t.Errorf("%s:\n%s", name, FormatViolation(m, r.Violation))
		}
	}
	WriteSummary(os.Stdout, results)
}

// BenchmarkCheckNodeFailure measures the checker on the NodeFailure
// standard configuration (3 nodes, 2 deployments, a node failure, a crash
// and a dropped watch), with symmetry reduction and liveness.
func BenchmarkCheckNodeFailure(b *testing.B) {
	cfg, err := model.LoadConfig("NodeFailure")
	if err != nil {
		b.Fatal(err)
	}
	m, err := model.New(cfg, "")
	if err != nil {
		b.Fatal(err)
	}
	var states int64
	var bytesPerState float64
	for b.Loop() {
		r, err := Check(context.Background(), m, Options{Symmetry: true})
		if err != nil || r.Violation != nil {
			b.Fatal(err, r.Violation)
		}
		states += r.Distinct
		bytesPerState = r.BytesPerState
	}
	b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(float64(states)/b.Elapsed().Minutes(), "states/min")
	b.ReportMetric(bytesPerState, "set-bytes/state")
}

// BenchmarkCheckSmallWithDrops is a quick benchmark (Small with a dropped
// watch and 2 replicas).
func BenchmarkCheckSmallWithDrops(b *testing.B) {
	cfg := small(b, map[string]int{"MaxWatchDrops": 1, "Replicas": 2, "Capacity": 2, "PodsPerRS": 3})
	m, err := model.New(cfg, "")
	if err != nil {
		b.Fatal(err)
	}
	var states int64
	for b.Loop() {
		r, err := Check(context.Background(), m, Options{Symmetry: true})
		if err != nil || r.Violation != nil {
			b.Fatal(err, r.Violation)
		}
		states += r.Distinct
	}
	b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s")
}

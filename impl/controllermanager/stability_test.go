package controllermanager

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestWorkqueueMetricsHelpStability: the work queue metrics are BETA in
// component-base v0.37, so their help texts start with "[BETA] ".
func TestWorkqueueMetricsHelpStability(t *testing.T) {
	helps, err := stability.Helps(newWorkqueueMetrics().collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, n := range []string{"depth", "adds_total", "retries_total", "queue_duration_seconds", "work_duration_seconds",
		"unfinished_work_seconds", "longest_running_processor_seconds"} {
		want["workqueue_"+n] = "[BETA] "
	}
	for _, m := range stability.Mismatches(helps, want) {
		t.Error(m)
	}
}

// TestWorkqueueMetricsAsComponentBase: help texts (after the level) and
// histogram buckets as component-base's work queue metrics provider,
// which kube-controller-manager installs: ten exponential buckets from
// 1e-8 s by factor 10.
func TestWorkqueueMetricsAsComponentBase(t *testing.T) {
	m := newWorkqueueMetrics()
	helps, err := stability.Helps(m.collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"workqueue_depth":                             "[BETA] Current depth of workqueue",
		"workqueue_adds_total":                        "[BETA] Total number of adds handled by workqueue",
		"workqueue_retries_total":                     "[BETA] Total number of retries handled by workqueue",
		"workqueue_queue_duration_seconds":            "[BETA] How long in seconds an item stays in workqueue before being requested.",
		"workqueue_work_duration_seconds":             "[BETA] How long in seconds processing an item from workqueue takes.",
		"workqueue_unfinished_work_seconds":           "[BETA] How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
		"workqueue_longest_running_processor_seconds": "[BETA] How many seconds has the longest running processor for workqueue been running.",
	}
	for name, help := range want {
		if helps[name] != help {
			t.Errorf("%s help %q, want %q", name, helps[name], help)
		}
	}
	m.NewLatencyMetric("q").Observe(1)
	m.NewWorkDurationMetric("q").Observe(1)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.latency, m.workDuration)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	wantBounds := []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10}
	for _, mf := range mfs {
		var got []float64
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			got = append(got, b.GetUpperBound())
		}
		if len(got) != len(wantBounds) {
			t.Fatalf("%s buckets %v, want %v", mf.GetName(), got, wantBounds)
		}
		for i := range got {
			if math.Abs(got[i]-wantBounds[i]) > wantBounds[i]*1e-9 {
				t.Errorf("%s buckets %v, want %v", mf.GetName(), got, wantBounds)
				break
			}
		}
	}
}

package controllermanager

import (
	"testing"

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

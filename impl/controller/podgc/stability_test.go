package podgc

import (
	"testing"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestMetricsHelpStability: the pod GC counters are ALPHA upstream.
func TestMetricsHelpStability(t *testing.T) {
	helps, err := stability.Helps(newMetrics())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stability.Mismatches(helps, map[string]string{
		"pod_gc_collector_force_delete_pods_total":       "[ALPHA] ",
		"pod_gc_collector_force_delete_pod_errors_total": "[ALPHA] ",
	}) {
		t.Error(m)
	}
}

package nodelifecycle

import (
	"testing"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestMetricsHelpStability: node_collector_evictions_total is STABLE
// upstream, the zone gauges ALPHA.
func TestMetricsHelpStability(t *testing.T) {
	helps, err := stability.Helps(&Controller{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stability.Mismatches(helps, map[string]string{
		"node_collector_evictions_total":         "[STABLE] ",
		"node_collector_zone_health":             "[ALPHA] ",
		"node_collector_zone_size":               "[ALPHA] ",
		"node_collector_unhealthy_nodes_in_zone": "[ALPHA] ",
	}) {
		t.Error(m)
	}
}

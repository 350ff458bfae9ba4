package etcd3

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestMetricsHelpStability: the etcd request metrics are ALPHA upstream.
func TestMetricsHelpStability(t *testing.T) {
	rec := &stability.Recorder{Registerer: prometheus.NewRegistry()}
	if _, err := NewMetrics(rec); err != nil {
		t.Fatal(err)
	}
	helps, err := stability.Helps(rec.Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stability.Mismatches(helps, map[string]string{
		"etcd_request_duration_seconds": "[ALPHA] ",
		"etcd_request_errors_total":     "[ALPHA] ",
	}) {
		t.Error(m)
	}
}

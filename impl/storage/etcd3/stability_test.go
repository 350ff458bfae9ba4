package etcd3

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestMetricsHelpStability: the etcd request metrics (duration, count,
// errors) are ALPHA upstream.
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
		"etcd_requests_total":           "[ALPHA] ",
		"etcd_request_errors_total":     "[ALPHA] ",
	}) {
		t.Error(m)
	}
	// The help texts after the level are kube-apiserver's.
	for name, help := range map[string]string{
		"etcd_request_duration_seconds": "[ALPHA] Etcd request latency in seconds for each operation and object type.",
		"etcd_requests_total":           "[ALPHA] Etcd request counts for each operation and object type.",
		"etcd_request_errors_total":     "[ALPHA] Etcd failed request counts for each operation and object type.",
	} {
		if helps[name] != help {
			t.Errorf("%s help %q, want %q", name, helps[name], help)
		}
	}
}

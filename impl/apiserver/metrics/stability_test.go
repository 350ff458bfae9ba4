package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestHelpStability: the request metrics' help texts start with
// kube-apiserver's stability levels, as component-base writes them (all
// three are STABLE upstream).
func TestHelpStability(t *testing.T) {
	rec := &stability.Recorder{Registerer: prometheus.NewRegistry()}
	if _, err := New(rec, []string{"pods"}); err != nil {
		t.Fatal(err)
	}
	helps, err := stability.Helps(rec.Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stability.Mismatches(helps, map[string]string{
		"apiserver_request_total":            "[STABLE] ",
		"apiserver_request_duration_seconds": "[STABLE] ",
		"apiserver_longrunning_requests":     "[STABLE] ",
	}) {
		t.Error(m)
	}
}

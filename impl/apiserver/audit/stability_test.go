package audit

import (
	"testing"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestMetricsHelpStability: the audit counters are ALPHA upstream.
func TestMetricsHelpStability(t *testing.T) {
	helps, err := stability.Helps(NewMetrics())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stability.Mismatches(helps, map[string]string{
		"apiserver_audit_event_total":             "[ALPHA] ",
		"apiserver_audit_level_total":             "[ALPHA] ",
		"apiserver_audit_error_total":             "[ALPHA] ",
		"apiserver_audit_requests_rejected_total": "[ALPHA] ",
	}) {
		t.Error(m)
	}
}

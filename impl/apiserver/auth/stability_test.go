package auth

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestServiceAccountMetricsHelpStability: the service account token
// counters are ALPHA upstream, so their help texts start with "[ALPHA] ".
func TestServiceAccountMetricsHelpStability(t *testing.T) {
	rec := &stability.Recorder{Registerer: prometheus.NewRegistry()}
	if _, err := NewServiceAccountMetrics(rec); err != nil {
		t.Fatal(err)
	}
	helps, err := stability.Helps(rec.Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, n := range []string{"legacy_tokens_total", "legacy_auto_token_uses_total", "legacy_manual_token_uses_total",
		"invalid_legacy_auto_token_uses_total", "stale_tokens_total", "valid_tokens_total"} {
		want["serviceaccount_"+n] = "[ALPHA] "
	}
	for _, m := range stability.Mismatches(helps, want) {
		t.Error(m)
	}
}
